import math

from ui.charts import INK, PALETTE, layout_dict, legend_line, sweep, sweep_figure, sweep_values
from ui.figures import figure, hline, vline
from ui.question_page import QuestionPage

page = QuestionPage("disaggregated-prefill-decode")


@page.chart("ai_vs_ridge")
def ai_vs_ridge(ctx):
    d = ctx.derivation
    names = ["Prefill (one prompt)", "Decode, batch 1", "Decode, operating batch", "Decode, any batch (ceiling)"]
    keys = ["prefill_arithmetic_intensity", "decode_ai_batch_1", "decode_arithmetic_intensity", "decode_ai_ceiling"]
    values = [float(d.value(k)) for k in keys]
    ridge = float(d.value("ridge_flops_per_byte"))
    colors = [PALETTE[1] if v > ridge else PALETTE[0] for v in values]
    ridge_line = dict(color=INK, dash="dash", width=1.5)
    # Plain dicts, not validated (ui/figures.py): the JSON plotly's add_trace/add_hline wrote.
    traces = [
        dict(type="bar", x=names, y=values, marker=dict(color=colors), text=[f"{v:,.0f}" for v in values],
             textposition="outside", hovertemplate="%{x}: %{y:,.0f} FLOP/B<extra></extra>", showlegend=False),
        # In the legend: on the plot the label sat on the bars' own value labels.
        legend_line(f"ridge {ridge:,.0f} FLOP/B ({ctx.params.gpu}, {ctx.params.compute_precision} compute)",
                    **ridge_line),
    ]
    layout = layout_dict("Arithmetic intensity against the ridge (log scale): red is compute-bound", "",
                         "FLOP per byte", log_y=True)
    top = max(values + [ridge])
    layout["yaxis"]["range"] = [math.log10(min(values + [ridge]) / 3), math.log10(top * 4)]
    layout.update(hovermode="closest", shapes=[hline(ridge, **ridge_line)])
    return figure(traces, layout)


page.sweep("pool_ratio_vs_prompt", "prompt_tokens",
    {"prefill_to_decode_node_ratio": "Prefill nodes per decode node"},
    title="Pool ratio against prompt length (output length fixed)", y_title="prefill : decode",
    n=60, lo=200, hi=32_000, log_y=True)

page.sweep("capacity_vs_interference", "interference",
    {
        "disaggregated_capacity_per_node": "Disaggregated",
        "monolith_capacity_per_node": "Monolith (turns + interference)",
        "roofline_monolith_capacity_per_node": "Monolith, perfect-overlap roofline",
    },
    title="Requests/s per node against the interference assumption", y_title="requests/s per node",
    x_scale=100, n=51)


@page.chart("crossover_vs_interference")
def crossover_vs_interference(ctx):
    p = ctx.params
    xs = sweep_values(p, "interference", 60)
    ys = sweep(ctx.slug, p, "interference", ["crossover_load"], xs)["crossover_load"]
    traces = [dict(type="scatter", x=[x * 100 for x in xs], y=[y if math.isfinite(y) else None for y in ys],
                   mode="lines", name="crossover load", line=dict(color=PALETTE[0], width=2.5))]
    cur = float(ctx.derivation.value("crossover_load"))
    if math.isfinite(cur):
        traces.append(dict(type="scatter", x=[p.interference * 100], y=[cur], mode="markers", showlegend=False,
                           marker=dict(color=PALETTE[0], size=11, line=dict(color="white", width=2))))
    load_line = dict(color=PALETTE[1], dash="dot", width=1.5)
    traces.append(legend_line(f"scenario load {p.request_rate:,.0f} req/s: the split pays where the curve is below it",
                              **load_line))
    layout = layout_dict("Where the crossover load moves with the interference assumption (log scale)",
                         "Prefill interference on decode (%)", "requests/s", log_y=True)
    layout["shapes"] = [hline(p.request_rate, **load_line),
                        vline(p.interference * 100, color="#64748b", dash="dot", width=1)]
    return figure(traces, layout)


@page.chart("nodes_vs_load")
def nodes_vs_load(ctx):
    shapes, notes = [hline(0, color="#94a3b8", width=1)], []
    cross = float(ctx.derivation.value("crossover_load"))
    if math.isfinite(cross) and cross <= 10_000:
        shapes.append(vline(cross, color=INK, dash="dash", width=1.5))
        notes.append(dict(x=math.log10(cross), y=1, yref="paper", xanchor="right", yanchor="top", showarrow=False,
                          xshift=-4, text=f"crossover {cross:,.0f} req/s"))
    return sweep_figure(
        ctx.slug, ctx.params, "request_rate",
        {"nodes_saved": "monolith nodes − split nodes (above zero: the split is smaller)"},
        title="Nodes the split saves against load; the dashed line is the crossover", y_title="nodes saved",
        line_shape="hv", n=200, lo=1, hi=max(2000.0, ctx.params.request_rate), shapes=shapes, annotations=notes,
    )


page.render()
