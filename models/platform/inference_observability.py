"""Observability for an inference fleet (seed 004).

Teaching order: why the "GPU utilization" counter reads 100% at any load and what reads headroom
instead (memory-bandwidth utilization, tokens per second per GPU, against the roofline ceiling);
the spans of one request (one decode span, not one per token) and what a span per token would cost
against the GPU time and against the list price of the same tokens; the cardinality budget of the
metrics store (the product of label cardinalities, with and without a tenant label); and cost
attribution that charges a tenant for its share of each batch step.

Modelling choices, stated on the page:
- The replica is the engine's (models/engine): by default Llama-3-70B in bf16, weights and KV
  cache, tensor-parallel over `tp_degree` GPUs; a decode step reads every weight once and every
  running sequence's KV cache once. Mean context during decode = prompt + output / 2. The observed
  batch is the engine's `given_batch`; 0 lets the TPOT target and the KV room set it.
- Throughput and batch are observations (what the engine's own counters report); MBU and MFU are
  computed from them. An MBU above 100% means the observations contradict each other.
- Prefill shares the replica with decode (chunked into decode steps, so it reads no extra weights
  and MBU counts decode's bytes): the replica's time is prefill's share (requests/s x the
  engine's prefill of the uncached prompt) plus decode's (steps/s x the engine's decode step),
  and MFU counts both. Above 100% of the replica's time the observations cannot all be true.
- The fleet runs at the observed rate around the clock, so GPU cost per token = GPU cost per
  second / tokens per second. One span per generated token is the design being priced.
- Series counts are the product of the label cardinalities: the worst case, reached when any
  tenant can land on any replica with any route and status (which a load-balanced fleet does).
- A batch step's cost is shared by bytes read: each sequence carries 1/batch of the weights plus
  its own KV cache (decode is bandwidth-bound, so time follows bytes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from models.core import Derivation, Knob, StrictModel
from models.units import format_number, format_quantity
from models.engine.knobs import with_defaults, without
from models.engine.precision import ACTIVATION_BYTES
from models.engine.record import kv_formula
from models.engine.roofline import ALLREDUCES_PER_LAYER
from models.engine.serving_knobs import ServingKnobs, served
# Gateway work before the engine sees a request (auth, rate limit, routing): an assumption.
GATEWAY_S = 0.005
# Published figures the page quotes beside its own (each cited on the page).
MEASURED_DECODE_MBU_A100 = 0.77  # Llama-3.1-8B, batch 1, vLLM on an A100 40GB
OTEL_DECISION_WAIT_S = 30.0  # tail_sampling decision_wait default
OTEL_NUM_TRACES = 50_000  # tail_sampling num_traces default
PROM_EXEMPLAR_BYTES = 100.0  # Prometheus exemplar storage, one trace_id exemplar
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


class _ObservabilityKnobs(StrictModel):
    tokens_per_s_replica: Annotated[
        float, Knob("Observed throughput per replica", "tokens/s", 10, 50_000, log=True,
                    help="Generated tokens per second, from the engine's token counter.", draw=(1000, 2400)),
    ] = 2400
    queue_wait_ms: Annotated[
        float, Knob("Queue wait", "ms", 0, 2000, 10, help="Admission wait before prefill.", draw=(10, 300)),
    ] = 50
    gpu_hour_usd: Annotated[
        float, Knob("GPU-hour cost", "USD/h", 0.5, 10, 0.1,
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


# The page's observed scenario: a batch of 64 reported by the engine, 1,800-token prompts of which
# the prefix cache holds 80% (a chat fleet: the system prompt and the earlier turns), 400-token
# answers, on 4 H100s. With no prefix cache the same counters cannot be true: 6 requests/s of
# 1,800-token prefills and decode at 2,400 tokens/s would need 152% of the replica's time.
# The batch is observed, not derived from a target, and no fleet is sized: no TPOT target or
# utilization target to show.
class Params(without(with_defaults(ServingKnobs, tp_degree=4, given_batch=64, prompt_tokens=1800, output_tokens=400,
                                   prefix_cache_hit=0.8), "tpot_target_ms", "target_utilization"),
             _ObservabilityKnobs):
    """What the fleet reports and what it costs, then the request and the engine."""


def _engine_step_formula(read: str, batch: str) -> str:
    """The engine's decode step at `batch` sequences reading `read` bytes: the slower of the bytes
    side at the decode MBU and the FLOP side at the decode MFU, plus the all-reduces and the fixed cost."""
    return (f"max({read} / ({{peak_Bps}} × {{hbm_efficiency}}), {batch} × {{decode_flops_per_token}} / "
            f"({{replica_peak_flops}} × {{decode_mfu}})) + {{allreduce_fixed_s}} + {batch} × {{allreduce_per_token_s}} "
            "+ {step_overhead_ms}")


def solve(p: Params) -> Derivation:
    d = Derivation(p)
    e = served(p)
    r, hw, m = e.replica, e.replica.hw, e.replica.model
    tp, batch = p.tp_degree, e.batch
    # --- what a decode step reads --------------------------------------------------------------
    d.step("model_params", f"{m.name} parameters (counted from its shape)", m.total_params, "1", noun="parameters")
    d.step("bytes_per_weight", f"Bytes per weight in {p.weight_precision}", r.bytes_per_weight, "B", kind="lookup")
    w = d.step("weight_bytes", f"Weights read every step ({m.name}, {p.weight_precision})", r.weight_bytes, "B",
               formula="{model_params} × {bytes_per_weight}")
    d.step("bytes_per_kv_element", f"Bytes per KV element in {p.kv_precision}", r.bytes_per_kv_element, "B",
           kind="lookup")
    kvt = d.step("kv_bytes_per_token", f"KV cache per token ({p.kv_precision})", r.kv_bytes_per_token, "B",
                 formula=kv_formula(p))
    ctx = d.step("context_tokens", "Mean context during decode", e.decode_context_tokens, "1",
                 noun="tokens", formula="{prompt_tokens} + {output_tokens} / 2")
    d.step("decode_batch", "Running batch, as the engine reports it", batch, "1", noun="sequences",
           formula="{given_batch} (observed)" if p.given_batch else "the tighter of the TPOT and KV caps",
           kind="" if p.given_batch else "search")
    kv_seq = d.step("kv_bytes_per_seq", "KV cache one sequence reads per step", ctx * kvt, "B",
                    formula="{context_tokens} × {kv_bytes_per_token}")
    model_step = r.decode_step(batch, ctx)
    step_bytes = d.step("step_bytes", "Bytes one decode step reads", model_step.bytes_read, "B",
                        formula="{weight_bytes} + {decode_batch} × {kv_bytes_per_seq}")
    step_s = d.step("step_time_s", "Observed step time: batch / throughput", batch / p.tokens_per_s_replica, "s",
                    formula="{decode_batch} / {tokens_per_s_replica}")
    achieved = d.step("achieved_Bps", "Bytes per second the replica actually moves", step_bytes / step_s, "B/s",
                      formula="{step_bytes} / {step_time_s}")
    d.step("gpu_hbm_Bps", f"{hw.name} HBM bandwidth", hw.hbm_Bps, "B/s")
    peak = d.step("peak_Bps", "Peak HBM bandwidth of the replica", r.hbm_Bps, "B/s",
                  formula="{tp_degree} × {gpu_hbm_Bps}")
    mbu = d.step("mbu", "Memory-bandwidth utilization (MBU)", achieved / peak, "1", percent=True,
                 formula="{achieved_Bps} / {peak_Bps}")
    d.step("mbu_plausible", "Do the observations fit under the roofline?", "yes" if mbu <= 1 else "no", "1",
           formula="{mbu} ≤ 100%", kind="verdict")
    d.step("gpu_util_counter_share", "What the 'GPU utilization' counter reads: time with a kernel running",
           (p.tokens_per_s_replica / batch) * step_s, "1", percent=True,
           formula="{tokens_per_s_replica} / {decode_batch} × {step_time_s}")
    peak_flops = r.peak_flops
    d.step("gpu_peak_flops", f"{hw.name} dense {p.compute_precision} peak", hw.peak(p.compute_precision), "FLOP/s")
    d.step("replica_peak_flops", f"Replica dense {p.compute_precision} peak", peak_flops, "FLOP/s",
           formula="{tp_degree} × {gpu_peak_flops}")
    d.step("active_params", "Parameters each token runs through", m.active_params, "1", noun="parameters")
    d.step("attention_flops_per_position", "Attention FLOP per token per earlier token (QK^T and AV)",
           r.attention_flops_per_position, "FLOP",
           note="0 when attention FLOP are not counted (the textbook 2 × parameters per token).")
    mla = m.attention == "MLA" and r.attention_flops
    d.step("decode_attention_flops_per_position", "Attention FLOP per cached token when decoding",
           r.decode_attention_flops_per_position, "FLOP",
           formula=(f"2 FLOP × {m.layers} layers × {m.heads} heads × (2 × {m.kv_lora_rank} latent + "
                    f"{m.qk_rope_head_dim or 0} RoPE)") if mla else "{attention_flops_per_position}")
    fpt = d.step("decode_flops_per_token", "FLOP per decoded token (2 × active params + attention)",
                 r.decode_flops_per_token(ctx), "FLOP",
                 formula="2 FLOP × {active_params} + {decode_attention_flops_per_position} × {context_tokens}")
    d.step("mfu", "Model FLOP utilization (MFU)", fpt * p.tokens_per_s_replica / peak_flops, "1", percent=True,
           formula="{decode_flops_per_token} × {tokens_per_s_replica} / {replica_peak_flops}")
    per_gpu = d.step("tokens_per_s_per_gpu", "Tokens per second per GPU", p.tokens_per_s_replica / tp,
                     "1/s", noun="tokens", formula="{tokens_per_s_replica} / {tp_degree}")
    d.step("step_floor_s", "Fastest this step could run (all bytes at peak bandwidth)", step_bytes / peak, "s",
           formula="{step_bytes} / {peak_Bps}")
    d.step("link_Bps_per_direction", f"{hw.name} scale-up link, each way", hw.link_Bps_per_direction, "B/s",
           kind="lookup")
    d.step("allreduce_fixed_s", "Tensor-parallel all-reduces per step, latency part", r.allreduce_s(0), "s",
           formula=f"{m.layers} layers × {ALLREDUCES_PER_LAYER} × {{allreduce_latency_us}}" if tp > 1 else "",
           note="None on one accelerator." if tp == 1 else "")
    d.step("allreduce_per_token_s", "Tensor-parallel all-reduces per step, per token in the batch",
           r.allreduce_s(1) - r.allreduce_s(0), "s",
           formula=(f"{m.layers} layers × {ALLREDUCES_PER_LAYER} × 2 × ({{tp_degree}} − 1) / {{tp_degree}} × "
                    f"{m.d_model} × {ACTIVATION_BYTES:g} B / {{link_Bps_per_direction}}") if tp > 1 else "",
           note="None on one accelerator." if tp == 1 else "")
    d.step("model_step_s", "The engine's step at this batch (MBU, all-reduces and fixed cost included)",
           model_step.step_s, "s", formula=_engine_step_formula("{step_bytes}", "{decode_batch}"))
    d.step("gpu_memory_bytes", f"{hw.name} HBM", hw.hbm_bytes, "B")
    d.step("kv_room_bytes", "HBM left for KV cache", r.kv_room_bytes,
           "B", formula="{tp_degree} × {gpu_memory_bytes} × {usable_hbm_fraction} − {weight_bytes}")
    d.step("kv_bytes_per_sequence_longest", "KV of one sequence at its longest (prompt + output)",
           e.kv_bytes_per_sequence, "B", formula="{kv_bytes_per_token} × ({prompt_tokens} + {output_tokens})")
    d.step("max_batch_by_kv_continuous", "Sequences whose KV fits at once, before the floor",
           e.batch_memory_cap_continuous, "1", noun="sequences",
           formula="{kv_room_bytes} / {kv_bytes_per_sequence_longest}")
    max_b = d.step("max_batch_by_kv", "Largest batch the KV cache holds, every sequence at its longest",
                   e.batch_memory_cap, "1", noun="sequences", formula="⌊{max_batch_by_kv_continuous}⌋")
    d.step("kv_fits", "Does the observed batch fit?", "yes" if batch <= max_b else "no", "1",
           formula="{decode_batch} ≤ {max_batch_by_kv}", kind="verdict")
    ceiling_step = r.decode_step(max_b, ctx) if max_b else None
    d.step("ceiling_step_s", "The engine's step at that batch", ceiling_step.step_s if ceiling_step else 0.0, "s",
           formula=_engine_step_formula("({weight_bytes} + {max_batch_by_kv} × {kv_bytes_per_seq})",
                                        "{max_batch_by_kv}") if ceiling_step else "0 s (no sequence fits)")
    ceiling = d.step("ceiling_tokens_per_s_per_gpu", "Engine ceiling per GPU at the largest batch",
                     max_b / ceiling_step.step_s / tp if ceiling_step else 0.0, "1/s", noun="tokens",
                     formula="{max_batch_by_kv} / {ceiling_step_s} / {tp_degree}" if ceiling_step
                     else "0 tokens/s (no sequence fits)")
    headroom = d.step("headroom_ratio", "Ceiling over what each GPU delivers now", ceiling / per_gpu, "1", noun="×",
                      formula="{ceiling_tokens_per_s_per_gpu} / {tokens_per_s_per_gpu}")
    roofline = d.step("roofline_tokens_per_s", "Throughput at which this batch's steps read at peak bandwidth "
                      "(MBU 100%)", batch * peak / step_bytes, "1/s", noun="tokens",
                      formula="{decode_batch} × {peak_Bps} / {step_bytes}")
    # The utilization chart's ends: from a fiftieth of the roofline to a tenth past it (or past the
    # observed throughput), inside the knob's 10-50,000 tokens/s; beyond the roofline the counters cannot hold.
    d.step("utilization_chart_from_tokens_per_s", "The utilization chart starts at a fiftieth of the roofline",
           max(10.0, roofline / 50), "1/s", noun="tokens", formula="max(10 / 1 s, {roofline_tokens_per_s} / 50)")
    d.step("utilization_chart_to_tokens_per_s", "… and ends a tenth past the roofline or the observed throughput",
           min(50_000.0, max(1.1 * roofline, 1.1 * p.tokens_per_s_replica)), "1/s", noun="tokens",
           formula="min(50,000 / 1 s, max(1.1 × {roofline_tokens_per_s}, 1.1 × {tokens_per_s_replica}))")

    # --- published anchors and real defaults the prose quotes ---------------------------------------
    d.step("measured_decode_mbu_a100", "Measured: single-request vLLM decode on an A100, share of the bandwidth roofline",
           MEASURED_DECODE_MBU_A100, "1", percent=True, kind="lookup")
    d.step("otel_decision_wait_s", "OpenTelemetry tail sampling: default decision_wait", OTEL_DECISION_WAIT_S, "s",
           kind="lookup")
    d.step("otel_num_traces", "OpenTelemetry tail sampling: default num_traces held in memory", OTEL_NUM_TRACES, "1",
           noun="traces", kind="lookup")
    d.step("prom_exemplar_bytes", "Prometheus: memory per trace-id exemplar", PROM_EXEMPLAR_BYTES, "B", kind="lookup")

    # --- one request's trace ---------------------------------------------------------------------
    gw = d.step("gateway_s", "Gateway span (assumed)", GATEWAY_S, "s")
    q = d.step("queue_s", "Queue span", p.queue_wait_ms / 1000, "s", formula="{queue_wait_ms} ms")
    d.step("uncached_prompt_tokens", "Prompt tokens the prefix cache misses", e.uncached_prompt_tokens, "1",
           noun="tokens", formula="{prompt_tokens} × (1 − {prefix_cache_hit})")
    d.step("cached_prompt_tokens", "Prompt tokens served from the prefix cache", e.cached_prompt_tokens, "1",
           noun="tokens", formula="{prompt_tokens} − {uncached_prompt_tokens}")
    d.step("prefill_flops_per_request", "Prefill FLOP per request, attention included", e.prefill_flops_per_request,
           "FLOP", formula="2 FLOP × {active_params} × {uncached_prompt_tokens} + {attention_flops_per_position} × "
                           "({uncached_prompt_tokens} × {cached_prompt_tokens} + {uncached_prompt_tokens} × "
                           "({uncached_prompt_tokens} − 1) / 2)")
    prefilled = e.uncached_prompt_tokens > 0
    d.step("prefill_allreduce_s", "Prefill's tensor-parallel all-reduces, one request",
           r.allreduce_s(e.uncached_prompt_tokens) if prefilled else 0.0, "s",
           formula="{allreduce_fixed_s} + {uncached_prompt_tokens} × {allreduce_per_token_s}" if prefilled else "")
    pre = d.step("prefill_s", "Prefill span", e.prefill_s_per_request, "s",
                 formula="{prefill_flops_per_request} / ({replica_peak_flops} × {prefill_mfu}) + {prefill_allreduce_s}"
                 if prefilled else "0 s (every prompt token cached)")
    d.step("arrival_s", "The request arrives: its trace's clock starts", 0.0, "s", formula="0 s")
    d.step("prefill_start_s", "Prefill starts: gateway and queue behind it", gw + q, "s",
           formula="{gateway_s} + {queue_s}")
    ttft = d.step("ttft_s", "Time to first token", gw + q + pre, "s",
                  formula="{gateway_s} + {queue_s} + {prefill_s}")
    dec = d.step("decode_s", "Decode span: one span for every token after the first",
                 max(0.0, p.output_tokens - 1) * step_s, "s", formula="({output_tokens} − 1) × {step_time_s}")
    d.step("request_s", "The whole request", ttft + dec, "s", formula="{ttft_s} + {decode_s}")

    # --- the replica's time: prefill and decode share it ------------------------------------------
    rps = d.step("requests_per_s_replica", "Requests per second one replica serves",
                 p.tokens_per_s_replica / p.output_tokens, "1/s", noun="requests",
                 formula="{tokens_per_s_replica} / {output_tokens}")
    steps_per_s = d.step("decode_steps_per_s", "Decode steps per second", p.tokens_per_s_replica / batch, "1/s",
                         noun="steps", formula="{tokens_per_s_replica} / {decode_batch}")
    pre_busy = d.step("prefill_busy_share", "Replica time prefilling the prompts", rps * pre, "1", percent=True,
                      formula="{requests_per_s_replica} × {prefill_s}")
    dec_busy = d.step("decode_busy_share", "Replica time in the engine's decode steps",
                      steps_per_s * model_step.step_s, "1", percent=True,
                      formula="{decode_steps_per_s} × {model_step_s}")
    busy = d.step("replica_busy_share", "Replica time prefill and decode need together", pre_busy + dec_busy, "1",
                  percent=True, formula="{prefill_busy_share} + {decode_busy_share}")
    # Decode at the KV ceiling serves headroom_ratio × today's tokens in the whole replica's time; prefill
    # grows with the requests. Scale today's load by k: k × prefill + k / headroom_ratio ≤ 100%.
    d.step("prefill_share_at_kv_headroom", "Prefill's share of the replica at the KV ceiling's throughput",
           pre_busy * headroom, "1", percent=True, formula="{prefill_busy_share} × {headroom_ratio}")
    d.step("headroom_with_prefill_ratio", "Throughput over today's at which decode (at the KV ceiling) plus prefill "
           "fill the replica", 1 / (pre_busy + 1 / headroom) if headroom > 0 else 0.0, "1", noun="×",
           formula="1 / ({prefill_busy_share} + 1 / {headroom_ratio})" if headroom > 0 else "0 × (no sequence fits)")
    d.step("model_step_with_prefill_s", "The engine's decode step plus its share of prefill",
           model_step.step_s + rps * pre / steps_per_s, "s",
           formula="{model_step_s} + {requests_per_s_replica} × {prefill_s} / {decode_steps_per_s}")
    d.step("mfu_with_prefill", "MFU with the prompts' prefill counted",
           (fpt * p.tokens_per_s_replica + rps * e.prefill_flops_per_request) / peak_flops, "1", percent=True,
           formula="({decode_flops_per_token} × {tokens_per_s_replica} + {requests_per_s_replica} × "
                   "{prefill_flops_per_request}) / {replica_peak_flops}")
    d.require("replica_busy_share", busy <= 1, lambda: (
        f"This replica cannot do it: prefill and decode need {format_quantity(100 * busy, '%')} of its time "
        f"({format_quantity(100 * pre_busy, '%')} prefilling {format_quantity(rps, '1/s', noun='requests')}, "
        f"{format_quantity(100 * dec_busy, '%')} decoding). Lower the throughput, shorten the prompts or raise the "
        "prefix-cache hit."))
    d.require("mbu", mbu <= 1, lambda: (
        f"These counters contradict each other: {format_quantity(p.tokens_per_s_replica, '1/s', noun='tokens')} "
        f"at a batch of {format_number(batch)} would move {format_quantity(100 * mbu, '%')} of the replica's peak HBM "
        "bandwidth."))
    spans = d.step("spans_per_request", "Spans in one request's trace", len(SPANS), "1", noun="spans",
                   formula=" + ".join(f"1 ({s.name})" for s in SPANS))
    d.step("spans_per_request_per_token", "Spans per request with a span per generated token",
           spans + p.output_tokens, "1", noun="spans", formula="{spans_per_request} + {output_tokens}")

    # --- what a span per token costs, against two prices -----------------------------------------
    fleet_gpus = d.step("fleet_gpus", "GPUs in the fleet", p.replicas * tp, "1", noun="GPUs",
                        formula="{replicas} × {tp_degree}")
    tokens_day = d.step("fleet_tokens_per_day", "Tokens the fleet generates a day",
                        p.replicas * p.tokens_per_s_replica * SECONDS_PER_DAY, "1", noun="tokens",
                        formula="{replicas} × {tokens_per_s_replica} × 86,400 s")
    gpu_day = d.step("gpu_cost_per_day_usd", "GPU cost of the fleet per day", fleet_gpus * 24 * p.gpu_hour_usd, "USD",
                     formula="{fleet_gpus} × {gpu_hour_usd} × 24 h")
    d.step("gpu_cost_per_million_tokens_usd", "GPU cost of a million tokens", gpu_day / tokens_day * 1e6, "USD",
           formula="{gpu_cost_per_day_usd} / {fleet_tokens_per_day} × 1,000,000")
    span_day = d.step("per_token_span_cost_per_day_usd", "A span per token: tracing bill per day",
                      tokens_day * p.span_price_per_million_usd / 1e6, "USD",
                      formula="{fleet_tokens_per_day} × {span_price_per_million_usd} / 1,000,000")
    d.step("span_cost_to_gpu_cost_ratio", "Span per token over the GPU cost of the token", span_day / gpu_day, "1",
           noun="×", formula="{per_token_span_cost_per_day_usd} / {gpu_cost_per_day_usd}")
    d.step("span_vs_gpu_cost", "A span per token against the GPU cost: more or less?",
           "more" if span_day > gpu_day else "less", "1",
           formula="{per_token_span_cost_per_day_usd} > {gpu_cost_per_day_usd}", kind="verdict")
    revenue = d.step("revenue_per_day_usd", "The same tokens at list price", tokens_day * p.list_price_per_million_tokens_usd / 1e6,
                     "USD", formula="{fleet_tokens_per_day} × {list_price_per_million_tokens_usd} / 1,000,000")
    d.step("span_cost_to_list_price_ratio", "Span per token over the list price of the token", span_day / revenue, "1",
           noun="×", formula="{per_token_span_cost_per_day_usd} / {revenue_per_day_usd}")
    d.step("span_vs_list_price", "A span per token against the list price: more or less?",
           "more" if span_day > revenue else "less", "1",
           formula="{per_token_span_cost_per_day_usd} > {revenue_per_day_usd}", kind="verdict")
    reqs = d.step("requests_per_day", "Requests a day", tokens_day / p.output_tokens, "1", noun="requests",
                  formula="{fleet_tokens_per_day} / {output_tokens}")
    req_spans = d.step("request_span_cost_per_day_usd", "The request-level layout: tracing bill per day",
                       reqs * spans * p.span_price_per_million_usd / 1e6, "USD",
                       formula="{requests_per_day} × {spans_per_request} × {span_price_per_million_usd} / 1,000,000")
    d.step("request_span_share_of_gpu_cost", "That bill as a share of the GPU cost", req_spans / gpu_day, "1",
           percent=True,
           formula="{request_span_cost_per_day_usd} / {gpu_cost_per_day_usd}")

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
           formula="{metric_series_full_labels} × {bytes_per_series}")
    d.step("without_tenant_memory_bytes", "Store memory without the tenant label", no_tenant * p.bytes_per_series, "B",
           formula="{metric_series_without_tenant} × {bytes_per_series}")
    d.step("full_labels_over_budget", "Full label set over the series budget", full / p.series_budget, "1", noun="×",
           formula="{metric_series_full_labels} / {series_budget}")

    # --- charging a tenant for its share of the batch --------------------------------------------
    d.step("average_step_share", "An average sequence's share of a step", 1 / batch, "1", percent=True,
           formula="1 / {decode_batch}")
    d.step("weight_share_per_seq_bytes", "Each sequence's slice of the weight read", w / batch, "B",
           formula="{weight_bytes} / {decode_batch}")
    tkv = d.step("tenant_kv_bytes_per_seq", "The tenant's KV read per step", p.tenant_context_tokens * kvt, "B",
                 formula="{tenant_context_tokens} × {kv_bytes_per_token}")
    share = d.step("tenant_step_share", "The tenant's share of a step it is in",
                   (w / batch + tkv) / step_bytes, "1", percent=True,
                   formula="({weight_share_per_seq_bytes} + {tenant_kv_bytes_per_seq}) / {step_bytes}")
    # The tenant's sequence is one of the batch whose mean context the step was read at; a context so
    # long that its KV alone outweighs the step cannot be in that batch.
    d.require("tenant_step_share", share <= 1, lambda: (
        f"That tenant cannot be in this batch: its {format_number(p.tenant_context_tokens)}-token context reads "
        f"{format_quantity(tkv, 'B')} of KV a step, more than the {format_quantity(step_bytes - w, 'B')} the whole "
        "batch reads at its mean context."))
    step_cost = tp * p.gpu_hour_usd / 3600 * step_s
    per_m = d.step("tenant_cost_per_million_tokens_usd", "The tenant's GPU cost per million tokens",
                   step_cost * share * 1e6, "USD",
                   formula="{gpu_cost_per_million_tokens_usd} × {tenant_step_share} / {average_step_share}")
    cost = d.step("tenant_cost_usd", "The tenant's GPU cost for a day, by batch share",
                  p.tenant_tokens_per_day * per_m / 1e6, "USD",
                  formula="{tenant_tokens_per_day} × {tenant_cost_per_million_tokens_usd} / 1,000,000")
    naive = d.step("tenant_cost_by_token_count_usd", "The same tenant charged by token count alone",
                   p.tenant_tokens_per_day * gpu_day / tokens_day, "USD",
                   formula="{tenant_tokens_per_day} × {gpu_cost_per_million_tokens_usd} / 1,000,000")
    d.step("tenant_cost_ratio", "Batch-share charge over token-count charge", cost / naive, "1", noun="×",
           formula="{tenant_cost_usd} / {tenant_cost_by_token_count_usd}")
    return d


def series_count(p: Params, labels: set[str] | frozenset[str]) -> int:
    """Series of the latency histogram when only `labels` are attached (the live cardinality toggles)."""
    sizes = {"replica": p.replicas, "route": p.routes, "status": p.status_codes, "bucket": p.histogram_buckets,
             "tenant": p.tenants}
    out = 1
    for name in labels:
        out *= sizes[name]
    return out


# Each span of the waterfall as steps of the solve: (start, end, duration), None for an event.
SPAN_STEPS: dict[str, tuple[str, str, str | None]] = {
    "request": ("arrival_s", "request_s", "request_s"),
    "gateway": ("arrival_s", "gateway_s", "gateway_s"),
    "queue": ("gateway_s", "prefill_start_s", "queue_s"),
    "prefill": ("prefill_start_s", "ttft_s", "prefill_s"),
    "decode": ("ttft_s", "request_s", "decode_s"),
    "stream": ("ttft_s", "request_s", "decode_s"),
    "usage": ("request_s", "request_s", None),
}


def cardinality_steps(p: Params, labels) -> Derivation:
    """The live cardinality panel as steps: each label's values, the series as each ticked label multiplies
    in (in the order of LABELS), their store memory and their share of the budget."""
    d = Derivation(p)
    knob = {"replica": "replicas", "route": "routes", "status": "status_codes", "bucket": "histogram_buckets",
            "tenant": "tenants"}
    for name in LABELS:
        d.step(f"{name}_label_values", f"Values of the {name} label", getattr(p, knob[name]), "1",
               formula=f"{{{knob[name]}}}", kind="given")
    running, prev = 1, ""
    for name in (n for n in LABELS if n in labels):
        running *= getattr(p, knob[name])
        d.step(f"series_through_{name}", f"Series once {name} multiplies in", running, "1", noun="series",
               formula=(f"{{{prev}}} × " if prev else "") + f"{{{name}_label_values}}")
        prev = f"series_through_{name}"
    series = d.step("chosen_series", "Series", running, "1", noun="series", formula=f"{{{prev}}}" if prev else "1")
    d.step("chosen_series_memory_bytes", "Store memory", series * p.bytes_per_series, "B",
           formula="{chosen_series} × {bytes_per_series}")
    d.step("chosen_series_budget_share", "Of the budget", series / p.series_budget, "1", percent=True,
           formula="{chosen_series} / {series_budget}")
    d.step("chosen_series_over_budget", "Of the budget", series / p.series_budget, "1", noun="×",
           formula="{chosen_series} / {series_budget}")
    return d


def waterfall(p: Params) -> list[tuple[str, float, float, str]]:
    """(span, start_s, end_s, what it records) for one request, root first, from the solve's steps."""
    d = solve(p)
    return [(s.name, d.value(SPAN_STEPS[s.name][0]), d.value(SPAN_STEPS[s.name][1]), s.records) for s in SPANS]
