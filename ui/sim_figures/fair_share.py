"""A month of the research cluster (models/sim/fair_share.py) drawn: every team at one tick (the
replay), GPUs held per team over the run, the fair-share factors, utilization and start waits.
Plain dicts (ui/figures.py), the JSON plotly's add_trace/add_hline wrote."""

from __future__ import annotations

import numpy as np

from ui.charts import INK, PALETTE, layout_dict
from ui.figures import figure, hline, vline

GREY = "#64748b"


def tick_of(r, t_s: float) -> int:
    return int(round(t_s / (r.tick_h * 3600)))


def tick_s(r) -> float:
    return float(r.tick_h) * 3600


def run_span_s(r) -> float:
    """The replay's span: one position a tick, from the first to the last."""
    return (r.t_h.size - 1) * r.tick_h * 3600


def cluster_at(ctx, r, steps, t_s: float):
    """Every team at one tick: running, saving and idle GPUs stacked, against guarantee and target."""
    t = tick_of(r, t_s)
    names = list(r.team_names)
    idle = r.alloc[t] - r.busy[t] - r.saving[t]
    traces = [
        dict(type="bar", x=names, y=r.busy[t], name="Running jobs", marker=dict(color=PALETTE[0])),
        dict(type="bar", x=names, y=r.saving[t], name="Saving a checkpoint (preempted)", marker=dict(color=PALETTE[1])),
        dict(type="bar", x=names, y=idle, name="Held idle", marker=dict(color="#fbbf24")),
        dict(type="scatter", x=names, y=r.guarantee, mode="markers", name="Guarantee",
             marker=dict(symbol="line-ew", size=44, line=dict(width=3, color=INK))),
        dict(type="scatter", x=names, y=r.target[t], mode="markers", name="Water-filling target",
             marker=dict(symbol="diamond", size=11, color=PALETTE[2])),
    ]
    top = max(float(r.alloc[t].max()), float(r.guarantee.max()), float(r.target[t].max())) * 1.25
    layout = layout_dict(f"The cluster at hour {r.t_h[t]:,.2f}", "", "GPUs")
    layout.update(barmode="stack", height=380, hovermode="closest")
    layout["yaxis"]["range"] = [0, max(top, 1)]
    layout["annotations"] = [dict(x=name, y=max(r.alloc[t, i], r.guarantee[i]), text=f"{r.queued[t, i]:,.0f} queued",
                                  showarrow=False, yshift=16, font=dict(size=11, color=GREY))
                             for i, name in enumerate(names)]
    return figure(traces, layout)


def held_per_team(ctx, r, steps):
    """GPUs each team holds over the run, against its guarantee (dotted), and the preemptions."""
    p = ctx.params
    traces, shapes, notes = [], [], []
    for i, name in enumerate(r.team_names):
        color = PALETTE[i % len(PALETTE)]
        traces.append(dict(type="scatter", x=r.t_h, y=r.alloc[:, i], name=name,
                           line=dict(color=color, width=2, shape="hv")))
        shapes.append(hline(r.guarantee[i], color=color, dash="dot", width=1))
    if r.ev_tick.size:
        ticks = np.unique(r.ev_tick)
        traces.append(dict(type="scatter", x=r.t_h[ticks], y=r.preempted[ticks].sum(axis=1), mode="markers",
                           name="GPUs preempted", marker=dict(symbol="x", size=9, color=INK)))
    if p.return_hour < p.sim_days * 24:
        shapes.append(vline(p.return_hour, color=GREY, dash="dash", width=1))
        notes.append(dict(x=p.return_hour, y=1, yref="paper", text="Interpretability returns", showarrow=False,
                          xanchor="left", xshift=3, yanchor="top", font=dict(size=11)))
    layout = layout_dict("GPUs held per team (dotted: its guarantee)", "Hours", "GPUs")
    layout.update(height=400, shapes=shapes, **({"annotations": notes} if notes else {}))
    return figure(traces, layout)


def factors(ctx, r, steps):
    traces = [dict(type="scatter", x=r.t_h, y=r.factor[:, i], name=name, line=dict(color=PALETTE[i], width=2))
              for i, name in enumerate(r.team_names)]
    layout = layout_dict("Fair-share factor per team (0.5 = usage at share)", "Hours", "F = 2^(−u/s)")
    layout["yaxis"]["range"] = [0, 1.05]
    layout["shapes"] = [hline(0.5, color=GREY, dash="dot", width=1)]
    return figure(traces, layout)


def utilization(ctx, r, steps):
    traces = [
        dict(type="scatter", x=r.t_h, y=100 * np.minimum(r.demand.sum(axis=1) / r.total_gpus, 2),
             name="Demand (capped at 200%)", line=dict(color=GREY, width=1.5, dash="dot")),
        dict(type="scatter", x=r.t_h, y=100 * r.utilization, name="GPUs held", line=dict(color=PALETTE[0], width=2)),
        dict(type="scatter", x=r.t_h, y=100 * r.busy_utilization, name="GPUs running jobs",
             line=dict(color=PALETTE[2], width=2)),
    ]
    return figure(traces, layout_dict("Utilization: held versus running jobs (the gap is the hoard and the saves)",
                                      "Hours", "% of the cluster"))


def start_waits(ctx, r, steps):
    traces = [dict(type="box", y=w, name=name, marker=dict(color=PALETTE[i]), boxmean=True)
              for i, (name, w) in enumerate(zip(r.team_names, r.waits_by_team())) if w.size]
    layout = layout_dict("Wait from submission to first start, per job", "", "Hours")
    layout.update(showlegend=False, hovermode="closest")
    return figure(traces, layout)
