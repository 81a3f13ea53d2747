""""Try first" boxes: type an answer, get a score, see the worked step. Every answer is stored."""

from __future__ import annotations

import math
import numbers
from typing import Any

import streamlit as st

from models.answers import drill_reference, score_drill
from models.core import Derivation, Drill, knobs_of, parse_condition
from models.mock import drills_for
from models.units import format_number
from ui.prose import render as render_prose, value_text
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


_OP_WORDS = {"<": "below", "<=": "at most", ">": "above", ">=": "at least"}


def _shown(name: str, derivation: Derivation, params) -> str:
    try:
        return value_text(name, None, derivation, params)
    except KeyError:
        return name


def _named(name: str, derivation: Derivation, params) -> str:
    """A knob's or a step's name as the page labels it, quoted."""
    if name in derivation:
        label = derivation[name].label
    else:
        knob = knobs_of(type(params)).get(name)
        label = knob.label if knob is not None else name
    return f"“{label}”"


def why_hidden(drill: Drill, derivation: Derivation, params) -> str | None:
    """Why this scenario cannot ask the drill, in the page's words; None when it can. The same tests
    as models.mock.drills_for (the mock asks what the page shows), each named: the step missing or not
    a finite number, else the first `when` condition that fails."""
    if drill.key not in derivation:
        return "its answer is not computed here"
    value = derivation.value(drill.key)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return "its answer is not a number here"
    if not math.isfinite(value):
        return "its answer is unbounded here"

    def lookup(name: str) -> Any:
        if name in derivation:
            return derivation.value(name)
        return getattr(params, name)

    for text in drill.when:
        if drill.model_copy(update={"when": (text,)}).applies(lookup):
            continue
        condition = parse_condition(text)
        subject = f"{_named(condition.name, derivation, params)} is {_shown(condition.name, derivation, params)}"
        wanted = condition.value
        ref = getattr(wanted, "name", None)
        if ref is not None:  # against another name: say that one's value too
            other = f"{_named(ref, derivation, params)} ({_shown(ref, derivation, params)})"
            if condition.op == "!=":
                return f"{subject}, the same as {other}"
            return f"{subject}, not {_OP_WORDS.get(condition.op, 'equal to')} {other}"
        if condition.op == "==" and isinstance(wanted, (str, bool)):
            return f"{subject}, not {wanted if isinstance(wanted, str) else ('on' if wanted else 'off')}"
        # A bare number is in the name's own unit (SI for a step), which its shown value may not be:
        # the value says enough ("“GPUs preempted” is 0 here").
        return f"{subject} here"
    return None


def applicable(question, params, derivation: Derivation) -> tuple[tuple[Drill, ...], dict[str, str]]:
    """The drills this scenario asks (models.mock.drills_for: the page and a mock round agree), and
    for each one it hides, why."""
    kept = drills_for(question, params, derivation)
    asked = {d.key for d in kept}
    hidden = {d.key: why_hidden(d, derivation, params) or "it does not apply here"
              for d in question.drills if d.key not in asked}
    return kept, hidden


def hidden_line(hidden: dict[str, str]) -> str:
    """One line: how many drills this scenario hides, and why (each reason once)."""
    if not hidden:
        return ""
    n = len(hidden)
    reasons = "; ".join(dict.fromkeys(hidden.values()))
    return (f"{n} drill{'s' if n != 1 else ''} {'do' if n != 1 else 'does'} not apply to this scenario: "
            f"{reasons}.")


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
