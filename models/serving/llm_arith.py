"""LLM serving arithmetic shared by the serving pages: decode step, batch caps, prefill, fleet.

One set of formulas, so two pages that size the same engine cannot disagree:

    decode step    = max( (weights + batch x KV read per sequence) / (GPUs x HBM B/s x efficiency),
                          batch x FLOP per token / (GPUs x peak FLOP/s x MFU) )
    batch          = the largest batch whose step meets the TPOT target and whose KV fits in HBM
    prefill        = uncached prompt tokens x FLOP per token / (GPUs x peak FLOP/s x MFU)
    fleet          = (prefill + decode replica-seconds per second) / target utilization

Modelling choices (each page states them in prose):
  * FLOP per token = 2 x active parameters (one multiply-add per weight) + attention,
    4 x layers x heads x head_dim x the token's position (QK^T and AV, 2 FLOP per multiply-add).
  * A decode step reads every resident weight once (for a mixture of experts at a large batch,
    nearly every expert is hit, so the total, not the active, weights) plus the whole KV cache of
    every sequence in the batch, cached prefix included: a prefix-cache hit saves prefill
    compute, not decode bandwidth.
  * KV cache in bf16 whatever the weight precision; HBM usable for weights + KV is
    USABLE_HBM_FRACTION of capacity (the rest: activations, CUDA graphs, fragmentation).
  * Prefill and decode on the same replica take turns (no overlap): an upper bound. Chunked
    prefill that rides in memory-bound decode steps lands the truth between decode-only and that.

Pure Python, catalog constants only; no Streamlit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from models.catalog import GPUS, INFER_FLOPS_PER_PARAM_TOKEN, LLM, gpu as catalog_gpu, model as catalog_model
from models.core import Derivation
from models.units import format_number

# Models and GPUs the serving knobs offer (all in models/catalog.py).
ServingModel = Literal["Llama-3-8B", "Llama-3-70B", "Llama-3.1-405B", "Mixtral-8x7B"]
ServingGPU = Literal["H100 SXM", "H200", "B200", "MI300X"]
Precision = Literal["bf16", "fp8"]
ReplicaGPUs = Literal[1, 2, 4, 8]

BYTES_PER_PARAM = {"bf16": 2.0, "fp8": 1.0}
KV_BYTES_PER_ELEM = 2.0  # bf16 KV cache
USABLE_HBM_FRACTION = 0.9  # vLLM's default gpu_memory_utilization; the rest is activations and slack
ATTN_FLOPS_PER_MAC = 2  # a multiply-add is 2 FLOP
ATTN_MATMULS = 2  # QK^T and AV


def peak_flops(gpu_name: str, precision: str) -> float:
    """Dense tensor peak, FLOP/s, for the weight precision (FP8 where the part has it)."""
    g = catalog_gpu(gpu_name)
    tflops = g.dense_fp8_TFLOPs if precision == "fp8" else g.dense_bf16_TFLOPs
    if tflops is None:
        raise ValueError(f"{gpu_name} has no FP8 tensor cores; pick bf16.")
    return tflops * 1e12


def attention_flops_per_token_per_position(m: LLM) -> float:
    """Attention FLOP one token spends per earlier token it attends to (all layers)."""
    return ATTN_MATMULS * ATTN_FLOPS_PER_MAC * m.layers * m.heads * m.head_dim


def flops_per_token(m: LLM, position: float) -> float:
    """Forward FLOP for one token at `position`: weights (2 x active) + attention over `position`."""
    return INFER_FLOPS_PER_PARAM_TOKEN * m.active_params + attention_flops_per_token_per_position(m) * position


@dataclass(frozen=True)
class Engine:
    """One replica of `gpus` GPUs serving one request shape."""

    weight_bytes: float
    kv_bytes_per_token: float
    usable_hbm_bytes: float
    kv_room_bytes: float
    kv_bytes_per_sequence_max: float  # at the end of generation: prompt + output tokens
    decode_context_avg: float  # prompt + output / 2: the average context a decode step reads
    kv_read_per_sequence_bytes: float
    replica_hbm_Bps: float  # effective: GPUs x HBM x efficiency
    replica_flops: float  # effective: GPUs x peak x MFU
    weight_read_s: float
    kv_read_per_sequence_s: float
    decode_flops_per_sequence: float
    decode_compute_per_sequence_s: float
    batch_memory_cap: int
    batch_tpot_cap: int
    batch: int
    decode_step_memory_s: float
    decode_step_compute_s: float
    decode_step_s: float
    decode_tokens_per_s: float
    uncached_prompt_tokens: float
    prefill_flops_per_request: float
    prefill_s_per_request: float


def engine(
    model_name: str,
    gpu_name: str,
    gpus: int,
    precision: str,
    prompt_tokens: float,
    prefix_cache_hit: float,
    output_tokens: float,
    tpot_s: float,
    hbm_efficiency: float,
    mfu: float,
) -> Engine:
    m, g = catalog_model(model_name), catalog_gpu(gpu_name)
    weights = m.weight_bytes(BYTES_PER_PARAM[precision])
    kv_tok = m.kv_bytes_per_token(KV_BYTES_PER_ELEM)
    usable = USABLE_HBM_FRACTION * gpus * g.memory_bytes
    room = usable - weights
    kv_seq_max = kv_tok * (prompt_tokens + output_tokens)
    ctx_avg = prompt_tokens + output_tokens / 2
    kv_read = kv_tok * ctx_avg
    bw = gpus * g.hbm_Bps * hbm_efficiency
    fl = gpus * peak_flops(gpu_name, precision) * mfu
    w_s = weights / bw
    kv_s = kv_read / bw
    dec_flops = flops_per_token(m, ctx_avg)
    dec_c_s = dec_flops / fl
    mem_cap = max(0, math.floor(room / kv_seq_max)) if room > 0 else 0
    # Largest batch whose step still meets TPOT: bandwidth side and compute side.
    bw_cap = math.floor((tpot_s - w_s) / kv_s + 1e-9) if tpot_s > w_s else 0
    fl_cap = math.floor(tpot_s / dec_c_s + 1e-9)
    tpot_cap = max(0, min(bw_cap, fl_cap))
    batch = max(1, min(mem_cap, tpot_cap))  # validators reject scenarios where neither fits one
    step_mem = w_s + batch * kv_s
    step_c = batch * dec_c_s
    step = max(step_mem, step_c)
    uncached = prompt_tokens * (1 - prefix_cache_hit)
    cached = prompt_tokens - uncached
    pf_flops = uncached * flops_per_token(m, cached + uncached / 2)
    return Engine(
        weight_bytes=weights,
        kv_bytes_per_token=kv_tok,
        usable_hbm_bytes=usable,
        kv_room_bytes=room,
        kv_bytes_per_sequence_max=kv_seq_max,
        decode_context_avg=ctx_avg,
        kv_read_per_sequence_bytes=kv_read,
        replica_hbm_Bps=bw,
        replica_flops=fl,
        weight_read_s=w_s,
        kv_read_per_sequence_s=kv_s,
        decode_flops_per_sequence=dec_flops,
        decode_compute_per_sequence_s=dec_c_s,
        batch_memory_cap=mem_cap,
        batch_tpot_cap=tpot_cap,
        batch=batch,
        decode_step_memory_s=step_mem,
        decode_step_compute_s=step_c,
        decode_step_s=step,
        decode_tokens_per_s=batch / step,
        uncached_prompt_tokens=uncached,
        prefill_flops_per_request=pf_flops,
        prefill_s_per_request=pf_flops / fl,
    )


@dataclass(frozen=True)
class Fleet:
    prefill_replica_equivalents: float
    decode_replica_equivalents: float  # at the batch each replica holds, summed over the fleet
    replicas: int
    replicas_continuous: float = 0.0  # before the ceiling
    held_batch: float = 0.0  # sequences each replica decodes at once
    held_step_s: float = 0.0  # its decode step at that batch


def held_batch(rate_per_replica: float, output_tokens: float, tpot_s: float) -> float:
    """Sequences a replica decodes at once when each is served at the TPOT target (Little's law)."""
    return rate_per_replica * output_tokens * tpot_s


def decode_busy(e: Engine, rate_per_replica: float, output_tokens: float, tpot_s: float) -> tuple[float, float, float]:
    """(busy share, held batch, step) of one replica's decode at the batch it actually holds.

    Every step rereads all the weights, however few sequences ride in it, so a replica holding
    fewer sequences than its cap pays nearly the full step for each token of each: busy =
    tokens/s x step(b) / b. (Charging decode as if every replica ran its full batch made a
    replica look idle that spends a third of its time on the weight read alone.)"""
    b = held_batch(rate_per_replica, output_tokens, tpot_s)
    riders = max(1.0, b)  # below one sequence at a time, each token is a step of its own
    step = max(e.weight_read_s + riders * e.kv_read_per_sequence_s, riders * e.decode_compute_per_sequence_s)
    return rate_per_replica * output_tokens * step / riders, b, step


def fleet(rate: float, e: Engine, output_tokens: float, target_utilization: float, tpot_s: float) -> Fleet:
    """The fewest replicas whose prefill plus decode (at the batch each then holds) stay within the
    target utilization, and whose held batch fits the batch cap."""
    prefill = rate * e.prefill_s_per_request

    def busy(replicas: float) -> float:
        return prefill / replicas + decode_busy(e, rate / replicas, output_tokens, tpot_s)[0]

    lo, hi = 1e-6, max(1.0, rate * (e.prefill_s_per_request + output_tokens * e.decode_step_s) * 10) + 1.0
    while busy(hi) > target_utilization:  # a floor of busy share no fleet gets under: grow the bracket
        hi *= 2
        if hi > 1e9:
            break
    for _ in range(100):  # busy falls as replicas grow: bisect for the continuous count
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if busy(mid) > target_utilization else (lo, mid)
    continuous = hi
    replicas = max(1, math.ceil(continuous - 1e-9))
    while running_batch(e, rate / replicas, output_tokens) > e.batch:  # the decode slots must hold them
        replicas += 1
    share, b, step = decode_busy(e, rate / replicas, output_tokens, tpot_s)
    return Fleet(prefill, share * replicas, replicas, continuous, b, step)


def running_batch(e: Engine, rate_per_replica: float, output_tokens: float) -> float:
    """Sequences a replica holds when it steps as fast as it can (continuous batching): Little's law
    with the token gap a step at that batch gives, prefill's share of the time taken out first.
    inf when the replica cannot keep up at any batch."""
    free = 1 - rate_per_replica * e.prefill_s_per_request  # share of time left for decode steps
    if free <= 0:
        return math.inf
    a = rate_per_replica * output_tokens / free  # sequences per second of step time
    b = 1.0
    for _ in range(200):  # the fixed point of b = a x step(b): step grows slower than b below capacity
        step = max(e.weight_read_s + b * e.kv_read_per_sequence_s, b * e.decode_compute_per_sequence_s)
        nxt = a * step
        if nxt > 1e9:
            return math.inf
        if abs(nxt - b) < 1e-9 * max(1.0, b):
            return nxt
        b = nxt
    return b


def fit_problem(
    model_name: str, gpu_name: str, gpus: int, precision: str, prompt_tokens: float, output_tokens: float,
    tpot_s: float, hbm_efficiency: float, mfu: float,
) -> str | None:
    """Why one sequence cannot be served at all (weights do not fit, TPOT below the weight read), or None."""
    m, g = catalog_model(model_name), catalog_gpu(gpu_name)
    if precision == "fp8" and g.dense_fp8_TFLOPs is None:
        return f"{gpu_name} has no FP8 tensor cores; pick bf16."
    weights = m.weight_bytes(BYTES_PER_PARAM[precision])
    usable = USABLE_HBM_FRACTION * gpus * g.memory_bytes
    one_seq = m.kv_bytes_per_token(KV_BYTES_PER_ELEM) * (prompt_tokens + output_tokens)
    if weights + one_seq > usable:
        return (
            f"{model_name} in {precision} needs {weights / 1e9:,.0f} GB of weights plus "
            f"{one_seq / 1e9:,.1f} GB of KV for one sequence, but {gpus} × {gpu_name} offer only "
            f"{usable / 1e9:,.0f} GB usable. Use more GPUs per replica, a bigger GPU or FP8."
        )
    e = engine(model_name, gpu_name, gpus, precision, prompt_tokens, 0.0, output_tokens, tpot_s, hbm_efficiency, mfu)
    if e.batch_tpot_cap < 1:
        return (
            f"One decode step of {model_name} on {gpus} × {gpu_name} takes at least "
            f"{(e.weight_read_s + e.kv_read_per_sequence_s) * 1000:,.1f} ms, more than the "
            f"{tpot_s * 1000:,.0f} ms TPOT target. Loosen the target or add GPUs per replica."
        )
    return None


def record_engine(d: Derivation, p) -> Engine:
    """Record the per-replica engine steps, in teaching order, for Params carrying the shared
    serving fields (model, gpu, gpus_per_replica, weight_precision, prompt_tokens,
    prefix_cache_hit, output_tokens, tpot_target_ms, hbm_efficiency, mfu)."""
    e = engine(p.model, p.gpu, p.gpus_per_replica, p.weight_precision, p.prompt_tokens, p.prefix_cache_hit,
               p.output_tokens, p.tpot_target_ms / 1000, p.hbm_efficiency, p.mfu)
    m, g = catalog_model(p.model), catalog_gpu(p.gpu)
    d.step("model_params", f"{p.model} parameters (catalog)", m.total_params, "1", noun="parameters")
    d.step("bytes_per_param", f"Bytes per weight in {p.weight_precision}", BYTES_PER_PARAM[p.weight_precision], "1",
           noun="bytes")
    d.step("weight_bytes", "Weights, resident on every replica", e.weight_bytes, "B",
           formula="{model_params} × {bytes_per_param} B")
    d.step("kv_bytes_per_token", "KV cache per token (bf16, all layers)", e.kv_bytes_per_token, "B",
           formula=f"2 (K and V) × {m.layers} layers × {m.kv_heads} KV heads × {m.head_dim} × 2 B")
    d.step("gpu_memory_bytes", f"{p.gpu} HBM (catalog)", g.memory_bytes, "B")
    d.step("usable_hbm_fraction", "Share of HBM for weights and KV (the rest: activations, slack)",
           100 * USABLE_HBM_FRACTION, "%")
    d.step("usable_hbm_bytes", "HBM usable per replica", e.usable_hbm_bytes, "B",
           formula="{gpus_per_replica} × {gpu_memory_bytes} B × {usable_hbm_fraction}%")
    d.step("kv_room_bytes", "Room left for KV after the weights", e.kv_room_bytes, "B",
           formula="{usable_hbm_bytes} B − {weight_bytes} B")
    d.step("kv_bytes_per_sequence", "KV of one sequence at its longest (prompt + output)",
           e.kv_bytes_per_sequence_max, "B", formula="{kv_bytes_per_token} B × ({prompt_tokens} + {output_tokens})")
    d.step("batch_memory_cap", "Sequences whose KV fits at once", e.batch_memory_cap, "1", noun="sequences",
           formula="floor({kv_room_bytes} B / {kv_bytes_per_sequence} B)")
    d.step("gpu_hbm_Bps", f"{p.gpu} HBM bandwidth (catalog)", g.hbm_Bps, "B/s")
    d.step("replica_hbm_Bps", "Replica HBM bandwidth at the stated efficiency", e.replica_hbm_Bps, "B/s",
           formula="{gpus_per_replica} × {gpu_hbm_Bps} B/s × {hbm_efficiency}")
    d.step("weight_read_s", "Reading every weight once (the floor of any decode step)", e.weight_read_s, "s",
           formula="{weight_bytes} B / {replica_hbm_Bps} B/s")
    d.step("decode_context_tokens", "Average context a decode step reads per sequence", e.decode_context_avg, "1",
           noun="tokens", formula="{prompt_tokens} + {output_tokens} / 2")
    d.step("kv_read_per_sequence_s", "Reading one sequence's KV at that context", e.kv_read_per_sequence_s, "s",
           formula="{kv_bytes_per_token} B × {decode_context_tokens} / {replica_hbm_Bps} B/s")
    d.step("gpu_peak_flops", f"{p.gpu} dense {p.weight_precision} peak (catalog)",
           peak_flops(p.gpu, p.weight_precision), "FLOP/s")
    d.step("replica_flops", "Replica compute at the stated MFU", e.replica_flops, "FLOP/s",
           formula="{gpus_per_replica} × {gpu_peak_flops} FLOP/s × {mfu}")
    d.step("decode_flops_per_token", "FLOP per decoded token (2 × active params + attention)",
           e.decode_flops_per_sequence, "FLOP",
           formula=f"2 × {format_number(m.active_params)} + "
                   f"{format_number(attention_flops_per_token_per_position(m))} × "
                   "{decode_context_tokens}")
    d.step("tpot_target_s", "TPOT target", p.tpot_target_ms / 1000, "s", formula="{tpot_target_ms} ms / 1000")
    d.step("batch_tpot_cap", "Largest batch whose step meets the TPOT target", e.batch_tpot_cap, "1",
           noun="sequences",
           formula="min(floor(({tpot_target_s} s − {weight_read_s} s) / {kv_read_per_sequence_s} s), "
                   "floor({tpot_target_s} s × {replica_flops} FLOP/s / {decode_flops_per_token} FLOP))")
    d.step("decode_batch", "Decode batch per replica: the tighter cap", e.batch, "1", noun="sequences",
           formula="min({batch_memory_cap}, {batch_tpot_cap})")
    d.step("batch_limited_by", "Which cap binds", "TPOT" if e.batch_tpot_cap < e.batch_memory_cap else "memory",
           formula="TPOT cap {batch_tpot_cap} against memory cap {batch_memory_cap}")
    d.step("decode_step_memory_s", "Decode step, bytes side", e.decode_step_memory_s, "s",
           formula="{weight_read_s} s + {decode_batch} × {kv_read_per_sequence_s} s")
    d.step("decode_step_compute_s", "Decode step, FLOP side", e.decode_step_compute_s, "s",
           formula="{decode_batch} × {decode_flops_per_token} FLOP / {replica_flops} FLOP/s")
    d.step("decode_step_s", "Decode step (= TPOT at that batch)", e.decode_step_s, "s",
           formula="max({decode_step_memory_s} s, {decode_step_compute_s} s)")
    d.step("decode_tokens_per_s", "Decode tokens per second per replica", e.decode_tokens_per_s, "1/s",
           noun="tokens", formula="{decode_batch} / {decode_step_s} s")
    d.step("uncached_prompt_tokens", "Prompt tokens per request the prefix cache misses", e.uncached_prompt_tokens,
           "1", noun="tokens", formula="{prompt_tokens} × (1 − {prefix_cache_hit})")
    d.step("cached_prompt_tokens", "Prompt tokens per request served from the prefix cache",
           p.prompt_tokens - e.uncached_prompt_tokens, "1", noun="tokens",
           formula="{prompt_tokens} − {uncached_prompt_tokens}")
    d.step("prefill_flops_per_request", "Prefill FLOP per request (uncached tokens only)",
           e.prefill_flops_per_request, "FLOP",
           formula=f"{{uncached_prompt_tokens}} × (2 × {format_number(m.active_params)} + "
                   f"{format_number(attention_flops_per_token_per_position(m))} × ({{cached_prompt_tokens}} + "
                   "{uncached_prompt_tokens} / 2))")
    d.step("prefill_s_per_request", "Prefill time per request on one replica", e.prefill_s_per_request, "s",
           formula="{prefill_flops_per_request} FLOP / {replica_flops} FLOP/s")
    return e


def record_fleet(d: Derivation, p, rate_key: str, e: Engine) -> Fleet:
    """Prefill and decode replica-equivalents, replicas and GPUs, after `rate_key` is recorded."""
    rate = d.value(rate_key)
    tpot_s = p.tpot_target_ms / 1000
    f = fleet(rate, e, p.output_tokens, p.target_utilization, tpot_s)
    d.step("prefill_replica_equivalents", "Replicas busy with nothing but prefill", f.prefill_replica_equivalents,
           "1", noun="replicas", formula=f"{{{rate_key}}} req/s × {{prefill_s_per_request}} s")
    d.step("weight_read_floor_busy", "Decode busy share the weight read alone sets (one step per TPOT)",
           100 * e.weight_read_s / tpot_s, "%", formula="100 × {weight_read_s} s / {tpot_target_s} s")
    d.step("replicas_continuous", "Replicas the work needs, before rounding up", f.replicas_continuous, "1",
           noun="replicas",
           formula="the fewest R with prefill / R + decode busy at the batch each holds ≤ {target_utilization}, "
                   "and R × {decode_batch} ≥ the sequences in flight (a search)")
    d.step("replicas", "Replicas at the target utilization", f.replicas, "1", noun="replicas",
           formula="ceil({replicas_continuous})")
    d.step("held_batch", "Sequences each replica decodes at once, each served at the TPOT target",
           f.held_batch, "1", noun="sequences",
           formula=f"{{{rate_key}}} req/s / {{replicas}} × {{output_tokens}} × {{tpot_target_s}} s")
    d.step("held_batch_step_s", "Decode step at that batch", f.held_step_s, "s",
           formula="max({weight_read_s} s + max(1, {held_batch}) × {kv_read_per_sequence_s} s, "
                   "max(1, {held_batch}) × {decode_flops_per_token} FLOP / {replica_flops} FLOP/s)")
    d.step("decode_replica_equivalents", "Replicas busy with decode at the batch they hold",
           f.decode_replica_equivalents, "1", noun="replicas",
           formula=f"{{{rate_key}}} req/s × {{output_tokens}} × {{held_batch_step_s}} s / max(1, {{held_batch}})")
    d.step("gpus", "GPUs", f.replicas * p.gpus_per_replica, "1", noun="GPUs",
           formula="{replicas} × {gpus_per_replica}")
    return f
