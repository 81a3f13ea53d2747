import math
from functools import partial

from models.training import model_artifact_distribution as model
from ui.charts import INK, PALETTE, layout_dict, sweep, sweep_figure, sweep_values
from ui.diagram import Arrow, Box, box_diagram
from ui.figures import figure, vline
from ui.question_page import QuestionPage
from ui.swarm_panel import SwarmWords, render_swarm_panel, swarm_figure, swarm_simulation

page = QuestionPage("model-artifact-distribution")

SERIES_NAMES = {
    "naive_registry_rollout_s": "Registry rollout (Docker images)",
    "docker_time_per_node_s": "Docker pull, one node alone",
    "chunked_relay_rollout_s": "Chunked relay chain",
    "swarm_estimate_s": "Swarm (estimate)",
    "per_node_lower_bound_s": "Link bound per node",
}


@page.diagram("distribution")
def distribution(ctx):
    d = ctx.derivation
    show = lambda key: d[key].display(hint=False)  # noqa: E731
    mins = lambda key: d[key].display("min")  # noqa: E731
    boxes = [
        Box("train", "Training export", f"{show('artifact_bytes')} of weights", 0, 0, "muted"),
        Box("registry", "Registry (image layers)", f"serves {show('registry_egress_TB')} · {mins('naive_registry_rollout_s')} to the last node", 1, 0, "danger"),
        Box("docker", "Node: docker pull", f"download {mins('docker_download_s')} · unpack on one core {mins('unpack_s')}", 2, 0, "danger"),
        Box("chunks", "Chunk store + manifest", f"{show('chunk_count')} · manifest {show('manifest_bytes')}", 0, 1),
        Box("eval", "Eval gate", f"passes a manifest digest · canary {show('canary_nodes')}", 0, 2, "accent"),
        Box("tracker", "Tracker", "membership, manifest, peer lists · no data", 1, 2, "muted"),
        Box("swarm", "Swarm of nodes", f"{ctx.params.nodes:,} nodes · rarest first · {show('swarm_estimate_s')}", 1, 1),
        Box("stage", "Node: verify + stage", f"SHA-256 per chunk · {show('verify_s')} on {ctx.params.hash_cores} cores", 2, 1),
        Box("flip", "Load + flip pointer", f"{show('load_s')} load · {show('cutover_waves')} · {mins('cutover_s')}", 2, 2, "accent"),
    ]
    arrows = [
        Arrow("train", "registry", "bake a gzip layer"),
        Arrow("registry", "docker", "one stream per layer"),
        Arrow("train", "chunks", "hash + chunk"),
        Arrow("chunks", "eval", "digest"),
        Arrow("chunks", "swarm", "≈ one copy"),
        Arrow("tracker", "swarm", "", dashed=True),
        Arrow("swarm", "stage", "chunks"),
        Arrow("stage", "flip", "manifest verified"),
        Arrow("eval", "tracker", "promote", dashed=True),
    ]
    return box_diagram(boxes, arrows, title="Two ways to ship the weights, with this scenario's numbers")


@page.chart("pull_vs_registry_rate")
def pull_vs_registry_rate(ctx):
    return sweep_figure(
        ctx.slug, ctx.params, "registry_stream_gbps",
        {"docker_time_per_node_s": "Docker pull, one node", "docker_download_s": "Download alone",
         "unpack_s": "Unpack alone (one core)", "per_node_lower_bound_s": "Link bound"},
        title="One node's Docker pull against the registry rate (log-log)", y_title="Minutes",
        y_unit="min", from_unit="s", n=80, log_y=True,
    )


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
_run = swarm_simulation(model)
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
    render_swarm_panel(ctx, model, SWARM, run=_run,
                       fourth_card=lambda r: ("Origin share of uploads", f"{r.source_share * 100:,.1f}%"),
                       caption=lambda r, n: _swarm_caption(r, n, ctx.params, ctx.derivation))


page.render()
