"""Sweep charts: one knob swept through `solve`, the current value marked.

Charts never compute a number of their own: every point is a `solve` of the current scenario
with one knob changed, so a chart cannot disagree with the prose.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any, Callable, Iterable, Sequence

import numpy as np
from pydantic import ValidationError
import plotly.graph_objects as go

from models.core import knobs_of, solve_values, values_only
from models.registry import QUESTIONS
from models.units import convert, format_number
from ui.figures import figure, hline, label_log_axes, title as title_dict, vline
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


# Every point is a solve, and a slider move re-solves every chart that does not sweep the moved
# knob: at 0.1-0.5 ms a solve, three charts of 80-120 points were 40-100 ms of each rerun (#18's
# 100 ms budget), and 60 points still left the LLM pages' sweeps at 40-60% of a rerun. Forty
# points are 18 px apart on a 720 px chart (the curves are smooth between them); a step line
# ("hv") is still drawn as steps, its edges placed to within one point's spacing, and the marked
# point is exact.
MAX_SWEEP_POINTS = 40


def sweep_values(params: Any, field: str, n: int = 60, lo: float | None = None, hi: float | None = None) -> list:
    n = min(n, MAX_SWEEP_POINTS)
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


def sweep(slug: str, params: Any, field: str, keys: Sequence[str], xs: Iterable,
          also: Callable[[Any, Any], dict] | None = None) -> dict[str, list[float]]:
    """Each key's value at each x, every point a solve of the scenario with `field` set to x.
    `also(x, params)` may move other knobs with it (a prompt that must stay under the swept context)."""
    current = getattr(params, field)
    xs = list(xs)
    moved = (lambda x: tuple(sorted(also(x, params).items()))) if also else (lambda x: ())  # noqa: E731
    grid = tuple((x, moved(x)) for x in xs if x != current)
    rest = params.model_copy(update={field: None})
    cached = _sweep_grid(slug, rest, field, tuple(keys), grid)
    if also and any(getattr(params, k) != v for k, v in moved(current)):  # its own point, moved: solved alone
        here_values = _sweep_grid(slug, rest, field, tuple(keys), ((current, moved(current)),))
        here = {k: here_values[k][current] for k in keys}
    else:
        solved = solve(slug, params)  # the page's own scenario: already solved and cached
        here = {k: float(solved.value(k)) if not isinstance(solved.value(k), str) else math.nan for k in keys}
    out: dict[str, list[float]] = {k: [] for k in keys}
    for x in xs:
        for k in keys:
            out[k].append(here[k] if x == current else cached[k][x])
    return out


@lru_cache(maxsize=512)
def _sweep_grid(slug: str, rest: Any, field: str, keys: tuple[str, ...], grid: tuple) -> dict[str, dict]:
    """The sweep's fixed grid, (x, other knobs moved with it) pairs, for one setting of every other
    knob. Moving the swept knob itself leaves it unchanged (only the marked point moves), so that
    slider move solves nothing here. Only floats are kept: whole derivations are solved, read and
    dropped (see ui/solve_cache.py)."""
    q = QUESTIONS[slug]
    solve_point = q.solve  # uncached on purpose
    base = rest.model_dump()
    out: dict[str, dict] = {k: {} for k in keys}
    with values_only():  # a sweep reads values only: the points skip labels, formulas and units
        _fill(q, solve_point, base, field, keys, grid, out)
    return out


def _fill(q, solve_point, base: dict, field: str, keys: tuple[str, ...], grid: tuple, out: dict) -> None:
    for x, moved in grid:
        # Validated, not copied: a point the model refuses (weights that no longer fit, a batch of
        # none) is a gap in the line, not a ZeroDivisionError from a scenario no page could enter.
        try:
            point = q.Params.model_validate({**base, field: x, **dict(moved)})
        except ValidationError:
            for k in keys:
                out[k][x] = math.nan
            continue
        d = solve_values(solve_point, point, keys)
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
    lo: float | str | None = None,
    hi: float | str | None = None,
    line_shape: str = "linear",
    x_step: str | None = None,
    dashed: Sequence[str] = (),
    linear: Sequence[str] = (),
    colors: dict[str, str] | None = None,
    hlines: Sequence[float | str] = (),
    height: int | None = None,
    family: tuple[str, Sequence[Any]] | None = None,
    fixed: dict[str, Any] | None = None,
    xs: Sequence[Any] | None = None,
    gaps: bool = False,
    mode: str = "lines",
    points: dict[str, tuple[str, str]] | None = None,
    shapes: Sequence[dict] = (),
    annotations: Sequence[dict] = (),
    traces: Sequence[dict] = (),
    layout: dict[str, Any] | None = None,
    markers: int = 0,
    also: Callable[[Any, Any], dict] | None = None,
    right: dict[str, str] | None = None,
    right_title: str = "",
    vlines: Sequence[tuple[str, str]] = (),
    stacked: bool = False,
) -> go.Figure:
    """`lines` maps step key -> legend name; every point is a solve of the page's scenario with
    `field` moved (see `sweep`), the current value marked. `x_scale` turns a fraction knob into percent.

    The texts (title, axis titles, legend names) may hold `{{placeholders}}`, read at the page's
    scenario. Options, each replacing code a page wrote by hand:
      x_step   plot each point at a step's value instead of the knob's (prompt tokens while the
               passages pasted in are swept);
      dashed, linear, colors   style lines by key (a capacity as a dashed INK line; a smooth curve
               drawn linear among step lines);
      hlines   reference levels, each a number or a step or knob name (1 for 1x, "ttft_slo_ms"), or
               (name, label) for a level named on the chart at its left end;
      family   (knob, values): one line per value of another knob, the scenario's own drawn bold;
               a line's name may say "{value}" ("LoRA on {value}");
      fixed    knob values every point holds (a batch left to the engine while the prompt grows);
      xs       the swept values themselves, instead of `n` points from `lo` to `hi`; `lo` and `hi`
               may name a step, read in the knob's unit (a sweep that ends where prefill gets nothing);
      gaps     a value that is not finite or not positive is a gap, not a point;
      points   label -> (x knob or step, y step): a marked point of this scenario off the lines
               (a heavier comparison adapter), drawn as a diamond;
      shapes, annotations, traces   more marks as dicts (a "one week" line, a legend row);
      layout   layout properties, an axis's merged into it ({"yaxis": {"range": [-100, 100]}});
      markers  a dot of this size at every swept point, on the lines;
      also     `also(x, params)` -> other knobs moved with each point (a prompt kept under the context);
      right, right_title   step key -> legend name drawn against a second y axis on the right
               (a capacity beside a latency), in the step's own unit;
      vlines   (step, label): a dashed vertical line at a step's value, where it is finite and on the chart;
      stacked  the lines stacked as filled areas (shares that add up to the whole).
    Each is set here, not on the returned figure, which would have to be built as plotly objects
    first (~1-5 ms a chart, ui/figures.py)."""
    from ui.diagram import fill  # ui.diagram draws with this module's palette: import it late

    knob = knobs_of(type(params))[field]
    base = params.model_copy(update=fixed) if fixed else params
    current = getattr(params, field)
    cur_solve = solve(slug, params)
    lo, hi = (_bound(b, cur_solve, knob) for b in (lo, hi))
    grid = sorted({*xs, current}) if xs is not None else sweep_values(base, field, n, lo, hi)
    text = lambda t: fill(t, cur_solve, params) if "{{" in t else t  # noqa: E731
    keys = list(lines) + list(right or {}) + ([x_step] if x_step and x_step not in lines else [])
    members = [(None, base)] if family is None else [
        (v, base.model_copy(update={family[0]: v})) for v in _family_values(family, params)]
    x_now = float(cur_solve.value(x_step)) if x_step else current * x_scale
    drawn: list[dict] = []
    for j, (member, p_member) in enumerate(members):
        ys = sweep(slug, p_member, field, keys, grid, also)
        x_points = ys[x_step] if x_step else [x * x_scale for x in grid]
        own = family is None or member == getattr(params, family[0])
        for i, (key, name) in enumerate([*lines.items(), *(right or {}).items()]):
            on_right = key in (right or {}) and key not in lines
            y = ys[key]
            y_cur = float(cur_solve.value(key))
            if cur_solve[key].percent:  # a share is a fraction; its axis reads in percent
                y, y_cur = [100 * v for v in y], 100 * y_cur
            if y_unit and from_unit and not on_right:
                y = [convert(v, from_unit, y_unit) for v in y]
                y_cur = convert(y_cur, from_unit, y_unit)
            if gaps:
                y = [v if math.isfinite(v) and v > 0 else None for v in y]
            k = i if family is None else j
            color = (colors or {}).get(key, PALETTE[k % len(PALETTE)])
            name = text(name)
            if family is not None:
                name = name.replace("{value}", _member_text(family[0], member, params)) + (" (now)" if own else "")
            style = {"dash": "dash"} if key in dashed else {"dash": "dot"} if not own else {}
            drawn.append(dict(
                type="scatter", x=x_points, y=y, name=name, mode="lines+markers" if markers else mode,
                **({"marker": {"size": markers}} if markers else {}),
                line=dict(color=color, width=2.5 if family is None else 3.5 if own else 2,
                          shape="linear" if key in linear else line_shape, **style),
                **({"connectgaps": False} if gaps else {}), **({"yaxis": "y2"} if on_right else {}),
                **({"stackgroup": "stack"} if stacked else {}),
            ))
            if stacked:
                drawn[-1]["line"]["width"] = 1
                continue  # a stacked area's marked point would sit at its own height, not the stack's
            if own and math.isfinite(y_cur):
                drawn.append(dict(
                    type="scatter", x=[x_now], y=[y_cur], mode="markers", showlegend=False,
                    **({"yaxis": "y2"} if on_right else {}),
                    marker=dict(color=color, size=11, line=dict(color="white", width=2)),
                    hovertemplate=f"{name} now: %{{y:,.4g}}<extra></extra>",
                ))
    unit = "%" if knob.percent else knob.unit
    spec = layout_dict(
        text(title), text(x_title) if x_title else (f"{knob.label} ({unit})" if unit else knob.label), text(y_title),
        log_x=knob.log if log_x is None else log_x, log_y=log_y,
    )
    spec["shapes"] = [vline(x_now, color="#64748b", dash="dot", width=1)]  # the current value
    notes = []
    for i, level in enumerate(hlines):
        level, label = level if isinstance(level, tuple) else (level, "")
        y_level = level if isinstance(level, (int, float)) else _level(level, cur_solve, params)
        if y_unit and from_unit and isinstance(level, str) and level in cur_solve:
            y_level = convert(float(cur_solve.value(level)), cur_solve[level].unit, y_unit)
        color = "#64748b" if not label else (INK, "#d97706", *PALETTE)[i % (2 + len(PALETTE))]
        spec["shapes"].append(hline(y_level, color=color, dash="dash", width=1))
        if label:  # on a log axis an annotation's y is in log10 units (shapes take data units)
            notes.append(dict(x=0, xref="paper", xanchor="left", y=math.log10(y_level) if log_y else y_level,
                              text=text(label), showarrow=False, yanchor="bottom", font=dict(size=11, color=color)))
    x_lo, x_hi = grid[0] * x_scale, grid[-1] * x_scale
    off_chart = []
    for key, label in vlines:
        if isinstance(cur_solve.value(key), str):  # "none (reload wins at every length)": said, not drawn
            off_chart.append(f"{text(label)}: {cur_solve.value(key)}")
            continue
        x = float(cur_solve.value(key)) * x_scale
        if math.isfinite(x) and x_lo <= x <= x_hi:
            spec["shapes"].append(vline(x, color=PALETTE[2], dash="dash", width=1))
            log_axis = knob.log if log_x is None else log_x
            notes.append(dict(x=math.log10(x) if log_axis else x, y=0.5, yref="paper", text=text(label),
                              showarrow=False, xanchor="left", xshift=4, font=dict(size=11, color=PALETTE[2])))
    if off_chart:  # bottom right, under lines that rise from the bottom left
        notes.append(dict(x=1, y=0, xref="paper", yref="paper", text=" · ".join(off_chart), showarrow=False,
                          xanchor="right", yanchor="bottom", font=dict(size=11)))
    if right:
        spec["xaxis"].update(anchor="y", domain=[0.0, 0.94])
        spec["yaxis"].update(anchor="x", domain=[0.0, 1.0], rangemode="tozero")
        spec["yaxis2"] = dict(anchor="x", overlaying="y", side="right", title=dict(text=text(right_title)),
                              showgrid=False, rangemode="tozero")
    spec["shapes"] += list(shapes)
    notes += list(annotations)
    if notes:
        spec["annotations"] = notes
    for i, (label, (x_name, y_key)) in enumerate((points or {}).items()):
        x = float(cur_solve.value(x_name)) if x_name in cur_solve else float(getattr(params, x_name)) * x_scale
        y = float(cur_solve.value(y_key))
        y = convert(y, from_unit, y_unit) if y_unit and from_unit else 100 * y if cur_solve[y_key].percent else y
        drawn.append(dict(type="scatter", x=[x], y=[y], mode="markers", showlegend=False,
                           marker=dict(color=PALETTE[(len(lines) + i + 2) % len(PALETTE)], size=11, symbol="diamond",
                                       line=dict(color="white", width=2)),
                           hovertemplate=f"{text(label)}: %{{y:,.4g}}<extra></extra>"))
    if height:
        spec["height"] = height
    drawn += list(traces)
    for name, value in (layout or {}).items():
        if isinstance(value, dict) and isinstance(spec.get(name), dict):
            spec[name].update(value)
        else:
            spec[name] = value
    return figure(drawn, spec)


def _family_values(family: tuple[str, Sequence[Any]], params: Any) -> list:
    """The members in order with the scenario's own among them: numbers ascending, words as declared."""
    name, values = family
    own = getattr(params, name)
    if all(isinstance(v, (int, float)) for v in (*values, own)):
        return sorted({*values, own})
    return list(values) + ([own] if own not in values else [])


def _member_text(name: str, value: Any, params: Any) -> str:
    """A family member as its legend says it: "60%" for a share, the word for a choice."""
    knob = knobs_of(type(params))[name]
    if isinstance(value, str):
        return value
    return f"{format_number(100 * value)}%" if knob.percent else format_number(value)


def _bound(bound: float | str | None, derivation: Any, knob: Any) -> float | None:
    """A sweep's end: a number, or a step's value in the swept knob's unit."""
    if not isinstance(bound, str):
        return bound
    step = derivation[bound]
    return convert(float(step.value), step.unit, knob.unit) if knob.unit else float(step.value)


def _level(name: str, derivation: Any, params: Any) -> float:
    if name in derivation:
        step = derivation[name]
        return 100 * float(step.value) if step.percent else float(step.value)
    knob = knobs_of(type(params))[name]
    return 100 * float(getattr(params, name)) if knob.percent else float(getattr(params, name))


def stack_figure(slug: str, params: Any, parts: dict[str, str], *, title: str, x_title: str, bar: str = "",
                 target: str | None = None, target_name: str = "", height: int = 320) -> go.Figure:
    """One horizontal bar cut into `parts` (step key -> legend name), each segment labelled with its
    step's display: a latency budget, a cost split. `target` (a step or knob name) draws a dashed
    line with `target_name` in the legend. Texts may hold `{{placeholders}}`."""
    from ui.diagram import fill

    d = solve(slug, params)
    text = lambda t: fill(t, d, params) if "{{" in t else t  # noqa: E731
    traces = [dict(type="bar", y=[text(bar) or " "], x=[float(d.value(key))], name=text(name), orientation="h",
                   marker=dict(color=PALETTE[i % len(PALETTE)]),
                   text=[d[key].display(hint=False)], textposition="inside", insidetextanchor="middle",
                   hovertemplate=f"{text(name)}: {d[key].display(hint=False)}<extra></extra>")
              for i, (key, name) in enumerate(parts.items())]
    layout = layout_dict(text(title), text(x_title), "")
    layout.update(barmode="stack", height=height, hovermode="closest")
    layout["legend"]["traceorder"] = "normal"
    if target:
        line = dict(color=INK, dash="dash", width=1.5)
        traces.append(legend_line(text(target_name), **line))  # in the legend: a label on the plot crowds it
        layout["shapes"] = [vline(_level(target, d, params), **line)]
    return figure(traces, layout)
