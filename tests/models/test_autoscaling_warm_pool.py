"""autoscaling-warm-pool: the seed's race (70 s cold start, 60 s burst) worked by hand, a
hand-worked variant, properties that say which way each number moves, and the fluid burst
simulation against the closed-form backlog."""

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st
from pydantic import ValidationError

from models.core import knobs_of
from models.serving.autoscaling_warm_pool import Params as PageParams, excess_arrivals, simulate, solve

# The hand derivations below take a replica of 100 slots, given as the engine's batch (the seed's
# replica before the page read its slots from the engine); the engine's own slots at the page's
# defaults are worked by hand in test_the_replica_slots_are_the_engines_batch.
SLOTS = 100


def Params(**kw):  # noqa: N802 (reads as the page's Params, with the 100-slot replica)
    return PageParams(**{"given_batch": SLOTS, **kw})
from models.sim import burst


def test_seed_race_seventy_second_cold_start_sixty_second_burst():
    d = solve(Params())
    # "A replica takes 70 seconds to become useful and the burst arrives in 60": with a leading
    # signal 15 s late, the first ordered replica serves at 15 + 70 = 85 s, after the burst landed.
    assert Params().cold_start_s == 70 and Params().burst_ramp_s == 60
    assert d.value("first_cold_replica_s") == 85
    assert d.value("cold_start_outlasts_burst") == "yes"
    # Little's law: 400 tokens x 25 ms = 10 s in flight; 40 req/s -> 400, 3 x 40 = 120 req/s -> 1,200
    assert d.value("request_duration_s") == pytest.approx(10)
    assert d.value("in_flight_base") == pytest.approx(40 * 10)
    assert d.value("in_flight_peak") == pytest.approx(120 * 10)
    # a replica: 100 slots at 80% = 80 in flight; 400 / 80 = 5 replicas, 1,200 / 80 = 15
    assert d.value("in_flight_per_replica") == pytest.approx(80)
    assert d.value("base_replicas") == 5
    assert d.value("peak_replicas") == 15
    # the burst lands before any cold replica, so the pool carries all of it: 15 - 5 = 10
    assert d.value("uncovered_in_flight") == pytest.approx(800)
    assert d.value("warm_pool_replicas") == 15 - 5 == 10
    # each second of cold start inside the ramp: (1,200 - 400) / 60 s / 80 = 1/6 replica per second
    assert d.value("warm_replicas_per_second_of_cold_start") == pytest.approx(800 / 60 / 80)
    assert d.value("warm_pool_shrinks_below_s") == 60 - 15


def test_seed_backlog_without_a_pool_integrated_by_hand():
    d = solve(Params())
    # base fleet with every slot full: 5 x 100 / 10 s = 50 req/s. Arrivals 40 + (80/60) t pass
    # 50 at t = 10 / (4/3) = 7.5 s. Ramp part: integral of (4/3 t - 10) from 7.5 to 60
    # = [2/3 t^2 - 10 t] = (2,400 - 600) - (37.5 - 75) = 1,837.5. Flat part: (120 - 50) x (85 - 60) = 1,750.
    assert d.value("base_capacity_rps") == pytest.approx(50)
    assert d.value("overrun_at_s") == pytest.approx(7.5)
    assert d.value("backlog_without_pool") == pytest.approx(1837.5 + 1750)
    # the base fleet never clears it (120 req/s arrive against 50); the peak fleet, 15 x 100 / 10 s =
    # 150 req/s, has 150 - 120 = 30 req/s spare: 3,587.5 / 30 s
    assert d.value("backlog_drain_verdict").startswith("the base fleet alone never clears it")
    assert d.value("peak_capacity_rps") == pytest.approx(150)
    assert d.value("drain_spare_rps") == pytest.approx(30)
    assert d.value("backlog_drain_s") == pytest.approx(3587.5 / 30)
    # scaled on GPU utilization (60 s late): flat part runs to 130 s: 1,837.5 + 70 x 70
    assert d.value("backlog_lagging_signal") == pytest.approx(1837.5 + 70 * 70)


def test_seed_cooldowns_from_the_cold_start():
    d = solve(Params())
    # a controller that sees only ready replicas waits for its order to land and show: 70 + 15
    assert d.value("scale_up_cooldown_s") == 85
    assert d.value("scale_up_cooldown_counting_booting_s") == 15
    # ski rental: hold an idle replica as long as one cold start costs, 70 s x factor 1
    assert d.value("scale_down_hold_s") == 70
    assert d.value("hold_cost_usd") == pytest.approx(70 / 3600 * 8 * 2.5)


def test_the_assumption_shown_live_snapshot_and_lagging_signal():
    d = solve(Params())
    # snapshot: 15 + 20 = 35 s, inside the 60 s ramp: 400 + 13.33 x 35 = 866.7 in flight
    # -> ceil(866.7 / 80) = 11 replicas, minus the base 5 = 6
    assert d.value("snapshot_reaction_s") == 35
    assert d.value("warm_pool_with_snapshot") == math.ceil((400 + 800 / 60 * 35) / 80) - 5 == 6
    # same snapshot scaled on utilization: 60 + 20 = 80 s > 60 s ramp: the whole burst again
    assert d.value("warm_pool_with_snapshot_lagging_signal") == 10
    # money: 10 replicas x 8 GPUs x 2.5 USD x 24 h; one second of cold start = 1/6 x 8 x 2.5 x 24
    assert d.value("warm_pool_usd_per_day") == pytest.approx(10 * 8 * 2.5 * 24)
    assert d.value("cold_start_second_usd_per_day") == pytest.approx(80)


def test_variant_worked_by_hand():
    p = Params(base_rps=100, burst_multiplier=2, burst_ramp_s=120, cold_start_s=30, signal_delay_s=10,
               output_tokens=200, tpot_target_ms=50, given_batch=50, target_utilization=0.8,
               cold_start_cost_factor=2, tp_degree=4, gpu_hour_usd=3)
    d = solve(p)
    # 200 x 50 ms = 10 s; 100 x 10 = 1,000 in flight, 200 x 10 = 2,000; 50 x 0.8 = 40 per replica
    assert d.value("in_flight_base") == pytest.approx(1000)
    assert d.value("in_flight_peak") == pytest.approx(2000)
    assert d.value("base_replicas") == 25 and d.value("peak_replicas") == 50
    # reaction 10 + 30 = 40 s inside the 120 s ramp: growth 1,000 / 120 = 8.33/s -> 333.3 uncovered
    # -> ceil(1,333.3 / 40) = 34, minus 25 = 9 warm replicas
    assert d.value("cold_start_outlasts_burst") == "no"
    assert d.value("uncovered_in_flight") == pytest.approx(1000 / 120 * 40)
    assert d.value("warm_pool_replicas") == 9
    assert d.value("warm_replicas_per_second_of_cold_start") == pytest.approx(1000 / 120 / 40)
    # base capacity 25 x 50 / 10 = 125 req/s; arrivals 100 + t x 100/120 cross it at 30 s; the
    # excess grows to 8.33 req/s by 40 s: a triangle of 1/2 x 10 x 8.33 = 41.7 requests
    assert d.value("overrun_at_s") == pytest.approx(30)
    assert d.value("backlog_without_pool") == pytest.approx(0.5 * 10 * (100 / 120 * 10))
    assert d.value("scale_up_cooldown_s") == 40
    assert d.value("scale_down_hold_s") == 60
    assert d.value("hold_cost_usd") == pytest.approx(60 / 3600 * 4 * 3)


def test_kubernetes_hpa_worked_example_doubles_the_fleet():
    """Kubernetes docs, "Horizontal Pod Autoscaling", algorithm details
    (https://kubernetes.io/docs/tasks/run-application/horizontal-pod-autoscale/): desiredReplicas =
    ceil[currentReplicas x (currentMetricValue / desiredMetricValue)]; "if the current metric value is
    200m, and the desired value is 100m, the number of replicas will be doubled". The HPA's default
    sync period is 15 s, the seed's signal delay. Entered here with in-flight requests per replica as
    the metric: a fleet exactly at its target, then a burst that doubles the load per replica."""
    p = Params(base_rps=40, burst_multiplier=2, output_tokens=400, tpot_target_ms=25, given_batch=100,
               target_utilization=0.8)
    d = solve(p)
    # 40 req/s x 400 x 25 ms = 400 in flight over 100 x 0.8 = 80 a replica: 5 replicas, each at its target
    current_replicas = 5
    desired_metric = 100 * 0.8
    assert d.value("base_replicas") == current_replicas
    assert d.value("in_flight_base") / current_replicas == pytest.approx(desired_metric)
    # at the peak 2 x 40 req/s x 10 s = 800 in flight on the same 5: 160 each, twice the target (the docs'
    # 200m against 100m)
    current_metric = 2 * 40 * 400 * 0.025 / current_replicas
    assert current_metric / desired_metric == pytest.approx(2.0)
    hpa = math.ceil(current_replicas * current_metric / desired_metric)
    assert hpa == 10
    assert d.value("peak_replicas") == hpa
    assert d.value("burst_replicas") == hpa - current_replicas


def test_replica_knobs_are_the_engines():
    """tp_degree, output_tokens, tpot_target_ms and target_utilization are declared once, in the
    engine's groups: same label and range here as on every serving page."""
    from models.engine.knobs import ReplicaKnobs
    from models.engine.serving_knobs import RequestKnobs, SloKnobs

    mine = knobs_of(PageParams)
    for group, name in ((ReplicaKnobs, "tp_degree"), (RequestKnobs, "output_tokens"),
                        (SloKnobs, "tpot_target_ms"), (SloKnobs, "target_utilization")):
        assert mine[name] is knobs_of(group)[name], name
    assert "gpus_per_replica" not in PageParams.model_fields and "tpot_ms" not in PageParams.model_fields
    # a GB200 NVL72 replica pays for 72 GPUs: 72 x 2.5 USD an hour
    assert solve(Params(gpu="GB200 (NVL72)", tp_degree=72)).value("replica_usd_per_hour") == pytest.approx(72 * 2.5)
    with pytest.raises(ValidationError):
        Params(tp_degree=3)


def test_excess_arrivals_against_a_numeric_integral():
    for base, peak, ramp, cap, until in [(40, 120, 60, 50, 85), (100, 200, 120, 125, 40), (10, 50, 30, 60, 100),
                                        (10, 50, 30, 10, 20), (10, 50, 30, 45, 200)]:
        t = np.linspace(0, until, 400_001)
        rate = base + (peak - base) * np.minimum(t / ramp, 1)
        numeric = np.trapezoid(np.maximum(rate - cap, 0), t)
        assert excess_arrivals(base, peak, ramp, cap, until) == pytest.approx(numeric, rel=1e-6, abs=1e-6)


def test_impossible_scenarios_are_refused_in_plain_words():
    with pytest.raises(ValidationError, match="Cold start"):
        Params(cold_start_s=1)
    with pytest.raises(ValidationError, match="Burst peak"):
        Params(burst_multiplier=1)


# --- properties ------------------------------------------------------------------------------


def _params(**kw):
    try:
        return Params(**kw)
    except ValidationError:
        assume(False)


cold = st.floats(5, 1800)
delay = st.floats(0, 300)
rates = st.floats(1, 5000)
mult = st.floats(1.1, 20)
ramp = st.floats(5, 1800)
slots = st.integers(1, 2000)


@settings(max_examples=150, deadline=None)
@given(c1=cold, c2=cold, dl=delay, r=rates, m=mult, rp=ramp)
def test_a_longer_cold_start_never_shrinks_the_pool_or_the_backlog(c1, c2, dl, r, m, rp):
    lo, hi = sorted((c1, c2))
    a = solve(_params(cold_start_s=lo, signal_delay_s=dl, base_rps=r, burst_multiplier=m, burst_ramp_s=rp))
    b = solve(_params(cold_start_s=hi, signal_delay_s=dl, base_rps=r, burst_multiplier=m, burst_ramp_s=rp))
    assert a.value("warm_pool_replicas") <= b.value("warm_pool_replicas")
    assert a.value("backlog_without_pool") <= b.value("backlog_without_pool") + 1e-6
    assert a.value("scale_up_cooldown_s") <= b.value("scale_up_cooldown_s")
    assert a.value("scale_down_hold_s") <= b.value("scale_down_hold_s")


@settings(max_examples=150, deadline=None)
@given(s1=slots, s2=slots, r=rates, m=mult)
def test_bigger_replicas_never_need_more_replicas_at_the_first_cold_arrival(s1, s2, r, m):
    # Base fleet plus pool is monotone; the pool alone is not (both terms are rounded up, so a
    # bigger replica can leave the base fleet less slack), and neither is the no-pool backlog.
    lo, hi = sorted((s1, s2))
    a = solve(_params(given_batch=lo, base_rps=r, burst_multiplier=m))
    b = solve(_params(given_batch=hi, base_rps=r, burst_multiplier=m))
    total = lambda d: d.value("base_replicas") + d.value("warm_pool_replicas")  # noqa: E731
    assert total(b) <= total(a)
    assert b.value("peak_replicas") <= a.value("peak_replicas")


@settings(max_examples=200, deadline=None)
@given(c=cold, dl=delay, r=rates, m=mult, rp=ramp, s=slots, snap=st.floats(1, 600), lag=st.floats(0, 600))
def test_invariants_hold_everywhere(c, dl, r, m, rp, s, snap, lag):
    d = solve(_params(cold_start_s=c, signal_delay_s=dl, base_rps=r, burst_multiplier=m, burst_ramp_s=rp,
                      given_batch=s, snapshot_cold_start_s=snap, lagging_signal_delay_s=lag))
    whole = d.value("burst_replicas")
    assert 0 <= d.value("warm_pool_replicas") <= whole
    if d.value("first_cold_replica_s") >= rp:
        assert d.value("warm_pool_replicas") == whole  # the cold start outlasts the burst: the pool is all of it
    if snap <= c:
        assert d.value("warm_pool_with_snapshot") <= d.value("warm_pool_replicas")
    if lag >= dl:
        assert d.value("backlog_lagging_signal") >= d.value("backlog_without_pool") - 1e-6
        assert d.value("warm_pool_with_snapshot_lagging_signal") >= d.value("warm_pool_with_snapshot")
    if d.value("base_capacity_rps") >= d.value("peak_rps"):
        assert d.value("backlog_without_pool") == 0
    assert d.value("in_flight_peak") > d.value("in_flight_base")


# --- the burst simulation --------------------------------------------------------------------


def test_simulation_conserves_requests_and_the_pool_absorbs_the_burst():
    r = simulate(Params(), seed=3)
    for run in (r.with_pool, r.without_pool):
        assert run.conservation_error < 1e-6 * run.arrived[-1]
    # the pool is sized with 20% slot headroom, so Poisson noise never fills every slot
    assert r.with_pool.peak_queue < 1
    assert r.without_pool.peak_queue > 1000
    # the autoscaler refills the pool: at the peak the fleet holds 15 serving + 10 warm
    assert r.with_pool.ready.max() == 25
    assert r.without_pool.ready.max() == 15
    # after the burst and the hold, both fleets are back to what base traffic needs
    assert r.with_pool.ready[-1] == 5 + 10
    assert r.without_pool.ready[-1] == 5
    assert r.with_pool.releases > 0 and r.without_pool.releases > 0


def test_deterministic_backlog_sits_just_under_the_closed_form():
    """Quasi-static Little's law overstates: in flight lags the ramp by about growth x duration / 2."""
    p = Params()
    d = solve(p)
    r = simulate(p, poisson=False)
    simulated = r.without_pool.queue_at(r.first_cold_replica_at_s - 1e-6)
    closed, lag = d.value("backlog_without_pool"), d.value("littles_law_lag_requests")
    print(f"simulated backlog {simulated:,.1f}; closed form {closed:,.1f}; lag allowance {lag:,.1f}")
    assert closed - lag <= simulated <= closed


def test_poisson_backlog_replications_cover_the_closed_form():
    p = Params()
    d = solve(p)
    vals = []
    for seed in range(10):
        r = simulate(p, seed=100 + seed)
        vals.append(r.without_pool.queue_at(r.first_cold_replica_at_s - 1e-6))
    v = np.array(vals)
    half = 2.262 * v.std(ddof=1) / math.sqrt(len(v))  # 95% t interval, 9 dof
    closed, lag = d.value("backlog_without_pool"), d.value("littles_law_lag_requests")
    print(f"simulated backlog {v.mean():,.1f} ± {half:,.1f}; closed form {closed:,.1f} (lag {lag:,.1f})")
    assert closed - lag - half <= v.mean() <= closed + half
    assert half / closed < 0.03


def test_burst_engine_little_law_at_steady_state():
    cfg = burst.BurstConfig(base_rps=50, peak_rps=50.0001, ramp_s=10, hold_s=0, request_s=8, slots_per_replica=1000,
                            target_utilization=0.8, initial_replicas=1, warm_pool=0, cold_start_s=60,
                            signal_delay_s=5, scale_down_hold_s=60)
    r = burst.run(cfg, seed=0)
    # L = lambda W = 400 in service on average, no queue
    assert r.in_service[len(r.t) // 4:].mean() == pytest.approx(400, rel=0.02)
    assert r.peak_queue == 0


def test_the_largest_scenario_simulates_quickly_and_keeps_count_of_its_replicas():
    # Every knob at its maximum orders millions of replicas at once: booting replicas are cohorts,
    # so this is as quick as the seed (a replica at a time took minutes and hung the page).
    import time as _time

    from models.sim import burst as _burst
    from models.serving.autoscaling_warm_pool import burst_config
    from ui.knobs import specs as _specs

    from models.serving.autoscaling_warm_pool import _WarmPoolKnobs

    # the page's own knobs at their maximum; the engine's (a 70B replica) at its defaults
    top = {s.field: s.knob.max for s in _specs(PageParams)
           if s.kind in ("int", "float") and not s.knob.only_if and s.field in _WarmPoolKnobs.model_fields}
    p = Params(**top)
    cfg = burst_config(p, solve(p).value("warm_pool_replicas"))
    t0 = _time.process_time()
    r = _burst.run(cfg, seed=0)
    assert _time.process_time() - t0 < 5.0
    # replicas are conserved: what started, plus what was ordered, less what was released
    assert r.ready[-1] + r.booting[-1] == cfg.initial_replicas + cfg.warm_pool + r.orders - r.releases


def test_the_overrun_sentence_reads_at_a_moment_and_when_there_is_none():
    # Seed: 5 replicas x 100 slots / 10 s = 50 req/s; the ramp 40 -> 120 req/s over 60 s passes it
    # at (50 - 40) / (120 - 40) x 60 = 7.5 s.
    d = solve(Params())
    assert d.value("overrun_clause") == ("arrivals pass it 7.5 s into the ramp, and from then on the excess "
                                         "piles up")
    # A 1.2x burst peaks at 48 req/s, under the same 50: no moment to name, and nothing queues.
    d = solve(Params(burst_multiplier=1.2))
    assert math.isinf(d.value("overrun_at_s")) and d.value("backlog_without_pool") == 0
    assert d.value("overrun_clause") == "even the peak, 48 requests/s, stays under it, so nothing piles up"


def test_the_seventy_second_cold_start_part_by_part():
    """15 s image + the engine's Llama-3-70B weights (70,552,387,584 parameters x 2 B in bf16 =
    141.1 GB) at 5 GB/s (28.22 s) + 20 s warm-up = 63.22 s of the stated 70 s; 6.78 s is left."""
    d = solve(Params())
    weights_s = 70_552_387_584 * 2 / 5e9
    assert d.value("cold_start_image_s") == 15
    assert d.value("cold_start_weights_s") == pytest.approx(weights_s) == pytest.approx(28.22, abs=0.01)
    assert d.value("cold_start_warmup_s") == 20
    assert d.value("cold_start_parts_s") == pytest.approx(35 + weights_s)
    assert d.value("cold_start_other_s") == pytest.approx(70 - 35 - weights_s)
    assert d.value("cold_start_weights_share") == pytest.approx(weights_s / 70)
    assert d.value("cold_start_parts_verdict").startswith("the remaining 6.779 s")
    slow = solve(Params(weight_load_GBps=1))  # 141 s of weights alone
    assert d.value("cold_start_other_s") > 0 and slow.value("cold_start_other_s") == 0
    assert slow.value("cold_start_parts_verdict").startswith("the parts alone exceed it")


def test_the_headline_per_second_figure_is_zero_outside_the_ramp():
    """Reaction 15 + 70 = 85 s exceeds the 60 s ramp: one more second of cold start costs nothing here.
    The knee is 60 − 15 = 45 s; at a 30 s cold start (45 s reaction) each second costs
    (1,200 − 400) / 60 / 80 = 0.1667 replicas."""
    d = solve(Params())
    assert d.value("marginal_warm_replicas_per_s") == 0
    assert d.value("warm_pool_shrinks_below_s") == 45
    inside = solve(Params(cold_start_s=30))
    assert inside.value("marginal_warm_replicas_per_s") == pytest.approx(800 / 60 / 80)


def test_the_runs_figures_are_steps():
    """The live panel's cards and caption read these steps (issue 19), each worked here by hand or
    read off the run's own arrays."""
    from models.serving.autoscaling_warm_pool import simulation_steps

    p = Params()
    r = simulate(p, poisson=False)
    s = simulation_steps(p, r)
    # horizon: 30 s lead + 2 x 60 s ramps + 240 s hold + 70 s scale-down hold + 2 x 70 s cold starts
    # + 4 x 10 s requests + 60 s = 700 s; step max(0.25, 700 / 4,000) = 0.25 s (under 10 s / 4): 2,800 steps
    assert s.value("simulated_step_s") == 0.25
    assert s.value("simulated_steps") == 700 / 0.25 == 2800
    # the backlog at the first cold replica (30 + 85 = 115 s into the run) sits between the closed
    # form 1,837.5 + 1,750 = 3,587.5 and that less the Little's-law lag 800 / 60 x 10 / 2 = 66.7
    assert s.value("simulated_backlog_without_pool") == pytest.approx(r.without_pool.queue_at(115 - 1e-6))
    assert 3587.5 - 800 / 60 * 10 / 2 <= s.value("simulated_backlog_without_pool") <= 3587.5
    # the pool (sized with 20% slot headroom) never queues; without it requests wait
    assert s.value("simulated_max_wait_with_pool_s") == 0
    assert s.value("simulated_max_wait_without_pool_s") > 10
    # paid replica time: 15 ready (5 base + 10 warm) the whole 700 s at least with the pool, 5 without
    for key, run, floor in (("simulated_replica_hours_with_pool", r.with_pool, 15),
                            ("simulated_replica_hours_without_pool", r.without_pool, 5)):
        assert s.value(key) == pytest.approx(np.sum(run.ready + run.booting) * 0.25 / 3600)
        assert s.value(key) >= floor * 700 / 3600
    assert s.value("simulated_conservation_error") < 1e-6
    assert s["simulated_replica_hours_with_pool"].display(hint=False).endswith("replica-h")


def test_the_replica_slots_are_the_engines_batch():
    """At the page's defaults the slots are the serving engine's batch, worked by hand from the
    roofline (tests/models/test_engine_serving.py states the same constants): Llama-3-70B on 8 H100s
    at 80% MBU, a step of weight read + b x (KV read + all-reduce) + fixed costs must fit the 25 ms
    TPOT target. Weight read 70,552,387,584 x 2 B / (8 x 3.35 TB/s x 0.8) = 6.58 ms; KV per sequence at
    2,000 + 400 / 2 = 2,200 tokens x 327,680 B = 33.6 us; all-reduce per sequence 160 x 2 x 7/8 x 8,192
    x 2 B / 450 GB/s = 10.2 us; fixed 160 x 6 us + 1.9 ms. So b <= (25 - 6.58 - 0.96 - 1.9) / 0.0438 =
    355 (the KV room holds 552, so the TPOT target binds)."""
    hbm = 8 * 3.35e12 * 0.8
    weight_s = 70_552_387_584 * 2 / hbm
    per_seq_s = 327_680 * 2200 / hbm + 160 * 2 * 7 / 8 * 8192 * 2 / 450e9
    fixed_s = 160 * 6e-6 + 1.9e-3
    slots = math.floor((0.025 - weight_s - fixed_s) / per_seq_s)
    assert slots == 355
    d = solve(PageParams())
    assert d.value("slots_per_replica") == slots
    # the pool that follows: 284 in flight a replica (355 x 80%); 400 in flight at the base needs 2
    # replicas, 1,200 at the peak 5; the first cold replica helps 85 s in, after the 60 s ramp, so the
    # pool carries the whole burst: 5 - 2 = 3 warm replicas (a 100-slot replica needed 10)
    assert d.value("in_flight_per_replica") == pytest.approx(0.8 * 355)
    assert d.value("base_replicas") == 2 and d.value("peak_replicas") == 5
    assert d.value("warm_pool_replicas") == 3
    assert solve(Params()).value("warm_pool_replicas") == 10
    # a given batch overrides the engine's, within what the KV room holds
    assert solve(PageParams(given_batch=200)).value("slots_per_replica") == 200
    with pytest.raises(ValidationError):
        PageParams(given_batch=553)


def test_reader_fixes_pool_verdicts_and_overorder_derivation():
    d = solve(Params())
    # the whole burst in the pool: 5 base + 10 pool = 15 = the peak fleet, static peak provisioning
    assert d.value("base_plus_pool_replicas") == 5 + 10
    assert d.value("pool_vs_static_verdict").startswith("the same as provisioning for the peak")
    # snapshot pool 6 < 10: falls; a snapshot start past the knee (45 s) leaves it at 10
    assert d.value("snapshot_pool_verdict") == "falls to"
    assert solve(Params(snapshot_cold_start_s=50)).value("snapshot_pool_verdict") == "stays at"
    # with no cooldown, floor(70 / 15) = 4 evaluations each reorder the burst's 10 replicas: 40
    assert d.value("evaluations_before_ready") == 4
    assert d.value("overorders_without_cooldown") == 10 * 4
    # a remainder over half the cold start is flagged, not booked to scheduling
    big = solve(Params(cold_start_s=600))
    assert "more than half" in big.value("cold_start_parts_verdict")
