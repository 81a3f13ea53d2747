"""The review's pure parts: each drill's reason in words, the round's timeline, the reference
design's named parts, and the Markdown export. Expected values are worked by hand from the seed
scenario of batched-inference-api: 2,000 req/s, 50 inputs a call, 200 ms a call, calls half full."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from models.mock import PhaseScore
from models.mock_review import (
    NOT_ANSWERED, DrillRow, FindingLine, ProbeLine, ReviewExtras, asked_seconds, bold_leads,
    drill_reason, drill_rows, key_figures, numbers_end_s, prefixed_notes, review_markdown, time_per_phase_s,
    without_directives,
)
from models.registry import QUESTIONS

Q = QUESTIONS["batched-inference-api"]
D = Q.solve(Q.Params())
DRILLS = {d.key: d for d in Q.drills}
T0 = datetime(2026, 1, 5, 9, 0, tzinfo=timezone.utc)


def _reason(key: str, typed: str | None, stored: float | None = None) -> str:
    return drill_reason(typed, DRILLS[key], D[key], stored)


def test_a_miss_says_how_far_off_and_which_unit_was_meant():
    # the floor: 2,000 req/s over 50 / 0.2 s = 250 req/s a GPU is 8 GPUs; 8,000 is 1,000 times that
    assert _reason("gpus_floor", "8000", 0.0) == "Off by a factor of 1,000 (too high)."
    # calls half full: 25 inputs / 0.2 s = 125 req/s a GPU, 2,000 / 125 = 16 GPUs; 20 is 25% high
    assert D["gpus_at_fill"].value == 16
    assert _reason("gpus_at_fill", "20", 0.0) == "Off by 25% (too high)."
    # 50 inputs at 2,000 req/s arrive in 25 ms; "25 s" is the right number in the wrong unit
    reason = _reason("batch_fill_time_s", "25 s", 0.0)
    assert reason.startswith("Off by a factor of 1,000 (too high).") and "Did you mean 25 ms?" in reason


def test_unreadable_unanswered_and_right_each_read_in_words():
    assert "Could not read a number in 'lots'" in _reason("batch_fill_time_s", "lots", 0.0)
    assert _reason("gpus_floor", None) == NOT_ANSWERED == "Not answered."
    assert _reason("gpus_floor", "   ") == NOT_ANSWERED
    # 50 inputs / 0.2 s = 250 req/s, the drill's tolerance is 2%
    assert _reason("per_gpu_rps_full", "250", 1.0) == "Correct (within 2%)."


def test_a_recorded_score_the_reader_now_disagrees_with_is_said_not_hidden():
    reason = _reason("per_gpu_rps_full", "250", 0.0)
    assert reason.startswith("Correct (within 2%).") and "Recorded as 0 when answered" in reason
    assert "Recorded" not in _reason("per_gpu_rps_full", "250", 1.0)


def test_drill_rows_cover_every_drill_asked_answered_or_not():
    latest = {"gpus_floor": {"typed": "12", "score": 0.0}, "per_gpu_rps_full": {"typed": "250 req/s", "score": 1.0}}
    rows = drill_rows(Q.drills, D, latest, lambda d: f"Q {d.key}")
    assert [r.key for r in rows] == [d.key for d in Q.drills]
    by = {r.key: r for r in rows}
    assert by["gpus_floor"].typed == "12" and by["gpus_floor"].score == 0.0
    assert by["gpus_floor"].reason == "Off by 50% (too high)."  # |12 - 8| / 8
    assert by["gpus_floor"].worked == "ceil(2,000 req/s / 250 requests/s) = 8 GPUs"
    assert by["per_gpu_rps_full"].score == 1.0
    assert by["gpus_at_fill"].typed is None and by["gpus_at_fill"].reason == "Not answered."
    assert by["gpus_at_fill"].score == 0.0
    assert by["batch_fill_time_s"].reference == "25 ms"  # asked in ms: 50 / 2,000 req/s
    assert by["gpus_floor"].prompt == "Q gpus_floor"


def test_time_per_phase_and_the_end_of_the_numbers_phase():
    marks = [("numbers", T0), ("shape", T0 + timedelta(minutes=4)), ("arithmetic", T0 + timedelta(minutes=10))]
    end = T0 + timedelta(minutes=30)
    spent = time_per_phase_s(marks, end)
    assert spent == {"numbers": 240.0, "shape": 360.0, "arithmetic": 1200.0, "depth": 0.0, "failure_modes": 0.0}
    assert numbers_end_s(marks, T0, end) == 240.0
    # never moved on: the numbers phase lasted the whole round
    assert numbers_end_s([("numbers", T0)], T0, end) == 1800.0
    # a phase revisited adds up
    back = [("numbers", T0), ("shape", T0 + timedelta(minutes=1)), ("numbers", T0 + timedelta(minutes=3))]
    assert time_per_phase_s(back, T0 + timedelta(minutes=5))["numbers"] == 60.0 + 120.0


def test_asked_notes_are_read_by_their_prefix_and_timed_from_the_start():
    notes = {
        "asked:arrival_rps": {"text": "Peak or average?", "saved_at": T0 + timedelta(seconds=90)},
        "asked:call_time_ms": {"text": "", "saved_at": T0 + timedelta(minutes=7)},
        "asked:": {"text": "no key", "saved_at": T0},
        "numbers": {"text": "old notes", "saved_at": T0},
        "opened:batched-inference-api": {"text": "", "saved_at": T0},
    }
    assert set(prefixed_notes(notes, "asked:")) == {"arrival_rps", "call_time_ms"}
    assert asked_seconds(notes, "asked:", T0) == {"arrival_rps": 90.0, "call_time_ms": 420.0}
    assert list(prefixed_notes(notes, "opened:")) == ["batched-inference-api"]


def test_bold_leads_are_items_and_paragraph_openers_not_emphasis():
    text = (
        "Five boxes:\n\n::diagram request_path\n\n"
        "1. **Gateway:** authenticates.\n"
        "2. **Admission queue:** bounded, and **very** important.\n"
        "- **A GPU dies.** Requests are lost\n"
        "**wrapped line** inside the same paragraph is emphasis.\n\n"
        "**SSD wear.** A paragraph of its own.\n"
    )
    assert bold_leads(text) == ["Gateway", "Admission queue", "A GPU dies", "SSD wear"]
    assert "::diagram" not in without_directives(text) and "1. **Gateway:**" in without_directives(text)


def test_the_batched_page_shape_names_its_five_boxes():
    # the page's Shape section, read by hand: five numbered boxes; the general version's bold
    # terms (continuous batching, paged KV memory) are emphasis inside a paragraph
    assert bold_leads(Q.content.section("Shape").body) == [
        "Gateway", "Admission queue", "Dispatcher (the batcher)", "GPU workers", "Demultiplexer"]
    assert bold_leads(Q.content.section("Failure modes").body)[:2] == [
        "Sizing at the floor", "A short timeout at high traffic"]


def test_key_figures_are_the_metrics_then_the_drills_not_among_them():
    figures = key_figures(Q.content.metrics, Q.drills, D)
    keys = [k for k, _ in figures]
    metric_keys = [k for k, _ in Q.content.metrics]
    assert keys[: len(metric_keys)] == metric_keys
    assert dict(figures)["gpus_floor"] == "Floor (100% busy)"  # the metric's own short label
    # a drill not among the metrics, labelled as its step is
    assert dict(figures)["batch_fill_time_s"] == D["batch_fill_time_s"].label
    assert len(keys) == len(set(keys))
    assert key_figures((("nope", "x"),), (), D) == []  # a figure the scenario does not compute


def _export(extras: ReviewExtras | None = None) -> str:
    rows = [DrillRow("gpus_floor", "arithmetic", "What is the **fewest** GPUs?", "12", "8 GPUs", 0.0,
                     "Off by 50% (too high).", "ceil(2,000 req/s / 250 requests/s) = 8 GPUs"),
            DrillRow("gpus_at_fill", "arithmetic", "At the fill?", None, "16 GPUs", 0.0, NOT_ANSWERED, "x = 16")]
    return review_markdown("Batched API", [("Traffic", "2,000 req/s")], 1 / 9,
                           [PhaseScore("arithmetic", "Arithmetic", 0.0, 3)], rows, ["a = 1", "b = 2"], extras)


def test_export_has_every_drill_with_its_reason():
    md = _export()
    assert md.startswith("# Mock interview review: Batched API\n")
    assert "**Score: 11%**" in md
    assert "### What is the fewest GPUs?" in md  # emphasis out of a heading
    assert "- Your answer: 12\n- Reference: 8 GPUs\n- Score: 0\n- Why: Off by 50% (too high).\n" in md
    assert "- Your answer: (none)" in md and "- Why: Not answered." in md
    assert "(nothing written in the document)" in md


def test_export_keeps_the_page_order_and_fences_the_document():
    extras = ReviewExtras(
        mode="full",
        document="## Numbers\n8 GPUs\n```\nnot an escape\n```\n",
        phase_notes=(("Shape", "old shape notes"),),
        asked=(("Peak or average?", "**2,000 req/s** at peak", 95.0),),
        depth_choice="Many dispatchers or one",
        opened=("An LLM inference API",),
        findings=(FindingLine("Floor (100% busy)", "8 GPUs", "right", "8 GPUs"),
                  FindingLine("At the batch fill", "16 GPUs", "wrong", "20 GPUs", "1.25x | the reference"),
                  FindingLine("p99 latency", "408 ms", "missing")),
        never_asked=("What latency target?",),
        asked_late=("How long is a call?",),
        key_figures=(("Floor (100% busy)", "8 GPUs"),),
        shape_boxes=("Gateway", "Dispatcher"),
        shape="Five boxes.",
        failure_modes=("Sizing at the floor",),
        probes=(ProbeLine("failure_modes", "A GPU dies: what happens?", "Re-queue its requests."),),
    )
    md = _export(extras)
    heads = ["## Drills", "## Your document", "### Notes: Shape", "### Clarifying questions asked",
             "Depth area chosen: Many dispatchers or one", "Opened during the round: An LLM inference API",
             "## What the document states", "### Clarifying questions to ask next time",
             "## What the reference design has", "### Key figures", "### The shape",
             "### Failure modes the page names", "### Probes in words", "## Full derivation"]
    at = [md.index(h) for h in heads]
    assert at == sorted(at), "the export's sections are out of the page's order"
    # the document's own ``` cannot close the fence around it
    assert "````markdown\n## Numbers\n8 GPUs\n```\nnot an escape\n```\n````" in md
    assert "- 01:35 · Peak or average? → **2,000 req/s** at peak" in md
    assert "| Floor (100% busy) | 8 GPUs | 8 GPUs | right |" in md
    assert "| At the batch fill | 16 GPUs | 20 GPUs | wrong: 1.25x \\| the reference |" in md
    assert "| p99 latency | 408 ms | — | missing |" in md
    assert "- Never asked: What latency target?" in md and "- Asked after the numbers phase: How long is a call?" in md
    assert "Boxes: Gateway · Dispatcher" in md
    assert "#### A GPU dies: what happens?\n\nRe-queue its requests." in md
    assert md.endswith("1. `a = 1`\n2. `b = 2`\n")


@pytest.mark.parametrize("mode,word", [("numbers", "numbers only"), ("depth", "one depth area")])
def test_export_names_a_practice_mode(mode, word):
    assert f"**Score ({word}): 11%**" in _export(ReviewExtras(mode=mode))
