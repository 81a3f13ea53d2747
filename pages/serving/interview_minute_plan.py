from models.core import PHASE_TITLES, PHASES
from ui.charts import sweep_figure
from ui.diagram import Arrow, Box, box_diagram
from ui.question_page import QuestionPage

page = QuestionPage("interview-minute-plan")

_PHASE_DETAIL = {
    "numbers": "rate, context, TPOT",
    "shape": "seven boxes · router, cache",
    "arithmetic": "batch, prefill, GPUs",
    "depth": "two topics",
    "failure_modes": "three failures",
}


@page.diagram("minute_plan")
def minute_plan(ctx):
    d, p = ctx.derivation, ctx.params
    show = lambda key: d[key].display(hint=False)  # noqa: E731
    boxes, arrows, start = [], [], 0
    for i, ph in enumerate(PHASES):
        end = int(d.value(f"checkpoint_end_of_{ph}"))
        detail = f"{start}–{end} min · {_PHASE_DETAIL[ph]}"
        if ph == "failure_modes":
            detail += f" · then {show('slack_minutes')} slack"
        boxes.append(Box(ph, PHASE_TITLES[ph], detail, i, 0, "accent" if ph == "depth" else "default"))
        if i:
            arrows.append(Arrow(PHASES[i - 1], ph))
        start = end
    boxes += [
        Box("devs", "Developers", f"{p.developers:,} × {p.completions_per_developer_per_min:g}/min", 0, 1, "muted"),
        Box("rate", "Request rate", show("request_rate"), 1, 1, "muted"),
        Box("ctx", "Uncached", f"{show('uncached_prompt_tokens')} of {p.prompt_tokens:,}", 2, 1, "muted"),
        Box("engine", "Engine", f"batch {d.value('decode_batch'):,} · step {show('decode_step_s')}", 3, 1, "muted"),
        Box("fleet", "Fleet", f"{show('replicas')} · {show('gpus')}", 4, 1, "muted"),
    ]
    arrows += [Arrow("devs", "rate"), Arrow("rate", "ctx"), Arrow("ctx", "engine"), Arrow("engine", "fleet"),
               Arrow("numbers", "devs", dashed=True), Arrow("arithmetic", "ctx", dashed=True)]
    return box_diagram(boxes, arrows, title=f"The {p.round_minutes}-minute plan, and the opening it carries")


@page.chart("replicas_vs_prefix_hit")
def replicas_vs_prefix_hit(ctx):
    return sweep_figure(
        ctx.slug, ctx.params, "prefix_cache_hit",
        {"replicas": "Replicas", "replicas_decode_only": "Decode only (prefill forgotten)"},
        title="Replicas against the prefix-cache hit rate", y_title="Replicas",
        x_scale=100, n=100, line_shape="hv",
    )


@page.chart("replicas_vs_tpot")
def replicas_vs_tpot(ctx):
    d = ctx.derivation
    # below the weight read plus the fixed step cost no batch meets the target
    lo = max(1.0, (d.value("weight_read_s") + d.value("step_overhead_s")) * 1000 * 1.05)
    return sweep_figure(
        ctx.slug, ctx.params, "tpot_target_ms",
        {"replicas": "Replicas", "decode_batch": "Decode batch per replica"},
        title="Replicas and batch against the TPOT target", y_title="Replicas / sequences",
        n=80, log_y=True, line_shape="hv", lo=lo, hi=max(100.0, 4 * lo),
    )


page.render()
