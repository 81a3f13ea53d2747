from ui.charts import sweep_figure
from ui.diagram import Arrow, Box, box_diagram
from ui.question_page import QuestionPage

page = QuestionPage("agent-sessions")


@page.diagram("session")
def session(ctx):
    d = ctx.derivation
    p = ctx.params
    show = lambda key: d[key].display(hint=False)  # noqa: E731
    boxes = [
        Box("created", "CREATED", "session row written · lease taken", 0, 0, "muted"),
        Box("provision", "PROVISIONING", f"sandbox boot {p.sandbox_cold_start_s:g} s · "
            f"warm pool {show('sandbox_warm_pool')}", 1, 0),
        Box("think", "THINKING", f"{p.think_s:g} s on a GPU · KV reload {show('reload_per_step_s')}", 2, 0, "accent"),
        Box("tool", "TOOL_RUNNING", f"{p.tool_s:g} s in the sandbox · KV parked in DRAM · "
            f"avg {show('kv_bytes_mean')}", 3, 0),
        Box("ckpt", "Commit + checkpoint", f"text + sandbox diff · {show('checkpoint_bytes_per_step')} a step", 3, 1),
        Box("done", "DONE", f"after {p.steps} steps · {show('session_duration_s')}", 2, 1, "muted"),
        Box("resume", "RESUMING", f"from the last checkpoint · new sandbox + re-prefill · {show('restore_s')}", 1, 1, "danger"),
    ]
    arrows = [
        Arrow("created", "provision"),
        Arrow("provision", "think", "boots during think 1"),
        Arrow("think", "tool", "action"),
        Arrow("tool", "ckpt", "result"),
        Arrow("ckpt", "think", "next step"),
        Arrow("think", "done", "final answer", dashed=True),
        Arrow("resume", "think", "", dashed=True),
    ]
    return box_diagram(boxes, arrows, title="One session's state machine, with this scenario's numbers")


@page.chart("duration_vs_tool")
def duration_vs_tool(ctx):
    fig = sweep_figure(
        ctx.slug, ctx.params, "tool_s", {"session_duration_h": "Session length"},
        title="Session length against tool time (log-log): where the seed's 'hour' holds", y_title="hours",
        n=100, log_y=True,
    )
    fig.add_hline(y=1, line=dict(color="#dc2626", dash="dash", width=1.5))
    # At the left, where the session line is far below an hour (at the current x it crosses it).
    fig.add_annotation(x=0, xref="paper", y=0, yref="y", text="one hour", showarrow=False,
                       xanchor="left", yanchor="bottom", font=dict(size=11, color="#dc2626"))
    return fig


@page.chart("replicas_vs_sessions")
def replicas_vs_sessions(ctx):
    return sweep_figure(
        ctx.slug, ctx.params, "concurrent_sessions",
        {
            "replicas_to_hold_kv": "Hold every session's KV in HBM",
            "replicas_for_recompute": "Extra replicas to recompute every step",
            "replicas_for_compute": "Thinking alone (park KV in DRAM)",
        },
        title="Replicas against concurrent sessions (log-log)", y_title="replicas", x_title="Concurrent sessions",
        line_shape="hv", n=100,
        log_y=True,
    )


@page.chart("reload_vs_recompute")
def reload_vs_recompute(ctx):
    return sweep_figure(
        ctx.slug, ctx.params, "steps",
        {"recompute_per_step_s": "Recompute the context", "reload_per_step_s": "Reload KV from host DRAM"},
        title="Per-step cost of getting the KV back, session average, against steps per session (log-log)",
        y_title="ms", y_unit="ms", from_unit="s", x_title="Steps per session", n=80, log_y=True,
    )


page.render()
