"""Continuous batching on one replica: the decode arithmetic sets the batch, the KV budget caps it.

Teaching order (the interview's): the KV bytes a token costs, the HBM left after the weights,
the batch that fits at full context, the decode step from bytes and FLOP, the batch a TPOT
target allows, tokens per second per replica, the worst step a token can see, and why decode
stays bandwidth-bound at every batch the KV budget allows. Then prefill (whole or chunked),
the replica's request capacity, and the streaming path.

Every step time is the engine's (models/engine/roofline.py): a decode step is
`Replica.decode_step`, max(bytes / (HBM x MBU), FLOP / (peak x decode MFU)) plus the
tensor-parallel all-reduces and a fixed cost. The fused step of chunked prefill is the engine's
too (`Replica.pass_step` with a chunk): the decodes plus one prompt chunk in the same iteration,
the chunk's FLOP at the prefill MFU (`Replica.prefill_flops` after its prefix), its prefix's KV
read once, and the all-reduces over every token the iteration carries. `Replica.step_lines`
gives the same step as lines in the batch, from which the TPOT caps are closed-form.

Modelling choices, stated on the page:
  * The KV budget is paged in 16-token blocks; `batch_cap_kv` is the batch that fits with every
    sequence at the full context, so a scheduler that admits no more can never run out of KV.
  * `tpot_bound_s` is the worst step a token can see: every sequence of the planned batch at the
    full context, plus one prefill chunk fused into the step (the last chunk of a full-context
    prompt). It is a bound, named as one. `p95_tpot_s` is a percentile: at the load, a token's
    TPOT is the step it rides in, a plain decode step or one carrying a chunk, so the 95th
    percentile is the chunk step when more than 5% of steps carry a chunk, else the plain step.
  * A prefix-cache hit (0 here: the question states no shared prefix) skips prefill of that
    share of each prompt; decode still reads its KV and each sequence still holds its blocks.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

import numpy as np
from pydantic import model_validator

from models.core import Derivation, Knob, StrictModel
from models.units import format_quantity
from models.engine.knobs import EngineKnobs, accelerator, problem, replica, with_defaults
from models.engine.record import record_efficiency_source, record_model
from models.engine.roofline import Replica, floor_batch
from models.engine.serving_knobs import RequestKnobs, SloKnobs
from models.sim import batching

BLOCK_TOKENS = 16  # paged KV block (vLLM's default block size)
SIM_STEPS = 2500  # the simulated horizon is about this many decode steps at the scenario's load
SIM_HORIZON_S = (5.0, 600.0)


class _BatchingKnobs(StrictModel):
    max_context_tokens: Annotated[
        int,
        Knob("Max context (prompt + output)", "tokens", 1024, 131072, log=True,
             help="The longest sequence the replica accepts; the KV cap is computed at this length.",
             draw=(4096, 32768), draw_choices=(4096, 8192, 16384, 32768)),
    ] = 8192
    chunk_tokens: Annotated[
        int,
        Knob("Prefill chunk", "tokens", 16, 8192, log=True,
             help="Prompt tokens fused into one decode step (chunked prefill).", draw=(128, 1024), draw_choices=(128, 256, 512, 1024)),
    ] = 256
    kv_overcommit: Annotated[
        float,
        Knob("Admit beyond the full-context cap", "×", 1, 4, 0.25,
             help="Paged KV lets the scheduler admit more sequences than fit at full context; "
                  "above 1x it may have to preempt when they grow.", draw=(1, 2)),
    ] = 1.0
    stream_buffer_tokens: Annotated[
        int,
        Knob("Stream buffer per client", "tokens", 16, 8192, log=True,
             help="Tokens held for a client that reads slower than they are generated.", draw=(64, 1024)),
    ] = 256
    stream_policy: Annotated[
        Literal["cut", "block"],
        Knob("When a client's buffer is full", help="cut: drop the stream and free its slot. "
             "block: the engine waits for the client (the design to avoid).", simulation=True,
             draw_choices=("cut",)),
    ] = "cut"
    policy: Annotated[
        Literal["chunked", "continuous", "static"],
        Knob("Scheduler (simulation)",
             help="static: a batch runs until its longest request is done. continuous: admit every "
                  "iteration, prompts as their own steps. chunked: continuous with chunked prefill.", simulation=True),
    ] = "chunked"
    arrival_rps: Annotated[
        float,
        Knob("Arrival rate", "req/s", 0.05, 200, log=True,
             help="Requests per second reaching this replica: it sets the batch the replica holds, the share of steps that carry a chunk (so the p95 TPOT), and the simulation's traffic.", draw=(1, 4)),
    ] = 4
    length_spread: Annotated[
        float,
        Knob("Length spread (simulation)", "σ", 0, 2, 0.1,
             help="Lognormal sigma of prompt and output lengths around their means; 0 = all equal.",
             draw=(0.3, 1.2), simulation=True),
    ] = 0.8
    on_fraction: Annotated[
        float,
        Knob("Traffic on-time (simulation)", "", 0.1, 1, 0.05, percent=True,
             help="100% = steady Poisson. Below, traffic arrives in on/off bursts (20 s period) "
                  "with the same mean rate.", draw=(0.3, 1), simulation=True),
    ] = 1.0
    slow_client_fraction: Annotated[
        float,
        Knob("Slow clients (simulation)", "", 0, 0.5, 0.01, percent=True,
             help="Share of streams whose client reads slower than tokens are generated.", draw=(0, 0.1), simulation=True),
    ] = 0.02
    slow_client_tokens_per_s: Annotated[
        float,
        Knob("Slow client read rate", "tokens/s", 0.5, 100, log=True,
             help="How fast a slow client drains its stream.", draw=(2, 20)),
    ] = 5


class Params(EngineKnobs, SloKnobs, with_defaults(RequestKnobs, prefix_cache_hit=0.0), _BatchingKnobs):
    """The page's scheduler, stream and simulation knobs, then the request, the TPOT target and
    the engine. No prefix cache by default: the question states no shared prefix."""

    @model_validator(mode="after")
    def _replica_can_serve(self) -> "Params":
        why = fit_problem(self)
        if why:
            raise ValueError(why)
        return self


def _worst_chunk(p) -> tuple[int, int]:
    """(tokens, first position) of the worst chunk: the last one of a full-context prompt."""
    c = min(p.chunk_tokens, p.max_context_tokens)
    return c, p.max_context_tokens - c


def _largest_chunk(r: Replica, batch: int, ctx: int, tpot_s: float, known_ok: int) -> int:
    """The largest chunk whose worst step (the planned batch at full context plus the last chunk of
    a full-context prompt) still meets `tpot_s`: a bisection, the step growing with the chunk's FLOP."""
    def fits(c: int) -> bool:
        return r.pass_step(batch, ctx, chunk_tokens=c, chunk_start=ctx - c).step_s <= tpot_s
    if fits(ctx):
        return ctx
    lo = known_ok if known_ok > 0 and fits(known_ok) else 0
    hi = ctx  # does not fit
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo


def _blocks(r: Replica) -> int:
    return max(0, math.floor(r.kv_room_bytes / (BLOCK_TOKENS * r.kv_bytes_per_token)))


def fit_problem(p) -> str | None:
    """Why this replica cannot serve even one sequence of the scenario, or None."""
    why = problem(p)
    if why:
        return why
    if p.prompt_tokens + 1 > p.max_context_tokens:
        return (f"The mean prompt ({p.prompt_tokens:,} tokens) must be shorter than the max context "
                f"({p.max_context_tokens:,} tokens).")
    r = replica(p)
    hw = accelerator(p)
    if _blocks(r) < math.ceil(p.max_context_tokens / BLOCK_TOKENS):
        return (f"After the weights, {p.tp_degree} × {hw.name} keep {r.kv_room_bytes / 1e9:,.1f} GB for KV, less "
                f"than one {p.max_context_tokens:,}-token sequence needs "
                f"({r.kv_bytes_per_token * p.max_context_tokens / 1e9:,.1f} GB). "
                "Use more accelerators per replica, a smaller KV format or a shorter max context.")
    c, start = _worst_chunk(p)
    if min(r.step_lines(p.max_context_tokens, chunk_tokens=c, chunk_start=start).caps(p.tpot_target_ms / 1000)) < 1:
        return (f"Even one sequence at full context plus a {c:,}-token prefill chunk takes longer than "
                f"the {p.tpot_target_ms:g} ms TPOT target on {p.tp_degree} × {hw.name}. Loosen the target, "
                "shrink the chunk or add accelerators per replica.")
    return None


def solve(p: Params) -> Derivation:
    r, hw = replica(p), accelerator(p)
    m = r.model
    d = Derivation(p)
    ctx = p.max_context_tokens
    tpot = p.tpot_target_ms / 1000

    # --- numbers: bytes ---------------------------------------------------------------------
    record_model(d, p)
    W, kv = r.weight_bytes, r.kv_bytes_per_token
    if m.kv_lora_rank:
        kv_note = "latent attention caches one compressed vector per layer, not a K and a V for every head"
    elif m.name == "Llama-3-70B" and p.kv_precision == "bf16":
        kv_note = ('exactly 320 KiB, the "320 KB per token" people quote; grouped-query attention (8 KV heads '
                   'for 64 query heads) is why it is not eight times larger')
    elif m.kv_heads < m.heads:
        kv_note = (f"grouped-query attention keeps {m.kv_heads} KV heads for {m.heads} query heads, so it is "
                   f"{m.heads / m.kv_heads:g} times smaller than a K and a V for every query head")
    else:
        kv_note = "every query head keeps its own K and V (no grouped-query attention)"
    d.step("kv_per_token_note", "Why the KV per token is this size", kv_note,
           formula="{model}'s KV heads against its query heads", kind="verdict")
    d.step("prefix_hit_basis", "Where the prefix-cache hit comes from",
           "the question names no shared prefix, so none of a prompt starts cached" if p.prefix_cache_hit == 0
           else "that share of each prompt (a shared system prompt, earlier turns) is assumed already cached",
           formula="{prefix_cache_hit} against 0", kind="verdict")
    d.step("gpu_memory_bytes", f"{hw.name} HBM", hw.hbm_bytes, "B")
    d.step("usable_hbm_bytes", "HBM usable per replica", r.usable_hbm_bytes, "B",
           formula="{tp_degree} × {gpu_memory_bytes} B × {usable_hbm_fraction}")
    budget = d.step("kv_budget_bytes", "KV budget: usable HBM minus weights", r.kv_room_bytes, "B",
                    formula="{usable_hbm_bytes} B − {weight_bytes} B")
    d.step("kv_block_tokens", "Tokens in one paged KV block (vLLM's default)", BLOCK_TOKENS, "1", noun="tokens",
           kind="lookup")
    blocks = d.step("kv_budget_blocks", f"KV blocks of {BLOCK_TOKENS} tokens in the budget", _blocks(r), "1",
                    noun="blocks", formula=f"floor({{kv_budget_bytes}} B / ({BLOCK_TOKENS} × {{kv_bytes_per_token}} B))")
    d.step("kv_budget_tokens", "Tokens of KV the replica holds", blocks * BLOCK_TOKENS, "1", noun="tokens",
           formula=f"{{kv_budget_blocks}} × {BLOCK_TOKENS}")
    d.step("sequence_kv_bytes", "KV of one sequence at full context", kv * ctx, "B",
           formula="{kv_bytes_per_token} B × {max_context_tokens}")
    per_seq = d.step("blocks_per_sequence", "Blocks one full-context sequence holds", math.ceil(ctx / BLOCK_TOKENS),
                     "1", noun="blocks", formula=f"ceil({{max_context_tokens}} / {BLOCK_TOKENS})")
    d.step("batch_cap_kv_continuous", "Full-context sequences the blocks hold, before the floor", blocks / per_seq,
           "1", noun="sequences", formula="{kv_budget_blocks} / {blocks_per_sequence}")
    cap_kv = d.step("batch_cap_kv", "Sequences that fit at full context (the KV cap)", blocks // per_seq, "1",
                    noun="sequences", formula="floor({batch_cap_kv_continuous})")

    # --- the decode step ----------------------------------------------------------------------
    bw, fl = r.achieved_hbm_Bps, r.peak_flops * r.decode_mfu
    d.step("gpu_hbm_Bps", f"{hw.name} HBM bandwidth", hw.hbm_Bps, "B/s")
    d.step("replica_hbm_Bps", "Replica HBM bandwidth at the decode MBU", bw, "B/s",
           formula="{tp_degree} × {gpu_hbm_Bps} B/s × {hbm_efficiency}")
    record_efficiency_source(d, p)
    d.step("gpu_peak_flops", f"{hw.name} dense {p.compute_precision} peak", hw.peak(p.compute_precision), "FLOP/s")
    d.step("replica_decode_flops", "Replica decode compute at the decode MFU", fl, "FLOP/s",
           formula="{tp_degree} × {gpu_peak_flops} FLOP/s × {decode_mfu}")
    d.step("replica_prefill_flops", "Replica prefill compute at the prefill MFU", r.peak_flops * r.prefill_mfu,
           "FLOP/s", formula="{tp_degree} × {gpu_peak_flops} FLOP/s × {prefill_mfu}")
    d.step("weight_read_s", "Reading every weight once: the floor of any step", W / bw, "s",
           formula="{weight_bytes} B / {replica_hbm_Bps} B/s")
    d.step("step_overhead_s", "Fixed cost per step (launches, sampling)", r.step_overhead_s, "s",
           formula="{step_overhead_ms}")
    ar0 = r.allreduce_s(0)
    tp_note = "None on one accelerator." if r.tp == 1 else ""
    d.step("allreduce_fixed_s", "Tensor-parallel all-reduces per step, latency part", ar0, "s",
           formula=f"{m.layers} layers × 2 × {{allreduce_latency_us}} µs" if r.tp > 1 else "", note=tp_note)
    d.step("link_Bps_per_direction", f"{hw.name} scale-up link, each way", hw.link_Bps_per_direction, "B/s",
           kind="lookup")
    d.step("allreduce_per_token_s", "All-reduce payload time per token a step carries", r.allreduce_s(1) - ar0, "s",
           formula=(f"{m.layers} layers × 2 × 2 × ({r.tp} − 1) / {r.tp} × {m.d_model} × 2 B / "
                    "{link_Bps_per_direction}") if r.tp > 1 else "", note=tp_note)
    d.step("weight_flops_per_token", "FLOP per token through the weights", r.weight_flops_per_token, "FLOP",
           formula="2 FLOP × {active_params}")
    ridge = d.step("ridge_batch", "Ridge batch: where the weight FLOP catch up with the weight bytes",
                   fl / bw * W / r.weight_flops_per_token, "1", noun="sequences",
                   formula="{replica_decode_flops} / {replica_hbm_Bps} × {weight_bytes} / {weight_flops_per_token}")
    d.step("kv_cap_vs_ridge", "Where the KV cap sits against the ridge", "below" if cap_kv < ridge else "above",
           formula="{batch_cap_kv} vs {ridge_batch}", kind="verdict")
    a = r.attention_flops_per_position
    d.step("attention_flops_per_position", "Attention FLOP per token per earlier token (QK^T and AV)", a, "FLOP",
           note="0 when attention FLOP are not counted (the textbook 2 × parameters per token).")
    mla = m.attention == "MLA" and r.attention_flops
    d.step("decode_attention_flops_per_position", "Attention FLOP per cached token when decoding",
           r.decode_attention_flops_per_position, "FLOP",
           formula=(f"2 FLOP × {m.layers} layers × {m.heads} heads × (2 × {m.kv_lora_rank} latent + "
                    f"{m.qk_rope_head_dim} RoPE)") if mla else "{attention_flops_per_position}",
           note="MLA decodes with its up-projections absorbed: each query meets the cached latent itself."
           if mla else "The same as a prompt token's.")
    d.step("decode_flops_per_token_full", "FLOP per decoded token at full context",
           r.decode_flops_per_token(ctx), "FLOP",
           formula="{weight_flops_per_token} + {decode_attention_flops_per_position} × {max_context_tokens}")
    d.step("kv_read_full_s", "Reading one full-context sequence's KV", kv * ctx / bw, "s",
           formula="{sequence_kv_bytes} B / {replica_hbm_Bps} B/s")
    at_cap = r.decode_step(cap_kv, ctx)
    d.step("kv_capped_step_memory_s", "Step at the KV cap, bytes side (all at full context)", at_cap.memory_s, "s",
           formula="({weight_bytes} B + {batch_cap_kv} × {sequence_kv_bytes} B) / {replica_hbm_Bps} B/s")
    d.step("kv_capped_step_compute_s", "Step at the KV cap, FLOP side", at_cap.compute_s, "s",
           formula="{batch_cap_kv} × {decode_flops_per_token_full} / {replica_decode_flops}")
    d.step("kv_capped_bound", "What bounds a decode step at the KV cap",
           "bandwidth" if at_cap.bound == "memory" else "compute",
           formula="{kv_capped_step_memory_s} s vs {kv_capped_step_compute_s} s", kind="verdict")
    d.step("compute_share_at_kv_cap", "FLOP side as a share of the bytes side at the KV cap",
           at_cap.compute_s / at_cap.memory_s, "1", percent=True,
           formula="{kv_capped_step_compute_s} / {kv_capped_step_memory_s}")
    d.step("full_memory_read_s", "Weights plus a full KV budget, read once", (W + budget) / bw, "s",
           formula="({weight_bytes} B + {kv_budget_bytes} B) / {replica_hbm_Bps} B/s")
    # Context above which the KV-capped batch is bandwidth-bound: with B = K / (kv c),
    # (W + K) / BW > K (2N / (kv c) + a / kv) / F  <=>  c > 2N K / (kv (F (W + K) / BW - K a / kv)).
    denom = kv * (fl * (W + budget) / bw - budget * a / kv)
    d.step("bandwidth_bound_above_tokens", "Context above which the KV-capped batch is bandwidth-bound",
           r.weight_flops_per_token * budget / denom if denom > 0 else math.inf, "1", noun="tokens",
           formula="{weight_flops_per_token} × {kv_budget_bytes} / ({kv_bytes_per_token} × ({replica_decode_flops} × "
                   "({weight_bytes} + {kv_budget_bytes}) / {replica_hbm_Bps} − {kv_budget_bytes} × "
                   "{attention_flops_per_position} / {kv_bytes_per_token}))" if denom > 0 else "",
           note="" if denom > 0 else "The FLOP side binds at every context: the batch is never bandwidth-bound.")

    # --- the TPOT cap, with one prefill chunk fused into the step -----------------------------
    c, start = _worst_chunk(p)
    d.step("worst_chunk_tokens", "Tokens in the worst chunk (a chunk never exceeds the context)", c, "1",
           noun="tokens", formula="min({chunk_tokens}, {max_context_tokens})")
    d.step("chunk_flops", "Worst prefill chunk fused into a step (last chunk of a full-context prompt)",
           r.prefill_flops(c, start), "FLOP",
           formula="{worst_chunk_tokens} × ({weight_flops_per_token} + {attention_flops_per_position} × "
                   "({max_context_tokens} − {worst_chunk_tokens} / 2 − 1 / 2))")
    d.step("chunk_prefix_kv_bytes", "KV the worst chunk reads from its own prompt", kv * start, "B",
           formula="{kv_bytes_per_token} × ({max_context_tokens} − {worst_chunk_tokens})")
    worst = r.step_lines(ctx, chunk_tokens=c, chunk_start=start)
    d.step("worst_step_fixed_s", "Worst step's all-reduces and fixed cost with no sequence decoding",
           worst.extra[0], "s",
           formula="{allreduce_fixed_s} + {worst_chunk_tokens} × {allreduce_per_token_s} + {step_overhead_s}")
    memory_cap, compute_cap = worst.caps(tpot)
    d.step("batch_cap_tpot_memory", "Batch the TPOT target allows on the bytes side (before the floor)",
           memory_cap, "1", noun="sequences",
           formula="({tpot_target_ms} − {worst_step_fixed_s} − ({weight_bytes} + {chunk_prefix_kv_bytes}) / "
                   "{replica_hbm_Bps}) / ({kv_read_full_s} + {allreduce_per_token_s})")
    d.step("batch_cap_tpot_compute", "Batch the TPOT target allows on the FLOP side (before the floor)",
           compute_cap, "1", noun="sequences",
           formula="({tpot_target_ms} − {worst_step_fixed_s} − {chunk_flops} / {replica_prefill_flops}) / "
                   "({decode_flops_per_token_full} / {replica_decode_flops} + {allreduce_per_token_s})")
    cap_tpot = d.step("batch_cap_tpot", "Largest batch whose worst step meets the TPOT target",
                      floor_batch(min(memory_cap, compute_cap)), "1", noun="sequences",
                      formula="floor(min({batch_cap_tpot_memory}, {batch_cap_tpot_compute}))")
    batch = d.step("decode_batch", "Batch to plan: the tighter cap", min(cap_kv, cap_tpot), "1", noun="sequences",
                   formula="min({batch_cap_kv}, {batch_cap_tpot})")
    d.step("batch_limited_by", "Which cap binds", "the KV budget" if cap_kv <= cap_tpot else "the TPOT target",
           formula="{batch_cap_kv} vs {batch_cap_tpot}", kind="verdict")
    avg_ctx = d.step("decode_context_tokens", "Average context a decode step reads per sequence",
                     p.prompt_tokens + p.output_tokens / 2, "1", noun="tokens",
                     formula="{prompt_tokens} + {output_tokens} / 2")
    d.step("decode_flops_per_token", "FLOP per decoded token at the average context",
           r.decode_flops_per_token(avg_ctx), "FLOP",
           formula="{weight_flops_per_token} + {decode_attention_flops_per_position} × {decode_context_tokens}")
    typical = r.decode_step(batch, avg_ctx)
    d.step("step_memory_s", "Typical step, bytes side", typical.memory_s, "s",
           formula="({weight_bytes} B + {decode_batch} × {kv_bytes_per_token} B × {decode_context_tokens}) / "
                   "{replica_hbm_Bps} B/s")
    d.step("step_compute_s", "Typical step, FLOP side", typical.compute_s, "s",
           formula="{decode_batch} × {decode_flops_per_token} / {replica_decode_flops}")
    d.step("step_allreduce_s", "Typical step, tensor-parallel all-reduces", typical.allreduce_s, "s",
           formula="{allreduce_fixed_s} s + {decode_batch} × {allreduce_per_token_s} s")
    step = d.step("step_time_s", "Decode step at the planned batch and the average context", typical.step_s, "s",
                  formula="max({step_memory_s} s, {step_compute_s} s) + {step_allreduce_s} s + {step_overhead_s} s")
    d.step("tokens_per_s_per_replica", "Decode tokens per second per replica", batch / step, "1/s",
           noun="tokens", formula="{decode_batch} / {step_time_s} s")
    d.step("stream_tokens_per_s", "What each stream sees", 1 / step, "1/s", noun="tokens",
           formula="1 / {step_time_s} s")
    w = r.pass_step(batch, ctx, chunk_tokens=c, chunk_start=start)
    d.step("worst_step_memory_s", "Worst step, bytes side", w.memory_s, "s",
           formula="({weight_bytes} B + {decode_batch} × {sequence_kv_bytes} B + {chunk_prefix_kv_bytes} B) / "
                   "{replica_hbm_Bps} B/s")
    d.step("worst_step_compute_s", "Worst step, FLOP side", w.compute_s, "s",
           formula="{decode_batch} × {decode_flops_per_token_full} / {replica_decode_flops} + {chunk_flops} / "
                   "{replica_prefill_flops}")
    d.step("worst_step_allreduce_s", "Worst step, tensor-parallel all-reduces", w.allreduce_s, "s",
           formula="{allreduce_fixed_s} + ({decode_batch} + {worst_chunk_tokens}) × {allreduce_per_token_s}")
    d.step("tpot_bound_s", "Worst-step TPOT, a bound: all at full context plus one chunk", w.step_s, "s",
           formula="max({worst_step_memory_s} s, {worst_step_compute_s} s) + {worst_step_allreduce_s} s + "
                   "{step_overhead_s} s")
    full = r.decode_step(batch, ctx)
    per_chunk_token = r.flops_per_token(ctx) / (r.peak_flops * r.prefill_mfu)
    free = (full.memory_s - full.compute_s) / per_chunk_token
    d.step("full_step_memory_s", "Step at the planned batch, all at full context, bytes side", full.memory_s, "s",
           formula="({weight_bytes} + {decode_batch} × {sequence_kv_bytes}) / {replica_hbm_Bps}")
    d.step("full_step_compute_s", "The same step, FLOP side", full.compute_s, "s",
           formula="{decode_batch} × {decode_flops_per_token_full} / {replica_decode_flops}")
    d.step("prefill_token_at_full_context_s", "Prefill time of one chunk token at full context", per_chunk_token, "s",
           formula="({weight_flops_per_token} + {attention_flops_per_position} × {max_context_tokens}) / "
                   "{replica_prefill_flops}")
    d.step("free_chunk_tokens_continuous", "Chunk tokens whose FLOP fit under the bytes side of a full step, "
           "before the floor", max(0.0, free), "1", noun="tokens",
           formula="max(0, ({full_step_memory_s} − {full_step_compute_s}) / {prefill_token_at_full_context_s})")
    d.step("free_chunk_tokens", "Largest chunk that still hides under the bytes side of a full step",
           max(0, math.floor(free)), "1", noun="tokens", formula="floor({free_chunk_tokens_continuous})")

    # --- prefill and TTFT -----------------------------------------------------------------------
    P = p.prompt_tokens
    cached = P * p.prefix_cache_hit
    new = P - cached
    d.step("uncached_prompt_tokens", "Prompt tokens per request the prefix cache misses", new, "1", noun="tokens",
           formula="{prompt_tokens} × (1 − {prefix_cache_hit})")
    d.step("cached_prompt_tokens", "Prompt tokens per request served from the prefix cache", cached, "1",
           noun="tokens", formula="{prompt_tokens} − {uncached_prompt_tokens}")
    d.step("prefill_flops_per_request", "Prefill FLOP for one mean prompt, attention included",
           r.prefill_flops(new, cached), "FLOP",
           formula="{uncached_prompt_tokens} × {weight_flops_per_token} + {attention_flops_per_position} × "
                   "({uncached_prompt_tokens} × {cached_prompt_tokens} + {uncached_prompt_tokens} × "
                   "({uncached_prompt_tokens} − 1) / 2)")
    d.step("prefill_s_per_request", "Prefill time per request on one replica (the engine's)", r.prefill_s(new, cached),
           "s", formula="{prefill_flops_per_request} / {replica_prefill_flops} + {allreduce_fixed_s} + "
                        "{uncached_prompt_tokens} × {allreduce_per_token_s}" if new > 0 else "0 s (nothing to prefill)")
    alone = r.pass_step(0, 0, chunk_tokens=new, chunk_start=cached)
    d.step("prefill_step_memory_s", "That prompt as one step, bytes side (weights and the cached prefix)",
           alone.memory_s, "s",
           formula="({weight_bytes} B + {cached_prompt_tokens} × {kv_bytes_per_token} B) / {replica_hbm_Bps} B/s")
    prefill = d.step("prefill_time_s", "One prompt prefilled alone on an idle replica (TTFT at zero load)",
                     alone.step_s, "s",
                     formula="max({prefill_step_memory_s}, {prefill_flops_per_request} / {replica_prefill_flops}) + "
                             "{allreduce_fixed_s} + {uncached_prompt_tokens} × {allreduce_per_token_s} + "
                             "{step_overhead_s}" if new > 0 else "{prefill_step_memory_s} + {step_overhead_s}")
    n_chunks = d.step("prefill_chunks", "Steps a chunked prompt takes", math.ceil(new / p.chunk_tokens - 1e-9), "1",
                      noun="steps", formula="ceil({uncached_prompt_tokens} / {chunk_tokens})")
    # Every chunk of an idle prefill at once: chunk k covers positions cached + k c onward.
    k = np.arange(int(n_chunks))
    s0 = cached + k * p.chunk_tokens
    t = np.minimum(p.chunk_tokens, new - k * p.chunk_tokens)
    chunk_mem = (W + kv * s0) / bw
    chunk_cmp = r.prefill_flops(t, s0) / (r.peak_flops * r.prefill_mfu)
    chunked_ttft = float(np.sum(np.maximum(chunk_mem, chunk_cmp) + r.allreduce_s(t))) + n_chunks * r.step_overhead_s
    rooflines = float(np.sum(np.maximum(chunk_mem, chunk_cmp)))
    # Along a prompt the chunks run FLOP-bound and then bytes-bound (the last chunk is the shortest):
    # the first j chunks' FLOP add up to a prefill of their tokens, the rest read the weights and
    # the prompt before them.
    flop_bound = chunk_cmp >= chunk_mem
    j = int(np.argmin(flop_bound)) if not flop_bound.all() else int(n_chunks)
    split = bool(flop_bound[:j].all() and not flop_bound[j:].any())
    j = d.step("flop_bound_chunks", "Chunks, from the first, whose FLOP side binds", j, "1", noun="chunks",
               formula="the chunks before the first whose bytes side exceeds its FLOP side", kind="search")
    d.step("bytes_bound_chunks", "The chunks after them: bytes-bound", n_chunks - j, "1", noun="chunks",
           formula="{prefill_chunks} − {flop_bound_chunks}")
    j_tokens = min(j * p.chunk_tokens, new)
    d.step("flop_bound_chunk_tokens", "Prompt tokens in the FLOP-bound chunks", j_tokens, "1", noun="tokens",
           formula="min({flop_bound_chunks} × {chunk_tokens}, {uncached_prompt_tokens})")
    d.step("flop_bound_chunk_flops", "Their FLOP: a prefill of those tokens", r.prefill_flops(j_tokens, cached),
           "FLOP", formula="{flop_bound_chunk_tokens} × {weight_flops_per_token} + {attention_flops_per_position} × "
                           "({flop_bound_chunk_tokens} × {cached_prompt_tokens} + {flop_bound_chunk_tokens} × "
                           "({flop_bound_chunk_tokens} − 1) / 2)")
    d.step("bytes_bound_prefix_tokens", "Prefix KV the bytes-bound chunks read, summed over them",
           float(np.sum(s0[j:])), "1", noun="tokens",
           formula="{bytes_bound_chunks} × ({cached_prompt_tokens} + {chunk_tokens} × ({flop_bound_chunks} + "
                   "{prefill_chunks} − 1) / 2)")
    d.step("chunk_rooflines_s", "The chunks' bytes-or-FLOP times, summed", rooflines, "s",
           formula="{flop_bound_chunk_flops} / {replica_prefill_flops} + ({bytes_bound_chunks} × {weight_bytes} + "
                   "{kv_bytes_per_token} × {bytes_bound_prefix_tokens}) / {replica_hbm_Bps}" if split else "",
           note="" if split else "Chunk by chunk, max(bytes side, FLOP side), summed: here the bytes-bound chunks "
                                 "are not all at the end, so the sum has no shorter form.")
    d.step("ttft_idle_chunked_s", "The same prompt in chunks on an idle replica", chunked_ttft, "s",
           formula="{chunk_rooflines_s} + {prefill_chunks} × ({allreduce_fixed_s} + {step_overhead_s}) + "
                   "{uncached_prompt_tokens} × {allreduce_per_token_s}")
    d.step("chunked_ttft_verdict", "Does chunking the prompt cost TTFT?",
           "since each chunk pays the fixed cost again" if n_chunks > 1
           else "the same, since the whole prompt fits in one chunk",
           formula="{prefill_chunks} against 1", kind="verdict")
    d.step("unchunked_gap_s", "Token gap when a whole prompt runs as its own step (no chunking)",
           prefill + step, "s", formula="{prefill_time_s} s + {step_time_s} s")

    # --- the replica under load -----------------------------------------------------------------
    O = p.output_tokens
    c_avg = p.chunk_tokens
    mid = _typical_chunk_steps(d, r, "chunk_avg", "chunk_tokens", c_avg, cached, new, kv, bw,
                               "", "A typical chunk (from the middle of a mean prompt)")
    plain, with_chunk = r.step_lines(avg_ctx), r.step_lines(avg_ctx, chunk_tokens=c_avg, chunk_start=mid)
    sat = d.step("saturated_step_s", "Step of a saturated replica: the planned batch plus one chunk",
                 with_chunk.step_s(batch), "s",
                 formula="max({step_memory_s} + {chunk_avg_prefix_read_s}, {step_compute_s} + {chunk_avg_compute_s}) + "
                         "{allreduce_fixed_s} + ({decode_batch} + {chunk_tokens}) × {allreduce_per_token_s} + "
                         "{step_overhead_s}")
    cap_p = d.step("prefill_capacity_rps", "Requests/s the chunks can prefill", c_avg / sat / new, "1/s",
                   noun="requests", formula="{chunk_tokens} / {saturated_step_s} s / {uncached_prompt_tokens}")
    cap_d = d.step("decode_capacity_rps", "Requests/s the decode slots can finish", batch / sat / O, "1/s",
                   noun="requests", formula="{decode_batch} / {saturated_step_s} s / {output_tokens}")
    cap = d.step("replica_capacity_rps", "Request capacity of one replica", min(cap_p, cap_d), "1/s",
                 noun="requests", formula="min({prefill_capacity_rps}, {decode_capacity_rps})")
    d.step("capacity_limited_by", "Which side saturates first", "prefill" if cap_p < cap_d else "decode",
           formula="{prefill_capacity_rps} vs {decode_capacity_rps}", kind="verdict")
    # The chunk is a knob, not a law: the TPOT budget the worst step leaves says how large it may be,
    # and at that chunk the replica may saturate on the other side.
    big = d.step("largest_chunk_tokens", "Largest chunk whose worst step still meets the TPOT target",
                 _largest_chunk(r, batch, ctx, tpot, c), "1", noun="tokens",
                 formula="the largest chunk for which {decode_batch} sequences at {max_context_tokens} plus the last "
                         "chunk of a full-context prompt take at most {tpot_target_ms}", kind="search")
    # Prefill saturates first exactly when chunk / prompt < batch / output: the chunk that balances
    # the two sides is where capacity peaks (smaller, prefill limits; larger, every step is longer).
    bal = d.step("balanced_chunk_tokens", "Chunk at which prefill and decode saturate together",
                 batch * new / O, "1", noun="tokens", formula="{decode_batch} × {uncached_prompt_tokens} / {output_tokens}")
    best = d.step("best_chunk_tokens", "Chunk that maximizes capacity within the TPOT budget",
                  max(1, min(big, math.floor(bal))), "1", noun="tokens",
                  formula="max(1, min({largest_chunk_tokens}, floor({balanced_chunk_tokens})))")
    mid_best = _typical_chunk_steps(d, r, "best_chunk_avg", "best_chunk_tokens", best, cached, new, kv, bw,
                                    " of that size", "A typical chunk of that size")
    sat_best = d.step("saturated_step_best_chunk_s", "Step of a saturated replica carrying that chunk",
                      r.step_lines(avg_ctx, chunk_tokens=best, chunk_start=mid_best).step_s(batch), "s",
                      formula="max({step_memory_s} + {best_chunk_avg_prefix_read_s}, {step_compute_s} + "
                              "{best_chunk_avg_compute_s}) + {allreduce_fixed_s} + ({decode_batch} + "
                              "{best_chunk_tokens}) × {allreduce_per_token_s} + {step_overhead_s}")
    d.step("replica_capacity_best_chunk_rps", "Request capacity of one replica at that chunk",
           min(best / sat_best / new, batch / sat_best / O), "1/s", noun="requests",
           formula="min({best_chunk_tokens} / {saturated_step_best_chunk_s} / {uncached_prompt_tokens}, "
                   "{decode_batch} / {saturated_step_best_chunk_s} / {output_tokens})")
    d.step("planned_rps_per_replica", "Requests/s to route to one replica at the target utilization",
           cap * p.target_utilization, "1/s", noun="requests",
           formula="{replica_capacity_rps} × {target_utilization}")
    d.step("replica_load", "Offered load on the replica", p.arrival_rps / cap, "1", percent=True,
           formula="{arrival_rps} / {replica_capacity_rps}")
    d.require("replica_load", p.arrival_rps <= cap, lambda: (
        f"This replica cannot keep up: {format_quantity(p.arrival_rps, '1/s', noun='requests')} arrive against a "
        f"capacity of {format_quantity(cap, '1/s', noun='requests')} ({format_quantity(100 * p.arrival_rps / cap, '%')} "
        "load), so the queue and the time to first token grow without bound. Lower the arrival rate or add replicas."))
    served = d.step("served_rps", "Requests/s the replica serves at this load", min(p.arrival_rps, cap), "1/s",
                    noun="requests", formula="min({arrival_rps}, {replica_capacity_rps})")
    d.step("expected_tokens_per_s", "Tokens/s it streams at this load", served * O, "1/s", noun="tokens",
           formula="{served_rps} × {output_tokens}")
    # Under load: decode steps at the live batch, some steps also carrying a full chunk. Little's
    # law (live = arrivals x output x TPOT) and the TPOT at that batch are solved together.
    n_c = p.arrival_rps * new / c_avg  # chunk-carrying steps per second the prompts need
    limit = max(1, min(cap_tpot, floor_batch(cap_kv * p.kv_overcommit)))
    limit = d.step("admission_limit", "Sequences the scheduler admits (paged KV)", limit, "1", noun="sequences",
                   formula="max(1, min({batch_cap_tpot}, floor({batch_cap_kv} × {kv_overcommit})))")

    def at_load(live_n: float) -> tuple[float, float, float]:
        s_d, s_c = plain.step_s(live_n), with_chunk.step_s(live_n)
        spare = 1 - n_c * (s_c - s_d)
        return s_d, s_c, (s_d / spare if spare > 0 else s_c)

    live = 1.0
    for _ in range(60):  # a fixed point; most loads settle in a handful of rounds
        nxt = min(limit, p.arrival_rps * O * at_load(live)[2])
        if abs(nxt - live) <= 1e-13 * nxt:
            live = nxt
            break
        live = nxt
    s_d, s_c, tpot_load = at_load(live)
    d.step("live_sequences", "Sequences decoding at once at this load (Little's law)", live, "1",
           noun="sequences", formula="min({admission_limit}, {arrival_rps} × {output_tokens} × TPOT at that batch), "
                                     "solved together with the TPOT below", kind="search")
    d.step("decode_step_at_load_memory_s", "Decode step at that batch, bytes side",
           plain.memory[0] + plain.memory[1] * live, "s",
           formula="({weight_bytes} + {live_sequences} × {kv_bytes_per_token} × {decode_context_tokens}) / "
                   "{replica_hbm_Bps}")
    d.step("decode_step_at_load_compute_s", "Decode step at that batch, FLOP side",
           plain.compute[0] + plain.compute[1] * live, "s",
           formula="{live_sequences} × {decode_flops_per_token} / {replica_decode_flops}")
    d.step("decode_step_at_load_s", "Decode step at that batch", s_d, "s",
           formula="max({decode_step_at_load_memory_s}, {decode_step_at_load_compute_s}) + {allreduce_fixed_s} + "
                   "{live_sequences} × {allreduce_per_token_s} + {step_overhead_s}")
    d.step("chunk_step_at_load_s", "The same step carrying a typical chunk", s_c, "s",
           formula="max({decode_step_at_load_memory_s} + {chunk_avg_prefix_read_s}, {decode_step_at_load_compute_s} + "
                   "{chunk_avg_compute_s}) + {allreduce_fixed_s} + ({live_sequences} + {chunk_tokens}) × "
                   "{allreduce_per_token_s} + {step_overhead_s}")
    d.step("chunk_steps_per_s", "Steps per second that must carry a chunk", n_c, "1/s", noun="steps",
           formula="{arrival_rps} × {uncached_prompt_tokens} / {chunk_tokens}")
    d.step("tpot_at_load_s", "Typical TPOT at this load", tpot_load, "s",
           formula="{decode_step_at_load_s} / (1 − {chunk_steps_per_s} × ({chunk_step_at_load_s} − "
                   "{decode_step_at_load_s}))" if 1 - n_c * (s_c - s_d) > 0
           else "{chunk_step_at_load_s} (every step carries a chunk)")
    chunk_share = min(1.0, n_c * tpot_load)
    d.step("chunk_step_share", "Share of steps that carry a chunk at this load", chunk_share, "1",
           percent=True,
           formula="min(1, {chunk_steps_per_s} × {tpot_at_load_s})")
    d.step("p95_tpot_s", "p95 TPOT at this load (the step 95% of tokens ride in or under)",
           s_c if chunk_share > 0.05 else s_d, "s",
           formula="the chunk step {chunk_step_at_load_s} if {chunk_step_share} > 5%, else the plain step "
                   "{decode_step_at_load_s}", kind="verdict")
    d.step("p95_tpot_verdict", "Which step sets the p95 TPOT",
           "over 5%, so the p95 is the chunk step" if chunk_share > 0.05
           else "no more than 5%, so the p95 is the plain step",
           formula="{chunk_step_share} against 5%", kind="verdict")
    d.step("overcommit_verdict", "Can a full admission run out of KV?",
           "a batch of long sequences can get there, and then the newest is preempted" if limit > cap_kv
           else "no batch can get there, since the scheduler admits no more than fit at full context",
           formula="{admission_limit} against {batch_cap_kv}", kind="verdict")

    # --- admission beyond the full-context cap ---------------------------------------------------
    d.step("tokens_per_s_ceiling", "No schedule emits faster: every step reads the weights once",
           limit / r.decode_step(limit, 0).step_s, "1/s", noun="tokens",
           formula="{admission_limit} / (max({weight_read_s}, {admission_limit} × {weight_flops_per_token} / "
                   "{replica_decode_flops}) + {allreduce_fixed_s} + {admission_limit} × {allreduce_per_token_s} "
                   "+ {step_overhead_s})")
    d.step("preemption_context_tokens", "Average context above which a full admission runs out of KV",
           blocks * BLOCK_TOKENS / limit, "1", noun="tokens", formula="{kv_budget_tokens} / {admission_limit}")

    # --- levers -----------------------------------------------------------------------------------
    budget2 = 2 * r.usable_hbm_bytes - W
    d.step("kv_budget_bytes_2x_tp", "KV budget with twice the accelerators per replica", budget2, "B",
           formula="2 × {usable_hbm_bytes} B − {weight_bytes} B")
    blocks2 = math.floor(budget2 / (BLOCK_TOKENS * kv))
    d.step("batch_cap_kv_2x_tp_continuous", "KV cap with twice the accelerators, before the floor",
           blocks2 / per_seq, "1", noun="sequences",
           formula=f"floor({{kv_budget_bytes_2x_tp}} B / ({BLOCK_TOKENS} × {{kv_bytes_per_token}} B)) / "
                   "{blocks_per_sequence}")
    d.step("batch_cap_kv_2x_tp", "KV cap with twice the accelerators per replica", blocks2 // per_seq, "1",
           noun="sequences", formula="floor({batch_cap_kv_2x_tp_continuous})")

    # --- the streaming path -----------------------------------------------------------------------
    lag = 1 / step - p.slow_client_tokens_per_s
    d.step("slow_client_grace_s", "How long a slow client lasts before its buffer overflows",
           p.stream_buffer_tokens / lag if lag > 0 else math.inf, "s",
           formula="{stream_buffer_tokens} / ({stream_tokens_per_s} − {slow_client_tokens_per_s})" if lag > 0 else "",
           note="" if lag > 0 else "The client reads as fast as the stream: its buffer never fills.")
    d.step("blocked_tpot_s", "Everyone's TPOT if the engine waited for that client",
           1 / p.slow_client_tokens_per_s, "s", formula="1 / {slow_client_tokens_per_s} tokens/s")

    # --- the same step under real engines' rules ----------------------------------------------------
    # vLLM's scheduler spends one token budget, max_num_batched_tokens, on decode tokens and prompt
    # chunks together; its server default is 8,192 (max_num_seqs 1,024) on a GPU of 70 GiB or more
    # that is not an A100, else 2,048 (256) (vllm/engine/arg_utils.py).
    big = hw.hbm_bytes >= 70 * 2 ** 30 and "a100" not in hw.name.lower()
    note = ("vLLM's OpenAI server on a GPU of 70 GiB or more that is not an A100" if big
            else "vLLM's OpenAI server on smaller GPUs and A100s")
    vb = d.step("vllm_default_budget_tokens", "vLLM's default max_num_batched_tokens on this GPU",
                8192 if big else 2048, "1", noun="tokens", kind="lookup", note=note)
    d.step("vllm_default_max_num_seqs", "vLLM's default max_num_seqs on this GPU", 1024 if big else 256, "1",
           noun="sequences", kind="lookup", note=note)
    d.step("vllm_budget_for_this_step", "max_num_batched_tokens the page's fused step would need under vLLM",
           batch + c, "1", noun="tokens", formula="{decode_batch} + {worst_chunk_tokens}")
    d.step("vllm_prompt_room_tokens", "Prompt tokens vLLM's default budget leaves beside the planned batch",
           max(0, vb - batch), "1", noun="tokens", formula="max(0, {vllm_default_budget_tokens} − {decode_batch})")
    return d


# ---------------------------------------------------------------------------------------------
# The live simulation


def sim_config(p: Params, horizon_scale: float = 1.0) -> batching.Config:
    d = solve(p)
    r = replica(p)
    policy = p.policy
    limit = int(d.value("decode_batch")) if policy == "static" else int(d.value("admission_limit"))
    lo, hi = SIM_HORIZON_S
    # Size the run in steps of the replica at this load, so a fast replica is not simulated for
    # ten times as many iterations as a slow one.
    horizon = min(hi, max(lo, SIM_STEPS * d.value("decode_step_at_load_s"))) * horizon_scale
    ar0 = r.allreduce_s(0)
    return batching.Config(
        policy=policy,
        # the engine's replica, as the rates the simulation's step formula takes
        weight_bytes=r.weight_bytes, kv_bytes_per_token=r.kv_bytes_per_token,
        weight_flops_per_token=r.weight_flops_per_token, attn_flops_per_position=r.attention_flops_per_position,
        replica_Bps=r.achieved_hbm_Bps, replica_flops=r.peak_flops * r.decode_mfu,
        prefill_flops=r.peak_flops * r.prefill_mfu, allreduce_fixed_s=ar0,
        allreduce_per_token_s=r.allreduce_s(1) - ar0, overhead_s=r.step_overhead_s,
        kv_budget_tokens=int(d.value("kv_budget_tokens")), block_tokens=BLOCK_TOKENS,
        max_running=limit, chunk_tokens=p.chunk_tokens, max_prefill_tokens=max(p.max_context_tokens, 2048),
        arrival_rps=p.arrival_rps, on_fraction=p.on_fraction, prompt_mean=p.prompt_tokens,
        cached_prompt_fraction=p.prefix_cache_hit,
        output_mean=p.output_tokens, length_spread=p.length_spread, max_context=p.max_context_tokens,
        slow_fraction=p.slow_client_fraction, slow_tokens_per_s=p.slow_client_tokens_per_s,
        stream_buffer_tokens=p.stream_buffer_tokens, stream_policy=p.stream_policy, horizon_s=horizon,
    )


def simulate(p: Params, seed: int = 0, horizon_scale: float = 1.0) -> batching.BatchingResult:
    return batching.run(sim_config(p, horizon_scale), seed)


def _typical_chunk_steps(d: Derivation, r, prefix: str, chunk_key: str, chunk: float, cached: float, new: float,
                         kv: float, bw: float, size_words: str, flops_label: str) -> float:
    """Where a chunk of `chunk` tokens centred on the middle of the prefilled part starts, its FLOP,
    its prefix-KV read and its compute time, as steps `{prefix}_start_tokens`, `_flops`,
    `_prefix_read_s`, `_compute_s`. The knob chunk and the best chunk are sized the same way."""
    start = max(0.0, cached + new / 2 - chunk / 2)
    c, s0 = "{" + chunk_key + "}", "{" + prefix + "_start_tokens}"
    d.step(f"{prefix}_start_tokens", f"Where a typical chunk{size_words} starts in its prompt", start, "1",
           noun="tokens", formula=f"max(0, {{cached_prompt_tokens}} + {{uncached_prompt_tokens}} / 2 − {c} / 2)")
    flops = r.prefill_flops(chunk, start)
    d.step(f"{prefix}_flops", flops_label, flops, "FLOP",
           formula=f"{c} × {{weight_flops_per_token}} + {{attention_flops_per_position}} × "
                   f"({c} × {s0} + {c} × ({c} − 1) / 2)")
    d.step(f"{prefix}_prefix_read_s", "Reading that chunk's prefix KV", kv * start / bw, "s",
           formula=f"{{kv_bytes_per_token}} × {s0} / {{replica_hbm_Bps}}")
    d.step(f"{prefix}_compute_s", "That chunk's FLOP at the prefill MFU", flops / (r.peak_flops * r.prefill_mfu),
           "s", formula=f"{{{prefix}_flops}} / {{replica_prefill_flops}}")
    return start


# The run's figures as steps (issue 19): the panel's cards, table, caption and scheduler comparison
# read these, each beside the closed form it is held to, so no figure is formatted by hand.
GAP_CLOSED_FORM = {  # per scheduler: the step a token gap is held to, and what it means
    "chunked": ("tpot_bound_s", "at most the worst step (all at full context plus one chunk)"),
    "continuous": ("unchunked_gap_s", "about this when a whole prompt runs as its own step"),
    "static": ("tpot_at_load_s", "the batch's decode step: no prompt joins a running batch"),
}


def simulation_steps(p: Params, r: batching.BatchingResult) -> Derivation:
    d = Derivation(p)
    solved = solve(p)
    d.step("sim_horizon_s", "Simulated time (arrivals stop, the last steps finish)", r.horizon_s, "s", kind="given")
    d.step("sim_warmup_s", "Warm-up left out of the steady figures (the replica filling up)", r.warmup_s, "s",
           kind="given", note=f"The first {100 * batching.WARMUP_FRACTION:g}% of the run.")
    d.step("sim_iterations", "Engine steps simulated", r.iterations, "1", noun="engine steps", kind="given")
    d.step("sim_tokens_per_s", "Simulated tokens/s", r.steady_tokens_per_s, "1/s", noun="tokens",
           kind="simulated", note="Tokens streamed per second after the warm-up.")
    d.step("sim_run_tokens_per_s", "Tokens/s over the whole run", r.tokens_per_s, "1/s", noun="tokens",
           kind="simulated", note="Tokens streamed over the run, warm-up included.")
    d.step("sim_requests_per_s", "Requests finished per second (after warm-up)", r.steady_requests_per_s, "1/s",
           noun="requests", kind="simulated")
    d.step("sim_sequences", "Sequences in the engine", r.steady_batch, "1", noun="sequences", kind="simulated",
           note="Time-average after the warm-up; Little's law predicts the closed form.")
    for q in (50, 95):
        d.step(f"sim_ttft_p{q}_s", f"TTFT p{q}", r.ttft(q), "s", kind="simulated",
               note=f"The {q}th percentile over requests of arrival to first token.")
        d.step(f"sim_tpot_p{q}_s", f"TPOT p{q}", r.tpot(q), "s", kind="simulated",
               note="Per request: (last token − first token) / (tokens − 1); "
                    f"the {q}th percentile over requests.")
    d.step("sim_mean_tpot_s", "Mean TPOT", float(np.nanmean(r.tpot_s)) if np.isfinite(r.tpot_s).any() else math.nan,
           "s", kind="simulated")
    d.step("sim_token_gap_p95_s", "Token gap p95", r.token_gap(95), "s", kind="simulated",
           note="Every gap between two tokens of one stream, across all streams.")
    gap_key, gap_meaning = GAP_CLOSED_FORM[p.policy]
    d.step("gap_closed_form_s", f"Token gap, closed form ({p.policy})", solved.value(gap_key), "s", kind="lookup",
           note=f"{solved[gap_key].label}: {gap_meaning}.")
    floor_key = "ttft_idle_chunked_s" if p.policy == "chunked" else "prefill_time_s"
    d.step("ttft_floor_s", "TTFT floor: the mean prompt on an idle replica", solved.value(floor_key), "s",
           kind="lookup", note=solved[floor_key].label)
    # Conservation: every request that arrived is in exactly one state at the end.
    counts = (("done", "Requests done", r.done), ("cut", "Streams cut for a full buffer", r.cut),
              ("running", "Requests still running at the end", r.running),
              ("queued", "Requests still queued at the end", r.queued))
    for key, label, n in counts:
        d.step(f"sim_{key}", label, n, "1", noun="requests", kind="simulated")
    d.step("sim_arrived", "Requests arrived", r.arrived, "1", noun="requests", kind="simulated")
    d.step("sim_accounted", "Requests accounted for at the end", sum(n for *_, n in counts), "1", noun="requests",
           formula="{sim_done} + {sim_cut} + {sim_running} + {sim_queued}",
           note="Equals the arrivals: the run loses no request.")
    d.step("sim_preemptions", "Sequences preempted when KV ran out", r.preemptions_total, "1", noun="preemptions",
           kind="simulated")
    d.step("sim_slow_clients", "Slow clients among the requests", int(r.slow.sum()), "1", noun="slow clients",
           kind="simulated")
    # Little's law on the admission queue: the time-average length against arrival rate × mean wait.
    d.step("sim_queue_length", "Queue: time-average length", r.mean_queue_len, "1", noun="requests",
           kind="simulated")
    d.step("sim_arrival_rps", "Arrival rate in the run", r.arrival_rate, "1/s", noun="requests", kind="simulated")
    d.step("sim_queue_wait_s", "Mean wait in the queue", r.mean_queue_wait_s, "s", kind="simulated")
    d.step("sim_queue_length_little", "Queue length by Little's law", r.arrival_rate * r.mean_queue_wait_s, "1",
           noun="requests", formula="{sim_arrival_rps} × {sim_queue_wait_s}",
           note="Arrival rate × mean wait: it must agree with the time-average length.")
    return d


def replay_steps(p: Params, r: batching.BatchingResult, t_s: float) -> Derivation:
    """The replica at one instant of the run: the replay's caption."""
    d = Derivation(p)
    d.step("replay_t_s", "Replay time", t_s, "s", kind="given")
    k = max(0, int(np.searchsorted(r.t_s, t_s, side="right")) - 1) if r.t_s.size else 0
    d.step("replay_batch", "Sequences in the step", int(r.batch[k]) if r.t_s.size else 0, "1", noun="sequences",
           kind="simulated")
    d.step("replay_queued", "Queued", int(r.queue_len[k]) if r.t_s.size else 0, "1", noun="requests",
           kind="simulated")
    kv = float(r.kv_tokens[k]) / r.kv_budget_tokens if r.t_s.size and r.kv_budget_tokens else 0.0
    d.step("replay_kv_share", "KV in use", kv, "1", percent=True, kind="simulated")
    d.step("replay_step_s", "This step's time", float(r.step_s[k]) if r.t_s.size else 0.0, "s", kind="simulated")
    return d
