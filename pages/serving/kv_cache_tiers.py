import math

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from models.serving import kv_cache_tiers as model
from models.sim.kv_tiers import DRAM, FIRST, HBM, MISS, OUTCOMES, SSD, TIER_NAMES
from ui.replay import replay
from ui.charts import INK, PALETTE, layout_dict, sweep, sweep_values
from ui.figures import figure, vline
from ui.diagram import Arrow, Box, box_diagram
from ui.question_page import QuestionPage
from ui.sim_panel import run_simulation, seed_input
from ui.solve_cache import solve

page = QuestionPage("kv-cache-tiers")

TIER_COLORS = {HBM: PALETTE[0], DRAM: PALETTE[2], SSD: PALETTE[4], MISS: PALETTE[1], FIRST: "#94a3b8"}


@page.diagram("tiers")
def tiers(ctx):
    d = ctx.derivation
    p = ctx.params
    show = lambda key: d[key].display(hint=False)  # noqa: E731
    boxes = [
        Box("users", "Users", f"think: median {p.think_median_s:g} s · mean {show('think_mean_s')}", 0, 0, "muted"),
        Box("router", "Router", "sticky: conversation → replica · prefix hash → tier index", 1, 0),
        Box("batch", "Running batch (HBM)", f"KV room {show('hbm_kv_room_bytes')} · "
            f"{show('hbm_room_conversations')} at full length", 2, 0, "accent"),
        Box("recompute", "No copy left", f"recompute {show('recompute_s')} · "
            f"{show('recompute_gpu_seconds')} of GPU time", 3, 0, "danger"),
        Box("hbm", "HBM cache", f"{show('hbm_cache_bytes')} · {show('hbm_cache_conversations')} · "
            f"residency {show('hbm_residency_s')}", 1, 1),
        Box("dram", "Host DRAM", f"{show('dram_cache_bytes')} · {show('dram_cache_conversations')} · "
            f"residency {show('dram_residency_s')}", 2, 1),
        Box("ssd", "NVMe SSD", f"{show('ssd_cache_bytes')} · {show('ssd_cache_conversations')} · "
            f"residency {show('ssd_residency_s')}", 3, 1),
    ]
    arrows = [
        Arrow("users", "router", "next turn"),
        Arrow("router", "batch", ""),
        Arrow("batch", "hbm", "turn ends: park"),
        Arrow("hbm", "dram", "demote LRU"),
        Arrow("dram", "ssd", "demote LRU"),
        Arrow("dram", "batch", f"reload {show('reload_s_dram')}"),
        Arrow("ssd", "batch", f"reload {show('reload_s_ssd')}"),
        Arrow("ssd", "recompute", "evict", dashed=True),
        Arrow("recompute", "batch", "prefill again", dashed=True),
    ]
    return box_diagram(boxes, arrows, title="Where a conversation's KV lives between turns, with this scenario's numbers")


@page.chart("reload_vs_recompute")
def reload_vs_recompute(ctx):
    p, d = ctx.params, ctx.derivation
    xs = sweep_values(p, "conversation_tokens", 80)
    keys = ["recompute_s", "reload_s_ssd", "reload_s_dram"]
    ys = sweep(ctx.slug, p, "conversation_tokens", keys, xs)
    names = {"recompute_s": "Recompute (prefill with attention)", "reload_s_ssd": "Reload from SSD",
             "reload_s_dram": "Reload from DRAM"}
    colors = {"recompute_s": TIER_COLORS[MISS], "reload_s_ssd": TIER_COLORS[SSD], "reload_s_dram": TIER_COLORS[DRAM]}
    # Built as dicts (ui/figures.py): the same JSON plotly's add_trace/add_vline would write.
    traces = [dict(type="scatter", x=xs, y=ys[key], name=names[key], mode="lines",
                   line=dict(color=colors[key], width=2.5)) for key in keys]
    notes = []
    for tier, key, reload_key in (("SSD", "break_even_prefix_tokens_ssd", "reload_s_ssd"),
                                  ("DRAM", "break_even_prefix_tokens_dram", "reload_s_dram")):
        step = d[key]
        if step.is_numeric and step.value > 0:
            n_star = int(round(float(step.value)))
            at = solve(ctx.slug, p.model_copy(update={"conversation_tokens": n_star}))
            # The label goes below and right of the crossing, under both rising curves: on no line.
            traces.append(dict(
                type="scatter", x=[n_star], y=[at.value(reload_key)], mode="markers+text", showlegend=False,
                marker=dict(color=INK, size=12, symbol="x"), text=[f"{tier} break-even {n_star:,.0f}"],
                textposition="bottom right", hovertemplate=f"{tier} reload = recompute at %{{x:,.0f}} tokens<extra></extra>",
            ))
        else:
            notes.append(f"{tier}: no crossing, reload wins at every length")
    layout = layout_dict("Getting a prefix back: reload against recompute (log time)", "Prefix length (tokens)",
                         "Seconds", log_y=True)
    layout["shapes"] = [vline(p.conversation_tokens, color="#64748b", dash="dot", width=1)]
    if notes:
        # Bottom right: under the DRAM line, which starts at the bottom left.
        layout["annotations"] = [dict(x=1, y=0, xref="paper", yref="paper", text=" · ".join(notes), showarrow=False,
                                      xanchor="right", yanchor="bottom", font=dict(size=11))]
    layout["height"] = 400
    return figure(traces, layout)


@page.chart("shares_vs_think")
def shares_vs_think(ctx):
    p = ctx.params
    xs = sweep_values(p, "think_median_s", 70)
    keys = ["predicted_hit_share_hbm", "predicted_hit_share_dram", "predicted_hit_share_ssd", "predicted_miss_share"]
    ys = sweep(ctx.slug, p, "think_median_s", keys, xs)
    names = ["HBM", "DRAM", "SSD", "miss: recompute"]
    colors = [TIER_COLORS[HBM], TIER_COLORS[DRAM], TIER_COLORS[SSD], TIER_COLORS[MISS]]
    traces = [dict(type="scatter", x=xs, y=[100 * y for y in ys[key]], name=name, mode="lines", stackgroup="share",
                   line=dict(color=color, width=1)) for key, name, color in zip(keys, names, colors)]
    layout = layout_dict("Where returning turns find their KV, against the median think time (estimate)",
                         "Median think time (s, log)", "% of returning turns", log_x=True)
    layout["yaxis"]["range"] = [0, 100]
    layout["shapes"] = [vline(p.think_median_s, color=INK, dash="dot", width=1.5)]
    return figure(traces, layout)


# --- the simulation -----------------------------------------------------------------------------------


def _pct(x: float) -> str:
    return "–" if x != x else f"{100 * x:.1f}%"


def _ms(x: float) -> str:
    if x != x:
        return "–"
    return f"{x * 1000:,.0f} ms" if x < 1 else f"{x:,.2f} s"


# The panel's figures, as plain dicts (ui/figures.py): the replay redraws the first two at every step.


def _occupancy_figure(r, minutes, caps, t_mark: float) -> go.Figure:
    traces = []
    for tier, o in enumerate((HBM, DRAM, SSD)):
        traces.append(dict(type="scatter", x=minutes, y=r.occupancy_bytes[tier] / 1e9,
                           name=f"{TIER_NAMES[tier]} in use", line=dict(color=TIER_COLORS[o], width=2.5)))
        traces.append(dict(type="scatter", x=[minutes[0], minutes[-1]], y=[caps[tier] / 1e9] * 2, mode="lines",
                           name=f"{TIER_NAMES[tier]} capacity", showlegend=False,
                           line=dict(color=TIER_COLORS[o], width=1, dash="dash")))
    layout = layout_dict("KV parked per tier (GB, log scale; dashed: capacity)", "Minutes", "GB", log_y=True)
    layout["shapes"] = [vline(t_mark, color=INK, dash="dot", width=1)]
    return figure(traces, layout)


def _hits_figure(centers, share, t_mark: float) -> go.Figure:
    traces = [dict(type="bar", x=centers, y=share[row] * 100, name=OUTCOMES[o], marker=dict(color=TIER_COLORS[o]))
              for row, o in enumerate((HBM, DRAM, SSD, MISS))]
    layout = layout_dict("Where returning turns found their KV, over time", "Minutes", "% of returning turns")
    layout.update(barmode="stack", bargap=0.05, shapes=[vline(t_mark, color=INK, dash="dot", width=1)])
    return figure(traces, layout)


def _ttft_figure(r, p) -> go.Figure:
    """TTFT against prefix length by outcome, with the no-queue floors."""
    grid = np.linspace(max(1.0, float(r.prefix_tokens[r.returning].min(initial=1))),
                       float(r.prefix_tokens.max(initial=2)), 40).tolist()
    floor = model.ttft_floor_s(p, grid)
    traces = []
    for o in (HBM, DRAM, SSD, MISS):
        m = r.outcome == o
        if not m.any():
            continue
        idx = np.flatnonzero(m)[:: max(1, int(m.sum()) // 1500)]  # keep the chart light
        traces.append(dict(type="scatter", x=r.prefix_tokens[idx], y=r.ttft_s[idx], mode="markers", name=OUTCOMES[o],
                           marker=dict(color=TIER_COLORS[o], size=5, opacity=0.45)))
        traces.append(dict(type="scatter", x=grid, y=floor[o], mode="lines", showlegend=False,
                           line=dict(color=TIER_COLORS[o], width=2), hoverinfo="skip"))
    layout = layout_dict("TTFT of returning turns against their prefix (lines: the model with no queueing)",
                         "Prefix restored (tokens)", "TTFT (s, log)", log_y=True)
    layout["hovermode"] = "closest"
    return figure(traces, layout)


@page.sim("kv-tiers")
def tiers_panel(ctx):
    p, d = ctx.params, ctx.derivation
    slug = ctx.slug
    st.markdown("##### Live: conversations moving through HBM, DRAM and SSD on one replica")
    seed = seed_input(slug)
    r = run_simulation(slug, p, seed, "Simulating conversations…")
    window_s = r.grid_s[-1]
    # Steady state: skip the first third of the window, while the tiers are still filling.
    shares = r.shares_between(window_s / 3, window_s)
    predicted = [d.value(k) for k in ("predicted_hit_share_hbm", "predicted_hit_share_dram",
                                            "predicted_hit_share_ssd", "predicted_miss_share")]
    hours = r.end_s / 3600
    row1 = st.columns(3)
    row1[0].metric("Simulated hit rate", _pct(1 - shares[3]), border=True,
                   help=f"Returning turns served from a tier, after the first third of the window. "
                        f"Estimate: {d['predicted_hit_rate'].display()}.")
    row1[1].metric("HBM hits (sim · estimate)", f"{_pct(shares[0])} · {_pct(predicted[0])}", border=True,
                   help=f"HBM residency {d['hbm_residency_s'].display()} against a median think of "
                        f"{p.think_median_s:g} s.")
    row1[2].metric("DRAM hits (sim · estimate)", f"{_pct(shares[1])} · {_pct(predicted[1])}", border=True,
                   help=f"Back within the DRAM residency, {d['dram_residency_s'].display()}.")
    row2 = st.columns(3)
    row2[0].metric("Median TTFT, DRAM hit", _ms(r.ttft_quantile(DRAM, 0.5)), border=True,
                   help=f"Reload of a full conversation: {d['reload_s_dram'].display()}, then the new message's "
                        "prefill.")
    row2[1].metric("Median TTFT, SSD hit", _ms(r.ttft_quantile(SSD, 0.5)), border=True,
                   help=f"Reload of a full conversation: {d['reload_s_ssd'].display()}; recompute: "
                        f"{d['recompute_s'].display()}.")
    row2[2].metric("Recompute avoided (GPU-h)", f"{r.gpu_seconds_avoided / 3600:,.1f}", border=True,
                   help=f"Over the whole run: {r.conversations} conversations, {hours:,.1f} h of simulated time. "
                        f"Estimate: {d['gpu_seconds_avoided_per_conversation'].display()} per conversation, "
                        f"{d.value('gpu_seconds_avoided_per_conversation') * r.conversations / 3600:,.1f} GPU-h "
                        "for as many.")

    last = r.turn == p.turns
    last_prefix = float(p.conversation_tokens - d.value("message_tokens"))
    floors = model.ttft_floor_s(p, [last_prefix])
    rows = [f"| Where the KV was | Simulated share | Estimate | Median TTFT, last turn (sim) | "
            f"Model, last turn, no queueing | p95 TTFT, all turns (sim) |",
            "| --- | --- | --- | --- | --- | --- |"]
    for j, o in enumerate((HBM, DRAM, SSD, MISS)):
        at_last = r.ttft_s[last & (r.outcome == o)]
        med = float(np.median(at_last)) if at_last.size else math.nan
        rows.append(f"| {OUTCOMES[o]} | {_pct(shares[j])} | {_pct(predicted[j])} | {_ms(med)} | "
                    f"{_ms(floors[o][0])} | {_ms(r.ttft_quantile(o, 0.95))} |")
    st.markdown("\n".join(rows))
    st.caption(f"Shares: returning turns after the first third of the window (the tiers fill first). The last "
               f"turn restores a prefix of {last_prefix:,.0f} tokens; the model column is that reload or "
               "recompute plus the new message's prefill, with no one ahead in any queue.")

    # Occupancy per tier and hit shares over time, with a replay marker (press Play to watch).
    minutes = r.grid_s / 60
    caps = (d.value("hbm_cache_bytes"), d.value("dram_cache_bytes"), d.value("ssd_cache_bytes"))
    share = r.hit_share_over_time()
    centers = (r.bin_edges_s[:-1] + r.bin_edges_s[1:]) / 2 / 60
    replay_dt_min = 0.5

    def draw(step: int) -> None:
        t_mark = step * replay_dt_min
        st.plotly_chart(_occupancy_figure(r, minutes, caps, t_mark), key=f"{slug}.sim.occupancy")
        j = int(np.clip(np.searchsorted(r.grid_s, t_mark * 60), 0, r.grid_s.size - 1))
        st.caption(
            f"At minute {t_mark:g}: " + " · ".join(
                f"{TIER_NAMES[t]} {r.occupancy_bytes[t, j] / 1e9:,.0f} GB in {int(r.entries[t, j])} conversations"
                for t in range(3))
            + f" · {int(r.thinking[j])} users thinking between turns."
        )
        st.plotly_chart(_hits_figure(centers, share, t_mark), key=f"{slug}.sim.hits")

    replay(f"{slug}.replay_t", int(minutes[-1] / replay_dt_min) + 1, replay_dt_min * 60, draw,
           label="Minute of the run")

    # TTFT against prefix length by outcome, with the no-queue floors.
    st.plotly_chart(_ttft_figure(r, p), key=f"{slug}.sim.ttft")

    window_note = ""
    if model.sim_window_minutes(p) < p.sim_minutes:
        window_note = (f" The window was shortened to {model.sim_window_minutes(p):g} minutes to keep the run "
                       "interactive at this load.")
    st.caption(
        f"{r.conversations} conversations, {r.outcome.size:,} turns, {r.demotions:,} demotions, {r.drops:,} "
        f"entries evicted from the last tier; the run ends {r.end_s / 60:,.0f} minutes in, when the last "
        f"returning user has finished. Prefill is one FIFO queue at {d['replica_flops'].display()}; each link "
        f"moves one reload at a time; replies stream at {model.TPOT_S * 1000:g} ms a token.{window_note} "
        "Change the seed to see another run."
    )


page.render()
