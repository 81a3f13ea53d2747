"""token-rate-limiter: the seed's 50 versus 50,000, the bucket arithmetic worked by hand, the
directions every figure must move, the key figures and their units, and the content's references."""

from __future__ import annotations

import math
import statistics
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.content import load_content
from models.serving.token_rate_limiter import Params, simulate, solve

ROOT = Path(__file__).resolve().parents[2]
CONTENT = ROOT / "content" / "serving" / "token-rate-limiter.md"


def v(d, key):
    return d.value(key)


# --- the seed's own arithmetic ----------------------------------------------------------------


def test_seed_request_costs_50_or_50000_tokens():
    d = solve(Params())
    # "A request can cost 50 tokens or 50,000": 50,000 / 50 = 1,000
    assert v(d, "cost_ratio_large_to_small") == pytest.approx(50_000 / 50) == pytest.approx(1000)
    # "so a request limit protects nothing": 60 requests/min admit 60 x 50 or 60 x 50,000 tokens
    assert v(d, "request_limit_tokens_small") == 60 * 50 == 3_000
    assert v(d, "request_limit_tokens_large") == 60 * 50_000 == 3_000_000


def test_default_scenario_worked_by_hand():
    d = solve(Params())
    # Two buckets: 400,000 input and 80,000 output tokens per minute, refilled per second.
    assert v(d, "input_refill_per_s") == pytest.approx(400_000 / 60)  # 6,666.7 tokens/s
    assert v(d, "output_refill_per_s") == pytest.approx(80_000 / 60)  # 1,333.3 tokens/s
    assert v(d, "input_capacity_tokens") == pytest.approx(400_000)  # 60 s of refill
    assert v(d, "output_capacity_tokens") == pytest.approx(80_000)
    assert v(d, "large_request_share_of_input_bucket") == pytest.approx(0.125)  # 50,000 / 400,000
    assert v(d, "output_tokens_first_minute_max") == pytest.approx(160_000)  # full bucket + a minute
    assert v(d, "retry_after_s") == pytest.approx(4_000 / (80_000 / 60))  # 3 s
    # Reserve max_tokens = 4,000 against a mean output of 400.
    assert v(d, "over_reservation_factor") == pytest.approx(10)
    assert v(d, "admits_per_min_reserving") == pytest.approx(80_000 / 4_000) == pytest.approx(20)
    assert v(d, "admits_per_min_settled") == pytest.approx(80_000 / 400) == pytest.approx(200)
    assert v(d, "settle_gain") == pytest.approx(10)
    # Bursts: a full 80,000-token bucket starts 80,000 / 4,000 = 20 streams, 200 if output were known.
    assert v(d, "generation_s") == pytest.approx(400 / 80)  # 5 s
    assert v(d, "burst_streams_reserving") == pytest.approx(20)
    assert v(d, "burst_streams_if_actual") == pytest.approx(200)
    # Little's law: 200/60 per s x 5 s x 4,000 = 66,667 tokens held, under the 80,000 capacity.
    assert v(d, "held_tokens_at_settled_rate") == pytest.approx(200 / 60 * 5 * 4_000)
    assert v(d, "settle_ramp_s") == 0
    # Ten reservations of 4,000 = 40,000 tokens; the 80,000-token bucket holds twenty.
    assert v(d, "capacity_for_full_settle_tokens") == pytest.approx(40_000)
    assert v(d, "bucket_holds_enough_reservations") == "yes"
    assert v(d, "admits_per_min_input_bucket") == pytest.approx(400)  # 400,000 / 1,000
    assert v(d, "binding_bucket") == "output"
    # The fleet: 2,000 x 2,500 = 5M tokens/s; limits 10,000 x 1,333.3 = 13.3M tokens/s.
    assert v(d, "fleet_output_tokens_per_s") == pytest.approx(5_000_000)
    assert v(d, "sum_of_output_limits_per_s") == pytest.approx(10_000 * 80_000 / 60)
    assert v(d, "oversubscription_ratio") == pytest.approx(13_333_333.33 / 5_000_000)  # 2.67
    assert v(d, "peak_output_demand_per_s") == pytest.approx(4_000_000)  # 30% of 13.3M
    assert v(d, "fleet_utilization_at_peak") == pytest.approx(0.8)
    assert v(d, "peak_use_that_saturates_fleet") == pytest.approx(0.375)
    # The counter: 4M / 400 = 10,000 admits/s; 20% rejected -> 12,500 arrivals/s;
    # One admission script (both buckets on one key) and one settle: 10,000 x 2 + 2,500 x 1 = 22,500
    # ops/s; shards of 50,000 x 0.5 = 25,000 -> ceil(0.9) = 1.
    assert v(d, "admitted_requests_per_s") == pytest.approx(10_000)
    assert v(d, "gateway_requests_per_s") == pytest.approx(12_500)
    assert v(d, "counter_ops_per_s") == pytest.approx(22_500)
    assert v(d, "counter_shards") == 1
    assert v(d, "hot_tenant_ops_per_s") == pytest.approx(4_500)  # 20% of 22,500
    assert v(d, "hot_shard_load") == pytest.approx(0.18)  # 4,500 / 25,000
    # Leases: the hot tenant spends 0.2 x 10,000 x (1,000 + 400) = 2.8M tokens/s; 100,000 per lease.
    assert v(d, "hot_tenant_tokens_per_s") == pytest.approx(2_800_000)
    assert v(d, "lease_renewals_per_s") == pytest.approx(28)
    assert v(d, "lease_stranded_tokens") == pytest.approx(5_000_000)  # 50 nodes x 100,000
    assert v(d, "lease_stranded_share_tier") == pytest.approx(12.5)  # 5M against a 400,000 minute
    # Failure modes.
    assert v(d, "fallback_output_per_node_per_min") == pytest.approx(1_600)  # 80,000 / 50
    assert v(d, "fallback_admits_max_tokens") == "no"  # 1,600 < 4,000
    assert v(d, "leaked_tokens_per_lost_settle") == pytest.approx(3_600)


def test_per_model_cost_ratio_comes_from_the_catalog():
    # 2 x 70.6e9 over 2 x 8.03e9 FLOP per token
    d = solve(Params())
    assert v(d, "flops_per_token_big_model") == pytest.approx(2 * 70.6e9)
    assert v(d, "per_model_cost_ratio") == pytest.approx(70.6 / 8.03)


# --- variants worked by hand --------------------------------------------------------------------


def test_variant_long_max_tokens_slow_stream_needs_a_warm_up():
    # max_tokens 16,000, mean output 800, 40 tokens/s, 30 s buckets, OTPM 120,000.
    d = solve(Params(max_tokens=16_000, mean_output_tokens=800, stream_tokens_per_s=40, burst_seconds=30,
                     output_tpm_limit=120_000))
    assert v(d, "output_refill_per_s") == pytest.approx(2_000)
    assert v(d, "output_capacity_tokens") == pytest.approx(60_000)  # 2,000 x 30
    assert v(d, "over_reservation_factor") == pytest.approx(20)
    assert v(d, "admits_per_min_reserving") == pytest.approx(7.5)  # 120,000 / 16,000
    assert v(d, "admits_per_min_settled") == pytest.approx(150)  # 120,000 / 800
    assert v(d, "generation_s") == pytest.approx(20)  # 800 / 40
    assert v(d, "burst_streams_reserving") == 3  # floor(60,000 / 16,000 = 3.75): whole streams
    # 2.5 admits/s x 20 s x 16,000 = 800,000 tokens held; (800,000 - 60,000) / 2,000 = 370 s
    assert v(d, "held_tokens_at_settled_rate") == pytest.approx(800_000)
    assert v(d, "settle_ramp_s") == pytest.approx(370)


def test_variant_small_fleet_many_ops():
    # 400 replicas x 4,000 = 1.6M tokens/s; 2,000 tenants at 300,000 OTPM -> 10M/s: 6.25x.
    p = Params(fleet_replicas=400, replica_output_tokens_per_s=4_000, tenants=2_000, output_tpm_limit=300_000,
               peak_use_fraction=0.1, mean_output_tokens=500, reject_fraction=0.5, counter_ops_per_admit=2,
               shard_ops_per_s=20_000, shard_target_utilization=0.5)
    d = solve(p)
    assert v(d, "sum_of_output_limits_per_s") == pytest.approx(2_000 * 5_000)
    assert v(d, "oversubscription_ratio") == pytest.approx(6.25)
    assert v(d, "peak_output_demand_per_s") == pytest.approx(1_000_000)
    assert v(d, "fleet_utilization_at_peak") == pytest.approx(0.625)
    assert v(d, "admitted_requests_per_s") == pytest.approx(2_000)  # 1M / 500
    assert v(d, "gateway_requests_per_s") == pytest.approx(4_000)
    assert v(d, "counter_ops_per_s") == pytest.approx(2_000 * 2 + 2_000)  # 6,000
    assert v(d, "counter_shards") == 1  # 6,000 / 10,000


def test_mean_output_above_max_tokens_is_capped():
    d = solve(Params(max_tokens=256, mean_output_tokens=1_000))
    assert v(d, "mean_output_capped") == 256
    assert v(d, "over_reservation_factor") == pytest.approx(1)
    assert v(d, "admits_per_min_settled") == pytest.approx(v(d, "admits_per_min_reserving"))


def test_exact_shard_division_does_not_round_up():
    # 10,000 admits x 2 + 2,500 = 22,500 ops; a shard usable at 22,500 -> exactly one.
    assert solve(Params(shard_ops_per_s=45_000, shard_target_utilization=0.5)).value("counter_shards") == 1
    # Three separate calls per admit instead: 10,000 x 3 + 2,500 = 32,500 ops -> two shards of 25,000.
    d = solve(Params(counter_ops_per_admit=3))
    assert v(d, "counter_ops_per_s") == pytest.approx(32_500)
    assert v(d, "counter_shards") == 2


def test_cached_prompts_long_context_and_windows_worked_by_hand():
    d = solve(Params())
    # 60% of a 1,000-token prompt is read from the prefix cache: 400 tokens charged, so a cache-aware
    # 400,000 ITPM admits 400,000 / 400 = 1,000 a minute instead of 400.
    assert v(d, "uncached_input_tokens") == pytest.approx(400)
    assert v(d, "admits_per_min_input_cache_aware") == pytest.approx(1_000)
    # A 300,000-token prompt is above the 200,000 threshold: it debits 300,000 x 2 = 600,000 tokens,
    # more than the 400,000-token input bucket holds, so it can never pass.
    assert v(d, "long_prompt_charge_tokens") == pytest.approx(600_000)
    assert v(d, "long_prompt_fits_input_bucket") == "no"
    # Under the threshold the weight does not apply: 150,000 tokens debit 150,000 and fit.
    d2 = solve(Params(long_prompt_tokens=150_000))
    assert v(d2, "long_prompt_charge_tokens") == pytest.approx(150_000)
    assert v(d2, "long_prompt_fits_input_bucket") == "yes"
    # A fixed one-minute window admits a full 80,000 at 0:59 and again at 1:00: 160,000 in two seconds.
    # The bucket admits its 80,000 capacity plus 2 s x 1,333.3 of refill = 82,667.
    assert v(d, "fixed_window_boundary_tokens") == pytest.approx(160_000)
    assert v(d, "bucket_two_second_max_tokens") == pytest.approx(80_000 + 2 * 80_000 / 60)


# --- moves the right way ----------------------------------------------------------------------

scenarios = st.builds(
    Params,
    output_tpm_limit=st.floats(1_000, 20_000_000),
    burst_seconds=st.floats(1, 300),
    max_tokens=st.floats(16, 128_000),
    mean_output_tokens=st.floats(1, 64_000),
    stream_tokens_per_s=st.floats(5, 500),
    tenants=st.integers(1, 1_000_000),
    peak_use_fraction=st.floats(0.01, 1),
    reject_fraction=st.floats(0, 0.95),
)


@settings(max_examples=200, deadline=None)
@given(p=scenarios, factor=st.floats(1.01, 20))
def test_larger_max_tokens_never_admits_more(p, factor):
    bigger = Params(**{**p.model_dump(), "max_tokens": min(p.max_tokens * factor, 128_000)})
    a, b = solve(p), solve(bigger)
    for key in ("admits_per_min_reserving", "burst_streams_reserving"):
        assert v(b, key) <= v(a, key) * (1 + 1e-12), key
    assert v(b, "settle_ramp_s") >= v(a, "settle_ramp_s")
    assert v(b, "admits_per_min_settled") <= v(a, "admits_per_min_settled") * (1 + 1e-12)  # only via the cap


@settings(max_examples=200, deadline=None)
@given(p=scenarios)
def test_settling_never_admits_fewer_than_reserving(p):
    d = solve(p)
    assert v(d, "admits_per_min_settled") >= v(d, "admits_per_min_reserving") * (1 - 1e-12)
    assert v(d, "settle_gain") == pytest.approx(v(d, "over_reservation_factor"))
    assert v(d, "burst_streams_if_actual") >= v(d, "burst_streams_reserving") * (1 - 1e-12)
    # No warm-up exactly when the holds fit in the bucket.
    assert (v(d, "settle_ramp_s") > 0) == (v(d, "held_tokens_at_settled_rate") > v(d, "output_capacity_tokens"))


@settings(max_examples=200, deadline=None)
@given(p=scenarios, factor=st.floats(1.01, 10))
def test_slower_streams_hold_longer_and_warm_up_longer(p, factor):
    slower = Params(**{**p.model_dump(), "stream_tokens_per_s": max(p.stream_tokens_per_s / factor, 5)})
    a, b = solve(p), solve(slower)
    assert v(b, "held_tokens_at_settled_rate") >= v(a, "held_tokens_at_settled_rate") * (1 - 1e-12)
    assert v(b, "settle_ramp_s") >= v(a, "settle_ramp_s")
    assert v(b, "admits_per_min_settled") == pytest.approx(v(a, "admits_per_min_settled"))


@settings(max_examples=200, deadline=None)
@given(p=scenarios, factor=st.floats(1.01, 10))
def test_more_tenants_oversubscribe_more_and_load_the_counter_more(p, factor):
    more = Params(**{**p.model_dump(), "tenants": min(int(p.tenants * factor) + 1, 1_000_000)})
    a, b = solve(p), solve(more)
    for key in ("oversubscription_ratio", "fleet_utilization_at_peak", "counter_ops_per_s", "counter_shards"):
        assert v(b, key) >= v(a, key) * (1 - 1e-12), key


@settings(max_examples=100, deadline=None)
@given(r1=st.floats(0, 0.95), r2=st.floats(0, 0.95))
def test_more_rejects_mean_more_gateway_traffic_and_counter_load(r1, r2):
    lo, hi = sorted((r1, r2))
    a, b = solve(Params(reject_fraction=lo)), solve(Params(reject_fraction=hi))
    assert v(b, "gateway_requests_per_s") >= v(a, "gateway_requests_per_s")
    assert v(b, "counter_ops_per_s") >= v(a, "counter_ops_per_s")
    assert v(b, "admitted_requests_per_s") == pytest.approx(v(a, "admitted_requests_per_s"))


@settings(max_examples=100, deadline=None)
@given(l1=st.floats(100, 10_000_000), l2=st.floats(100, 10_000_000))
def test_bigger_leases_mean_fewer_renewals_but_more_stranded(l1, l2):
    lo, hi = sorted((l1, l2))
    a, b = solve(Params(lease_tokens=lo)), solve(Params(lease_tokens=hi))
    assert v(b, "lease_renewals_per_s") <= v(a, "lease_renewals_per_s")
    assert v(b, "lease_stranded_tokens") >= v(a, "lease_stranded_tokens")


# --- the live trace against the arithmetic --------------------------------------------------------


def test_trace_matches_the_closed_form_for_the_tenant_over_its_limit():
    # After the first minute's full bucket, the tenant at twice its limit is admitted at the
    # refill rate: 80,000 / 4,000 = 20/min reserve-only (exact up to one step), and
    # 80,000 / (mean actual output) with settle; the draws are capped at max_tokens, so the
    # realized mean is a little under 400. Several seeds, the interval must cover the target.
    p = Params()
    d = solve(p)
    reserve_rates, settle_ratio = [], []
    for seed in range(6):
        c = simulate(p, seed=seed, seconds=240)
        over = len(c.workload.tenants) - 1
        reserve_rates.append(c.reserve.admits_per_min(over, 60))
        mask = c.settle.admitted_mask & (c.workload.tenant == over)
        realized = c.workload.output_tokens[mask].mean()
        settle_ratio.append(c.settle.admits_per_min(over, 60) / (80_000 / realized))
    print(f"\nreserve-only {statistics.mean(reserve_rates):.2f}/min vs {v(d, 'admits_per_min_reserving'):.0f}; "
          f"settle at {statistics.mean(settle_ratio):.3f} of refill / realized mean output")
    assert statistics.mean(reserve_rates) == pytest.approx(v(d, "admits_per_min_reserving"), rel=0.03)
    mean, sd = statistics.mean(settle_ratio), statistics.stdev(settle_ratio)
    half = 2.57 * sd / math.sqrt(len(settle_ratio))  # 95% t interval, 5 degrees of freedom
    assert mean - half <= 1.0 + 0.05 and mean + half >= 1.0 - 0.08
    assert half < 0.08


def test_trace_warms_up_when_holds_exceed_the_bucket():
    # 16,000-token reservations on 20 s streams: 2.5 admits/s x 20 s x 16,000 = 800,000 tokens
    # lent out at the settled 150/min, against a 240,000-token bucket (120 s of 2,000 tokens/s):
    # at least (800,000 - 240,000) / 2,000 = 280 s of warm-up. Early on the tenant over its
    # limit is far below the settled rate; late in a long run it is there.
    p = Params(max_tokens=16_000, mean_output_tokens=800, stream_tokens_per_s=40, burst_seconds=120,
               output_tpm_limit=120_000)
    d = solve(p)
    assert v(d, "settle_ramp_s") == pytest.approx(280)
    early, late = [], []
    for seed in range(3):
        c = simulate(p, seed=seed, seconds=1_500)
        over = len(c.workload.tenants) - 1
        admitted = c.settle.admitted_per_step[over]
        per_min = lambda a, b: admitted[int(a * 10):int(b * 10)].sum() / (b - a) * 60  # noqa: E731
        mask = c.settle.admitted_mask & (c.workload.tenant == over)
        target = 120_000 / c.workload.output_tokens[mask].mean()  # refill / realized mean output
        early.append(per_min(0, 280) / target)
        late.append(per_min(1_000, 1_500) / target)
    print(f"\nwarm-up: {statistics.mean(early):.2f} of the settled rate over 0-280 s, "
          f"{statistics.mean(late):.2f} over 1,000-1,500 s")
    assert statistics.mean(early) < 0.7
    assert statistics.mean(late) == pytest.approx(1.0, abs=0.08)


@pytest.mark.parametrize(("burst_seconds", "lo", "hi"), [(10, 0.6, 0.9), (30, 0.95, 1.05), (60, 0.95, 1.05)])
def test_trace_backs_the_ten_reservation_rule(burst_seconds, lo, hi):
    # 80,000 tokens/min in buckets of 10, 30 and 60 s hold 3.3, 10 and 20 reservations of 4,000;
    # refunds clipped at a small cap cost a quarter of the settled rate, at ten nothing.
    p = Params(burst_seconds=burst_seconds)
    d = solve(p)
    assert v(d, "bucket_holds_enough_reservations") == ("yes" if burst_seconds >= 30 else "no")
    ratios = []
    for seed in range(3):
        c = simulate(p, seed=seed, seconds=600)
        over = len(c.workload.tenants) - 1
        mask = c.settle.admitted_mask & (c.workload.tenant == over)
        ratios.append(c.settle.admits_per_min(over, 120) / (80_000 / c.workload.output_tokens[mask].mean()))
    print(f"\n{burst_seconds} s bucket: {statistics.mean(ratios):.2f} of the settled rate")
    assert lo <= statistics.mean(ratios) <= hi


# --- the page's own figures and prose (the contract every page meets: tests/test_contract.py) ---


def test_the_page_draws_its_figures():
    c = load_content(CONTENT)
    assert set(c.directives()) == {("diagram", "limiter_path"), ("chart", "admits_vs_max_tokens"),
                                   ("chart", "ramp_vs_max_tokens"), ("chart", "utilization_vs_peak_use"),
                                   ("sim", "token_trace")}


# --- the page -------------------------------------------------------------------------------------


def test_page_knob_moves_metric_prose_and_trace(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("WALKTHROUGHS_DB", str(tmp_path / "apptest.duckdb"))
    at = AppTest.from_file(str(ROOT / "pages" / "serving" / "token_rate_limiter.py"), default_timeout=30).run()
    assert not at.exception and not at.error
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Admits, reserve only"] == "20 requests/min"
    assert metrics["Admits, reserve + settle"] == "200 requests/min"
    assert len(at.get("plotly_chart")) >= 5  # diagram, three sweeps, two trace charts
    # Double max_tokens: reserve-only halves (80,000 / 8,000 = 10), settled stays at 80,000 / 400.
    at.select_slider(key="token-rate-limiter.max_tokens").set_value(8000.0).run()
    assert not at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Admits, reserve only"] == "10 requests/min"
    assert metrics["Admits, reserve + settle"] == "200 requests/min"
    assert "**10 requests/min**" in "\n".join(m.value for m in at.markdown)


def test_the_live_panel_reads_the_runs_books_as_steps():
    from models.serving.token_rate_limiter import simulate, simulation_steps

    p = Params()
    r = simulate(p, seed=1)
    s = simulation_steps(p, r)
    sent = s.value("steady_requested") + s.value("bursty_requested") + s.value("over_requested")
    assert s.value("simulated_requested") == sent == int(r.settle.requested.sum())
    assert s.value("simulated_unaccounted") == 0  # admitted + rejected = sent: no request lost
    assert s.value("over_admitted") == int(r.settle.admitted[2]) and s["over_admitted"].kind == "simulated"
    assert s.value("simulated_s") == pytest.approx(180.0)


def test_reader_fixes_clauses_and_the_hot_tenants_contract():
    d = solve(Params())
    # 66,667 tokens held fit the 80,000-token bucket: the settled rate comes at once
    assert v(d, "settle_ramp_clause").startswith("at once")
    # a tier tenant: (400,000 + 80,000) tokens/min / 60 = 8,000 tokens/s; the hot tenant spends
    # 2,800,000 tokens/s, 350 x that, so it is on a custom contract
    assert v(d, "tier_tokens_per_s") == pytest.approx(8_000)
    assert v(d, "hot_tenant_over_tier") == pytest.approx(2_800_000 / 8_000)
    assert v(d, "hot_tenant_contract").startswith("a tenant that large is on a custom contract")
    # the 300,000-token long prompt is above the 50,000-token largest request of the spread
    assert v(d, "long_prompt_vs_largest").startswith("larger than the largest request")
    assert v(solve(Params(long_prompt_tokens=40_000)), "long_prompt_vs_largest") == "within the request spread above"
    # whole streams: floor(80,000 / 3,000 = 26.7) = 26
    assert v(solve(Params(max_tokens=3_000)), "burst_streams_reserving") == 26


def test_admission_path_follows_the_operations_per_admit():
    # Two operations: the one atomic script (debit the prompt + reserve max_tokens) and the settle.
    assert "one atomic script" in solve(Params(counter_ops_per_admit=2)).value("admission_path")
    # Three: two separate calls before the stream plus the settle, with a debit to roll back.
    three = solve(Params(counter_ops_per_admit=3)).value("admission_path")
    assert three.startswith("2 separate calls") and "roll back" in three
    # One: no settle at all.
    assert "no settle" in solve(Params(counter_ops_per_admit=1)).value("admission_path")
    # And the count itself moves: 10,000 admits/s x 3 + 2,500 rejects/s x 1 = 32,500 ops/s.
    assert solve(Params(counter_ops_per_admit=3)).value("counter_ops_per_s") == pytest.approx(10_000 * 3 + 2_500)


def test_measured_anchors_beside_the_assumed_rates():
    d = solve(Params())
    # Redis's benchmark page: about 110,000 SETs/s; the seed's shard assumes 50,000 = 45.45% of it.
    assert d.value("redis_set_ops_per_s_measured") == 110_000
    assert d.value("shard_vs_measured_set") == pytest.approx(50_000 / 110_000)
    assert d.value("shard_vs_measured_clause").startswith("under it")
    assert solve(Params(shard_ops_per_s=200_000)).value("shard_vs_measured_clause").startswith("over it")
    # TensorRT-LLM: 3,082 output tokens/s for a 70B FP8 on two H100s; the seed's replica 2,500 = 81.1% of it.
    assert d.value("trtllm_70b_output_tokens_per_s_measured") == 3_082
    assert d.value("replica_vs_trtllm_measured") == pytest.approx(2_500 / 3_082)
    assert d.value("replica_vs_trtllm_clause").startswith("below it")
    big = solve(Params(replica_output_tokens_per_s=5_000, fleet_replicas=4_000))
    assert big.value("replica_vs_trtllm_measured") == pytest.approx(5_000 / 3_082)
    assert big.value("replica_vs_trtllm_clause").startswith("above it")
