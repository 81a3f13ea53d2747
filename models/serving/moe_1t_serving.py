"""Serving a 1T-parameter mixture of experts on one 72-GPU rack (seed 004).

The catalog gives the model (Kimi K2: 1T total, 32B active, 384 routed experts, top-8, one shared
expert, MLA cache) and the GPU. Everything else is derived here:

    one routed expert (all MoE layers)   (total - active) / (experts - top-k)
    always-on weights                    active - top-k x one routed expert   (attention, shared expert,
                                         dense layer, embeddings)
    layout                               attention data-parallel (always-on weights on every GPU, each GPU
                                         decodes its own sequences against its own KV); routed experts
                                         spread ceil(experts / GPUs) per GPU per layer, the spare slots
                                         holding second copies of hot experts
    weight read per step                 always-on weights + resident experts x the share of them touched,
                                         1 - (1 - top-k / experts) ^ (tokens in the step) under uniform routing:
                                         at a large batch every resident expert is read every step
    KV read per step                     sequences per GPU x context x MLA bytes per token
    compute (hottest GPU)                tokens x (2 x always-on + imbalance x 2 x top-k x expert) at the weight
                                         precision's peak, plus MLA attention 2 x heads x (2 x latent + rope)
                                         FLOP per cached position per layer at the bf16 peak, both at MFU
    all-to-all                           two per MoE layer: dispatch (FP8 if weights are FP8) and combine
                                         (bf16) of d_model per routed token; the hottest GPU receives and sends
                                         imbalance x the mean, over the scale-up link at an efficiency, plus
                                         a fixed latency per all-to-all
    decode step                          max(weight read + KV read, compute) + all-to-all (serial), or the max
                                         of all three when two micro-batches overlap communication

The hottest GPU sets the step: every GPU waits for the combine of every layer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import model_validator

from models.catalog import DENSE_LAYERS, LINKS, gpu as catalog_gpu, model as catalog_model
from models.core import Derivation, Knob, StrictModel
from models.serving.llm_arith import BYTES_PER_PARAM, KV_BYTES_PER_ELEM, USABLE_HBM_FRACTION, Precision, peak_flops

MoEModel = Literal["Kimi-K2 1T", "DeepSeek-V3"]
RackGPU = Literal["B200", "H200"]
ScaleLink = Literal["NVLink5", "NVLink4", "IB XDR 800G", "IB NDR 400G"]

COMBINE_BYTES_PER_ELEM = 2.0  # the combine returns expert outputs in bf16 whatever the weights
SCALE_OUT_COMPARISON = "IB XDR 800G"  # the fastest per-GPU scale-out NIC in the catalog


class Params(StrictModel):
    model: Annotated[MoEModel, Knob("Model", help="MLA mixtures of experts from the catalog.")] = "Kimi-K2 1T"
    gpu: Annotated[RackGPU, Knob("GPU")] = "B200"
    gpus: Annotated[
        int,
        Knob("GPUs in the expert-parallel group", "GPUs", 8, 72, 1,
             help="72 = one NVL72 rack; all of them share one NVLink domain.", draw=(32, 72)),
    ] = 72
    weight_precision: Annotated[
        Precision, Knob("Weight precision", help="FP8 is how the model ships; the KV cache stays bf16.")
    ] = "fp8"
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
    a2a_link: Annotated[
        ScaleLink,
        Knob("All-to-all link", help="NVLink5 is the NVL72 rack's scale-up fabric; the others show what "
                                     "crossing a slower fabric costs."),
    ] = "NVLink5"
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
    hbm_efficiency: Annotated[
        float,
        Knob("HBM efficiency", "", 0.3, 0.95, 0.01, percent=True,
             help="Share of peak HBM bandwidth a decode step achieves.", draw=(0.6, 0.8)),
    ] = 0.7
    mfu: Annotated[
        float,
        Knob("MFU", "", 0.1, 0.8, 0.01, percent=True,
             help="Share of dense peak FLOP/s the step's GEMMs and attention achieve.", draw=(0.35, 0.6)),
    ] = 0.5
    gqa_kv_heads: Annotated[
        int,
        Knob("KV heads of the GQA comparison", "heads", 1, 64, 1,
             help="The cache the same model would carry with grouped-query attention instead of MLA.",
             draw=(4, 16)),
    ] = 8

    @model_validator(mode="after")
    def _fits(self) -> "Params":
        lay = layout(self)
        if lay.kv_room_bytes <= 0:
            raise ValueError(
                f"{self.model} in {self.weight_precision} puts {lay.weight_bytes_per_gpu / 1e9:,.0f} GB of weights "
                f"on each of {self.gpus} GPUs, more than the {lay.usable_bytes / 1e9:,.0f} GB usable. "
                "Use more GPUs or FP8."
            )
        need = self.batch_per_gpu * self.context_tokens * lay.kv_bytes_per_token
        if need > lay.kv_room_bytes:
            cap = math.floor(lay.kv_room_bytes / (self.context_tokens * lay.kv_bytes_per_token))
            raise ValueError(
                f"{self.batch_per_gpu} sequences of {self.context_tokens:,} tokens need {need / 1e9:,.0f} GB of KV "
                f"per GPU; only {lay.kv_room_bytes / 1e9:,.0f} GB is left after the weights, room for {cap} sequences."
            )
        return self


@dataclass(frozen=True)
class Layout:
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


def layout(p: Params) -> Layout:
    m, g = catalog_model(p.model), catalog_gpu(p.gpu)
    bpp = BYTES_PER_PARAM[p.weight_precision]
    expert = (m.total_params - m.active_params) / (m.moe_experts - m.experts_per_token)
    always_on = m.active_params - m.experts_per_token * expert
    slots = math.ceil(m.moe_experts / p.gpus)
    exp_b, on_b = slots * expert * bpp, always_on * bpp
    usable = USABLE_HBM_FRACTION * g.memory_bytes
    return Layout(expert, always_on, m.layers - DENSE_LAYERS[p.model], slots, exp_b, on_b, exp_b + on_b, usable,
                  usable - exp_b - on_b, m.kv_bytes_per_token(KV_BYTES_PER_ELEM))


@dataclass(frozen=True)
class StepTimes:
    touched: float
    weight_read_bytes: float
    weight_read_s: float
    kv_read_bytes: float
    kv_read_s: float
    memory_s: float
    compute_s: float
    a2a_bytes: float
    a2a_s: float
    step_s: float


def step_times(p: Params, batch: float, imbalance: float) -> StepTimes:
    """The decode step on the hottest GPU for `batch` sequences per GPU."""
    m, g, lay = catalog_model(p.model), catalog_gpu(p.gpu), layout(p)
    bw = g.hbm_Bps * p.hbm_efficiency
    k, experts = m.experts_per_token, m.moe_experts
    touched = 1 - (1 - k / experts) ** (batch * p.gpus)
    w_bytes = lay.always_on_bytes_per_gpu + lay.expert_bytes_per_gpu * touched
    kv_bytes = batch * p.context_tokens * lay.kv_bytes_per_token
    linear = batch * (2 * lay.always_on_params + imbalance * 2 * k * lay.expert_params)
    attention = batch * mla_attention_flops_per_position(p.model) * p.context_tokens
    compute = linear / (peak_flops(p.gpu, p.weight_precision) * p.mfu) + attention / (g.dense_bf16_flops * p.mfu)
    per_elem = BYTES_PER_PARAM[p.weight_precision] + COMBINE_BYTES_PER_ELEM
    a2a_bytes = lay.moe_layers * imbalance * batch * k * m.d_model * per_elem * (p.gpus - 1) / p.gpus
    a2a = a2a_bytes / (LINKS[p.a2a_link].Bps * p.a2a_efficiency) + 2 * lay.moe_layers * p.a2a_latency_us * 1e-6
    memory = (w_bytes + kv_bytes) / bw
    step = max(memory, compute, a2a) if p.overlap_a2a else max(memory, compute) + a2a
    return StepTimes(touched, w_bytes, w_bytes / bw, kv_bytes, kv_bytes / bw, memory, compute, a2a_bytes, a2a, step)


def mla_attention_flops_per_position(model_name: str) -> float:
    """Decode attention over the latent cache (weights absorbed): per head, q·k over latent + RoPE dims
    and p·v over the latent, 2 FLOP per multiply-add, every layer."""
    m = catalog_model(model_name)
    return 2 * m.layers * m.heads * (2 * m.kv_lora_rank + m.qk_rope_head_dim)


def solve(p: Params) -> Derivation:
    d = Derivation(p)
    m, g, lay = catalog_model(p.model), catalog_gpu(p.gpu), layout(p)
    bpp = BYTES_PER_PARAM[p.weight_precision]

    # --- the model, from the catalog ---
    d.step("total_params", f"{p.model}: parameters, all experts (catalog)", m.total_params, "1", noun="parameters")
    d.step("active_params", "Parameters one token touches (catalog)", m.active_params, "1", noun="parameters")
    d.step("routed_experts", "Routed experts per MoE layer (catalog)", m.moe_experts, "1", noun="experts")
    d.step("experts_per_token", "Routed experts each token picks (catalog)", m.experts_per_token, "1",
           noun="experts")
    d.step("expert_params", "One routed expert, summed over the MoE layers", lay.expert_params, "1",
           noun="parameters",
           formula="({total_params} − {active_params}) / ({routed_experts} − {experts_per_token})")
    d.step("always_on_params", "Always-on weights: attention, shared expert, dense layer, embeddings",
           lay.always_on_params, "1", noun="parameters",
           formula="{active_params} − {experts_per_token} × {expert_params}")
    d.step("bytes_per_param", f"Bytes per weight in {p.weight_precision}", bpp, "B")
    total_bytes = d.step("total_weight_bytes", "Every weight once", m.total_params * bpp, "B",
                         formula="{total_params} × {bytes_per_param} B")

    # --- weights alone fit in a handful of GPUs ---
    d.step("gpu_memory_bytes", f"{p.gpu} HBM (catalog)", g.memory_bytes, "B")
    d.step("usable_hbm_fraction", "Share of HBM for weights and KV (the rest: activations, buffers)",
           100 * USABLE_HBM_FRACTION, "%")
    usable = d.step("usable_bytes_per_gpu", "Usable HBM per GPU", lay.usable_bytes, "B",
                    formula="{gpu_memory_bytes} B × {usable_hbm_fraction}%")
    min_gpus = d.step("min_gpus_for_weights", "GPUs whose HBM holds the weights and nothing else",
                      math.ceil(total_bytes / usable - 1e-9), "1", noun="GPUs",
                      formula="ceil({total_weight_bytes} B / {usable_bytes_per_gpu} B)")
    d.step("gpu_hbm_Bps", f"{p.gpu} HBM bandwidth (catalog)", g.hbm_Bps, "B/s")
    bw = d.step("effective_hbm_Bps", "HBM bandwidth a decode step achieves", g.hbm_Bps * p.hbm_efficiency, "B/s",
                formula="{gpu_hbm_Bps} B/s × {hbm_efficiency}")
    w_min = d.step("weight_read_s_at_min_gpus", "Weight read per step if those GPUs served it",
                   total_bytes / min_gpus / bw, "s",
                   formula="{total_weight_bytes} B / {min_gpus_for_weights} / {effective_hbm_Bps} B/s")
    d.step("tokens_per_s_per_user_ceiling_at_min_gpus", "Fastest any user could go on them",
           1 / w_min, "1/s", noun="tokens", formula="1 / {weight_read_s_at_min_gpus} s")

    # --- the compressed cache ---
    d.step("layers", "Transformer layers (catalog)", m.layers, "1", noun="layers")
    d.step("mla_elems_per_layer", "MLA cache per token per layer: latent + decoupled RoPE key (catalog)",
           m.kv_elems_per_token_per_layer, "1", noun="elements", formula=f"{m.kv_lora_rank} + {m.qk_rope_head_dim}")
    kv_tok = d.step("kv_bytes_per_token", "MLA cache per token, all layers (bf16)", lay.kv_bytes_per_token, "B",
                    formula="{layers} × {mla_elems_per_layer} × 2 B")
    d.step("head_dim", "Head dimension (catalog)", m.head_dim, "1", noun="dims")
    gqa = d.step("gqa_kv_bytes_per_token", "The same model with grouped-query attention",
                 2 * m.layers * p.gqa_kv_heads * m.head_dim * KV_BYTES_PER_ELEM, "B",
                 formula="2 (K and V) × {layers} × {gqa_kv_heads} heads × {head_dim} × 2 B")
    d.step("mla_saving_vs_gqa", "GQA cache over the MLA cache", gqa / kv_tok, "1", noun="×",
           formula="{gqa_kv_bytes_per_token} B / {kv_bytes_per_token} B")
    min_room = usable - total_bytes / min_gpus
    d.step("sequences_at_min_gpus", "Sequences at this context the minimum GPUs could also hold",
           max(0, math.floor(min_gpus * min_room / (p.context_tokens * kv_tok))), "1", noun="sequences",
           formula="floor({min_gpus_for_weights} × ({usable_bytes_per_gpu} B − {total_weight_bytes} B / "
                   "{min_gpus_for_weights}) / ({context_tokens} × {kv_bytes_per_token} B))")

    # --- memory plan per GPU on the rack ---
    d.step("slots_per_gpu", "Routed-expert slots per GPU per layer", lay.slots_per_gpu, "1", noun="experts",
           formula="ceil({routed_experts} / {gpus})")
    d.step("redundant_slots", "Spare slots per layer: second copies of hot experts",
           lay.slots_per_gpu * p.gpus - m.moe_experts, "1", noun="experts",
           formula="{slots_per_gpu} × {gpus} − {routed_experts}")
    d.step("expert_bytes_per_gpu", "Routed experts resident on one GPU", lay.expert_bytes_per_gpu, "B",
           formula="{slots_per_gpu} × {expert_params} × {bytes_per_param} B")
    d.step("always_on_bytes_per_gpu", "Always-on weights, a full copy on every GPU", lay.always_on_bytes_per_gpu,
           "B", formula="{always_on_params} × {bytes_per_param} B")
    w_gpu = d.step("weight_bytes_per_gpu", "Weights per GPU", lay.weight_bytes_per_gpu, "B",
                   formula="{expert_bytes_per_gpu} B + {always_on_bytes_per_gpu} B")
    d.step("rack_weight_copies", "Weight bytes on the rack over one copy", p.gpus * w_gpu / total_bytes, "1",
           noun="×", formula="{gpus} × {weight_bytes_per_gpu} B / {total_weight_bytes} B")
    room = d.step("kv_room_bytes_per_gpu", "HBM left for KV per GPU", lay.kv_room_bytes, "B",
                  formula="{usable_bytes_per_gpu} B − {weight_bytes_per_gpu} B")
    d.step("kv_tokens_per_gpu", "Tokens of KV per GPU", room / kv_tok, "1", noun="tokens",
           formula="{kv_room_bytes_per_gpu} B / {kv_bytes_per_token} B")
    cap = d.step("max_batch_per_gpu", "Sequences per GPU whose KV fits at this context",
                 math.floor(room / (p.context_tokens * kv_tok)), "1", noun="sequences",
                 formula="floor({kv_room_bytes_per_gpu} B / ({context_tokens} × {kv_bytes_per_token} B))")
    d.step("max_batch_per_gpu_gqa", "The same with the GQA cache", math.floor(room / (p.context_tokens * gqa)), "1",
           noun="sequences", formula="floor({kv_room_bytes_per_gpu} B / ({context_tokens} × {gqa_kv_bytes_per_token} B))")
    d.step("rack_sequences", "Sequences the whole group holds at this context", p.gpus * cap, "1", noun="sequences",
           formula="{gpus} × {max_batch_per_gpu}")
    d.step("kv_bytes_per_gpu", "KV the scenario's batch occupies per GPU",
           p.batch_per_gpu * p.context_tokens * kv_tok, "B",
           formula="{batch_per_gpu} × {context_tokens} × {kv_bytes_per_token} B")

    # --- the decode step on the hottest GPU ---
    st = step_times(p, p.batch_per_gpu, p.imbalance)
    d.step("global_batch", "Sequences decoding on the group", p.gpus * p.batch_per_gpu, "1", noun="sequences",
           formula="{gpus} × {batch_per_gpu}")
    d.step("experts_touched", "Resident experts a step touches (uniform routing)", 100 * st.touched, "%",
           formula="100 × (1 − (1 − {experts_per_token} / {routed_experts})^{global_batch})")
    d.step("weight_read_bytes", "Weights one GPU reads per step", st.weight_read_bytes, "B",
           formula="{always_on_bytes_per_gpu} B + {expert_bytes_per_gpu} B × {experts_touched}%")
    d.step("weight_read_s", "Weight read per step", st.weight_read_s, "s",
           formula="{weight_read_bytes} B / {effective_hbm_Bps} B/s")
    d.step("kv_read_bytes", "KV one GPU reads per step", st.kv_read_bytes, "B",
           formula="{batch_per_gpu} × {context_tokens} × {kv_bytes_per_token} B")
    d.step("kv_read_s", "KV read per step", st.kv_read_s, "s", formula="{kv_read_bytes} B / {effective_hbm_Bps} B/s")
    d.step("memory_s", "Bytes side of the step", st.memory_s, "s", formula="{weight_read_s} s + {kv_read_s} s")
    d.step("linear_peak_flops", f"{p.gpu} dense {p.weight_precision} peak (catalog)",
           peak_flops(p.gpu, p.weight_precision), "FLOP/s")
    d.step("attention_peak_flops", f"{p.gpu} dense bf16 peak (catalog): attention runs on the bf16 cache",
           g.dense_bf16_flops, "FLOP/s")
    d.step("attention_flops_per_position", "MLA attention FLOP per cached token, all layers",
           mla_attention_flops_per_position(p.model), "FLOP",
           formula=f"2 × {m.layers} layers × {m.heads} heads × (2 × {m.kv_lora_rank} + {m.qk_rope_head_dim})")
    t_dense = d.step("dense_s_per_token", "Always-on GEMMs, one token", 2 * lay.always_on_params
                     / (peak_flops(p.gpu, p.weight_precision) * p.mfu), "s",
                     formula="2 × {always_on_params} / ({linear_peak_flops} FLOP/s × {mfu})")
    t_exp = d.step("expert_s_per_token", "Routed-expert GEMMs, one token (top-k experts)",
                   2 * m.experts_per_token * lay.expert_params / (peak_flops(p.gpu, p.weight_precision) * p.mfu), "s",
                   formula="2 × {experts_per_token} × {expert_params} / ({linear_peak_flops} FLOP/s × {mfu})")
    t_attn = d.step("attention_s_per_token", "MLA attention, one token at this context",
                    mla_attention_flops_per_position(p.model) * p.context_tokens / (g.dense_bf16_flops * p.mfu), "s",
                    formula="{attention_flops_per_position} FLOP × {context_tokens} / ({attention_peak_flops} FLOP/s × {mfu})")
    d.step("compute_s", "FLOP side on the hottest GPU", st.compute_s, "s",
           formula="{batch_per_gpu} × ({dense_s_per_token} s + {imbalance} × {expert_s_per_token} s + "
                   "{attention_s_per_token} s)")
    d.step("moe_layers", "MoE layers: two all-to-alls each", lay.moe_layers, "1", noun="layers",
           formula=f"{m.layers} layers − {DENSE_LAYERS[p.model]} dense")
    d.step("a2a_bytes_per_elem", "Bytes per hidden element: dispatch + combine",
           BYTES_PER_PARAM[p.weight_precision] + COMBINE_BYTES_PER_ELEM, "1", noun="bytes",
           formula="{bytes_per_param} + 2 (bf16 combine)")
    d.step("a2a_link_Bps", f"{p.a2a_link}, one direction (catalog)", LINKS[p.a2a_link].Bps, "B/s")
    d.step("hidden_size", "Hidden vector per routed token (catalog d_model)", m.d_model, "1", noun="elements")
    d.step("a2a_bytes", "Bytes the hottest GPU moves each way per step, all MoE layers", st.a2a_bytes, "B",
           formula="{moe_layers} × {imbalance} × {batch_per_gpu} × {experts_per_token} × {hidden_size} × "
                   "{a2a_bytes_per_elem} B × ({gpus} − 1) / {gpus}")
    d.step("a2a_latency_floor_s", "Fixed cost of the all-to-alls, whatever the batch",
           2 * lay.moe_layers * p.a2a_latency_us * 1e-6, "s", formula="2 × {moe_layers} × {a2a_latency_us} µs")
    d.step("all_to_all_s", "Dispatch + combine per step", st.a2a_s, "s",
           formula="{a2a_bytes} B / ({a2a_link_Bps} B/s × {a2a_efficiency}) + {a2a_latency_floor_s} s")
    ib = step_times(p.model_copy(update={"a2a_link": SCALE_OUT_COMPARISON}), p.batch_per_gpu, p.imbalance)
    d.step("ib_link_Bps", f"{SCALE_OUT_COMPARISON}, one direction (catalog)", LINKS[SCALE_OUT_COMPARISON].Bps, "B/s")
    d.step("all_to_all_over_ib_s", f"The same all-to-all over {SCALE_OUT_COMPARISON}", ib.a2a_s, "s",
           formula="{a2a_bytes} B / ({ib_link_Bps} B/s × {a2a_efficiency}) + {a2a_latency_floor_s} s")
    step = d.step("decode_step_s", "Decode step (the hottest GPU's)", st.step_s, "s",
                  formula=("max({memory_s} s, {compute_s} s, {all_to_all_s} s)" if p.overlap_a2a
                           else "max({memory_s} s, {compute_s} s) + {all_to_all_s} s"))
    d.step("decode_step_if_overlapped_s", "The step if the all-to-all overlaps compute",
           max(st.memory_s, st.compute_s, st.a2a_s), "s", formula="max({memory_s} s, {compute_s} s, {all_to_all_s} s)")
    d.step("step_bound_by", "What sets the step",
           ("all-to-all" if p.overlap_a2a and st.a2a_s >= max(st.memory_s, st.compute_s)
            else "bandwidth" if st.memory_s >= st.compute_s else "compute"),
           formula="bytes {memory_s} s, FLOP {compute_s} s, all-to-all {all_to_all_s} s")
    d.step("tokens_per_s", "Tokens per second, the whole group", p.gpus * p.batch_per_gpu / step, "1/s",
           noun="tokens", formula="{global_batch} / {decode_step_s} s")
    d.step("tokens_per_s_per_user", "Tokens per second each user sees", 1 / step, "1/s", noun="tokens",
           formula="1 / {decode_step_s} s")
    d.step("tokens_per_s_per_gpu", "Tokens per second per GPU", p.batch_per_gpu / step, "1/s", noun="tokens",
           formula="{batch_per_gpu} / {decode_step_s} s")

    # --- what imbalance costs ---
    bal = step_times(p, p.batch_per_gpu, 1.0)
    d.step("compute_balanced_s", "FLOP side with balanced routing", bal.compute_s, "s",
           formula="{batch_per_gpu} × ({dense_s_per_token} s + {expert_s_per_token} s + {attention_s_per_token} s)")
    d.step("all_to_all_balanced_s", "All-to-all with balanced routing", bal.a2a_s, "s",
           formula="{a2a_bytes} B / {imbalance} / ({a2a_link_Bps} B/s × {a2a_efficiency}) + {a2a_latency_floor_s} s")
    d.step("decode_step_balanced_s", "The same step with perfectly balanced routing", bal.step_s, "s",
           formula=("max({memory_s} s, {compute_balanced_s} s, {all_to_all_balanced_s} s)" if p.overlap_a2a
                    else "max({memory_s} s, {compute_balanced_s} s) + {all_to_all_balanced_s} s"))
    d.step("tokens_per_s_per_user_balanced", "Per-user speed with balanced routing", 1 / bal.step_s, "1/s",
           noun="tokens", formula="1 / {decode_step_balanced_s} s")
    d.step("imbalance_throughput_loss", "Throughput the hottest GPU costs at this batch",
           100 * (1 - bal.step_s / st.step_s), "%", formula="100 × (1 − {decode_step_balanced_s} s / {decode_step_s} s)")
    share = d.step("expert_compute_share", "Routed experts' share of a token's compute (balanced)",
                   100 * t_exp / (t_dense + t_exp + t_attn), "%",
                   formula="100 × {expert_s_per_token} / ({dense_s_per_token} + {expert_s_per_token} + "
                           "{attention_s_per_token})")
    d.step("imbalance_loss_compute_bound", "Loss once the step is all compute",
           100 * (1 - 1 / (1 + (p.imbalance - 1) * share / 100)), "%",
           formula="100 × (1 − 1 / (1 + ({imbalance} − 1) × {expert_compute_share}%))")
    c_seq = d.step("compute_per_sequence_s", "FLOP time per sequence per step, hottest GPU",
                   t_dense + p.imbalance * t_exp + t_attn, "s",
                   formula="{dense_s_per_token} s + {imbalance} × {expert_s_per_token} s + {attention_s_per_token} s")
    kv_seq = d.step("kv_read_per_sequence_s", "KV read time per sequence per step",
                    p.context_tokens * kv_tok / bw, "s",
                    formula="{context_tokens} × {kv_bytes_per_token} B / {effective_hbm_Bps} B/s")
    w_full = d.step("all_experts_read_s", "Reading every resident weight", lay.weight_bytes_per_gpu / bw, "s",
                    formula="{weight_bytes_per_gpu} B / {effective_hbm_Bps} B/s")
    d.step("compute_bound_batch_per_gpu", "Sequences per GPU where the FLOP side overtakes the bytes side",
           w_full / (c_seq - kv_seq) if c_seq > kv_seq else math.inf, "1", noun="sequences",
           formula="{all_experts_read_s} s / ({compute_per_sequence_s} s − {kv_read_per_sequence_s} s)")
    small = step_times(p, 1, p.imbalance)
    small_bal = step_times(p, 1, 1.0)
    d.step("imbalance_loss_batch_1", "Loss at one sequence per GPU (bandwidth- and latency-bound)",
           100 * (1 - small_bal.step_s / small.step_s), "%", formula="the same comparison at batch 1")
    d.step("decode_step_batch_1_s", "Decode step at one sequence per GPU", small.step_s, "s",
           formula="memory, FLOP and all-to-all at 1 per GPU")
    d.step("tokens_per_s_per_user_batch_1", "The fastest a user can go on this group", 1 / small.step_s, "1/s",
           noun="tokens", formula="1 / {decode_step_batch_1_s} s")
    full = step_times(p, max(1, cap), p.imbalance)
    full_bal = step_times(p, max(1, cap), 1.0)
    d.step("imbalance_loss_at_max_batch", "Loss at the largest batch the KV allows",
           100 * (1 - full_bal.step_s / full.step_s), "%",
           formula="the same comparison at {max_batch_per_gpu} per GPU")
    d.step("decode_step_at_max_batch_s", "Decode step at that batch (hottest GPU)", full.step_s, "s",
           formula="memory, FLOP and all-to-all at {max_batch_per_gpu} per GPU")
    d.step("tokens_per_s_at_max_batch", "Group tokens/s at that batch", p.gpus * max(1, cap) / full.step_s, "1/s",
           noun="tokens", formula="{gpus} × {max_batch_per_gpu} / {decode_step_at_max_batch_s} s")
    d.step("tokens_per_s_per_user_at_max_batch", "Per-user speed at that batch", 1 / full.step_s, "1/s",
           noun="tokens", formula="1 / {decode_step_at_max_batch_s} s")
    return d
