import math
from functools import partial

from models.training import model_artifact_distribution as model
from ui.charts import INK, PALETTE, layout_dict, sweep, sweep_values
from ui.figures import figure, vline
from ui.question_page import QuestionPage
from ui.swarm_panel import SwarmWords, render_swarm_panel, swarm_figure

page = QuestionPage("model-artifact-distribution")

SERIES_NAMES = {
    "naive_registry_rollout_s": "Registry rollout (Docker images)",
    "docker_time_per_node_s": "Docker pull, one node alone",
    "chunked_relay_rollout_s": "Chunked relay chain",
    "swarm_estimate_s": "Swarm (estimate)",
    "per_node_lower_bound_s": "Link bound per node",
}


page.sweep("pull_vs_registry_rate", "registry_stream_gbps",
    {"docker_time_per_node_s": "Docker pull, one node", "docker_download_s": "Download alone",
     "unpack_s": "Unpack alone (one core)", "per_node_lower_bound_s": "Link bound"},
    title="One node's Docker pull against the registry rate (log-log)", y_title="Minutes",
    y_unit="min", from_unit="s", n=80, log_y=True)


@page.chart("rollout_vs_nodes")
def rollout_vs_nodes(ctx):
    xs = sweep_values(ctx.params, "nodes", 60)
    ys = sweep(ctx.slug, ctx.params, "nodes", list(model.CHART_SERIES), xs)
    traces = []  # plain dicts, not validated (ui/figures.py)
    for i, key in enumerate(model.CHART_SERIES):
        bound = key == "per_node_lower_bound_s"
        traces.append(dict(
            type="scatter", x=xs, y=ys[key], name=SERIES_NAMES[key], mode="lines",
            line=dict(color=INK if bound else PALETTE[i % len(PALETTE)], width=2.5,
                      dash="dash" if bound else "solid"),
        ))
    layout = layout_dict("Time until the last node holds the new version (log-log)", "Nodes", "Seconds",
                         log_x=True, log_y=True)
    layout["height"] = 420
    layout["shapes"] = [vline(ctx.params.nodes, color="#64748b", dash="dot", width=1)]
    # On a log axis an annotation's x is given in log10 units (shapes take data units).
    layout["annotations"] = [dict(
        x=math.log10(ctx.params.nodes), y=1, yref="paper", text=f"{ctx.params.nodes:,} nodes", showarrow=False,
        xanchor="left", xshift=3, yanchor="top", font=dict(size=11))]
    return figure(traces, layout)


SWARM = SwarmWords(headline="##### Live: the rollout as a swarm exchanging chunks rarest-first", peers="Nodes",
                   bound_key="per_node_lower_bound_s", bound_name="Link bound")
# The simulation and figure the panel draws, by the names tests/app/test_page_figures_plain.py reads.
_swarm_figure = partial(swarm_figure, words=SWARM)


def _swarm_caption(result, n_chunks: int, p, d) -> str:
    nodes_note = (f" The simulation runs {result.hosts:,} of the {p.nodes:,} nodes, which only shortens its fill."
                  if result.hosts < p.nodes else "")
    return (
        f"{result.hosts:,} nodes, {n_chunks} chunks of {d.value('artifact_bytes') / 1e6 / n_chunks:,.0f} MB "
        f"(the simulation coarsens to at most 200 chunks, which only raises its overhead), "
        f"{result.transfers:,} chunk transfers, {result.source_uploads:,} of them from the origin; "
        f"{result.failed_peers} nodes died and {result.slow_peers} ran slow.{nodes_note} "
        "Change the seed to see another run; slow and failed nodes come from the scenario's knobs."
    )


@page.sim("swarm")
def swarm_panel(ctx):
    render_swarm_panel(ctx, model, SWARM,
                       fourth_card=lambda r: ("Origin share of uploads", f"{r.source_share * 100:,.1f}%"),
                       caption=lambda r, n: _swarm_caption(r, n, ctx.params, ctx.derivation))


page.render()
