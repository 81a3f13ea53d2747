"""Seven boxes between an API call and a GPU, and the chain from concurrent users to replicas.

The seeds give two figures: seven components, each with one job and one failure mode, and
"2,000 concurrent users sized to a replica count". Concurrent users are not concurrent
requests: a user who is reading or typing holds no GPU. The chain (closed loop, one request
per user per cycle):

    response time   = prefill (TTFT, no queueing) + output tokens x decode step
    request rate    = users / (think time + response time)
    in flight       = request rate x response time                       (Little's law)
    prefill, decode = replica-seconds of work per second (models/engine/serving.py)
    replicas        = (prefill + decode) / target utilization

The decode step is taken at the full batch the TPOT target and HBM allow, so the response time
is the slowest the engine may run: an upper bound on requests in flight. The page shows what the
replica count becomes without the think time, without the prefix cache, and with prefill free.
"""

from __future__ import annotations

import math
from typing import Annotated

from models.core import Derivation, Knob, StrictModel
from models.units import format_quantity
from models.engine import serving as sv
from models.engine.knobs import with_defaults
from models.engine.record import record_fleet, record_served
from models.engine.serving_knobs import ServingKnobs, served


class _UserKnobs(StrictModel):
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


class Params(with_defaults(ServingKnobs, tp_degree=8), _UserKnobs):
    """The users and their think time, then the shared request, SLO and engine knobs."""


def _chain(p: Params, users: float, think_s: float, hit: float) -> tuple[float, float, sv.Fleet]:
    """(request rate, requests in flight, fleet) for a variant of the scenario."""
    s = served(p, hit)
    response = s.prefill_s_per_request + p.output_tokens * s.decode_step_s
    rate = users / (think_s + response)
    return rate, rate * response, sv.fleet(s, rate, p.target_utilization)


def solve(p: Params) -> Derivation:
    d = Derivation(p)
    e = record_served(d, p)

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
    f = record_fleet(d, p, "request_rate", e)
    d.step("prefill_busy_fraction", "Share of each replica's time in prefill",
           f.prefill_replica_equivalents / f.replicas, "1", percent=True,
           formula="{prefill_replica_equivalents} / {replicas}")
    d.step("decode_busy_fraction", "Share of each replica's time in decode",
           f.decode_replica_equivalents / f.replicas, "1", percent=True,
           formula="{decode_replica_equivalents} / {replicas}")
    busy = f.prefill_replica_equivalents + f.decode_replica_equivalents
    d.step("utilization", "Busy share of each replica at peak", busy / f.replicas, "1", percent=True,
           formula="{prefill_busy_fraction} + {decode_busy_fraction}")
    slots = d.step("decode_slots", "Sequences the fleet can decode at once", f.replicas * e.batch, "1",
                   noun="sequences", formula="{replicas} × {decode_batch}")
    d.step("replicas_by_slots", "Replicas if sized by decode slots alone",
           max(1, math.ceil(in_flight / (e.batch * p.target_utilization) - 1e-9)), "1", noun="replicas",
           formula="ceil({requests_in_flight} / ({decode_batch} × {target_utilization}))")
    d.step("slot_occupancy", "Requests in flight over decode slots", in_flight / slots, "1", percent=True,
           formula="{requests_in_flight} / {decode_slots}")

    # --- what the count becomes without each assumption ---
    _, _, no_think = _chain(p, p.concurrent_users, 0.0, p.prefix_cache_hit)
    d.step("request_rate_without_think_time", "Request rate if every user always had a request in flight",
           p.concurrent_users / response, "1/s", noun="requests", formula="{concurrent_users} / {response_time_s} s")
    d.step("replicas_without_think_time", "Replicas if concurrent users were concurrent requests", no_think.replicas,
           "1", noun="replicas", formula="same chain with think time 0",
           kind="variant")
    d.step("gpus_without_think_time", "GPUs if concurrent users were concurrent requests",
           no_think.replicas * p.tp_degree, "1", noun="GPUs",
           formula="{replicas_without_think_time} × {tp_degree}")
    _, _, cold = _chain(p, p.concurrent_users, p.think_time_s, 0.0)
    d.step("replicas_without_prefix_cache", "Replicas with no prefix cache (every prompt token prefilled)",
           cold.replicas, "1", noun="replicas", formula="same chain with prefix-cache hit 0",
           kind="variant")
    free = sv.fleet(e, rate, p.target_utilization, prefill_s_per_request=0.0)
    d.step("replicas_if_prefill_free", "Replicas if prefill hid entirely inside decode steps", free.replicas, "1",
           noun="replicas", formula="same fleet with prefill costing nothing", kind="variant")

    # --- failure modes, in numbers ---
    survivors = d.step("surviving_replicas", "Replicas left when one dies", max(1, f.replicas - 1), "1",
                       noun="replicas", formula="max(1, {replicas} − 1)")
    _, survivor_batch, survivor_step = sv.decode_busy(e, rate / survivors)
    d.step("survivor_held_batch", "Sequences each survivor then decodes at once", survivor_batch, "1",
           noun="sequences", formula="{request_rate} / {surviving_replicas} × {output_tokens} × {tpot_target_s}")
    d.step("survivor_step_s", "A survivor's decode step at that batch", survivor_step, "s",
           formula="max({weight_read_s} + max(1, {survivor_held_batch}) × {kv_read_per_sequence_s}, "
                   "max(1, {survivor_held_batch}) × {compute_per_sequence_s}) + {allreduce_fixed_s} + "
                   "max(1, {survivor_held_batch}) × {allreduce_per_sequence_s} + {step_overhead_s}")
    d.step("utilization_after_replica_loss", "Busy share of the survivors when one replica dies",
           sv.busy_share(e, rate, survivors), "1", percent=True,
           formula="{prefill_replica_equivalents} / {surviving_replicas} + {request_rate} / {surviving_replicas} × "
                   "{output_tokens} × {survivor_step_s} / max(1, {survivor_held_batch})")
    d.step("requests_lost_per_replica_failure", "Requests in flight on one replica that dies",
           in_flight / f.replicas, "1", noun="requests", formula="{requests_in_flight} / {replicas}")
    cold_rate, _, _ = _chain(p, p.concurrent_users, p.think_time_s, 0.0)
    cold_engine = served(p, 0.0)
    d.step("utilization_if_cache_cold", "Busy share of this fleet if the prefix cache goes cold",
           sv.busy_share(cold_engine, cold_rate, f.replicas), "1", percent=True,
           formula="busy share of the same {replicas} replicas with prefix-cache hit 0", kind="variant")
    # A TPOT target shorter than one read of the weights cannot be met at any batch.
    d.require("weight_read_floor_busy", d.value("weight_read_floor_busy") <= 1, lambda: (
        f"No batch can meet this TPOT target: reading the weights once takes "
        f"{format_quantity(d.value('weight_read_s'), 's')}, longer than the {format_quantity(p.tpot_target_ms, 'ms')} "
        "target. Loosen the target or spread the weights over more accelerators."))
    return d
