"""Start a mock interview: pick a question, a track or a surprise; draw or take the seed scenario."""

from __future__ import annotations

import secrets
from datetime import timedelta

import numpy as np
import streamlit as st

from models.mock import draw_scenario
from models.registry import TRACK_TITLES, written
from ui.clock import now
from ui.mock_common import MODE_PHASES, mode_minutes
from ui.profile_box import profile_box
from ui.session_store import profile


def start_attempt(store, question, seed: int, params, *, instant_feedback: bool, round_min: int,
                  mode: str = "full") -> str:
    """A new round; a practice mode's clock is its phase's minutes in the plan, whatever `round_min`."""
    t0 = now()
    round_min = mode_minutes(mode, round_min)
    attempt_id = store.start_attempt(
        profile(), question.slug, "mock", params.model_dump(mode="json"), seed=seed,
        deadline=t0 + timedelta(minutes=round_min),
        settings={"instant_feedback": instant_feedback, "round_min": round_min, "mode": mode}, now=t0,
    )
    store.mark_phase(attempt_id, MODE_PHASES[mode][0], now=t0)
    return attempt_id


def render_start(store) -> None:
    st.title("Mock interview")
    st.markdown(
        "Forty-five minutes, one question, as the real round runs: the interviewer states the question in "
        "one line, you ask for the numbers you need, and you work in one shared document while the "
        "interviewer's probes arrive phase by phase. The clock runs the plan **5 / 7 / 10 / 16 / 5** "
        "minutes (numbers, shape, arithmetic, depth, failure modes; 2 minutes of slack). Everything is "
        "saved the moment you enter it; the review reads the numbers in your document against the "
        "model's arithmetic. Close the tab or refresh: the link brings you back to the same round with "
        "the clock still running."
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
        numbers_min, depth_min = mode_minutes("numbers"), mode_minutes("depth")
        labels = {"full": "The full round", "numbers": f"Numbers only ({numbers_min:g} minutes)",
                  "depth": f"One depth area ({depth_min:g} minutes)"}
        mode = st.radio("Practice", list(labels), format_func=labels.get, horizontal=True, key="mock.mode",
                        help="Numbers only: the clarifying questions and the numbers drills. One depth "
                             "area: you pick the area, the interviewer probes it.")
        round_min = st.select_slider("Round length (minutes, the full round)", [45, 60], value=45, key="mock.round_min")
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
    attempt_id = start_attempt(store, question, seed, params, instant_feedback=feedback, round_min=int(round_min),
                               mode=mode)
    st.query_params["attempt"] = attempt_id
    st.rerun()
