"""interview-minute-plan: the seeds' 5/7/10/16/5 plan, its 60-minute scaling, the coding-assistant
opening worked by hand, a variant, consistency with the serving-platform page, and properties."""

import math

import pytest
from hypothesis import assume, given, settings, strategies as st
from pydantic import ValidationError

from models.core import PHASES
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


# Published figures, typed here so the test does not lean on the code under test.
H100_HBM_Bps, H100_BF16, H100_FP8, H100_HBM_B, NVLINK_Bps = 3.35e12, 989e12, 1979e12, 80e9, 450e9  # datasheet
# Llama 3 8B (Llama 3 paper / config.json): 32 layers, d_model 4,096, 32 heads, 8 KV heads of 128,
# SwiGLU width 14,336, vocabulary 128,256, untied embeddings. Counted matrix by matrix:
L8 = 2 * 128_256 * 4096 + 32 * (2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14_336)  # 8.030e9
# Llama 3 70B: 80 layers, d_model 8,192, 64 heads, 8 KV heads of 128, SwiGLU width 28,672.
L70 = 2 * 128_256 * 8192 + 80 * (2 * 8192 * 8192 + 2 * 8192 * 1024 + 3 * 8192 * 28_672)  # 70.55e9
# The engine's defaults (the accuracy page's fits): decode MBU 80%, 1.9 ms fixed per step (launches,
# sampling), decode MFU 50%, prefill MFU 60%.
MBU, FIXED_S, DECODE_MFU, PREFILL_MFU = 0.8, 1.9e-3, 0.5, 0.6


def test_coding_assistant_opening_by_hand():
    d = solve(Params())
    assert d.value("model_params") == L8 == 8_029_995_008
    # 10,000 developers x 6 completions per minute / 60 = 1,000 req/s
    assert d.value("request_rate") == pytest.approx(10_000 * 6 / 60) == pytest.approx(1000)
    # 8,000 tokens of context, 90% cached: 800 to prefill
    assert d.value("uncached_prompt_tokens") == pytest.approx(800)
    # Llama-3-8B on one H100 (no tensor parallelism, so no all-reduce): weights 16.06 GB /
    # (3.35 TB/s x 0.8) = 5.993 ms; KV 131,072 B/token x 8,025 average context / 2.68 TB/s =
    # 0.3925 ms per sequence. The 15 ms TPOT, less the 1.9 ms fixed step cost, allows
    # (15 - 1.9 - 5.993) / 0.3925 = 18.11 -> 18 (the FLOP side, 20.27 GFLOP a token at 989 TFLOP/s
    # x 50%, allows 319); memory (72 - 16.06) GB / (131,072 x 8,050) = 53
    bw = H100_HBM_Bps * MBU
    w_s = 2 * L8 / bw
    kv_s = 131_072 * 8025 / bw
    assert d.value("batch_tpot_cap_continuous") == pytest.approx((0.015 - FIXED_S - w_s) / kv_s)
    assert d.value("batch_tpot_cap") == math.floor((0.015 - FIXED_S - w_s) / kv_s) == 18
    assert math.floor((0.015 - FIXED_S) / ((2 * L8 + 524_288 * 8025) / (H100_BF16 * DECODE_MFU))) == 319
    assert d.value("batch_memory_cap") == math.floor((0.9 * H100_HBM_B - 2 * L8) / (131_072 * 8050)) == 53
    assert d.value("decode_batch") == 18
    step = w_s + 18 * kv_s + FIXED_S  # 5.993 + 7.065 + 1.9 = 14.96 ms
    assert d.value("decode_step_s") == pytest.approx(step)
    assert step == pytest.approx(14.96e-3, rel=1e-3)
    # prefill: 800 new tokens after 7,200 cached attend to 800 x 7,200 + 800 x 799 / 2 earlier
    # positions, at 2 x 32 layers x 32 heads x (128 + 128) = 524,288 FLOP each:
    # (800 x 2 x 8.03e9 + 524,288 x 6,079,600) / (989e12 x 0.6) = 16.04 TFLOP / 593.4 TFLOP/s = 27.02 ms
    prefill = (800 * 2 * L8 + 524_288 * (800 * 7200 + 800 * 799 / 2)) / (H100_BF16 * PREFILL_MFU)
    assert d.value("prefill_s_per_request") == pytest.approx(prefill)
    assert prefill == pytest.approx(27.02e-3, rel=1e-3)
    pre = 1000 * prefill  # 27.02 replicas' worth of prefill
    assert d.value("prefill_replica_equivalents") == pytest.approx(pre)
    # decode at the batch a replica really holds: the weight read plus the fixed cost,
    # (5.993 + 1.9) / 15 ms = 52.6% of every replica's time, is paid however few ride.
    # R = (27.02 + 1,000 x 50 x 0.3925 ms) / (0.7 - 0.5262) = 268.3 -> 269
    assert d.value("weight_read_floor_busy") == pytest.approx(w_s / 0.015)
    r_cont = (pre + 1000 * 50 * kv_s) / (0.7 - (w_s + FIXED_S) / 0.015)
    assert d.value("replicas_continuous") == pytest.approx(r_cont, rel=1e-6)
    assert d.value("replicas") == math.ceil(r_cont) == 269
    assert d.value("gpus") == 269
    held = 1000 / 269 * 50 * 0.015  # 2.79 sequences each
    assert d.value("held_batch") == pytest.approx(held)
    assert d.value("decode_replica_equivalents") == pytest.approx(269 * (w_s + held * kv_s + FIXED_S) / 0.015)
    assert d.value("completion_latency_s") == pytest.approx(prefill + 50 * step)


def test_the_mistakes_in_numbers():
    d = solve(Params())
    bw = H100_HBM_Bps * MBU
    w_s, kv_s = 2 * L8 / bw, 131_072 * 8025 / bw
    # no prefix cache: (8,000 x 16.06 GFLOP + 524,288 x 8,000 x 7,999 / 2) / 593.4 TFLOP/s = 244.8 ms
    full = (8000 * 2 * L8 + 524_288 * 8000 * 7999 / 2) / (H100_BF16 * PREFILL_MFU)
    assert d.value("prefill_s_without_prefix_cache") == pytest.approx(full)
    assert full == pytest.approx(244.8e-3, rel=1e-3)
    # with that much prefill the busy-time fleet, (244.8 + 50 x 0.3925) ms x 1,000 / 0.1738 = 1,521, would
    # hold 1,000 x 50 x 15 ms / 1,521 = 0.49 of a sequence each: under one, so every token is a step of its
    # own: (244.8 + 1,000 x 50 x (5.993 + 0.3925 + 1.9) ms) / 0.7 = 941.5 -> 942
    assert 1000 * 50 * 0.015 / (1000 * (full + 50 * kv_s) / (0.7 - (w_s + FIXED_S) / 0.015)) < 1
    cold = (1000 * full + 1000 * 50 * (w_s + kv_s + FIXED_S)) / 0.7
    assert d.value("replicas_without_prefix_cache_continuous") == pytest.approx(cold, rel=1e-6)
    assert d.value("replicas_without_prefix_cache") == math.ceil(cold) == 942
    # prefill forgotten: 1,000 x 50 x 0.3925 ms / (0.7 - 0.5262) = 112.9 -> 113
    only = 1000 * 50 * kv_s / (0.7 - (w_s + FIXED_S) / 0.015)
    assert d.value("replicas_decode_only_continuous") == pytest.approx(only, rel=1e-6)
    assert d.value("replicas_decode_only") == math.ceil(only) == 113
    # batch at the memory cap of 53: 5.993 ms + 53 x 0.3925 ms + 1.9 ms = 28.69 ms, nearly twice the TPOT target
    at_mem = w_s + 53 * kv_s + FIXED_S
    assert d.value("tpot_at_memory_batch_s") == pytest.approx(at_mem)
    assert at_mem == pytest.approx(28.69e-3, rel=1e-3)
    # charged as full batches of 53: (27.02 + 1,000 x 50 x 28.69 ms / 53) / 0.7 = 77.3 -> 78
    mem_fleet = (1000 * d.value("prefill_s_per_request") + 1000 * 50 * at_mem / 53) / 0.7
    assert d.value("replicas_at_memory_batch") == math.ceil(mem_fleet) == 78
    assert d.value("developers_per_request_in_flight") == pytest.approx(10_000 / d.value("requests_in_flight"))
    # 10,000 developers against 774.9 in flight (1,000 req/s x 0.775 s): quoted as requests they overstate 12.9 x
    assert d.value("concurrency_misquote_verdict") == "overstates"
    assert d.value("concurrency_misquote_factor") == pytest.approx(10_000 / (1000 * d.value("completion_latency_s")))
    assert d.value("replica_layout") == "one H100 SXM"


def test_few_developers_with_long_completions_understate_concurrency():
    # 2,000 developers at 12 a minute send 400 req/s; with 2,000-token completions each takes seconds, so
    # far more than 2,000 are in flight and the developer count understates them by in flight / 2,000
    d = solve(Params(developers=2000, completions_per_developer_per_min=12, output_tokens=2000))
    in_flight = 400 * d.value("completion_latency_s")
    assert in_flight > 2000
    assert d.value("concurrency_misquote_verdict") == "understates"
    assert d.value("concurrency_misquote_factor") == pytest.approx(in_flight / 2000)


def test_variant_large_model_in_fp8():
    # The old single "precision" knob meant fp8 weights and fp8 compute: both set here; KV stays bf16.
    p = Params(developers=20_000, completions_per_developer_per_min=3, prompt_tokens=4000, prefix_cache_hit=0.8,
               output_tokens=100, tpot_target_ms=25, model="Llama-3-70B", tp_degree=8,
               weight_precision="fp8", compute_precision="fp8")
    d = solve(p)
    rate = 20_000 * 3 / 60  # 1,000 req/s
    bw = 8 * H100_HBM_Bps * MBU  # 21.44 TB/s
    flops = 8 * H100_FP8 * DECODE_MFU  # 7.916 PFLOP/s for decode
    prefill_flops = 8 * H100_FP8 * PREFILL_MFU  # 9.499 PFLOP/s for prefill
    w_s = L70 * 1 / bw  # 3.291 ms
    kv_s = 327_680 * (4000 + 50) / bw  # 61.90 us
    # TP 8: 80 layers x 2 all-reduces, each 6 us + 2 x 7/8 x tokens x 8,192 x 2 B over 450 GB/s
    ar_fixed = 160 * 6e-6  # 0.96 ms a step
    ar_per_token = 160 * 2 * 7 / 8 * 8192 * 2 / NVLINK_Bps  # 10.19 us per sequence in the step
    fixed = FIXED_S + ar_fixed
    per_tok = 2 * L70 + 2 * 80 * 64 * 256 * 4050
    tpot_cap = min(math.floor((0.025 - fixed - w_s) / (kv_s + ar_per_token)),
                   math.floor((0.025 - fixed) / (per_tok / flops + ar_per_token)))  # (25 - 2.86 - 3.291) / 72.09 us
    mem_cap = math.floor((0.9 * 8 * H100_HBM_B - L70) / (327_680 * 4100))  # 376
    assert (d.value("batch_tpot_cap"), d.value("batch_memory_cap")) == (tpot_cap, mem_cap) == (261, 376)
    step = w_s + 261 * kv_s + fixed + 261 * ar_per_token  # 3.291 + 16.16 + 2.86 + 2.66 = 24.97 ms, bytes-bound
    assert d.value("decode_step_s") == pytest.approx(step)
    assert step == pytest.approx(24.97e-3, rel=1e-3)
    assert d.value("decode_step_allreduce_s") == pytest.approx(ar_fixed + 261 * ar_per_token)
    # prefill: 800 new tokens after 3,200 cached (12.68 ms of FLOP), plus the 800 tokens' all-reduces
    # (9.1 ms over NVLink): 21.79 ms
    prefill = ((800 * 2 * L70 + 2 * 80 * 64 * 256 * (800 * 3200 + 800 * 799 / 2)) / prefill_flops
               + ar_fixed + 800 * ar_per_token)
    assert d.value("prefill_s_per_request") == pytest.approx(prefill)
    assert prefill == pytest.approx(21.79e-3, rel=1e-3)
    # (1,000 x 21.79 ms + 1,000 x 100 x (61.90 + 10.19) us) / (0.7 - (3.291 + 2.86) / 25 ms) = 63.9 -> 64
    r_cont = (rate * prefill + rate * 100 * (kv_s + ar_per_token)) / (0.7 - (w_s + fixed) / 0.025)
    assert d.value("replicas_continuous") == pytest.approx(r_cont, rel=1e-6)
    assert d.value("replicas") == math.ceil(r_cont) == 64
    assert d.value("gpus") == math.ceil(r_cont) * 8 == 512


def test_worked_problem_llama3_70b_int8_on_tpu_v5e_4x4():
    """The JAX scaling book, Part 8 ("Serving LLaMA 3-70B on TPUs", jax-ml.github.io/scaling-book/
    applied-inference): LLaMA 3-70B with int8 weights and int8 KV caches, bf16 FLOPs, 16-way model
    parallelism on a TPU v5e 4x4, 8k context. Its roofline: step = max(2 P B / (N C), P / (N W)) +
    KV / (N W), at peak, no overheads, communication overlapped; "latency can range anywhere from
    5.5ms with low batch size", and int8 weights with bf16 FLOPs make the critical batch 120."""
    p = Params(model="Llama-3-70B", gpu="TPU v5e", tp_degree=16, weight_precision="int8", kv_precision="int8",
               compute_precision="bf16", hbm_efficiency=1.0, decode_mfu=1.0, step_overhead_ms=0,
               allreduce_latency_us=0, attention_flops=False, usable_hbm_fraction=1.0,
               prompt_tokens=7936, output_tokens=512, given_batch=1, tpot_target_ms=50)
    d = solve(p)
    v5e_hbm_Bps, v5e_bf16, v5e_hbm_B, ici_Bps = 819e9, 197e12, 16e9, 200e9  # Cloud TPU v5e docs; ICI one way
    # "2 * K * H * L = 2 * 8 * 128 * 80 = 160kiB" of int8 KV per token
    assert d.value("kv_bytes_per_token") == 2 * 8 * 128 * 80 == 163_840
    # 7,936 of prompt and the book's 512-token median decode: 7,936 + 512 / 2 = 8,192 of context read
    assert d.value("decode_context_tokens") == 8192
    bw = 16 * v5e_hbm_Bps  # 13.1 TB/s
    memory = (L70 * 1 + 163_840 * 8192) / bw  # 5.384 ms of weights + 0.102 ms of KV
    compute = 2 * L70 / (16 * v5e_bf16)  # 44.8 us
    # the engine does not overlap the all-reduces: 160 x 2 x 15/16 x 8,192 x 2 B / 200 GB/s = 24.6 us
    ar = 160 * 2 * 15 / 16 * 8192 * 2 / ici_Bps
    assert d.value("decode_step_memory_s") == pytest.approx(memory)
    assert d.value("decode_step_compute_s") == pytest.approx(compute)
    assert d.value("decode_step_s") == pytest.approx(max(memory, compute) + ar)
    assert d.value("decode_step_s") == pytest.approx(5.5e-3, abs=0.1e-3)  # the book's "5.5ms"
    # B* = C / W x bytes per weight / 2 = 197e12 / 819e9 x 1 / 2 = 120 (the book: "drops to 120")
    assert d.value("critical_batch") == pytest.approx(v5e_bf16 / v5e_hbm_Bps / 2)
    assert round(d.value("critical_batch")) == 120
    # the batch fixed at 1 is the book's; the caps are still shown beside it
    assert d.value("decode_batch") == 1
    kv_seq = 163_840 * (7936 + 512)
    assert d.value("batch_memory_cap") == math.floor((16 * v5e_hbm_B - L70) / kv_seq)


def test_same_engine_arithmetic_as_the_serving_platform_page():
    shared = dict(prompt_tokens=3000, prefix_cache_hit=0.6, output_tokens=300, tpot_target_ms=40,
                  model="Llama-3-70B", gpu="H200", tp_degree=4, weight_precision="bf16",
                  hbm_efficiency=0.75, prefill_mfu=0.45, target_utilization=0.65)
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


def test_every_drill_resolves_in_a_45_and_a_60_minute_round():
    c = QUESTIONS["interview-minute-plan"].content
    for minutes in (45, 60):
        d = solve(Params(round_minutes=minutes))
        assert all(dr.key in d for dr in c.drills), minutes


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


def test_keystrokes_fill_in_the_middle_and_detection_by_hand():
    from models.serving.interview_minute_plan import Params, solve
    d = solve(Params())
    lat = d.value("completion_latency_s")
    # 5 characters a second: one every 200 ms; a ~0.77 s completion lands ~3.9 keystrokes later.
    assert d.value("keystroke_interval_s") == pytest.approx(0.2)
    assert d.value("keystrokes_during_completion") == pytest.approx(5 * lat)
    assert d.value("keystrokes_during_completion") > 1  # it cannot land before the next character
    # 20% of the prompt after the cursor: in PSM order at most 80% can stay cached, under the stated 90%.
    assert d.value("psm_hit_ceiling") == pytest.approx(0.8)
    assert d.value("psm_effective_hit") == pytest.approx(0.8)
    assert d.value("psm_hit_verdict") == "the stated hit is above it and cannot hold"
    assert solve(Params(suffix_share=0.05)).value("psm_hit_verdict").endswith("the ceiling does not bind")
    assert d.value("replicas_without_prefix_cache") > d.value("replicas_psm") > d.value("replicas")
    # The PSM fleet equals the fleet at an 80% hit.
    assert d.value("replicas_psm") == solve(Params(prefix_cache_hit=0.8)).value("replicas")
    assert solve(Params(suffix_share=0.05)).value("replicas_psm") == d.value("replicas")
    # Probes every 10 s, 3 failures: 30 s; 1,000 req/s spread over the fleet keeps arriving meanwhile.
    assert d.value("replica_loss_detect_s") == 30
    assert d.value("requests_sent_to_dead_replica") == pytest.approx(1000 / d.value("replicas") * 30)


def test_efficiency_source_says_fitted_only_at_the_engine_defaults():
    # The seed runs the engine's fitted defaults (80% MBU, 60% prefill MFU, 1.9 ms a step), so the
    # page may call them measured fits; a scenario that moves any one of them states an assumption.
    assert solve(Params()).value("efficiency_source").startswith("the engine's defaults")
    for moved in ({"hbm_efficiency": 0.7}, {"prefill_mfu": 0.4}, {"step_overhead_ms": 1.5}):
        assert solve(Params(**moved)).value("efficiency_source") == (
            "this scenario's assumptions, not the engine's fitted defaults")
