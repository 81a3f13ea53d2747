"""Two scenarios side by side: every key figure for A and B, the delta, the ratio, and a sweep
chart with both overlaid. `?compare=1` (or the sidebar toggle) turns it on; B's knobs are keyed
`<slug>.B.<field>` and live in the URL like A's."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go
import streamlit as st

from ui.safe import code_span

from models.core import Derivation, knobs_of
from models.units import format_number, format_quantity
from ui.charts import PALETTE, base_layout, sweep, sweep_values

PARAM = "compare"


def is_comparing() -> bool:
    return str(st.query_params.get(PARAM, "")).lower() in ("1", "true", "yes")


def _toggle() -> None:
    if st.session_state.get("compare.toggle"):
        st.query_params[PARAM] = "1"
    elif PARAM in st.query_params:
        del st.query_params[PARAM]


def check_param() -> None:
    raw = str(st.query_params.get(PARAM, "")).lower()
    if raw not in {"1", "true", "yes", "0", "false", "no", ""}:
        st.info(f"Ignored {code_span(f'compare={raw}', 40)}: use compare=1 to compare two scenarios.", icon=":material/link:")


def compare_toggle(container=None) -> None:
    check_param()
    target = container if container is not None else st.container()
    st.session_state["compare.toggle"] = is_comparing()
    target.toggle("Compare two scenarios", key="compare.toggle", on_change=_toggle,
                      help="A second set of knobs (B); every figure for A and B with the delta and ratio.")


def rows(a: Derivation, b: Derivation) -> list[dict]:
    """One row per numeric step: A, B, B − A and B / A as display strings (and raw numbers)."""
    out = []
    for step in a:
        if not step.is_numeric or step.key not in b or not b[step.key].is_numeric:
            continue
        va, vb = float(step.value), float(b[step.key].value)
        delta = vb - va
        ratio = vb / va if va != 0 else None
        out.append({
            "key": step.key, "label": step.label, "a": step.display(hint=False),
            "b": b[step.key].display(hint=False),
            "delta": ("+" if delta > 0 else "") + _delta_text(step, delta) if delta != 0 else "0",
            "ratio": f"{format_number(ratio)}×" if ratio is not None else "n/a",
            "a_value": va, "b_value": vb, "ratio_value": ratio,
        })
    return out


def _delta_text(step, delta: float) -> str:
    """B − A in the step's unit; between two shares, in percentage points ("+12 pp"), since a
    difference of percents read as a percent ("+12%") would say 12% more than A."""
    if step.percent:
        return f"{format_number(100 * delta)} pp"
    return format_quantity(delta, step.unit, noun=step.noun, hint=False)


def _table(table: list[dict]) -> str:
    lines = ["| Figure | A | B | B − A | B / A |", "|---|---|---|---|---|"]
    for r in table:
        cells = [r["label"], r["a"], r["b"], r["delta"], r["ratio"]]
        lines.append("| " + " | ".join(c.replace("$", "\\$").replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines)


def compare_view(slug: str, params_a: Any, params_b: Any, a: Derivation, b: Derivation,
                 metric_keys: list[str]) -> None:
    """The figures that differ between A and B (the rest one click away), then a sweep of both."""
    table = rows(a, b)
    changed = [r for r in table if r["a_value"] != r["b_value"]]
    same = [r for r in table if r["a_value"] == r["b_value"]]
    if changed:
        st.caption(f"{len(changed)} of {len(table)} figures differ between A and B.")
        st.markdown(_table(changed))
    else:
        st.info("A and B are the same scenario: move a knob of Scenario B to compare.", icon=":material/compare_arrows:")
    if same:
        with st.expander(f"The {len(same)} figures that are the same in A and B"):
            st.markdown(_table(same))

    numeric = [f for f, k in knobs_of(type(params_a)).items() if isinstance(getattr(params_a, f), (int, float))
               and not isinstance(getattr(params_a, f), bool)]
    if not numeric or not metric_keys:
        return
    differing = [f for f in numeric if getattr(params_a, f) != getattr(params_b, f)]
    cols = st.columns(2)
    field = cols[0].selectbox("Sweep this knob", numeric, index=numeric.index(differing[0]) if differing else 0,
                              format_func=lambda f: knobs_of(type(params_a))[f].label, key=f"{slug}.compare_knob")
    plottable = [k for k in metric_keys if a[k].is_numeric]  # a verdict or a hash has no line to draw
    if not plottable:
        return
    key = cols[1].selectbox("Plot this figure", plottable, format_func=lambda k: a[k].label,
                            key=f"{slug}.compare_step")
    knob = knobs_of(type(params_a))[field]
    xs = sweep_values(params_a, field, 50)
    scale = 100 if knob.percent else 1
    fig = go.Figure()
    y_scale = 100.0 if a[key].percent else 1.0  # a share is a fraction; its axis reads in percent
    for params, name, color, dash in ((params_a, "A", PALETTE[0], "solid"), (params_b, "B", PALETTE[1], "dash")):
        ys = [y_scale * y for y in sweep(slug, params, field, [key], xs)[key]]
        fig.add_trace(go.Scatter(x=[x * scale for x in xs], y=ys, name=name, mode="lines",
                                 line=dict(color=color, dash=dash, width=2.5)))
        fig.add_trace(go.Scatter(x=[getattr(params, field) * scale], y=[y_scale * float((a if name == "A" else b)[key].value)],
                                 mode="markers", showlegend=False, marker=dict(color=color, size=11)))
    unit = "%" if knob.percent else knob.unit
    base_layout(fig, f"{a[key].label}: A and B swept over {knob.label}",
                f"{knob.label} ({unit})" if unit else knob.label,
                "%" if a[key].percent else a[key].unit if a[key].unit != "1" else a[key].noun,
                log_x=knob.log)
    st.plotly_chart(fig, key=f"{slug}.compare.chart")
