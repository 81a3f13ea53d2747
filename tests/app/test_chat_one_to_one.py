"""AppTest for the chat-one-to-one page: the delivery step-through walks with Next/Back, keeps its
position in the URL, and the reversed order with a crash ends in a lost message."""

from __future__ import annotations

import pytest

from models.product import chat_one_to_one as model
from tests.helpers import app_page, metric

SLUG = "chat-one-to-one"
STEP = f"{SLUG}.sim_step"


@pytest.fixture(autouse=True)
def _db(tmp_path, monkeypatch):
    monkeypatch.setenv("WALKTHROUGHS_DB", str(tmp_path / "apptest.duckdb"))


def test_next_walks_the_default_delivery_to_a_drained_inbox():
    at = app_page(SLUG).run()
    assert not at.exception, [e.value for e in at.exception]
    frames, _ = model.deliver()
    assert metric(at, "Alice's screen") == "sending…"
    for _ in range(3):
        at.button(key=f"{SLUG}.sim_next").click().run()
    assert at.session_state[STEP] == 3
    assert at.query_params[STEP] in (["3"], "3")
    # event 3: the publish finds Bob offline; the inbox already holds m1
    assert metric(at, "Bob's inbox rows") == "m1"
    assert metric(at, "Bob's phone shows") == "nothing"
    assert any("gone from the live path" in e.value for e in at.error)
    for _ in range(len(frames) - 1 - 3):
        at.button(key=f"{SLUG}.sim_next").click().run()
    assert at.session_state[STEP] == len(frames) - 1
    assert metric(at, "Bob's phone shows") == "m1"
    assert metric(at, "Alice's screen") == "delivered ✓✓"
    at.button(key=f"{SLUG}.sim_back").click().run()
    assert at.session_state[STEP] == len(frames) - 2


def test_reversed_order_with_crash_ends_lost():
    at = app_page(SLUG)
    at.query_params[STEP] = "999"
    at.run()
    frames, _ = model.deliver()
    assert at.session_state[STEP] == len(frames) - 1  # clamped to the last event
    at.radio(key=f"{SLUG}.sim_order").set_value("publish_first").run()
    assert at.session_state[STEP] == 0  # a new scenario starts from the beginning
    at.selectbox(key=f"{SLUG}.sim_crash").set_value(2).run()
    assert not at.exception, [e.value for e in at.exception]
    frames, outcome = model.deliver("publish_first", 2, False)
    assert outcome.lost
    for _ in range(len(frames) - 1):
        at.button(key=f"{SLUG}.sim_next").click().run()
    assert at.session_state[STEP] == len(frames) - 1
    assert any("lost" in e.value for e in at.error)
    assert metric(at, "Alice's screen") == "sent ✓"
    assert metric(at, "Bob's phone shows") == "nothing"
    assert any("lost" in c.value for c in at.caption)
