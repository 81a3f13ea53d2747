"""serving-platform: the chain from 2,000 concurrent users to replicas, worked by hand from the
catalog's published figures, a hand-worked variant, and properties that say which way each
number must move."""

import math
import time

import pytest
from hypothesis import assume, given, settings, strategies as st
from pydantic import ValidationError

from models.content import PLACEHOLDER
from models.core import knobs_of
from models.registry import QUESTIONS
from models.serving.serving_platform import Params, solve

# Published figures, typed here on purpose so the test does not lean on the code under test.
H100_HBM_Bps = 3.35e12  # H100 SXM datasheet
H100_BF16_FLOPs = 989e12  # dense
H100_MEM_B = 80e9
L70_PARAMS, L70_LAYERS, L70_HEADS, L70_KV_HEADS, HEAD_DIM = 70.6e9, 80, 64, 8, 128  # Llama 3 paper
L8_PARAMS, L8_LAYERS, L8_HEADS, L8_KV_HEADS = 8.03e9, 32, 32, 8


def _chain_by_hand(*, params, layers, heads, kv_heads, gpus, users, think, prompt, hit, output, tpot,
                   bytes_per_param=2.0, hbm=H100_HBM_Bps, peak=H100_BF16_FLOPs, mem=H100_MEM_B,
                   eff=0.7, mfu=0.5, util=0.7):
    """The page's chain written out step by step."""
    weights = params * bytes_per_param
    kv_tok = 2 * layers * kv_heads * HEAD_DIM * 2  # K and V, bf16
    room = 0.9 * gpus * mem - weights
    mem_cap = math.floor(room / (kv_tok * (prompt + output)))
    bw = gpus * hbm * eff
    flops = gpus * peak * mfu
    ctx = prompt + output / 2
    w_s = weights / bw
    kv_s = kv_tok * ctx / bw
    attn = 4 * layers * heads * HEAD_DIM  # QK^T and AV, 2 FLOP per multiply-add
    per_tok = 2 * params + attn * ctx
    tpot_cap = min(math.floor((tpot - w_s) / kv_s), math.floor(tpot * flops / per_tok))
    batch = min(mem_cap, tpot_cap)
    step = max(w_s + batch * kv_s, batch * per_tok / flops)
    uncached = prompt * (1 - hit)
    cached = prompt - uncached
    prefill = uncached * (2 * params + attn * (cached + uncached / 2)) / flops
    response = prefill + output * step
    rate = users / (think + response)
    pre_eq = rate * prefill
    # Each replica holds b = rate / R x output x TPOT sequences (served at the target) and steps at
    # w_s + b x kv_s (memory-bound there): decode busy = step / TPOT. Prefill / R + that = util gives
    # R = (prefill work + rate x output x kv_s) / (util - w_s / TPOT), before the ceiling.
    replicas_continuous = (pre_eq + rate * output * kv_s) / (util - w_s / tpot)
    replicas = math.ceil(replicas_continuous)
    held = rate / replicas * output * tpot
    dec_eq = replicas * (w_s + held * kv_s) / tpot
    return dict(batch=batch, mem_cap=mem_cap, tpot_cap=tpot_cap, step=step, prefill=prefill, response=response,
                rate=rate, in_flight=rate * response, pre_eq=pre_eq, dec_eq=dec_eq, replicas=replicas,
                replicas_continuous=replicas_continuous, held=held,
                gpus=replicas * gpus)


def test_seed_scenario_two_thousand_users_to_replicas():
    d = solve(Params())
    # Llama-3-70B in bf16: 70.6e9 x 2 B = 141.2 GB; KV 2 x 80 x 8 x 128 x 2 B = 327,680 B per token
    assert d.value("weight_bytes") == pytest.approx(141.2e9)
    assert d.value("kv_bytes_per_token") == 327_680
    # HBM left on 8 x H100: 0.9 x 640 GB - 141.2 GB = 434.8 GB; one 2,400-token conversation is
    # 327,680 x 2,400 = 786.4 MB, so 552 fit
    assert d.value("kv_room_bytes") == pytest.approx(434.8e9)
    assert d.value("kv_bytes_per_sequence") == pytest.approx(786_432_000)
    assert d.value("batch_memory_cap") == 552
    # weights read at 8 x 3.35 TB/s x 0.7 = 18.76 TB/s: 141.2 / 18.76 = 7.527 ms
    assert d.value("weight_read_s") == pytest.approx(141.2e9 / 18.76e12)
    # TPOT cap: (50 ms - 7.527 ms) / (327,680 x 2,200 / 18.76e12 = 38.43 us) = 1,105
    assert d.value("batch_tpot_cap") == 1105
    assert d.value("decode_batch") == 552
    assert d.value("batch_limited_by") == "memory"
    # step: 7.527 ms + 552 x 38.43 us = 28.74 ms (FLOP side 552 x 146.97 GFLOP / 3.956 PFLOP/s = 20.5 ms)
    assert d.value("decode_step_s") == pytest.approx(0.0075267 + 552 * 3.8429e-5, rel=1e-4)
    assert d.value("decode_step_compute_s") == pytest.approx(552 * 146.967e9 / 3.956e15, rel=1e-4)
    # prefill: 1,000 uncached tokens x (141.2 GFLOP + 2,621,440 x 1,500) / 3.956e15 = 36.69 ms
    assert d.value("prefill_s_per_request") == pytest.approx(1000 * (141.2e9 + 2_621_440 * 1500) / 3.956e15)
    # response 36.69 ms + 400 x 28.74 ms = 11.53 s; rate 2,000 / (30 + 11.53) = 48.16 req/s
    assert d.value("response_time_s") == pytest.approx(11.533, rel=1e-3)
    assert d.value("request_rate") == pytest.approx(2000 / (30 + 11.533), rel=1e-3)
    # Little: 48.16 x 11.53 = 555 in flight, not 2,000
    assert d.value("requests_in_flight") == pytest.approx(555.3, rel=1e-3)
    # work: prefill 48.16 x 36.69 ms = 1.767 replicas' worth
    assert d.value("prefill_replica_equivalents") == pytest.approx(1.767, rel=1e-3)
    # decode at the batch a replica holds: every step rereads the weights (7.527 ms, 15.05% of a 50 ms
    # TPOT however few sequences ride). R = (1.767 + 48.16 x 400 x 38.43 us) / (0.7 - 0.1505) = 4.56 -> 5
    assert d.value("weight_read_floor_busy") == pytest.approx(100 * 7.5267e-3 / 0.05, rel=1e-4)
    assert d.value("replicas_continuous") == pytest.approx((1.767 + 48.16 * 400 * 3.8429e-5) / (0.7 - 0.15053),
                                                           rel=2e-3)
    assert d.value("replicas") == 5
    assert d.value("gpus") == 40
    # each of 5 holds 48.16 / 5 x 400 x 0.05 = 192.6 sequences; step 7.527 + 192.6 x 38.43 us = 14.93 ms
    assert d.value("held_batch") == pytest.approx(48.16 / 5 * 400 * 0.05, rel=1e-3)
    assert d.value("held_batch_step_s") == pytest.approx(7.5267e-3 + 192.64 * 3.8429e-5, rel=1e-3)
    assert d.value("decode_busy_fraction") == pytest.approx(100 * 14.93e-3 / 0.05, rel=1e-3)
    # the old count charged decode as a full 552-sequence batch on 4 replicas: 48.16 x 400 x 28.74 ms / 552
    # = 1.003 replicas' worth, 25% each; at the 241 sequences 4 replicas really hold, it is 33.6%
    old_busy_at_4 = 1.767 / 4 + (7.5267e-3 + 48.16 / 4 * 400 * 0.05 * 3.8429e-5) / 0.05
    assert old_busy_at_4 > 0.7


def test_seed_scenario_matches_the_chain_written_out():
    d = solve(Params())
    h = _chain_by_hand(params=L70_PARAMS, layers=L70_LAYERS, heads=L70_HEADS, kv_heads=L70_KV_HEADS, gpus=8,
                       users=2000, think=30, prompt=2000, hit=0.5, output=400, tpot=0.05)
    assert d.value("decode_batch") == h["batch"]
    assert d.value("request_rate") == pytest.approx(h["rate"])
    assert d.value("requests_in_flight") == pytest.approx(h["in_flight"])
    assert d.value("replicas") == h["replicas"]


def test_the_think_time_assumption_shown_live():
    d = solve(Params())
    # think time 0: 2,000 / 11.53 s = 173.4 req/s; prefill 173.4 x 36.69 ms = 6.36;
    # (6.36 + 173.4 x 400 x 38.43 us) / (0.7 - 0.1505) = 16.43 -> 17 replicas, 136 GPUs
    assert d.value("request_rate_without_think_time") == pytest.approx(2000 / 11.533, rel=1e-3)
    assert d.value("replicas_without_think_time") == 17
    assert d.value("gpus_without_think_time") == 136
    # and with a think time near zero every user has a request open
    near_zero = solve(Params(think_time_s=1))
    assert near_zero.value("requests_in_flight") == pytest.approx(2000 * 11.533 / (1 + 11.533), rel=1e-3)


def test_cold_cache_and_replica_loss():
    d = solve(Params())
    # hit 0: 2,000 tokens x (141.2 GFLOP + 2,621,440 x 1,000) / 3.956e15 = 72.7 ms of prefill;
    # response 11.569 s; rate 2,000 / 41.569 = 48.11; (3.498 + 48.11 x 400 x 38.43 us) / 0.5495 = 7.71 -> 8
    assert d.value("replicas_without_prefix_cache") == 8
    # the 5 replicas with a cold cache: 3.498 / 5 prefill + (7.527 + 192.4 x 38.43 us) / 50 ms decode = 99.8%
    cold_busy = 48.11 * 72.7e-3 / 5 + (7.5267e-3 + 48.11 / 5 * 400 * 0.05 * 3.8429e-5) / 0.05
    assert d.value("utilization_if_cache_cold") == pytest.approx(100 * cold_busy, rel=2e-3)
    # one of 5 replicas lost: 1.767 / 4 + (7.527 + 240.8 x 38.43 us) / 50 ms = 77.7% busy
    lost = 1.767 / 4 + (7.5267e-3 + 48.16 / 4 * 400 * 0.05 * 3.8429e-5) / 0.05
    assert d.value("utilization_after_replica_loss") == pytest.approx(100 * lost, rel=1e-3)
    assert d.value("requests_lost_per_replica_failure") == pytest.approx(555.3 / 5, rel=1e-3)
    # prefill free: 48.16 x 400 x 38.43 us / 0.5495 = 1.35 -> 2; by slots: ceil(555.3 / (552 x 0.7)) = 2
    assert d.value("replicas_if_prefill_free") == 2
    assert d.value("replicas_by_slots") == 2


def test_variant_small_model_one_gpu_no_cache():
    p = Params(concurrent_users=1000, think_time_s=10, prompt_tokens=1000, prefix_cache_hit=0, output_tokens=200,
               tpot_target_ms=30, model="Llama-3-8B", gpus_per_replica=1)
    d = solve(p)
    # weights 16.06 GB at 2.345 TB/s = 6.849 ms; KV 131,072 B/token; ctx 1,100 -> 61.48 us per sequence
    # TPOT cap floor((30 - 6.849) / 0.06148) = 376; memory (72 - 16.06) GB / (131,072 x 1,200) = 355
    assert d.value("batch_tpot_cap") == 376
    assert d.value("batch_memory_cap") == 355
    assert d.value("decode_batch") == 355
    step = 16.06e9 / 2.345e12 + 355 * 131_072 * 1100 / 2.345e12  # 6.849 + 21.83 = 28.68 ms
    assert d.value("decode_step_s") == pytest.approx(step)
    # prefill 1,000 x (16.06 GFLOP + 524,288 x 500) / 494.5 TFLOP/s = 32.98 ms
    prefill = 1000 * (16.06e9 + 524_288 * 500) / 494.5e12
    assert d.value("prefill_s_per_request") == pytest.approx(prefill)
    response = prefill + 200 * step  # 5.77 s
    rate = 1000 / (10 + response)  # 63.4 req/s
    assert d.value("request_rate") == pytest.approx(rate)
    # prefill 63.4 x 32.98 ms = 2.09 replicas' worth; the weight read is 6.849 / 30 ms = 22.8% of every
    # replica's time: (2.09 + 63.4 x 200 x 61.48 us) / (0.7 - 0.2283) = 6.09 -> 7 (full batches said 5)
    pre, kv_s = rate * prefill, 131_072 * 1100 / 2.345e12
    assert d.value("replicas") == math.ceil((pre + rate * 200 * kv_s) / (0.7 - 16.06e9 / 2.345e12 / 0.03)) == 7
    assert d.value("gpus") == 7
    h = _chain_by_hand(params=L8_PARAMS, layers=L8_LAYERS, heads=L8_HEADS, kv_heads=L8_KV_HEADS, gpus=1,
                       users=1000, think=10, prompt=1000, hit=0, output=200, tpot=0.03)
    assert h["replicas"] == 7


def test_fp8_halves_the_weights():
    d16, d8 = solve(Params()), solve(Params(weight_precision="fp8"))
    assert d8.value("weight_bytes") == pytest.approx(d16.value("weight_bytes") / 2)
    assert d8.value("batch_memory_cap") > d16.value("batch_memory_cap")


def test_impossible_scenarios_are_refused_in_plain_words():
    with pytest.raises(ValidationError, match="GB usable"):
        Params(model="Llama-3.1-405B")  # 810 GB of bf16 weights on 8 x 80 GB
    with pytest.raises(ValidationError, match="TPOT"):
        Params(model="Llama-3-8B", gpus_per_replica=1, tpot_target_ms=5)  # weights alone take 6.8 ms
    with pytest.raises(ValidationError, match="Concurrent users"):
        Params(concurrent_users=10)


def test_key_figures_exist_with_their_units():
    d = solve(Params())
    want = {"request_rate": "1/s", "requests_in_flight": "1", "prefill_replica_equivalents": "1",
            "decode_busy_fraction": "%", "replicas": "1", "gpus": "1"}
    for key, unit in want.items():
        assert key in d, key
        assert d[key].unit == unit, key


def test_every_placeholder_and_drill_resolves():
    q = QUESTIONS["serving-platform"]
    d = solve(Params())
    names = set(d.keys()) | set(knobs_of(Params))
    c = q.content
    for text in [c.hook, c.intro, *(s.body for s in c.sections), *(dr.prompt for dr in c.drills)]:
        for m in PLACEHOLDER.finditer(text):
            assert m.group(1) in names, m.group(1)
    assert all(dr.key in d for dr in c.drills)
    assert len(c.drills) >= 6


def _params(**kw):
    try:
        return Params(**kw)
    except ValidationError:
        assume(False)


users = st.integers(100, 1_000_000)
think = st.floats(1, 600)
hits = st.floats(0, 0.99)


@settings(max_examples=150, deadline=None)
@given(a=users, b=users, z=think, h=hits)
def test_more_users_never_need_fewer_replicas(a, b, z, h):
    lo, hi = sorted((a, b))
    d_lo = solve(Params(concurrent_users=lo, think_time_s=z, prefix_cache_hit=h))
    d_hi = solve(Params(concurrent_users=hi, think_time_s=z, prefix_cache_hit=h))
    assert d_hi.value("request_rate") >= d_lo.value("request_rate")
    assert d_hi.value("replicas") >= d_lo.value("replicas")


@settings(max_examples=150, deadline=None)
@given(z1=think, z2=think, u=users)
def test_longer_think_time_never_needs_more_replicas(z1, z2, u):
    lo, hi = sorted((z1, z2))
    d_lo, d_hi = solve(Params(think_time_s=lo, concurrent_users=u)), solve(Params(think_time_s=hi, concurrent_users=u))
    assert d_hi.value("requests_in_flight") <= d_lo.value("requests_in_flight") * (1 + 1e-12)
    assert d_hi.value("replicas") <= d_lo.value("replicas")
    assert d_lo.value("requests_in_flight") <= u  # never more in flight than users


@settings(max_examples=150, deadline=None)
@given(h1=hits, h2=hits, prompt=st.integers(100, 32_000), u=users)
def test_a_better_prefix_cache_never_needs_more_replicas(h1, h2, prompt, u):
    lo, hi = sorted((h1, h2))
    d_lo = solve(_params(prefix_cache_hit=lo, prompt_tokens=prompt, concurrent_users=u))
    d_hi = solve(_params(prefix_cache_hit=hi, prompt_tokens=prompt, concurrent_users=u))
    assert d_hi.value("prefill_replica_equivalents") <= d_lo.value("prefill_replica_equivalents") * (1 + 1e-9)
    assert d_hi.value("replicas") <= d_lo.value("replicas")


@settings(max_examples=150, deadline=None)
@given(u=users, z=think, h=hits, prompt=st.integers(100, 128_000), out=st.integers(10, 8000),
       tpot=st.floats(5, 200), model=st.sampled_from(["Llama-3-8B", "Llama-3-70B", "Mixtral-8x7B"]),
       gpu=st.sampled_from(["H100 SXM", "H200", "B200", "MI300X"]), tp=st.sampled_from([1, 2, 4, 8]),
       prec=st.sampled_from(["bf16", "fp8"]))
def test_invariants_hold_everywhere(u, z, h, prompt, out, tpot, model, gpu, tp, prec):
    d = solve(_params(concurrent_users=u, think_time_s=z, prefix_cache_hit=h, prompt_tokens=prompt,
                      output_tokens=out, tpot_target_ms=tpot, model=model, gpu=gpu, gpus_per_replica=tp,
                      weight_precision=prec))
    assert 1 <= d.value("decode_batch") <= min(d.value("batch_memory_cap"), d.value("batch_tpot_cap"))
    assert d.value("decode_step_s") <= tpot / 1000 * (1 + 1e-9)  # the batch meets the TPOT target
    assert d.value("utilization") <= 100 * 0.7 * (1 + 1e-9)
    assert d.value("replicas_if_prefill_free") <= d.value("replicas")
    assert d.value("replicas") <= d.value("replicas_without_think_time")
    assert d.value("gpus") == d.value("replicas") * tp


def test_solve_is_fast():
    p = Params()
    solve(p)
    t = time.process_time()
    for _ in range(200):
        solve(p)
    assert (time.process_time() - t) / 200 * 1000 < 1.0
