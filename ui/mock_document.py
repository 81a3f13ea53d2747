"""The round's shared document: one Markdown text for the whole round, as in the shared doc of a
real interview, saved whenever the candidate clicks away (the latest note is its text)."""

from __future__ import annotations

import streamlit as st

from store import AttemptClosedError, StoreError
from ui.clock import now
from ui.mock_common import DOCUMENT_NOTE, Attempt, document_template
from ui.safe import NUL_PROBLEM, has_nul

HEIGHT_PX = 620  # the main work area: a phase's worth of lines without scrolling the page
MAX_CHARS = 50_000


def document_panel(store, attempt: Attempt, notes: dict, locked: bool) -> None:
    key = f"mock.{attempt.id}.document"
    if key not in st.session_state:  # a reload shows what was saved
        st.session_state[key] = notes.get(DOCUMENT_NOTE, {}).get("text", document_template(attempt))
    st.fragment(_panel)(store, attempt, key, notes.get(DOCUMENT_NOTE), locked)


def _panel(store, attempt: Attempt, key: str, saved_row: dict | None, locked: bool) -> None:
    def save() -> None:
        if has_nul(st.session_state[key]):  # the text stays in the box; only the save is refused
            st.session_state[f"{key}.problem"] = NUL_PROBLEM
            return
        st.session_state[f"{key}.problem"] = None
        try:
            at = now()
            store.save_note(attempt.id, DOCUMENT_NOTE, st.session_state[key], now=at)
            st.session_state[f"{key}.saved_at"] = at
        except (AttemptClosedError, StoreError) as e:
            st.session_state[f"{key}.problem"] = str(e)

    st.text_area(
        "The document", key=key, height=HEIGHT_PX, on_change=save, disabled=locked, max_chars=MAX_CHARS,
        help="Markdown, as in the shared document of a real round: your numbers, the boxes, the "
             "arithmetic, the answers to the interviewer's questions in words. The review reads "
             "the numbers you type here against the reference.",
    )
    if st.session_state.get(f"{key}.problem"):
        st.warning(st.session_state[f"{key}.problem"])
    else:
        at = st.session_state.get(f"{key}.saved_at") or (saved_row or {}).get("saved_at")
        st.caption(f"Saved at {at.strftime('%H:%M:%S')} UTC; saves whenever you click away."
                   if at else "Saves whenever you click away (or Ctrl+Enter).")
