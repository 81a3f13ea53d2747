import math

import plotly.graph_objects as go
import streamlit as st

from models.training import checkpoint_distribution as model
from ui.charts import INK, PALETTE, layout_dict, legend_line, sweep, sweep_values
from ui.figures import figure, vline
from ui.question_page import QuestionPage
from ui.sim_panel import cached_simulation, seed_input

page = QuestionPage("checkpoint-distribution")

SERIES_NAMES = {
    "naive_pull_s": "Naive pull from the source",
    "tree_s": "Tree, whole copies",
    "chunked_tree_s": "Tree, chunked",
    "pipeline_s": "Chunked relay chain",
    "swarm_estimate_s": "Swarm (estimate)",
    "lower_bound_s": "Lower bound (size / link)",
}


@page.chart("times_vs_hosts")
def times_vs_hosts(ctx):
    xs = sweep_values(ctx.params, "hosts", 60)
    ys = sweep(ctx.slug, ctx.params, "hosts", list(model.CHART_SERIES), xs)
    traces = []  # plain dicts, not validated (ui/figures.py)
    for i, key in enumerate(model.CHART_SERIES):
        bound = key == "lower_bound_s"
        traces.append(dict(
            type="scatter", x=xs, y=ys[key], name=SERIES_NAMES.get(key, key), mode="lines",
            line=dict(color=INK if bound else PALETTE[i % len(PALETTE)], width=2.5,
                      dash="dash" if bound else "solid", shape="hv" if key in ("tree_s", "chunked_tree_s") else "linear"),
        ))
    layout = layout_dict("Time to reach every host (log-log)", "Hosts", "Seconds", log_x=True, log_y=True)
    layout["height"] = 420
    layout["shapes"] = [vline(ctx.params.hosts, color="#64748b", dash="dot", width=1)]
    # On a log axis an annotation's x is given in log10 units (shapes take data units).
    layout["annotations"] = [dict(
        x=math.log10(ctx.params.hosts), y=1, yref="paper", text=f"{ctx.params.hosts} hosts", showarrow=False,
        xanchor="left", xshift=3, yanchor="top", font=dict(size=11))]
    return figure(traces, layout)


def _run(params_json: str, seed: int):
    return model.simulate(model.Params.model_validate_json(params_json), seed=seed)


def _swarm_figure(result, step_s: float, bound_s: float, bound_label: str) -> go.Figure:
    """Hosts done and uplinks busy at each step of the swarm, against the lower bound; plain dicts, not
    validated (ui/figures.py)."""
    t = [(i + 1) * step_s for i in range(len(result.completed_per_step))]
    bound = dict(color=INK, dash="dash")
    traces = [
        dict(type="scatter", x=t, y=result.completed_per_step, name="Hosts holding every chunk",
             line=dict(color=PALETTE[0], width=2.5)),
        dict(type="scatter", x=t, y=[u * 100 for u in result.uplink_utilization], yaxis="y2",
             name="Uplinks busy (%)", line=dict(color=PALETTE[2], width=1.5), opacity=0.7),
        # In the legend: beside the line, the label sat on the busy-uplinks line along the top.
        legend_line(f"lower bound {bound_label}", **bound),
    ]
    layout = layout_dict("Hosts finished over time", "Seconds since the rollout started", "Hosts")
    layout["yaxis2"] = dict(title=dict(text="Uplinks busy (%)"), overlaying="y", side="right", range=[0, 105],
                            tickvals=[0, 25, 50, 75, 100], showgrid=False)
    layout["shapes"] = [vline(bound_s, **bound)]
    return figure(traces, layout)


@page.sim("swarm")
def swarm_panel(ctx):
    p = ctx.params
    d = ctx.derivation
    st.markdown("##### Live: a swarm exchanging chunks rarest-first")
    seed = seed_input(ctx.slug)
    result = cached_simulation(ctx.slug, _run, p, seed, "Simulating the swarm…")
    step_s = model.sim_step_s(p)
    n_chunks = model.sim_chunks(p)
    finish_s = result.finish_steps * step_s
    bound_s = d.value("lower_bound_s")
    cols = st.columns(4)
    cols[0].metric("Simulated finish", f"{finish_s:,.1f} s" if result.finished else "did not finish", border=True)
    cols[1].metric("Lower bound", d["lower_bound_s"].display(hint=False), border=True)
    cols[2].metric("Overhead", f"{(finish_s / bound_s - 1) * 100:,.1f}%" if result.finished else "-", border=True)
    cols[3].metric("Peers lost / slow", f"{result.failed_peers} / {result.slow_peers}", border=True)
    st.plotly_chart(_swarm_figure(result, step_s, bound_s, d["lower_bound_s"].display(hint=False)),
                    key=f"{ctx.slug}.sim.swarm.chart")
    hosts_note = (f" The simulation runs {result.hosts} of the {p.hosts} hosts, which only shortens its fill."
                  if result.hosts < p.hosts else "")
    st.caption(
        f"{result.hosts} hosts, {n_chunks} chunks of {p.checkpoint_gb * 1000 / n_chunks:,.0f} MB "
        f"(the simulation coarsens to at most 200 chunks, which only raises its overhead), "
        f"{result.transfers:,} chunk transfers, {result.source_uploads:,} of them from the source.{hosts_note} "
        "Change the seed to see another run; slow and failed peers come from the scenario's knobs."
    )


page.render()
