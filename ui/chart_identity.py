"""A chart keeps its identity when its figure changes, so the browser updates it in place.

Streamlit 1.67 computes a plotly chart's element id from its whole figure, even when the chart
has a key, and the browser's React tree is keyed by that id: every slider move that changes a
figure (the marked point moves on every one) unmounted the chart and drew it again from nothing
(Plotly.newPlot), where the same component could have taken the new figure with Plotly.react.
With four charts that was 330-360 ms from a key press to the page settled, against 72 ms with
the ids held still (bench: /tmp-style synthetic page, one slider, four 3-line charts, same run).

So a keyed chart's id is computed from its key, theme and size alone. Two charts still cannot
share a key (Streamlit raises on a duplicate, as before); an unkeyed chart keeps Streamlit's id.
tests/app/test_chart_identity.py fails if a Streamlit upgrade moves the function this wraps.
"""

from __future__ import annotations

from typing import Any

import streamlit.elements.plotly_chart as _plotly_chart

# What still remounts a keyed chart: a new theme or size (the presenter's taller charts).
IDENTITY_ARGS = frozenset({"theme", "width", "height"})


def _keyed_chart_id(original):
    def compute(element_type: str, *, key_as_main_identity: Any, **kwargs: Any) -> str:
        if element_type == "plotly_chart" and kwargs.get("user_key"):
            key_as_main_identity = set(IDENTITY_ARGS)
        return original(element_type, key_as_main_identity=key_as_main_identity, **kwargs)

    compute.wraps = original
    return compute


def install() -> None:
    """Idempotent: wraps Streamlit's id function for plotly charts once per process."""
    current = _plotly_chart.compute_and_register_element_id
    if getattr(current, "wraps", None) is None:
        _plotly_chart.compute_and_register_element_id = _keyed_chart_id(current)


install()
