from ui.charts import sweep_figure
from ui.diagram import Arrow, Box, box_diagram
from ui.question_page import QuestionPage

page = QuestionPage("checkpoint-storage")


@page.diagram("write_path")
def write_path(ctx):
    d = ctx.derivation
    show = lambda key: d[key].display(hint=False)  # noqa: E731
    boxes = [
        Box("gpus", "Training job", f"{show('per_gpu_shard_GB')} per GPU · × {ctx.params.gpus:,} GPUs", 0, 0),
        Box("host", "Host memory", f"async snapshot · GPU pause {show('snapshot_stall_s')}", 1, 0, "muted"),
        Box("burst", "Burst tier (flash)", f"{show('fast_tier_servers')} · {show('fast_tier_GBps')} · {show('fast_tier_capacity_TB')}", 2, 0, "accent"),
        Box("durable", "Durable object store", f"keeps {show('retained_TB')} · written {show('volume_per_day_TB')}/day", 3, 0),
        Box("manifest", "Manifest (written last)", "parent · data position · config hash · code version", 2, 1, "muted"),
        Box("resume", "Resuming job", f"{ctx.params.new_ranks:,} ranks · {show('reshard_bytes_per_rank_GB')} each · ≤ {show('reshard_max_source_shards_per_rank')}", 1, 1),
    ]
    arrows = [
        Arrow("gpus", "host", "PCIe"),
        Arrow("host", "burst", f"{show('aggregate_write_GBps')} within {ctx.params.burst_window_s:g} s"),
        Arrow("burst", "durable", f"drain ≥ {show('min_drain_GBps')}"),
        Arrow("burst", "manifest", "all shards acked", dashed=True),
        Arrow("burst", "resume", f"restore {show('restore_s')}", dashed=True),
    ]
    return box_diagram(boxes, arrows, title="Two stages: a burst tier sized by bandwidth, a durable tier sized by capacity")


@page.chart("rates_vs_window")
def rates_vs_window(ctx):
    return sweep_figure(
        ctx.slug, ctx.params, "burst_window_s",
        {"aggregate_write_GBps": "Burst tier must absorb", "min_drain_GBps": "Drain to durable (average)"},
        title="Write rate against the burst window (log-log): the gap is the peak-to-average",
        y_title="GB/s", log_y=True, n=60,
    )


@page.chart("sources_vs_ranks")
def sources_vs_ranks(ctx):
    # From a quarter to twice the saved count, every multiple of 8 (the slider's step): the
    # interesting region, where the count jumps with divisibility rather than with the ratio.
    old = ctx.params.old_shards
    lo, hi = max(8, old // 4 // 8 * 8), min(4096, old * 2)
    fig = sweep_figure(
        ctx.slug, ctx.params, "new_ranks",
        {"reshard_max_source_shards_per_rank": "Most saved shards one rank reads"},
        title=f"Resuming {old:,} saved shards on other rank counts",
        y_title="Shards", x_title="Ranks resuming", n=(hi - lo) // 8 + 1, line_shape="hv", lo=lo, hi=hi,
    )
    fig.update_traces(mode="lines+markers", marker=dict(size=4), selector=dict(mode="lines"))
    return fig


page.render()
