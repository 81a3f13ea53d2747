"""Every drill of every question reads an answer in the unit its prompt asks for.

The typed forms are what a learner writes after reading the prompt: the bare number in the
asked unit ("19.8" for "(ms)") and the number with that unit ("19.8 ms"). Both must get full
marks, at the seed scenario and at 20 drawn mock scenarios, through `score_drill`: the one
function the study page's drill box and the mock interview's answer box both call.
"""

import re

import pytest

from models.answers import AskedUnitError, asked, score_drill
from models.mock import draw_scenario
from models.registry import written

WRITTEN = written()
IDS = [q.slug for q in WRITTEN]
DRAWN_SEEDS = range(20)
CLOSING_PARENS = re.compile(r"\(([^()]*)\)\s*[?.]?\s*$")


@pytest.mark.parametrize("q", WRITTEN, ids=IDS)
def test_every_drill_asks_in_a_unit_of_its_steps_kind(q):
    d = q.solve(q.Params())
    for drill in q.drills:
        step = d[drill.key]
        try:
            asked(drill.unit, step.unit)
        except AskedUnitError as e:
            pytest.fail(f"{q.slug}/{drill.key}: {e}")


@pytest.mark.parametrize("q", WRITTEN, ids=IDS)
def test_the_unit_is_said_once(q):
    """The prompt does not close on its own unit: `Drill.question` appends the declared one."""
    d = q.solve(q.Params())
    for drill in q.drills:
        m = CLOSING_PARENS.search(drill.prompt)
        if m is None:
            continue
        try:
            asked(m.group(1), d[drill.key].unit)
        except AskedUnitError:
            continue  # a formula or an aside, not a unit: "F = 2^(−u/s)?"
        pytest.fail(f"{q.slug}/{drill.key}: the prompt ends with its unit '({m.group(1)})'; declare it as unit")


def _typed_forms(drill, step):
    unit = asked(drill.unit, step.unit)
    return unit.bare(float(step.value)), unit.text(float(step.value))


@pytest.mark.parametrize("q", WRITTEN, ids=IDS)
def test_the_bare_number_and_the_number_with_its_unit_get_full_marks(q):
    scenarios = [q.Params()] + [draw_scenario(q.Params, seed) for seed in DRAWN_SEEDS]
    misses = []
    for params in scenarios:
        d = q.solve(params)
        for drill in q.drills:
            step = d[drill.key]
            for typed in _typed_forms(drill, step):
                result = score_drill(typed, drill, step)
                if result.fraction != 1.0:
                    misses.append(f"{drill.key}: {typed!r} -> {result.message}")
    assert not misses, "\n".join(misses[:20])


def test_the_check_can_fail():
    """The same forms against a drill whose unit is wrong by a factor of 1000 score nothing."""
    q = next(q for q in WRITTEN if q.slug == "continuous-batching")
    d = q.solve(q.Params())
    drill = next(dr for dr in q.drills if dr.key == "step_time_s")
    assert drill.unit == "ms" and d["step_time_s"].unit == "s"
    bare, _ = _typed_forms(drill, d["step_time_s"])
    wrong = drill.model_copy(update={"unit": "s"})
    assert score_drill(bare, drill, d["step_time_s"]).fraction == 1.0
    assert score_drill(bare, wrong, d["step_time_s"]).fraction == 0.0
