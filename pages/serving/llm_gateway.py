from ui.charts import sweep_figure
from ui.diagram import Arrow, Box, box_diagram
from ui.question_page import QuestionPage

page = QuestionPage("llm-gateway")


@page.diagram("gateway_shape")
def gateway_shape(ctx):
    d, p = ctx.derivation, ctx.params
    show = lambda key: d[key].display(hint=False)  # noqa: E731
    boxes = [
        Box("cache", "Cache", f"deterministic calls only · saves {show('cache_savings_per_month_usd')}/month", 2, 0,
            "accent"),
        Box("teams", "Teams", f"{p.teams} teams · virtual keys · not {p.api_keys} raw keys", 0, 1, "muted"),
        Box("edge", "Edge", f"auth · team · reserve {show('max_request_cost_usd')}/request", 1, 1),
        Box("alias", "Alias + policy", f"{show('alias_route_entries')} · pinned versions · data rules", 2, 1),
        Box("router", "Router", f"breaker per route · trips in {show('breaker_detect_s')}", 3, 1),
        Box("prov", "Providers", f"{p.providers} providers · each down {d['provider_downtime_per_month_s'].display('h')}"
            "/month", 4, 1, "muted"),
        Box("budget", "Budgets", f"avg {show('average_team_budget_usd')}/team/month", 1, 2),
        Box("meter", "Metering + audit", f"settle cost · {show('audit_bytes_per_month')}/month", 3, 2),
    ]
    arrows = [
        Arrow("teams", "edge", f"{show('peak_rps')}"),
        Arrow("edge", "alias", "alias"),
        Arrow("alias", "cache", f"{p.cacheable_share:.0%} cacheable"),
        Arrow("alias", "router", "route list"),
        Arrow("router", "prov", "by health"),
        Arrow("router", "meter", "usage tokens"),
        Arrow("meter", "budget", "settle"),
        Arrow("budget", "edge", "reserve", dashed=True),
    ]
    return box_diagram(boxes, arrows, title="One endpoint, with this scenario's numbers")


@page.chart("savings_vs_cacheable")
def savings_vs_cacheable(ctx):
    return sweep_figure(
        ctx.slug, ctx.params, "cacheable_share",
        {"cache_savings_per_month_usd": "Savings on the cacheable share",
         "cache_savings_if_all_cached_usd": "Same hit rate claimed over all traffic"},
        title="Cache savings per month against the cacheable share", y_title="USD per month", x_scale=100,
        n=81,
    )


@page.chart("unavailability_vs_common_cause")
def unavailability_vs_common_cause(ctx):
    fig = sweep_figure(
        ctx.slug, ctx.params, "common_cause_share",
        {"unavailability_correlated": "All providers down, common cause included",
         "unavailability_with_fallback": "All providers down, independent",
         "provider_unavailability": "One provider down"},
        title="Unavailability with fallback against the common-cause share (log scale)",
        y_title="% of the time", x_scale=100, n=81, log_y=True,
    )
    fig.update_yaxes(exponentformat="e")
    return fig


page.render()
