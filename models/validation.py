"""Validation: the app's decode and prefill arithmetic against published latency measurements.

The predictions are the shared engine's (`models.engine`: the Replica and Served every serving page
runs), never a second copy. One request at a time, so the decode batch is 1:

    decode per token = max(bytes one step reads (weights + KV of the context) / (TP x HBM B/s x MBU),
                           FLOP / (TP x peak x decode MFU))
                       + the tensor-parallel all-reduces (2 per layer: a latency each plus the ring's
                         bytes over the scale-up link) + a fixed cost per step
    prefill          = prompt x (2 x params) + causal attention FLOP / (TP x dense bf16 peak x prefill MFU)
                       + its all-reduces + a fixed cost per request (the engine has none: 0 unless fitted)

Parameters are counted from each model's shape, as the engine counts them. At 100% efficiency with
no latencies and no fixed costs the formulas are the roofline (the all-reduces' bytes at the
link's datasheet rate stay in it). The all-reduce latency is never fitted: it is held at the
engine's figure (6 us, measured for a TP-8 all-reduce on H100), so what a fit calls the fixed cost
per step is the part the engine does not already compute. Three fits:

  (a) per model: one MBU and one prefill MFU per model, least squares in relative error over that
      model's measurements, the fixed cost per step held at the engine's default. The 13B was
      measured on one and on two GPUs, so its fit has a real residual; the 70B and 8B have one setup
      each, so their fit is exact by construction and tells us nothing about the model's accuracy.
  (b) per GPU generation: one efficiency plus one fixed cost shared by every model measured on
      that GPU; with two measurements and two unknowns it is an exact solve, and what it can teach
      is whether the solution is physical (efficiency <= 1, fixed cost >= 0). The H200 solve is the
      provenance of the engine's default MBU and fixed cost per step.
  (c) prefill by GEMM size, where the source published a kernel profile (the 13B): each matrix
      multiply runs at the efficiency the profile shows for a GEMM of its size on one GPU, so
      tensor parallelism's narrower GEMMs run slower per FLOP; plus the engine's all-reduces and
      one fitted fixed part that TP does not divide. One unknown for two measurements.

Pure Python, deterministic; no Streamlit.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, replace
from typing import Literal

from functools import lru_cache

from models.catalog import GPT3_FFN_MULTIPLE, LLM, gpu as catalog_gpu, model as catalog_model
from models.engine import hardware
from models.engine.defaults import DEFAULT_DECODE_MFU, DEFAULT_HBM_EFFICIENCY, DEFAULT_PREFILL_MFU
from models.engine.knobs import EfficiencyKnobs
from models.engine.roofline import DecodeStep, Replica
from models.engine.serving import Served
from models.engine.shape import with_counted_params

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
        return kernel.flop / (hardware.named(self.gpu).peak(PRECISION) * kernel.measured_s)

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
    """The engine's efficiencies (fractions of the datasheet peak) and fixed costs, in seconds.

    Named as the engine's knobs are, except the per-request prefill cost, which the engine does not
    have: fit (b) needs it to say what TTFT holds besides the prefill's FLOP.
    """

    hbm_efficiency: float = 1.0  # decode MBU
    prefill_mfu: float = 1.0
    step_overhead_s: float = 0.0  # fixed cost per decode step, besides the all-reduces
    prefill_overhead_s: float = 0.0  # fixed cost per request
    allreduce_latency_s: float = 0.0  # one tensor-parallel all-reduce's fixed cost
    decode_mfu: float = 1.0

    def __post_init__(self) -> None:
        if not (self.hbm_efficiency > 0 and self.prefill_mfu > 0 and self.decode_mfu > 0):
            raise ValueError("efficiencies must be positive")
        if self.allreduce_latency_s < 0:
            raise ValueError("an all-reduce latency cannot be negative")

    def efficiency(self, metric: Metric) -> float:
        return self.hbm_efficiency if metric == "decode" else self.prefill_mfu

    def overhead_s(self, metric: Metric) -> float:
        return self.step_overhead_s if metric == "decode" else self.prefill_overhead_s


ROOFLINE = Knobs()  # 100% of peak, no latency, no fixed cost


def _engine_default(field: str) -> float:
    return EfficiencyKnobs.model_fields[field].default


# The engine's defaults, read from its knobs, so the page tests what the serving pages ship.
ENGINE_DEFAULTS = Knobs(
    hbm_efficiency=DEFAULT_HBM_EFFICIENCY, prefill_mfu=DEFAULT_PREFILL_MFU,
    step_overhead_s=_engine_default("step_overhead_ms") / 1000, prefill_overhead_s=0.0,
    allreduce_latency_s=_engine_default("allreduce_latency_us") / 1e6, decode_mfu=DEFAULT_DECODE_MFU,
)
ENGINE_ALLREDUCE_LATENCY_S = ENGINE_DEFAULTS.allreduce_latency_s
ENGINE_STEP_OVERHEAD_S = ENGINE_DEFAULTS.step_overhead_s


# --------------------------------------------------------------------------------- predictions


@lru_cache(maxsize=None)
def _llm(name: str) -> LLM:
    return with_counted_params(catalog_model(name))


def replica(s: Setup, k: Knobs = ROOFLINE) -> Replica:
    """The engine's replica for one setup: bf16 weights, KV and compute, as the runs used."""
    return Replica(
        _llm(s.model), hardware.named(s.gpu), s.tp, weight_fmt=PRECISION, kv_fmt=PRECISION, compute_fmt=PRECISION,
        hbm_efficiency=k.hbm_efficiency, decode_mfu=k.decode_mfu, prefill_mfu=k.prefill_mfu,
        step_overhead_s=k.step_overhead_s, allreduce_latency_s=k.allreduce_latency_s,
    )


def served(s: Setup, k: Knobs = ROOFLINE) -> Served:
    # One request at a time: the batch is given as 1, so the TPOT target sizes nothing.
    return Served(replica(s, k), s.prompt_tokens, s.output_tokens, 0.0, tpot_s=1.0, given_batch=1)


@dataclass(frozen=True)
class Breakdown:
    """What one setup asks of the hardware, from the engine at 100% efficiency."""

    decode_bytes_per_gpu: float  # weights / TP + KV read for the average decode context / TP
    decode_context_tokens: float  # prompt + output / 2, as the serving pages use
    decode_memory_s: float  # bandwidth side of one decode step
    decode_compute_s: float  # compute side of the same step (batch 1: tiny)
    decode_allreduce_s: float  # the step's all-reduces at the engine's latency (0 on one GPU)
    prefill_flops: float  # all GPUs together
    prefill_s: float  # the FLOP at peak plus the all-reduces' bytes
    prefill_allreduce_s: float  # the prefill's all-reduces at the engine's latency


def breakdown(s: Setup) -> Breakdown:
    e = served(s, ROOFLINE)
    r_lat = replica(s, replace(ROOFLINE, allreduce_latency_s=ENGINE_ALLREDUCE_LATENCY_S))
    return Breakdown(
        decode_bytes_per_gpu=e.decode.bytes_read / s.tp,
        decode_context_tokens=e.decode_context_tokens,
        decode_memory_s=e.decode.memory_s,
        decode_compute_s=e.decode.compute_s,
        decode_allreduce_s=r_lat.allreduce_s(1),
        prefill_flops=e.prefill_flops_per_request,
        prefill_s=e.prefill_s_per_request,
        prefill_allreduce_s=r_lat.allreduce_s(e.uncached_prompt_tokens),
    )


def predict_s(s: Setup, metric: Metric, k: Knobs = ROOFLINE) -> float:
    """The engine's prediction for one measurement, in seconds."""
    e = served(s, k)
    if metric == "decode":
        return e.decode_step_s
    return e.prefill_s_per_request + k.prefill_overhead_s


def roofline_s(s: Setup, metric: Metric) -> float:
    return predict_s(s, metric, ROOFLINE)


def decode_step(s: Setup, k: Knobs = ROOFLINE) -> DecodeStep:
    return served(s, k).decode


def kernel_s(s: Setup, metric: Metric) -> float:
    """The part of a prediction an efficiency divides, at 100%: the decode step's bytes side, or the
    prefill's FLOP at peak (its all-reduces taken out)."""
    e = served(s, ROOFLINE)
    if metric == "decode":
        return e.decode.memory_s
    return e.prefill_s_per_request - e.replica.allreduce_s(e.uncached_prompt_tokens)


def fixed_s(s: Setup, metric: Metric, k: Knobs) -> float:
    """The part no efficiency divides, at knobs `k`: all-reduces plus the fixed cost."""
    e = served(s, k)
    if metric == "decode":
        return e.decode.allreduce_s + e.decode.overhead_s
    return e.replica.allreduce_s(e.uncached_prompt_tokens) + k.prefill_overhead_s


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
        """The efficiency that alone (no latency, no fixed cost) would make this one measurement exact."""
        return kernel_s(self.setup, self.metric) / (self.measured_s - (self.roofline_s - kernel_s(self.setup, self.metric)))


@dataclass(frozen=True)
class Fit:
    """One fitted (efficiency, fixed cost) pair for one metric over a group of measurements."""

    metric: Metric
    efficiency: float
    overhead_s: float
    overhead_fitted: bool
    measurements: int
    allreduce_latency_s: float = ENGINE_ALLREDUCE_LATENCY_S  # held, never fitted

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
        return Knobs(self.decode.efficiency, self.prefill.efficiency, self.decode.overhead_s, self.prefill.overhead_s,
                     self.decode.allreduce_latency_s, ENGINE_DEFAULTS.decode_mfu)

    def fit(self, metric: Metric) -> Fit:
        return self.decode if metric == "decode" else self.prefill

    @property
    def max_abs_error(self) -> float:
        return max(abs(r.error) for r in self.rows)

    @property
    def physical(self) -> bool:
        return self.decode.physical and self.prefill.physical


def _weighted_line(xs: list[float], ts: list[float], ys: list[float], fit_intercept: bool,
                   intercept: float = 0.0) -> tuple[float, float]:
    """Slope k (and intercept c) of t ~ k x + c, minimising the sum of squared RELATIVE errors of
    the measurements y (t is y less the part of the prediction no unknown touches).

    Relative, because a 13B prefill of 63 ms and an 8B decode of 3 ms should count alike; the
    weights are 1 / y^2. With as many points as unknowns the line passes through them exactly.
    """
    w = [1 / y**2 for y in ys]
    if not fit_intercept:
        num = sum(wi * xi * (ti - intercept) for wi, xi, ti in zip(w, xs, ts))
        den = sum(wi * xi * xi for wi, xi in zip(w, xs))
        return num / den, intercept
    sw = sum(w)
    sx = sum(wi * xi for wi, xi in zip(w, xs))
    st = sum(wi * ti for wi, ti in zip(w, ts))
    sxx = sum(wi * xi * xi for wi, xi in zip(w, xs))
    sxt = sum(wi * xi * ti for wi, xi, ti in zip(w, xs, ts))
    det = sxx * sw - sx * sx
    if det <= 1e-12 * sxx * sw:
        raise ValueError("a fixed cost cannot be fitted: the measurements have the same roofline time")
    k = (sxt * sw - sx * st) / det
    c = (sxx * st - sx * sxt) / det
    return k, c


def _held(metric: Metric, overhead_s: float) -> Knobs:
    """Knobs whose only fixed parts are the engine's all-reduce latency and the held fixed cost."""
    if metric == "decode":
        return Knobs(step_overhead_s=overhead_s, allreduce_latency_s=ENGINE_ALLREDUCE_LATENCY_S)
    return Knobs(prefill_overhead_s=overhead_s, allreduce_latency_s=ENGINE_ALLREDUCE_LATENCY_S)


def _fit(setups: tuple[Setup, ...], metric: Metric, fit_overhead: bool, overhead_s: float = 0.0) -> Fit:
    # Every prediction is linear in 1 / efficiency: kernel time x (1 / eff) + all-reduces + fixed cost
    # (at batch 1 a decode step is bytes-bound whatever the MBU: checked once the MBU is known).
    xs = [kernel_s(s, metric) for s in setups]
    ys = [s.measured_s(metric) for s in setups]
    ts = [y - fixed_s(s, metric, _held(metric, 0.0)) for s, y in zip(setups, ys)]
    k, c = _weighted_line(xs, ts, ys, fit_overhead, overhead_s)
    efficiency = 1 / k if k > 0 else math.inf
    if metric == "decode" and math.isfinite(efficiency):
        for s in setups:
            step = decode_step(s, Knobs(hbm_efficiency=efficiency, decode_mfu=ENGINE_DEFAULTS.decode_mfu))
            if step.bound != "memory":
                raise ValueError(f"{s.key}: the decode step is compute-bound at this MBU; the fit assumes bytes")
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


def fit_per_model(decode_overhead_s: float = ENGINE_STEP_OVERHEAD_S,
                  prefill_overhead_s: float = 0.0) -> tuple[FitResult, ...]:
    """Fit (a): an (MBU, prefill MFU) pair per model, the fixed costs held at the given values (by
    default the engine's: its fixed cost per step, no cost per request) and the all-reduce at its
    latency."""
    out = []
    for name, setups in _group("model").items():
        dec = _fit(setups, "decode", False, decode_overhead_s)
        pre = _fit(setups, "prefill", False, prefill_overhead_s)
        if not (math.isfinite(dec.efficiency) and math.isfinite(pre.efficiency)):
            raise ValueError(f"{name}: the fixed cost alone exceeds a measurement; no efficiency fits")
        knobs = Knobs(dec.efficiency, pre.efficiency, decode_overhead_s, prefill_overhead_s,
                      ENGINE_ALLREDUCE_LATENCY_S, ENGINE_DEFAULTS.decode_mfu)
        out.append(FitResult(name, "per model", setups, dec, pre, _rows(setups, knobs)))
    return tuple(out)


def fit_per_gpu() -> tuple[FitResult, ...]:
    """Fit (b): per GPU, one efficiency and one fixed cost per metric, shared by its models."""
    out = []
    for name, setups in _group("gpu").items():
        dec = _fit(setups, "decode", True)
        pre = _fit(setups, "prefill", True)
        out.append(FitResult(name, "per GPU", setups, dec, pre, _rows(setups, FitResult(
            name, "per GPU", setups, dec, pre, ()).knobs)))
    return tuple(out)


def best_single_efficiency_error(setups: tuple[Setup, ...], metric: Metric,
                                 overhead_s: float | None = None) -> float:
    """The smallest worst-case relative error ANY one efficiency can reach, the all-reduces at the
    engine's latency and the fixed cost held (by default fit (a)'s).

    Each prediction's error is (x / eff + a) / y - 1 = r u - q with u = 1 / eff, r = x / y and
    q = 1 - a / y: a line in u for every setup. The worst of |r u - q| is convex in u and least where
    a rising piece meets a falling one, r_i u - q_i = -(r_j u - q_j), so those crossings are the
    candidates (i = j is one setup's zero). With no fixed part (q = 1) and two setups this is the
    familiar (r_max - r_min) / (r_max + r_min).
    """
    if overhead_s is None:
        overhead_s = ENGINE_STEP_OVERHEAD_S if metric == "decode" else 0.0
    lines = [(kernel_s(s, metric) / s.measured_s(metric),
              1 - fixed_s(s, metric, _held(metric, overhead_s)) / s.measured_s(metric)) for s in setups]
    candidates = [(qi + qj) / (ri + rj) for ri, qi in lines for rj, qj in lines]
    return min(max(abs(r * u - q) for r, q in lines) for u in candidates if u > 0)


# ----------------------------------------------------- fit (c): prefill by GEMM size


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
    allreduce_wire_s: float  # those bytes at the link's datasheet rate per direction
    allreduce_s: float  # the engine's all-reduces: the wire time plus a latency each

    @property
    def allreduce_latency_s(self) -> float:
        return self.allreduce_s - self.allreduce_wire_s

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
    m = catalog_model(s.model)
    wire = replica(s, ROOFLINE)
    engine = replica(s, Knobs(allreduce_latency_s=ENGINE_ALLREDUCE_LATENCY_S))
    peak = wire.hw.peak(PRECISION)
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
    # The engine's causal attention FLOP: every token against each earlier one.
    attention_flop = wire.prefill_flops(tokens) - tokens * wire.weight_flops_per_token
    wire_s = wire.allreduce_s(tokens)
    return ProfiledPrefill(
        gemms=gemms,
        attention_s=attention_flop / wire.peak_flops,
        allreduce_bytes=wire_s * wire.hw.link_Bps_per_direction,
        allreduce_wire_s=wire_s,
        allreduce_s=engine.allreduce_s(tokens),
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


EFFICIENCY_FIELDS = ("hbm_efficiency", "decode_mfu", "prefill_mfu", "step_overhead_ms", "allreduce_latency_us")


def app_default_efficiencies() -> dict[str, Counter]:
    """Default value of every efficiency knob across the written serving pages: field -> Counter.

    Read from the pages' Params, so the validation page describes the defaults the app really
    ships (the engine's, or a page's own where its question states another figure).
    """
    from models.registry import written  # lazy: the registry imports every question module

    out: dict[str, Counter] = {f: Counter() for f in EFFICIENCY_FIELDS}
    for q in written():
        if q.track != "serving":
            continue
        for field, info in q.Params.model_fields.items():
            if field in out and isinstance(info.default, (int, float)) and not isinstance(info.default, bool):
                out[field][float(info.default)] += 1
    return out


def app_default_knobs() -> Knobs:
    """The engine's default efficiencies and fixed costs: what a serving page predicts unless told."""
    return ENGINE_DEFAULTS
