"""models.validation: rooflines recomputed by hand from catalog constants, then the three fits.

The hand derivations below use only catalog numbers and arithmetic written out in the test, with
the engine's conventions (parameters counted from the shape, 2 all-reduces a layer at a latency of
6 us plus the ring's bytes over the link), so a slip in the engine (models/engine/) or in the
validation wrapper shows up here.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from models.catalog import GPUS, MODELS  # noqa: E402
from models.validation import (  # noqa: E402
    ENGINE_DEFAULTS,
    FIT_TOLERANCE,
    FT_A100_13B_PROFILE,
    MEGATRON_GEMM_BELOW_FLOPs,
    MEGATRON_GEMM_SHAPE,
    METRICS,
    SETUP_BY_KEY,
    SETUPS,
    Knobs,
    app_default_knobs,
    best_single_efficiency_error,
    breakdown,
    evaluate,
    fit_per_gpu,
    fit_per_model,
    fit_profiled,
    predict_s,
    profiled_prefill,
    roofline_s,
    smallest_consistent_tp,
    validation_rows,
)

A100, H200 = GPUS["A100 40GB"], GPUS["H200"]
M13, M70, M8 = MODELS["GPT-13B"], MODELS["Llama-3-70B"], MODELS["Llama-3-8B"]
TP2_PREFILL = ("13b-a100-tp2", "prefill")  # the one measurement the flat formula cannot reach; see below

# Parameters counted from the shapes, matrix by matrix, as the engine counts them.
# GPT-13B: tied 50,257 x 5,120 embedding + 40 x (4 x 5,120^2 attention + 2 x 5,120 x 20,480 plain MLP)
P13 = 50_257 * 5120 + 40 * (4 * 5120**2 + 2 * 5120 * 20_480)  # 12.84e9 (the paper rounds to 13B)
# Llama 3 70B: 2 x 128,256 x 8,192 + 80 x (2 x 8,192^2 q/o + 2 x 8,192 x 1,024 k/v + 3 x 8,192 x 28,672)
P70 = 2 * 128_256 * 8192 + 80 * (2 * 8192**2 + 2 * 8192 * 1024 + 3 * 8192 * 28_672)  # 70.55e9
# Llama 3 8B: 2 x 128,256 x 4,096 + 32 x (2 x 4,096^2 + 2 x 4,096 x 1,024 + 3 x 4,096 x 14,336)
P8 = 2 * 128_256 * 4096 + 32 * (2 * 4096**2 + 2 * 4096 * 1024 + 3 * 4096 * 14_336)  # 8.03e9
AR_LATENCY_S = 6e-6  # the engine's all-reduce latency


def _fit(results, group):
    return next(f for f in results if f.group == group)


def _allreduces(layers, tp, tokens, d_model, link_Bps, latency_s=AR_LATENCY_S):
    """2 per layer, each a latency plus 2 (tp - 1) / tp of tokens x d_model x 2 B over one link."""
    if tp == 1:
        return 0.0
    return 2 * layers * (latency_s + 2 * (tp - 1) / tp * tokens * d_model * 2 / link_Bps)


# ------------------------------------------------------------------------------ the data


def test_measurements_are_the_published_figures():
    s = {k: (v.decode_ms, v.prefill_ms, v.tp) for k, v in SETUP_BY_KEY.items()}
    assert s == {
        "13b-a100-tp1": (22.0, 63.17, 1),
        "13b-a100-tp2": (13.5, 45.45, 2),
        "70b-h200-tp8": (7.56, 160.6, 8),
        "8b-h200-tp8": (2.85, 46.2, 8),
    }
    assert (M13.layers, M13.d_model) == (40, 5120)
    for setup in SETUPS:
        assert setup.source.strip()
    assert SETUP_BY_KEY["13b-a100-tp1"].source == "kipply, Transformer Inference Arithmetic (2022); llm-analysis examples"
    assert SETUP_BY_KEY["70b-h200-tp8"].source == "a public vLLM benchmark report"


# ------------------------------------------------------------------- rooflines by hand


def test_parameter_counts_are_the_engines():
    assert P13 == 12_840_227_840 and P70 == 70_552_387_584 and P8 == 8_029_995_008
    assert P13 == pytest.approx(M13.total_params, rel=0.013)  # the paper's 13B, rounded
    assert P70 == pytest.approx(M70.total_params, rel=0.001) and P8 == pytest.approx(M8.total_params, rel=0.001)


def test_13b_decode_roofline_on_one_a100_by_hand():
    weights_B = P13 * 2  # fp16
    assert weights_B == pytest.approx(25.68e9, rel=1e-3)
    # Plus the KV cache of the average decode context, 512 prompt + 10 output / 2 = 517 tokens:
    # 2 (K, V) x 40 layers x 40 heads x 128 x 2 B = 819,200 B per token.
    kv_per_token_B = 2 * 40 * 40 * 128 * 2
    assert kv_per_token_B == 819_200
    kv_B = kv_per_token_B * (512 + 10 / 2)  # 423.5 MB
    hand_s = (weights_B + kv_B) / (1.555e12)  # 26.10 GB / 1.555 TB/s = 16.79 ms
    assert hand_s == pytest.approx(16.787e-3, rel=1e-4)
    assert roofline_s(SETUP_BY_KEY["13b-a100-tp1"], "decode") == pytest.approx(hand_s, rel=1e-12)
    # TP 2 halves every byte each GPU reads, and adds 80 all-reduces of one token's 10 kB; the
    # roofline keeps their bytes over NVLink's 300 GB/s (no latency): 80 x 10,240 B / 300e9 = 2.7 us.
    wire_s = _allreduces(40, 2, 1, 5120, 300e9, latency_s=0)
    assert wire_s == pytest.approx(2.73e-6, rel=1e-3)
    assert roofline_s(SETUP_BY_KEY["13b-a100-tp2"], "decode") == pytest.approx(hand_s / 2 + wire_s, rel=1e-12)


def test_13b_prefill_roofline_by_hand():
    # 512 tokens x 2 x P13, plus causal attention: 2 FLOP x 40 layers x 40 heads x (128 + 128) per
    # earlier position, over 512 x 511 / 2 pairs.
    attention_per_position = 2 * 40 * 40 * 256
    flops = 512 * 2 * P13 + attention_per_position * 512 * 511 / 2  # 1.3256e13 FLOP
    assert flops == pytest.approx(1.3256e13, rel=1e-4)
    hand_s = flops / 312e12  # 42.49 ms on one A100
    assert roofline_s(SETUP_BY_KEY["13b-a100-tp1"], "prefill") == pytest.approx(hand_s, rel=1e-12)
    # TP 2: half the FLOP each, plus 80 all-reduces of 512 x 5,120 x 2 B over 300 GB/s (1.40 ms).
    wire_s = _allreduces(40, 2, 512, 5120, 300e9, latency_s=0)
    assert wire_s == pytest.approx(1.398e-3, rel=1e-3)
    assert roofline_s(SETUP_BY_KEY["13b-a100-tp2"], "prefill") == pytest.approx(hand_s / 2 + wire_s, rel=1e-12)


def test_70b_tpot_roofline_on_8_h200_by_hand():
    weights_B = P70 * 2 / 8  # 17.64 GB per GPU
    kv_B = 2 * 80 * 8 * 128 * 2 * (4096 + 512 / 2) / 8  # 327,680 B/token x 4,352 tokens / 8 = 178.3 MB
    memory_s = (weights_B + kv_B) / (H200.hbm_TBps * 1e12)  # 17.82 GB / 4.8 TB/s = 3.712 ms
    assert memory_s == pytest.approx(3.7117e-3, rel=1e-4)
    # 160 all-reduces of 8,192 x 2 B, 2 x 7/8 of it over 450 GB/s: 10 us in all without latency
    wire_s = _allreduces(80, 8, 1, 8192, 450e9, latency_s=0)
    assert wire_s == pytest.approx(10.19e-6, rel=1e-3)
    assert roofline_s(SETUP_BY_KEY["70b-h200-tp8"], "decode") == pytest.approx(memory_s + wire_s, rel=1e-12)


def test_70b_ttft_roofline_on_8_h200_by_hand():
    flops = 4096 * 2 * P70 + 2 * 80 * 64 * 256 * 4096 * 4095 / 2
    compute_s = flops / (8 * 989e12)  # 75.83 ms
    assert compute_s == pytest.approx(75.83e-3, rel=1e-3)
    # 160 all-reduces of 4,096 x 8,192 x 2 B = 67 MB, 2 x 7/8 of each over 450 GB/s: 41.8 ms
    wire_s = _allreduces(80, 8, 4096, 8192, 450e9, latency_s=0)
    assert wire_s == pytest.approx(41.76e-3, rel=1e-3)
    assert roofline_s(SETUP_BY_KEY["70b-h200-tp8"], "prefill") == pytest.approx(compute_s + wire_s, rel=1e-12)


def test_roofline_is_a_floor_for_every_measurement():
    for s in SETUPS:
        for m in METRICS:
            assert roofline_s(s, m) < s.measured_s(m), (s.key, m)


def test_predictions_are_the_serving_engines_numbers():
    """The validation checks the formulas the pages use: a serving page's own knobs, set to the
    70B run, give the same TPOT and TTFT as the validation's prediction at the engine's defaults."""
    from models.engine.serving_knobs import ServingKnobs, served as engine_served

    s = SETUP_BY_KEY["70b-h200-tp8"]
    page = engine_served(ServingKnobs(
        model="Llama-3-70B", gpu="H200", tp_degree=8, prompt_tokens=4096, output_tokens=512, prefix_cache_hit=0,
        given_batch=1, tpot_target_ms=1000))
    assert predict_s(s, "decode", ENGINE_DEFAULTS) == pytest.approx(page.decode_step_s, rel=1e-12)
    assert predict_s(s, "prefill", ENGINE_DEFAULTS) == pytest.approx(page.prefill_s_per_request, rel=1e-12)
    # By hand: bytes side / MBU + 160 x (latency + ring bytes) + the fixed cost per step.
    memory_s = (P70 * 2 + 327_680 * 4352) / (8 * 4.8e12)
    k = ENGINE_DEFAULTS
    hand = memory_s / k.hbm_efficiency + _allreduces(80, 8, 1, 8192, 450e9, k.allreduce_latency_s) + k.step_overhead_s
    assert predict_s(s, "decode", k) == pytest.approx(hand, rel=1e-12)
    # Batch 1: the compute side of a decode step is under 1% of the bandwidth side.
    b = breakdown(s)
    assert b.decode_compute_s < 0.01 * b.decode_memory_s


def test_prediction_scales_as_one_over_efficiency():
    s = SETUP_BY_KEY["13b-a100-tp1"]  # one GPU: no all-reduce, so nothing but the kernels
    for m in METRICS:
        assert predict_s(s, m, Knobs(0.5, 0.5)) == pytest.approx(2 * roofline_s(s, m), rel=1e-12)


def test_fixed_cost_and_allreduce_latency_add_to_a_tp_decode_step():
    s = SETUP_BY_KEY["8b-h200-tp8"]
    base = predict_s(s, "decode", Knobs(0.8, 0.6))
    with_costs = predict_s(s, "decode", Knobs(0.8, 0.6, step_overhead_s=2e-3, allreduce_latency_s=10e-6))
    assert with_costs - base == pytest.approx(2e-3 + 64 * 10e-6, rel=1e-9)  # 32 layers x 2 all-reduces


def test_measurements_rule_out_small_tp_layouts():
    # 8B on one H200: (16.06 GB + 0.57 GB of KV) / 4.8 TB/s = 3.46 ms > 2.85 ms measured.
    assert smallest_consistent_tp(SETUP_BY_KEY["8b-h200-tp8"]) == 2
    # 70B at TP 2: 71.3 GB per GPU = 14.9 ms > 7.56 ms; at TP 4 the floor is 7.43 ms.
    assert smallest_consistent_tp(SETUP_BY_KEY["70b-h200-tp8"]) == 4


def test_llm_analysis_worked_problem_on_one_a100():
    """llm-analysis, examples/fastertransformer/README.md (github.com/cli99/llm-analysis): kipply's
    13B (test-13b.json: 40 layers, 40 heads, d 5,120, MLP 20,480) on one A100 40GB, fp16, batch 1,
    a 512-token prompt and 10 generated tokens. With ideal efficiency it predicts 17.07 ms a decode
    step and 43.7 ms of prefill; with its profiled flops_efficiency 0.7 and hbm_memory_efficiency
    0.9, 18.97 ms and 62.15 ms. Entered here with the same inputs (no fixed cost, one GPU so no
    all-reduce); the two models differ in details (the 13B's vocabulary, what a step reads beside
    weights and KV), so they agree to 3%, not exactly."""
    s = SETUP_BY_KEY["13b-a100-tp1"]
    assert (s.prompt_tokens, s.output_tokens, s.tp, s.gpu) == (512, 10, 1, "A100 40GB")
    decode_ideal = (P13 * 2 + 819_200 * 517) / 1.555e12
    prefill_ideal = (512 * 2 * P13 + 819_200 * 512 * 511 / 2) / 312e12
    profiled = Knobs(hbm_efficiency=0.9, prefill_mfu=0.7)
    assert predict_s(s, "decode", profiled) == pytest.approx(decode_ideal / 0.9, rel=1e-12)
    assert predict_s(s, "prefill", profiled) == pytest.approx(prefill_ideal / 0.7, rel=1e-12)
    for ours, theirs in ((roofline_s(s, "decode"), 17.07e-3), (roofline_s(s, "prefill"), 43.7e-3),
                         (predict_s(s, "decode", profiled), 18.97e-3), (predict_s(s, "prefill", profiled), 62.15e-3)):
        assert ours == pytest.approx(theirs, rel=0.03)


# --------------------------------------------------------------------- fit (a): per model


def test_fit_a_efficiencies_are_between_0_and_1():
    for f in fit_per_model():
        for m in METRICS:
            assert 0 < f.fit(m).efficiency <= 1, (f.group, m, f.fit(m).efficiency)
        # held, not fitted: the engine's fixed cost per decode step, nothing per request
        assert f.decode.overhead_s == ENGINE_DEFAULTS.step_overhead_s and f.prefill.overhead_s == 0


def test_fit_a_errors_under_15_percent_except_the_13b_tp2_prefill():
    rows = [r for f in fit_per_model() for r in f.rows]
    assert len(rows) == 8
    for r in rows:
        print(f"{r.setup.key:14s} {r.metric:8s} measured {r.measured_s * 1e3:7.2f} ms  "
              f"fitted {r.predicted_s * 1e3:7.2f} ms  error {r.error:+.1%}")
        if (r.setup.key, r.metric) != TP2_PREFILL:
            assert abs(r.error) < FIT_TOLERANCE, (r.setup.key, r.metric, r.error)


def test_the_13b_tp2_prefill_is_beyond_any_single_efficiency():
    """One GPU ran the prefill at 67% of peak, two at 48% (the all-reduces' bytes taken out): one
    efficiency cannot serve both, even with the engine's all-reduces charged.

    Each error is (x / eff + a) / y - 1; equal and opposite misses put 1 / eff at
    (2 - a1 / y1 - a2 / y2) / (x1 / y1 + x2 / y2): +-15.6%, beyond the 15% target. Least squares on
    relative error lands at +12.4% / -17.8%. This is a limit of the formula (no term for what
    narrower GEMMs cost a prefill), not of the fit.
    """
    tp1, tp2 = SETUP_BY_KEY["13b-a100-tp1"], SETUP_BY_KEY["13b-a100-tp2"]
    x1 = (512 * 2 * P13 + 819_200 * 512 * 511 / 2) / 312e12
    x2 = x1 / 2
    a2 = _allreduces(40, 2, 512, 5120, 300e9)  # 1.40 ms of bytes + 80 x 6 us
    y1, y2 = 63.17e-3, 45.45e-3
    u = (2 - a2 / y2) / (x1 / y1 + x2 / y2)
    bound = x1 / y1 * u - 1
    assert bound == pytest.approx(-((x2 * u + a2) / y2 - 1), rel=1e-12)
    assert best_single_efficiency_error((tp1, tp2), "prefill") == pytest.approx(bound, rel=1e-9)
    assert bound == pytest.approx(0.156, abs=0.001)
    assert bound > FIT_TOLERANCE
    f13 = _fit(fit_per_model(), "GPT-13B")
    errors = {(r.setup.key, r.metric): r.error for r in f13.rows}
    assert errors[("13b-a100-tp1", "prefill")] == pytest.approx(0.124, abs=0.001)
    assert errors[TP2_PREFILL] == pytest.approx(-0.178, abs=0.001)


def test_fit_a_13b_values_and_least_squares_optimum():
    f13 = _fit(fit_per_model(), "GPT-13B")
    assert not f13.decode.exact and not f13.prefill.exact
    # By hand: t = y - all-reduces - 1.9 ms (the engine's fixed cost, held),
    # k = sum(x t / y^2) / sum(x^2 / y^2), MBU = 1 / k.
    x1 = (P13 * 2 + 819_200 * 517) / 1.555e12
    x2 = x1 / 2
    t1 = 22e-3 - 1.9e-3
    t2 = 13.5e-3 - 1.9e-3 - _allreduces(40, 2, 1, 5120, 300e9)
    k = (x1 * t1 / 22e-3**2 + x2 * t2 / 13.5e-3**2) / (x1**2 / 22e-3**2 + x2**2 / 13.5e-3**2)
    assert f13.decode.efficiency == pytest.approx(1 / k, rel=1e-9)
    assert f13.decode.efficiency == pytest.approx(0.801, abs=0.001)
    assert f13.prefill.efficiency == pytest.approx(0.599, abs=0.001)
    errors = {(r.setup.key, r.metric): r.error for r in f13.rows}
    # predicted (x / MBU + a + 1.9 ms) / measured - 1
    assert errors[("13b-a100-tp1", "decode")] == pytest.approx((x1 / 0.80123 + 1.9e-3) / 22e-3 - 1, abs=1e-4)  # +3.9%
    assert errors[("13b-a100-tp2", "decode")] == pytest.approx(
        (x2 / 0.80123 + _allreduces(40, 2, 1, 5120, 300e9) + 1.9e-3) / 13.5e-3 - 1, abs=1e-4)  # -4.8%

    # Least squares on relative error: nudging the efficiency either way makes the sum worse.
    def sse(eff: float) -> float:
        k13 = Knobs(eff, 1.0, ENGINE_DEFAULTS.step_overhead_s, 0.0, 6e-6)
        rows = evaluate({"GPT-13B": k13, "Llama-3-70B": Knobs(), "Llama-3-8B": Knobs()})
        return sum(r.error**2 for r in rows if r.setup.model == "GPT-13B" and r.metric == "decode")

    best = sse(f13.decode.efficiency)
    assert best < sse(f13.decode.efficiency * 1.01) and best < sse(f13.decode.efficiency * 0.99)


def test_fit_a_is_exact_and_uninformative_for_one_setup_models():
    for group in ("Llama-3-70B", "Llama-3-8B"):
        f = _fit(fit_per_model(), group)
        assert f.decode.exact and f.prefill.exact
        assert f.max_abs_error < 1e-12
    # What they do show: with the all-reduces and the engine's 1.9 ms fixed cost paid, the 8B and
    # the 70B on the same node imply nearly the same MBU, x / (y - a - 1.9 ms), and so does the
    # 13B on A100 (80%): the fixed cost, not the bandwidth, is what a small model's step exposes.
    f70, f8 = _fit(fit_per_model(), "Llama-3-70B"), _fit(fit_per_model(), "Llama-3-8B")
    x70 = (P70 * 2 + 327_680 * 4352) / 38.4e12
    x8 = (P8 * 2 + 131_072 * 4352) / 38.4e12
    assert f70.decode.efficiency == pytest.approx(
        x70 / (7.56e-3 - _allreduces(80, 8, 1, 8192, 450e9) - 1.9e-3), rel=1e-9)  # 79%
    assert f8.decode.efficiency == pytest.approx(
        x8 / (2.85e-3 - _allreduces(32, 8, 1, 4096, 450e9) - 1.9e-3), rel=1e-9)  # 77%
    assert f70.decode.efficiency == pytest.approx(0.791, abs=0.001)
    assert f8.decode.efficiency == pytest.approx(0.768, abs=0.001)


def test_fitted_knobs_reproduce_the_rows():
    for f in fit_per_model() + fit_per_gpu():
        for r in f.rows:
            assert predict_s(r.setup, r.metric, f.knobs) == pytest.approx(r.predicted_s, rel=1e-12)


# ------------------------------------------------------------------- fit (b): per GPU


def test_fit_b_h200_solves_exactly_and_is_physical():
    """The provenance of the engine's default MBU and fixed cost per step. By hand, the all-reduces
    at 6 us each taken out first (160 for the 70B, 64 for the 8B):
    7.56 ms - 0.970 ms = 3.7117 ms x k + c and 2.85 ms - 0.386 ms = 0.43308 ms x k + c."""
    h = _fit(fit_per_gpu(), "H200")
    assert h.decode.exact and h.prefill.exact
    x70 = (P70 * 2 + 327_680 * 4352) / 38.4e12
    x8 = (P8 * 2 + 131_072 * 4352) / 38.4e12
    a70, a8 = _allreduces(80, 8, 1, 8192, 450e9), _allreduces(32, 8, 1, 4096, 450e9)
    assert (a70, a8) == pytest.approx((0.9702e-3, 0.3860e-3), rel=2e-4)
    k = ((7.56e-3 - a70) - (2.85e-3 - a8)) / (x70 - x8)
    c = 2.85e-3 - a8 - k * x8
    assert h.decode.efficiency == pytest.approx(1 / k, rel=1e-9)
    assert h.decode.overhead_s == pytest.approx(c, rel=1e-9)
    assert h.decode.efficiency == pytest.approx(0.795, abs=0.001)
    assert h.decode.overhead_s == pytest.approx(1.92e-3, abs=0.01e-3)
    assert h.prefill.efficiency == pytest.approx(0.833, abs=0.001)
    assert h.prefill.overhead_s == pytest.approx(26.8e-3, abs=0.1e-3)
    assert h.physical
    assert h.max_abs_error < 1e-12


def test_fit_b_a100_prefill_is_unphysical():
    a = _fit(fit_per_gpu(), "A100 40GB")
    assert a.decode.physical and a.decode.efficiency == pytest.approx(0.934, abs=0.001)  # above the 90% profiled
    assert a.decode.overhead_s == pytest.approx(4.03e-3, abs=0.01e-3)
    assert not a.prefill.physical and a.prefill.efficiency > 1  # 108%: faster than the datasheet
    assert not a.physical


def test_engine_defaults_against_the_measurements():
    """What a serving page predicts for these runs: the 70B's TPOT by hand at the engine's defaults."""
    k = ENGINE_DEFAULTS
    rows = {(r.setup.key, r.metric): r for r in evaluate({m: k for m in {s.model for s in SETUPS}})}
    x70 = (P70 * 2 + 327_680 * 4352) / 38.4e12
    hand = x70 / k.hbm_efficiency + _allreduces(80, 8, 1, 8192, 450e9, k.allreduce_latency_s) + k.step_overhead_s
    assert rows[("70b-h200-tp8", "decode")].predicted_s == pytest.approx(hand, rel=1e-12)
    for r in rows.values():
        print(f"{r.setup.key:14s} {r.metric:8s} measured {r.measured_s * 1e3:7.2f} ms  "
              f"defaults {r.predicted_s * 1e3:7.2f} ms  error {r.error:+.1%}")


# ------------------------------------------------------------------------------- misc


def test_deterministic():
    assert fit_per_model() == fit_per_model()
    assert fit_per_gpu() == fit_per_gpu()


def test_app_default_knobs_are_the_engines():
    from models.engine.knobs import EngineKnobs

    k, e = app_default_knobs(), EngineKnobs.model_fields
    assert k.hbm_efficiency == e["hbm_efficiency"].default and k.prefill_mfu == e["prefill_mfu"].default
    assert k.decode_mfu == e["decode_mfu"].default
    assert k.step_overhead_s == e["step_overhead_ms"].default / 1000
    assert k.allreduce_latency_s == e["allreduce_latency_us"].default / 1e6
    assert k.prefill_overhead_s == 0  # the engine has no fixed cost per request


def test_overhead_larger_than_a_measurement_is_refused():
    with pytest.raises(ValueError):
        fit_per_model(decode_overhead_s=1.0)


def test_nothing_is_nan():
    for f in fit_per_model() + fit_per_gpu():
        for r in f.rows:
            assert math.isfinite(r.predicted_s) and math.isfinite(r.error)


def test_the_sources_own_tp2_prefill_prediction_misses_by_more():
    """llm-analysis, with an all-reduce term and profiled efficiencies, predicts 32.98 ms for the
    45.45 ms TP-2 prefill: (32.98 - 45.45) / 45.45 = -27.4%, the figure its README prints. The
    fit here misses by less (-17.8%), so a communication term alone is not what is missing."""
    from models.validation import LLM_ANALYSIS_TP2_PREFILL_MS

    tp2 = SETUP_BY_KEY["13b-a100-tp2"]
    assert (LLM_ANALYSIS_TP2_PREFILL_MS - tp2.prefill_ms) / tp2.prefill_ms == pytest.approx(-0.274, abs=0.0005)
    f13 = _fit(fit_per_model(), "GPT-13B")
    ours = next(r.error for r in f13.rows if (r.setup.key, r.metric) == TP2_PREFILL)
    assert abs(ours) < abs((LLM_ANALYSIS_TP2_PREFILL_MS - tp2.prefill_ms) / tp2.prefill_ms)


# ------------------------------------------------- fit (c): prefill by GEMM size (the 13B)


def test_profile_efficiencies_are_the_sources_kernel_timings():
    """kipply: the MLP multiply should take 512x4x5120^2x2/312e12 = 344 us and took 476 at best; the
    attention projection 512x5120^2x2/312e12 = 86 us and took 159."""
    mlp_flop, proj_flop = 512 * 4 * 5120**2 * 2, 512 * 5120**2 * 2
    assert mlp_flop / 312e12 == pytest.approx(344e-6, abs=0.5e-6)
    assert proj_flop / 312e12 == pytest.approx(86e-6, abs=0.5e-6)
    p = FT_A100_13B_PROFILE
    assert p.measured_efficiency(p.large) == pytest.approx(mlp_flop / 312e12 / 476e-6, rel=1e-12)  # 72.3%
    assert p.measured_efficiency(p.small) == pytest.approx(proj_flop / 312e12 / 159e-6, rel=1e-12)  # 54.1%
    # The line passes through both anchors and holds flat above the larger one.
    assert p.efficiency(proj_flop) == pytest.approx(0.5411, abs=1e-4)
    assert p.efficiency(mlp_flop) == pytest.approx(0.7230, abs=1e-4)  # 344.1 / 476
    assert p.efficiency(4 * mlp_flop) == p.efficiency(mlp_flop)


def test_profile_line_agrees_with_the_megatron_gemm_the_source_cites():
    """The same paragraph cites a 512 x 4,000 x 4,000 GEMM at under 150 TFLOP/s on an A100. The line,
    drawn only through kipply's two kernels, lands just under it (1.6x below the smaller kernel)."""
    m, k, n = MEGATRON_GEMM_SHAPE
    flop = 2 * m * k * n
    achieved = FT_A100_13B_PROFILE.efficiency(flop) * 312e12
    # By hand: 0.5411 + (0.7230 - 0.5411) * log(16.384 / 26.844) / log(4) = 0.4764 -> 148.6 TFLOP/s
    e_lo, e_hi = 512 * 5120**2 * 2 / 312e12 / 159e-6, 512 * 4 * 5120**2 * 2 / 312e12 / 476e-6
    by_hand = e_lo + (e_hi - e_lo) * math.log(flop / (512 * 5120**2 * 2)) / math.log(4)
    assert achieved == pytest.approx(by_hand * 312e12, rel=1e-12)
    assert achieved < MEGATRON_GEMM_BELOW_FLOPs
    assert achieved == pytest.approx(148.6e12, abs=0.1e12)


def test_profile_refuses_gemms_far_below_anything_timed():
    with pytest.raises(ValueError, match="below the smallest profiled kernel"):
        FT_A100_13B_PROFILE.efficiency(512 * 5120**2 * 2 / 5)


def test_profiled_prefill_of_the_13b_on_two_gpus_by_hand():
    """Per GPU under TP 2 (d 5,120, MLP 20,480, 512 tokens, 40 layers): QKV 5,120 x 7,680, output
    2,560 x 5,120, MLP 5,120 x 10,240 and 10,240 x 5,120; each at the line's efficiency for its
    FLOP. All-reduces: 2 per layer of 512 x 5,120 x 2 B, a ring over 2 GPUs moves the whole buffer
    each way: 80 x 5.24 MB = 419 MB at 300 GB/s = 1.40 ms (llm-analysis's 1.4 ms), plus the
    engine's 6 us latency on each of the 80: 1.88 ms."""
    e_lo, e_hi = 512 * 5120**2 * 2 / 312e12 / 159e-6, 512 * 4 * 5120**2 * 2 / 312e12 / 476e-6

    def eff(flop):
        return e_lo + (e_hi - e_lo) * math.log(flop / (512 * 5120**2 * 2)) / math.log(4)

    shards = [(5120, 7680), (2560, 5120), (5120, 10240), (10240, 5120)]
    gemm_s = sum(40 * 2 * 512 * k * n / (312e12 * eff(2 * 512 * k * n)) for k, n in shards)
    attention_s = 2 * 40 * 40 * 256 * 512 * 511 / 2 / (2 * 312e12)  # every token against each earlier one
    allreduce_bytes = 2 * 40 * 512 * 5120 * 2 * (2 * 1 / 2)
    p = profiled_prefill(SETUP_BY_KEY["13b-a100-tp2"])
    assert p.gemm_s == pytest.approx(gemm_s, rel=1e-12)
    assert p.attention_s == pytest.approx(attention_s, rel=1e-12)
    assert p.allreduce_bytes == pytest.approx(allreduce_bytes, rel=1e-12)
    assert p.allreduce_wire_s == pytest.approx(allreduce_bytes / 300e9, rel=1e-12)
    assert p.allreduce_wire_s == pytest.approx(1.4e-3, abs=0.01e-3)
    assert p.allreduce_s == pytest.approx(allreduce_bytes / 300e9 + 80 * 6e-6, rel=1e-12)
    assert [round(g.efficiency, 3) for g in p.gemms] == [round(eff(2 * 512 * k * n), 3) for k, n in shards]
    # One GPU: the GEMMs of the profile's own sizes, no all-reduce.
    p1 = profiled_prefill(SETUP_BY_KEY["13b-a100-tp1"])
    assert p1.allreduce_s == 0
    assert [g.efficiency for g in p1.gemms][1:] == pytest.approx([e_lo, e_hi, e_hi], rel=1e-12)


def test_halving_the_gemms_is_most_of_the_tp2_gap():
    """The flat formula predicts a 1.88x speed-up from the second GPU (2x on the FLOP, less the
    all-reduces' 1.40 ms); GEMM size (no fitting yet) predicts 1.65x against the 1.39x measured."""
    p1, p2 = (profiled_prefill(SETUP_BY_KEY[k]) for k in ("13b-a100-tp1", "13b-a100-tp2"))
    r1, r2 = (roofline_s(SETUP_BY_KEY[k], "prefill") for k in ("13b-a100-tp1", "13b-a100-tp2"))
    x1 = (512 * 2 * P13 + 819_200 * 512 * 511 / 2) / 312e12
    assert r1 / r2 == pytest.approx(x1 / (x1 / 2 + _allreduces(40, 2, 512, 5120, 300e9, latency_s=0)), rel=1e-12)
    assert r1 / r2 == pytest.approx(1.877, abs=0.001)
    assert p1.total_s / p2.total_s == pytest.approx(1.647, abs=0.001)
    assert 63.17 / 45.45 == pytest.approx(1.390, abs=0.001)


def test_every_fitted_error_under_15_percent():
    """The issue's criterion, on the validation's model: decode by fit (a), prefill by fit (c) where
    the source published a kernel profile (the 13B) and by fit (a) elsewhere."""
    rows = validation_rows()
    assert len(rows) == 8 and {(r.setup.key, r.metric) for r in rows} == {
        (s.key, m) for s in SETUPS for m in METRICS}
    for r in rows:
        assert abs(r.error) < FIT_TOLERANCE, (r.setup.key, r.metric, r.error)
    errors = {(r.setup.key, r.metric): r.error for r in rows}
    assert errors[TP2_PREFILL] == pytest.approx(-0.0435, abs=0.001)
    assert errors[("13b-a100-tp1", "prefill")] == pytest.approx(0.060, abs=0.001)


def test_readme_accuracy_table_quotes_the_model():
    """The README's Accuracy section is prose, so this keeps its figures from drifting off the model."""
    text = (ROOT / "README.md").read_text()

    def pct(x):
        return f"{x * 100:+.1f}%".replace("+-", "-")

    f13 = _fit(fit_per_model(), "GPT-13B")
    errors = {(r.setup.key, r.metric): r.error for r in f13.rows}
    (fc,) = fit_profiled()
    worst = max((r.error for r in validation_rows()), key=abs)
    quoted = [
        f"13B decode {pct(errors[('13b-a100-tp1', 'decode')])} / {pct(errors[('13b-a100-tp2', 'decode')])}",
        f"13B prefill {pct(errors[('13b-a100-tp1', 'prefill')])} / **{pct(errors[TP2_PREFILL])}**",
        f"({fc.fixed_s * 1e3:.2f} ms)",
        f"13B prefill {pct(fc.rows[0].error)} / {pct(fc.rows[1].error)}",
        f"(worst {pct(worst)})",
        f"{FT_A100_13B_PROFILE.measured_efficiency(FT_A100_13B_PROFILE.large) * 100:.1f}% and "
        f"{FT_A100_13B_PROFILE.measured_efficiency(FT_A100_13B_PROFILE.small) * 100:.1f}% anchors",
    ]
    for q in quoted:
        assert q in text, q


# ------------------------------------------------------------- the engine's defaults are the fits


def test_the_engine_defaults_are_the_fits_rounded_to_the_knob_steps():
    """models/engine/defaults.py says where each default comes from; this holds it to that."""
    from models.engine import defaults

    (h200,) = [f for f in fit_per_gpu() if f.group == "H200"]
    f13 = _fit(fit_per_model(), "GPT-13B")
    # 80%: H200's fit (b) is 79.5%, the 13B's fit (a) at the held 1.9 ms is 80.1%; the knob steps by 1%
    assert abs(defaults.DEFAULT_HBM_EFFICIENCY - h200.decode.efficiency) <= 0.01
    assert abs(defaults.DEFAULT_HBM_EFFICIENCY - f13.decode.efficiency) <= 0.01
    # 1.9 ms: H200's fitted fixed cost per step, 1.92 ms, to the knob's 0.1 ms step
    assert defaults.DEFAULT_STEP_OVERHEAD_MS == round(h200.decode.overhead_s * 1e3, 1)
    # 60%: the 13B's prefill fit (two setups, a real residual), to the knob's 1% step
    assert defaults.DEFAULT_PREFILL_MFU == round(f13.prefill.efficiency, 2)
    assert ENGINE_DEFAULTS.hbm_efficiency == defaults.DEFAULT_HBM_EFFICIENCY
    assert ENGINE_DEFAULTS.step_overhead_s == pytest.approx(defaults.DEFAULT_STEP_OVERHEAD_MS / 1e3)


def test_the_fitted_defaults_miss_less_than_the_former_ones():
    former = Knobs(0.7, 0.5, 1e-3, 0.0, 6e-6)
    at = lambda k: evaluate({s.model: k for s in SETUPS})  # noqa: E731
    now_rows, former_rows = at(ENGINE_DEFAULTS), at(former)
    mean = lambda rows: sum(abs(r.error) for r in rows) / len(rows)  # noqa: E731
    assert mean(now_rows) < mean(former_rows)
    assert all(abs(r.error) <= 0.05 for r in now_rows if r.metric == "decode")
    assert max(abs(r.error) for r in former_rows if r.metric == "decode") > 0.25  # the 8B's decode was -30%


# ------------------------------------------------ the page's steps (models.validation_steps)


def _steps():
    from models.validation_steps import accuracy_steps
    return accuracy_steps()


def test_accuracy_steps_key_figures_by_hand():
    """A few of the page's figures re-derived from the measurements with arithmetic written out here."""
    d = _steps()
    v = d.value
    assert v("h200_70b_decode_measured_s") == pytest.approx(7.56e-3)
    assert v("a100_13b_tp2_prefill_measured_s") == pytest.approx(45.45e-3)
    assert d["h200_70b_decode_measured_s"].kind == "lookup" and "vLLM" in d["h200_70b_decode_measured_s"].note
    # 13B on one A100 at 100%: (2 x P13 weight bytes + 517 tokens x 40 layers x 2 (K, V) x 5,120 x 2 B) / 1.555 TB/s
    kv_read = (512 + 10 / 2) * 40 * 2 * 5120 * 2
    assert v("a100_13b_tp1_decode_kernel_s") == pytest.approx((2 * P13 + kv_read) / A100.hbm_Bps, rel=1e-9)
    # Fit (a)'s 13B TP-2 decode: kernel / MBU + 80 all-reduces at 6 us plus the ring's bytes + 1.9 ms
    ar = _allreduces(40, 2, 1, 5120, A100.nvlink_GBps_per_direction * 1e9)
    kernel2 = v("a100_13b_tp2_decode_kernel_s")
    pred = kernel2 / v("gpt13b_fit_a_mbu") + ar + 1.9e-3
    assert v("a100_13b_tp2_decode_fit_a_s") == pytest.approx(pred, rel=1e-9)
    assert v("a100_13b_tp2_decode_fit_a_error") == pytest.approx(pred / 13.5e-3 - 1, rel=1e-9)
    # the measured TP speed-up of the 13B prefill, and llm-analysis's miss on the TP-2 prefill
    assert v("a100_13b_prefill_speedup") == pytest.approx(63.17 / 45.45)
    assert v("llm_analysis_tp2_prefill_error") == pytest.approx(32.98 / 45.45 - 1)
    # fit (b) on H200: fixed cost and all-reduces as a share of the 8B's 2.85 ms step
    ar8 = _allreduces(32, 8, 1, 4096, H200.nvlink_GBps_per_direction * 1e9)
    assert v("h200_8b_decode_allreduce_s") == pytest.approx(ar8, rel=1e-9)
    assert v("h200_8b_fixed_share") == pytest.approx((v("h200_fit_b_step_cost_s") + ar8) / 2.85e-3, rel=1e-9)
    # profile efficiencies: 2 x 512 x 5,120 x 20,480 FLOP in 476 us against 312 TFLOP/s
    assert v("profile_mlp_efficiency") == pytest.approx(2 * 512 * 5120 * 20_480 / (312e12 * 476e-6), rel=1e-9)
    # the validation's worst error and where: fit (c)'s 13B one-GPU prefill
    worst = max(validation_rows(), key=lambda r: abs(r.error))
    assert v("validation_max_error") == pytest.approx(abs(worst.error), rel=1e-9)
    assert v("validation_worst") == f"{worst.setup.label}, prefill (TTFT)"


def test_accuracy_steps_are_the_models_rows():
    """Every prediction and error step is the row models.validation computes, not a second copy."""
    d = _steps()
    from models.validation_steps import GPU_PREFIX, MODEL_PREFIX, SETUP_PREFIX
    for f in fit_per_model():
        assert d.value(f"{MODEL_PREFIX[f.group]}_fit_a_mbu") == f.decode.efficiency
        for r in f.rows:
            p = f"{SETUP_PREFIX[r.setup.key]}_{r.metric}"
            assert d.value(f"{p}_measured_s") == r.measured_s and d.value(f"{p}_roofline_s") == r.roofline_s
            assert d.value(f"{p}_fit_a_s") == r.predicted_s
            assert d.value(f"{p}_fit_a_error") == pytest.approx(r.error, abs=1e-9)
    for f in fit_per_gpu():
        assert d.value(f"{GPU_PREFIX[f.group]}_fit_b_step_cost_s") == f.decode.overhead_s
    (fc,) = fit_profiled()
    assert d.value("fit_c_fixed_s") == fc.fixed_s
    for r in evaluate({s.model: ENGINE_DEFAULTS for s in SETUPS}):
        assert d.value(f"{SETUP_PREFIX[r.setup.key]}_{r.metric}_default_s") == r.predicted_s


def test_every_arithmetic_accuracy_step_evaluates_to_its_value():
    from models.formula import NON_ARITHMETIC, evaluate as evaluate_formula
    d = _steps()
    checked, wrong = 0, []
    for s in d:
        assert s.formula or s.kind or s.note, f"{s.key}: neither a formula, a kind nor a note says where it comes from"
        if s.kind == "lookup":
            assert s.note, f"{s.key}: a lookup names its source"
        if not s.formula or not s.is_numeric or s.kind in NON_ARITHMETIC:
            continue
        got = evaluate_formula(s.formula, s.bindings, s.units, s.unit)
        checked += 1
        if not math.isclose(got, float(s.value), rel_tol=1e-6, abs_tol=1e-12):
            wrong.append(f"{s.key}: '{s.formula}' gives {got:.6g}, the step is {float(s.value):.6g}")
    assert not wrong, "\n".join(wrong)
    assert checked >= 140


def test_every_placeholder_of_the_accuracy_page_is_a_step():
    from models.content import load_content
    c = load_content(ROOT / "content" / "validation.md")
    d = _steps()
    assert c.placeholders(), "the page's numbers are placeholders"
    missing = sorted(c.placeholders() - set(d.keys()))
    assert not missing, missing
    # and the page shows most of what is recorded (the rest feed formulas: widths, FLOP of the anchors)
    assert len(c.placeholders()) >= 0.8 * len(d)


def test_the_accuracy_pages_fixed_words_hold():
    """Words the content states outright, where the old page chose them in code."""
    d = _steps()
    v = d.value
    assert v("a100_13b_tp2_prefill_fit_a_error") < -FIT_TOLERANCE  # "misses the 15% target"
    assert v("gpt13b_fit_a_decode_worst_error") <= FIT_TOLERANCE  # "Decode holds"
    assert v("validation_max_error") <= FIT_TOLERANCE  # "every measurement within ±15%"
    assert v("h200_fit_b_decode_physical") == v("h200_fit_b_prefill_physical") == "yes"  # "H200: physical"
    assert v("a100_fit_b_prefill_physical") == "no" and v("a100_fit_b_prefill_mfu") > 1  # "faster than the datasheet"
    assert v("llama70b_fit_a_verdict").startswith("nothing") and v("llama8b_fit_a_verdict").startswith("nothing")
    assert v("h200_missing_step_cost_s") > 1e-7  # "add about ... per step"
    assert abs(v("llm_analysis_tp2_prefill_error")) > abs(v("a100_13b_tp2_prefill_fit_a_error"))  # "further off"
    assert v("fit_c_fixed_s") > 0  # "positive as it must be"


def test_the_accuracy_steps_keep_their_units_when_a_sweep_asks_first():
    """ttft-slo-200ms reads a fit from accuracy_steps(), and a sweep solves it inside values_only():
    the one cached copy must still be the page's whole steps (a values-only copy crashed the page)."""
    from models.core import values_only
    from models.registry import QUESTIONS
    from models.validation_steps import accuracy_steps

    accuracy_steps.cache_clear()
    try:
        with values_only():
            q = QUESTIONS["ttft-slo-200ms"]
            q.solve(q.Params())
        d = accuracy_steps()
        assert type(d).__name__ == "Derivation"
        units = {d[k].unit for k in d.keys()}
        assert "s" in units and len(units) > 3
    finally:
        accuracy_steps.cache_clear()
