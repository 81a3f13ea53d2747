"""Shared pieces of a simulation panel: the seed control, the run (on the worker, ui/sim_runs.py), the
fragment that shows it when it lands. The declared panel of cards, tables and charts is ui/declared_panel.py."""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Callable

import streamlit as st
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.runtime.scriptrunner_utils.script_run_context import ThreadState, get_script_run_ctx

from models.registry import QUESTIONS
from ui.sim_runs import NOTHING_SHOWN, RUNS, Pending

POLL_S = 0.15  # a finished run shows within this of its end; each poll reruns one panel, ~1 ms
PLACEHOLDER_HEIGHT_PX = 420  # about a panel's height, so the page below does not jump when it lands
_POLLING_KEY = "_sim_panels_polling"


def seed_input(slug: str) -> int:
    return int(st.number_input("Random seed", min_value=0, max_value=2**31 - 1, value=0, step=1,
                               key=f"{slug}.sim_seed", help="Same seed, same run: change it to see another."))


def _question_simulation(params_json: str, seed: int, *, slug: str) -> Any:
    # Module level, so the worker process can be sent it (a partial of it, bound to the question).
    q = QUESTIONS[slug]
    return q.module.simulate(q.Params.model_validate_json(params_json), seed=seed)


def _owner() -> str:
    ctx = get_script_run_ctx(suppress_warning=True)
    return ctx.session_id if ctx is not None else "no-session"


@dataclass
class _PanelRun:
    """What one draw of a panel met: the runs it waits for, whether it has said so, and whether it
    drew an earlier scenario's result (which may not fit the knobs as they are now)."""

    awaited: list = field(default_factory=list)
    noticed: bool = False
    stale: bool = False


_PANEL: ContextVar[_PanelRun | None] = ContextVar("sim_panel_run", default=None)


def run_simulation(slug: str, params: Any, seed: int, message: str, variant: str = "") -> Any:
    """The question's own `simulate(params, seed)`, run once per scenario and kept (ui/sim_runs.py).
    While a new run is under way on the worker, this returns the run this session was last shown of
    the same simulation, under a line saying so, and the panel polls until the new one is here; with
    nothing to show yet it raises Pending, and the panel draws a placeholder. `message` says what is
    being simulated; `variant` tells apart runs one panel makes under one message (each retry
    policy), so each keeps its own previous result."""
    notice = st.empty()
    try:
        return RUNS.get(_owner(), f"{slug}:simulate:{message}:{variant}", partial(_question_simulation, slug=slug),
                        (params.model_dump_json(), seed), message)
    except Pending as pending:
        run = _PANEL.get() or _PanelRun()
        run.awaited.append(pending.key)
        if pending.shown is NOTHING_SHOWN:
            raise
        run.stale = True
        if not run.noticed:  # one line per panel, however many of its runs are under way
            run.noticed = True
            with notice.container(key=_pending_key(pending)):
                st.caption(f":material/hourglass_top: {message} Shown below: the previous run, until this one ends.")
        return pending.shown


def _pending_key(pending: Pending) -> str:
    # A class the browser tests wait on (`st-key-sim-pending-...`): no pending line, every run landed.
    return f"sim-pending-{abs(hash(pending.key)) % 10**10}"


def draw_pending(pending: Pending, message: str = "") -> None:
    """What a panel shows before its run is here: the line, and room for the panel to come."""
    with st.container(key=_pending_key(pending) + "-placeholder", height=PLACEHOLDER_HEIGHT_PX, border=True):
        st.caption(f":material/hourglass_top: {message or pending.message}")


def live_panel(draw: Callable[[Any], None], ctx: Any) -> None:
    """Draw a simulation panel in its own fragment. While a run it shows is on the worker, the
    fragment reruns itself every POLL_S, alone: the page around it is not run again, and its
    widgets (seed, replay) keep their state, since the panel is drawn, stale or not, on every poll."""

    def panel() -> None:
        run = _PanelRun()
        token = _PANEL.set(run)
        _disarm()
        body = st.empty()
        try:
            with body.container():
                draw(ctx)
        except Pending as pending:
            draw_pending(pending)
        except Exception:
            if not run.stale:
                raise
            # The previous run does not fit the knobs as they are now (three regions drawn from a
            # run of two): show the placeholder until the new run is here, not an error.
            body.empty()
            draw_pending(Pending(run.awaited[-1], ""), "Simulating the new scenario…")
        finally:
            _PANEL.reset(token)
        if run.awaited:
            _arm()

    st.fragment(panel)()


def _arm() -> None:
    """Ask the browser to run this fragment again in POLL_S, with the message st.fragment(run_every=...)
    sends (a fragment's run_every is fixed when it is declared, and this one must stop once its run
    is here). Streamlit 1.67 internals (pinned in pyproject.toml); tests/app/test_sim_worker.py holds
    them. The browser's timer repeats, so every run that arms it starts by disarming it (_disarm):
    one tick, one poll. A timer left ticking after the panel has landed would send a poll that can
    meet the next page's navigation, and Streamlit merges the two into a run of this page with the
    next page's address."""
    target = _this_fragment()
    if target is not None:
        ctx, fragment_id, armed = target
        msg = ForwardMsg()
        msg.auto_rerun.interval = POLL_S
        msg.auto_rerun.fragment_id = fragment_id
        armed.add(fragment_id)
        ctx.enqueue(msg)


def _disarm() -> None:
    target = _this_fragment()
    if target is not None and target[1] in target[2]:
        ctx, fragment_id, armed = target
        msg = ForwardMsg()
        msg.stop_auto_rerun.fragment_ids.append(fragment_id)
        armed.discard(fragment_id)
        ctx.enqueue(msg)


def _this_fragment() -> tuple[Any, str, set] | None:
    """The run's context, the fragment being run, and the fragments this session has armed."""
    ctx = get_script_run_ctx(suppress_warning=True)
    fragment_id = ThreadState.get().fragment_id
    if ctx is None or not fragment_id:
        return None
    return ctx, fragment_id, st.session_state.setdefault(_POLLING_KEY, set())
