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
from functools import lru_cache
from types import SimpleNamespace
from typing import Annotated, Any

from models.core import Derivation, Knob, StrictModel
from models.units import format_number, format_quantity
from models.engine import serving as sv
from models.engine.knobs import ENGINE_FIELDS, accelerator, engine_values, problem, with_defaults
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


def _layout(p: Any, tp: int) -> SimpleNamespace | None:
    """The scenario on replicas of `tp` accelerators, or None when it cannot serve one sequence there."""
    q = SimpleNamespace(**dict(p))
    q.tp_degree = tp
    if tp > accelerator(p).scale_up_domain or problem(q) or sv.served_problem(served(q)):
        return None
    return q


def other_layout(p: Any) -> tuple[int, SimpleNamespace | None]:
    """The replica size to weigh against this one: half the accelerators if the weights fit there, else
    twice (within the scale-up domain); (tp, None) when neither serves."""
    for tp in ((p.tp_degree // 2,) if p.tp_degree > 1 else ()) + (p.tp_degree * 2,):
        q = _layout(p, tp)
        if q is not None:
            return tp, q
    return p.tp_degree, None


# Published anchor: TensorRT-LLM's perf overview, Llama-3.3-70B (the Llama-3-70B shape) in FP8 on two
# H100 SXM, trtllm-bench at maximum load, total output tokens/s: (prompt, output, measured).
ANCHOR_RUNS = ((2048, 2048, 3082.0), (1000, 1000, 4205.0))


# The anchor's own setup: every knob but the engine's efficiencies is fixed by the published run.
_ANCHOR_FIXED = {"model", "gpu", "tp_degree", "weight_precision", "kv_precision", "compute_precision",
                 "prompt_tokens", "output_tokens", "prefix_cache_hit", "given_batch", "concurrent_users",
                 "think_time_s", "target_utilization", "tpot_target_ms"}


@lru_cache(maxsize=64)
def _anchor_engine(engine: tuple, runs: tuple) -> tuple[tuple[int, float, float], ...]:
    """(batch, decode step, prefill) of the published setup for each run, at these engine knobs."""
    out = []
    for isl, osl, _ in runs:
        q = SimpleNamespace(**dict(engine))
        q.model, q.gpu, q.tp_degree = "Llama-3-70B", "H100 SXM", 2
        q.weight_precision = q.kv_precision = q.compute_precision = "fp8"
        q.prompt_tokens, q.output_tokens, q.prefix_cache_hit, q.given_batch = isl, osl, 0.0, 0
        s = served(q)
        b = s.batch_memory_cap
        out.append((b, s.step_s(b), s.prefill_s_per_request))
    return tuple(out)


# vLLM's serving defaults (`vllm serve`, chunked prefill on): a GPU of 70 GiB or more that is not an
# A100 gets a per-step token budget (max_num_batched_tokens) of 8,192 and at most 1,024 sequences a
# step (max_num_seqs); any other GPU 2,048 and 256 (vllm/engine/arg_utils.py, get_batch_defaults).
VLLM_LARGE_GPU_BYTES = 70 * 2**30
VLLM_SERVE_DEFAULTS = {"large": (8192, 1024), "other": (2048, 256)}


def record_vllm_defaults(d: Derivation, hw: Any) -> tuple[int, int]:
    """`vllm_max_num_batched_tokens` and `vllm_max_num_seqs`: what `vllm serve` would pick on this part."""
    large = hw.hbm_bytes >= VLLM_LARGE_GPU_BYTES and "A100" not in hw.name
    tokens, seqs = VLLM_SERVE_DEFAULTS["large" if large else "other"]
    why = ("70 GiB or more and not an A100" if large else "under 70 GiB, or an A100")
    if "TPU" in hw.name:
        why += "; the GPU rule, vLLM's TPU defaults differ"
    d.step("vllm_max_num_batched_tokens", f"vLLM's default token budget a step on {hw.name} ({why})", tokens,
           "1", noun="tokens", kind="lookup", note="vllm/engine/arg_utils.py get_batch_defaults, OpenAI server")
    d.step("vllm_max_num_seqs", f"vLLM's default sequences a step on {hw.name} ({why})", seqs, "1",
           noun="sequences", kind="lookup", note="vllm/engine/arg_utils.py get_batch_defaults, OpenAI server")
    return tokens, seqs


def record_trtllm_anchor(d: Derivation, p: Any, runs: tuple[tuple[int, int, float], ...] = ANCHOR_RUNS) -> None:
    """This scenario's engine efficiencies run on the published TensorRT-LLM setup, beside what it measured:
    `anchor_<isl>_predicted_tokens_per_s`, `..._measured_...` and `..._error` (prompt lengths unique)."""
    # Only the engine's own knobs reach the published setup: keyed by them alone, a sweep over a
    # traffic knob reuses one anchor instead of re-solving it at every point.
    engine = tuple((k, v) for k, v in zip(ENGINE_FIELDS, engine_values(p))
                   if k not in _ANCHOR_FIXED and v is not None)
    for (isl, osl, measured), (b, step_s, prefill_s) in zip(runs, _anchor_engine(engine, runs)):
        tag = f"anchor_{isl}"
        d.step(f"{tag}_prompt_tokens", f"Published setup {isl} / {osl}: prompt tokens", isl, "1",
               noun="tokens", kind="lookup", note="TensorRT-LLM perf overview: input sequence length")
        d.step(f"{tag}_output_tokens", f"Published setup {isl} / {osl}: output tokens", osl, "1",
               noun="tokens", kind="lookup", note="TensorRT-LLM perf overview: output sequence length")
        d.step(f"{tag}_batch", f"Published setup {isl} in / {osl} out: sequences the KV of 2 × H100 holds",
               b, "1", noun="sequences", kind="search",
               formula="floor(KV room of 2 × H100 after fp8 weights / KV of one fp8 sequence)")
        d.step(f"{tag}_step_s", f"Published setup {isl} / {osl}: the engine's decode step at that batch",
               step_s, "s", kind="search", formula="the engine's decode step, 2 × H100, fp8, at that batch")
        d.step(f"{tag}_prefill_s", f"Published setup {isl} / {osl}: the engine's prefill of one prompt",
               prefill_s, "s", kind="search", formula="the engine's prefill, 2 × H100, fp8")
        pred = d.step(f"{tag}_predicted_tokens_per_s",
                      f"Published setup {isl} / {osl}: output tokens/s the engine predicts at full load",
                      osl / (prefill_s + osl * step_s / b), "1/s", noun="tokens",
                      formula=f"{osl} / ({{{tag}_prefill_s}} s + {osl} × {{{tag}_step_s}} s / {{{tag}_batch}})")
        d.step(f"{tag}_measured_tokens_per_s", f"Published setup {isl} / {osl}: output tokens/s TensorRT-LLM measured",
               measured, "1/s", noun="tokens", kind="lookup", note="TensorRT-LLM perf overview, H100 TP2 FP8")
        d.step(f"{tag}_error", f"Published setup {isl} / {osl}: the engine against the measurement",
               pred / measured - 1, "1", percent=True,
               formula=f"{{{tag}_predicted_tokens_per_s}} / {{{tag}_measured_tokens_per_s}} − 1")


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
    d.step("decode_replica_equivalents_full_batch", "Decode replicas if every step ran at the full batch",
           rate * p.output_tokens / e.decode_tokens_per_s, "1", noun="replicas",
           formula="{request_rate} × {output_tokens} / {decode_tokens_per_s}")
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
    cold_busy = d.value("utilization_if_cache_cold")
    if cold_busy >= 1:
        cold_verdict = ("more time than it has: it cannot keep up, and the queue grows without bound until the "
                        "cache warms, so shed load or bring up the extra replicas first")
    elif cold_busy > p.target_utilization:
        cold_verdict = "under its full time, so it keeps up, but above the target, so queues and TTFT grow until it warms"
    else:
        cold_verdict = "within the target, so it rides out the cold start"
    d.step("cache_cold_verdict", "Whether the fleet keeps up while the prefix cache is cold", cold_verdict,
           formula="{utilization_if_cache_cold} against 100% and {target_utilization}", kind="verdict")
    # --- the replica's size: this layout against the other one ---
    tp_alt, q = other_layout(p)
    half = tp_alt < p.tp_degree
    d.step("tp_alt", "The replica size to weigh against this one", tp_alt, "1", noun="GPUs",
           formula="{tp_degree} / 2" if half else ("{tp_degree} × 2" if tp_alt > p.tp_degree else "{tp_degree}"),
           note="Half the GPUs when the weights fit there, else twice.")
    d.step("weight_bytes_per_gpu", "Weights on each GPU of this replica", e.replica.weight_bytes / p.tp_degree, "B",
           formula="{weight_bytes} / {tp_degree}")
    d.step("weight_bytes_per_gpu_alt", "Weights on each GPU of the other layout", e.replica.weight_bytes / tp_alt, "B",
           formula="{weight_bytes} / {tp_alt}")
    ea = served(q) if q is not None else e
    d.step("kv_room_bytes_alt", "KV room on a replica of the other layout", ea.replica.kv_room_bytes, "B",
           formula="{tp_alt} × {gpu_memory_bytes} × {usable_hbm_fraction} − {weight_bytes}")
    d.step("batch_memory_cap_alt", "Whole sequences whose KV fits on the other layout", ea.batch_memory_cap, "1",
           noun="sequences", formula="floor({kv_room_bytes_alt} / {kv_bytes_per_sequence})")
    d.step("weight_read_s_alt", "Reading every weight once on the other layout",
           ea.replica.weight_bytes / ea.replica.achieved_hbm_Bps, "s",
           formula="{weight_bytes} / ({tp_alt} × {gpu_hbm_Bps} × {hbm_efficiency})")
    d.step("weight_read_floor_busy_alt", "Share of each token gap the other layout's weight read takes",
           d.value("weight_read_s_alt") / e.tpot_s, "1", percent=True, formula="{weight_read_s_alt} / {tpot_target_s}")
    _, _, fa = _chain(q if q is not None else p, p.concurrent_users, p.think_time_s, p.prefix_cache_hit)
    d.step("prefill_s_per_request_alt", "Prefill time per request on the other layout", ea.prefill_s_per_request, "s",
           formula="the same prefill on {tp_alt}", kind="variant")
    d.step("held_batch_alt", "Sequences each replica of the other layout decodes at once", fa.held_batch, "1",
           noun="sequences", formula="the same fleet search on replicas of {tp_alt}", kind="variant")
    d.step("held_batch_step_s_alt", "The other layout's decode step at that batch (the TPOT its users see)",
           fa.held_step_s, "s", formula="the decode step on {tp_alt} at {held_batch_alt}", kind="variant")
    d.step("replicas_alt", "Replicas of the other layout for the same users", fa.replicas, "1", noun="replicas",
           formula="the same chain on replicas of {tp_alt}", kind="variant")
    gpus_alt = d.step("gpus_alt", "GPUs on the other layout", fa.replicas * tp_alt, "1", noun="GPUs",
                      formula="{replicas_alt} × {tp_alt}")
    gpus = f.replicas * p.tp_degree
    if q is None:
        verdict = f"no other layout serves this model, so {p.tp_degree} per replica stands"
    elif gpus_alt < gpus:
        verdict = f"{tp_alt} per replica needs fewer GPUs"
    elif gpus_alt > gpus:
        verdict = f"{p.tp_degree} per replica needs fewer GPUs"
    else:
        verdict = "the two layouts need the same GPUs"
    d.step("tp_verdict", "Which replica size needs fewer GPUs", verdict,
           formula="{gpus} against {gpus_alt}", kind="verdict")
    # Why: the work itself (before whole replicas), or the rounding to whole replicas.
    cont = d.step("gpus_continuous", "GPUs this layout's work needs before rounding to whole replicas",
                  f.replicas_continuous * p.tp_degree, "1", noun="GPUs", formula="{replicas_continuous} × {tp_degree}")
    cont_alt = d.step("gpus_continuous_alt", "GPUs the other layout's work needs before rounding",
                      fa.replicas_continuous * tp_alt, "1", noun="GPUs",
                      formula="the other layout's replicas before rounding × {tp_alt}", kind="variant")
    d.step("weight_share_of_small_hbm", "Weights' share of the usable HBM of the smaller layout",
           e.replica.weight_bytes / min(e.replica.usable_hbm_bytes, ea.replica.usable_hbm_bytes), "1", percent=True,
           formula="{weight_bytes} / (min({tp_degree}, {tp_alt}) × {gpu_memory_bytes} × {usable_hbm_fraction})")
    big, small = max(p.tp_degree, tp_alt), min(p.tp_degree, tp_alt)
    big_cont, small_cont = (cont, cont_alt) if p.tp_degree == big else (cont_alt, cont)
    big_gpus, small_gpus = (gpus, gpus_alt) if p.tp_degree == big else (gpus_alt, gpus)
    work_winner = big if big_cont < small_cont else small
    rounded_winner = big if big_gpus < small_gpus else (small if small_gpus < big_gpus else None)
    share = format_number(100 * d.value("weight_share_of_small_hbm")) + "%"
    if q is None:
        reason = "there is nothing to weigh"
    elif rounded_winner != work_winner:
        reason = (f"the work alone favours {work_winner} per replica, so rounding to whole replicas decides it: "
                  "at this size of fleet one replica more or less is worth more than the layout")
    elif work_winner == big:
        big_held, small_held = ((f.held_batch, fa.held_batch) if p.tp_degree == big else (fa.held_batch, f.held_batch))
        big_kv, small_kv = ((e.replica.kv_room_bytes, ea.replica.kv_room_bytes) if p.tp_degree == big
                            else (ea.replica.kv_room_bytes, e.replica.kv_room_bytes))
        reason = (f"{big} per replica wins on the work itself: the weights take {share} of {small} GPUs' usable HBM, "
                  f"so the smaller group keeps {format_quantity(small_kv, 'B')} of KV room against "
                  f"{format_quantity(big_kv, 'B')}, and each smaller replica rereads every weight for "
                  f"{format_number(small_held)} sequences a step, not {format_number(big_held)}")
    else:
        reason = (f"{small} per replica wins on the work itself: the weights take only {share} of {small} GPUs' "
                  "usable HBM, so the smaller group keeps room for its batch, and the larger group's shorter weight "
                  "read saves less time than the GPUs it adds")
    d.step("tp_reason", "Why that layout wins", reason, formula="{gpus_continuous} against {gpus_continuous_alt}",
           kind="verdict")
    record_trtllm_anchor(d, p)
    # A TPOT target shorter than one read of the weights cannot be met at any batch.
    d.require("weight_read_floor_busy", d.value("weight_read_floor_busy") <= 1, lambda: (
        f"No batch can meet this TPOT target: reading the weights once takes "
        f"{format_quantity(d.value('weight_read_s'), 's')}, longer than the {format_quantity(p.tpot_target_ms, 'ms')} "
        "target. Loosen the target or spread the weights over more accelerators."))
    return d
