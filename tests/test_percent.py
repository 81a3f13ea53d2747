"""One percent convention (issue 20): a share is its fraction, for knobs (Knob.percent) and steps
(Step.percent) alike; people read it as a percent, a model and a formula compute with the fraction."""

import pytest

from models.answers import drill_reference, score_answer
from models.core import Derivation, Drill
from models.formula import evaluate
from models.mock_document import read_document
from models.registry import written


def _share() -> Derivation:
    d = Derivation()
    d.step("busy_s", "Busy time", 1.41, "s")
    d.step("window_s", "Window", 3.0, "s")
    d.step("busy_share", "Share of the window busy", 1.41 / 3.0, percent=True, formula="{busy_s} / {window_s}")
    return d


def test_a_share_reads_as_a_percent_and_computes_as_a_fraction():
    step = _share()["busy_share"]
    assert step.value == pytest.approx(0.47)
    assert step.unit == "1" and step.percent
    assert step.display() == "47%"
    assert step.display("%") == "47%"
    assert step.worked() == "1.41 s / 3 s = 47%"
    # the formula evaluates to the fraction the step holds, not to 47
    assert evaluate(step.formula, step.bindings, step.units, step.unit) == pytest.approx(0.47)


def test_a_share_in_percent_points_or_a_percent_flag_on_a_unit_is_refused():
    d = Derivation()
    with pytest.raises(ValueError, match="fraction"):
        d.step("busy_pct", "Busy", 47.0, "%")
    with pytest.raises(ValueError, match="unit is '1'"):
        d.step("busy_s", "Busy", 0.47, "s", percent=True)


def test_a_drill_in_percent_reads_a_bare_number_as_percent_points():
    step = _share()["busy_share"]
    drill = Drill(key="busy_share", prompt="What share of the window is busy?", phase="arithmetic", unit="%")
    assert drill_reference(drill, step) == "47%"
    assert score_answer("47", step, 0.05, "%").fraction == 1.0
    assert score_answer("47%", step, 0.05, "%").fraction == 1.0
    fraction_typed = score_answer("0.47", step, 0.05, "%")  # a bare number is read in the asked unit
    assert fraction_typed.fraction == 0.0 and "Did you give a fraction? 0.47 is 47%." in fraction_typed.message
    assert score_answer("60", step, 0.05, "%").fraction == 0.0


def test_the_document_reader_meets_a_share_written_in_percent():
    d = _share()
    [finding] = read_document("## Numbers\nThe replica is busy 47% of the window.\n", d, [("busy_share", "Busy share")])
    assert finding.status == "right" and finding.reference == "47%"


@pytest.mark.parametrize("q", written(), ids=lambda q: q.slug)
def test_every_drill_on_a_share_asks_in_percent(q):
    """A bare number typed for a share is read in the asked unit: asked in "" it would be the fraction,
    and the reference would show as "0" (a count rounds)."""
    d = q.solve(q.Params())
    for drill in q.drills:
        if drill.key in d and d[drill.key].percent:
            assert drill.unit == "%", f"{q.slug}/{drill.key} asks for a share in {drill.unit!r}, not '%'"


@pytest.mark.parametrize("q", written(), ids=lambda q: q.slug)
def test_every_share_knob_is_a_fraction_flagged_percent(q):
    from models.core import knobs_of  # noqa: PLC0415

    for name, knob in knobs_of(q.Params).items():
        assert knob.unit != "%", f"{q.slug}.{name}: a share knob holds its fraction with percent=True, not '%'"
        assert not knob.percent or not knob.unit, f"{q.slug}.{name}: a percent knob is a plain fraction"
