"""Solve once per (question, params): a slider move reruns the page, not the arithmetic.

Params are frozen pydantic models, so they hash by value; an lru_cache is shared by every
session in the process, which is what we want for pure functions.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from models.core import Derivation
from models.registry import QUESTIONS


@lru_cache(maxsize=4096)
def solve(slug: str, params: Any) -> Derivation:
    return QUESTIONS[slug].solve(params)
