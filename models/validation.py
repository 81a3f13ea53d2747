"""Validation: the app's decode and prefill arithmetic against published latency measurements.

The predictions are the shared serving formulas of `models.serving.llm_arith` (through its
`engine`), never a second copy:

    decode per token = bytes one step reads per GPU (weights / TP + KV of the context / TP)
                       / (HBM B/s x bandwidth efficiency)  + a fixed per-step overhead
    prefill          = prompt x (2 x params + the causal attention term) FLOP
                       / (TP x dense bf16 FLOP/s x FLOP efficiency)  + a fixed per-request overhead

Both overheads are knobs that default to 0 s: the app's pages assume none. At 100% efficiency and
no overhead the formulas are the roofline. Two fits:

  (a) per model: one bandwidth and one FLOP efficiency per model, no overhead, least squares in
      relative error over that model's measurements. The 13B was measured on one and on two GPUs,
      so its fit has a real residual; the 70B and 8B have one setup each, so their fit is exact by
      construction and tells us nothing about the model's accuracy.
  (b) per GPU generation: one efficiency plus one fixed overhead shared by every model measured on
      that GPU; with two measurements and two unknowns it is an exact solve, and what it can teach
      is whether the solution is physical (efficiency <= 1, overhead >= 0).
  (c) prefill by GEMM size, where the source published a kernel profile (the 13B): each matrix
      multiply runs at the efficiency the profile shows for a GEMM of its size on one GPU, so
      tensor parallelism's narrower GEMMs run slower per FLOP; plus the all-reduces over NVLink and
      one fitted fixed part that TP does not divide. One unknown for two measurements.

Pure Python, deterministic; no Streamlit.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, replace
from typing import Literal

from models.catalog import GPT3_FFN_MULTIPLE, gpu as catalog_gpu, model as catalog_model
from models.serving.llm_arith import attention_flops_per_token_per_position, engine, peak_flops

Metric = Literal["decode", "prefill"]
METRICS: tuple[Metric, ...] = ("decode", "prefill")
METRIC_LABELS = {"decode": "Decode per token (TPOT)", "prefill": "Prefill (TTFT)"}

PRECISION = "bf16"  # FasterTransformer ran fp16: same 2 bytes and the same A100 tensor peak as bf16
FIT_TOLERANCE = 0.15  # the error the issue asks a fitted model to stay within
# The highest HBM efficiency kipply's profiling of this very FasterTransformer run observed, as
# llm-analysis records it (examples/fastertransformer/README.md: hbm_memory_efficiency = 0.9).
PROFILED_HBM_CEILING = 0.9
# The same project's own prediction of the TP-2 prefill: profiled FLOP efficiency 0.7, a
# tensor-parallel all-reduce term of 1.4 ms, 32.98 ms in all against the measured 45.45 ms
# (examples/fastertransformer/README.md and outputs_infer/...-tp2-...-fe0.7-hbme0.87-summary-readable.txt).
LLM_ANALYSIS_TP2_PREFILL_MS = 32.98
LLM_ANALYSIS_TP2_TP_COMM_MS = 1.4

_KIPPLY_SRC = "kipply, Transformer Inference Arithmetic (2022); llm-analysis examples"
_KIPPLY_URLS = (
    "https://kipp.ly/transformer-inference-arithmetic/#comparing-against-real-benchmarks",
    "https://github.com/cli99/llm-analysis/tree/main/examples/fastertransformer",
)
_VLLM_SRC = "a public vLLM benchmark report"


@dataclass(frozen=True)
class KernelTiming:
    """One matrix multiply a source timed in a profile: (m x k) by (k x n), its fastest instance."""

    name: str
    m: int
    k: int
    n: int
    measured_s: float

    @property
    def flop(self) -> float:
        return 2.0 * self.m * self.k * self.n


# Profiled efficiency may be extended below the smaller timed kernel by this factor in FLOP and no
# further: TP 2 halves a GEMM once; a guess about GEMMs 8x smaller than anything timed is not data.
MAX_EXTRAPOLATION = 4.0


@dataclass(frozen=True)
class GemmProfile:
    """How close to peak a GEMM of a given size runs, on one GPU under one software stack.

    Two timed kernels anchor a straight line in log(FLOP): small GEMMs leave tensor cores idle
    (too few output tiles for the SMs, a tail wave) and the share lost falls as the GEMM grows.
    Above the larger kernel the efficiency is held flat: a bigger GEMM is not assumed to do better
    than the best one measured.
    """

    gpu: str
    small: KernelTiming
    large: KernelTiming
    source: str

    def __post_init__(self) -> None:
        if not self.small.flop < self.large.flop:
            raise ValueError("the small kernel must have fewer FLOP than the large one")

    def measured_efficiency(self, kernel: KernelTiming) -> float:
        return kernel.flop / (peak_flops(self.gpu, PRECISION) * kernel.measured_s)

    def efficiency(self, flop: float) -> float:
        lo, hi = self.small, self.large
        if flop >= hi.flop:
            return self.measured_efficiency(hi)
        if flop < lo.flop / MAX_EXTRAPOLATION:
            raise ValueError(f"a {flop / 1e9:.3g} GFLOP GEMM is more than {MAX_EXTRAPOLATION:g}x below the "
                             f"smallest profiled kernel ({lo.flop / 1e9:.3g} GFLOP)")
        e_lo, e_hi = self.measured_efficiency(lo), self.measured_efficiency(hi)
        return e_lo + (e_hi - e_lo) * math.log(flop / lo.flop) / math.log(hi.flop / lo.flop)


# kipply profiled the one-GPU FasterTransformer run: the fastest MLP multiply (512 tokens, 5,120 by
# 20,480) took 476 us against 344 ideal; the fastest attention projection (5,120 by 5,120), 159 us
# against 86. The same paragraph cites the Megatron paper's 512 x 4,000 x 4,000 GEMM at under
# 150 TFLOP/s on an A100 as the expected behaviour (arXiv 2104.05158, Figure 14).
FT_A100_13B_PROFILE = GemmProfile(
    gpu="A100 40GB",
    small=KernelTiming("attention projection", 512, 5120, 5120, 159e-6),
    large=KernelTiming("MLP multiply", 512, 5120, 20_480, 476e-6),
    source="kipply, Transformer Inference Arithmetic (2022), section 'comparing against real benchmarks'",
)
MEGATRON_GEMM_SHAPE = (512, 4000, 4000)
_GPT13B_MLP_WIDTH = GPT3_FFN_MULTIPLE * catalog_model("GPT-13B").d_model
MEGATRON_GEMM_BELOW_FLOPs = 150e12


@dataclass(frozen=True)
class Setup:
    """One published benchmark configuration with its two measured latencies."""

    key: str
    model: str  # catalog name the arithmetic uses
    model_label: str  # what the source calls it
    gpu: str  # catalog name
    tp: int  # tensor-parallel GPUs serving the one request
    prompt_tokens: int
    output_tokens: int
    decode_ms: float  # measured time per output token
    prefill_ms: float  # measured prefill / time to first token
    software: str
    source: str  # the citation as a reader should give it
    urls: tuple[str, ...] = ()
    note: str = ""
    gemm_profile: GemmProfile | None = None  # the source's timed kernels, where it published them
    mlp_width: int | None = None  # needed with a profile: the MLP's GEMM shapes

    def __post_init__(self) -> None:
        if self.gemm_profile is not None and self.mlp_width is None:
            raise ValueError(f"{self.key}: a GEMM profile needs the model's MLP width")
        if self.tp < 1 or self.prompt_tokens < 1 or self.output_tokens < 1:
            raise ValueError(f"{self.key}: tp, prompt and output tokens must be positive")
        if not (self.decode_ms > 0 and self.prefill_ms > 0):
            raise ValueError(f"{self.key}: measured latencies must be positive")
        if not self.source.strip():
            raise ValueError(f"{self.key}: source is required")
        catalog_model(self.model), catalog_gpu(self.gpu)  # fail at import on a typo

    @property
    def label(self) -> str:
        return f"{self.model_label} · {self.tp} × {self.gpu}"

    def measured_s(self, metric: Metric) -> float:
        return (self.decode_ms if metric == "decode" else self.prefill_ms) / 1000


SETUPS: tuple[Setup, ...] = (
    Setup(
        key="13b-a100-tp1", model="GPT-13B", model_label="13B", gpu="A100 40GB", tp=1,
        prompt_tokens=512, output_tokens=10, decode_ms=22.0, prefill_ms=63.17,
        software="FasterTransformer", source=_KIPPLY_SRC, urls=_KIPPLY_URLS,
        note="Batch 1, 512-token context, 10 generated tokens; fp16.",
        gemm_profile=FT_A100_13B_PROFILE, mlp_width=_GPT13B_MLP_WIDTH,
    ),
    Setup(
        key="13b-a100-tp2", model="GPT-13B", model_label="13B", gpu="A100 40GB", tp=2,
        prompt_tokens=512, output_tokens=10, decode_ms=13.5, prefill_ms=45.45,
        software="FasterTransformer", source=_KIPPLY_SRC, urls=_KIPPLY_URLS,
        note="Same run split over two GPUs by tensor parallelism.",
        gemm_profile=FT_A100_13B_PROFILE, mlp_width=_GPT13B_MLP_WIDTH,
    ),
    Setup(
        key="70b-h200-tp8", model="Llama-3-70B", model_label="Llama-3.1-70B", gpu="H200", tp=8,
        prompt_tokens=4096, output_tokens=512, decode_ms=7.56, prefill_ms=160.6,
        software="vLLM", source=_VLLM_SRC,
        note="Concurrency 1. Llama 3.1 has Llama 3's shapes, so the catalog's Llama-3-70B entry is used. "
             "TP 8: one replica across the node.",
    ),
    Setup(
        key="8b-h200-tp8", model="Llama-3-8B", model_label="Llama-3.1-8B", gpu="H200", tp=8,
        prompt_tokens=4096, output_tokens=512, decode_ms=2.85, prefill_ms=46.2,
        software="vLLM", source=_VLLM_SRC,
        note="Concurrency 1; the catalog's Llama-3-8B shapes. TP 8 assumed (one replica across the node): "
             "the report's layout is not recorded here.",
    ),
)

SETUP_BY_KEY: dict[str, Setup] = {s.key: s for s in SETUPS}


@dataclass(frozen=True)
class Knobs:
    """Efficiencies (fractions of the datasheet peak) and fixed overheads, in seconds."""

    bandwidth_eff: float = 1.0
    flop_eff: float = 1.0
    decode_overhead_s: float = 0.0
    prefill_overhead_s: float = 0.0

    def __post_init__(self) -> None:
        if not (self.bandwidth_eff > 0 and self.flop_eff > 0):
            raise ValueError("efficiencies must be positive")

    def efficiency(self, metric: Metric) -> float:
        return self.bandwidth_eff if metric == "decode" else self.flop_eff

    def overhead_s(self, metric: Metric) -> float:
        return self.decode_overhead_s if metric == "decode" else self.prefill_overhead_s


ROOFLINE = Knobs()  # 100% of peak, no overhead


# --------------------------------------------------------------------------------- predictions


@dataclass(frozen=True)
class Breakdown:
    """What one setup asks of the hardware, from the shared engine at 100% efficiency."""

    decode_bytes_per_gpu: float  # weights / TP + KV read for the average decode context / TP
    decode_context_tokens: float  # prompt + output / 2, as the serving pages use
    decode_memory_s: float  # bandwidth side of one decode step
    decode_compute_s: float  # compute side of the same step (batch 1: tiny)
    prefill_flops: float  # all GPUs together
    prefill_s: float


def _engine(s: Setup, k: Knobs):
    # tpot_s only sizes the engine's batch, which a batch-1 measurement does not use.
    return engine(s.model, s.gpu, s.tp, PRECISION, s.prompt_tokens, 0.0, s.output_tokens, 1.0,
                  k.bandwidth_eff, k.flop_eff)


def breakdown(s: Setup) -> Breakdown:
    e = _engine(s, ROOFLINE)
    return Breakdown(
        decode_bytes_per_gpu=(e.weight_bytes + e.kv_read_per_sequence_bytes) / s.tp,
        decode_context_tokens=e.decode_context_avg,
        decode_memory_s=e.weight_read_s + e.kv_read_per_sequence_s,
        decode_compute_s=e.decode_compute_per_sequence_s,
        prefill_flops=e.prefill_flops_per_request,
        prefill_s=e.prefill_s_per_request,
    )


def predict_s(s: Setup, metric: Metric, k: Knobs = ROOFLINE) -> float:
    """The app's prediction for one measurement, in seconds."""
    e = _engine(s, k)
    if metric == "decode":
        # The engine's step at batch 1: max(bandwidth side, compute side).
        step = max(e.weight_read_s + e.kv_read_per_sequence_s, e.decode_compute_per_sequence_s)
        return step + k.decode_overhead_s
    return e.prefill_s_per_request + k.prefill_overhead_s


def roofline_s(s: Setup, metric: Metric) -> float:
    return predict_s(s, metric, ROOFLINE)


def smallest_consistent_tp(s: Setup, choices: tuple[int, ...] = (1, 2, 4, 8)) -> int | None:
    """Smallest TP whose 100%-efficiency decode is not slower than the measurement.

    A layout whose roofline is already slower than what was measured cannot be the one measured.
    """
    for tp in choices:
        if roofline_s(replace(s, tp=tp), "decode") <= s.measured_s("decode"):
            return tp
    return None


# --------------------------------------------------------------------------------------- fits


@dataclass(frozen=True)
class Row:
    """One measurement beside its predictions."""

    setup: Setup
    metric: Metric
    measured_s: float
    roofline_s: float
    predicted_s: float

    @property
    def error(self) -> float:
        """Relative error of the prediction: +0.10 means 10% slower than measured."""
        return self.predicted_s / self.measured_s - 1

    @property
    def roofline_error(self) -> float:
        return self.roofline_s / self.measured_s - 1

    @property
    def implied_efficiency(self) -> float:
        """The efficiency that alone (no overhead) would make this one measurement exact."""
        return self.roofline_s / self.measured_s


@dataclass(frozen=True)
class Fit:
    """One fitted (efficiency, overhead) pair for one metric over a group of measurements."""

    metric: Metric
    efficiency: float
    overhead_s: float
    overhead_fitted: bool
    measurements: int

    @property
    def unknowns(self) -> int:
        return 2 if self.overhead_fitted else 1

    @property
    def exact(self) -> bool:
        """As many unknowns as measurements: the fit reproduces them whatever the model's worth."""
        return self.measurements <= self.unknowns

    @property
    def physical(self) -> bool:
        return 0 < self.efficiency <= 1 and self.overhead_s >= 0


@dataclass(frozen=True)
class FitResult:
    group: str  # a model name (fit a) or a GPU name (fit b)
    kind: Literal["per model", "per GPU"]
    setups: tuple[Setup, ...]
    decode: Fit
    prefill: Fit
    rows: tuple[Row, ...]

    @property
    def knobs(self) -> Knobs:
        return Knobs(self.decode.efficiency, self.prefill.efficiency, self.decode.overhead_s, self.prefill.overhead_s)

    def fit(self, metric: Metric) -> Fit:
        return self.decode if metric == "decode" else self.prefill

    @property
    def max_abs_error(self) -> float:
        return max(abs(r.error) for r in self.rows)

    @property
    def physical(self) -> bool:
        return self.decode.physical and self.prefill.physical


def _weighted_line(xs: list[float], ys: list[float], fit_intercept: bool, intercept: float = 0.0) -> tuple[float, float]:
    """Slope k (and intercept c) of y ~ k x + c, minimising the sum of squared RELATIVE errors.

    Relative, because a 13B prefill of 63 ms and an 8B decode of 3 ms should count alike; the
    weights are 1 / y^2. With as many points as unknowns the line passes through them exactly.
    """
    w = [1 / y**2 for y in ys]
    if not fit_intercept:
        num = sum(wi * xi * (yi - intercept) for wi, xi, yi in zip(w, xs, ys))
        den = sum(wi * xi * xi for wi, xi in zip(w, xs))
        return num / den, intercept
    sw = sum(w)
    sx = sum(wi * xi for wi, xi in zip(w, xs))
    sy = sum(wi * yi for wi, yi in zip(w, ys))
    sxx = sum(wi * xi * xi for wi, xi in zip(w, xs))
    sxy = sum(wi * xi * yi for wi, xi, yi in zip(w, xs, ys))
    det = sxx * sw - sx * sx
    if det <= 1e-12 * sxx * sw:
        raise ValueError("an overhead cannot be fitted: the measurements have the same roofline time")
    k = (sxy * sw - sx * sy) / det
    c = (sxx * sy - sx * sxy) / det
    return k, c


def _fit(setups: tuple[Setup, ...], metric: Metric, fit_overhead: bool, overhead_s: float = 0.0) -> Fit:
    # Every prediction is linear in 1 / efficiency: roofline time x (1 / eff) + overhead.
    xs = [roofline_s(s, metric) for s in setups]
    ys = [s.measured_s(metric) for s in setups]
    k, c = _weighted_line(xs, ys, fit_overhead, overhead_s)
    efficiency = 1 / k if k > 0 else math.inf
    return Fit(metric, efficiency, c, fit_overhead, len(setups))


def _rows(setups: tuple[Setup, ...], knobs: Knobs) -> tuple[Row, ...]:
    return tuple(
        Row(s, m, s.measured_s(m), roofline_s(s, m), predict_s(s, m, knobs)) for s in setups for m in METRICS
    )


def evaluate(knobs_by_model: dict[str, Knobs]) -> tuple[Row, ...]:
    """Every measurement predicted with the knobs of its model (hand-set on the page)."""
    return tuple(r for s in SETUPS for r in _rows((s,), knobs_by_model[s.model]))


def _group(key: str) -> dict[str, tuple[Setup, ...]]:
    out: dict[str, list[Setup]] = {}
    for s in SETUPS:
        out.setdefault(getattr(s, key), []).append(s)
    return {g: tuple(v) for g, v in out.items()}


def fit_per_model(decode_overhead_s: float = 0.0, prefill_overhead_s: float = 0.0) -> tuple[FitResult, ...]:
    """Fit (a): a (bandwidth, FLOP) efficiency pair per model, overheads held at the given values."""
    out = []
    for name, setups in _group("model").items():
        dec = _fit(setups, "decode", False, decode_overhead_s)
        pre = _fit(setups, "prefill", False, prefill_overhead_s)
        if not (math.isfinite(dec.efficiency) and math.isfinite(pre.efficiency)):
            raise ValueError(f"{name}: the fixed overhead alone exceeds a measurement; no efficiency fits")
        knobs = Knobs(dec.efficiency, pre.efficiency, decode_overhead_s, prefill_overhead_s)
        out.append(FitResult(name, "per model", setups, dec, pre, _rows(setups, knobs)))
    return tuple(out)


def fit_per_gpu() -> tuple[FitResult, ...]:
    """Fit (b): per GPU, one efficiency and one fixed overhead per metric, shared by its models."""
    out = []
    for name, setups in _group("gpu").items():
        dec = _fit(setups, "decode", True)
        pre = _fit(setups, "prefill", True)
        knobs = Knobs(dec.efficiency, pre.efficiency, dec.overhead_s, pre.overhead_s)
        out.append(FitResult(name, "per GPU", setups, dec, pre, _rows(setups, knobs)))
    return tuple(out)


def best_single_efficiency_error(setups: tuple[Setup, ...], metric: Metric) -> float:
    """The smallest worst-case relative error ANY one efficiency (no overhead) can reach.

    Each prediction is (roofline / measured) x (1 / eff) - 1; the worst case is smallest when the
    extremes miss by equal and opposite amounts: (r_max - r_min) / (r_max + r_min).
    """
    r = [roofline_s(s, metric) / s.measured_s(metric) for s in setups]
    return (max(r) - min(r)) / (max(r) + min(r))


# ----------------------------------------------------- fit (c): prefill by GEMM size


ACTIVATION_BYTES = 2  # fp16 / bf16 activations, as the all-reduces carry them
ALLREDUCES_PER_LAYER = 2  # Megatron-style TP: after the attention output and after the MLP


@dataclass(frozen=True)
class Gemm:
    """One weight multiply of a layer as one GPU runs it under TP, over all layers."""

    name: str
    m: int
    k: int
    n: int
    layers: int
    efficiency: float  # from the profile, for this GEMM's size
    peak_flops: float

    @property
    def flop(self) -> float:
        return 2.0 * self.m * self.k * self.n

    @property
    def seconds(self) -> float:
        return self.layers * self.flop / (self.peak_flops * self.efficiency)


@dataclass(frozen=True)
class ProfiledPrefill:
    """A prefill built from its parts, on one GPU of the TP group; every part is a prediction."""

    gemms: tuple[Gemm, ...]
    attention_s: float  # causal QK^T and AV at peak (small at 512 tokens; its waste is in the fixed part)
    allreduce_bytes: float  # per GPU, per direction, whole forward pass
    allreduce_s: float  # at the NVLink datasheet rate per direction

    @property
    def gemm_s(self) -> float:
        return sum(g.seconds for g in self.gemms)

    @property
    def total_s(self) -> float:
        return self.gemm_s + self.attention_s + self.allreduce_s


def _split(width: int, tp: int, what: str) -> int:
    if width % tp:
        raise ValueError(f"{what} ({width:,}) does not split evenly over TP {tp}")
    return width // tp


def profiled_prefill(s: Setup) -> ProfiledPrefill:
    """Prefill of one request from per-GEMM efficiencies at the sizes TP leaves each GPU."""
    if s.gemm_profile is None or s.mlp_width is None:
        raise ValueError(f"{s.key}: the source published no kernel profile for this setup")
    m, g = catalog_model(s.model), catalog_gpu(s.gpu)
    peak = peak_flops(s.gpu, PRECISION)
    tokens, d = s.prompt_tokens, m.d_model
    shapes = (  # (name, k, n) for one GPU's shard; Megatron splits the first multiply by columns, the second by rows
        ("QKV projection", d, _split((m.heads + 2 * m.kv_heads) * m.head_dim, s.tp, "Q, K and V heads")),
        ("Attention output", _split(m.heads * m.head_dim, s.tp, "attention heads"), d),
        ("MLP up", d, _split(s.mlp_width, s.tp, "MLP width")),
        ("MLP down", _split(s.mlp_width, s.tp, "MLP width"), d),
    )
    gemms = tuple(
        Gemm(name, tokens, k, n, m.layers, s.gemm_profile.efficiency(2.0 * tokens * k * n), peak)
        for name, k, n in shapes
    )
    attention_flop = attention_flops_per_token_per_position(m) * tokens * tokens / 2  # causal: half the square
    # Ring all-reduce: each GPU sends (and receives) 2 (TP - 1) / TP of the buffer.
    allreduce_bytes = (ALLREDUCES_PER_LAYER * m.layers * tokens * d * ACTIVATION_BYTES
                       * 2 * (s.tp - 1) / s.tp)
    return ProfiledPrefill(
        gemms=gemms,
        attention_s=attention_flop / (s.tp * peak),
        allreduce_bytes=allreduce_bytes,
        allreduce_s=allreduce_bytes / (g.nvlink_GBps_per_direction * 1e9),
    )


@dataclass(frozen=True)
class ProfiledFit:
    """Fit (c) for one model: the parts above plus one fixed time that TP does not divide."""

    model: str
    setups: tuple[Setup, ...]
    parts: tuple[ProfiledPrefill, ...]
    fixed_s: float
    rows: tuple[Row, ...]  # prefill only

    @property
    def exact(self) -> bool:
        return len(self.setups) <= 1

    @property
    def physical(self) -> bool:
        return self.fixed_s >= 0

    @property
    def max_abs_error(self) -> float:
        return max(abs(r.error) for r in self.rows)


def fit_profiled() -> tuple[ProfiledFit, ...]:
    """Fit (c): per model with a kernel profile, the fixed part by least squares on relative error.

    The prediction is parts + c; minimising sum(((parts_i + c) / y_i - 1)^2) over c gives
    c = sum((y_i - parts_i) / y_i^2) / sum(1 / y_i^2).
    """
    out = []
    for name, setups in _group("model").items():
        if any(s.gemm_profile is None for s in setups):
            continue
        parts = tuple(profiled_prefill(s) for s in setups)
        ys = [s.measured_s("prefill") for s in setups]
        fixed = sum((y - p.total_s) / y**2 for y, p in zip(ys, parts)) / sum(1 / y**2 for y in ys)
        rows = tuple(Row(s, "prefill", y, roofline_s(s, "prefill"), p.total_s + fixed)
                     for s, y, p in zip(setups, ys, parts))
        out.append(ProfiledFit(name, setups, parts, fixed, rows))
    return tuple(out)


def validation_rows() -> tuple[Row, ...]:
    """Every measurement under the validation's best model: fit (a), with fit (c) for prefills it covers."""
    by_c = {(r.setup.key, r.metric): r for f in fit_profiled() for r in f.rows}
    return tuple(by_c.get((r.setup.key, r.metric), r) for f in fit_per_model() for r in f.rows)


# ----------------------------------------------------------------- the app's default knobs


EFFICIENCY_FIELDS = {"hbm_efficiency": "decode", "mfu": "prefill", "prefill_mfu": "prefill"}


def app_default_efficiencies() -> dict[str, Counter]:
    """Default value of every efficiency knob across the written serving pages: field -> Counter.

    Read from the pages' Params, so the validation page describes the defaults the app really
    ships, not a copy of them.
    """
    from models.registry import written  # lazy: the registry imports every question module

    out: dict[str, Counter] = {f: Counter() for f in EFFICIENCY_FIELDS}
    for q in written():
        if q.track != "serving":
            continue
        for field, info in q.Params.model_fields.items():
            if field in out and isinstance(info.default, (int, float)):
                out[field][float(info.default)] += 1
    return out


def app_default_knobs() -> Knobs:
    """The most common HBM efficiency and MFU defaults of the app's pages, no overhead."""
    d = app_default_efficiencies()
    bw = d["hbm_efficiency"].most_common(1)[0][0]
    flops = (d["mfu"] + d["prefill_mfu"]).most_common(1)[0][0]
    return Knobs(bw, flops)
