"""The app hands plotly unvalidated dicts (ui/figures.py); the JSON Streamlit sends must be the
same as plotly's validated figures would give, including the edits pages make afterwards."""

from __future__ import annotations

import json

import plotly.graph_objects as go
import plotly.io as pio
import plotly.tools
import pytest
import streamlit  # noqa: F401  (registers the plotly template the app runs with)

from models.core import knobs_of
from models.registry import QUESTIONS
from ui.charts import sweep_figure
from ui.diagram import Arrow, Box, box_diagram


def _sent(fig: go.Figure) -> dict:
    """What st.plotly_chart sends to the browser."""
    fig = plotly.tools.return_figure_from_figure_or_data(fig, validate_figure=True)
    return json.loads(pio.to_json(fig, validate=False))


def _page_edits(fig: go.Figure) -> go.Figure:
    """The edits page scripts make to a sweep chart (a reference line, a label, an axis, a bar)."""
    fig.add_hline(y=1, line=dict(color="#0f172a", dash="dash", width=1.5))
    fig.add_vline(x=2, line=dict(color="#dc2626", dash="dash", width=1.5))
    fig.add_annotation(x=0, xref="paper", y=1, text="a label", showarrow=False, xanchor="left")
    fig.update_yaxes(exponentformat="e")
    fig.add_trace(go.Bar(x=[1, 2], y=[3, 4], name="bars"))
    fig.update_layout(height=720, font=dict(size=18))  # what presenter mode does
    return fig


def _both(monkeypatch, build) -> tuple[dict, dict]:
    monkeypatch.setenv("WALKTHROUGHS_VALIDATE_FIGURES", "1")
    validated = _sent(build())
    monkeypatch.setenv("WALKTHROUGHS_VALIDATE_FIGURES", "0")
    return validated, _sent(build())


def _old_sweep_vline(fig: go.Figure, x: float) -> None:
    fig.add_vline(x=x, line=dict(color="#64748b", dash="dot", width=1))


@pytest.mark.parametrize("slug", ["checkpoint-distribution", "multi-lora", "kv-cache-tiers", "serverless-gpu"])
def test_sweep_charts_send_the_same_json_unvalidated(monkeypatch, slug):
    q = QUESTIONS[slug]
    params = q.Params()
    field = next(f for f, k in knobs_of(q.Params).items() if k.min is not None and k.max is not None)
    keys = q.content.metrics[:2]
    lines = dict(keys)
    for edit in (lambda f: f, _page_edits):
        validated, fast = _both(monkeypatch, lambda: edit(sweep_figure(slug, params, field, lines, title="t", y_title="y")))
        assert fast == validated
        assert len(fast["data"]) == 2 * len(lines) + (1 if edit is _page_edits else 0)


def test_the_current_value_line_is_the_one_add_vline_draws(monkeypatch):
    """sweep_figure writes the dotted 'now' line as a shape dict; it must equal add_vline's."""
    q = QUESTIONS["checkpoint-distribution"]
    params = q.Params()
    monkeypatch.setenv("WALKTHROUGHS_VALIDATE_FIGURES", "1")
    fig = sweep_figure(q.slug, params, "hosts", {"naive_pull_s": "naive"}, title="t", y_title="y")
    reference = go.Figure()
    _old_sweep_vline(reference, params.hosts)
    assert _sent(fig)["layout"]["shapes"] == _sent(reference)["layout"]["shapes"]


def test_diagrams_send_the_same_json_unvalidated(monkeypatch):
    boxes = [Box("a", "Client", "1 req/s · 2 GB", 0, 0), Box("b", "Router", "", 0, 1, tone="accent")]
    arrows = [Arrow("a", "b", "HTTPS"), Arrow("b", "a", "", dashed=True)]
    validated, fast = _both(monkeypatch, lambda: box_diagram(boxes, arrows, title="Shape"))
    assert fast == validated
    # two boxes and the dashed arrow's shaft; two box texts, two arrows (one just the dashed one's head), a label
    assert len(fast["layout"]["shapes"]) == 2 + 1 and len(fast["layout"]["annotations"]) == 2 + 2 + 1


def test_a_misspelt_property_fails_when_validating(monkeypatch):
    from ui.figures import figure

    monkeypatch.setenv("WALKTHROUGHS_VALIDATE_FIGURES", "1")
    with pytest.raises(ValueError):
        figure([dict(type="scatter", x=[1], y=[1], colour="red")], {})
