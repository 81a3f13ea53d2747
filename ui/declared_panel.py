"""A live simulation panel declared, not written: the page names steps, the question's model turns
its run into them (`simulation_steps(params, result)`), and this module draws them.

    page.simulation("batching", title="Live: … ({{policy}} scheduler)", message="Simulating…",
        cards=(Card("sim_tokens_per_s", against="expected_tokens_per_s"), ...),
        table=Table(("Figure", "Simulated", "Closed form"), (("Tokens/s", "{{sim_tokens_per_s}}", "{{…}}"),)),
        replay=Replay(dt_s=0.25, steps_at=model.replay_steps, charts=(timeline,), caption="At {{replay_t_s}}: …"),
        charts=(distributions,), caption="{{sim_arrived}} requests over …",
        compare=Compare("policy", ("static", "continuous", "chunked"), "Compare the schedulers", columns=(...)))

Every figure the panel shows is a step of the run or of the page's solve, so it is tested, carries
its unit, and reads the same as everywhere else; no figure is formatted here by hand. Charts are
functions of (ctx, result, steps), a replay chart of (ctx, result, steps, t_s), returning a figure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import streamlit as st

from models.registry import QUESTIONS
from ui.replay import replay
from ui.sim_panel import run_simulation, seed_input

CARDS_PER_ROW = 4  # four bordered cards fit a laptop's main column; more wrap onto another row


@dataclass(frozen=True)
class Card:
    """A metric card of a live panel: the simulated step `key`, the closed form it is held to
    (`against`, a step of the run or of the page's solve) and more figures in the same line
    (`also`: (step key, word) pairs, "58.8% busy"); `label` overrides the step's own."""

    key: str
    against: str = ""
    also: tuple[tuple[str, str], ...] = ()
    label: str = ""


@dataclass(frozen=True)
class Table:
    """A static table: a heading per column, and rows whose cells are prose with {{placeholders}}."""

    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Replay:
    """Play the run over time: every `dt_s` of simulated time, `steps_at(params, result, t_s)` gives
    the instant's figures (for `caption`), and each of `charts` is drawn with its time mark."""

    dt_s: float | Callable[[Any], float]  # simulated seconds a position, or result -> that (a tick)
    charts: tuple[Callable[..., Any], ...]
    steps_at: Callable[[Any, Any, float], Any] | None = None
    caption: str = ""
    label: str = "Time (s)"
    span: Callable[[Any], float] = lambda result: float(result.horizon_s)  # noqa: E731  (simulated seconds)
    start: Callable[[Any, Any], float] | None = None  # (params, result) -> where a fresh view opens, s


@dataclass(frozen=True)
class Counterpart:
    """Another run on the same seed with some knobs moved (`update(params)` -> values), which the
    model's `simulation_steps(params, result, other)` sets beside the scenario's own."""

    update: Callable[[Any], dict]
    message: str
    variant: Callable[[Any], str] = lambda params: "other"  # noqa: E731  (tells the two runs' results apart)


@dataclass(frozen=True)
class Compare:
    """Behind a toggle: the same requests run once per value of `knob`, a row each, a column per
    (heading, step key) of the run's steps."""

    knob: str
    values: tuple[Any, ...]
    label: str
    columns: tuple[tuple[str, str], ...]


class Steps:
    """Several derivations (or Steps) read as one, the first that holds a key winning: the run's
    steps, then the page's solve. What the panel's cards and captions resolve `{{placeholders}}` against."""

    def __init__(self, *derivations: Any) -> None:
        self._all = derivations

    def __contains__(self, key: object) -> bool:
        return any(key in d for d in self._all)

    def __getitem__(self, key: str):
        for d in self._all:
            if key in d:
                return d[key]
        raise KeyError(key)


def _text(template: str, steps: Steps, params: Any) -> str:
    from ui.prose import render as render_prose  # ui.prose imports the page machinery: late

    return render_prose(template, steps, params).replace("**", "")


def _plain(text: str) -> str:
    return text.replace("$", "\\$")  # a dollar figure is not the start of LaTeX


def _rows(cards: Sequence[Any]) -> list[Sequence[Card]]:
    """Rows as declared (a tuple of tuples of cards), or CARDS_PER_ROW to a row."""
    if cards and isinstance(cards[0], tuple):
        return list(cards)
    return [cards[i:i + CARDS_PER_ROW] for i in range(0, len(cards), CARDS_PER_ROW)]


def _cards(cards: Sequence[Any], steps: Steps) -> None:
    rows = _rows(cards)
    width = max(len(row) for row in rows)
    for row in rows:
        for col, card in zip(st.columns(width), row):
            step = steps[card.key]
            parts = [f"closed form {steps[card.against].display(hint=False)}"] if card.against else []
            parts += [f"{steps[key].display(hint=False)} {word}".rstrip() for key, word in card.also]
            col.metric(card.label or step.label, _plain(step.display(hint=False)),
                       delta=_plain(" · ".join(parts)) or None, delta_color="off", delta_arrow="off", border=True,
                       help=_plain(step.note or step.label))


def _table(table: Table, steps: Steps, params: Any) -> None:
    # A static table wraps its cells, so on a phone every column stays on screen (a dataframe keeps
    # each cell on one line and cut the last column off at 390 px).
    st.table({heading: [_text(row[i], steps, params) for row in table.rows]
              for i, heading in enumerate(table.columns)}, hide_index=True)


def _replay(ctx: Any, name: str, spec: Replay, result: Any, steps: Steps) -> None:
    dt_s = spec.dt_s(result) if callable(spec.dt_s) else spec.dt_s
    n_steps = int(spec.span(result) / dt_s + 1e-9) + 1  # a span of whole steps is not one short
    start = None if spec.start is None else int(round(spec.start(ctx.params, result) / dt_s))

    def draw(i: int) -> None:
        t_s = i * dt_s
        if spec.caption and spec.steps_at is not None:
            st.caption(_text(spec.caption, Steps(spec.steps_at(ctx.params, result, t_s), steps), ctx.params))
        for j, chart in enumerate(spec.charts):
            st.plotly_chart(chart(ctx, result, steps, t_s), key=f"{ctx.slug}.sim.{name}.replay{j}")

    replay(f"{ctx.slug}.replay_t", n_steps, dt_s, draw, label=spec.label, start=start)


def _compare(ctx: Any, name: str, spec: Compare, result: Any, seed: int) -> None:
    if not st.toggle(spec.label, key=f"{ctx.slug}.sim_compare"):
        return
    q = QUESTIONS[ctx.slug]
    table: dict[str, list] = {spec.knob.replace("_", " ").capitalize(): []}
    table.update({heading: [] for heading, _ in spec.columns})
    for value in spec.values:
        variant = ctx.params.model_copy(update={spec.knob: value})
        run = result if value == getattr(ctx.params, spec.knob) else run_simulation(
            ctx.slug, variant, seed, f"Simulating {value}…")
        steps = q.module.simulation_steps(variant, run)
        row = [str(value)] + [steps[key].display(hint=False) for _, key in spec.columns]
        for heading, cell in zip(table, row):
            table[heading].append(cell)
    first = next(iter(table))
    st.dataframe(table, hide_index=True, width="stretch", key=f"{ctx.slug}.sim.{name}.compare",
                 column_config={first: st.column_config.Column(pinned=True)})  # stays as a phone scrolls


def simulation_panel(ctx: Any, name: str, *, title: str, message: str, cards: tuple[Card, ...] = (),
                     table: Table | None = None, replay: Replay | None = None,
                     chart: Callable[[Any, Any, Any], Any] | tuple[Callable[[Any, Any, Any], Any], ...] = (),
                     caption: str = "", compare: Compare | None = None,
                     counterpart: Counterpart | None = None) -> None:
    """The seed box, the question's own `simulate` (run once per scenario, ui/sim_panel.py), its
    `simulation_steps(params, result)` as cards, a table, a replay, charts, a caption and a
    comparison, in that order; every text's figures are placeholders over those steps."""
    q = QUESTIONS[ctx.slug]
    st.markdown(f"##### {_text(title, ctx.derivation, ctx.params)}")
    seed = seed_input(ctx.slug)
    result = run_simulation(ctx.slug, ctx.params, seed, message)
    if counterpart is None:
        run_steps = q.module.simulation_steps(ctx.params, result)
    else:
        other = run_simulation(ctx.slug, ctx.params.model_copy(update=counterpart.update(ctx.params)), seed,
                               counterpart.message, variant=counterpart.variant(ctx.params))
        run_steps = q.module.simulation_steps(ctx.params, result, other)
    steps = Steps(run_steps, ctx.derivation)
    if cards:
        _cards(cards, steps)
    if table is not None:
        _table(table, steps, ctx.params)
    if replay is not None:
        _replay(ctx, name, replay, result, steps)
    for i, draw in enumerate(chart if isinstance(chart, tuple) else (chart,)):
        st.plotly_chart(draw(ctx, result, steps), key=f"{ctx.slug}.sim.{name}.chart" + (f"{i}" if i else ""))
    if caption:
        st.caption(_text(caption, steps, ctx.params))
    if compare is not None:
        _compare(ctx, name, compare, result, seed)
