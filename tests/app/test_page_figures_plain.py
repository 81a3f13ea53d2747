"""Page figures built as plain dicts (ui/figures.py) send Streamlit the JSON the old validated
builds sent. Each OLD_* function below is a page's former builder, kept verbatim (go.Figure,
add_trace, add_vline/add_hline/add_annotation, base_layout); figures a simulation panel drew
inline are wrapped in a function of what they read, without the st.plotly_chart call, and the
page's colour constants are bound locally. Each test builds the figure both ways, at the page's
default scenario and at one other, and compares what st.plotly_chart would send."""

from __future__ import annotations

import json
import math
import runpy
from functools import lru_cache
from unittest import mock

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import plotly.tools
import pytest
import streamlit  # noqa: F401  (registers the plotly template the app runs with)

from models.registry import QUESTIONS
from ui.charts import INK, LEGEND, MUTED, PALETTE, base_layout, legend_line, sweep, sweep_figure, sweep_values
from ui.question_page import PageContext, QuestionPage
from ui.solve_cache import solve


def _sent(fig: go.Figure) -> dict:
    """What st.plotly_chart sends to the browser (as tests/app/test_figures.py reads it)."""
    fig = plotly.tools.return_figure_from_figure_or_data(fig, validate_figure=True)
    return json.loads(pio.to_json(fig, validate=False))


def _normalised(sent: dict) -> dict:
    """plotly's add_hline/add_vline, run on an unvalidated figure (the app's sweep figures), also
    write an empty `annotations` list (they re-assign the annotations they added, none): an empty
    list draws nothing, so it is dropped before comparing. Nothing else is normalised."""
    layout = dict(sent["layout"])
    if layout.get("annotations") == []:
        del layout["annotations"]
    return {**sent, "layout": layout}


@lru_cache(maxsize=None)
def _page(slug: str) -> dict:
    """The page script's globals (its builders), without drawing the page."""
    with mock.patch.object(QuestionPage, "render", lambda self: None):
        return runpy.run_path(str(QUESTIONS[slug].page_path), run_name="page_under_test")


def _ctx(slug: str, **changes) -> PageContext:
    """What QuestionPage hands a chart: the scenario, its derivation and the seed's."""
    q = QUESTIONS[slug]
    assert set(changes) <= set(q.Params.model_fields), changes  # a misspelt knob would be ignored
    params = q.Params.model_validate({**q.Params().model_dump(), **changes})
    return PageContext(q, params, solve(slug, params), solve(slug, q.Params()))


def _chart(slug: str, name: str):
    return _page(slug)["page"]._renderers[("chart", name)]


def _assert_same(monkeypatch, old_build, new_build) -> dict:
    """The old build as the app ran it, against the new one unvalidated (the app) and validated
    (tests/conftest.py: a misspelt property fails there)."""
    monkeypatch.setenv("WALKTHROUGHS_VALIDATE_FIGURES", "0")
    old = _normalised(_sent(old_build()))
    for validate in ("0", "1"):
        monkeypatch.setenv("WALKTHROUGHS_VALIDATE_FIGURES", validate)
        new = _normalised(_sent(new_build()))
        assert new == old, _first_difference(old, new)
    return old


def _first_difference(a, b, path="") -> str:
    if type(a) is not type(b):
        return f"{path}: {type(a).__name__} {a!r:.200} != {type(b).__name__} {b!r:.200}"
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if a.get(k, "<missing>") != b.get(k, "<missing>"):
                return _first_difference(a.get(k, "<missing>"), b.get(k, "<missing>"), f"{path}.{k}")
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} items != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return _first_difference(x, y, f"{path}[{i}]")
    return f"{path}: {a!r:.200} != {b!r:.200}"


def _sim(slug: str, seed: int = 0, **changes):
    """The question's own simulation of a scenario, as ui.sim_panel.run_simulation runs it."""
    return QUESTIONS[slug].module.simulate(_ctx(slug, **changes).params, seed=seed)


# --- batched-inference-api ------------------------------------------------------------------------


@pytest.mark.parametrize("changes", [{}, {"flush_timeout_ms": 35.0, "arrival_rps": 6000.0, "dispatchers": 3}],
                         ids=["default", "other"])
def test_batched_latency_chart_is_declared_over_the_steps(changes):
    """The latency chart (once a page function sweeping the knob at two traffic levels) is the page's
    sweep of two steps: the worst latency at the scenario's traffic and at a fortieth of it, in ms."""
    slug = "batched-inference-api"
    ctx = _ctx(slug, **changes)
    p = ctx.params
    sent = _sent(_chart(slug, "latency_vs_timeout")(ctx))
    lines = [tr for tr in sent["data"] if tr.get("showlegend") is not False]
    assert [tr["name"] for tr in lines] == [f"scenario traffic: {p.arrival_rps:,.0f} req/s",
                                            f"quiet hours (1/40): {p.arrival_rps / 40:,.4g} requests/s"]
    for tr, key in zip(lines, ("worst_latency_s", "quiet_worst_latency_s")):
        assert p.flush_timeout_ms in tr["x"]
        for x, y in zip(tr["x"], tr["y"]):
            assert y == pytest.approx(1000 * solve(slug, p.model_copy(update={"flush_timeout_ms": x})).value(key))
    # the quiet line is the scenario's own step moved to a fortieth of the traffic (the old chart's second sweep)
    for x in lines[1]["x"][::7]:
        quiet = p.model_copy(update={"flush_timeout_ms": x, "arrival_rps": p.arrival_rps / 40})
        assert solve(slug, p.model_copy(update={"flush_timeout_ms": x})).value("quiet_worst_latency_s") == \
            pytest.approx(solve(slug, quiet).value("worst_latency_s"))
    assert sent["layout"]["xaxis"]["type"] == "log" and sent["layout"]["shapes"][0]["x0"] == p.flush_timeout_ms


# --- autoscaling-warm-pool ------------------------------------------------------------------------


def OLD_autoscaling_burst(r):
    """The figure the burst panel drew inline (st.plotly_chart dropped)."""
    w, n = r.with_pool, r.without_pool
    t_cold = r.first_cold_replica_at_s
    t = [x - r.burst_start_s for x in w.t]
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=t, y=n.queue, name="Queued, no pool", line=dict(color=PALETTE[1], width=2.5)))
    fig.add_trace(go.Scatter(x=t, y=w.queue, name="Queued, warm pool", line=dict(color=PALETTE[0], width=2.5)))
    fig.add_trace(go.Scatter(x=t, y=n.ready, name="Ready replicas, no pool", yaxis="y2",
                             line=dict(color=PALETTE[1], width=1.5, dash="dot", shape="hv")))
    fig.add_trace(go.Scatter(x=t, y=w.ready, name="Ready replicas, warm pool", yaxis="y2",
                             line=dict(color=PALETTE[0], width=1.5, dash="dot", shape="hv")))
    fig.add_vline(x=t_cold - r.burst_start_s, line=dict(color="#64748b", dash="dash", width=1))
    fig.add_annotation(x=t_cold - r.burst_start_s, y=1, yref="paper", text="first cold replica", showarrow=False,
                       xanchor="left", xshift=3, yanchor="top", font=dict(size=11))
    base_layout(fig, "Requests waiting for a slot, and replicas ready", "Seconds since the burst began", "Requests queued")
    top = max(float(w.ready.max()), float(n.ready.max()))
    fig.update_layout(height=420, yaxis2=dict(title="Ready replicas", overlaying="y", side="right", showgrid=False,
                                              range=[0, top * 1.15], tickmode="auto", nticks=6, tickformat=",d"))
    return fig


@pytest.mark.parametrize("seed, changes", [(0, {}), (7, {"cold_start_s": 60.0})], ids=["default", "other"])
def test_autoscaling_burst(monkeypatch, seed, changes):
    slug = "autoscaling-warm-pool"
    r = _sim(slug, seed, **changes)
    ctx = _ctx(slug, **changes)
    steps = QUESTIONS[slug].module.simulation_steps(ctx.params, r)
    sent = _assert_same(monkeypatch, lambda: OLD_autoscaling_burst(r), lambda: _page(slug)["_burst_figure"](ctx, r, steps))
    assert len(sent["data"]) == 4 and len(sent["layout"]["annotations"]) == 1


@pytest.mark.parametrize("changes", [{}, {"cold_start_s": 20.0, "burst_ramp_s": 600.0}, {"cold_start_s": 600.0}],
                         ids=["default", "other", "past-300"])
def test_autoscaling_chart_is_declared_over_the_steps(changes):
    """The warm-pool chart's lines are solves of the model at each cold start it plots."""
    slug = "autoscaling-warm-pool"
    ctx = _ctx(slug, **changes)
    sent = _sent(_chart(slug, "warm_pool_vs_cold_start")(ctx))
    lines = [tr for tr in sent["data"] if tr.get("showlegend") is not False]
    assert [tr["name"] for tr in lines] == ["Warm pool (leading signal)", "The whole burst"]
    for tr, key in zip(lines, ("warm_pool_replicas", "burst_replicas")):
        assert tr["x"][0] == 5 and tr["x"][-1] == max(300, ctx.params.cold_start_s) and ctx.params.cold_start_s in tr["x"]
        for x, y in zip(tr["x"], tr["y"]):
            assert y == solve(slug, ctx.params.model_copy(update={"cold_start_s": x})).value(key)


# --- token-rate-limiter ---------------------------------------------------------------------------


def OLD_token_utilization_vs_peak_use(ctx):
    fig = sweep_figure(
        ctx.slug, ctx.params, "peak_use_fraction",
        {"fleet_utilization_at_peak": "Fleet busy at the peak minute (%)"},
        title="Fleet utilization against the share of summed limits in use",
        y_title="Fleet busy (%)", x_scale=100, n=100,
    )
    fig.add_hline(y=100, line=dict(color="#64748b", dash="dash", width=1))  # declared: hlines=(100,)
    return fig


def OLD_token_trace_figures(result, p):
    """The two figures the token_trace panel drew inline (st.plotly_chart dropped)."""
    names = [t.name for t in result.workload.tenants]
    settle, reserve = result.settle, result.reserve
    fig = go.Figure()
    for i, name in enumerate(names):
        fig.add_trace(go.Scatter(x=settle.t, y=settle.output_level[i], name=name,
                                 line=dict(color=PALETTE[i], width=1.8)))
    fig.add_hline(y=p.max_tokens, line=dict(color=INK, dash="dash", width=1))
    fig.add_annotation(x=1, xref="paper", xanchor="right", y=p.max_tokens, text="one reservation (max_tokens)",
                       showarrow=False, yanchor="bottom", font=dict(size=11))
    base_layout(fig, "Output bucket level per tenant, reserve then settle", "Seconds", "Tokens in the bucket")
    fig.update_layout(height=400)
    bars = go.Figure()
    for mode, run, dash in (("reserve only", reserve, "#94a3b8"), ("reserve + settle", settle, PALETTE[0])):
        bars.add_trace(go.Bar(x=names, y=run.admitted, name=f"admitted, {mode}", marker_color=dash))
    bars.add_trace(go.Bar(x=names, y=settle.requested, name="requested", marker_color=MUTED))
    base_layout(bars, "Requests admitted over the run", "", "Requests")
    bars.update_layout(barmode="group")
    return fig, bars


@pytest.mark.parametrize("changes", [{}, {"peak_use_fraction": 0.9}], ids=["default", "other"])
def test_token_utilization_vs_peak_use(monkeypatch, changes):
    slug = "token-rate-limiter"
    ctx = _ctx(slug, **changes)
    sent = _assert_same(monkeypatch, lambda: OLD_token_utilization_vs_peak_use(ctx),
                        lambda: _chart(slug, "utilization_vs_peak_use")(ctx))
    assert len(sent["layout"]["shapes"]) == 2  # the current value, then the 100% line


@pytest.mark.parametrize("seed, changes", [(0, {}), (3, {"max_tokens": 8000})], ids=["default", "other"])
def test_token_trace(monkeypatch, seed, changes):
    slug = "token-rate-limiter"
    r, p = _sim(slug, seed, **changes), _ctx(slug, **changes).params
    levels = _assert_same(monkeypatch, lambda: OLD_token_trace_figures(r, p)[0],
                          lambda: _page(slug)["_levels_figure"](_ctx(slug, **changes), r, None))
    bars = _assert_same(monkeypatch, lambda: OLD_token_trace_figures(r, p)[1],
                        lambda: _page(slug)["_admitted_figure"](_ctx(slug, **changes), r, None))
    assert len(levels["data"]) == 3 and len(levels["layout"]["annotations"]) == 1 and len(bars["data"]) == 3


# --- multi-region-failover ------------------------------------------------------------------------

MRF = "multi-region-failover"
MRF_LOST, MRF_SURVIVOR, MRF_CAPACITY, MRF_GREY = PALETTE[1], PALETTE[0], INK, "#64748b"
MRF_POLICY_NAMES = {"immediate": "Immediate", "backoff": "Back-off, no jitter", "backoff_jitter": "Back-off + full jitter"}


def OLD_mrf_n_minus_1_vs_regions(ctx):
    GREY = MRF_GREY
    fig = sweep_figure(
        ctx.slug, ctx.params, "regions",
        {
            "survivor_utilization_after_loss": "Survivor load after one loss (× capacity)",
            "required_capacity_per_region": "Capacity needed per region (× today)",
            "n_minus_1_max_utilization": "Highest safe utilization today (× capacity)",
        },
        title="How many regions make a loss cheap", y_title="Multiple of one region's capacity",
        x_title="Regions",
    )
    fig.add_hline(y=1, line=dict(color=GREY, dash="dash", width=1))
    return fig


def OLD_mrf_retry_wave(ctx):
    CAPACITY, GREY = MRF_CAPACITY, MRF_GREY
    p = ctx.params
    xs = sweep_values(p, "retry_base_s", 60)
    keys = ["retry_rate_jittered_per_s", "retry_rate_synchronized_per_s", "live_capacity_rps"]
    ys = sweep(ctx.slug, p, "retry_base_s", keys, xs)
    fig = go.Figure()
    names = {
        "retry_rate_jittered_per_s": "Full jitter over the first back-off",
        "retry_rate_synchronized_per_s": "No jitter: every client on the same tick",
        "live_capacity_rps": "Capacity still alive",
    }
    for i, key in enumerate(keys):
        fig.add_trace(go.Scatter(
            x=xs, y=ys[key], name=names[key], mode="lines",
            line=dict(color=CAPACITY if key == "live_capacity_rps" else PALETTE[i], width=2.5,
                      dash="dash" if key == "live_capacity_rps" else "solid"),
        ))
    fig.add_vline(x=p.retry_base_s, line=dict(color=GREY, dash="dot", width=1))
    base_layout(fig, "The in-flight loss coming back as retries (log-log)", "Back-off base (s)",
                "Requests/s", log_x=True, log_y=True)
    fig.update_yaxes(dtick=1, tickformat=",")
    return fig


def OLD_mrf_events(fig: go.Figure, r) -> None:
    GREY = MRF_GREY
    marks = [(r.config.drop_at_s, "drop"), (r.detection_at_s, "shift")]
    if not math.isnan(r.capacity_added_s):
        marks.append((r.capacity_added_s, "cold replicas"))
    # The drop and the shift are seconds apart, a few pixels on a phone: each label a line lower.
    for i, (x, label) in enumerate(marks):
        fig.add_vline(x=x, line=dict(color=GREY, dash="dot", width=1))
        fig.add_annotation(x=x, y=1, yref="paper", text=label, showarrow=False, xanchor="left", yanchor="top",
                           xshift=3, yshift=-15 * i, font=dict(size=11))


def OLD_mrf_panel_figures(r):
    """The load and failures figures the failover panel drew inline (st.plotly_chart dropped)."""
    LOST, SURVIVOR, CAPACITY = MRF_LOST, MRF_SURVIVOR, MRF_CAPACITY
    _per_s, _survivor, _events = _page(MRF)["_per_s"], _page(MRF)["_survivor"], OLD_mrf_events
    dt = r.step_s
    k = max(1, int(round(0.5 / dt)))
    t = r.t_s[::k]
    offered = _per_s(r.offered, dt)
    served = _per_s(r.served, dt)
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=t, y=_survivor(offered)[::k], name="Survivor: offered (incl. retries)",
                             line=dict(color=SURVIVOR, width=2)))
    fig.add_trace(go.Scatter(x=t, y=_survivor(served)[::k], name="Survivor: served",
                             line=dict(color=PALETTE[2], width=2)))
    fig.add_trace(go.Scatter(x=r.t_s, y=_survivor(r.capacity_rps), name="Survivor: capacity",
                             line=dict(color=CAPACITY, width=2, dash="dash", shape="hv")))
    fig.add_trace(go.Scatter(x=t, y=offered[::k, 0], name="Region A: offered", line=dict(color=LOST, width=1.5),
                             opacity=0.8))
    fig.add_trace(go.Scatter(x=r.t_s, y=r.capacity_rps[:, 0], name="Region A: capacity",
                             line=dict(color=LOST, width=1.5, dash="dash", shape="hv")))
    _events(fig, r)
    base_layout(fig, "Load against capacity, per region (1 s averages)", "Seconds", "Requests/s")
    fig.update_layout(height=400)
    load = fig

    fig = go.Figure()
    series = [
        (_per_s(r.retries, dt), "Retries arriving", PALETTE[3]),
        (_per_s(r.shed_free, dt), "Shed, free tier", PALETTE[4]),
        (_per_s(r.shed_paid, dt), "Shed, paid tier", LOST),
        (_per_s(r.failed.sum(axis=1), dt), "Sent to dead capacity / lost in flight", CAPACITY),
    ]
    for y, name, color in series:
        fig.add_trace(go.Scatter(x=t, y=y[::k], name=name, line=dict(color=color, width=1.8)))
    _events(fig, r)
    base_layout(fig, "What became of the unserved requests (1 s averages, log scale)",
                "Seconds", "Requests/s", log_y=True)
    fig.update_yaxes(dtick=1, tickformat=",")
    fig.update_layout(height=360)
    return load, fig


def OLD_mrf_replay(r, p, at_s):
    """The replay's draw(step), for the step at `at_s` (st.plotly_chart dropped)."""
    SURVIVOR = MRF_SURVIVOR
    dt = r.step_s
    offered = _page(MRF)["_per_s"](r.offered, dt)
    served = _page(MRF)["_per_s"](r.served, dt)
    names = ["A (drops)"] + [chr(ord("B") + k) for k in range(p.regions - 1)]
    i = r.at(at_s)
    phase = ("before the drop" if at_s < r.config.drop_at_s else
             "detecting: the router still sends region A its traffic" if at_s < r.detection_at_s else
             "shifted; waiting for cold replicas" if not math.isnan(r.capacity_added_s) and at_s < r.capacity_added_s
             else "shifted")
    fig = go.Figure()
    fig.add_trace(go.Bar(x=names, y=r.capacity_rps[i], name="Capacity", marker_color=MUTED))
    fig.add_trace(go.Bar(x=names, y=offered[i], name="Offered (1 s avg)", marker_color=SURVIVOR))
    fig.add_trace(go.Bar(x=names, y=served[i], name="Served (1 s avg)", marker_color=PALETTE[2]))
    fig.add_trace(go.Bar(x=names, y=r.queued[i], name="Queued (requests)", marker_color=PALETTE[4]))
    base_layout(fig, f"At {at_s:,.1f} s: {phase}", "Region", "Requests/s (queue: requests)")
    fig.update_layout(barmode="group", hovermode="x", height=340)
    return fig


def OLD_mrf_policies(r, runs, p):
    POLICY_NAMES = MRF_POLICY_NAMES
    _per_s, _events = _page(MRF)["_per_s"], OLD_mrf_events
    dt = r.step_s
    fig = go.Figure()
    for k, (pol, run) in enumerate(runs.items()):
        fig.add_trace(go.Scatter(x=r.t_s[::2], y=_per_s(run.retries, dt, 0.5)[::2], name=POLICY_NAMES[pol],
                                 line=dict(color=PALETTE[k], width=2 if pol == p.retry_policy else 1.2)))
    _events(fig, r)
    base_layout(fig, "Retries arriving under each client policy (0.5 s averages, same seed, log scale)", "Seconds",
                "Retries/s", log_y=True)
    fig.update_yaxes(dtick=1, tickformat=",")
    fig.update_layout(height=340)
    return fig


MRF_SCENARIOS = [{}, {"regions": 4, "retry_base_s": 0.5}]


@pytest.mark.parametrize("changes", MRF_SCENARIOS, ids=["default", "other"])
def test_mrf_charts(monkeypatch, changes):
    ctx = _ctx(MRF, **changes)
    sent = _assert_same(monkeypatch, lambda: OLD_mrf_n_minus_1_vs_regions(ctx),
                        lambda: _chart(MRF, "n_minus_1_vs_regions")(ctx))
    assert len(sent["layout"]["shapes"]) == 2
    sent = _assert_same(monkeypatch, lambda: OLD_mrf_retry_wave(ctx), lambda: _chart(MRF, "retry_wave")(ctx))
    assert sent["layout"]["yaxis"]["dtick"] == 1 and sent["layout"]["yaxis"]["tickformat"] == ","


@pytest.mark.parametrize("seed, changes", [(0, {}), (5, {"regions": 4, "retry_policy": "backoff"})],
                         ids=["default", "other"])
def test_mrf_simulation_figures(monkeypatch, seed, changes):
    page = _page(MRF)
    r, p = _sim(MRF, seed, **changes), _ctx(MRF, **changes).params
    dt = r.step_s
    k = max(1, int(round(0.5 / dt)))
    offered, served = page["_per_s"](r.offered, dt), page["_per_s"](r.served, dt)
    old_load, old_failures = OLD_mrf_panel_figures(r)
    sent = _assert_same(monkeypatch, lambda: old_load, lambda: page["_load_figure"](r, offered, served, k))
    assert len(sent["data"]) == 5 and len(sent["layout"]["annotations"]) == len(sent["layout"]["shapes"]) >= 2
    _assert_same(monkeypatch, lambda: old_failures, lambda: page["_failures_figure"](r, k))

    names = ["A (drops)"] + [chr(ord("B") + k) for k in range(p.regions - 1)]
    titles = set()
    for at_s in (1.0, r.config.drop_at_s + 0.5, r.detection_at_s + 1.0, r.config.horizon_s - 1.0):
        sent = _assert_same(monkeypatch, lambda: OLD_mrf_replay(r, p, at_s),
                            lambda: page["_replay_figure"](r, names, offered, served, at_s))
        titles.add(sent["layout"]["title"]["text"].split(": ")[1])
    assert len(titles) >= 3  # before the drop, detecting, shifted (each phase's title)

    runs = {pol: (r if pol == p.retry_policy else _sim(MRF, seed, **{**changes, "retry_policy": pol}))
            for pol in page["sim"].RETRY_POLICIES}
    sent = _assert_same(monkeypatch, lambda: OLD_mrf_policies(r, runs, p),
                        lambda: page["_policies_figure"](r, runs, p.retry_policy))
    assert len(sent["data"]) == 3


# --- gpu-credit-ledger ----------------------------------------------------------------------------


def OLD_ledger_water_fill(teams, weights, demands, cap, trace, alloc):
    """The figure the water_fill panel drew inline (st.plotly_chart dropped)."""
    from models.units import format_number

    fig = go.Figure()
    fig.add_trace(go.Bar(x=teams, y=demands, name="Demand", marker_color=MUTED))
    fig.add_trace(go.Bar(x=teams, y=alloc, name="Allocation", marker_color=PALETTE[0],
                         text=[f"{a:,}" for a in alloc], textposition="outside"))
    if math.isfinite(trace.level):
        fig.add_trace(go.Scatter(x=teams, y=[trace.level * w for w in weights], mode="markers",
                                 name="Final level × weight", marker=dict(symbol="line-ew-open", size=28,
                                                                          color=PALETTE[1], line=dict(width=3))))
    base_layout(fig, f"{sum(alloc):,} of {int(cap):,} GPUs allocated; demand {format_number(sum(demands))}",
                "Team", "GPUs")
    fig.update_layout(barmode="overlay", hovermode="closest")
    return fig


@pytest.mark.parametrize("cap, scavenger", [(None, False), (2000, True), (1_000_000, False)],
                         ids=["default", "short-with-scavenger", "plenty"])
def test_ledger_water_fill(monkeypatch, cap, scavenger):
    slug = "gpu-credit-ledger"
    model, p = _page(slug)["model"], QUESTIONS[slug].Params()
    teams, weights, demands = list(model.TEAMS), [float(w) for w in p.weights()], [float(d) for d in p.demands()]
    if scavenger:
        teams, weights, demands = [*teams, "Scavenger"], [*weights, 0.0], [*demands, 512.0]
    cap = float(p.gpus if cap is None else cap)
    trace = model.water_fill_trace(cap, demands, weights)
    alloc = model.whole_units(trace.allocation, demands, int(cap))
    sent = _assert_same(monkeypatch, lambda: OLD_ledger_water_fill(teams, weights, demands, cap, trace, alloc),
                        lambda: _page(slug)["_water_fill_figure"](teams, weights, demands, cap, trace, alloc))
    assert len(sent["data"]) == (3 if math.isfinite(trace.level) else 2)


# --- job-scheduler-100k ---------------------------------------------------------------------------

JSK = "job-scheduler-100k"


def OLD_jsk_loss_vs_write(ctx):
    fig = sweep_figure(
        ctx.slug, ctx.params, "checkpoint_write_min",
        {"lost_work_without_signal_gpu_hours": "Killed outright: work since last checkpoint",
         "lost_work_with_checkpoint_on_signal_gpu_hours": "Checkpoint on the signal"},
        title="GPU-hours the preemption loses against the checkpoint write time", y_title="GPU-hours",
        n=80, line_shape="linear",
    )
    fig.add_vline(x=ctx.params.grace_min, line=dict(color="#dc2626", dash="dash", width=1.5))
    # In the legend: beside the line, the label sat on the signal curve, which climbs there.
    fig.add_trace(legend_line(f"grace period ({ctx.params.grace_min:g} min)", color="#dc2626", dash="dash", width=1.5))
    return fig


@pytest.mark.parametrize("changes", [{}, {"jobs": 5000, "tick_s": 2.0, "checkpoint_write_min": 8.0, "grace_min": 3.0}],
                         ids=["default", "other"])
def test_jsk_charts(monkeypatch, changes):
    ctx = _ctx(JSK, **changes)
    p = ctx.params
    # the scan chart is declared: each line's points are solves at that queue length, the levels the tick
    # and its placement budget (tick x share), each named at its left end
    sent = _sent(_chart(JSK, "scan_vs_jobs")(ctx))
    lines = [t for t in sent["data"] if t["mode"] == "lines"]
    assert [t["name"] for t in lines] == ["Naive tick: check every job", "Indexed tick: heaps"]
    for i in (0, len(lines[0]["x"]) // 2, -1):
        at = QUESTIONS[JSK].solve(p.model_copy(update={"jobs": lines[0]["x"][i]}))
        assert lines[0]["y"][i] == pytest.approx(at.value("naive_scan_s_per_tick"))
        assert lines[1]["y"][i] == pytest.approx(at.value("indexed_tick_s"))
    levels = [sh["y0"] for sh in sent["layout"]["shapes"] if sh["yref"] == "y"]
    assert levels == [pytest.approx(p.tick_s), pytest.approx(p.tick_s * p.scan_budget_fraction)]
    notes = sent["layout"]["annotations"]
    assert [n["text"] for n in notes] == [f"the tick ({p.tick_s:g} s)", "placement budget"]
    assert notes[1]["y"] == pytest.approx(math.log10(p.tick_s * p.scan_budget_fraction))
    sent = _assert_same(monkeypatch, lambda: OLD_jsk_loss_vs_write(ctx), lambda: _chart(JSK, "loss_vs_write")(ctx))
    assert len(sent["layout"]["shapes"]) == 2 and sent["data"][-1]["name"].startswith("grace period")


@pytest.mark.parametrize("bug", [False, True], ids=["release-on-exit", "release-on-signal"])
def test_jsk_ledger_every_frame(bug):
    """Two bars per frame, the ledger's and the devices', a segment per job (its GPUs where the ledger
    holds them / where its processes are), then what is free; the capacity line red once double-booked."""
    model = _page(JSK)["model"]
    p = QUESTIONS[JSK].Params()
    frames = model.scenario(p, release_on_signal=bug)
    assert len(frames) > 3
    for frame in frames:
        c = frame.cluster
        sent = _sent(_page(JSK)["_ledger_figure"](frame, model.frame_steps(p, frame)))
        bars = [t for t in sent["data"] if t["type"] == "bar"]
        assert [t["name"] for t in bars] == [f"{j.name} ({j.gpus:,} GPUs)" for j in c.jobs] + ["free"]
        for t, j in zip(bars, c.jobs):
            assert t["x"] == [j.gpus if j.holds else 0, j.gpus if j.state in model.HOLDING else 0]
            assert t["marker"]["pattern"]["shape"] == ("/" if j.state == "PREEMPTING" else "")
        assert bars[-1]["x"] == [c.capacity - c.allocated, max(0, c.capacity - c.occupied)]
        assert sum(t["x"][0] for t in bars) == c.capacity  # the ledger's bar is the block, never more
        assert sent["data"][-1]["name"] == f"capacity {c.capacity} GPUs"
        assert sent["layout"]["shapes"][0]["x0"] == c.capacity
        assert sent["layout"]["shapes"][0]["line"]["color"] == ("#dc2626" if frame.overcommitted else INK)
        assert sent["layout"]["barmode"] == "stack"
    assert any(f.overcommitted for f in frames) == bug  # both colours of the capacity line are drawn


# --- research-cluster-fair-share ------------------------------------------------------------------

RCF = "research-cluster-fair-share"
RCF_GREY = "#64748b"


def OLD_rcf_replay(r, t: int):
    """_replay's figure (st.plotly_chart dropped)."""
    GREY = RCF_GREY
    names = list(r.team_names)
    idle = r.alloc[t] - r.busy[t] - r.saving[t]
    fig = go.Figure()
    fig.add_trace(go.Bar(x=names, y=r.busy[t], name="Running jobs", marker_color=PALETTE[0]))
    fig.add_trace(go.Bar(x=names, y=r.saving[t], name="Saving a checkpoint (preempted)", marker_color=PALETTE[1]))
    fig.add_trace(go.Bar(x=names, y=idle, name="Held idle", marker_color="#fbbf24"))
    fig.add_trace(go.Scatter(x=names, y=r.guarantee, mode="markers", name="Guarantee",
                             marker=dict(symbol="line-ew", size=44, line=dict(width=3, color=INK))))
    fig.add_trace(go.Scatter(x=names, y=r.target[t], mode="markers", name="Water-filling target",
                             marker=dict(symbol="diamond", size=11, color=PALETTE[2])))
    top = max(float(r.alloc[t].max()), float(r.guarantee.max()), float(r.target[t].max())) * 1.25
    for i, name in enumerate(names):
        fig.add_annotation(x=name, y=max(r.alloc[t, i], r.guarantee[i]), text=f"{r.queued[t, i]:,.0f} queued",
                           showarrow=False, yshift=16, font=dict(size=11, color=GREY))
    base_layout(fig, f"The cluster at hour {r.t_h[t]:,.2f}", "", "GPUs")
    fig.update_layout(barmode="stack", height=380, hovermode="closest")
    fig.update_yaxes(range=[0, max(top, 1)])
    return fig


def OLD_rcf_panel_figures(r, p, t_ret):
    """The four figures the fair_share panel drew inline (st.plotly_chart dropped)."""
    GREY = RCF_GREY
    out = []
    # allocation against guarantee
    fig = go.Figure()
    for i, name in enumerate(r.team_names):
        color = PALETTE[i % len(PALETTE)]
        fig.add_trace(go.Scatter(x=r.t_h, y=r.alloc[:, i], name=name, line=dict(color=color, width=2, shape="hv")))
        fig.add_hline(y=r.guarantee[i], line=dict(color=color, dash="dot", width=1))
    if r.ev_tick.size:
        ticks = np.unique(r.ev_tick)
        fig.add_trace(go.Scatter(x=r.t_h[ticks], y=r.preempted[ticks].sum(axis=1), mode="markers",
                                 name="GPUs preempted", marker=dict(symbol="x", size=9, color=INK)))
    if t_ret is not None:
        fig.add_vline(x=p.return_hour, line=dict(color=GREY, dash="dash", width=1))
        fig.add_annotation(x=p.return_hour, y=1, yref="paper", text="Interpretability returns", showarrow=False,
                           xanchor="left", xshift=3, yanchor="top", font=dict(size=11))
    base_layout(fig, "GPUs held per team (dotted: its guarantee)", "Hours", "GPUs")
    fig.update_layout(height=400)
    out.append(fig)

    fig = go.Figure()
    for i, name in enumerate(r.team_names):
        fig.add_trace(go.Scatter(x=r.t_h, y=r.factor[:, i], name=name, line=dict(color=PALETTE[i], width=2)))
    fig.add_hline(y=0.5, line=dict(color=GREY, dash="dot", width=1))
    base_layout(fig, "Fair-share factor per team (0.5 = usage at share)", "Hours", "F = 2^(−u/s)")
    fig.update_yaxes(range=[0, 1.05])
    out.append(fig)

    fig = go.Figure()
    fig.add_trace(go.Scatter(x=r.t_h, y=100 * np.minimum(r.demand.sum(axis=1) / r.total_gpus, 2), name="Demand (capped at 200%)",
                             line=dict(color=GREY, width=1.5, dash="dot")))
    fig.add_trace(go.Scatter(x=r.t_h, y=100 * r.utilization, name="GPUs held", line=dict(color=PALETTE[0], width=2)))
    fig.add_trace(go.Scatter(x=r.t_h, y=100 * r.busy_utilization, name="GPUs running jobs",
                             line=dict(color=PALETTE[2], width=2)))
    base_layout(fig, "Utilization: held versus running jobs (the gap is the hoard and the saves)", "Hours", "% of the cluster")
    out.append(fig)

    fig = go.Figure()
    for i, (name, w) in enumerate(zip(r.team_names, r.waits_by_team())):
        if w.size:
            fig.add_trace(go.Box(y=w, name=name, marker_color=PALETTE[i], boxmean=True))
    base_layout(fig, "Wait from submission to first start, per job", "", "Hours")
    fig.update_layout(showlegend=False, hovermode="closest")
    out.append(fig)
    return out


@pytest.mark.parametrize("changes", [{}, {"half_life_hours": 168.0, "evals_hold_fraction": 0.3}], ids=["default", "other"])
def test_rcf_charts(changes):
    """Declared sweeps: the week the half-life chart marks is a dashed line at 168 h, named; the
    hoarding chart's reference is F = 0.5 (usage at share), and every point is a fresh solve."""
    ctx = _ctx(RCF, **changes)
    sent = _sent(_chart(RCF, "last_week_vs_half_life")(ctx))
    week = [sh for sh in sent["layout"]["shapes"] if sh.get("x0") == 168 and sh["line"].get("dash") == "dash"]
    assert len(week) == 1 and [a["text"] for a in sent["layout"]["annotations"]] == ["one week"]
    line = sent["data"][0]
    for h, w in list(zip(line["x"], line["y"]))[::7]:
        assert w == pytest.approx(2 ** (-168 / h))  # a GPU-hour a week ago, halved every half-life
    sent = _sent(_chart(RCF, "hoarding")(ctx))
    assert [sh["y0"] for sh in sent["layout"]["shapes"] if sh.get("yref") == "y"] == [0.5]


@pytest.mark.parametrize("seed, changes", [(0, {}), (4, {"return_hour": 200.0, "evals_hold_fraction": 0.0})],
                         ids=["default", "no-return"])
def test_rcf_simulation_figures(monkeypatch, seed, changes):
    from ui.sim_figures import fair_share

    ctx = _ctx(RCF, **changes)
    r, p = _sim(RCF, seed, **changes), ctx.params
    t_ret = r.tick_at(p.return_hour) if p.return_hour < p.sim_days * 24 else None
    assert (t_ret is None) == bool(changes)
    old = OLD_rcf_panel_figures(r, p, t_ret)
    new = [lambda: fair_share.held_per_team(ctx, r, None), lambda: fair_share.factors(ctx, r, None),
           lambda: fair_share.utilization(ctx, r, None), lambda: fair_share.start_waits(ctx, r, None)]
    sent = [_assert_same(monkeypatch, lambda: fig, build) for fig, build in zip(old, new)]
    assert len(sent[0]["layout"]["shapes"]) == 4 + (t_ret is not None)  # a guarantee per team, the return
    for t in {0, t_ret or 0, len(r.t_h) // 2, len(r.t_h) - 1}:
        sent = _assert_same(monkeypatch, lambda: OLD_rcf_replay(r, t),
                            lambda: fair_share.cluster_at(ctx, r, None, t * fair_share.tick_s(r)))
        assert len(sent["layout"]["annotations"]) == 4


# --- design-doc-review ----------------------------------------------------------------------------


def OLD_ddr_risk_costs(ctx):
    from models.units import format_quantity

    model = _page("design-doc-review")["model"]
    d = ctx.derivation
    p = ctx.params
    costs = model.costs_of(d)
    order = model.reference_order(costs)[::-1]  # plotly draws the first bar at the bottom
    labels, texts = [], []
    for key in order:
        labels.append(model.RISK_BY_KEY[key].name)
        if key == "capacity":
            texts.append(f"{p.p_capacity:.0%} × {d['capacity_impact_usd'].display()}")
        else:
            texts.append(f"{getattr(p, f'p_{key}'):.0%} × {format_quantity(getattr(p, f'{key}_impact_usd'), 'USD')}")
    fig = go.Figure(go.Bar(
        y=labels, x=[costs[k] for k in order], orientation="h", text=texts, textposition="auto",
        marker=dict(color=[PALETTE[1] if k == order[-1] else PALETTE[0] for k in order]),
        hovertemplate="%{y}: $%{x:,.0f} a year<extra></extra>",
    ))
    base_layout(fig, "Expected annual cost of each risk (probability × impact), worst on top", "USD per year", "")
    fig.update_layout(hovermode="closest", height=340)
    return fig


@pytest.mark.parametrize("changes", [{}, {"p_security": 0.5, "p_capacity": 0.1}], ids=["default", "other"])
def test_ddr_risk_costs(monkeypatch, changes):
    slug = "design-doc-review"
    ctx = _ctx(slug, **changes)
    sent = _assert_same(monkeypatch, lambda: OLD_ddr_risk_costs(ctx), lambda: _chart(slug, "risk_costs")(ctx))
    assert len(sent["data"]) == 1


# --- prompt-playground-product --------------------------------------------------------------------

PPP = "prompt-playground-product"


def OLD_ppp_staleness_vs_ttl(ctx):
    xs = sweep_values(ctx.params, "permission_cache_ttl_s", 80)
    keys = ["revocation_staleness_bound_s", "body_link_staleness_bound_s", "authz_reads_per_s"]
    ys = sweep(ctx.slug, ctx.params, "permission_cache_ttl_s", keys, xs)
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=xs, y=ys["revocation_staleness_bound_s"], name="Revocation bound (s)",
                             line=dict(color=PALETTE[0], width=2.5)))
    fig.add_trace(go.Scatter(x=xs, y=ys["body_link_staleness_bound_s"], name="Body URL bound (s)",
                             line=dict(color=PALETTE[1], width=2, dash="dash")))
    fig.add_trace(go.Scatter(x=xs, y=ys["authz_reads_per_s"], name="Permission reads/s (right)", yaxis="y2",
                             line=dict(color=PALETTE[2], width=2)))
    d = ctx.derivation
    x = ctx.params.permission_cache_ttl_s
    for key, color, axis in (("revocation_staleness_bound_s", PALETTE[0], "y"), ("authz_reads_per_s", PALETTE[2], "y2")):
        fig.add_trace(go.Scatter(x=[x], y=[d.value(key)], mode="markers", yaxis=axis, showlegend=False,
                                 marker=dict(color=color, size=11, line=dict(color="white", width=2)),
                                 hovertemplate=f"{d[key].label}: {d[key].display()}<extra></extra>"))
    fig.add_vline(x=x, line=dict(color="#64748b", dash="dot", width=1))
    base_layout(fig, "Staleness after a revocation against database reads, by cache TTL (log-log)",
                "Permission cache TTL (s)", "Seconds", log_x=True, log_y=True)
    fig.update_layout(yaxis2=dict(title="Reads/s", overlaying="y", side="right", type="log", showgrid=False,
                                  dtick=1, exponentformat="none", separatethousands=True))
    return fig


def OLD_ppp_tree_figure(tree, selected: int, every: int) -> go.Figure:
    model, KIND_COLOR = _page(PPP)["model"], _page(PPP)["KIND_COLOR"]
    pos = model.layout(tree)
    fig = go.Figure()
    for v in tree.versions:
        if v.parent is not None:
            (x0, y0), (x1, y1) = pos[v.parent], pos[v.id]
            fig.add_annotation(x=x1, y=-y1, ax=x0, ay=-y0, xref="x", yref="y", axref="x", ayref="y", text="",
                               showarrow=True, arrowhead=2, arrowsize=1.1, arrowwidth=1.6, arrowcolor=INK,
                               standoff=14, startstandoff=14)
        if v.restores is not None:
            (x0, y0), (x1, y1) = pos[v.id], pos[v.restores]
            fig.add_trace(go.Scatter(x=[x0, (x0 + x1) / 2, x1], y=[-y0, -y0 - 0.45, -y1], mode="lines",
                                     line=dict(color=KIND_COLOR["undo"], width=1.5, dash="dot", shape="spline"),
                                     hoverinfo="skip", showlegend=False))
    tips = set(tree.tips())
    for kind in ("root", "edit", "undo"):
        vs = [v for v in tree.versions if v.kind == kind]
        if not vs:
            continue
        fig.add_trace(go.Scatter(
            x=[pos[v.id][0] for v in vs], y=[-pos[v.id][1] for v in vs], mode="markers+text",
            name={"root": "first save", "edit": "edit / branch", "undo": "undo (dotted: the body it restores)"}[kind],
            text=[f"v{v.id}" for v in vs], textposition="top center",
            marker=dict(size=[30 if v.id == selected else 22 for v in vs], color=KIND_COLOR[kind],
                        symbol=["square" if v.depth % every == 0 else "circle" for v in vs],
                        line=dict(color=[INK if v.id == selected else "white" for v in vs],
                                  width=[3 if v.id == selected else 1 for v in vs])),
            customdata=[[v.note, "tip" if v.id in tips else "", v.depth % every] for v in vs],
            hovertemplate="v%{text}: %{customdata[0]}<br>%{customdata[1]} diffs to render: %{customdata[2]}<extra></extra>"
            .replace("v%{text}", "%{text}"),
        ))
    lanes = max(p[1] for p in pos.values())
    depth = max(p[0] for p in pos.values())
    fig.update_xaxes(title="Depth from the first save (squares: stored as snapshots)", range=[-0.6, depth + 0.6],
                     dtick=1, zeroline=False)
    fig.update_yaxes(visible=False, range=[-lanes - 0.9, 0.7])
    fig.update_layout(height=max(220, 110 + 80 * (lanes + 1)), margin=dict(l=10, r=10, t=10, b=10),
                      legend=LEGEND, dragmode=False)
    return fig


@pytest.mark.parametrize("changes", [{}, {"permission_cache_ttl_s": 5.0, "active_viewers": 50_000}],
                         ids=["default", "other"])
def test_ppp_staleness_vs_ttl(monkeypatch, changes):
    ctx = _ctx(PPP, **changes)
    sent = _assert_same(monkeypatch, lambda: OLD_ppp_staleness_vs_ttl(ctx), lambda: _chart(PPP, "staleness_vs_ttl")(ctx))
    assert "tickformat" not in sent["layout"]["yaxis2"] and sent["layout"]["yaxis"]["tickformat"]


@pytest.mark.parametrize("ops, selected, every", [(None, None, 20), ("", 0, 20), ("e0.e1.e2.e1.u3.u5.e0", 2, 2)],
                         ids=["demo", "one-version", "branches-and-undos"])
def test_ppp_tree_figure(monkeypatch, ops, selected, every):
    page = _page(PPP)
    tree = page["model"].replay(page["DEMO_OPS"] if ops is None else ops)
    selected = len(tree) - 1 if selected is None else selected
    sent = _assert_same(monkeypatch, lambda: OLD_ppp_tree_figure(tree, selected, every),
                        lambda: page["_tree_figure"](tree, selected, every))
    assert len(sent["layout"].get("annotations", [])) == len(tree) - 1  # an arrow from each parent


# --- checkpoint-distribution and model-artifact-distribution --------------------------------------


def OLD_ckpt_times_vs_hosts(ctx):
    model, SERIES_NAMES = _page("checkpoint-distribution")["model"], _page("checkpoint-distribution")["SERIES_NAMES"]
    xs = sweep_values(ctx.params, "hosts", 60)
    ys = sweep(ctx.slug, ctx.params, "hosts", list(model.CHART_SERIES), xs)
    fig = go.Figure()
    for i, key in enumerate(model.CHART_SERIES):
        bound = key == "lower_bound_s"
        fig.add_trace(go.Scatter(
            x=xs, y=ys[key], name=SERIES_NAMES.get(key, key), mode="lines",
            line=dict(color=INK if bound else PALETTE[i % len(PALETTE)], width=2.5,
                      dash="dash" if bound else "solid", shape="hv" if key in ("tree_s", "chunked_tree_s") else "linear"),
        ))
    fig.add_vline(x=ctx.params.hosts, line=dict(color="#64748b", dash="dot", width=1))
    # On a log axis an annotation's x is given in log10 units (shapes take data units).
    fig.add_annotation(x=math.log10(ctx.params.hosts), y=1, yref="paper", text=f"{ctx.params.hosts} hosts",
                       showarrow=False, xanchor="left", xshift=3, yanchor="top", font=dict(size=11))
    base_layout(fig, "Time to reach every host (log-log)", "Hosts", "Seconds", log_x=True, log_y=True)
    fig.update_layout(height=420)
    return fig


def OLD_ckpt_swarm(result, d, step_s, bound_s):
    """The figure the checkpoint-distribution swarm panel drew inline (st.plotly_chart dropped)."""
    t = [(i + 1) * step_s for i in range(len(result.completed_per_step))]
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=t, y=result.completed_per_step, name="Hosts holding every chunk",
                             line=dict(color=PALETTE[0], width=2.5)))
    fig.add_trace(go.Scatter(x=t, y=[u * 100 for u in result.uplink_utilization], yaxis="y2",
                             name="Uplinks busy (%)", line=dict(color=PALETTE[2], width=1.5), opacity=0.7))
    fig.add_vline(x=bound_s, line=dict(color=INK, dash="dash"))
    # In the legend: beside the line, the label sat on the busy-uplinks line along the top.
    fig.add_trace(legend_line(f"lower bound {d['lower_bound_s'].display(hint=False)}", color=INK, dash="dash"))
    base_layout(fig, "Hosts finished over time", "Seconds since the rollout started", "Hosts")
    fig.update_layout(yaxis2=dict(title="Uplinks busy (%)", overlaying="y", side="right", range=[0, 105],
                                  tickvals=[0, 25, 50, 75, 100],
                                  showgrid=False))
    return fig


def OLD_mad_rollout_vs_nodes(ctx):
    page = _page("model-artifact-distribution")
    model, SERIES_NAMES = page["model"], page["SERIES_NAMES"]
    xs = sweep_values(ctx.params, "nodes", 60)
    ys = sweep(ctx.slug, ctx.params, "nodes", list(model.CHART_SERIES), xs)
    fig = go.Figure()
    for i, key in enumerate(model.CHART_SERIES):
        bound = key == "per_node_lower_bound_s"
        fig.add_trace(go.Scatter(
            x=xs, y=ys[key], name=SERIES_NAMES[key], mode="lines",
            line=dict(color=INK if bound else PALETTE[i % len(PALETTE)], width=2.5,
                      dash="dash" if bound else "solid"),
        ))
    fig.add_vline(x=ctx.params.nodes, line=dict(color="#64748b", dash="dot", width=1))
    # On a log axis an annotation's x is given in log10 units (shapes take data units).
    fig.add_annotation(x=math.log10(ctx.params.nodes), y=1, yref="paper", text=f"{ctx.params.nodes:,} nodes",
                       showarrow=False, xanchor="left", xshift=3, yanchor="top", font=dict(size=11))
    base_layout(fig, "Time until the last node holds the new version (log-log)", "Nodes", "Seconds",
                log_x=True, log_y=True)
    fig.update_layout(height=420)
    return fig


def OLD_mad_swarm(result, d, step_s, bound_s):
    """The figure the model-artifact-distribution swarm panel drew inline (st.plotly_chart dropped)."""
    t = [(i + 1) * step_s for i in range(len(result.completed_per_step))]
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=t, y=result.completed_per_step, name="Nodes holding every chunk",
                             line=dict(color=PALETTE[0], width=2.5)))
    fig.add_trace(go.Scatter(x=t, y=[u * 100 for u in result.uplink_utilization], yaxis="y2",
                             name="Uplinks busy (%)", line=dict(color=PALETTE[2], width=1.5), opacity=0.7))
    fig.add_vline(x=bound_s, line=dict(color=INK, dash="dash"))
    # In the legend: beside the line, the label sat on the busy-uplinks line along the top.
    fig.add_trace(legend_line(f"link bound {d['per_node_lower_bound_s'].display(hint=False)}", color=INK, dash="dash"))
    base_layout(fig, "Nodes finished over time", "Seconds since the rollout started", "Nodes")
    fig.update_layout(yaxis2=dict(title="Uplinks busy (%)", overlaying="y", side="right", range=[0, 105],
                                  tickvals=[0, 25, 50, 75, 100], showgrid=False))
    return fig


SWARMS = {  # slug: (the old sweep chart, its name on the page, the swarm figure, its bound step, another scenario)
    "checkpoint-distribution": (OLD_ckpt_times_vs_hosts, "times_vs_hosts", OLD_ckpt_swarm, "lower_bound_s",
                                {"hosts": 64, "slow_peer_fraction": 0.2, "failed_peer_fraction": 0.05}),
    "model-artifact-distribution": (OLD_mad_rollout_vs_nodes, "rollout_vs_nodes", OLD_mad_swarm, "per_node_lower_bound_s",
                                    {"nodes": 300, "slow_peer_fraction": 0.2, "failed_peer_fraction": 0.05}),
}


@pytest.mark.parametrize("other", [False, True], ids=["default", "other"])
@pytest.mark.parametrize("slug", list(SWARMS))
def test_distribution_figures(monkeypatch, slug, other):
    old_chart, name, old_swarm, bound_key, changes = SWARMS[slug]
    changes = changes if other else {}
    ctx = _ctx(slug, **changes)
    sent = _assert_same(monkeypatch, lambda: old_chart(ctx), lambda: _chart(slug, name)(ctx))
    assert len(sent["layout"]["shapes"]) == len(sent["layout"]["annotations"]) == 1
    page, p, d = _page(slug), ctx.params, ctx.derivation
    result = _sim(slug, 3 if other else 0, **changes)
    step_s, bound_s = page["model"].sim_step_s(p), d.value(bound_key)
    sent = _assert_same(monkeypatch, lambda: old_swarm(result, d, step_s, bound_s),
                        lambda: page["_swarm_figure"](result, step_s, bound_s, d[bound_key].display(hint=False)))
    assert len(sent["data"]) == 3 and sent["layout"]["yaxis2"]["overlaying"] == "y"


# --- moe-1t-training and pretraining-data-pipeline ------------------------------------------------


def OLD_moe_a2a_vs_ep(ctx):
    points = _page("moe-1t-training")["_ep_points"](ctx)
    xs = [str(ep) for ep, _ in points]
    fig = go.Figure()
    series = (("a2a_share_nvlink", "NVLink time / compute"), ("a2a_share_nic", "NIC time / compute"))
    for i, (key, name) in enumerate(series):
        fig.add_trace(go.Bar(x=xs, y=[100 * float(d.value(key)) for _, d in points], name=name,
                             marker_color=PALETTE[i],
                             marker_line=dict(width=[3 if ep == ctx.params.ep_size else 0 for ep, _ in points],
                                              color=INK)))
    fig.add_trace(go.Scatter(x=xs, y=[float(d.value("state_per_gpu_GB")) for _, d in points], yaxis="y2",
                             name="State per GPU (GB)", mode="lines+markers", line=dict(color=PALETTE[2], width=2)))
    base_layout(fig, f"All-to-all against compute, by expert-parallel size (now {ctx.params.ep_size}, outlined)",
                "Expert-parallel size (GPUs; 8 per node)", "% of compute time")
    fig.update_layout(barmode="group", yaxis2=dict(title="GB per GPU", overlaying="y", side="right", showgrid=False,
                                                   rangemode="tozero"))
    return fig


def OLD_pdp_core_hours_by_stage(ctx):
    model = _page("pretraining-data-pipeline")["model"]
    d = ctx.derivation
    names = [model.STAGE_NAMES[s] for s in model.STAGES]
    hours = [d.value(f"{s}_core_hours") for s in model.STAGES]
    fig = go.Figure(go.Bar(
        x=names, y=hours, marker_color=[PALETTE[1] if h >= sorted(hours)[-2] else PALETTE[0] for h in hours],
        # Short labels ("417k"): plotly shrinks a label to its bar's width, and "416,667 core-hours"
        # over a phone's 50 px bar came out a few pixels high. The axis says core-hours.
        texttemplate="%{y:.3~s}", textposition="outside",
    ))
    base_layout(fig, "Where the time goes: core-hours per stage (log scale)", "Stage", "Core-hours", log_y=True)
    fig.update_layout(hovermode="closest", showlegend=False)
    return fig


@pytest.mark.parametrize("changes", [{}, {"ep_size": 64, "gpus": 2048}], ids=["default", "other"])
def test_moe_a2a_vs_ep(monkeypatch, changes):
    slug = "moe-1t-training"
    ctx = _ctx(slug, **changes)
    sent = _assert_same(monkeypatch, lambda: OLD_moe_a2a_vs_ep(ctx), lambda: _chart(slug, "a2a_vs_ep")(ctx))
    assert len(sent["data"]) == 3 and sent["layout"]["barmode"] == "group"


@pytest.mark.parametrize("changes", [{}, {"keep_end_to_end": 0.1, "dedup_MBps_per_core": 20.0}], ids=["default", "other"])
def test_pdp_core_hours_by_stage(monkeypatch, changes):
    slug = "pretraining-data-pipeline"
    ctx = _ctx(slug, **changes)
    sent = _assert_same(monkeypatch, lambda: OLD_pdp_core_hours_by_stage(ctx),
                        lambda: _chart(slug, "core_hours_by_stage")(ctx))
    assert sent["layout"]["yaxis"]["type"] == "log" and sent["layout"]["yaxis"]["tickformat"]
