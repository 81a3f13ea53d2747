"""multi-region-failover: seed figures from the seed's own arithmetic, hand-worked variants,
directions, the issue's key figures, the content's references, and the simulation beside the model."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from models.content import PLACEHOLDER, load_content
from models.core import knobs_of
from models.serving.multi_region_failover import Params, sim_config, simulate, solve

ROOT = Path(__file__).resolve().parents[2]
CONTENT = ROOT / "content" / "serving" / "multi-region-failover.md"
DIRECTIVES = {("diagram", "regions"), ("chart", "n_minus_1_vs_regions"), ("chart", "retry_wave"), ("sim", "failover")}


def v(d, key):
    return d.value(key)


# --- the seed's arithmetic ----------------------------------------------------------------------


def test_seed_two_regions_at_sixty_percent():
    # "Two regions at 60% is not one region with a spare": the survivor carries 2 x 60% = 120%.
    d = solve(Params(residency_fraction=0.0))
    assert v(d, "survivor_utilization_after_loss") == pytest.approx(2 * 0.6 / (2 - 1))
    assert v(d, "survivor_utilization_after_loss") == pytest.approx(1.2)
    # "Capacity sized for N-1": losing one of two leaves half the fleet, so run at most 50% today ...
    assert v(d, "n_minus_1_max_utilization") == pytest.approx(1 * (2 - 1) / 2) == pytest.approx(0.5)
    # ... or keep 60% and give each region 1.2x today's capacity: 40 replicas become 48.
    assert v(d, "required_capacity_per_region") == pytest.approx(1.2)
    assert v(d, "n_minus_1_extra_replicas") == 48 - 40
    # "The 30 seconds after a region drops": 40 x 25 = 1,000 req/s per region, 600 each today,
    # 1,200 on the survivor, 200 above its capacity, 6,000 queued over 30 s with nothing shed.
    assert v(d, "capacity_per_region_rps") == 40 * 25 == 1000
    assert v(d, "load_per_region_rps") == pytest.approx(600)
    assert v(d, "survivor_load_rps") == pytest.approx(1200)
    assert v(d, "excess_rps") == pytest.approx(1200 - 1000)
    assert v(d, "backlog_after_window") == pytest.approx(200 * 30) == pytest.approx(6000)
    # the wait is behind the queue as it stands: idle slots absorb 8 s x ln((1,200 - 600) / (1,200 - 1,000))
    # = 8 ln 3 s first, so 200 x (30 - 8 ln 3) queue, served by the 1,000 req/s still alive
    assert v(d, "queue_wait_after_window_s") == pytest.approx(200 * (30 - 8 * math.log(3)) / 1000)


def test_seed_in_flight_and_retries():
    d = solve(Params())
    # Little's law: 600 req/s, 8 s each, all lost with the region.
    assert v(d, "in_flight_per_region") == pytest.approx(600 * 8) == pytest.approx(4800)
    assert v(d, "in_flight_lost") == pytest.approx(4800)
    # Full jitter over a 2 s base: 4,800 / 2 = 2,400 req/s; on one 100 ms tick: 48,000 req/s.
    assert v(d, "retry_rate_jittered_per_s") == pytest.approx(4800 / 2)
    assert v(d, "retry_rate_synchronized_per_s") == pytest.approx(4800 / 0.1)
    assert v(d, "retry_rate_per_s") == pytest.approx(2400)  # the default policy jitters
    assert v(d, "retry_wave_vs_live_capacity") == pytest.approx(2400 / 1000)
    # Until detection (15 s) region A's 600 req/s go nowhere: 9,000 requests.
    assert v(d, "failed_before_detection") == pytest.approx(600 * 15)
    # Back-offs of 2 + 4 + 8 = 14 s end before the 15 s detection.
    assert v(d, "retry_horizon_s") == pytest.approx(2 + 4 + 8)
    assert v(d, "retries_outlast_detection") == "no"


def test_default_scenario_with_residency_and_the_warm_pool():
    d = solve(Params())
    # A tenth of region A's traffic is resident: 60 req/s stranded, 540 move. The survivor
    # carries 600 + 540 = 1,140 req/s, 1.14 x capacity, 140 above it.
    assert v(d, "keep_share") == 0
    assert v(d, "stranded_resident_rps") == pytest.approx(0.1 * 600)
    assert v(d, "survivor_utilization_steady") == pytest.approx(0.6 * (1 + 0.9))
    assert v(d, "survivor_steady_load_rps") == pytest.approx(1140)
    assert v(d, "affected_steady_load_rps") == 0
    assert v(d, "excess_rps") == pytest.approx(140)
    assert v(d, "backlog_after_window") == pytest.approx(140 * 30)
    # Idle slots: 8 s x ln((1,140 - 600) / (1,140 - 1,000)) = 8 ln(540 / 140).
    fill = 8 * math.log(540 / 140)
    assert v(d, "idle_fill_s") == pytest.approx(fill)
    assert v(d, "backlog_after_window_net") == pytest.approx(140 * (30 - fill))
    # Short ceil(140 / 25) = 6 replicas; the warm pool has 2.
    assert v(d, "replicas_short_per_survivor") == 6
    assert v(d, "warm_pool_covers") == "no"
    # Autoscaler: ceil(1,140 / (25 x 0.8)) = 57 replicas, 17 more, 2 warm and 15 cold.
    assert v(d, "autoscale_replicas_per_survivor") == 17
    assert v(d, "cold_replicas_per_survivor") == 15
    assert v(d, "cold_start_effective_s") == pytest.approx(70)
    assert v(d, "time_to_capacity_s") == pytest.approx(15 + 70)
    # Until then 1,140 - 42 x 25 = 90 req/s cannot be admitted, for 70 s: 6,300 requests, taken
    # from a free tier of 0.3 x 1,140 = 342 req/s.
    assert v(d, "uncovered_rps_per_survivor") == pytest.approx(90)
    assert v(d, "overflow_until_capacity") == pytest.approx(90 * 70)
    assert v(d, "free_tier_shed_share") == pytest.approx(90 / 342)
    assert v(d, "seconds_short_s") == pytest.approx(70)
    # Meanwhile a survivor admits 42 x 25 = 1,050 req/s: all 798 paid, 252 of the 342 free; every
    # refused free request retries up to 3 times with the same odds: A = 342 (1 + q + q^2 + q^3),
    # q = 1 - 252 / A. Check the fixed point rather than retype its solution.
    assert v(d, "capacity_while_short_rps") == pytest.approx(1050)
    free_attempts = v(d, "offered_while_short_rps") - 798
    q = 1 - 252 / free_attempts
    assert free_attempts == pytest.approx(342 * (1 + q + q**2 + q**3), rel=1e-9)
    assert v(d, "retry_amplification") == pytest.approx(v(d, "offered_while_short_rps") / 1140)
    # Weights: Llama-3-70B in bf16, 70,552,387,584 x 2 B (counted from its shape); 15 cold replicas over 100 Gb/s = 12.5 GB/s.
    assert v(d, "weights_bytes") == pytest.approx(70_552_387_584 * 2)
    assert v(d, "weights_pull_s") == pytest.approx(15 * 141.104775168e9 / 12.5e9)


def test_how_traffic_moves_gray_failures_and_gpus_worked_by_hand():
    d = solve(Params())
    # Route 53's defaults: a probe every 30 s, unhealthy after 3 failures: 90 s, against the 15 s assumed.
    assert v(d, "health_check_detection_s") == pytest.approx(30 * 3)
    # With a 60 s TTL, resolvers holding the old answer keep sending region A's 600 req/s to a dead
    # region after the change: up to 600 x 60 = 36,000 requests; the shift ends 15 + 60 = 75 s in.
    assert v(d, "failed_during_dns_ttl") == pytest.approx(600 * 60)
    assert v(d, "traffic_shift_complete_s") == pytest.approx(75)
    assert v(solve(Params(dns_ttl_s=0)), "failed_during_dns_ttl") == 0  # anycast: nothing cached
    # A gray failure failing 5% of 600 req/s while every check passes: 30 req/s, 1,800 a minute.
    assert v(d, "gray_failed_per_min") == pytest.approx(600 * 0.05 * 60)
    # GPUs: the survivor asks for 15 cold replicas and gets floor(15 x 0.25) = 3. 40 + 2 + 3 = 45
    # replicas x 25 = 1,125 req/s against 1,140: 15 req/s stay uncovered for as long as A is down.
    assert v(d, "cold_replicas_obtained") == 3
    assert v(d, "uncovered_without_gpus_rps") == pytest.approx(1140 - 45 * 25)
    assert v(d, "autoscaler_closes_gap") == "no"
    # With half of them (7), 49 x 25 = 1,225 >= 1,140: the gap closes.
    d2 = solve(Params(obtainable_gpu_fraction=0.5))
    assert v(d2, "cold_replicas_obtained") == 7
    assert v(d2, "uncovered_without_gpus_rps") == 0
    assert v(d2, "autoscaler_closes_gap") == "yes"


def test_dns_failover_outlier_ejection_and_the_price_of_headroom_by_hand():
    d = solve(Params())
    # DNS failover end to end: 3 failed checks 30 s apart, then the 60 s TTL: 150 s, ten times the
    # 15 s assumed, with region A's 600 req/s going to a dead region all the while: 90,000 requests
    assert v(d, "dns_failover_s") == pytest.approx(30 * 3 + 60)
    assert v(d, "failed_during_dns_failover") == pytest.approx(600 * 150)
    assert v(d, "dns_meets_detection_verdict").startswith("no")
    # Route 53's fast 10 s interval and a 5 s TTL: 10 x 3 + 5 = 35 s, within a 40 s detection
    fast = solve(Params(health_check_interval_s=10, dns_ttl_s=5, detection_s=40))
    assert v(fast, "dns_failover_s") == pytest.approx(35)
    assert v(fast, "dns_meets_detection_verdict").startswith("yes")
    # Envoy ejects after 5 consecutive 5xx. With 5% of requests failing independently, the expected
    # requests to the first run of 5 is (1 - q^5) / ((1 - q) q^5) = 3.37 million; a replica carries
    # 0.6 x 25 = 15 req/s, so about 2.6 days: far past the 30 s window
    q = 0.05
    runs = (1 - q**5) / ((1 - q) * q**5)
    assert v(d, "envoy_consecutive_5xx") == 5
    assert v(d, "consecutive_5xx_expected_requests") == pytest.approx(runs) == pytest.approx(3.368e6, rel=1e-3)
    assert v(d, "replica_load_rps") == pytest.approx(15)
    assert v(d, "consecutive_5xx_eject_s") == pytest.approx(runs / 15)
    assert v(d, "consecutive_5xx_eject_s") / 86400 == pytest.approx(2.6, abs=0.05)
    assert v(d, "consecutive_5xx_verdict").startswith("no")
    # a host failing half its requests: (1 - 1/32) / (1/2 x 1/32) = 62 requests, 4.1 s at 15 req/s
    half = solve(Params(gray_error_fraction=0.5))
    assert v(half, "consecutive_5xx_expected_requests") == pytest.approx((1 - 0.5**5) / (0.5 * 0.5**5)) == 62
    assert v(half, "consecutive_5xx_verdict").startswith("yes")
    # N-1 headroom held every day: ceil(40 x 1.2) - 40 = 8 replicas a region, 20% of today's 40,
    # 16 across both regions
    assert v(d, "n_minus_1_extra_share") == pytest.approx(8 / 40)
    assert v(d, "n_minus_1_extra_fleet_replicas") == 2 * 8


@settings(max_examples=60, deadline=None)
@given(a=st.floats(0.005, 0.5), b=st.floats(0.005, 0.5))
def test_more_gray_errors_eject_sooner(a, b):
    lo, hi = sorted((a, b))
    t_lo, t_hi = (v(solve(Params(gray_error_fraction=x)), "consecutive_5xx_eject_s") for x in (lo, hi))
    assert t_hi <= t_lo * (1 + 1e-12)


def test_seed_worked_arithmetic_reads_like_the_seed():
    d = solve(Params())
    assert d["survivor_utilization_after_loss"].worked() == "2 × 0.6 / (2 − 1) = 1.2 × capacity"
    assert d["in_flight_lost"].worked() == "600 requests/s × 1 × 8 s = 4,800 requests"
    assert d["retry_rate_per_s"].worked().endswith("= 2,400 requests/s")


# --- variants worked by hand ----------------------------------------------------------------------


def test_variant_four_regions_at_seventy_percent_with_a_ninety_percent_ceiling():
    d = solve(Params(regions=4, utilization=0.7, failover_ceiling=0.9, residency_fraction=0.0))
    assert v(d, "survivor_utilization_after_loss") == pytest.approx(4 * 0.7 / 3)  # 0.933
    assert v(d, "n_minus_1_max_utilization") == pytest.approx(0.9 * 3 / 4)  # 0.675
    assert v(d, "required_capacity_per_region") == pytest.approx(2.8 / (3 * 0.9))  # 1.037
    assert v(d, "n_minus_1_extra_replicas") == 2  # ceil(40 x 1.037 = 41.5) - 40
    assert v(d, "survivor_load_rps") == pytest.approx(2800 / 3)  # 933.3 req/s
    assert v(d, "excess_rps") == 0  # under capacity, though over the 900 req/s ceiling
    assert v(d, "backlog_after_window") == 0
    assert v(d, "idle_fill_s") == 0
    assert v(d, "replicas_short_per_survivor") == 2  # ceil((933.3 - 900) / 25)
    assert v(d, "warm_pool_covers") == "yes"  # 2 warm replicas
    assert v(d, "time_to_capacity_s") == pytest.approx(15)


def test_variant_half_a_region_lost():
    # One of two regions loses half its replicas. Equal utilization: 2 x 0.6 / (2 - 0.5) = 0.8.
    d = solve(Params(drop_fraction=0.5, residency_fraction=0.0))
    assert v(d, "keep_share") == pytest.approx(2 * 0.5 / 1.5)  # keeps 2/3 of its traffic
    assert v(d, "survivor_utilization_steady") == pytest.approx(0.8)
    assert v(d, "affected_steady_load_rps") == pytest.approx(400)  # 0.8 of its 500 req/s left
    assert v(d, "in_flight_lost") == pytest.approx(600 * 0.5 * 8)  # 2,400
    assert v(d, "failed_before_detection") == pytest.approx((600 - 500) * 15)  # 1,500 over its capacity
    assert v(d, "stranded_resident_rps") == 0
    assert v(d, "live_capacity_rps") == pytest.approx(1500)


def test_variant_synchronized_retries_and_weights_pulled_across_regions():
    d = solve(Params(retry_policy="backoff", weights_prestaged=False, interregion_gbps=40))
    assert v(d, "retry_rate_per_s") == pytest.approx(48_000)  # 4,800 in one 100 ms tick
    # 15 cold replicas x 141.1 GB over 40 Gb/s = 5 GB/s: 423.3 s on top of the 70 s cold start.
    assert v(d, "weights_pull_s") == pytest.approx(15 * 141.104775168e9 / 5e9)
    assert v(d, "cold_start_effective_s") == pytest.approx(70 + 423.314, rel=1e-5)
    assert v(d, "time_to_capacity_s") == pytest.approx(15 + 70 + 423.314, rel=1e-5)
    assert v(d, "overflow_until_capacity") == pytest.approx(90 * (70 + 423.314), rel=1e-5)


def test_variant_one_retry_has_a_closed_form_amplification():
    # One retry: A = u (1 + q), q = 1 - c / A, so A^2 - 2uA + uc = 0 and A = u + sqrt(u (u - c)).
    # Free tier u = 0.3 x 1,140 = 342 req/s on c = 1,050 - 798 = 252: A = 342 + sqrt(342 x 90).
    d = solve(Params(max_retries=1))
    assert v(d, "offered_while_short_rps") == pytest.approx(798 + 342 + math.sqrt(342 * 90), rel=1e-9)
    # Never short: nothing refused, nothing amplified.
    d = solve(Params(warm_pool_replicas=10))
    assert v(d, "offered_while_short_rps") == pytest.approx(1140)
    assert v(d, "retry_amplification") == pytest.approx(1.0)
    assert v(d, "seconds_short_s") == 0


def test_attempts_fixed_point_limits():
    from models.serving.multi_region_failover import attempts_rps

    assert attempts_rps(100, 150, 3) == 100  # room for all: no retries
    assert attempts_rps(100, 0, 3) == 400  # no room: every request tries four times
    a = attempts_rps(100, 60, 2)
    q = 1 - 60 / a
    assert a == pytest.approx(100 * (1 + q + q * q), rel=1e-9)


def test_variant_immediate_retries_and_a_bigger_model():
    d = solve(Params(retry_policy="immediate", max_retries=4, model="Llama-3.1-405B"))
    assert v(d, "retry_horizon_s") == pytest.approx(4 * 0.1)
    assert v(d, "retries_outlast_detection") == "no"
    assert v(d, "weights_bytes") == pytest.approx(405_849_243_648 * 2)


# --- moves the right way --------------------------------------------------------------------------

scenarios = st.builds(
    Params,
    regions=st.integers(2, 8),
    utilization=st.floats(0.1, 0.95),
    replicas_per_region=st.integers(1, 1000),
    replica_rps=st.floats(0.5, 500),
    mean_request_s=st.floats(0.5, 60),
    failover_ceiling=st.floats(0.5, 1.0),
    detection_s=st.floats(0, 120),
    retry_base_s=st.floats(0.1, 30),
    max_retries=st.integers(0, 8),
    drop_fraction=st.floats(0.1, 1.0),
    residency_fraction=st.floats(0, 0.9),
    paid_fraction=st.floats(0, 1),
    warm_pool_replicas=st.integers(0, 200),
    cold_start_s=st.floats(5, 900),
    autoscale_target=st.floats(0.5, 1.0),
    weights_prestaged=st.booleans(),
)
PROPS = settings(max_examples=150, deadline=None)


def _with(p: Params, **update) -> Params:
    return Params(**{**p.model_dump(), **update})


@PROPS
@given(p=scenarios)
def test_more_regions_make_a_loss_cheaper(p):
    if p.regions == 8:
        return
    a, b = solve(p), solve(_with(p, regions=p.regions + 1))
    assert v(b, "survivor_utilization_after_loss") < v(a, "survivor_utilization_after_loss")
    assert v(b, "n_minus_1_max_utilization") > v(a, "n_minus_1_max_utilization")
    assert v(b, "required_capacity_per_region") < v(a, "required_capacity_per_region")


@PROPS
@given(p=scenarios, more=st.floats(0.01, 0.5))
def test_more_load_today_never_helps(p, more):
    b = _with(p, utilization=min(0.95, p.utilization + more))
    a, b = solve(p), solve(b)
    for key in ("survivor_utilization_after_loss", "required_capacity_per_region", "survivor_utilization_steady",
                "excess_rps", "backlog_after_window", "in_flight_lost", "retry_rate_per_s",
                "autoscale_replicas_per_survivor", "overflow_until_capacity"):
        assert v(b, key) >= v(a, key) * (1 - 1e-12) - 1e-9, key


@PROPS
@given(p=scenarios, later=st.floats(1, 60))
def test_slower_detection_fails_more_and_recovers_later(p, later):
    a, b = solve(p), solve(_with(p, detection_s=min(120, p.detection_s + later)))
    assert v(b, "failed_before_detection") >= v(a, "failed_before_detection")
    assert v(b, "time_to_capacity_s") >= v(a, "time_to_capacity_s")


@PROPS
@given(p=scenarios, more=st.integers(1, 50))
def test_a_bigger_warm_pool_never_hurts(p, more):
    a, b = solve(p), solve(_with(p, warm_pool_replicas=min(200, p.warm_pool_replicas + more)))
    assert v(b, "time_to_capacity_s") <= v(a, "time_to_capacity_s")
    assert v(b, "overflow_until_capacity") <= v(a, "overflow_until_capacity") + 1e-9
    assert v(b, "cold_replicas_per_survivor") <= v(a, "cold_replicas_per_survivor")


@PROPS
@given(p=scenarios, factor=st.floats(1.1, 10))
def test_a_longer_back_off_spreads_the_wave(p, factor):
    a, b = solve(p), solve(_with(p, retry_base_s=min(30, p.retry_base_s * factor)))
    assert v(b, "retry_rate_jittered_per_s") <= v(a, "retry_rate_jittered_per_s")
    assert v(b, "retry_rate_synchronized_per_s") == v(a, "retry_rate_synchronized_per_s")
    assert v(b, "retry_horizon_s") >= v(a, "retry_horizon_s")


@PROPS
@given(p=scenarios)
def test_orderings_and_the_routing_books(p):
    d = solve(p)
    tiny = 1e-9
    # Synchronized retries land in one tick; jitter spreads them over at least that.
    assert v(d, "retry_rate_synchronized_per_s") >= v(d, "retry_rate_jittered_per_s") * (1 - tiny)
    # Residency and partial drops only ever move less than the seed's all-traffic case.
    assert v(d, "survivor_utilization_steady") <= v(d, "survivor_utilization_after_loss") * (1 + tiny)
    # No request vanishes in routing: what the hit region keeps, what the others take and what is
    # stranded add up to today's total (stranded only when nothing is left of the region).
    n, load = p.regions, v(d, "load_per_region_rps")
    routed = v(d, "affected_steady_load_rps") + (n - 1) * v(d, "survivor_steady_load_rps")
    if p.drop_fraction >= 1:
        routed += v(d, "stranded_resident_rps")
    assert routed == pytest.approx(n * load, rel=1e-9)
    assert 0 <= v(d, "keep_share") <= 1
    assert v(d, "backlog_after_window_net") <= v(d, "backlog_after_window") * (1 + tiny)
    assert 0 <= v(d, "free_tier_shed_share") <= 1


@PROPS
@given(p=scenarios, more=st.floats(0.01, 0.5))
def test_more_residency_strands_more_and_moves_less(p, more):
    whole = _with(p, drop_fraction=1.0)
    a, b = solve(whole), solve(_with(whole, residency_fraction=min(0.9, p.residency_fraction + more)))
    assert v(b, "stranded_resident_rps") >= v(a, "stranded_resident_rps")
    assert v(b, "survivor_utilization_steady") <= v(a, "survivor_utilization_steady") * (1 + 1e-12)


# --- the page's own figures and prose (the contract every page meets: tests/test_contract.py) ---


def test_params_defaults_are_the_seed_scenario():
    p = Params()
    assert (p.regions, p.utilization, p.window_s) == (2, 0.6, 30)


def test_unknown_field_and_unknown_policy_are_rejected():
    with pytest.raises(ValidationError):
        Params(bogus=1)
    with pytest.raises(ValidationError):
        Params(retry_policy="hope")


# --- content ----------------------------------------------------------------------------------


def test_the_page_draws_its_figures_where_the_prose_needs_them():
    c = load_content(CONTENT)
    assert set(c.directives()) == DIRECTIVES
    assert "::diagram regions" in c.section("Shape").body.splitlines()
    assert "::sim failover" in c.section("Depth").body.splitlines()


def test_prose_renders_without_doubled_nouns():
    from ui.prose import render

    c = load_content(CONTENT)
    p = Params()
    d = solve(p)
    text = "\n".join(render(s.body, d, p) for s in c.sections)
    for doubled in ("requests** requests", "replicas** replicas", "capacity** capacity", "× today** its",
                    "demand** demand"):
        assert doubled not in text, doubled


# --- the simulation beside the model --------------------------------------------------------------


def test_simulation_config_carries_the_derived_cold_start():
    p = Params(weights_prestaged=False)
    assert sim_config(p).cold_start_s == pytest.approx(solve(p).value("cold_start_effective_s"))
    assert sim_config(Params()).cold_start_s == pytest.approx(70)


def test_simulation_agrees_with_the_model_over_replications():
    p = Params()
    d = solve(p)
    runs = [simulate(p, seed) for seed in range(5)]
    steady = np.array([r.steady_survivor_utilization for r in runs])
    lost = np.array([r.in_flight_lost for r in runs])
    t95 = 2.776  # 4 degrees of freedom
    s_mean, s_half = steady.mean(), t95 * steady.std(ddof=1) / math.sqrt(5)
    l_mean, l_half = lost.mean(), t95 * lost.std(ddof=1) / math.sqrt(5)
    print(f"\nsteady survivor load: sim {s_mean:.4f} ± {s_half:.4f}, model {v(d, 'survivor_utilization_steady'):.4f}")
    print(f"in flight lost: sim {l_mean:,.0f} ± {l_half:,.0f}, model {v(d, 'in_flight_lost'):,.0f}")
    print(f"recovered: sim {[r.time_to_recover_s for r in runs]}, model has capacity at "
          f"{v(d, 'time_to_capacity_s'):.0f} s")
    assert abs(s_mean - v(d, "survivor_utilization_steady")) <= s_half
    assert abs(l_mean - v(d, "in_flight_lost")) <= l_half
    # Refused requests retrying: the offered load in the second half of the short spell.
    short = v(d, "seconds_short_s")
    offered = np.array([r.offered_rps(r.capacity_added_s - short / 2, r.capacity_added_s) for r in runs])
    o_mean, o_half = offered.mean(), t95 * offered.std(ddof=1) / math.sqrt(5)
    print(f"offered while short: sim {o_mean:,.0f} ± {o_half:,.0f}, model {v(d, 'offered_while_short_rps'):,.0f}")
    # The model is a steady-state fixed point (every attempt has the same odds); it must land inside
    # the interval or within 3% of the simulated mean.
    assert abs(o_mean - v(d, "offered_while_short_rps")) <= max(o_half, 0.03 * o_mean)
    for r in runs:
        assert r.time_to_recover_s == pytest.approx(v(d, "time_to_capacity_s"), abs=2.0)
        assert r.seconds_over_capacity == pytest.approx(v(d, "seconds_short_s"), abs=3.0)
        assert r.shed_paid_total == 0 and r.shed_free_total > 0  # the free tier takes the whole overflow
        assert r.replicas_added_warm == 2 and r.replicas_added_cold == v(d, "cold_replicas_per_survivor")


def test_the_prose_and_drills_resolve_when_weights_are_not_prestaged():
    """That branch adds and drops steps; every name the page shows must still be one."""
    c = load_content(CONTENT)
    d = solve(Params(drop_fraction=0.5, weights_prestaged=False))
    names = set(d.keys()) | set(knobs_of(Params))
    assert not c.placeholders() - names, sorted(c.placeholders() - names)
    for drill in c.drills:
        assert drill.key in d, drill.key
        assert not {m.group(1) for m in PLACEHOLDER.finditer(drill.prompt)} - names, drill.key
    for key, _label in c.metrics:
        assert key in d, key


def test_reader_fixes_autoscale_target_and_who_is_shed():
    d = solve(Params())
    # the autoscaler's target is min(target, ceiling)
    p = Params()
    assert v(d, "autoscale_target_used") == pytest.approx(min(p.autoscale_target, p.failover_ceiling))
    # free tier on a survivor = (1 - paid) x steady load; paid sheds only what exceeds it
    free = (1 - p.paid_fraction) * v(d, "survivor_steady_load_rps")
    assert v(d, "free_tier_rps_per_survivor") == pytest.approx(free)
    assert v(d, "paid_shed_rps_per_survivor") == pytest.approx(max(0.0, v(d, "uncovered_rps_per_survivor") - free))
    # a three-region draw where 295.2 req/s is short against a ~246 req/s free tier sheds paid traffic too
    big = solve(Params(regions=3, utilization=0.9, replicas_per_region=12, replica_rps=80.0, mean_request_s=5.0,
                       failover_ceiling=0.9, paid_fraction=0.8, residency_fraction=0.15, warm_pool_replicas=1,
                       autoscale_target=0.65))
    assert v(big, "paid_shed_rps_per_survivor") > 0
    assert v(big, "shed_source_verdict").startswith("more than the whole free tier")
