from models.units import format_number
from ui.charts import INK, PALETTE, layout_dict, sweep, sweep_figure, sweep_values
from ui.diagram import Arrow, Box, box_diagram
from ui.figures import figure, vline
from ui.question_page import QuestionPage

page = QuestionPage("multi-lora")


@page.diagram("fleet")
def fleet(ctx):
    d = ctx.derivation
    p = ctx.params
    show = lambda key: d[key].display(hint=False)  # noqa: E731
    boxes = [
        Box("clients", "Requests", f"model = one of {p.variants} variants", 0, 0, "muted"),
        Box("router", "Router", f"adapter affinity · each adapter on {p.replicas_per_adapter} replicas", 1, 0),
        Box("pool", "Shared replicas", f"{show('multi_lora_replicas')} × {p.tp_degree} GPUs · "
            f"base once, {show('multi_lora_replica_weight_bytes')} · slots for {show('adapter_slots_per_replica')}",
            2, 0, "accent"),
        Box("dram", "Host DRAM cache", f"every adapter · load in {show('adapter_load_from_dram_s')}", 2, 1),
        Box("registry", "Adapter registry", f"{show('adapter_bytes')} each · keyed to the base hash", 3, 1, "muted"),
        Box("dedicated", "Dedicated replica", f"only above {show('dedicate_threshold_tokens_per_s')} · "
            "or a full fine-tune", 1, 1, "danger"),
    ]
    arrows = [
        Arrow("clients", "router", f"{format_number(p.total_tokens_per_s)} tokens/s"),
        Arrow("router", "pool", f"{show('adapters_routed_per_replica')} per replica"),
        Arrow("registry", "dram", "prefetch on register"),
        Arrow("dram", "pool", "on a miss"),
        Arrow("router", "dedicated", "", dashed=True),
    ]
    return box_diagram(boxes, arrows, title="One base, many adapters: this scenario's numbers")


@page.chart("adapter_bytes")
def adapter_bytes(ctx):
    xs = sweep_values(ctx.params, "lora_rank", 40)
    # Plain dicts, not validated (ui/figures.py): the JSON plotly's add_trace/add_vline wrote.
    traces = []
    for i, targets in enumerate(("q,v", "q,k,v,o", "all seven")):
        p = ctx.params.model_copy(update={"targets": targets})
        ys = sweep(ctx.slug, p, "lora_rank", ["adapter_bytes"], xs)["adapter_bytes"]
        width = 3.5 if targets == ctx.params.targets else 2
        traces.append(dict(type="scatter", x=xs, y=[y / 1e6 for y in ys], name=f"LoRA on {targets}", mode="lines",
                           line=dict(color=PALETTE[i], width=width)))
    cur = ctx.derivation.value("adapter_bytes") / 1e6
    traces.append(dict(type="scatter", x=[ctx.params.lora_rank], y=[cur], mode="markers", showlegend=False,
                       marker=dict(color=INK, size=11, line=dict(color="white", width=2)),
                       hovertemplate="this scenario: %{y:,.4g} MB<extra></extra>"))
    heavy = ctx.derivation.value("heavy_adapter_bytes") / 1e6
    traces.append(dict(type="scatter", x=[ctx.params.heavy_rank], y=[heavy], mode="markers", showlegend=False,
                       marker=dict(color=PALETTE[2], size=11, symbol="diamond", line=dict(color="white", width=2)),
                       hovertemplate="heavy comparison adapter: %{y:,.4g} MB<extra></extra>"))
    layout = layout_dict("One adapter's size against rank, by the projections it targets (log-log)",
                         "LoRA rank", "MB per adapter (bf16)", log_x=True, log_y=True)
    layout["shapes"] = [vline(ctx.params.lora_rank, color="#64748b", dash="dot", width=1)]
    return figure(traces, layout)


@page.chart("gpus_vs_traffic")
def gpus_vs_traffic(ctx):
    return sweep_figure(
        ctx.slug, ctx.params, "total_tokens_per_s",
        {"dedicated_gpus": "A replica per variant", "multi_lora_gpus": "Shared multi-LoRA pool"},
        title="GPUs against total demand: the idle gap closes as traffic grows (log-log)", y_title="GPUs",
        line_shape="hv", n=120, log_y=True,
    )


@page.chart("overhead_vs_variants")
def overhead_vs_variants(ctx):
    return sweep_figure(
        ctx.slug, ctx.params, "variants",
        {
            "mixed_batch_overhead_fraction": "Your adapters, random routing",
            "mixed_batch_overhead_routed_fraction": "Your adapters, affinity routing",
            "heavy_mixed_batch_overhead_fraction": "Heavy adapters, random routing",
            "heavy_mixed_batch_overhead_routed_fraction": "Heavy adapters, affinity routing",
        },
        title="Throughput lost to mixed batches against the number of variants", y_title="% of throughput",
        x_title="Fine-tuned variants", n=80,
    )


page.render()
