"""Every knob a page shows moves at least one of its figures.

A knob that moves nothing is a defect a learner meets at once: they drag it and the page stays as
it was (an engine knob a page composed but never reads, a utilization target on a page that sizes
no fleet). A page leaves such knobs out (`models.engine.knobs.without`); a knob read only by the
page's live simulation says so (`Knob(simulation=True)`) and is exempt. Some knobs matter only in
part of the space (an all-reduce latency at one GPU a replica), so a knob passes if it moves a step
at the defaults or at any of a few drawn scenarios.
"""

from __future__ import annotations

import typing

import pytest
from pydantic import ValidationError

from models.core import knobs_of
from models.mock import draw_scenario
from models.registry import written

QUESTIONS = written()
DRAWS = 4


def _candidates(q, p, name, knob) -> list:
    value = getattr(p, name)
    annotation = q.Params.model_fields[name].annotation
    if typing.get_origin(annotation) is typing.Literal:
        return [v for v in typing.get_args(annotation) if v != value]
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, (int, float)) and knob.min is not None and knob.max is not None:
        step = knob.step or (1 if isinstance(value, int) else (knob.max - knob.min) / 100)
        out = [value + step, value - step, value * 1.25, value * 0.8, knob.min, knob.max]
        if isinstance(value, int):
            out = [int(round(v)) for v in out]
        return [v for v in out if knob.min <= v <= knob.max and v != value]
    return []


def _moves(q, p, name, knob) -> bool:
    base = {s.key: s.value for s in q.solve(p)}
    for value in _candidates(q, p, name, knob):
        try:
            other = q.Params(**{**p.__dict__, name: value})
        except (ValidationError, ValueError):
            continue
        if any(s.key not in base or s.value != base[s.key] for s in q.solve(other)):
            return True
    return False


@pytest.mark.parametrize("q", QUESTIONS, ids=[q.slug for q in QUESTIONS])
def test_every_knob_moves_a_figure(q):
    scenarios = [q.Params()] + [draw_scenario(q.Params, seed) for seed in range(DRAWS)]
    inert = [
        name for name, knob in knobs_of(q.Params).items()
        if not knob.only_if and not knob.simulation and not any(_moves(q, p, name, knob) for p in scenarios)
    ]
    assert not inert, f"{q.slug}: these knobs move no step; leave them out or mark them simulation=True: {inert}"


def test_a_simulation_knob_really_moves_no_step():
    """The exemption is not a hiding place: a knob marked simulation=True that moves a step is
    mislabelled (the mock would leave a given out of the round that changes its answers)."""
    for q in QUESTIONS:
        p = q.Params()
        wrong = [name for name, knob in knobs_of(q.Params).items() if knob.simulation and _moves(q, p, name, knob)]
        assert not wrong, f"{q.slug}: marked simulation=True but moves steps: {wrong}"
