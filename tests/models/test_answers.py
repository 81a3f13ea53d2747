"""Typed answers: the forms people really type, wrong dimensions, scoring, and never raising."""

import ast
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import models.answers as answers
from models.answers import Parsed, Score, parse_answer, score_answer
from models.core import Step

GB = 1e9  # bytes
Gb = 1e9 / 8  # bytes in a gigabit

# (typed, expected unit, value in the expected unit computed by hand)
FORMS = [
    # bare numbers take the expected unit
    ("320", "s", 320),
    ("8", "1", 8),
    ("-5", "s", -5),
    ("+5", "1", 5),
    (".5", "1", 0.5),
    # thousands separators and decimal commas
    ("1,280", "1", 1280),
    ("1,280", "s", 1280),
    ("64,000 s", "s", 64_000),
    ("1 280", "1", 1280),
    ("1\u2009280", "1", 1280),  # thin space
    ("1\u202f280", "1", 1280),  # narrow no-break space
    ("3 000 000", "1", 3_000_000),
    ("1,280.5", "1", 1280.5),
    ("1,5", "1", 1.5),  # a European decimal comma where it cannot be a thousands separator
    ("0,125", "1", 0.125),
    ("12,50", "1", 12.5),
    # scientific
    ("3e5", "1", 3e5),
    ("1.2E3", "1", 1.2e3),
    ("2.5x10^4", "1", 2.5e4),
    ("2.5×10^4", "1", 2.5e4),
    ("2.5 × 10⁴", "1", 2.5e4),  # superscripts survive NFKC (which would make "104")
    ("2.5*10^-3", "1", 2.5e-3),
    ("10^9", "1", 1e9),
    ("1.92e11 FLOP", "FLOP", 1.92e11),
    ("2^30 B", "GiB", 1),
    # magnitude words
    ("1.2k", "s", 1200),
    ("1.2K", "1", 1200),
    ("3 thousand", "1", 3000),
    ("5M", "1", 5e6),
    ("5m", "1", 5e6),  # lower-case m is million outside a time context
    ("1.5 million tokens/s", "1/s", 1.5e6),
    ("3B", "1", 3e9),  # B is billion when no data size is expected ...
    ("3B", "B", 3),  # ... and a byte when one is
    ("3 B/s", "B/s", 3),
    ("3 B/s", "1/s", 3e9),
    ("3 bn", "1", 3e9),
    ("2 billion", "1", 2e9),
    ("2T", "1", 2e12),  # T alone is trillion
    ("1 trillion", "1", 1e12),
    ("1.2k req/s", "1/s", 1200),
    ("14k GPUs", "1", 14_000),
    # hedges and punctuation
    ("~75 minutes", "s", 75 * 60),
    ("≈ 320 s", "s", 320),
    ("about 5.3 min", "s", 5.3 * 60),
    ("approx 320 s", "s", 320),
    ("approx. 320 s", "s", 320),
    ("around 320 s", "s", 320),
    ("roughly 1.2k", "s", 1200),
    ("circa 10 GB", "GB", 10),
    ("ca. 5 min", "s", 300),
    ("75ish minutes", "s", 75 * 60),
    ("320ish", "s", 320),
    ("= 320 s", "s", 320),
    ("  320 s.  ", "s", 320),
    # times
    ("320 s", "s", 320),
    ("320s", "s", 320),
    ("5.3 min", "s", 5.3 * 60),
    ("5.3 minutes", "s", 5.3 * 60),
    ("75 mins", "s", 75 * 60),
    ("1.5 h", "s", 1.5 * 3600),
    ("1.5 hr", "s", 1.5 * 3600),
    ("1.5 hours", "s", 1.5 * 3600),
    ("18 hours", "h", 18),
    ("2 days", "s", 2 * 86_400),
    ("250 ms", "s", 0.25),
    ("25 msec", "s", 0.025),
    ("2 weeks", "d", 14),
    ("−5 s", "s", -5),  # a typographic minus
    # data sizes: decimal and binary prefixes, bits versus bytes
    ("400 GB", "GB", 400),
    ("400GB", "GB", 400),
    ("0.4 TB", "GB", 400),
    ("9.8 GiB", "GB", 9.8 * 2**30 / GB),
    ("320 KiB", "B", 320 * 1024),
    ("327680 B", "KiB", 320),
    ("327,680 bytes", "B", 327_680),
    ("32 MB", "B", 32e6),
    ("3 gigabytes", "GB", 3),
    ("10 gb", "GB", 10),  # all lower case: bytes typed lazily
    ("10 mb", "GB", 10e6 / GB),
    ("10 tb", "GB", 10_000),
    ("10 kb", "B", 10_000),
    ("10 KB", "B", 10_000),  # KB is 1000 B, like kB
    ("10 kB", "B", 10_000),
    ("10 Gb", "GB", 10 * Gb / GB),  # gigabit, not pint's gilbert
    ("10 Mb", "B", 10e6 / 8),
    ("1 Tb", "GB", 1e12 / 8 / GB),
    ("8 Kb", "B", 8e3 / 8),
    ("3 EB", "PB", 3000),
    ("8 b", "B", 1),  # a bit, not pint's barn
    ("16 bits", "B", 2),
    # data rates
    ("1.25 GB/s", "GB/s", 1.25),
    ("1.25 GB/s", "Gb/s", 10),
    ("1.25 GBps", "GB/s", 1.25),
    ("10 Gb/s", "GB/s", 1.25),
    ("10 Gbps", "GB/s", 1.25),  # gigabits per second, not pint's gigabaud
    ("10 Gbit/s", "GB/s", 1.25),
    ("10 gbps", "GB/s", 1.25),  # lower-case with ps: bits, as in networking
    ("100 MB/s", "GB/s", 0.1),
    ("400 Gb/s per GPU", "GB/s", 50),
    # per-second counts
    ("250 req/s", "1/s", 250),
    ("250 rps", "1/s", 250),
    ("250 qps", "1/s", 250),
    ("250/s", "1/s", 250),
    ("250 per second", "1/s", 250),
    ("250 requests per second", "1/s", 250),
    ("250 requests/s", "1/s", 250),
    ("1.7M tokens/s", "1/s", 1.7e6),
    ("1.7M tok/s", "1/s", 1.7e6),
    ("1000 tokens/s/GPU", "1/s", 1000),
    ("600 rpm", "1/s", 10),
    # power, energy, compute
    ("14 MW", "W", 14e6),
    ("14 MW", "MW", 14),
    ("700 W", "W", 700),
    ("700 w", "W", 700),
    ("1.2 kW", "W", 1200),
    ("1.2k W", "W", 1200),
    ("1.2kW", "W", 1200),
    ("14 mw", "MW", 14),  # no milliwatts in a design round
    ("1.2 MWh", "kWh", 1200),
    ("989 TFLOP/s", "FLOP/s", 989e12),
    ("989 TFLOPS", "TFLOP/s", 989),
    ("2 PFLOPS", "FLOP/s", 2e15),  # FLOPS with a capital S: per second
    ("2 pflops", "TFLOP/s", 2000),
    ("1.92e11 FLOPs", "FLOP", 1.92e11),  # FLOPs with a small s: a plural
    ("1.92e11 flops", "FLOP", 1.92e11),  # an amount expected: read as the plural
    # money
    ("$1.2M", "USD", 1.2e6),
    ("$1.2m", "USD", 1.2e6),
    ("1.2M USD", "USD", 1.2e6),
    ("$500", "USD", 500),
    ("-$5", "USD", -5),
    ("500 dollars", "USD", 500),
    ("$3B", "USD", 3e9),
    ("$2/GPU-hour", "USD/h", 2),
    # percentages and counts
    ("60%", "1", 0.6),
    ("60 %", "1", 0.6),
    ("60 percent", "1", 0.6),
    ("60 per cent", "1", 0.6),
    ("8 GPUs", "1", 8),
    ("1 GPU", "1", 1),
    ("12 nodes", "1", 12),
    ("3 replicas", "1", 3),
    ("4 levels", "1", 4),
    ("64 shards", "1", 64),
    ("31x", "1", 31),
    ("31 ×", "1", 31),
    ("80 GB/GPU", "GB", 80),
    # full-width and compatibility characters (NFKC)
    ("３２０ ｓ", "s", 320),
    ("5 ㎇", "GB", 5),
]


@pytest.mark.parametrize(("typed", "unit", "expected"), FORMS, ids=[f"{t!r}->{u}" for t, u, _ in FORMS])
def test_real_forms_parse_to_the_hand_computed_value(typed, unit, expected):
    parsed = parse_answer(typed, unit)
    assert parsed.ok, parsed.message
    assert parsed.unit == unit
    assert parsed.value == pytest.approx(expected, rel=1e-12, abs=1e-300)
    assert parsed.message.startswith("Read as")


def test_the_table_is_large_enough():
    assert len(FORMS) >= 60


@pytest.mark.parametrize(
    ("typed", "unit", "typed_unit"),
    [("320", "s", ""), ("1.2k", "s", ""), ("5.3 min", "s", "min"), ("10 Gbps", "GB/s", "Gb/s"),
     ("60%", "1", "%"), ("8 GPUs", "1", ""), ("0.4 TB", "GB", "TB"), ("2 PFLOPS", "FLOP/s", "PFLOP/s")],
)
def test_typed_unit_says_how_the_unit_was_understood(typed, unit, typed_unit):
    assert parse_answer(typed, unit).typed_unit == typed_unit


@pytest.mark.parametrize(
    ("typed", "unit", "names"),
    [
        ("5 GB", "s", ("a time", "a data size")),
        ("320 s", "GB", ("a data size", "a time")),
        ("10 Gbps", "GB", ("a data size", "a data rate")),
        ("14 MW", "FLOP/s", ("a compute rate", "a power")),
        ("8 GPUs", "s", ("a time", "a plain number")),
        ("60%", "GB/s", ("a data rate", "a plain number")),
        ("$500", "W", ("a power", "an amount of money")),
        ("250 req/s", "1", ("a plain number", "a rate per second")),
        ("2 PFLOPS", "FLOP", ("an amount of compute", "a compute rate")),
        ("5 GB", "GB/s", ("a data rate", "a data size")),
    ],
)
def test_wrong_dimension_names_both_dimensions(typed, unit, names):
    parsed = parse_answer(typed, unit)
    assert not parsed.ok and parsed.value is None
    for name in names:
        assert name in parsed.message
    assert repr(typed)[1:-1] in parsed.message


def test_wrong_dimension_message_reads_like_a_sentence():
    assert parse_answer("5 GB", "s").message == (
        "Expected a time (like '320 s' or '5.3 min'); '5 GB' is a data size."
    )


@pytest.mark.parametrize(
    ("typed", "unit", "fragment"),
    [
        ("", "s", "Type a number"),
        ("   ", "s", "Type a number"),
        ("abc", "s", "Could not read a number in 'abc'."),
        ("-", "1", "Could not read a number"),
        ("~", "1", "Could not read a number"),
        ("GB", "GB", "Could not read a number"),
        ("nan", "s", "not a finite number"),
        ("NaN", "1", "not a finite number"),
        ("inf", "s", "not a finite number"),
        ("-inf", "s", "not a finite number"),
        ("1e999", "s", "too large"),
        ("1e308 TB", "B", "too large"),
        ("5 m", "s", "'min'"),  # m is never minutes; in a time context it is ambiguous
        ("5m", "s", "'min'"),
        ("300-350 s", "s", "one number"),
        ("5 to 6 min", "s", "one number"),
        ("5 foo", "s", "'foo'"),
        ("$12k/month", "USD", "'month'"),
        ("1,280,5", "1", "commas"),
        ("1234,567", "1", "commas"),
        ("5 min 30 s", "s", "one number"),
        ("5 GB/", "GB", "unit"),
        ("9" * 201, "1", "too long"),
        ("5 GB", "parsecs", "not one the app knows"),
    ],
)
def test_unreadable_answers_say_why(typed, unit, fragment):
    parsed = parse_answer(typed, unit)
    assert not parsed.ok and parsed.value is None
    assert fragment in parsed.message


def test_non_string_input_is_refused_not_raised():
    for bad in (None, 320, 3.5, b"320", ["320"]):
        parsed = parse_answer(bad, "s")  # type: ignore[arg-type]
        assert not parsed.ok and parsed.message


def test_parsed_and_score_are_frozen():
    parsed = parse_answer("320 s", "s")
    with pytest.raises(AttributeError):
        parsed.value = 1  # type: ignore[misc]
    assert isinstance(parsed, Parsed)


def test_module_is_pure():
    tree = ast.parse(Path(answers.__file__).read_text())
    imported = {
        (node.module or "").split(".")[0] if isinstance(node, ast.ImportFrom) else alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in node.names
    }
    assert not imported & {"streamlit", "plotly", "duckdb"}


# ---------------------------------------------------------------------------------------------
# Scoring


def step(value, unit="s"):
    return Step("k", "label", value, unit)


@pytest.mark.parametrize(
    ("typed", "fraction"),
    [
        ("100", 1.0),
        ("105", 1.0),  # exactly at tol
        ("95", 1.0),
        ("105.01", 0.5),  # just over
        ("90", 0.5),
        ("115", 0.5),  # exactly at 3 x tol
        ("115.01", 0.0),  # just over 3 x tol
        ("62", 0.0),
        ("1000", 0.0),
    ],
)
def test_score_boundaries(typed, fraction):
    score = score_answer(typed, step(100.0), 0.05)
    assert score.fraction == fraction
    assert score.reference == 100.0 and score.reference_unit == "s"


def test_score_messages():
    assert score_answer("103", step(100.0), 0.05).message == "Correct (within 5%)."
    assert score_answer("110", step(100.0), 0.05).message == "Close: within 15%, half credit."
    assert score_answer("62", step(100.0), 0.05).message == "Off by 38% (too low)."
    assert score_answer("1200", step(100.0), 0.05).message == "Off by a factor of 12 (too high)."
    assert score_answer("-100", step(100.0), 0.05).message.endswith("the sign is wrong.")


def test_score_converts_units_and_reports_relative_error():
    score = score_answer("5.3 min", step(320.0), 0.05)
    assert score.fraction == 1.0
    assert score.parsed.value == pytest.approx(318)
    assert score.relative_error == pytest.approx(2 / 320)
    assert score_answer("10 Gbps", step(1.25, "GB/s"), 0.05).fraction == 1.0


def test_score_of_an_unreadable_answer_is_zero_with_the_parse_message():
    score = score_answer("5 GB", step(320.0), 0.05)
    assert score.fraction == 0.0 and score.relative_error is None
    assert score.message == score.parsed.message and "a data size" in score.message


def test_zero_reference_compares_the_absolute_value_with_tol():
    ref = step(0.0, "1")
    assert score_answer("0", ref, 0.05).fraction == 1.0
    assert score_answer("0.05", ref, 0.05).fraction == 1.0
    assert score_answer("-0.05", ref, 0.05).fraction == 1.0
    assert score_answer("0.1", ref, 0.05).fraction == 0.5
    assert score_answer("0.2", ref, 0.05).fraction == 0.0
    assert score_answer("0", ref, 0.05).relative_error is None


def test_negative_reference():
    ref = step(-10.0, "1")
    assert score_answer("-10.4", ref, 0.05).fraction == 1.0
    assert score_answer("-11", ref, 0.05).fraction == 0.5
    assert score_answer("10", ref, 0.05).fraction == 0.0


SHA = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"


@pytest.mark.parametrize(
    ("typed", "fraction"),
    [
        (SHA, 1.0),
        (f"  {SHA.upper()}  ", 1.0),
        (SHA[:8], 1.0),  # a prefix of 8 hex characters is enough
        (SHA[:12].upper(), 1.0),
        (SHA[:7], 0.0),  # too short to identify
        ("0" * 64, 0.0),
        (SHA[1:9], 0.0),  # not a prefix
        ("", 0.0),
    ],
)
def test_text_valued_steps(typed, fraction):
    score = score_answer(typed, step(SHA, "1"), 0.05)
    assert score.fraction == fraction
    assert score.message
    assert math.isnan(score.reference)


def test_text_prefix_needs_a_hex_reference():
    assert score_answer("chinchil", step("chinchilla", "1"), 0.05).fraction == 0.0
    assert score_answer(" Chinchilla ", step("chinchilla", "1"), 0.05).fraction == 1.0


def test_bad_tolerance_falls_back_to_the_default():
    assert score_answer("104", step(100.0), math.nan).fraction == 1.0
    assert score_answer("104", step(100.0), -1).fraction == 1.0
    assert score_answer("100", step(100.0), 0).fraction == 1.0


def test_non_finite_reference_scores_zero_without_raising():
    score = score_answer("1", step(math.nan), 0.05)
    assert score.fraction == 0.0 and score.message


# ---------------------------------------------------------------------------------------------
# Never raises (hypothesis)

UNITS = ["s", "1", "GB", "GB/s", "Gb/s", "1/s", "W", "FLOP", "FLOP/s", "USD", "min", "B"]
NUMBERISH = st.from_regex(
    r"\A[=~≈ ]{0,2}(about |approx\. )?[+\-−]?\$?[0-9]{0,4}([,. _][0-9]{1,4}){0,2}"
    r"([eE][+-]?[0-9]{1,4}|[x×]10\^-?[0-9]{1,3})?ish? ?(k|K|M|m|B|b|bn|T|thousand|%)? ?"
    r"(s|min|m|GB|gb|Gb|GiB|B|b|Gbps|GBps|Gb/s|GB/s|W|kW|FLOPS|FLOPs|TFLOP/s|req/s|/s|GPUs|x|"
    r"per second|USD|dollars|foo)?\.?\Z"
)


def check_parsed(parsed: Parsed, unit: str) -> None:
    assert isinstance(parsed, Parsed)
    assert parsed.message and parsed.message != answers._INTERNAL
    if parsed.ok:
        assert parsed.value is not None and math.isfinite(parsed.value)
        assert parsed.unit == unit
    else:
        assert parsed.value is None


def check_score(score: Score) -> None:
    assert isinstance(score, Score)
    assert score.fraction in (0.0, 0.5, 1.0)
    assert score.message and score.message != answers._INTERNAL


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=10_000), unit=st.sampled_from(UNITS))
def test_any_text_never_raises(text, unit):
    check_parsed(parse_answer(text, unit), unit)


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=40), unit=st.sampled_from(UNITS))
def test_short_text_never_raises(text, unit):
    # Short strings reach the number and unit front end instead of the length cap.
    check_parsed(parse_answer(text, unit), unit)


@settings(max_examples=300, deadline=None)
@given(text=NUMBERISH, unit=st.sampled_from(UNITS))
def test_number_like_text_never_raises(text, unit):
    check_parsed(parse_answer(text, unit), unit)


@settings(max_examples=300, deadline=None)
@given(x=st.floats(), suffix=st.sampled_from(["", " s", " GB", "k", " %", " min", "e5", " GB/s"]),
       unit=st.sampled_from(UNITS))
def test_any_float_repr_never_raises(x, suffix, unit):
    parsed = parse_answer(f"{x!r}{suffix}", unit)
    check_parsed(parsed, unit)
    if not math.isfinite(x):
        assert not parsed.ok


@settings(max_examples=300, deadline=None)
@given(
    text=st.one_of(st.text(max_size=60), NUMBERISH),
    value=st.one_of(st.floats(), st.text(max_size=70)),
    unit=st.sampled_from(UNITS),
    tol=st.one_of(st.floats(), st.just(0.05)),
)
def test_score_never_raises(text, value, unit, tol):
    check_score(score_answer(text, Step("k", "label", value, unit), tol))


@settings(max_examples=300, deadline=None)
@given(
    x=st.floats(min_value=-1e15, max_value=1e15, allow_nan=False, allow_infinity=False),
    unit=st.sampled_from(["s", "GB", "GB/s", "1", "W"]),
)
def test_round_trip(x, unit):
    parsed = parse_answer(f"{x!r} {unit}", unit)
    assert parsed.ok, parsed.message
    assert parsed.value == pytest.approx(x, rel=1e-12, abs=1e-300)
    assert parse_answer(repr(x), unit).value == pytest.approx(x, rel=1e-12, abs=1e-300)
