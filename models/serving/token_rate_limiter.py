"""Token-based rate limits per tenant per model (seeds 000, 003, 004).

The teaching order is the interview's: why a request limit protects nothing (a request costs
50 tokens or 50,000), the two buckets per tenant per model and their refill, what a
reservation of `max_tokens` costs against settling at the actual output, the counter every
request touches, and how the sum of tenant limits maps onto what the fleet really produces.

Modelling choices (the page states them):
- A bucket holds `burst_seconds` of its refill and refills continuously at limit / 60 per second.
- Reserve-only: every admit debits `max_tokens` and nothing comes back, so the output bucket
  admits refill / max_tokens. Reserve-then-settle: the unused part is refunded when the stream
  ends, so sustained demand is admitted at refill / mean output. The cap applies to the bucket's
  level, not to tokens lent out to running streams, so holds never lower that steady rate; they
  do two other things the page shows: a burst from a full bucket starts only capacity /
  max_tokens streams, and when the holds the settled rate needs exceed the capacity, the extra
  must first accumulate from refill (a warm-up of at least (holds - capacity) / refill).
- Counter load: an admitted request costs `counter_ops_per_admit` operations: by default two, the
  admission script (both buckets live in one hash on one key, so debiting input and reserving
  output is one atomic call) and the settle at the end of the stream; a rejected one costs one
  (the failed check). Three separate calls (debit, reserve, settle) is the knob at 3.
- Cache-aware input limits: a provider that exempts cached prompt tokens from ITPM charges only
  the uncached part; long-context requests are charged at a weight above a threshold.
- A lease is a block of tokens a gateway node takes from the central bucket and spends locally;
  the worst case strands one lease per node.
"""

from __future__ import annotations

import math
from typing import Annotated

from models.catalog import INFER_FLOPS_PER_PARAM_TOKEN, MODELS
from models.core import Derivation, Knob, StrictModel
from models.units import format_number, format_quantity

BIG_MODEL = "Llama-3-70B"
SMALL_MODEL = "Llama-3-8B"
# Refunds that land on a nearly full bucket are clipped at its cap. The trace (tests/models/
# test_token_rate_limiter.py) delivers the whole settled rate once the bucket holds about ten
# reservations, and about three quarters of it at three.
RESERVATIONS_FOR_FULL_SETTLE = 10
# Redis's benchmark page: "about 110000 SETs per second" (50 parallel clients, 256-byte values, loopback,
# Xeon X3320 2.5 GHz, no pipelining). A limiter script reads and writes a hash several times, so a shard
# running it does fewer calls than that.
REDIS_MEASURED_SET_OPS_PER_S = 110_000
# TensorRT-LLM's perf overview: Llama 3.3 70B in FP8 on two H100s (TP2), 2,048 tokens in and 2,048 out,
# 3,082 output tokens/s at maximum throughput (no TPOT target), the same run serving-platform anchors on.
TRTLLM_70B_TP2_OUTPUT_TOKENS_PER_S = 3_082.0


class Params(StrictModel):
    small_request_tokens: Annotated[
        int,
        Knob("Smallest request", "tokens", 1, 10_000, 1, log=True,
             help="A short classification or chat turn, prompt plus answer.", draw=(20, 500)),
    ] = 50
    large_request_tokens: Annotated[
        int,
        Knob("Largest request", "tokens", 1_000, 1_000_000, 1, log=True,
             help="A long document or code base in the prompt.", draw=(10_000, 200_000)),
    ] = 50_000
    request_limit_per_min: Annotated[
        int,
        Knob("A plain request limit", "req/min", 1, 10_000, 1, log=True,
             help="What a request-count limiter would allow one tenant per minute.", draw=(20, 600)),
    ] = 60
    input_tpm_limit: Annotated[
        float,
        Knob("Input tokens per minute (per tenant, per model)", "tokens/min", 1_000, 100_000_000, log=True,
             help="The tenant's input bucket: its tier's ITPM on this model.", draw=(50_000, 4_000_000)),
    ] = 400_000
    output_tpm_limit: Annotated[
        float,
        Knob("Output tokens per minute (per tenant, per model)", "tokens/min", 1_000, 20_000_000, log=True,
             help="The tenant's output bucket: its tier's OTPM on this model.", draw=(10_000, 800_000)),
    ] = 80_000
    burst_seconds: Annotated[
        float,
        Knob("Bucket capacity", "s", 1, 300, 1,
             help="How many seconds of refill a full bucket holds; 60 s = one minute's limit.", draw=(10, 120)),
    ] = 60
    mean_input_tokens: Annotated[
        float,
        Knob("Mean prompt", "tokens", 10, 200_000, log=True,
             help="Average input tokens per request of this tenant.", draw=(300, 10_000)),
    ] = 1_000
    max_tokens: Annotated[
        float,
        Knob("max_tokens on the request", "tokens", 16, 128_000, log=True,
             help="The output cap the client asks for: what a reservation must hold.", draw=(1_000, 16_000)),
    ] = 4_000
    mean_output_tokens: Annotated[
        float,
        Knob("Mean actual output", "tokens", 1, 64_000, log=True,
             help="What a response really contains on average (capped by max_tokens).", draw=(150, 1_500)),
    ] = 400
    stream_tokens_per_s: Annotated[
        float,
        Knob("Stream speed", "tokens/s", 5, 500, log=True,
             help="Output tokens per second one stream receives (1 / TPOT); a reservation is held this long.",
             draw=(30, 150)),
    ] = 80
    tenants: Annotated[
        int,
        Knob("Tenants at this tier on this model", "", 1, 1_000_000, 1, log=True,
             help="Tenants whose output limits add up against the fleet.", draw=(500, 50_000)),
    ] = 10_000
    peak_use_fraction: Annotated[
        float,
        Knob("Share of the summed limits in use at the peak minute", "", 0.01, 1, 0.01, percent=True,
             help="Tenants rarely all max out together; measure it from usage history.", draw=(0.1, 0.5)),
    ] = 0.3
    fleet_replicas: Annotated[
        int,
        Knob("Replicas serving this model", "", 1, 100_000, 1, log=True,
             help="Model replicas behind the gateway.", draw=(200, 10_000)),
    ] = 2_000
    replica_output_tokens_per_s: Annotated[
        float,
        Knob("Output tokens/s per replica at the SLO", "tokens/s", 100, 50_000, log=True,
             help="Measured in a load test at the TPOT target, not the peak the engine reaches unbounded.",
             draw=(1_000, 8_000)),
    ] = 2_500
    reject_fraction: Annotated[
        float,
        Knob("Requests answered 429", "", 0, 0.95, 0.01, percent=True,
             help="Share of requests reaching the gateway that are rejected (retries included).",
             draw=(0.02, 0.5)),
    ] = 0.2
    counter_ops_per_admit: Annotated[
        int,
        Knob("Counter operations per admitted request", "", 1, 8, 1,
             help="One atomic script for both buckets plus the settle = 2; separate debit, reserve and settle "
                  "calls = 3.", draw=(2, 3)),
    ] = 2
    shard_ops_per_s: Annotated[
        float,
        Knob("Operations/s one counter shard sustains", "ops/s", 1_000, 1_000_000, log=True,
             help="An in-memory store running a check-and-debit script, with a replica; benchmark yours.",
             draw=(20_000, 200_000)),
    ] = 50_000
    shard_target_utilization: Annotated[
        float,
        Knob("Counter shard target utilization", "", 0.1, 0.95, 0.05, percent=True,
             help="Headroom for bursts, retries and a failed-over shard.", draw=(0.3, 0.7)),
    ] = 0.5
    largest_tenant_share: Annotated[
        float,
        Knob("Largest tenant's share of traffic", "", 0.001, 1, 0.001, percent=True,
             help="One tenant-model key lives on one shard, however many shards there are.",
             draw=(0.02, 0.5)),
    ] = 0.2
    gateway_nodes: Annotated[
        int,
        Knob("Gateway nodes", "", 1, 2_000, 1, log=True,
             help="Nodes that admit requests; each may hold a lease per hot tenant.", draw=(10, 300)),
    ] = 50
    cached_prompt_fraction: Annotated[
        float,
        Knob("Share of prompt tokens read from the prefix cache", "", 0, 0.95, 0.01, percent=True,
             help="A long shared system prompt or a growing conversation is mostly cached; a cache-aware "
                  "input limit charges only the rest.", draw=(0.2, 0.8)),
    ] = 0.6
    long_prompt_tokens: Annotated[
        int,
        Knob("A long-context prompt", "tokens", 10_000, 2_000_000, 1_000, log=True,
             help="One request that pastes a whole code base or a contract bundle.", draw=(150_000, 900_000)),
    ] = 300_000
    long_context_threshold_tokens: Annotated[
        int,
        Knob("Long-context threshold", "tokens", 32_000, 1_000_000, 1_000, log=True,
             help="Input size above which the whole request is priced (and here charged) at the long-context "
                  "weight.", draw=(128_000, 272_000)),
    ] = 200_000
    long_context_weight: Annotated[
        float,
        Knob("Long-context input weight", "×", 1, 4, 0.1,
             help="What a long-context input token debits, in ordinary input tokens (its price ratio).",
             draw=(1.5, 2.5)),
    ] = 2.0
    lease_tokens: Annotated[
        float,
        Knob("Lease size", "tokens", 100, 10_000_000, log=True,
             help="Tokens a gateway node takes from the central bucket at a time and spends locally.",
             draw=(10_000, 1_000_000)),
    ] = 100_000

    @classmethod
    def draw_together(cls, values: dict, rng) -> dict:
        """A mock's fleet is sized for the demand its tenants bring, as a real one is: busy 35-85%
        at the peak minute. Drawn on its own, the fleet could not serve the peak in 431 of 1,000
        scenarios; the slider keeps its whole range."""
        demand = values["tenants"] * values["output_tpm_limit"] / 60 * values["peak_use_fraction"]
        busy = rng.uniform(0.35, 0.85)
        out = {"fleet_replicas": demand / (busy * values["replica_output_tokens_per_s"])}
        # A response's mean output is under the max_tokens it asks for (5-50% of it when a draw put
        # it above): at or over the cap, no reservation would overstate anything.
        mean_out, short = values["mean_output_tokens"], rng.uniform(0.05, 0.5) * values["max_tokens"]
        if mean_out >= values["max_tokens"]:
            out["mean_output_tokens"] = mean_out = short
        # And the largest tenant's key must fit on one counter shard (a key cannot be split by
        # adding shards): at most 30-90% of a shard's operations.
        admitted = demand / mean_out
        reject = values["reject_fraction"]
        ops = admitted * values["counter_ops_per_admit"] + admitted * reject / (1 - reject)
        fits = rng.uniform(0.3, 0.9) * values["shard_ops_per_s"] / ops
        if values["largest_tenant_share"] > fits:
            out["largest_tenant_share"] = fits
        return out


def solve(p: Params) -> Derivation:
    d = Derivation(p)

    # --- numbers: why requests are the wrong unit ------------------------------------------------
    d.step(
        "cost_ratio_large_to_small", "Cost of the largest request over the smallest",
        p.large_request_tokens / p.small_request_tokens, "1", noun="×",
        formula="{large_request_tokens} tokens / {small_request_tokens} tokens",
    )
    d.step(
        "request_limit_tokens_small", "Tokens per minute a request limit lets through, small requests",
        p.request_limit_per_min * p.small_request_tokens, "1/min", noun="tokens",
        formula="{request_limit_per_min} req/min × {small_request_tokens} tokens",
    )
    d.step(
        "request_limit_tokens_large", "The same request limit, large requests",
        p.request_limit_per_min * p.large_request_tokens, "1/min", noun="tokens",
        formula="{request_limit_per_min} req/min × {large_request_tokens} tokens",
    )
    big = MODELS[BIG_MODEL]
    small = MODELS[SMALL_MODEL]
    d.step("params_big_model", f"Parameters of {BIG_MODEL} (catalog)", big.active_params, "1",
           noun="parameters", formula=f"{BIG_MODEL}, models/catalog.py", kind="lookup")
    d.step("params_small_model", f"Parameters of {SMALL_MODEL} (catalog)", small.active_params, "1",
           noun="parameters", formula=f"{SMALL_MODEL}, models/catalog.py", kind="lookup")
    f_big = d.step(
        "flops_per_token_big_model", f"Compute per token, {BIG_MODEL}",
        INFER_FLOPS_PER_PARAM_TOKEN * big.active_params, "FLOP",
        formula="2 FLOP × {params_big_model}",
    )
    f_small = d.step(
        "flops_per_token_small_model", f"Compute per token, {SMALL_MODEL}",
        INFER_FLOPS_PER_PARAM_TOKEN * small.active_params, "FLOP",
        formula="2 FLOP × {params_small_model}",
    )
    d.step(
        "per_model_cost_ratio", "A token on the big model over a token on the small one",
        f_big / f_small, "1", noun="×",
        formula="{flops_per_token_big_model} / {flops_per_token_small_model}",
    )

    # --- shape: two buckets per tenant per model -------------------------------------------------
    in_refill = d.step(
        "input_refill_per_s", "Input bucket refill", p.input_tpm_limit / 60, "1/s", noun="tokens",
        formula="{input_tpm_limit}",
    )
    out_refill = d.step(
        "output_refill_per_s", "Output bucket refill", p.output_tpm_limit / 60, "1/s", noun="tokens",
        formula="{output_tpm_limit}",
    )
    in_cap = d.step(
        "input_capacity_tokens", "Input bucket capacity (largest prompt it can ever admit)",
        in_refill * p.burst_seconds, "1", noun="tokens",
        formula="{input_refill_per_s} tokens/s × {burst_seconds} s",
    )
    out_cap = d.step(
        "output_capacity_tokens", "Output bucket capacity",
        out_refill * p.burst_seconds, "1", noun="tokens",
        formula="{output_refill_per_s} tokens/s × {burst_seconds} s",
    )
    d.step(
        "large_request_share_of_input_bucket", "One largest request as a share of a full input bucket",
        p.large_request_tokens / in_cap, "1", percent=True,
        formula="{large_request_tokens} / {input_capacity_tokens}",
    )
    d.step(
        "output_tokens_first_minute_max", "Most output a tenant can take in its first minute (full bucket + refill)",
        out_cap + out_refill * 60, "1", noun="tokens",
        formula="{output_capacity_tokens} + {output_refill_per_s} tokens/s × 60 s",
    )
    d.step(
        "retry_after_s", "Retry-After for a max_tokens reservation when the output bucket is empty",
        p.max_tokens / out_refill, "s",
        formula="{max_tokens} tokens / {output_refill_per_s} tokens/s",
    )

    # --- arithmetic: reserve, then settle -------------------------------------------------------
    mean_out = d.step(
        "mean_output_capped", "Mean actual output (never above max_tokens)",
        min(p.mean_output_tokens, p.max_tokens), "1", noun="tokens",
        formula="min({mean_output_tokens}, {max_tokens})",
    )
    d.step(
        "over_reservation_factor", "Reserved over used", p.max_tokens / mean_out, "1", noun="×",
        formula="{max_tokens} tokens / {mean_output_capped} tokens",
    )
    reserving = d.step(
        "admits_per_min_reserving", "Admits per minute when every request burns max_tokens",
        p.output_tpm_limit / p.max_tokens, "1/min", noun="requests",
        formula="{output_tpm_limit} tokens/min / {max_tokens} tokens",
    )
    settled = d.step(
        "admits_per_min_settled", "Admits per minute with reserve-then-settle (sustained demand)",
        p.output_tpm_limit / mean_out, "1/min", noun="requests",
        formula="{output_tpm_limit} tokens/min / {mean_output_capped} tokens",
    )
    d.step(
        "settle_gain", "Settling over reserving", settled / reserving, "1", noun="×",
        formula="{admits_per_min_settled} / {admits_per_min_reserving}",
    )
    gen_s = d.step(
        "generation_s", "How long a reservation is held (one stream)", mean_out / p.stream_tokens_per_s, "s",
        formula="{mean_output_capped} tokens / {stream_tokens_per_s} tokens/s",
    )
    d.step(
        "burst_streams_reserving", "Streams a full output bucket starts at once (each reserves max_tokens)",
        math.floor(out_cap / p.max_tokens + 1e-9), "1", noun="streams",
        formula="floor({output_capacity_tokens} / {max_tokens})",
    )
    d.step(
        "burst_streams_if_actual", "Streams it could start if output were known in advance",
        math.floor(out_cap / mean_out + 1e-9), "1", noun="streams",
        formula="floor({output_capacity_tokens} / {mean_output_capped})",
    )
    held = d.step(
        "held_tokens_at_settled_rate", "Reservations outstanding at the settled rate (Little's law)",
        settled / 60 * gen_s * p.max_tokens, "1", noun="tokens",
        formula="{admits_per_min_settled} × {generation_s} × {max_tokens} tokens",
    )
    ramp = d.step(
        "settle_ramp_s", "Least time from a full bucket to the settled rate (holds beyond capacity come from refill)",
        max(0.0, held - out_cap) / out_refill, "s",
        formula="max(0, {held_tokens_at_settled_rate} − {output_capacity_tokens}) / {output_refill_per_s} tokens/s",
    )
    d.step(
        "settle_ramp_clause", "When a quiet tenant reaches the settled rate",
        "only once refill supplies the holds beyond the cap" if ramp > 0 else "at once, because those holds fit in the bucket", "1",
        formula="{held_tokens_at_settled_rate} against {output_capacity_tokens}", kind="verdict",
    )
    d.step(
        "capacity_for_full_settle_tokens", "Output bucket that keeps refunds from being clipped (ten reservations)",
        RESERVATIONS_FOR_FULL_SETTLE * p.max_tokens, "1", noun="tokens",
        formula="10 × {max_tokens}",
    )
    d.step(
        "bucket_holds_enough_reservations", "Does the output bucket hold that many?",
        "yes" if out_cap >= RESERVATIONS_FOR_FULL_SETTLE * p.max_tokens * (1 - 1e-9) else "no", "1",
        formula="{output_capacity_tokens} ≥ {capacity_for_full_settle_tokens}", kind="verdict",
    )
    input_limited = d.step(
        "admits_per_min_input_bucket", "Admits per minute the input bucket allows",
        p.input_tpm_limit / p.mean_input_tokens, "1/min", noun="requests",
        formula="{input_tpm_limit} tokens/min / {mean_input_tokens} tokens",
    )
    d.step(
        "binding_bucket", "Which bucket runs out first at these means",
        "output" if settled <= input_limited else "input", "1",
        formula="{admits_per_min_settled} vs {admits_per_min_input_bucket}", kind="verdict",
    )
    uncached = d.step(
        "uncached_input_tokens", "Prompt tokens per request that miss the prefix cache",
        p.mean_input_tokens * (1 - p.cached_prompt_fraction), "1", noun="tokens",
        formula="{mean_input_tokens} tokens × (1 − {cached_prompt_fraction})",
    )
    d.step(
        "admits_per_min_input_cache_aware", "Admits per minute the input bucket allows if cache reads are exempt",
        p.input_tpm_limit / uncached, "1/min", noun="requests",
        formula="{input_tpm_limit} tokens/min / {uncached_input_tokens} tokens",
    )
    is_long = p.long_prompt_tokens > p.long_context_threshold_tokens
    d.step(
        "long_prompt_vs_largest", "Is the long prompt inside the request spread above?",
        "larger than the largest request the spread above assumes, a long-context outlier, which is why it is "
        "priced apart" if p.long_prompt_tokens > p.large_request_tokens
        else "within the request spread above", "1",
        formula="{long_prompt_tokens} against {large_request_tokens}", kind="verdict",
    )
    charge = d.step(
        "long_prompt_charge_tokens", "What the long prompt debits from the input bucket",
        p.long_prompt_tokens * (p.long_context_weight if is_long else 1.0), "1", noun="tokens",
        formula=("{long_prompt_tokens} tokens × {long_context_weight} (above the long-context threshold)"
                 if is_long else "{long_prompt_tokens} tokens (not above the long-context threshold)"),
    )
    d.step(
        "long_prompt_fits_input_bucket", "Can a full input bucket ever admit it?",
        "yes" if charge <= in_cap * (1 + 1e-9) else "no", "1",
        formula="{long_prompt_charge_tokens} ≤ {input_capacity_tokens}", kind="verdict",
    )
    d.step(
        "fixed_window_boundary_tokens", "Output a fixed one-minute window admits in the two seconds around its reset",
        2 * p.output_tpm_limit, "1", noun="tokens",
        formula="2 × {output_tpm_limit} × 1 min",
    )
    d.step(
        "bucket_two_second_max_tokens", "Output the token bucket admits in any two seconds",
        out_cap + 2 * out_refill, "1", noun="tokens",
        formula="{output_capacity_tokens} + 2 s × {output_refill_per_s}",
    )

    # --- limits against the fleet --------------------------------------------------------------
    trt = d.step(
        "trtllm_70b_output_tokens_per_s_measured",
        "TensorRT-LLM, Llama 3.3 70B FP8 on two H100s at full load (2,048 in / 2,048 out), measured",
        TRTLLM_70B_TP2_OUTPUT_TOKENS_PER_S, "1/s", noun="tokens", kind="lookup",
        note="TensorRT-LLM perf overview: maximum throughput, no latency target.",
    )
    d.step(
        "replica_vs_trtllm_measured", "The assumed replica rate against that measured ceiling",
        p.replica_output_tokens_per_s / trt, "1", percent=True,
        formula="{replica_output_tokens_per_s} / {trtllm_70b_output_tokens_per_s_measured}",
    )
    d.step(
        "replica_vs_trtllm_clause", "Is the assumed replica rate plausible beside the measured ceiling?",
        "below it, as a rate held to a TPOT target should be" if p.replica_output_tokens_per_s <= trt
        else "above it: plausible only for a smaller model, more GPUs a replica or a looser TPOT, "
             "so it needs its own load test", "1",
        formula="{replica_output_tokens_per_s} against {trtllm_70b_output_tokens_per_s_measured}", kind="verdict",
    )
    fleet = d.step(
        "fleet_output_tokens_per_s", "Fleet output capacity at the SLO",
        p.fleet_replicas * p.replica_output_tokens_per_s, "1/s", noun="tokens",
        formula="{fleet_replicas} replicas × {replica_output_tokens_per_s} tokens/s",
    )
    sum_limits = d.step(
        "sum_of_output_limits_per_s", "Sum of tenant output limits",
        p.tenants * out_refill, "1/s", noun="tokens",
        formula="{tenants} tenants × {output_refill_per_s} tokens/s",
    )
    d.step(
        "oversubscription_ratio", "Sum of tenant limits over fleet capacity", sum_limits / fleet, "1", noun="×",
        formula="{sum_of_output_limits_per_s} / {fleet_output_tokens_per_s}",
    )
    demand = d.step(
        "peak_output_demand_per_s", "Output demand at the peak minute",
        sum_limits * p.peak_use_fraction, "1/s", noun="tokens",
        formula="{sum_of_output_limits_per_s} tokens/s × {peak_use_fraction}",
    )
    fleet_util = d.step(
        "fleet_utilization_at_peak", "Fleet busy at the peak minute", demand / fleet, "1", percent=True,
        formula="{peak_output_demand_per_s} / {fleet_output_tokens_per_s}",
    )
    d.require("fleet_utilization_at_peak", fleet_util <= 1, lambda: (
        f"The fleet cannot serve this peak: tenants inside their limits ask for "
        f"{format_quantity(demand, '1/s', noun='tokens')} of output against "
        f"{format_quantity(fleet, '1/s', noun='tokens')} of capacity, {format_quantity(100 * fleet_util, '%')} of it. "
        "Lower the oversubscription or add replicas."))
    d.step(
        "peak_use_that_saturates_fleet", "Share of limits in use that fills the fleet",
        fleet / sum_limits, "1", percent=True,
        formula="{fleet_output_tokens_per_s} / {sum_of_output_limits_per_s}",
    )

    # --- the counter ----------------------------------------------------------------------------
    admitted = d.step(
        "admitted_requests_per_s", "Requests admitted at the peak",
        demand / mean_out, "1/s", noun="requests",
        formula="{peak_output_demand_per_s} tokens/s / {mean_output_capped} tokens",
    )
    gateway = d.step(
        "gateway_requests_per_s", "Requests reaching the gateway (admitted + rejected)",
        admitted / (1 - p.reject_fraction), "1/s", noun="requests",
        formula="{admitted_requests_per_s} / (1 − {reject_fraction})",
    )
    ops = d.step(
        "counter_ops_per_s", "Counter operations per second",
        admitted * p.counter_ops_per_admit + (gateway - admitted), "1/s", noun="ops",
        formula="{admitted_requests_per_s} × {counter_ops_per_admit} + ({gateway_requests_per_s} − {admitted_requests_per_s}) × 1",
    )
    n = p.counter_ops_per_admit
    d.step(
        "admission_path", "What an admitted request sends the counter",
        "a single check-and-debit and no settle, so nothing unused is ever refunded" if n == 1
        else "one atomic script that debits the prompt and reserves max_tokens together, then the settle" if n == 2
        else (f"{n - 1} separate calls before the stream (debit the prompt, then reserve the output) and the "
              "settle after it, and a reserve that fails leaves a debit to roll back"),
        "1", formula="{counter_ops_per_admit} operations per admit", kind="verdict",
    )
    measured = d.step(
        "redis_set_ops_per_s_measured", "Redis SETs per second, measured (50 clients, loopback, no pipelining)",
        REDIS_MEASURED_SET_OPS_PER_S, "1/s", noun="ops", kind="lookup",
        formula="Redis benchmark page, Xeon X3320", note="redis-benchmark -n 100000 on one Linux box.",
    )
    d.step(
        "shard_vs_measured_set", "The assumed shard rate against that measured plain SET",
        p.shard_ops_per_s / measured, "1", percent=True,
        formula="{shard_ops_per_s} / {redis_set_ops_per_s_measured}",
    )
    d.step(
        "shard_vs_measured_clause", "Is the assumed shard rate plausible beside the measured SET rate?",
        "under it, which leaves room for a script that reads and writes a hash several times a call"
        if p.shard_ops_per_s <= measured
        else "over it: it assumes newer cores, pipelined calls or a multi-threaded store, so measure it", "1",
        formula="{shard_ops_per_s} against {redis_set_ops_per_s_measured}", kind="verdict",
    )
    usable = d.step(
        "usable_ops_per_shard", "Operations per shard at the target utilization",
        p.shard_ops_per_s * p.shard_target_utilization, "1/s", noun="ops",
        formula="{shard_ops_per_s} ops/s × {shard_target_utilization}",
    )
    d.step(
        "counter_shards", "Counter shards", max(1, math.ceil(ops / usable - 1e-9)), "1", noun="shards",
        formula="max(1, ceil({counter_ops_per_s} / {usable_ops_per_shard}))",
    )
    hot_ops = d.step(
        "hot_tenant_ops_per_s", "Operations on the largest tenant's key (one shard)",
        ops * p.largest_tenant_share, "1/s", noun="ops",
        formula="{counter_ops_per_s} × {largest_tenant_share}",
    )
    d.step(
        "hot_shard_load", "That key's load on its shard", hot_ops / usable, "1", percent=True,
        formula="{hot_tenant_ops_per_s} / {usable_ops_per_shard}",
    )
    # Against what a shard can do at all, not the target: one key lives on one shard.
    d.require("hot_shard_load", hot_ops <= p.shard_ops_per_s, lambda: (
        f"One shard cannot hold the largest tenant's key: it needs {format_quantity(hot_ops, '1/s', noun='ops')} "
        f"and a shard does {format_quantity(p.shard_ops_per_s, '1/s', noun='ops')} at most. Split that tenant's "
        "limit across keys or give it local leases."))
    hot_tokens = d.step(
        "hot_tenant_tokens_per_s", "Tokens the largest tenant spends per second (input + output)",
        admitted * p.largest_tenant_share * (p.mean_input_tokens + mean_out), "1/s", noun="tokens",
        formula="{admitted_requests_per_s} × {largest_tenant_share} × ({mean_input_tokens} + {mean_output_capped})",
    )
    tier_tps = d.step(
        "tier_tokens_per_s", "A tier tenant's limit, input plus output, per second",
        (p.input_tpm_limit + p.output_tpm_limit) / 60, "1/s", noun="tokens",
        formula="{input_tpm_limit} + {output_tpm_limit}",
    )
    d.step(
        "hot_tenant_over_tier", "The largest tenant's spend over a tier tenant's limit", hot_tokens / tier_tps, "1",
        noun="×", formula="{hot_tenant_tokens_per_s} / {tier_tokens_per_s}",
    )
    d.step(
        "hot_tenant_contract", "Is the largest tenant on a tier or a custom contract?",
        "a tenant that large is on a custom contract, not a tier" if hot_tokens > tier_tps
        else "within a tier's limit", "1", formula="{hot_tenant_tokens_per_s} against {tier_tokens_per_s}",
        kind="verdict",
    )
    renewals = d.step(
        "lease_renewals_per_s", "Counter operations for that tenant with leases",
        hot_tokens / p.lease_tokens, "1/s", noun="ops",
        formula="{hot_tenant_tokens_per_s} tokens/s / {lease_tokens} tokens",
    )
    d.step(
        "lease_ops_reduction", "Fewer counter operations for the hot tenant",
        hot_ops / renewals, "1", noun="×",
        formula="{hot_tenant_ops_per_s} / {lease_renewals_per_s}",
    )
    stranded = d.step(
        "lease_stranded_tokens", "Worst case held in leases (one per gateway node)",
        p.gateway_nodes * p.lease_tokens, "1", noun="tokens",
        formula="{gateway_nodes} nodes × {lease_tokens} tokens",
    )
    d.step(
        "lease_stranded_share_hot", "Stranded leases against the hot tenant's minute of traffic",
        stranded / (hot_tokens * 60), "1", percent=True,
        formula="{lease_stranded_tokens} / ({hot_tenant_tokens_per_s} × 60 s)",
    )
    d.step(
        "lease_stranded_share_tier", "Stranded leases against a tier tenant's input minute",
        stranded / p.input_tpm_limit, "1", percent=True,
        formula="{lease_stranded_tokens} / ({input_tpm_limit} × 1 min)",
    )

    # --- failure modes ----------------------------------------------------------------------------
    d.step(
        "fallback_output_per_node_per_min", "Counter down: each node's static share of a tenant's output limit",
        p.output_tpm_limit / p.gateway_nodes, "1/min", noun="tokens",
        formula="{output_tpm_limit} tokens/min / {gateway_nodes} nodes",
    )
    d.step(
        "fallback_admits_max_tokens", "Can one node's share ever hold a max_tokens reservation?",
        "yes" if p.output_tpm_limit / p.gateway_nodes * p.burst_seconds / 60 >= p.max_tokens else "no", "1",
        formula="{output_tpm_limit} / {gateway_nodes} × {burst_seconds} ≥ {max_tokens}", kind="verdict",
    )
    d.step(
        "leaked_tokens_per_lost_settle", "Tokens locked by a reservation whose settle never arrives",
        p.max_tokens - mean_out, "1", noun="tokens",
        formula="{max_tokens} − {mean_output_capped}",
    )
    return d


# The live trace: three tenants against their own two buckets, reserve-only and settle.
def simulate(p: Params, seed: int = 0, seconds: float = 180.0):
    from models.sim import token_bucket

    return token_bucket.run(token_bucket.Config(
        input_tpm=p.input_tpm_limit,
        output_tpm=p.output_tpm_limit,
        burst_seconds=p.burst_seconds,
        max_tokens=p.max_tokens,
        mean_input_tokens=p.mean_input_tokens,
        mean_output_tokens=min(p.mean_output_tokens, p.max_tokens),
        stream_tokens_per_s=p.stream_tokens_per_s,
        seconds=seconds,
    ), seed)


SIMULATED_TENANTS = ("steady", "bursty", "over")  # step prefixes, in the order of the run's tenants


def simulation_steps(p: Params, r) -> Derivation:
    """The run's figures as steps: per tenant the requests sent and admitted under each policy, the
    books that show nothing is lost, and the over-limit tenant's settled rate beside the arithmetic's."""
    d = Derivation(p)
    w, settle, reserve = r.workload, r.settle, r.reserve
    d.step("simulated_s", "Simulated time", w.steps * w.dt, "s", kind="given")
    d.step("simulated_step_s", "One step of the trace", w.dt, "s", kind="given")
    for i, (prefix, tenant) in enumerate(zip(SIMULATED_TENANTS, w.tenants)):
        name = tenant.name[:1].upper() + tenant.name[1:]
        d.step(f"{prefix}_requested", f"{name}: requests sent", int(settle.requested[i]), "1", noun="requests",
               kind="simulated")
        d.step(f"{prefix}_admitted", f"{name}: admitted, reserve then settle", int(settle.admitted[i]), "1",
               noun="requests", kind="simulated")
        d.step(f"{prefix}_admitted_reserve_only", f"{name}: admitted, reserve only", int(reserve.admitted[i]), "1",
               noun="requests", kind="simulated")
    d.step("simulated_requested", "Requests sent, all tenants", int(settle.requested.sum()), "1", noun="requests",
           kind="simulated")
    d.step("simulated_admitted", "Admitted with settle, all tenants", int(settle.admitted.sum()), "1",
           noun="requests", kind="simulated")
    d.step("simulated_rejected", "Rejected with settle, all tenants", int(settle.rejected.sum()), "1",
           noun="requests", kind="simulated")
    d.step("simulated_unaccounted", "Requests neither admitted nor rejected",
           d.value("simulated_requested") - d.value("simulated_admitted") - d.value("simulated_rejected"), "1",
           noun="requests", formula="{simulated_requested} − {simulated_admitted} − {simulated_rejected}")
    over = SIMULATED_TENANTS.index("over")
    d.step("over_admits_per_min_settled_sim", "Twice-limit tenant after the first minute, settle",
           settle.admits_per_min(over, 60), "1/min", noun="requests", kind="simulated")
    d.step("over_admits_per_min_reserving_sim", "Twice-limit tenant after the first minute, reserve only",
           reserve.admits_per_min(over, 60), "1/min", noun="requests", kind="simulated")
    return d
