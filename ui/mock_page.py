"""The mock interview page: start, round or review, chosen by the attempt in the URL."""

from __future__ import annotations

import streamlit as st

from ui.clock import now
from ui.mock_common import OPEN_ATTEMPT, load_attempt
from ui.mock_round import render_round
from ui.mock_start import render_start
from ui.profile_box import profile_box, refuse_if_locked
from ui.session_store import get_store, profile


def render() -> None:
    store = get_store(announce=True)
    attempt_id = st.query_params.get("attempt")
    if not attempt_id:
        if refuse_if_locked():
            profile_box(st.columns([1, 2])[0])
            return
        render_start(store)
        return
    if refuse_if_locked():
        profile_box(st.columns([1, 2])[0])
        return
    attempt, problem = load_attempt(store, attempt_id, profile())
    if problem:
        st.warning(problem, icon=":material/link_off:")
        profile_box(st.columns([1, 2])[0])
        if st.button("Start a new attempt", key="mock.clear"):
            del st.query_params["attempt"]
            st.rerun()
        return
    closed = attempt.row["finished_at"] is not None or (
        attempt.row["deadline"] is not None and now() >= attempt.row["deadline"]
    )
    if closed:
        if attempt.row["finished_at"] is None:
            from ui.mock_round import finish

            finish(store, attempt)
            attempt, _ = load_attempt(store, attempt_id)
        if (st.session_state.get(OPEN_ATTEMPT) or {}).get("id") == attempt.id:
            del st.session_state[OPEN_ATTEMPT]  # closed by its clock: the pages stop noting
        from ui.mock_review import render_review  # the review's charts and readers load when a round ends

        render_review(store, attempt)
    else:
        render_round(store, attempt)
