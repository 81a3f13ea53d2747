"""A knob move draws the metric cards before the knob panel (what the browser shows the moved
number after), and the cards always show the scenario the knobs return, never a guess."""

from __future__ import annotations

import pytest

import ui.question_page as question_page
from models.registry import QUESTIONS
from tests.helpers import app_page, metrics

SLUG = "serving-platform"


def _cards_for(params) -> dict[str, str]:
    """The cards a fresh solve of `params` gives, as metric_row labels and shows them."""
    q = QUESTIONS[SLUG]
    d = q.solve(params)
    return {short or d[key].label: d[key].display(hint=False) for key, short in q.content.metrics}


@pytest.fixture
def calls(monkeypatch):
    """The order in which one run draws the cards and the knob panel."""
    seen: list[str] = []
    metric_row, knob_panel = question_page.metric_row, question_page.knob_panel

    def cards(*a, **k):
        seen.append("cards")
        return metric_row(*a, **k)

    def panel(*a, **k):
        seen.append("knobs")
        return knob_panel(*a, **k)

    monkeypatch.setattr(question_page, "metric_row", cards)
    monkeypatch.setattr(question_page, "knob_panel", panel)
    return seen


def test_a_knob_move_draws_the_cards_first_and_once(calls):
    q = QUESTIONS[SLUG]
    at = app_page(SLUG).run()
    assert calls == ["knobs", "cards"]  # a first run cannot know the scenario before its widgets
    calls.clear()
    at.slider(key=f"{SLUG}.prefix_cache_hit").set_value(40).run()
    assert not at.exception
    assert calls == ["cards", "knobs"]
    assert metrics(at) == _cards_for(q.Params(prefix_cache_hit=0.4))
    assert len(at.metric) == len(q.content.metrics)  # drawn into one slot each, not appended


def test_cards_are_redrawn_when_the_knobs_return_another_scenario(calls, monkeypatch):
    """Where the early reading differs from what the knob panel returns (a value it snaps to a
    slider stop, a preset applied on the way), the cards show the panel's scenario: drawn again
    into the same slots."""
    q = QUESTIONS[SLUG]
    at = app_page(SLUG).run()
    calls.clear()
    monkeypatch.setattr(question_page, "params_from_state", lambda question: q.Params(concurrent_users=100_000))
    at.slider(key=f"{SLUG}.prefix_cache_hit").set_value(40).run()
    assert not at.exception
    assert calls == ["cards", "knobs", "cards"]
    assert metrics(at) == _cards_for(q.Params(prefix_cache_hit=0.4))
    assert metrics(at) != _cards_for(q.Params(concurrent_users=100_000))
    assert len(at.metric) == len(q.content.metrics)


def test_no_early_cards_while_a_drill_link_may_withhold_one(calls):
    """?drill=<key> hides that drill's answer card until it is answered: the cards wait for it."""
    q = QUESTIONS[SLUG]
    drill = q.content.drills[0]
    at = app_page(SLUG)
    at.query_params["drill"] = drill.key
    at.run()
    calls.clear()
    at.slider(key=f"{SLUG}.prefix_cache_hit").set_value(40).run()
    assert not at.exception
    assert calls == ["knobs", "cards"]
