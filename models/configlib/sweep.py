"""Sweeps: one override layer per point of the cartesian product of the axes."""

from __future__ import annotations

import itertools
from typing import Mapping, Sequence

from models.configlib.merge import set_path


def expand_sweep(axes: Mapping[str, Sequence]) -> list[dict]:
    """One nested override per point of the cartesian product, in axis order (the last axis
    varies fastest). Axis names are dotted paths."""
    names = list(axes)
    runs = []
    for combo in itertools.product(*(axes[n] for n in names)):
        override: dict = {}
        for name, value in zip(names, combo):
            set_path(override, name, value)
        runs.append(override)
    return runs
