"""How a value and its unit read on the page (models/units.py), written out by hand."""

from __future__ import annotations

import pytest

from models.units import format_quantity


@pytest.mark.parametrize("value, unit, noun, expected", [
    (2_949_120, "h", "GPU", "2,949,120 GPU-h"),  # 4,096 GPUs x 720 h: GPU time, not wall clock
    (192, "h", "GPU", "192 GPU-h"),
    (70.57, "h", "", "70.57 h"),  # wall-clock hours keep the bare unit
    (8, "1", "GPUs", "8 GPUs"),
    (0.25, "%", "", "0.25%"),
    (0.0198, "s", "", "19.8 ms"),
])
def test_values_read_as_written_by_hand(value, unit, noun, expected):
    assert format_quantity(value, unit, noun=noun) == expected


def test_every_gpu_hours_step_reads_in_gpu_hours():
    """A step named for GPU-hours is shown as GPU-h on every page, so no one reads it as wall clock."""
    from models.registry import QUESTIONS

    offenders = []
    for slug, q in QUESTIONS.items():
        for step in q.solve(q.Params()):
            if "gpu_hours" in step.key and step.unit == "h" and not step.display().endswith("GPU-h"):
                offenders.append(f"{slug}.{step.key}: {step.display()}")
    assert not offenders, offenders


def test_a_count_of_one_takes_the_singular():
    from models.units import format_quantity, singular

    assert format_quantity(1, "1", "GPUs") == "1 GPU" and format_quantity(2, "1", "GPUs") == "2 GPUs"
    assert [singular(n) for n in ("copies", "replicas", "stages", "sequences in flight", "ms", "class")] == \
        ["copy", "replica", "stage", "sequence in flight", "ms", "class"]
    # an -es plural after ch, sh, x or ss drops both letters; a cache keeps its e
    assert [singular(n) for n in ("microbatches", "flushes", "indexes", "passes", "caches", "searches")] == \
        ["microbatch", "flush", "index", "pass", "cache", "search"]
