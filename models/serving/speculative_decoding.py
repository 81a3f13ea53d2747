"""Speculative decoding on a busy fleet: latency bought with spare compute (seed 004).

A draft proposes k tokens; the target checks all of them in one pass and keeps the longest
accepted prefix plus one token of its own. With a per-token acceptance rate a (independent
from token to token, as in Leviathan et al. 2023):

    tokens per target pass  E = (1 - a^(k+1)) / (1 - a)
    speedup, small batch    = E / (1 + k c)       c = one draft step / one target step

The small-batch formula assumes a verify pass of k+1 tokens costs what a decode step costs,
which holds only while the step is bound by reading memory. At batch B the step is the engine's
(models/engine/roofline.py), and the verify pass is the same pass scoring k+1 positions a
sequence (`Replica.step_lines(context, k + 1)`); the break-even is solved on those lines:

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
from dataclasses import replace
from typing import Annotated

from models.catalog import model as catalog_model
from models.core import Derivation, Knob, StrictModel
from models.engine.knobs import llm, with_defaults, without
from models.engine.record import record_served
from models.engine.roofline import Replica, StepLines, floor_batch
from models.engine.serving_knobs import ServingKnobs
from models.engine.shape import with_counted_params
from models.validation_steps import accuracy_steps

MAX_DRAFT_TOKENS = 16
REFERENCE_DRAFT = "Llama-3-8B"  # the smallest catalog model, as a separate draft
# SGLang's EAGLE defaults: speculative_num_draft_tokens 8 (the tree's nodes, verified in one pass),
# speculative_num_steps 5, speculative_eagle_topk 4 (docs.sglang.io, speculative decoding).
SGLANG_TREE_TOKENS = 8
# SGLang's published batch-1 figures, Llama-3.1-8B-Instruct on one H100, MT-Bench: tokens/s.
SGLANG_MEASURED = {"baseline": 158.34, "eagle2": 244.10, "eagle3": 373.25}


def expected_tokens(a: float, k: int) -> float:
    """Tokens one target pass yields: accepted drafts plus the target's own token."""
    return (1 - a ** (k + 1)) / (1 - a)


def ridge_lines(r: Replica, positions: int = 1) -> StepLines:
    """The ridge argument's pass as lines in the batch: the weights' bytes, and their 2 FLOP per
    parameter for each of `positions` tokens a sequence; no KV, no attention, no all-reduce, no
    fixed cost."""
    per_token_s = r.weight_flops_per_token / (r.peak_flops * r.decode_mfu)
    return StepLines((r.weight_bytes / r.achieved_hbm_Bps, 0.0), (0.0, positions * per_token_s), (0.0, 0.0))


def speedup_at(decode: StepLines, verify: StepLines, a: float, k: int, c: float, batch: float) -> float:
    """Speculative over plain decode at the same batch; `verify` is the pass of k + 1 positions a
    sequence, and k = 0 means speculation off (1x)."""
    if k == 0:
        return 1.0
    t1 = decode.step_s(batch)
    return expected_tokens(a, k) * t1 / (verify.step_s(batch) + k * c * t1)


def break_even_batch(decode: StepLines, verify: StepLines, a: float, k: int, c: float) -> float:
    """Smallest batch where speedup(B) = 1: 0 if speculation never pays, inf if it pays at every batch.

    speedup = 1 where tv(B) = (E - k c) t1(B). Both sides are linear in B between the batches where
    the verify pass and then the decode step turn compute-bound, so the crossing is found exactly,
    segment by segment."""
    net = expected_tokens(a, k) - k * c
    if net <= 1:
        return 0.0

    def gap(b: float) -> float:  # negative while speculation pays
        return verify.step_s(b) - net * decode.step_s(b)

    turns = []
    for lines in (verify, decode):  # where the FLOP side overtakes the bytes side
        denom = lines.compute[1] - lines.memory[1]
        if denom > 0 and lines.memory[0] > lines.compute[0]:
            turns.append((lines.memory[0] - lines.compute[0]) / denom)
    lo, g_lo = 0.0, gap(0.0)
    for hi in [*sorted(turns), math.inf]:
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
# One replica's step at a batch, no fleet sized: no utilization target.
class Params(without(with_defaults(ServingKnobs, tp_degree=8, given_batch=256), "target_utilization"), _DraftKnobs):
    """The draft, then the operating batch, the request, the target's engine."""


def solve(p: Params) -> Derivation:
    d = Derivation(p)
    a, k, c = p.acceptance_rate, p.draft_tokens, p.draft_cost
    d.step("verify_positions", "Positions the verify pass scores per sequence: the k drafts and one more", k + 1,
           "1", noun="positions", formula="{draft_tokens} + 1")

    # --- the formula: tokens per pass and the small-batch speedup ---
    e_tok = d.step("expected_tokens_per_pass", "Expected tokens per target pass", expected_tokens(a, k), "1",
                   noun="tokens", formula="(1 − {acceptance_rate}^({draft_tokens} + 1)) / (1 − {acceptance_rate})")
    d.step("accepted_drafts_per_pass", "Drafted tokens kept per pass (the rest is the target's own)", e_tok - 1, "1",
           noun="tokens", formula="{expected_tokens_per_pass} − 1")
    d.step("rejected_drafts_per_pass", "Drafted tokens thrown away per pass", k + 1 - e_tok, "1", noun="tokens",
           formula="{draft_tokens} + 1 − {expected_tokens_per_pass}")
    d.step("verify_useful_share", "Share of the verify pass's token slots that become output", e_tok / (k + 1),
           "1", percent=True, formula="{expected_tokens_per_pass} / ({draft_tokens} + 1)")
    d.step("iteration_cost_small_batch", "One round at small batch, in target decode steps", 1 + k * c, "1",
           noun="steps", formula="1 + {draft_tokens} × {draft_cost}")
    d.step("speedup_small_batch", "Speedup at small batch (verify costs one decode step)", e_tok / (1 + k * c), "1",
           noun="×", formula="{expected_tokens_per_pass} / {iteration_cost_small_batch}")
    k_best = d.step("optimal_draft_tokens", "Best k at small batch (searched over 1 to 16)",
                    best_k(lambda j: expected_tokens(a, j) / (1 + j * c)), "1", noun="",
                    formula="the k in 1…16 with the largest (1 − {acceptance_rate}^(k+1)) / ((1 − {acceptance_rate}) × "
                            "(1 + k × {draft_cost}))", kind="search")
    d.step("expected_tokens_at_optimal_k", "Tokens per pass at that k", expected_tokens(a, k_best), "1",
           noun="tokens", formula="(1 − {acceptance_rate}^({optimal_draft_tokens} + 1)) / (1 − {acceptance_rate})")
    d.step("speedup_at_optimal_k", "Small-batch speedup at that k", expected_tokens(a, k_best) / (1 + k_best * c), "1",
           noun="×", formula="{expected_tokens_at_optimal_k} / (1 + {optimal_draft_tokens} × {draft_cost})")

    # --- the target's replica: the engine's standard steps ---
    s = record_served(d, p)
    r, batch, m = s.replica, s.batch, s.replica.model

    # --- the ridge argument: weights only ---
    ridge, ridge_verify = ridge_lines(r), ridge_lines(r, k + 1)
    d.step("weight_compute_per_token_s", "Compute per token, weights only (2 FLOP per active parameter)",
           ridge.compute[1], "s", formula="2 FLOP × {active_params} / {replica_decode_flops}")
    d.step("ridge_batch", "Ridge batch: where a decode step's FLOP catch up with its weight read",
           ridge.memory[0] / ridge.compute[1], "1", noun="sequences",
           formula="{weight_read_s} / {weight_compute_per_token_s}")
    never = e_tok - k * c <= 1  # the draft costs more than a pass yields: no batch where it pays
    d.step("break_even_batch_weights_only", "Break-even batch, weights only",
           break_even_batch(ridge, ridge_verify, a, k, c), "1", noun="sequences",
           formula="0" if never else
           "{ridge_batch} × ({expected_tokens_per_pass} − {draft_tokens} × {draft_cost}) / ({draft_tokens} + 1)",
           note="E − k c ≤ 1: the draft costs more than a pass yields, so speculation never pays." if never else "")

    # --- the engine's full step: KV read, attention FLOP, all-reduces, fixed cost ---
    ctx = s.decode_context_tokens
    # the verify pass of j drafts is the decode pass scoring j + 1 positions a sequence (j = 0: decode)
    verify = {j: r.step_lines(ctx, j + 1) for j in range(MAX_DRAFT_TOKENS + 1)}
    full, full_verify = verify[0], verify[k]
    d.step("compute_per_token_s", "Compute per token, attention included", full.compute[1], "s",
           formula="{decode_flops_per_token} / {replica_decode_flops}")
    d.step("kv_read_over_compute", "Per sequence: KV read time over compute time",
           full.memory[1] / full.compute[1], "1", noun="×",
           formula="{kv_read_per_sequence_s} / {compute_per_token_s}")
    d.step("allreduce_per_token_s", "Tensor-parallel all-reduce time per token in a step (payload part)",
           full.extra[1], "s",
           formula=(f"{m.layers} layers × 2 × 2 × ({r.tp} − 1) / {r.tp} × {m.d_model} × 2 B / "
                    "{link_Bps_per_direction}") if r.tp > 1 else "",
           note="None on one accelerator." if r.tp == 1 else "")
    d.step("fixed_step_s", "Per-step cost whatever the batch: launches and the all-reduce latencies",
           full.extra[0], "s", formula="{step_overhead_s} + {allreduce_fixed_s}")
    cap = s.batch_memory_cap
    be_kv = d.step("break_even_batch_with_kv", "Break-even batch, the engine's full step (KV read included)",
                   break_even_batch(full, full_verify, a, k, c), "1", noun="sequences",
                   kind="search",
                   formula="the B where verify = ({expected_tokens_per_pass} − {draft_tokens} × {draft_cost}) × decode; "
                           "while decode is bytes-bound and verify FLOP-bound: "
                           "(({expected_tokens_per_pass} − {draft_tokens} × {draft_cost}) × ({weight_read_s} + "
                           "{fixed_step_s}) − {fixed_step_s}) / (({draft_tokens} + 1) × ({compute_per_token_s} + "
                           "{allreduce_per_token_s}) − ({expected_tokens_per_pass} − {draft_tokens} × {draft_cost}) × "
                           "({kv_read_per_sequence_s} + {allreduce_per_token_s}))")
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
           formula="{break_even_batch_with_kv} against {batch_memory_cap}", kind="verdict")
    # The same step without the all-reduces and the fixed cost: what each of them moves.
    bare, bare_verify = (StepLines(x.memory, x.compute, (0.0, 0.0)) for x in (full, full_verify))
    d.step("break_even_batch_kv_only", "Break-even batch with the KV read but no all-reduce or fixed cost",
           break_even_batch(bare, bare_verify, a, k, c), "1", noun="sequences",
           kind="search",
           formula="the B where verify = (E − k c) × decode; while decode is bytes-bound and verify FLOP-bound: "
                   "({expected_tokens_per_pass} − "
                   "{draft_tokens} × {draft_cost}) × {weight_read_s} / (({draft_tokens} + 1) × {compute_per_token_s}"
                   " − ({expected_tokens_per_pass} − {draft_tokens} × {draft_cost}) × {kv_read_per_sequence_s})")

    # --- at the operating batch ---
    t1 = s.decode_step_s
    v = r.pass_step(batch, ctx, positions=k + 1)
    d.step("verify_step_compute_s", "Verify pass, FLOP side", v.compute_s, "s",
           formula="({draft_tokens} + 1) × {decode_step_compute_s}")
    d.step("verify_step_allreduce_s", "Verify pass, tensor-parallel all-reduces", v.allreduce_s, "s",
           formula="{allreduce_fixed_s} + ({draft_tokens} + 1) × {decode_batch} × {allreduce_per_token_s}")
    tv = d.step("verify_step_s", "Verify pass of k + 1 tokens a sequence", v.step_s, "s",
                formula="max({decode_step_memory_s}, {verify_step_compute_s}) + {verify_step_allreduce_s} + "
                        "{step_overhead_s}")
    d.step("verify_bound", "What bounds the verify pass", v.bound,
           formula="bytes side {decode_step_memory_s} against FLOP side {verify_step_compute_s}", kind="verdict")
    dr = d.step("draft_time_s", "k draft steps", k * c * t1, "s", formula="{draft_tokens} × {draft_cost} × {decode_step_s}")
    it = d.step("iteration_s", "One speculative round", tv + dr, "s", formula="{verify_step_s} + {draft_time_s}")
    d.step("speedup_at_operating_batch", "Speedup at the operating batch (the engine's full step)", e_tok * t1 / it,
           "1", noun="×", formula="{expected_tokens_per_pass} × {decode_step_s} / {iteration_s}")
    t1w = d.step("decode_step_weights_only_s", "Plain decode step, weights-only view", ridge.step_s(batch), "s",
                 formula="max({weight_read_s}, {decode_batch} × {weight_compute_per_token_s})")
    tvw = d.step("verify_step_weights_only_s", "Verify pass, weights-only view", ridge_verify.step_s(batch), "s",
                 formula="max({weight_read_s}, ({draft_tokens} + 1) × {decode_batch} × {weight_compute_per_token_s})")
    d.step("speedup_at_operating_batch_weights_only", "Same batch, weights-only view", e_tok * t1w / (tvw + k * c * t1w),
           "1", noun="×", formula="{expected_tokens_per_pass} × {decode_step_weights_only_s} / "
                                  "({verify_step_weights_only_s} + {draft_tokens} × {draft_cost} × {decode_step_weights_only_s})")
    d.step("speedup_at_operating_batch_kv_only", "Same batch, the KV read but no all-reduce or fixed cost",
           speedup_at(bare, bare_verify, a, k, c, batch), "1", noun="×",
           formula="{expected_tokens_per_pass} × max({decode_step_memory_s}, {decode_step_compute_s}) / "
                   "(max({decode_step_memory_s}, {verify_step_compute_s}) + {draft_tokens} × {draft_cost} × "
                   "max({decode_step_memory_s}, {decode_step_compute_s}))")
    d.step("tpot_plain_s", "Time per output token without speculation", t1, "s", formula="{decode_step_s}")
    d.step("tpot_speculative_s", "Time per output token with speculation", it / e_tok, "s",
           formula="{iteration_s} / {expected_tokens_per_pass}")
    k_op = max(range(0, MAX_DRAFT_TOKENS + 1), key=lambda j: (speedup_at(full, verify[j], a, j, c, batch), -j))
    d.step("optimal_draft_tokens_at_operating_batch", "Best k at the operating batch (0 = speculation off)", k_op, "1",
           noun="", formula="the k in 0…16 with the largest speedup at {decode_batch} sequences", kind="search")
    d.step("speedup_at_operating_batch_best_k", "Speedup at the operating batch with that k",
           speedup_at(full, verify[k_op], a, k_op, c, batch), "1", noun="×",
           formula="speedup at {decode_batch} sequences, k = {optimal_draft_tokens_at_operating_batch}",
           kind="variant")

    # --- where the draft runs and what it costs ---
    dw = d.step("draft_weight_bytes", "A draft whose step is its weight read weighs about c × the target",
                c * r.weight_bytes, "B", formula="{draft_cost} × {weight_bytes}")
    cap_draft = max(0.0, (r.kv_room_bytes - dw) / s.kv_bytes_per_sequence)
    d.step("batch_memory_cap_with_draft_continuous", "Sequences whose KV fits beside target and draft, before the floor",
           cap_draft, "1", noun="sequences", formula="({kv_room_bytes} − {draft_weight_bytes}) / {kv_bytes_per_sequence}")
    d.step("batch_memory_cap_with_draft", "KV cap with the draft's weights on the same GPUs", floor_batch(cap_draft), "1",
           noun="sequences", formula="floor({batch_memory_cap_with_draft_continuous})")
    ref = with_counted_params(catalog_model(REFERENCE_DRAFT))
    d.step("reference_draft_params", f"{REFERENCE_DRAFT} parameters (counted from its shape)", ref.total_params, "1",
           noun="parameters", kind="lookup")
    c_ref = d.step("reference_draft_cost", f"c of a separate {REFERENCE_DRAFT} draft, by weight bytes alone",
                   ref.total_params / m.total_params, "1", noun="",
                   formula="{reference_draft_params} / {model_params}")
    d.step("speedup_small_batch_reference_draft", f"Small-batch speedup with that {REFERENCE_DRAFT} draft",
           e_tok / (1 + k * c_ref), "1", noun="×",
           formula="{expected_tokens_per_pass} / (1 + {draft_tokens} × {reference_draft_cost})")

    # --- a real draft model on the same GPUs: its step is a step, with launches and all-reduces ---
    one = r.decode_step(1, ctx)
    t11 = d.step("decode_step_batch1_s", "Target decode step at one sequence", one.step_s, "s",
                 formula="max({weight_read_s} + {kv_read_per_sequence_s}, {compute_per_sequence_s}) + "
                         "{allreduce_fixed_s} + {allreduce_per_sequence_s} + {step_overhead_s}")
    d.step("reference_draft_model", "The separate draft weighed here: the catalog's smallest model", REFERENCE_DRAFT,
           kind="lookup")
    d.step("reference_draft_verdict", "Is the reference draft smaller than the target?",
           "a smaller model than the target" if ref.total_params < m.total_params else
           "the target itself, since the catalog has nothing smaller: a same-size bound, not a real draft",
           formula="{reference_draft_params} against {model_params}", kind="verdict")
    rd = replace(r, model=ref)
    floor = d.step("reference_draft_fixed_s", f"Fixed cost of one {REFERENCE_DRAFT} step on these GPUs: launches "
                   "and sampling plus its all-reduce latencies", rd.step_overhead_s + rd.allreduce_s(0), "s",
                   formula=(f"{{step_overhead_s}} + {ref.layers} layers × 2 × {{allreduce_latency_us}}"
                            if r.tp > 1 else "{step_overhead_s}"))
    d.step("draft_cost_floor", "c that fixed cost alone sets at small batch", floor / t11, "1", percent=True,
           formula="{reference_draft_fixed_s} / {decode_step_batch1_s}")
    td1 = d.step("reference_draft_step_batch1_s", f"The engine's {REFERENCE_DRAFT} step on these GPUs, one sequence",
                 rd.decode_step(1, ctx).step_s, "s", kind="variant",
                 formula=f"the decode step at one sequence with {REFERENCE_DRAFT} in place of {{model}}")
    c_eng = d.step("reference_draft_cost_engine", f"c of that {REFERENCE_DRAFT} draft by the engine's step",
                   td1 / t11, "1", percent=True, formula="{reference_draft_step_batch1_s} / {decode_step_batch1_s}")
    d.step("speedup_small_batch_reference_draft_engine", f"Small-batch speedup with that {REFERENCE_DRAFT} draft, "
           "by the engine's step", e_tok / (1 + k * c_eng), "1", noun="×",
           formula="{expected_tokens_per_pass} / (1 + {draft_tokens} × {reference_draft_cost_engine})")
    d.step("draft_cost_verdict", "The draft-cost knob against the fixed-cost floor",
           "below" if c < floor / t11 else "above",
           formula="{draft_cost} against {draft_cost_floor}", kind="verdict")
    # Measured: the accuracy page's vLLM runs, an 8B and a 70B decoding one sequence on the same 8 x H200 node.
    acc = accuracy_steps()
    m8 = d.step("measured_8b_step_s", "Llama-3.1-8B decode step on 8 × H200 (vLLM, one sequence), measured",
                acc.value("h200_8b_decode_measured_s"), "s", kind="lookup",
                note="The accuracy page: a public vLLM benchmark report, concurrency 1.")
    m70 = d.step("measured_70b_step_s", "Llama-3.1-70B decode step on the same node, measured",
                 acc.value("h200_70b_decode_measured_s"), "s", kind="lookup", note="The accuracy page.")
    d.step("measured_8b_fixed_share", "Fixed cost and all-reduces in that 8B step (the accuracy page's fit)",
           acc.value("h200_8b_fixed_share"), "1", percent=True, kind="lookup", note="The accuracy page, fit (b).")
    d.step("measured_draft_cost", "c of an 8B draft for a 70B target on one 8-GPU node, measured",
           m8 / m70, "1", percent=True, formula="{measured_8b_step_s} / {measured_70b_step_s}")

    # --- tree verification (EAGLE, Medusa): one pass scores every node of a candidate tree ---
    n_tree = d.step("tree_verify_positions", "Tree nodes one verify pass scores (SGLang's EAGLE default)",
                    SGLANG_TREE_TOKENS, "1", noun="positions", kind="lookup",
                    note="SGLang speculative_num_draft_tokens, default 8 (speculative_num_steps 5, eagle_topk 4).")
    tree = r.pass_step(batch, ctx, positions=n_tree)
    tt = d.step("tree_verify_step_s", "Verify pass over the tree at the operating batch", tree.step_s, "s",
                formula="max({decode_step_memory_s}, {tree_verify_positions} × {decode_step_compute_s}) + "
                        "{allreduce_fixed_s} + {tree_verify_positions} × {decode_batch} × {allreduce_per_token_s} + "
                        "{step_overhead_s}")
    d.step("tree_break_even_tokens", "Tokens a pass the tree must yield to match the chain at the operating batch",
           e_tok * (tt + dr) / it, "1", noun="tokens",
           formula="{expected_tokens_per_pass} × ({tree_verify_step_s} + {draft_time_s}) / {iteration_s}")
    v1 = r.pass_step(1, ctx, positions=k + 1).step_s
    tree1 = r.pass_step(1, ctx, positions=n_tree).step_s
    d.step("tree_verify_step_batch1_s", "Verify pass over the tree at one sequence", tree1, "s",
           formula="max({weight_read_s} + {kv_read_per_sequence_s}, {tree_verify_positions} × "
                   "{compute_per_sequence_s}) + {allreduce_fixed_s} + {tree_verify_positions} × "
                   "{allreduce_per_sequence_s} + {step_overhead_s}")
    d.step("verify_step_batch1_s", "Chain verify pass at one sequence", v1, "s",
           formula="max({weight_read_s} + {kv_read_per_sequence_s}, ({draft_tokens} + 1) × {compute_per_sequence_s}) "
                   "+ {allreduce_fixed_s} + ({draft_tokens} + 1) × {allreduce_per_sequence_s} + {step_overhead_s}")
    d.step("tree_break_even_tokens_batch1", "Tokens a pass the tree must yield to match the chain at one sequence",
           e_tok * (tree1 + k * c * t11) / (v1 + k * c * t11), "1", noun="tokens",
           formula="{expected_tokens_per_pass} × ({tree_verify_step_batch1_s} + {draft_tokens} × {draft_cost} × "
                   "{decode_step_batch1_s}) / ({verify_step_batch1_s} + {draft_tokens} × {draft_cost} × "
                   "{decode_step_batch1_s})")

    # --- a published anchor for the small-batch formula ---
    base = d.step("sglang_baseline_tokens_per_s", "SGLang, Llama-3.1-8B on one H100, no speculation (MT-Bench)",
                  SGLANG_MEASURED["baseline"], "1/s", noun="tokens", kind="lookup")
    d.step("sglang_eagle3_tokens_per_s", "The same with EAGLE-3", SGLANG_MEASURED["eagle3"], "1/s", noun="tokens",
           kind="lookup")
    d.step("sglang_eagle2_tokens_per_s", "The same with EAGLE-2", SGLANG_MEASURED["eagle2"], "1/s", noun="tokens",
           kind="lookup")
    d.step("sglang_eagle3_speedup", "EAGLE-3's measured speedup at batch 1", SGLANG_MEASURED["eagle3"] / base, "1",
           noun="×", formula="{sglang_eagle3_tokens_per_s} / {sglang_baseline_tokens_per_s}")
    d.step("sglang_eagle2_speedup", "EAGLE-2's measured speedup at batch 1", SGLANG_MEASURED["eagle2"] / base, "1",
           noun="×", formula="{sglang_eagle2_tokens_per_s} / {sglang_baseline_tokens_per_s}")

    # --- monitoring: the acceptance rate below which it stops paying ---
    d.step("break_even_acceptance_small_batch", "Acceptance below which speculation loses at small batch",
           _acceptance_for(1.0, lambda x: expected_tokens(x, k) / (1 + k * c)), "1", percent=True,
           formula="a where (1 − a^({draft_tokens} + 1)) / (1 − a) = 1 + {draft_tokens} × {draft_cost}",
           kind="search")
    # The alert is set at the k the page recommends for the operating batch; when that is 0
    # (speculation off there), at the page's k, which is the one that would run.
    k_alert = k_op if k_op >= 1 else k
    d.step("alert_draft_tokens", "k the operating-batch alert is computed at (the best k there, or the page's if 0)",
           k_alert, "1", noun="", formula="{optimal_draft_tokens_at_operating_batch}" if k_op >= 1 else "{draft_tokens}")
    d.step("break_even_acceptance_at_operating_batch", "Acceptance below which it loses at the operating batch",
           _acceptance_for(1.0, lambda x: speedup_at(full, verify[k_alert], x, k_alert, c, batch)), "1", percent=True,
           formula="a where the speedup at {decode_batch} sequences with k = {alert_draft_tokens} = 1 "
                   "(100% = never pays)", kind="search")
    ra = p.regressed_acceptance
    d.step("expected_tokens_regressed", "Tokens per pass after the regression", expected_tokens(ra, k), "1",
           noun="tokens", formula="(1 − {regressed_acceptance}^({draft_tokens} + 1)) / (1 − {regressed_acceptance})")
    d.step("speedup_small_batch_regressed", "Small-batch speedup after the regression",
           expected_tokens(ra, k) / (1 + k * c), "1", noun="×",
           formula="{expected_tokens_regressed} / {iteration_cost_small_batch}")
    d.step("speedup_at_operating_batch_regressed", "Operating-batch speedup after the regression",
           speedup_at(full, full_verify, ra, k, c, batch), "1", noun="×",
           formula="{expected_tokens_regressed} × {decode_step_s} / {iteration_s}")
    small_r = expected_tokens(ra, k) / (1 + k * c)
    peak_r = speedup_at(full, full_verify, ra, k, c, batch)
    d.step("regressed_verdict", "What the regression does at night and at peak",
           "a slowdown at every hour" if small_r < 1 else
           ("a slowdown at peak that the quiet hours hide" if peak_r < 1 else
            "still a gain at both, only smaller: the holdout is what shows the lost margin"),
           formula="{speedup_small_batch_regressed} and {speedup_at_operating_batch_regressed} against 1",
           kind="verdict")
    return d
