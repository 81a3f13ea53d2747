"""Solve once per (question, params): a slider move reruns the page, not the arithmetic.

Params are frozen pydantic models, so they hash by value; an lru_cache is shared by every
session in the process, which is what we want for pure functions.

Only the scenarios people look at go through it (the page's, the seed's, a mock draw's): sweep
points are solved directly (ui/charts.py). A sweep shifts with every knob move, so its points were
rarely hit again, and 4,096 cached derivations of ~45 objects each made every full garbage
collection walk ~200,000 more objects (110-140 ms, one rerun in five).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from models.core import Derivation
from models.registry import QUESTIONS


@lru_cache(maxsize=256)
def solve(slug: str, params: Any) -> Derivation:
    return QUESTIONS[slug].solve(params)
