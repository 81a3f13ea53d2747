"""The engine's knobs, declared once: every LLM page composes these groups into its Params.

    class Params(TrafficKnobs, EngineKnobs):      # groups listed last-first: pydantic orders the
        ...                                        # fields of later bases first, so the engine leads

A page that wants another default (a GB200 rack, a 1T MoE) derives the group with
`with_defaults(EngineKnobs, gpu="GB200 (NVL72)")`: the same knob, another starting value. The
custom accelerator's and the custom shape's numbers show only while "Custom" is picked.

`replica(p)` turns the knobs into the roofline's Replica; `problem(p)` says in a sentence why a
scenario cannot run (a format the part lacks, a TP wider than its fabric, weights that do not fit).
"""

from __future__ import annotations

import dataclasses
from functools import lru_cache
from typing import Annotated, Any, Literal

from pydantic import create_model, model_validator
from pydantic.fields import FieldInfo

from models.catalog import HBM_USABLE_FRACTION, LLM, model as catalog_model
from models.core import Knob, StrictModel
from models.engine import hardware
from models.engine.defaults import (DEFAULT_ALLREDUCE_LATENCY_US, DEFAULT_DECODE_MFU, DEFAULT_HBM_EFFICIENCY,
                                     DEFAULT_PREFILL_MFU, DEFAULT_STEP_OVERHEAD_MS)
from models.engine.hardware import CUSTOM, Hardware
from models.engine.precision import ComputePrecision, KvPrecision, WeightPrecision
from models.engine.roofline import Replica
from models.engine.shape import with_counted_params

Accelerator = Literal["H100 SXM", "H200", "B200", "GB200 (NVL72)", "H800", "A100 80GB", "A100 40GB", "MI300X",
                      "TPU v5e", "TPU v5p", "Custom"]
ModelChoice = Literal["Llama-3-8B", "Llama-3-70B", "Llama-3.1-405B", "Mixtral-8x7B", "DeepSeek-V3", "Kimi-K2 1T",
                      "LLaMA-2-13B", "Custom"]
TensorParallel = Literal[1, 2, 4, 8, 16, 32, 64, 72]

ENGINE_FOLD = "Engine efficiencies and fixed costs"

CATALOG_ACCELERATORS = tuple(a for a in Accelerator.__args__ if a != CUSTOM)
CATALOG_MODELS = tuple(m for m in ModelChoice.__args__ if m != CUSTOM)
_GPU_CUSTOM = ("gpu", CUSTOM)
_MODEL_CUSTOM = ("model", CUSTOM)



class ModelKnobs(StrictModel):
    model: Annotated[ModelChoice, Knob(
        "Model", help="A shape from the catalog, or Custom to type in a model's shape.",
        draw_choices=CATALOG_MODELS[:4])] = "Llama-3-70B"
    custom_layers: Annotated[int, Knob("Custom model: layers", "", 1, 200, only_if=_MODEL_CUSTOM, help="Transformer blocks (Llama-3-70B: 80).")] = 80
    custom_d_model: Annotated[int, Knob("Custom model: d_model", "", 256, 32768, log=True, only_if=_MODEL_CUSTOM, help="Width of the residual stream (Llama-3-70B: 8,192); each all-reduce carries this many values a token.")] = 8192
    custom_heads: Annotated[int, Knob("Custom model: attention heads", "", 1, 256, only_if=_MODEL_CUSTOM, help="Query heads per layer (Llama-3-70B: 64).")] = 64
    custom_kv_heads: Annotated[int, Knob("Custom model: KV heads", "", 1, 256, only_if=_MODEL_CUSTOM,
                                         help="Equal to the heads for MHA; fewer for GQA.")] = 8
    custom_head_dim: Annotated[int, Knob("Custom model: head dimension", "", 32, 512, only_if=_MODEL_CUSTOM, help="Width of one head (usually d_model / heads; 128 for most Llama models).")] = 128
    custom_ffn_dim: Annotated[int, Knob("Custom model: MLP width", "", 256, 131072, log=True, only_if=_MODEL_CUSTOM,
                                        help="The gated (SwiGLU) MLP's hidden width of a dense layer.")] = 28672
    custom_vocab: Annotated[int, Knob("Custom model: vocabulary", "tokens", 1000, 300000, log=True,
                                      only_if=_MODEL_CUSTOM, help="Tokens in the vocabulary: the embedding and output matrices are vocabulary x d_model.")] = 128256
    custom_experts: Annotated[int, Knob("Custom model: routed experts", "", 0, 512, only_if=_MODEL_CUSTOM,
                                        help="0 for a dense model.")] = 0
    custom_experts_per_token: Annotated[int, Knob("Custom model: experts per token", "", 1, 16, only_if=_MODEL_CUSTOM, help="Routed experts each token runs through (Mixtral: 2, DeepSeek-V3: 8).")] = 2
    custom_shared_experts: Annotated[int, Knob("Custom model: shared experts", "", 0, 8, only_if=_MODEL_CUSTOM, help="Experts every token runs through besides the routed ones (DeepSeek-V3: 1).")] = 0
    custom_moe_ffn_dim: Annotated[int, Knob("Custom model: expert MLP width", "", 128, 65536, log=True,
                                            only_if=_MODEL_CUSTOM, help="Hidden width of one expert's MLP (DeepSeek-V3: 2,048).")] = 2048
    custom_dense_layers: Annotated[int, Knob("Custom model: dense layers before the MoE ones", "", 0, 16,
                                             only_if=_MODEL_CUSTOM, help="Leading layers with a dense MLP instead of experts (DeepSeek-V3: 3).")] = 0
    custom_kv_lora_rank: Annotated[int, Knob("Custom model: MLA latent width", "", 0, 4096, only_if=_MODEL_CUSTOM,
                                             help="0: standard attention. Above 0: the KV cache holds this latent "
                                                  "plus the RoPE key per token and layer (DeepSeek-V3: 512).")] = 0
    custom_qk_rope_head_dim: Annotated[int, Knob("Custom model: MLA RoPE key width", "", 0, 256,
                                                 only_if=_MODEL_CUSTOM, help="With MLA, the RoPE part of each key, cached beside the latent (DeepSeek-V3: 64).")] = 64


class AcceleratorKnobs(ModelKnobs):
    gpu: Annotated[Accelerator, Knob(
        "Accelerator", help="A part from the catalog (see Reference), or Custom to type in its datasheet.",
        draw_choices=("H100 SXM", "H200", "B200", "MI300X"))] = "H100 SXM"
    custom_hbm_GB: Annotated[float, Knob("Custom part: HBM", "GB", 8, 1024, log=True, only_if=_GPU_CUSTOM, help="Memory on one accelerator, from its datasheet (H100 SXM: 80 GB).")] = 80
    custom_hbm_TBps: Annotated[float, Knob("Custom part: HBM bandwidth", "TB/s", 0.2, 20, log=True,
                                           only_if=_GPU_CUSTOM, help="Peak memory bandwidth of one accelerator (H100 SXM: 3.35 TB/s).")] = 3.35
    custom_bf16_TFLOPs: Annotated[float, Knob("Custom part: dense bf16", "TFLOP/s", 10, 10000, log=True,
                                              only_if=_GPU_CUSTOM, help="Dense (not sparse) bf16 tensor peak of one accelerator (H100 SXM: 989 TFLOP/s).")] = 989
    custom_fp8_TFLOPs: Annotated[float, Knob("Custom part: dense fp8 (0: none)", "TFLOP/s", 0, 20000, 1,
                                             only_if=_GPU_CUSTOM, help="Dense fp8 tensor peak; 0 for a part without fp8 (A100).")] = 1979
    custom_int8_TOPs: Annotated[float, Knob("Custom part: dense int8 (0: none)", "TOP/s", 0, 20000, 1,
                                            only_if=_GPU_CUSTOM, help="Dense int8 tensor peak; 0 for a part without it.")] = 1979
    custom_link_GBps: Annotated[float, Knob("Custom part: scale-up link, each way", "GB/s", 10, 2000, log=True,
                                            only_if=_GPU_CUSTOM, help="Scale-up fabric bandwidth per accelerator in one direction (H100 NVLink: 450 GB/s).")] = 450
    custom_domain: Annotated[int, Knob("Custom part: accelerators per scale-up domain", "", 1, 1024, log=True,
                                       only_if=_GPU_CUSTOM, help="Accelerators joined by that fabric (an HGX H100 board: 8; GB200 NVL72: 72); tensor parallelism stays inside it.")] = 8
    custom_nic_Gbps: Annotated[float, Knob("Custom part: network per accelerator", "Gb/s", 10, 3200, log=True,
                                           only_if=_GPU_CUSTOM, help="Scale-out network per accelerator (one 400 Gb/s NIC per H100 in most clusters).")] = 400


class ReplicaKnobs(AcceleratorKnobs):
    tp_degree: Annotated[TensorParallel, Knob(
        "Accelerators per replica (tensor parallel)", "GPUs", 1, 72,
        help="One replica's weights and KV split across this many; their HBM and bandwidth add up, and "
             "each layer pays two all-reduces over the scale-up fabric.", draw=(1, 8))] = 4
    weight_precision: Annotated[WeightPrecision, Knob(
        "Weights", help="Storage format of the weights: bytes per parameter. int8/int4 are weight-only "
                        "quantization: dequantized in the kernel, computed at the compute precision.",
        draw_choices=("bf16", "fp8"))] = "bf16"
    kv_precision: Annotated[KvPrecision, Knob(
        "KV cache", help="Storage format of the KV cache: fp8 or int8 halves the bytes a token costs.",
        draw_choices=("bf16",))] = "bf16"
    compute_precision: Annotated[ComputePrecision, Knob(
        "Compute", help="The tensor-core format the matrix multiplies run in: it picks the peak FLOP/s.",
        draw_choices=("bf16",))] = "bf16"
    usable_hbm_fraction: Annotated[float, Knob(
        "HBM usable for weights + KV", "", 0.5, 1.0, 0.01, percent=True,
        help="The rest holds activations, CUDA graphs and allocator slack (vLLM's default is 90%).",
        draw=(0.85, 0.95), fold=ENGINE_FOLD)] = 0.9


class EfficiencyKnobs(ReplicaKnobs):
    hbm_efficiency: Annotated[float, Knob(
        "Decode MBU (HBM bandwidth achieved)", "", 0.1, 1.0, 0.01, percent=True,
        help="Model bandwidth utilization: the share of peak HBM bandwidth a decode step reads at. 100% is "
             "the datasheet roofline. The default 80% is the accuracy page's fit to a vLLM run of Llama 3.1 70B "
             "on 8 × H200 (79.5%, with 1.9 ms a step).",
        draw=(0.6, 0.85), fold=ENGINE_FOLD)] = DEFAULT_HBM_EFFICIENCY
    decode_mfu: Annotated[float, Knob(
        "Decode MFU", "", 0.05, 1.0, 0.01, percent=True,
        help="Share of dense peak FLOP/s a decode step's skinny matrix multiplies reach when compute binds.",
        draw=(0.3, 0.6), fold=ENGINE_FOLD)] = DEFAULT_DECODE_MFU
    prefill_mfu: Annotated[float, Knob(
        "Prefill MFU", "", 0.05, 1.0, 0.01, percent=True,
        help="Share of dense peak FLOP/s prefill reaches; thousands of rows per GEMM run near peak. The "
             "default 60% is the accuracy page's fit to GPT-13B's prefills on A100.",
        draw=(0.35, 0.65), fold=ENGINE_FOLD)] = DEFAULT_PREFILL_MFU
    step_overhead_ms: Annotated[float, Knob(
        "Fixed cost per step", "ms", 0, 20, 0.1,
        help="Kernel launches and sampling, paid every step; the tensor-parallel all-reduces are computed "
             "from the fabric on top of it. The default 1.9 ms is the accuracy page's fit (with the 80% MBU) "
             "to a vLLM run on 8 × H200.", draw=(0.5, 3), fold=ENGINE_FOLD)] = DEFAULT_STEP_OVERHEAD_MS
    allreduce_latency_us: Annotated[float, Knob(
        "All-reduce latency", "µs", 0, 100, 0.5,
        help="The fixed cost of one tensor-parallel all-reduce (two per layer per step). 6 µs: a TP-8 "
             "all-reduce of 512 B on H100 with SGLang's custom kernel; the payload's time over the link "
             "is added on top.", draw=(3, 15), fold=ENGINE_FOLD)] = DEFAULT_ALLREDUCE_LATENCY_US
    attention_flops: Annotated[bool, Knob(
        "Count attention FLOP", help="Off: FLOP per token is the textbook 2 x parameters. On: plus QK^T and "
                                     "AV over the context, which grows with every token.", fold=ENGINE_FOLD)] = True


    @model_validator(mode="after")
    def _runs(self) -> "EfficiencyKnobs":
        why = problem(self)
        if why:
            raise ValueError(why)
        return self


EngineKnobs = EfficiencyKnobs


def take(group: type[StrictModel], name: str) -> Any:
    """One knob of a group, for a page that needs it without the rest of the group:
    `target_utilization: take(SloKnobs, "target_utilization") = 0.8` (same label, range and help)."""
    info = group.model_fields[name]
    return Annotated[(info.annotation, *info.metadata)]


def subset(group: type[StrictModel], name: str, **defaults: Any) -> type[StrictModel]:
    """Some of `group`'s knobs, as declared there, with these starting values: a page that builds
    its prompt from passages takes the request group's output and prefix-cache knobs, not its
    prompt length."""
    fields = {}
    for knob, value in defaults.items():
        info = group.model_fields[knob]
        fields[knob] = (info.annotation, FieldInfo.merge_field_infos(info, default=value))
    return create_model(name, __base__=StrictModel, **fields)


def without(group: type[StrictModel], *names: str) -> type[StrictModel]:
    """`group` less the knobs `names`, its checks kept: a page that only prefills takes the engine
    without its decode efficiencies, a page that never sizes a fleet the serving knobs without a
    utilization target, so the page shows no knob that moves none of its figures. The engine reads
    a knob that is not there at its default (`replica`)."""
    missing = set(names) - set(group.model_fields)
    if missing:
        raise KeyError(f"{group.__name__} has no knob {', '.join(sorted(missing))}")
    fields = {n: (info.annotation, info) for n, info in group.model_fields.items() if n not in names}
    checks = {d.cls_var_name: model_validator(mode=d.info.mode)(d.func)
              for d in group.__pydantic_decorators__.model_validators.values()
              if d.cls_var_name != "_check_knob_bounds"}  # StrictModel's own, inherited anyway
    return create_model(group.__name__, __base__=StrictModel, __validators__=checks, **fields)


def with_defaults(group: type[StrictModel], **defaults: Any) -> type[StrictModel]:
    """`group` with other starting values: the knobs themselves (labels, ranges) stay declared once."""
    fields = {}
    for name, value in defaults.items():
        info = group.model_fields[name]
        fields[name] = (info.annotation, FieldInfo.merge_field_infos(info, default=value))
    return create_model(group.__name__, __base__=group, **fields)


def with_draws(group: type[StrictModel], **draws: dict[str, Any]) -> type[StrictModel]:
    """`group` with other mock draws for some knobs (`model={"draw_choices": ("Kimi-K2 1T",
    "DeepSeek-V3")}`): a 1T-MoE question draws 1T MoE models, not the dense ones other pages draw.
    Only `draw` and `draw_choices` change; label, range and help stay declared once."""
    fields = {}
    for name, change in draws.items():
        if not set(change) <= {"draw", "draw_choices"}:
            raise ValueError(f"with_draws changes only draw and draw_choices, not {sorted(change)}")
        info = group.model_fields[name]
        merged = FieldInfo.merge_field_infos(info)
        merged.metadata = [dataclasses.replace(m, **change) if isinstance(m, Knob) else m for m in info.metadata]
        fields[name] = (info.annotation, merged)
    return create_model(group.__name__, __base__=group, **fields)


# ---------------------------------------------------------------------------------------------


@lru_cache(maxsize=None)
def _catalog_llm(name: str) -> LLM:
    return with_counted_params(catalog_model(name))


def llm(p: Any) -> LLM:
    """The model the knobs name, its parameters counted from its shape."""
    if p.model != CUSTOM:
        return _catalog_llm(p.model)
    mla = p.custom_kv_lora_rank > 0
    moe = p.custom_experts > 0
    shape = LLM(
        name="the custom model", layers=p.custom_layers, d_model=p.custom_d_model, heads=p.custom_heads,
        kv_heads=p.custom_kv_heads, head_dim=p.custom_head_dim, vocab=p.custom_vocab,
        total_params=1.0, active_params=1.0 if not moe else 0.5, source="typed in by the learner",
        attention="MLA" if mla else ("MHA" if p.custom_kv_heads == p.custom_heads else "GQA"),
        moe_experts=p.custom_experts if moe else None, experts_per_token=p.custom_experts_per_token if moe else None,
        shared_experts=p.custom_shared_experts if moe else 0,
        kv_lora_rank=p.custom_kv_lora_rank if mla else None, qk_rope_head_dim=p.custom_qk_rope_head_dim if mla else None,
        kv_cache_elems_per_token_per_layer=(p.custom_kv_lora_rank + p.custom_qk_rope_head_dim) if mla else None,
        ffn_dim=p.custom_ffn_dim, moe_ffn_dim=p.custom_moe_ffn_dim if moe else None,
        dense_layers=min(p.custom_dense_layers, p.custom_layers) if moe else 0, v_head_dim=p.custom_head_dim if mla else None,
    )
    return with_counted_params(shape)


@lru_cache(maxsize=None)
def _catalog_part(name: str) -> Hardware:
    return hardware.named(name)


def accelerator(p: Any) -> Hardware:
    if p.gpu != CUSTOM:
        return _catalog_part(p.gpu)
    return hardware.custom(p.custom_hbm_GB, p.custom_hbm_TBps, p.custom_bf16_TFLOPs, p.custom_fp8_TFLOPs,
                           p.custom_int8_TOPs, p.custom_link_GBps, p.custom_domain, p.custom_nic_Gbps)


# The last params turned into a Replica and the Replica: a solve asks for it several times (its
# own figures, the fleet, the cold-cache comparison) and the params are frozen, so one entry,
# matched by identity, serves them all. One tuple, swapped whole, so sessions in other threads
# never read a mismatched pair.
_last_replica: tuple[Any, Replica | None] = (None, None)


# A sweep solves one scenario with one non-engine knob moved, dozens of times per slider move:
# each point is a new Params object with the same engine. Replicas built from the same engine
# values are the same Replica (it depends on those fields alone), so they are kept by value too.
ENGINE_FIELDS: tuple[str, ...] = tuple(EngineKnobs.model_fields)
_by_engine_values: dict[tuple, Replica] = {}
_BY_VALUE_MAX = 128


def engine_values(p: Any) -> tuple:
    """The engine's knob values of `p` (None for a knob the page leaves out): what a Replica is built from."""
    return tuple(map(vars(p).get, ENGINE_FIELDS))  # pydantic models and namespaces keep fields in __dict__


def replica(p: Any) -> Replica:
    global _last_replica
    last_p, last_r = _last_replica
    if last_p is p:
        return last_r
    key = engine_values(p)
    r = _by_engine_values.get(key)
    if r is None:
        r = _build_replica(p)
        if len(_by_engine_values) >= _BY_VALUE_MAX:
            _by_engine_values.clear()  # rare (a custom shape typed digit by digit); a rebuild is cheap
        _by_engine_values[key] = r
    _last_replica = (p, r)
    return r


def _build_replica(p: Any) -> Replica:
    # A page built `without` some efficiency knobs (one that only prefills) runs those at the
    # engine's defaults; it shows no figure they would move.
    knob = lambda name, default: getattr(p, name, default)  # noqa: E731
    return Replica(
        llm(p), accelerator(p), p.tp_degree, weight_fmt=p.weight_precision, kv_fmt=p.kv_precision,
        compute_fmt=p.compute_precision, hbm_efficiency=knob("hbm_efficiency", DEFAULT_HBM_EFFICIENCY),
        decode_mfu=knob("decode_mfu", DEFAULT_DECODE_MFU), prefill_mfu=knob("prefill_mfu", DEFAULT_PREFILL_MFU),
        usable_hbm_fraction=knob("usable_hbm_fraction", HBM_USABLE_FRACTION),
        step_overhead_s=knob("step_overhead_ms", DEFAULT_STEP_OVERHEAD_MS) / 1000,
        allreduce_latency_s=knob("allreduce_latency_us", DEFAULT_ALLREDUCE_LATENCY_US) / 1e6,
        attention_flops=knob("attention_flops", True),
    )


def problem(p: Any) -> str | None:
    """Why this engine cannot run one sequence at all, in a sentence, or None."""
    if p.model == CUSTOM:
        if p.custom_heads % p.custom_kv_heads:
            return f"The custom model's {p.custom_heads} heads do not split into {p.custom_kv_heads} KV groups."
        if p.custom_experts and p.custom_experts_per_token > p.custom_experts:
            return "The custom model routes each token to more experts than it has."
    try:
        m = llm(p)
    except ValueError as e:
        return str(e)
    hw = accelerator(p)
    if not hw.has(p.compute_precision):
        return f"{hw.name} has no dense {p.compute_precision} rate; pick another compute precision."
    if p.tp_degree > hw.scale_up_domain:
        return (f"A replica of {p.tp_degree} is wider than {hw.name}'s scale-up domain of {hw.scale_up_domain}: "
                f"tensor parallelism needs every all-reduce on the fast fabric.")
    r = replica(p)
    if r.kv_room_bytes <= 0:
        return (f"{m.name} in {p.weight_precision} needs {r.weight_bytes / 1e9:,.0f} GB of weights, but "
                f"{p.tp_degree} × {hw.name} offer {r.usable_hbm_bytes / 1e9:,.0f} GB usable. Use more "
                f"accelerators per replica, a larger part or a smaller weight format.")
    return None
