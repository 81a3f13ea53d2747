"""interview-minute-plan: the seeds' 5/7/10/16/5 plan, its 60-minute scaling, the coding-assistant
opening worked by hand, a variant, consistency with the serving-platform page, and properties."""

import math
import time

import pytest
from hypothesis import assume, given, settings, strategies as st
from pydantic import ValidationError

from models.content import PLACEHOLDER
from models.core import PHASES, knobs_of
from models.registry import QUESTIONS
from models.serving import serving_platform
from models.serving.interview_minute_plan import PHASE_MINUTES_45, Params, checkpoints, phase_plan, solve


def test_seed_plan_for_45_minutes():
    d = solve(Params())
    # "Five minutes of numbers, seven of shape, ten of arithmetic, sixteen of depth, five of failure modes"
    assert [d.value(f"{ph}_minutes") for ph in PHASES] == [5, 7, 10, 16, 5]
    # 5 + 7 + 10 + 16 + 5 = 43 of 45, so 2 of slack
    assert d.value("planned_minutes") == 5 + 7 + 10 + 16 + 5 == 43
    assert d.value("slack_minutes") == 45 - 43 == 2
    # cumulative: 5, 5 + 7 = 12, 12 + 10 = 22, 22 + 16 = 38, 38 + 5 = 43
    assert [d.value(f"checkpoint_end_of_{ph}") for ph in PHASES] == [5, 12, 22, 38, 43]
    assert d.value("depth_minutes_per_topic") == 16 / 2


def test_sixty_minute_round_scales_the_plan():
    d = solve(Params(round_minutes=60))
    # x 60/45: 6.67 -> 7, 9.33 -> 9, 13.33 -> 13, 21.33 -> 21, 6.67 -> 7
    assert [d.value(f"{ph}_minutes") for ph in PHASES] == [7, 9, 13, 21, 7]
    assert d.value("planned_minutes") == 57
    assert d.value("slack_minutes") == 3
    assert [d.value(f"checkpoint_end_of_{ph}") for ph in PHASES] == [7, 16, 29, 50, 57]
    # the alternative: all 15 extra minutes to depth, 16 + 15 = 31
    assert d.value("depth_minutes_if_extra_to_depth") == 31
    assert solve(Params()).value("depth_minutes_if_extra_to_depth") == 16


def test_the_mock_interview_reads_the_same_plan():
    assert PHASE_MINUTES_45 == {"numbers": 5, "shape": 7, "arithmetic": 10, "depth": 16, "failure_modes": 5}
    assert phase_plan(45) == PHASE_MINUTES_45
    assert checkpoints(45) == {"numbers": 5, "shape": 12, "arithmetic": 22, "depth": 38, "failure_modes": 43}
    for minutes in (45, 60):
        d = solve(Params(round_minutes=minutes))
        assert phase_plan(minutes) == {ph: d.value(f"{ph}_minutes") for ph in PHASES}


def test_coding_assistant_opening_by_hand():
    d = solve(Params())
    # 10,000 developers x 6 completions per minute / 60 = 1,000 req/s
    assert d.value("request_rate") == pytest.approx(10_000 * 6 / 60) == pytest.approx(1000)
    # 8,000 tokens of context, 90% cached: 800 to prefill
    assert d.value("uncached_prompt_tokens") == pytest.approx(800)
    # Llama-3-8B on one H100: weights 16.06 GB / (3.35 TB/s x 0.7) = 6.849 ms; KV 131,072 B/token x
    # 8,025 average context / 2.345 TB/s = 0.4486 ms per sequence; TPOT 15 ms allows
    # floor((15 - 6.849) / 0.4486) = 18; memory (72 - 16.06) GB / (131,072 x 8,050) = 53
    w_s = 16.06e9 / 2.345e12
    kv_s = 131_072 * 8025 / 2.345e12
    assert d.value("batch_tpot_cap") == math.floor((0.015 - w_s) / kv_s) == 18
    assert d.value("batch_memory_cap") == math.floor((72e9 - 16.06e9) / (131_072 * 8050)) == 53
    assert d.value("decode_batch") == 18
    step = w_s + 18 * kv_s  # 14.92 ms
    assert d.value("decode_step_s") == pytest.approx(step)
    # prefill: 800 x (2 x 8.03e9 + 4 x 32 x 32 x 128 x (7,200 + 400)) / (989e12 x 0.5) = 32.43 ms
    prefill = 800 * (2 * 8.03e9 + 524_288 * 7600) / 494.5e12
    assert d.value("prefill_s_per_request") == pytest.approx(prefill)
    pre = 1000 * prefill  # 32.43 replicas' worth of prefill
    assert d.value("prefill_replica_equivalents") == pytest.approx(pre)
    # decode at the batch a replica really holds: the weight read alone is 6.849 / 15 ms = 45.7% of
    # every replica's time. R = (32.43 + 1,000 x 50 x 0.4486 ms) / (0.7 - 0.4566) = 225.4 -> 226
    # (charging decode as full 18-sequence batches gave 32.43 + 41.45 -> 106: each of 106 would hold
    # 7 sequences and be 97% busy)
    assert d.value("weight_read_floor_busy") == pytest.approx(100 * w_s / 0.015)
    r_cont = (pre + 1000 * 50 * kv_s) / (0.7 - w_s / 0.015)
    assert d.value("replicas_continuous") == pytest.approx(r_cont, rel=1e-6)
    assert d.value("replicas") == math.ceil(r_cont) == 226
    assert d.value("gpus") == 226
    held = 1000 / 226 * 50 * 0.015  # 3.32 sequences each
    assert d.value("decode_replica_equivalents") == pytest.approx(226 * (w_s + held * kv_s) / 0.015)
    assert d.value("completion_latency_s") == pytest.approx(prefill + 50 * step)


def test_the_mistakes_in_numbers():
    d = solve(Params())
    # no prefix cache: 8,000 x (16.06 GFLOP + 524,288 x 4,000) / 494.5 TFLOP/s = 293.7 ms per request
    full = 8000 * (2 * 8.03e9 + 524_288 * 4000) / 494.5e12
    assert d.value("prefill_s_without_prefix_cache") == pytest.approx(full)
    # with that much prefill each replica holds under one sequence, so every token is a step of its own:
    # (293.7 + 1,000 x 50 x (6.849 + 0.4486) ms) / 0.7 = 940.8 -> 941
    w_s, kv_s = 16.06e9 / 2.345e12, 131_072 * 8025 / 2.345e12
    assert d.value("replicas_without_prefix_cache") == math.ceil((1000 * full + 1000 * 50 * (w_s + kv_s)) / 0.7) == 941
    # prefill forgotten: 1,000 x 50 x 0.4486 ms / (0.7 - 0.4566) = 92.2 -> 93
    assert d.value("replicas_decode_only") == math.ceil(1000 * 50 * kv_s / (0.7 - w_s / 0.015)) == 93
    # batch at the memory cap of 53: 6.849 ms + 53 x 0.4486 ms = 30.6 ms, twice the TPOT target
    assert d.value("tpot_at_memory_batch_s") == pytest.approx(16.06e9 / 2.345e12 + 53 * 131_072 * 8025 / 2.345e12)
    assert d.value("replicas_at_memory_batch") < d.value("replicas")
    # 10,000 developers against ~779 completions in flight
    assert d.value("developers_per_request_in_flight") == pytest.approx(10_000 / d.value("requests_in_flight"))


def test_variant_large_model_in_fp8():
    p = Params(developers=20_000, completions_per_developer_per_min=3, prompt_tokens=4000, prefix_cache_hit=0.8,
               output_tokens=100, tpot_target_ms=25, model="Llama-3-70B", gpus_per_replica=8,
               weight_precision="fp8")
    d = solve(p)
    rate = 20_000 * 3 / 60  # 1,000 req/s
    bw = 8 * 3.35e12 * 0.7  # 18.76 TB/s
    flops = 8 * 1979e12 * 0.5  # FP8 dense peak, 7.916 PFLOP/s
    w_s = 70.6e9 * 1 / bw  # 3.763 ms
    kv_s = 327_680 * (4000 + 50) / bw  # 70.74 us
    per_tok = 2 * 70.6e9 + 2_621_440 * 4050
    tpot_cap = min(math.floor((0.025 - w_s) / kv_s), math.floor(0.025 * flops / per_tok))  # 300
    mem_cap = math.floor((0.9 * 640e9 - 70.6e9) / (327_680 * 4100))  # 376
    assert (d.value("batch_tpot_cap"), d.value("batch_memory_cap")) == (tpot_cap, mem_cap) == (300, 376)
    step = max(w_s + 300 * kv_s, 300 * per_tok / flops)  # 24.99 ms
    prefill = 800 * (2 * 70.6e9 + 2_621_440 * (3200 + 400)) / flops  # 15.22 ms
    # (15.22 + 1,000 x 100 x 70.74 us) / (0.7 - 3.763 / 25 ms) = 40.6 -> 41 (full batches said 34)
    replicas = math.ceil((rate * prefill + rate * 100 * kv_s) / (0.7 - w_s / 0.025))
    assert d.value("decode_step_s") == pytest.approx(step)
    assert d.value("prefill_s_per_request") == pytest.approx(prefill)
    assert d.value("replicas") == replicas == 41
    assert d.value("gpus") == 41 * 8


def test_same_engine_arithmetic_as_the_serving_platform_page():
    shared = dict(prompt_tokens=3000, prefix_cache_hit=0.6, output_tokens=300, tpot_target_ms=40,
                  model="Llama-3-70B", gpu="H200", gpus_per_replica=4, weight_precision="bf16",
                  hbm_efficiency=0.75, mfu=0.45, target_utilization=0.65)
    a = solve(Params(**shared))
    b = serving_platform.solve(serving_platform.Params(**shared))
    for key in ["weight_bytes", "kv_bytes_per_sequence", "decode_batch", "decode_step_s", "decode_tokens_per_s",
                "uncached_prompt_tokens", "prefill_s_per_request"]:
        assert a.value(key) == b.value(key), key
    # at the same request rate the fleets agree too
    b_rate = b.value("request_rate")
    c = solve(Params(**shared, developers=1000, completions_per_developer_per_min=b_rate * 60 / 1000))
    assert c.value("replicas") == b.value("replicas")
    assert c.value("prefill_replica_equivalents") == pytest.approx(b.value("prefill_replica_equivalents"))


def test_round_length_is_45_or_60_only():
    with pytest.raises(ValidationError):
        Params(round_minutes=50)


def test_key_figures_exist_with_their_units():
    d = solve(Params())
    want = {"planned_minutes": "min", "slack_minutes": "min", "request_rate": "1/s",
            "uncached_prompt_tokens": "1", "replicas": "1", "gpus": "1"}
    want |= {f"checkpoint_end_of_{ph}": "min" for ph in PHASES}
    for key, unit in want.items():
        assert key in d, key
        assert d[key].unit == unit, key


def test_every_placeholder_and_drill_resolves():
    q = QUESTIONS["interview-minute-plan"]
    names = set(solve(Params()).keys()) | set(knobs_of(Params))
    c = q.content
    for text in [c.hook, c.intro, *(s.body for s in c.sections), *(dr.prompt for dr in c.drills)]:
        for m in PLACEHOLDER.finditer(text):
            assert m.group(1) in names, m.group(1)
    for minutes in (45, 60):
        d = solve(Params(round_minutes=minutes))
        assert all(dr.key in d for dr in c.drills)
    assert len(c.drills) >= 6


def _params(**kw):
    try:
        return Params(**kw)
    except ValidationError:
        assume(False)


@settings(max_examples=150, deadline=None)
@given(t1=st.floats(5, 100), t2=st.floats(5, 100), prompt=st.integers(500, 32_000))
def test_a_tighter_tpot_never_needs_fewer_replicas(t1, t2, prompt):
    lo, hi = sorted((t1, t2))
    tight, loose = _params(tpot_target_ms=lo, prompt_tokens=prompt), _params(tpot_target_ms=hi, prompt_tokens=prompt)
    assert solve(tight).value("decode_batch") <= solve(loose).value("decode_batch")
    assert solve(tight).value("replicas") >= solve(loose).value("replicas")


@settings(max_examples=150, deadline=None)
@given(h1=st.floats(0, 0.99), h2=st.floats(0, 0.99), devs=st.integers(100, 1_000_000))
def test_a_better_cache_never_needs_more_replicas(h1, h2, devs):
    lo, hi = sorted((h1, h2))
    d_lo = solve(Params(prefix_cache_hit=lo, developers=devs))
    d_hi = solve(Params(prefix_cache_hit=hi, developers=devs))
    assert d_hi.value("uncached_prompt_tokens") <= d_lo.value("uncached_prompt_tokens")
    assert d_hi.value("replicas") <= d_lo.value("replicas")
    assert d_lo.value("replicas") <= d_lo.value("replicas_without_prefix_cache")


@settings(max_examples=150, deadline=None)
@given(a=st.integers(100, 1_000_000), b=st.integers(100, 1_000_000), rate=st.floats(0.5, 30))
def test_more_developers_never_need_fewer_gpus(a, b, rate):
    lo, hi = sorted((a, b))
    d_lo = solve(Params(developers=lo, completions_per_developer_per_min=rate))
    d_hi = solve(Params(developers=hi, completions_per_developer_per_min=rate))
    assert d_hi.value("gpus") >= d_lo.value("gpus")
    assert d_lo.value("replicas_decode_only") <= d_lo.value("replicas")


@pytest.mark.parametrize("minutes", [45, 60])
def test_plan_fits_the_round_and_checkpoints_climb(minutes):
    d = solve(Params(round_minutes=minutes))
    marks = [d.value(f"checkpoint_end_of_{ph}") for ph in PHASES]
    assert marks == sorted(marks) and marks[-1] == d.value("planned_minutes")
    assert 0 <= d.value("slack_minutes") <= minutes * 0.1
    assert d.value("depth_minutes") == max(d.value(f"{ph}_minutes") for ph in PHASES)


def test_solve_is_fast():
    p = Params()
    solve(p)
    t = time.process_time()
    for _ in range(200):
        solve(p)
    assert (time.process_time() - t) / 200 * 1000 < 1.0
