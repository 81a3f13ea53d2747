"""One replica's KV tiers over a run (models/sim/kv_tiers.py) drawn: what each tier holds, where
returning turns found their KV, and their TTFT against the prefix restored. The replay redraws the
first two at every step: plain dicts (ui/figures.py)."""

from __future__ import annotations

import numpy as np

from models.serving import kv_cache_tiers as model
from models.sim.kv_tiers import DRAM, FIRST, HBM, MISS, OUTCOMES, SSD, TIER_NAMES
from ui.charts import INK, PALETTE, layout_dict
from ui.figures import figure, vline

TIER_COLORS = {HBM: PALETTE[0], DRAM: PALETTE[2], SSD: PALETTE[4], MISS: PALETTE[1], FIRST: "#94a3b8"}
CAPACITY_KEYS = ("hbm_cache_bytes", "dram_cache_bytes", "ssd_cache_bytes")
MAX_POINTS_PER_OUTCOME = 1500  # keep the scatter light


def run_end_s(r) -> float:
    """The replay's span: the run's grid, which ends when its last returning user has finished."""
    return float(r.grid_s[-1])


def occupancy(ctx, r, steps, t_s: float):
    """GB parked per tier over the run (log), each tier's capacity dashed."""
    minutes = r.grid_s / 60
    traces = []
    for tier, o in enumerate((HBM, DRAM, SSD)):
        cap = float(steps[CAPACITY_KEYS[tier]].value)
        traces.append(dict(type="scatter", x=minutes, y=r.occupancy_bytes[tier] / 1e9,
                           name=f"{TIER_NAMES[tier]} in use", line=dict(color=TIER_COLORS[o], width=2.5)))
        traces.append(dict(type="scatter", x=[minutes[0], minutes[-1]], y=[cap / 1e9] * 2, mode="lines",
                           name=f"{TIER_NAMES[tier]} capacity", showlegend=False,
                           line=dict(color=TIER_COLORS[o], width=1, dash="dash")))
    layout = layout_dict("KV parked per tier (GB, log scale; dashed: capacity)", "Minutes", "GB", log_y=True)
    layout["shapes"] = [vline(t_s / 60, color=INK, dash="dot", width=1)]
    return figure(traces, layout)


def hits(ctx, r, steps, t_s: float):
    """Where returning turns found their KV, binned by arrival, stacked to 100%."""
    share = r.hit_share_over_time()
    centers = (r.bin_edges_s[:-1] + r.bin_edges_s[1:]) / 2 / 60
    traces = [dict(type="bar", x=centers, y=share[row] * 100, name=OUTCOMES[o], marker=dict(color=TIER_COLORS[o]))
              for row, o in enumerate((HBM, DRAM, SSD, MISS))]
    layout = layout_dict("Where returning turns found their KV, over time", "Minutes", "% of returning turns")
    layout.update(barmode="stack", bargap=0.05, shapes=[vline(t_s / 60, color=INK, dash="dot", width=1)])
    return figure(traces, layout)


def ttft_by_prefix(ctx, r, steps):
    """TTFT of returning turns against their prefix by outcome, the no-queueing model as lines."""
    grid = np.linspace(max(1.0, float(r.prefix_tokens[r.returning].min(initial=1))),
                       float(r.prefix_tokens.max(initial=2)), 40).tolist()
    floor = model.ttft_floor_s(ctx.params, grid)
    traces = []
    for o in (HBM, DRAM, SSD, MISS):
        m = r.outcome == o
        if not m.any():
            continue
        idx = np.flatnonzero(m)[:: max(1, int(m.sum()) // MAX_POINTS_PER_OUTCOME)]
        traces.append(dict(type="scatter", x=r.prefix_tokens[idx], y=r.ttft_s[idx], mode="markers", name=OUTCOMES[o],
                           marker=dict(color=TIER_COLORS[o], size=5, opacity=0.45)))
        traces.append(dict(type="scatter", x=grid, y=floor[o], mode="lines", showlegend=False,
                           line=dict(color=TIER_COLORS[o], width=2), hoverinfo="skip"))
    layout = layout_dict("TTFT of returning turns against their prefix (lines: the model with no queueing)",
                         "Prefix restored (tokens)", "TTFT (s, log)", log_y=True)
    layout["hovermode"] = "closest"
    return figure(traces, layout)
