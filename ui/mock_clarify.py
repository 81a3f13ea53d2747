"""Clarifying questions: the round states no givens up front; the candidate asks for them, from
the questions a strong candidate asks or in their own words. Each question asked reveals its
given and is saved as a note (ASKED_PREFIX + the given's knob) whose time the review reads."""

from __future__ import annotations

from functools import lru_cache

import streamlit as st

from models.mock_script import Clarifier, clarifiers, match_question
from models.registry import QUESTIONS
from store import AttemptClosedError, StoreError
from ui.clock import now
from ui.mock_common import ASKED_PREFIX, Attempt
from ui.prose import render as render_prose
from ui.safe import NUL_PROBLEM, escape_markdown, has_nul


@lru_cache(maxsize=None)
def question_clarifiers(slug: str) -> tuple[Clarifier, ...]:
    return tuple(clarifiers(QUESTIONS[slug]))


def asked_keys(notes: dict) -> dict[str, dict]:
    """knob -> its note ({"text": the question as asked, "saved_at"}), in the order asked."""
    rows = [(k[len(ASKED_PREFIX):], row) for k, row in notes.items() if k.startswith(ASKED_PREFIX)]
    return dict(sorted(rows, key=lambda kv: kv[1]["saved_at"]))


def _ask(store, attempt: Attempt, found: list[Clarifier], said: str) -> str | None:
    """Save each clarifier as asked; a sentence if the store refused."""
    try:
        for c in found:
            store.save_note(attempt.id, ASKED_PREFIX + c.key, said, now=now())
    except (AttemptClosedError, StoreError) as e:
        return str(e)
    return None


def clarify_panel(store, attempt: Attempt, locked: bool) -> None:
    st.fragment(_panel)(store, attempt, locked)


def _panel(store, attempt: Attempt, locked: bool) -> None:
    base = f"mock.{attempt.id}.clarify"
    clars = question_clarifiers(attempt.question.slug)
    by_key = {c.key: c for c in clars}

    def pick(c: Clarifier) -> None:
        st.session_state[f"{base}.problem"] = _ask(store, attempt, [c], c.ask)

    def typed() -> None:
        text = (st.session_state.get(f"{base}.typed") or "").strip()
        st.session_state[f"{base}.problem"] = None
        if not text:
            return
        if has_nul(text):
            st.session_state[f"{base}.problem"] = NUL_PROBLEM
            return
        asked = asked_keys(store.latest_notes(attempt.id))
        found = match_question(text, clars)
        new = [c for c in found if c.key not in asked]
        if not found:
            st.session_state[f"{base}.problem"] = (
                f"“{text}”: the interviewer has no number for that. Ask about one thing at a time "
                "(traffic, sizes, the latency target, the hardware).")
        elif not new:
            st.session_state[f"{base}.problem"] = f"“{text}”: already answered below."
        else:
            st.session_state[f"{base}.problem"] = _ask(store, attempt, new, text)

    asked = asked_keys(store.latest_notes(attempt.id))
    st.markdown("**Clarifying questions.** The interviewer states no numbers until you ask: "
                "ask for what the design needs, in your words or from the list.")
    with st.form(f"{base}.form", border=False, clear_on_submit=True, enter_to_submit=True):
        cols = st.columns([4, 1], vertical_alignment="bottom")
        cols[0].text_input("Ask the interviewer", key=f"{base}.typed", max_chars=200, disabled=locked,
                           placeholder="e.g. Is that peak or average traffic?")
        cols[1].form_submit_button("Ask", on_click=typed, disabled=locked, width="stretch")
    if st.session_state.get(f"{base}.problem"):
        st.caption(escape_markdown(st.session_state[f"{base}.problem"]))
    if asked:
        lines = []
        for k in asked:
            c = by_key.get(k)
            if c is not None:
                answer = render_prose(c.answer, attempt.derivation, attempt.params)
                lines.append(f"- *{escape_markdown(c.ask)}* {answer}")
        with st.container(key="mock-givens"):
            st.markdown("\n".join(lines))
    remaining = [c for c in clars if c.key not in asked]
    if remaining:
        with st.container(horizontal=True, gap="small", key="mock-asks"):
            for c in remaining:
                st.button(c.ask, key=f"{base}.ask.{c.key}", on_click=pick, args=(c,), disabled=locked,
                          width="content")
    else:
        st.caption("You have asked for every given.")
