"""Figures handed to plotly as plain dicts, without plotly's validation.

plotly validates every property it is given, element by element for data arrays: a sweep chart
of four 61-point lines cost ~5.5 ms to build validated and ~0.5 ms as dicts, and a page draws
several per slider move. Tests set WALKTHROUGHS_VALIDATE_FIGURES=1 (tests/conftest.py), so every
figure a test draws is validated and a misspelt property still fails there; tests/app/
test_figures.py checks that both ways give Streamlit the same JSON, page edits included.

Every figure must read on a 390 px phone as well as a wide screen, in the light and the dark
theme. The helpers below hold what that takes for titles and log axes; colours are left to
Streamlit's theme (st.plotly_chart's theme="streamlit" sets backgrounds and text colours unless
a figure overrides them).
"""

from __future__ import annotations

import copy
import math
import os
from functools import lru_cache
from numbers import Real
from typing import Any, Iterable

import plotly.graph_objects as go
from _plotly_utils.utils import convert_to_base64

# plotly wraps no title, and a title with a <br> is misplaced by title.automargin (it rises out
# of the figure), so a long title is split here into a title line and a subtitle line, each
# short enough for the 366 px a 390 px phone gives a chart (15 px bold and 12 px text, at the
# widest average of Streamlit's font, 0.48 em a letter).
TITLE_CHARS = 48
SUBTITLE_CHARS = 58
# Where a title may be cut, best first, never inside parentheses. The punctuation of ": " and the
# like is dropped, "?" stays with the title, a word or "(" starts the subtitle.
BREAKS = ("? ", ": ", "; ", " — ", ", ", " (", " against ", " with ", " by ", " as ")


def validating() -> bool:
    return os.environ.get("WALKTHROUGHS_VALIDATE_FIGURES") == "1"


def figure(data: list[dict], layout: dict, own_ticks: dict[str, dict] | None = None) -> go.Figure:
    """`own_ticks`: axes that keep the ticks they are given (added after the log axes are labelled)."""
    label_log_axes(layout, data)
    layout.update(own_ticks or {})
    if validating():
        return go.Figure({"data": data, "layout": layout})
    return PlainFigure(data, layout)


@lru_cache(maxsize=None)
def _default_template() -> dict:
    """The template plotly puts in every figure's layout (the one Streamlit registered, see
    tests/app/test_figures.py), as the JSON it sends."""
    return go.Figure().to_dict()["layout"]["template"]


class PlainFigure(go.Figure):
    """A figure kept as the dicts it was given until something asks for more than its JSON.

    Building even an unvalidated go.Figure turns every trace and the layout into plotly objects
    (~1 ms a chart, several charts a slider move), and most charts are only sent. This one is sent
    as its dicts, with the template plotly would add; the first use of anything else (a page's
    `fig.layout.shapes = ...`, `add_hline`) builds the real figure in place and goes on from there."""

    def __init__(self, data: list[dict], layout: dict) -> None:  # noqa: D107 - plotly's init is deferred
        self.__dict__["_plain"] = {"data": data, "layout": layout}

    def __getattr__(self, name: str) -> Any:
        plain = self.__dict__.get("_plain")
        if plain is None or self.__dict__.get("_building"):
            raise AttributeError(name)
        self.__dict__["_building"] = True
        try:
            go.Figure.__init__(self, plain, _validate=False)
        finally:
            del self.__dict__["_building"]
        del self.__dict__["_plain"]
        return object.__getattribute__(self, name)

    def plain_spec(self) -> dict | None:
        """The figure's JSON as dicts, template included, while it has not been built; else None."""
        plain = self.__dict__.get("_plain")
        if plain is None:
            return None
        layout = plain["layout"]
        return {"data": plain["data"],
                "layout": layout if "template" in layout else {**layout, "template": _default_template()}}

    def to_dict(self) -> dict:
        spec = self.plain_spec()
        if spec is None:
            return super().to_dict()
        spec = {"data": copy.deepcopy(spec["data"]), "layout": copy.deepcopy(spec["layout"])}
        convert_to_base64(spec)
        return spec


class _Sent(go.Figure):
    """A built figure as Streamlit sends it, without the deep copy plotly's `to_dict` makes of every
    trace (~1 ms a chart, several charts a slider move): the figure is dropped once sent."""

    def to_dict(self) -> dict:
        return self.__dict__["_spec"]


def sendable(fig: go.Figure) -> go.Figure:
    """`fig` ready for st.plotly_chart: the same JSON (base64 arrays included), its dicts not copied.
    Validating (the tests) sends the figure itself, so plotly's own path is what they check."""
    if validating():
        return fig
    spec = fig.plain_spec() if isinstance(fig, PlainFigure) else None
    if spec is None:
        if fig._frame_objs:
            return fig
        spec = {"data": fig._data, "layout": fig._layout}
    convert_to_base64(spec)
    out = object.__new__(_Sent)
    out.__dict__["_spec"] = spec
    return out


def vline(x: float, **line) -> dict:
    """A vertical line across the plot at x, as plotly's add_vline writes it."""
    return dict(type="line", x0=x, x1=x, xref="x", y0=0, y1=1, yref="y domain", line=line)


def hline(y: float, **line) -> dict:
    """A horizontal line across the plot at y, as plotly's add_hline writes it."""
    return dict(type="line", x0=0, x1=1, xref="x domain", y0=y, y1=y, yref="y", line=line)


def split_title(text: str) -> tuple[str, str]:
    """(title, subtitle): cut at the best break in BREAKS that leaves both lines short, else at the
    last space that does (tests/app/test_chart_layout.py keeps the pages' titles off that)."""
    if len(text) <= TITLE_CHARS:
        return text, ""
    cuts = []
    for sep in (*BREAKS, " "):
        keep = 1 if sep == "? " else 0  # characters of the break that stay on the title line
        i = text.rfind(sep, 0, TITLE_CHARS - keep + len(sep))
        while i > 0 and text[:i].count("(") != text[:i].count(")"):
            i = text.rfind(sep, 0, i)
        if i > 0:
            rest = text[i + 1:] if sep.strip().isalpha() or sep in (" (", " ") else text[i + len(sep):]
            cuts.append((text[:i + keep], rest))
    return next((c for c in cuts if len(c[1]) <= SUBTITLE_CHARS), cuts[-1] if cuts else (text, ""))


def title(text: str) -> dict:
    """A title in the top margin; automargin makes room for it above whatever sits under it (the
    legend), so the two never overlap, whatever the width."""
    head, rest = split_title(text)
    subtitle = {"subtitle": dict(text=rest, font=dict(size=12))} if rest else {}
    return dict(text=head, x=0, xanchor="left", yref="container", y=1, yanchor="top", automargin=True,
                pad=dict(t=4), font=dict(size=15), **subtitle)


def log_ticks(values: Iterable[float]) -> dict:
    """Tick labels a log axis over `values` can be read by.

    Plotly labels the ticks between two decades with bare digits ("10k 5 2 1000 5 2 100") unless
    the axis has a tickformat: SI suffixes ("10k 5k 2k 1k") when every value is at least 1, plain
    decimals when the data dips below 1 (SI would print 0.5 as "500m"). Given a tickformat plotly
    labels every tick it draws, and it draws up to nine a decade, so the spacing is set too:
    decades over a wide range, 1-2-5 over a narrower one (from 0.7 of a decade of data, which
    plotly's padding draws as about a decade), and plotly's own linear steps below that.
    """
    values = list(values)
    ticks: dict = {"tickformat": "~s" if min(values, default=1) >= 1 else ",~g"}
    span = math.log10(max(values) / min(values)) if values else 0
    if span >= 2.5:
        ticks["dtick"] = 1
    elif span >= 0.7:
        ticks["dtick"] = "D2"
    return ticks


def label_log_axes(layout: dict, data: Iterable[Any]) -> dict:
    """Give each log axis of `layout` without a tickformat the ticks that suit the data drawn on it."""
    data = list(data)
    for name, axis in layout.items():
        if name[:5] in ("xaxis", "yaxis") and isinstance(axis, dict) and axis.get("type") == "log" \
                and not axis.get("tickformat"):
            letter, ref = name[0], name[0] + name[5:]  # traces call the axis "yaxis2" "y2"
            drawn = [_get(t, letter) for t in data if (_get(t, letter + "axis") or letter) == ref]
            ticks = log_ticks(v for values in drawn if values is not None for v in values
                              if isinstance(v, Real) and v > 0)
            axis.update({k: v for k, v in ticks.items() if k not in axis})
    return layout


def _get(trace: Any, key: str) -> Any:
    return trace.get(key) if isinstance(trace, dict) else getattr(trace, key, None)
