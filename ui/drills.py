""""Try first" boxes: type an answer, get a score, see the worked step. Every answer is stored."""

from __future__ import annotations

import streamlit as st

from models.answers import drill_reference, score_drill
from models.core import Derivation, Drill
from models.units import format_number
from ui.prose import render as render_prose
from ui.safe import code_span, escape_markdown
from ui.profile_box import is_open
from ui.session_store import get_store, profile


def _record(slug: str, params, drill: Drill, typed: str, result) -> str | None:
    """Store the answer; return a message if the store refused (the score still shows)."""
    if not is_open():
        return (f"Not saved: the profile “{profile()}” is claimed, and this session has not given its passphrase "
                "(the profile box).")
    try:
        store = get_store()
        attempt_key = f"{slug}._study_attempt.{profile()}"  # a profile switched mid-session gets its own
        if attempt_key not in st.session_state:
            st.session_state[attempt_key] = store.study_attempt(profile(), slug, params.model_dump())
        parsed = result.parsed
        store.record_answer(
            st.session_state[attempt_key],
            drill.key,
            typed,
            parsed.value if parsed.ok else None,
            parsed.unit if parsed.ok else None,
            result.reference if isinstance(result.reference, (int, float)) else None,
            result.reference_unit,
            result.fraction,
        )
    except Exception as e:  # a broken store must not cost the learner the feedback
        return f"Your answer could not be saved ({e})."
    return None


def _verdict(result) -> tuple[str, str]:
    if not result.parsed.ok:
        return "warning", result.message
    if result.fraction >= 1:
        return "success", f"Full marks. {result.message}"
    if result.fraction > 0:
        return "info", f"Half marks. {result.message}"
    return "error", f"No marks. {result.message}"


def answered(slug: str) -> set[str]:
    """Drill keys of this page the learner has answered readably or revealed, this session."""
    prefix = f"{slug}.drill."
    out = set()
    for name, value in st.session_state.items():
        if name.startswith(prefix) and (name.endswith(".result") and value or name.endswith(".revealed")):
            out.add(name[len(prefix):].rsplit(".", 1)[0])
    return out


def answer_label(drill: Drill) -> str:
    """The answer box's label names the unit a bare number is read in."""
    return f"Your answer, in {drill.unit}" if drill.unit else "Your answer (a plain number)"


def drill_box(slug: str, drill: Drill, derivation: Derivation, params) -> None:
    step = derivation[drill.key]
    base = f"{slug}.drill.{drill.key}"
    with st.container(border=True, key=f"drillbox-{slug}-{drill.key}"):
        st.markdown("**Try first.** " + render_prose(drill.question, derivation, params))
        # One flex row, not st.columns: three columns are four blocks to send and lay out per drill,
        # and a page redraws a dozen drills on every knob move. The row wraps on a phone.
        with st.form(key=f"{base}.form", border=False, enter_to_submit=True), \
                st.container(horizontal=True, vertical_alignment="bottom"):
            typed = st.text_input(
                answer_label(drill), key=f"{base}.typed", max_chars=200,
                placeholder=f"a number{' in ' + drill.unit if drill.unit else ''}, or a number and its unit",
            )
            check = st.form_submit_button("Check")
            reveal = st.form_submit_button("Reveal", type="tertiary")
        if check:
            st.session_state[f"{base}.result"] = None
            if not typed.strip():
                st.caption("Type a number first (a unit is optional).")
            else:
                result = score_drill(typed, drill, step)
                if not result.parsed.ok:
                    # An answer that cannot be read is a message and another try, never the answer.
                    st.warning(f"{code_span(typed)}: " + escape_markdown(result.message))
                else:
                    st.session_state[f"{base}.result"] = (typed, result)
                    problem = _record(slug, params, drill, typed, result)
                    if problem:
                        st.warning(problem)
        if reveal:
            st.session_state[f"{base}.revealed"] = True
        shown = st.session_state.get(f"{base}.result")
        if shown:
            typed_then, result = shown
            kind, text = _verdict(result)
            getattr(st, kind)(f"You said {code_span(typed_then)}. " + escape_markdown(text))
            if step.is_numeric and result.reference != float(step.value):
                st.caption("The scenario has changed since you answered: check again against the new numbers.")
        if shown or st.session_state.get(f"{base}.revealed"):
            tol = format_number(drill.tol * 100)
            st.markdown(
                f"Answer: **{drill_reference(drill, step)}**".replace("$", "\\$")
                + f" (full marks within {tol}%)  \n`{step.worked()}`".replace("$", "\\$")
            )
