"""A formula is the computation: every arithmetic step's formula, evaluated with units, is its value.

Each step's value is computed in Python and its formula is the text a learner reads; this holds the
two to each other on every question, at the defaults and at drawn scenarios (models/formula.py says
how a formula is read). Steps that are not arithmetic say what they are instead (`kind=`).
"""

from __future__ import annotations

import math

import pytest

from models.core import knobs_of
from models.formula import NON_ARITHMETIC, FormulaError, evaluate
from models.mock import draw_scenario
from models.registry import written

QUESTIONS = written()
DRAWS = 3
REL = 1e-6


def mismatches(q, p) -> list[str]:
    d = q.solve(p)
    units = {name: knob.unit for name, knob in knobs_of(q.Params).items()}
    units.update({s.key: s.unit for s in d})
    out = []
    for s in d:
        if not s.formula or not s.is_numeric or s.kind in NON_ARITHMETIC:
            continue
        try:
            got = evaluate(s.formula, s.bindings, units, s.unit)
        except (FormulaError, ZeroDivisionError, OverflowError, KeyError) as e:
            out.append(f"{s.key}: '{s.formula}' does not evaluate: {e}")
            continue
        want = float(s.value)
        if not math.isclose(got, want, rel_tol=REL, abs_tol=1e-12) and not (math.isinf(got) and got == want):
            out.append(f"{s.key}: '{s.formula}' gives {got:.6g} {s.unit}, the step is {want:.6g}")
    return out


@pytest.mark.parametrize("q", QUESTIONS, ids=[q.slug for q in QUESTIONS])
def test_every_formula_is_its_value(q):
    scenarios = [q.Params()] + [draw_scenario(q.Params, seed) for seed in range(DRAWS)]
    wrong = sorted({m for p in scenarios for m in mismatches(q, p)})
    assert not wrong, f"{q.slug}: {len(wrong)} formulas:\n" + "\n".join(wrong)
