"""Observability for an inference fleet (seed 004).

Teaching order: why the "GPU utilization" counter reads 100% at any load and what reads headroom
instead (memory-bandwidth utilization, tokens per second per GPU, against the roofline ceiling);
the spans of one request (one decode span, not one per token) and what a span per token would cost
against the GPU time and against the list price of the same tokens; the cardinality budget of the
metrics store (the product of label cardinalities, with and without a tenant label); and cost
attribution that charges a tenant for its share of each batch step.

Modelling choices, stated on the page:
- The fleet serves Llama-3-70B (catalog shape) in bf16, weights and KV cache, tensor-parallel over
  `gpus_per_replica` GPUs; a decode step reads every weight once and every running sequence's KV
  cache once. Mean context during decode = prompt + output / 2.
- Throughput and batch are observations (what the engine's own counters report); MBU and MFU are
  computed from them. An MBU above 100% means the observations contradict each other.
- The fleet runs at the observed rate around the clock, so GPU cost per token = GPU cost per
  second / tokens per second. One span per generated token is the design being priced.
- Series counts are the product of the label cardinalities: the worst case, reached when any
  tenant can land on any replica with any route and status (which a load-balanced fleet does).
- A batch step's cost is shared by bytes read: each sequence carries 1/batch of the weights plus
  its own KV cache (decode is bandwidth-bound, so time follows bytes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Literal

from models.catalog import GPUS, HBM_USABLE_FRACTION, INFER_FLOPS_PER_PARAM_TOKEN, MODELS
from models.core import Derivation, Knob, StrictModel
from models.units import format_number

MODEL = MODELS["Llama-3-70B"]
BF16_BYTES = 2
# Gateway work before the engine sees a request (auth, rate limit, routing): an assumption.
GATEWAY_S = 0.005
SECONDS_PER_DAY = 86_400


@dataclass(frozen=True)
class Span:
    name: str
    parent: str
    records: str  # the attributes and events it carries


# One request's trace. Decode is ONE span carrying token counts and a first-token event.
SPANS: tuple[Span, ...] = (
    Span("request", "", "tenant, model, route, status, tokens in and out"),
    Span("gateway", "request", "auth, rate-limit decision, chosen replica"),
    Span("queue", "request", "admission wait, queue depth on entry"),
    Span("prefill", "request", "prompt tokens, prefix-cache hits"),
    Span("decode", "request", "output tokens, batch size, finish reason; event: first token"),
    Span("stream", "request", "bytes sent, client disconnect"),
    Span("usage", "request", "the billing event's id"),
)

# The label set of the latency histogram, in the order the cardinality product multiplies them.
LABELS = ("replica", "route", "status", "bucket", "tenant")


class Params(StrictModel):
    gpu: Annotated[Literal["H100 SXM", "H200", "B200"], Knob("GPU", help="Sets HBM capacity, bandwidth and FLOP/s.")] = "H100 SXM"
    gpus_per_replica: Annotated[
        int, Knob("GPUs per replica", "GPUs", 2, 16, 1,
                  help="Tensor-parallel degree: the weights and KV cache are split across them.", draw=(4, 8)),
    ] = 4
    batch: Annotated[
        int, Knob("Running batch", "sequences", 1, 512, log=True,
                  help="Sequences decoding together, as the engine reports it.", draw=(48, 128)),
    ] = 64
    tokens_per_s_replica: Annotated[
        float, Knob("Observed throughput per replica", "tokens/s", 10, 50_000, log=True,
                    help="Generated tokens per second, from the engine's token counter.", draw=(1200, 3200)),
    ] = 2400
    prompt_tokens: Annotated[
        float, Knob("Mean prompt", "tokens", 10, 100_000, log=True, help="Input tokens per request.",
                    draw=(500, 3000)),
    ] = 1800
    output_tokens: Annotated[
        float, Knob("Mean output", "tokens", 10, 8000, log=True, help="Generated tokens per request.",
                    draw=(100, 800)),
    ] = 400
    prefill_mfu: Annotated[
        float, Knob("Prefill efficiency", "", 0.05, 0.8, 0.05, percent=True,
                    help="Share of peak FLOP/s a prefill achieves (sets the prefill span's length).",
                    draw=(0.3, 0.6)),
    ] = 0.4
    queue_wait_ms: Annotated[
        float, Knob("Queue wait", "ms", 0, 2000, 10, help="Admission wait before prefill.", draw=(10, 300)),
    ] = 50
    gpu_hour_usd: Annotated[
        float, Knob("GPU-hour cost", "USD", 0.5, 10, 0.1,
                    help="What one GPU-hour costs you (rental, or amortized ownership).", draw=(1.5, 4)),
    ] = 2.5
    replicas: Annotated[
        int, Knob("Replicas in the fleet", "replicas", 1, 10_000, log=True,
                  help="Each is one `replica` label value.", draw=(8, 500)),
    ] = 64
    span_price_per_million_usd: Annotated[
        float, Knob("Price of a million spans", "USD", 0.01, 20, log=True,
                    help="Ingest plus indexing plus retention, per million spans: a vendor's price, or your own "
                         "storage and query cost.", draw=(0.1, 5)),
    ] = 2.0
    list_price_per_million_tokens_usd: Annotated[
        float, Knob("List price per million output tokens", "USD", 0.1, 100, log=True,
                    help="What customers pay for the tokens.", draw=(0.5, 15)),
    ] = 3.0
    routes: Annotated[
        int, Knob("Routes", "", 1, 50, 1, help="Endpoints: chat, completions, embeddings, batch…", draw=(2, 8)),
    ] = 4
    status_codes: Annotated[
        int, Knob("Status values", "", 1, 20, 1, help="Status or finish-reason values a series is split by.",
                  draw=(3, 8)),
    ] = 5
    histogram_buckets: Annotated[
        int, Knob("Histogram buckets", "", 1, 50, 1, help="Each bucket of a latency histogram is its own series.",
                  draw=(8, 20)),
    ] = 12
    tenants: Annotated[
        int, Knob("Tenants", "tenants", 1, 1_000_000, log=True, help="Distinct customer ids.",
                  draw=(500, 50_000)),
    ] = 5000
    series_budget: Annotated[
        float, Knob("Series budget", "series", 10_000, 100_000_000, log=True,
                    help="Active series one metrics store holds comfortably.", draw=(500_000, 10_000_000)),
    ] = 1_000_000
    bytes_per_series: Annotated[
        float, Knob("Memory per active series", "B", 500, 20_000, log=True,
                    help="Index, labels and recent samples in the store's memory; measure your own.",
                    draw=(2000, 8000)),
    ] = 4000
    tenant_tokens_per_day: Annotated[
        float, Knob("One tenant's output per day", "tokens", 100_000, 10_000_000_000, log=True,
                    help="Generated tokens of the tenant being billed.", draw=(1_000_000, 1_000_000_000)),
    ] = 50_000_000
    tenant_context_tokens: Annotated[
        float, Knob("That tenant's mean context", "tokens", 100, 128_000, log=True,
                    help="Tokens in its sequences' KV cache during decode (a long-document tenant).",
                    draw=(2000, 64_000)),
    ] = 16_000


def solve(p: Params) -> Derivation:
    d = Derivation(p)
    gpu = GPUS[p.gpu]
    # --- what a decode step reads --------------------------------------------------------------
    w = d.step("weight_bytes", "Weights read every step (Llama-3-70B, bf16)", MODEL.weight_bytes(BF16_BYTES), "B",
               formula=f"{format_number(MODEL.total_params)} params × {BF16_BYTES} B")
    kvt = d.step("kv_bytes_per_token", "KV cache per token", MODEL.kv_bytes_per_token(BF16_BYTES), "B",
                 formula=f"2 × {MODEL.layers} layers × {MODEL.kv_heads} KV heads × {MODEL.head_dim} × {BF16_BYTES} B")
    ctx = d.step("context_tokens", "Mean context during decode", p.prompt_tokens + p.output_tokens / 2, "1",
                 noun="tokens", formula="{prompt_tokens} + {output_tokens} / 2")
    kv_seq = d.step("kv_bytes_per_seq", "KV cache one sequence reads per step", ctx * kvt, "B",
                    formula="{context_tokens} × {kv_bytes_per_token} B")
    step_bytes = d.step("step_bytes", "Bytes one decode step reads", w + p.batch * kv_seq, "B",
                        formula="{weight_bytes} B + {batch} × {kv_bytes_per_seq} B")
    step_s = d.step("step_time_s", "Observed step time: batch / throughput", p.batch / p.tokens_per_s_replica, "s",
                    formula="{batch} / {tokens_per_s_replica} tokens/s")
    achieved = d.step("achieved_Bps", "Bytes per second the replica actually moves", step_bytes / step_s, "B/s",
                      formula="{step_bytes} B / {step_time_s} s")
    peak = d.step("peak_Bps", "Peak HBM bandwidth of the replica", p.gpus_per_replica * gpu.hbm_Bps, "B/s",
                  formula=f"{{gpus_per_replica}} × {gpu.hbm_TBps} TB/s")
    mbu = d.step("mbu", "Memory-bandwidth utilization (MBU)", 100 * achieved / peak, "%",
                 formula="100 × {achieved_Bps} B/s / {peak_Bps} B/s")
    d.step("mbu_plausible", "Do the observations fit under the roofline?", "yes" if mbu <= 100 else "no", "1",
           formula="{mbu}% ≤ 100%")
    d.step("gpu_util_counter_pct", "What the 'GPU utilization' counter reads: time with a kernel running",
           100 * (p.tokens_per_s_replica / p.batch) * step_s, "%",
           formula="100 × ({tokens_per_s_replica} / {batch}) steps/s × {step_time_s} s")
    peak_flops = p.gpus_per_replica * gpu.dense_bf16_flops
    d.step("mfu", "Model FLOP utilization (MFU)",
           100 * INFER_FLOPS_PER_PARAM_TOKEN * MODEL.total_params * p.tokens_per_s_replica / peak_flops, "%",
           formula=f"100 × {INFER_FLOPS_PER_PARAM_TOKEN} × {format_number(MODEL.total_params)} × {{tokens_per_s_replica}} "
                   f"/ ({{gpus_per_replica}} × {gpu.dense_bf16_TFLOPs} TFLOP/s)")
    per_gpu = d.step("tokens_per_s_per_gpu", "Tokens per second per GPU", p.tokens_per_s_replica / p.gpus_per_replica,
                     "1/s", noun="tokens", formula="{tokens_per_s_replica} / {gpus_per_replica}")
    d.step("step_floor_s", "Fastest this step could run (all bytes at peak bandwidth)", step_bytes / peak, "s",
           formula="{step_bytes} B / {peak_Bps} B/s")
    room = d.step("kv_room_bytes", "HBM left for KV cache", p.gpus_per_replica * gpu.memory_bytes * HBM_USABLE_FRACTION - w,
                  "B", formula=f"{{gpus_per_replica}} × {gpu.memory_GB:g} GB × {HBM_USABLE_FRACTION} − {{weight_bytes}} B")
    max_b = d.step("max_batch_by_kv", "Largest batch the KV cache holds at this context",
                   max(0, math.floor(room / kv_seq)), "1", noun="sequences",
                   formula="⌊{kv_room_bytes} B / {kv_bytes_per_seq} B⌋")
    d.step("kv_fits", "Does the observed batch fit?", "yes" if p.batch <= max_b else "no", "1",
           formula="{batch} ≤ {max_batch_by_kv}")
    ceiling = d.step("ceiling_tokens_per_s_per_gpu", "Roofline ceiling per GPU at the largest batch",
                     max_b / ((w + max_b * kv_seq) / peak) / p.gpus_per_replica if max_b else 0.0, "1/s",
                     noun="tokens",
                     formula="{max_batch_by_kv} / (({weight_bytes} + {max_batch_by_kv} × {kv_bytes_per_seq}) B "
                             "/ {peak_Bps} B/s) / {gpus_per_replica}")
    d.step("headroom_ratio", "Ceiling over what each GPU delivers now", ceiling / per_gpu, "1", noun="×",
           formula="{ceiling_tokens_per_s_per_gpu} / {tokens_per_s_per_gpu}")

    # --- one request's trace ---------------------------------------------------------------------
    gw = d.step("gateway_s", "Gateway span (assumed)", GATEWAY_S, "s")
    q = d.step("queue_s", "Queue span", p.queue_wait_ms / 1000, "s", formula="{queue_wait_ms} ms")
    pre = d.step("prefill_s", "Prefill span",
                 INFER_FLOPS_PER_PARAM_TOKEN * MODEL.total_params * p.prompt_tokens / (peak_flops * p.prefill_mfu), "s",
                 formula=f"{INFER_FLOPS_PER_PARAM_TOKEN} × {format_number(MODEL.total_params)} × {{prompt_tokens}} / "
                         f"({{gpus_per_replica}} × {gpu.dense_bf16_TFLOPs} TFLOP/s × {{prefill_mfu}})")
    ttft = d.step("ttft_s", "Time to first token", gw + q + pre, "s",
                  formula="{gateway_s} s + {queue_s} s + {prefill_s} s")
    dec = d.step("decode_s", "Decode span: one span for every token after the first",
                 max(0.0, p.output_tokens - 1) * step_s, "s", formula="({output_tokens} − 1) × {step_time_s} s")
    d.step("request_s", "The whole request", ttft + dec, "s", formula="{ttft_s} s + {decode_s} s")
    spans = d.step("spans_per_request", "Spans in one request's trace", len(SPANS), "1", noun="spans",
                   formula=" + ".join(s.name for s in SPANS))
    d.step("spans_per_request_per_token", "Spans per request with a span per generated token",
           spans + p.output_tokens, "1", noun="spans", formula="{spans_per_request} + {output_tokens}")

    # --- what a span per token costs, against two prices -----------------------------------------
    fleet_gpus = d.step("fleet_gpus", "GPUs in the fleet", p.replicas * p.gpus_per_replica, "1", noun="GPUs",
                        formula="{replicas} × {gpus_per_replica}")
    tokens_day = d.step("fleet_tokens_per_day", "Tokens the fleet generates a day",
                        p.replicas * p.tokens_per_s_replica * SECONDS_PER_DAY, "1", noun="tokens",
                        formula="{replicas} × {tokens_per_s_replica} tokens/s × 86,400 s")
    gpu_day = d.step("gpu_cost_per_day_usd", "GPU cost of the fleet per day", fleet_gpus * 24 * p.gpu_hour_usd, "USD",
                     formula="{fleet_gpus} × 24 h × {gpu_hour_usd} USD")
    d.step("gpu_cost_per_million_tokens_usd", "GPU cost of a million tokens", gpu_day / tokens_day * 1e6, "USD",
           formula="{gpu_cost_per_day_usd} USD / {fleet_tokens_per_day} × 1,000,000")
    span_day = d.step("per_token_span_cost_per_day_usd", "A span per token: tracing bill per day",
                      tokens_day * p.span_price_per_million_usd / 1e6, "USD",
                      formula="{fleet_tokens_per_day} spans × {span_price_per_million_usd} USD / 1,000,000")
    d.step("span_cost_to_gpu_cost_ratio", "Span per token over the GPU cost of the token", span_day / gpu_day, "1",
           noun="×", formula="{per_token_span_cost_per_day_usd} USD / {gpu_cost_per_day_usd} USD")
    revenue = d.step("revenue_per_day_usd", "The same tokens at list price", tokens_day * p.list_price_per_million_tokens_usd / 1e6,
                     "USD", formula="{fleet_tokens_per_day} × {list_price_per_million_tokens_usd} USD / 1,000,000")
    d.step("span_cost_to_list_price_ratio", "Span per token over the list price of the token", span_day / revenue, "1",
           noun="×", formula="{per_token_span_cost_per_day_usd} USD / {revenue_per_day_usd} USD")
    reqs = d.step("requests_per_day", "Requests a day", tokens_day / p.output_tokens, "1", noun="requests",
                  formula="{fleet_tokens_per_day} / {output_tokens}")
    req_spans = d.step("request_span_cost_per_day_usd", "The request-level layout: tracing bill per day",
                       reqs * spans * p.span_price_per_million_usd / 1e6, "USD",
                       formula="{requests_per_day} × {spans_per_request} × {span_price_per_million_usd} USD / 1,000,000")
    d.step("request_span_share_of_gpu_cost", "That bill as a share of the GPU cost", 100 * req_spans / gpu_day, "%",
           formula="100 × {request_span_cost_per_day_usd} / {gpu_cost_per_day_usd}")

    # --- the cardinality budget ------------------------------------------------------------------
    no_tenant = p.replicas * p.routes * p.status_codes * p.histogram_buckets
    full = d.step("metric_series_full_labels", "Latency-histogram series with every label, tenant included",
                  no_tenant * p.tenants, "1", noun="series",
                  formula="{replicas} × {routes} × {status_codes} × {histogram_buckets} × {tenants}")
    d.step("metric_series_without_tenant", "The same histogram without the tenant label", no_tenant, "1",
           noun="series", formula="{replicas} × {routes} × {status_codes} × {histogram_buckets}")
    d.step("tenant_counter_series", "A per-tenant token counter: no replica, no buckets",
           p.tenants * p.routes * p.status_codes, "1", noun="series",
           formula="{tenants} × {routes} × {status_codes}")
    d.step("full_labels_memory_bytes", "Store memory for the full label set", full * p.bytes_per_series, "B",
           formula="{metric_series_full_labels} × {bytes_per_series} B")
    d.step("without_tenant_memory_bytes", "Store memory without the tenant label", no_tenant * p.bytes_per_series, "B",
           formula="{metric_series_without_tenant} × {bytes_per_series} B")
    d.step("full_labels_over_budget", "Full label set over the series budget", full / p.series_budget, "1", noun="×",
           formula="{metric_series_full_labels} / {series_budget}")

    # --- charging a tenant for its share of the batch --------------------------------------------
    d.step("average_step_share", "An average sequence's share of a step", 100 / p.batch, "%",
           formula="100 / {batch}")
    d.step("weight_share_per_seq_bytes", "Each sequence's slice of the weight read", w / p.batch, "B",
           formula="{weight_bytes} B / {batch}")
    tkv = d.step("tenant_kv_bytes_per_seq", "The tenant's KV read per step", p.tenant_context_tokens * kvt, "B",
                 formula="{tenant_context_tokens} × {kv_bytes_per_token} B")
    share = d.step("tenant_step_share", "The tenant's share of a step it is in",
                   100 * (w / p.batch + tkv) / step_bytes, "%",
                   formula="100 × ({weight_share_per_seq_bytes} + {tenant_kv_bytes_per_seq}) B / {step_bytes} B")
    step_cost = p.gpus_per_replica * p.gpu_hour_usd / 3600 * step_s
    per_m = d.step("tenant_cost_per_million_tokens_usd", "The tenant's GPU cost per million tokens",
                   step_cost * share / 100 * 1e6, "USD",
                   formula="{gpu_cost_per_million_tokens_usd} USD × {tenant_step_share}% / {average_step_share}%")
    cost = d.step("tenant_cost_usd", "The tenant's GPU cost for a day, by batch share",
                  p.tenant_tokens_per_day * per_m / 1e6, "USD",
                  formula="{tenant_tokens_per_day} tokens × {tenant_cost_per_million_tokens_usd} USD / 1,000,000")
    naive = d.step("tenant_cost_by_token_count_usd", "The same tenant charged by token count alone",
                   p.tenant_tokens_per_day * gpu_day / tokens_day, "USD",
                   formula="{tenant_tokens_per_day} tokens × {gpu_cost_per_million_tokens_usd} USD / 1,000,000")
    d.step("tenant_cost_ratio", "Batch-share charge over token-count charge", cost / naive, "1", noun="×",
           formula="{tenant_cost_usd} USD / {tenant_cost_by_token_count_usd} USD")
    return d


def series_count(p: Params, labels: set[str] | frozenset[str]) -> int:
    """Series of the latency histogram when only `labels` are attached (the live cardinality toggles)."""
    sizes = {"replica": p.replicas, "route": p.routes, "status": p.status_codes, "bucket": p.histogram_buckets,
             "tenant": p.tenants}
    out = 1
    for name in labels:
        out *= sizes[name]
    return out


def waterfall(p: Params) -> list[tuple[str, float, float, str]]:
    """(span, start_s, end_s, what it records) for one request, root first, from the solve's steps."""
    d = solve(p)
    gw, q, pre = d.value("gateway_s"), d.value("queue_s"), d.value("prefill_s")
    ttft, end = d.value("ttft_s"), d.value("request_s")
    times = {
        "request": (0.0, end),
        "gateway": (0.0, gw),
        "queue": (gw, gw + q),
        "prefill": (gw + q, ttft),
        "decode": (ttft, end),
        "stream": (ttft, end),
        "usage": (end, end),
    }
    return [(s.name, *times[s.name], s.records) for s in SPANS]
