"""The served request shape and the fleet on the one roofline: the fast step is the roofline's step,
the fleet search lands where the closed form of the memory-bound case does, and what cannot be
served is said in a sentence."""

import math

import pytest
from pydantic import ValidationError

from models.engine import serving as sv
from models.engine.serving_knobs import ServingKnobs, served

# H100 SXM: 3.35 TB/s, 989 TFLOP/s dense bf16, NVLink 450 GB/s a direction (datasheet); Llama-3-70B:
# 80 layers, d_model 8,192, 70,552,387,584 parameters (counted from its shape), KV 327,680 B a token.
# The engine's defaults: 80% MBU, 1.9 ms a step, 6 us an all-reduce (models/engine/defaults.py).
W_S = 70_552_387_584 * 2 / (8 * 3.35e12 * 0.8)
KV_S = 327_680 * 2200 / (8 * 3.35e12 * 0.8)
FIXED_S = 1.9e-3
AR_FIXED = 160 * 6e-6
AR_PER_SEQ = 160 * 2 * 7 / 8 * 8192 * 2 / 450e9


def test_the_fast_step_is_the_roofline_step():
    s = served(ServingKnobs(tp_degree=8))
    for b in (0, 1, 7.5, 64, 552, 5000):
        assert s.step_s(b) == pytest.approx(s.step(b).step_s, rel=1e-12)
    # and that step, written out: bytes side + all-reduces + 1.9 ms
    assert s.step_s(100) == pytest.approx(W_S + 100 * KV_S + AR_FIXED + 100 * AR_PER_SEQ + FIXED_S, rel=1e-9)


def test_the_fleet_search_matches_the_closed_form_when_decode_is_memory_bound():
    s = served(ServingKnobs(tp_degree=8))
    rate, util = 40.0, 0.7
    f = sv.fleet(s, rate, util)
    # busy(R) = rate x prefill / R + (W + fixed) / TPOT + rate x output x (KV + all-reduce per sequence) / R
    closed = (rate * s.prefill_s_per_request + rate * 400 * (KV_S + AR_PER_SEQ)) / (util - (W_S + AR_FIXED + FIXED_S) / 0.05)
    assert f.replicas_continuous == pytest.approx(closed, rel=1e-9)
    assert f.replicas == math.ceil(closed)
    # Little's law across the fleet: the held batches add up to rate x output x TPOT sequences
    assert f.held_batch * f.replicas == pytest.approx(rate * 400 * 0.05)
    assert sv.busy_share(s, rate, f.replicas) <= util


def test_running_batch_is_the_fixed_point():
    s = served(ServingKnobs(tp_degree=8))
    rate = 5.0
    b = sv.running_batch(s, rate)
    free = 1 - rate * s.prefill_s_per_request
    assert b == pytest.approx(rate * 400 / free * s.step_s(b), rel=1e-6)
    assert sv.running_batch(s, 1 / s.prefill_s_per_request) == math.inf  # prefill alone fills the replica


def test_a_given_batch_is_used_and_a_batch_that_cannot_fit_is_refused():
    s = served(ServingKnobs(tp_degree=8, given_batch=32))
    assert (s.batch, s.derived_batch) == (32, 552)
    with pytest.raises(ValidationError, match="A batch of 553 sequences"):
        ServingKnobs(tp_degree=8, given_batch=553)


@pytest.mark.parametrize(("knobs", "says"), [
    (dict(tp_degree=2, prompt_tokens=100_000), "GB of KV for one sequence"),
    (dict(tp_degree=4, tpot_target_ms=5), "more than the 5 ms TPOT target"),
])
def test_what_cannot_be_served_is_said(knobs, says):
    with pytest.raises(ValidationError, match=says):
        ServingKnobs(**knobs)


@pytest.mark.parametrize(("knobs", "rate"), [
    (dict(tp_degree=8), 40.0),  # many sequences per replica, memory-bound
    (dict(tp_degree=8), 0.05),  # fewer than one sequence at a time
    (dict(model="Llama-3-8B", tp_degree=1, tpot_target_ms=30, prompt_tokens=1000, output_tokens=200), 300.0),
    (dict(model="Llama-3-8B", tp_degree=1, gpu="A100 80GB", decode_mfu=0.05, tpot_target_ms=200), 50.0),  # FLOP-bound
])
def test_the_fleet_is_the_fewest_replicas_a_search_finds(knobs, rate):
    s = served(ServingKnobs(**knobs))
    f = sv.fleet(s, rate, 0.7)
    ok = [r for r in range(1, 5000) if sv.busy_share(s, rate, r) <= 0.7 and sv.running_batch(s, rate / r) <= s.batch]
    assert f.replicas == ok[0]


@pytest.mark.parametrize("knobs", [dict(tp_degree=8), dict(tp_degree=4, model="Llama-3-8B"),
                                   dict(tp_degree=8, prompt_tokens=8000, output_tokens=50)])
@pytest.mark.parametrize("replicas", [1, 3, 40, 1000])
@pytest.mark.parametrize("target", [0.3, 0.7, 1.0])
def test_the_rate_at_a_busy_share_is_where_a_bisection_of_busy_share_lands(knobs, replicas, target):
    """rate_at_busy inverts busy_share: checked against a plain bisection of busy_share itself."""
    s = served(ServingKnobs(**knobs))
    lo, hi = 0.0, 1e9
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if sv.busy_share(s, mid, replicas) <= target else (lo, mid)
    assert sv.rate_at_busy(s, replicas, target) == pytest.approx(lo, rel=1e-9)
    assert sv.busy_share(s, sv.rate_at_busy(s, replicas, target), replicas) == pytest.approx(target, rel=1e-9)


def test_the_rate_at_a_busy_share_by_hand_when_decode_is_memory_bound():
    # busy = (W + fixed) / TPOT + rate x (prefill + output x (KV + all-reduce per sequence)) / R, so at
    # 70% on 10 replicas: rate = (0.7 - (W + fixed) / 0.05) x 10 / (prefill + 400 x (KV + AR)).
    s = served(ServingKnobs(tp_degree=8))
    by_hand = (0.7 - (W_S + AR_FIXED + FIXED_S) / 0.05) * 10 / (s.prefill_s_per_request + 400 * (KV_S + AR_PER_SEQ))
    assert sv.rate_at_busy(s, 10, 0.7) == pytest.approx(by_hand, rel=1e-9)
    # a target below the weight read's own share cannot be met at any rate
    assert sv.rate_at_busy(s, 10, 0.5 * (W_S + AR_FIXED + FIXED_S) / 0.05) == 0.0
