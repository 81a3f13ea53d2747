"""The simulation worker (ui/sim_runs.py): what runs where, what a panel is shown meanwhile, and that
nothing is run twice or lost. Each test has its own SimulationRuns (and worker process)."""

from __future__ import annotations

import time
from functools import partial

import pytest

from tests.sim_jobs import die_in_worker, logged_square, zeros_by_name
from ui.sim_runs import NOTHING_SHOWN, Pending, SimulationRuns


@pytest.fixture
def runs():
    r = SimulationRuns(max_results=8, inline_below_ms=5.0)
    yield r
    if r._pool is not None:
        r._pool.shutdown(cancel_futures=True)


def _runs_done(log) -> list[int]:
    return [int(x) for x in log.read_text().split()] if log.exists() else []


def _landed(runs, owner, name, fn, args, timeout_s=60.0):
    """What `get` returns once the worker has finished the run (waiting for it, never sleeping)."""
    try:
        return runs.get(owner, name, fn, args)
    except Pending as p:
        runs.wait(p.key, timeout_s)
        return runs.get(owner, name, fn, args)


def test_a_slow_run_goes_to_the_worker_and_its_result_is_kept(runs, tmp_path):
    log = tmp_path / "runs.log"
    job = partial(logged_square, str(log), sleep_s=0.05)
    with pytest.raises(Pending) as first:
        runs.get("session-a", "square", job, (7,), "Squaring…")
    assert first.value.shown is NOTHING_SHOWN and first.value.message == "Squaring…"
    runs.wait(first.value.key)
    assert runs.ready(first.value.key)
    assert runs.get("session-a", "square", job, (7,)) == 49
    assert runs.get("session-b", "square", job, (7,)) == 49  # another session: the same kept run
    assert _runs_done(log) == [7]  # simulated once, in the worker


def test_while_a_new_run_is_under_way_the_owner_keeps_its_previous_result(runs, tmp_path):
    job = partial(logged_square, str(tmp_path / "runs.log"), sleep_s=0.05)
    assert _landed(runs, "session-a", "square", job, (3,)) == 9
    with pytest.raises(Pending) as under_way:
        runs.get("session-a", "square", job, (4,))
    assert under_way.value.shown == 9  # 3 squared, what session-a was last shown
    with pytest.raises(Pending) as other_session:
        runs.get("session-b", "square", job, (4,))
    assert other_session.value.shown is NOTHING_SHOWN  # session-b was never shown a square
    runs.wait(under_way.value.key)
    assert runs.get("session-a", "square", job, (4,)) == 16


def test_previous_results_are_kept_per_simulation_name(runs, tmp_path):
    job = partial(logged_square, str(tmp_path / "runs.log"), sleep_s=0.05)
    assert _landed(runs, "s", "policy-a", job, (2,)) == 4
    with pytest.raises(Pending) as p:
        runs.get("s", "policy-b", job, (5,))
    assert p.value.shown is NOTHING_SHOWN  # policy-a's result is not policy-b's


def test_a_cheap_run_stays_in_the_page_thread(runs, tmp_path):
    log = tmp_path / "runs.log"
    job = partial(logged_square, str(log))  # no sleep: well under the 5 ms threshold
    assert _landed(runs, "s", "square", job, (2,)) == 4
    assert runs.get("s", "square", job, (3,)) == 9  # no Pending: it ran here, at once
    assert _runs_done(log) == [2, 3]


def test_a_function_the_worker_cannot_be_sent_runs_here(runs):
    assert runs.get("s", "lambda", lambda n: n + 1, (41,)) == 42


def test_a_newer_scenario_replaces_the_same_sessions_run_still_in_line(runs, tmp_path):
    log = tmp_path / "runs.log"
    slow = partial(logged_square, str(log), sleep_s=0.4)
    with pytest.raises(Pending) as busy:  # occupies the one worker
        runs.get("other-session", "busy", slow, (1,))
    job = partial(logged_square, str(log), sleep_s=0.05)
    with pytest.raises(Pending):
        runs.get("s", "square", job, (10,))  # waits in line behind the busy run
    with pytest.raises(Pending) as newer:
        runs.get("s", "square", job, (11,))  # the knob moved on before 10 started
    runs.wait(busy.value.key)
    runs.wait(newer.value.key)
    assert runs.get("s", "square", job, (11,)) == 121
    assert sorted(_runs_done(log)) == [1, 11]  # 10 was never simulated


def test_a_dead_worker_falls_back_to_running_here(runs):
    with pytest.raises(Pending) as p:
        runs.get("s", "die", die_in_worker, (5,))
    runs.wait(p.value.key)
    assert runs.get("s", "die", die_in_worker, (5,)) == -5  # run here once the worker died
    assert runs.get("s", "die", die_in_worker, (6,)) == -6  # and from then on, without Pending


def test_a_simulations_own_error_reaches_the_page(runs, tmp_path):
    job = partial(logged_square, str(tmp_path / "no-such-dir" / "runs.log"))
    with pytest.raises(Pending) as p:
        runs.get("s", "broken", job, (3,))
    runs.wait(p.value.key)
    with pytest.raises(FileNotFoundError):
        runs.get("s", "broken", job, (3,))


def test_the_result_store_is_bounded(runs, tmp_path):
    log = tmp_path / "runs.log"
    runs.always_inline = True
    job = partial(logged_square, str(log))
    for n in range(10):  # max_results is 8
        runs.get("s", "square", job, (n,))
    runs.get("s", "square", job, (9,))  # kept
    runs.get("s", "square", job, (0,))  # dropped as the oldest: run again
    assert _runs_done(log) == list(range(10)) + [0]


def test_always_inline_never_raises_pending(runs, tmp_path):
    runs.always_inline = True
    started = time.perf_counter()
    assert runs.get("s", "square", partial(logged_square, str(tmp_path / "l"), sleep_s=0.05), (6,)) == 36
    assert time.perf_counter() - started >= 0.05  # it waited for the run itself


def test_a_kept_run_cannot_be_written_into(runs):
    runs.always_inline = True
    kept = runs.get("s", "arrays", zeros_by_name, (3,))
    with pytest.raises(ValueError):
        kept["waits"][0] = 1.0  # another session reads this same array
    with pytest.raises(ValueError):
        kept["per_step"][0] += 1.0


def test_the_worker_leaves_when_its_server_is_killed(tmp_path):
    """A server killed outright runs no shutdown: its worker must not wait on its queue for ever."""
    import os
    import subprocess
    import sys
    import textwrap

    pid_file = tmp_path / "worker.pid"
    script = textwrap.dedent(f"""
        import os
        from tests.sim_jobs import logged_square
        from ui.sim_runs import SimulationRuns
        runs = SimulationRuns()
        runs.warm()
        runs._pool.submit(logged_square, {str(tmp_path / "log")!r}, 2).result(timeout=60)  # the worker is up
        with open({str(pid_file)!r}, "w") as f:
            f.write(str(*runs._pool._processes))
        os._exit(0)  # as SIGKILL would: no atexit, no executor shutdown
    """)
    server = subprocess.Popen([sys.executable, "-c", script], cwd=os.getcwd(),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert server.wait(timeout=120) == 0
    worker_pid = int(pid_file.read_text())
    from ui.sim_runs import _alive

    def alive() -> bool:
        return _alive(worker_pid)

    deadline = time.monotonic() + 15
    while alive() and time.monotonic() < deadline:
        time.sleep(0.2)  # polling another process's exit: there is no event to wait on
    assert not alive(), f"worker {worker_pid} outlived its server"


def test_the_worker_does_not_run_the_script_that_is_running(tmp_path, monkeypatch):
    """Under Streamlit or AppTest, `__main__` is the page script being run: a worker started then must
    not run it again (AppTest's generated script killed the worker, and every run fell back here)."""
    import sys
    import types

    script = tmp_path / "page.py"
    script.write_text("raise SystemExit('the page script ran in the worker')\n")
    page = types.ModuleType("__main__")
    page.__file__ = str(script)
    monkeypatch.setitem(sys.modules, "__main__", page)
    runs = SimulationRuns(inline_below_ms=0.0)
    try:
        log = tmp_path / "runs.log"
        job = partial(logged_square, str(log), sleep_s=0.05)
        with pytest.raises(Pending) as p:
            runs.get("s", "square", job, (8,))
        runs.wait(p.value.key)
        assert runs.get("s", "square", job, (8,)) == 64
        assert not runs._pool_broken, "the worker died: it ran the page script"
        assert sys.modules["__main__"] is page  # put back
    finally:
        runs._pool.shutdown(cancel_futures=True)
