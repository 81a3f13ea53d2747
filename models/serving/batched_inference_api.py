"""Batched inference API behind a fixed batch contract (seed 001, the narrow variant).

The GPU call is fixed: up to `max_batch_inputs` inputs, always `call_time_ms`. Everything the
design controls is the dispatcher: how full each batch is, how long it waits to fill, and how
much headroom the fleet keeps. Arrival convention (stated on the page): requests arrive as an
even stream at `arrival_rps / dispatchers` per dispatcher; a batch's timer starts with its first
request; it flushes at `max_batch_inputs` or when the timer fires, whichever comes first; a
flushed batch is sealed. Poisson arrivals give slightly smaller batches near the cap.

The tail: sealed batches wait for a free GPU in one FIFO hand-off queue. There the page takes the
bursty case, batches reaching the GPUs as a Poisson stream (the even stream above would never
queue below 100% busy), and every call lasts exactly the call time: an M/D/c queue with c the
recommended fleet. Its waiting-time percentiles are exact (Crommelin's M/D/c distribution,
models/sim/queue.py), and `simulate_gpu_queue` runs the same queue through the queue engine.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated

import numpy as np

from models.core import Derivation, Knob, StrictModel
from models.engine.knobs import take
from models.engine.serving_knobs import SloKnobs
from models.sim import queue


class Params(StrictModel):
    max_batch_inputs: Annotated[
        int,
        Knob("Max batch per call", "inputs", 1, 512, 1, help="The contract's batch limit.", draw=(16, 128)),
    ] = 50
    call_time_ms: Annotated[
        float,
        Knob("Call time", "ms", 10, 2000, 10, log=True, help="Fixed duration of one batch call.", draw=(50, 500)),
    ] = 200
    arrival_rps: Annotated[
        float,
        Knob("Arrival rate", "req/s", 1, 100_000, log=True, help="Requests per second, all clients.", draw=(200, 20_000)),
    ] = 2000
    batch_fill_fraction: Annotated[
        float,
        Knob(
            "Batch fill", "", 0.05, 1.0, 0.05, percent=True,
            help="Average fraction of the batch limit a call carries (the seed's 'half-full' is 50%).",
            draw=(0.25, 1.0),
        ),
    ] = 0.5
    target_utilization: take(SloKnobs, "target_utilization") = 0.8
    flush_timeout_ms: Annotated[
        float,
        Knob(
            "Flush timeout", "ms", 1, 1000, 1, log=True,
            help="A batch is sent when it is full or when its first request has waited this long.",
            draw=(5, 100),
        ),
    ] = 50
    dispatchers: Annotated[
        int,
        Knob(
            "Independent dispatchers", "", 1, 64, 1,
            help="Batchers that each see an equal share of traffic (1 = one central queue).",
            draw=(1, 8),
        ),
    ] = 1


def solve(p: Params, queue_tail: bool = True) -> Derivation:
    """`queue_tail=False` leaves out the M/D/c tail steps, for a caller that reads only the batching
    arithmetic (design-doc-review solves this page twice per solve of its own)."""
    d = Derivation(p)
    call_s = d.step("call_time_s", "One batch call", p.call_time_ms / 1000, "s")
    full = d.step(
        "per_gpu_rps_full",
        "One GPU, every call full",
        p.max_batch_inputs / call_s,
        "1/s",
        noun="requests",
        formula="{max_batch_inputs} inputs / {call_time_s} s",
    )
    d.step(
        "gpus_floor",
        "GPUs at 100% busy with full batches (the floor)",
        math.ceil(p.arrival_rps / full - 1e-9),
        "1",
        noun="GPUs",
        formula="ceil({arrival_rps} req/s / {per_gpu_rps_full} req/s)",
    )
    d.step(
        "utilization_at_floor",
        "Busy fraction of each GPU at the floor",
        p.arrival_rps / (d.value("gpus_floor") * full),
        "1",
        percent=True,
        formula="{arrival_rps} / ({gpus_floor} × {per_gpu_rps_full})",
    )
    u_floor = d.value("utilization_at_floor")
    d.step(
        "floor_verdict",
        "What the queue does at the floor",
        "every GPU is busy all the time, so the queue grows with every burst and no p99 exists"
        if u_floor >= 1 - 1e-9 else
        ("the queue is stable, but above the target, so bursts queue long and the tail stretches"
         if u_floor > p.target_utilization else "that is already within the target, so the floor is the fleet"),
        formula="{utilization_at_floor} against 100% and {target_utilization}",
        kind="verdict",
    )
    at_fill = d.step(
        "per_gpu_rps_at_fill",
        "One GPU at the average batch fill",
        full * p.batch_fill_fraction,
        "1/s",
        noun="requests",
        formula="{per_gpu_rps_full} req/s × {batch_fill_fraction}",
    )
    d.step(
        "gpus_at_fill",
        "GPUs at that fill, 100% busy",
        math.ceil(p.arrival_rps / at_fill - 1e-9),
        "1",
        noun="GPUs",
        formula="ceil({arrival_rps} / {per_gpu_rps_at_fill})",
    )
    d.step(
        "gpus_at_target_util",
        "GPUs with full batches and utilization headroom",
        math.ceil(p.arrival_rps / (full * p.target_utilization) - 1e-9),
        "1",
        noun="GPUs",
        formula="ceil({arrival_rps} / ({per_gpu_rps_full} × {target_utilization}))",
    )
    d.step(
        "gpus_at_fill_with_headroom",
        "GPUs at that fill, with utilization headroom",
        math.ceil(p.arrival_rps / (at_fill * p.target_utilization) - 1e-9),
        "1",
        noun="GPUs",
        formula="ceil({arrival_rps} / ({per_gpu_rps_at_fill} × {target_utilization}))",
    )
    d.step(
        "central_batch_fill_time_s",
        "Time for one full batch to arrive at a single central dispatcher",
        p.max_batch_inputs / p.arrival_rps,
        "s",
        formula="{max_batch_inputs} / {arrival_rps} req/s",
    )
    d.step(
        "dispatcher_layout",
        "This design's dispatchers",
        "this design's one dispatcher" if p.dispatchers == 1
        else f"each of this design's {p.dispatchers} independent dispatchers",
        formula="{dispatchers}",
        kind="verdict",
    )
    per_dispatcher = d.step(
        "per_dispatcher_rps",
        "Traffic one dispatcher sees",
        p.arrival_rps / p.dispatchers,
        "1/s",
        noun="requests",
        formula="{arrival_rps} req/s / {dispatchers}",
    )
    d.step(
        "batch_fill_time_s",
        "Time for one full batch of requests to arrive at one dispatcher",
        p.max_batch_inputs / per_dispatcher,
        "s",
        formula="{max_batch_inputs} / {per_dispatcher_rps} req/s",
    )
    timeout_s = d.step("flush_timeout_s", "Flush timeout", p.flush_timeout_ms / 1000, "s")
    # The timer starts with the first request, so the batch holds that one plus what arrives
    # before the timer fires, capped at the contract's limit.
    batch = d.step(
        "expected_batch_at_flush",
        "Inputs in a batch when it is sent (full, or on the timeout)",
        min(p.max_batch_inputs, 1 + per_dispatcher * timeout_s),
        "1",
        noun="inputs",
        formula="min({max_batch_inputs}, 1 + {per_dispatcher_rps} req/s × {flush_timeout_s} s)",
    )
    d.step(
        "flush_on_timeout",
        "Does the timeout fire before the batch fills?",
        "yes" if batch < p.max_batch_inputs else "no",
        "1",
        formula="{expected_batch_at_flush} < {max_batch_inputs}",
    )
    # The same fleet arithmetic at a timeout half the fill time: what "a short timeout" costs.
    short_timeout = d.step(
        "short_timeout_s",
        "A timeout of half the fill time",
        d.value("batch_fill_time_s") / 2,
        "s",
        formula="{batch_fill_time_s} s / 2",
    )
    short_batch = d.step(
        "batch_at_short_timeout",
        "Inputs per call at that timeout",
        min(p.max_batch_inputs, 1 + per_dispatcher * short_timeout),
        "1",
        noun="inputs",
        formula="min({max_batch_inputs}, 1 + {per_dispatcher_rps} req/s × {short_timeout_s} s)",
    )
    d.step(
        "gpus_at_short_timeout",
        "GPUs at 100% busy with those batches",
        math.ceil(p.arrival_rps * call_s / short_batch - 1e-9),
        "1",
        noun="GPUs",
        formula="ceil({arrival_rps} req/s × {call_time_s} s / {batch_at_short_timeout})",
    )
    per_gpu_timeout = d.step(
        "per_gpu_rps_timeout_flush",
        "One GPU with batches of that size",
        batch / call_s,
        "1/s",
        noun="requests",
        formula="{expected_batch_at_flush} / {call_time_s} s",
    )
    d.step(
        "gpus_with_timeout_flush",
        "GPUs at 100% busy when batches are sent at that size",
        math.ceil(p.arrival_rps / per_gpu_timeout - 1e-9),
        "1",
        noun="GPUs",
        formula="ceil({arrival_rps} / {per_gpu_rps_timeout_flush})",
    )
    d.step(
        "gpus_recommended",
        "GPUs to provision: batches as the timeout shapes them, plus headroom",
        math.ceil(p.arrival_rps / (per_gpu_timeout * p.target_utilization) - 1e-9),
        "1",
        noun="GPUs",
        formula="ceil({arrival_rps} / ({per_gpu_rps_timeout_flush} × {target_utilization}))",
    )
    worst = d.step(
        "worst_batching_wait_s",
        "Longest a request waits for its batch to be sent (the first one in)",
        min(timeout_s, (p.max_batch_inputs - 1) / per_dispatcher),
        "s",
        formula="min({flush_timeout_s} s, ({max_batch_inputs} − 1) / {per_dispatcher_rps} req/s)",
    )
    d.step(
        "worst_latency_s",
        "Worst latency before any GPU queueing: batching wait plus the call",
        worst + call_s,
        "s",
        formula="{worst_batching_wait_s} s + {call_time_s} s",
    )
    _record_quiet_hours(d, p, timeout_s, call_s)
    _record_work_conserving(d, p, call_s, worst)
    if queue_tail:
        _record_queue_tail(d, p, batch, call_s, worst)
    _record_failures(d, batch, call_s)
    return d


def _record_quiet_hours(d: Derivation, p: Params, timeout_s: float, call_s: float) -> None:
    """The same fleet and timeout in the quiet hours, at a fortieth of the traffic: batches fill slowly,
    so the timeout sets the worst wait (the latency chart draws both against the timeout)."""
    quiet = d.step("quiet_arrival_rps", "Quiet-hours traffic: a fortieth of the scenario's", p.arrival_rps / 40,
                   "1/s", noun="requests", formula="{arrival_rps} req/s / 40")
    per_dispatcher = d.step("quiet_per_dispatcher_rps", "Quiet-hours traffic one dispatcher sees",
                            quiet / p.dispatchers, "1/s", noun="requests",
                            formula="{quiet_arrival_rps} req/s / {dispatchers}")
    wait = d.step("quiet_worst_batching_wait_s", "Longest batching wait in the quiet hours",
                  min(timeout_s, (p.max_batch_inputs - 1) / per_dispatcher), "s",
                  formula="min({flush_timeout_s} s, ({max_batch_inputs} − 1) / {quiet_per_dispatcher_rps} req/s)")
    d.step("quiet_worst_latency_s", "Worst latency in the quiet hours: batching wait plus the call", wait + call_s,
           "s", formula="{quiet_worst_batching_wait_s} s + {call_time_s} s")


def _record_work_conserving(d: Derivation, p: Params, call_s: float, worst: float) -> None:
    """The other dispatcher: no timer. Whenever a worker frees it takes whatever is queued, up to the
    limit. Batches then grow with load by themselves, so the fleet is the full-batch fleet with headroom
    (at least one worker per dispatcher). With fixed call times and every worker busy, a dispatcher's
    workers free one at a time, evenly staggered, so a request waits at most one free interval (the
    even-stream convention; a burst of more than the limit in one interval spills to the next worker)."""
    fleet = d.step(
        "wc_fleet",
        "GPUs under work-conserving dispatch: the full-batch fleet with headroom, one per dispatcher at least",
        max(d.value("gpus_at_target_util"), p.dispatchers),
        "1",
        noun="GPUs",
        formula="max({gpus_at_target_util}, {dispatchers})",
    )
    interval = d.step(
        "wc_free_interval_s",
        "Time between one of a dispatcher's workers freeing and the next (staggered)",
        call_s * p.dispatchers / fleet,
        "s",
        formula="{call_time_s} × {dispatchers} / {wc_fleet}",
    )
    d.step(
        "wc_batch",
        "Inputs a freed worker takes: what arrived since the last one freed, capped at the limit",
        min(p.max_batch_inputs, max(1.0, d.value("per_dispatcher_rps") * interval)),
        "1",
        noun="inputs",
        formula="min({max_batch_inputs}, max(1, {per_dispatcher_rps} × {wc_free_interval_s}))",
    )
    wc_wait = d.step(
        "wc_worst_wait_s",
        "Longest a request waits for a worker under work-conserving dispatch",
        interval,
        "s",
        formula="{wc_free_interval_s}",
    )
    d.step(
        "wc_worst_latency_s",
        "Its worst latency: the wait for a free worker plus the call",
        wc_wait + call_s,
        "s",
        formula="{wc_worst_wait_s} + {call_time_s}",
    )
    d.step(
        "wc_gpus_saved",
        "GPUs work-conserving dispatch saves against the timeout flush's fleet",
        d.value("gpus_recommended") - fleet,
        "1",
        noun="GPUs",
        formula="{gpus_recommended} − {wc_fleet}",
    )
    d.step(
        "shorter_worst_wait",
        "Which dispatcher has the shorter worst batching wait",
        "work-conserving dispatch" if wc_wait < worst else "the timeout flush",
        "1",
        formula="{wc_worst_wait_s} against {worst_batching_wait_s}",
        kind="verdict",
    )


def _record_queue_tail(d: Derivation, p: Params, batch: float, call_s: float, worst: float) -> None:
    """The GPU hand-off queue at the recommended fleet: M/D/c."""
    fleet = d.value("gpus_recommended")
    batch_rate = d.step(
        "batch_rate_per_s",
        "Sealed batches per second reaching the GPUs",
        p.arrival_rps / batch,
        "1/s",
        noun="batches",
        formula="{arrival_rps} / {expected_batch_at_flush}",
    )
    load = d.step(
        "gpu_offered_load",
        "GPUs' worth of calls at peak (offered load)",
        batch_rate * call_s,
        "1",
        noun="GPUs",
        formula="{batch_rate_per_s} × {call_time_s}",
    )
    d.step(
        "gpu_busy_at_recommended",
        "Busy share of each GPU in the recommended fleet",
        load / fleet,
        "1",
        percent=True,
        formula="{gpu_offered_load} / {gpus_recommended}",
    )
    mdc = f"M/D/c with c = {{gpus_recommended}}, {{batch_rate_per_s}} and D = {{call_time_s}}"
    method = queue.mdc_method(fleet, batch_rate, call_s)
    crommelin = {
        "exact": "Exact: Crommelin's M/D/c waiting-time distribution (Poisson batches, every call exactly "
                 "the call time), from the roots of z^c = e^(a (z − 1)).",
        "exponential tail": "Crommelin's exact share that waits and mean wait, with the tail taken as exponential "
                            "(the heavy-traffic form, within 13% of the exact p99 from 80% busy): the exact "
                            "distribution at this fleet and load costs too much to redraw on every move.",
        "half of M/M/c": "A fleet too large for the exact roots: Erlang C's share that waits and half its mean wait "
                         "(Kingman's heavy-traffic factor for fixed-length calls), the tail exponential.",
    }[method]
    d.step(
        "queue_wait_probability",
        "Share of batches that wait for a GPU (M/D/c)",
        queue.mdc_wait_probability(fleet, batch_rate, call_s),
        "1",
        percent=True,
        formula=f"P(W > 0) in {mdc}",
        kind="lookup",
        note=crommelin,
    )
    d.step(
        "queue_wait_mean_s",
        "Mean wait of a batch for a GPU (M/D/c)",
        # Where almost no batch waits, the roots' sum can round to -1e-16 s: a wait is never negative.
        max(0.0, queue.mdc_mean_wait_s(fleet, batch_rate, call_s)),
        "s",
        formula=f"E[W] in {mdc}",
        kind="lookup",
        note=crommelin,
    )
    unbounded = "Unbounded at 99.9% busy or more: the wait has no useful bound there."
    for pct in (95, 99):
        d.step(
            f"queue_wait_p{pct}_s",
            f"p{pct} of a batch's wait for a GPU (M/D/c)",
            queue.mdc_wait_quantile_s(fleet, batch_rate, call_s, pct / 100),
            "s",
            formula=f"least t with P(W ≤ t) ≥ {pct}% in {mdc}",
            kind="search",
            note=f"{crommelin} {unbounded}",
        )
    # The same queue if call times were exponential with the same mean: what a deterministic call buys.
    a_exp = queue.erlang_c_wait_probability(fleet, load) if load < fleet else 1.0
    d.step(
        "queue_wait_probability_exponential",
        "Share that would wait if call times were exponential (M/M/c, Erlang C)",
        a_exp,
        "1",
        percent=True,
        formula="C({gpus_recommended}, {gpu_offered_load})",
        kind="lookup",
        note="Erlang C, by the Erlang B recursion.",
    )
    if load >= fleet:
        p99_exp, formula = math.inf, ""
    elif a_exp <= 0.01:  # at most 1% wait at all (Erlang C may even underflow to 0 on a large idle fleet)
        p99_exp, formula = 0.0, "0 s"
    else:
        p99_exp = math.log(a_exp / 0.01) / (fleet / call_s - batch_rate)
        formula = ("ln({queue_wait_probability_exponential} / 0.01) / ({gpus_recommended} / {call_time_s} − "
                   "{batch_rate_per_s})")
    d.step(
        "queue_wait_p99_exponential_s",
        "p99 wait for a GPU if call times were exponential (M/M/c)",
        p99_exp,
        "s",
        formula=formula,
        note="0 when at most 1% of batches wait at all; unbounded when the fleet cannot keep up.",
    )
    q99 = d.value("queue_wait_p99_s")
    d.step(
        "batch_sojourn_p99_s",
        "p99 of a batch's time from sealing to its outputs: wait plus the call",
        q99 + call_s,
        "s",
        formula="{queue_wait_p99_s} + {call_time_s}",
    )
    d.step(
        "latency_bound_p99_s",
        "A bound on the p99 request latency: the worst batching wait + the p99 GPU wait + the call",
        worst + q99 + call_s,
        "s",
        formula="{worst_batching_wait_s} + {queue_wait_p99_s} + {call_time_s}",
        note="No request waits longer for its batch than the worst case, so at most 1% exceed this.",
    )
    d.step(
        "queue_tail_verdict",
        "Does queueing add to the p99?",
        "queueing adds its p99 wait, so promise the larger" if q99 > 0
        else "at most 1% of batches wait for a GPU at all, so queueing adds nothing at the p99",
        formula="{queue_wait_p99_s} against 0",
        kind="verdict",
    )


def _record_failures(d: Derivation, batch: float, call_s: float) -> None:
    d.step(
        "inputs_lost_per_gpu_failure",
        "Requests in flight on one GPU that fails mid-call",
        batch,
        "1",
        noun="requests",
        formula="{expected_batch_at_flush}",
    )
    d.step(
        "retry_load_after_gpu_loss_rps",
        "Extra load if those requests retry within one call time",
        batch / call_s,
        "1/s",
        noun="requests",
        formula="{inputs_lost_per_gpu_failure} / {call_time_s} s",
    )


# --------------------------------------------------------------------------------------------------
# The queue engine's run of the same hand-off queue


@dataclass(frozen=True)
class QueueRun:
    """One replication: Poisson batches, calls of exactly the call time, the recommended fleet."""

    servers: int
    batch_rate_per_s: float
    call_s: float
    batches: int
    wait_p95_s: float
    wait_p99_s: float
    mean_wait_s: float
    wait_share: float
    # P(wait > t) among the run's batches at each t asked for (`ccdf_t_s`), for a chart beside the exact one
    wait_ccdf: tuple[float, ...] = ()


def simulate_gpu_queue(p: Params, seed: int = 0, batches: int = 100_000, replications: int = 1,
                       ccdf_t_s: tuple[float, ...] = ()) -> list[QueueRun]:
    """`replications` independent runs of the M/D/c hand-off queue through the FIFO engine, from one
    seed (numpy's SeedSequence spawns a stream per run). The first 5% of each run, which starts
    empty, is dropped."""
    d = solve(p)
    c = int(d.value("gpus_recommended"))
    rate, call_s = d.value("batch_rate_per_s"), d.value("call_time_s")
    grid = np.asarray(ccdf_t_s, dtype=float)
    out = []
    for ss in np.random.SeedSequence(seed).spawn(replications):
        rng = np.random.default_rng(ss)
        arrivals = queue.poisson_arrivals(rng, rate, batches)
        waits = queue.fifo(arrivals, np.full(batches, call_s), c).wait_s[batches // 20:]
        ccdf = 1 - np.searchsorted(np.sort(waits), grid, side="right") / waits.size if grid.size else ()
        out.append(QueueRun(c, rate, call_s, batches, float(np.quantile(waits, 0.95)),
                            float(np.quantile(waits, 0.99)), float(waits.mean()), float(np.mean(waits > 0)),
                            tuple(float(x) for x in ccdf)))
    return out


def exact_wait_ccdf(d: Derivation, t_s: tuple[float, ...]) -> list[float]:
    """P(wait > t) for the page's M/D/c figures at each t, computed as the steps are: Crommelin's
    distribution where the page uses it exactly, else the exponential tail with the exact share that
    waits and the exact mean (the form the p95 and p99 steps then take)."""
    c, rate, call_s = int(d.value("gpus_recommended")), d.value("batch_rate_per_s"), d.value("call_time_s")
    p_wait = d.value("queue_wait_probability")
    mean = d.value("queue_wait_mean_s")
    if not math.isfinite(d.value("queue_wait_p99_s")):  # at 99.9% busy or more the wait has no bound
        return [1.0 for _ in t_s]
    if queue.mdc_method(c, rate, call_s) == "exact":
        return [1 - queue.mdc_wait_cdf(c, rate, call_s, t) if t >= 0 else 1.0 for t in t_s]
    if mean <= 0 or p_wait <= 0:
        return [0.0 for _ in t_s]
    return [p_wait * math.exp(-t * p_wait / mean) for t in t_s]


# What the page's panel runs: enough batches that the panel's p99 lands within 10% of the exact one at
# the defaults (tests/models/test_batched_inference_api.py), in about half a second.
PANEL_BATCHES = 100_000
PANEL_REPLICATIONS = 4


# What the page's panel runs: the queue above at the panel's length, its tail on a grid of waits.

CCDF_POINTS = 61


def ccdf_grid(d: Derivation) -> tuple[float, ...]:
    """Waits from 0 to past the exact p99 (at least one call), where the chart compares the tails."""
    tail = max(d.value("queue_wait_p99_s"), d.value("queue_wait_p95_s"))
    horizon = 1.5 * tail if math.isfinite(tail) and tail > 0 else d.value("call_time_s")
    return tuple(np.linspace(0.0, max(horizon, d.value("call_time_s")), CCDF_POINTS).tolist())


@dataclass(frozen=True)
class GpuQueueSim:
    grid_s: tuple[float, ...]  # the waits t the tail is read at
    runs: list[QueueRun]
    exact_ccdf: list[float]  # P(wait > t) of the page's M/D/c figures at each t

    @property
    def simulated_ccdf(self) -> list[float]:
        """P(wait > t) at each t, the mean over the runs."""
        return np.mean([run.wait_ccdf for run in self.runs], axis=0).tolist()


def simulate(p: Params, seed: int = 0) -> GpuQueueSim:
    """The panel's run: PANEL_REPLICATIONS runs of PANEL_BATCHES batches, the tail on ccdf_grid."""
    d = solve(p)
    grid = ccdf_grid(d)
    return GpuQueueSim(grid, simulate_gpu_queue(p, seed, PANEL_BATCHES, PANEL_REPLICATIONS, ccdf_t_s=grid),
                       exact_wait_ccdf(d, grid))


# (attribute of a run, step key stem, label) of each figure the panel's cards hold to the page's M/D/c step
PANEL_FIGURES = (("wait_p95_s", "queue_wait_p95_s", "p95 wait"), ("wait_p99_s", "queue_wait_p99_s", "p99 wait"),
                 ("wait_share", "queue_wait_probability", "Batches that wait"),
                 ("mean_wait_s", "queue_wait_mean_s", "Mean wait"))


def simulation_steps(p: Params, r: GpuQueueSim) -> Derivation:
    """The run's figures as steps: for each of the panel's figures the mean over the runs (beside the
    page's exact step), the lowest run and the highest; and whether the queue settles at all."""
    d = Derivation(p)
    d.step("simulated_runs", "Independent runs", len(r.runs), "1", noun="runs", kind="given")
    d.step("simulated_batches_per_run", "Batches in each run", r.runs[0].batches, "1", noun="batches", kind="given")
    for attr, key, label in PANEL_FIGURES:
        values = [getattr(run, attr) for run in r.runs]
        share = not key.endswith("_s")
        unit = "1" if share else "s"
        name = (lambda end: f"simulated_{key}{end}") if share else (lambda end: f"simulated_{key[:-2]}{end}_s")
        d.step(name(""), f"{label}, simulated", sum(values) / len(values), unit, percent=share, kind="simulated",
               note=f"{label}: the mean over the runs, beside the page's exact M/D/c step.")
        d.step(name("_lowest"), f"{label}, lowest run", min(values), unit, percent=share, kind="simulated")
        d.step(name("_highest"), f"{label}, highest run", max(values), unit, percent=share, kind="simulated")
    settles = math.isfinite(solve(p).value("queue_wait_p99_s"))
    d.step("simulated_queue_settles", "Does the queue settle at this load?",
           "The queue settles at this load, so each run's figures estimate the page's." if settles else
           "At this load the queue never settles: a run's waits grow for as long as it lasts, so the simulated "
           "figures measure the run's length, not a percentile.", "1", kind="verdict",
           formula="the page's M/D/c p99 wait: finite, or unbounded at 99.9% busy or more")
    return d
