"""The round: the clock, the givens, drills by phase, notes per phase. Everything saves at once.

The deadline is stored; the clock shows deadline minus now in a fragment that reruns itself every
second, so the page around it is not rerun. When the clock reaches zero the whole page reruns
and locks; the store refuses anything that arrives after the deadline anyway.
"""

from __future__ import annotations

from datetime import datetime

import streamlit as st

from models.answers import drill_reference, score_drill
from models.core import PHASE_TITLES, PHASES
from models.mock import clock_state, drills_by_phase, phase_overrun_s, phase_plan, score_attempt
from store import AttemptClosedError, StoreError
from ui.clock import now
from ui.countdown import countdown
from ui.run_timing import fragment_run, timed
from ui.drills import answer_label
from ui.mock_common import Attempt, mmss, show_givens
from ui.prose import render as render_prose
from ui.safe import NUL_PROBLEM, code_span, escape_markdown, has_nul


def current_phase(store, attempt: Attempt) -> tuple[str, datetime]:
    marks = store.phase_marks(attempt.id)
    if not marks:
        return "numbers", attempt.row["started_at"]
    return marks[-1]


def _elapsed_s(attempt: Attempt) -> float:
    return (now() - attempt.row["started_at"]).total_seconds()


TICK_S = 15  # the phase plan, the progress bar and the overrun warning need no finer steps
FINAL_S = 20  # the last seconds tick every second, so the page locks as the clock reaches zero


def _minutes(seconds: float) -> str:
    m = int(seconds // 60)
    return "under a minute" if m < 1 else f"{m} min"


def clock_panel(attempt: Attempt, phase: str, since: datetime) -> None:
    """The seconds count in the browser (ui/countdown.py); the plan beside them reruns every
    TICK_S. The phase comes from the full run that drew the page: only a full run (the "Move on"
    button) changes it, so a tick costs no store query."""
    remaining_s = clock_state(_elapsed_s(attempt), attempt.round_min).remaining_s
    tick_s = 1 if remaining_s <= FINAL_S else TICK_S
    cols = st.columns([1, 3])
    with cols[0]:
        countdown(remaining_s)
    with cols[1]:
        st.fragment(_plan_panel, run_every=tick_s)(attempt, phase, since, tick_s)


def _plan_panel(attempt: Attempt, phase: str, since: datetime, tick_s: float) -> None:
    elapsed = _elapsed_s(attempt)
    state = clock_state(elapsed, attempt.round_min)
    if state.over or (tick_s > 1 and state.remaining_s <= FINAL_S):
        st.rerun(scope="app")  # lock every input, or start the final once-a-second ticks
    plan = phase_plan(attempt.round_min)
    labels = []
    for name, minutes in plan:
        label = f"{PHASE_TITLES[name]} {minutes:g}′"
        if name == state.planned_phase:
            label = f":blue-background[**▶ {label}**]"
        labels.append(label)
    st.markdown(" · ".join(labels))
    st.progress(min(1.0, elapsed / (attempt.round_min * 60)))
    in_phase = (now() - since).total_seconds()
    over = phase_overrun_s(phase, in_phase, attempt.round_min)
    text = f"You are on **{PHASE_TITLES[phase]}** for {_minutes(in_phase)}."
    if over > 0:
        st.warning(f"{text} That is {_minutes(over)} over its plan: wrap up and move on.", icon=":material/timer:")
    else:
        st.caption(f"{text} The plan says **{PHASE_TITLES[state.planned_phase]}**, "
                   f"{_minutes(state.planned_phase_left_s)} left in it.")


def _save_answer(store, attempt: Attempt, drill, typed: str) -> None:
    if has_nul(typed):
        st.session_state[f"mock.{drill.key}.problem"] = NUL_PROBLEM
        return
    step = attempt.derivation[drill.key]
    result = score_drill(typed, drill, step)
    if not result.parsed.ok:  # not an answer yet: say why and keep the one saved before
        st.session_state[f"mock.{drill.key}.problem"] = f"{typed}: {result.message}"
        return
    try:
        store.record_answer(
            attempt.id, drill.key, typed,
            result.parsed.value if result.parsed.ok else None,
            result.parsed.unit if result.parsed.ok else None,
            float(step.value) if step.is_numeric else None, step.unit,
            result.fraction, now=now(),
        )
    except (AttemptClosedError, StoreError) as e:  # a full clock, or a store that went away
        st.session_state[f"mock.{drill.key}.problem"] = str(e)
        return
    st.session_state[f"mock.{drill.key}.problem"] = None


@st.fragment
def _drill(store, attempt: Attempt, drill, latest: dict, locked: bool) -> None:
    # A fragment: Save reruns this box only. A full rerun redraws every drill of every phase
    # reached, and with 20 sessions on one machine the browsers' redrawing was most of the wait.
    with timed("drill" if fragment_run() else None):
        _drill_box(store, attempt, drill, latest, locked)


def _drill_box(store, attempt: Attempt, drill, latest: dict, locked: bool) -> None:
    key = f"mock.{attempt.id}.{drill.key}"
    if f"{key}.typed" not in st.session_state and drill.key in latest:
        st.session_state[f"{key}.typed"] = latest[drill.key]["typed"]  # a reload shows what was saved
    with st.container(border=True, key=f"mockdrill-{drill.key}"):
        st.markdown(render_prose(drill.question, attempt.derivation, attempt.params))
        with st.form(f"{key}.form", border=False, enter_to_submit=True):
            cols = st.columns([4, 1], vertical_alignment="bottom")
            typed = cols[0].text_input(answer_label(drill), key=f"{key}.typed", max_chars=200, disabled=locked,
                                       placeholder=f"a number{' in ' + drill.unit if drill.unit else ''}, or a number and its unit")
            saved = cols[1].form_submit_button("Save", disabled=locked, width="stretch")
        if saved and typed.strip():
            _save_answer(store, attempt, drill, typed.strip())
            st.session_state[f"{key}.row"] = store.latest_answers(attempt.id).get(drill.key)
        problem = st.session_state.get(f"mock.{drill.key}.problem")
        if problem:
            st.warning(escape_markdown(problem))
        # `latest` is as of the last full run; this box's own save since then may be newer.
        row, mine = latest.get(drill.key), st.session_state.get(f"{key}.row")
        if mine and (not row or mine["answered_at"] >= row["answered_at"]):
            row = mine
        if row:
            stamp = row["answered_at"].strftime("%H:%M:%S")
            st.caption(f"Saved at {stamp} UTC: {code_span(row['typed'])}")
            if attempt.instant_feedback:
                step = attempt.derivation[drill.key]
                verdict = {1.0: "full marks", 0.5: "half marks"}.get(row["score"], "no marks")
                st.caption(f"Instant feedback: {verdict}; the reference is {drill_reference(drill, step)}.".replace("$", "\\$"))


def _notes(store, attempt: Attempt, phase: str, notes: dict, locked: bool) -> None:
    key = f"mock.{attempt.id}.notes.{phase}"
    if key not in st.session_state:
        st.session_state[key] = notes.get(phase, {}).get("text", "")

    def save() -> None:
        if has_nul(st.session_state[key]):  # the text stays in the box; only the save is refused
            st.session_state[f"{key}.problem"] = NUL_PROBLEM
            return
        st.session_state[f"{key}.problem"] = None
        try:
            store.save_note(attempt.id, phase, st.session_state[key], now=now())
        except (AttemptClosedError, StoreError) as e:
            st.session_state[f"{key}.problem"] = str(e)

    st.text_area(f"Notes: {PHASE_TITLES[phase]}", key=key, height=120, on_change=save, disabled=locked,
                 max_chars=20_000, placeholder="Type as you would in the shared document; saved when you click away.")
    if st.session_state.get(f"{key}.problem"):
        st.warning(st.session_state[f"{key}.problem"])
    elif phase in notes:
        st.caption(f"Notes saved at {notes[phase]['saved_at'].strftime('%H:%M:%S')} UTC")


def finish(store, attempt: Attempt) -> None:
    latest = store.latest_answers(attempt.id)
    total, _ = score_attempt(attempt.drills, {k: (r["score"] or 0.0) for k, r in latest.items()})
    store.finish_attempt(attempt.id, total, now=min(now(), attempt.row["deadline"]))


def render_round(store, attempt: Attempt) -> None:
    locked = clock_state(_elapsed_s(attempt), attempt.round_min).over
    st.caption(f"Mock interview · attempt `{attempt.id[:8]}` · instant feedback {'on' if attempt.instant_feedback else 'off'}")
    st.title(attempt.question.title)
    if locked:
        finish(store, attempt)
        st.rerun()
    phase, since = current_phase(store, attempt)
    clock_panel(attempt, phase, since)
    with st.container(border=True):
        st.markdown("**The scenario.** Size the design for these givens; answer in the units each prompt asks for.")
        show_givens(attempt.params)

    reached = PHASES[: PHASES.index(phase) + 1]
    latest = store.latest_answers(attempt.id)
    notes = store.latest_notes(attempt.id)
    by_phase = drills_by_phase(attempt.drills)
    for name in reached:
        st.subheader(PHASE_TITLES[name], divider="gray")
        for drill in by_phase[name]:
            _drill(store, attempt, drill, latest, locked)
        _notes(store, attempt, name, notes, locked)
    cols = st.columns(2)
    if phase != PHASES[-1]:
        nxt = PHASES[PHASES.index(phase) + 1]
        if cols[0].button(f"Move on to {PHASE_TITLES[nxt]}", key="mock.next_phase", type="primary"):
            try:
                store.mark_phase(attempt.id, nxt, now=now())
            except AttemptClosedError as e:
                st.warning(str(e))
            st.rerun()
    if cols[1].button("Finish and see the review", key="mock.finish"):
        finish(store, attempt)
        st.rerun()
