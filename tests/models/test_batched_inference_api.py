"""batched-inference-api: seed figures from the seed's own arithmetic, hand-worked variants,
and properties that say which way each number must move."""

import math
import time

import pytest
from hypothesis import given, settings, strategies as st
from pydantic import ValidationError

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
    assert d.value("utilization_at_floor") == pytest.approx(100)
    # at 2,000 req/s a 50-input batch takes 25 ms to arrive
    assert d.value("batch_fill_time_s") == pytest.approx(50 / 2000) == pytest.approx(0.025)


def test_headroom_gives_ten_gpus_at_eighty_percent():
    # 2,000 / (250 x 0.8) = 10 exactly
    assert solve(Params()).value("gpus_at_target_util") == 10


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


def test_out_of_range_knob_names_the_knob():
    with pytest.raises(ValidationError, match="Arrival rate"):
        Params(arrival_rps=1e9)


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


def test_solve_is_fast():
    p = Params()
    solve(p)
    t = time.process_time()
    for _ in range(200):
        solve(p)
    per_call_ms = (time.process_time() - t) / 200 * 1000
    assert per_call_ms < 1.0, per_call_ms


def test_half_fill_time_timeout_doubles_the_fleet():
    d = solve(Params())
    # fill time 25 ms; half of it is 12.5 ms; 1 + 2,000 x 0.0125 = 26 inputs per call
    assert d.value("short_timeout_s") == pytest.approx(0.0125)
    assert d.value("batch_at_short_timeout") == pytest.approx(26)
    # 2,000 x 0.2 / 26 = 15.4 -> 16 GPUs, twice the floor of 8
    assert d.value("gpus_at_short_timeout") == 16
