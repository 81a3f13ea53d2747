"""Sweeps solve with values only (models.core.values_only); every value must be the full solve's."""

import math

import pytest

from models.core import values_only
from models.mock import draw_scenario
from models.registry import written

QUESTIONS = written()


@pytest.mark.parametrize("q", QUESTIONS, ids=[q.slug for q in QUESTIONS])
def test_a_values_only_solve_has_the_full_solves_values(q):
    for p in (q.Params(), draw_scenario(q.Params, 1)):
        full = {s.key: s.value for s in q.solve(p)}
        with values_only():
            light = q.solve(p)
        assert type(light).__name__ == "_ValuesOnly"
        assert light.keys() == list(full)
        for key, value in full.items():
            got = light.value(key)
            assert got == value or (isinstance(value, float) and math.isnan(value) and math.isnan(got)), key
