from ui.charts import sweep_figure
from ui.diagram import Arrow, Box, box_diagram
from ui.question_page import QuestionPage

page = QuestionPage("eval-pipeline")


@page.diagram("pipeline")
def pipeline(ctx):
    d = ctx.derivation
    p = ctx.params
    show = lambda key: d[key].display(hint=False)  # noqa: E731
    boxes = [
        Box("ckpt", "New checkpoint", f"{show('weight_bytes')} · content hash", 0, 0, "muted"),
        Box("plan", "Planner", f"{show('prompts_per_checkpoint')} · key = H(checkpoint, prompt, · sampling, harness, tokenizer)", 1, 0),
        Box("cache", "Result store", f"content-addressed · +{show('cache_bytes_per_checkpoint')} per checkpoint", 2, 0, "accent"),
        Box("shard", "Sharder + lease queue", f"{show('shard_count')} · {show('shard_replica_s')} each", 1, 1),
        Box("fleet", "Inference replicas", f"{show('replicas_fast')} × {p.tp_degree} GPUs · batch {show('decode_batch')}", 2, 1),
        Box("score", "Scorer (CPU)", "keyed by generation + scorer version", 3, 1),
        Box("report", "Report and gate", f"±{show('ci95_half_width')} per eval · paired diff", 3, 0, "accent"),
    ]
    arrows = [
        Arrow("ckpt", "plan", "hash"),
        Arrow("plan", "cache", f"look up: {p.result_cache_hit:.0%} hit"),
        Arrow("plan", "shard", "misses"),
        Arrow("shard", "fleet", show("tokens_to_run")),
        Arrow("fleet", "cache", "write by key"),
        Arrow("cache", "score", "", dashed=True),
        Arrow("score", "report", ""),
    ]
    return box_diagram(boxes, arrows, title="The eval pipeline as a batch job, with this scenario's numbers")


@page.chart("gpus_vs_turnaround")
def gpus_vs_turnaround(ctx):
    # Below the start-up time no replica works; start the sweep a quarter hour above it.
    lo = max(0.5, ctx.params.replica_startup_min / 60 + 0.25)
    return sweep_figure(
        ctx.slug, ctx.params, "fast_turnaround_h",
        {"gpus_fast": "GPUs for that turnaround", "gpus_for_cadence": "GPUs to keep up with the cadence"},
        title="GPUs against the turnaround (log-log)", y_title="GPUs", line_shape="hv", n=120, lo=lo,
        log_y=True,
    )


@page.chart("makespan_vs_largest_eval")
def makespan_vs_largest_eval(ctx):
    return sweep_figure(
        ctx.slug, ctx.params, "largest_eval_x_mean",
        {"makespan_by_eval_s": "One eval per work unit", "makespan_by_tokens_s": "Shards cut by tokens",
         "fast_target_s": "Fast turnaround"},
        title="Makespan on the fast fleet against the largest eval's size (log-log)", y_title="Hours",
        y_unit="h", from_unit="s", n=80, log_y=True,
    )


@page.chart("detectable_vs_prompts")
def detectable_vs_prompts(ctx):
    return sweep_figure(
        ctx.slug, ctx.params, "prompts_per_eval",
        {"min_detectable_regression": "Caught 80% of the time", "significant_drop": "Significant at 95%",
         "significant_drop_all_evals": "Significant across all evals"},
        title="Smallest regression one eval can see, against its size (log-log)",
        y_title="Percentage points", n=80, log_y=True,
    )


page.render()
