import math

import plotly.graph_objects as go
import streamlit as st

from models.platform import inference_observability as model
from models.units import format_quantity
from ui.charts import INK, PALETTE, layout_dict, sweep_figure
from ui.figures import figure, hline, vline
from ui.question_page import QuestionPage

page = QuestionPage("inference-observability")
LABEL_NAMES = {"replica": "replica", "route": "route", "status": "status", "bucket": "histogram bucket",
               "tenant": "tenant"}


@page.chart("trace_waterfall")
def trace_waterfall(ctx):
    spans = model.waterfall(ctx.params)
    total = max(end for _, _, end, _ in spans) or 1.0
    min_w = total * 0.006  # a 5 ms span on a 10 s request must stay visible
    names = [s[0] for s in spans]
    # Plain dicts, not validated (ui/figures.py): the JSON plotly's add_trace/add_vline wrote.
    traces = []
    for i, (name, start, end, records) in enumerate(spans):
        dur = end - start
        traces.append(dict(
            type="bar", y=[name], x=[max(dur, min_w)], base=[start], orientation="h", showlegend=False,
            marker=dict(color="#94a3b8" if name == "request" else PALETTE[i % len(PALETTE)]),
            text=[format_quantity(dur, "s") if dur > 0 else "event"], textposition="outside",
            cliponaxis=False,
            hovertemplate=f"<b>{name}</b><br>{format_quantity(start, 's')} → {format_quantity(end, 's')}"
                          f"<br>{records}<extra></extra>",
        ))
    ttft = ctx.derivation.value("ttft_s")
    layout = layout_dict("One request's trace: one decode span, not one per token", "Seconds since the request arrived",
                         "")
    layout["yaxis"].update(categoryorder="array", categoryarray=list(reversed(names)))
    layout["xaxis"]["range"] = [0, total * 1.15]
    layout.update(
        height=330, hovermode="closest", shapes=[vline(ttft, color="#dc2626", dash="dot", width=1.5)],
        # The label add_vline's annotation_position="bottom right" writes: inside the plot, at the line's foot.
        annotations=[dict(text=f"first token {format_quantity(ttft, 's')}", showarrow=False, x=ttft, xref="x",
                          xanchor="left", y=0, yref="y domain", yanchor="bottom")],
    )
    return figure(traces, layout)


@page.chart("utilization_vs_throughput")
def utilization_vs_throughput(ctx):
    d = ctx.derivation
    # Sweep up to a little past the roofline for this batch: beyond it the observations are impossible.
    at_roofline = d.value("decode_batch") * d.value("peak_Bps") / d.value("step_bytes")
    hi = min(50_000, max(at_roofline * 1.1, ctx.params.tokens_per_s_replica * 1.1))
    fig = sweep_figure(
        ctx.slug, ctx.params, "tokens_per_s_replica",
        {"gpu_util_counter_share": "'GPU utilization' counter", "mbu": "Memory-bandwidth utilization",
         "mfu": "Model FLOP utilization"},
        title="Three utilizations as a replica's throughput changes (same batch)", y_title="%",
        n=60, lo=max(10, at_roofline / 50), hi=hi,
    )
    fig.layout.shapes = (*fig.layout.shapes, hline(100, color=INK, dash="dash", width=1))  # a dict: add_hline validates
    return fig


@page.chart("span_ratio_vs_price")
def span_ratio_vs_price(ctx):
    fig = sweep_figure(
        ctx.slug, ctx.params, "span_price_per_million_usd",
        {"span_cost_to_gpu_cost_ratio": "Span per token ÷ GPU cost of the token",
         "span_cost_to_list_price_ratio": "Span per token ÷ list price of the token"},
        title="Does a span per token cost more than the token? Depends which cost (log-log)",
        y_title="ratio", x_title="Price of a million spans (USD)", log_y=True, n=60,
    )
    # Added as dicts (ui/figures.py): add_hline and add_annotation validate the figure's shapes and notes.
    fig.layout.shapes = (*fig.layout.shapes, hline(1, color=INK, dash="dash", width=1.5))
    # On a log axis an annotation's y is given in log10 units: log10(1) = 0.
    fig.layout.annotations = (*fig.layout.annotations, dict(
        x=0, xref="paper", y=0, text="costs as much as the token", showarrow=False, xanchor="left",
        yanchor="bottom", font=dict(size=11)))
    return fig


page.sweep("tenant_cost_vs_context", "tenant_context_tokens",
    {"tenant_cost_usd": "By batch share (bytes read per step)",
     "tenant_cost_by_token_count_usd": "By token count alone"},
    title="One tenant's daily GPU cost against its context length", y_title="USD per day",
    x_title="The tenant's mean context (tokens)", n=60)


def _cardinality_figure(xs: list, ys: list, series_budget: float) -> go.Figure:
    """The series count as each label multiplies in, against the budget, as plain dicts (ui/figures.py)."""
    bars = dict(type="bar", x=xs or ["no labels"], y=ys or [1], marker=dict(color=PALETTE[0]),
                text=[f"{y:,}" for y in (ys or [1])], textposition="outside", cliponaxis=False)
    layout = layout_dict("Series as each label multiplies in (log scale)", "", "series", log_y=True)
    top = max([series_budget, *ys]) if ys else series_budget
    layout["yaxis"]["range"] = [0, math.log10(top) + 0.8]
    layout.update(
        height=320, hovermode="closest", shapes=[hline(series_budget, color="#dc2626", dash="dash", width=1.5)],
        annotations=[dict(x=0, xref="paper", y=math.log10(series_budget), text=f"budget {series_budget:,.0f}",
                          showarrow=False, xanchor="left", yanchor="bottom", font=dict(size=11, color="#dc2626"))],
    )
    return figure([bars], layout)


@page.sim("cardinality")
def cardinality(ctx):
    p = ctx.params
    st.markdown("##### Which labels does the latency histogram carry?")
    sizes = {"replica": p.replicas, "route": p.routes, "status": p.status_codes, "bucket": p.histogram_buckets,
             "tenant": p.tenants}
    cols = st.columns(len(model.LABELS))
    chosen = []
    for col, name in zip(cols, model.LABELS):
        if col.checkbox(f"{LABEL_NAMES[name]} ({sizes[name]:,})", value=True, key=f"{ctx.slug}.sim_label_{name}"):
            chosen.append(name)
    series = model.series_count(p, set(chosen))
    memory = series * p.bytes_per_series
    over = series / p.series_budget
    m = st.columns(3)
    m[0].metric("Series", f"{series:,}", border=True)
    m[1].metric("Store memory", format_quantity(memory, "B"), border=True)
    m[2].metric("Of the budget", f"{over * 100:,.1f}%" if over < 10 else f"{over:,.0f}×", border=True,
                delta="over budget" if over > 1 else "within budget", delta_color="inverse" if over > 1 else "normal")
    running, xs, ys = 1, [], []
    for name in chosen:
        running *= sizes[name]
        xs.append(f"× {LABEL_NAMES[name]}")
        ys.append(running)
    st.plotly_chart(_cardinality_figure(xs, ys, p.series_budget), key=f"{ctx.slug}.sim.cardinality",
                    config={"displaylogo": False})
    st.caption("The product is the worst case: every combination of values appears. A load-balanced fleet reaches it, "
               "because any tenant's request can land on any replica, route and status within a retention window.")


page.render()
