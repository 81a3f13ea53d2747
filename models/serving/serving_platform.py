"""Seven boxes between an API call and a GPU, and the chain from concurrent users to replicas.

The seeds give two figures: seven components, each with one job and one failure mode, and
"2,000 concurrent users sized to a replica count". Concurrent users are not concurrent
requests: a user who is reading or typing holds no GPU. The chain (closed loop, one request
per user per cycle):

    response time   = prefill (TTFT, no queueing) + output tokens x decode step
    request rate    = users / (think time + response time)
    in flight       = request rate x response time                       (Little's law)
    prefill, decode = replica-seconds of work per second (models/serving/llm_arith.py)
    replicas        = (prefill + decode) / target utilization

The decode step is taken at the full batch the TPOT target and HBM allow, so the response time
is the slowest the engine may run: an upper bound on requests in flight. The page shows what the
replica count becomes without the think time, without the prefix cache, and with prefill free.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Annotated

from pydantic import model_validator

from models.core import Derivation, Knob, StrictModel
from models.serving import llm_arith as la
from models.serving.llm_arith import Precision, ReplicaGPUs, ServingGPU, ServingModel


class Params(StrictModel):
    concurrent_users: Annotated[
        int,
        Knob("Concurrent users", "users", 100, 1_000_000, 1, log=True,
             help="Users with a session open: reading, typing or waiting on a reply.", draw=(500, 50_000)),
    ] = 2000
    think_time_s: Annotated[
        float,
        Knob("Think time", "s", 1, 600, log=True,
             help="Time between a reply finishing and the same user's next request (reading and typing).",
             draw=(10, 120)),
    ] = 30
    prompt_tokens: Annotated[
        int,
        Knob("Prompt tokens", "tokens", 100, 128_000, 1, log=True,
             help="System prompt plus conversation history plus the new message.", draw=(500, 8000)),
    ] = 2000
    prefix_cache_hit: Annotated[
        float,
        Knob("Prefix-cache hit", "", 0, 0.99, 0.01, percent=True,
             help="Share of prompt tokens whose KV is already on the replica (system prompt, earlier turns).",
             draw=(0, 0.8)),
    ] = 0.5
    output_tokens: Annotated[
        int,
        Knob("Output tokens", "tokens", 10, 8000, 1, log=True, help="Tokens generated per reply.",
             draw=(100, 1000)),
    ] = 400
    tpot_target_ms: Annotated[
        float,
        Knob("TPOT target", "ms", 5, 200, log=True,
             help="Time per output token the engine must not exceed; 50 ms is 20 tokens/s, faster than reading.",
             draw=(30, 80)),
    ] = 50
    model: Annotated[ServingModel, Knob("Model")] = "Llama-3-70B"
    gpu: Annotated[ServingGPU, Knob("GPU")] = "H100 SXM"
    gpus_per_replica: Annotated[
        ReplicaGPUs,
        Knob("GPUs per replica", "", 1, 8, help="Tensor-parallel group: one copy of the weights spread over these."),
    ] = 8
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
             help="Busy share each replica may reach at peak; the rest absorbs bursts and a lost replica.",
             draw=(0.6, 0.8)),
    ] = 0.7

    @model_validator(mode="after")
    def _fits(self) -> "Params":
        problem = la.fit_problem(self.model, self.gpu, self.gpus_per_replica, self.weight_precision,
                                 self.prompt_tokens, self.output_tokens, self.tpot_target_ms / 1000,
                                 self.hbm_efficiency, self.mfu)
        if problem:
            raise ValueError(problem)
        return self


def _chain(p: Params, users: float, think_s: float, hit: float) -> tuple[float, float, la.Fleet]:
    """(request rate, requests in flight, fleet) for a variant of the scenario."""
    e = la.engine(p.model, p.gpu, p.gpus_per_replica, p.weight_precision, p.prompt_tokens, hit, p.output_tokens,
                  p.tpot_target_ms / 1000, p.hbm_efficiency, p.mfu)
    response = e.prefill_s_per_request + p.output_tokens * e.decode_step_s
    rate = users / (think_s + response)
    return rate, rate * response, la.fleet(rate, e, p.output_tokens, p.target_utilization, p.tpot_target_ms / 1000)


def solve(p: Params) -> Derivation:
    d = Derivation(p)
    e = la.record_engine(d, p)

    # --- the chain from users to requests ---
    response = d.step("response_time_s", "Response time: prefill, then every output token at the decode step",
                      e.prefill_s_per_request + p.output_tokens * e.decode_step_s, "s",
                      formula="{prefill_s_per_request} s + {output_tokens} × {decode_step_s} s")
    cycle = d.step("cycle_time_s", "One user's cycle: think, then wait for the reply", p.think_time_s + response,
                   "s", formula="{think_time_s} s + {response_time_s} s")
    rate = d.step("request_rate", "Requests per second from the users", p.concurrent_users / cycle, "1/s",
                  noun="requests", formula="{concurrent_users} users / {cycle_time_s} s")
    in_flight = d.step("requests_in_flight", "Requests in flight (Little's law)", rate * response, "1",
                       noun="requests", formula="{request_rate} req/s × {response_time_s} s")
    d.step("users_per_request_in_flight", "Users per request in flight", p.concurrent_users / in_flight, "1",
           noun="×", formula="{concurrent_users} / {requests_in_flight}")
    d.step("prompt_tokens_per_s", "Prompt tokens arriving per second", rate * p.prompt_tokens, "1/s",
           noun="tokens", formula="{request_rate} req/s × {prompt_tokens}")
    d.step("uncached_prompt_tokens_per_s", "Prompt tokens per second that need prefill",
           rate * e.uncached_prompt_tokens, "1/s", noun="tokens",
           formula="{request_rate} req/s × {uncached_prompt_tokens}")
    d.step("output_tokens_per_s", "Output tokens streamed per second", rate * p.output_tokens, "1/s",
           noun="tokens", formula="{request_rate} req/s × {output_tokens}")

    # --- work per second, then the fleet ---
    f = la.record_fleet(d, p, "request_rate", e)
    d.step("prefill_busy_fraction", "Share of each replica's time in prefill",
           100 * f.prefill_replica_equivalents / f.replicas, "%",
           formula="100 × {prefill_replica_equivalents} / {replicas}")
    d.step("decode_busy_fraction", "Share of each replica's time in decode",
           100 * f.decode_replica_equivalents / f.replicas, "%",
           formula="100 × {decode_replica_equivalents} / {replicas}")
    busy = f.prefill_replica_equivalents + f.decode_replica_equivalents
    d.step("utilization", "Busy share of each replica at peak", 100 * busy / f.replicas, "%",
           formula="{prefill_busy_fraction}% + {decode_busy_fraction}%")
    slots = d.step("decode_slots", "Sequences the fleet can decode at once", f.replicas * e.batch, "1",
                   noun="sequences", formula="{replicas} × {decode_batch}")
    d.step("replicas_by_slots", "Replicas if sized by decode slots alone",
           max(1, math.ceil(in_flight / (e.batch * p.target_utilization) - 1e-9)), "1", noun="replicas",
           formula="ceil({requests_in_flight} / ({decode_batch} × {target_utilization}))")
    d.step("slot_occupancy", "Requests in flight over decode slots", 100 * in_flight / slots, "%",
           formula="100 × {requests_in_flight} / {decode_slots}")

    # --- what the count becomes without each assumption ---
    _, _, no_think = _chain(p, p.concurrent_users, 0.0, p.prefix_cache_hit)
    d.step("request_rate_without_think_time", "Request rate if every user always had a request in flight",
           p.concurrent_users / response, "1/s", noun="requests", formula="{concurrent_users} / {response_time_s} s")
    d.step("replicas_without_think_time", "Replicas if concurrent users were concurrent requests", no_think.replicas,
           "1", noun="replicas", formula="same chain with think time 0")
    d.step("gpus_without_think_time", "GPUs if concurrent users were concurrent requests",
           no_think.replicas * p.gpus_per_replica, "1", noun="GPUs",
           formula="{replicas_without_think_time} × {gpus_per_replica}")
    _, _, cold = _chain(p, p.concurrent_users, p.think_time_s, 0.0)
    d.step("replicas_without_prefix_cache", "Replicas with no prefix cache (every prompt token prefilled)",
           cold.replicas, "1", noun="replicas", formula="same chain with prefix-cache hit 0")
    free = la.fleet(rate, replace(e, prefill_s_per_request=0.0), p.output_tokens, p.target_utilization,
                    p.tpot_target_ms / 1000)
    d.step("replicas_if_prefill_free", "Replicas if prefill hid entirely inside decode steps", free.replicas, "1",
           noun="replicas", formula="same fleet with prefill costing nothing")

    # --- failure modes, in numbers ---
    survivors = max(1, f.replicas - 1)
    tpot_s = p.tpot_target_ms / 1000

    def busy_share(engine: la.Engine, load: float, replicas: int) -> float:
        """Busy share of each of `replicas` carrying `load`: prefill plus decode at the batch each then holds."""
        return load * engine.prefill_s_per_request / replicas + la.decode_busy(engine, load / replicas,
                                                                            p.output_tokens, tpot_s)[0]

    d.step("utilization_after_replica_loss", "Busy share of the survivors when one replica dies",
           100 * busy_share(e, rate, survivors), "%",
           formula="100 × ({prefill_replica_equivalents} / ({replicas} − 1) + decode busy at the batch each "
                   "survivor then holds)")
    d.step("requests_lost_per_replica_failure", "Requests in flight on one replica that dies",
           in_flight / f.replicas, "1", noun="requests", formula="{requests_in_flight} / {replicas}")
    cold_rate, _, _ = _chain(p, p.concurrent_users, p.think_time_s, 0.0)
    cold_engine = la.engine(p.model, p.gpu, p.gpus_per_replica, p.weight_precision, p.prompt_tokens, 0.0,
                            p.output_tokens, tpot_s, p.hbm_efficiency, p.mfu)
    d.step("utilization_if_cache_cold", "Busy share of this fleet if the prefix cache goes cold",
           100 * busy_share(cold_engine, cold_rate, f.replicas), "%",
           formula="100 × busy share of {replicas} replicas with every prompt token prefilled")
    return d
