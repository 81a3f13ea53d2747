"""A bare number is read in the unit the prompt asks for; misses say what slipped.

Every expected value below is worked by hand from the unit's definition (1 ms = 1e-3 s,
1 GB = 1e9 B, 1 Gb/s = 1e9/8 B/s, 1 % = 0.01), never copied from the code's output.
"""

import pytest

from models.answers import AskedUnitError, asked, drill_reference, parse_answer, score_answer, score_drill
from models.core import Drill, Step


def step(value, unit="s", noun=""):
    return Step("x", "x", value, unit, noun)


def drill(unit, tol=0.05):
    return Drill(key="x", prompt="How much?", phase="numbers", unit=unit, tol=tol)


@pytest.mark.parametrize(
    ("typed", "expected_unit", "asked_unit", "value"),
    [
        ("19.8", "s", "ms", 19.8e-3),  # continuous-batching's decode step, kept in seconds
        ("146.8", "B", "GB", 146.8e9),  # its KV budget, kept in bytes
        ("1.25", "B/s", "GB/s", 1.25e9),
        ("10", "B/s", "Gb/s", 10e9 / 8),
        ("60", "1", "%", 0.6),  # a fraction asked as a percentage
        ("25", "%", "%", 25.0),
        ("5.3", "s", "min", 5.3 * 60),
        ("2.7k", "1/s", "tokens/s", 2700.0),  # a magnitude word still multiplies
        ("3", "h", "GPU-hours", 3.0),
        ("54", "1", "sequences", 54.0),
        ("28", "1", "×", 28.0),
        ("0.25", "1", "", 0.25),
        ("1.5", "s", "days", 1.5 * 86400),
    ],
)
def test_a_bare_number_is_in_the_asked_unit(typed, expected_unit, asked_unit, value):
    parsed = parse_answer(typed, expected_unit, asked_unit)
    assert parsed.ok, parsed.message
    assert parsed.value == pytest.approx(value)


@pytest.mark.parametrize(
    ("typed", "expected_unit", "asked_unit", "value"),
    [
        ("19.8 ms", "s", "ms", 19.8e-3),
        ("0.0198 s", "s", "ms", 0.0198),  # a unit the learner types wins over the asked one
        ("146,800 MB", "B", "GB", 146.8e9),
        ("60%", "1", "%", 0.6),
        ("0.6", "1", None, 0.6),  # no asked unit: the step's own
    ],
)
def test_a_typed_unit_is_converted_as_before(typed, expected_unit, asked_unit, value):
    assert parse_answer(typed, expected_unit, asked_unit).value == pytest.approx(value)


def test_the_read_as_message_speaks_the_asked_unit():
    assert parse_answer("19.8", "s", "ms").message == "Read as 19.8 ms."
    assert parse_answer("146.8", "B", "GB").message == "Read as 146.8 GB."


@pytest.mark.parametrize(
    ("asked_unit", "step_unit", "per_asked"),
    [("ms", "s", 1e-3), ("GB", "B", 1e9), ("Gb/s", "B/s", 1.25e8), ("%", "1", 0.01), ("min", "s", 60),
     ("sequences", "1", 1), ("requests/min", "1/min", 1), ("tokens/s", "1/s", 1), ("TB", "GB", 1000)],
)
def test_the_asked_unit_is_read_by_the_answer_reader(asked_unit, step_unit, per_asked):
    assert asked(asked_unit, step_unit).per_asked == pytest.approx(per_asked)


@pytest.mark.parametrize(("asked_unit", "step_unit"), [("ms", "B"), ("GB", "s"), ("sequences", "s"), ("furlongs", "1")])
def test_an_asked_unit_of_the_wrong_kind_is_refused(asked_unit, step_unit):
    with pytest.raises(AskedUnitError):
        asked(asked_unit, step_unit)


@pytest.mark.parametrize(
    ("asked_unit", "ref", "shown"),
    [("ms", step(0.0198), "19.8 ms"), ("GB", step(146.8e9, "B"), "146.8 GB"), ("%", step(0.25, "1"), "25%"),
     ("×", step(28.0, "1"), "28×"), ("", step(0.5946, "1"), "0.5946"), ("sequences", step(54, "1"), "54 sequences")],
)
def test_the_reference_is_shown_in_the_asked_unit(asked_unit, ref, shown):
    assert drill_reference(drill(asked_unit), ref) == shown


def test_the_drill_says_its_unit_once_after_the_prompt():
    assert drill("ms").question == "How much? (ms)"
    assert drill("").question == "How much?"


def test_score_drill_reads_the_bare_number_in_the_drill_unit():
    ref = step(0.0198)
    assert score_drill("19.8", drill("ms"), ref).fraction == 1.0
    assert score_answer("19.8", ref, 0.05).fraction == 0.0  # the old reading, in the step's seconds


# ---------------------------------------------------------------------------------------------
# What a miss says


def test_a_factor_of_a_thousand_is_named_not_called_a_percentage():
    # 0.0198 ms against 19.8 ms is 1/1000 of it: "off by 99.9%" hid that it is a unit slip.
    message = score_drill("0.0198", drill("ms"), step(0.0198)).message
    assert message.startswith("Off by a factor of 1,000 (too low).")
    assert "Did you mean 0.0198 s?" in message
    assert "reads a bare number in ms" in message


def test_a_typed_unit_that_slipped_is_named():
    assert "Did you mean 19.8 ms?" in score_drill("19.8 s", drill("ms"), step(0.0198)).message
    message = score_drill("146.8 B", drill("GB"), step(146.8e9, "B")).message
    assert message.startswith("Off by a factor of 1e9 (too low).")
    assert "Did you mean 146.8 GB?" in message


def test_bits_for_bytes_is_named():
    message = score_drill("10", drill("GB/s"), step(1.25e9, "B/s")).message
    assert "a factor of 8" in message and "Did you mean 10 Gb/s?" in message


def test_a_fraction_for_a_percentage_and_back():
    assert "Did you give a fraction? 0.6 is 60%." in score_drill("0.6", drill("%"), step(0.6, "1")).message
    assert "Did you mean 59.46% (0.5946 as a fraction)?" in score_drill("59.46", drill(""), step(0.5946, "1")).message


def test_money_off_by_a_thousand_suggests_the_k():
    message = score_drill("5.262", drill("USD"), step(5262.0, "USD")).message
    assert "Did you mean $5.262k ($5,262)?" in message


def test_an_arithmetic_miss_gets_no_unit_suggestion():
    message = score_drill("25", drill("ms"), step(0.0198)).message
    assert message == "Off by 26.3% (too high)."


def test_a_wrong_kind_of_unit_is_a_message_not_a_score():
    result = score_drill("320 ms", drill("GB"), step(146.8e9, "B"))
    assert not result.parsed.ok and result.fraction == 0.0
    assert "a data size" in result.message and "a time" in result.message
