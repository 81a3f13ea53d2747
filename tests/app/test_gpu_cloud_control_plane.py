"""AppTest for the gpu-cloud-control-plane page: the lifecycle steps with Next/Back, the position
survives in the URL, and skipping the health gate changes the run."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from models.platform import gpu_cloud_control_plane as model
from tests.helpers import app_page

SLUG = "gpu-cloud-control-plane"
STEP = f"{SLUG}.sim_step"


@pytest.fixture(autouse=True)
def _db(tmp_path, monkeypatch):
    monkeypatch.setenv("WALKTHROUGHS_DB", str(tmp_path / "apptest.duckdb"))


def _nodes_table(at: AppTest):
    frame = next(df for df in at.dataframe if "Fault (hidden truth)" in df.value.columns)
    return frame.value


def test_next_and_back_walk_the_scripted_events():
    at = app_page(SLUG).run()
    assert not at.exception, [e.value for e in at.exception]
    frames = model.scenario(gate=True)
    assert list(_nodes_table(at)["State"]) == [n.state for n in frames[0].fleet.nodes]
    for _ in range(10):
        at.button(key=f"{SLUG}.sim_next").click().run()
    assert at.session_state[STEP] == 10
    assert at.query_params[STEP] == ["10"] or at.query_params[STEP] == "10"
    # event 10: the gate pulls n2 into REPAIR
    assert list(_nodes_table(at)["State"]) == [n.state for n in frames[10].fleet.nodes]
    assert _nodes_table(at)["State"][1] == "REPAIR"
    at.button(key=f"{SLUG}.sim_back").click().run()
    assert at.session_state[STEP] == 9
    assert _nodes_table(at)["State"][1] == "READY"


def test_a_refused_allocation_is_shown_as_refused():
    frames = model.scenario(gate=True)
    refused = next(f.index for f in frames if not f.accepted)
    at = app_page(SLUG)
    at.query_params[STEP] = str(refused)
    at.run()
    assert not at.exception
    assert any("Refused" in w.value and "n3" in w.value for w in at.warning)


def test_skipping_the_gate_hands_out_both_bad_nodes():
    at = app_page(SLUG)
    at.query_params[STEP] = "999"
    at.run()
    assert at.session_state[STEP] == len(model.scenario(gate=True)) - 1
    assert any("1 faulty node " in c.value for c in at.caption)
    at.toggle(key=f"{SLUG}.sim_skip_gate").set_value(True).run()
    assert not at.exception
    assert at.session_state[STEP] == len(model.scenario(gate=False)) - 1
    assert any("2 faulty nodes" in c.value for c in at.caption)
