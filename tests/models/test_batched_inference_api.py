"""batched-inference-api: seed figures from the seed's own arithmetic, hand-worked variants,
and properties that say which way each number must move."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from models.serving.batched_inference_api import Params, solve

GPU_KEYS = ["gpus_floor", "gpus_at_fill", "gpus_at_target_util", "gpus_with_timeout_flush", "gpus_recommended"]


def test_seed_figures_follow_the_seed_arithmetic():
    d = solve(Params())
    # "A full batch serves 50 / 0.2 = 250 requests per second per GPU"
    assert d.value("per_gpu_rps_full") == pytest.approx(50 / 0.2)
    # "so 8 GPUs is the floor": 2,000 / 250
    assert d.value("gpus_floor") == 2000 / 250 == 8
    # "With half-full batches you need 16": 2,000 / (250 / 2)
    assert d.value("per_gpu_rps_at_fill") == pytest.approx(125)
    assert d.value("gpus_at_fill") == 16
    # the floor is 100% busy: the page must say so
    assert d.value("utilization_at_floor") == pytest.approx(1)
    # at 2,000 req/s a 50-input batch takes 25 ms to arrive
    assert d.value("batch_fill_time_s") == pytest.approx(50 / 2000) == pytest.approx(0.025)


def test_headroom_gives_ten_gpus_at_eighty_percent():
    # 2,000 / (250 x 0.8) = 10 exactly
    assert solve(Params()).value("gpus_at_target_util") == 10


def test_verdicts_and_like_for_like_fleets():
    d = solve(Params())
    # 2,000 req/s over 8 GPUs of 250 req/s: 100% busy, so the floor queue has no bound
    assert d.value("floor_verdict").startswith("every GPU is busy all the time")
    # calls 50% full at 80% busy: 2,000 / (250 x 0.5 x 0.8) = 20 GPUs, beside 10 with full calls
    assert d.value("gpus_at_fill_with_headroom") == 20
    # one central dispatcher: 50 inputs / 2,000 req/s = 25 ms
    assert d.value("central_batch_fill_time_s") == pytest.approx(0.025)
    assert d.value("dispatcher_layout") == "this design's one dispatcher"
    assert d.value("queue_tail_verdict").startswith("queueing adds")
    # 70 inputs per 400 ms call = 175 req/s a GPU; 400 req/s needs ceil(2.29) = 3 GPUs, 400 / 525 = 76.2% busy:
    # stable, above a 65% target. Central fill 70 / 400 = 175 ms; each of 7 dispatchers sees 57.14 req/s, 1.225 s
    v = solve(Params(max_batch_inputs=70, call_time_ms=400, arrival_rps=400, target_utilization=0.65,
                     dispatchers=7, flush_timeout_ms=20))
    assert v.value("utilization_at_floor") == pytest.approx(400 / 525)
    assert v.value("floor_verdict").startswith("the queue is stable, but above the target")
    assert v.value("central_batch_fill_time_s") == pytest.approx(0.175)
    assert v.value("batch_fill_time_s") == pytest.approx(70 / (400 / 7))
    assert v.value("dispatcher_layout") == "each of this design's 7 independent dispatchers"
    # a 20 ms timeout at 57.14 req/s sends 1 + 1.14 = 2.14 inputs a call: 115 GPUs at 65%, where under 1% of
    # batches wait, so the p99 wait is 0 and queueing adds nothing
    assert v.value("queue_wait_p99_s") == 0
    assert v.value("queue_tail_verdict").startswith("at most 1% of batches wait")
    # at 300 req/s, 2 GPUs of 175 req/s are 300 / 350 = 85.7% busy, under a 90% target: the floor is the fleet
    w = solve(Params(max_batch_inputs=70, call_time_ms=400, arrival_rps=300, target_utilization=0.9))
    assert w.value("floor_verdict").startswith("that is already within the target")
    assert w.value("gpus_floor") == w.value("gpus_at_target_util") == 2


def test_variant_smaller_faster_calls_more_traffic():
    p = Params(max_batch_inputs=32, call_time_ms=100, arrival_rps=5000, batch_fill_fraction=0.75,
               target_utilization=0.7)
    d = solve(p)
    assert d.value("per_gpu_rps_full") == pytest.approx(320)          # 32 / 0.1
    assert d.value("gpus_floor") == 16                                  # ceil(5000 / 320 = 15.6)
    assert d.value("per_gpu_rps_at_fill") == pytest.approx(240)        # 320 x 0.75
    assert d.value("gpus_at_fill") == 21                                # ceil(20.8)
    assert d.value("gpus_at_target_util") == 23                         # ceil(5000 / 224 = 22.3)


def test_short_timeout_shrinks_batches_and_raises_gpus():
    d = solve(Params(flush_timeout_ms=10))
    # the first request plus 2,000 req/s x 10 ms = 21 inputs per call
    assert d.value("expected_batch_at_flush") == pytest.approx(21)
    assert d.value("flush_on_timeout") == "yes"
    # 21 / 0.2 s = 105 req/s per GPU; 2,000 / 105 = 19.05 -> 20
    assert d.value("gpus_with_timeout_flush") == 20
    # with 80% headroom: 2,000 / 84 = 23.8 -> 24
    assert d.value("gpus_recommended") == 24
    assert d.value("worst_batching_wait_s") == pytest.approx(0.010)


def test_long_timeout_fills_batches_and_waits_the_fill_time():
    d = solve(Params(flush_timeout_ms=50))
    assert d.value("expected_batch_at_flush") == 50
    assert d.value("flush_on_timeout") == "no"
    assert d.value("gpus_with_timeout_flush") == 8
    # the first request waits for 49 more at 2,000 req/s
    assert d.value("worst_batching_wait_s") == pytest.approx(49 / 2000)
    assert d.value("worst_latency_s") == pytest.approx(49 / 2000 + 0.2)


def test_four_dispatchers_quarter_the_traffic_each():
    d = solve(Params(dispatchers=4))
    assert d.value("per_dispatcher_rps") == pytest.approx(500)
    assert d.value("batch_fill_time_s") == pytest.approx(0.1)
    # 1 + 500 x 0.05 = 26 inputs per call; 26 / 0.2 = 130 req/s; 2,000 / 130 = 15.4 -> 16
    assert d.value("expected_batch_at_flush") == pytest.approx(26)
    assert d.value("gpus_with_timeout_flush") == 16


def test_exact_division_does_not_round_up():
    assert solve(Params(arrival_rps=1000)).value("gpus_floor") == 4


rates = st.floats(min_value=1, max_value=100_000)


@settings(max_examples=200, deadline=None)
@given(a=rates, b=rates, timeout=st.floats(1, 1000), fill=st.floats(0.05, 1))
def test_more_traffic_never_needs_fewer_gpus(a, b, timeout, fill):
    lo, hi = sorted((a, b))
    d_lo = solve(Params(arrival_rps=lo, flush_timeout_ms=timeout, batch_fill_fraction=fill))
    d_hi = solve(Params(arrival_rps=hi, flush_timeout_ms=timeout, batch_fill_fraction=fill))
    for key in ["gpus_floor", "gpus_at_fill", "gpus_at_target_util"]:
        assert d_hi.value(key) >= d_lo.value(key), key


@settings(max_examples=200, deadline=None)
@given(t1=st.floats(1, 1000), t2=st.floats(1, 1000), rate=rates)
def test_longer_timeout_never_needs_more_gpus_but_never_waits_less(t1, t2, rate):
    lo, hi = sorted((t1, t2))
    d_lo = solve(Params(flush_timeout_ms=lo, arrival_rps=rate))
    d_hi = solve(Params(flush_timeout_ms=hi, arrival_rps=rate))
    assert d_hi.value("gpus_with_timeout_flush") <= d_lo.value("gpus_with_timeout_flush")
    assert d_hi.value("worst_batching_wait_s") >= d_lo.value("worst_batching_wait_s")


@settings(max_examples=100, deadline=None)
@given(f1=st.floats(0.05, 1), f2=st.floats(0.05, 1))
def test_fuller_batches_never_need_more_gpus(f1, f2):
    lo, hi = sorted((f1, f2))
    assert solve(Params(batch_fill_fraction=hi)).value("gpus_at_fill") <= solve(
        Params(batch_fill_fraction=lo)).value("gpus_at_fill")


@settings(max_examples=100, deadline=None)
@given(rate=rates, timeout=st.floats(1, 1000), util=st.floats(0.3, 1))
def test_ordering_of_the_gpu_counts(rate, timeout, util):
    d = solve(Params(arrival_rps=rate, flush_timeout_ms=timeout, target_utilization=util))
    assert d.value("gpus_floor") <= d.value("gpus_with_timeout_flush") <= d.value("gpus_recommended")
    assert d.value("gpus_floor") <= d.value("gpus_at_target_util") <= d.value("gpus_recommended")
    assert 1 <= d.value("expected_batch_at_flush") <= 50


def test_half_fill_time_timeout_doubles_the_fleet():
    d = solve(Params())
    # fill time 25 ms; half of it is 12.5 ms; 1 + 2,000 x 0.0125 = 26 inputs per call
    assert d.value("short_timeout_s") == pytest.approx(0.0125)
    assert d.value("batch_at_short_timeout") == pytest.approx(26)
    # 2,000 x 0.2 / 26 = 15.4 -> 16 GPUs, twice the floor of 8
    assert d.value("gpus_at_short_timeout") == 16


# --- the GPU hand-off queue: M/D/c at the recommended fleet -----------------------------------------

from models.serving.batched_inference_api import simulate_gpu_queue  # noqa: E402
from models.sim import queue  # noqa: E402


def _md1_cdf(lam: float, d_s: float, t: float) -> float:
    """Erlang's M/D/1 waiting-time distribution (1909), a formula of its own:
    P(W <= t) = (1 - rho) sum_{k=0}^{floor(t/D)} [lam (k D - t)]^k / k! e^{-lam (k D - t)}."""
    rho = lam * d_s
    return (1 - rho) * sum((lam * (k * d_s - t)) ** k / math.factorial(k) * math.exp(-lam * (k * d_s - t))
                           for k in range(int(math.floor(t / d_s)) + 1))


def _md1_quantile(lam: float, d_s: float, p: float) -> float:
    lo, hi = 0.0, 100 * d_s
    for _ in range(80):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if _md1_cdf(lam, d_s, mid) >= p else (mid, hi)
    return hi


def test_one_gpu_is_m_d_1_and_matches_erlangs_formula():
    # 5 req/s with the 50 ms timer: batches of 1 + 5 x 0.05 = 1.25, one GPU serves 1.25 / 0.2 = 6.25 req/s,
    # ceil(5 / (6.25 x 0.8)) = 1 GPU. Batches arrive at 5 / 1.25 = 4 a second, each call 0.2 s: rho = 0.8.
    d = solve(Params(arrival_rps=5))
    assert d.value("gpus_recommended") == 1
    assert d.value("batch_rate_per_s") == pytest.approx(4)
    assert d.value("gpu_busy_at_recommended") == pytest.approx(0.8)
    # M/D/1: P(wait) = rho, mean wait = rho D / (2 (1 - rho)) = 0.8 x 0.2 / 0.4 = 0.4 s
    assert d.value("queue_wait_probability") == pytest.approx(0.8, rel=1e-9)
    assert d.value("queue_wait_mean_s") == pytest.approx(0.4, rel=1e-9)
    for pct in (95, 99):
        assert d.value(f"queue_wait_p{pct}_s") == pytest.approx(_md1_quantile(4, 0.2, pct / 100), rel=1e-7)
    # and the whole distribution, off the grid of whole service times too
    for t in (0.0, 0.05, 0.2, 0.33, 0.9, 1.7, 2.5):
        assert queue.mdc_wait_cdf(1, 4, 0.2, t) == pytest.approx(_md1_cdf(4, 0.2, t), abs=1e-10)


def test_m_d_c_mean_against_the_embedded_chain_solved_directly():
    # An independent computation: the number waiting Q at instants one call apart is the chain
    # Q' = max(Q + Poisson(a) - c, 0); solve its stationary distribution as a linear system.
    c, a = 4, 3.2
    n = 400
    pois = np.array([math.exp(k * math.log(a) - a - math.lgamma(k + 1)) for k in range(n + c + 1)])
    P = np.zeros((n, n))
    for i in range(n):
        for j in range(1, n):
            P[i, j] = pois[j - i + c] if j - i + c >= 0 else 0.0
        P[i, 0] = pois[: max(0, c - i) + 1].sum() if c - i >= 0 else 0.0
    A = P.T - np.eye(n)
    A[-1, :] = 1
    q = np.linalg.solve(A, np.eye(n)[-1])
    mean_wait_calls = (np.arange(n) * q).sum() / a  # Little's law, in call times
    assert queue.mdc_mean_wait_s(c, a / 0.2, 0.2) == pytest.approx(mean_wait_calls * 0.2, rel=1e-8)
    # P(no wait) = P(number in system < c) = P(Q + Poisson(a) <= c - 1)
    no_wait = sum(q[j] * pois[: c - j].sum() for j in range(c))
    assert queue.mdc_wait_probability(c, a / 0.2, 0.2) == pytest.approx(1 - no_wait, rel=1e-8)


def test_seed_fleet_queue_tail_by_hand():
    d = solve(Params())
    # 2,000 req/s in batches of 50 = 40 batches/s; x 0.2 s = 8 GPUs of work on 10 GPUs: 80% busy
    assert d.value("batch_rate_per_s") == pytest.approx(40)
    assert d.value("gpu_offered_load") == pytest.approx(8)
    assert d.value("gpu_busy_at_recommended") == pytest.approx(0.8)
    # Erlang C for 10 servers at a = 8 from the birth-death chain, then the M/M/c p99 in closed form
    c, a = 10, 8.0
    terms = [a ** k / math.factorial(k) for k in range(c)]
    top = a ** c / math.factorial(c) * c / (c - a)
    erlang_c = top / (sum(terms) + top)
    assert d.value("queue_wait_probability_exponential") == pytest.approx(erlang_c, rel=1e-9)
    assert d.value("queue_wait_p99_exponential_s") == pytest.approx(math.log(erlang_c / 0.01) / (10 / 0.2 - 40))
    # deterministic calls queue less than exponential ones, in share and in tail
    assert d.value("queue_wait_probability") < d.value("queue_wait_probability_exponential")
    assert d.value("queue_wait_p99_s") < 0.6 * d.value("queue_wait_p99_exponential_s")
    assert d.value("batch_sojourn_p99_s") == pytest.approx(d.value("queue_wait_p99_s") + 0.2)
    assert d.value("latency_bound_p99_s") == pytest.approx(49 / 2000 + d.value("queue_wait_p99_s") + 0.2)


def _ci(xs):
    xs = np.asarray(xs)
    assert len(xs) == 16
    half = 2.947 * xs.std(ddof=1) / math.sqrt(len(xs))  # Student's t, 15 degrees of freedom, 99%
    return xs.mean() - half, xs.mean() + half


def test_queue_engine_replications_cover_the_exact_tail():
    p = Params()
    d = solve(p)
    runs = simulate_gpu_queue(p, seed=0, batches=100_000, replications=16)
    assert {r.servers for r in runs} == {10}
    for attr, key, scale in (("wait_p99_s", "queue_wait_p99_s", 1), ("wait_p95_s", "queue_wait_p95_s", 1),
                             ("mean_wait_s", "queue_wait_mean_s", 1), ("wait_share", "queue_wait_probability", 1)):
        want = d.value(key) / scale
        lo, hi = _ci([getattr(r, attr) for r in runs])
        print(f"{key}: simulated {lo:.5g}..{hi:.5g}, exact {want:.5g}")
        assert lo <= want <= hi, (key, lo, want, hi)
        assert hi - lo < 0.1 * want, (key, "interval too wide to test anything")
    # the exponential-service figure is well outside: the test can tell the two queues apart
    assert d.value("queue_wait_p99_exponential_s") > _ci([r.wait_p99_s for r in runs])[1] * 1.5


def test_simulation_is_seeded():
    a = simulate_gpu_queue(Params(), seed=3, batches=2000, replications=2)
    b = simulate_gpu_queue(Params(), seed=3, batches=2000, replications=2)
    assert a == b and a[0] != a[1]


# --- the page's simulation panel: the same queue, at the panel's run length -------------------------

from models.serving.batched_inference_api import (  # noqa: E402
    PANEL_BATCHES, PANEL_REPLICATIONS, exact_wait_ccdf)

PANEL_TOL = 0.10  # the panel's mean p99 over its runs, against the exact p99: the largest miss seen over
# seeds 0-11 was 6.8% at the defaults (seeds 0-2, checked here: 4.1%, 2.0%, 3.5%)


def _panel_p99(p, seed):
    runs = simulate_gpu_queue(p, seed, PANEL_BATCHES, PANEL_REPLICATIONS)
    return sum(r.wait_p99_s for r in runs) / len(runs)


def test_the_panel_lands_on_the_exact_p99_and_not_on_the_exponential_one():
    d = solve(Params())
    for seed in (0, 1, 2):  # the seed a learner sees first, and two more
        assert _panel_p99(Params(), seed) == pytest.approx(d.value("queue_wait_p99_s"), rel=PANEL_TOL)
    # the tolerance can tell the queue the page claims from its neighbours: M/M/c at the same load,
    # and the same M/D/c with one GPU more or fewer
    exact = d.value("queue_wait_p99_s")
    assert d.value("queue_wait_p99_exponential_s") > (1 + 3 * PANEL_TOL) * exact
    assert queue.mdc_wait_quantile_s(9, 40, 0.2, 0.99) > (1 + 3 * PANEL_TOL) * exact
    assert queue.mdc_wait_quantile_s(11, 40, 0.2, 0.99) < (1 - 3 * PANEL_TOL) * exact


def test_the_panel_on_one_gpu_lands_on_erlangs_m_d_1():
    # 5 req/s: one GPU, 4 batches/s of 0.2 s (80% busy), the p99 from Erlang's 1909 formula (2.07 s)
    want = _md1_quantile(4, 0.2, 0.99)
    assert want == pytest.approx(2.071, rel=1e-3)
    assert _panel_p99(Params(arrival_rps=5), 0) == pytest.approx(want, rel=PANEL_TOL)


def test_the_exact_tail_the_chart_draws_passes_through_the_page_percentiles():
    d = solve(Params())
    p95, p99 = d.value("queue_wait_p95_s"), d.value("queue_wait_p99_s")
    at = exact_wait_ccdf(d, (0.0, p95, p99, 10.0))
    assert at[0] == pytest.approx(d.value("queue_wait_probability"), rel=1e-9)  # P(W > 0)
    assert at[1] == pytest.approx(0.05, rel=1e-6) and at[2] == pytest.approx(0.01, rel=1e-6)
    assert at[3] < 1e-12
    # one GPU: Erlang's M/D/1 distribution, a formula of its own
    d1 = solve(Params(arrival_rps=5))
    ts = (0.05, 0.33, 1.7)
    assert exact_wait_ccdf(d1, ts) == pytest.approx([1 - _md1_cdf(4, 0.2, t) for t in ts], abs=1e-9)
    # a fleet the page takes as an exponential tail: the same form, P(wait) e^(-t P(wait) / mean)
    big = Params(arrival_rps=3800, call_time_ms=2000, max_batch_inputs=16, target_utilization=0.95)  # 500 GPUs
    db = solve(big)
    assert queue.mdc_method(db.value("gpus_recommended"), db.value("batch_rate_per_s"), 2.0) != "exact"
    assert exact_wait_ccdf(db, (db.value("queue_wait_p99_s"),))[0] == pytest.approx(0.01, rel=1e-6)
    # no bound at the floor: every batch is past any t
    assert exact_wait_ccdf(solve(Params(target_utilization=1.0)), (0.0, 5.0)) == [1.0, 1.0]


def test_the_simulated_tail_is_the_share_of_waits_past_each_t():
    d = solve(Params())
    grid = (0.0, d.value("queue_wait_p95_s"), d.value("queue_wait_p99_s"))
    runs = simulate_gpu_queue(Params(), 0, PANEL_BATCHES, PANEL_REPLICATIONS, ccdf_t_s=grid)
    for r in runs:
        assert r.wait_ccdf[0] == pytest.approx(r.wait_share)  # P(W > 0) is the share that waits
        assert r.wait_ccdf[1] == pytest.approx(0.05, abs=0.02) and r.wait_ccdf[2] == pytest.approx(0.01, abs=0.006)
    # asking for the tail changes nothing else in the run
    plain = simulate_gpu_queue(Params(), 0, PANEL_BATCHES, PANEL_REPLICATIONS)
    assert [(r.wait_p99_s, r.mean_wait_s) for r in plain] == [(r.wait_p99_s, r.mean_wait_s) for r in runs]


def test_the_mean_wait_is_never_below_zero():
    # draw 76 has 321 GPUs 60% busy: almost no batch waits, and the roots' sum came out at -6e-16 s
    from models.mock import draw_scenario

    assert solve(draw_scenario(Params, 76)).value("queue_wait_mean_s") >= 0


def test_a_fleet_at_the_floor_has_no_bounded_tail():
    d = solve(Params(target_utilization=1.0))
    # 2,000 / 250 = 8 GPUs exactly: 100% busy, the M/D/c queue is unstable
    assert d.value("gpus_recommended") == 8
    assert math.isinf(d.value("queue_wait_p99_s")) and math.isinf(d.value("queue_wait_mean_s"))
    assert d.value("queue_wait_probability") == 1


@settings(max_examples=60, deadline=None)
@given(rate=st.floats(10, 20_000), timeout=st.floats(1, 1000), u1=st.floats(0.3, 0.95), u2=st.floats(0.3, 0.95))
def test_more_headroom_never_lengthens_the_tail(rate, timeout, u1, u2):
    lo, hi = sorted((u1, u2))
    d_lo = solve(Params(arrival_rps=rate, flush_timeout_ms=timeout, target_utilization=lo))
    d_hi = solve(Params(arrival_rps=rate, flush_timeout_ms=timeout, target_utilization=hi))
    for d in (d_lo, d_hi):
        assert 0 <= d.value("queue_wait_p95_s") <= d.value("queue_wait_p99_s")
        assert d.value("latency_bound_p99_s") >= d.value("worst_latency_s")
        assert d.value("gpu_busy_at_recommended") <= 0.95 + 1e-9
    assert d_lo.value("queue_wait_p99_s") <= d_hi.value("queue_wait_p99_s") + 1e-12


def test_work_conserving_dispatch_at_the_seed():
    d = solve(Params())
    # full-batch fleet with 80% headroom: ceil(2000 / (250 x 0.8)) = 10 GPUs, one dispatcher
    assert d.value("wc_fleet") == 10
    # 10 workers of 200 ms calls, staggered: one frees every 200 / 10 = 20 ms
    assert d.value("wc_free_interval_s") == pytest.approx(0.020)
    # it takes the 2000 x 0.020 = 40 requests that arrived since the last one freed
    assert d.value("wc_batch") == pytest.approx(40)
    assert d.value("wc_worst_wait_s") == pytest.approx(0.020)
    assert d.value("wc_worst_latency_s") == pytest.approx(0.220)
    # the timeout flush's first request waits (50 - 1) / 2000 = 24.5 ms for its batch to fill
    assert d.value("worst_batching_wait_s") == pytest.approx(0.0245)
    assert d.value("shorter_worst_wait") == "work-conserving dispatch"
    assert d.value("wc_gpus_saved") == 0


def test_work_conserving_dispatch_against_a_short_timeout():
    d = solve(Params(flush_timeout_ms=10))
    # the 10 ms timeout sends 1 + 2000 x 0.01 = 21 inputs: 105 req/s per GPU, ceil(2000 / (105 x 0.8)) = 24 GPUs
    assert d.value("gpus_recommended") == 24
    # work-conserving keeps the 10-GPU fleet (batches of 40 by themselves), 14 GPUs fewer
    assert d.value("wc_fleet") == 10
    assert d.value("wc_gpus_saved") == 14
    # but its worst wait, 20 ms, is longer than the 10 ms timeout
    assert d.value("shorter_worst_wait") == "the timeout flush"


def test_work_conserving_dispatch_with_many_dispatchers():
    d = solve(Params(dispatchers=4))
    # each dispatcher owns 10 / 4 = 2.5 workers' worth: one frees every 200 x 4 / 10 = 80 ms,
    # and takes 500 req/s x 0.08 s = 40 inputs
    assert d.value("wc_free_interval_s") == pytest.approx(0.08)
    assert d.value("wc_batch") == pytest.approx(40)


# --- issue 19: the latency chart's quiet-hours line and the panel's figures are steps ----------------


def test_the_quiet_hours_worst_latency_worked_by_hand():
    # seed: 2,000 req/s / 40 = 50 req/s on one dispatcher; a batch of 50 fills in 49 / 50 = 0.98 s, so
    # the 50 ms timeout fires first: 50 ms + the 200 ms call = 250 ms
    d = solve(Params())
    assert d.value("quiet_arrival_rps") == pytest.approx(50)
    assert d.value("quiet_per_dispatcher_rps") == pytest.approx(50)
    assert d.value("quiet_worst_batching_wait_s") == pytest.approx(0.05)
    assert d.value("quiet_worst_latency_s") == pytest.approx(0.25)
    # four dispatchers and a 1 s timeout: 12.5 req/s each, 49 / 12.5 = 3.92 s to fill, so 1 s + 0.2 s
    d = solve(Params(dispatchers=4, flush_timeout_ms=1000))
    assert d.value("quiet_per_dispatcher_rps") == pytest.approx(12.5)
    assert d.value("quiet_worst_latency_s") == pytest.approx(1.2)
    # 20,000 req/s: 500 req/s in the quiet hours, the batch fills in 49 / 500 = 98 ms, before the 1 s timer
    d = solve(Params(arrival_rps=20_000, flush_timeout_ms=1000))
    assert d.value("quiet_worst_batching_wait_s") == pytest.approx(0.098)
    assert d.value("quiet_worst_latency_s") == pytest.approx(0.298)


def test_the_panels_figures_are_steps_read_off_its_runs():
    from models.serving.batched_inference_api import ccdf_grid, simulate, simulation_steps

    p = Params()
    d = solve(p)
    r = simulate(p, seed=0)
    s = simulation_steps(p, r)
    assert s.value("simulated_runs") == 4 and s.value("simulated_batches_per_run") == 100_000
    # the tail is read on 61 waits from 0 to 1.5 x the exact p99 (a p99 above the 200 ms call here)
    assert len(r.grid_s) == 61 and r.grid_s[0] == 0
    assert r.grid_s[-1] == pytest.approx(1.5 * d.value("queue_wait_p99_s")) and r.grid_s == ccdf_grid(d)
    assert r.exact_ccdf[0] == pytest.approx(d.value("queue_wait_probability"))  # P(W > 0)
    for attr, stem in (("wait_p95_s", "queue_wait_p95"), ("wait_p99_s", "queue_wait_p99"),
                       ("mean_wait_s", "queue_wait_mean")):
        values = [getattr(run, attr) for run in r.runs]
        assert s.value(f"simulated_{stem}_s") == pytest.approx(sum(values) / 4)
        assert s.value(f"simulated_{stem}_lowest_s") == min(values)
        assert s.value(f"simulated_{stem}_highest_s") == max(values)
    shares = [run.wait_share for run in r.runs]
    assert s.value("simulated_queue_wait_probability") == pytest.approx(sum(shares) / 4)
    assert s["simulated_queue_wait_probability"].percent
    assert r.simulated_ccdf[0] == pytest.approx(sum(shares) / 4)  # the chart's line starts at P(W > 0)
    # the runs land near the page's exact M/D/c figures (10% on the p99, as the panel tests above)
    assert s.value("simulated_queue_wait_p99_s") == pytest.approx(d.value("queue_wait_p99_s"), rel=0.1)
    assert s.value("simulated_queue_settles").startswith("The queue settles")
    # at the floor (100% busy) the queue has no bound, and the panel says its figures measure the run
    p_floor = Params(target_utilization=1.0)
    assert not math.isfinite(solve(p_floor).value("queue_wait_p99_s"))
    r_floor = simulate(p_floor, seed=0)
    assert simulation_steps(p_floor, r_floor).value("simulated_queue_settles").startswith("At this load the queue never")
    assert r_floor.exact_ccdf == [1.0] * 61 and r_floor.grid_s[-1] == pytest.approx(0.2)  # one call
