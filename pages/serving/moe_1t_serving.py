import math

from ui.charts import INK, PALETTE, layout_dict, sweep, sweep_figure, sweep_values
from ui.figures import figure, vline
from ui.question_page import QuestionPage

page = QuestionPage("moe-1t-serving")



def _compute_bound_mark(ctx) -> tuple[list[dict], list[dict]]:
    """A dashed line where the hottest GPU's FLOP overtake its bytes, if inside the sweep: (shapes, notes)."""
    d = ctx.derivation
    b = float(d.value("compute_bound_batch_per_gpu"))
    if not (math.isfinite(b) and 1 <= b <= d.value("batch_chart_to")):
        return [], []
    return ([vline(b, color=PALETTE[1], dash="dash", width=1.5)],  # on a log axis a note's x is the exponent
            [dict(x=math.log10(b), y=1, yref="paper", xanchor="right", xshift=-3, yanchor="top", showarrow=False,
                  text=f"compute-bound from {d['compute_bound_batch_per_gpu'].display(hint=False)}",
                  font=dict(color=PALETTE[1]))])


def batch_sweep(name: str, lines: dict, mark: bool = False, **opts) -> None:
    """A sweep of the batch up to the step `batch_chart_to`: in sequences, which a declared `hi` cannot read."""
    def draw(ctx):
        shapes, notes = _compute_bound_mark(ctx) if mark else ([], [])
        return sweep_figure(ctx.slug, ctx.params, "batch_per_gpu", lines, n=60, lo=1,
                            hi=ctx.derivation.value("batch_chart_to"), shapes=shapes, annotations=notes, **opts)
    page.chart(name)(draw)


@page.chart("step_breakdown_vs_batch")
def step_breakdown_vs_batch(ctx):  # stacked areas under the step's lines: not a sweep_figure
    p = ctx.params
    xs = sweep_values(p, "batch_per_gpu", 60, lo=1, hi=ctx.derivation.value("batch_chart_to"))
    styles = {  # step: (legend, colour, width, dash); the two bytes parts stacked (width 1)
        "weight_read_s": ("weight read", PALETTE[0], 1, None),
        "kv_read_s": ("KV read (stacked on weights)", PALETTE[5], 1, None),
        "compute_s": ("FLOP, hottest GPU", PALETTE[1], 2.5, "dash"),
        "all_to_all_s": ("two all-to-alls × MoE layers", PALETTE[3], 2.5, "dot"),
        "decode_step_s": ("decode step", INK, 3, None),
    }
    ys = sweep(ctx.slug, p, "batch_per_gpu", list(styles), xs)
    traces = [dict(type="scatter", x=xs, y=[v * 1000 for v in ys[k]], name=name,  # plain dicts (ui/figures.py)
                   **({"stackgroup": "bytes"} if width == 1 else {"mode": "lines"}),
                   line=dict(color=color, width=width, **({"dash": dash} if dash else {})))
              for k, (name, color, width, dash) in styles.items()]
    traces.append(dict(type="scatter", x=[p.batch_per_gpu], y=[ctx.derivation.value("decode_step_s") * 1000],
                       mode="markers", showlegend=False,
                       marker=dict(color=INK, size=11, line=dict(color="white", width=2))))
    layout = layout_dict("Decode step and its parts against the batch (up to what the KV allows)",
                         "Sequences per GPU (log scale)", "ms", log_x=True)
    shapes, notes = _compute_bound_mark(ctx)
    layout["shapes"] = [vline(p.batch_per_gpu, color="#64748b", dash="dot", width=1), *shapes]
    if notes:
        layout["annotations"] = notes
    return figure(traces, layout)


batch_sweep("tokens_per_user_vs_batch", {"tokens_per_s_per_user": "with imbalance {{imbalance}}",
                                         "tokens_per_s_per_user_balanced": "balanced routing"},
            title="Tokens/s per user against the batch", y_title="tokens/s per user")
batch_sweep("rack_tokens_vs_batch", {"tokens_per_s": "all GPUs"},
            title="Tokens/s for the whole group against the batch", y_title="tokens/s")
batch_sweep("imbalance_loss_vs_batch", {"imbalance_throughput_loss": "throughput lost to the hottest GPU"}, mark=True,
            title="What the router's imbalance costs, by batch", y_title="% of throughput")

page.render()
