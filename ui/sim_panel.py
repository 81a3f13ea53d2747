"""Shared pieces of a simulation panel: the seed control and a cached, spinner-wrapped run."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any, Callable

import streamlit as st

from models.registry import QUESTIONS


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


def _question_simulation(params_json: str, seed: int, *, slug: str) -> Any:
    q = QUESTIONS[slug]
    return q.module.simulate(q.Params.model_validate_json(params_json), seed=seed)


def run_simulation(slug: str, params: Any, seed: int, message: str) -> Any:
    """The question's own `simulate(params, seed)`, cached and behind a spinner like any other: what
    nine pages each wrote as a `_run(params_json, seed)` of two lines."""
    with st.spinner(message, show_time=True):
        return _cached(slug, f"{slug}.simulate", partial(_question_simulation, slug=slug), params.model_dump_json(), seed)


@dataclass(frozen=True)
class Card:
    """A metric card of a live panel: the simulated step `key`, the closed form it is held to
    (`against`, a step of the run or of the page's solve) and more figures in the same line
    (`also`: (step key, word) pairs, "58.8% busy"); `label` overrides the step's own."""

    key: str
    against: str = ""
    also: tuple[tuple[str, str], ...] = ()
    label: str = ""


class Steps:
    """Several derivations read as one (the run's steps first, then the page's solve): what the
    panel's cards and caption resolve their `{{placeholders}}` against."""

    def __init__(self, *derivations: Any) -> None:
        self._all = derivations

    def __contains__(self, key: object) -> bool:
        return any(key in d for d in self._all)

    def __getitem__(self, key: str):
        for d in self._all:
            if key in d:
                return d[key]
        raise KeyError(key)


def simulation_panel(ctx: Any, name: str, *, title: str, message: str, cards: tuple[Card, ...] = (),
                     chart: Callable[[Any, Any, Any], Any] | tuple[Callable[[Any, Any, Any], Any], ...] = (),
                     caption: str = "") -> None:
    """A live simulation, declared: the seed box, the question's own `simulate` (cached), its
    `simulation_steps(params, result)` as metric cards beside their closed forms, charts the page
    draws from the result, and a caption whose figures are placeholders over those steps."""
    from ui.prose import render as render_prose

    q = QUESTIONS[ctx.slug]
    st.markdown(f"##### {title}")
    seed = seed_input(ctx.slug)
    result = run_simulation(ctx.slug, ctx.params, seed, message)
    steps = Steps(q.module.simulation_steps(ctx.params, result), ctx.derivation)
    if cards:
        cols = st.columns(len(cards))
        for col, card in zip(cols, cards):
            step = steps[card.key]
            parts = [f"closed form {steps[card.against].display(hint=False)}"] if card.against else []
            parts += [f"{steps[key].display(hint=False)} {word}".rstrip() for key, word in card.also]
            delta = " · ".join(parts)
            col.metric(card.label or step.label, step.display(hint=False).replace("$", "\\$"),
                       delta=delta.replace("$", "\\$") or None, delta_color="off", delta_arrow="off", border=True,
                       help=(step.note or step.label).replace("$", "\\$"))
    for i, draw in enumerate(chart if isinstance(chart, tuple) else (chart,)):
        st.plotly_chart(draw(ctx, result, steps), key=f"{ctx.slug}.sim.{name}.chart" + (f"{i}" if i else ""))
    if caption:
        st.caption(render_prose(caption, steps, ctx.params).replace("**", ""))
