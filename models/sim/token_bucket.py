"""Per-tenant token buckets (input and output) in front of a model: a small, seeded trace.

Entry point, as in every module of models/sim: `run(Config, seed) -> Result` (a Comparison: one
workload replayed through both modes; `replay` is one mode on a given workload).

A few tenants send bursty traffic; each has its own two buckets with the same limits. Time is
discrete (`dt` seconds a step). Every step:

1. Both buckets of every tenant refill by limit / 60 x dt, capped at `burst_seconds` of refill;
   refill that would overflow the cap is counted in `overflow` so the books balance.
2. Streams that finished by the end of the step settle: in settle mode the unused part of the
   reservation (max_tokens - actual output) goes back to the output bucket (capped the same way).
3. The step's arrivals, in order: a request is admitted when its input bucket holds its prompt
   and its output bucket holds `max_tokens`; both are debited and the stream is held for
   actual output / stream speed. Otherwise it is rejected (a 429) and nothing is debited.

The workload (arrivals, prompt and output sizes) is drawn once per seed and replayed for both
modes, so reserve-only and reserve-then-settle differ only in the refund: common random numbers.
Conservation, checked by the tests:

    admitted + rejected == requested                (requests and prompt tokens, per tenant)
    start + refilled - overflow - debited + refunded == final level      (every bucket)
    reserved == refunded + settled actual output + max_tokens x streams still in flight

Pure numpy plus a heap of stream end times; seeded with `numpy.random.default_rng(seed)`.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class TenantSpec:
    """Demand as a multiple of the settled limit (refill / mean output), and how it bursts."""

    name: str
    load: float  # mean demand / (output refill / mean output)
    burst_factor: float = 1.0  # rate during a burst, as a multiple of the mean
    burst_fraction: float = 0.0  # share of time in a burst; burst_factor x burst_fraction <= 1
    mean_burst_s: float = 10.0

    def __post_init__(self) -> None:
        if self.load < 0:
            raise ValueError(f"{self.name}: load must be >= 0")
        if not 0 <= self.burst_fraction < 1:
            raise ValueError(f"{self.name}: burst_fraction must be in [0, 1)")
        if self.burst_factor * self.burst_fraction > 1 + 1e-12:
            raise ValueError(f"{self.name}: burst_factor x burst_fraction must be <= 1 to keep the mean")


DEFAULT_TENANTS: tuple[TenantSpec, ...] = (
    TenantSpec("steady, 60% of its limit", 0.6),
    TenantSpec("bursty, 80% on average", 0.8, burst_factor=5.0, burst_fraction=0.15),
    TenantSpec("twice its limit", 2.0),
)


@dataclass(frozen=True)
class Config:
    """The limits every tenant gets, the request sizes, and the trace's length."""

    input_tpm: float
    output_tpm: float
    burst_seconds: float  # a full bucket holds this many seconds of refill
    max_tokens: float  # reserved from the output bucket at admission
    mean_input_tokens: float
    mean_output_tokens: float
    stream_tokens_per_s: float
    seconds: float = 180.0
    dt: float = 0.1
    tenants: tuple[TenantSpec, ...] = DEFAULT_TENANTS

    def __post_init__(self) -> None:
        object.__setattr__(self, "tenants", tuple(self.tenants))
        if min(self.input_tpm, self.output_tpm, self.burst_seconds, self.max_tokens) <= 0:
            raise ValueError("limits, burst and max_tokens must be positive")
        if min(self.mean_input_tokens, self.mean_output_tokens, self.stream_tokens_per_s) <= 0:
            raise ValueError("request sizes and stream speed must be positive")
        if self.seconds <= 0 or self.dt <= 0:
            raise ValueError("the trace and its step must be positive")


@dataclass(frozen=True)
class Workload:
    tenants: tuple[TenantSpec, ...]
    dt: float
    steps: int
    tenant: np.ndarray  # per request, in arrival order
    step: np.ndarray  # per request: the step it arrives in
    input_tokens: np.ndarray
    output_tokens: np.ndarray  # actual output, already capped at max_tokens
    in_burst: np.ndarray  # (tenants, steps) bool


@dataclass(frozen=True)
class BucketRun:
    settle: bool
    t: np.ndarray  # end time of each step, s
    requested: np.ndarray  # per tenant, requests
    admitted: np.ndarray
    rejected: np.ndarray
    input_requested: np.ndarray  # per tenant, prompt tokens
    input_admitted: np.ndarray
    input_rejected: np.ndarray
    admitted_mask: np.ndarray  # per request
    admitted_per_step: np.ndarray  # (tenants, steps)
    rejected_per_step: np.ndarray
    output_level: np.ndarray  # (tenants, steps) output bucket at the end of each step
    input_level: np.ndarray
    reserved: np.ndarray  # per tenant: max_tokens x admitted
    refunded: np.ndarray
    settled_output: np.ndarray  # actual output of streams that finished
    in_flight_at_end: np.ndarray  # streams still holding a reservation
    output_books: np.ndarray  # (tenants, 5): start, refilled, overflow, debited, refunded
    input_books: np.ndarray  # (tenants, 4): start, refilled, overflow, debited

    def admits_per_min(self, tenant: int, from_s: float = 0.0) -> float:
        """Admission rate of one tenant after `from_s` (skip the first full bucket)."""
        start = int(round(from_s / (self.t[1] - self.t[0]))) if self.t.size > 1 else 0
        span = self.t[-1] - (self.t[start - 1] if start > 0 else 0.0)
        return float(self.admitted_per_step[tenant, start:].sum()) / span * 60


@dataclass(frozen=True)
class Comparison:
    workload: Workload
    reserve: BucketRun
    settle: BucketRun
    output_capacity: float
    input_capacity: float


def _lognormal_int(rng: np.random.Generator, mean: float, sigma: float, n: int) -> np.ndarray:
    mu = math.log(mean) - sigma**2 / 2  # so the mean of the draw is `mean`
    return np.maximum(1, np.rint(rng.lognormal(mu, sigma, n))).astype(np.int64)


def workload(
    tenants: tuple[TenantSpec, ...],
    *,
    base_rate_per_s: float,
    mean_input_tokens: float,
    mean_output_tokens: float,
    max_tokens: float,
    seconds: float,
    dt: float = 0.1,
    seed: int = 0,
) -> Workload:
    """Arrivals per step (Poisson, rate modulated by an on/off burst state) and request sizes."""
    rng = np.random.default_rng(seed)
    steps = max(1, int(round(seconds / dt)))
    tenant_ids, step_ids = [], []
    bursts = np.zeros((len(tenants), steps), dtype=bool)
    for i, spec in enumerate(tenants):
        mean_rate = spec.load * base_rate_per_s
        if spec.burst_fraction > 0 and spec.burst_factor > 1:
            leave = min(1.0, dt / spec.mean_burst_s)
            enter = leave * spec.burst_fraction / (1 - spec.burst_fraction)
            u = rng.random(steps)
            state = rng.random() < spec.burst_fraction
            for k in range(steps):
                state = (u[k] >= leave) if state else (u[k] < enter)
                bursts[i, k] = state
            rate_on = spec.burst_factor * mean_rate
            rate_off = mean_rate * (1 - spec.burst_factor * spec.burst_fraction) / (1 - spec.burst_fraction)
            rates = np.where(bursts[i], rate_on, rate_off)
        else:
            rates = np.full(steps, mean_rate)
        counts = rng.poisson(rates * dt)
        step_ids.append(np.repeat(np.arange(steps), counts))
        tenant_ids.append(np.full(int(counts.sum()), i))
    step_arr = np.concatenate(step_ids) if step_ids else np.zeros(0, dtype=np.int64)
    tenant_arr = np.concatenate(tenant_ids) if tenant_ids else np.zeros(0, dtype=np.int64)
    # Interleave tenants inside a step at random: nobody is always first in line.
    order = np.lexsort((rng.random(step_arr.size), step_arr))
    step_arr, tenant_arr = step_arr[order], tenant_arr[order]
    n = step_arr.size
    inputs = _lognormal_int(rng, mean_input_tokens, 1.0, n)
    outputs = np.minimum(_lognormal_int(rng, mean_output_tokens, 0.8, n), int(max_tokens))
    return Workload(tuple(tenants), dt, steps, tenant_arr.astype(np.int64), step_arr.astype(np.int64),
                    inputs, outputs, bursts)


def replay(cfg: Config, w: Workload, settle: bool) -> BucketRun:
    """One mode (reserve-only, or reserve-then-settle) over a given workload."""
    input_tpm, output_tpm, burst_seconds = cfg.input_tpm, cfg.output_tpm, cfg.burst_seconds
    max_tokens, stream_tokens_per_s = cfg.max_tokens, cfg.stream_tokens_per_s
    n_t, steps, dt = len(w.tenants), w.steps, w.dt
    in_r, out_r = input_tpm / 60, output_tpm / 60
    in_cap, out_cap = in_r * burst_seconds, out_r * burst_seconds
    in_level = [in_cap] * n_t
    out_level = [out_cap] * n_t
    in_books = np.zeros((n_t, 4))
    out_books = np.zeros((n_t, 5))
    in_books[:, 0] = in_cap
    out_books[:, 0] = out_cap
    in_refill = [0.0] * n_t
    in_over = [0.0] * n_t
    in_debit = [0.0] * n_t
    out_refill = [0.0] * n_t
    out_over = [0.0] * n_t
    out_debit = [0.0] * n_t
    refunded = [0.0] * n_t
    settled_out = [0.0] * n_t
    admitted_mask = np.zeros(w.step.size, dtype=bool)
    adm = np.zeros((n_t, steps), dtype=np.int64)
    rej = np.zeros((n_t, steps), dtype=np.int64)
    out_trace = np.empty((n_t, steps))
    in_trace = np.empty((n_t, steps))
    heap: list[tuple[float, int, int]] = []  # (end time, tenant, actual output)
    step_of = w.step.tolist()
    tenant_of = w.tenant.tolist()
    inp = w.input_tokens.tolist()
    outp = w.output_tokens.tolist()
    m = float(max_tokens)
    j, n = 0, len(step_of)
    for k in range(steps):
        t_end = (k + 1) * dt
        for i in range(n_t):
            room = in_cap - in_level[i]
            add = in_r * dt
            in_refill[i] += add
            if add > room:
                in_over[i] += add - room
                in_level[i] = in_cap
            else:
                in_level[i] += add
            room = out_cap - out_level[i]
            add = out_r * dt
            out_refill[i] += add
            if add > room:
                out_over[i] += add - room
                out_level[i] = out_cap
            else:
                out_level[i] += add
        while heap and heap[0][0] <= t_end + 1e-12:
            _, i, actual = heapq.heappop(heap)
            settled_out[i] += actual
            if settle:
                back = m - actual
                refunded[i] += back
                room = out_cap - out_level[i]
                if back > room:
                    out_over[i] += back - room
                    out_level[i] = out_cap
                else:
                    out_level[i] += back
        while j < n and step_of[j] == k:
            i = tenant_of[j]
            if in_level[i] >= inp[j] and out_level[i] >= m:
                in_level[i] -= inp[j]
                out_level[i] -= m
                in_debit[i] += inp[j]
                out_debit[i] += m
                admitted_mask[j] = True
                adm[i, k] += 1
                heapq.heappush(heap, (t_end + outp[j] / stream_tokens_per_s, i, outp[j]))
            else:
                rej[i, k] += 1
            j += 1
        for i in range(n_t):
            out_trace[i, k] = out_level[i]
            in_trace[i, k] = in_level[i]
    in_flight = np.zeros(n_t, dtype=np.int64)
    for _, i, _ in heap:
        in_flight[i] += 1
    in_books[:, 1], in_books[:, 2], in_books[:, 3] = in_refill, in_over, in_debit
    out_books[:, 1], out_books[:, 2], out_books[:, 3], out_books[:, 4] = out_refill, out_over, out_debit, refunded
    tenant = w.tenant
    requested = np.bincount(tenant, minlength=n_t)
    admitted = np.bincount(tenant[admitted_mask], minlength=n_t)
    in_req = np.bincount(tenant, weights=w.input_tokens, minlength=n_t)
    in_adm = np.bincount(tenant[admitted_mask], weights=w.input_tokens[admitted_mask], minlength=n_t)
    return BucketRun(
        settle=settle,
        t=(np.arange(steps) + 1) * dt,
        requested=requested,
        admitted=admitted,
        rejected=np.bincount(tenant[~admitted_mask], minlength=n_t),  # counted apart: the test adds them up
        input_requested=in_req,
        input_admitted=in_adm,
        input_rejected=np.bincount(tenant[~admitted_mask], weights=w.input_tokens[~admitted_mask], minlength=n_t),
        admitted_mask=admitted_mask,
        admitted_per_step=adm,
        rejected_per_step=rej,
        output_level=out_trace,
        input_level=in_trace,
        reserved=admitted * m,
        refunded=np.array(refunded),
        settled_output=np.array(settled_out),
        in_flight_at_end=in_flight,
        output_books=out_books,
        input_books=in_books,
    )


Result = Comparison


def run(cfg: Config, seed: int = 0) -> Comparison:
    """One workload, replayed through reserve-only and reserve-then-settle buckets.

    Tenant loads are multiples of the settled limit, output refill / mean output, so the same
    three profiles stay meaningful whatever limits the page's knobs set.
    """
    base = cfg.output_tpm / 60 / cfg.mean_output_tokens
    w = workload(cfg.tenants, base_rate_per_s=base, mean_input_tokens=cfg.mean_input_tokens,
                 mean_output_tokens=cfg.mean_output_tokens, max_tokens=cfg.max_tokens, seconds=cfg.seconds,
                 dt=cfg.dt, seed=seed)
    return Comparison(w, replay(cfg, w, settle=False), replay(cfg, w, settle=True),
                      output_capacity=cfg.output_tpm / 60 * cfg.burst_seconds,
                      input_capacity=cfg.input_tpm / 60 * cfg.burst_seconds)
