from ui.charts import sweep_figure
from ui.diagram import Arrow, Box, box_diagram
from ui.question_page import QuestionPage

page = QuestionPage("playground-abuse")


@page.diagram("playground_path")
def playground_path(ctx):
    d = ctx.derivation
    p = ctx.params
    show = lambda key: d[key].display(hint=False)  # noqa: E731
    boxes = [
        Box("browser", "Browser tab", f"POST prompt · read {p.transport} stream · resume by event id", 0, 0, "muted"),
        Box("edge", "Edge", "TLS · bot score · PoW or CAPTCHA if scripted", 1, 0, "danger"),
        Box("gw", "Gateway", f"{show('open_connections')} · {show('gateway_memory_bytes')} · {show('gateway_nodes')}",
            2, 0),
        Box("quota", "Quota service (daily)", f"user: {show('per_user_daily_quota_tokens')} · "
            f"device: {p.accounts_per_device} accounts · fleet: {show('free_tier_tokens_per_day')}",
            2, 1, "accent"),
        Box("store", "Session store (text)", f"{show('session_text_bytes')} per conversation · "
            f"{show('text_store_bytes')} in all", 1, 1),
        Box("fleet", "Free-tier replicas", f"{show('free_fleet_streams')} · prefix cache, best effort · "
            f"re-prefill {show('reprefill_on_resume_s')}", 3, 1),
        Box("paid", "Paid fleet", "separate · never queues behind free", 3, 0, "muted"),
    ]
    arrows = [
        Arrow("browser", "edge", ""),
        Arrow("edge", "gw", ""),
        Arrow("gw", "quota", f"{show('generations_per_s')}"),
        Arrow("gw", "store", "turns as text"),
        Arrow("quota", "fleet", ""),
        Arrow("fleet", "gw", f"{show('egress_Bps')} out", dashed=True),
    ]
    return box_diagram(boxes, arrows, title="The free playground, with this scenario's numbers")


@page.chart("memory_vs_think_time")
def memory_vs_think_time(ctx):
    return sweep_figure(
        ctx.slug, ctx.params, "think_time_s",
        {"gateway_memory_websocket_bytes": "WebSocket (one per visit)", "gateway_memory_sse_bytes": "SSE (one per reply)"},
        title="Gateway memory against think time", y_title="GB", y_unit="GB", from_unit="B", n=80,
    )


@page.chart("reprefill_vs_context")
def reprefill_vs_context(ctx):
    return sweep_figure(
        ctx.slug, ctx.params, "prompt_tokens",
        {"reprefill_on_resume_s": "Re-prefill on resume", "kv_hold_break_even_s": "Hold-versus-recompute break-even"},
        title="Re-prefill time and the KV hold break-even against conversation length (log-log)",
        y_title="Seconds", log_y=True, n=80,
    )


@page.chart("quota_vs_daily_users")
def quota_vs_daily_users(ctx):
    return sweep_figure(
        ctx.slug, ctx.params, "daily_active_users",
        {"per_user_daily_quota_tokens": "Daily quota per user", "accounts_to_farm": "Accounts a reseller needs"},
        title="Per-user quota and the accounts a reseller farms, against daily users (log-log)",
        y_title="Tokens / accounts", log_y=True, n=80,
    )


page.render()
