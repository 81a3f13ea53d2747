"""A 200 ms p99 time-to-first-token SLO, spent as a budget.

The teaching order is the interview's: split the 200 ms into network, routing, queue, prefill
and first token; turn the prefill share into a prompt length (linear, then with attention);
chunk the prefill so one long prompt cannot block the tail; admit only what fits; then price
the queue's share in utilization, one queue per replica (M/M/1) against one pooled queue
(M/M/c, Erlang C), with the queue engine (`models/sim/queue.py`) confirming both.

Modelling choices (the page states each):
  * Prefill is the engine's (`Replica.prefill_s`, models/engine/roofline.py): FLOP for n
    uncached tokens = 2 x params x n + attention over the n (n - 1) / 2 earlier-token pairs
    (QK^T and AV, 2 x layers x heads x (qk + v width) FLOP a pair; for Llama-3-70B 4 x 80 x
    8,192), at the prefill MFU of the compute precision's peak, plus the tensor-parallel
    all-reduces of those n tokens (two per layer: latency plus the ring's bytes over NVLink).
  * Prefill runs on its own capacity (prefill workers, or a prefill-first scheduler) whether
    chunked or not; decode is sized elsewhere. One replica runs one prefill at a time: a server
    in queueing terms, with the mean prompt's prefill as its service time.
  * The queue allowance is a p-th percentile wait: P(W > t) <= 1 - p. Exponential service and
    Poisson arrivals (M/M/1, M/M/c). Real prompt lengths vary more than exponential, so the
    true tail is worse; the page says so.
  * The allowances add worst cases (p99 queue + worst prefill), which is conservative: the p99
    of a sum is below the sum of the p99s.
  * A chunk is charged at the END of the long prompt, where it attends to everything before it:
    the longest a short request can be held behind one chunk.
  * Routing, at the pooled fleet's size and load: random routing makes every replica an M/M/1
    queue; join-the-shortest-queue can do no better than one shared queue (M/M/c, its ideal
    bound); power of two choices is the supermarket model in its large-N mean-field limit
    (Mitzenmacher 2001): a share rho^(2^i - 1) of queues hold at least i requests, an arrival
    joins the shorter of two sampled queues, so it finds k ahead with probability
    s_k^2 - s_(k+1)^2 and waits an Erlang(k, mu) time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Annotated

import numpy as np
from pydantic import model_validator

from models.core import Derivation, Knob, StrictModel
from models.engine.knobs import EngineKnobs, accelerator, replica, subset, with_defaults, without
from models.engine.record import record_model
from models.engine import serving as sv
from models.engine.roofline import Replica
from models.engine.serving import Served, served_problem
from models.engine.serving_knobs import RequestKnobs, SloKnobs
from models.serving.serving_platform import record_trtllm_anchor
from models.validation_steps import accuracy_steps
from models.sim import queue
from models.units import format_number, format_quantity


class _TtftKnobs(StrictModel):
    slo_ms: Annotated[
        float,
        Knob("TTFT SLO", "ms", 50, 2000, 5, log=True,
             help="Time to first token the SLO promises, measured at the client.", draw=(150, 1000)),
    ] = 200
    slo_percentile: Annotated[
        float,
        Knob("SLO percentile", "", 0.9, 0.9999, 0.001, percent=True,
             help="Share of requests that must meet the SLO (99% is p99).", draw=(0.95, 0.999)),
    ] = 0.99
    network_ms: Annotated[
        float,
        Knob("Network", "ms", 0, 300, 1,
             help="Client to edge and back: the request in, the first token out (one round trip).",
             draw=(10, 80)),
    ] = 40
    routing_ms: Annotated[
        float,
        Knob("Gateway and routing", "ms", 0, 100, 1,
             help="Auth, rate limit, tokenization, admission check and replica choice.", draw=(2, 20)),
    ] = 10
    queue_budget_ms: Annotated[
        float,
        Knob("Queue allowance", "ms", 1, 1000, 1, log=True,
             help="Wait for a prefill slot that the SLO percentile may reach.", draw=(20, 100)),
    ] = 50
    first_token_ms: Annotated[
        float,
        Knob("First token out", "ms", 0, 200, 1,
             help="Sample the first token, hand the KV to decode, flush the stream.", draw=(5, 40)),
    ] = 20
    mean_prompt_tokens: Annotated[
        int,
        Knob("Mean prompt", "tokens", 50, 16_000, 1, log=True,
             help="Average uncached prompt tokens per request: sets the prefill service time.",
             draw=(300, 4000)),
    ] = 1000
    long_prompt_tokens: Annotated[
        int,
        Knob("Long prompt in the mix", "tokens", 1000, 128_000, 1, log=True,
             help="A long prompt (RAG, a codebase, a transcript) that shares the prefill workers.",
             draw=(8000, 128_000)),
    ] = 32_000
    chunk_tokens: Annotated[
        int,
        Knob("Prefill chunk", "tokens", 64, 8192, 1, log=True,
             help="Tokens per prefill iteration; the scheduler can switch requests between chunks.",
             draw=(256, 8192), draw_choices=(256, 512, 1024, 2048, 4096, 8192)),
    ] = 512
    arrival_rps: Annotated[
        float,
        Knob("Arrival rate", "req/s", 1, 2000, 1, log=True,
             help="Requests per second in this SLO class, all replicas.", draw=(20, 500)),
    ] = 100



# The decode side's two knobs, as the engine's request and SLO groups declare them.
_DecodeOutput = subset(RequestKnobs, "_DecodeOutput", output_tokens=400)
_DecodeSlo = subset(SloKnobs, "_DecodeSlo", tpot_target_ms=50, target_utilization=0.7)


# TTFT is prefill and queueing; the decode side, sized beside it, runs at the engine's default decode
# MFU, fixed cost per step and usable HBM (no knob of those moves a TTFT figure).
class Params(without(with_defaults(EngineKnobs, tp_degree=8), "usable_hbm_fraction", "decode_mfu", "step_overhead_ms"),
             _DecodeSlo, _DecodeOutput, _TtftKnobs):
    """The budget, the prompts and the traffic, then the engine: a tensor-parallel group of eight
    runs one prefill at a time."""

    @model_validator(mode="after")
    def _feasible(self) -> "Params":
        spent = self.network_ms + self.routing_ms + self.queue_budget_ms + self.first_token_ms
        if spent > self.slo_ms - 1:
            raise ValueError(
                f"Network, routing, queue and first-token allowances add up to {spent:,.0f} ms, which leaves "
                f"less than 1 ms of the {self.slo_ms:,.0f} ms SLO for prefill. Shrink an allowance or loosen the SLO."
            )
        why = served_problem(_decode_side(self))
        if why:
            raise ValueError("The decode side cannot serve this class: " + why)
        return self


def _decode_side(p) -> Served:
    """Decode for this class: the mean prompt's KV plus its output, each token within the TPOT target."""
    return Served(replica(p), p.mean_prompt_tokens, p.output_tokens, 0.0, p.tpot_target_ms / 1000)


# ---------------------------------------------------------------------------------------------
# Closed forms, shared by solve, simulate and the tests


def max_tokens_within(r: Replica, budget_s: float, cached: float = 0.0) -> tuple[float, int]:
    """(root before the floor, largest whole n) with `r.prefill_s(n, cached)` <= budget_s.

    The engine's prefill time is a quadratic in n (weight FLOP and all-reduces linear, the causal
    attention pairs quadratic), so three of its values give the coefficients and the root is
    closed-form; the floor is then checked against prefill_s itself."""
    f1, f2, f3 = (r.prefill_s(n, cached) for n in (1.0, 2.0, 3.0))
    c2 = (f3 - 2 * f2 + f1) / 2
    c1 = f2 - f1 - 3 * c2
    c0 = f1 - c1 - c2
    room = budget_s - c0
    if room <= 0 or c1 + c2 > room:  # not even one token fits
        return (max(0.0, room / max(c1 + c2, 1e-300)), 0)
    # n = 2 room / (c1 + sqrt(c1^2 + 4 c2 room)): the positive root, safe when c2 is tiny
    root = 2 * room / (c1 + math.sqrt(c1 * c1 + 4 * c2 * room)) if c2 > 0 else room / c1
    n = math.floor(root + 1e-9)
    while n > 0 and r.prefill_s(n, cached) > budget_s:
        n -= 1
    while r.prefill_s(n + 1, cached) <= budget_s:
        n += 1
    return root, n


def erlang_c(c: int, a: float) -> float:
    """Erlang C from the queue engine (stable for large pools: it uses the Erlang B recursion)."""
    return queue.erlang_c_wait_probability(c, a)


def mm1_wait_tail(rho: float, mu: float, t: float) -> float:
    """M/M/1: P(W > t) = rho e^{-(mu - lambda) t}."""
    return rho * math.exp(-mu * (1 - rho) * t)


def mmc_wait_tail(c: int, lam: float, mu: float, t: float) -> float:
    """M/M/c: P(W > t) = C(c, a) e^{-(c mu - lambda) t}, C from Erlang C."""
    if lam >= c * mu:
        return 1.0
    return erlang_c(c, lam / mu) * math.exp(-(c * mu - lam) * t)


def mmc_wait_quantile(c: int, lam: float, mu: float, tail: float) -> float:
    """The wait exceeded by a share `tail` of customers (0 when fewer than that wait at all)."""
    if lam >= c * mu:
        return math.inf
    p_wait = erlang_c(c, lam / mu) if c > 1 else lam / mu
    if p_wait <= tail:
        return 0.0
    return math.log(p_wait / tail) / (c * mu - lam)


def max_utilization_mm1(mu: float, t: float, tail: float) -> float:
    """Largest rho with rho e^{-mu (1 - rho) t} <= tail (increasing in rho, so bisection)."""
    lo, hi = tail, 1.0  # at rho = tail the tail is tail x e^{...} <= tail; at rho -> 1 it tends to 1
    for _ in range(60):
        mid = (lo + hi) / 2
        if mm1_wait_tail(mid, mu, t) <= tail:
            lo = mid
        else:
            hi = mid
    return lo


def min_pooled_servers(lam: float, mu: float, t: float, tail: float) -> int:
    """Fewest servers c with C(c, a) e^{-(c mu - lambda) t} <= tail (decreasing in c: bisection)."""
    a = lam / mu
    lo = math.floor(a) + 1  # the smallest stable pool
    if mmc_wait_tail(lo, lam, mu, t) <= tail:
        return lo
    # At (c mu - lambda) t >= ln(1 / tail) the exponential alone is <= tail (C <= 1).
    hi = max(lo + 1, math.ceil((lam + math.log(1 / tail) / t) / mu))
    while lo + 1 < hi:
        mid = (lo + hi) // 2
        if mmc_wait_tail(mid, lam, mu, t) <= tail:
            hi = mid
        else:
            lo = mid
    return hi


def mm1_wait_quantile(rho: float, mu: float, tail: float) -> float:
    """M/M/1: the wait exceeded by a share `tail`: ln(rho / tail) / (mu (1 - rho)), 0 when rho <= tail."""
    if rho >= 1:
        return math.inf
    return max(0.0, math.log(rho / tail) / (mu * (1 - rho))) if rho > 0 else 0.0


def supermarket_tails(rho: float) -> list[float]:
    """s_k = rho^(2^k - 1), k = 0, 1, ...: the share of queues holding at least k requests under
    power of two choices, in the large-N limit; cut where s_k^2 < 1e-18."""
    out = [1.0]
    k = 1
    while True:
        s = rho ** (2 ** k - 1)
        out.append(s)
        if s * s < 1e-18 or k > 60:
            return out
        k += 1


@lru_cache(maxsize=4096)  # sweeps re-solve at the same load many times
def power_of_two_wait_tail(rho: float, mu: float, t: float) -> float:
    """P(W > t) under power of two choices (mean field): sum over k >= 1 of
    (s_k^2 - s_(k+1)^2) P(Erlang(k, mu) > t), with P(Erlang(k, mu) > t) = e^-x (1 + x + ... +
    x^(k-1) / (k-1)!), x = mu t, built up term by term as k grows."""
    if rho >= 1:
        return 1.0
    x = mu * t
    term = partial = 1.0  # x^(k-1) / (k-1)! and the Erlang(k) sum, at k = 1
    total, s_k, k = 0.0, rho, 1
    while True:
        s_next = rho ** (2 ** (k + 1) - 1)
        total += (s_k * s_k - s_next * s_next) * partial
        if s_next * s_next < 1e-18 or k > 60:
            return math.exp(-x) * (total + s_next * s_next * partial)  # the rest, counted at its least
        term *= x / k
        partial += term
        s_k, k = s_next, k + 1


@lru_cache(maxsize=4096)
def power_of_two_wait_quantile(rho: float, mu: float, tail: float) -> float:
    """The wait exceeded by a share `tail` under power of two choices (0 when fewer wait at all)."""
    if rho >= 1:
        return math.inf
    if rho * rho <= tail:  # P(W > 0) = s_1^2 = rho^2
        return 0.0
    lo, hi = 0.0, 1.0 / mu
    while power_of_two_wait_tail(rho, mu, hi) > tail:
        lo, hi = hi, 2 * hi
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if power_of_two_wait_tail(rho, mu, mid) <= tail else (mid, hi)
    return hi


def power_of_two_mean_sojourn(rho: float, mu: float) -> tuple[float, int]:
    """(mean time in system, terms summed): Little's law on the mean queue, sum of s_i over
    i >= 1, over the per-queue rate rho mu: (1/mu) sum_{i>=1} rho^(2^i - 2)."""
    s = supermarket_tails(rho)
    return sum(s[i] for i in range(1, len(s))) / (rho * mu), len(s) - 1


@lru_cache(maxsize=4096)
def min_replicas_power_of_two(lam: float, mu: float, t: float, tail: float, least: int) -> int:
    """Fewest replicas N, and at least `least`, with P(W > t) <= tail under power of two choices at
    rho = lam / (N mu); the tail falls as N grows: double from `least`, then bisect."""
    hi = max(math.floor(lam / mu) + 1, least)  # the fewest stable replicas, and at least `least`
    lo = hi - 1  # the answer is above lo: lo is below `least`, or unstable
    while power_of_two_wait_tail(lam / (hi * mu), mu, t) > tail:
        lo, hi = hi, 2 * hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if power_of_two_wait_tail(lam / (mid * mu), mu, t) <= tail else (mid, hi)
    return hi


# ---------------------------------------------------------------------------------------------


# The positive root of allreduce_fixed + linear × n + quadratic × n² = budget, in the form that holds
# when the quadratic part is 0 (and keeps the square root's argument a plain number); a budget the latency alone overruns leaves room for no token.
_ROOM = "max(0 s, {budget} − {{allreduce_fixed_s}})"
_ROOT = ("2 × " + _ROOM + " / {{prefill_s_per_token}} / (1 + sqrt(1 + 4 × {{prefill_s_per_token_squared}} × "
         + _ROOM + " / ({{prefill_s_per_token}})²))")
_FLOOR_ROOT = "floor(" + _ROOT + ")"


def solve(p: Params) -> Derivation:
    d = Derivation(p)

    # --- the budget ---
    d.step("slo_s", "TTFT SLO", p.slo_ms / 1000, "s", formula="{slo_ms}")
    d.step("network_s", "Network: request in, first token out", p.network_ms / 1000, "s",
           formula="{network_ms}")
    d.step("routing_s", "Gateway, admission and routing", p.routing_ms / 1000, "s", formula="{routing_ms}")
    qb = d.step("queue_budget_s", "Queue allowance at the SLO percentile", p.queue_budget_ms / 1000, "s",
                formula="{queue_budget_ms}")
    d.step("first_token_s", "First token out: sample, hand off, flush", p.first_token_ms / 1000, "s",
           formula="{first_token_ms}")
    budget = d.step(
        "prefill_budget_s", "Left for prefill",
        (p.slo_ms - p.network_ms - p.routing_ms - p.queue_budget_ms - p.first_token_ms) / 1000, "s",
        formula="{slo_s} − {network_s} − {routing_s} − {queue_budget_s} − {first_token_s}",
    )
    d.step("prefill_share_of_slo", "Share of the SLO left for prefill", budget / (p.slo_ms / 1000), "1",
           percent=True, formula="{prefill_budget_s} / {slo_s}")
    # How far each allowance may grow before prefill gets nothing: where the page's sweeps of them end.
    d.step("network_s_at_zero_prefill", "Round trip that leaves nothing for prefill", p.network_ms / 1000 + budget,
           "s", formula="{network_s} + {prefill_budget_s}")
    d.step("queue_budget_s_at_zero_prefill", "Queue allowance that leaves nothing for prefill", qb + budget, "s",
           formula="{queue_budget_s} + {prefill_budget_s}")

    # --- the prompt the budget allows ---
    r, hw = replica(p), accelerator(p)
    record_model(d, p)
    d.step("gpu_peak_flops", f"{hw.name} dense {p.compute_precision} peak", hw.peak(p.compute_precision), "FLOP/s")
    d.step("replica_gpus", "GPUs in one replica", p.tp_degree, "1", noun="GPU" if p.tp_degree == 1 else "GPUs",
           formula="{tp_degree}")
    fl = d.step("replica_prefill_flops", "Replica prefill compute at the prefill MFU", r.peak_flops * r.prefill_mfu,
                "FLOP/s", formula="{tp_degree} × {gpu_peak_flops} FLOP/s × {prefill_mfu}")
    w_tok = d.step("weight_flops_per_token", "Weight FLOP per prompt token (2 × active parameters)",
                   r.weight_flops_per_token, "FLOP", formula="2 FLOP × {active_params}")
    attn = d.step("attention_flops_per_position", "Attention FLOP per token per earlier token (QK^T and AV)",
                  r.attention_flops_per_position, "FLOP",
                  note="0 when attention FLOP are not counted (the textbook 2 × parameters per token).")
    d.step("attention_prefill_coefficient", "Attention FLOP of a prefill per token² (causal: half the square)",
           attn / 2, "FLOP", formula="{attention_flops_per_position} / 2")
    ar0 = r.allreduce_s(0)
    d.step("allreduce_fixed_s", "Tensor-parallel all-reduces of one prefill, latency part", ar0, "s",
           formula=f"{r.model.layers} layers × 2 × {{allreduce_latency_us}} µs" if r.tp > 1 else "",
           note="None on one accelerator." if r.tp == 1 else "")
    d.step("allreduce_per_token_s", "Their ring bytes per prompt token", r.allreduce_s(1) - ar0, "s",
           formula=(f"{r.model.layers} × 2 × 2 × ({r.tp} − 1) / {r.tp} × {r.model.d_model} × 2 B / "
                    f"{hw.link_Bps_per_direction:,.0f} B/s") if r.tp > 1 else "",
           note="None on one accelerator." if r.tp == 1 else "")
    budget_flops = d.step("prefill_budget_flops", "FLOP the prefill budget buys", budget * fl, "FLOP",
                          formula="{prefill_budget_s} × {replica_prefill_flops}")
    d.step("max_prompt_tokens_linear", "Longest prompt, weights only (linear)",
           math.floor(budget_flops / w_tok + 1e-9), "1", noun="tokens",
           formula="floor({prefill_budget_flops} / {weight_flops_per_token})")
    # FLOP alone: the largest n with (w - a/2) n + (a/2) n² within the budget's FLOP
    b_lin = w_tok - attn / 2
    n_flop = (2 * budget_flops / (b_lin + math.sqrt(b_lin * b_lin + 2 * attn * budget_flops))
              if attn else budget_flops / w_tok)
    d.step("max_prompt_tokens_with_attention_continuous",
           "Longest prompt, attention FLOP included, before the floor: the root of "
           "weight FLOP × n + coefficient × n × (n − 1) = the budget's FLOP", n_flop, "1", noun="tokens",
           formula="2 × {prefill_budget_flops} / ({weight_flops_per_token} − {attention_prefill_coefficient}) / "
                   "(1 + sqrt(1 + 4 × {attention_prefill_coefficient} × {prefill_budget_flops} / "
                   "({weight_flops_per_token} − {attention_prefill_coefficient})²))")
    d.step("max_prompt_tokens_with_attention", "Longest prompt, attention FLOP included", math.floor(n_flop + 1e-9),
           "1", noun="tokens", formula="floor({max_prompt_tokens_with_attention_continuous})")
    # The engine's prefill time is all-reduce latency + linear × n + quadratic × n²: its two coefficients.
    d.step("prefill_s_per_token", "Prefill time per prompt token, the linear part (weights and ring bytes, "
           "less attention's −n)", (w_tok - attn / 2) / fl + (r.allreduce_s(1) - ar0), "s",
           formula="({weight_flops_per_token} − {attention_prefill_coefficient}) / {replica_prefill_flops} + "
                   "{allreduce_per_token_s}")
    d.step("prefill_s_per_token_squared", "Prefill time per token², the attention part", attn / 2 / fl, "s",
           formula="{attention_prefill_coefficient} / {replica_prefill_flops}")
    root, n_max = max_tokens_within(r, budget)
    d.step("max_prompt_tokens_continuous", "Longest prompt the engine prefills in the budget, before the floor: the "
           "root of all-reduce latency + linear × n + quadratic × n² = the budget",
           root, "1", noun="tokens", formula=_ROOT.format(budget="{prefill_budget_s}"))
    d.step("max_prompt_tokens", "Longest prompt the engine prefills in the budget (all-reduces included)", n_max,
           "1", noun="tokens", formula="floor({max_prompt_tokens_continuous})")
    at_max = d.step("tokens_at_max", "That prompt, at least one token (the two shares below are taken at it)",
                    max(n_max, 1), "1", noun="tokens", formula="max(1, {max_prompt_tokens})")
    d.step("prefill_flops_at_max", "That prefill's FLOP", r.prefill_flops(at_max), "FLOP",
           formula="{weight_flops_per_token} × {tokens_at_max} + {attention_prefill_coefficient} × "
                   "{tokens_at_max} × ({tokens_at_max} − 1)")
    d.step("prefill_s_at_max", "That prefill's time", r.prefill_s(at_max), "s",
           formula="{prefill_flops_at_max} / {replica_prefill_flops} + {allreduce_fixed_s} + {tokens_at_max} × "
                   "{allreduce_per_token_s}")
    d.step("attention_share_at_max", "Attention's share of that prefill's FLOP",
           attn * at_max * (at_max - 1) / 2 / r.prefill_flops(at_max), "1", percent=True,
           formula="{attention_prefill_coefficient} × {tokens_at_max} × ({tokens_at_max} − 1) / {prefill_flops_at_max}")
    d.step("allreduce_share_at_max", "All-reduces' share of that prefill's time",
           r.allreduce_s(at_max) / r.prefill_s(at_max), "1", percent=True,
           formula="({allreduce_fixed_s} + {tokens_at_max} × {allreduce_per_token_s}) / {prefill_s_at_max}")
    d.step("attention_equals_weights_tokens", "Prompt length where attention FLOP equal weight FLOP",
           (2 * w_tok / attn + 1) if attn else math.inf, "1", noun="tokens",
           formula="{weight_flops_per_token} / {attention_prefill_coefficient} + 1" if attn else "",
           note="" if attn else "Never: attention FLOP are not counted.")
    d.step("tokens_for_whole_slo", "Prompt whose prefill alone takes the whole SLO",
           max_tokens_within(r, p.slo_ms / 1000)[1], "1", noun="tokens",
           formula=_FLOOR_ROOT.format(budget="{slo_s}"))

    # --- one long prompt in the tail, whole and chunked ---
    long_n = p.long_prompt_tokens
    long_s = d.step("long_prompt_prefill_s", "Prefill of the long prompt, in one piece", r.prefill_s(long_n), "s",
                    formula="({weight_flops_per_token} × {long_prompt_tokens} + {attention_prefill_coefficient} × "
                            "{long_prompt_tokens} × ({long_prompt_tokens} − 1)) / {replica_prefill_flops} + "
                            "{allreduce_fixed_s} s + {long_prompt_tokens} × {allreduce_per_token_s} s")
    d.step("long_prompt_slo_multiple", "That prefill over the whole SLO", long_s / (p.slo_ms / 1000), "1", noun="×",
           formula="{long_prompt_prefill_s} s / {slo_s} s")
    c_tok = d.step("chunk_tokens_effective", "Chunk (no larger than the long prompt)", min(p.chunk_tokens, long_n), "1",
                   noun="tokens", formula="min({chunk_tokens}, {long_prompt_tokens})")
    d.step("long_prompt_chunks_continuous", "Chunks in the long prompt, before the ceiling", long_n / c_tok, "1",
           noun="chunks", formula="{long_prompt_tokens} / {chunk_tokens_effective}")
    d.step("long_prompt_chunks", "Chunks in the long prompt", math.ceil(long_n / c_tok - 1e-9), "1", noun="chunks",
           formula="ceil({long_prompt_chunks_continuous})")
    d.step("first_chunk_time_s", "First chunk (nothing before it to attend to)", r.prefill_s(c_tok), "s",
           formula="({weight_flops_per_token} × {chunk_tokens_effective} + {attention_prefill_coefficient} × "
                   "{chunk_tokens_effective} × ({chunk_tokens_effective} − 1)) / {replica_prefill_flops} + "
                   "{allreduce_fixed_s} + {chunk_tokens_effective} × {allreduce_per_token_s}")
    chunk_s = d.step(
        "chunk_time_s", "Last chunk: attends to the whole prompt before it (the longest a request waits behind one)",
        r.prefill_s(c_tok, long_n - c_tok), "s",
        formula="{chunk_tokens_effective} × ({weight_flops_per_token} + {attention_flops_per_position} × "
                "({long_prompt_tokens} − {chunk_tokens_effective} / 2 − 1 / 2)) / {replica_prefill_flops} + "
                "{allreduce_fixed_s} s + {chunk_tokens_effective} × {allreduce_per_token_s} s",
    )
    d.step("chunk_share_of_prefill_budget", "One chunk's share of the prefill budget", chunk_s / budget, "1",
           percent=True, formula="{chunk_time_s} / {prefill_budget_s}")
    d.step("gpu_hbm_Bps", f"{hw.name} HBM bandwidth", hw.hbm_Bps, "B/s")
    w_read = d.step("weight_read_s", "Reading every weight once (each iteration pays it)",
                    r.weight_bytes / r.achieved_hbm_Bps, "s",
                    formula="{weight_bytes} B / ({tp_degree} × {gpu_hbm_Bps} B/s × {hbm_efficiency})")
    d.step("chunk_floor_tokens_continuous", "Chunk whose weight FLOP take as long as the weight read",
           w_read * fl / w_tok, "1", noun="tokens",
           formula="{weight_read_s} s × {replica_prefill_flops} / {weight_flops_per_token}")
    d.step("chunk_floor_tokens", "Smallest chunk that keeps an iteration compute-bound",
           math.ceil(w_read * fl / w_tok - 1e-9), "1", noun="tokens", formula="ceil({chunk_floor_tokens_continuous})")

    # --- admission control ---
    admit_budget = d.step("admission_prefill_budget_s", "Prefill budget after one chunk of someone else's prompt",
                          budget - chunk_s, "s", formula="{prefill_budget_s} s − {chunk_time_s} s")
    n_admit = d.step("max_admissible_prompt_tokens", "Longest prompt admission control accepts into this SLO class",
                     max_tokens_within(r, admit_budget)[1], "1", noun="tokens",
                     formula=_FLOOR_ROOT.format(budget="{admission_prefill_budget_s}"))
    # A request can land behind one chunk of the long prompt; if that chunk leaves no room for even
    # a one-token prefill, the SLO holds for no request at all, however short.
    def no_prompt_fits() -> str:
        chunk = (f"the last {format_number(c_tok)}-token chunk of the {format_number(long_n)}-token prompt takes "
                 f"{format_quantity(chunk_s, 's')}")
        if chunk_s >= budget:
            left = (f"{chunk}, more than the {format_quantity(budget, 's')} of the {format_quantity(p.slo_ms, 'ms')} "
                    "SLO left for prefill")
        else:
            left = (f"{chunk} of the {format_quantity(budget, 's')} left for prefill, and the "
                    f"{format_quantity(admit_budget, 's')} after it is less than a one-token prefill "
                    f"({format_quantity(r.prefill_s(1), 's')})")
        return (f"No request can meet this SLO behind a chunk: {left}, so admission control can accept no "
                "prompt at all. Use smaller chunks, loosen the SLO or shrink an allowance, or send long prompts "
                "to their own workers.")

    d.require("max_admissible_prompt_tokens", n_admit >= 1, no_prompt_fits)

    # --- the utilization the queue allowance costs ---
    svc = d.step("service_time_s", "Prefill of the mean prompt (one replica's service time)",
                 r.prefill_s(p.mean_prompt_tokens), "s",
                 formula="({weight_flops_per_token} × {mean_prompt_tokens} + {attention_prefill_coefficient} × "
                         "{mean_prompt_tokens} × ({mean_prompt_tokens} − 1)) / {replica_prefill_flops} + "
                         "{allreduce_fixed_s} s + {mean_prompt_tokens} × {allreduce_per_token_s} s")
    d.step("mean_prompt_verdict", "Does the mean prompt fit under the admission cap?",
           "it fits, so the fleet below serves the typical request inside the SLO"
           if p.mean_prompt_tokens <= n_admit else
           "it does not fit: this class cannot meet the SLO for its typical request. Split it by prompt length or add compute per replica; the fleet below sizes "
           "throughput only, not the SLO",
           formula="{mean_prompt_tokens} against {max_admissible_prompt_tokens}", kind="verdict")
    mu = d.step("service_rate_per_s", "Prefills one replica completes per second", 1 / svc, "1/s", noun="prefills",
                formula="1 / {service_time_s} s")
    lam = p.arrival_rps
    a = d.step("offered_load", "Offered load: replicas' worth of prefill work", lam * svc, "1", noun="replicas",
               formula="{arrival_rps} req/s × {service_time_s} s")
    tail = d.step("tail_probability", "Share of requests allowed past the queue allowance", 1 - p.slo_percentile, "1",
                  percent=True, formula="1 − {slo_percentile}")
    d.step("queue_budget_in_services", "Queue allowance in service times", qb * mu, "1", noun="prefills",
           formula="{queue_budget_s} × {service_rate_per_s}")
    rho1 = max_utilization_mm1(mu, qb, tail)
    d.step("max_utilization_mm1", "Highest utilization of a replica with its own queue (M/M/1)", rho1, "1",
           percent=True, formula="largest ρ with ρ × e^(−{service_rate_per_s} × (1 − ρ) × {queue_budget_s}) ≤ {tail_probability}",
           kind="search")
    d.step("replicas_separate_continuous", "Replicas' worth of work at that utilization, before the ceiling",
           a / rho1, "1", noun="replicas", formula="{offered_load} / {max_utilization_mm1}")
    sep = d.step("replicas_separate", "Replicas, one queue each (random or sticky routing)",
                 math.ceil(a / rho1 - 1e-9), "1", noun="replicas", formula="ceil({replicas_separate_continuous})")
    c = min_pooled_servers(lam, mu, qb, tail)
    pooled = d.step("replicas_pooled", "Replicas behind one shared queue (M/M/c)", c, "1", noun="replicas",
                    formula="fewest c with C(c, {offered_load}) × e^(−(c × {service_rate_per_s} − {arrival_rps}) × "
                            "{queue_budget_s}) ≤ {tail_probability}", kind="search")
    util_pooled = d.step("max_utilization_pooled", "Utilization of the pooled replicas", a / c, "1", percent=True,
                         formula="{offered_load} / {replicas_pooled}")
    d.step("pooled_wait_probability", "Share of requests that wait at all in the pool (Erlang C)",
           erlang_c(c, a), "1", percent=True, formula="C({replicas_pooled}, {offered_load})", kind="lookup",
           note="Erlang C, computed by the Erlang B recursion (the queueing tables' figure).")
    d.step("pooled_tail_at_budget", "Share of pooled requests past the queue allowance",
           mmc_wait_tail(c, lam, mu, qb), "1", percent=True,
           formula="{pooled_wait_probability} × exp(−({replicas_pooled} × {service_rate_per_s} − {arrival_rps}) × "
                   "{queue_budget_s})")
    d.step("pooled_quantile_wait_s", "Pooled wait at the SLO percentile", mmc_wait_quantile(c, lam, mu, tail), "s",
           formula="max(0 s, ln({pooled_wait_probability} / {tail_probability}) / ({replicas_pooled} × "
                   "{service_rate_per_s} − {arrival_rps}))")
    d.step("pooled_wait_probability_one_fewer", "Share that would wait at all with one pooled replica fewer",
           erlang_c(c - 1, a) if c > 1 else 1.0, "1", percent=True,
           formula="C({replicas_pooled} − 1, {offered_load})",
           kind="lookup", note="Erlang C again (everyone waits when the smaller pool cannot keep up).")
    d.step("pooled_tail_after_losing_one", "Share past the queue allowance with one pooled replica fewer",
           mmc_wait_tail(c - 1, lam, mu, qb) if c > 1 else 1.0, "1", percent=True,
           formula="min(100%, {pooled_wait_probability_one_fewer} × exp(−(({replicas_pooled} − 1) × "
                   "{service_rate_per_s} − {arrival_rps}) × {queue_budget_s}))")
    d.step("pooling_ratio", "Separate queues over one pooled queue", sep / pooled, "1", noun="×",
           formula="{replicas_separate} / {replicas_pooled}")
    rho_same = util_pooled
    d.step("mm1_quantile_wait_at_pooled_util_s",
           "Wait at the SLO percentile for a replica with its own queue, run at the pooled utilization",
           mmc_wait_quantile(1, rho_same * mu, mu, tail), "s",
           formula="max(0 s, ln({max_utilization_pooled} / {tail_probability}) / ({service_rate_per_s} × "
                   "(1 − {max_utilization_pooled})))")

    # --- routing at the pooled fleet: random (M/M/1 each), power of two choices, one queue (JSQ ideal) ---
    rho = d.step("routing_utilization", "Utilization of each replica in the routing comparison (the pooled fleet's)",
                 a / c, "1", percent=True, formula="{offered_load} / {replicas_pooled}")
    # The mean field is a large-N limit: on a small fleet it can promise better than one shared queue
    # of the same size, which no router beats, so the shared queue's figure bounds it from below.
    clamp = " On a small fleet, where the large-N limit would beat one shared queue, the shared queue's figure."
    for pct in (95, 99):
        q = 1 - pct / 100
        d.step(f"random_wait_p{pct}_s", f"p{pct} wait, random routing (M/M/1 at the pool's utilization)",
               mm1_wait_quantile(rho, mu, q), "s",
               formula=f"max(0 s, ln({{routing_utilization}} / {q:g}) / ({{service_rate_per_s}} × "
                       "(1 − {routing_utilization})))")
        pooled_q = d.step(f"pooled_wait_p{pct}_s",
                          f"p{pct} wait, one shared queue (M/M/c: join-the-shortest-queue's ideal)",
                          mmc_wait_quantile(c, lam, mu, q), "s",
                          formula=f"max(0 s, ln({{pooled_wait_probability}} / {q:g}) / ({{replicas_pooled}} × "
                                  "{service_rate_per_s} − {arrival_rps}))")
        d.step(f"power_of_two_wait_p{pct}_s", f"p{pct} wait, power of two choices (mean field)",
               max(power_of_two_wait_quantile(rho, mu, q), pooled_q), "s",
               formula=f"least t with Σ_k (s_k² − s_(k+1)²) P(Erlang(k, {{service_rate_per_s}}) > t) ≤ {q:g}, "
                       "s_k = ρ^(2^k − 1) at ρ = {routing_utilization}", kind="search",
               note="The supermarket model's large-N limit (Mitzenmacher 2001): exact as the fleet grows." + clamp)
    d.step("power_of_two_wait_probability", "Share that waits at all, power of two choices (ρ², mean field)",
           max(rho * rho, erlang_c(c, a)), "1", percent=True,
           formula="max({routing_utilization}^2, {pooled_wait_probability})")
    d.step("random_mean_sojourn_s", "Mean time in queue and prefill, random routing (M/M/1)",
           1 / (mu * (1 - rho)), "s", formula="1 / ({service_rate_per_s} × (1 − {routing_utilization}))")
    pooled_mean = d.step("pooled_mean_sojourn_s", "Mean time in queue and prefill, one shared queue (M/M/c)",
                         erlang_c(c, a) / (c * mu - lam) + 1 / mu, "s",
                         formula="{pooled_wait_probability} / ({replicas_pooled} × {service_rate_per_s} − "
                                 "{arrival_rps}) + 1 / {service_rate_per_s}")
    p2_mean, terms = power_of_two_mean_sojourn(rho, mu)
    series = " + ".join(["1"] + [f"{{routing_utilization}}^{2 ** i - 2}" for i in range(2, terms + 1)])
    d.step("power_of_two_mean_sojourn_s", "Mean time in queue and prefill, power of two choices (mean field)",
           max(p2_mean, pooled_mean), "s",
           formula=f"max(({series}) / {{service_rate_per_s}}, {{pooled_mean_sojourn_s}})",
           note="Σ_(i≥1) ρ^(2^i − 2) / μ, the terms after these below 1e-18." + clamp)
    for who, name in (("random", "random routing"), ("power_of_two", "power of two choices"),
                      ("pooled", "one shared queue")):
        d.step(f"ttft_p99_bound_{who}_s", f"p99 TTFT bound, {name}: the allowances with its p99 wait for the queue's",
               p.network_ms / 1000 + p.routing_ms / 1000 + d.value(f"{who}_wait_p99_s") + budget
               + p.first_token_ms / 1000, "s",
               formula=f"{{network_s}} + {{routing_s}} + {{{who}_wait_p99_s}} + {{prefill_budget_s}} + "
                       "{first_token_s}")
    # The same comparison at the page's own SLO percentile (the p95/p99 steps above stay for the drills).
    d.step("random_wait_slo_s", "Wait at the SLO percentile, random routing (M/M/1 at the pool's utilization)",
           mm1_wait_quantile(rho, mu, tail), "s",
           formula="max(0 s, ln({routing_utilization} / {tail_probability}) / ({service_rate_per_s} × "
                   "(1 − {routing_utilization})))")
    pooled_slo = mmc_wait_quantile(c, lam, mu, tail)
    d.step("power_of_two_wait_slo_s", "Wait at the SLO percentile, power of two choices (mean field)",
           max(power_of_two_wait_quantile(rho, mu, tail), pooled_slo), "s",
           formula="least t with Σ_k (s_k² − s_(k+1)²) P(Erlang(k, {service_rate_per_s}) > t) ≤ {tail_probability}, "
                   "s_k = ρ^(2^k − 1) at ρ = {routing_utilization}", kind="search",
           note="The supermarket model's large-N limit (Mitzenmacher 2001)." + clamp)
    fixed = p.network_ms / 1000 + p.routing_ms / 1000 + budget + p.first_token_ms / 1000
    for who, name, wait_key in (("random", "random routing", "random_wait_slo_s"),
                                ("power_of_two", "power of two choices", "power_of_two_wait_slo_s"),
                                ("pooled", "one shared queue", "pooled_quantile_wait_s")):
        d.step(f"ttft_slo_bound_{who}_s", f"TTFT bound at the SLO percentile, {name}",
               fixed + d.value(wait_key), "s",
               formula=f"{{network_s}} + {{routing_s}} + {{{wait_key}}} + {{prefill_budget_s}} + {{first_token_s}}")
    pooled_bound = d.value("ttft_slo_bound_pooled_s")
    d.step("pooled_bound_verdict", "Does the shared queue's bound meet the SLO?",
           "which is within the SLO, and late binding gets it outright" if pooled_bound <= p.slo_ms / 1000 + 1e-12
           else "which is still over the SLO: no router fixes this fleet, it needs more replicas",
           formula="{ttft_slo_bound_pooled_s} against {slo_s}", kind="verdict")
    d.step("replicas_power_of_two", "Replicas, power of two choices (mean field)",
           min_replicas_power_of_two(lam, mu, qb, tail, pooled), "1", noun="replicas",
           formula="fewest N with P(W > {queue_budget_s}) ≤ {tail_probability} under power of two choices at "
                   "ρ = {offered_load} / N, and no fewer than {replicas_pooled}", kind="search",
           note="The mean field's large-N limit; never below the shared queue's fleet, which no router beats.")
    d.step("gpus_pooled", "GPUs behind the pooled queue", pooled * p.tp_degree, "1", noun="GPUs",
           formula="{replicas_pooled} × {tp_degree}")
    d.step("gpus_separate", "GPUs with a queue per replica", sep * p.tp_degree, "1", noun="GPUs",
           formula="{replicas_separate} × {tp_degree}")
    _record_decode_side(d, p, r, pooled * p.tp_degree)
    # The decode side's efficiencies on TensorRT-LLM's published 70B FP8 setup, beside what it measured.
    record_trtllm_anchor(d, p)
    _record_engine_chunk(d, p, r)
    acc = accuracy_steps()
    d.step("measured_tp2_prefill_speedup", "A 13B's prefill on two A100s against one, measured",
           acc.value("a100_13b_prefill_speedup"), "1", noun="×", kind="lookup",
           note="The accuracy page: kipply's FasterTransformer figures, 512-token prompts.")
    d.step("flat_mfu_tp2_speedup", "The same speed-up predicted with one flat MFU", acc.value("a100_13b_flat_speedup"),
           "1", noun="×", kind="lookup", note="The accuracy page, fit (a).")
    return d


ENGINE_CHUNK_TOKENS = 8192  # vLLM max_num_batched_tokens, SGLang chunked_prefill_size: H100 and H200


def _record_engine_chunk(d: Derivation, p: Params, r: Replica) -> None:
    """The tail chunk at the engines' default token budget, beside this page's chunk."""
    c = min(ENGINE_CHUNK_TOKENS, p.long_prompt_tokens)
    d.step("engine_chunk_tokens", "The engines' default step budget on an H100 or H200 (vLLM, SGLang)", c, "1", noun="tokens",
           kind="lookup", note="vLLM max_num_batched_tokens and SGLang chunked_prefill_size: 8,192 on an H100; "
                               "no larger than the long prompt here.")
    d.step("engine_chunk_time_s", "The long prompt's last chunk at that budget", r.prefill_s(c, p.long_prompt_tokens - c),
           "s", formula="{engine_chunk_tokens} × ({weight_flops_per_token} + {attention_flops_per_position} × "
                        "({long_prompt_tokens} − {engine_chunk_tokens} / 2 − 1 / 2)) / {replica_prefill_flops} + "
                        "{allreduce_fixed_s} s + {engine_chunk_tokens} × {allreduce_per_token_s} s")
    d.step("engine_chunk_share_of_prefill_budget", "That chunk's share of the prefill budget",
           d.value("engine_chunk_time_s") / d.value("prefill_budget_s"), "1", percent=True,
           formula="{engine_chunk_time_s} / {prefill_budget_s}")


def _record_decode_side(d: Derivation, p: Params, r: Replica, prefill_gpus: int) -> None:
    """Decode replicas for the same class, at the engine's default decode efficiencies: the fewest whose full
    batches, each step within the TPOT target, carry the class's output tokens."""
    s = _decode_side(p)
    ctx = s.decode_context_tokens
    d.step("decode_gpu_memory_bytes", f"{r.hw.name} HBM", r.hw.hbm_bytes, "B", kind="lookup")
    d.step("decode_usable_hbm_fraction", "Share of HBM usable for weights and KV (the engine's default)",
           r.usable_hbm_bytes / (p.tp_degree * r.hw.hbm_bytes), "1", percent=True, kind="lookup")
    d.step("decode_kv_room_bytes", "KV room on a decode replica after the weights", r.kv_room_bytes, "B",
           formula="{tp_degree} × {decode_gpu_memory_bytes} × {decode_usable_hbm_fraction} − {weight_bytes}")
    d.step("decode_kv_bytes_per_sequence", "KV of one request at its longest (mean prompt + output)",
           s.kv_bytes_per_sequence, "B", formula="{kv_bytes_per_token} × ({mean_prompt_tokens} + {output_tokens})")
    d.step("decode_batch_memory_cap", "Requests whose KV fits on a decode replica", s.batch_memory_cap, "1",
           noun="sequences", formula="floor({decode_kv_room_bytes} / {decode_kv_bytes_per_sequence})")
    d.step("decode_batch_tpot_cap", "Largest batch whose decode step meets the TPOT target", s.batch_tpot_cap, "1",
           noun="sequences", kind="search",
           formula="the largest B whose step (weight read, B × KV read or B × FLOP, all-reduces, fixed cost) "
                   "≤ {tpot_target_ms}")
    b = d.step("decode_batch", "Decode batch per replica: the tighter cap", s.derived_batch, "1", noun="sequences",
               formula="max(1, min({decode_batch_memory_cap}, {decode_batch_tpot_cap}))")
    d.step("decode_context_tokens", "Average context a decode step reads per sequence", ctx, "1", noun="tokens",
           formula="{mean_prompt_tokens} + {output_tokens} / 2")
    d.step("decode_kv_read_per_sequence_s", "Reading one sequence's KV at that context",
           r.kv_bytes_per_token * ctx / r.achieved_hbm_Bps, "s",
           formula="{kv_bytes_per_token} × {decode_context_tokens} / ({tp_degree} × {gpu_hbm_Bps} × {hbm_efficiency})")
    d.step("decode_mfu_default", "Decode MFU (the engine's default)", r.decode_mfu, "1", percent=True, kind="lookup")
    d.step("decode_compute_per_sequence_s", "FLOP side per sequence in the batch",
           r.decode_flops_per_token(ctx) / (r.peak_flops * r.decode_mfu), "s",
           formula="(2 FLOP × {active_params} + {attention_flops_per_position} × {decode_context_tokens}) / "
                   "({tp_degree} × {gpu_peak_flops} × {decode_mfu_default})"
           if r.model.attention != "MLA" else "")
    d.step("decode_step_overhead_s", "Fixed cost per decode step (the engine's default)", r.step_overhead_s, "s",
           kind="lookup")
    step = s.decode
    d.step("decode_step_s", "Decode step at that batch (the TPOT the class sees)", step.step_s, "s",
           formula="max({weight_read_s} + {decode_batch} × {decode_kv_read_per_sequence_s}, {decode_batch} × "
                   "{decode_compute_per_sequence_s}) + {allreduce_fixed_s} + {decode_batch} × {allreduce_per_token_s} + "
                   "{decode_step_overhead_s}")
    tps = d.step("decode_tokens_per_s_per_replica", "Output tokens a decode replica streams at that batch",
                 b / step.step_s, "1/s", noun="tokens", formula="{decode_batch} / {decode_step_s}")
    out = d.step("decode_output_tokens_per_s", "Output tokens per second the class asks for",
                 p.arrival_rps * p.output_tokens, "1/s", noun="tokens", formula="{arrival_rps} × {output_tokens}")
    d.step("decode_replicas_flat_out_continuous", "Decode replicas the tokens need at the full batch, before rounding up",
           out / tps, "1", noun="replicas", formula="{decode_output_tokens_per_s} / {decode_tokens_per_s_per_replica}")
    d.step("decode_replicas_flat_out", "Decode replicas if every one ran flat out at the full batch",
           max(1, math.ceil(out / tps - 1e-9)), "1", noun="replicas",
           formula="max(1, ceil({decode_replicas_flat_out_continuous}))")
    # The pool is sized like every other fleet: at the batch each replica holds when each sequence streams
    # at the TPOT target, within the target utilization (prefill runs elsewhere, so it costs decode nothing),
    # and with the KV slots to hold every sequence in flight.
    f = sv.fleet(s, p.arrival_rps, p.target_utilization, prefill_s_per_request=0.0)
    d.step("decode_sequences_in_flight", "Sequences decoding at once across the pool (Little's law)",
           p.arrival_rps * p.output_tokens * s.tpot_s, "1", noun="sequences",
           formula="{arrival_rps} × {output_tokens} × {tpot_target_ms}")
    d.step("decode_replicas_continuous", "Decode replicas within the target utilization, before rounding up",
           f.replicas_continuous, "1", noun="replicas", kind="search",
           formula="the fewest R with decode busy at the batch each holds ≤ {target_utilization} and "
                   "{decode_sequences_in_flight} / R within the slots")
    reps = d.step("decode_replicas", "Decode replicas", f.replicas, "1", noun="replicas",
                  formula="max(1, ceil({decode_replicas_continuous}))")
    d.step("decode_held_batch", "Sequences each decode replica holds at that size", f.held_batch, "1",
           noun="sequences", formula="{decode_sequences_in_flight} / {decode_replicas}")
    d.step("decode_held_step_s", "Decode step at that batch", f.held_step_s, "s",
           formula="max({weight_read_s} + max(1, {decode_held_batch}) × {decode_kv_read_per_sequence_s}, "
                   "max(1, {decode_held_batch}) × {decode_compute_per_sequence_s}) + {allreduce_fixed_s} + "
                   "max(1, {decode_held_batch}) × {allreduce_per_token_s} + {decode_step_overhead_s}")
    d.step("decode_busy_share", "Busy share of each decode replica", f.decode_replica_equivalents / reps, "1", percent=True,
           formula="{decode_output_tokens_per_s} / {decode_replicas} × {decode_held_step_s} / max(1, {decode_held_batch})")
    flat = d.value("decode_replicas_flat_out")
    flat_held = d.step("decode_flat_out_held_batch", "Sequences each replica would hold at the ceiling's count",
                       d.value("decode_sequences_in_flight") / flat, "1", noun="sequences",
                       formula="{decode_sequences_in_flight} / {decode_replicas_flat_out}")
    d.step("decode_flat_out_busy_share", "Busy share of each replica at the ceiling's count",
           sv.busy_share(s, p.arrival_rps, flat, 0.0), "1", percent=True,
           formula="{decode_output_tokens_per_s} / {decode_replicas_flat_out} × step({decode_flat_out_held_batch}) / "
                   "{decode_flat_out_held_batch}", kind="search")
    if flat == reps:
        clause = "the same count: at this load the ceiling is not what binds"
    elif flat_held > b:
        clause = (f"but {format_number(flat_held)} sequences a replica do not fit the {b:,} its KV and TPOT target "
                  "allow: requests leaving prefill would wait for a slot")
    else:
        clause = (f"over the {format_number(100 * p.target_utilization)}% target: a burst, or one replica lost, "
                  "would have nowhere to go")
    d.step("decode_flat_out_clause", "What sizing decode at its ceiling would do", clause, "1",
           formula="{decode_replicas_flat_out} against {decode_replicas}", kind="verdict")
    d.step("decode_gpus", "Decode GPUs", reps * p.tp_degree, "1", noun="GPUs", formula="{decode_replicas} × {tp_degree}")
    d.step("total_gpus_pooled", "GPUs for the class: pooled prefill plus decode", prefill_gpus + reps * p.tp_degree,
           "1", noun="GPUs", formula="{gpus_pooled} + {decode_gpus}")


# ---------------------------------------------------------------------------------------------
# The queue engine's confirmation


@dataclass(frozen=True)
class QueueCheck:
    """One simulated configuration beside its closed form."""

    label: str
    servers: int
    arrival_rps: float
    service_rate: float
    customers: int
    utilization: float
    tail: float
    budget_s: float
    analytic_quantile_s: float
    sim_quantile_s: float
    analytic_over_budget: float
    sim_over_budget: float
    analytic_mean_s: float
    sim_mean_s: float
    ccdf_t: tuple[float, ...]
    ccdf_sim: tuple[float, ...]
    ccdf_analytic: tuple[float, ...]


@dataclass(frozen=True)
class TTFTSim:
    separate: QueueCheck  # one replica with its own queue at the M/M/1 limit
    pooled: QueueCheck  # the pool at replicas_pooled
    separate_at_pooled_util: QueueCheck  # one replica with its own queue, as busy as the pool


def run_queue(label: str, servers: int, lam: float, mu: float, budget_s: float, tail: float,
              rng: np.random.Generator, customers: int) -> QueueCheck:
    arrivals = queue.poisson_arrivals(rng, lam, customers)
    service = rng.exponential(1 / mu, customers)
    waits = queue.fifo(arrivals, service, servers).wait_s[customers // 20:]  # drop the empty-start warm-up
    horizon = max(3 * budget_s, 1.5 * mmc_wait_quantile(servers, lam, mu, tail), 1e-3)
    grid = np.linspace(0, horizon, 61)
    sorted_w = np.sort(waits)
    sim_ccdf = 1 - np.searchsorted(sorted_w, grid, side="right") / len(sorted_w)
    ana_ccdf = [mmc_wait_tail(servers, lam, mu, t) for t in grid]
    return QueueCheck(
        label=label, servers=servers, arrival_rps=lam, service_rate=mu, customers=customers,
        utilization=lam / (servers * mu), tail=tail, budget_s=budget_s,
        analytic_quantile_s=mmc_wait_quantile(servers, lam, mu, tail),
        sim_quantile_s=float(np.quantile(waits, 1 - tail)),
        analytic_over_budget=mmc_wait_tail(servers, lam, mu, budget_s),
        sim_over_budget=float(np.mean(waits > budget_s)),
        analytic_mean_s=erlang_c(servers, lam / mu) / (servers * mu - lam),
        sim_mean_s=float(waits.mean()),
        ccdf_t=tuple(grid.tolist()), ccdf_sim=tuple(sim_ccdf.tolist()), ccdf_analytic=tuple(ana_ccdf),
    )


def simulate(p: Params, seed: int = 0, customers: int = 100_000) -> TTFTSim:
    """Three queues through the FIFO engine, each beside its closed form."""
    d = solve(p)
    mu = d.value("service_rate_per_s")
    qb = d.value("queue_budget_s")
    tail = d.value("tail_probability")
    c = d.value("replicas_pooled")
    rho1 = d.value("max_utilization_mm1")
    rho_pool = d.value("max_utilization_pooled")
    streams = [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(3)]
    return TTFTSim(
        separate=run_queue("One replica, own queue, at the M/M/1 limit", 1, rho1 * mu, mu, qb, tail, streams[0],
                           customers),
        pooled=run_queue(f"Pool of {c}, one shared queue", c, p.arrival_rps, mu, qb, tail, streams[1], customers),
        separate_at_pooled_util=run_queue("One replica, own queue, as busy as the pool", 1, rho_pool * mu, mu, qb,
                                          tail, streams[2], customers),
    )


# The three queues a panel shows, in its order: (step prefix, short name).
SIMULATED_QUEUES = (("own_at_limit", "Own queue, at its limit"), ("pool", "Pool"),
                    ("own_at_pool_load", "Own queue, pool's load"))


def simulation_steps(p: Params, r: TTFTSim) -> Derivation:
    """The run's figures as steps beside their closed forms, so a panel shows steps, not hand-formatted
    attributes: per queue the tail wait at the SLO percentile, its utilization and the share of
    requests past the queue allowance, simulated and by Erlang C."""
    d = Derivation(p)
    checks = (r.separate, r.pooled, r.separate_at_pooled_util)
    pct = f"p{format_number(100 * p.slo_percentile)}"
    d.step("simulated_service_rate_per_s", "Prefills one replica completes per second", r.pooled.service_rate, "1/s",
           noun="requests", kind="given")
    for (prefix, name), q in zip(SIMULATED_QUEUES, checks):
        name = f"Pool of {q.servers}" if prefix == "pool" else name
        d.step(f"{prefix}_wait_s", f"{name}: {pct} wait", q.sim_quantile_s, "s", kind="simulated",
               note=q.label)
        d.step(f"{prefix}_wait_closed_form_s", f"{name}: {pct} wait, Erlang C", q.analytic_quantile_s, "s",
               kind="lookup", note="M/M/c wait quantile")
        d.step(f"{prefix}_arrival_rps", f"{name}: arrivals", q.arrival_rps, "1/s", noun="requests", kind="given")
        d.step(f"{prefix}_servers", f"{name}: replicas", q.servers, "1", noun="replicas", kind="given")
        d.step(f"{prefix}_busy", f"{name}: utilization", q.utilization, "1", percent=True,
               formula=f"{{{prefix}_arrival_rps}} / ({{{prefix}_servers}} × {{simulated_service_rate_per_s}})")
        d.step(f"{prefix}_past_allowance", f"{name}: share past the queue allowance, simulated", q.sim_over_budget,
               "1", percent=True, kind="simulated")
        d.step(f"{prefix}_past_allowance_closed_form", f"{name}: share past the queue allowance, Erlang C",
               q.analytic_over_budget, "1", percent=True, kind="lookup")
    d.step("simulated_requests", "Requests simulated per queue", r.pooled.customers, "1", noun="requests",
           kind="given")
    return d
