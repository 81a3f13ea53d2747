"""The simulation cache: two simulations on one page with the same params and seed get their own runs,
and a rerun reuses each run instead of simulating again."""

from __future__ import annotations

import uuid

from streamlit.testing.v1 import AppTest


def _two_simulations_on_one_page():
    """A page with two live simulations of one scenario: each logs a line per run it really does."""
    import streamlit as st
    from pydantic import BaseModel

    from ui.sim_panel import cached_simulation

    class Scenario(BaseModel):
        n: int = 3
        log: str = ""

    def doubled(params_json: str, seed: int) -> int:
        p = Scenario.model_validate_json(params_json)
        with open(p.log, "a") as f:
            f.write("doubled\n")
        return 2 * p.n + seed

    def squared(params_json: str, seed: int) -> int:
        p = Scenario.model_validate_json(params_json)
        with open(p.log, "a") as f:
            f.write("squared\n")
        return p.n ** 2 + seed

    scenario = Scenario(log=st.session_state["log"])
    slug = st.session_state["slug"]
    st.markdown(f"doubled={cached_simulation(slug, doubled, scenario, 1, 'Doubling…')}")
    st.markdown(f"squared={cached_simulation(slug, squared, scenario, 1, 'Squaring…')}")


def _page(tmp_path) -> AppTest:
    at = AppTest.from_function(_two_simulations_on_one_page, default_timeout=30)
    at.session_state["log"] = str(tmp_path / "runs.log")
    at.session_state["slug"] = f"cache-test-{uuid.uuid4().hex}"  # a key no earlier test has filled
    return at


def test_two_simulations_with_the_same_params_and_seed_get_their_own_results(tmp_path):
    at = _page(tmp_path).run()
    assert not at.exception, [e.value for e in at.exception]
    shown = [m.value for m in at.markdown]
    # n = 3, seed 1: 2 x 3 + 1 = 7 and 3^2 + 1 = 10; a shared entry would show 7 twice
    assert shown == ["doubled=7", "squared=10"], shown


def test_a_rerun_reuses_each_simulation_run(tmp_path):
    at = _page(tmp_path).run()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert [m.value for m in at.markdown] == ["doubled=7", "squared=10"]
    runs = (tmp_path / "runs.log").read_text().split()
    assert sorted(runs) == ["doubled", "squared"], runs  # once each, over two reruns


def _a_question_simulation():
    import streamlit as st

    from models.registry import QUESTIONS
    from ui.sim_panel import run_simulation

    q = QUESTIONS["token-rate-limiter"]
    p = q.Params(**st.session_state.get("changes", {}))
    first = run_simulation(q.slug, p, 3, "Simulating…")
    again = run_simulation(q.slug, p, 3, "Simulating…")
    st.session_state["same_object"] = repr(first) == repr(again)  # cache_data hands out copies
    st.session_state["equal_to_direct"] = repr(first) == repr(q.module.simulate(p, seed=3))


def test_a_page_runs_its_questions_own_simulate_through_the_cache():
    at = AppTest.from_function(_a_question_simulation, default_timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["equal_to_direct"] is True
    assert at.session_state["same_object"] is True
