"""Where a page's simulations run: in a worker process, so a knob move's page run does not wait for them.

A simulation costs 25-170 ms (bench/sims.py), and the failover panel runs three. Run in the page's
own thread, that time is added to every knob move that changes the scenario: ten pages ran over
100 ms p95 for that alone. So a run goes to one worker process (a process, not a thread: the
simulations are Python loops, which would hold the GIL the page's own run needs) and the page
draws, for as long as it is under way, the run this session was last shown of that simulation,
under a line that says a new one is coming (ui/sim_panel.py). The panel then polls, alone, until
the result is here.

A run stays in the page's thread when the worker would cost more than it saves: when the same
simulation last took under INLINE_BELOW_MS (a round trip to a process and back is a few ms), when
its function cannot be sent to another process, when the worker has died, and in tests
(`always_inline`), which read a page's figures in one run.

Nothing here imports streamlit: tests drive it directly (tests/test_sim_runs.py).
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import types
import pickle
import threading
import time
from collections import OrderedDict, deque
from contextlib import contextmanager
from concurrent.futures import CancelledError, Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from functools import partial
from typing import Any, Callable, Hashable

import numpy as np

INLINE_BELOW_MS = 15.0
MAX_RESULTS = 256


class _Nothing:
    def __repr__(self) -> str:
        return "NOTHING_SHOWN"


NOTHING_SHOWN = _Nothing()


class Pending(Exception):
    """The run of `key` is under way on the worker. `shown` is the result this owner was last given
    for the same simulation (NOTHING_SHOWN if none): what its panel keeps on screen meanwhile."""

    def __init__(self, key: Hashable, message: str, shown: Any = NOTHING_SHOWN) -> None:
        super().__init__(message)
        self.key = key
        self.message = message
        self.shown = shown


def _timed(fn: Callable[..., Any], args: tuple) -> tuple[Any, float]:
    """What the worker runs: the simulation and how long it took there, in ms."""
    started = time.perf_counter()
    result = fn(*args)
    return result, (time.perf_counter() - started) * 1000


def _exit_with(server_pid: int) -> None:
    """The worker's initializer: leave when the server does. A server killed outright (SIGKILL, the
    OOM killer) runs no shutdown, and its worker would otherwise wait on its queue for ever, holding
    its memory (about 90 MB)."""

    def watch() -> None:
        while _alive(server_pid):
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watch, name="exit-with-server", daemon=True).start()


def _alive(pid: int) -> bool:
    """Whether process `pid` is running: a zombie (dead, not yet reaped by its parent) is not."""
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):  # gone, or the pid now belongs to someone else
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:  # no /proc (macOS): kill(0) is all we have
        return True


def _warm() -> None:
    """Nothing: submitting it starts the worker (the fork server has loaded the models already)."""


def read_only(value: Any, depth: int = 4) -> Any:
    """`value` with every numpy array in it (fields, lists, dicts, a few levels down) made read-only:
    a kept run is one object that every session's page reads, so a page that wrote into one would
    change what the others see. It raises instead, in tests too."""
    if isinstance(value, np.ndarray):
        value.flags.writeable = False
    elif depth > 0:
        if isinstance(value, dict):
            children = value.values()
        elif isinstance(value, (list, tuple)):
            children = value
        else:
            children = getattr(value, "__dict__", {}).values()
        for child in children:
            read_only(child, depth - 1)
    return value


@contextmanager
def _no_main_module():
    """While the worker is started: a `__main__` with no file. A new process re-runs the parent's
    `__main__` script to rebuild it, and under Streamlit (or AppTest) that is whichever page script
    was running: a worker started then would run a page, or die of it (AppTest's generated script
    raised NameError, so every run fell back to the page's thread). Put back only if nothing else
    replaced it meanwhile (Streamlit sets `__main__` at the start of each script run)."""
    saved = sys.modules.get("__main__")
    plain = types.ModuleType("__main__")
    sys.modules["__main__"] = plain
    try:
        yield
    finally:
        if sys.modules.get("__main__") is plain and saved is not None:
            sys.modules["__main__"] = saved


class SimulationRuns:
    """Results by (simulation name, arguments), an LRU of `max_results`, shared by every session of
    this server; the worker's runs under way; and what each owner (a session) was last shown of each
    simulation. Thread-safe: every session's script thread calls `get`."""

    def __init__(self, max_results: int = MAX_RESULTS, inline_below_ms: float = INLINE_BELOW_MS) -> None:
        self.always_inline = False
        self.max_results = max_results
        self.inline_below_ms = inline_below_ms
        self._lock = threading.Lock()
        self._results: OrderedDict[Hashable, Any] = OrderedDict()
        self._running: dict[Hashable, Future] = {}
        self._queued: OrderedDict[tuple[Hashable, str], Hashable] = OrderedDict()  # (owner, name) -> newest key sent
        self._shown: OrderedDict[tuple[Hashable, str], Any] = OrderedDict()
        self._cost_ms: dict[str, float] = {}
        self._sendable: dict[str, bool] = {}
        self._pool: ProcessPoolExecutor | None = None
        self._pool_broken = False
        self._line: deque[tuple[Future, Callable[..., Any], tuple]] = deque()  # runs waiting for the worker
        self._in_flight = False

    # -- the one call a page makes ------------------------------------------------------------------

    def get(self, owner: Hashable, name: str, fn: Callable[..., Any], args: tuple, message: str = "") -> Any:
        """The result of `fn(*args)`, known as `name` with these `args`; or Pending while the worker
        runs it. `fn` must be a module-level function (or a partial of one) to go to the worker."""
        key = (name, args)
        with self._lock:
            if key in self._results:
                self._results.move_to_end(key)
                return self._show(owner, name, self._results[key])
            future = self._running.get(key)
        if future is not None and future.done():
            return self._collect(owner, name, key, future, fn, args)
        if future is None:
            if self._inline(name, fn):
                return self._run_here(owner, name, key, fn, args)
            future = self._submit(owner, name, key, fn, args)
            if future is None:  # the worker could not take it
                return self._run_here(owner, name, key, fn, args)
        with self._lock:
            shown = self._shown.get((owner, name), NOTHING_SHOWN)
        raise Pending(key, message, shown)

    def ready(self, key: Hashable) -> bool:
        """Whether `get` would now return for `key` without waiting (tests and the bench poll this)."""
        with self._lock:
            if key in self._results:
                return True
            future = self._running.get(key)
        return future is None or future.done()

    def wait(self, key: Hashable, timeout_s: float = 60.0) -> None:
        with self._lock:
            future = self._running.get(key)
        if future is not None:
            try:
                future.result(timeout=timeout_s)
            except Exception:  # noqa: BLE001 - `get` reports it; here we only wait
                pass

    def wait_all(self, timeout_s: float = 60.0) -> None:
        """Until every run now on the worker or in line for it has ended (tests and the bench)."""
        with self._lock:
            keys = list(self._running)
        for key in keys:
            self.wait(key, timeout_s)

    def warm(self) -> None:
        """Start the worker and load the models in it, so the first real run does not pay for both."""
        if not self.always_inline:
            self._worker()

    # -- inside ---------------------------------------------------------------------------------------

    def _show(self, owner: Hashable, name: str, result: Any) -> Any:
        # Called with the lock held.
        self._per_owner(self._shown, (owner, name), result)
        return result

    def _per_owner(self, table: OrderedDict, owner_name: tuple[Hashable, str], value: Any) -> None:
        # Called with the lock held. One entry per session and simulation, the oldest dropped: a
        # server sees sessions come and go, and these tables must not grow with them.
        table[owner_name] = value
        table.move_to_end(owner_name)
        while len(table) > 4 * self.max_results:
            table.popitem(last=False)

    def _store(self, owner: Hashable, name: str, key: Hashable, result: Any, cost_ms: float) -> Any:
        with self._lock:
            self._cost_ms[name] = cost_ms
            self._keep(key, result)
            return self._show(owner, name, result)

    def _keep(self, key: Hashable, result: Any) -> None:
        # Called with the lock held.
        self._results[key] = read_only(result)
        self._results.move_to_end(key)
        while len(self._results) > self.max_results:
            self._results.popitem(last=False)

    def _inline(self, name: str, fn: Callable[..., Any]) -> bool:
        if self.always_inline or self._pool_broken:
            return True
        if self._cost_ms.get(name, float("inf")) < self.inline_below_ms:
            return True
        if name not in self._sendable:
            try:
                pickle.dumps(fn)
                self._sendable[name] = True
            except Exception:  # noqa: BLE001 - a closure or a lambda: it stays in this process
                self._sendable[name] = False
        return not self._sendable[name]

    def _run_here(self, owner: Hashable, name: str, key: Hashable, fn: Callable[..., Any], args: tuple) -> Any:
        return self._store(owner, name, key, *_timed(fn, args))

    def _collect(self, owner: Hashable, name: str, key: Hashable, future: Future, fn: Callable[..., Any],
                 args: tuple) -> Any:
        with self._lock:
            self._running.pop(key, None)
        try:
            result, cost_ms = future.result()
        except BrokenProcessPool:  # the worker died (killed, out of memory): run here from now on
            self._pool_broken = True
            return self._run_here(owner, name, key, fn, args)
        except (CancelledError, pickle.PicklingError, AttributeError, TypeError):
            # Cancelled for another session's newer scenario, or the run or its result could not
            # cross between processes: run it here. A simulation's own error is raised again here,
            # as the page's thread would have raised it.
            return self._run_here(owner, name, key, fn, args)
        return self._store(owner, name, key, result, cost_ms)

    def _worker(self) -> ProcessPoolExecutor | None:
        with self._lock:
            if self._pool is None and not self._pool_broken:
                # forkserver, not fork: the server has threads (Tornado, one per session), and a
                # forked copy of a threaded process can inherit a lock some other thread held. The
                # fork server loads the models once, so the worker starts with them.
                context = multiprocessing.get_context("forkserver")
                context.set_forkserver_preload(["models.registry"])
                pool = ProcessPoolExecutor(max_workers=1, mp_context=context,
                                           initializer=_exit_with, initargs=(os.getpid(),))
                with _no_main_module():
                    try:
                        pool.submit(_warm)  # starts the fork server and the worker, here and now
                    except (BrokenProcessPool, RuntimeError):
                        self._pool_broken = True
                        return None
                self._pool = pool
            return self._pool

    def _submit(self, owner: Hashable, name: str, key: Hashable, fn: Callable[..., Any],
                args: tuple) -> Future | None:
        if self._worker() is None:
            return None
        with self._lock:
            if key in self._running:  # another session asked first: share its run
                return self._running[key]
            # A newer scenario from the same session replaces its older one still waiting in line:
            # only the newest can be shown, so the worker should not spend time on the others.
            older = self._queued.get((owner, name))
            if older is not None and older in self._running and self._running[older].cancel():
                del self._running[older]
            future: Future = Future()
            self._running[key] = future
            self._per_owner(self._queued, (owner, name), key)
            self._line.append((future, fn, args))
        self._pump()
        return future

    def _pump(self) -> None:
        """Send the worker the next run in line, if it is idle. The line is kept here, not in the
        executor, which hands a waiting call to its process queue at once, where it can no longer be
        cancelled: one run at a time goes to the executor."""
        with self._lock:
            if self._in_flight:
                return
            while self._line:
                future, fn, args = self._line.popleft()
                if future.set_running_or_notify_cancel():  # False: cancelled while in line
                    break
            else:
                return
            self._in_flight = True
        try:
            sent = self._pool.submit(_timed, fn, args)
        except (BrokenProcessPool, RuntimeError) as error:
            self._pool_broken = True
            sent = Future()
            sent.set_exception(BrokenProcessPool(str(error)))
        sent.add_done_callback(partial(self._landed, future))

    def _landed(self, future: Future, sent: Future) -> None:
        # In the executor's thread: hand the result over and send the next run.
        with self._lock:
            self._in_flight = False
        error = sent.exception()
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(sent.result())
        self._pump()


RUNS = SimulationRuns()
