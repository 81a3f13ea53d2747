"""How accurate are these models? The serving arithmetic against published measurements.

Content over steps, as every other page: the prose and its tables are content/validation.md, every
number in them a `{{step}}` of models.validation_steps.accuracy_steps() filled by ui.prose.render.
What stays here is what moves: the efficiency sliders with their presets, the table of your
predictions (`::sim knobs`) and the measured-against-predicted chart (`::chart accuracy`). A
paragraph the content starts with `> ` is a caption.
"""

from __future__ import annotations

import math
from pathlib import Path

import plotly.graph_objects as go
import streamlit as st

from models.content import DIRECTIVE, load_content
from models.validation import (
    ENGINE_DEFAULTS, FIT_TOLERANCE, METRIC_LABELS, SETUPS, Knobs, Row, evaluate, fit_per_gpu, fit_per_model,
    fit_profiled,
)
from models.validation_steps import accuracy_steps
from ui.charts import PALETTE, base_layout
from ui.links import page_link
from ui.prose import render as render_prose

CONTENT = Path(__file__).resolve().parents[1] / "content" / "validation.md"
MODELS_MEASURED: tuple[str, ...] = tuple(dict.fromkeys(s.model for s in SETUPS))
SLIDERS = {  # suffix -> (label, min, max, step, format, knob field, scale to the knob)
    "bw": ("Decode MBU (HBM bandwidth achieved)", 5.0, 125.0, 0.1, "%.1f%%", "hbm_efficiency", 0.01),
    "flop": ("Prefill MFU", 5.0, 125.0, 0.1, "%.1f%%", "prefill_mfu", 0.01),
    "dec": ("Fixed cost per decode step", 0.0, 10.0, 0.01, "%.2f ms", "step_overhead_s", 0.001),
    "ar": ("All-reduce latency", 0.0, 50.0, 0.5, "%.1f µs", "allreduce_latency_s", 1e-6),
    "pre": ("Fixed cost per prefill", 0.0, 60.0, 0.1, "%.1f ms", "prefill_overhead_s", 0.001),
}
SLIDER_HELP = {
    0.01: "Above 100% means faster than the datasheet: unphysical.",
    0.001: "Time added to every step (decode) or every request (prefill), whatever its size.",
    1e-6: "The fixed cost of each tensor-parallel all-reduce, two per layer per step; none on one GPU. "
          "The engine's 6 µs is a measured TP-8 all-reduce of a small message on H100.",
}


def slider_key(model: str, suffix: str) -> str:
    return f"validation.{model}.{suffix}"


def _signed(x: float) -> str:
    return f"{x * 100:+.1f}%".replace("-", "−")


# ------------------------------------------------------------------------- the sliders (::sim knobs)


def _set_knobs(values: dict[str, Knobs]) -> None:
    for model, k in values.items():
        for suffix, (_, lo, hi, step, _, field, scale) in SLIDERS.items():
            v = round(getattr(k, field) / scale / step) * step
            st.session_state[slider_key(model, suffix)] = round(min(hi, max(lo, v)), 4)


def _presets() -> dict[str, dict[str, Knobs]]:
    by_gpu = {f.group: f.knobs for f in fit_per_gpu()}
    return {
        "The engine's defaults": {m: ENGINE_DEFAULTS for m in MODELS_MEASURED},
        "Fit (a), per model": {f.group: f.knobs for f in fit_per_model()},
        "Fit (b), per GPU": {m: by_gpu[next(s.gpu for s in SETUPS if s.model == m)] for m in MODELS_MEASURED},
        "Roofline (100%)": {m: Knobs() for m in MODELS_MEASURED},
    }


def _knob_panel() -> list[Row]:
    presets = _presets()
    if slider_key(MODELS_MEASURED[0], "bw") not in st.session_state:
        _set_knobs(presets["The engine's defaults"])
    for col, (name, values) in zip(st.columns(len(presets)), presets.items()):
        col.button(name, key=f"validation.preset.{name}", on_click=_set_knobs, args=(values,), width="stretch")
    knobs: dict[str, Knobs] = {}
    for col, model in zip(st.columns(len(MODELS_MEASURED), border=True), MODELS_MEASURED):
        with col:
            gpus = sorted({s.gpu for s in SETUPS if s.model == model})
            st.markdown(f"**{next(s.model_label for s in SETUPS if s.model == model)}** on {', '.join(gpus)}")
            kw = {field: st.slider(label, lo, hi, step=step, format=fmt, key=slider_key(model, suffix),
                                   help=SLIDER_HELP[scale]) * scale
                  for suffix, (label, lo, hi, step, fmt, field, scale) in SLIDERS.items()}
            # batch 1 never reaches the FLOP side of a decode step, so its MFU stays the engine's
            knobs[model] = Knobs(**kw, decode_mfu=ENGINE_DEFAULTS.decode_mfu)
    mine = list(evaluate(knobs))
    worst = max(mine, key=lambda r: abs(r.error))
    cols = st.columns(2)
    cols[0].metric(f"Within ±{FIT_TOLERANCE:.0%}", f"{sum(abs(r.error) <= FIT_TOLERANCE for r in mine)} of {len(mine)}",
                   border=True)
    label = METRIC_LABELS[worst.metric]
    cols[1].metric("Largest error", _signed(worst.error), border=True,
                   help=f"{worst.setup.label}, {label[:1].lower() + label[1:]}")
    ms = st.column_config.NumberColumn(format="%.2f")
    st.dataframe(
        [{"Setup": r.setup.label, "Quantity": METRIC_LABELS[r.metric], "Measured (ms)": r.measured_s * 1000,
          "Roofline at 100% (ms)": r.roofline_s * 1000, "Your prediction (ms)": r.predicted_s * 1000,
          "Error": round(r.error * 100, 9) + 0.0} for r in mine],
        hide_index=True, key="validation.mine", width="stretch",
        column_config={"Measured (ms)": ms, "Roofline at 100% (ms)": ms, "Your prediction (ms)": ms,
                       "Error": st.column_config.NumberColumn(format="%+.1f%%", help="Prediction / measurement − 1")},
    )
    return mine


# ------------------------------------------------------------------------- the chart (::chart accuracy)


def figure(rows_by_series: dict[str, list[tuple[Row, float]]]) -> go.Figure:
    """Measured (x) against predicted (y); on y = x a prediction is exact."""
    fig = go.Figure()
    every = [v for series in rows_by_series.values() for r, p in series for v in (r.measured_s * 1000, p * 1000)]
    lo, hi = min(every) / 1.6, max(every) * 1.6
    fig.add_trace(go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", name="y = x (exact)",
                             line=dict(color="#0f172a", width=1.5), hoverinfo="skip"))
    for factor, name in ((1 + FIT_TOLERANCE, f"±{FIT_TOLERANCE:.0%}"), (1 - FIT_TOLERANCE, None)):
        fig.add_trace(go.Scatter(x=[lo, hi], y=[lo * factor, hi * factor], mode="lines", name=name,
                                 showlegend=name is not None, legendgroup="band",
                                 line=dict(color="#94a3b8", width=1, dash="dot"), hoverinfo="skip"))
    styles = {"Roofline at 100%": ("#94a3b8", 9, "open"), "Fit (a), per model": (PALETTE[0], 10, ""),
              "Fit (c), GEMM size": (PALETTE[2], 11, ""), "Your knobs": (PALETTE[1], 13, "")}
    for series, pairs in rows_by_series.items():
        color, size, suffix = styles[series]
        fig.add_trace(go.Scatter(
            x=[r.measured_s * 1000 for r, _ in pairs], y=[p * 1000 for _, p in pairs], mode="markers", name=series,
            marker=dict(color=color, size=size, line=dict(color="white" if not suffix else color, width=1.5),
                        symbol=[("circle" if r.metric == "decode" else "diamond") + ("-open" if suffix else "")
                                for r, _ in pairs]),
            text=[f"{r.setup.label}<br>{METRIC_LABELS[r.metric]}<br>measured {r.measured_s * 1000:.2f} ms, "
                  f"predicted {p * 1000:.2f} ms ({_signed(p / r.measured_s - 1)})" for r, p in pairs],
            hovertemplate="%{text}<extra>" + series + "</extra>",
        ))
    base_layout(fig, "Measured against predicted", "measured (ms, log scale)", "predicted (ms, log scale)",
                log_x=True, log_y=True)
    fig.update_layout(hovermode="closest", height=480)
    ticks = [t for t in (0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000) if lo <= t <= hi]
    for axis in (fig.update_xaxes, fig.update_yaxes):
        axis(range=[math.log10(lo), math.log10(hi)], tickvals=ticks, ticktext=[f"{t:g}" for t in ticks])
    return fig


def _chart(mine: list[Row]) -> None:
    st.plotly_chart(figure({
        "Roofline at 100%": [(r, r.roofline_s) for r in mine],
        "Fit (a), per model": [(r, r.predicted_s) for f in fit_per_model() for r in f.rows],
        "Fit (c), GEMM size": [(r, r.predicted_s) for f in fit_profiled() for r in f.rows],
        "Your knobs": [(r, r.predicted_s) for r in mine],
    }), key="validation.chart")


# ------------------------------------------------------------------------------------ page


def _prose(text: str) -> None:
    """Markdown with live numbers; a `> ` paragraph is a caption."""
    d = accuracy_steps()
    for block in text.split("\n\n"):
        if block.strip():
            if block.startswith("> "):
                st.caption(render_prose(block.removeprefix("> "), d, None))
            else:
                st.markdown(render_prose(block, d, None))


def render() -> None:
    content = load_content(CONTENT)
    st.title(content.front["title"])
    st.caption(content.hook)
    _prose(content.intro)
    page_link("pages/reference.py", "reference", "Reference: every GPU, link and model figure with its source",
              icon=":material/menu_book:")
    _prose(content.answer)
    mine: list[Row] = []
    for section in content.sections:
        st.subheader(section.title, divider="gray")
        for block in section.body.split("\n\n"):
            m = DIRECTIVE.match(block.strip())
            if m and m.groups() == ("sim", "knobs"):
                mine = _knob_panel()
            elif m and m.groups() == ("chart", "accuracy"):
                _chart(mine)
            elif m:
                raise ValueError(f"{CONTENT}: no {m.group(1)} called {m.group(2)!r} on this page")
            else:
                _prose(block)
