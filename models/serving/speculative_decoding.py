"""Speculative decoding on a busy fleet: latency bought with spare compute (seed 004).

A draft proposes k tokens; the target checks all of them in one pass and keeps the longest
accepted prefix plus one token of its own. With a per-token acceptance rate a (independent
from token to token, as in Leviathan et al. 2023):

    tokens per target pass  E = (1 - a^(k+1)) / (1 - a)
    speedup, small batch    = E / (1 + k c)       c = one draft step / one target step

The small-batch formula assumes a verify pass of k+1 tokens costs what a decode step costs,
which holds only while the step is bound by reading memory. At batch B the engine is the
shared roofline of `llm_arith`:

    decode step   t1(B) = max(weights + B x KV per sequence,  B x FLOP per token)      (bytes / BW, FLOP / F)
    verify step   tv(B) = max(weights + B x KV per sequence,  (k+1) x B x FLOP per token)
    speedup(B)          = E x t1(B) / (tv(B) + k c t1(B))

The k+1 tokens of one sequence read its KV once: the verify pass shares the KV read as it shares
the weight read. "Weights only" drops the KV term (and attention FLOP): the popular ridge
argument, which puts the break-even at ridge x (E - k c) / (k + 1). With KV reads the
break-even moves out, at long contexts past the batch the KV cache can hold, or to infinity.
The draft's step is taken as c times the target's decode step at the same batch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated

from pydantic import model_validator

from models.catalog import INFER_FLOPS_PER_PARAM_TOKEN, model as catalog_model
from models.core import Derivation, Knob, StrictModel
from models.serving import llm_arith as la
from models.serving.llm_arith import Precision, ReplicaGPUs, ServingGPU, ServingModel
from models.units import format_number as fmt

MAX_DRAFT_TOKENS = 16
NO_TPOT_LIMIT_S = 1e9  # the engine's TPOT cap plays no part here; the batch is a knob
REFERENCE_DRAFT = "Llama-3-8B"  # the smallest catalog model, as a separate draft


def expected_tokens(a: float, k: int) -> float:
    """Tokens one target pass yields: accepted drafts plus the target's own token."""
    return (1 - a ** (k + 1)) / (1 - a)


@dataclass(frozen=True)
class Roofline:
    """One replica's decode step as three per-unit times (seconds)."""

    weight_read_s: float  # every weight, once per step
    kv_read_per_sequence_s: float  # one sequence's KV, once per step (0 in the weights-only view)
    compute_per_token_s: float  # FLOP of one token / replica FLOP/s


def roofline(e: la.Engine, m, weights_only: bool) -> Roofline:
    if weights_only:
        return Roofline(e.weight_read_s, 0.0, INFER_FLOPS_PER_PARAM_TOKEN * m.active_params / e.replica_flops)
    return Roofline(e.weight_read_s, e.kv_read_per_sequence_s, e.decode_compute_per_sequence_s)


def speedup_at(r: Roofline, a: float, k: int, c: float, batch: float) -> float:
    """Speculative over plain decode at the same batch; k = 0 means speculation off (1x)."""
    if k == 0:
        return 1.0
    mem = r.weight_read_s + batch * r.kv_read_per_sequence_s
    t1 = max(mem, batch * r.compute_per_token_s)
    tv = max(mem, (k + 1) * batch * r.compute_per_token_s)
    return expected_tokens(a, k) * t1 / (tv + k * c * t1)


def break_even_batch(r: Roofline, a: float, k: int, c: float) -> float:
    """Batch where speedup(B) = 1: 0 if speculation never pays, inf if it pays at every batch.

    Below it the decode step is memory-bound and the verify step compute-bound, so
    (k+1) g B = (E - k c) (w + kv B). Past the batch where decode itself turns compute-bound the
    speedup is E / (k + 1 + k c) < 1, so the crossing always lies before that point."""
    net = expected_tokens(a, k) - k * c
    if net <= 1:
        return 0.0
    denom = (k + 1) * r.compute_per_token_s - net * r.kv_read_per_sequence_s
    return net * r.weight_read_s / denom if denom > 0 else math.inf


def best_k(score) -> int:
    """Smallest k in 1..MAX_DRAFT_TOKENS with the highest score(k)."""
    return max(range(1, MAX_DRAFT_TOKENS + 1), key=lambda k: (score(k), -k))


def _acceptance_for(target: float, score) -> float:
    """Smallest a in (0, 1) with score(a) >= target, by bisection; 1.0 if none."""
    if score(0.999) < target:
        return 1.0
    lo, hi = 0.0, 0.999
    for _ in range(30):
        mid = (lo + hi) / 2
        if score(mid) >= target:
            hi = mid
        else:
            lo = mid
    return hi


class Params(StrictModel):
    acceptance_rate: Annotated[
        float,
        Knob("Acceptance rate", "", 0.05, 0.99, 0.01, percent=True,
             help="Chance the target accepts a drafted token (independent token to token).", draw=(0.6, 0.9)),
    ] = 0.8
    draft_tokens: Annotated[
        int,
        Knob("Draft tokens k", "tokens", 1, MAX_DRAFT_TOKENS, 1, help="Tokens the draft proposes per target pass.",
             draw=(2, 6)),
    ] = 4
    draft_cost: Annotated[
        float,
        Knob("Draft cost c", "", 0.005, 0.5, 0.005, percent=True,
             help="One draft step as a share of one target decode step.", draw=(0.02, 0.12)),
    ] = 0.05
    operating_batch: Annotated[
        int,
        Knob("Operating batch", "sequences", 1, 2048, 1, log=True,
             help="Sequences decoding together on one replica at the hour you care about.", draw=(16, 512)),
    ] = 256
    regressed_acceptance: Annotated[
        float,
        Knob("Acceptance after a silent regression", "", 0.05, 0.99, 0.01, percent=True,
             help="Where acceptance lands after, say, the target is updated and the draft is not.",
             draw=(0.3, 0.7)),
    ] = 0.6
    model: Annotated[ServingModel, Knob("Target model")] = "Llama-3-70B"
    gpu: Annotated[ServingGPU, Knob("GPU")] = "H100 SXM"
    gpus_per_replica: Annotated[
        ReplicaGPUs, Knob("GPUs per replica", "", 1, 8, help="Tensor-parallel group holding one copy of the target."),
    ] = 8
    weight_precision: Annotated[
        Precision, Knob("Weight precision", help="FP8 halves weight bytes and doubles peak FLOP/s; KV stays bf16.")
    ] = "bf16"
    prompt_tokens: Annotated[
        int,
        Knob("Prompt tokens", "tokens", 100, 128_000, 1, log=True, help="Context each sequence starts with.",
             draw=(500, 8000)),
    ] = 2000
    output_tokens: Annotated[
        int,
        Knob("Output tokens", "tokens", 10, 8000, 1, log=True, help="Tokens generated per request.", draw=(100, 1000)),
    ] = 400
    hbm_efficiency: Annotated[
        float,
        Knob("HBM efficiency", "", 0.3, 0.95, 0.01, percent=True,
             help="Share of peak HBM bandwidth a decode step achieves.", draw=(0.6, 0.8)),
    ] = 0.7
    mfu: Annotated[
        float,
        Knob("MFU", "", 0.1, 0.8, 0.01, percent=True,
             help="Share of dense peak FLOP/s a compute-bound step achieves.", draw=(0.35, 0.6)),
    ] = 0.5

    @model_validator(mode="after")
    def _fits(self) -> "Params":
        problem = la.fit_problem(self.model, self.gpu, self.gpus_per_replica, self.weight_precision,
                                 self.prompt_tokens, self.output_tokens, NO_TPOT_LIMIT_S, self.hbm_efficiency, self.mfu)
        if problem:
            raise ValueError(problem)
        return self


def engine(p: Params) -> la.Engine:
    return la.engine(p.model, p.gpu, p.gpus_per_replica, p.weight_precision, p.prompt_tokens, 0.0, p.output_tokens,
                     NO_TPOT_LIMIT_S, p.hbm_efficiency, p.mfu)


def solve(p: Params) -> Derivation:
    d = Derivation(p)
    a, k, c, batch = p.acceptance_rate, p.draft_tokens, p.draft_cost, p.operating_batch

    # --- the formula: tokens per pass and the small-batch speedup ---
    e_tok = d.step("expected_tokens_per_pass", "Expected tokens per target pass", expected_tokens(a, k), "1",
                   noun="tokens", formula="(1 − {acceptance_rate}^({draft_tokens} + 1)) / (1 − {acceptance_rate})")
    d.step("accepted_drafts_per_pass", "Drafted tokens kept per pass (the rest is the target's own)", e_tok - 1, "1",
           noun="tokens", formula="{expected_tokens_per_pass} − 1")
    d.step("rejected_drafts_per_pass", "Drafted tokens thrown away per pass", k + 1 - e_tok, "1", noun="tokens",
           formula="{draft_tokens} + 1 − {expected_tokens_per_pass}")
    d.step("verify_useful_share", "Share of the verify pass's token slots that become output", 100 * e_tok / (k + 1),
           "%", formula="100 × {expected_tokens_per_pass} / ({draft_tokens} + 1)")
    d.step("iteration_cost_small_batch", "One round at small batch, in target decode steps", 1 + k * c, "1",
           noun="steps", formula="1 + {draft_tokens} × {draft_cost}")
    d.step("speedup_small_batch", "Speedup at small batch (verify costs one decode step)", e_tok / (1 + k * c), "1",
           noun="×", formula="{expected_tokens_per_pass} / {iteration_cost_small_batch}")
    k_best = d.step("optimal_draft_tokens", "Best k at small batch (searched over 1 to 16)",
                    best_k(lambda j: expected_tokens(a, j) / (1 + j * c)), "1", noun="",
                    formula="argmax over k of (1 − {acceptance_rate}^(k+1)) / ((1 − {acceptance_rate}) (1 + k × {draft_cost}))")
    d.step("expected_tokens_at_optimal_k", "Tokens per pass at that k", expected_tokens(a, k_best), "1",
           noun="tokens", formula="(1 − {acceptance_rate}^({optimal_draft_tokens} + 1)) / (1 − {acceptance_rate})")
    d.step("speedup_at_optimal_k", "Small-batch speedup at that k", expected_tokens(a, k_best) / (1 + k_best * c), "1",
           noun="×", formula="{expected_tokens_at_optimal_k} / (1 + {optimal_draft_tokens} × {draft_cost})")

    # --- the replica's roofline, weights only ---
    e = engine(p)
    m = catalog_model(p.model)
    d.step("weight_bytes", f"{p.model} weights in {p.weight_precision}", e.weight_bytes, "B",
           formula=f"{fmt(m.total_params)} parameters × {fmt(la.BYTES_PER_PARAM[p.weight_precision])} B")
    d.step("replica_hbm_Bps", "Replica HBM bandwidth at the stated efficiency", e.replica_hbm_Bps, "B/s",
           formula=f"{{gpus_per_replica}} × {fmt(la.catalog_gpu(p.gpu).hbm_Bps)} B/s × {{hbm_efficiency}}")
    d.step("weight_read_s", "Reading every weight once: the floor of any step", e.weight_read_s, "s",
           formula="{weight_bytes} B / {replica_hbm_Bps} B/s")
    d.step("replica_flops", "Replica compute at the stated MFU", e.replica_flops, "FLOP/s",
           formula=f"{{gpus_per_replica}} × {fmt(la.peak_flops(p.gpu, p.weight_precision))} FLOP/s × {{mfu}}")
    wo = roofline(e, m, weights_only=True)
    d.step("weight_compute_per_token_s", "Compute per token, weights only (2 FLOP per active parameter)",
           wo.compute_per_token_s, "s", formula=f"2 × {fmt(m.active_params)} FLOP / {{replica_flops}} FLOP/s")
    d.step("ridge_batch", "Ridge batch: where a decode step's FLOP catch up with its weight read",
           wo.weight_read_s / wo.compute_per_token_s, "1", noun="sequences",
           formula="{weight_read_s} s / {weight_compute_per_token_s} s")
    d.step("break_even_batch_weights_only", "Break-even batch, weights only", break_even_batch(wo, a, k, c), "1",
           noun="sequences",
           formula="{ridge_batch} × ({expected_tokens_per_pass} − {draft_tokens} × {draft_cost}) / ({draft_tokens} + 1)")

    # --- with the KV cache read every step ---
    kvr = roofline(e, m, weights_only=False)
    d.step("kv_bytes_per_token", "KV cache per token (bf16, all layers)", e.kv_bytes_per_token, "B",
           formula=f"2 × {m.layers} layers × {m.kv_heads} KV heads × {m.head_dim} × 2 B")
    d.step("decode_context_tokens", "Average context a decode step reads", e.decode_context_avg, "1", noun="tokens",
           formula="{prompt_tokens} + {output_tokens} / 2")
    d.step("kv_read_per_sequence_s", "Reading one sequence's KV", e.kv_read_per_sequence_s, "s",
           formula="{kv_bytes_per_token} B × {decode_context_tokens} / {replica_hbm_Bps} B/s")
    d.step("decode_flops_per_token", "FLOP per token with attention over the context", e.decode_flops_per_sequence,
           "FLOP", formula=f"2 × {fmt(m.active_params)} + "
                           f"{fmt(la.attention_flops_per_token_per_position(m))} × {{decode_context_tokens}}")
    d.step("compute_per_token_s", "Compute per token, attention included", e.decode_compute_per_sequence_s, "s",
           formula="{decode_flops_per_token} FLOP / {replica_flops} FLOP/s")
    d.step("kv_read_over_compute", "Per sequence: KV read time over compute time",
           e.kv_read_per_sequence_s / e.decode_compute_per_sequence_s, "1", noun="×",
           formula="{kv_read_per_sequence_s} s / {compute_per_token_s} s")
    d.step("usable_hbm_bytes", "HBM usable per replica (90%)", e.usable_hbm_bytes, "B",
           formula=f"{{gpus_per_replica}} × {fmt(la.catalog_gpu(p.gpu).memory_bytes)} B × {fmt(la.USABLE_HBM_FRACTION)}")
    d.step("kv_room_bytes", "Room for KV after the weights", e.kv_room_bytes, "B",
           formula="{usable_hbm_bytes} B − {weight_bytes} B")
    d.step("kv_bytes_per_sequence", "KV of one sequence at its longest", e.kv_bytes_per_sequence_max, "B",
           formula="{kv_bytes_per_token} B × ({prompt_tokens} + {output_tokens})")
    cap = d.step("batch_memory_cap", "KV cap: sequences whose cache fits at once", e.batch_memory_cap, "1",
                 noun="sequences", formula="floor({kv_room_bytes} B / {kv_bytes_per_sequence} B)")
    be_kv = d.step("break_even_batch_with_kv", "Break-even batch, KV reads modelled", break_even_batch(kvr, a, k, c),
                   "1", noun="sequences",
                   formula="({expected_tokens_per_pass} − {draft_tokens} × {draft_cost}) × {weight_read_s} s / "
                           "(({draft_tokens} + 1) × {compute_per_token_s} s − ({expected_tokens_per_pass} − "
                           "{draft_tokens} × {draft_cost}) × {kv_read_per_sequence_s} s)")
    if math.isinf(be_kv):
        verdict = f"never: the KV read outlasts the verify compute at every batch, so speculation pays up to the KV cap of {cap:,}"
    elif be_kv > cap:
        verdict = f"past the KV cap of {cap:,}: at every batch that fits, speculation still pays"
    elif be_kv == 0:
        verdict = "at batch 1 already: this draft never pays"
    else:
        verdict = f"inside the KV cap of {cap:,}: a full replica loses by speculating"
    d.step("break_even_with_kv_verdict", "Where the KV-modelled break-even falls", verdict,
           formula="{break_even_batch_with_kv} against {batch_memory_cap}")

    # --- at the operating batch ---
    mem = e.weight_read_s + batch * e.kv_read_per_sequence_s
    t1 = d.step("decode_step_s", "Plain decode step at the operating batch",
                max(mem, batch * e.decode_compute_per_sequence_s), "s",
                formula="max({weight_read_s} s + {operating_batch} × {kv_read_per_sequence_s} s, "
                        "{operating_batch} × {compute_per_token_s} s)")
    tv = d.step("verify_step_s", "Verify pass of k + 1 tokens a sequence",
                max(mem, (k + 1) * batch * e.decode_compute_per_sequence_s), "s",
                formula="max({weight_read_s} s + {operating_batch} × {kv_read_per_sequence_s} s, "
                        "({draft_tokens} + 1) × {operating_batch} × {compute_per_token_s} s)")
    dr = d.step("draft_time_s", "k draft steps", k * c * t1, "s", formula="{draft_tokens} × {draft_cost} × {decode_step_s} s")
    it = d.step("iteration_s", "One speculative round", tv + dr, "s", formula="{verify_step_s} s + {draft_time_s} s")
    d.step("speedup_at_operating_batch", "Speedup at the operating batch (KV modelled)", e_tok * t1 / it, "1",
           noun="×", formula="{expected_tokens_per_pass} × {decode_step_s} s / {iteration_s} s")
    t1w = d.step("decode_step_weights_only_s", "Plain decode step, weights-only view",
                 max(wo.weight_read_s, batch * wo.compute_per_token_s), "s",
                 formula="max({weight_read_s} s, {operating_batch} × {weight_compute_per_token_s} s)")
    tvw = d.step("verify_step_weights_only_s", "Verify pass, weights-only view",
                 max(wo.weight_read_s, (k + 1) * batch * wo.compute_per_token_s), "s",
                 formula="max({weight_read_s} s, ({draft_tokens} + 1) × {operating_batch} × {weight_compute_per_token_s} s)")
    d.step("speedup_at_operating_batch_weights_only", "Same batch, weights-only view", e_tok * t1w / (tvw + k * c * t1w),
           "1", noun="×", formula="{expected_tokens_per_pass} × {decode_step_weights_only_s} s / "
                                  "({verify_step_weights_only_s} s + {draft_tokens} × {draft_cost} × {decode_step_weights_only_s} s)")
    d.step("tpot_plain_s", "Time per output token without speculation", t1, "s", formula="{decode_step_s} s")
    d.step("tpot_speculative_s", "Time per output token with speculation", it / e_tok, "s",
           formula="{iteration_s} s / {expected_tokens_per_pass}")
    d.step("operating_batch_fits", "Does the operating batch fit the KV cap?",
           "yes" if batch <= cap else "no: that many sequences do not fit; the curve past the cap is hypothetical",
           formula="{operating_batch} ≤ {batch_memory_cap}")
    k_op = max(range(0, MAX_DRAFT_TOKENS + 1), key=lambda j: (speedup_at(kvr, a, j, c, batch), -j))
    d.step("optimal_draft_tokens_at_operating_batch", "Best k at the operating batch (0 = speculation off)", k_op, "1",
           noun="", formula="argmax over k = 0…16 of the speedup at {operating_batch} sequences")
    d.step("speedup_at_operating_batch_best_k", "Speedup at the operating batch with that k",
           speedup_at(kvr, a, k_op, c, batch), "1", noun="×",
           formula="speedup at {operating_batch} sequences, k = {optimal_draft_tokens_at_operating_batch}")

    # --- where the draft runs and what it costs ---
    dw = d.step("draft_weight_bytes", "A draft whose step is its weight read weighs about c × the target",
                c * e.weight_bytes, "B", formula="{draft_cost} × {weight_bytes} B")
    d.step("batch_memory_cap_with_draft", "KV cap with the draft's weights on the same GPUs",
           max(0, math.floor((e.kv_room_bytes - dw) / e.kv_bytes_per_sequence_max)), "1", noun="sequences",
           formula="floor(({kv_room_bytes} B − {draft_weight_bytes} B) / {kv_bytes_per_sequence} B)")
    ref = catalog_model(REFERENCE_DRAFT)
    c_ref = d.step("reference_draft_cost", f"c of a separate {REFERENCE_DRAFT} draft, by weight bytes alone",
                   ref.total_params / m.total_params, "1", noun="",
                   formula=f"{fmt(ref.total_params)} / {fmt(m.total_params)} parameters")
    d.step("speedup_small_batch_reference_draft", f"Small-batch speedup with that {REFERENCE_DRAFT} draft",
           e_tok / (1 + k * c_ref), "1", noun="×",
           formula="{expected_tokens_per_pass} / (1 + {draft_tokens} × {reference_draft_cost})")

    # --- monitoring: the acceptance rate below which it stops paying ---
    d.step("break_even_acceptance_small_batch", "Acceptance below which speculation loses at small batch",
           100 * _acceptance_for(1.0, lambda x: expected_tokens(x, k) / (1 + k * c)), "%",
           formula="a where (1 − a^({draft_tokens} + 1)) / (1 − a) = 1 + {draft_tokens} × {draft_cost}")
    d.step("break_even_acceptance_at_operating_batch", "Acceptance below which it loses at the operating batch",
           100 * _acceptance_for(1.0, lambda x: speedup_at(kvr, x, k, c, batch)), "%",
           formula="a where the speedup at {operating_batch} sequences = 1 (100% = never pays)")
    ra = p.regressed_acceptance
    d.step("expected_tokens_regressed", "Tokens per pass after the regression", expected_tokens(ra, k), "1",
           noun="tokens", formula="(1 − {regressed_acceptance}^({draft_tokens} + 1)) / (1 − {regressed_acceptance})")
    d.step("speedup_small_batch_regressed", "Small-batch speedup after the regression",
           expected_tokens(ra, k) / (1 + k * c), "1", noun="×",
           formula="{expected_tokens_regressed} / {iteration_cost_small_batch}")
    d.step("speedup_at_operating_batch_regressed", "Operating-batch speedup after the regression",
           speedup_at(kvr, ra, k, c, batch), "1", noun="×",
           formula="{expected_tokens_regressed} × {decode_step_s} s / {iteration_s} s")
    return d
