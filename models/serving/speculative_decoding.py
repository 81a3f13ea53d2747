"""Speculative decoding on a busy fleet: latency bought with spare compute (seed 004).

A draft proposes k tokens; the target checks all of them in one pass and keeps the longest
accepted prefix plus one token of its own. With a per-token acceptance rate a (independent
from token to token, as in Leviathan et al. 2023):

    tokens per target pass  E = (1 - a^(k+1)) / (1 - a)
    speedup, small batch    = E / (1 + k c)       c = one draft step / one target step

The small-batch formula assumes a verify pass of k+1 tokens costs what a decode step costs,
which holds only while the step is bound by reading memory. At batch B the step is the engine's
(models/engine/roofline.py), and the verify pass is the same step with k+1 tokens a sequence:

    decode step   t1(B) = max(weights + B x KV,  B x FLOP per token) + all-reduces of B tokens + fixed
    verify step   tv(B) = max(weights + B x KV,  (k+1) x B x FLOP)   + all-reduces of (k+1) B tokens + fixed
    speedup(B)          = E x t1(B) / (tv(B) + k c t1(B))

The k+1 tokens of one sequence read its KV once: the verify pass shares the KV read as it shares
the weight read, and the launch-and-sampling cost too; it does not share the all-reduces, whose
payload is every token's hidden state. "Weights only" is the popular ridge argument: no KV, no
attention FLOP, no all-reduce, no fixed cost, which puts the break-even at
ridge x (E - k c) / (k + 1). With the engine's full step the break-even moves out, at long
contexts past the batch the KV cache can hold, or to infinity. The draft's step is taken as c
times the target's decode step at the same batch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated

from models.catalog import model as catalog_model
from models.core import Derivation, Knob, StrictModel
from models.engine.knobs import llm, with_defaults
from models.engine.record import record_served
from models.engine.roofline import DecodeStep, Replica, floor_batch
from models.engine.serving_knobs import ServingKnobs
from models.engine.shape import with_counted_params
from models.units import format_number as fmt

MAX_DRAFT_TOKENS = 16
REFERENCE_DRAFT = "Llama-3-8B"  # the smallest catalog model, as a separate draft


def expected_tokens(a: float, k: int) -> float:
    """Tokens one target pass yields: accepted drafts plus the target's own token."""
    return (1 - a ** (k + 1)) / (1 - a)


def verify_step(r: Replica, batch: float, context_tokens: float, tokens_per_sequence: int) -> DecodeStep:
    """One forward pass checking `tokens_per_sequence` positions of each of `batch` sequences: the
    decode step's bytes (weights and each sequence's KV are read once for all its positions), its
    FLOP and all-reduce payload times the positions, the same fixed cost."""
    one = r.decode_step(batch, context_tokens)
    n = tokens_per_sequence
    return DecodeStep(one.bytes_read, one.memory_s, n * one.flops, n * one.compute_s, r.allreduce_s(n * batch),
                      one.overhead_s)


@dataclass(frozen=True)
class StepCosts:
    """A decode step as per-unit times (seconds), each linear in the batch:
    max(weight_read + B kv_read, B compute) + allreduce_fixed + B allreduce_per_token + fixed."""

    weight_read_s: float
    kv_read_per_sequence_s: float
    compute_per_token_s: float
    allreduce_fixed_s: float = 0.0
    allreduce_per_token_s: float = 0.0
    fixed_s: float = 0.0

    def step_s(self, batch: float, tokens_per_sequence: int = 1) -> float:
        n = tokens_per_sequence
        return (max(self.weight_read_s + batch * self.kv_read_per_sequence_s, n * batch * self.compute_per_token_s)
                + self.allreduce_fixed_s + n * batch * self.allreduce_per_token_s + self.fixed_s)


def engine_costs(r: Replica, context_tokens: float) -> StepCosts:
    """The engine's step taken apart from the Replica itself, so the break-even can be solved on it."""
    one, none = r.decode_step(1, context_tokens), r.decode_step(0, context_tokens)
    return StepCosts(none.memory_s, one.memory_s - none.memory_s, one.compute_s, r.allreduce_s(0),
                     r.allreduce_s(1) - r.allreduce_s(0), r.step_overhead_s)


def ridge_costs(r: Replica) -> StepCosts:
    """The ridge argument's step: the weights' bytes and their 2 FLOP per parameter, nothing else."""
    return StepCosts(r.weight_bytes / r.achieved_hbm_Bps, 0.0,
                     r.weight_flops_per_token / (r.peak_flops * r.decode_mfu))


def speedup_at(s: StepCosts, a: float, k: int, c: float, batch: float) -> float:
    """Speculative over plain decode at the same batch; k = 0 means speculation off (1x)."""
    if k == 0:
        return 1.0
    t1 = s.step_s(batch)
    return expected_tokens(a, k) * t1 / (s.step_s(batch, k + 1) + k * c * t1)


def break_even_batch(s: StepCosts, a: float, k: int, c: float) -> float:
    """Smallest batch where speedup(B) = 1: 0 if speculation never pays, inf if it pays at every batch.

    speedup = 1 where tv(B) = (E - k c) t1(B). Both sides are linear in B between the batches where
    the verify pass and then the decode step turn compute-bound, so the crossing is found exactly,
    segment by segment."""
    net = expected_tokens(a, k) - k * c
    if net <= 1:
        return 0.0

    def gap(b: float) -> float:  # negative while speculation pays
        return s.step_s(b, k + 1) - net * s.step_s(b)

    turns = []
    for n in (k + 1, 1):  # verify compute-bound first, then decode
        denom = n * s.compute_per_token_s - s.kv_read_per_sequence_s
        if denom > 0:
            turns.append(s.weight_read_s / denom)
    lo, g_lo = 0.0, gap(0.0)
    for hi in [*turns, math.inf]:
        if math.isinf(hi):
            slope = gap(lo + 1.0) - g_lo  # the last segment is linear all the way out
            return lo - g_lo / slope if slope > 0 else math.inf
        g_hi = gap(hi)
        if g_hi >= 0:
            return lo + (hi - lo) * (-g_lo) / (g_hi - g_lo)
        lo, g_lo = hi, g_hi
    return math.inf  # pragma: no cover - the loop returns at the last segment


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


class _DraftKnobs(StrictModel):
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
    regressed_acceptance: Annotated[
        float,
        Knob("Acceptance after a silent regression", "", 0.05, 0.99, 0.01, percent=True,
             help="Where acceptance lands after, say, the target is updated and the draft is not.",
             draw=(0.3, 0.7)),
    ] = 0.6


# The operating batch is the question's: "a busy fleet" at 256 sequences a replica. Eight H100s
# hold Llama 3 70B in bf16 with room for 552 such sequences.
class Params(with_defaults(ServingKnobs, tp_degree=8, given_batch=256), _DraftKnobs):
    """The draft, then the operating batch, the request, the target's engine."""


def solve(p: Params) -> Derivation:
    d = Derivation(p)
    a, k, c = p.acceptance_rate, p.draft_tokens, p.draft_cost

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

    # --- the target's replica: the engine's standard steps ---
    s = record_served(d, p)
    r, batch, m = s.replica, s.batch, s.replica.model

    # --- the ridge argument: weights only ---
    ridge = ridge_costs(r)
    d.step("weight_compute_per_token_s", "Compute per token, weights only (2 FLOP per active parameter)",
           ridge.compute_per_token_s, "s", formula="2 × {active_params} FLOP / {replica_decode_flops} FLOP/s")
    d.step("ridge_batch", "Ridge batch: where a decode step's FLOP catch up with its weight read",
           ridge.weight_read_s / ridge.compute_per_token_s, "1", noun="sequences",
           formula="{weight_read_s} s / {weight_compute_per_token_s} s")
    d.step("break_even_batch_weights_only", "Break-even batch, weights only", break_even_batch(ridge, a, k, c), "1",
           noun="sequences",
           formula="{ridge_batch} × ({expected_tokens_per_pass} − {draft_tokens} × {draft_cost}) / ({draft_tokens} + 1)")

    # --- the engine's full step: KV read, attention FLOP, all-reduces, fixed cost ---
    full = engine_costs(r, s.decode_context_tokens)
    d.step("compute_per_token_s", "Compute per token, attention included", full.compute_per_token_s, "s",
           formula="{decode_flops_per_token} FLOP / {replica_decode_flops} FLOP/s")
    d.step("kv_read_over_compute", "Per sequence: KV read time over compute time",
           full.kv_read_per_sequence_s / full.compute_per_token_s, "1", noun="×",
           formula="{kv_read_per_sequence_s} s / {compute_per_token_s} s")
    d.step("allreduce_per_token_s", "Tensor-parallel all-reduce time per token in a step (payload part)",
           full.allreduce_per_token_s, "s",
           formula=(f"{m.layers} layers × 2 × 2 × ({r.tp} − 1) / {r.tp} × {m.d_model} × 2 B / "
                    f"{fmt(r.hw.link_Bps_per_direction)} B/s") if r.tp > 1 else "",
           note="None on one accelerator." if r.tp == 1 else "")
    d.step("fixed_step_s", "Per-step cost whatever the batch: launches and the all-reduce latencies",
           full.fixed_s + full.allreduce_fixed_s, "s", formula="{step_overhead_s} s + {allreduce_fixed_s} s")
    cap = s.batch_memory_cap
    be_kv = d.step("break_even_batch_with_kv", "Break-even batch, the engine's full step (KV read included)",
                   break_even_batch(full, a, k, c), "1", noun="sequences",
                   formula="where verify = ({expected_tokens_per_pass} − {draft_tokens} × {draft_cost}) × decode; "
                           "while decode is bytes-bound and verify FLOP-bound: "
                           "(({expected_tokens_per_pass} − {draft_tokens} × {draft_cost}) × ({weight_read_s} s + "
                           "{fixed_step_s} s) − {fixed_step_s} s) / (({draft_tokens} + 1) × ({compute_per_token_s} s + "
                           "{allreduce_per_token_s} s) − ({expected_tokens_per_pass} − {draft_tokens} × {draft_cost}) × "
                           "({kv_read_per_sequence_s} s + {allreduce_per_token_s} s))")
    if math.isinf(be_kv):
        verdict = (f"never: the KV read outlasts the verify pass's FLOP and all-reduces at every batch, so "
                   f"speculation pays up to the KV cap of {cap:,}")
    elif be_kv > cap:
        verdict = f"past the KV cap of {cap:,}: at every batch that fits, speculation still pays"
    elif be_kv == 0:
        verdict = "at batch 1 already: this draft never pays"
    else:
        verdict = f"inside the KV cap of {cap:,}: a full replica loses by speculating"
    d.step("break_even_with_kv_verdict", "Where the full-step break-even falls", verdict,
           formula="{break_even_batch_with_kv} against {batch_memory_cap}")

    # --- at the operating batch ---
    t1 = s.decode_step_s
    v = verify_step(r, batch, s.decode_context_tokens, k + 1)
    d.step("verify_step_compute_s", "Verify pass, FLOP side", v.compute_s, "s",
           formula="({draft_tokens} + 1) × {decode_step_compute_s} s")
    d.step("verify_step_allreduce_s", "Verify pass, tensor-parallel all-reduces", v.allreduce_s, "s",
           formula="{allreduce_fixed_s} s + ({draft_tokens} + 1) × {decode_batch} × {allreduce_per_token_s} s")
    tv = d.step("verify_step_s", "Verify pass of k + 1 tokens a sequence", v.step_s, "s",
                formula="max({decode_step_memory_s} s, {verify_step_compute_s} s) + {verify_step_allreduce_s} s + "
                        "{step_overhead_s} s")
    d.step("verify_bound", "What bounds the verify pass", v.bound,
           formula="bytes side {decode_step_memory_s} s against FLOP side {verify_step_compute_s} s")
    dr = d.step("draft_time_s", "k draft steps", k * c * t1, "s", formula="{draft_tokens} × {draft_cost} × {decode_step_s} s")
    it = d.step("iteration_s", "One speculative round", tv + dr, "s", formula="{verify_step_s} s + {draft_time_s} s")
    d.step("speedup_at_operating_batch", "Speedup at the operating batch (the engine's full step)", e_tok * t1 / it,
           "1", noun="×", formula="{expected_tokens_per_pass} × {decode_step_s} s / {iteration_s} s")
    t1w = d.step("decode_step_weights_only_s", "Plain decode step, weights-only view", ridge.step_s(batch), "s",
                 formula="max({weight_read_s} s, {decode_batch} × {weight_compute_per_token_s} s)")
    tvw = d.step("verify_step_weights_only_s", "Verify pass, weights-only view", ridge.step_s(batch, k + 1), "s",
                 formula="max({weight_read_s} s, ({draft_tokens} + 1) × {decode_batch} × {weight_compute_per_token_s} s)")
    d.step("speedup_at_operating_batch_weights_only", "Same batch, weights-only view", e_tok * t1w / (tvw + k * c * t1w),
           "1", noun="×", formula="{expected_tokens_per_pass} × {decode_step_weights_only_s} s / "
                                  "({verify_step_weights_only_s} s + {draft_tokens} × {draft_cost} × {decode_step_weights_only_s} s)")
    d.step("tpot_plain_s", "Time per output token without speculation", t1, "s", formula="{decode_step_s} s")
    d.step("tpot_speculative_s", "Time per output token with speculation", it / e_tok, "s",
           formula="{iteration_s} s / {expected_tokens_per_pass}")
    k_op = max(range(0, MAX_DRAFT_TOKENS + 1), key=lambda j: (speedup_at(full, a, j, c, batch), -j))
    d.step("optimal_draft_tokens_at_operating_batch", "Best k at the operating batch (0 = speculation off)", k_op, "1",
           noun="", formula="argmax over k = 0…16 of the speedup at {decode_batch} sequences")
    d.step("speedup_at_operating_batch_best_k", "Speedup at the operating batch with that k",
           speedup_at(full, a, k_op, c, batch), "1", noun="×",
           formula="speedup at {decode_batch} sequences, k = {optimal_draft_tokens_at_operating_batch}")

    # --- where the draft runs and what it costs ---
    dw = d.step("draft_weight_bytes", "A draft whose step is its weight read weighs about c × the target",
                c * r.weight_bytes, "B", formula="{draft_cost} × {weight_bytes} B")
    cap_draft = max(0.0, (r.kv_room_bytes - dw) / s.kv_bytes_per_sequence)
    d.step("batch_memory_cap_with_draft_continuous", "Sequences whose KV fits beside target and draft, before the floor",
           cap_draft, "1", noun="sequences", formula="({kv_room_bytes} B − {draft_weight_bytes} B) / {kv_bytes_per_sequence} B")
    d.step("batch_memory_cap_with_draft", "KV cap with the draft's weights on the same GPUs", floor_batch(cap_draft), "1",
           noun="sequences", formula="floor({batch_memory_cap_with_draft_continuous})")
    ref = with_counted_params(catalog_model(REFERENCE_DRAFT))
    c_ref = d.step("reference_draft_cost", f"c of a separate {REFERENCE_DRAFT} draft, by weight bytes alone",
                   ref.total_params / m.total_params, "1", noun="",
                   formula=f"{fmt(ref.total_params)} / {{model_params}} parameters")
    d.step("speedup_small_batch_reference_draft", f"Small-batch speedup with that {REFERENCE_DRAFT} draft",
           e_tok / (1 + k * c_ref), "1", noun="×",
           formula="{expected_tokens_per_pass} / (1 + {draft_tokens} × {reference_draft_cost})")

    # --- monitoring: the acceptance rate below which it stops paying ---
    d.step("break_even_acceptance_small_batch", "Acceptance below which speculation loses at small batch",
           100 * _acceptance_for(1.0, lambda x: expected_tokens(x, k) / (1 + k * c)), "%",
           formula="a where (1 − a^({draft_tokens} + 1)) / (1 − a) = 1 + {draft_tokens} × {draft_cost}")
    d.step("break_even_acceptance_at_operating_batch", "Acceptance below which it loses at the operating batch",
           100 * _acceptance_for(1.0, lambda x: speedup_at(full, x, k, c, batch)), "%",
           formula="a where the speedup at {decode_batch} sequences = 1 (100% = never pays)")
    ra = p.regressed_acceptance
    d.step("expected_tokens_regressed", "Tokens per pass after the regression", expected_tokens(ra, k), "1",
           noun="tokens", formula="(1 − {regressed_acceptance}^({draft_tokens} + 1)) / (1 − {regressed_acceptance})")
    d.step("speedup_small_batch_regressed", "Small-batch speedup after the regression",
           expected_tokens(ra, k) / (1 + k * c), "1", noun="×",
           formula="{expected_tokens_regressed} / {iteration_cost_small_batch}")
    d.step("speedup_at_operating_batch_regressed", "Operating-batch speedup after the regression",
           speedup_at(full, ra, k, c, batch), "1", noun="×",
           formula="{expected_tokens_regressed} × {decode_step_s} s / {iteration_s} s")
    return d
