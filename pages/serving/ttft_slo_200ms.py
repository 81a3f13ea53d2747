import math

import plotly.graph_objects as go
import streamlit as st

from models.serving import ttft_slo_200ms as model
from ui.charts import INK, PALETTE, layout_dict, sweep_figure
from ui.diagram import Arrow, Box, box_diagram
from ui.figures import figure, hline, vline
from ui.question_page import QuestionPage
from ui.sim_panel import cached_simulation, seed_input

page = QuestionPage("ttft-slo-200ms")


def _fixed_ms(p, *, without: str) -> float:
    """The allowances other than `without`, in ms: a sweep of one allowance stops where prefill hits zero."""
    parts = {"network_ms": p.network_ms, "routing_ms": p.routing_ms, "queue_budget_ms": p.queue_budget_ms,
             "first_token_ms": p.first_token_ms}
    return sum(v for k, v in parts.items() if k != without)


@page.diagram("budget_path")
def budget_path(ctx):
    d, p = ctx.derivation, ctx.params
    show = lambda key: d[key].display(hint=False)  # noqa: E731
    pct = f"{p.slo_percentile * 100:g}%"
    boxes = [
        Box("client", "Client sends", f"SLO {p.slo_ms:g} ms at {pct}", 0, 0, "muted"),
        Box("gw", "Gateway · router", f"auth · rate limit · tokenize · {p.routing_ms:g} ms", 1, 0),
        Box("queue", "Admission queue", f"pooled · late binding · ≤ {p.queue_budget_ms:g} ms at {pct} · "
                                        f"admit ≤ {show('max_admissible_prompt_tokens')}", 2, 0, "accent"),
        Box("prefill", "Prefill workers", f"{show('prefill_budget_s')} · ≤ {show('max_prompt_tokens')} · "
                                          f"chunks ≤ {show('chunk_time_s')} · {show('replicas_pooled')}", 3, 0),
        Box("first", "First token", f"sample · KV hand-off · flush · {p.first_token_ms:g} ms", 3, 1),
        Box("out", "Client receives", "first SSE frame", 0, 1, "muted"),
    ]
    arrows = [
        Arrow("client", "gw", "request"),
        Arrow("gw", "queue", "admit"),
        Arrow("queue", "prefill", ""),
        Arrow("prefill", "first", ""),
        Arrow("first", "out", f"streamed · network {p.network_ms:g} ms for the round trip, both legs"),
    ]
    return box_diagram(boxes, arrows, title=f"Where the {p.slo_ms:g} ms go, with this scenario's numbers")


@page.chart("tokens_vs_network")
def tokens_vs_network(ctx):
    p = ctx.params
    hi = max(p.network_ms, p.slo_ms - _fixed_ms(p, without="network_ms") - 1)
    return sweep_figure(
        ctx.slug, p, "network_ms",
        {"max_prompt_tokens_linear": "Weights only (linear)", "max_prompt_tokens_with_attention": "With attention",
         "max_prompt_tokens": "With attention and all-reduces",
         "max_admissible_prompt_tokens": "Admission cap (after one chunk)"},
        title="Longest prompt the budget covers, against the client's round trip", y_title="Prompt tokens",
        n=100, lo=0, hi=hi,
    )


@page.chart("chunk_vs_long_prompt")
def chunk_vs_long_prompt(ctx):
    p, d = ctx.params, ctx.derivation
    fig = sweep_figure(
        ctx.slug, p, "long_prompt_tokens",
        {"long_prompt_prefill_s": "Long prompt in one piece", "chunk_time_s": f"Its last chunk of {p.chunk_tokens:,}"},
        title="A short request's wait behind a long prompt (log-log)", y_title="ms",
        y_unit="ms", from_unit="s", log_y=True, n=80,
    )
    # Added as dicts (ui/figures.py): add_hline and add_annotation validate the figure's shapes and notes.
    shapes, notes = [], []
    for key, name, color in (("slo_s", "whole SLO", INK), ("prefill_budget_s", "prefill budget", "#d97706")):
        y = d.value(key) * 1000
        shapes.append(hline(y, color=color, dash="dash", width=1))
        # On a log axis an annotation's y is given in log10 units (shapes take data units).
        notes.append(dict(x=0, xref="paper", xanchor="left", y=math.log10(y), text=name, showarrow=False,
                          yanchor="bottom", font=dict(size=11, color=color)))
    fig.layout.shapes = (*fig.layout.shapes, *shapes)
    fig.layout.annotations = (*fig.layout.annotations, *notes)
    return fig


@page.chart("utilization_vs_queue_budget")
def utilization_vs_queue_budget(ctx):
    p = ctx.params
    hi = max(p.queue_budget_ms, p.slo_ms - _fixed_ms(p, without="queue_budget_ms") - 1)
    return sweep_figure(
        ctx.slug, p, "queue_budget_ms",
        {"max_utilization_pooled": "One pooled queue (M/M/c)", "max_utilization_mm1": "A queue per replica (M/M/1)"},
        title="How busy prefill may run, against the queue allowance", y_title="Utilization (%)",
        n=100, lo=1, hi=hi, log_x=True, line_shape="hv",
    )


def _run(params_json: str, seed: int):
    return model.simulate(model.Params.model_validate_json(params_json), seed=seed)


def _ms(x: float) -> str:
    return f"{x * 1000:,.1f} ms"


def _ccdf_figure(checks, queue_budget_ms: float, tail_probability: float) -> go.Figure:
    """Each queue's simulated wait tail against its closed form, as plain dicts (ui/figures.py)."""
    traces = []
    for i, q in enumerate(checks):
        color = PALETTE[i]
        traces.append(dict(type="scatter", x=[t * 1000 for t in q.ccdf_t], y=q.ccdf_sim, name=f"{q.label}, simulated",
                           line=dict(color=color, width=2.5)))
        traces.append(dict(type="scatter", x=[t * 1000 for t in q.ccdf_t], y=q.ccdf_analytic, name="closed form",
                           line=dict(color=color, width=1.5, dash="dash"), showlegend=i == 0))
    layout = layout_dict("Share of requests waiting longer than t (log scale)", "Wait t (ms)", "P(wait > t)",
                         log_y=True)
    layout["yaxis"]["range"] = [-4, 0.05]
    layout.update(
        height=420,
        shapes=[vline(queue_budget_ms, color="#64748b", dash="dot", width=1),
                hline(tail_probability, color=INK, dash="dot", width=1)],
        annotations=[dict(x=queue_budget_ms, y=1, yref="paper", text="queue allowance", showarrow=False,
                          xanchor="left", xshift=3, yanchor="top", font=dict(size=11))],
    )
    return figure(traces, layout)


@page.sim("queue_check")
def queue_check(ctx):
    p, d = ctx.params, ctx.derivation
    st.markdown("##### Live: the FIFO queue engine against Erlang C")
    seed = seed_input(ctx.slug)
    r = cached_simulation(ctx.slug, _run, p, seed, "Simulating the queues…")
    pct = f"p{p.slo_percentile * 100:g}"
    checks = (r.separate, r.pooled, r.separate_at_pooled_util)
    short = ("Own queue, at its limit", f"Pool of {r.pooled.servers}", "Own queue, pool's load")
    cols = st.columns(3)
    for col, q, name in zip(cols, checks, short):
        col.metric(f"{name}: {pct} wait", _ms(q.sim_quantile_s),
                   delta=f"closed form {_ms(q.analytic_quantile_s)} · {q.utilization * 100:,.1f}% busy",
                   delta_color="off", border=True, help=q.label)
    st.plotly_chart(_ccdf_figure(checks, p.queue_budget_ms, d.value("tail_probability")),
                    key=f"{ctx.slug}.sim.queue_check.ccdf")
    st.caption(
        f"{r.pooled.customers:,} requests per queue, Poisson arrivals, exponential prefills of mean "
        f"{d['service_time_s'].display()}, the first 5% dropped as warm-up. Share past the allowance: "
        + "; ".join(f"{name.lower()} {q.sim_over_budget * 100:.2f}% simulated, {q.analytic_over_budget * 100:.2f}% "
                    "closed form" for q, name in zip(checks, short))
        + ". One run is one sample; the tests check agreement over twenty independent replications."
    )


page.render()
