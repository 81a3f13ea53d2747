from ui.charts import sweep_figure
from ui.question_page import QuestionPage

page = QuestionPage("eval-pipeline")


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


page.sweep("makespan_vs_largest_eval", "largest_eval_x_mean",
    {"makespan_by_eval_s": "One eval per work unit", "makespan_by_tokens_s": "Shards cut by tokens",
     "fast_target_s": "Fast turnaround"},
    title="Makespan on the fast fleet against the largest eval's size (log-log)", y_title="Hours",
    y_unit="h", from_unit="s", n=80, log_y=True)

page.sweep("detectable_vs_prompts", "prompts_per_eval",
    {"min_detectable_regression": "Caught 80% of the time", "significant_drop": "Significant at 95%",
     "significant_drop_all_evals": "Significant across all evals"},
    title="Smallest regression one eval can see, against its size (log-log)",
    y_title="Percentage points", n=80, log_y=True)


page.render()
