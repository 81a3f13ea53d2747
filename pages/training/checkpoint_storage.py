from ui.charts import sweep_figure
from ui.question_page import QuestionPage

page = QuestionPage("checkpoint-storage")


page.sweep("rates_vs_window", "burst_window_s",
    {"aggregate_write_GBps": "Burst tier must absorb", "min_drain_GBps": "Drain to durable (average)"},
    title="Write rate against the burst window (log-log): the gap is the peak-to-average",
    y_title="GB/s", log_y=True, n=60)


@page.chart("sources_vs_ranks")
def sources_vs_ranks(ctx):
    # From a quarter to twice the saved count, every multiple of 8 (the slider's step): the
    # interesting region, where the count jumps with divisibility rather than with the ratio.
    old = ctx.params.old_shards
    lo, hi = max(8, old // 4 // 8 * 8), min(4096, old * 2)
    return sweep_figure(
        ctx.slug, ctx.params, "new_ranks",
        {"reshard_max_source_shards_per_rank": "Most saved shards one rank reads"},
        title=f"Resuming {old:,} saved shards on other rank counts",
        y_title="Shards", x_title="Ranks resuming", n=(hi - lo) // 8 + 1, line_shape="hv", lo=lo, hi=hi,
        markers=4,
    )


page.render()
