"""A 200 ms p99 time-to-first-token SLO, spent as a budget.

The teaching order is the interview's: split the 200 ms into network, routing, queue, prefill
and first token; turn the prefill share into a prompt length (linear, then with attention);
chunk the prefill so one long prompt cannot block the tail; admit only what fits; then price
the queue's share in utilization, one queue per replica (M/M/1) against one pooled queue
(M/M/c, Erlang C), with the queue engine (`models/sim/queue.py`) confirming both.

Modelling choices (the page states each):
  * Prefill FLOP for n uncached tokens = 2 x params x n + 2 x layers x heads x head_dim x n^2,
    from `models/serving/llm_arith.py`: per layer QK^T and AV are n x n x (heads x head_dim)
    multiply-adds each (2 FLOP per multiply-add: 4 n^2 d), halved because a causal token only
    sees the tokens before it. For Llama-3-70B heads x head_dim = d_model = 8,192.
  * Prefill runs on its own capacity (prefill workers, or a prefill-first scheduler) at the
    stated MFU whether chunked or not; decode is sized elsewhere. One replica runs one prefill
    at a time: a server in queueing terms, with the mean prompt's prefill as its service time.
  * The queue allowance is a p-th percentile wait: P(W > t) <= 1 - p. Exponential service and
    Poisson arrivals (M/M/1, M/M/c). Real prompt lengths vary more than exponential, so the
    true tail is worse; the page says so.
  * The allowances add worst cases (p99 queue + worst prefill), which is conservative: the p99
    of a sum is below the sum of the p99s.
  * A chunk is charged at the END of the long prompt, where it attends to everything before it:
    the longest a short request can be held behind one chunk.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated

import numpy as np
from pydantic import model_validator

from models.catalog import gpu as catalog_gpu, model as catalog_model
from models.core import Derivation, Knob, StrictModel
from models.serving import llm_arith as la
from models.serving.llm_arith import Precision, ReplicaGPUs, ServingGPU, ServingModel
from models.sim import queue
from models.units import format_number


class Params(StrictModel):
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
    model: Annotated[ServingModel, Knob("Model")] = "Llama-3-70B"
    gpu: Annotated[ServingGPU, Knob("GPU")] = "H100 SXM"
    gpus_per_replica: Annotated[
        ReplicaGPUs,
        Knob("GPUs per replica", "", 1, 8, help="Tensor-parallel group that runs one prefill at a time."),
    ] = 8
    weight_precision: Annotated[
        Precision, Knob("Weight precision", help="FP8 doubles peak FLOP/s, so prefill runs twice as fast."),
    ] = "bf16"
    mfu: Annotated[
        float,
        Knob("Prefill MFU", "", 0.1, 0.8, 0.01, percent=True,
             help="Share of dense peak FLOP/s a prefill achieves.", draw=(0.35, 0.6)),
    ] = 0.5
    hbm_efficiency: Annotated[
        float,
        Knob("HBM efficiency", "", 0.3, 0.95, 0.01, percent=True,
             help="Share of peak HBM bandwidth a weight read achieves (sets the smallest useful chunk).",
             draw=(0.6, 0.8)),
    ] = 0.7
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
             draw=(256, 2048)),
    ] = 512
    arrival_rps: Annotated[
        float,
        Knob("Arrival rate", "req/s", 1, 2000, 1, log=True,
             help="Requests per second in this SLO class, all replicas.", draw=(20, 500)),
    ] = 100

    @model_validator(mode="after")
    def _feasible(self) -> "Params":
        spent = self.network_ms + self.routing_ms + self.queue_budget_ms + self.first_token_ms
        if spent > self.slo_ms - 1:
            raise ValueError(
                f"Network, routing, queue and first-token allowances add up to {spent:,.0f} ms, which leaves "
                f"less than 1 ms of the {self.slo_ms:,.0f} ms SLO for prefill. Shrink an allowance or loosen the SLO."
            )
        m, g = catalog_model(self.model), catalog_gpu(self.gpu)
        weights = m.weight_bytes(la.BYTES_PER_PARAM[self.weight_precision])
        usable = la.USABLE_HBM_FRACTION * self.gpus_per_replica * g.memory_bytes
        if weights > usable:
            raise ValueError(
                f"{self.model} in {self.weight_precision} needs {weights / 1e9:,.0f} GB of weights, but "
                f"{self.gpus_per_replica} x {self.gpu} leave {usable / 1e9:,.0f} GB usable. "
                "Use more GPUs per replica, a bigger GPU or FP8."
            )
        return self


# ---------------------------------------------------------------------------------------------
# Closed forms, shared by solve, simulate and the tests


def prefill_flops(m, tokens: float, before: float = 0.0) -> float:
    """FLOP to prefill `tokens` new tokens after `before` tokens already in the KV cache."""
    return tokens * la.flops_per_token(m, before + tokens / 2)


def max_tokens_within(flops_budget: float, weight_flops_per_token: float, attn_flops_per_position: float) -> int:
    """Largest n with weight_flops x n + (attn / 2) x n^2 <= budget (the positive root, floored)."""
    if flops_budget <= 0:
        return 0
    a = attn_flops_per_position / 2
    b = weight_flops_per_token
    if a == 0:
        return math.floor(flops_budget / b + 1e-9)
    # b^2 + 4ac in a cancellation-safe form: n = 2c / (b + sqrt(b^2 + 4ac))
    n = 2 * flops_budget / (b + math.sqrt(b * b + 4 * a * flops_budget))
    return math.floor(n + 1e-9)


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


# ---------------------------------------------------------------------------------------------


def solve(p: Params) -> Derivation:
    d = Derivation(p)
    m = catalog_model(p.model)

    # --- the budget ---
    d.step("slo_s", "TTFT SLO", p.slo_ms / 1000, "s", formula="{slo_ms} ms / 1000")
    d.step("network_s", "Network: request in, first token out", p.network_ms / 1000, "s",
           formula="{network_ms} ms / 1000")
    d.step("routing_s", "Gateway, admission and routing", p.routing_ms / 1000, "s", formula="{routing_ms} ms / 1000")
    qb = d.step("queue_budget_s", "Queue allowance at the SLO percentile", p.queue_budget_ms / 1000, "s",
                formula="{queue_budget_ms} ms / 1000")
    d.step("first_token_s", "First token out: sample, hand off, flush", p.first_token_ms / 1000, "s",
           formula="{first_token_ms} ms / 1000")
    budget = d.step(
        "prefill_budget_s", "Left for prefill",
        (p.slo_ms - p.network_ms - p.routing_ms - p.queue_budget_ms - p.first_token_ms) / 1000, "s",
        formula="{slo_s} s − {network_s} s − {routing_s} s − {queue_budget_s} s − {first_token_s} s",
    )
    d.step("prefill_share_of_slo", "Share of the SLO left for prefill", 100 * budget / (p.slo_ms / 1000), "%",
           formula="100 × {prefill_budget_s} / {slo_s}")

    # --- the prompt the budget allows ---
    peak = la.peak_flops(p.gpu, p.weight_precision)
    d.step("gpu_peak_flops", f"{p.gpu} dense {p.weight_precision} peak (catalog)", peak, "FLOP/s")
    fl = d.step("replica_flops", "Replica compute at the stated MFU", p.gpus_per_replica * peak * p.mfu, "FLOP/s",
                formula="{gpus_per_replica} × {gpu_peak_flops} FLOP/s × {mfu}")
    w_tok = d.step("weight_flops_per_token", f"Weight FLOP per prompt token (2 × {p.model} params)",
                   la.INFER_FLOPS_PER_PARAM_TOKEN * m.active_params, "FLOP",
                   formula=f"2 × {format_number(m.active_params)}")
    attn = d.step("attention_flops_per_position", "Attention FLOP per token per earlier token (QK^T and AV)",
                  la.attention_flops_per_token_per_position(m), "FLOP",
                  formula=f"2 matmuls × 2 FLOP × {m.layers} layers × {m.heads} heads × {m.head_dim}")
    d.step("attention_prefill_coefficient", "Attention FLOP of a prefill per token² (causal: half the square)",
           attn / 2, "FLOP", formula="{attention_flops_per_position} / 2")
    budget_flops = d.step("prefill_budget_flops", "FLOP the prefill budget buys", budget * fl, "FLOP",
                          formula="{prefill_budget_s} s × {replica_flops} FLOP/s")
    d.step("max_prompt_tokens_linear", "Longest prompt, weights only (linear)",
           math.floor(budget_flops / w_tok + 1e-9), "1", noun="tokens",
           formula="floor({prefill_budget_flops} / {weight_flops_per_token})")
    n_attn = d.step(
        "max_prompt_tokens_with_attention", "Longest prompt, attention included", max_tokens_within(budget_flops, w_tok, attn),
        "1", noun="tokens",
        formula="largest n with {weight_flops_per_token} × n + {attention_prefill_coefficient} × n² ≤ {prefill_budget_flops}",
    )
    d.step("attention_share_at_max", "Attention's share of that prefill",
           100 * (attn / 2 * n_attn ** 2) / max(prefill_flops(m, n_attn), 1e-30), "%",
           formula="100 × {attention_prefill_coefficient} × {max_prompt_tokens_with_attention}² / prefill FLOP")
    d.step("attention_equals_weights_tokens", "Prompt length where attention FLOP equal weight FLOP",
           2 * w_tok / attn, "1", noun="tokens",
           formula="{weight_flops_per_token} / {attention_prefill_coefficient}")
    d.step("tokens_for_whole_slo", "Prompt whose prefill alone takes the whole SLO",
           max_tokens_within(p.slo_ms / 1000 * fl, w_tok, attn), "1", noun="tokens",
           formula="largest n with {weight_flops_per_token} × n + {attention_prefill_coefficient} × n² ≤ "
                   "{slo_s} s × {replica_flops}")

    # --- one long prompt in the tail, whole and chunked ---
    long_n = p.long_prompt_tokens
    long_s = d.step("long_prompt_prefill_s", "Prefill of the long prompt, in one piece",
                    prefill_flops(m, long_n) / fl, "s",
                    formula="({weight_flops_per_token} × {long_prompt_tokens} + {attention_prefill_coefficient} × "
                            "{long_prompt_tokens}²) / {replica_flops}")
    d.step("long_prompt_slo_multiple", "That prefill over the whole SLO", long_s / (p.slo_ms / 1000), "1", noun="×",
           formula="{long_prompt_prefill_s} s / {slo_s} s")
    c_tok = d.step("chunk_tokens_effective", "Chunk (no larger than the long prompt)", min(p.chunk_tokens, long_n), "1",
                   noun="tokens", formula="min({chunk_tokens}, {long_prompt_tokens})")
    d.step("long_prompt_chunks", "Chunks in the long prompt", math.ceil(long_n / c_tok - 1e-9), "1", noun="chunks",
           formula="ceil({long_prompt_tokens} / {chunk_tokens_effective})")
    d.step("first_chunk_time_s", "First chunk (nothing before it to attend to)", prefill_flops(m, c_tok) / fl, "s",
           formula="({weight_flops_per_token} × {chunk_tokens_effective} + {attention_prefill_coefficient} × "
                   "{chunk_tokens_effective}²) / {replica_flops}")
    chunk_s = d.step(
        "chunk_time_s", "Last chunk: attends to the whole prompt before it (the longest a request waits behind one)",
        prefill_flops(m, c_tok, long_n - c_tok) / fl, "s",
        formula="{chunk_tokens_effective} × ({weight_flops_per_token} + {attention_flops_per_position} × "
                "({long_prompt_tokens} − {chunk_tokens_effective} / 2)) / {replica_flops}",
    )
    d.step("chunk_share_of_prefill_budget", "One chunk's share of the prefill budget", 100 * chunk_s / budget, "%",
           formula="100 × {chunk_time_s} / {prefill_budget_s}")
    g = catalog_gpu(p.gpu)
    weights = m.weight_bytes(la.BYTES_PER_PARAM[p.weight_precision])
    d.step("weight_bytes", f"{p.model} weights in {p.weight_precision}", weights, "B")
    w_read = d.step("weight_read_s", "Reading every weight once (each iteration pays it)",
                    weights / (p.gpus_per_replica * g.hbm_Bps * p.hbm_efficiency), "s",
                    formula=f"{{weight_bytes}} B / ({{gpus_per_replica}} × {format_number(g.hbm_Bps)} B/s × {{hbm_efficiency}})")
    d.step("chunk_floor_tokens", "Smallest chunk that keeps an iteration compute-bound",
           math.ceil(w_read * fl / w_tok), "1", noun="tokens",
           formula="ceil({weight_read_s} s × {replica_flops} / {weight_flops_per_token})")

    # --- admission control ---
    admit_budget = d.step("admission_prefill_budget_s", "Prefill budget after one chunk of someone else's prompt",
                          budget - chunk_s, "s", formula="{prefill_budget_s} s − {chunk_time_s} s")
    d.step("max_admissible_prompt_tokens", "Longest prompt admission control accepts into this SLO class",
           max_tokens_within(admit_budget * fl, w_tok, attn), "1", noun="tokens",
           formula="largest n with {weight_flops_per_token} × n + {attention_prefill_coefficient} × n² ≤ "
                   "{admission_prefill_budget_s} s × {replica_flops}")

    # --- the utilization the queue allowance costs ---
    svc = d.step("service_time_s", "Prefill of the mean prompt (one replica's service time)",
                 prefill_flops(m, p.mean_prompt_tokens) / fl, "s",
                 formula="({weight_flops_per_token} × {mean_prompt_tokens} + {attention_prefill_coefficient} × "
                         "{mean_prompt_tokens}²) / {replica_flops}")
    mu = d.step("service_rate_per_s", "Prefills one replica completes per second", 1 / svc, "1/s", noun="prefills",
                formula="1 / {service_time_s} s")
    lam = p.arrival_rps
    a = d.step("offered_load", "Offered load: replicas' worth of prefill work", lam * svc, "1", noun="replicas",
               formula="{arrival_rps} req/s × {service_time_s} s")
    tail = d.step("tail_probability", "Share of requests allowed past the queue allowance", 1 - p.slo_percentile, "1",
                  formula="1 − {slo_percentile}")
    d.step("queue_budget_in_services", "Queue allowance in service times", qb * mu, "1", noun="prefills",
           formula="{queue_budget_s} s × {service_rate_per_s}/s")
    rho1 = max_utilization_mm1(mu, qb, tail)
    d.step("max_utilization_mm1", "Highest utilization of a replica with its own queue (M/M/1)", 100 * rho1, "%",
           formula="largest ρ with ρ × e^(−{service_rate_per_s} × (1 − ρ) × {queue_budget_s}) ≤ {tail_probability}, × 100")
    sep = d.step("replicas_separate", "Replicas, one queue each (random or sticky routing)",
                 math.ceil(a / rho1 - 1e-9), "1", noun="replicas",
                 formula="ceil({offered_load} / {max_utilization_mm1}%)")
    c = min_pooled_servers(lam, mu, qb, tail)
    pooled = d.step("replicas_pooled", "Replicas behind one shared queue (M/M/c)", c, "1", noun="replicas",
                    formula="fewest c with C(c, {offered_load}) × e^(−(c × {service_rate_per_s} − {arrival_rps}) × "
                            "{queue_budget_s}) ≤ {tail_probability}")
    util_pooled = d.step("max_utilization_pooled", "Utilization of the pooled replicas", 100 * a / c, "%",
                         formula="100 × {offered_load} / {replicas_pooled}")
    d.step("pooled_wait_probability", "Share of requests that wait at all in the pool (Erlang C)",
           100 * erlang_c(c, a), "%", formula="100 × C({replicas_pooled}, {offered_load})")
    d.step("pooled_tail_at_budget", "Share of pooled requests past the queue allowance",
           100 * mmc_wait_tail(c, lam, mu, qb), "%",
           formula="100 × C({replicas_pooled}, {offered_load}) × e^(−({replicas_pooled} × {service_rate_per_s} − "
                   "{arrival_rps}) × {queue_budget_s})")
    d.step("pooled_quantile_wait_s", "Pooled wait at the SLO percentile", mmc_wait_quantile(c, lam, mu, tail), "s",
           formula="ln(C / {tail_probability}) / ({replicas_pooled} × {service_rate_per_s} − {arrival_rps})")
    d.step("pooled_tail_after_losing_one", "Share past the queue allowance with one pooled replica fewer",
           100 * (mmc_wait_tail(c - 1, lam, mu, qb) if c > 1 else 1.0), "%",
           formula="100 × C({replicas_pooled} − 1, {offered_load}) × e^(−(({replicas_pooled} − 1) × "
                   "{service_rate_per_s} − {arrival_rps}) × {queue_budget_s})")
    d.step("pooling_ratio", "Separate queues over one pooled queue", sep / pooled, "1", noun="×",
           formula="{replicas_separate} / {replicas_pooled}")
    rho_same = util_pooled / 100
    d.step("mm1_quantile_wait_at_pooled_util_s",
           "Wait at the SLO percentile for a replica with its own queue, run at the pooled utilization",
           mmc_wait_quantile(1, rho_same * mu, mu, tail), "s",
           formula="ln(({max_utilization_pooled}% / 100) / {tail_probability}) / ({service_rate_per_s} × "
                   "(1 − {max_utilization_pooled}% / 100))")
    d.step("gpus_pooled", "GPUs behind the pooled queue", pooled * p.gpus_per_replica, "1", noun="GPUs",
           formula="{replicas_pooled} × {gpus_per_replica}")
    d.step("gpus_separate", "GPUs with a queue per replica", sep * p.gpus_per_replica, "1", noun="GPUs",
           formula="{replicas_separate} × {gpus_per_replica}")
    return d


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
    rho1 = d.value("max_utilization_mm1") / 100
    rho_pool = d.value("max_utilization_pooled") / 100
    streams = [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(3)]
    return TTFTSim(
        separate=run_queue("One replica, own queue, at the M/M/1 limit", 1, rho1 * mu, mu, qb, tail, streams[0],
                           customers),
        pooled=run_queue(f"Pool of {c}, one shared queue", c, p.arrival_rps, mu, qb, tail, streams[1], customers),
        separate_at_pooled_util=run_queue("One replica, own queue, as busy as the pool", 1, rho_pool * mu, mu, qb,
                                          tail, streams[2], customers),
    )
