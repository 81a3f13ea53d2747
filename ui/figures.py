"""Figures handed to plotly as plain dicts, without plotly's validation.

plotly validates every property it is given, element by element for data arrays: a sweep chart
of four 61-point lines cost ~5.5 ms to build validated and ~0.5 ms as dicts, and a page draws
several per slider move. Tests set WALKTHROUGHS_VALIDATE_FIGURES=1 (tests/conftest.py), so every
figure a test draws is validated and a misspelt property still fails there; tests/app/
test_figures.py checks that both ways give Streamlit the same JSON, page edits included.
"""

from __future__ import annotations

import os

import plotly.graph_objects as go


def validating() -> bool:
    return os.environ.get("WALKTHROUGHS_VALIDATE_FIGURES") == "1"


def figure(data: list[dict], layout: dict) -> go.Figure:
    return go.Figure({"data": data, "layout": layout}, _validate=validating())


def vline(x: float, **line) -> dict:
    """A vertical line across the plot at x, as plotly's add_vline writes it."""
    return dict(type="line", x0=x, x1=x, xref="x", y0=0, y1=1, yref="y domain", line=line)
