"""The token-bucket trace: nothing vanishes, the books balance, limits hold, seeds replay."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models.sim.token_bucket import DEFAULT_TENANTS, Config, TenantSpec, replay, run, workload

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _check_books(r, w, max_tokens, out_cap, in_cap, seconds, out_tpm, in_tpm):
    n_t = len(w.tenants)
    # Every request is admitted or rejected, counted separately and per step.
    assert np.array_equal(r.admitted + r.rejected, r.requested)
    assert np.array_equal(r.admitted_per_step.sum(axis=1), r.admitted)
    assert np.array_equal(r.rejected_per_step.sum(axis=1), r.rejected)
    assert np.array_equal(r.requested, np.bincount(w.tenant, minlength=n_t))
    assert np.allclose(r.input_admitted + r.input_rejected, r.input_requested)
    # Each bucket: start + refilled - overflow - debited (+ refunded) = final level.
    ob, ib = r.output_books, r.input_books
    assert np.allclose(ob[:, 0] + ob[:, 1] - ob[:, 2] - ob[:, 3] + ob[:, 4], r.output_level[:, -1], atol=1e-6)
    assert np.allclose(ib[:, 0] + ib[:, 1] - ib[:, 2] - ib[:, 3], r.input_level[:, -1], atol=1e-6)
    assert np.allclose(ob[:, 3], r.reserved)
    assert np.allclose(ib[:, 3], r.input_admitted)
    # Reservations: refunded + settled output + held by streams still running = reserved.
    held = r.in_flight_at_end * max_tokens
    if r.settle:
        assert np.allclose(r.refunded + r.settled_output + held, r.reserved)
    else:
        assert np.all(r.refunded == 0)
    # Levels stay inside [0, capacity].
    assert r.output_level.min() >= -1e-6 and r.output_level.max() <= out_cap + 1e-6
    assert r.input_level.min() >= -1e-6 and r.input_level.max() <= in_cap + 1e-6
    # No tenant ever gets more than a full bucket plus the refill.
    out_budget = out_cap + out_tpm / 60 * seconds
    if r.settle:
        assert np.all(r.settled_output <= out_budget + 1e-6)
    else:
        assert np.all(r.reserved <= out_budget + 1e-6)
    assert np.all(r.input_admitted <= in_cap + in_tpm / 60 * seconds + 1e-6)


@FAST
@given(
    out_tpm=st.sampled_from([10_000.0, 80_000.0, 500_000.0]),
    in_tpm=st.sampled_from([50_000.0, 400_000.0]),
    burst=st.sampled_from([5.0, 30.0, 60.0]),
    max_tokens=st.sampled_from([256.0, 4_000.0, 16_000.0]),
    mean_out=st.sampled_from([50.0, 400.0, 2_000.0]),
    speed=st.sampled_from([20.0, 80.0]),
    seconds=st.sampled_from([10.0, 45.0]),
    seed=st.integers(0, 2**16),
)
def test_conservation_in_both_modes(out_tpm, in_tpm, burst, max_tokens, mean_out, speed, seconds, seed):
    mean_out = min(mean_out, max_tokens)
    c = run(Config(input_tpm=in_tpm, output_tpm=out_tpm, burst_seconds=burst, max_tokens=max_tokens,
                   mean_input_tokens=1_000, mean_output_tokens=mean_out, stream_tokens_per_s=speed,
                   seconds=seconds), seed)
    for r in (c.reserve, c.settle):
        _check_books(r, c.workload, max_tokens, c.output_capacity, c.input_capacity, seconds, out_tpm, in_tpm)
    # Both modes saw the same requests.
    assert np.array_equal(c.reserve.requested, c.settle.requested)


def test_settle_admits_more_for_the_tenant_over_its_limit():
    c = run(Config(input_tpm=400_000, output_tpm=80_000, burst_seconds=60, max_tokens=4_000,
                   mean_input_tokens=1_000, mean_output_tokens=400, stream_tokens_per_s=80, seconds=180), 3)
    over = len(c.workload.tenants) - 1
    assert c.settle.admitted[over] > 5 * c.reserve.admitted[over]
    # The steady tenant at 60% of its settled limit is never turned away with settle.
    assert c.settle.rejected[0] == 0


def test_same_seed_same_run_other_seed_other_run():
    cfg = Config(input_tpm=400_000, output_tpm=80_000, burst_seconds=60, max_tokens=4_000, mean_input_tokens=1_000,
                 mean_output_tokens=400, stream_tokens_per_s=80, seconds=60)
    a, b, c = run(cfg, 1), run(cfg, 1), run(cfg, 2)
    assert np.array_equal(a.settle.output_level, b.settle.output_level)
    assert np.array_equal(a.workload.input_tokens, b.workload.input_tokens)
    assert not np.array_equal(a.workload.input_tokens, c.workload.input_tokens)


def test_bursts_keep_the_mean_rate():
    # A 5x burst 15% of the time must still average the tenant's load.
    spec = (TenantSpec("bursty", 1.0, burst_factor=5.0, burst_fraction=0.15),)
    counts = []
    for seed in range(5):
        w = workload(spec, base_rate_per_s=10.0, mean_input_tokens=100, mean_output_tokens=100, max_tokens=1000,
                     seconds=2_000, seed=seed)
        counts.append(w.step.size / 2_000)
        assert 0.05 < w.in_burst.mean() < 0.3
    assert np.mean(counts) == pytest.approx(10.0, rel=0.1)


def test_a_prompt_larger_than_the_bucket_is_always_rejected():
    spec = (TenantSpec("huge prompts", 0.5),)
    w = workload(spec, base_rate_per_s=1.0, mean_input_tokens=50_000, mean_output_tokens=100, max_tokens=1000,
                 seconds=120, seed=0)
    cfg = Config(input_tpm=10_000, output_tpm=1_000_000, burst_seconds=60, max_tokens=1000,
                 mean_input_tokens=50_000, mean_output_tokens=100, stream_tokens_per_s=50, seconds=120, tenants=spec)
    r = replay(cfg, w, settle=True)
    too_big = w.input_tokens > 10_000
    assert too_big.any()
    assert not (r.admitted_mask & too_big).any()


def test_tenant_spec_rejects_a_burst_that_breaks_the_mean():
    with pytest.raises(ValueError):
        TenantSpec("bad", 1.0, burst_factor=5.0, burst_fraction=0.5)
    assert len(DEFAULT_TENANTS) == 3
