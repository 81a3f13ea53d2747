"""An infinite value reads as a person says it: a time that never ends is "unbounded", with no unit
hint ("∞ s (≈ ∞ days)" was the old text); other infinite amounts keep "∞" and their own unit."""

import math

import pytest

from models.core import Step, render_formula
from models.mock import draw_scenario
from models.registry import QUESTIONS
from models.units import format_quantity

INF = math.inf


@pytest.mark.parametrize("unit", ["s", "ms", "min", "h", "d"])
def test_an_infinite_time_is_unbounded_with_no_hint(unit):
    assert format_quantity(INF, unit) == "unbounded"
    assert format_quantity(INF, unit, hint=False) == "unbounded"
    assert format_quantity(INF, "s", target_unit=unit) == "unbounded"  # "{{x:min}}" in the prose


def test_a_finite_long_time_keeps_its_hint_and_a_negative_infinity_has_none():
    assert format_quantity(200_000, "s") == "200,000 s (≈ 2.31 days)"  # 200,000 / 86,400
    assert format_quantity(-INF, "s") == "-∞ s"


@pytest.mark.parametrize("value,unit,noun,text", [
    (INF, "1", "GPUs", "∞ GPUs"),
    (INF, "1/s", "requests", "∞ requests/s"),
    (INF, "%", "", "∞%"),
    (INF, "GB", "", "∞ GB"),  # not rescaled to "∞ B"
    (INF, "FLOP", "", "∞ FLOP"),
    (INF, "USD", "", "$∞"),  # not "$∞T"
    (-INF, "USD", "", "-$∞"),
    (INF, "h", "GPU", "∞ GPU-h"),  # GPU-hours are an amount of work, not a wait
])
def test_other_infinite_amounts_keep_infinity_and_their_unit(value, unit, noun, text):
    assert format_quantity(value, unit, noun=noun) == text


def test_a_step_and_a_worked_formula_read_the_same_way():
    step = Step("wait_p99_s", "p99 wait", INF, "s", formula="{load} / {cap}")
    assert step.display() == step.display(hint=False) == "unbounded"
    assert render_formula("{a} + {b}", {"a": 0.2, "b": INF}, {"a": "s", "b": "s"}) == "200 ms + unbounded"


def test_a_real_page_whose_arrivals_never_overrun_says_unbounded():
    # autoscaling-warm-pool, draw 25: a 1.5x burst that the warm fleet absorbs, so the moment the
    # arrivals overrun it never comes (the model returns inf for it).
    q = QUESTIONS["autoscaling-warm-pool"]
    d = q.solve(draw_scenario(q.Params, 25))
    assert math.isinf(d.value("overrun_at_s"))
    assert d["overrun_at_s"].display() == "unbounded"
