"""The public playground: transport, session state, quotas and abuse (seeds 003, 004).

Teaching order: how many streams are open at once (Little's law, from users and think time),
what each transport keeps open and what that costs the gateway, the bytes on the wire, the
session state that survives a refresh with no GPU holding anything (text at a few bytes a
token against hundreds of kilobytes of KV, and the prefill that rebuilds it), then the fleet
and per-user quotas and what an abuser must do to turn the free tier into an API.

Modelling choices (the page states them):
- A stream lasts output / stream speed; TTFT is folded into the think time.
- SSE opens a response per generation, so its open streams equal the concurrent generations;
  a WebSocket stays open for the whole visit, so it holds one connection per user online.
  Gateway memory is a flat per-connection figure (TLS state, buffers, the proxy's bookkeeping).
- Re-prefill is the engine's prefill (models/engine): 2 x active parameters FLOP per prompt token
  plus attention over the n (n - 1) / 2 earlier-token pairs at the prefill MFU, plus the
  tensor-parallel all-reduces; the part the prefix cache still holds is skipped.
- The stream speed is the engine's TPOT target read as tokens per second; a replica decodes the
  given batch of streams, with the batch the TPOT target and the KV room allow shown beside it.
- Holding a session's KV is charged as the share of one GPU's HBM it pins (weights ignored,
  which makes holding look cheaper than it is).
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

from models.core import Derivation, Knob, StrictModel
from models.engine.knobs import accelerator, with_defaults, without
from models.engine.record import record_model
from models.engine.serving_knobs import ServingKnobs, served

SECONDS_PER_DAY = 86_400


class _PlaygroundKnobs(StrictModel):
    users_online: Annotated[
        int,
        Knob("Users with the playground open at the peak", "", 100, 10_000_000, 1, log=True,
             help="Tabs open, typing or reading; not all of them are generating.", draw=(2_000, 500_000)),
    ] = 20_000
    think_time_s: Annotated[
        float,
        Knob("Think time between a reply and the next prompt", "s", 5, 600, 1, log=True,
             help="Reading, editing and typing; includes the time to first token.", draw=(20, 120)),
    ] = 50
    transport: Annotated[
        Literal["SSE", "WebSocket"],
        Knob("Transport", help="SSE: one HTTP response per generation. WebSocket: one socket per visit."),
    ] = "SSE"
    gateway_kb_per_connection: Annotated[
        float,
        Knob("Gateway memory per open connection", "kB", 4, 1_024, log=True,
             help="TLS session, socket buffers and the proxy's per-stream state.", draw=(16, 256)),
    ] = 64
    connections_per_gateway_node: Annotated[
        int,
        Knob("Connections one gateway node holds", "", 1_000, 1_000_000, 1, log=True,
             help="Set by memory, file descriptors and the CPU of TLS and keep-alives.", draw=(5_000, 100_000)),
    ] = 10_000
    framing_bytes_per_event: Annotated[
        float,
        Knob("Framing per stream event", "B", 0, 1_000, 1,
             help="'data: {...}' JSON envelope, event id and newlines around each chunk of text.",
             draw=(40, 200)),
    ] = 96
    tokens_per_event: Annotated[
        int,
        Knob("Tokens per stream event", "tok/event", 1, 64, 1,
             help="1 = an event per token; more = coalesce for a few tens of ms before sending.", draw=(1, 8)),
    ] = 1
    text_bytes_per_token: Annotated[
        float,
        Knob("Text bytes per token", "B", 1, 8, 0.5, help="About 4 for English in UTF-8.", draw=(3, 5)),
    ] = 4
    free_tier_replicas: Annotated[
        int,
        Knob("Replicas budgeted for the free tier", "", 1, 10_000, 1, log=True,
             help="The fleet quota: what the business pays for free traffic.", draw=(4, 200)),
    ] = 48
    fleet_average_utilization: Annotated[
        float,
        Knob("Free fleet busy, daily average", "", 0.1, 1, 0.05, percent=True,
             help="Diurnal traffic: the fleet is full at the peak and idle at night.", draw=(0.3, 0.7)),
    ] = 0.5
    daily_active_users: Annotated[
        int,
        Knob("Daily active free users", "", 100, 100_000_000, 1, log=True, help="Distinct accounts per day.",
             draw=(10_000, 5_000_000)),
    ] = 200_000
    quota_use_fraction: Annotated[
        float,
        Knob("Share of the quota an average user spends", "", 0.01, 1, 0.01, percent=True,
             help="Most users stop far below the quota; a few hit it every day.", draw=(0.1, 0.5)),
    ] = 0.25
    free_max_tokens: Annotated[
        int,
        Knob("max_tokens cap on the free tier", "tokens", 64, 32_000, 1, log=True,
             help="Longest reply one free request may ask for.", draw=(256, 4_096)),
    ] = 1_024
    accounts_per_device: Annotated[
        int,
        Knob("Free accounts allowed per device or IP", "", 1, 100, 1,
             help="Per-device quota: accounts beyond this share the first ones' budget.", draw=(1, 10)),
    ] = 3
    abuser_tokens_per_day: Annotated[
        float,
        Knob("Tokens a day someone reselling the free tier wants", "tokens", 1e6, 1e12, log=True,
             help="An unofficial API built on the playground.", draw=(1e8, 1e10)),
    ] = 1e9
    api_price_usd_per_mtok: Annotated[
        float,
        Knob("Paid API price of the same output", "USD/M tokens", 0.1, 100, log=True,
             help="What the abuser would otherwise pay per million output tokens.", draw=(1, 30)),
    ] = 10
    distill_dataset_examples: Annotated[
        int,
        Knob("Examples in a distillation set", "", 1_000, 10_000_000, 1_000, log=True,
             help="Prompt-reply pairs someone scraping outputs wants to train a smaller model on (Stanford "
                  "Alpaca used 52,000).", draw=(20_000, 1_000_000)),
    ] = 52_000
    moderation_model_params: Annotated[
        float,
        Knob("Safety classifier size", "", 1e8, 1e11, log=True,
             help="Parameters of the model that screens every prompt and reply (Llama Guard is 7B).",
             draw=(1e9, 8e9)),
    ] = 7e9


# The page's own figures, not the seed's: a conversation of 8,000 tokens resumed, replies of 500
# streamed at 50 tokens/s (a 20 ms TPOT), 64 streams a replica, no prefix cache left on resume.
# One replica's costs, no fleet sized: no utilization target.
class Params(without(with_defaults(ServingKnobs, tp_degree=8, prompt_tokens=8000, output_tokens=500, tpot_target_ms=20,
                                   prefix_cache_hit=0.0, given_batch=64), "target_utilization"), _PlaygroundKnobs):
    """The users and the transport, then the request, stream speed and batch, then the engine."""


def solve(p: Params) -> Derivation:
    d = Derivation(p)
    s = served(p)
    r, hw = s.replica, accelerator(p)

    # --- numbers: Little's law -------------------------------------------------------------------
    speed = d.step(
        "stream_tokens_per_s", "Stream speed: one token per TPOT", 1000 / p.tpot_target_ms, "1/s", noun="tokens",
        formula="1 token / {tpot_target_ms}",
    )
    stream_s = d.step(
        "stream_s", "One reply streams for", p.output_tokens / speed, "s",
        formula="{output_tokens} tokens / {stream_tokens_per_s} tokens/s",
    )
    cycle_s = d.step(
        "turn_cycle_s", "One turn: think, then read the stream", p.think_time_s + stream_s, "s",
        formula="{think_time_s} s + {stream_s} s",
    )
    rate = d.step(
        "generations_per_s", "Generations started per second", p.users_online / cycle_s, "1/s",
        noun="generations", formula="{users_online} users / {turn_cycle_s} s",
    )
    streams = d.step(
        "concurrent_streams", "Streams open at once (Little's law)", rate * stream_s, "1", noun="streams",
        formula="{generations_per_s} × {stream_s}",
    )
    out_tps = d.step(
        "output_tokens_per_s", "Output tokens per second, all streams", streams * speed, "1/s",
        noun="tokens", formula="{concurrent_streams} × {stream_tokens_per_s} tokens/s",
    )

    # --- shape: the transport and what it keeps open --------------------------------------------
    conn_b = p.gateway_kb_per_connection * 1000
    d.step(
        "sse_connections", "SSE: open responses (one per generation in flight)", streams, "1", noun="connections",
        formula="{concurrent_streams}",
    )
    d.step(
        "websocket_connections", "WebSocket: open sockets (one per visit)", p.users_online, "1",
        noun="connections", formula="{users_online}",
    )
    d.step(
        "websocket_idle_share", "Share of WebSocket connections idle at any moment",
        1 - stream_s / cycle_s, "1", percent=True,
        formula="1 − {stream_s} / {turn_cycle_s}",
    )
    d.step(
        "gateway_memory_sse_bytes", "Gateway memory with SSE", streams * conn_b, "B",
        formula="{sse_connections} × {gateway_kb_per_connection}",
    )
    d.step(
        "gateway_memory_websocket_bytes", "Gateway memory with WebSocket", p.users_online * conn_b, "B",
        formula="{websocket_connections} × {gateway_kb_per_connection}",
    )
    open_conns = d.step(
        "open_connections", f"Open connections with {p.transport}",
        streams if p.transport == "SSE" else float(p.users_online), "1", noun="connections",
        formula="{sse_connections}" if p.transport == "SSE" else "{websocket_connections}",
    )
    d.step(
        "gateway_memory_bytes", f"Gateway memory with {p.transport}", open_conns * conn_b, "B",
        formula="{open_connections} × {gateway_kb_per_connection}",
    )
    nodes = d.step(
        "gateway_nodes", "Gateway nodes, plus one spare", math.ceil(open_conns / p.connections_per_gateway_node - 1e-9) + 1,
        "1", noun="nodes", formula="ceil({open_connections} / {connections_per_gateway_node}) + 1",
    )
    d.step(
        "reconnects_per_node_loss", "Clients that reconnect at once when one node dies", open_conns / nodes, "1",
        noun="clients", formula="{open_connections} / {gateway_nodes}",
    )

    # --- egress -------------------------------------------------------------------------------------
    wire = d.step(
        "wire_bytes_per_token", "Bytes on the wire per token",
        p.text_bytes_per_token + p.framing_bytes_per_event / p.tokens_per_event, "B",
        formula="{text_bytes_per_token} B + {framing_bytes_per_event} B / {tokens_per_event}",
    )
    d.step(
        "egress_Bps", "Egress to browsers", out_tps * wire, "B/s",
        formula="{output_tokens_per_s} tokens/s × {wire_bytes_per_token} B",
    )
    d.step(
        "egress_text_only_Bps", "Egress if only the text were sent", out_tps * p.text_bytes_per_token, "B/s",
        formula="{output_tokens_per_s} tokens/s × {text_bytes_per_token} B",
    )
    d.step(
        "framing_overhead", "Wire bytes over text bytes", wire / p.text_bytes_per_token, "1", noun="×",
        formula="{wire_bytes_per_token} B / {text_bytes_per_token} B",
    )

    # --- session state: text, not KV --------------------------------------------------------------
    record_model(d, p)
    kv_tok = d.value("kv_bytes_per_token")
    d.step(
        "kv_to_text_ratio", "KV bytes over text bytes per token", kv_tok / p.text_bytes_per_token, "1", noun="×",
        formula="{kv_bytes_per_token} B / {text_bytes_per_token} B",
    )
    text_b = d.step(
        "session_text_bytes", "One conversation as text", p.prompt_tokens * p.text_bytes_per_token, "B",
        formula="{prompt_tokens} tokens × {text_bytes_per_token} B",
    )
    kv_b = d.step(
        "session_kv_bytes", "The same conversation as KV", p.prompt_tokens * kv_tok, "B",
        formula="{prompt_tokens} tokens × {kv_bytes_per_token} B",
    )
    d.step(
        "text_store_bytes", "Every open conversation as text", p.users_online * text_b, "B",
        formula="{users_online} × {session_text_bytes} B",
    )
    kv_all = d.step(
        "kv_for_open_sessions_bytes", "Every open conversation as KV", p.users_online * kv_b, "B",
        formula="{users_online} × {session_kv_bytes} B",
    )
    d.step("gpu_memory_bytes", f"{hw.name} HBM", hw.hbm_bytes, "B", kind="lookup")
    d.step(
        "gpus_to_hold_session_kv", f"{hw.name} HBM to hold all of it (weights aside)",
        kv_all / hw.hbm_bytes, "1", noun="GPUs",
        formula="{kv_for_open_sessions_bytes} B / {gpu_memory_bytes} B",
    )
    d.step("uncached_prompt_tokens", "Prompt tokens the prefix cache no longer holds on resume",
           s.uncached_prompt_tokens, "1", noun="tokens", formula="{prompt_tokens} × (1 − {prefix_cache_hit})")
    d.step("cached_prompt_tokens", "Prompt tokens still cached", s.cached_prompt_tokens, "1", noun="tokens",
           formula="{prompt_tokens} − {uncached_prompt_tokens}")
    d.step("attention_flops_per_position", "Attention FLOP per token per earlier token (QK^T and AV)",
           r.attention_flops_per_position, "FLOP", kind="lookup",
           note="0 when attention FLOP are not counted (the textbook 2 × parameters per token).")
    n, cached = s.uncached_prompt_tokens, s.cached_prompt_tokens
    linear = d.step(
        "prefill_linear_flops", "Re-prefill: 2 FLOP per active parameter per token", n * r.weight_flops_per_token,
        "FLOP", formula="2 FLOP × {active_params} × {uncached_prompt_tokens}",
    )
    flops = d.step(
        "prefill_flops", "Re-prefill, total (attention included)", s.prefill_flops_per_request, "FLOP",
        formula="{prefill_linear_flops} + {attention_flops_per_position} × ({uncached_prompt_tokens} × "
                "{cached_prompt_tokens} + {uncached_prompt_tokens} × ({uncached_prompt_tokens} − 1) / 2)",
    )
    d.step(
        "prefill_attention_flops", "Re-prefill: attention over the earlier tokens", flops - linear, "FLOP",
        formula="{prefill_flops} − {prefill_linear_flops}",
    )
    d.step("gpu_peak_flops", f"{hw.name} dense {p.compute_precision} peak", hw.peak(p.compute_precision), "FLOP/s",
           formula=f"{hw.name} datasheet, models/catalog.py", kind="lookup")
    peak = d.step(
        "replica_peak_flops", f"Replica peak, {p.tp_degree} × {hw.name} {p.compute_precision}", r.peak_flops,
        "FLOP/s", formula="{tp_degree} × {gpu_peak_flops}",
    )
    # the all-reduces of one pass: a fixed latency part and a part per token (the engine's figures)
    d.step("link_Bps_per_direction", f"{hw.name} scale-up link, each way", hw.link_Bps_per_direction, "B/s",
           formula=f"{hw.name} datasheet, models/catalog.py", kind="lookup")
    d.step("allreduce_fixed_s", "Tensor-parallel all-reduces per pass, latency part", r.allreduce_s(0), "s",
           formula=f"{r.model.layers} layers × 2 × {{allreduce_latency_us}}" if r.tp > 1 else "0 s (one accelerator)")
    d.step("allreduce_per_sequence_s", "Tensor-parallel all-reduces per pass, per token (per stream when decoding)",
           r.allreduce_s(1) - r.allreduce_s(0), "s",
           formula=(f"{r.model.layers} layers × 2 × 2 × ({r.tp} − 1) / {r.tp} × {r.model.d_model} × 2 B / "
                    "{link_Bps_per_direction}") if r.tp > 1 else "0 s (one accelerator)")
    d.step("prefill_allreduce_s", "Re-prefill's tensor-parallel all-reduces", r.allreduce_s(n) if n > 0 else 0.0,
           "s", formula="{allreduce_fixed_s} + {uncached_prompt_tokens} × {allreduce_per_sequence_s}" if r.tp > 1
           and n > 0 else "0 s (nothing to reduce)",
           note="None on one accelerator." if r.tp == 1 else "")
    reprefill = d.step(
        "reprefill_on_resume_s", "Re-prefill the conversation on the next turn", s.prefill_s_per_request, "s",
        formula="{prefill_flops} / ({replica_peak_flops} × {prefill_mfu}) + {prefill_allreduce_s}",
    )
    gpu_s = d.step(
        "reprefill_gpu_seconds", "GPU time that re-prefill costs", reprefill * p.tp_degree, "s",
        formula="{reprefill_on_resume_s} s × {tp_degree} GPUs",
    )
    pinned = d.step(
        "gpus_pinned_per_held_session", "HBM one held conversation pins, in GPUs",
        kv_b / hw.hbm_bytes, "1", noun="GPUs",
        formula="{session_kv_bytes} B / {gpu_memory_bytes} B",
    )
    breakeven = d.step(
        "kv_hold_break_even_s", "Hold KV longer than this and recomputing is cheaper", gpu_s / pinned, "s",
        formula="{reprefill_gpu_seconds} / {gpus_pinned_per_held_session}",
    )
    d.step(
        "cache_through_think_time", "Worth keeping KV through an ordinary think time (prefix cache)?",
        "yes" if p.think_time_s < breakeven else "no", "1",
        formula="{think_time_s} s < {kv_hold_break_even_s} s", kind="verdict",
    )

    # --- quotas: per fleet, then per user ---------------------------------------------------------
    d.step("usable_hbm_bytes", "HBM usable per replica", r.usable_hbm_bytes, "B",
           formula="{tp_degree} × {gpu_memory_bytes} × {usable_hbm_fraction}")
    d.step("kv_room_bytes", "Room left for KV after the weights", r.kv_room_bytes, "B",
           formula="{usable_hbm_bytes} − {weight_bytes}")
    d.step("batch_memory_cap", "Whole streams whose KV fits a replica at once", s.batch_memory_cap, "1",
           noun="sequences",
           formula="max(0, floor({kv_room_bytes} / ({kv_bytes_per_token} × ({prompt_tokens} + {output_tokens}))))")
    # the decode step's two sides, per stream in the batch (the engine's figures)
    d.step("gpu_hbm_Bps", f"{hw.name} HBM bandwidth", hw.hbm_Bps, "B/s",
           formula=f"{hw.name} datasheet, models/catalog.py", kind="lookup")
    d.step("replica_hbm_Bps", "Replica HBM bandwidth at the decode MBU", r.achieved_hbm_Bps, "B/s",
           formula="{tp_degree} × {gpu_hbm_Bps} × {hbm_efficiency}")
    d.step("weight_read_s", "Reading every weight once (the floor of any decode step)",
           r.weight_bytes / r.achieved_hbm_Bps, "s", formula="{weight_bytes} / {replica_hbm_Bps}")
    d.step("decode_context_tokens", "Average context a decode step reads per stream", s.decode_context_tokens,
           "1", noun="tokens", formula="{prompt_tokens} + {output_tokens} / 2")
    d.step("kv_read_per_sequence_s", "Reading one stream's KV at that context",
           r.kv_bytes_per_token * s.decode_context_tokens / r.achieved_hbm_Bps, "s",
           formula="{kv_bytes_per_token} × {decode_context_tokens} / {replica_hbm_Bps}")
    d.step("replica_decode_flops", "Replica decode compute at the decode MFU", r.peak_flops * r.decode_mfu,
           "FLOP/s", formula="{replica_peak_flops} × {decode_mfu}")
    mla = r.model.attention == "MLA" and r.attention_flops
    d.step("decode_attention_flops_per_position", "Attention FLOP per cached token when decoding",
           r.decode_attention_flops_per_position, "FLOP",
           formula=(f"2 FLOP × {r.model.layers} layers × {r.model.heads} heads × (2 × {r.model.kv_lora_rank} latent + "
                    f"{r.model.qk_rope_head_dim} RoPE)") if mla else "{attention_flops_per_position}")
    d.step("decode_flops_per_token", "FLOP per decoded token (2 × active params + attention)",
           r.decode_flops_per_token(s.decode_context_tokens), "FLOP",
           formula="2 FLOP × {active_params} + {decode_attention_flops_per_position} × {decode_context_tokens}")
    d.step("compute_per_sequence_s", "FLOP side per stream in the batch", s.lines.compute[1], "s",
           formula="{decode_flops_per_token} / {replica_decode_flops}")
    d.step("step_overhead_s", "Fixed cost per step (launches, sampling)", r.step_overhead_s, "s",
           formula="{step_overhead_ms}")
    d.step("tpot_target_s", "TPOT target", s.tpot_s, "s", formula="{tpot_target_ms}")
    d.step("batch_tpot_cap_continuous", "Largest batch whose decode step keeps the stream speed, before the floor",
           s.batch_tpot_cap_continuous, "1", noun="sequences",
           formula="max(0, min(({tpot_target_s} − {step_overhead_s} − {allreduce_fixed_s} − {weight_read_s}) / "
                   "({kv_read_per_sequence_s} + {allreduce_per_sequence_s}), ({tpot_target_s} − {step_overhead_s} − "
                   "{allreduce_fixed_s}) / ({compute_per_sequence_s} + {allreduce_per_sequence_s})))")
    d.step("derived_batch", "Streams a replica could decode at the stream speed: the tighter cap", s.derived_batch,
           "1", noun="sequences", formula="max(1, min({batch_memory_cap}, floor({batch_tpot_cap_continuous})))")
    batch = d.step("decode_batch", "Streams one replica decodes", s.batch, "1", noun="sequences",
                   formula="{given_batch} (given)" if p.given_batch else "{derived_batch}")
    d.step("decode_batch_source", "Where the replica's batch comes from",
           "a knob the serving team sets, not derived" if p.given_batch
           else "the tighter of the TPOT and KV caps",
           formula="{given_batch} > 0")
    d.step("decode_step_s", "Decode step at that batch (the TPOT it really delivers)", s.decode_step_s, "s",
           formula="max({weight_read_s} + {decode_batch} × {kv_read_per_sequence_s}, {decode_batch} × "
                   "{compute_per_sequence_s}) + {allreduce_fixed_s} + {decode_batch} × {allreduce_per_sequence_s} + "
                   "{step_overhead_s}")
    peak_replicas = streams / batch
    d.step("replicas_for_peak_demand_continuous", "Replicas the unthrottled peak fills, before rounding up",
           peak_replicas, "1", noun="replicas", formula="{concurrent_streams} / {decode_batch}")
    d.step(
        "replicas_for_peak_demand", "Replicas the unthrottled peak would need",
        math.ceil(peak_replicas - 1e-9), "1", noun="replicas",
        formula="ceil({replicas_for_peak_demand_continuous})",
    )
    free_streams = d.step(
        "free_fleet_streams", "Streams the free fleet serves at once", p.free_tier_replicas * batch,
        "1", noun="streams", formula="{free_tier_replicas} replicas × {decode_batch}",
    )
    d.step(
        "peak_demand_over_free_fleet", "Peak demand over the free fleet", streams / free_streams, "1", noun="×",
        formula="{concurrent_streams} / {free_fleet_streams}",
    )
    d.step(
        "peak_waiting_share", "Share of peak generations that must wait or be turned away",
        max(0.0, 1 - free_streams / streams), "1", percent=True,
        formula="max(0, 1 − {free_fleet_streams} / {concurrent_streams})",
    )
    budget = d.step(
        "free_tier_tokens_per_day", "Output tokens the free fleet produces in a day",
        free_streams * speed * SECONDS_PER_DAY * p.fleet_average_utilization, "1", noun="tokens",
        formula="{free_fleet_streams} × {stream_tokens_per_s} tokens/s × 86,400 s × {fleet_average_utilization}",
    )
    quota = d.step(
        "per_user_daily_quota_tokens", "Daily quota per user",
        budget / (p.daily_active_users * p.quota_use_fraction), "1", noun="tokens",
        formula="{free_tier_tokens_per_day} / ({daily_active_users} users × {quota_use_fraction})",
    )
    d.step(
        "replies_per_day_at_quota", "Average replies that quota buys", quota / p.output_tokens, "1",
        noun="replies", formula="{per_user_daily_quota_tokens} / {output_tokens} tokens",
    )
    d.step(
        "quota_overcommit", "Demand if every user spent the whole quota, over the budget",
        1 / p.quota_use_fraction, "1", noun="×",
        formula="1 / {quota_use_fraction}",
    )
    d.step(
        "requests_to_spend_quota_at_cap", "Fewest requests that spend the quota at the max_tokens cap",
        quota / p.free_max_tokens, "1", noun="requests",
        formula="{per_user_daily_quota_tokens} / {free_max_tokens} tokens",
    )

    # --- abuse: the free tier as a free API -----------------------------------------------------------
    d.step(
        "abuser_share_of_free_fleet", "One unchecked reseller's share of the free fleet",
        p.abuser_tokens_per_day / budget, "1", percent=True,
        formula="{abuser_tokens_per_day} / {free_tier_tokens_per_day}",
    )
    d.step(
        "free_account_value_usd_per_day", "A maxed free account, at the paid price",
        quota * p.api_price_usd_per_mtok / 1e6, "USD",
        formula="{per_user_daily_quota_tokens} tokens × {api_price_usd_per_mtok} USD / 1e6 tokens",
    )
    accounts = d.step(
        "accounts_to_farm", "Free accounts the reseller needs under per-account quotas",
        math.ceil(p.abuser_tokens_per_day / quota - 1e-9), "1", noun="accounts",
        formula="ceil({abuser_tokens_per_day} / {per_user_daily_quota_tokens})",
    )
    d.step(
        "devices_to_farm", "Distinct devices or IPs that takes under per-device quotas",
        math.ceil(accounts / p.accounts_per_device - 1e-9), "1", noun="devices",
        formula="ceil({accounts_to_farm} / {accounts_per_device})",
    )
    d.step(
        "abuser_requests_per_s", "Requests per second the reseller sends, all at the cap",
        p.abuser_tokens_per_day / p.free_max_tokens / SECONDS_PER_DAY, "1/s", noun="requests",
        formula="{abuser_tokens_per_day} / {free_max_tokens} / 86,400 s",
    )

    # --- abuse that is not about compute: scraping for distillation, unsafe content -------------------
    examples = d.step(
        "distill_examples_per_day", "Prompt-reply examples that volume yields a day, replies at the cap",
        p.abuser_tokens_per_day / p.free_max_tokens, "1", noun="examples",
        formula="{abuser_tokens_per_day} / {free_max_tokens} tokens",
    )
    d.step(
        "distill_time_for_dataset_s", "Time to scrape a whole distillation set at that rate",
        p.distill_dataset_examples / examples * SECONDS_PER_DAY, "s",
        formula="{distill_dataset_examples} / {distill_examples_per_day} × 86,400 s",
    )
    d.step(
        "moderation_checks_per_s", "Safety checks per second (every prompt and every reply)",
        2 * rate, "1/s", noun="checks", formula="2 × {generations_per_s}",
    )
    d.step(
        "moderation_compute_share", "Classifier compute against generation compute over the same tokens",
        p.moderation_model_params / d.value("active_params"), "1", percent=True,
        formula="{moderation_model_params} / {active_params}",
    )
    return d
