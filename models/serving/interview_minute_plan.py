"""The 45-minute plan for a serving-platform design, and the worked opening it protects.

The plan is the seeds' 5 / 7 / 10 / 16 / 5 minutes (numbers, shape, arithmetic, depth, failure
modes): 43 of 45 planned, 2 of slack. A 60-minute round scales every phase by 60 / 45 and rounds
each to the nearest whole minute (a modelling choice stated on the page: the ratios are what
carry over, and a clock reads in whole minutes). `phase_plan` is what the mock interview's
timer uses, so the page and the clock cannot disagree.

The worked opening is a coding assistant: an open-loop request rate (developers x completions
per developer per minute), a long context almost all of which the prefix cache already holds,
and short completions under a tight TPOT. The engine and fleet arithmetic is the shared one in
models/serving/llm_arith.py, the same formulas the serving-platform page uses.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Annotated, Literal

from pydantic import model_validator

from models.catalog import model as catalog_model
from models.core import PHASES, Derivation, Knob, StrictModel
from models.serving import llm_arith as la
from models.serving.llm_arith import Precision, ReplicaGPUs, ServingGPU, ServingModel
from models.units import format_number

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


class Params(StrictModel):
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
    prompt_tokens: Annotated[
        int,
        Knob("Context tokens", "tokens", 500, 128_000, 1, log=True,
             help="The file around the cursor, open tabs and retrieved snippets, per request.",
             draw=(2000, 16_000)),
    ] = 8000
    prefix_cache_hit: Annotated[
        float,
        Knob("Prefix-cache hit", "", 0, 0.99, 0.01, percent=True,
             help="Share of the context whose KV the replica already holds from this developer's last request.",
             draw=(0.6, 0.95)),
    ] = 0.9
    output_tokens: Annotated[
        int,
        Knob("Completion tokens", "tokens", 5, 1000, 1, log=True, help="Tokens generated per completion.",
             draw=(20, 128)),
    ] = 50
    tpot_target_ms: Annotated[
        float,
        Knob("TPOT target", "ms", 5, 100, log=True,
             help="Time per output token; the whole completion must land before the developer types on.",
             draw=(10, 30)),
    ] = 15
    model: Annotated[ServingModel, Knob("Model")] = "Llama-3-8B"
    gpu: Annotated[ServingGPU, Knob("GPU")] = "H100 SXM"
    gpus_per_replica: Annotated[
        ReplicaGPUs,
        Knob("GPUs per replica", "", 1, 8, help="Tensor-parallel group: one copy of the weights spread over these."),
    ] = 1
    weight_precision: Annotated[
        Precision, Knob("Weight precision", help="FP8 halves weight bytes and doubles peak FLOP/s; KV stays bf16.")
    ] = "bf16"
    hbm_efficiency: Annotated[
        float,
        Knob("HBM efficiency", "", 0.3, 0.95, 0.01, percent=True,
             help="Share of peak HBM bandwidth a decode step achieves.", draw=(0.6, 0.8)),
    ] = 0.7
    mfu: Annotated[
        float,
        Knob("MFU", "", 0.1, 0.8, 0.01, percent=True,
             help="Share of dense peak FLOP/s that prefill (and a compute-bound decode) achieves.", draw=(0.35, 0.6)),
    ] = 0.5
    target_utilization: Annotated[
        float,
        Knob("Target utilization", "", 0.3, 0.95, 0.05, percent=True,
             help="Busy share each replica may reach at peak.", draw=(0.6, 0.8)),
    ] = 0.7

    @model_validator(mode="after")
    def _fits(self) -> "Params":
        problem = la.fit_problem(self.model, self.gpu, self.gpus_per_replica, self.weight_precision,
                                 self.prompt_tokens, self.output_tokens, self.tpot_target_ms / 1000,
                                 self.hbm_efficiency, self.mfu)
        if problem:
            raise ValueError(problem)
        return self


_PHASE_LABEL = {"numbers": "Numbers", "shape": "Shape", "arithmetic": "Arithmetic", "depth": "Depth",
                "failure_modes": "Failure modes"}


def solve(p: Params) -> Derivation:
    d = Derivation(p)

    # --- the plan ---
    d.step("plan_scale", "Round length over the 45 minutes the plan is written for",
           p.round_minutes / BASE_ROUND_MINUTES, "1", noun="×", formula=f"{{round_minutes}} / {BASE_ROUND_MINUTES}")
    plan = phase_plan(p.round_minutes)
    for ph, base in PHASE_MINUTES_45.items():
        d.step(f"{ph}_minutes", f"{_PHASE_LABEL[ph]} phase", plan[ph], "min",
               formula=f"round({base} min × {{plan_scale}})")
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
           formula=f"{PHASE_MINUTES_45['depth']} + {{round_minutes}} − {BASE_ROUND_MINUTES}")
    d.step("depth_share", "Share of the planned minutes that go to depth",
           100 * plan["depth"] / planned, "%", formula="100 × {depth_minutes} / {planned_minutes}")

    # --- the worked opening: a coding assistant ---
    rate = d.step("request_rate", "Completion requests per second at peak",
                  p.developers * p.completions_per_developer_per_min / 60, "1/s", noun="requests",
                  formula="{developers} × {completions_per_developer_per_min} / 60 s")
    e = la.record_engine(d, p)
    d.step("uncached_prompt_tokens_per_s", "Context tokens per second that need prefill",
           rate * e.uncached_prompt_tokens, "1/s", noun="tokens",
           formula="{request_rate} req/s × {uncached_prompt_tokens}")
    d.step("prompt_tokens_per_s", "Context tokens per second, cached or not", rate * p.prompt_tokens, "1/s",
           noun="tokens", formula="{request_rate} req/s × {prompt_tokens}")
    latency = d.step("completion_latency_s", "One completion: prefill, then every token at the decode step",
                     e.prefill_s_per_request + p.output_tokens * e.decode_step_s, "s",
                     formula="{prefill_s_per_request} s + {output_tokens} × {decode_step_s} s")
    in_flight = d.step("requests_in_flight", "Completions in flight (Little's law)", rate * latency, "1",
                       noun="requests", formula="{request_rate} req/s × {completion_latency_s} s")
    d.step("developers_per_request_in_flight", "Active developers per completion in flight",
           p.developers / in_flight, "1", noun="×", formula="{developers} / {requests_in_flight}")
    f = la.record_fleet(d, p, "request_rate", e)
    d.step("prefill_share", "Share of the fleet's busy time spent in prefill",
           100 * f.prefill_replica_equivalents / (f.prefill_replica_equivalents + f.decode_replica_equivalents), "%",
           formula="100 × {prefill_replica_equivalents} / ({prefill_replica_equivalents} + "
                   "{decode_replica_equivalents})")

    # --- the mistakes, in numbers ---
    cold = la.engine(p.model, p.gpu, p.gpus_per_replica, p.weight_precision, p.prompt_tokens, 0.0,
                     p.output_tokens, p.tpot_target_ms / 1000, p.hbm_efficiency, p.mfu)
    cold_fleet = la.fleet(rate, cold, p.output_tokens, p.target_utilization, p.tpot_target_ms / 1000)
    m = catalog_model(p.model)
    d.step("prefill_s_without_prefix_cache", "Prefill per request with nothing cached", cold.prefill_s_per_request,
           "s", formula=f"{{prompt_tokens}} × (2 × {format_number(m.active_params)} + "
                        f"{format_number(la.attention_flops_per_token_per_position(m))} × {{prompt_tokens}} / 2) "
                        "FLOP / {replica_flops} FLOP/s")
    d.step("replicas_without_prefix_cache", "Replicas if the prefix cache is ignored (or routing defeats it)",
           cold_fleet.replicas, "1", noun="replicas", formula="same chain with prefix-cache hit 0")
    d.step("gpus_without_prefix_cache", "GPUs if the prefix cache is ignored",
           cold_fleet.replicas * p.gpus_per_replica, "1", noun="GPUs",
           formula="{replicas_without_prefix_cache} × {gpus_per_replica}")
    decode_only = la.fleet(rate, replace(e, prefill_s_per_request=0.0), p.output_tokens, p.target_utilization,
                           p.tpot_target_ms / 1000)
    d.step("replicas_decode_only", "Replicas if prefill is forgotten (decode only)", decode_only.replicas, "1",
           noun="replicas", formula="same fleet with prefill costing nothing")
    mem_batch = max(1, e.batch_memory_cap)
    step_at_mem = max(e.weight_read_s + mem_batch * e.kv_read_per_sequence_s,
                      mem_batch * e.decode_compute_per_sequence_s)
    d.step("tpot_at_memory_batch_s", "TPOT if the batch is filled to the memory cap instead",
           step_at_mem, "s", formula="max({weight_read_s} s + {batch_memory_cap} × {kv_read_per_sequence_s} s, "
                                     "{batch_memory_cap} × {decode_flops_per_token} FLOP / {replica_flops} FLOP/s)")
    mem_fleet = la.Fleet(f.prefill_replica_equivalents, rate * p.output_tokens * step_at_mem / mem_batch, 0)
    d.step("replicas_at_memory_batch", "Replicas if the batch is filled to the memory cap (TPOT broken)",
           max(1, math.ceil((mem_fleet.prefill_replica_equivalents + mem_fleet.decode_replica_equivalents)
                            / p.target_utilization - 1e-9)), "1", noun="replicas",
           formula="ceil(({prefill_replica_equivalents} + {request_rate} × {output_tokens} × "
                   "{tpot_at_memory_batch_s} s / {batch_memory_cap}) / {target_utilization})")
    d.step("completion_latency_at_memory_batch_s", "Completion latency at that batch",
           e.prefill_s_per_request + p.output_tokens * step_at_mem, "s",
           formula="{prefill_s_per_request} s + {output_tokens} × {tpot_at_memory_batch_s} s")
    return d
