"""A keyed chart keeps its element id when its figure changes (the browser then updates it in
place with Plotly.react instead of unmounting it and drawing it anew), and keyed charts stay
distinct from each other."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

import ui.chart_identity as chart_identity
from tests.helpers import app_page


def _ids(at) -> list[str]:
    return [c.proto.id for c in at.get("plotly_chart")]


def _specs(at) -> list[str]:
    return [c.proto.spec for c in at.get("plotly_chart")]


def test_a_page_s_charts_keep_their_ids_while_their_figures_change():
    at = app_page("serving-platform").run()
    ids, specs = _ids(at), _specs(at)
    assert len(ids) >= 3 and len(set(ids)) == len(ids)
    at.slider(key="serving-platform.prefix_cache_hit").set_value(40).run()
    assert not at.exception
    assert _ids(at) == ids
    assert all(a != b for a, b in zip(_specs(at), specs))  # every figure did change


def _script():
    import math

    import streamlit as st

    import ui.chart_identity  # noqa: F401

    height = st.session_state.get("height", 300)
    value = st.slider("v", 0, 10, 1, key="v")
    fig = {"data": [{"type": "scatter", "x": [0, 1], "y": [value, math.pi]}], "layout": {"height": height}}
    st.plotly_chart(fig, key="keyed", height=height)
    st.plotly_chart(fig)  # no key: Streamlit's own id, from the figure


def test_the_key_and_size_make_the_id_and_an_unkeyed_chart_keeps_streamlit_s():
    at = AppTest.from_function(_script).run()
    keyed, unkeyed = _ids(at)
    at.slider(key="v").set_value(5).run()
    assert _ids(at)[0] == keyed
    assert _ids(at)[1] != unkeyed  # its figure changed, and so did Streamlit's id for it
    at.session_state["height"] = 500
    at.run()
    assert _ids(at)[0] != keyed  # a new size is a new chart


def test_installed_once_over_streamlit_s_own_function():
    import streamlit.elements.plotly_chart as plotly_chart

    chart_identity.install()
    wrapped = plotly_chart.compute_and_register_element_id
    assert getattr(wrapped, "wraps", None) is not None
    assert getattr(wrapped.wraps, "wraps", None) is None  # not wrapped twice
    assert wrapped.wraps.__name__ == "compute_and_register_element_id"
