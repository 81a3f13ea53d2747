"""models.validation: rooflines recomputed by hand from catalog constants, then the two fits.

The hand derivations below use only catalog numbers and arithmetic written out in the test, so a
slip in the shared engine (models/serving/llm_arith.py) or in the validation wrapper shows up here.
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
from models.serving.llm_arith import engine  # noqa: E402
from models.validation import (  # noqa: E402
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
TP2_PREFILL = ("13b-a100-tp2", "prefill")  # the one measurement the formula cannot reach; see below


def _fit(results, group):
    return next(f for f in results if f.group == group)


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


def test_13b_decode_roofline_on_one_a100_by_hand():
    weights_B = M13.total_params * 2  # 13e9 params x 2 B (fp16) = 26e9 B
    assert weights_B == pytest.approx(26e9)
    # Weights alone: 26 GB / 1.555 TB/s = 16.72 ms.
    assert weights_B / (A100.hbm_TBps * 1e12) == pytest.approx(16.72e-3, rel=1e-3)
    # Plus the KV cache of the average decode context, 512 prompt + 10 output / 2 = 517 tokens:
    # 2 (K, V) x 40 layers x 40 heads x 128 x 2 B = 819,200 B per token.
    kv_per_token_B = 2 * 40 * 40 * 128 * 2
    assert kv_per_token_B == 819_200
    kv_B = kv_per_token_B * (512 + 10 / 2)  # 423.5 MB
    hand_s = (weights_B + kv_B) / (1.555e12)  # 26.4235 GB / 1.555 TB/s = 16.99 ms
    assert hand_s == pytest.approx(16.99e-3, rel=1e-3)
    assert roofline_s(SETUP_BY_KEY["13b-a100-tp1"], "decode") == pytest.approx(hand_s, rel=1e-12)
    # TP 2 halves every byte each GPU reads.
    assert roofline_s(SETUP_BY_KEY["13b-a100-tp2"], "decode") == pytest.approx(hand_s / 2, rel=1e-12)


def test_13b_prefill_roofline_by_hand():
    # 512 tokens x (2 x 13e9 + causal attention: 4 x 40 layers x 40 heads x 128 x 256 average positions)
    flops = 512 * (2 * 13e9 + 4 * 40 * 40 * 128 * 256)  # 1.342e13 FLOP
    assert flops == pytest.approx(1.342e13, rel=1e-3)
    hand_s = flops / 312e12  # 43.0 ms on one A100
    assert roofline_s(SETUP_BY_KEY["13b-a100-tp1"], "prefill") == pytest.approx(hand_s, rel=1e-12)
    assert roofline_s(SETUP_BY_KEY["13b-a100-tp2"], "prefill") == pytest.approx(hand_s / 2, rel=1e-12)


def test_70b_tpot_roofline_on_8_h200_by_hand():
    weights_B = M70.total_params * 2 / 8  # 70.6e9 x 2 B / 8 GPUs = 17.65 GB per GPU
    kv_B = 2 * 80 * 8 * 128 * 2 * (4096 + 512 / 2) / 8  # 327,680 B/token x 4,352 tokens / 8 = 178.3 MB
    hand_s = (weights_B + kv_B) / (H200.hbm_TBps * 1e12)  # 17.83 GB / 4.8 TB/s = 3.714 ms
    assert hand_s == pytest.approx(3.714e-3, rel=1e-3)
    assert roofline_s(SETUP_BY_KEY["70b-h200-tp8"], "decode") == pytest.approx(hand_s, rel=1e-12)


def test_70b_ttft_roofline_on_8_h200_by_hand():
    flops = 4096 * (2 * 70.6e9 + 4 * 80 * 64 * 128 * 2048)
    hand_s = flops / (8 * 989e12)  # 75.9 ms
    assert hand_s == pytest.approx(75.88e-3, rel=1e-3)
    assert roofline_s(SETUP_BY_KEY["70b-h200-tp8"], "prefill") == pytest.approx(hand_s, rel=1e-12)


def test_roofline_is_a_floor_for_every_measurement():
    for s in SETUPS:
        for m in METRICS:
            assert roofline_s(s, m) < s.measured_s(m), (s.key, m)


def test_predictions_are_the_serving_engines_numbers():
    """The validation checks the formulas the pages use: same engine, same figures."""
    s = SETUP_BY_KEY["70b-h200-tp8"]
    e = engine(s.model, s.gpu, s.tp, "bf16", s.prompt_tokens, 0.0, s.output_tokens, 0.05, 0.7, 0.5)
    k = Knobs(0.7, 0.5, 0.002, 0.03)
    assert predict_s(s, "decode", k) == pytest.approx(e.weight_read_s + e.kv_read_per_sequence_s + 0.002, rel=1e-12)
    assert predict_s(s, "prefill", k) == pytest.approx(e.prefill_s_per_request + 0.03, rel=1e-12)
    # Batch 1: the compute side of a decode step is under 1% of the bandwidth side.
    assert e.decode_compute_per_sequence_s < 0.01 * (e.weight_read_s + e.kv_read_per_sequence_s)


def test_prediction_scales_as_one_over_efficiency():
    s = SETUP_BY_KEY["13b-a100-tp1"]
    for m in METRICS:
        assert predict_s(s, m, Knobs(0.5, 0.5)) == pytest.approx(2 * roofline_s(s, m), rel=1e-12)


def test_measurements_rule_out_small_tp_layouts():
    # 8B on one H200: (16.06 GB + 0.57 GB of KV) / 4.8 TB/s = 3.46 ms > 2.85 ms measured.
    assert smallest_consistent_tp(SETUP_BY_KEY["8b-h200-tp8"]) == 2
    # 70B at TP 2: 71.3 GB per GPU = 14.9 ms > 7.56 ms; at TP 4 the floor is 7.43 ms.
    assert smallest_consistent_tp(SETUP_BY_KEY["70b-h200-tp8"]) == 4


# --------------------------------------------------------------------- fit (a): per model


def test_fit_a_efficiencies_are_between_0_and_1():
    for f in fit_per_model():
        for m in METRICS:
            assert 0 < f.fit(m).efficiency <= 1, (f.group, m, f.fit(m).efficiency)
            assert f.fit(m).overhead_s == 0


def test_fit_a_errors_under_15_percent_except_the_13b_tp2_prefill():
    rows = [r for f in fit_per_model() for r in f.rows]
    assert len(rows) == 8
    for r in rows:
        print(f"{r.setup.key:14s} {r.metric:8s} measured {r.measured_s * 1e3:7.2f} ms  "
              f"fitted {r.predicted_s * 1e3:7.2f} ms  error {r.error:+.1%}")
        if (r.setup.key, r.metric) != TP2_PREFILL:
            assert abs(r.error) < FIT_TOLERANCE, (r.setup.key, r.metric, r.error)


def test_the_13b_tp2_prefill_is_beyond_any_single_efficiency():
    """One GPU ran the prefill at 68% of peak, two at 47%: one efficiency cannot serve both.

    The best any single efficiency can do is +-18% on both (equal and opposite misses); least
    squares on relative error lands at +14% / -21%. This is a limit of the formula (no term for
    what tensor parallelism costs a prefill), not of the fit.
    """
    tp1, tp2 = SETUP_BY_KEY["13b-a100-tp1"], SETUP_BY_KEY["13b-a100-tp2"]
    assert best_single_efficiency_error((tp1, tp2), "prefill") == pytest.approx(0.180, abs=0.001)
    assert best_single_efficiency_error((tp1, tp2), "prefill") > FIT_TOLERANCE
    f13 = _fit(fit_per_model(), "GPT-13B")
    errors = {(r.setup.key, r.metric): r.error for r in f13.rows}
    assert errors[("13b-a100-tp1", "prefill")] == pytest.approx(0.143, abs=0.001)
    assert errors[TP2_PREFILL] == pytest.approx(-0.206, abs=0.001)


def test_fit_a_13b_values_and_least_squares_optimum():
    f13 = _fit(fit_per_model(), "GPT-13B")
    assert not f13.decode.exact and not f13.prefill.exact
    assert f13.decode.efficiency == pytest.approx(0.708, abs=0.001)
    assert f13.prefill.efficiency == pytest.approx(0.596, abs=0.001)

    # Least squares on relative error: nudging the efficiency either way makes the sum worse.
    def sse(eff: float) -> float:
        rows = evaluate({"GPT-13B": Knobs(eff, 1.0), "Llama-3-70B": Knobs(), "Llama-3-8B": Knobs()})
        return sum(r.error**2 for r in rows if r.setup.model == "GPT-13B" and r.metric == "decode")

    best = sse(f13.decode.efficiency)
    assert best < sse(f13.decode.efficiency * 1.01) and best < sse(f13.decode.efficiency * 0.99)


def test_fit_a_is_exact_and_uninformative_for_one_setup_models():
    for group in ("Llama-3-70B", "Llama-3-8B"):
        f = _fit(fit_per_model(), group)
        assert f.decode.exact and f.prefill.exact
        assert f.max_abs_error < 1e-12
    # What they do show: the 8B implies a far lower efficiency than the 70B on the same node.
    f70, f8 = _fit(fit_per_model(), "Llama-3-70B"), _fit(fit_per_model(), "Llama-3-8B")
    assert f70.decode.efficiency == pytest.approx(3.714 / 7.56, rel=1e-3)  # 49%
    assert f8.decode.efficiency == pytest.approx(0.4331 / 2.85, rel=1e-3)  # 15%


def test_fitted_knobs_reproduce_the_rows():
    for f in fit_per_model() + fit_per_gpu():
        for r in f.rows:
            assert predict_s(r.setup, r.metric, f.knobs) == pytest.approx(r.predicted_s, rel=1e-12)


# ------------------------------------------------------------------- fit (b): per GPU


def test_fit_b_h200_solves_exactly_and_is_physical():
    h = _fit(fit_per_gpu(), "H200")
    assert h.decode.exact and h.prefill.exact
    # By hand: 7.56 = 3.7142 k + c and 2.85 = 0.43308 k + c.
    x70, x8 = (roofline_s(SETUP_BY_KEY[k], "decode") for k in ("70b-h200-tp8", "8b-h200-tp8"))
    k = (7.56e-3 - 2.85e-3) / (x70 - x8)
    c = 2.85e-3 - k * x8
    assert h.decode.efficiency == pytest.approx(1 / k, rel=1e-9)
    assert h.decode.overhead_s == pytest.approx(c, rel=1e-9)
    assert h.decode.efficiency == pytest.approx(0.697, abs=0.001)
    assert h.decode.overhead_s == pytest.approx(2.23e-3, abs=0.01e-3)
    assert h.prefill.efficiency == pytest.approx(0.586, abs=0.001)
    assert h.prefill.overhead_s == pytest.approx(31.1e-3, abs=0.1e-3)
    assert h.physical
    assert h.max_abs_error < 1e-12


def test_fit_b_a100_prefill_is_unphysical():
    a = _fit(fit_per_gpu(), "A100 40GB")
    assert a.decode.physical and a.decode.efficiency > 0.99  # 99.96%: at the edge
    assert a.decode.overhead_s == pytest.approx(5.0e-3, abs=0.01e-3)
    assert not a.prefill.physical and a.prefill.efficiency > 1  # 121%: faster than the datasheet
    assert not a.physical


# ------------------------------------------------------------------------------- misc


def test_deterministic():
    assert fit_per_model() == fit_per_model()
    assert fit_per_gpu() == fit_per_gpu()


def test_app_default_knobs_are_fractions():
    k = app_default_knobs()
    assert 0 < k.bandwidth_eff <= 1 and 0 < k.flop_eff <= 1
    assert k.decode_overhead_s == 0 and k.prefill_overhead_s == 0


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
    fit here misses by less (-20.6%), so a communication term alone is not what is missing."""
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
    each way: 80 x 5.24 MB = 419 MB at 300 GB/s = 1.40 ms (llm-analysis's 1.4 ms)."""
    e_lo, e_hi = 512 * 5120**2 * 2 / 312e12 / 159e-6, 512 * 4 * 5120**2 * 2 / 312e12 / 476e-6

    def eff(flop):
        return e_lo + (e_hi - e_lo) * math.log(flop / (512 * 5120**2 * 2)) / math.log(4)

    shards = [(5120, 7680), (2560, 5120), (5120, 10240), (10240, 5120)]
    gemm_s = sum(40 * 2 * 512 * k * n / (312e12 * eff(2 * 512 * k * n)) for k, n in shards)
    attention_s = 2 * 2 * 40 * 40 * 128 * 512 * 512 / 2 / (2 * 312e12)
    allreduce_bytes = 2 * 40 * 512 * 5120 * 2 * (2 * 1 / 2)
    p = profiled_prefill(SETUP_BY_KEY["13b-a100-tp2"])
    assert p.gemm_s == pytest.approx(gemm_s, rel=1e-12)
    assert p.attention_s == pytest.approx(attention_s, rel=1e-12)
    assert p.allreduce_bytes == allreduce_bytes
    assert p.allreduce_s == pytest.approx(allreduce_bytes / 300e9, rel=1e-12)
    assert p.allreduce_s == pytest.approx(1.4e-3, abs=0.01e-3)
    assert [round(g.efficiency, 3) for g in p.gemms] == [round(eff(2 * 512 * k * n), 3) for k, n in shards]
    # One GPU: the GEMMs of the profile's own sizes, no all-reduce.
    p1 = profiled_prefill(SETUP_BY_KEY["13b-a100-tp1"])
    assert p1.allreduce_s == 0
    assert [g.efficiency for g in p1.gemms][1:] == pytest.approx([e_lo, e_hi, e_hi], rel=1e-12)


def test_halving_the_gemms_is_most_of_the_tp2_gap():
    """Flat efficiency predicts a 2x speed-up from the second GPU; GEMM size alone (no fitting yet)
    predicts 1.67x against the 1.39x measured."""
    p1, p2 = (profiled_prefill(SETUP_BY_KEY[k]) for k in ("13b-a100-tp1", "13b-a100-tp2"))
    r1, r2 = (roofline_s(SETUP_BY_KEY[k], "prefill") for k in ("13b-a100-tp1", "13b-a100-tp2"))
    assert r1 / r2 == pytest.approx(2.0, rel=1e-12)
    assert p1.total_s / p2.total_s == pytest.approx(1.669, abs=0.001)
    assert 63.17 / 45.45 == pytest.approx(1.390, abs=0.001)


def test_fit_c_fixed_part_by_hand():
    """c = sum((y - parts) / y^2) / sum(1 / y^2) over the 13B's two prefills; it must be >= 0
    (time TP does not divide), and leaves a real residual: one unknown, two measurements."""
    (f,) = fit_profiled()
    assert f.model == "GPT-13B" and not f.exact and f.physical
    ys = [63.17e-3, 45.45e-3]
    parts = [profiled_prefill(SETUP_BY_KEY[k]).total_s for k in ("13b-a100-tp1", "13b-a100-tp2")]
    c = sum((y - p) / y**2 for y, p in zip(ys, parts)) / sum(1 / y**2 for y in ys)
    assert f.fixed_s == pytest.approx(c, rel=1e-12)
    assert f.fixed_s == pytest.approx(7.45e-3, abs=0.01e-3)
    errors = [r.error for r in f.rows]
    assert errors == pytest.approx([(p + c) / y - 1 for y, p in zip(ys, parts)], rel=1e-12)
    assert errors[0] > 0 > errors[1]  # least squares straddles the two

    # The optimum: nudging c either way raises the summed squared relative error.
    def sse(cc):
        return sum(((p + cc) / y - 1) ** 2 for y, p in zip(ys, parts))

    assert sse(c) < sse(c * 1.01) and sse(c) < sse(c * 0.99)


def test_every_fitted_error_under_15_percent():
    """The issue's criterion, on the validation's model: decode by fit (a), prefill by fit (c) where
    the source published a kernel profile (the 13B) and by fit (a) elsewhere."""
    rows = validation_rows()
    assert len(rows) == 8 and {(r.setup.key, r.metric) for r in rows} == {
        (s.key, m) for s in SETUPS for m in METRICS}
    for r in rows:
        assert abs(r.error) < FIT_TOLERANCE, (r.setup.key, r.metric, r.error)
    errors = {(r.setup.key, r.metric): r.error for r in rows}
    assert errors[TP2_PREFILL] == pytest.approx(-0.047, abs=0.001)
    assert errors[("13b-a100-tp1", "prefill")] == pytest.approx(0.065, abs=0.001)


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
