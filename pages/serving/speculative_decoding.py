import math

import numpy as np

from ui.charts import INK, MAX_SWEEP_POINTS, PALETTE, layout_dict, legend_line, sweep
from ui.figures import figure, hline, vline
from ui.question_page import QuestionPage

page = QuestionPage("speculative-decoding")

page.sweep("speedup_vs_k", "draft_tokens", {"speedup_small_batch": "a = {value}"},
           family=("acceptance_rate", (0.6, 0.7, 0.8, 0.9)), xs=range(1, 17), mode="lines+markers", hlines=(1,),
           title="Small-batch speedup against k, draft cost c = {{draft_cost}}", x_title="Draft tokens k",
           y_title="speedup (×)")


@page.chart("speedup_vs_batch")
def speedup_vs_batch(ctx):
    d, p = ctx.derivation, ctx.params
    # Batches past the KV cap are refused, so the sweep ends at the cap.
    cap = int(d.value("batch_memory_cap"))
    xs = sorted({int(round(x)) for x in np.geomspace(1, max(2, cap), MAX_SWEEP_POINTS)} | {int(d.value("decode_batch"))})
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


# The break-even and the cap do not depend on the batch; with the batch left to the engine a long
# prompt is not refused for a batch that no longer fits.
page.sweep("break_even_vs_context", "prompt_tokens", {
    "break_even_batch_weights_only": "Break-even, weights only",
    "break_even_batch_with_kv": "Break-even, full step (missing = never)",
    "batch_memory_cap": "KV cap",
}, xs=(250, 500, 1000, 1500, 2000, 3000, 4000, 6000, 8000, 12000, 16000, 24000, 32000, 64000),
    fixed={"given_batch": 0}, gaps=True, mode="lines+markers", dashed=("batch_memory_cap",),
    colors={"break_even_batch_weights_only": PALETTE[1], "break_even_batch_with_kv": PALETTE[0], "batch_memory_cap": INK},
    title="Where speculation stops paying, against prompt length (log-log)", x_title="Prompt tokens",
    y_title="sequences per replica", log_x=True, log_y=True)

page.render()
