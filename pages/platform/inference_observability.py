import math

import streamlit as st

from models.platform import inference_observability as model
from ui.charts import PALETTE, layout_dict, sweep_figure
from ui.diagram import fill
from ui.figures import figure, hline, vline
from ui.question_page import QuestionPage

page = QuestionPage("inference-observability")
LABEL_NAMES = {"replica": "replica", "route": "route", "status": "status", "bucket": "histogram bucket",
               "tenant": "tenant"}


@page.chart("trace_waterfall")
def trace_waterfall(ctx):  # bars that start where the span starts: a Gantt, not a sweep or a stack
    d = ctx.derivation
    total = d.value("request_s") or 1.0
    traces = [dict(  # plain dicts, not validated (ui/figures.py)
        type="bar", y=[s.name], x=[max(d.value(end) - d.value(start), total * 0.006)], base=[d.value(start)],
        orientation="h", showlegend=False, cliponaxis=False,  # a 5 ms span on a 10 s request stays visible
        marker=dict(color="#94a3b8" if s.name == "request" else PALETTE[i % len(PALETTE)]),
        text=[d[dur].display(hint=False) if dur and d.value(dur) > 0 else "event"], textposition="outside",
        hovertemplate=f"<b>{s.name}</b><br>{d[start].display(hint=False)} → {d[end].display(hint=False)}"
                      f"<br>{s.records}<extra></extra>",
    ) for i, s in enumerate(model.SPANS) for start, end, dur in (model.SPAN_STEPS[s.name],)]
    layout = layout_dict("One request's trace: one decode span, not one per token", "Seconds since the request arrived",
                         "")
    layout["yaxis"].update(categoryorder="array", categoryarray=[s.name for s in reversed(model.SPANS)])
    layout["xaxis"]["range"] = [0, total * 1.15]
    ttft = d.value("ttft_s")
    layout.update(height=330, hovermode="closest", shapes=[vline(ttft, color="#dc2626", dash="dot", width=1.5)],
                  annotations=[dict(text=f"first token {d['ttft_s'].display(hint=False)}", showarrow=False, x=ttft,
                                    xref="x", xanchor="left", y=0, yref="y domain", yanchor="bottom")])
    return figure(traces, layout)


@page.chart("utilization_vs_throughput")
def utilization_vs_throughput(ctx):  # its ends are steps in tokens/s, which lo/hi cannot name (see the report)
    return sweep_figure(ctx.slug, ctx.params, "tokens_per_s_replica", {
        "gpu_util_counter_share": "'GPU utilization' counter", "mbu": "Memory-bandwidth utilization",
        "mfu": "Model FLOP utilization",
    }, title="Three utilizations as a replica's throughput changes (same batch)", y_title="%", hlines=(100,),
        lo=ctx.derivation.value("utilization_chart_from_tokens_per_s"),
        hi=ctx.derivation.value("utilization_chart_to_tokens_per_s"))


page.sweep("span_ratio_vs_price", "span_price_per_million_usd", {
    "span_cost_to_gpu_cost_ratio": "Span per token ÷ GPU cost of the token",
    "span_cost_to_list_price_ratio": "Span per token ÷ list price of the token",
}, title="Does a span per token cost more than the token? Depends which cost (log-log)",
    y_title="ratio", x_title="Price of a million spans (USD)", log_y=True, hlines=((1, "costs as much as the token"),))

page.sweep("tenant_cost_vs_context", "tenant_context_tokens",
    {"tenant_cost_usd": "By batch share (bytes read per step)",
     "tenant_cost_by_token_count_usd": "By token count alone"},
    title="One tenant's daily GPU cost against its context length", y_title="USD per day",
    x_title="The tenant's mean context (tokens)", n=60)


def _cardinality_figure(ctx, s, chosen: list):
    """The series count as each label multiplies in, against the budget, as plain dicts (ui/figures.py)."""
    keys = [f"series_through_{name}" for name in chosen] or ["chosen_series"]
    bars = dict(type="bar", x=[f"× {LABEL_NAMES[name]}" for name in chosen] or ["no labels"],
                y=[s.value(k) for k in keys], marker=dict(color=PALETTE[0]),
                text=[s[k].display(hint=False) for k in keys], textposition="outside", cliponaxis=False)
    budget = ctx.params.series_budget
    layout = layout_dict("Series as each label multiplies in (log scale)", "", "series", log_y=True)
    layout["yaxis"]["range"] = [0, math.log10(max(budget, s.value("chosen_series"))) + 0.8]
    layout.update(height=320, hovermode="closest", shapes=[hline(budget, color="#dc2626", dash="dash", width=1.5)],
                  annotations=[dict(x=0, xref="paper", y=math.log10(budget), showarrow=False, xanchor="left",
                                    text=fill("budget {{series_budget}}", ctx.derivation, ctx.params),
                                    yanchor="bottom", font=dict(size=11, color="#dc2626"))])
    return figure([bars], layout)


@page.sim("cardinality")
def cardinality(ctx):  # checkboxes that pick the labels: a calculator, not a seeded run
    st.markdown("##### Which labels does the latency histogram carry?")
    values = model.cardinality_steps(ctx.params, ())
    chosen = [name for col, name in zip(st.columns(len(model.LABELS)), model.LABELS)
              if col.checkbox(f"{LABEL_NAMES[name]} ({values[f'{name}_label_values'].display()})", value=True,
                              key=f"{ctx.slug}.sim_label_{name}")]
    s = model.cardinality_steps(ctx.params, set(chosen))
    over = s.value("chosen_series_over_budget")
    share = s["chosen_series_budget_share" if over < 10 else "chosen_series_over_budget"]
    m = st.columns(3)
    m[0].metric("Series", s["chosen_series"].display(hint=False), border=True)
    m[1].metric("Store memory", s["chosen_series_memory_bytes"].display(hint=False), border=True)
    m[2].metric("Of the budget", share.display(hint=False), border=True, delta="over budget" if over > 1
                else "within budget", delta_color="inverse" if over > 1 else "normal")
    st.plotly_chart(_cardinality_figure(ctx, s, chosen), key=f"{ctx.slug}.sim.cardinality",
                    config={"displaylogo": False})
    st.caption("The product is the worst case: every combination of values appears. A load-balanced fleet reaches it, "
               "because any tenant's request can land on any replica, route and status within a retention window.")


page.render()
