from ui.question_page import QuestionPage

page = QuestionPage("playground-abuse")


page.sweep("memory_vs_think_time", "think_time_s",
    {"gateway_memory_websocket_bytes": "WebSocket (one per visit)", "gateway_memory_sse_bytes": "SSE (one per reply)"},
    title="Gateway memory against think time", y_title="GB", y_unit="GB", from_unit="B", n=80)

page.sweep("reprefill_vs_context", "prompt_tokens",
    {"reprefill_on_resume_s": "Re-prefill on resume", "kv_hold_break_even_s": "Hold-versus-recompute break-even"},
    title="Re-prefill time and the KV hold break-even against conversation length (log-log)",
    y_title="Seconds", log_y=True, n=80)

page.sweep("quota_vs_daily_users", "daily_active_users",
    {"per_user_daily_quota_tokens": "Daily quota per user", "accounts_to_farm": "Accounts a reseller needs"},
    title="Per-user quota and the accounts a reseller farms, against daily users (log-log)",
    y_title="Tokens / accounts", log_y=True, n=80)


page.render()
