import math

import numpy as np
import streamlit as st

from models.serving import batched_inference_api as model
from models.units import format_quantity
from ui.charts import layout_dict, sweep, sweep_figure, sweep_values
from ui.diagram import Arrow, Box, box_diagram
from ui.figures import figure, vline
from ui.question_page import QuestionPage
from ui.sim_panel import cached_simulation, seed_input

page = QuestionPage("batched-inference-api")


@page.diagram("request_path")
def request_path(ctx):
    d = ctx.derivation
    show = lambda key: d[key].display(hint=False)  # noqa: E731
    boxes = [
        Box("clients", "Clients", "retry with an idempotency key", 0, 0, "muted"),
        Box("gw", "Gateway", "auth · tier · rate limits · input checks", 1, 0),
        Box("queue", "Admission queue", "one lane per tier; depth drives shedding", 2, 0, "accent"),
        Box("batcher", "Dispatcher", f"flush at {ctx.params.max_batch_inputs} inputs · or after {show('flush_timeout_s')}", 3, 0),
        Box("gpus", "GPU workers", f"{show('gpus_recommended')} · one {show('call_time_s')} call each", 3, 1),
        Box("demux", "Demultiplexer", "split outputs · output checks · store by key", 2, 1),
    ]
    arrows = [
        Arrow("clients", "gw", f"{d['per_dispatcher_rps'].display() if ctx.params.dispatchers == 1 else ''}"),
        Arrow("gw", "queue", "admitted"),
        Arrow("queue", "batcher", ""),
        Arrow("batcher", "gpus", f"batches of {show('expected_batch_at_flush')}"),
        Arrow("gpus", "demux", ""),
        Arrow("demux", "clients", "replies"),
    ]
    return box_diagram(boxes, arrows, title="The request path, with this scenario's numbers")


@page.chart("gpus_vs_fill")
def gpus_vs_fill(ctx):
    return sweep_figure(
        ctx.slug, ctx.params, "batch_fill_fraction",
        {"gpus_at_fill": "GPUs at 100% busy", "gpus_floor": "Floor (full batches)"},
        title="GPUs needed against average batch fill", y_title="GPUs", x_scale=100,
        line_shape="hv", n=81, lo=0.2,
    )


@page.chart("gpus_vs_timeout")
def gpus_vs_timeout(ctx):
    return sweep_figure(
        ctx.slug, ctx.params, "flush_timeout_ms",
        {"gpus_with_timeout_flush": "GPUs at 100% busy", "gpus_recommended": "GPUs with headroom"},
        title="GPUs needed against the flush timeout (log scale)", y_title="GPUs", line_shape="hv", n=120,
        log_y=True,
    )


@page.chart("latency_vs_timeout")
def latency_vs_timeout(ctx):
    xs = sweep_values(ctx.params, "flush_timeout_ms", 120)
    # A quiet-hours comparison: the same fleet at 1/40 of the scenario's traffic.
    quiet_rps = ctx.params.arrival_rps / 40
    traces = []
    for rate, name, color in ((ctx.params.arrival_rps, "scenario traffic", "#2563eb"),
                              (quiet_rps, "quiet hours (1/40)", "#dc2626")):
        p = ctx.params.model_copy(update={"arrival_rps": rate})
        ys = sweep(ctx.slug, p, "flush_timeout_ms", ["worst_latency_s"], xs)["worst_latency_s"]
        traces.append(dict(type="scatter", x=xs, y=[y * 1000 for y in ys], name=f"{name}: {rate:,.0f} req/s",
                           line=dict(color=color, width=2.5)))
    # Plain dicts, not validated (ui/figures.py): the JSON plotly's add_trace/add_vline wrote.
    layout = layout_dict("Worst latency (batching wait + call) against the flush timeout",
                         "Flush timeout (ms)", "ms", log_x=True)
    layout["shapes"] = [vline(ctx.params.flush_timeout_ms, color="#64748b", dash="dot", width=1)]
    return figure(traces, layout)


# --- the simulation: the M/D/c hand-off queue through the queue engine ---------------------------------

CCDF_POINTS = 61


def ccdf_grid(d) -> tuple[float, ...]:
    """Waits from 0 to past the exact p99 (at least one call), where the chart compares the tails."""
    tail = max(d.value("queue_wait_p99_s"), d.value("queue_wait_p95_s"))
    horizon = 1.5 * tail if math.isfinite(tail) and tail > 0 else d.value("call_time_s")
    return tuple(np.linspace(0.0, max(horizon, d.value("call_time_s")), CCDF_POINTS).tolist())


def _run_queue(params_json: str, seed: int):
    p = model.Params.model_validate_json(params_json)
    grid = ccdf_grid(model.solve(p))
    return grid, model.simulate_gpu_queue(p, seed, model.PANEL_BATCHES, model.PANEL_REPLICATIONS, ccdf_t_s=grid)


def _t(x: float) -> str:
    return format_quantity(x, "s", hint=False)


def _ccdf_figure(grid, runs, exact, d):
    ms = [t * 1000 for t in grid]
    # A log axis has no 0: a share no batch reached is left out of the line, not drawn at the bottom.
    sim = np.mean([r.wait_ccdf for r in runs], axis=0)
    traces = [
        dict(type="scatter", x=ms, y=[y if y > 0 else None for y in sim.tolist()], name="simulated (mean of the runs)",
             line=dict(color="#2563eb", width=2.5)),
        dict(type="scatter", x=ms, y=[y if y > 1e-6 else None for y in exact], name="M/D/c, the page's figures",
             line=dict(color="#64748b", width=2, dash="dash")),
    ]
    layout = layout_dict("Batches waiting longer than t for a GPU", "Wait t (ms)", "P(wait > t), log scale",
                         log_y=True)
    shapes = []
    for key, color in (("queue_wait_p95_s", "#94a3b8"), ("queue_wait_p99_s", "#dc2626")):
        if math.isfinite(d.value(key)):
            shapes.append(vline(d.value(key) * 1000, color=color, dash="dot", width=1.5))
    layout["shapes"] = shapes
    return figure(traces, layout)


@page.sim("gpu_queue")
def gpu_queue_panel(ctx):
    p, d = ctx.params, ctx.derivation
    st.markdown("##### Simulated: sealed batches queueing for the recommended GPUs")
    seed = seed_input(ctx.slug)
    grid, runs = cached_simulation(ctx.slug, _run_queue, p, seed, "Simulating the GPU queue…")

    def card(col, title, attr, key, scale=1.0, show=_t):
        values = [getattr(r, attr) for r in runs]
        sim = sum(values) / len(values)
        col.metric(f"{title} (sim · M/D/c)", f"{show(sim * scale)} · {show(d.value(key) * scale)}", border=True,
                   help=f"Simulated: the mean of {len(runs)} runs, from {show(min(values) * scale)} to "
                        f"{show(max(values) * scale)}. M/D/c: {d[key].label}, {d[key].display()}.")

    pct = lambda x: format_quantity(x, "%")  # noqa: E731
    # Two a row: each card holds two figures, and four in a row wrap them onto two lines.
    tails, rest = st.columns(2), st.columns(2)
    card(tails[0], "p95 wait", "wait_p95_s", "queue_wait_p95_s")
    card(tails[1], "p99 wait", "wait_p99_s", "queue_wait_p99_s")
    card(rest[0], "Batches that wait", "wait_share", "queue_wait_probability", scale=100, show=pct)
    card(rest[1], "Mean wait", "mean_wait_s", "queue_wait_mean_s")
    st.plotly_chart(_ccdf_figure(grid, runs, model.exact_wait_ccdf(d, grid), d), key=f"{ctx.slug}.sim.gpu_queue")
    if not math.isfinite(d.value("queue_wait_p99_s")):
        st.caption("At this load the queue never settles: a run's waits grow for as long as it lasts, so the "
                   "simulated figures measure the run's length, not a percentile.")
    st.caption(
        f"{len(runs)} runs of {model.PANEL_BATCHES:,} batches each, arriving as a Poisson stream of "
        f"{d['batch_rate_per_s'].display()} on {d['gpus_recommended'].display()}, every call exactly "
        f"{d['call_time_s'].display()}, first come first served; the first 5% of each run, which starts "
        f"empty, is dropped. Dotted lines: the page's p95 and p99. Change the seed to see other runs."
    )


page.render()
