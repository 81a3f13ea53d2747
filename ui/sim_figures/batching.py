"""One replica's run (models/sim/batching.py) drawn: the batch over time, a row per request, and the
two latency distributions. Each is redrawn at every replay step: plain dicts, with two y axes
written out as make_subplots(secondary_y=True) writes them."""

from __future__ import annotations

import numpy as np

from models.sim.batching import CUT
from ui.charts import INK, PALETTE, layout_dict
from ui.figures import figure, vline

GANTT_ROWS = 80  # the last requests to arrive by the replay time: playing the run grows the bars


def timeline(ctx, r, steps, t_mark: float):
    """Sequences in the batch, queue length, and KV in use (% of budget) on the right axis."""
    traces = [
        dict(type="scatter", x=r.t_s, y=r.batch, name="Sequences in the step",
             line=dict(color=PALETTE[0], width=1.5, shape="hv"), xaxis="x", yaxis="y"),
        dict(type="scatter", x=r.t_s, y=r.queue_len, name="Queued",
             line=dict(color=PALETTE[1], width=1.5, shape="hv"), xaxis="x", yaxis="y"),
    ]
    if r.kv_budget_tokens:
        traces.append(dict(type="scatter", x=r.t_s, y=100 * r.kv_tokens / r.kv_budget_tokens, name="KV in use (%)",
                           line=dict(color=PALETTE[2], width=1, shape="hv"), opacity=0.7, xaxis="x", yaxis="y2"))
    layout = layout_dict("The replica over time", "Seconds", "Sequences / requests")
    layout["xaxis"].update(anchor="y", domain=[0.0, 0.94])
    layout["yaxis"].update(anchor="x", domain=[0.0, 1.0])
    layout["yaxis2"] = dict(anchor="x", overlaying="y", side="right", title=dict(text="KV in use (%)"),
                            range=[0, 105], tickvals=[0, 25, 50, 75, 100], showgrid=False)
    layout["shapes"] = [vline(t_mark, color=INK, dash="dot", width=1)]
    return figure(traces, layout)


def gantt(ctx, r, steps, t_mark: float, max_rows: int = GANTT_ROWS):
    """One line per request, drawn up to the replay time: queued, prefilling, streaming."""
    t = min(t_mark, r.horizon_s)
    k = int(np.searchsorted(r.arrival_s, t, side="right"))
    idx = np.arange(max(0, k - max_rows), k)
    admit = np.minimum(r.arrival_s + r.queue_wait_s, t)
    first_tok = np.where(np.isfinite(r.ttft_s), r.arrival_s + r.ttft_s, np.inf)
    leave = np.where(np.isfinite(r.exit_s), r.exit_s, np.inf)
    segs = {"queued": ([], []), "prefill": ([], []), "streaming": ([], [])}

    def add(name, x0, x1, row):
        if x1 > x0:
            segs[name][0].extend([x0, x1, None])
            segs[name][1].extend([row, row, None])

    for row, i in enumerate(idx):
        a, q, f, z = r.arrival_s[i], admit[i], first_tok[i], min(leave[i], t)
        add("queued", a, q, row)
        add("prefill", q, min(f, z), row)
        add("streaming", f, z, row)
    colors = {"queued": PALETTE[1], "prefill": PALETTE[4], "streaming": PALETTE[0]}
    traces = [dict(type="scatter", x=x, y=y, name=name, mode="lines", line=dict(color=colors[name], width=4))
              for name, (x, y) in segs.items()]
    cut = [row for row, i in enumerate(idx) if r.status[i] == CUT and leave[i] <= t]
    if cut:
        traces.append(dict(type="scatter", x=[leave[idx[row]] for row in cut], y=cut, mode="markers",
                           name="cut (slow client)", marker=dict(symbol="x", color=INK, size=9)))
    layout = layout_dict("The last requests to arrive, one row each", "Seconds", "Request")
    layout["yaxis"].update(autorange="reversed", showticklabels=False)
    layout["xaxis"]["range"] = [r.arrival_s[idx[0]] - 0.5 if idx.size else 0, t + 0.5]
    layout.update(height=420, hovermode="closest", shapes=[vline(t, color=INK, dash="dot", width=1)])
    return figure(traces, layout)


def distributions(ctx, r, steps):
    """TTFT and token-gap histograms side by side, the closed-form gap dashed on the right one.
    Written out as make_subplots(rows=1, cols=2, subplot_titles=...) writes them."""
    ttft = r.ttft_s[np.isfinite(r.ttft_s)] * 1000
    gaps = r.token_gaps_s * 1000
    traces, shapes = [], []
    if ttft.size:
        traces.append(dict(type="histogram", x=ttft, nbinsx=40, marker=dict(color=PALETTE[4]), name="TTFT",
                           xaxis="x", yaxis="y"))
    if gaps.size:
        traces.append(dict(type="histogram", x=gaps, nbinsx=60, marker=dict(color=PALETTE[0]), name="token gap",
                           xaxis="x2", yaxis="y2"))
        shapes.append(dict(vline(steps["gap_closed_form_s"].value * 1000, color=PALETTE[1], dash="dash"),
                           xref="x2", yref="y2 domain"))
    # Short subplot titles: each has half the width, which on a phone is ~170 px.
    titles = [dict(text=text, x=x, xanchor="center", xref="paper", y=1.0, yanchor="bottom", yref="paper",
                   showarrow=False, font=dict(size=16))
              for text, x in (("TTFT (ms)", 0.225), ("Token gap (ms)", 0.775))]
    layout = dict(
        xaxis=dict(anchor="y", domain=[0.0, 0.45]), yaxis=dict(anchor="x", domain=[0.0, 1.0]),
        xaxis2=dict(anchor="y2", domain=[0.55, 1.0]), yaxis2=dict(anchor="x2", domain=[0.0, 1.0]),
        annotations=titles, height=300, showlegend=False, margin=dict(l=10, r=10, t=40, b=10),
        **({"shapes": shapes} if shapes else {}),
    )
    return figure(traces, layout)
