"""The interviewer's probes in the round: a phase's drills (typed, scored) and its questions in
words (answered in the document), arriving when the candidate moves on to that phase; and the
depth area the candidate leads with, which decides the depth phase's probes."""

from __future__ import annotations

import streamlit as st

from models.answers import drill_reference, score_drill
from models.core import PHASE_TITLES, Drill
from models.mock_script import Probe, depth_areas, probes
from store import AttemptClosedError, StoreError
from ui.clock import now
from ui.drills import answer_label
from ui.mock_common import DEPTH_NOTE, Attempt
from ui.prose import render as render_prose
from ui.run_timing import fragment_run, timed
from ui.safe import NUL_PROBLEM, code_span, escape_markdown, has_nul


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


def _words(attempt: Attempt, phase: str, words: list[Probe]) -> None:
    """The phase's questions in words, in one box: the candidate answers them in the document."""
    with st.container(border=True, key=f"mockwords-{phase}"):
        st.caption(":material/record_voice_over: The interviewer asks; answer in the document.")
        for probe in words:
            with st.container(key=f"mockprobe-{probe.key}"):
                st.markdown(f"- {render_prose(probe.text, attempt.derivation, attempt.params)}")


def phase_probes(attempt: Attempt, phase: str, depth_choice: str | None) -> list[Probe | Drill]:
    """What the interviewer asks in `phase`, in the script's order: a drill only if this round
    asks it (the draw can answer it, the mode practises its phase); a drill of the round that the
    script does not name still comes, after the script's probes, so no scored drill is hidden."""
    drills = {d.key: d for d in attempt.drills if d.phase == phase}
    out: list[Probe | Drill] = []
    for probe in probes(attempt.question, depth_choice).get(phase, []):
        if probe.kind == "drill":
            if probe.drill_key in drills:
                out.append(drills.pop(probe.drill_key))
        else:
            out.append(probe)
    return out + list(drills.values())


def show_phase(store, attempt: Attempt, phase: str, depth_choice: str | None, latest: dict, locked: bool) -> None:
    items = phase_probes(attempt, phase, depth_choice)
    if not items:
        st.caption(f"No probes in {PHASE_TITLES[phase]}: carry on in the document.")
    for item in items:
        if isinstance(item, Drill):
            _drill(store, attempt, item, latest, locked)
    words = [item for item in items if not isinstance(item, Drill)]
    if words:
        _words(attempt, phase, words)


def depth_select(store, attempt: Attempt, notes: dict, phase: str, locked: bool) -> str | None:
    """The depth area the candidate leads with (saved at once). Free to change until the depth
    phase's probes have been shown for it; then it is stated, not offered."""
    areas = depth_areas(attempt.question)
    if not areas:
        return None
    saved = notes.get(DEPTH_NOTE, {}).get("text")
    saved = saved if saved in areas else None
    if saved is not None and phase in ("depth", "failure_modes"):
        st.markdown(f"**Depth area:** {escape_markdown(saved)}", help="Fixed: the interviewer has probed it.")
        return saved
    key = f"mock.{attempt.id}.depth"
    problem_key = f"{key}.problem"
    # The first draw of this session fixes the box's default: a default that moved once the
    # choice is saved would make Streamlit treat it as a new box and forget the choice.
    first = st.session_state.setdefault(f"{key}.first", saved)

    def save() -> None:
        choice = st.session_state[key]
        if choice is None:
            return
        try:
            store.save_note(attempt.id, DEPTH_NOTE, choice, now=now())
            st.session_state[problem_key] = None
        except (AttemptClosedError, StoreError) as e:
            st.session_state[problem_key] = str(e)

    st.selectbox(
        "Depth area you will lead with", areas, key=key, index=areas.index(first) if first else None,
        on_change=save, placeholder="Pick one early: the depth phase's probes follow it", disabled=locked,
        help="The seeds advise finding the depth area early and leading with it.",
    )
    if st.session_state.get(problem_key):
        st.warning(escape_markdown(st.session_state[problem_key]))
    return st.session_state.get(key) or saved
