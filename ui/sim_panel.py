"""Shared pieces of a simulation panel: the seed control and a cached, spinner-wrapped run."""

from __future__ import annotations

from typing import Any, Callable

import streamlit as st


def seed_input(slug: str) -> int:
    return int(st.number_input("Random seed", min_value=0, max_value=2**31 - 1, value=0, step=1,
                               key=f"{slug}.sim_seed", help="Same seed, same run: change it to see another."))


@st.cache_data(max_entries=256, show_spinner=False)
def _cached(slug: str, fn_name: str, _fn: Callable[[str, int], Any], params_json: str, seed: int) -> Any:
    # Streamlit cannot hash a function reliably (a page's functions are new objects on every rerun), so
    # `_fn` stays out of the key and its name stands in for it: two simulations on one page with the
    # same params and seed must not share a run.
    return _fn(params_json, seed)


def cached_simulation(slug: str, fn: Callable[[str, int], Any], params: Any, seed: int, message: str) -> Any:
    """Run `fn(params_json, seed)` once per (question, simulation, params, seed), with a spinner while it
    runs. A simulation is known by its module and qualified name, so give each one on a page its own
    function (two lambdas, or two closures from one factory, would share a name)."""
    with st.spinner(message, show_time=True):
        return _cached(slug, f"{fn.__module__}.{fn.__qualname__}", fn, params.model_dump_json(), seed)
