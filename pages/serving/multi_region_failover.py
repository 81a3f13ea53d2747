import math

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from models.sim import failover as sim
from ui.replay import replay
from ui.charts import INK, MUTED, PALETTE, layout_dict, sweep, sweep_figure, sweep_values
from ui.diagram import Arrow, Box, box_diagram
from ui.figures import figure, hline, vline
from ui.question_page import QuestionPage
from ui.sim_panel import run_simulation, seed_input

page = QuestionPage("multi-region-failover")

LOST, SURVIVOR, CAPACITY, GREY = PALETTE[1], PALETTE[0], INK, "#64748b"
POLICY_NAMES = {"immediate": "Immediate", "backoff": "Back-off, no jitter", "backoff_jitter": "Back-off + full jitter"}


@page.diagram("regions")
def regions_diagram(ctx):
    d, p = ctx.derivation, ctx.params
    show = lambda key: d[key].display(hint=False)  # noqa: E731
    survivors = "the survivor" if p.regions == 2 else f"each of {p.regions - 1} survivors"
    lost = "whole region" if p.drop_fraction >= 1 else f"{p.drop_fraction:.0%} of its replicas"
    boxes = [
        Box("clients", "Clients", f"{show('total_load_rps')} · retries: {POLICY_NAMES[p.retry_policy].lower()}", 0, 0,
            "muted"),
        Box("router", "Global router", f"nearest region first · residents stay home · notices after {p.detection_s:g} s"
            + (" · anycast, no DNS cache" if p.dns_ttl_s <= 0 else f" · DNS TTL {p.dns_ttl_s:g} s"), 1, 0),
        Box("lost", "Region A (drops)", f"{lost} · {show('in_flight_lost')} in flight lost · "
            f"{show('stranded_resident_rps')} residents stranded", 2, 0, "danger"),
        Box("survivors", "Survivor regions", f"{survivors}: {show('survivor_steady_load_rps')} · on "
            f"{show('capacity_per_region_rps')} ({show('survivor_utilization_steady')})", 2, 1, "accent"),
        Box("warm", "Warm pool", f"{p.warm_pool_replicas} replicas per region · weights in GPU memory · "
            f"joins at the shift", 3, 1),
        Box("autoscaler", "Autoscaler", f"+{show('cold_replicas_per_survivor')} per survivor · gets "
            f"{show('cold_replicas_obtained')} · after {show('cold_start_effective_s')}", 1, 1),
        Box("weights", "Weights, staged per region", f"{show('weights_bytes')} per replica · "
            + ("already local" if p.weights_prestaged else f"pulled across: {show('weights_pull_s')}"), 0, 1, "muted"),
    ]
    arrows = [
        Arrow("clients", "router", ""),
        Arrow("router", "lost", "until detection + TTL" if p.dns_ttl_s > 0 else "until detection", dashed=True),
        Arrow("router", "survivors", "portable traffic"),
        Arrow("warm", "survivors", ""),
        Arrow("autoscaler", "survivors", ""),
        Arrow("weights", "autoscaler", ""),
    ]
    return box_diagram(boxes, arrows, title="One region drops: where the traffic goes, with this scenario's numbers")


@page.chart("n_minus_1_vs_regions")
def n_minus_1_vs_regions(ctx):
    return sweep_figure(
        ctx.slug, ctx.params, "regions",
        {
            "survivor_utilization_after_loss": "Survivor load after one loss (× capacity)",
            "required_capacity_per_region": "Capacity needed per region (× today)",
            "n_minus_1_max_utilization": "Highest safe utilization today (× capacity)",
        },
        title="How many regions make a loss cheap", y_title="Multiple of one region's capacity",
        x_title="Regions", shapes=[hline(1, color=GREY, dash="dash", width=1)],
    )



@page.chart("retry_wave")
def retry_wave(ctx):
    p = ctx.params
    xs = sweep_values(p, "retry_base_s", 60)
    keys = ["retry_rate_jittered_per_s", "retry_rate_synchronized_per_s", "live_capacity_rps"]
    ys = sweep(ctx.slug, p, "retry_base_s", keys, xs)
    names = {
        "retry_rate_jittered_per_s": "Full jitter over the first back-off",
        "retry_rate_synchronized_per_s": "No jitter: every client on the same tick",
        "live_capacity_rps": "Capacity still alive",
    }
    # Plain dicts, not validated (ui/figures.py): the JSON plotly's add_trace/add_vline wrote.
    traces = [dict(type="scatter", x=xs, y=ys[key], name=names[key], mode="lines",
                   line=dict(color=CAPACITY if key == "live_capacity_rps" else PALETTE[i], width=2.5,
                             dash="dash" if key == "live_capacity_rps" else "solid"))
              for i, key in enumerate(keys)]
    layout = layout_dict("The in-flight loss coming back as retries (log-log)", "Back-off base (s)",
                         "Requests/s", log_x=True, log_y=True)
    layout["yaxis"].update(dtick=1, tickformat=",")
    layout["shapes"] = [vline(p.retry_base_s, color=GREY, dash="dot", width=1)]
    return figure(traces, layout)


# --- the live simulation ---------------------------------------------------------------------



def _per_s(x: np.ndarray, dt: float, window_s: float = 1.0) -> np.ndarray:
    """Per-step counts as a per-second rate averaged over `window_s` (a trailing mean)."""
    w = max(1, int(round(window_s / dt)))
    c = np.cumsum(np.nan_to_num(x), axis=0)
    out = c.copy()
    out[w:] = c[w:] - c[:-w]
    return out / (np.minimum(np.arange(1, len(x) + 1), w).reshape(-1, *([1] * (x.ndim - 1))) * dt)


def _survivor(x: np.ndarray) -> np.ndarray:
    """Mean over the untouched regions (they are statistically identical)."""
    return np.nanmean(x[:, 1:], axis=1)


def _events(layout: dict, r) -> dict:
    """The drop, the shift and the cold replicas: a dotted line and a label each, into `layout`."""
    marks = [(r.config.drop_at_s, "drop"), (r.detection_at_s, "shift")]
    if not math.isnan(r.capacity_added_s):
        marks.append((r.capacity_added_s, "cold replicas"))
    # The drop and the shift are seconds apart, a few pixels on a phone: each label a line lower.
    layout["shapes"] = [vline(x, color=GREY, dash="dot", width=1) for x, _ in marks]
    layout["annotations"] = [dict(x=x, y=1, yref="paper", text=label, showarrow=False, xanchor="left", yanchor="top",
                                  xshift=3, yshift=-15 * i, font=dict(size=11)) for i, (x, label) in enumerate(marks)]
    return layout


# The simulation's figures, as plain dicts (ui/figures.py): the JSON plotly's add_trace/add_vline wrote.


def _load_figure(r, offered: np.ndarray, served: np.ndarray, k: int) -> go.Figure:
    t = r.t_s[::k]
    traces = [
        dict(type="scatter", x=t, y=_survivor(offered)[::k], name="Survivor: offered (incl. retries)",
             line=dict(color=SURVIVOR, width=2)),
        dict(type="scatter", x=t, y=_survivor(served)[::k], name="Survivor: served",
             line=dict(color=PALETTE[2], width=2)),
        dict(type="scatter", x=r.t_s, y=_survivor(r.capacity_rps), name="Survivor: capacity",
             line=dict(color=CAPACITY, width=2, dash="dash", shape="hv")),
        dict(type="scatter", x=t, y=offered[::k, 0], name="Region A: offered", line=dict(color=LOST, width=1.5),
             opacity=0.8),
        dict(type="scatter", x=r.t_s, y=r.capacity_rps[:, 0], name="Region A: capacity",
             line=dict(color=LOST, width=1.5, dash="dash", shape="hv")),
    ]
    layout = layout_dict("Load against capacity, per region (1 s averages)", "Seconds", "Requests/s")
    layout["height"] = 400
    return figure(traces, _events(layout, r))


def _failures_figure(r, k: int) -> go.Figure:
    dt = r.step_s
    series = [
        (_per_s(r.retries, dt), "Retries arriving", PALETTE[3]),
        (_per_s(r.shed_free, dt), "Shed, free tier", PALETTE[4]),
        (_per_s(r.shed_paid, dt), "Shed, paid tier", LOST),
        (_per_s(r.failed.sum(axis=1), dt), "Sent to dead capacity / lost in flight", CAPACITY),
    ]
    traces = [dict(type="scatter", x=r.t_s[::k], y=y[::k], name=name, line=dict(color=color, width=1.8))
              for y, name, color in series]
    layout = layout_dict("What became of the unserved requests (1 s averages, log scale)", "Seconds", "Requests/s",
                         log_y=True)
    layout["yaxis"].update(dtick=1, tickformat=",")
    layout["height"] = 360
    return figure(traces, _events(layout, r))


def _replay_figure(r, names: list[str], offered: np.ndarray, served: np.ndarray, at_s: float) -> go.Figure:
    """Every region at one instant of the run."""
    i = r.at(at_s)
    phase = ("before the drop" if at_s < r.config.drop_at_s else
             "detecting: the router still sends region A its traffic" if at_s < r.detection_at_s else
             "shifted; waiting for cold replicas" if not math.isnan(r.capacity_added_s) and at_s < r.capacity_added_s
             else "shifted")
    traces = [dict(type="bar", x=names, y=y, name=name, marker=dict(color=color)) for y, name, color in (
        (r.capacity_rps[i], "Capacity", MUTED), (offered[i], "Offered (1 s avg)", SURVIVOR),
        (served[i], "Served (1 s avg)", PALETTE[2]), (r.queued[i], "Queued (requests)", PALETTE[4]))]
    layout = layout_dict(f"At {at_s:,.1f} s: {phase}", "Region", "Requests/s (queue: requests)")
    layout.update(barmode="group", hovermode="x", height=340)
    return figure(traces, layout)


def _policies_figure(r, runs: dict, policy: str) -> go.Figure:
    """Retries arriving under each client policy, on the same seed."""
    dt = r.step_s
    traces = [dict(type="scatter", x=r.t_s[::2], y=_per_s(run.retries, dt, 0.5)[::2], name=POLICY_NAMES[pol],
                   line=dict(color=PALETTE[k], width=2 if pol == policy else 1.2))
              for k, (pol, run) in enumerate(runs.items())]
    layout = layout_dict("Retries arriving under each client policy (0.5 s averages, same seed, log scale)", "Seconds",
                         "Retries/s", log_y=True)
    layout["yaxis"].update(dtick=1, tickformat=",")
    layout["height"] = 340
    return figure(traces, _events(layout, r))


def _fmt_s(x: float) -> str:
    return "not by the end" if math.isinf(x) else f"{x:,.1f} s"


@page.sim("failover")
def failover_panel(ctx):
    p, d = ctx.params, ctx.derivation
    st.markdown("##### Live: five minutes around the drop, in 100 ms steps")
    seed = seed_input(ctx.slug)
    r = run_simulation(ctx.slug, p, seed, "Simulating the failover…")
    dt = r.step_s

    cols = st.columns(4)
    cols[0].metric("Peak survivor load (sim)", f"{r.peak_utilization:,.2f}×", border=True,
                   help="Offered load averaged over 1 s, retries included, against the region's capacity at the time.")
    cols[1].metric("Seconds over capacity (sim)", f"{r.seconds_over_capacity:,.1f} s", border=True)
    cols[2].metric("Shed paid / free (sim)", f"{r.shed_paid_total:,.0f} / {r.shed_free_total:,.0f}", border=True,
                   help="Requests given up after admission control refused their last attempt.")
    cols[3].metric("Time to recover (sim)", _fmt_s(r.time_to_recover_s), border=True,
                   help="From the drop until no region sheds, no portable request fails and every queue drains "
                        f"in under {sim.RECOVERED_WAIT_S:g} s. Stranded resident traffic is counted apart.")

    short_s = d.value("seconds_short_s")
    if short_s > 0 and not math.isnan(r.capacity_added_s):
        # The second half of the short spell: the retries of refused requests have settled by then.
        offered_short = f"{r.offered_rps(r.capacity_added_s - short_s / 2, r.capacity_added_s):,.0f} requests/s"
    else:
        offered_short = "never short"
    after_drop_s = r.config.horizon_s - r.config.drop_at_s
    rows = [
        ("Each untouched region after the shift (first attempts)", d["survivor_utilization_steady"].display(),
         f"{r.steady_survivor_utilization:,.3f} × capacity"),
        ("Requests lost in flight at the drop", d["in_flight_lost"].display(), f"{r.in_flight_lost:,.0f} requests"),
        ("Offered to each survivor while short, retries included", d["offered_while_short_rps"].display(),
         offered_short),
        ("Time the survivors run short / over capacity", d["seconds_short_s"].display(hint=False),
         f"{r.seconds_over_capacity:,.1f} s"),
        ("From the drop: capacity in place / recovered", d["time_to_capacity_s"].display(hint=False),
         _fmt_s(r.time_to_recover_s)),
        ("Resident requests stranded", d["stranded_resident_rps"].display(),
         f"{r.lost_resident_total / after_drop_s:,.1f} requests/s"),
        ("Retries: the in-flight wave (model) / the peak (sim, every failure)", d["retry_rate_per_s"].display(),
         f"{r.peak_retry_rate_per_s:,.0f} requests/s"),
    ]
    table = "| Figure | Analytic | Simulated |\n| --- | --- | --- |\n" + "\n".join(
        f"| {a} | {b} | {c} |" for a, b, c in rows)
    st.markdown(table)

    # Plotted series are 1 s averages: every fifth step (0.5 s apart) loses nothing visible and
    # keeps the page light. Peaks and totals above come from the full-resolution run.
    k = max(1, int(round(0.5 / dt)))
    offered = _per_s(r.offered, dt)
    served = _per_s(r.served, dt)
    st.plotly_chart(_load_figure(r, offered, served, k), key=f"{ctx.slug}.sim.load")
    st.plotly_chart(_failures_figure(r, k), key=f"{ctx.slug}.sim.failures")

    # Replay: the state of every region at one instant; play it to watch the failover happen.
    replay_dt = 0.5
    n_steps = int((r.config.horizon_s - dt) / replay_dt) + 1
    names = ["A (drops)"] + [chr(ord("B") + k) for k in range(p.regions - 1)]

    def draw(step: int) -> None:
        at_s = step * replay_dt
        i = r.at(at_s)
        st.plotly_chart(_replay_figure(r, names, offered, served, at_s), key=f"{ctx.slug}.sim.replay")
        wait = r.latency_proxy_s[i] - p.mean_request_s
        st.caption(" · ".join(
            f"{name}: utilization {r.utilization[i, k]:.0%}, queue wait {wait[k]:,.1f} s" if r.capacity_rps[i, k] > 0
            else f"{name}: no capacity" for k, name in enumerate(names)))

    st.markdown("**Replay** the run: press Play to watch the drop, the detection and the shift.")
    replay(f"{ctx.slug}.replay_t", n_steps, replay_dt, draw, label="Second of the run")

    # The same scenario under each retry policy: the stampede, or not.
    runs = {pol: (r if pol == p.retry_policy else
                  run_simulation(ctx.slug, p.model_copy(update={"retry_policy": pol}), seed,
                                 "Simulating the other retry policies…", variant=pol))
            for pol in sim.RETRY_POLICIES}
    st.plotly_chart(_policies_figure(r, runs, p.retry_policy), key=f"{ctx.slug}.sim.policies")
    st.markdown(
        "| Client retries | Peak retries in one 100 ms tick | Peak survivor load | Portable requests lost |\n"
        "| --- | --- | --- | --- |\n" + "\n".join(
            f"| {POLICY_NAMES[pol]}{' (this scenario)' if pol == p.retry_policy else ''} | "
            f"{run.peak_retry_rate_per_s:,.0f}/s | {run.peak_utilization:,.2f} × capacity | "
            f"{run.lost_total - run.lost_resident_total:,.0f} |" for pol, run in runs.items()))
    st.caption(
        f"Books for this run: {r.offered_total:,.0f} requests offered = {r.served_total:,.0f} served + "
        f"{r.in_service_end:,.0f} in service + {r.queued_end:,.0f} queued + {r.retry_pending_end:,.0f} awaiting a retry "
        f"+ {r.shed_total:,.0f} shed + {r.lost_total:,.0f} lost. Requests are a fluid (Poisson arrivals, "
        "proportional splits), so counts are fractional. Change the seed for another run."
    )


page.render()
