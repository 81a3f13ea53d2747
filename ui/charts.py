"""Sweep charts: one knob swept through `solve`, the current value marked.

Charts never compute a number of their own: every point is a `solve` of the current scenario
with one knob changed, so a chart cannot disagree with the prose.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any, Iterable, Sequence

import numpy as np
from pydantic import ValidationError
import plotly.graph_objects as go

from models.core import knobs_of, values_only
from models.registry import QUESTIONS
from models.units import convert
from ui.figures import figure, label_log_axes, title as title_dict, vline
from ui.solve_cache import solve

# Line colours that keep at least 3.3:1 against white and against the dark theme's background.
PALETTE = ("#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2")
# For reference lines and marks a light page would draw near-black (near-black vanishes on the
# dark theme): 3.6:1 on white, 5.2:1 on the dark background.
INK = "#7c8798"
MUTED = "rgba(148, 163, 184, 0.4)"  # bars that are context (free, capacity, demand): pale on either theme
# Between the title and the plot, on rows of its own (see layout_dict).
LEGEND = dict(orientation="h", x=0, xanchor="left", y=1, yanchor="bottom")


def legend_line(name: str, **line) -> dict:
    """A legend row, and nothing on the plot, for a reference line drawn as a shape: where lines
    crowd (three break-evens a few pixels apart on a phone) a label beside each would sit on the
    others; in the legend it wraps with the rest."""
    return dict(type="scatter", x=[None], y=[None], mode="lines", name=name, line=line, hoverinfo="skip")


def sweep_values(params: Any, field: str, n: int = 60, lo: float | None = None, hi: float | None = None) -> list:
    knob = knobs_of(type(params))[field]
    lo = knob.min if lo is None else lo
    hi = knob.max if hi is None else hi
    current = getattr(params, field)
    if knob.log:
        xs = np.geomspace(lo, hi, n)
    else:
        xs = np.linspace(lo, hi, n)
    xs = np.append(xs, current)
    if isinstance(current, int) and not isinstance(current, bool):
        return sorted({int(round(x)) for x in xs})
    return sorted({float(x) for x in xs})


def sweep(slug: str, params: Any, field: str, keys: Sequence[str], xs: Iterable) -> dict[str, list[float]]:
    """Each key's value at each x, every point a solve of the scenario with `field` set to x."""
    current = getattr(params, field)
    xs = list(xs)
    grid = tuple(x for x in xs if x != current)
    cached = _sweep_grid(slug, params.model_copy(update={field: None}), field, tuple(keys), grid)
    here = solve(slug, params)  # the page's own scenario: already solved and cached
    out: dict[str, list[float]] = {k: [] for k in keys}
    for x in xs:
        for k in keys:
            out[k].append(float(here.value(k)) if x == current else cached[k][x])
    return out


@lru_cache(maxsize=512)
def _sweep_grid(slug: str, rest: Any, field: str, keys: tuple[str, ...], grid: tuple) -> dict[str, dict]:
    """The sweep's fixed grid for one setting of every other knob. Moving the swept knob itself
    leaves it unchanged (only the marked point moves), so that slider move solves nothing here.
    Only floats are kept: whole derivations are solved, read and dropped (see ui/solve_cache.py)."""
    q = QUESTIONS[slug]
    solve_point = q.solve  # uncached on purpose
    base = rest.model_dump()
    out: dict[str, dict] = {k: {} for k in keys}
    with values_only():  # a sweep reads values only: the points skip labels, formulas and units
        _fill(q, solve_point, base, field, keys, grid, out)
    return out


def _fill(q, solve_point, base: dict, field: str, keys: tuple[str, ...], grid: tuple, out: dict) -> None:
    for x in grid:
        # Validated, not copied: a point the model refuses (weights that no longer fit, a batch of
        # none) is a gap in the line, not a ZeroDivisionError from a scenario no page could enter.
        try:
            point = q.Params.model_validate({**base, field: x})
        except ValidationError:
            for k in keys:
                out[k][x] = math.nan
            continue
        d = solve_point(point)
        for k in keys:
            value = d.value(k)
            out[k][x] = float(value) if not isinstance(value, str) else math.nan


def layout_dict(title: str, x_title: str, y_title: str, *, log_x=False, log_y=False) -> dict:
    """The layout every chart shares, as a plain dict (see ui/figures.py for why).

    The legend sits on its own rows between the title and the plot, anchored to the plot's top:
    the title's automargin stacks the two, and a legend too wide for a phone wraps onto more
    rows instead of running into the title. Log axes get their tick format from the data drawn
    on them (ui/figures.label_log_axes), when the figure is built."""
    return dict(
        **({"title": title_dict(title)} if title else {}),
        xaxis=dict(title=dict(text=x_title), **({"type": "log"} if log_x else {})),
        yaxis=dict(title=dict(text=y_title), **({"type": "log"} if log_y else {})),
        margin=dict(l=10, r=10, t=10, b=10),
        height=360,
        legend=dict(LEGEND),
        hovermode="x unified",
    )


def base_layout(fig: go.Figure, title: str, x_title: str, y_title: str, *, log_x=False, log_y=False) -> go.Figure:
    """The shared layout applied to a figure a page built itself (its traces added first); one
    update, not three."""
    fig.update_layout(label_log_axes(layout_dict(title, x_title, y_title, log_x=log_x, log_y=log_y), fig.data))
    return fig


def sweep_figure(
    slug: str,
    params: Any,
    field: str,
    lines: dict[str, str],
    *,
    title: str,
    y_title: str,
    y_unit: str | None = None,
    from_unit: str | None = None,
    x_scale: float = 1.0,
    x_title: str | None = None,
    log_x: bool | None = None,
    log_y: bool = False,
    n: int = 60,
    lo: float | None = None,
    hi: float | None = None,
    line_shape: str = "linear",
) -> go.Figure:
    """`lines` maps step key -> legend name. `x_scale` turns a fraction knob into percent."""
    knob = knobs_of(type(params))[field]
    xs = sweep_values(params, field, n, lo, hi)
    ys = sweep(slug, params, field, list(lines), xs)
    current = getattr(params, field)
    cur_solve = solve(slug, params)
    traces: list[dict] = []
    for i, (key, name) in enumerate(lines.items()):
        y = ys[key]
        y_cur = float(cur_solve.value(key))
        if y_unit and from_unit:
            y = [convert(v, from_unit, y_unit) for v in y]
            y_cur = convert(y_cur, from_unit, y_unit)
        color = PALETTE[i % len(PALETTE)]
        traces.append(dict(
            type="scatter", x=[x * x_scale for x in xs], y=y, name=name, mode="lines",
            line=dict(color=color, width=2.5, shape=line_shape),
        ))
        traces.append(dict(
            type="scatter", x=[current * x_scale], y=[y_cur], mode="markers", showlegend=False,
            marker=dict(color=color, size=11, line=dict(color="white", width=2)),
            hovertemplate=f"{name} now: %{{y:,.4g}}<extra></extra>",
        ))
    unit = "%" if knob.percent else knob.unit
    layout = layout_dict(
        title, x_title or (f"{knob.label} ({unit})" if unit else knob.label), y_title,
        log_x=knob.log if log_x is None else log_x, log_y=log_y,
    )
    layout["shapes"] = [vline(current * x_scale, color="#64748b", dash="dot", width=1)]  # the current value
    return figure(traces, layout)
