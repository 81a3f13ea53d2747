"""Continuous batching on one replica: the decode arithmetic sets the batch, the KV budget caps it.

Teaching order (the interview's): the KV bytes a token costs, the HBM left after the weights,
the batch that fits at full context, the decode step from bytes and FLOP, the batch a TPOT
target allows, tokens per second per replica, the worst step a token can see, and why decode
stays bandwidth-bound at every batch the KV budget allows. Then prefill (whole or chunked),
the replica's request capacity, and the streaming path.

Modelling choices, stated on the page:
  * Weights and KV cache in bf16 (2 bytes). A decode step reads every resident weight once
    (for a mixture of experts at a real batch nearly every expert is hit, so all of them) and
    the whole KV of every sequence in the step; FLOP per token = 2 x active parameters plus
    attention, 4 x layers x heads x head_dim per earlier token (QK^T and AV).
  * step = max(bytes / (GPUs x HBM x efficiency), FLOP / (GPUs x peak x MFU)) + a fixed
    overhead (kernel launches, the tensor-parallel all-reduces, sampling).
  * The KV budget is paged in 16-token blocks; `batch_cap_kv` is the batch that fits with every
    sequence at the full context, so a scheduler that admits no more can never run out of KV.
  * `p95_tpot_s` is modelled as the worst step a token can see: every sequence of the planned
    batch at the full context, plus one prefill chunk fused into the step (the last chunk of
    a full-context prompt). It is a ceiling; the simulation shows where real traffic lands.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import model_validator

from models.catalog import INFER_FLOPS_PER_PARAM_TOKEN
from models.catalog import gpu as catalog_gpu
from models.catalog import model as catalog_model
from models.core import Derivation, Knob, StrictModel
from models.sim import batching

BYTES_PER_ELEM = 2  # bf16 weights and KV cache
BLOCK_TOKENS = 16  # paged KV block (vLLM's default block size)
ATTN_FLOPS_PER_MAC = 2
ATTN_MATMULS = 2  # QK^T and AV
SIM_STEPS = 2500  # the simulated horizon is about this many decode steps at the scenario's load
SIM_HORIZON_S = (5.0, 600.0)

ServingModel = Literal["Llama-3-70B", "Llama-3-8B", "Llama-3.1-405B", "Mixtral-8x7B"]
ServingGPU = Literal["H100 SXM", "H200", "B200", "MI300X"]


class Params(StrictModel):
    model: Annotated[
        ServingModel, Knob("Model", help="Shape from the catalog; weights and KV in bf16."),
    ] = "Llama-3-70B"
    gpu: Annotated[ServingGPU, Knob("GPU", help="HBM, bandwidth and peak FLOP/s from the catalog.")] = "H100 SXM"
    tp_degree: Annotated[
        Literal[1, 2, 4, 8],
        Knob("GPUs per replica (tensor parallel)", "GPUs", 1, 8,
             help="One replica's weights and KV are split across this many GPUs; their HBM and "
                  "bandwidth add up."),
    ] = 4
    usable_hbm_fraction: Annotated[
        float,
        Knob("HBM usable for weights + KV", "", 0.5, 0.98, 0.01, percent=True,
             help="The rest holds activations, CUDA graphs and fragmentation (vLLM's default is 90%).",
             draw=(0.85, 0.95)),
    ] = 0.9
    max_context_tokens: Annotated[
        int,
        Knob("Max context (prompt + output)", "tokens", 1024, 131072, log=True,
             help="The longest sequence the replica accepts; the KV cap is computed at this length.",
             draw=(4096, 32768)),
    ] = 8192
    prompt_tokens: Annotated[
        int,
        Knob("Mean prompt", "tokens", 16, 65536, log=True, help="Average prompt length.", draw=(200, 4000)),
    ] = 2000
    output_tokens: Annotated[
        int,
        Knob("Mean output", "tokens", 1, 16384, log=True, help="Average tokens generated per request.",
             draw=(100, 1500)),
    ] = 400
    tpot_target_ms: Annotated[
        float,
        Knob("TPOT target", "ms", 5, 500, log=True,
             help="Time per output token every stream must get, even in the worst step.", draw=(30, 100)),
    ] = 50
    chunk_tokens: Annotated[
        int,
        Knob("Prefill chunk", "tokens", 16, 8192, log=True,
             help="Prompt tokens fused into one decode step (chunked prefill).", draw=(128, 1024)),
    ] = 256
    hbm_efficiency: Annotated[
        float,
        Knob("HBM bandwidth efficiency", "", 0.3, 1.0, 0.05, percent=True,
             help="Share of peak HBM bandwidth a decode step achieves.", draw=(0.6, 0.9)),
    ] = 0.8
    mfu: Annotated[
        float,
        Knob("Compute efficiency (MFU)", "", 0.1, 1.0, 0.05, percent=True,
             help="Share of dense peak FLOP/s a compute-bound step achieves.", draw=(0.35, 0.65)),
    ] = 0.5
    step_overhead_ms: Annotated[
        float,
        Knob("Fixed cost per step", "ms", 0, 20, 0.5,
             help="Kernel launches, the tensor-parallel all-reduces and sampling, paid every step.",
             draw=(1, 5)),
    ] = 3
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
             "block: the engine waits for the client (the design to avoid)."),
    ] = "cut"
    policy: Annotated[
        Literal["chunked", "continuous", "static"],
        Knob("Scheduler (simulation)",
             help="static: a batch runs until its longest request is done. continuous: admit every "
                  "iteration, prompts as their own steps. chunked: continuous with chunked prefill."),
    ] = "chunked"
    arrival_rps: Annotated[
        float,
        Knob("Arrival rate (simulation)", "req/s", 0.05, 200, log=True,
             help="Requests per second reaching this replica.", draw=(1, 6)),
    ] = 4
    length_spread: Annotated[
        float,
        Knob("Length spread (simulation)", "σ", 0, 2, 0.1,
             help="Lognormal sigma of prompt and output lengths around their means; 0 = all equal.",
             draw=(0.3, 1.2)),
    ] = 0.8
    on_fraction: Annotated[
        float,
        Knob("Traffic on-time (simulation)", "", 0.1, 1, 0.05, percent=True,
             help="100% = steady Poisson. Below, traffic arrives in on/off bursts (20 s period) "
                  "with the same mean rate.", draw=(0.3, 1)),
    ] = 1.0
    slow_client_fraction: Annotated[
        float,
        Knob("Slow clients (simulation)", "", 0, 0.5, 0.01, percent=True,
             help="Share of streams whose client reads slower than tokens are generated.", draw=(0, 0.1)),
    ] = 0.02
    slow_client_tokens_per_s: Annotated[
        float,
        Knob("Slow client read rate", "tokens/s", 0.5, 100, log=True,
             help="How fast a slow client drains its stream.", draw=(2, 20)),
    ] = 5

    @model_validator(mode="after")
    def _replica_can_serve(self) -> "Params":
        problem = fit_problem(self)
        if problem:
            raise ValueError(problem)
        return self


# ---------------------------------------------------------------------------------------------
# The arithmetic, once, for both the validator and solve()


def attn_flops_per_position(model_name: str) -> float:
    m = catalog_model(model_name)
    return ATTN_MATMULS * ATTN_FLOPS_PER_MAC * m.layers * m.heads * m.head_dim


def _basics(p: Params) -> dict[str, float]:
    m, g = catalog_model(p.model), catalog_gpu(p.gpu)
    weights = m.weight_bytes(BYTES_PER_ELEM)
    kv = m.kv_bytes_per_token(BYTES_PER_ELEM)
    budget = p.tp_degree * g.memory_bytes * p.usable_hbm_fraction - weights
    blocks = max(0, math.floor(budget / (BLOCK_TOKENS * kv)))
    bw = p.tp_degree * g.hbm_Bps * p.hbm_efficiency
    fl = p.tp_degree * g.dense_bf16_flops * p.mfu
    a = attn_flops_per_position(p.model)
    wf = INFER_FLOPS_PER_PARAM_TOKEN * m.active_params
    ctx = p.max_context_tokens
    c = min(p.chunk_tokens, ctx)
    # The worst chunk: the last `c` tokens of a full-context prompt (positions ctx - c .. ctx - 1).
    chunk_flops = c * wf + a * (c * (ctx - c) + c * (c - 1) / 2)
    chunk_bytes = kv * (ctx - c)  # it reads its own prefix's KV once
    dec_flops_full = wf + a * ctx
    ovh = p.step_overhead_ms / 1000
    tpot = p.tpot_target_ms / 1000
    mem_cap = (tpot - ovh - (weights + chunk_bytes) / bw) / (kv * ctx / bw)
    cmp_cap = ((tpot - ovh) * fl - chunk_flops) / dec_flops_full
    return dict(weights=weights, kv=kv, budget=budget, blocks=blocks, bw=bw, fl=fl, a=a, wf=wf,
                chunk_flops=chunk_flops, chunk_bytes=chunk_bytes, dec_flops_full=dec_flops_full,
                ovh=ovh, tpot=tpot, tpot_cap=max(0, math.floor(min(mem_cap, cmp_cap) + 1e-9)),
                blocks_full=math.ceil(ctx / BLOCK_TOKENS), active=m.active_params)


def fit_problem(p: Params) -> str | None:
    """Why this replica cannot serve even one sequence of the scenario, or None."""
    if p.prompt_tokens + 1 > p.max_context_tokens:
        return (f"The mean prompt ({p.prompt_tokens:,} tokens) must be shorter than the max context "
                f"({p.max_context_tokens:,} tokens).")
    b = _basics(p)
    if b["budget"] <= 0:
        return (f"{p.model} weights ({b['weights'] / 1e9:,.0f} GB in bf16) do not fit in {p.tp_degree} x {p.gpu} "
                f"at {p.usable_hbm_fraction:.0%} usable HBM. Use more GPUs per replica or a bigger GPU.")
    if b["blocks"] < b["blocks_full"]:
        return (f"After the weights, {p.tp_degree} x {p.gpu} keep {b['budget'] / 1e9:,.1f} GB for KV, less than one "
                f"{p.max_context_tokens:,}-token sequence needs ({b['kv'] * p.max_context_tokens / 1e9:,.1f} GB). "
                "Use more GPUs per replica or a shorter max context.")
    if b["tpot_cap"] < 1:
        return (f"Even one sequence at full context plus a {p.chunk_tokens:,}-token prefill chunk takes longer than "
                f"the {p.tpot_target_ms:g} ms TPOT target on {p.tp_degree} x {p.gpu}. Loosen the target, shrink the "
                "chunk or add GPUs per replica.")
    return None


def _step(b: dict, batch: float, ctx: float, extra_bytes: float = 0.0, extra_flops: float = 0.0) -> tuple[float, float]:
    mem = (b["weights"] + batch * b["kv"] * ctx + extra_bytes) / b["bw"]
    cmp = (batch * (b["wf"] + b["a"] * ctx) + extra_flops) / b["fl"]
    return mem, cmp


def solve(p: Params) -> Derivation:
    b = _basics(p)
    m, g = catalog_model(p.model), catalog_gpu(p.gpu)
    d = Derivation(p)

    # --- numbers: bytes ---------------------------------------------------------------------
    d.step("model_params", f"{p.model} parameters (catalog)", m.total_params, "1", noun="parameters")
    W = d.step("weight_bytes", "Weights in bf16, on every replica", b["weights"], "B",
               formula="{model_params} × 2 B")
    kv = d.step("kv_bytes_per_token", "KV cache per token (bf16, all layers)", b["kv"], "B",
                formula=f"2 (K and V) × {m.layers} layers × {m.kv_heads} KV heads × {m.head_dim} × 2 B")
    d.step("gpu_memory_bytes", f"{p.gpu} HBM (catalog)", g.memory_bytes, "B")
    d.step("usable_hbm_bytes", "HBM usable per replica", p.tp_degree * g.memory_bytes * p.usable_hbm_fraction, "B",
           formula="{tp_degree} × {gpu_memory_bytes} B × {usable_hbm_fraction}")
    budget = d.step("kv_budget_bytes", "KV budget: usable HBM minus weights", b["budget"], "B",
                    formula="{usable_hbm_bytes} B − {weight_bytes} B")
    d.step("kv_budget_blocks", f"KV blocks of {BLOCK_TOKENS} tokens in the budget", b["blocks"], "1", noun="blocks",
           formula=f"floor({{kv_budget_bytes}} B / ({BLOCK_TOKENS} × {{kv_bytes_per_token}} B))")
    d.step("kv_budget_tokens", "Tokens of KV the replica holds", b["blocks"] * BLOCK_TOKENS, "1", noun="tokens",
           formula=f"{{kv_budget_blocks}} × {BLOCK_TOKENS}")
    d.step("sequence_kv_bytes", "KV of one sequence at full context", kv * p.max_context_tokens, "B",
           formula="{kv_bytes_per_token} B × {max_context_tokens}")
    d.step("blocks_per_sequence", "Blocks one full-context sequence holds", b["blocks_full"], "1", noun="blocks",
           formula=f"ceil({{max_context_tokens}} / {BLOCK_TOKENS})")
    cap_kv = d.step("batch_cap_kv", "Sequences that fit at full context (the KV cap)",
                    b["blocks"] // b["blocks_full"], "1", noun="sequences",
                    formula="floor({kv_budget_blocks} / {blocks_per_sequence})")

    # --- the decode step ----------------------------------------------------------------------
    d.step("gpu_hbm_Bps", f"{p.gpu} HBM bandwidth (catalog)", g.hbm_Bps, "B/s")
    bw = d.step("replica_Bps", "Replica HBM bandwidth at the stated efficiency", b["bw"], "B/s",
                formula="{tp_degree} × {gpu_hbm_Bps} B/s × {hbm_efficiency}")
    d.step("gpu_peak_flops", f"{p.gpu} dense bf16 peak (catalog)", g.dense_bf16_flops, "FLOP/s")
    fl = d.step("replica_flops", "Replica compute at the stated MFU", b["fl"], "FLOP/s",
                formula="{tp_degree} × {gpu_peak_flops} FLOP/s × {mfu}")
    d.step("active_params", "Parameters one token multiplies (active)", b["active"], "1", noun="parameters")
    d.step("weight_read_s", "Reading every weight once: the floor of any step", W / bw, "s",
           formula="{weight_bytes} B / {replica_Bps} B/s")
    d.step("step_overhead_s", "Fixed cost per step", b["ovh"], "s", formula="{step_overhead_ms} ms / 1000")
    d.step("ridge_batch", "Ridge batch: where the weight FLOP catch up with the weight bytes",
           fl / bw * W / (2 * b["active"]), "1", noun="sequences",
           formula="({replica_flops} FLOP/s / {replica_Bps} B/s) × {weight_bytes} B / (2 × {active_params})")
    d.step("kv_cap_vs_ridge", "Where the KV cap sits against the ridge",
           "below" if cap_kv < d.value("ridge_batch") else "above", formula="{batch_cap_kv} vs {ridge_batch}")
    d.step("attn_flops_per_position", "Attention FLOP per token per earlier token", b["a"], "FLOP",
           formula=f"4 × {m.layers} layers × {m.heads} heads × {m.head_dim}")
    d.step("kv_read_full_s", "Reading one full-context sequence's KV", kv * p.max_context_tokens / bw, "s",
           formula="{sequence_kv_bytes} B / {replica_Bps} B/s")
    mem_kv, cmp_kv = _step(b, cap_kv, p.max_context_tokens)
    d.step("kv_capped_step_memory_s", "Step at the KV cap, bytes side (all at full context)", mem_kv, "s",
           formula="({weight_bytes} B + {batch_cap_kv} × {sequence_kv_bytes} B) / {replica_Bps} B/s")
    d.step("kv_capped_step_compute_s", "Step at the KV cap, FLOP side", cmp_kv, "s",
           formula="{batch_cap_kv} × (2 × {active_params} + {attn_flops_per_position} × {max_context_tokens})"
                   " / {replica_flops} FLOP/s")
    d.step("kv_capped_bound", "What bounds a decode step at the KV cap", "bandwidth" if mem_kv >= cmp_kv else "compute",
           formula="{kv_capped_step_memory_s} s vs {kv_capped_step_compute_s} s")
    d.step("compute_share_at_kv_cap", "FLOP side as a share of the bytes side at the KV cap",
           100 * cmp_kv / mem_kv, "%", formula="100 × {kv_capped_step_compute_s} / {kv_capped_step_memory_s}")
    d.step("full_memory_read_s", "Weights plus a full KV budget, read once", (W + budget) / bw, "s",
           formula="({weight_bytes} B + {kv_budget_bytes} B) / {replica_Bps} B/s")
    # Context above which the KV-capped batch is bandwidth-bound: with B = K / (kv c),
    # (W + K) / BW > K (2N / (kv c) + a / kv) / F  <=>  c > 2N K / (kv (F (W + K) / BW - K a / kv)).
    denom = kv * (fl * (W + budget) / bw - budget * b["a"] / kv)
    d.step("bandwidth_bound_above_tokens", "Context above which the KV-capped batch is bandwidth-bound",
           b["wf"] * budget / denom if denom > 0 else math.inf, "1", noun="tokens",
           formula="2 × {active_params} × {kv_budget_bytes} / ({kv_bytes_per_token} × ({replica_flops} × "
                   "({weight_bytes} + {kv_budget_bytes}) / {replica_Bps} − {kv_budget_bytes} × "
                   "{attn_flops_per_position} / {kv_bytes_per_token}))")

    # --- the TPOT cap, with one prefill chunk fused into the step -----------------------------
    d.step("chunk_flops", "Worst prefill chunk fused into a step (last chunk of a full-context prompt)",
           b["chunk_flops"], "FLOP",
           formula="{chunk_tokens} × (2 × {active_params} + {attn_flops_per_position} × ({max_context_tokens} − "
                   "{chunk_tokens} / 2))")
    d.step("chunk_prefix_kv_bytes", "KV the worst chunk reads from its own prompt", b["chunk_bytes"], "B",
           formula="{kv_bytes_per_token} B × ({max_context_tokens} − {chunk_tokens})")
    # The two caps before the floor, each a batch size in sequences (the worst step's bytes and its FLOP).
    memory_cap = (b["tpot"] - b["ovh"] - (W + b["chunk_bytes"]) / bw) / (kv * p.max_context_tokens / bw)
    compute_cap = ((b["tpot"] - b["ovh"]) * fl - b["chunk_flops"]) / b["dec_flops_full"]
    d.step("batch_cap_tpot_memory", "Batch the TPOT target allows on the bytes side (before the floor)",
           memory_cap, "1", noun="sequences",
           formula="({tpot_target_ms} ms / 1000 − {step_overhead_s} s − ({weight_bytes} B + "
                   "{chunk_prefix_kv_bytes} B) / {replica_Bps} B/s) / {kv_read_full_s} s")
    d.step("batch_cap_tpot_compute", "Batch the TPOT target allows on the FLOP side (before the floor)",
           compute_cap, "1", noun="sequences",
           formula="(({tpot_target_ms} ms / 1000 − {step_overhead_s} s) × {replica_flops} FLOP/s − "
                   "{chunk_flops} FLOP) / (2 × {active_params} + {attn_flops_per_position} × {max_context_tokens})")
    cap_tpot = d.step(
        "batch_cap_tpot", "Largest batch whose worst step meets the TPOT target", b["tpot_cap"], "1",
        noun="sequences", formula="floor(min({batch_cap_tpot_memory}, {batch_cap_tpot_compute}))",
    )
    batch = d.step("decode_batch", "Batch to plan: the tighter cap", min(cap_kv, cap_tpot), "1", noun="sequences",
                   formula="min({batch_cap_kv}, {batch_cap_tpot})")
    d.step("batch_limited_by", "Which cap binds", "the KV budget" if cap_kv <= cap_tpot else "the TPOT target",
           formula="{batch_cap_kv} vs {batch_cap_tpot}")
    avg_ctx = d.step("avg_context_tokens", "Average context a decode step reads per sequence",
                     p.prompt_tokens + p.output_tokens / 2, "1", noun="tokens",
                     formula="{prompt_tokens} + {output_tokens} / 2")
    mem_avg, cmp_avg = _step(b, batch, avg_ctx)
    d.step("step_memory_s", "Typical step, bytes side", mem_avg, "s",
           formula="({weight_bytes} B + {decode_batch} × {kv_bytes_per_token} B × {avg_context_tokens}) / "
                   "{replica_Bps} B/s")
    d.step("step_compute_s", "Typical step, FLOP side", cmp_avg, "s",
           formula="{decode_batch} × (2 × {active_params} + {attn_flops_per_position} × {avg_context_tokens}) / "
                   "{replica_flops} FLOP/s")
    step = d.step("step_time_s", "Decode step at the planned batch and the average context",
                  max(mem_avg, cmp_avg) + b["ovh"], "s",
                  formula="max({step_memory_s} s, {step_compute_s} s) + {step_overhead_s} s")
    tps = d.step("tokens_per_s_per_replica", "Decode tokens per second per replica", batch / step, "1/s",
                 noun="tokens", formula="{decode_batch} / {step_time_s} s")
    d.step("stream_tokens_per_s", "What each stream sees", 1 / step, "1/s", noun="tokens",
           formula="1 / {step_time_s} s")
    mem_w, cmp_w = _step(b, batch, p.max_context_tokens, b["chunk_bytes"], b["chunk_flops"])
    d.step("worst_step_memory_s", "Worst step, bytes side", mem_w, "s",
           formula="({weight_bytes} B + {decode_batch} × {sequence_kv_bytes} B + {chunk_prefix_kv_bytes} B) / "
                   "{replica_Bps} B/s")
    d.step("worst_step_compute_s", "Worst step, FLOP side", cmp_w, "s",
           formula="({decode_batch} × (2 × {active_params} + {attn_flops_per_position} × {max_context_tokens}) + "
                   "{chunk_flops}) / {replica_flops} FLOP/s")
    d.step("p95_tpot_s", "p95 TPOT, modelled as the worst step: all at full context plus one chunk",
           max(mem_w, cmp_w) + b["ovh"], "s",
           formula="max({worst_step_memory_s} s, {worst_step_compute_s} s) + {step_overhead_s} s")
    free = (mem_kv * fl - batch * b["dec_flops_full"]) / (b["wf"] + b["a"] * p.max_context_tokens)
    d.step("free_chunk_tokens", "Largest chunk that still hides under the bytes side of a full step",
           max(0, math.floor(free)), "1", noun="tokens",
           formula="floor(({kv_capped_step_memory_s} s × {replica_flops} − {decode_batch} × "
                   "(2 × {active_params} + {attn_flops_per_position} × {max_context_tokens})) / "
                   "(2 × {active_params} + {attn_flops_per_position} × {max_context_tokens}))")

    # --- prefill and TTFT -----------------------------------------------------------------------
    P = p.prompt_tokens
    pf_flops = P * b["wf"] + b["a"] * P * (P - 1) / 2
    d.step("prefill_flops", "Prefill FLOP for one mean prompt", pf_flops, "FLOP",
           formula="{prompt_tokens} × 2 × {active_params} + {attn_flops_per_position} × {prompt_tokens}² / 2")
    prefill = d.step("prefill_time_s", "One prompt prefilled alone on an idle replica (TTFT at zero load)",
                     max(W / bw, pf_flops / fl) + b["ovh"], "s",
                     formula="max({weight_read_s} s, {prefill_flops} FLOP / {replica_flops} FLOP/s) + "
                             "{step_overhead_s} s")
    n_chunks = d.step("prefill_chunks", "Steps a chunked prompt takes", math.ceil(P / p.chunk_tokens), "1",
                      noun="steps", formula="ceil({prompt_tokens} / {chunk_tokens})")
    chunked_ttft = 0.0
    for k in range(int(n_chunks)):
        s0, s1 = k * p.chunk_tokens, min(P, (k + 1) * p.chunk_tokens)
        t = s1 - s0
        f = t * b["wf"] + b["a"] * (t * s0 + t * (t - 1) / 2)
        chunked_ttft += max((W + kv * s0) / bw, f / fl) + b["ovh"]
    d.step("ttft_idle_chunked_s", "The same prompt in chunks on an idle replica", chunked_ttft, "s",
           formula="Σ over {prefill_chunks} chunks of max(bytes, FLOP) + {step_overhead_s} s")
    d.step("unchunked_gap_s", "Token gap when a whole prompt runs as its own step (no chunking)",
           prefill + step, "s", formula="{prefill_time_s} s + {step_time_s} s")

    # --- the replica under load -----------------------------------------------------------------
    O = p.output_tokens
    c = p.chunk_tokens
    chunk_avg = c * (b["wf"] + b["a"] * P / 2)
    d.step("chunk_avg_flops", "A typical chunk (from the middle of a mean prompt)", chunk_avg, "FLOP",
           formula="{chunk_tokens} × (2 × {active_params} + {attn_flops_per_position} × {prompt_tokens} / 2)")
    sat = d.step("saturated_step_s", "Step of a saturated replica: the planned batch plus one chunk",
                 max(mem_avg, cmp_avg + chunk_avg / fl) + b["ovh"], "s",
                 formula="max({step_memory_s} s, {step_compute_s} s + {chunk_avg_flops} FLOP / {replica_flops} FLOP/s)"
                         " + {step_overhead_s} s")
    cap_p = d.step("prefill_capacity_rps", "Requests/s the chunks can prefill", c / sat / P, "1/s", noun="requests",
                   formula="{chunk_tokens} / {saturated_step_s} s / {prompt_tokens}")
    cap_d = d.step("decode_capacity_rps", "Requests/s the decode slots can finish", batch / sat / O, "1/s",
                   noun="requests", formula="{decode_batch} / {saturated_step_s} s / {output_tokens}")
    cap = d.step("replica_capacity_rps", "Request capacity of one replica", min(cap_p, cap_d), "1/s",
                 noun="requests", formula="min({prefill_capacity_rps}, {decode_capacity_rps})")
    d.step("capacity_limited_by", "Which side saturates first", "prefill" if cap_p < cap_d else "decode",
           formula="{prefill_capacity_rps} vs {decode_capacity_rps}")
    d.step("replica_load", "Offered load on the replica", 100 * p.arrival_rps / cap, "%",
           formula="100 × {arrival_rps} / {replica_capacity_rps}")
    served = d.step("served_rps", "Requests/s the replica serves at this load", min(p.arrival_rps, cap), "1/s",
                    noun="requests", formula="min({arrival_rps}, {replica_capacity_rps})")
    d.step("expected_tokens_per_s", "Tokens/s it streams at this load", served * O, "1/s", noun="tokens",
           formula="{served_rps} × {output_tokens}")
    # Under load: decode steps at the live batch, some steps also carrying a full chunk. Little's
    # law (live = arrivals x output x TPOT) and the TPOT at that batch are solved together.
    n_c = p.arrival_rps * P / c  # chunk-carrying steps per second the prompts need
    limit = max(1, min(cap_tpot, math.floor(cap_kv * p.kv_overcommit + 1e-9)))
    limit = d.step("admission_limit", "Sequences the scheduler admits (paged KV)", limit, "1", noun="sequences",
                   formula="min({batch_cap_tpot}, floor({batch_cap_kv} × {kv_overcommit}))")

    def at_load(live_n: float) -> tuple[float, float, float]:
        m_l, c_l = _step(b, live_n, avg_ctx)
        s_d = max(m_l, c_l) + b["ovh"]
        s_c = max(m_l, c_l + chunk_avg / fl) + b["ovh"]
        spare = 1 - n_c * (s_c - s_d)
        return s_d, s_c, (s_d / spare if spare > 0 else s_c)

    live = 1.0
    for _ in range(60):
        live = min(limit, p.arrival_rps * O * at_load(live)[2])
    s_d, s_c, tpot_load = at_load(live)
    d.step("live_sequences", "Sequences decoding at once at this load (Little's law)", live, "1",
           noun="sequences", formula="min({admission_limit}, {arrival_rps} × {output_tokens} × TPOT at that batch), "
                                     "solved together with the TPOT below")
    d.step("decode_step_at_load_s", "Decode step at that batch", s_d, "s",
           formula="max(({weight_bytes} + {live_sequences} × {kv_bytes_per_token} × {avg_context_tokens}) / "
                   "{replica_Bps}, {live_sequences} × (2 × {active_params} + {attn_flops_per_position} × "
                   "{avg_context_tokens}) / {replica_flops}) + {step_overhead_s} s")
    d.step("chunk_step_at_load_s", "The same step carrying a typical chunk", s_c, "s",
           formula="max(bytes, FLOP + {chunk_avg_flops} / {replica_flops}) + {step_overhead_s} s")
    d.step("chunk_steps_per_s", "Steps per second that must carry a chunk", n_c, "1/s", noun="steps",
           formula="{arrival_rps} × {prompt_tokens} / {chunk_tokens}")
    d.step("tpot_at_load_s", "Typical TPOT at this load", tpot_load, "s",
           formula="{decode_step_at_load_s} s / (1 − {chunk_steps_per_s} × ({chunk_step_at_load_s} − "
                   "{decode_step_at_load_s}) s)")

    # --- admission beyond the full-context cap ---------------------------------------------------
    d.step("tokens_per_s_ceiling", "No schedule emits faster: every step reads the weights once",
           limit / (max(W / bw, limit * b["wf"] / fl) + b["ovh"]), "1/s", noun="tokens",
           formula="{admission_limit} / (max({weight_read_s} s, {admission_limit} × 2 × {active_params} / "
                   "{replica_flops}) + {step_overhead_s} s)")
    d.step("preemption_context_tokens", "Average context above which a full admission runs out of KV",
           b["blocks"] * BLOCK_TOKENS / limit, "1", noun="tokens",
           formula="{kv_budget_tokens} / {admission_limit}")

    # --- levers -----------------------------------------------------------------------------------
    budget2 = 2 * p.tp_degree * g.memory_bytes * p.usable_hbm_fraction - W
    d.step("kv_budget_bytes_2x_tp", "KV budget with twice the GPUs per replica", budget2, "B",
           formula="2 × {usable_hbm_bytes} B − {weight_bytes} B")
    d.step("batch_cap_kv_2x_tp", "KV cap with twice the GPUs per replica",
           math.floor(budget2 / (BLOCK_TOKENS * kv)) // b["blocks_full"], "1", noun="sequences",
           formula=f"floor({{kv_budget_bytes_2x_tp}} B / ({BLOCK_TOKENS} × {{kv_bytes_per_token}} B)) // "
                   "{blocks_per_sequence}")

    # --- the streaming path -----------------------------------------------------------------------
    lag = 1 / step - p.slow_client_tokens_per_s
    d.step("slow_client_grace_s", "How long a slow client lasts before its buffer overflows",
           p.stream_buffer_tokens / lag if lag > 0 else math.inf, "s",
           formula="{stream_buffer_tokens} / ({stream_tokens_per_s} − {slow_client_tokens_per_s}) tokens/s")
    d.step("blocked_tpot_s", "Everyone's TPOT if the engine waited for that client",
           1 / p.slow_client_tokens_per_s, "s", formula="1 / {slow_client_tokens_per_s} tokens/s")
    return d


# ---------------------------------------------------------------------------------------------
# The live simulation


def sim_config(p: Params, horizon_scale: float = 1.0) -> batching.Config:
    d = solve(p)
    b = _basics(p)
    policy = p.policy
    limit = int(d.value("decode_batch")) if policy == "static" else int(d.value("admission_limit"))
    lo, hi = SIM_HORIZON_S
    # Size the run in steps of the replica at this load, so a fast replica is not simulated for
    # ten times as many iterations as a slow one.
    horizon = min(hi, max(lo, SIM_STEPS * d.value("decode_step_at_load_s"))) * horizon_scale
    return batching.Config(
        policy=policy,
        weight_bytes=b["weights"], kv_bytes_per_token=b["kv"], weight_flops_per_token=b["wf"],
        attn_flops_per_position=b["a"], replica_Bps=b["bw"], replica_flops=b["fl"], overhead_s=b["ovh"],
        kv_budget_tokens=int(d.value("kv_budget_tokens")), block_tokens=BLOCK_TOKENS,
        max_running=limit, chunk_tokens=p.chunk_tokens, max_prefill_tokens=max(p.max_context_tokens, 2048),
        arrival_rps=p.arrival_rps, on_fraction=p.on_fraction, prompt_mean=p.prompt_tokens,
        output_mean=p.output_tokens, length_spread=p.length_spread, max_context=p.max_context_tokens,
        slow_fraction=p.slow_client_fraction, slow_tokens_per_s=p.slow_client_tokens_per_s,
        stream_buffer_tokens=p.stream_buffer_tokens, stream_policy=p.stream_policy, horizon_s=horizon,
    )


def simulate(p: Params, seed: int = 0, horizon_scale: float = 1.0) -> batching.BatchingResult:
    return batching.simulate(sim_config(p, horizon_scale), seed)
