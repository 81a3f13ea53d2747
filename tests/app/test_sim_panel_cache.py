"""A page runs its question's own simulate through the kept runs (ui/sim_runs.py, whose own tests are
tests/test_sim_runs.py): the result is the model's, and a second call reuses the first run."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest


def _a_question_simulation():
    import streamlit as st

    from models.registry import QUESTIONS
    from ui.sim_panel import run_simulation

    q = QUESTIONS["token-rate-limiter"]
    p = q.Params(**st.session_state.get("changes", {}))
    first = run_simulation(q.slug, p, 3, "Simulating…")
    again = run_simulation(q.slug, p, 3, "Simulating…")
    st.session_state["same_object"] = first is again  # the kept run, not a second one
    st.session_state["equal_to_direct"] = repr(first) == repr(q.module.simulate(p, seed=3))


def test_a_page_runs_its_questions_own_simulate_through_the_cache():
    at = AppTest.from_function(_a_question_simulation, default_timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["equal_to_direct"] is True
    assert at.session_state["same_object"] is True
