"""The round as the real round: the interviewer's one-line question and the clock; clarifying
questions that reveal the givens; one shared document; the interviewer's probes phase by phase,
the depth phase's following the area the candidate chose. Everything saves at once.

The deadline is stored; the clock shows deadline minus now in a fragment that reruns itself every
second, so the page around it is not rerun. When the clock reaches zero the whole page reruns
and locks; the store refuses anything that arrives after the deadline anyway.
"""

from __future__ import annotations

from datetime import datetime

import streamlit as st

from models.core import PHASE_TITLES
from models.mock import clock_state, score_attempt
from models.mock_script import opening
from store import AttemptClosedError
from ui.clock import now
from ui.countdown import countdown
from ui.mock_clarify import clarify_panel
from ui.mock_common import MODES, OPEN_ATTEMPT, Attempt
from ui.mock_document import document_panel
from ui.mock_probes import depth_select, show_phase
from ui.prose import render as render_prose


def current_phase(store, attempt: Attempt) -> tuple[str, datetime]:
    marks = store.phase_marks(attempt.id)
    if not marks or marks[-1][0] not in attempt.phases:
        return attempt.phases[0], attempt.row["started_at"]
    return marks[-1]


def _elapsed_s(attempt: Attempt) -> float:
    return (now() - attempt.row["started_at"]).total_seconds()


TICK_S = 15  # the phase plan, the progress bar and the overrun warning need no finer steps
FINAL_S = 20  # the last seconds tick every second, so the page locks as the clock reaches zero


def _minutes(seconds: float) -> str:
    m = int(seconds // 60)
    return "under a minute" if m < 1 else f"{m} min"


def clock_panel(attempt: Attempt, phase: str, since: datetime):
    """The seconds count in the browser (ui/countdown.py); the plan beside them reruns every
    TICK_S. The phase comes from the full run that drew the page: only a full run (the "Move on"
    button) changes it, so a tick costs no store query. Returns the column kept for the buttons."""
    remaining_s = clock_state(_elapsed_s(attempt), attempt.round_min).remaining_s
    tick_s = 1 if remaining_s <= FINAL_S else TICK_S
    cols = st.columns([1, 3, 1.4], vertical_alignment="center")
    with cols[0]:
        countdown(remaining_s)
    with cols[1]:
        st.fragment(_plan_panel, run_every=tick_s)(attempt, phase, since, tick_s)
    return cols[2]


def _plan_panel(attempt: Attempt, phase: str, since: datetime, tick_s: float) -> None:
    elapsed = _elapsed_s(attempt)
    state = clock_state(elapsed, attempt.round_min)
    if state.over or (tick_s > 1 and state.remaining_s <= FINAL_S):
        st.rerun(scope="app")  # lock every input, or start the final once-a-second ticks
    planned, planned_left_s = attempt.planned_phase(elapsed)
    labels = []
    for name, minutes in attempt.plan:
        label = f"{PHASE_TITLES[name]} {minutes:g}′"
        if name == planned:
            label = f":blue-background[**▶ {label}**]"
        labels.append(label)
    st.markdown(" · ".join(labels))
    st.progress(min(1.0, elapsed / (attempt.round_min * 60)))
    in_phase = (now() - since).total_seconds()
    over = attempt.phase_overrun_s(phase, in_phase)
    text = f"You are on **{PHASE_TITLES[phase]}** for {_minutes(in_phase)}."
    if over > 0:
        st.warning(f"{text} That is {_minutes(over)} over its plan: wrap up and move on.", icon=":material/timer:")
    else:
        st.caption(f"{text} The plan says **{PHASE_TITLES[planned]}**, "
                   f"{_minutes(planned_left_s)} left in it.")


def finish(store, attempt: Attempt) -> None:
    latest = store.latest_answers(attempt.id)
    total, _ = score_attempt(attempt.drills, {k: (r["score"] or 0.0) for k, r in latest.items()})
    store.finish_attempt(attempt.id, total, now=min(now(), attempt.row["deadline"]))
    open_round = st.session_state.get(OPEN_ATTEMPT)
    if open_round and open_round["id"] == attempt.id:
        del st.session_state[OPEN_ATTEMPT]


def _watch_pages(attempt: Attempt) -> None:
    """Tell the question pages (ui/question_page.py) that this session has a round open."""
    open_round = st.session_state.get(OPEN_ATTEMPT)
    if not open_round or open_round["id"] != attempt.id:
        st.session_state[OPEN_ATTEMPT] = {"id": attempt.id, "profile": attempt.row["profile"],
                                          "deadline": attempt.row["deadline"], "noted": set()}


def _buttons(store, attempt: Attempt, phase: str, slot) -> None:
    confirm = f"mock.{attempt.id}.confirm_finish"
    with slot:
        i = attempt.phases.index(phase)
        if i + 1 < len(attempt.phases):
            nxt = attempt.phases[i + 1]
            if st.button(f"Move on to {PHASE_TITLES[nxt]}", key="mock.next_phase", type="primary", width="stretch"):
                try:
                    store.mark_phase(attempt.id, nxt, now=now())
                except AttemptClosedError as e:
                    st.warning(str(e))
                st.rerun()
        if st.button("Finish and see the review", key="mock.finish", width="stretch"):
            st.session_state[confirm] = True
    if st.session_state.get(confirm):
        left = clock_state(_elapsed_s(attempt), attempt.round_min).remaining_s
        with st.container(border=True, key="mock-confirm"):
            st.markdown(f"**Finish now?** {_minutes(left)} is still on the clock. After this the round "
                        "takes no more answers and the review opens.")
            cols = st.columns([1, 1, 3])
            if cols[0].button("Yes, finish", key="mock.finish_confirm", type="primary", width="stretch"):
                st.session_state.pop(confirm, None)
                finish(store, attempt)
                st.rerun()
            if cols[1].button("Keep going", key="mock.finish_cancel", width="stretch"):
                st.session_state.pop(confirm, None)
                st.rerun()


def render_round(store, attempt: Attempt) -> None:
    locked = clock_state(_elapsed_s(attempt), attempt.round_min).over
    mode = "" if attempt.mode == "full" else f" · practice: {MODES[attempt.mode].lower()}"
    st.caption(f"Mock interview · attempt `{attempt.id[:8]}`{mode} · instant feedback "
               f"{'on' if attempt.instant_feedback else 'off'}")
    st.title(attempt.question.title)
    if locked:
        finish(store, attempt)
        st.rerun()
    _watch_pages(attempt)
    phase, since = current_phase(store, attempt)
    st.caption(":material/visibility: The study pages hold the answers. The sidebar still links them, "
               "but opening one during the round is noted in the review.")
    with st.container(border=True, key="mock-opening"):
        st.markdown(f":material/record_voice_over: **The interviewer:** "
                    f"{render_prose(opening(attempt.question), attempt.derivation, attempt.params)}")
    slot = clock_panel(attempt, phase, since)
    _buttons(store, attempt, phase, slot)

    latest = store.latest_answers(attempt.id)
    notes = store.latest_notes(attempt.id)
    doc_col, talk_col = st.columns([3, 2], gap="medium")
    with doc_col:
        document_panel(store, attempt, notes, locked)
    with talk_col:
        # The numbers come first: the candidate asks for them before anything is sized (the
        # depth practice starts from the area instead, its givens a click away below).
        first = phase == attempt.phases[0] and attempt.mode != "depth"
        if first:
            with st.container(border=True, key="mock-clarify"):
                clarify_panel(store, attempt, locked)
        depth_choice = None
        if "depth" in attempt.phases:
            depth_choice = depth_select(store, attempt, notes, phase, locked)
        st.subheader(f"The interviewer asks: {PHASE_TITLES[phase]}", divider="blue", anchor=False)
        if phase == "depth" and depth_choice is None and attempt.mode == "depth":
            # the one area this practice is about: the candidate names it first
            st.info("Pick the depth area above: its probes follow it.", icon=":material/arrow_upward:")
        else:
            if phase == "depth" and depth_choice is None:
                st.caption("You have not picked a depth area, so the interviewer leads with the first.")
            show_phase(store, attempt, phase, depth_choice, latest, locked)
        if not first:
            with st.expander("Clarifying questions"):
                clarify_panel(store, attempt, locked)
        reached = attempt.phases[: attempt.phases.index(phase) + 1]
        for name in reversed(reached[:-1]):  # open: nothing answered is hidden; fold what is done
            with st.expander(f"Earlier: {PHASE_TITLES[name]}", expanded=True):
                show_phase(store, attempt, name, depth_choice, latest, locked)
