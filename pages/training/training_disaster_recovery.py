from ui.charts import INK, sweep_figure
from ui.figures import vline
from ui.question_page import QuestionPage

page = QuestionPage("training-disaster-recovery")


@page.chart("overhead_vs_interval")
def overhead_vs_interval(ctx):
    young = ctx.derivation.value("young_optimal_interval_min")
    return sweep_figure(
        ctx.slug, ctx.params, "interval_min",
        {
            "total_overhead_fraction": "Total",
            "fraction_lost": "Lost to interruptions",
            "checkpoint_overhead_fraction": "Paused for saves",
        },
        title="Share of the run lost against the checkpoint interval (Young's optimum dashed)",
        y_title="% of the run", n=120, lo=5, hi=120,
        shapes=[vline(young, color=INK, dash="dash", width=1.5)],
        annotations=[dict(x=young, y=1, yref="paper", text="Young", showarrow=False, xanchor="left", xshift=3,
                          yanchor="top")],
    )


page.sweep("rpo_vs_link", "replication_gbps",
    {"rpo_worst_min": "Worst-case RPO", "rpo_mean_min": "Mean RPO"},
    title="Site-loss RPO against the link between the sites (log-log)",
    y_title="Minutes", log_y=True, n=120)


page.render()
