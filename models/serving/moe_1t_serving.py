"""Serving a 1T-parameter mixture of experts on one GB200 NVL72 rack (seed 004).

The engine supplies the model (its parameters counted from its shape), the accelerator, the
formats and the efficiencies (`models/engine`); this page adds what expert parallelism does on
top of the engine's Replica of `tp_degree` GPUs:

    one routed expert (all MoE layers)   MoE layers x 3 x d_model x expert MLP width (gated)
    always-on weights                    active - top-k x one routed expert   (attention, shared expert,
                                         dense layer, embeddings, router)
    layout                               attention data-parallel (always-on weights on every GPU, each GPU
                                         decodes its own sequences against its own KV); routed experts
                                         spread ceil(experts / GPUs) per GPU per layer, the spare slots
                                         holding second copies of hot experts
    weight read per step                 always-on weights + resident experts x the share of them touched,
                                         1 - (1 - top-k / experts) ^ (tokens in the step) under uniform routing
    KV read per step                     sequences per GPU x context x KV bytes per token (the engine's)
    compute (hottest GPU)                tokens x (the engine's FLOP per token + (imbalance - 1) x the routed
                                         experts' 2 x top-k x expert), at the compute precision's peak x
                                         the decode MFU
    all-to-all                           two per MoE layer, instead of the engine's tensor-parallel
                                         all-reduces: dispatch (in the compute format) and combine (bf16) of
                                         d_model per routed token; the hottest GPU moves imbalance x the mean
                                         over the scale-up link (or the NIC) at an efficiency, plus a fixed
                                         latency per all-to-all
    decode step                          max(weight read + KV read, compute) + all-to-all + the engine's fixed
                                         cost per step, or max of all three + the fixed cost when two
                                         micro-batches overlap communication

The hottest GPU sets the step: every GPU waits for the combine of every layer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Annotated, Literal

from pydantic import model_validator

from models.catalog import INFER_FLOPS_PER_PARAM_TOKEN
from models.core import Derivation, Knob, StrictModel
from models.engine import hardware
from models.engine.knobs import EngineKnobs, accelerator, llm, replica, subset, with_defaults, with_draws, without
from models.engine.serving_knobs import RequestKnobs
from models.engine.precision import ACTIVATION_BYTES, bytes_per_element
from models.engine.record import record_model
from models.engine.roofline import ATTENTION_FLOPS_PER_MAC, Replica, floor_batch
from models.engine.shape import count
from models.units import format_number

# DeepEP's legacy (V1) README, low-latency kernels with pure RDMA on H800 at EP 8, 128 tokens per batch,
# 7168 hidden, top-8, FP8 dispatch and BF16 combine: the measured time of one dispatch and one combine.
DEEPEP_DISPATCH_US, DEEPEP_COMBINE_US = 77.0, 114.0

A2aPath = Literal["NVLink (scale-up)", "NIC (scale-out)"]
SCALE_UP: A2aPath = "NVLink (scale-up)"


class _ExpertParallelKnobs(StrictModel):
    batch_per_gpu: Annotated[
        int,
        Knob("Sequences per GPU", "sequences", 1, 1024, 1, log=True,
             help="Sequences each GPU decodes (attention is data-parallel: their KV lives on that GPU).",
             draw=(8, 128)),
    ] = 64
    context_tokens: Annotated[
        int,
        Knob("Average context", "tokens", 256, 131_072, 1, log=True,
             help="Tokens of KV an average sequence in the batch attends to.", draw=(1000, 32_000)),
    ] = 4000
    imbalance: Annotated[
        float,
        Knob("Router imbalance", "×", 1, 4, 0.05,
             help="Routed tokens on the hottest GPU over the mean (1 = perfectly balanced).", draw=(1.1, 2.5)),
    ] = 1.5
    a2a_path: Annotated[
        A2aPath,
        Knob("All-to-all over",
             help="NVLink: the accelerator's scale-up fabric (one NVLink domain of 72 on GB200 NVL72). NIC: "
                  "the same all-to-all over each GPU's scale-out network port, as if the experts spanned racks."),
    ] = SCALE_UP
    a2a_efficiency: Annotated[
        float,
        Knob("All-to-all link efficiency", "", 0.3, 0.95, 0.05, percent=True,
             help="Share of the link's one-way rate an all-to-all achieves.", draw=(0.5, 0.8)),
    ] = 0.7
    a2a_latency_us: Annotated[
        float,
        Knob("Latency per all-to-all", "µs", 1, 200, log=True,
             help="Fixed cost of one dispatch or combine (launch, synchronization), whatever its size.",
             draw=(5, 30)),
    ] = 10
    overlap_a2a: Annotated[
        bool,
        Knob("Overlap all-to-all with compute",
             help="Two micro-batches: one communicates while the other computes, so the step is the max."),
    ] = False
    gqa_kv_heads: Annotated[
        int,
        Knob("KV heads of the GQA comparison", "heads", 1, 64, 1,
             help="The cache the same model would carry with grouped-query attention instead of MLA.",
             draw=(4, 16), draw_choices=(4, 8, 16)),
    ] = 8


# The rack: GB200 NVL72's 72 GPUs on one NVLink domain; Kimi K2 ships its weights in FP8, and its
# expert GEMMs run in FP8 (the KV cache stays bf16).
# Its collectives are expert-parallel all-to-alls the page computes itself: no tensor-parallel all-reduce
# latency to show. The prefill MFU sizes the prefill GPUs that feed the rack.
_Engine = without(with_defaults(EngineKnobs, model="Kimi-K2 1T", gpu="GB200 (NVL72)", tp_degree=72,
                                weight_precision="fp8", compute_precision="fp8"), "allreduce_latency_us")
# A mock draws a trillion-scale MoE in FP8 on a part that serves one (not the dense models and
# H100s other pages draw, which either are refused or leave Mixtral as the only MoE that fits).
_Engine = with_draws(_Engine, model={"draw_choices": ("Kimi-K2 1T", "DeepSeek-V3")},
                     gpu={"draw_choices": ("GB200 (NVL72)", "B200", "H200")},
                     weight_precision={"draw_choices": ("fp8",)}, compute_precision={"draw_choices": ("fp8", "bf16")})


# The reply length (assumed): a sequence's context grows from its prompt to prompt + reply, so the average
# context is the prompt plus half the reply; with it the reply fixes the prompt, the request rate and so the
# prefill GPUs beside the rack.
_Reply = subset(RequestKnobs, "_Reply", output_tokens=1000)


class Params(_Engine, _ExpertParallelKnobs, _Reply):
    """The expert-parallel scenario first, then the engine's model, rack and efficiencies.

    `tp_degree` is the replica's GPU count as everywhere; here those GPUs split the experts and
    run attention data-parallel, so no tensor-parallel all-reduce is paid."""

    @classmethod
    def draw_together(cls, values: dict, rng) -> dict:
        """A mock's replica is the drawn part's whole NVLink domain (72 on GB200 NVL72, 8 on an
        HGX node), the group a deployment spreads the experts over, never 5 GPUs."""
        return {"tp_degree": hardware.named(values["gpu"]).scale_up_domain}

    @model_validator(mode="after")
    def _fits(self) -> "Params":
        m = llm(self)
        if not m.is_moe:
            raise ValueError(
                f"{m.name} is dense: there are no experts to spread over {self.tp_degree} GPUs. Pick a mixture "
                f"of experts, or size a dense model with tensor parallelism on the serving-platform page.")
        if self.output_tokens >= 2 * self.context_tokens:
            raise ValueError(
                f"An average context of {self.context_tokens:,} tokens is the prompt plus half the reply: a reply of "
                f"{self.output_tokens:,} tokens leaves no prompt. Shorten the reply below {2 * self.context_tokens:,} "
                "tokens or raise the context.")
        lay = layout(self)
        if lay.kv_room_bytes <= 0:
            raise ValueError(
                f"{m.name} in {self.weight_precision} puts {lay.weight_bytes_per_gpu / 1e9:,.0f} GB of weights "
                f"on each of {self.tp_degree} GPUs, more than the {lay.usable_bytes / 1e9:,.0f} GB usable. "
                "Use more GPUs or a smaller weight format.")
        need = self.batch_per_gpu * self.context_tokens * lay.kv_bytes_per_token
        if need > lay.kv_room_bytes:
            cap = floor_batch(lay.kv_room_bytes / (self.context_tokens * lay.kv_bytes_per_token))
            raise ValueError(
                f"{self.batch_per_gpu} sequences of {self.context_tokens:,} tokens need {need / 1e9:,.0f} GB of KV "
                f"per GPU; only {lay.kv_room_bytes / 1e9:,.0f} GB is left after the weights, room for {cap} "
                "sequences.")
        return self


# --- expert parallelism on top of the engine's Replica (candidates for models/engine) ------------


@dataclass(frozen=True)
class Layout:
    replica: Replica
    expert_params_per_layer: float
    expert_params: float  # one routed expert, summed over the MoE layers
    always_on_params: float
    moe_layers: int
    slots_per_gpu: int
    expert_bytes_per_gpu: float
    always_on_bytes_per_gpu: float
    weight_bytes_per_gpu: float
    usable_bytes: float
    kv_room_bytes: float
    kv_bytes_per_token: float
    hbm_Bps: float  # one GPU's, at the decode MBU
    decode_flops: float  # one GPU's, at the decode MFU
    link_Bps: float  # the all-to-all's path, one direction


@lru_cache(maxsize=256)
def _layout(p: Params) -> Layout:
    r = replica(p)
    m, hw = r.model, r.hw
    c = count(m)
    expert_layer = (3 if m.gated_mlp else 2) * m.d_model * m.moe_ffn_dim  # as the shape count has it
    expert = expert_layer * c.moe_layers
    always_on = m.active_params - m.experts_per_token * expert
    slots = math.ceil(m.moe_experts / p.tp_degree)
    exp_b, on_b = slots * expert * r.bytes_per_weight, always_on * r.bytes_per_weight
    usable = r.usable_hbm_bytes / r.tp
    link = hw.link_Bps_per_direction if p.a2a_path == SCALE_UP else hw.nic_Bps_per_direction
    return Layout(r, expert_layer, expert, always_on, c.moe_layers, slots, exp_b, on_b, exp_b + on_b, usable,
                  usable - exp_b - on_b, r.kv_bytes_per_token, r.achieved_hbm_Bps / r.tp,
                  r.peak_flops / r.tp * r.decode_mfu, link)


def layout(p: Params) -> Layout:
    return _layout(p)


@dataclass(frozen=True)
class StepTimes:
    touched: float
    weight_read_bytes: float
    weight_read_s: float
    kv_read_bytes: float
    kv_read_s: float
    compute_s: float
    a2a_bytes: float
    a2a_s: float
    overhead_s: float
    overlap: bool

    @property
    def memory_s(self) -> float:
        return self.weight_read_s + self.kv_read_s

    @property
    def overlapped_s(self) -> float:
        return max(self.memory_s, self.compute_s, self.a2a_s) + self.overhead_s

    @property
    def step_s(self) -> float:
        if self.overlap:
            return self.overlapped_s
        return max(self.memory_s, self.compute_s) + self.a2a_s + self.overhead_s


def a2a_bytes_per_elem(p: Params) -> float:
    """Dispatch carries activations in the format the expert GEMMs run in; combine returns bf16."""
    return bytes_per_element(p.compute_precision) + ACTIVATION_BYTES


def step_times(p: Params, batch: float, imbalance: float, link_Bps: float | None = None) -> StepTimes:
    """The decode step on the hottest GPU for `batch` sequences per GPU."""
    lay = layout(p)
    r, m = lay.replica, lay.replica.model
    k, experts, gpus = m.experts_per_token, m.moe_experts, p.tp_degree
    touched = 1 - (1 - k / experts) ** (batch * gpus)
    w_bytes = lay.always_on_bytes_per_gpu + lay.expert_bytes_per_gpu * touched
    kv_bytes = batch * p.context_tokens * lay.kv_bytes_per_token
    routed = INFER_FLOPS_PER_PARAM_TOKEN * k * lay.expert_params
    per_token = r.weight_flops_per_token + r.decode_attention_flops_per_position * p.context_tokens
    flops = batch * (per_token + (imbalance - 1) * routed)
    a2a_bytes = lay.moe_layers * imbalance * batch * k * m.d_model * a2a_bytes_per_elem(p) * (gpus - 1) / gpus
    link = lay.link_Bps if link_Bps is None else link_Bps
    a2a = a2a_bytes / (link * p.a2a_efficiency) + 2 * lay.moe_layers * p.a2a_latency_us * 1e-6
    return StepTimes(touched, w_bytes, w_bytes / lay.hbm_Bps, kv_bytes, kv_bytes / lay.hbm_Bps,
                     flops / lay.decode_flops, a2a_bytes, a2a, r.step_overhead_s, p.overlap_a2a)


# LMSYS, "Deploying DeepSeek on GB200 NVL72 with PD and Large Scale EP (Part II)", 2025-09-25: SGLang on
# DeepSeek V3/R1, 2,000-token prompts, BF16 attention and FP8 MoE (this page's formats), per GPU, prefill
# input tokens/s and decode output tokens/s.
SGLANG_GB200_PREFILL_TOKENS_PER_S, SGLANG_GB200_DECODE_TOKENS_PER_S = 18_471.0, 9_087.0

# Published rounded counts: Kimi K2 model card (1T total, 32B activated); DeepSeek-V3 report, arXiv 2412.19437
# (671B total, 37B activated per token).
MODEL_CARD_COUNTS = {"Kimi-K2 1T": "1T and 32B", "DeepSeek-V3": "671B and 37B"}


def solve(p: Params) -> Derivation:
    d = Derivation(p)
    lay = layout(p)
    r = lay.replica
    m, hw = r.model, accelerator(p)
    gpus = p.tp_degree

    d.step("serving_group", "The GPUs the experts spread over",
           f"GB200 NVL72: {format_number(gpus)} GPUs, one NVLink domain" if p.gpu == "GB200 (NVL72)"
           else f"{format_number(gpus)} × {p.gpu}", "1", formula="{tp_degree} × {gpu}", kind="lookup")

    # --- the model, counted from its shape ---
    record_model(d, p)
    d.step("routed_experts", "Routed experts per MoE layer (catalog)", m.moe_experts, "1", noun="experts")
    d.step("experts_per_token", "Routed experts each token picks (catalog)", m.experts_per_token, "1",
           noun="experts")
    d.step("moe_layers", "MoE layers: two all-to-alls each", lay.moe_layers, "1", noun="layers",
           formula=f"{m.layers} layers − {m.dense_layers} dense")
    d.step("hidden_size", "Hidden vector per routed token (d_model)", m.d_model, "1", noun="elements")
    d.step("expert_params_per_layer", "One routed expert in one layer (gate, up, down)", lay.expert_params_per_layer,
           "1", noun="parameters", formula=f"{3 if m.gated_mlp else 2} × {{hidden_size}} × {m.moe_ffn_dim}")
    d.step("expert_params", "One routed expert, summed over the MoE layers", lay.expert_params, "1",
           noun="parameters", formula="{moe_layers} × {expert_params_per_layer}")
    d.step("always_on_params", "Always-on weights: attention, shared expert, dense layers, embeddings, router",
           lay.always_on_params, "1", noun="parameters",
           formula="{active_params} − {experts_per_token} × {expert_params}")

    # --- weights alone fit in a handful of GPUs ---
    d.step("gpu_memory_bytes", f"{hw.name} HBM", hw.hbm_bytes, "B")
    usable = d.step("usable_bytes_per_gpu", "Usable HBM per GPU", lay.usable_bytes, "B",
                    formula="{gpu_memory_bytes} × {usable_hbm_fraction}")
    total_bytes = d.value("weight_bytes")
    min_cont = d.step("min_gpus_for_weights_continuous", "GPUs of HBM the weights fill, before rounding up",
                      total_bytes / usable, "1", noun="GPUs", formula="{weight_bytes} / {usable_bytes_per_gpu}")
    min_gpus = d.step("min_gpus_for_weights", "GPUs whose HBM holds the weights and nothing else",
                      math.ceil(min_cont - 1e-9), "1", noun="GPUs",
                      formula="ceil({min_gpus_for_weights_continuous})")
    d.step("gpu_hbm_Bps", f"{hw.name} HBM bandwidth", hw.hbm_Bps, "B/s")
    bw = d.step("effective_hbm_Bps", "HBM bandwidth a decode step achieves (the decode MBU)", lay.hbm_Bps, "B/s",
                formula="{gpu_hbm_Bps} × {hbm_efficiency}")
    overhead = d.step("step_overhead_s", "Fixed cost per step (launches, sampling)", r.step_overhead_s, "s",
                      formula="{step_overhead_ms}")
    w_min = d.step("weight_read_s_at_min_gpus", "Weight read per step if those GPUs served it",
                   total_bytes / min_gpus / bw, "s",
                   formula="{weight_bytes} / {min_gpus_for_weights} / {effective_hbm_Bps}")
    d.step("tokens_per_s_per_user_ceiling_at_min_gpus", "Fastest any user could go on them",
           1 / (w_min + overhead), "1/s", noun="tokens", formula="1 / ({weight_read_s_at_min_gpus} + {step_overhead_s})")

    # --- the cache ---
    d.step("layers", "Transformer layers (catalog)", m.layers, "1", noun="layers")
    mla = m.attention == "MLA"
    d.step("mla_elems_per_layer", ("MLA cache per token per layer: latent + decoupled RoPE key" if mla
                                   else f"{m.attention} cache per token per layer: K and V of every KV head"),
           m.kv_elems_per_token_per_layer, "1", noun="elements",
           formula=(f"{m.kv_lora_rank} + {m.qk_rope_head_dim}" if mla else f"2 × {m.kv_heads} × {m.head_dim}"))
    kv_tok = lay.kv_bytes_per_token
    d.step("head_dim", "Head dimension (catalog)", m.head_dim, "1", noun="dims")
    gqa = d.step("gqa_kv_bytes_per_token", "The same model with grouped-query attention",
                 2 * m.layers * p.gqa_kv_heads * m.head_dim * r.bytes_per_kv_element, "B",
                 formula="2 (K and V) × {layers} × {gqa_kv_heads} heads × {head_dim} × {bytes_per_kv_element}")
    d.step("mla_saving_vs_gqa", "GQA cache over this model's cache", gqa / kv_tok, "1", noun="×",
           formula="{gqa_kv_bytes_per_token} / {kv_bytes_per_token}")
    min_room = usable - total_bytes / min_gpus
    d.step("sequences_at_min_gpus", "Sequences at this context the minimum GPUs could also hold",
           floor_batch(max(0.0, min_gpus * min_room / (p.context_tokens * kv_tok))), "1", noun="sequences",
           formula="floor({min_gpus_for_weights} × ({usable_bytes_per_gpu} − {weight_bytes} / "
                   "{min_gpus_for_weights}) / ({context_tokens} × {kv_bytes_per_token}))")

    # --- memory plan per GPU on the rack ---
    d.step("slots_per_gpu", "Routed-expert slots per GPU per layer", lay.slots_per_gpu, "1", noun="experts",
           formula="ceil({routed_experts} / {tp_degree})")
    d.step("redundant_slots", "Spare slots per layer: second copies of hot experts",
           lay.slots_per_gpu * gpus - m.moe_experts, "1", noun="experts",
           formula="{slots_per_gpu} × {tp_degree} − {routed_experts}")
    d.step("expert_bytes_per_gpu", "Routed experts resident on one GPU", lay.expert_bytes_per_gpu, "B",
           formula="{slots_per_gpu} × {expert_params} × {bytes_per_param}")
    d.step("always_on_bytes_per_gpu", "Always-on weights, a full copy on every GPU", lay.always_on_bytes_per_gpu,
           "B", formula="{always_on_params} × {bytes_per_param}")
    w_gpu = d.step("weight_bytes_per_gpu", "Weights per GPU", lay.weight_bytes_per_gpu, "B",
                   formula="{expert_bytes_per_gpu} + {always_on_bytes_per_gpu}")
    d.step("rack_weight_copies", "Weight bytes on the rack over one copy", gpus * w_gpu / total_bytes, "1",
           noun="×", formula="{tp_degree} × {weight_bytes_per_gpu} / {weight_bytes}")
    room = d.step("kv_room_bytes_per_gpu", "HBM left for KV per GPU", lay.kv_room_bytes, "B",
                  formula="{usable_bytes_per_gpu} − {weight_bytes_per_gpu}")
    d.step("kv_tokens_per_gpu", "Tokens of KV per GPU", room / kv_tok, "1", noun="tokens",
           formula="{kv_room_bytes_per_gpu} / {kv_bytes_per_token}")
    cap_cont = d.step("max_batch_per_gpu_continuous", "Sequences per GPU whose KV fits, before the floor",
                      room / (p.context_tokens * kv_tok), "1", noun="sequences",
                      formula="{kv_room_bytes_per_gpu} / ({context_tokens} × {kv_bytes_per_token})")
    cap = d.step("max_batch_per_gpu", "Whole sequences per GPU whose KV fits at this context", floor_batch(cap_cont),
                 "1", noun="sequences", formula="floor({max_batch_per_gpu_continuous})")
    # The batch charts sweep as far as the KV fits, and at least to the scenario's batch.
    d.step("batch_chart_to", "The batch charts end at the KV's cap (or the scenario's batch, if larger)",
           max(2, int(cap), p.batch_per_gpu), "1", noun="sequences", formula="max(2, {max_batch_per_gpu}, {batch_per_gpu})")
    d.step("max_batch_per_gpu_gqa", "The same with the GQA cache", floor_batch(room / (p.context_tokens * gqa)),
           "1", noun="sequences",
           formula="floor({kv_room_bytes_per_gpu} / ({context_tokens} × {gqa_kv_bytes_per_token}))")
    d.step("rack_sequences", "Sequences the whole group holds at this context", gpus * cap, "1", noun="sequences",
           formula="{tp_degree} × {max_batch_per_gpu}")
    d.step("kv_bytes_per_gpu", "KV the scenario's batch occupies per GPU",
           p.batch_per_gpu * p.context_tokens * kv_tok, "B",
           formula="{batch_per_gpu} × {context_tokens} × {kv_bytes_per_token}")

    # --- the decode step on the hottest GPU ---
    st = step_times(p, p.batch_per_gpu, p.imbalance)
    d.step("global_batch", "Sequences decoding on the group", gpus * p.batch_per_gpu, "1", noun="sequences",
           formula="{tp_degree} × {batch_per_gpu}")
    d.step("experts_touched", "Resident experts a step touches (uniform routing)", st.touched, "1",
           percent=True,
           formula="1 − (1 − {experts_per_token} / {routed_experts})^{global_batch}")
    d.step("weight_read_bytes", "Weights one GPU reads per step", st.weight_read_bytes, "B",
           formula="{always_on_bytes_per_gpu} + {expert_bytes_per_gpu} × {experts_touched}")
    d.step("weight_read_s", "Weight read per step", st.weight_read_s, "s",
           formula="{weight_read_bytes} / {effective_hbm_Bps}")
    d.step("kv_read_bytes", "KV one GPU reads per step", st.kv_read_bytes, "B",
           formula="{batch_per_gpu} × {context_tokens} × {kv_bytes_per_token}")
    d.step("kv_read_s", "KV read per step", st.kv_read_s, "s", formula="{kv_read_bytes} / {effective_hbm_Bps}")
    d.step("memory_s", "Bytes side of the step", st.memory_s, "s", formula="{weight_read_s} + {kv_read_s}")
    d.step("gpu_peak_flops", f"{hw.name} dense {p.compute_precision} peak", hw.peak(p.compute_precision), "FLOP/s")
    d.step("gpu_decode_flops", "One GPU's decode compute at the decode MFU", lay.decode_flops, "FLOP/s",
           formula="{gpu_peak_flops} × {decode_mfu}")
    attn = r.decode_attention_flops_per_position
    width = (f"2 × {m.kv_lora_rank} + {m.qk_rope_head_dim}" if mla else f"{m.head_dim} + {m.head_dim}")
    d.step("attention_flops_per_position",
           ("MLA decode attention FLOP per cached token, all layers (latent absorbed)" if mla
            else "Attention FLOP per cached token, all layers (QK^T and AV)"), attn, "FLOP",
           formula=(f"{ATTENTION_FLOPS_PER_MAC} FLOP × {m.layers} layers × {m.heads} heads × ({width})"
                    if p.attention_flops else ""),
           note="0 when attention FLOP are not counted (the textbook 2 × parameters per token).")
    per_flop = lay.decode_flops
    routed = INFER_FLOPS_PER_PARAM_TOKEN * m.experts_per_token * lay.expert_params
    t_dense = d.step("dense_s_per_token", "Always-on GEMMs, one token", 2 * lay.always_on_params / per_flop, "s",
                     formula="2 FLOP × {always_on_params} / {gpu_decode_flops}")
    t_exp = d.step("expert_s_per_token", "Routed-expert GEMMs, one token (top-k experts)", routed / per_flop, "s",
                   formula="2 FLOP × {experts_per_token} × {expert_params} / {gpu_decode_flops}")
    t_attn = d.step("attention_s_per_token", "Attention, one token at this context",
                    attn * p.context_tokens / per_flop, "s",
                    formula="{attention_flops_per_position} × {context_tokens} / {gpu_decode_flops}")
    d.step("compute_s", "FLOP side on the hottest GPU", st.compute_s, "s",
           formula="{batch_per_gpu} × ({dense_s_per_token} + {imbalance} × {expert_s_per_token} + "
                   "{attention_s_per_token})")
    d.step("a2a_bytes_per_elem", f"Bytes per hidden element: dispatch ({p.compute_precision}) + combine (bf16)",
           a2a_bytes_per_elem(p), "B",
           formula=f"{format_bytes(bytes_per_element(p.compute_precision))} B (dispatch) + "
                   f"{format_bytes(ACTIVATION_BYTES)} B (combine)")
    d.step("a2a_link_Bps", f"{p.a2a_path} per GPU, one direction", lay.link_Bps, "B/s")
    d.step("a2a_bytes", "Bytes the hottest GPU moves each way per step, all MoE layers", st.a2a_bytes, "B",
           formula="{moe_layers} × {imbalance} × {batch_per_gpu} × {experts_per_token} × {hidden_size} × "
                   "{a2a_bytes_per_elem} × ({tp_degree} − 1) / {tp_degree}")
    d.step("a2a_latency_floor_s", "Fixed cost of the all-to-alls, whatever the batch",
           2 * lay.moe_layers * p.a2a_latency_us * 1e-6, "s", formula="2 × {moe_layers} × {a2a_latency_us}")
    d.step("all_to_all_s", "Dispatch + combine per step", st.a2a_s, "s",
           formula="{a2a_bytes} / ({a2a_link_Bps} × {a2a_efficiency}) + {a2a_latency_floor_s}")
    nic = step_times(p, p.batch_per_gpu, p.imbalance, link_Bps=hw.nic_Bps_per_direction)
    d.step("nic_Bps", f"{hw.name} scale-out NIC per GPU, one direction", hw.nic_Bps_per_direction, "B/s")
    d.step("all_to_all_over_nic_s", "The same all-to-all over the scale-out NIC", nic.a2a_s, "s",
           formula="{a2a_bytes} / ({nic_Bps} × {a2a_efficiency}) + {a2a_latency_floor_s}")
    nvl = step_times(p, p.batch_per_gpu, p.imbalance, link_Bps=hw.link_Bps_per_direction)
    d.step("nvlink_Bps", f"{hw.name} scale-up link per GPU, one direction", hw.link_Bps_per_direction, "B/s",
           kind="lookup")
    d.step("all_to_all_over_nvlink_s", "The same all-to-all over the scale-up link (NVLink)", nvl.a2a_s, "s",
           formula="{a2a_bytes} / ({nvlink_Bps} × {a2a_efficiency}) + {a2a_latency_floor_s}")
    step = d.step("decode_step_s", "Decode step (the hottest GPU's)", st.step_s, "s",
                  formula=("max({memory_s}, {compute_s}, {all_to_all_s}) + {step_overhead_s}" if p.overlap_a2a
                           else "max({memory_s}, {compute_s}) + {all_to_all_s} + {step_overhead_s}"))
    d.step("decode_step_no_overlap_s", "The step with the all-to-all after compute (no overlap)",
           replace(st, overlap=False).step_s, "s",
           formula="max({memory_s}, {compute_s}) + {all_to_all_s} + {step_overhead_s}")
    d.step("decode_step_if_overlapped_s", "The step if the all-to-all overlaps compute", st.overlapped_s, "s",
           formula="max({memory_s}, {compute_s}, {all_to_all_s}) + {step_overhead_s}")
    d.step("step_bound_by", "What sets the step",
           ("all-to-all" if p.overlap_a2a and st.a2a_s >= max(st.memory_s, st.compute_s)
            else "bandwidth" if st.memory_s >= st.compute_s else "compute"),
           formula="bytes {memory_s}, FLOP {compute_s}, all-to-all {all_to_all_s}", kind="verdict")
    d.step("tokens_per_s", "Tokens per second, the whole group", gpus * p.batch_per_gpu / step, "1/s",
           noun="tokens", formula="{global_batch} / {decode_step_s}")
    d.step("tokens_per_s_per_user", "Tokens per second each user sees", 1 / step, "1/s", noun="tokens",
           formula="1 / {decode_step_s}")
    d.step("tokens_per_s_per_gpu", "Tokens per second per GPU", p.batch_per_gpu / step, "1/s", noun="tokens",
           formula="{batch_per_gpu} / {decode_step_s}")

    # --- what the model card rounds the counted parameters to ---
    card = MODEL_CARD_COUNTS.get(p.model)
    d.step("model_card_counts", "How the model card rounds the total and active counts",
           f"the model card rounds them to {card}" if card else "the model card quotes rounded figures",
           formula="{model} model card", kind="lookup")

    # --- the all-to-all latency a measured library reports (DeepEP's low-latency kernels) ---
    deepep = d.step("deepep_a2a_latency_s",
                    "DeepEP low-latency kernels, mean of dispatch and combine (H800, EP 8, 128 tokens, RDMA)",
                    (DEEPEP_DISPATCH_US + DEEPEP_COMBINE_US) / 2 * 1e-6, "s",
                    formula=f"({DEEPEP_DISPATCH_US:g} µs + {DEEPEP_COMBINE_US:g} µs) / 2")
    floor_dp = d.step("a2a_latency_floor_at_deepep_s", "All-to-all fixed cost per step at DeepEP's measured time",
                      2 * lay.moe_layers * deepep, "s", formula="2 × {moe_layers} × {deepep_a2a_latency_s}")
    a2a_dp = st.a2a_s - 2 * lay.moe_layers * p.a2a_latency_us * 1e-6 + floor_dp
    d.step("all_to_all_at_deepep_s", "Dispatch + combine per step at DeepEP's measured time", a2a_dp, "s",
           formula="{all_to_all_s} − {a2a_latency_floor_s} + {a2a_latency_floor_at_deepep_s}")
    st_dp = replace(st, a2a_s=a2a_dp)
    step_dp = d.step("decode_step_at_deepep_s", "Decode step at DeepEP's measured all-to-all time", st_dp.step_s, "s",
                     formula=("max({memory_s}, {compute_s}, {all_to_all_at_deepep_s}) + {step_overhead_s}"
                              if p.overlap_a2a else
                              "max({memory_s}, {compute_s}) + {all_to_all_at_deepep_s} + {step_overhead_s}"))
    d.step("tokens_per_s_per_user_at_deepep", "Per-user speed at DeepEP's measured all-to-all time", 1 / step_dp,
           "1/s", noun="tokens", formula="1 / {decode_step_at_deepep_s}")
    d.step("tokens_per_s_at_deepep", "Group tokens/s at DeepEP's measured all-to-all time",
           gpus * p.batch_per_gpu / step_dp, "1/s", noun="tokens", formula="{global_batch} / {decode_step_at_deepep_s}")
    d.step("a2a_floor_share_at_deepep", "Share of that step the all-to-all's fixed cost takes", floor_dp / step_dp,
           "1", percent=True, formula="{a2a_latency_floor_at_deepep_s} / {decode_step_at_deepep_s}")

    # --- what imbalance costs ---
    bal = step_times(p, p.batch_per_gpu, 1.0)
    d.step("compute_balanced_s", "FLOP side with balanced routing", bal.compute_s, "s",
           formula="{batch_per_gpu} × ({dense_s_per_token} + {expert_s_per_token} + {attention_s_per_token})")
    d.step("all_to_all_balanced_s", "All-to-all with balanced routing", bal.a2a_s, "s",
           formula="{a2a_bytes} / {imbalance} / ({a2a_link_Bps} × {a2a_efficiency}) + {a2a_latency_floor_s}")
    d.step("decode_step_balanced_s", "The same step with perfectly balanced routing", bal.step_s, "s",
           formula=("max({memory_s}, {compute_balanced_s}, {all_to_all_balanced_s}) + {step_overhead_s}"
                    if p.overlap_a2a else
                    "max({memory_s}, {compute_balanced_s}) + {all_to_all_balanced_s} + {step_overhead_s}"))
    d.step("tokens_per_s_per_user_balanced", "Per-user speed with balanced routing", 1 / bal.step_s, "1/s",
           noun="tokens", formula="1 / {decode_step_balanced_s}")
    d.step("imbalance_throughput_loss", "Throughput the hottest GPU costs at this batch",
           1 - bal.step_s / st.step_s, "1", percent=True, formula="1 − {decode_step_balanced_s} / {decode_step_s}")
    share = d.step("expert_compute_share", "Routed experts' share of a token's compute (balanced)",
                   t_exp / (t_dense + t_exp + t_attn), "1", percent=True,
                   formula="{expert_s_per_token} / ({dense_s_per_token} + {expert_s_per_token} + "
                           "{attention_s_per_token})")
    d.step("imbalance_loss_compute_bound", "Loss once the step is all compute",
           1 - 1 / (1 + (p.imbalance - 1) * share), "1", percent=True,
           formula="1 − 1 / (1 + ({imbalance} − 1) × {expert_compute_share})")
    c_seq = d.step("compute_per_sequence_s", "FLOP time per sequence per step, hottest GPU",
                   t_dense + p.imbalance * t_exp + t_attn, "s",
                   formula="{dense_s_per_token} + {imbalance} × {expert_s_per_token} + {attention_s_per_token}")
    kv_seq = d.step("kv_read_per_sequence_s", "KV read time per sequence per step",
                    p.context_tokens * kv_tok / bw, "s",
                    formula="{context_tokens} × {kv_bytes_per_token} / {effective_hbm_Bps}")
    w_full = d.step("all_experts_read_s", "Reading every resident weight", lay.weight_bytes_per_gpu / bw, "s",
                    formula="{weight_bytes_per_gpu} / {effective_hbm_Bps}")
    d.step("compute_bound_batch_per_gpu", "Sequences per GPU where the FLOP side overtakes the bytes side",
           w_full / (c_seq - kv_seq) if c_seq > kv_seq else math.inf, "1", noun="sequences",
           formula="{all_experts_read_s} / ({compute_per_sequence_s} − {kv_read_per_sequence_s})" if c_seq > kv_seq
           else "none: the FLOP side per sequence {compute_per_sequence_s} never outgrows the KV read per sequence "
                "{kv_read_per_sequence_s}", kind="" if c_seq > kv_seq else "search")
    small = step_times(p, 1, p.imbalance)
    small_bal = step_times(p, 1, 1.0)
    d.step("decode_step_batch_1_s", "Decode step at one sequence per GPU", small.step_s, "s",
           formula="the hottest GPU's decode step with 1 sequence per GPU", kind="variant")
    d.step("decode_step_batch_1_balanced_s", "The same step with perfectly balanced routing", small_bal.step_s, "s",
           formula="the decode step with 1 sequence per GPU and balanced routing", kind="variant")
    d.step("imbalance_loss_batch_1", "Loss at one sequence per GPU (bandwidth- and latency-bound)",
           1 - small_bal.step_s / small.step_s, "1", percent=True,
           formula="1 − {decode_step_batch_1_balanced_s} / {decode_step_batch_1_s}")
    d.step("tokens_per_s_per_user_batch_1", "The fastest a user can go on this group", 1 / small.step_s, "1/s",
           noun="tokens", formula="1 / {decode_step_batch_1_s}")
    full = step_times(p, max(1, cap), p.imbalance)
    full_bal = step_times(p, max(1, cap), 1.0)
    d.step("decode_step_at_max_batch_s", "Decode step at the largest batch the KV allows (hottest GPU)",
           full.step_s, "s", formula="the hottest GPU's decode step with max(1, {max_batch_per_gpu}) per GPU",
           kind="variant")
    d.step("decode_step_at_max_batch_balanced_s", "The same step with perfectly balanced routing", full_bal.step_s,
           "s", formula="the decode step with max(1, {max_batch_per_gpu}) per GPU and balanced routing",
           kind="variant")
    d.step("imbalance_loss_at_max_batch", "Loss at the largest batch the KV allows",
           1 - full_bal.step_s / full.step_s, "1", percent=True,
           formula="1 − {decode_step_at_max_batch_balanced_s} / {decode_step_at_max_batch_s}")
    d.step("tokens_per_s_at_max_batch", "Group tokens/s at that batch", gpus * max(1, cap) / full.step_s, "1/s",
           noun="tokens", formula="{tp_degree} × max(1, {max_batch_per_gpu}) / {decode_step_at_max_batch_s}")
    d.step("tokens_per_s_per_user_at_max_batch", "Per-user speed at that batch", 1 / full.step_s, "1/s",
           noun="tokens", formula="1 / {decode_step_at_max_batch_s}")
    d.step("tokens_per_s_per_gpu_at_max_batch", "Tokens per second per GPU at that batch",
           max(1, cap) / full.step_s, "1/s", noun="tokens", formula="max(1, {max_batch_per_gpu}) / {decode_step_at_max_batch_s}")

    # --- what a measured deployment decodes per GPU (SGLang, DeepSeek V3/R1 on GB200 NVL72) ---
    measured_dec = d.step("sglang_decode_tokens_per_s_per_gpu",
                          "SGLang's measured decode, DeepSeek V3/R1 on GB200 NVL72, 2,000-token prompts (BF16 "
                          "attention, FP8 MoE)", SGLANG_GB200_DECODE_TOKENS_PER_S, "1/s", noun="tokens", kind="lookup",
                          note="LMSYS blog, GB200 NVL72 Part II (2025-09-25), output tokens/s per GPU")
    here, at_cap = p.batch_per_gpu / step, max(1, cap) / full.step_s
    lo, hi = min(here, at_cap), max(here, at_cap)
    d.step("measured_decode_vs_model",
           "The measured rate against this page's per-GPU rates at the scenario's batch and at the KV cap",
           "between the two" if lo <= measured_dec <= hi else "above both" if measured_dec > hi else "below both",
           formula="{sglang_decode_tokens_per_s_per_gpu} against {tokens_per_s_per_gpu} and "
                   "{tokens_per_s_per_gpu_at_max_batch}", kind="verdict")

    # --- prefill, on GPUs of its own, feeding the rack ---
    prompt = d.step("prompt_tokens", "Prompt per request: the average context less half the reply",
                    p.context_tokens - p.output_tokens / 2, "1", noun="tokens",
                    formula="{context_tokens} − {output_tokens} / 2")
    req = d.step("requests_per_s", "Requests the rack finishes per second", gpus * p.batch_per_gpu / step / p.output_tokens,
                 "1/s", noun="requests", formula="{tokens_per_s} / {output_tokens}")
    d.step("prefill_attention_flops_per_position",
           "Prefill attention FLOP per token per earlier token (MLA decompressed: K and V per head)",
           r.attention_flops_per_position, "FLOP",
           formula=(f"{ATTENTION_FLOPS_PER_MAC} FLOP × {m.layers} layers × {m.heads} heads × "
                    f"({m.head_dim} + {m.qk_rope_head_dim or 0} + {m.v_head_dim or m.head_dim})"
                    if p.attention_flops and mla else
                    f"{ATTENTION_FLOPS_PER_MAC} FLOP × {m.layers} layers × {m.heads} heads × ({m.head_dim} + {m.head_dim})"
                    if p.attention_flops else ""),
           note="0 when attention FLOP are not counted.")
    pf = d.step("prefill_flops_per_request", "Prefill FLOP of one prompt", r.prefill_flops(prompt), "FLOP",
                formula="{prompt_tokens} × 2 FLOP × {active_params} + {prefill_attention_flops_per_position} × "
                        "{prompt_tokens} × ({prompt_tokens} − 1) / 2")
    gpu_pf = d.step("gpu_prefill_flops", "One GPU's prefill compute at the prefill MFU",
                    hw.peak(p.compute_precision) * r.prefill_mfu, "FLOP/s", formula="{gpu_peak_flops} × {prefill_mfu}")
    pf_s = d.step("prefill_gpu_s_per_request", "GPU time to prefill one prompt", pf / gpu_pf, "s",
                  formula="{prefill_flops_per_request} / {gpu_prefill_flops}")
    d.step("prefill_tokens_per_s_per_gpu", "Prompt tokens one prefill GPU processes per second", prompt / pf_s,
           "1/s", noun="tokens", formula="{prompt_tokens} / {prefill_gpu_s_per_request}")
    pg = d.step("prefill_gpus_continuous", "Prefill GPUs kept busy feeding the rack, before rounding up",
                req * pf_s, "1", noun="GPUs", formula="{requests_per_s} × {prefill_gpu_s_per_request}")
    d.step("prefill_gpus", "Prefill GPUs feeding the rack (the roofline at the prefill MFU)",
           math.ceil(pg - 1e-9), "1", noun="GPUs", formula="ceil({prefill_gpus_continuous})")
    d.step("prefill_gpus_per_decode_gpu", "Prefill GPUs per decode GPU", pg / gpus, "1", noun="×",
           formula="{prefill_gpus_continuous} / {tp_degree}")
    measured_pf = d.step("sglang_prefill_tokens_per_s_per_gpu",
                         "SGLang's measured prefill, DeepSeek V3/R1 on GB200 NVL72, 2,000-token prompts (BF16 "
                         "attention, FP8 MoE)", SGLANG_GB200_PREFILL_TOKENS_PER_S, "1/s", noun="tokens",
                         kind="lookup", note="LMSYS blog, GB200 NVL72 Part II (2025-09-25), input tokens/s per GPU")
    d.step("prefill_roofline_over_measured", "The roofline's prefill rate over the measured one",
           prompt / pf_s / measured_pf, "1", noun="×",
           formula="{prefill_tokens_per_s_per_gpu} / {sglang_prefill_tokens_per_s_per_gpu}")
    d.step("prefill_gpus_at_measured_rate", "Prefill GPUs at SGLang's measured rate",
           math.ceil(req * prompt / measured_pf - 1e-9), "1", noun="GPUs",
           formula="ceil({requests_per_s} × {prompt_tokens} / {sglang_prefill_tokens_per_s_per_gpu})")
    hand = d.step("kv_handoff_bytes_per_request", "KV one prompt ships to the decode rack", prompt * kv_tok, "B",
                  formula="{prompt_tokens} × {kv_bytes_per_token}")
    into = d.step("kv_handoff_Bps_per_decode_gpu", "KV arriving at each decode GPU", req * hand / gpus, "B/s",
                  formula="{requests_per_s} × {kv_handoff_bytes_per_request} / {tp_degree}")
    d.step("kv_handoff_nic_share", "Share of a decode GPU's scale-out NIC the hand-off takes",
           into / hw.nic_Bps_per_direction, "1", percent=True, formula="{kv_handoff_Bps_per_decode_gpu} / {nic_Bps}")
    return d


def format_bytes(b: float) -> str:
    return f"{b:g}"
