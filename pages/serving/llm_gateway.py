from ui.charts import sweep_figure
from ui.question_page import QuestionPage

page = QuestionPage("llm-gateway")


page.sweep("savings_vs_cacheable", "cacheable_share",
    {"cache_savings_per_month_usd": "Savings on the cacheable share",
     "cache_savings_if_all_cached_usd": "Same hit rate claimed over all traffic"},
    title="Cache savings per month against the cacheable share", y_title="USD per month", x_scale=100,
    n=81)


@page.chart("unavailability_vs_common_cause")
def unavailability_vs_common_cause(ctx):
    return sweep_figure(
        ctx.slug, ctx.params, "common_cause_share",
        {"unavailability_correlated": "All providers down, common cause included",
         "unavailability_with_fallback": "All providers down, independent",
         "provider_unavailability": "One provider down"},
        title="Unavailability with fallback against the common-cause share (log scale)",
        y_title="% of the time", x_scale=100, n=81, log_y=True, layout={"yaxis": {"exponentformat": "e"}},
    )


page.render()
