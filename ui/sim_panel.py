"""Shared pieces of a simulation panel: the seed control and a cached, spinner-wrapped run."""

from __future__ import annotations

from typing import Any, Callable

import streamlit as st


def seed_input(slug: str) -> int:
    return int(st.number_input("Random seed", min_value=0, max_value=2**31 - 1, value=0, step=1,
                               key=f"{slug}.sim_seed", help="Same seed, same run: change it to see another."))


@st.cache_data(max_entries=256, show_spinner=False)
def _cached(slug: str, _fn: Callable[[str, int], Any], params_json: str, seed: int) -> Any:
    # `_fn` is excluded from the cache key (leading underscore); slug + params + seed identify the run.
    return _fn(params_json, seed)


def cached_simulation(slug: str, fn: Callable[[str, int], Any], params: Any, seed: int, message: str) -> Any:
    """Run `fn(params_json, seed)` once per (question, params, seed), with a spinner while it runs."""
    with st.spinner(message, show_time=True):
        return _cached(slug, fn, params.model_dump_json(), seed)
