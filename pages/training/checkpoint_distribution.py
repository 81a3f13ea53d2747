import math
from functools import partial

from models.training import checkpoint_distribution as model
from ui.charts import INK, PALETTE, layout_dict, sweep, sweep_values
from ui.figures import figure, vline
from ui.question_page import QuestionPage
from ui.swarm_panel import SwarmWords, render_swarm_panel, swarm_figure

page = QuestionPage("checkpoint-distribution")

SERIES_NAMES = {
    "naive_pull_s": "Naive pull from the source",
    "tree_s": "Tree, whole copies",
    "binomial_s": "Binomial tree, whole copies",
    "pfs_s": "Parallel filesystem read",
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


SWARM = SwarmWords(headline="##### Live: a swarm exchanging chunks rarest-first", peers="Hosts",
                   bound_key="lower_bound_s", bound_name="Lower bound")
# The simulation and figure the panel draws, by the names tests/app/test_page_figures_plain.py reads.
_swarm_figure = partial(swarm_figure, words=SWARM)


def _swarm_caption(result, n_chunks: int, p) -> str:
    hosts_note = (f" The simulation runs {result.hosts} of the {p.hosts} hosts, which only shortens its fill."
                  if result.hosts < p.hosts else "")
    return (
        f"{result.hosts} hosts, {n_chunks} chunks of {p.checkpoint_gb * 1000 / n_chunks:,.0f} MB "
        f"(the simulation coarsens to at most 200 chunks, which only raises its overhead), "
        f"{result.transfers:,} chunk transfers, {result.source_uploads:,} of them from the source.{hosts_note} "
        "Change the seed to see another run; slow and failed peers come from the scenario's knobs."
    )


@page.sim("swarm")
def swarm_panel(ctx):
    render_swarm_panel(ctx, model, SWARM,
                       fourth_card=lambda r: ("Peers lost / slow", f"{r.failed_peers} / {r.slow_peers}"),
                       caption=lambda r, n: _swarm_caption(r, n, ctx.params))


page.render()
