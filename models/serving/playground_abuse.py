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
- Re-prefill counts 2 x active parameters FLOP per prompt token plus causal attention,
  2 x layers x n^2 x (heads x head_dim), at a stated MFU on a replica of catalog GPUs.
- Holding a session's KV is charged as the share of one GPU's HBM it pins (weights ignored,
  which makes holding look cheaper than it is).
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

from models.catalog import GPUS, INFER_FLOPS_PER_PARAM_TOKEN, MODELS
from models.core import Derivation, Knob, StrictModel
from models.units import format_number

SECONDS_PER_DAY = 86_400


class Params(StrictModel):
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
    mean_output_tokens: Annotated[
        float,
        Knob("Mean reply", "tokens", 10, 8_000, log=True, help="Output tokens per generation.",
             draw=(200, 1_500)),
    ] = 500
    stream_tokens_per_s: Annotated[
        float,
        Knob("Stream speed", "tokens/s", 5, 300, log=True, help="Tokens per second one stream receives.",
             draw=(30, 120)),
    ] = 50
    transport: Annotated[
        Literal["SSE", "WebSocket"],
        Knob("Transport", help="SSE: one HTTP response per generation. WebSocket: one socket per visit."),
    ] = "SSE"
    gateway_kb_per_connection: Annotated[
        float,
        Knob("Gateway memory per open connection", "KB", 4, 1_024, log=True,
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
    context_tokens_on_resume: Annotated[
        int,
        Knob("Conversation length at resume", "tokens", 100, 200_000, 1, log=True,
             help="Everything the next turn must attend to: system prompt and all earlier turns.",
             draw=(2_000, 32_000)),
    ] = 8_000
    model: Annotated[
        Literal["Llama-3-70B", "Llama-3-8B", "Mixtral-8x7B"],
        Knob("Model (catalog)", help="Sets KV bytes per token, parameters and attention shape."),
    ] = "Llama-3-70B"
    gpu: Annotated[
        Literal["H100 SXM", "H200", "B200", "A100 80GB", "MI300X"],
        Knob("GPU (catalog)", help="Sets peak BF16 FLOP/s and HBM per GPU."),
    ] = "H100 SXM"
    replica_gpus: Annotated[
        int,
        Knob("GPUs per replica", "", 1, 16, 1, help="Tensor-parallel group that runs the prefill.", draw=(2, 8)),
    ] = 8
    prefill_mfu: Annotated[
        float,
        Knob("Prefill MFU", "", 0.1, 0.8, 0.05, percent=True,
             help="Share of peak BF16 FLOP/s a prefill achieves; 40-50% is typical for long prompts.",
             draw=(0.3, 0.6)),
    ] = 0.4
    streams_per_replica: Annotated[
        int,
        Knob("Streams one replica decodes at the target speed", "", 1, 512, 1, log=True,
             help="The continuous batch that still delivers the stream speed above.", draw=(16, 256)),
    ] = 64
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


def solve(p: Params) -> Derivation:
    d = Derivation(p)
    llm = MODELS[p.model]
    gpu = GPUS[p.gpu]

    # --- numbers: Little's law -------------------------------------------------------------------
    stream_s = d.step(
        "stream_s", "One reply streams for", p.mean_output_tokens / p.stream_tokens_per_s, "s",
        formula="{mean_output_tokens} tokens / {stream_tokens_per_s} tokens/s",
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
        formula="{generations_per_s} /s × {stream_s} s",
    )
    out_tps = d.step(
        "output_tokens_per_s", "Output tokens per second, all streams", streams * p.stream_tokens_per_s, "1/s",
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
        100 * (1 - stream_s / cycle_s), "%",
        formula="100 × (1 − {stream_s} s / {turn_cycle_s} s)",
    )
    d.step(
        "gateway_memory_sse_bytes", "Gateway memory with SSE", streams * conn_b, "B",
        formula="{sse_connections} × {gateway_kb_per_connection} KB",
    )
    d.step(
        "gateway_memory_websocket_bytes", "Gateway memory with WebSocket", p.users_online * conn_b, "B",
        formula="{websocket_connections} × {gateway_kb_per_connection} KB",
    )
    open_conns = d.step(
        "open_connections", f"Open connections with {p.transport}",
        streams if p.transport == "SSE" else float(p.users_online), "1", noun="connections",
        formula="{sse_connections}" if p.transport == "SSE" else "{websocket_connections}",
    )
    d.step(
        "gateway_memory_bytes", f"Gateway memory with {p.transport}", open_conns * conn_b, "B",
        formula="{open_connections} × {gateway_kb_per_connection} KB",
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
    kv_tok = d.step(
        "kv_bytes_per_token", f"KV cache per token, {p.model} (bf16)", llm.kv_bytes_per_token(2), "B",
        formula=f"2 (K and V) × {llm.layers} layers × {llm.kv_heads} KV heads × {llm.head_dim} × 2 B",
    )
    d.step(
        "kv_to_text_ratio", "KV bytes over text bytes per token", kv_tok / p.text_bytes_per_token, "1", noun="×",
        formula="{kv_bytes_per_token} B / {text_bytes_per_token} B",
    )
    text_b = d.step(
        "session_text_bytes", "One conversation as text", p.context_tokens_on_resume * p.text_bytes_per_token, "B",
        formula="{context_tokens_on_resume} tokens × {text_bytes_per_token} B",
    )
    kv_b = d.step(
        "session_kv_bytes", "The same conversation as KV", p.context_tokens_on_resume * kv_tok, "B",
        formula="{context_tokens_on_resume} tokens × {kv_bytes_per_token} B",
    )
    d.step(
        "text_store_bytes", "Every open conversation as text", p.users_online * text_b, "B",
        formula="{users_online} × {session_text_bytes} B",
    )
    kv_all = d.step(
        "kv_for_open_sessions_bytes", "Every open conversation as KV", p.users_online * kv_b, "B",
        formula="{users_online} × {session_kv_bytes} B",
    )
    d.step(
        "gpus_to_hold_session_kv", f"{p.gpu} HBM to hold all of it (weights aside)",
        kv_all / gpu.memory_bytes, "1", noun="GPUs",
        formula=f"{{kv_for_open_sessions_bytes}} B / {gpu.memory_GB:g} GB",
    )
    linear = d.step(
        "prefill_linear_flops", "Re-prefill: 2 FLOP per active parameter per token",
        INFER_FLOPS_PER_PARAM_TOKEN * llm.active_params * p.context_tokens_on_resume, "FLOP",
        formula=f"2 × {format_number(llm.active_params)} × {{context_tokens_on_resume}}",
    )
    attn = d.step(
        "prefill_attention_flops", "Re-prefill: causal attention",
        2 * llm.layers * p.context_tokens_on_resume**2 * llm.heads * llm.head_dim, "FLOP",
        formula=f"2 × {llm.layers} layers × {{context_tokens_on_resume}}² × {llm.heads * llm.head_dim}",
    )
    flops = d.step(
        "prefill_flops", "Re-prefill, total", linear + attn, "FLOP",
        formula="{prefill_linear_flops} + {prefill_attention_flops}",
    )
    peak = d.step(
        "replica_peak_flops", f"Replica peak, {p.replica_gpus} × {p.gpu} BF16",
        p.replica_gpus * gpu.dense_bf16_flops, "FLOP/s",
        formula=f"{{replica_gpus}} × {gpu.dense_bf16_TFLOPs:g} TFLOP/s",
    )
    reprefill = d.step(
        "reprefill_on_resume_s", "Re-prefill the conversation on the next turn",
        flops / (peak * p.prefill_mfu), "s",
        formula="{prefill_flops} / ({replica_peak_flops} × {prefill_mfu})",
    )
    gpu_s = d.step(
        "reprefill_gpu_seconds", "GPU time that re-prefill costs", reprefill * p.replica_gpus, "s",
        formula="{reprefill_on_resume_s} s × {replica_gpus} GPUs",
    )
    pinned = d.step(
        "gpus_pinned_per_held_session", "HBM one held conversation pins, in GPUs",
        kv_b / gpu.memory_bytes, "1", noun="GPUs",
        formula=f"{{session_kv_bytes}} B / {gpu.memory_GB:g} GB",
    )
    breakeven = d.step(
        "kv_hold_break_even_s", "Hold KV longer than this and recomputing is cheaper", gpu_s / pinned, "s",
        formula="{reprefill_gpu_seconds} GPU·s / {gpus_pinned_per_held_session} GPUs",
    )
    d.step(
        "cache_through_think_time", "Worth keeping KV through an ordinary think time (prefix cache)?",
        "yes" if p.think_time_s < breakeven else "no", "1",
        formula="{think_time_s} s < {kv_hold_break_even_s} s",
    )

    # --- quotas: per fleet, then per user ---------------------------------------------------------
    d.step(
        "replicas_for_peak_demand", "Replicas the unthrottled peak would need",
        math.ceil(streams / p.streams_per_replica - 1e-9), "1", noun="replicas",
        formula="ceil({concurrent_streams} / {streams_per_replica})",
    )
    free_streams = d.step(
        "free_fleet_streams", "Streams the free fleet serves at once", p.free_tier_replicas * p.streams_per_replica,
        "1", noun="streams", formula="{free_tier_replicas} replicas × {streams_per_replica}",
    )
    d.step(
        "peak_demand_over_free_fleet", "Peak demand over the free fleet", streams / free_streams, "1", noun="×",
        formula="{concurrent_streams} / {free_fleet_streams}",
    )
    d.step(
        "peak_waiting_share", "Share of peak generations that must wait or be turned away",
        100 * max(0.0, 1 - free_streams / streams), "%",
        formula="100 × max(0, 1 − {free_fleet_streams} / {concurrent_streams})",
    )
    budget = d.step(
        "free_tier_tokens_per_day", "Output tokens the free fleet produces in a day",
        free_streams * p.stream_tokens_per_s * SECONDS_PER_DAY * p.fleet_average_utilization, "1", noun="tokens",
        formula="{free_fleet_streams} × {stream_tokens_per_s} tokens/s × 86,400 s × {fleet_average_utilization}",
    )
    quota = d.step(
        "per_user_daily_quota_tokens", "Daily quota per user",
        budget / (p.daily_active_users * p.quota_use_fraction), "1", noun="tokens",
        formula="{free_tier_tokens_per_day} / ({daily_active_users} users × {quota_use_fraction})",
    )
    d.step(
        "replies_per_day_at_quota", "Average replies that quota buys", quota / p.mean_output_tokens, "1",
        noun="replies", formula="{per_user_daily_quota_tokens} / {mean_output_tokens} tokens",
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
        100 * p.abuser_tokens_per_day / budget, "%",
        formula="100 × {abuser_tokens_per_day} / {free_tier_tokens_per_day}",
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
    return d
