import math

from ui.charts import INK, PALETTE, layout_dict, sweep, sweep_figure, sweep_values
from ui.diagram import Arrow, Box, box_diagram
from ui.figures import figure, vline
from ui.question_page import QuestionPage

page = QuestionPage("moe-1t-serving")


def _batch_hi(ctx) -> int:
    """Sweep the batch only as far as the KV fits (and at least to the scenario's batch)."""
    return max(2, int(ctx.derivation.value("max_batch_per_gpu")), ctx.params.batch_per_gpu)


def _compute_bound_mark(ctx) -> tuple[list[dict], list[dict]]:
    """A dashed line where the hottest GPU's FLOP overtake its bytes, if that happens inside the sweep:
    (shapes, annotations), as dicts (ui/figures.py)."""
    b = float(ctx.derivation.value("compute_bound_batch_per_gpu"))
    if not (math.isfinite(b) and 1 <= b <= _batch_hi(ctx)):
        return [], []
    # On a log axis an annotation's x is the exponent, not the value.
    return ([vline(b, color=PALETTE[1], dash="dash", width=1.5)],
            [dict(x=math.log10(b), y=1, yref="paper", xanchor="right", xshift=-3, yanchor="top",
                  showarrow=False, text=f"compute-bound from {b:,.0f}", font=dict(color=PALETTE[1]))])


@page.diagram("rack")
def rack(ctx):
    d, p = ctx.derivation, ctx.params
    show = lambda key, unit=None: d[key].display(unit, hint=False)  # noqa: E731
    boxes = [
        Box("sched", "Scheduler", f"{show('global_batch')} decoding · "
            f"{p.batch_per_gpu} per GPU, KV stays put", 0, 0, "muted"),
        Box("attn", "Attention, data-parallel", f"always-on {show('always_on_bytes_per_gpu')} on every GPU · "
            f"KV {show('kv_bytes_per_gpu')} of {show('kv_room_bytes_per_gpu')}", 1, 0),
        Box("experts", "Experts, expert-parallel", f"{show('slots_per_gpu')} per GPU per layer · "
            f"{show('expert_bytes_per_gpu')} · {show('redundant_slots')} spare copies", 2, 0),
        Box("hot", "Hottest GPU", f"{p.imbalance:g} × the mean tokens · sets the step", 2, 1, "danger"),
        Box("step", f"Decode step {show('decode_step_s')}", f"weights {show('weight_read_s')} · "
            f"KV {show('kv_read_s')} · FLOP {show('compute_s')} · all-to-all {show('all_to_all_s')} · "
            f"fixed {show('step_overhead_s')}", 1, 1,
            "accent"),
        Box("out", "Users", f"{show('tokens_per_s_per_user')} each · {show('tokens_per_s')} in all", 0, 1, "muted"),
    ]
    arrows = [
        Arrow("sched", "attn", ""),
        Arrow("attn", "experts", f"dispatch ×{show('moe_layers')}"),
        Arrow("experts", "hot", "", dashed=True),
        Arrow("hot", "step", "combine"),
        Arrow("step", "out", ""),
    ]
    title = (f"GB200 NVL72: {p.tp_degree} GPUs, one NVLink domain" if p.gpu == "GB200 (NVL72)"
             else f"{p.tp_degree} × {p.gpu}")
    return box_diagram(boxes, arrows, title=f"{title}: the memory plan and the step",
                       height=420)


@page.chart("step_breakdown_vs_batch")
def step_breakdown_vs_batch(ctx):
    p = ctx.params
    xs = sweep_values(p, "batch_per_gpu", 60, lo=1, hi=_batch_hi(ctx))
    keys = ["weight_read_s", "kv_read_s", "compute_s", "all_to_all_s", "decode_step_s"]
    ys = sweep(ctx.slug, p, "batch_per_gpu", keys, xs)
    ms = {k: [v * 1000 for v in ys[k]] for k in keys}
    cur = float(ctx.derivation.value("decode_step_s")) * 1000
    # Plain dicts, not validated (ui/figures.py): the JSON plotly's add_trace/add_vline wrote.
    traces = [
        dict(type="scatter", x=xs, y=ms["weight_read_s"], name="weight read", stackgroup="bytes",
             line=dict(color=PALETTE[0], width=1)),
        dict(type="scatter", x=xs, y=ms["kv_read_s"], name="KV read (stacked on weights)", stackgroup="bytes",
             line=dict(color=PALETTE[5], width=1)),
        dict(type="scatter", x=xs, y=ms["compute_s"], name="FLOP, hottest GPU", mode="lines",
             line=dict(color=PALETTE[1], width=2.5, dash="dash")),
        dict(type="scatter", x=xs, y=ms["all_to_all_s"], name="two all-to-alls × MoE layers", mode="lines",
             line=dict(color=PALETTE[3], width=2.5, dash="dot")),
        dict(type="scatter", x=xs, y=ms["decode_step_s"], name="decode step", mode="lines",
             line=dict(color=INK, width=3)),
        dict(type="scatter", x=[p.batch_per_gpu], y=[cur], mode="markers", showlegend=False,
             marker=dict(color=INK, size=11, line=dict(color="white", width=2))),
    ]
    layout = layout_dict("Decode step and its parts against the batch (up to what the KV allows)",
                         "Sequences per GPU (log scale)", "ms", log_x=True)
    shapes, notes = _compute_bound_mark(ctx)
    layout["shapes"] = [vline(p.batch_per_gpu, color="#64748b", dash="dot", width=1), *shapes]
    if notes:
        layout["annotations"] = notes
    return figure(traces, layout)


@page.chart("tokens_per_user_vs_batch")
def tokens_per_user_vs_batch(ctx):
    return sweep_figure(
        ctx.slug, ctx.params, "batch_per_gpu",
        {"tokens_per_s_per_user": f"with imbalance {ctx.params.imbalance:g}×",
         "tokens_per_s_per_user_balanced": "balanced routing"},
        title="Tokens/s per user against the batch", y_title="tokens/s per user", n=60, lo=1, hi=_batch_hi(ctx),
    )


@page.chart("rack_tokens_vs_batch")
def rack_tokens_vs_batch(ctx):
    return sweep_figure(
        ctx.slug, ctx.params, "batch_per_gpu",
        {"tokens_per_s": "all GPUs"},
        title="Tokens/s for the whole group against the batch", y_title="tokens/s", n=60, lo=1, hi=_batch_hi(ctx),
    )


@page.chart("imbalance_loss_vs_batch")
def imbalance_loss_vs_batch(ctx):
    fig = sweep_figure(
        ctx.slug, ctx.params, "batch_per_gpu",
        {"imbalance_throughput_loss": "throughput lost to the hottest GPU"},
        title="What the router's imbalance costs, by batch", y_title="% of throughput", n=60, lo=1,
        hi=_batch_hi(ctx),
    )
    shapes, notes = _compute_bound_mark(ctx)
    if shapes:  # as dicts: add_vline and add_annotation validate the figure's shapes and notes
        fig.layout.shapes = (*fig.layout.shapes, *shapes)
        fig.layout.annotations = (*fig.layout.annotations, *notes)
    return fig


page.render()
