from ui.charts import sweep_figure
from ui.figures import hline
from ui.question_page import QuestionPage

page = QuestionPage("agent-sessions")


@page.chart("duration_vs_tool")
def duration_vs_tool(ctx):
    return sweep_figure(
        ctx.slug, ctx.params, "tool_s", {"session_duration_h": "Session length"},
        title="Session length against tool time (log-log): where the seed's 'hour' holds", y_title="hours",
        n=100, log_y=True, shapes=[hline(1, color="#dc2626", dash="dash", width=1.5)],
        # At the left, where the session line is far below an hour (at the current x it crosses it).
        annotations=[dict(x=0, xref="paper", y=0, yref="y", text="one hour", showarrow=False,
                          xanchor="left", yanchor="bottom", font=dict(size=11, color="#dc2626"))],
    )


page.sweep("replicas_vs_sessions", "concurrent_sessions",
    {
        "replicas_to_hold_kv": "Hold every session's KV in HBM",
        "replicas_for_recompute": "Extra replicas to recompute every step",
        "replicas_for_compute": "Thinking alone (park KV in DRAM)",
    },
    title="Replicas against concurrent sessions (log-log)", y_title="replicas", x_title="Concurrent sessions",
    line_shape="hv", n=100, log_y=True)

page.sweep("reload_vs_recompute", "steps",
    {"recompute_per_step_s": "Recompute the context", "reload_per_step_s": "Reload KV from host DRAM"},
    title="Per-step cost of getting the KV back, session average, against steps per session (log-log)",
    y_title="ms", y_unit="ms", from_unit="s", x_title="Steps per session", n=80, log_y=True)


page.render()
