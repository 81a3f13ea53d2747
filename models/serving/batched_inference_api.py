"""Batched inference API behind a fixed batch contract (seed 001, the narrow variant).

The GPU call is fixed: up to `max_batch_inputs` inputs, always `call_time_ms`. Everything the
design controls is the dispatcher: how full each batch is, how long it waits to fill, and how
much headroom the fleet keeps. Arrival convention (stated on the page): requests arrive as an
even stream at `arrival_rps / dispatchers` per dispatcher; a batch's timer starts with its first
request; it flushes at `max_batch_inputs` or when the timer fires, whichever comes first; a
flushed batch is sealed. Poisson arrivals give slightly smaller batches near the cap.
"""

from __future__ import annotations

import math
from typing import Annotated

from models.core import Derivation, Knob, StrictModel
from models.engine.knobs import take
from models.engine.serving_knobs import SloKnobs


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


def solve(p: Params) -> Derivation:
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
        100 * p.arrival_rps / (d.value("gpus_floor") * full),
        "%",
        formula="{arrival_rps} / ({gpus_floor} × {per_gpu_rps_full})",
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
    return d
