"""Start a mock interview: pick a question, a track or a surprise; draw or take the seed scenario."""

from __future__ import annotations

import secrets
from datetime import timedelta

import numpy as np
import streamlit as st

from models.mock import draw_scenario
from models.registry import TRACK_TITLES, written
from ui.clock import now
from ui.profile_box import profile_box
from ui.session_store import profile


def start_attempt(store, question, seed: int, params, *, instant_feedback: bool, round_min: int) -> str:
    t0 = now()
    attempt_id = store.start_attempt(
        profile(), question.slug, "mock", params.model_dump(mode="json"), seed=seed,
        deadline=t0 + timedelta(minutes=round_min),
        settings={"instant_feedback": instant_feedback, "round_min": round_min}, now=t0,
    )
    store.mark_phase(attempt_id, "numbers", now=t0)
    return attempt_id


def render_start(store) -> None:
    st.title("Mock interview")
    st.markdown(
        "Forty-five minutes, one question, typed answers. The clock runs the plan **5 / 7 / 10 / 16 / 5** "
        "minutes (numbers, shape, arithmetic, depth, failure modes; 2 minutes of slack). Answers are "
        "saved the moment you enter them and scored against the model's arithmetic when the round ends. "
        "Close the tab or refresh: the link brings you back to the same attempt with the clock still running."
    )
    profile_box(st.columns([1, 2])[0])
    questions = written()
    if not questions:
        st.info("No question is written yet.")
        return
    with st.form("mock.start"):
        pick = st.radio("What to practise", ["One question", "A track", "Surprise me"], horizontal=True, key="mock.pick")
        titles = {q.title: q for q in questions}
        chosen_title = st.selectbox("Question", list(titles), key="mock.question")
        tracks = sorted({q.track for q in questions}, key=list(TRACK_TITLES).index)
        chosen_track = st.selectbox("Track", tracks, format_func=TRACK_TITLES.get, key="mock.track")
        scenario = st.radio("Scenario", ["Draw a new scenario", "The seed scenario"], horizontal=True, key="mock.scenario")
        round_min = st.select_slider("Round length (minutes)", [45, 60], value=45, key="mock.round_min")
        feedback = st.toggle("Instant feedback (practice: show each score as you answer)", key="mock.feedback")
        go = st.form_submit_button("Start the clock", type="primary")
    if not go:
        return
    seed = secrets.randbelow(2**31)
    rng = np.random.default_rng(seed)
    if pick == "One question":
        question = titles[chosen_title]
    else:
        pool = [q for q in questions if pick == "Surprise me" or q.track == chosen_track]
        question = pool[int(rng.integers(len(pool)))]
    params = question.Params() if scenario == "The seed scenario" else draw_scenario(question.Params, seed, solve=question.solve)
    attempt_id = start_attempt(store, question, seed, params, instant_feedback=feedback, round_min=int(round_min))
    st.query_params["attempt"] = attempt_id
    st.rerun()
