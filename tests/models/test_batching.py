"""The one-replica batching simulation: conservation, Little's law, closed forms, bounds,
the policies against each other, the fixed contract, and the direction of every effect."""

from __future__ import annotations

import math
import time
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models.sim.batching import (
    CUT, DONE, Config, contract_backlog, form_batches, run, tokens_per_s_ceiling,
)

FAST = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FEW = settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Llama-3-70B on 4 x H100 SXM, written out from the spec sheets so the test does not lean on the
# page model: 70.6e9 params in bf16; KV 2 x 80 layers x 8 KV heads x 128 x 2 B; attention
# 4 x 80 x 64 x 128 FLOP per earlier token; 4 x 3.35 TB/s x 80%; 4 x 989 TFLOP/s x 50%.
R70 = dict(
    weight_bytes=70.6e9 * 2, kv_bytes_per_token=2 * 80 * 8 * 128 * 2, weight_flops_per_token=2 * 70.6e9,
    attn_flops_per_position=4 * 80 * 64 * 128, replica_Bps=4 * 3.35e12 * 0.8, replica_flops=4 * 989e12 * 0.5,
    overhead_s=0.003,
)


def cfg70(**kw) -> Config:
    base = dict(R70, kv_budget_tokens=448_000, max_running=54, max_context=8192, prompt_mean=2000,
                output_mean=400, length_spread=0.8, chunk_tokens=256, horizon_s=30.0)
    base.update(kw)
    return Config(**base)


def assert_conserved(r, cfg: Config) -> None:
    # Every request that arrived is in exactly one state.
    assert r.arrived == r.done + r.cut + r.running + r.queued
    # Every token is emitted once: counted per step and per request alike, never beyond the request.
    assert r.tokens_out == int(r.tokens.sum())
    assert np.all(r.generated <= r.output_tokens)
    done, cut = r.status == DONE, r.status == CUT
    assert np.all(r.generated[done] == r.output_tokens[done])
    assert np.all(r.generated[cut] < r.output_tokens[cut])
    # A step never holds more than the scheduler allows nor emits more than one token per sequence.
    assert np.all(r.batch <= cfg.max_running)
    assert np.all(r.tokens <= r.batch)
    if cfg.policy != "static":
        assert np.all(r.kv_tokens <= r.kv_budget_tokens)
    # Time is accounted for: the engine is never busy longer than the run, waits are never negative.
    assert r.busy_s + r.stall_s <= r.horizon_s + 1e-9
    assert np.all(r.queue_wait_s >= -1e-9)
    assert np.all(r.ttft_s[done] <= r.e2e_s[done] + 1e-12)
    left = done | cut
    assert np.all(np.isfinite(r.exit_s[left])) and not np.isfinite(r.exit_s[~left]).any()
    assert np.all(r.exit_s[left] <= r.horizon_s + 1e-9)
    assert np.all(r.ttft_s[np.isfinite(r.ttft_s)] > 0)
    # The queue's integral is the sum of the waits: Little's law on the queue, as bookkeeping.
    assert r.queue_area == pytest.approx(r.queue_wait_s.sum(), rel=1e-9, abs=1e-9)


# --- conservation ---------------------------------------------------------------------------------


@FAST
@given(
    policy=st.sampled_from(["static", "continuous", "chunked"]),
    rate=st.floats(0.3, 12),
    spread=st.sampled_from([0.0, 0.5, 1.0, 1.5]),
    max_running=st.integers(1, 160),
    full_seqs=st.integers(1, 60),
    chunk=st.sampled_from([16, 64, 256, 1024, 4096]),
    max_context=st.sampled_from([1024, 4096, 8192]),
    prompt_share=st.floats(0.01, 0.6),
    output=st.integers(1, 600),
    slow=st.sampled_from([0.0, 0.1, 0.4]),
    stream_policy=st.sampled_from(["cut", "block"]),
    seed=st.integers(0, 2**16),
)
def test_every_request_and_token_is_accounted_for(policy, rate, spread, max_running, full_seqs, chunk, max_context,
                                                  prompt_share, output, slow, stream_policy, seed):
    budget = full_seqs * max_context
    if policy == "static":  # static reserves full context: the caller keeps the batch inside the budget
        max_running = min(max_running, full_seqs)
    cfg = cfg70(policy=policy, arrival_rps=rate, length_spread=spread, max_running=max_running,
                kv_budget_tokens=budget, chunk_tokens=chunk, max_context=max_context,
                prompt_mean=max(1, int(prompt_share * max_context)), output_mean=output,
                slow_fraction=slow, stream_policy=stream_policy, slow_tokens_per_s=8, stream_buffer_tokens=32,
                horizon_s=12.0)
    r = run(cfg, seed)
    assert_conserved(r, cfg)
    assert not r.truncated


@FEW
@given(full_seqs=st.integers(1, 30), rate=st.floats(2, 20), spread=st.sampled_from([0.5, 1.0, 1.5]),
       seed=st.integers(0, 2**16))
def test_no_preemption_when_admission_fits_at_full_context(full_seqs, rate, spread, seed):
    # A scheduler that admits no more than fit at full context can never run out of KV.
    cfg = cfg70(policy="chunked", max_running=full_seqs, kv_budget_tokens=full_seqs * 8192, arrival_rps=rate,
                length_spread=spread, horizon_s=15.0)
    r = run(cfg, seed)
    assert r.preemptions_total == 0


def test_overcommit_preempts_by_recompute_and_still_conserves():
    # 20 full-context sequences of KV, 120 admitted: long prompts and outputs outgrow the blocks.
    cfg = cfg70(policy="continuous", max_running=120, kv_budget_tokens=20 * 8192, prompt_mean=3000,
                output_mean=1500, length_spread=0.5, arrival_rps=3.0, horizon_s=60.0)
    r = run(cfg, 3)
    assert_conserved(r, cfg)
    print(f"\npreemptions {r.preemptions_total} over {r.arrived} requests; peak KV "
          f"{r.kv_tokens.max():,} of {r.kv_budget_tokens:,} tokens")
    assert r.preemptions_total > 0
    assert r.kv_tokens.max() <= r.kv_budget_tokens
    # A preempted request that finished streamed each of its tokens exactly once.
    hit = (r.preemptions > 0) & (r.status == DONE)
    assert hit.any()
    assert np.all(r.generated[hit] == r.output_tokens[hit])


# --- Little's law ------------------------------------------------------------------------------------


@pytest.mark.parametrize("policy", ["static", "continuous", "chunked"])
def test_littles_law_on_the_queue(policy):
    """The queue's time average from the step series against arrival rate x mean wait."""
    cfg = cfg70(policy=policy, arrival_rps=6.0 if policy != "static" else 2.0, horizon_s=60.0)
    r = run(cfg, 11)
    # Independent of the engine's own integral: queue length sampled at each step start,
    # weighted by the step (it misses arrivals inside a step, a small bias when the queue is long).
    L_steps = float(np.sum(r.queue_len * r.step_s)) / r.horizon_s
    lam_W = r.arrival_rate * r.mean_queue_wait_s
    print(f"\n{policy}: L from steps {L_steps:.3f}, exact {r.mean_queue_len:.3f}, lambda W {lam_W:.3f}")
    assert r.mean_queue_len == pytest.approx(lam_W, rel=1e-9)
    assert lam_W > 1  # a real queue, not an empty one
    assert L_steps == pytest.approx(lam_W, rel=0.05)


# --- closed forms -------------------------------------------------------------------------------------


def prefill_s_by_hand(P: int, c: dict = R70) -> float:
    flops = P * c["weight_flops_per_token"] + c["attn_flops_per_position"] * P * (P - 1) / 2
    return max(c["weight_bytes"] / c["replica_Bps"], flops / c["replica_flops"]) + c["overhead_s"]


@pytest.mark.parametrize(("policy", "chunk"), [("continuous", 256), ("chunked", 4096)])
def test_near_zero_load_ttft_is_one_prefill(policy, chunk):
    cfg = cfg70(policy=policy, chunk_tokens=chunk, arrival_rps=0.05, length_spread=0, output_mean=20,
                horizon_s=2000.0)
    r = run(cfg, 5)
    one = prefill_s_by_hand(2000)
    print(f"\n{policy}: one prefill {one * 1000:.2f} ms; TTFT min {np.nanmin(r.ttft_s) * 1000:.2f} ms, "
          f"median {np.nanmedian(r.ttft_s) * 1000:.2f} ms over {r.arrived} requests")
    assert one == pytest.approx(0.1484, abs=1e-4)  # 2.876e14 FLOP / 1.978e15 FLOP/s + 3 ms
    assert np.nanmin(r.ttft_s) == pytest.approx(one, rel=1e-12)
    assert np.nanmedian(r.ttft_s) == pytest.approx(one, rel=1e-12)


def test_near_zero_load_chunked_ttft_is_the_sum_of_its_chunks():
    cfg = cfg70(policy="chunked", chunk_tokens=256, arrival_rps=0.05, length_spread=0, output_mean=20,
                horizon_s=2000.0)
    r = run(cfg, 5)
    total = 0.0
    for s0 in range(0, 2000, 256):
        t = min(256, 2000 - s0)
        flops = t * R70["weight_flops_per_token"] + R70["attn_flops_per_position"] * (t * s0 + t * (t - 1) / 2)
        total += max((R70["weight_bytes"] + R70["kv_bytes_per_token"] * s0) / R70["replica_Bps"],
                     flops / R70["replica_flops"]) + R70["overhead_s"]
    assert np.nanmedian(r.ttft_s) == pytest.approx(total, rel=1e-12)
    assert total > prefill_s_by_hand(2000)  # each chunk pays a weight read and the fixed cost


def test_an_idle_decode_step_is_the_weight_read():
    # One request with fixed lengths alone: every gap after its first token is one decode step.
    cfg = cfg70(policy="chunked", arrival_rps=0.01, length_spread=0, prompt_mean=100, output_mean=5,
                horizon_s=500.0)
    r = run(cfg, 2)
    gaps = r.token_gaps_s
    ctx = np.array([100, 101, 102, 103])  # KV held before each decode step after the first token
    expected = (R70["weight_bytes"] + R70["kv_bytes_per_token"] * ctx) / R70["replica_Bps"] + R70["overhead_s"]
    assert gaps.size >= 4
    assert np.allclose(np.sort(gaps[:4]), expected, rtol=1e-12)


# --- the throughput ceiling ------------------------------------------------------------------------


@FAST
@given(
    policy=st.sampled_from(["static", "continuous", "chunked"]),
    rate=st.floats(1, 60),
    max_running=st.integers(1, 200),
    full_seqs=st.integers(1, 80),
    spread=st.sampled_from([0.0, 0.8, 1.5]),
    prompt=st.integers(1, 3000),
    output=st.integers(1, 800),
    seed=st.integers(0, 2**16),
)
def test_throughput_never_exceeds_the_analytic_maximum_at_the_kv_capped_batch(policy, rate, max_running, full_seqs,
                                                                               spread, prompt, output, seed):
    if policy == "static":
        max_running = min(max_running, full_seqs)
    cfg = cfg70(policy=policy, arrival_rps=rate, max_running=max_running, kv_budget_tokens=full_seqs * 8192,
                length_spread=spread, prompt_mean=prompt, output_mean=output, horizon_s=10.0)
    r = run(cfg, seed)
    if not r.arrived:
        return
    ceiling = tokens_per_s_ceiling(cfg, int(r.prompt_tokens.min()))
    assert r.tokens_per_s <= ceiling * (1 + 1e-9)
    # and the busiest single step obeys it too
    assert np.all(r.tokens / r.step_s <= ceiling * (1 + 1e-9))


def test_ceiling_by_hand():
    cfg = cfg70(max_running=54)
    # 54 sequences, weights 141.2 GB / 10.72 TB/s = 13.17 ms > 54 x 141.2 GFLOP / 1.978 PFLOP/s = 3.85 ms
    assert tokens_per_s_ceiling(cfg, 2000) == pytest.approx(54 / (141.2e9 / 10.72e12 + 0.003))


# --- the policies against each other -----------------------------------------------------------------


def test_continuous_beats_static_on_mixed_output_lengths():
    gains, rows = [], []
    for seed in range(5):
        cfg = cfg70(arrival_rps=2.5, length_spread=1.0, horizon_s=60.0)
        s = run(replace(cfg, policy="static"), seed)
        c = run(replace(cfg, policy="continuous"), seed)
        rows.append((seed, s.steady_tokens_per_s, c.steady_tokens_per_s, s.ttft(50), c.ttft(50)))
        gains.append(c.steady_tokens_per_s - s.steady_tokens_per_s)
        assert c.ttft(50) < s.ttft(50)
        assert c.queued <= s.queued
    for row in rows:
        print(f"\nseed {row[0]}: tokens/s static {row[1]:,.0f} continuous {row[2]:,.0f}; "
              f"TTFT p50 static {row[3]:.2f} s continuous {row[4]:.2f} s", end="")
    g = np.array(gains)
    assert np.all(g > 0)
    assert g.mean() - 2.776 * g.std(ddof=1) / math.sqrt(g.size) > 0  # 95% t interval above zero


def test_chunking_bounds_the_token_gap_that_whole_prompts_blow_up():
    cfg = cfg70(arrival_rps=4.0, horizon_s=40.0)
    c = run(replace(cfg, policy="continuous"), 4)
    k = run(replace(cfg, policy="chunked"), 4)
    print(f"\ntoken gap p95: continuous {c.token_gap(95) * 1000:.1f} ms, chunked {k.token_gap(95) * 1000:.1f} ms")
    assert k.token_gap(95) < 0.5 * c.token_gap(95)
    # Without chunking the p95 gap is a whole prefill plus a step: over 148 ms here.
    assert c.token_gap(95) > prefill_s_by_hand(2000)


# --- slow clients -------------------------------------------------------------------------------------


def test_a_slow_client_is_cut_and_never_holds_the_engine():
    base = cfg70(policy="chunked", arrival_rps=1.0, length_spread=0, output_mean=300, slow_fraction=0.3,
                 slow_tokens_per_s=5, stream_buffer_tokens=64, horizon_s=120.0)
    cut = run(base, 8)
    block = run(replace(base, stream_policy="block"), 8)
    assert_conserved(cut, base)
    assert cut.cut > 0 and block.cut == 0
    assert np.all(cut.slow[cut.status == CUT])  # only slow streams are cut
    assert np.all(cut.generated[cut.status == CUT] > 64)  # each had filled its buffer
    assert cut.stall_s == 0 and block.stall_s > 0
    fast_c = ~cut.slow & (cut.status == DONE)
    fast_b = ~block.slow & (block.status == DONE)
    print(f"\nfast streams' mean TPOT: cut {np.nanmean(cut.tpot_s[fast_c]) * 1000:.1f} ms, "
          f"block {np.nanmean(block.tpot_s[fast_b]) * 1000:.1f} ms; block gap p95 {block.token_gap(95) * 1000:.0f} ms")
    assert fast_b.any()
    assert np.nanmean(block.tpot_s[fast_b]) > 3 * np.nanmean(cut.tpot_s[fast_c])
    assert block.stall_s > 0.5 * block.horizon_s  # the engine spent most of the run waiting on sockets
    # Blocked, the engine moves at the slow client's pace: 1 / 5 tokens/s = 200 ms per token.
    assert block.token_gap(95) == pytest.approx(0.2, rel=0.1)


# --- the fixed contract: 2,000 req/s, calls of up to 50 inputs that always take 200 ms ----------------


def contract(gpus: int, horizon: float) -> Config:
    return Config(policy="fixed-contract", arrival_rps=2000, gpus=gpus, max_inputs=50, call_s=0.2, timeout_s=0.05,
                  horizon_s=horizon)


def test_dispatcher_flushes_at_max_inputs_or_timeout():
    arr = np.array([0.0, 0.01, 0.02, 0.03, 0.2, 0.21, 0.5])
    starts, seals = form_batches(arr, 3, 0.05)
    # [0, 0.01, 0.02] full at 0.02; [0.03] alone until 0.08; [0.2, 0.21] until 0.25; [0.5] until 0.55
    assert starts.tolist() == [0, 3, 4, 6]
    assert seals.tolist() == pytest.approx([0.02, 0.08, 0.25, 0.55])


def test_eight_gpus_diverge_and_ten_hold_at_2000_rps():
    """50 inputs / 0.2 s = 250 req/s per GPU: 8 GPUs are exactly 100% busy, so the backlog is a
    random walk with no pull back to zero and grows without bound (like the square root of time);
    10 GPUs run at 80% and the backlog stays at the batch being formed."""
    def mean_backlog(gpus, horizon):
        return np.mean([contract_backlog(contract(gpus, horizon), s, np.array([horizon]))[0] for s in range(8)])

    b8 = (mean_backlog(8, 20.0), mean_backlog(8, 80.0))
    b10 = (mean_backlog(10, 20.0), mean_backlog(10, 80.0))
    print(f"\nmean backlog after 20 s / 80 s: 8 GPUs {b8[0]:.0f} / {b8[1]:.0f}, 10 GPUs {b10[0]:.0f} / {b10[1]:.0f}")
    assert b8[1] > 1.4 * b8[0]  # still growing: about 2x for 4x the time
    assert b8[1] > 200  # four full calls' worth and more, waiting for a GPU
    assert b10[1] <= 50 and b10[0] <= 50  # never more than one batch in formation
    assert abs(b10[1] - b10[0]) < 25
    for gpus in (8, 10):
        r = run(contract(gpus, 40.0), 1)
        assert r.arrived == r.done + r.running + r.queued
        assert np.all(r.batch <= 50)
        assert r.busy_fraction <= 1 + 1e-9


def test_seven_gpus_fall_behind_linearly():
    # 1,750 req/s of capacity against 2,000: 250 req/s pile up, 10,000 after 40 s.
    b = np.mean([contract_backlog(contract(7, 40.0), s, np.array([40.0]))[0] for s in range(4)])
    print(f"\n7 GPUs: backlog after 40 s {b:,.0f} (250 req/s x 40 s = 10,000)")
    assert b == pytest.approx(250 * 40, rel=0.05)


def test_ten_gpus_wait_only_for_the_batch_to_fill():
    """Closed form: a full batch of 50 fills at 2,000 req/s; the k-th request waits for the 49 - k
    after it, (49 - k) / 2,000 s, so the mean is 24.5 / 2,000 = 12.25 ms. At 80% busy with
    nearly even batch arrivals, GPU queueing adds almost nothing."""
    analytic = 24.5 / 2000
    means = np.array([run(contract(10, 20.0), 100 + s).queue_wait_s.mean() for s in range(8)])
    half = 2.365 * means.std(ddof=1) / math.sqrt(means.size)  # 95% t, 7 dof
    print(f"\nmean wait {means.mean() * 1000:.3f} ± {half * 1000:.3f} ms; closed form {analytic * 1000:.3f} ms")
    assert abs(means.mean() - analytic) <= max(half, 0.002 * analytic)
    assert half / analytic < 0.05


# --- moves the right way ---------------------------------------------------------------------------------


def mean_over(cfg: Config, fn, seeds=range(3)) -> float:
    return float(np.mean([fn(run(cfg, s)) for s in seeds]))


@FEW
@given(factor=st.floats(1.5, 3), rate=st.floats(1, 4))
def test_more_bandwidth_shortens_tpot(factor, rate):
    cfg = cfg70(arrival_rps=rate, horizon_s=20.0)
    slow = mean_over(cfg, lambda r: np.nanmean(r.token_gaps_s))
    fast = mean_over(replace(cfg, replica_Bps=cfg.replica_Bps * factor), lambda r: np.nanmean(r.token_gaps_s))
    assert fast < slow


@FEW
@given(factor=st.floats(1.5, 3), rate=st.floats(2, 5))
def test_more_traffic_waits_longer(factor, rate):
    cfg = cfg70(arrival_rps=rate, horizon_s=20.0)
    lo = mean_over(cfg, lambda r: np.nanmean(r.ttft_s))
    hi = mean_over(replace(cfg, arrival_rps=rate * factor), lambda r: np.nanmean(r.ttft_s))
    assert hi > lo


@FEW
@given(seqs=st.integers(2, 20), factor=st.integers(2, 4))
def test_a_bigger_kv_budget_serves_more_at_saturation(seqs, factor):
    cfg = cfg70(arrival_rps=20, max_running=seqs, kv_budget_tokens=seqs * 8192, horizon_s=20.0)
    small = mean_over(cfg, lambda r: r.tokens_per_s)
    big = mean_over(replace(cfg, max_running=seqs * factor, kv_budget_tokens=seqs * factor * 8192),
                    lambda r: r.tokens_per_s)
    assert big > small


def test_bursts_with_the_same_mean_wait_longer():
    cfg = cfg70(arrival_rps=3.5, horizon_s=80.0)
    steady = mean_over(cfg, lambda r: r.mean_queue_wait_s)
    bursty = mean_over(replace(cfg, on_fraction=0.3), lambda r: r.mean_queue_wait_s)
    print(f"\nmean queue wait: steady {steady:.3f} s, on 30% of the time {bursty:.3f} s")
    assert bursty > 5 * steady


def test_bursty_arrivals_keep_the_mean_rate_and_switch_off():
    cfg = cfg70(arrival_rps=10, on_fraction=0.25, burst_period_s=20.0, horizon_s=400.0)
    r = run(cfg, 0)
    assert r.arrived / 400 == pytest.approx(10, rel=0.05)
    phase = np.mod(r.arrival_s, 20.0)
    assert np.all(phase < 5.0 + 1e-9)  # on for the first quarter of every period


# --- determinism, inputs, speed ---------------------------------------------------------------------------


def test_same_seed_same_run_other_seed_other_run():
    cfg = cfg70(horizon_s=15.0)
    a, b, c = run(cfg, 1), run(cfg, 1), run(cfg, 2)
    assert np.array_equal(a.ttft_s, b.ttft_s, equal_nan=True) and a.tokens_out == b.tokens_out
    assert a.arrived != c.arrived or not np.array_equal(a.arrival_s, c.arrival_s)


def test_policies_see_the_same_requests():
    cfg = cfg70(horizon_s=15.0)
    runs = [run(replace(cfg, policy=p), 9) for p in ("static", "continuous", "chunked")]
    for r in runs[1:]:
        assert np.array_equal(r.arrival_s, runs[0].arrival_s)
        assert np.array_equal(r.output_tokens, runs[0].output_tokens)


def test_bad_config_is_a_clear_error():
    with pytest.raises(ValueError, match="policy"):
        cfg70(policy="fifo")
    with pytest.raises(ValueError, match="full context"):
        cfg70(kv_budget_tokens=4000)
    with pytest.raises(ValueError, match="max_context"):
        cfg70(prompt_mean=9000)


def test_a_default_sized_run_is_fast():
    cfg = cfg70(arrival_rps=4.0, horizon_s=50.0, slow_fraction=0.02)
    run(cfg, 0)
    t = time.process_time()
    r = run(cfg, 1)
    elapsed = time.process_time() - t
    print(f"\n50 s of one replica ({r.iterations:,} steps, {r.arrived} requests): {elapsed * 1000:.0f} ms")
    assert elapsed < 0.4  # 200 ms target with 2x slack for a shared machine
