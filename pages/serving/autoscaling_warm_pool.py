import plotly.graph_objects as go
import streamlit as st

from models.serving import autoscaling_warm_pool as model
from ui.charts import PALETTE, layout_dict, sweep_figure
from ui.diagram import Arrow, Box, box_diagram
from ui.figures import figure, vline
from ui.question_page import QuestionPage
from ui.sim_panel import cached_simulation, seed_input

page = QuestionPage("autoscaling-warm-pool")


@page.diagram("scaling_loop")
def scaling_loop(ctx):
    d, p = ctx.derivation, ctx.params
    show = lambda key: d[key].display(hint=False)  # noqa: E731
    boxes = [
        Box("clients", "Clients", f"{p.base_rps:,g} → {show('peak_rps')} · in {p.burst_ramp_s:g} s", 0, 0, "muted"),
        Box("router", "Router · queue", "arrivals/s · queue depth · tokens in flight", 1, 0),
        Box("fleet", "Serving fleet", f"{show('base_replicas')} → {show('peak_replicas')} · "
                                      f"{show('in_flight_peak')} in flight at peak", 2, 0),
        Box("scaler", "Autoscaler", f"cooldown {show('scale_up_cooldown_s')} · hold {show('scale_down_hold_s')}", 1, 1),
        Box("cold", "Cold path", f"node, image, weights, warm-up · {p.cold_start_s:g} s to useful", 2, 1, "danger"),
        Box("warm", "Warm pool", f"{show('warm_pool_replicas')} · weights in HBM · idle or batch work", 3, 1,
            "accent"),
    ]
    arrows = [
        Arrow("clients", "router", ""),
        Arrow("router", "fleet", ""),
        Arrow("router", "scaler", f"{p.signal_delay_s:g} s late"),
        Arrow("scaler", "cold", "order"),
        Arrow("cold", "fleet", f"at {show('first_cold_replica_s')}"),
        Arrow("cold", "warm", "refill"),
        Arrow("warm", "fleet", "promote at once"),
    ]
    return box_diagram(boxes, arrows, title="Who carries the burst, with this scenario's numbers")


@page.chart("warm_pool_vs_cold_start")
def warm_pool_vs_cold_start(ctx):
    fig = sweep_figure(
        ctx.slug, ctx.params, "cold_start_s",
        {"warm_pool_replicas": "Warm pool (leading signal)", "burst_replicas": "The whole burst"},
        title="Warm pool against the cold start: flat until reaction time drops inside the ramp",
        y_title="Replicas", line_shape="hv", n=120, lo=5, hi=max(300.0, ctx.params.cold_start_s), log_x=True,
    )
    return fig


def _run(params_json: str, seed: int):
    return model.simulate(model.Params.model_validate_json(params_json), seed=seed)


def _burst_figure(r) -> go.Figure:
    """Requests queued (left axis) and replicas ready (right), with the warm pool and without it.
    Plain dicts, not validated (ui/figures.py): the JSON plotly's add_trace/add_vline wrote."""
    w, n = r.with_pool, r.without_pool
    t = [x - r.burst_start_s for x in w.t]
    cold_s = r.first_cold_replica_at_s - r.burst_start_s
    traces = [
        dict(type="scatter", x=t, y=n.queue, name="Queued, no pool", line=dict(color=PALETTE[1], width=2.5)),
        dict(type="scatter", x=t, y=w.queue, name="Queued, warm pool", line=dict(color=PALETTE[0], width=2.5)),
        dict(type="scatter", x=t, y=n.ready, name="Ready replicas, no pool", yaxis="y2",
             line=dict(color=PALETTE[1], width=1.5, dash="dot", shape="hv")),
        dict(type="scatter", x=t, y=w.ready, name="Ready replicas, warm pool", yaxis="y2",
             line=dict(color=PALETTE[0], width=1.5, dash="dot", shape="hv")),
    ]
    layout = layout_dict("Requests waiting for a slot, and replicas ready", "Seconds since the burst began",
                         "Requests queued")
    top = max(float(w.ready.max()), float(n.ready.max()))
    layout.update(height=420, yaxis2=dict(title=dict(text="Ready replicas"), overlaying="y", side="right",
                                          showgrid=False, range=[0, top * 1.15], tickmode="auto", nticks=6,
                                          tickformat=",d"))
    layout["shapes"] = [vline(cold_s, color="#64748b", dash="dash", width=1)]
    layout["annotations"] = [dict(x=cold_s, y=1, yref="paper", text="first cold replica", showarrow=False,
                                  xanchor="left", xshift=3, yanchor="top", font=dict(size=11))]
    return figure(traces, layout)


@page.sim("burst")
def burst_panel(ctx):
    p, d = ctx.params, ctx.derivation
    st.markdown("##### Live: the same burst with the warm pool and without it")
    seed = seed_input(ctx.slug)
    r = cached_simulation(ctx.slug, _run, p, seed, "Simulating the burst…")
    w, n = r.with_pool, r.without_pool
    t_cold = r.first_cold_replica_at_s
    cols = st.columns(4)
    cols[0].metric("Backlog, no pool", f"{n.queue_at(t_cold - 1e-6):,.0f}",
                   delta=f"closed form {d.value('backlog_without_pool'):,.0f}", delta_color="off", border=True,
                   help="Requests queued when the first cold replica becomes useful.")
    cols[1].metric("Longest wait, no pool", f"{n.max_wait_s:,.1f} s", border=True)
    cols[2].metric("Longest wait, warm pool", f"{w.max_wait_s:,.1f} s", border=True)
    cols[3].metric("Replica-hours, pool / none", f"{w.replica_seconds / 3600:,.1f} / {n.replica_seconds / 3600:,.1f}",
                   border=True)
    st.plotly_chart(_burst_figure(r), key=f"{ctx.slug}.sim.burst.chart")
    st.caption(
        f"{len(w.t):,} steps of {w.step_s:g} s; Poisson arrivals, exponential request lengths of mean "
        f"{d['request_duration_s'].display()}; the autoscaler reads the arrival rate {p.signal_delay_s:g} s late, counts "
        f"booting replicas as supply and holds surplus {d['scale_down_hold_s'].display()} before releasing it. "
        f"Every request is finished, in service or queued (largest imbalance "
        f"{max(w.conservation_error, n.conservation_error):.1e}). The simulated backlog sits a little under the closed "
        f"form because in-flight requests lag the ramp by about {d['littles_law_lag_requests'].display()}. "
        "Change the seed for another run."
    )


page.render()
