"""Review a design document: an inference server that pins fixed batching (seed 001).

The page carries a short design document that is incomplete on purpose. It pins the batch
contract of `batched-inference-api` (up to 50 inputs per call, every call 200 ms, 2,000 req/s at
peak) and hides a capacity error against it: the author sizes the fleet at the full-batch floor
while the document's own flush timer sends half-full batches at peak. All batching arithmetic is
that page's `solve`, called twice (the document's timer, and the reviewer's alternative timer);
nothing about batching is retyped here.

The review is then scored, with pure functions tested on their own:

    risk costs          each risk's expected annual cost = probability per year x impact; the
                        capacity risk's impact comes from the shortfall, the others are knobs
    reference ranking   risks ordered by expected annual cost (the "lead with the worst" order)
    ranking score       Spearman's rho (Pearson on average ranks) and Kendall's tau-b between the
                        reviewer's order and the reference; unranked risks tie for the last places
    checklist coverage  the fraction of the eight checklist items judged right (missing or
                        present in the document)

Modelling choices stated on the page: arrivals are an even stream (the batched page's
convention); one dispatcher; a batch is sealed when it flushes and waits for a free GPU, so
batches do not grow while they queue; the capacity risk counts only the excess traffic (the
requests a shedding fleet would refuse), and the page shows the figure without that assumption.

The document's goal, p99 latency under the target, is checked against queueing: sealed batches
wait for a GPU in an M/M/c queue (Poisson batches; exponential call times, the pessimistic reading
of a fixed call: Erlang C gives P(wait > t) = C(c, a) e^(-(c mu - lambda) t), so the p99 wait is
ln(C / 0.01) / (c mu - lambda)), and a request's p99 is bounded by its worst batching wait plus that
p99 wait plus the call. The exact M/D/c figure (fixed calls) is shown beside it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Annotated, Iterable, Mapping, Sequence

from models.core import Derivation, Knob, StrictModel
from models.serving import batched_inference_api as batched
from models.engine.knobs import take
from models.engine.serving_knobs import SloKnobs
from models.sim import queue

HOURS_PER_YEAR = 24 * 365
SECONDS_PER_MINUTE = 60
P99_TAIL = 0.01  # the share a p99 goal lets past


@dataclass(frozen=True)
class Risk:
    key: str  # suffix of its step key: risk_expected_annual_cost_usd_<key>
    name: str  # short name for the ranking widget
    finding: str  # the review comment, one line
    checklist: str  # the checklist item the finding falls under


RISKS: tuple[Risk, ...] = (
    Risk("capacity", "Fleet sized at the floor",
         "The fleet is the full-batch floor, but the document's own timer sends partial batches at peak.",
         "scale and cost"),
    Risk("rollback", "No rollout or rollback",
         "The cut-over from v1 is one step to 100% of traffic, with no canary and no way back.",
         "rollout and rollback"),
    Risk("dispatcher", "One dispatcher, no failover",
         "A single dispatcher process owns every batch; its crash stops all traffic until someone restarts it.",
         "failure modes"),
    Risk("security", "No tenant isolation at the door",
         "Any caller with network access reaches the dispatcher: no authentication, no per-tenant limits.",
         "security"),
    Risk("retries", "Retries without idempotency keys",
         "A GPU that dies mid-call loses its batch; clients retry blindly and are charged twice.",
         "failure modes"),
    Risk("observability", "No queue or batch-fill metrics",
         "Nothing measures queue depth or batch fill, so the shortfall is reported by customers.",
         "observability"),
)
RISK_KEYS = tuple(r.key for r in RISKS)
# The order the page lists the findings in: fixed, and unrelated to any ranking, so the list
# itself gives nothing away.
DISPLAY_ORDER = ("observability", "security", "capacity", "retries", "rollback", "dispatcher")
RISK_BY_KEY = {r.key: r for r in RISKS}

CHECKLIST: tuple[str, ...] = (
    "goals and non-goals", "alternatives", "scale and cost", "failure modes",
    "rollout and rollback", "observability", "security", "migration",
)
# What the document on the page already covers (possibly wrongly): noticing an angle the author
# did consider is part of the review, so ticking one of these as missing is a false alarm.
DOC_COVERS: frozenset[str] = frozenset({"goals and non-goals", "alternatives", "scale and cost"})
DOC_MISSING: tuple[str, ...] = tuple(item for item in CHECKLIST if item not in DOC_COVERS)


def _usd_knob(label: str, help: str, default_draw: tuple[float, float]) -> Knob:
    return Knob(label, "USD", 1_000, 100_000_000, 1_000, log=True, help=help, draw=default_draw)


def _p_knob(label: str, help: str, draw: tuple[float, float]) -> Knob:
    return Knob(label, "", 0.001, 1.0, 0.001, percent=True, help=help, draw=draw)


class Params(StrictModel):
    # --- the document's capacity section: the batched page's contract ---------------------------
    max_batch_inputs: Annotated[
        int, Knob("Max batch per call", "inputs", 1, 512, 1, help="The fixed contract's batch limit.", draw=(32, 64)),
    ] = 50
    call_time_ms: Annotated[
        float,
        Knob("Call time", "ms", 10, 2000, 10, log=True, help="Every call takes this long, full or not.",
             draw=(100, 400)),
    ] = 200
    peak_rps: Annotated[
        float,
        Knob("Peak traffic", "req/s", 1, 100_000, log=True, help="The document's forecast peak, all clients.",
             draw=(1000, 4000)),
    ] = 2000
    flush_timeout_ms: Annotated[
        float,
        Knob("Document's flush timer", "ms", 1, 1000, 1, log=True,
             help="The author seals a batch at the limit or when this timer (started by its first request) fires.",
             draw=(4, 15)),
    ] = 12
    doc_spare_gpus: Annotated[
        int,
        Knob("Spares the author added", "GPUs", 0, 64, 1,
             help="GPUs the document provisions above its full-batch floor.", draw=(0, 2)),
    ] = 0
    target_utilization: take(SloKnobs, "target_utilization") = 0.8
    latency_target_ms: Annotated[
        float,
        Knob("Latency target (p99)", "ms", 100, 5000, 10, log=True,
             help="The document's goal; the reviewer's longer timer must stay inside it.", draw=(400, 1000)),
    ] = 500
    gpu_hour_usd: Annotated[
        float,
        Knob("GPU price", "USD/h", 0.5, 10, 0.1, help="Cost of one GPU-hour, used to price each fix.",
             draw=(1.5, 4)),
    ] = 2.5
    # --- the capacity risk: impact derived from the shortfall -----------------------------------
    p_capacity: Annotated[
        float, _p_knob("Capacity: chance the peak arrives this year",
                       "Probability that traffic reaches the forecast peak within the year.", (0.5, 0.95)),
    ] = 0.8
    peak_hours_per_day: Annotated[
        float,
        Knob("Peak hours per day", "h", 0.5, 12, 0.5, help="Hours a day traffic sits at the peak.", draw=(1, 4)),
    ] = 3
    days_to_fix: Annotated[
        float,
        Knob("Days to add capacity", "days", 1, 90, 1,
             help="From the first failed peak until more GPUs serve traffic (procurement, deploy).", draw=(7, 30)),
    ] = 14
    value_per_request_usd: Annotated[
        float,
        Knob("Revenue lost per failed request", "USD", 0.0001, 0.1, 0.0001, log=True,
             help="What a refused or timed-out request costs: lost revenue plus credits.", draw=(0.002, 0.02)),
    ] = 0.005
    # --- the other risks: probability per year x impact ------------------------------------------
    p_rollback: Annotated[
        float, _p_knob("Rollout: chance of a bad release", "A release that breaks serving, per year.", (0.2, 0.7)),
    ] = 0.4
    rollback_impact_usd: Annotated[
        float, _usd_knob("Rollout: cost of one bad release", "Hours of full outage while the old build is rebuilt.",
                         (100_000, 600_000)),
    ] = 300_000
    p_dispatcher: Annotated[
        float, _p_knob("Dispatcher: chance of a crash that needs a human", "Per year.", (0.3, 0.9)),
    ] = 0.6
    dispatcher_impact_usd: Annotated[
        float, _usd_knob("Dispatcher: cost of one crash", "All traffic down until the restart.",
                         (50_000, 300_000)),
    ] = 130_000
    p_security: Annotated[
        float, _p_knob("Security: chance of abuse or a breach", "Per year.", (0.01, 0.1)),
    ] = 0.04
    security_impact_usd: Annotated[
        float, _usd_knob("Security: cost of one incident", "Abuse bill, response, customers lost.",
                         (500_000, 5_000_000)),
    ] = 1_500_000
    p_retries: Annotated[
        float, _p_knob("Retries: chance of a double-billing incident", "Per year.", (0.3, 0.9)),
    ] = 0.6
    retries_impact_usd: Annotated[
        float, _usd_knob("Retries: cost of one incident", "Refunds, wasted GPU time, support load.",
                         (20_000, 150_000)),
    ] = 60_000
    p_observability: Annotated[
        float, _p_knob("Observability: chance of a long blind incident", "Per year.", (0.3, 0.8)),
    ] = 0.5
    observability_impact_usd: Annotated[
        float, _usd_knob("Observability: extra cost of one blind incident", "Longer detection and diagnosis.",
                         (20_000, 150_000)),
    ] = 50_000


def batched_params(p: Params, flush_timeout_ms: float) -> batched.Params:
    """The batched page's scenario for this document, at a given flush timer."""
    return batched.Params(
        max_batch_inputs=p.max_batch_inputs, call_time_ms=p.call_time_ms, arrival_rps=p.peak_rps,
        target_utilization=p.target_utilization, flush_timeout_ms=flush_timeout_ms, dispatchers=1,
    )


def alternative_timeout_ms(p: Params, fill_time_ms: float) -> float:
    """The reviewer's timer: long enough for a batch to fill at peak, inside the latency target and
    the batched model's range, and never shorter than the document's."""
    cap = min(p.latency_target_ms - p.call_time_ms, 1000.0)
    return max(p.flush_timeout_ms, min(fill_time_ms, cap))


def mmc_p99_wait_s(gpus: int, batch_rate_per_s: float, call_s: float) -> float:
    """p99 of the wait for a GPU in M/M/c: ln(C / 0.01) / (c mu - lambda), 0 when at most 1% wait,
    inf when the fleet cannot keep up."""
    load = batch_rate_per_s * call_s
    if load >= gpus:
        return math.inf
    c_wait = queue.erlang_c_wait_probability(gpus, load)
    if c_wait <= P99_TAIL:  # at most 1% wait at all (Erlang C may even underflow to 0 on a large idle fleet)
        return 0.0
    return math.log(c_wait / P99_TAIL) / (gpus / call_s - batch_rate_per_s)


def min_gpus_for_p99(batch_rate_per_s: float, call_s: float, allowed_wait_s: float) -> float:
    """Fewest GPUs whose M/M/c p99 wait is within `allowed_wait_s` (inf when nothing is allowed).
    The p99 wait falls as GPUs are added, so double, then bisect."""
    if allowed_wait_s < 0:
        return math.inf
    lo = math.floor(batch_rate_per_s * call_s)  # unstable: the p99 is infinite
    hi = lo + 1
    while mmc_p99_wait_s(hi, batch_rate_per_s, call_s) > allowed_wait_s:
        lo, hi = hi, 2 * hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if mmc_p99_wait_s(mid, batch_rate_per_s, call_s) <= allowed_wait_s else (mid, hi)
    return hi


def _record_p99_check(d: Derivation, who: str, label: str, gpus_key: str, inputs_key: str, worst_key: str,
                      call_s: float, peak_rps: float, target_s: float, record_unbounded: bool) -> str:
    """The p99 goal against queueing for one fleet: the steps, and the verdict."""
    gpus = int(d.value(gpus_key))
    rate = d.step(f"{who}_batch_rate_per_s", f"{label}: sealed batches per second at peak",
                  peak_rps / d.value(inputs_key), "1/s", noun="batches",
                  formula=f"{{peak_rps}} / {{{inputs_key}}}")
    load = d.step(f"{who}_offered_load_gpus", f"{label}: GPUs' worth of calls at peak", rate * call_s, "1",
                  noun="GPUs", formula=f"{{{who}_batch_rate_per_s}} × {{call_time_s}}")
    if load >= gpus:
        # No stationary queue, so no percentile: the backlog grows for as long as the peak lasts.
        why = f"{{{who}_offered_load_gpus}} ≥ {{{gpus_key}}}: the queue grows without bound"
        if record_unbounded:  # the prose names these figures: say ∞ rather than leave them out
            note = "∞: the offered load is at or above the fleet, so the queue grows without bound."
            d.step(f"{who}_erlang_c", f"{label}: share of batches that wait for a GPU (Erlang C)", 1.0, "1",
                   percent=True,
                   formula=why, kind="verdict", note="Everyone waits when the fleet cannot keep up.")
            for key, name in (("queue_wait_p99_s", "p99 wait for a GPU (M/M/c)"),
                              ("queue_wait_p99_fixed_calls_s", "p99 wait for a GPU with fixed calls (M/D/c)"),
                              ("latency_p99_s", "p99 latency bound (M/M/c)"),
                              ("latency_p99_fixed_calls_s", "p99 latency bound with fixed calls (M/D/c)")):
                d.step(f"{who}_{key}", f"{label}: {name}", math.inf, "s", note=note)
        d.step(f"{who}_p99_goal_met", f"{label}: does the p99 goal hold under the M/M/c hand check?", "no", "1",
               formula=why, kind="verdict")
        d.step(f"{who}_p99_goal_met_fixed_calls", f"{label}: does it hold with fixed calls (M/D/c)?", "no", "1",
               formula=why, kind="verdict")
        return "missed (the queue has no bound)"
    d.step(f"{who}_erlang_c", f"{label}: share of batches that wait for a GPU (Erlang C)",
           queue.erlang_c_wait_probability(gpus, load), "1", percent=True,
           formula=f"C({{{gpus_key}}}, {{{who}_offered_load_gpus}})", kind="lookup",
           note="Erlang C by the Erlang B recursion.")
    wait = mmc_p99_wait_s(gpus, rate, call_s)
    d.step(f"{who}_queue_wait_p99_s", f"{label}: p99 wait for a GPU (M/M/c)", wait, "s",
           formula=(f"ln({{{who}_erlang_c}} / 0.01) / ({{{gpus_key}}} / {{call_time_s}} − {{{who}_batch_rate_per_s}})"
                    if wait > 0 else "0 s"), note="0 when at most 1% of batches wait at all.")
    d.step(f"{who}_queue_wait_p99_fixed_calls_s", f"{label}: p99 wait for a GPU with fixed calls (M/D/c)",
           queue.mdc_wait_quantile_s(gpus, rate, call_s, 1 - P99_TAIL), "s",
           formula=f"least t with P(W ≤ t) ≥ 99% in M/D/c with c = {{{gpus_key}}}, {{{who}_batch_rate_per_s}} and "
                   "D = {call_time_s}", kind="search",
           note=(f"M/D/c by models/sim/queue.py ({queue.mdc_method(gpus, rate, call_s)}: Crommelin's exact "
                 "distribution where it is cheap, an exponential tail with the exact mass and mean elsewhere); "
                 "∞ at 99.9% busy or more."))
    p99 = d.step(f"{who}_latency_p99_s", f"{label}: p99 latency bound, worst batching wait + p99 wait (M/M/c) + call",
                 d.value(worst_key) + wait, "s", formula=f"{{{worst_key}}} + {{{who}_queue_wait_p99_s}}")
    p99_fixed = d.step(f"{who}_latency_p99_fixed_calls_s",
                       f"{label}: p99 latency bound with fixed calls, worst batching wait + p99 wait (M/D/c) + call",
                       d.value(worst_key) + d.value(f"{who}_queue_wait_p99_fixed_calls_s"), "s",
                       formula=f"{{{worst_key}}} + {{{who}_queue_wait_p99_fixed_calls_s}}")
    met = d.step(f"{who}_p99_goal_met", f"{label}: does the p99 goal hold under the M/M/c hand check?",
                 "yes" if p99 < target_s else "no", "1",
                 formula=f"{{{who}_latency_p99_s}} < {{latency_target_ms}}", kind="verdict")
    met_fixed = d.step(f"{who}_p99_goal_met_fixed_calls", f"{label}: does it hold with fixed calls (M/D/c)?",
                       "yes" if p99_fixed < target_s else "no", "1",
                       formula=f"{{{who}_latency_p99_fixed_calls_s}} < {{latency_target_ms}}", kind="verdict")
    if met == "yes":
        return "met"
    return "met only because calls are fixed" if met_fixed == "yes" else "missed"


def solve(p: Params) -> Derivation:
    d = Derivation(p)
    doc = batched.solve(batched_params(p, p.flush_timeout_ms), queue_tail=False)

    # --- what the document claims ----------------------------------------------------------------
    call_s = d.step("call_time_s", "One batch call", doc.value("call_time_s"), "s")
    full = d.step("per_gpu_full_batch_rps", "One GPU, every call full", doc.value("per_gpu_rps_full"), "1/s",
                  noun="requests", formula="{max_batch_inputs} inputs / {call_time_s} s")
    floor = d.step("doc_floor_gpus", "The document's arithmetic: peak over a full GPU", doc.value("gpus_floor"),
                   "1", noun="GPUs", formula="ceil({peak_rps} req/s / {per_gpu_full_batch_rps} req/s)")
    fleet = d.step("doc_fleet_gpus", "GPUs the document provisions", floor + p.doc_spare_gpus, "1", noun="GPUs",
                   formula="{doc_floor_gpus} + {doc_spare_gpus} spares")
    d.step("doc_fleet_cost_per_year_usd", "The document's fleet, per year", fleet * p.gpu_hour_usd * HOURS_PER_YEAR,
           "USD", formula="{doc_fleet_gpus} GPUs × {gpu_hour_usd} USD/h × 8,760 h")

    # --- what the document's own timer does at peak ----------------------------------------------
    d.step("batch_fill_time_s", "Time for a full batch to arrive at peak", doc.value("batch_fill_time_s"), "s",
           formula="{max_batch_inputs} / {peak_rps} req/s")
    d.step("doc_timeout_s", "The document's flush timer", doc.value("flush_timeout_s"), "s")
    batch = d.step("inputs_per_call_at_peak", "Inputs in a call when the timer seals it",
                   doc.value("expected_batch_at_flush"), "1", noun="inputs",
                   formula="min({max_batch_inputs}, 1 + {peak_rps} req/s × {doc_timeout_s} s)")
    d.step("batch_fill_at_peak", "Batch fill at peak", batch / p.max_batch_inputs, "1", percent=True,
           formula="{inputs_per_call_at_peak} / {max_batch_inputs}")
    per_gpu = d.step("per_gpu_rps_at_doc_timer", "One GPU with those calls", doc.value("per_gpu_rps_timeout_flush"),
                     "1/s", noun="requests", formula="{inputs_per_call_at_peak} / {call_time_s} s")
    needed = d.step("gpus_needed_at_peak", "GPUs needed at peak, 100% busy, with the document's timer",
                    doc.value("gpus_with_timeout_flush"), "1", noun="GPUs",
                    formula="ceil({peak_rps} req/s / {per_gpu_rps_at_doc_timer} req/s)")
    d.step("shortfall_at_peak_gpus", "GPUs the document is short at peak (100% busy)", max(0, needed - fleet), "1",
           noun="GPUs", formula="max(0, {gpus_needed_at_peak} − {doc_fleet_gpus})")
    capacity = d.step("doc_capacity_rps", "What the document's fleet serves with those calls", fleet * per_gpu, "1/s",
                      noun="requests", formula="{doc_fleet_gpus} GPUs × {per_gpu_rps_at_doc_timer} req/s")
    d.step("doc_load_at_peak", "Offered load on the document's fleet at peak", p.peak_rps / capacity, "1",
           percent=True,
           formula="{peak_rps} / {doc_capacity_rps}")
    excess = d.step("excess_rps_at_peak", "Peak traffic the fleet cannot serve", max(0.0, p.peak_rps - capacity),
                    "1/s", noun="requests", formula="max(0 req/s, {peak_rps} − {doc_capacity_rps})")
    backlog = d.step("backlog_after_peak_minute", "Sealed-batch queue after one minute of peak, no shedding",
                     excess * SECONDS_PER_MINUTE, "1", noun="requests",
                     formula="{excess_rps_at_peak} req/s × 60 s")
    d.step("wait_after_peak_minute_s", "Queue wait of a request arriving one minute into the peak",
           backlog / capacity, "s", formula="{backlog_after_peak_minute} / {doc_capacity_rps} req/s")
    headroom = d.step("gpus_needed_with_headroom", "GPUs with the document's timer and utilization headroom",
                      doc.value("gpus_recommended"), "1", noun="GPUs",
                      formula="ceil({peak_rps} / ({per_gpu_rps_at_doc_timer} × {target_utilization}))")
    short_headroom = d.step("shortfall_with_headroom_gpus", "GPUs short once headroom is counted",
                            max(0, headroom - fleet), "1", noun="GPUs",
                            formula="max(0, {gpus_needed_with_headroom} − {doc_fleet_gpus})")
    d.step("doc_worst_latency_s", "Worst latency before queueing, document's timer", doc.value("worst_latency_s"), "s",
           formula="min({doc_timeout_s} s, ({max_batch_inputs} − 1) / {peak_rps} req/s) + {call_time_s} s")

    # --- the reviewer's alternative, inside the pinned contract ----------------------------------
    alt_ms = alternative_timeout_ms(p, doc.value("batch_fill_time_s") * 1000)
    alt = batched.solve(batched_params(p, alt_ms), queue_tail=False)
    d.step("alt_timeout_s", "Alternative timer: the fill time, capped by the latency target",
           alt.value("flush_timeout_s"), "s",
           formula="max({doc_timeout_s}, min({batch_fill_time_s}, {latency_target_ms} − {call_time_ms}, 1,000 ms))")
    d.step("alt_inputs_per_call", "Inputs per call with that timer", alt.value("expected_batch_at_flush"), "1",
           noun="inputs", formula="min({max_batch_inputs}, 1 + {peak_rps} req/s × {alt_timeout_s} s)")
    alt_gpus = d.step("alt_gpus_with_headroom", "GPUs with that timer and headroom", alt.value("gpus_recommended"),
                      "1", noun="GPUs",
                      formula="ceil({peak_rps} × {call_time_s} s / ({alt_inputs_per_call} × {target_utilization}))")
    d.step("alt_worst_latency_s", "Worst latency before queueing, alternative timer", alt.value("worst_latency_s"),
           "s", formula="min({alt_timeout_s} s, ({max_batch_inputs} − 1) / {peak_rps} req/s) + {call_time_s} s")
    d.step("alt_added_wait_s", "Worst extra batching wait the alternative costs",
           alt.value("worst_batching_wait_s") - doc.value("worst_batching_wait_s"), "s",
           formula="{alt_worst_latency_s} s − {doc_worst_latency_s} s")

    # --- the p99 latency goal against queueing ---------------------------------------------------
    target_s = p.latency_target_ms / 1000
    doc_ok = _record_p99_check(d, "doc", "The document's fleet and timer", "doc_fleet_gpus", "inputs_per_call_at_peak",
                               "doc_worst_latency_s", call_s, p.peak_rps, target_s, record_unbounded=False)
    alt_ok = _record_p99_check(d, "alt", "The reviewer's timer and fleet", "alt_gpus_with_headroom",
                               "alt_inputs_per_call", "alt_worst_latency_s", call_s, p.peak_rps, target_s,
                               record_unbounded=True)
    d.step("p99_goal_verdict", "The p99 goal, checked against queueing",
           f"document: {doc_ok}; reviewer's fix: {alt_ok}", "1",
           formula="{doc_p99_goal_met} and {doc_p99_goal_met_fixed_calls} (document); {alt_p99_goal_met} and "
                   "{alt_p99_goal_met_fixed_calls} (fix)", kind="verdict")
    d.step("p99_goal_min_gpus_doc_timer", "Fewest GPUs that meet the p99 goal with the document's timer (M/M/c)",
           min_gpus_for_p99(d.value("doc_batch_rate_per_s"), call_s, target_s - d.value("doc_worst_latency_s")), "1",
           noun="GPUs", formula="fewest c with {doc_worst_latency_s} + p99 wait of M/M/c ≤ {latency_target_ms}",
           kind="search", note="∞ when the batching wait and the call alone exceed the target.")

    gpu_year = p.gpu_hour_usd * HOURS_PER_YEAR
    buy = d.step("fix_by_buying_cost_per_year_usd", "Fix by adding GPUs at the document's timer",
                 short_headroom * gpu_year, "USD",
                 formula="{shortfall_with_headroom_gpus} GPUs × {gpu_hour_usd} USD/h × 8,760 h")
    alt_extra = d.step("alt_extra_gpus", "GPUs the alternative adds to the document's fleet",
                       max(0, alt_gpus - fleet), "1", noun="GPUs",
                       formula="max(0, {alt_gpus_with_headroom} − {doc_fleet_gpus})")
    alt_cost = d.step("fix_by_timer_cost_per_year_usd", "Fix by the longer timer, per year", alt_extra * gpu_year,
                      "USD", formula="{alt_extra_gpus} GPUs × {gpu_hour_usd} USD/h × 8,760 h")
    d.step("alt_saving_per_year_usd", "What the timer fix saves over buying GPUs", buy - alt_cost, "USD",
           formula="{fix_by_buying_cost_per_year_usd} − {fix_by_timer_cost_per_year_usd}")

    # --- risks: expected annual cost = probability x impact --------------------------------------
    peak_s_until_fixed = p.peak_hours_per_day * 3600 * p.days_to_fix
    impact = d.step("capacity_impact_usd", "Capacity: cost of one season of failed peaks, excess traffic only",
                    excess * peak_s_until_fixed * p.value_per_request_usd, "USD",
                    formula="{excess_rps_at_peak} × {peak_hours_per_day} / 1 day × {days_to_fix} × "
                            "{value_per_request_usd}")
    d.step("capacity_impact_without_shedding_usd",
           "The same without shedding: every peak request queues behind the backlog and times out",
           (p.peak_rps if excess > 0 else 0.0) * peak_s_until_fixed * p.value_per_request_usd, "USD",
           formula="{peak_rps} × {peak_hours_per_day} / 1 day × {days_to_fix} × {value_per_request_usd}"
           if excess > 0 else "0 USD (nothing is short)")
    costs: dict[str, float] = {}
    costs["capacity"] = d.step(
        "risk_expected_annual_cost_usd_capacity", "Capacity: expected annual cost", p.p_capacity * impact, "USD",
        formula="{p_capacity} × {capacity_impact_usd} USD")
    for key in RISK_KEYS[1:]:
        costs[key] = d.step(
            f"risk_expected_annual_cost_usd_{key}", f"{RISK_BY_KEY[key].name}: expected annual cost",
            getattr(p, f"p_{key}") * getattr(p, f"{key}_impact_usd"), "USD",
            formula=f"{{p_{key}}} × {{{key}_impact_usd}} USD")
    order = reference_order(costs)
    d.step("risk_ranking", "Risks by expected annual cost, worst first", " > ".join(order), "1",
           formula="sort the six by probability × impact", kind="verdict")
    d.step("top_risk", "The risk to lead with", order[0], "1", formula="first of {risk_ranking}", kind="verdict")
    # The inputs are guesses good to a factor of about 2, so a strict order among near neighbours is
    # false precision: a risk within 2x of its tier's first joins that tier ("≈"), else starts a new one.
    tiers: list[list[str]] = []
    for key in order:
        if tiers and 2 * costs[key] >= costs[tiers[-1][0]]:
            tiers[-1].append(key)
        else:
            tiers.append([key])
    d.step("risk_tiers", "Risks in tiers: within 2× of a tier's first counts as a tie",
           " > ".join(" ≈ ".join(t) for t in tiers), "1",
           formula="walk {risk_ranking}; a risk at least half its tier's first joins it", kind="verdict")
    sec = order.index("security") + 1
    d.step("security_rank", "Security's place in that order", sec, "1",
           formula="position of security in {risk_ranking}", kind="search")
    d.step("security_rank_place", "Where that place sits in the table",
           {1: "at the top", 2: "near the top", len(order) - 1: "near the bottom", len(order): "at the bottom"}
           .get(sec, "mid-table"), formula="{security_rank} of six", kind="verdict")
    top = d.step("risk_expected_annual_cost_usd", "Expected annual cost of the top risk", costs[order[0]], "USD",
                 formula="max(" + ", ".join(f"{{risk_expected_annual_cost_usd_{k}}}" for k in RISK_KEYS) + ")")
    total = d.step("total_expected_annual_cost_usd", "All six risks, expected per year", sum(costs.values()), "USD",
                   formula=" + ".join(f"{{risk_expected_annual_cost_usd_{k}}}" for k in RISK_KEYS))
    d.step("top_risk_share", "Top risk's share of the total", top / total if total else 0.0, "1",
           percent=True,
           formula="{risk_expected_annual_cost_usd} / {total_expected_annual_cost_usd}")
    second = costs[order[1]]
    d.step("top_to_second_ratio", "Top risk over the runner-up", top / second if second else 0.0, "1", noun="×",
           formula=f"{{risk_expected_annual_cost_usd}} / {{risk_expected_annual_cost_usd_{order[1]}}}")

    # --- how far the guesses can move before the lead changes ------------------------------------
    others = RISK_KEYS[1:]
    largest_other = d.step(
        "largest_other_risk_usd", "The largest risk other than capacity, expected per year",
        max(costs[k] for k in others), "USD",
        formula="max(" + ", ".join(f"{{risk_expected_annual_cost_usd_{k}}}" for k in others) + ")")
    if impact > 0:
        d.step("capacity_break_even_p", "Chance of the peak at which capacity ties the largest other risk",
               largest_other / impact, "1", percent=True,
               formula="{largest_other_risk_usd} / {capacity_impact_usd}",
               note="Above this probability capacity leads the review; the page's value is a guess.")
        d.step("capacity_break_even_value_usd", "Value of a failed request at which capacity ties the largest other risk",
               p.value_per_request_usd * largest_other / costs["capacity"], "USD",
               formula="{value_per_request_usd} × {largest_other_risk_usd} / {risk_expected_annual_cost_usd_capacity}")
    else:
        note = "Nothing is short, so no probability or request value makes capacity lead."
        d.step("capacity_break_even_p", "Chance of the peak at which capacity ties the largest other risk",
               math.inf, "1", percent=True, note=note)
        d.step("capacity_break_even_value_usd", "Value of a failed request at which capacity ties the largest other risk",
               math.inf, "USD", note=note)

    # --- the checklist ---------------------------------------------------------------------------
    d.step("checklist_items", "Checklist items", len(CHECKLIST), "1", noun="items",
           formula=" + ".join(f"1 ({item})" for item in CHECKLIST))
    d.step("checklist_covered_count", "Items the document covers (rightly or wrongly)", len(DOC_COVERS), "1",
           noun="items", formula=" + ".join(f"1 ({i})" for i in CHECKLIST if i in DOC_COVERS))
    d.step("checklist_missing_count", "Items the document leaves out", len(DOC_MISSING), "1", noun="items",
           formula=" + ".join(f"1 ({i})" for i in DOC_MISSING))
    return d


# --------------------------------------------------------------------------------------------------
# Scoring a review: pure functions, tested by hand.


def reference_order(costs: Mapping[str, float]) -> list[str]:
    """Risk keys by expected annual cost, largest first; ties keep the RISKS order."""
    position = {k: i for i, k in enumerate(RISK_KEYS)}
    return sorted(costs, key=lambda k: (-costs[k], position.get(k, len(position))))


def average_ranks(values: Sequence[float]) -> list[float]:
    """Rank 1 for the smallest value; tied values share the mean of the ranks they span."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        mean = (i + j) / 2 + 1
        for k in range(i, j + 1):
            ranks[order[k]] = mean
        i = j + 1
    return ranks


def ranks_from_order(order: Sequence[str], items: Sequence[str]) -> list[float]:
    """A reviewer's order (worst first, possibly partial) -> a rank per item, in `items` order.

    Ranked items take places 1..m; items left out tie for the remaining places (their mean)."""
    seen: list[str] = []
    for key in order:
        if key not in items:
            raise ValueError(f"unknown risk '{key}'")
        if key in seen:
            raise ValueError(f"risk '{key}' ranked twice")
        seen.append(key)
    m, n = len(seen), len(items)
    tail = (m + 1 + n) / 2
    return [float(seen.index(k) + 1) if k in seen else tail for k in items]


def spearman_rho(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Spearman's rho as Pearson's correlation of the two rank vectors (exact with ties).

    None when either side has no spread (every item tied): the correlation is undefined."""
    if len(a) != len(b):
        raise ValueError("rank vectors differ in length")
    n = len(a)
    if n < 2:
        return None
    ra, rb = average_ranks(a), average_ranks(b)
    ma, mb = sum(ra) / n, sum(rb) / n
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    va = sum((x - ma) ** 2 for x in ra)
    vb = sum((y - mb) ** 2 for y in rb)
    if va == 0 or vb == 0:
        return None
    return cov / math.sqrt(va * vb)


def kendall_tau_b(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Kendall's tau-b: (concordant − discordant) over the pairs not tied on each side."""
    if len(a) != len(b):
        raise ValueError("rank vectors differ in length")
    n = len(a)
    concordant = discordant = ties_a = ties_b = 0
    for i in range(n):
        for j in range(i + 1, n):
            da, db = a[i] - a[j], b[i] - b[j]
            if da == 0:
                ties_a += 1
            if db == 0:
                ties_b += 1
            if da * db > 0:
                concordant += 1
            elif da * db < 0:
                discordant += 1
    pairs = n * (n - 1) // 2
    denom = math.sqrt((pairs - ties_a) * (pairs - ties_b))
    if denom == 0:
        return None
    return (concordant - discordant) / denom


@dataclass(frozen=True)
class RankingScore:
    spearman: float | None
    kendall: float | None
    top_match: bool
    ranked: int
    reference: tuple[str, ...]


def score_ranking(user_order: Sequence[str], costs: Mapping[str, float]) -> RankingScore:
    """The reviewer's order against the reference, both as ranks over the same risks."""
    items = list(RISK_KEYS)
    user = ranks_from_order(user_order, items)
    # Reference rank 1 = largest expected cost: rank the negated costs; equal costs tie.
    ref = average_ranks([-costs[k] for k in items])
    reference = tuple(reference_order(costs))
    return RankingScore(
        spearman=spearman_rho(user, ref),
        kendall=kendall_tau_b(user, ref),
        top_match=bool(user_order) and costs[user_order[0]] == max(costs.values()),
        ranked=len(user_order),
        reference=reference,
    )


def costs_of(d: Derivation) -> dict[str, float]:
    return {k: float(d.value(f"risk_expected_annual_cost_usd_{k}")) for k in RISK_KEYS}


@dataclass(frozen=True)
class ChecklistScore:
    coverage: float  # fraction of the eight items judged right
    found: tuple[str, ...]  # missing items the reviewer named
    overlooked: tuple[str, ...]  # missing items the reviewer did not name
    false_alarms: tuple[str, ...]  # items the document covers but the reviewer called missing


def score_checklist(named_missing: Iterable[str]) -> ChecklistScore:
    named = set(named_missing)
    unknown = named - set(CHECKLIST)
    if unknown:
        raise ValueError(f"not checklist items: {sorted(unknown)}")
    right = sum(1 for item in CHECKLIST if (item in named) == (item in DOC_MISSING))
    return ChecklistScore(
        coverage=right / len(CHECKLIST),
        found=tuple(i for i in DOC_MISSING if i in named),
        overlooked=tuple(i for i in DOC_MISSING if i not in named),
        false_alarms=tuple(i for i in CHECKLIST if i in named and i in DOC_COVERS),
    )


_NUMBER = re.compile(r"\d")
_TRADE = re.compile(r"\b(trade[- ]?off|costs?|but|at the (?:cost|price|expense) of|instead|versus|vs\.?|in exchange)\b",
                    re.I)
_INSIDE = re.compile(r"\b(timer|timeout|batch(?:es|ing)?|dispatcher|queue|fill|shed(?:ding)?|flush)\b", re.I)


@dataclass(frozen=True)
class AlternativeCheck:
    has_number: bool
    names_a_tradeoff: bool
    works_inside_the_contract: bool

    @property
    def passed(self) -> int:
        return sum((self.has_number, self.names_a_tradeoff, self.works_inside_the_contract))


def check_alternative(text: str) -> AlternativeCheck:
    """Three things a reviewer's alternative should carry; a checklist, not a grade of the idea."""
    return AlternativeCheck(
        has_number=bool(_NUMBER.search(text)),
        names_a_tradeoff=bool(_TRADE.search(text)),
        works_inside_the_contract=bool(_INSIDE.search(text)),
    )
