"""A simulation panel with its runs on the worker (ui/sim_runs.py, ui/sim_panel.py), as `make run`
serves it: the page's run does not wait for them; the panel says a run is under way, keeps this
session's previous run on screen meanwhile, polls while it waits and stops once its runs land."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from models.registry import QUESTIONS
from ui import sim_panel
from ui.sim_runs import SimulationRuns

SLUG = "research-cluster-fair-share"
UNDER_WAY = ":material/hourglass_top:"
POLLING = "_sim_panels_polling"


@pytest.fixture
def worker(monkeypatch):
    runs = SimulationRuns()  # its own result store and worker: nothing an earlier test kept
    monkeypatch.setattr(sim_panel, "RUNS", runs)
    yield runs
    if runs._pool is not None:
        runs._pool.shutdown(cancel_futures=True)


def _under_way(at) -> list[str]:
    return [c.value for c in at.caption if c.value.startswith(UNDER_WAY)]


def _sim_cards(at) -> list[str]:
    return [m.label for m in at.metric if "(sim" in m.label]


def test_the_first_run_shows_a_placeholder_then_the_panel(worker):
    at = AppTest.from_file(str(QUESTIONS[SLUG].page_path), default_timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    assert _under_way(at) == [f"{UNDER_WAY} Simulating the cluster…"]
    assert not _sim_cards(at)
    assert at.session_state[POLLING], "the panel must poll while its run is under way"
    worker.wait_all()
    at.run()  # what the panel's next poll does
    worker.wait_all()  # the panel's second run (the other Evals policy) went out on that poll
    at.run()
    assert not _under_way(at)
    assert _sim_cards(at)
    assert not at.session_state[POLLING], "a panel whose runs have landed must stop polling"


def test_a_knob_move_keeps_the_previous_run_on_screen_until_the_new_one_lands(worker):
    at = AppTest.from_file(str(QUESTIONS[SLUG].page_path), default_timeout=60).run()
    for _ in range(3):
        worker.wait_all()
        at.run()
    before = _sim_cards(at)
    assert before and not _under_way(at)
    at.number_input(key=f"{SLUG}.sim_seed").set_value(7).run()
    assert not at.exception, [e.value for e in at.exception]
    assert _under_way(at) == [f"{UNDER_WAY} Simulating the cluster… Shown below: the previous run, until this one ends."]
    assert _sim_cards(at) == before  # the cards of seed 0 stay, not a blank panel
    for _ in range(3):
        worker.wait_all()
        at.run()
    assert not _under_way(at) and _sim_cards(at) == before
