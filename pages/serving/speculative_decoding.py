import math

import numpy as np

from ui.charts import INK, PALETTE, layout_dict, legend_line, sweep
from ui.figures import figure, hline, vline
from ui.question_page import QuestionPage

page = QuestionPage("speculative-decoding")

ACCEPTANCE_CURVES = (0.6, 0.7, 0.8, 0.9)


@page.chart("speedup_vs_k")
def speedup_vs_k(ctx):
    p = ctx.params
    xs = list(range(1, 17))
    rates = sorted(set(ACCEPTANCE_CURVES) | {round(p.acceptance_rate, 4)})
    # Plain dicts, not validated (ui/figures.py): the JSON plotly's add_trace/add_vline/add_hline wrote.
    traces = []
    for i, a in enumerate(rates):
        ys = sweep(ctx.slug, p.model_copy(update={"acceptance_rate": a}), "draft_tokens", ["speedup_small_batch"],
                   xs)["speedup_small_batch"]
        current = abs(a - p.acceptance_rate) < 1e-9
        traces.append(dict(type="scatter", x=xs, y=ys, name=f"a = {a:.0%}" + (" (now)" if current else ""),
                           mode="lines+markers", line=dict(color=PALETTE[i % len(PALETTE)], width=3.5 if current else 2,
                                                           dash="solid" if current else "dot")))
    y_now = ctx.derivation.value("speedup_small_batch")
    traces.append(dict(type="scatter", x=[p.draft_tokens], y=[y_now], mode="markers", showlegend=False,
                       marker=dict(color=INK, size=12, line=dict(color="white", width=2)),
                       hovertemplate="now: %{y:.3g}×<extra></extra>"))
    layout = layout_dict(f"Small-batch speedup against k, draft cost c = {p.draft_cost:.1%}",
                         "Draft tokens k", "speedup (×)")
    layout["shapes"] = [vline(p.draft_tokens, color="#64748b", dash="dot", width=1), hline(1, color="#dc2626", width=1)]
    return figure(traces, layout)


@page.chart("speedup_vs_batch")
def speedup_vs_batch(ctx):
    d, p = ctx.derivation, ctx.params
    # Batches past the KV cap are refused, so the sweep ends at the cap.
    cap = int(d.value("batch_memory_cap"))
    xs = sorted({int(round(x)) for x in np.geomspace(1, max(2, cap), 80)} | {int(d.value("decode_batch"))})
    lines = {"speedup_at_operating_batch": "The engine's full step (KV, all-reduces, fixed cost)",
             "speedup_at_operating_batch_weights_only": "Weights only (the ridge argument)"}
    ys = sweep(ctx.slug, p, "given_batch", list(lines), xs)
    traces = []
    for i, (key, name) in enumerate(lines.items()):
        traces.append(dict(type="scatter", x=xs, y=ys[key], name=name, mode="lines",
                           line=dict(color=PALETTE[i], width=2.5)))
        traces.append(dict(type="scatter", x=[d.value("decode_batch")], y=[d.value(key)], mode="markers",
                           showlegend=False, marker=dict(color=PALETTE[i], size=11, line=dict(color="white", width=2)),
                           hovertemplate=f"{name} now: %{{y:.3g}}×<extra></extra>"))
    shapes = [hline(1, color="#dc2626", width=1.5)]
    marks = (("break_even_batch_weights_only", "break-even, weights only", PALETTE[1]),
             ("break_even_batch_with_kv", "break-even, full step", PALETTE[0]),
             ("batch_memory_cap", "KV cap", INK))
    for key, label, color in marks:
        x = float(d.value(key))
        if math.isfinite(x) and 1 <= x <= max(2, cap):
            shapes.append(vline(x, color=color, dash="dash", width=1.5))
            traces.append(legend_line(f"{label}: {x:,.0f}", color=color, dash="dash", width=1.5))
    layout = layout_dict("Speedup against batch size, up to the KV cap (log x); below the red line speculation "
                         "costs throughput", "Decode batch (sequences)", "speedup (×)", log_x=True)
    layout["shapes"] = shapes
    return figure(traces, layout)


@page.chart("break_even_vs_context")
def break_even_vs_context(ctx):
    p = ctx.params
    xs = [x for x in (250, 500, 1000, 1500, 2000, 3000, 4000, 6000, 8000, 12000, 16000, 24000, 32000, 64000)
          if x != p.prompt_tokens] + [p.prompt_tokens]
    xs = sorted(xs)
    keys = ["break_even_batch_weights_only", "break_even_batch_with_kv", "batch_memory_cap"]
    names = ["Break-even, weights only", "Break-even, full step (missing = never)", "KV cap"]
    # The break-even and the cap do not depend on the batch; with the batch left to the engine a
    # long prompt is not refused for a batch that no longer fits.
    ys = sweep(ctx.slug, p.model_copy(update={"given_batch": 0}), "prompt_tokens", keys, xs)
    traces = [dict(type="scatter", x=xs, y=[v if math.isfinite(v) and v > 0 else None for v in ys[key]], name=name,
                   mode="lines+markers", connectgaps=False,
                   line=dict(color=(PALETTE[1], PALETTE[0], INK)[i], width=2.5,
                             dash="dash" if key == "batch_memory_cap" else "solid"))
              for i, (key, name) in enumerate(zip(keys, names))]
    layout = layout_dict("Where speculation stops paying, against prompt length (log-log)", "Prompt tokens",
                         "sequences per replica", log_x=True, log_y=True)
    layout["shapes"] = [vline(p.prompt_tokens, color="#64748b", dash="dot", width=1)]
    return figure(traces, layout)


page.render()
