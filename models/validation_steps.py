"""The accuracy page's numbers as one Derivation of named steps, as every other page's are.

`accuracy_steps()` records every figure content/validation.md prints: per setup and metric the
measurement (a lookup, with its source), the engine's roofline and the part an efficiency divides,
each fit's prediction and its error, the fits themselves (kind="search"), and the ratios, shares and
worst cases the prose quotes, each with the formula that makes it from the steps before it. The
values are models.validation's own (the fits and rows the page used to format directly), so a
formula that stopped matching its value would mean the prose and the model had drifted apart.

Keys: `<gpu>_<model>[_tp<n>]_<metric>_<what>` for a setup (`h200_70b_decode_measured_s`),
`<model>_fit_a_...` and `<gpu>_fit_b_...` for the fits, `profile_...` for the kernel profile.

Pure Python, deterministic; no Streamlit.
"""

from __future__ import annotations

import math
from dataclasses import replace
from functools import lru_cache

from models.catalog import gpu as catalog_gpu, model as catalog_model
from models.core import Derivation, values_only
from models.engine import hardware
from models.validation import (
    ENGINE_DEFAULTS,
    FIT_TOLERANCE,
    FT_A100_13B_PROFILE,
    LLM_ANALYSIS_TP2_PREFILL_MS,
    LLM_ANALYSIS_TP2_TP_COMM_MS,
    MAX_EXTRAPOLATION,
    MEGATRON_GEMM_BELOW_FLOPs,
    MEGATRON_GEMM_SHAPE,
    METRIC_LABELS,
    METRICS,
    PRECISION,
    PROFILED_HBM_CEILING,
    SETUPS,
    Setup,
    app_default_efficiencies,
    best_single_efficiency_error,
    breakdown,
    evaluate,
    fit_per_gpu,
    fit_per_model,
    fit_profiled,
    kernel_s,
    roofline_s,
    smallest_consistent_tp,
)

SETUP_PREFIX = {"13b-a100-tp1": "a100_13b_tp1", "13b-a100-tp2": "a100_13b_tp2",
                "70b-h200-tp8": "h200_70b", "8b-h200-tp8": "h200_8b"}
MODEL_PREFIX = {"GPT-13B": "gpt13b", "Llama-3-70B": "llama70b", "Llama-3-8B": "llama8b"}
GPU_PREFIX = {"A100 40GB": "a100", "H200": "h200"}
GEMM_KEYS = {"QKV projection": "qkv", "Attention output": "attn_out", "MLP up": "mlp_up", "MLP down": "mlp_down"}
ENGINE_NOTE = "the engine's Replica and Served (models/engine/), as every serving page runs them"


def _clean(x: float) -> float:
    """An exact fit's 1e-16 residue recorded as 0, never -0 (well inside any formula check's slack)."""
    return round(x, 12) + 0.0


def _abs_max(keys: list[str]) -> str:
    return "max(" + ", ".join(f"{{{k}}}, −{{{k}}}" for k in keys) + ")"


def _direction(errors: list[float]) -> str:
    lo, hi = min(errors), max(errors)
    if max(abs(lo), abs(hi)) <= FIT_TOLERANCE:
        return f"within ±{FIT_TOLERANCE:.0%}"
    return "too optimistic" if hi < 0 else ("too pessimistic" if lo > 0 else "off both ways")


def _measurements(d: Derivation, s: Setup, p: str) -> None:
    d.step(f"{p}_tp", f"{s.label}: tensor-parallel GPUs", s.tp, kind="lookup", note=s.source)
    d.step(f"{p}_prompt_tokens", f"{s.label}: prompt", s.prompt_tokens, kind="lookup", note=s.source)
    d.step(f"{p}_output_tokens", f"{s.label}: output", s.output_tokens, kind="lookup", note=s.source)
    for m in METRICS:
        d.step(f"{p}_{m}_measured_s", f"{s.label}: {METRIC_LABELS[m]}, measured", s.measured_s(m), "s",
               kind="lookup", note=f"{s.source} ({s.software})")
    b = breakdown(s)
    d.step(f"{p}_decode_context_tokens", f"{s.label}: average decode context", b.decode_context_tokens,
           noun="tokens", formula=f"{{{p}_prompt_tokens}} + {{{p}_output_tokens}} / 2")
    d.step(f"{p}_decode_bytes_per_gpu", f"{s.label}: bytes one decode step reads per GPU", b.decode_bytes_per_gpu, "B",
           note="weights / TP + KV of the average context / TP: " + ENGINE_NOTE)
    for m in METRICS:
        label = f"{s.label}: {METRIC_LABELS[m]}"
        d.step(f"{p}_{m}_roofline_s", f"{label} at 100% (no latency, no fixed cost)", roofline_s(s, m), "s",
               note=ENGINE_NOTE)
        d.step(f"{p}_{m}_kernel_s", f"{label}: the part an efficiency divides, at 100%", kernel_s(s, m), "s",
               note=("the step's bytes at the datasheet bandwidth" if m == "decode" else
                     "the prefill's FLOP at dense peak") + ": " + ENGINE_NOTE)
        d.step(f"{p}_{m}_allreduce_s", f"{label}: tensor-parallel all-reduces at the engine's latency",
               b.decode_allreduce_s if m == "decode" else b.prefill_allreduce_s, "s",
               note="2 per layer, each a latency plus the ring's bytes over the link: " + ENGINE_NOTE)


def _prediction(d: Derivation, p: str, m: str, tag: str, what: str, value: float, eff: str, cost: str | None) -> None:
    """A prediction (kernel / efficiency + all-reduces + fixed cost) and its error against the measurement."""
    formula = f"{{{p}_{m}_kernel_s}} / {{{eff}}} + {{{p}_{m}_allreduce_s}}" + (f" + {{{cost}}}" if cost else "")
    d.step(f"{p}_{m}_{tag}_s", f"{d[p + '_' + m + '_measured_s'].label.removesuffix(', measured')}: {what}",
           value, "s", formula=formula)
    d.step(f"{p}_{m}_{tag}_error", f"{what}: error against the measurement",
           _clean(value / d.value(f"{p}_{m}_measured_s") - 1), percent=True,
           formula=f"{{{p}_{m}_{tag}_s}} / {{{p}_{m}_measured_s}} − 1")


@lru_cache(maxsize=1)
def accuracy_steps() -> Derivation:
    """Every number of the accuracy page, in the order the page first needs them. Always whole
    steps, even when first asked for inside a sweep (ttft-slo-200ms reads a fit from it): the one
    cached copy is the page's too."""
    with values_only(False):
        return _accuracy_steps()


def _accuracy_steps() -> Derivation:
    d = Derivation()
    step = d.step
    per_model, per_gpu, (fc,) = fit_per_model(), fit_per_gpu(), fit_profiled()
    fa = {f.group: f for f in per_model}
    fb = {f.group: f for f in per_gpu}
    s13 = [s for s in SETUPS if s.model == "GPT-13B"]
    t1, t2 = (SETUP_PREFIX[s.key] for s in s13)

    # --- the engine's defaults, the target and the hardware ------------------------------------
    step("setups_count", "Published setups", len(SETUPS), kind="lookup", note="models.validation.SETUPS")
    step("measurements_count", "Measurements (a decode and a prefill per setup)", 2 * len(SETUPS),
         formula="2 × {setups_count}")
    step("fit_tolerance", "The error a fitted model should stay within", FIT_TOLERANCE, percent=True, kind="lookup",
         note="the error the issue asks a fitted model to stay within")
    engine = "models/engine/defaults.py and EfficiencyKnobs: what every serving page predicts unless told"
    step("engine_mbu", "The engine's decode MBU", ENGINE_DEFAULTS.hbm_efficiency, percent=True, kind="lookup", note=engine)
    step("engine_prefill_mfu", "The engine's prefill MFU", ENGINE_DEFAULTS.prefill_mfu, percent=True, kind="lookup",
         note=engine)
    step("engine_allreduce_latency_s", "The engine's latency per all-reduce", ENGINE_DEFAULTS.allreduce_latency_s, "s",
         kind="lookup", note="a measured TP-8 all-reduce of a small message on H100; " + engine)
    step("engine_step_cost_s", "The engine's fixed cost per decode step", ENGINE_DEFAULTS.step_overhead_s, "s",
         kind="lookup", note=engine)
    step("profiled_hbm_ceiling", "Best HBM efficiency the 13B run's profiling saw", PROFILED_HBM_CEILING,
         percent=True, kind="lookup", note="llm-analysis, examples/fastertransformer (hbm_memory_efficiency)")
    step("llm_analysis_tp2_prefill_s", "llm-analysis's own prediction of the 13B TP-2 prefill",
         LLM_ANALYSIS_TP2_PREFILL_MS / 1000, "s", kind="lookup", note="llm-analysis, examples/fastertransformer")
    step("llm_analysis_tp2_comm_s", "llm-analysis's all-reduce term for that prefill",
         LLM_ANALYSIS_TP2_TP_COMM_MS / 1000, "s", kind="lookup", note="llm-analysis, examples/fastertransformer")
    for name, g in GPU_PREFIX.items():
        hw = catalog_gpu(name)
        step(f"{g}_hbm_Bps", f"{name} HBM bandwidth", hw.hbm_Bps, "B/s", kind="lookup", note=hw.source)
        step(f"{g}_link_Bps", f"{name} scale-up link, each way", hw.nvlink_GBps_per_direction * 1e9, "B/s",
             kind="lookup", note=hw.source)
        step(f"{g}_peak_flops", f"{name} dense bf16 peak", hardware.named(name).peak(PRECISION), "FLOP/s",
             kind="lookup", note=hw.source)
    for name, mp in MODEL_PREFIX.items():
        cm = catalog_model(name)
        step(f"{mp}_layers", f"{name} layers", cm.layers, noun="layers", kind="lookup", note="the catalog's shape")
        step(f"{mp}_d_model", f"{name} model width", cm.d_model, kind="lookup", note="the catalog's shape")
        step(f"{mp}_allreduces_per_step", f"{name}: all-reduces per forward pass (one after attention, one after "
             "the MLP)", 2 * cm.layers, formula=f"2 × {{{mp}_layers}}")

    # --- the measurements and the engine's arithmetic for each ----------------------------------
    for s in SETUPS:
        _measurements(d, s, SETUP_PREFIX[s.key])

    # --- fit (a): one efficiency pair per model -------------------------------------------------
    for f in per_model:
        mp = MODEL_PREFIX[f.group]
        how = ("least squares in relative error over the model's measurements, the all-reduces at the engine's "
               "latency and its fixed cost per step held")
        step(f"{mp}_setups", f"{f.group}: setups measured", len(f.setups), kind="lookup", note="models.validation.SETUPS")
        step(f"{mp}_fit_a_mbu", f"{f.group}: fitted MBU (fit a)", f.decode.efficiency, percent=True, kind="search",
             note=how)
        step(f"{mp}_fit_a_prefill_mfu", f"{f.group}: fitted prefill MFU (fit a)", f.prefill.efficiency, percent=True,
             kind="search", note=how)
        for r in f.rows:
            p = SETUP_PREFIX[r.setup.key]
            eff = f"{mp}_fit_a_mbu" if r.metric == "decode" else f"{mp}_fit_a_prefill_mfu"
            _prediction(d, p, r.metric, "fit_a", "fit (a)", r.predicted_s, eff,
                        "engine_step_cost_s" if r.metric == "decode" else None)
        errors = [f"{SETUP_PREFIX[r.setup.key]}_{r.metric}_fit_a_error" for r in f.rows]
        step(f"{mp}_fit_a_max_error", f"{f.group}: largest error after fit (a)", _clean(f.max_abs_error), percent=True,
             formula=_abs_max(errors))
        step(f"{mp}_fit_a_verdict", f"{f.group}: what fit (a) can tell",
             "a real test: one pair for two setups" if not f.decode.exact else "nothing: exact by construction (one setup)",
             kind="verdict", formula=f"{{{mp}_setups}} setups against 2 unknowns")
    step("gpt13b_fit_a_decode_worst_error", "13B: worst decode error under fit (a)",
         max(abs(d.value(f"{p}_decode_fit_a_error")) for p in (t1, t2)), percent=True,
         formula=_abs_max([f"{t1}_decode_fit_a_error", f"{t2}_decode_fit_a_error"]))
    for p in (t1, t2):
        step(f"{p}_prefill_implied_mfu", "The MFU that alone would make this prefill exact",
             next(r for r in fa["GPT-13B"].rows if SETUP_PREFIX[r.setup.key] == p and r.metric == "prefill")
             .implied_efficiency, percent=True,
             formula=f"{{{p}_prefill_kernel_s}} / ({{{p}_prefill_measured_s}} − ({{{p}_prefill_roofline_s}} − "
                     f"{{{p}_prefill_kernel_s}}))")
    step("a100_13b_prefill_speedup", "13B prefill: measured speed-up from the second GPU",
         s13[0].prefill_ms / s13[1].prefill_ms, noun="×", formula=f"{{{t1}_prefill_measured_s}} / {{{t2}_prefill_measured_s}}")
    step("gpt13b_prefill_best_single_error", "13B prefill: the least worst-case error any one MFU reaches",
         best_single_efficiency_error(tuple(s13), "prefill"), percent=True, kind="search",
         note="the crossings of the setups' error lines in 1 / efficiency (models.validation.best_single_efficiency_error)")
    step("llm_analysis_tp2_prefill_error", "llm-analysis's TP-2 prefill against the measurement",
         LLM_ANALYSIS_TP2_PREFILL_MS / s13[1].prefill_ms - 1, percent=True,
         formula=f"{{llm_analysis_tp2_prefill_s}} / {{{t2}_prefill_measured_s}} − 1")
    step("decode_mbu_gap_70b_8b", "70B and 8B: gap between their fitted MBUs",
         abs(fa["Llama-3-70B"].decode.efficiency - fa["Llama-3-8B"].decode.efficiency), percent=True,
         formula="max({llama70b_fit_a_mbu} − {llama8b_fit_a_mbu}, {llama8b_fit_a_mbu} − {llama70b_fit_a_mbu})")

    # --- the smallest TP each vLLM run allows ---------------------------------------------------
    for s in SETUPS:
        tp_min = smallest_consistent_tp(s)
        if s.software != "vLLM" or tp_min is None or tp_min == 1:
            continue
        p = SETUP_PREFIX[s.key]
        step(f"{p}_min_tp", f"{s.label}: smallest TP whose roofline is not slower than the measurement", tp_min,
             kind="search", formula=f"the least TP in 1, 2, 4, 8 whose decode at 100% ≤ {{{p}_decode_measured_s}}")
        step(f"{p}_below_tp", "The layout below it", tp_min // 2, formula=f"{{{p}_min_tp}} / 2")
        below, at = breakdown(replace(s, tp=tp_min // 2)), breakdown(replace(s, tp=tp_min))
        step(f"{p}_below_tp_decode_bytes_per_gpu", "Bytes per GPU per decode step there", below.decode_bytes_per_gpu,
             "B", note=ENGINE_NOTE)
        step(f"{p}_below_tp_decode_memory_s", "That read at full bandwidth", below.decode_memory_s, "s", note=ENGINE_NOTE)
        step(f"{p}_min_tp_decode_memory_s", "The decode floor at the smallest TP", at.decode_memory_s, "s",
             note=ENGINE_NOTE)
        step(f"{p}_min_tp_margin", "How far that floor sits under the measurement",
             1 - at.decode_memory_s / s.measured_s("decode"), percent=True,
             formula=f"1 − {{{p}_min_tp_decode_memory_s}} / {{{p}_decode_measured_s}}")

    # --- fit (b): per GPU, an efficiency and a fixed cost, solved exactly -------------------------
    for f in per_gpu:
        g = GPU_PREFIX[f.group]
        how = "the exact solve of two measurements for two unknowns (models.validation.fit_per_gpu)"
        step(f"{g}_fit_b_mbu", f"{f.group}: MBU (fit b)", f.decode.efficiency, percent=True, kind="search", note=how)
        step(f"{g}_fit_b_step_cost_s", f"{f.group}: fixed cost per decode step besides the all-reduces (fit b)",
             f.decode.overhead_s, "s", kind="search", note=how)
        step(f"{g}_fit_b_prefill_mfu", f"{f.group}: prefill MFU (fit b)", f.prefill.efficiency, percent=True,
             kind="search", note=how)
        step(f"{g}_fit_b_request_cost_s", f"{f.group}: fixed cost per request (fit b)", f.prefill.overhead_s, "s",
             kind="search", note=how)
        for m in METRICS:
            fit = f.fit(m)
            eff = f"{g}_fit_b_mbu" if m == "decode" else f"{g}_fit_b_prefill_mfu"
            step(f"{g}_fit_b_{m}_physical", f"{f.group}: is the {m} solve physical?", "yes" if fit.physical else "no",
                 kind="verdict", formula=f"{{{eff}}} ≤ 1 and the fixed cost ≥ 0")
        for r in f.rows:
            p = SETUP_PREFIX[r.setup.key]
            cost = f"{g}_fit_b_step_cost_s" if r.metric == "decode" else f"{g}_fit_b_request_cost_s"
            eff = f"{g}_fit_b_mbu" if r.metric == "decode" else f"{g}_fit_b_prefill_mfu"
            _prediction(d, p, r.metric, "fit_b", "fit (b)", r.predicted_s, eff, cost)
        step(f"{g}_fit_b_max_error", f"{f.group}: largest error after fit (b)", _clean(f.max_abs_error), percent=True,
             formula=_abs_max([f"{SETUP_PREFIX[r.setup.key]}_{r.metric}_fit_b_error" for r in f.rows]))
    for p in ("h200_70b", "h200_8b"):
        step(f"{p}_fixed_share", "Fixed cost and all-reduces: share of the measured decode step",
             (d.value("h200_fit_b_step_cost_s") + d.value(f"{p}_decode_allreduce_s")) / d.value(f"{p}_decode_measured_s"),
             percent=True, formula=f"({{h200_fit_b_step_cost_s}} + {{{p}_decode_allreduce_s}}) / {{{p}_decode_measured_s}}")
    a100 = fb["A100 40GB"]
    step("a100_fit_b_vs_profile", "A100 decode MBU against the profiled best",
         "above" if a100.decode.efficiency > PROFILED_HBM_CEILING else "within", kind="verdict",
         formula="{a100_fit_b_mbu} against {profiled_hbm_ceiling}")

    # --- fit (c): prefill by GEMM size ----------------------------------------------------------
    prof = FT_A100_13B_PROFILE
    step("profile_tokens", "Tokens in the profiled GEMMs", prof.large.m, kind="lookup", note=prof.source)
    for tag, kern in (("mlp", prof.large), ("attn", prof.small)):
        step(f"profile_{tag}_k", f"Profiled {kern.name}: k", kern.k, kind="lookup", note=prof.source)
        step(f"profile_{tag}_n", f"Profiled {kern.name}: n", kern.n, kind="lookup", note=prof.source)
        step(f"profile_{tag}_flop", f"Profiled {kern.name}: FLOP", kern.flop, "FLOP",
             formula=f"2 FLOP × {{profile_tokens}} × {{profile_{tag}_k}} × {{profile_{tag}_n}}")
        step(f"profile_{tag}_s", f"Profiled {kern.name}: fastest instance", kern.measured_s, "s", kind="lookup",
             note=prof.source)
        step(f"profile_{tag}_efficiency", f"Profiled {kern.name}: share of peak", prof.measured_efficiency(kern),
             percent=True, formula=f"{{profile_{tag}_flop}} / ({{a100_peak_flops}} × {{profile_{tag}_s}})")

    def line(flop_key: str) -> str:
        return ("{profile_attn_efficiency} + ({profile_mlp_efficiency} − {profile_attn_efficiency}) × "
                f"log({{{flop_key}}} / {{profile_attn_flop}}) / log({{profile_mlp_flop}} / {{profile_attn_flop}})")

    mm, kk, nn = MEGATRON_GEMM_SHAPE
    step("megatron_gemm_tokens", "Megatron's GEMM: m", mm, kind="lookup", note="arXiv 2104.05158, Figure 14")
    step("megatron_gemm_k", "Megatron's GEMM: k", kk, kind="lookup", note="arXiv 2104.05158, Figure 14")
    step("megatron_gemm_n", "Megatron's GEMM: n", nn, kind="lookup", note="arXiv 2104.05158, Figure 14")
    step("megatron_gemm_flop", "Megatron's GEMM: FLOP", 2.0 * mm * kk * nn, "FLOP",
         formula="2 FLOP × {megatron_gemm_tokens} × {megatron_gemm_k} × {megatron_gemm_n}")
    step("megatron_gemm_line_efficiency", "The profile line at that size", prof.efficiency(2.0 * mm * kk * nn),
         percent=True, formula=line("megatron_gemm_flop"))
    step("megatron_gemm_line_flops", "What the line predicts for it",
         prof.efficiency(2.0 * mm * kk * nn) * hardware.named(prof.gpu).peak(PRECISION), "FLOP/s",
         formula="{megatron_gemm_line_efficiency} × {a100_peak_flops}")
    step("megatron_gemm_measured_below_flops", "Megatron's measurement of that GEMM: under", MEGATRON_GEMM_BELOW_FLOPs,
         "FLOP/s", kind="lookup", note="arXiv 2104.05158, Figure 14, as kipply cites it")
    step("profile_max_extrapolation", "Furthest the line extends below the smaller kernel", MAX_EXTRAPOLATION,
         noun="×", kind="lookup", note="models.validation.MAX_EXTRAPOLATION")
    cm13 = catalog_model("GPT-13B")
    step("gpt13b_qkv_width", "13B: width of the fused Q, K and V projection", (cm13.heads + 2 * cm13.kv_heads) * cm13.head_dim,
         kind="lookup", note="(heads + 2 × KV heads) × head dim, the catalog's shape")
    step("gpt13b_attn_width", "13B: width of the attention heads", cm13.heads * cm13.head_dim, kind="lookup",
         note="heads × head dim, the catalog's shape")
    step("gpt13b_mlp_width", "13B: MLP width", s13[0].mlp_width, formula="4 × {gpt13b_d_model}")
    widths = {"qkv": ("gpt13b_d_model", "gpt13b_qkv_width", "n"), "attn_out": ("gpt13b_attn_width", "gpt13b_d_model", "k"),
              "mlp_up": ("gpt13b_d_model", "gpt13b_mlp_width", "n"), "mlp_down": ("gpt13b_mlp_width", "gpt13b_d_model", "k")}
    for s, part, r in zip(fc.setups, fc.parts, fc.rows):
        p = SETUP_PREFIX[s.key]
        for gm in part.gemms:
            gk = f"{p}_{GEMM_KEYS[gm.name]}"
            k_of, n_of, split = widths[GEMM_KEYS[gm.name]]
            for dim, of, value in (("k", k_of, gm.k), ("n", n_of, gm.n)):
                step(f"{gk}_{dim}", f"{s.label}, {gm.name}: {dim} on one GPU", value,
                     formula=f"{{{of}}} / {{{p}_tp}}" if dim == split else f"{{{of}}}")
            step(f"{gk}_flop", f"{s.label}, {gm.name}: FLOP per layer on one GPU", gm.flop, "FLOP",
                 formula=f"2 FLOP × {{{p}_prompt_tokens}} × {{{gk}_k}} × {{{gk}_n}}")
            step(f"{gk}_efficiency", f"{s.label}, {gm.name}: share of peak at that size", gm.efficiency, percent=True,
                 formula="{profile_mlp_efficiency}" if gm.flop >= prof.large.flop else line(f"{gk}_flop"))
            step(f"{gk}_s", f"{s.label}, {gm.name}: all layers", gm.seconds, "s",
                 formula=f"{{gpt13b_layers}} × {{{gk}_flop}} / ({{a100_peak_flops}} × {{{gk}_efficiency}})")
        effs = [f"{{{p}_{GEMM_KEYS[gm.name]}_efficiency}}" for gm in part.gemms]
        step(f"{p}_gemm_min_efficiency", f"{s.label}: least efficient GEMM", min(gm.efficiency for gm in part.gemms),
             percent=True, formula="min(" + ", ".join(effs) + ")")
        step(f"{p}_gemm_max_efficiency", f"{s.label}: most efficient GEMM", max(gm.efficiency for gm in part.gemms),
             percent=True, formula="max(" + ", ".join(effs) + ")")
        step(f"{p}_fit_c_gemm_s", f"{s.label}: the GEMMs", part.gemm_s, "s",
             formula=" + ".join(f"{{{p}_{GEMM_KEYS[gm.name]}_s}}" for gm in part.gemms))
        step(f"{p}_fit_c_attention_s", f"{s.label}: causal attention core at peak", part.attention_s, "s",
             note="the engine's causal attention FLOP at dense peak")
        step(f"{p}_fit_c_allreduce_bytes", f"{s.label}: all-reduce bytes per GPU each way", part.allreduce_bytes, "B",
             note=ENGINE_NOTE)
        step(f"{p}_fit_c_allreduce_wire_s", f"{s.label}: those bytes over the link", part.allreduce_wire_s, "s",
             formula=f"{{{p}_fit_c_allreduce_bytes}} / {{a100_link_Bps}}")
        step(f"{p}_fit_c_allreduce_latency_s", f"{s.label}: the all-reduces' latency", part.allreduce_latency_s, "s",
             formula=f"{{{p}_prefill_allreduce_s}} − {{{p}_fit_c_allreduce_wire_s}}")
        step(f"{p}_fit_c_parts_s", f"{s.label}: the parts, nothing fitted", part.total_s, "s",
             formula=f"{{{p}_fit_c_gemm_s}} + {{{p}_fit_c_attention_s}} + {{{p}_prefill_allreduce_s}}")
        if p == t1:
            step("fit_c_fixed_s", "Fit (c): the fixed part TP does not divide", fc.fixed_s, "s", kind="search",
                 note="least squares in relative error over the 13B's two prefills (models.validation.fit_profiled)")
        step(f"{p}_prefill_fit_c_s", f"{s.label}: prefill under fit (c)", r.predicted_s, "s",
             formula=f"{{{p}_fit_c_parts_s}} + {{fit_c_fixed_s}}")
        step(f"{p}_prefill_fit_c_error", "Fit (c): error against the measurement", _clean(r.error), percent=True,
             formula=f"{{{p}_prefill_fit_c_s}} / {{{p}_prefill_measured_s}} − 1")
    step("a100_13b_tp2_smallest_gemm_below", "How far below the smaller profiled kernel TP 2's smallest GEMM sits",
         prof.small.flop / min(gm.flop for gm in fc.parts[1].gemms), noun="×",
         formula="{profile_attn_flop} / min(" + ", ".join(f"{{{t2}_{k}_flop}}" for k in GEMM_KEYS.values()) + ")")
    step("a100_13b_parts_speedup", "Speed-up from the second GPU: the parts alone",
         fc.parts[0].total_s / fc.parts[1].total_s, noun="×", formula=f"{{{t1}_fit_c_parts_s}} / {{{t2}_fit_c_parts_s}}")
    step("a100_13b_flat_speedup", "Speed-up from the second GPU: one flat MFU (fit a)",
         d.value(f"{t1}_prefill_fit_a_s") / d.value(f"{t2}_prefill_fit_a_s"), noun="×",
         formula=f"{{{t1}_prefill_fit_a_s}} / {{{t2}_prefill_fit_a_s}}")

    # --- the validation's model: fit (c) where it applies, fit (a) elsewhere ----------------------
    final = [f"{SETUP_PREFIX[s.key]}_{m}_fit_c_error" if f"{SETUP_PREFIX[s.key]}_{m}_fit_c_error" in d
             else f"{SETUP_PREFIX[s.key]}_{m}_fit_a_error" for s in SETUPS for m in METRICS]
    worst = max(final, key=lambda k: abs(d.value(k)))
    step("validation_max_error", "The validation's largest error (fit c for the 13B prefills, fit a elsewhere)",
         max(abs(d.value(k)) for k in final), percent=True, formula=_abs_max(final))
    ws = next(s for s in SETUPS if worst.startswith(SETUP_PREFIX[s.key] + "_"))
    wm = next(m for m in METRICS if worst.startswith(f"{SETUP_PREFIX[ws.key]}_{m}_"))
    label = METRIC_LABELS[wm]
    step("validation_worst", "Where it is", f"{ws.label}, {label[:1].lower() + label[1:]}", kind="verdict",
         formula="the measurement whose error is " + "{validation_max_error}")

    # --- what the efficiencies stand for --------------------------------------------------------
    step("llama8b_weight_matrices", "8B: weight matrices a step reads (QKV, output, gate/up, down per layer)",
         4 * catalog_model("Llama-3-8B").layers, formula="4 × {llama8b_layers}")
    step("h200_8b_bytes_per_matrix", "8B at TP 8: bytes per weight matrix per GPU",
         d.value("h200_8b_decode_bytes_per_gpu") / d.value("llama8b_weight_matrices"), "B",
         formula="{h200_8b_decode_bytes_per_gpu} / {llama8b_weight_matrices}")
    step("h200_8b_matrix_read_s", "One such read at full bandwidth",
         d.value("h200_8b_bytes_per_matrix") / d.value("h200_hbm_Bps"), "s",
         formula="{h200_8b_bytes_per_matrix} / {h200_hbm_Bps}")
    step("llama70b_allreduce_payload_B", "70B at batch 1: one token's activations", 2.0 * catalog_model("Llama-3-70B").d_model,
         "B", formula="{llama70b_d_model} × 2 B")

    # --- what this says about the engine's defaults ---------------------------------------------
    counts = app_default_efficiencies()
    note = "counted over the serving pages' Params defaults (models.validation.app_default_efficiencies)"
    step("pages_with_mbu_knob", "Serving pages with an MBU knob", sum(counts["hbm_efficiency"].values()),
         kind="lookup", note=note)
    step("pages_at_engine_mbu", "Of those, starting at the engine's MBU", counts["hbm_efficiency"][ENGINE_DEFAULTS.hbm_efficiency],
         kind="lookup", note=note)
    step("pages_with_step_cost_knob", "Serving pages with a fixed-cost knob", sum(counts["step_overhead_ms"].values()),
         kind="lookup", note=note)
    step("pages_at_engine_step_cost", "Of those, starting at the engine's fixed cost",
         counts["step_overhead_ms"][ENGINE_DEFAULTS.step_overhead_s * 1000], kind="lookup", note=note)
    defaults = evaluate({s.model: ENGINE_DEFAULTS for s in SETUPS})
    for r in defaults:
        p = SETUP_PREFIX[r.setup.key]
        eff = "engine_mbu" if r.metric == "decode" else "engine_prefill_mfu"
        _prediction(d, p, r.metric, "default", "the engine's defaults", r.predicted_s, eff,
                    "engine_step_cost_s" if r.metric == "decode" else None)
    groups = {"large_decode": [(t1, "decode"), (t2, "decode"), ("h200_70b", "decode")],
              "small": [("h200_8b", "decode"), ("h200_8b", "prefill")],
              "large_prefill": [("h200_70b", "prefill"), (t1, "prefill"), (t2, "prefill")]}
    for name, members in groups.items():
        keys = [f"{p}_{m}_default_error" for p, m in members]
        step(f"defaults_{name}_verdict", "How the defaults do there", _direction([d.value(k) for k in keys]),
             kind="verdict", formula=", ".join(f"{{{k}}}" for k in keys) + " against ±{fit_tolerance}")
    f70, f13 = fa["Llama-3-70B"].prefill.efficiency, fa["GPT-13B"].prefill.efficiency
    side = ("above" if min(f70, f13) > ENGINE_DEFAULTS.prefill_mfu else
            "below" if max(f70, f13) < ENGINE_DEFAULTS.prefill_mfu else "either side of")
    step("defaults_prefill_mfu_side", "The fitted prefill MFUs against the default", side, kind="verdict",
         formula="{llama70b_fit_a_prefill_mfu} and {gpt13b_fit_a_prefill_mfu} against {engine_prefill_mfu}")
    step("h200_missing_step_cost_s", "Fixed cost per step the default leaves out on an H200 node",
         d.value("h200_fit_b_step_cost_s") - ENGINE_DEFAULTS.step_overhead_s, "s",
         formula="{h200_fit_b_step_cost_s} − {engine_step_cost_s}")
    assert all(math.isfinite(s.value) for s in d if s.is_numeric)
    return d
