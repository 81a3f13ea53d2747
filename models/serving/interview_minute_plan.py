"""The 45-minute plan for a serving-platform design, and the worked opening it protects.

The plan is the seeds' 5 / 7 / 10 / 16 / 5 minutes (numbers, shape, arithmetic, depth, failure
modes): 43 of 45 planned, 2 of slack. A 60-minute round scales every phase by 60 / 45 and rounds
each to the nearest whole minute (a modelling choice stated on the page: the ratios are what
carry over, and a clock reads in whole minutes). `phase_plan` is what the mock interview's
timer uses, so the page and the clock cannot disagree.

The worked opening is a coding assistant: an open-loop request rate (developers x completions
per developer per minute), a long context almost all of which the prefix cache already holds,
and short completions under a tight TPOT. The engine and fleet arithmetic is the shared engine's
(models/engine: the roofline with its all-reduces and fixed step cost, the served request shape,
the fleet at the batch each replica holds), the same the serving-platform page runs.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

from models.core import PHASES, Derivation, Knob, StrictModel
from models.units import format_quantity
from models.engine import serving as sv
from models.engine.knobs import with_defaults
from models.engine.record import record_efficiency_source, record_fleet, record_served
from models.engine.serving_knobs import ServingKnobs, served

BASE_ROUND_MINUTES = 45
# The seeds' plan for a 45-minute round, in interview order.
PHASE_MINUTES_45: dict[str, int] = {"numbers": 5, "shape": 7, "arithmetic": 10, "depth": 16, "failure_modes": 5}
assert tuple(PHASE_MINUTES_45) == PHASES
DEPTH_TOPICS = 2  # go deep on two things the interviewer picks, not five they did not


def phase_plan(round_minutes: float) -> dict[str, int]:
    """Minutes per phase for a round of `round_minutes`: the 45-minute plan scaled, each phase
    rounded half up to a whole minute (45 -> 5/7/10/16/5, 60 -> 7/9/13/21/7)."""
    scale = round_minutes / BASE_ROUND_MINUTES
    return {ph: int(math.floor(m * scale + 0.5)) for ph, m in PHASE_MINUTES_45.items()}


def checkpoints(round_minutes: float) -> dict[str, int]:
    """Cumulative minute at which each phase should be finished."""
    out, t = {}, 0
    for ph, m in phase_plan(round_minutes).items():
        t += m
        out[ph] = t
    return out


class _PlanKnobs(StrictModel):
    round_minutes: Annotated[
        Literal[45, 60],
        Knob("Round length", "min", 45, 60,
             help="The plan is written for 45 minutes; a 60-minute round scales every phase by 60/45.",
             draw=(45, 45)),
    ] = 45
    developers: Annotated[
        int,
        Knob("Active developers at peak", "developers", 100, 1_000_000, 1, log=True,
             help="Developers typing in an editor with the assistant on, at the busiest hour.",
             draw=(2000, 100_000)),
    ] = 10_000
    completions_per_developer_per_min: Annotated[
        float,
        Knob("Completions per developer", "per min", 0.5, 30, log=True,
             help="Requests each active developer triggers per minute, after the editor's debounce.",
             draw=(2, 12)),
    ] = 6
    typing_chars_per_s: Annotated[
        float,
        Knob("Typing speed", "chars/s", 1, 15, 0.5,
             help="Characters a developer types per second while a completion is in flight (5 is about 60 words a minute).",
             draw=(3, 8)),
    ] = 5
    suffix_share: Annotated[
        float,
        Knob("Context after the cursor", "", 0.0, 0.6, 0.01, percent=True,
             help="Share of the prompt that is code after the cursor: the fill-in-the-middle suffix.",
             draw=(0.05, 0.4)),
    ] = 0.2
    probe_period_s: Annotated[
        float,
        Knob("Health-check period", "s", 1, 60, 1,
             help="How often the platform probes each replica (a Kubernetes readiness probe's periodSeconds).",
             draw=(2, 15)),
    ] = 10
    probe_failures: Annotated[
        int,
        Knob("Failed probes before removal", "", 1, 10, 1,
             help="Consecutive failed probes before a replica leaves the router (failureThreshold).",
             draw=(1, 5)),
    ] = 3


# The coding assistant's request shape: 8,000 tokens of context (file, tabs, snippets), 90% of it
# cached from the developer's previous request, 50-token completions under a 15 ms TPOT, on a
# small model that fits one H100. The efficiencies are the engine's.
_ASSISTANT = dict(model="Llama-3-8B", tp_degree=1, prompt_tokens=8000, prefix_cache_hit=0.9, output_tokens=50,
                  tpot_target_ms=15)


class Params(with_defaults(ServingKnobs, **_ASSISTANT), _PlanKnobs):
    """The round and the load first, then the engine's request, SLO, batch and replica knobs."""


_PHASE_LABEL = {"numbers": "Numbers", "shape": "Shape", "arithmetic": "Arithmetic", "depth": "Depth",
                "failure_modes": "Failure modes"}


def solve(p: Params) -> Derivation:
    d = Derivation(p)

    # --- the plan ---
    d.step("plan_scale", "Round length over the 45 minutes the plan is written for",
           p.round_minutes / BASE_ROUND_MINUTES, "1", noun="×", formula=f"{{round_minutes}} / {BASE_ROUND_MINUTES} min")
    plan = phase_plan(p.round_minutes)
    for ph, base in PHASE_MINUTES_45.items():
        d.step(f"{ph}_minutes", f"{_PHASE_LABEL[ph]} phase", plan[ph], "min",
               formula=f"round({base} × {{round_minutes}} / {BASE_ROUND_MINUTES} min) × 1 min")
    planned = d.step("planned_minutes", "Minutes the plan spends", sum(plan.values()), "min",
                     formula=" + ".join(f"{{{ph}_minutes}}" for ph in PHASES))
    d.step("slack_minutes", "Minutes left over: the interviewer's questions and a late answer",
           p.round_minutes - planned, "min", formula="{round_minutes} − {planned_minutes}")
    previous = None
    for ph in PHASES:
        key = f"checkpoint_end_of_{ph}"
        d.step(key, f"Clock when {_PHASE_LABEL[ph].lower()} should be done",
               checkpoints(p.round_minutes)[ph], "min",
               formula=f"0 + {{{ph}_minutes}}" if previous is None else f"{{{previous}}} + {{{ph}_minutes}}")
        previous = key
    d.step("depth_minutes_per_topic", f"Depth minutes per topic ({DEPTH_TOPICS} topics)",
           plan["depth"] / DEPTH_TOPICS, "min", formula=f"{{depth_minutes}} / {DEPTH_TOPICS}")
    d.step("depth_minutes_if_extra_to_depth", "Depth minutes if a longer round's extra time all went to depth",
           PHASE_MINUTES_45["depth"] + p.round_minutes - BASE_ROUND_MINUTES, "min",
           formula=f"{PHASE_MINUTES_45['depth']} min + {{round_minutes}} − {BASE_ROUND_MINUTES} min")
    d.step("depth_share", "Share of the planned minutes that go to depth",
           plan["depth"] / planned, "1", percent=True, formula="{depth_minutes} / {planned_minutes}")

    # --- the worked opening: a coding assistant ---
    rate = d.step("request_rate", "Completion requests per second at peak",
                  p.developers * p.completions_per_developer_per_min / 60, "1/s", noun="requests",
                  formula="{developers} × {completions_per_developer_per_min} / 60 s")
    e = record_served(d, p)
    d.step("replica_layout", "What one replica runs on",
           f"one {p.gpu}" if p.tp_degree == 1 else f"{p.tp_degree} × {p.gpu}",
           formula="{tp_degree} × {gpu}", kind="verdict")
    record_efficiency_source(d, p)
    d.step("uncached_prompt_tokens_per_s", "Context tokens per second that need prefill",
           rate * e.uncached_prompt_tokens, "1/s", noun="tokens",
           formula="{request_rate} × {uncached_prompt_tokens}")
    d.step("prompt_tokens_per_s", "Context tokens per second, cached or not", rate * p.prompt_tokens, "1/s",
           noun="tokens", formula="{request_rate} × {prompt_tokens}")
    latency = d.step("completion_latency_s", "One completion: prefill, then every token at the decode step",
                     e.prefill_s_per_request + p.output_tokens * e.decode_step_s, "s",
                     formula="{prefill_s_per_request} + {output_tokens} × {decode_step_s}")
    in_flight = d.step("requests_in_flight", "Completions in flight (Little's law)", rate * latency, "1",
                       noun="requests", formula="{request_rate} × {completion_latency_s}")
    d.step("keystroke_interval_s", "Time between two keystrokes", 1 / p.typing_chars_per_s, "s",
           formula="1 / {typing_chars_per_s}")
    d.step("keystrokes_during_completion", "Characters typed while one completion is in flight",
           latency * p.typing_chars_per_s, "1", noun="keystrokes",
           formula="{completion_latency_s} × {typing_chars_per_s}")
    d.step("developers_per_request_in_flight", "Active developers per completion in flight",
           p.developers / in_flight, "1", noun="×", formula="{developers} / {requests_in_flight}")
    ratio = p.developers / in_flight
    d.step("concurrency_misquote_verdict", "Does quoting the developers as requests overstate or understate them?",
           "overstates" if ratio > 1 else ("understates" if ratio < 1 else "happens to match"),
           formula="{developers_per_request_in_flight} against 1", kind="verdict")
    d.step("concurrency_misquote_factor", "How far the developer count is from the completions in flight",
           max(ratio, 1 / ratio), "1", noun="×",
           formula="max({developers_per_request_in_flight}, 1 / {developers_per_request_in_flight})")
    f = record_fleet(d, p, "request_rate", e)
    d.step("prefill_share", "Share of the fleet's busy time spent in prefill",
           f.prefill_replica_equivalents / (f.prefill_replica_equivalents + f.decode_replica_equivalents), "1",
           percent=True,
           formula="{prefill_replica_equivalents} / ({prefill_replica_equivalents} + "
                   "{decode_replica_equivalents})")

    # --- fill-in-the-middle: in prefix-suffix-middle order the suffix follows the cursor's edits ---
    ceiling = d.step("psm_hit_ceiling", "Most of the prompt a prefix cache can hold in PSM order",
                     1 - p.suffix_share, "1", percent=True, formula="1 − {suffix_share}",
                     note="A keystroke at the cursor changes the end of the prefix, and every suffix token after it.")
    eff = d.step("psm_effective_hit", "Prefix-cache hit in PSM order", min(p.prefix_cache_hit, ceiling), "1",
                 percent=True, formula="min({prefix_cache_hit}, {psm_hit_ceiling})")
    d.step("psm_hit_verdict", "Can the stated hit hold in PSM order?",
           "the stated hit is under it, so the ceiling does not bind" if p.prefix_cache_hit <= ceiling
           else "the stated hit is above it and cannot hold",
           formula="{prefix_cache_hit} against {psm_hit_ceiling}", kind="verdict")
    psm_fleet = sv.fleet(served(p, eff), rate, p.target_utilization)
    d.step("replicas_psm_continuous", "Replicas at the PSM hit, before rounding up", psm_fleet.replicas_continuous,
           "1", noun="replicas", formula="same search with prefix-cache hit {psm_effective_hit}", kind="variant")
    d.step("replicas_psm", "Replicas if the prompt is sent in PSM order", psm_fleet.replicas, "1", noun="replicas",
           formula="ceil({replicas_psm_continuous})")

    # --- detection: how long a dead replica keeps receiving traffic ---
    replicas_now = d.value("replicas")
    detect = d.step("replica_loss_detect_s", "Time to take a dead replica out of the router",
                    p.probe_period_s * p.probe_failures, "s", formula="{probe_period_s} × {probe_failures}")
    d.step("requests_sent_to_dead_replica", "Requests routed to a dead replica before it is removed",
           rate / replicas_now * detect, "1", noun="requests",
           formula="{request_rate} / {replicas} × {replica_loss_detect_s}")

    # --- the mistakes, in numbers ---
    cold = served(p, 0.0)
    cold_fleet = sv.fleet(cold, rate, p.target_utilization)
    d.step("prefill_flops_without_prefix_cache", "Prefill FLOP per request with nothing cached",
           cold.prefill_flops_per_request, "FLOP",
           formula="2 FLOP × {active_params} × {prompt_tokens} + {attention_flops_per_position} × {prompt_tokens} × "
                   "({prompt_tokens} − 1) / 2")
    d.step("prefill_allreduce_without_prefix_cache_s", "Prefill's tensor-parallel all-reduces with nothing cached",
           cold.replica.allreduce_s(p.prompt_tokens), "s",
           formula="{allreduce_fixed_s} + {prompt_tokens} × {allreduce_per_sequence_s}" if p.tp_degree > 1 else "",
           note="None on one accelerator." if p.tp_degree == 1 else "")
    d.step("prefill_s_without_prefix_cache", "Prefill per request with nothing cached", cold.prefill_s_per_request,
           "s", formula="{prefill_flops_without_prefix_cache} / {replica_prefill_flops} + "
                        "{prefill_allreduce_without_prefix_cache_s}")
    d.step("replicas_without_prefix_cache_continuous", "Replicas with nothing cached, before rounding up",
           cold_fleet.replicas_continuous, "1", noun="replicas", formula="same search with prefix-cache hit 0",
           kind="variant")
    d.step("replicas_without_prefix_cache", "Replicas if the prefix cache is ignored (or routing defeats it)",
           cold_fleet.replicas, "1", noun="replicas", formula="ceil({replicas_without_prefix_cache_continuous})")
    d.step("gpus_without_prefix_cache", "GPUs if the prefix cache is ignored",
           cold_fleet.replicas * p.tp_degree, "1", noun="GPUs",
           formula="{replicas_without_prefix_cache} × {tp_degree}")
    decode_only = sv.fleet(e, rate, p.target_utilization, prefill_s_per_request=0.0)
    d.step("replicas_decode_only_continuous", "Replicas for decode alone, before rounding up",
           decode_only.replicas_continuous, "1", noun="replicas", formula="same search with prefill costing nothing",
           kind="variant")
    d.step("replicas_decode_only", "Replicas if prefill is forgotten (decode only)", decode_only.replicas, "1",
           noun="replicas", formula="ceil({replicas_decode_only_continuous})")
    # The candidate's shortcut: fill every replica to its KV cap and charge decode as full batches.
    mem_batch = max(1, e.batch_memory_cap)
    at_mem = e.step(mem_batch)
    d.step("allreduce_at_memory_batch_s", "Tensor-parallel all-reduces of a step at the memory-cap batch",
           at_mem.allreduce_s, "s",
           formula="{allreduce_fixed_s} + {batch_memory_cap} × {allreduce_per_sequence_s}" if p.tp_degree > 1 else "",
           note="None on one accelerator." if p.tp_degree == 1 else "")
    d.step("tpot_at_memory_batch_s", "TPOT if the batch is filled to the memory cap instead",
           at_mem.step_s, "s",
           formula="max({weight_read_s} + {batch_memory_cap} × {kv_read_per_sequence_s}, "
                   "{batch_memory_cap} × {decode_flops_per_token} / {replica_decode_flops}) "
                   "+ {allreduce_at_memory_batch_s} + {step_overhead_s}")
    mem_cont = d.step("replicas_at_memory_batch_continuous", "Replicas at full memory-cap batches, before rounding up",
                      (f.prefill_replica_equivalents + rate * p.output_tokens * at_mem.step_s / mem_batch)
                      / p.target_utilization, "1", noun="replicas",
                      formula="({prefill_replica_equivalents} + {request_rate} × {output_tokens} × "
                              "{tpot_at_memory_batch_s} / {batch_memory_cap}) / {target_utilization}")
    d.step("replicas_at_memory_batch", "Replicas if the batch is filled to the memory cap (TPOT broken)",
           max(1, math.ceil(mem_cont - 1e-9)), "1", noun="replicas",
           formula="ceil({replicas_at_memory_batch_continuous})")
    d.step("completion_latency_at_memory_batch_s", "Completion latency at that batch",
           e.prefill_s_per_request + p.output_tokens * at_mem.step_s, "s",
           formula="{prefill_s_per_request} + {output_tokens} × {tpot_at_memory_batch_s}")
    # A TPOT target shorter than one read of the weights cannot be met at any batch.
    d.require("weight_read_floor_busy", d.value("weight_read_floor_busy") <= 1, lambda: (
        f"No batch can meet this TPOT target: reading the weights once takes "
        f"{format_quantity(d.value('weight_read_s'), 's')}, longer than the {format_quantity(p.tpot_target_ms, 'ms')} "
        "target. Loosen the target or spread the weights over more accelerators."))
    return d
