"""The engine's steps, recorded in teaching order, for Params that compose `ServingKnobs`.

Every serving page records the same keys, so a placeholder, a drill or a test that names
`decode_step_s` means the same figure on every page.
"""

from __future__ import annotations

import math
from typing import Any

from models.core import Derivation
from models.engine import serving as sv
from models.engine.defaults import DEFAULT_HBM_EFFICIENCY, DEFAULT_PREFILL_MFU, DEFAULT_STEP_OVERHEAD_MS
from models.engine.knobs import accelerator, llm
from models.engine.precision import bytes_per_element
from models.engine.serving import Fleet, Served
from models.engine.serving_knobs import served


def kv_formula(p: Any, fmt_key: str = "bytes_per_kv_element") -> str:
    m = llm(p)
    if m.attention == "MLA":
        return f"{m.layers} layers × ({m.kv_lora_rank} latent + {m.qk_rope_head_dim} RoPE key) × {{{fmt_key}}}"
    return f"2 (K and V) × {m.layers} layers × {m.kv_heads} KV heads × {m.head_dim} × {{{fmt_key}}}"


def record_model(d: Derivation, p: Any) -> None:
    """Parameters, weight bytes and KV bytes per token of the knobs' model in their formats."""
    m = llm(p)
    d.step("model_params", f"{m.name} parameters (counted from its shape)", m.total_params, "1", noun="parameters")
    d.step("active_params", "Parameters each token runs through", m.active_params, "1", noun="parameters",
           note="All of them for a dense model; the shared part plus the routed experts for a mixture of experts.")
    d.step("bytes_per_param", f"Bytes per weight in {p.weight_precision}", bytes_per_element(p.weight_precision), "B",
           kind="lookup")
    d.step("weight_bytes", "Weights, resident on every replica", d.value("model_params") * d.value("bytes_per_param"),
           "B", formula="{model_params} × {bytes_per_param}")
    d.step("bytes_per_kv_element", f"Bytes per KV element in {p.kv_precision}", bytes_per_element(p.kv_precision), "B",
           kind="lookup")
    d.step("kv_bytes_per_token", f"KV cache per token ({p.kv_precision}, all layers)",
           m.kv_bytes_per_token(d.value("bytes_per_kv_element")), "B", formula=kv_formula(p))


def record_served(d: Derivation, p: Any) -> Served:
    s = served(p)
    r, hw = s.replica, accelerator(p)
    record_model(d, p)
    d.step("gpu_memory_bytes", f"{hw.name} HBM", hw.hbm_bytes, "B")
    d.step("usable_hbm_bytes", "HBM usable per replica", r.usable_hbm_bytes, "B",
           formula="{tp_degree} × {gpu_memory_bytes} B × {usable_hbm_fraction}")
    d.step("kv_room_bytes", "Room left for KV after the weights", r.kv_room_bytes, "B",
           formula="{usable_hbm_bytes} − {weight_bytes}")
    d.step("kv_bytes_per_sequence", "KV of one sequence at its longest (prompt + output)", s.kv_bytes_per_sequence,
           "B", formula="{kv_bytes_per_token} B × ({prompt_tokens} + {output_tokens})")
    d.step("batch_memory_cap_continuous", "Sequences whose KV fits at once, before the floor",
           s.batch_memory_cap_continuous, "1", noun="sequences", formula="{kv_room_bytes} B / {kv_bytes_per_sequence} B")
    d.step("batch_memory_cap", "Whole sequences whose KV fits at once", s.batch_memory_cap, "1", noun="sequences",
           formula="floor({batch_memory_cap_continuous})")

    d.step("gpu_hbm_Bps", f"{hw.name} HBM bandwidth", hw.hbm_Bps, "B/s")
    d.step("replica_hbm_Bps", "Replica HBM bandwidth at the decode MBU", r.achieved_hbm_Bps, "B/s",
           formula="{tp_degree} × {gpu_hbm_Bps} B/s × {hbm_efficiency}")
    d.step("weight_read_s", "Reading every weight once (the floor of any decode step)",
           r.weight_bytes / r.achieved_hbm_Bps, "s", formula="{weight_bytes} B / {replica_hbm_Bps} B/s")
    d.step("decode_context_tokens", "Average context a decode step reads per sequence", s.decode_context_tokens,
           "1", noun="tokens", formula="{prompt_tokens} + {output_tokens} / 2")
    d.step("kv_read_per_sequence_s", "Reading one sequence's KV at that context",
           r.kv_bytes_per_token * s.decode_context_tokens / r.achieved_hbm_Bps, "s",
           formula="{kv_bytes_per_token} B × {decode_context_tokens} / {replica_hbm_Bps} B/s")

    d.step("gpu_peak_flops", f"{hw.name} dense {p.compute_precision} peak", hw.peak(p.compute_precision), "FLOP/s")
    d.step("replica_decode_flops", "Replica decode compute at the decode MFU", r.peak_flops * r.decode_mfu, "FLOP/s",
           formula="{tp_degree} × {gpu_peak_flops} FLOP/s × {decode_mfu}")
    d.step("replica_prefill_flops", "Replica prefill compute at the prefill MFU", r.peak_flops * r.prefill_mfu,
           "FLOP/s", formula="{tp_degree} × {gpu_peak_flops} FLOP/s × {prefill_mfu}")
    attn = r.attention_flops_per_position
    d.step("attention_flops_per_position", "Attention FLOP per token per earlier token (QK^T and AV)", attn, "FLOP",
           note="0 when attention FLOP are not counted (the textbook 2 × parameters per token).")
    mla = r.model.attention == "MLA" and r.attention_flops
    d.step("decode_attention_flops_per_position", "Attention FLOP per cached token when decoding",
           r.decode_attention_flops_per_position, "FLOP",
           formula=(f"2 FLOP × {r.model.layers} layers × {r.model.heads} heads × (2 × {r.model.kv_lora_rank} latent + "
                    f"{r.model.qk_rope_head_dim} RoPE)") if mla else "{attention_flops_per_position}",
           note="MLA decodes with its up-projections absorbed: each query meets the cached latent itself."
           if mla else "The same as a prompt token's.")
    d.step("decode_flops_per_token", "FLOP per decoded token (2 × active params + attention)",
           r.decode_flops_per_token(s.decode_context_tokens), "FLOP",
           formula="2 FLOP × {active_params} + {decode_attention_flops_per_position} × {decode_context_tokens}")
    d.step("step_overhead_s", "Fixed cost per step (launches, sampling)", r.step_overhead_s, "s",
           formula="{step_overhead_ms}" if "step_overhead_ms" in d.params.__dict__ else "", kind="" if "step_overhead_ms" in d.params.__dict__ else "lookup")
    d.step("link_Bps_per_direction", f"{hw.name} scale-up link, each way", hw.link_Bps_per_direction, "B/s",
           kind="lookup")
    d.step("allreduce_fixed_s", "Tensor-parallel all-reduces per step, latency part", r.allreduce_s(0), "s",
           formula=f"{r.model.layers} layers × 2 × {{allreduce_latency_us}}" if r.tp > 1 else "",
           note="None on one accelerator." if r.tp == 1 else "")

    d.step("tpot_target_s", "TPOT target", s.tpot_s, "s",
           formula="{tpot_target_ms}" if "tpot_target_ms" in d.params.__dict__ else "",
           kind="" if "tpot_target_ms" in d.params.__dict__ else "lookup")
    d.step("allreduce_per_sequence_s", "Tensor-parallel all-reduces per step, per sequence in the batch",
           r.allreduce_s(1) - r.allreduce_s(0), "s",
           formula=(f"{r.model.layers} layers × 2 × 2 × ({r.tp} − 1) / {r.tp} × {r.model.d_model} × 2 B / "
                    "{link_Bps_per_direction}") if r.tp > 1 else "",
           note="None on one accelerator." if r.tp == 1 else "")
    d.step("compute_per_sequence_s", "FLOP side per sequence in the batch", s.lines.compute[1], "s",
           formula="{decode_flops_per_token} / {replica_decode_flops}")
    d.step("batch_tpot_cap_continuous", "Largest batch whose step meets the TPOT target, before the floor",
           s.batch_tpot_cap_continuous, "1", noun="sequences",
           formula="max(0, min(({tpot_target_s} − {step_overhead_s} − {allreduce_fixed_s} − {weight_read_s}) / "
                   "({kv_read_per_sequence_s} + {allreduce_per_sequence_s}), ({tpot_target_s} − {step_overhead_s} − "
                   "{allreduce_fixed_s}) / ({compute_per_sequence_s} + {allreduce_per_sequence_s})))")
    d.step("batch_tpot_cap", "Whole sequences whose step meets the TPOT target", s.batch_tpot_cap, "1",
           noun="sequences", formula="floor({batch_tpot_cap_continuous})")
    d.step("derived_batch", "Decode batch the caps allow: the tighter one", s.derived_batch, "1", noun="sequences",
           formula="max(1, min({batch_memory_cap}, {batch_tpot_cap}))")
    d.step("decode_batch", "Decode batch per replica", s.batch, "1", noun="sequences",
           formula="{given_batch}" if p.given_batch else "{derived_batch}")
    d.step("batch_limited_by", "What sets the batch",
           "given" if p.given_batch else ("TPOT" if s.batch_tpot_cap < s.batch_memory_cap else "memory"),
           formula="TPOT cap {batch_tpot_cap} against memory cap {batch_memory_cap}", kind="verdict")

    step = s.decode
    d.step("decode_step_memory_s", "Decode step, bytes side", step.memory_s, "s",
           formula="{weight_read_s} + {decode_batch} × {kv_read_per_sequence_s}")
    d.step("decode_step_compute_s", "Decode step, FLOP side", step.compute_s, "s",
           formula="{decode_batch} × {compute_per_sequence_s}")
    d.step("decode_step_allreduce_s", "Decode step, tensor-parallel all-reduces", step.allreduce_s, "s",
           formula="{allreduce_fixed_s} + {decode_batch} × {allreduce_per_sequence_s}" if r.tp > 1 else "")
    d.step("decode_step_s", "Decode step (= TPOT at that batch)", step.step_s, "s",
           formula="max({decode_step_memory_s}, {decode_step_compute_s}) + {decode_step_allreduce_s} + "
                   "{step_overhead_s}")
    d.step("decode_bound", "What bounds the decode step", step.bound,
           formula="bytes side {decode_step_memory_s} against FLOP side {decode_step_compute_s}", kind="verdict")
    d.step("decode_tokens_per_s", "Decode tokens per second per replica", s.decode_tokens_per_s, "1/s",
           noun="tokens", formula="{decode_batch} / {decode_step_s}")
    d.step("decode_mbu", "MBU over the whole step (bytes read / step / peak bandwidth)", r.mbu(step), "1", percent=True,
           formula="({weight_bytes} + {decode_batch} × {kv_bytes_per_token} × {decode_context_tokens}) / "
                   "({decode_step_s} × {tp_degree} × {gpu_hbm_Bps})")
    d.step("critical_batch", "Batch where weight FLOP catch up with weight bytes, at peak", r.critical_batch, "1",
           noun="sequences", formula="{gpu_peak_flops} / {gpu_hbm_Bps} × {bytes_per_param} / 2 FLOP")

    d.step("uncached_prompt_tokens", "Prompt tokens per request the prefix cache misses", s.uncached_prompt_tokens,
           "1", noun="tokens", formula="{prompt_tokens} × (1 − {prefix_cache_hit})")
    d.step("cached_prompt_tokens", "Prompt tokens per request served from the prefix cache",
           s.cached_prompt_tokens, "1", noun="tokens", formula="{prompt_tokens} − {uncached_prompt_tokens}")
    d.step("prefill_flops_textbook", "Prefill FLOP by the textbook 2 × parameters × tokens",
           2 * r.model.active_params * s.uncached_prompt_tokens, "FLOP",
           formula="2 FLOP × {active_params} × {uncached_prompt_tokens}")
    d.step("prefill_flops_per_request", "Prefill FLOP per request, attention included", s.prefill_flops_per_request,
           "FLOP", formula="{prefill_flops_textbook} + {attention_flops_per_position} × "
                           "({uncached_prompt_tokens} × {cached_prompt_tokens} + {uncached_prompt_tokens} × "
                           "({uncached_prompt_tokens} − 1) / 2)")
    d.step("prefill_allreduce_s", "Prefill's tensor-parallel all-reduces, one request",
           r.allreduce_s(s.uncached_prompt_tokens) if s.uncached_prompt_tokens > 0 else 0.0, "s",
           formula="{allreduce_fixed_s} + {uncached_prompt_tokens} × {allreduce_per_sequence_s}"
           if r.tp > 1 and s.uncached_prompt_tokens > 0 else "")
    d.step("prefill_s_per_request", "Prefill time per request on one replica", s.prefill_s_per_request, "s",
           formula="{prefill_flops_per_request} / {replica_prefill_flops} + {prefill_allreduce_s}")
    return s


def record_fleet(d: Derivation, p: Any, rate_key: str, s: Served) -> Fleet:
    """Prefill and decode replica-equivalents, replicas and GPUs, after `rate_key` is recorded."""
    rate = d.value(rate_key)
    f = sv.fleet(s, rate, p.target_utilization)
    d.step("prefill_replica_equivalents", "Replicas busy with nothing but prefill", f.prefill_replica_equivalents,
           "1", noun="replicas", formula=f"{{{rate_key}}} × {{prefill_s_per_request}}")
    d.step("weight_read_floor_busy", "Decode busy share the weight read alone sets (one step per TPOT)",
           d.value("weight_read_s") / s.tpot_s, "1", percent=True, formula="{weight_read_s} / {tpot_target_s}")
    d.step("replicas_continuous", "Replicas the work needs, before rounding up", f.replicas_continuous, "1",
           noun="replicas",
           formula="the R at which prefill / R + decode busy at the batch each holds = {target_utilization}",
           kind="search")
    d.step("replicas", "Replicas at the target utilization", f.replicas, "1", noun="replicas",
           formula="ceil({replicas_continuous}), more if the decode slots cannot hold the sequences in flight",
           kind="search")
    d.step("held_batch", "Sequences each replica decodes at once, each served at the TPOT target",
           f.held_batch, "1", noun="sequences",
           formula=f"{{{rate_key}}} / {{replicas}} × {{output_tokens}} × {{tpot_target_s}}")
    d.step("held_batch_step_s", "Decode step at that batch", f.held_step_s, "s",
           formula="the decode step at max(1, {held_batch}) sequences", kind="search")
    d.step("decode_replica_equivalents", "Replicas busy with decode at the batch they hold",
           f.decode_replica_equivalents, "1", noun="replicas",
           formula=f"{{{rate_key}}} × {{output_tokens}} × {{held_batch_step_s}} / max(1, {{held_batch}})")
    d.step("gpus", "GPUs", f.replicas * p.tp_degree, "1", noun="GPUs", formula="{replicas} × {tp_degree}")
    return f


def record_efficiency_source(d: Derivation, p: Any) -> None:
    """Whether the scenario's decode and prefill efficiencies are the engine's defaults, which are
    fits to measured latencies (models/engine/defaults.py), or its own assumptions: a page must not
    call a drawn scenario's efficiencies measured."""
    fitted = (math.isclose(p.hbm_efficiency, DEFAULT_HBM_EFFICIENCY)
              and math.isclose(p.step_overhead_ms, DEFAULT_STEP_OVERHEAD_MS)
              and math.isclose(p.prefill_mfu, DEFAULT_PREFILL_MFU))
    d.step("efficiency_source", "Where the decode and prefill efficiencies come from",
           "the engine's defaults, which the accuracy page fits to measured latencies (a vLLM run of "
           "Llama 3.1 70B on 8 × H200 for decode, FasterTransformer prefills on A100)" if fitted
           else "this scenario's assumptions, not the engine's fitted defaults",
           formula="{hbm_efficiency}, {prefill_mfu}, {step_overhead_ms} against the engine's fitted defaults",
           kind="verdict")
