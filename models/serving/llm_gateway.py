"""An LLM gateway for forty teams calling three providers with a hundred keys (seed 004).

The seed gives the sprawl: 40 teams, 3 providers, 100 API keys, and nobody knows the bill. The
gateway is one endpoint in front of every provider; the arithmetic that justifies each of its
parts:

    sprawl         = keys / teams per team; teams x providers point-to-point integrations
    spend          = requests per month x (input tokens x input price + output tokens x output price)
    cache savings  = spend x cacheable share x hit rate       (only deterministic calls may be cached)
    fallback       = u^n for n providers failing independently; with a common-cause share beta of
                     each provider's downtime (the beta-factor model of reliability engineering):
                     c + (1 - c) x q^n, c = beta x u, q = (u - c) / (1 - c)
    budgets        = spend / teams x (1 + headroom); the overshoot an after-the-fact counter allows
                     is the in-flight requests (Little's law) x the dearest request
    audit          = requests x record bytes, with and without the prompt and completion text

Modelling choices (the page states them): a month is 30 days; every request costs the average
request (cacheable calls are no cheaper or dearer than the rest); the providers are equally
available and a fallback to any of them counts as served (possibly by a lesser model); text is
`bytes_per_token` bytes of UTF-8 per token.
"""

from __future__ import annotations

import math
from typing import Annotated

from models.core import Derivation, Knob, StrictModel
from models.engine.knobs import take
from models.engine.serving_knobs import RequestKnobs

DAYS_PER_MONTH = 30
SECONDS_PER_MONTH = DAYS_PER_MONTH * 86_400
KEYS_PER_PROVIDER_IN_GATEWAY = 2  # one serving, one being rotated
TOKENS_PER_MTOK = 1e6
# OpenAI caches prompts of 1,024 tokens or more; Anthropic's minimum block is 1,024 tokens on its Sonnet and Opus models.
MIN_CACHEABLE_PREFIX_TOKENS = 1024


class Params(StrictModel):
    teams: Annotated[
        int,
        Knob("Teams", "teams", 2, 1000, 1, log=True, help="Teams that call LLMs from their own services.",
             draw=(10, 200)),
    ] = 40
    providers: Annotated[
        int,
        Knob("Providers", "providers", 1, 8, 1,
             help="Model providers (hosted APIs or an internal fleet) the gateway can route to.", draw=(2, 5)),
    ] = 3
    api_keys: Annotated[
        int,
        Knob("Provider API keys in circulation", "keys", 1, 5000, 1, log=True,
             help="Raw provider keys held by teams today: in env files, CI secrets, notebooks.", draw=(20, 500)),
    ] = 100
    aliases: Annotated[
        int,
        Knob("Model aliases", "aliases", 1, 100, 1, log=True,
             help="Names teams call ('fast', 'smart', 'long-context'…), each mapped to a ranked list of provider "
                  "models.", draw=(3, 20)),
    ] = 6
    requests_per_team_per_day: Annotated[
        float,
        Knob("Requests per team per day", "requests", 100, 10_000_000, 100, log=True,
             help="Average over teams and days; a few teams dominate.", draw=(2_000, 200_000)),
    ] = 20_000
    input_tokens: Annotated[
        float,
        Knob("Input tokens per request", "tokens", 10, 200_000, 10, log=True,
             help="Prompt, system prompt and retrieved context.", draw=(300, 8_000)),
    ] = 1_500
    output_tokens: take(RequestKnobs, "output_tokens") = 400
    input_usd_per_mtok: Annotated[
        float,
        Knob("Input price per million tokens", "USD", 0.05, 75, 0.05, log=True,
             help="Blended list price across the models teams use.", draw=(0.5, 15)),
    ] = 3.0
    output_usd_per_mtok: Annotated[
        float,
        Knob("Output price per million tokens", "USD", 0.1, 300, 0.1, log=True,
             help="Output is priced several times input on public price lists.", draw=(2, 75)),
    ] = 15.0
    peak_to_average: Annotated[
        float,
        Knob("Peak over average traffic", "×", 1, 20, 0.5, help="Busiest minute of the day over the daily mean.",
             draw=(2, 6)),
    ] = 3.0
    cacheable_share: Annotated[
        float,
        Knob("Cacheable share of requests", "", 0, 1, 0.01, percent=True,
             help="Deterministic calls only: temperature 0, no tool with side effects, a pinned model version. "
                  "Classification, extraction and eval replays; not chat.", draw=(0.05, 0.6)),
    ] = 0.3
    cache_hit_rate: Annotated[
        float,
        Knob("Hit rate on cacheable calls", "", 0, 1, 0.01, percent=True,
             help="Share of cacheable calls whose exact key (model version, messages, parameters) was seen "
                  "within the TTL.", draw=(0.1, 0.8)),
    ] = 0.4
    prefix_share: Annotated[
        float,
        Knob("Stable prefix share of the prompt", "", 0, 1, 0.05, percent=True,
             help="Share of input tokens that repeat byte for byte across a route's requests: system prompt, "
                  "tool schemas, few-shot examples. Provider prompt caching can discount only these.",
             draw=(0.5, 0.9)),
    ] = 0.8
    prefix_warm_share: Annotated[
        float,
        Knob("Requests that find the prefix warm", "", 0, 1, 0.05, percent=True,
             help="Share of requests whose prefix is still in the provider's cache (within its TTL, routed to "
                  "the same cache); the rest write it again.", draw=(0.4, 0.95)),
    ] = 0.8
    cached_input_price_fraction: Annotated[
        float,
        Knob("Cached input price over list input price", "", 0.01, 1, 0.01, percent=True,
             help="Anthropic bills cache reads at 0.1x the input price; OpenAI's discount varies by model.",
             draw=(0.1, 0.5)),
    ] = 0.1
    cache_write_premium: Annotated[
        float,
        Knob("Cache write premium over list input price", "", 0, 1, 0.05, percent=True,
             help="Extra paid on a miss that writes the prefix: 25% for Anthropic's 5-minute cache, 100% for "
                  "its 1-hour cache, none at OpenAI before GPT-5.6.", draw=(0, 0.25)),
    ] = 0.25
    semantic_hit_rate: Annotated[
        float,
        Knob("Semantic cache hit rate", "", 0, 0.9, 0.01, percent=True,
             help="Share of the requests the exact cache misses that an embedding-similarity cache would answer "
                  "from a stored response.", draw=(0.05, 0.3)),
    ] = 0.1
    semantic_false_hit_share: Annotated[
        float,
        Knob("Semantic hits that are wrong", "", 0, 1, 0.01, percent=True,
             help="Share of semantic hits whose stored answer does not answer the new request.",
             draw=(0.02, 0.3)),
    ] = 0.1
    provider_availability: Annotated[
        float,
        Knob("Availability of one provider", "", 0.9, 0.99999, 0.0005, percent=True,
             help="Share of the month a provider answers within its timeout.", draw=(0.99, 0.999)),
    ] = 0.995
    common_cause_share: Annotated[
        float,
        Knob("Common-cause share of downtime", "", 0, 1, 0.01, percent=True,
             help="Share of each provider's downtime caused by something every provider path shares: DNS, "
                  "the gateway's cloud region or egress, a TLS/secret store, a shared upstream cloud.",
             draw=(0.02, 0.3)),
    ] = 0.1
    gateway_availability: Annotated[
        float,
        Knob("Availability of the gateway itself", "", 0.99, 0.999999, 0.00001, percent=True,
             help="The gateway sits in series with every call.", draw=(0.999, 0.99999)),
    ] = 0.9999
    breaker_min_requests: Annotated[
        int,
        Knob("Circuit-breaker window", "requests", 5, 1000, 1, log=True,
             help="Requests to a provider the breaker must see before it may open on the error rate.",
             draw=(10, 100)),
    ] = 20
    budget_headroom: Annotated[
        float,
        Knob("Budget headroom over expected spend", "", 0, 2, 0.05, percent=True,
             help="Budgets are set above the forecast so growth alerts before it blocks.", draw=(0.1, 0.5)),
    ] = 0.2
    max_tokens: Annotated[
        int,
        Knob("max_tokens cap", "tokens", 16, 128_000, 16, log=True,
             help="Largest output a request may ask for: the worst case a budget check must price.",
             draw=(1_024, 16_384)),
    ] = 4_096
    request_latency_s: Annotated[
        float,
        Knob("Request duration", "s", 0.2, 300, 0.1, log=True, help="Time a request is in flight, first byte "
             "to last token.", draw=(2, 30)),
    ] = 8.0
    audit_record_bytes: Annotated[
        float,
        Knob("Audit record without text", "B", 100, 20_000, 50, log=True,
             help="Team, key id, alias, provider, model version, token counts, cost, latency, status, hashes "
                  "of prompt and response.", draw=(500, 4_000)),
    ] = 1_000
    bytes_per_token: Annotated[
        float,
        Knob("Bytes of text per token", "B", 1, 8, 0.5, help="UTF-8 bytes per token; about 4 for English.",
             draw=(3, 5)),
    ] = 4.0
    audit_retention_months: Annotated[
        int,
        Knob("Audit retention", "months", 1, 84, 1, help="How long audit records are kept.", draw=(3, 36)),
    ] = 12


def all_down(u: float, beta: float, n: int) -> float:
    """P(all n providers down) when a share beta of each one's unavailability u is a shared cause."""
    c = beta * u
    q = (u - c) / (1 - c) if c < 1 else 0.0
    return c + (1 - c) * q**n


def solve(p: Params) -> Derivation:
    d = Derivation(p)

    # --- the sprawl the gateway ends ---
    d.step("keys_per_team", "Provider keys per team today", p.api_keys / p.teams, "1", noun="keys",
           formula="{api_keys} keys / {teams} teams")
    d.step("team_provider_routes", "Point-to-point integrations: every team with every provider",
           p.teams * p.providers, "1", noun="routes", formula="{teams} teams × {providers} providers")
    d.step("gateway_connections", "Connections with a gateway in the middle", p.teams + p.providers, "1",
           noun="connections", formula="{teams} + {providers}")
    d.step("keys_per_provider_in_gateway", "Provider keys the gateway holds per provider (one live, one rotating)",
           KEYS_PER_PROVIDER_IN_GATEWAY, "1", noun="keys")
    d.step("gateway_provider_keys", "Provider keys left in existence", p.providers * KEYS_PER_PROVIDER_IN_GATEWAY,
           "1", noun="keys", formula="{providers} × {keys_per_provider_in_gateway}")
    d.step("alias_route_entries", "Route-table entries: every alias ranked over every provider",
           p.aliases * p.providers, "1", noun="entries", formula="{aliases} × {providers}")

    # --- traffic and spend ---
    d.step("days_per_month", "Days in the billing month (convention)", DAYS_PER_MONTH, "1", noun="days")
    reqs = d.step("requests_per_month", "Requests per month, all teams",
                  p.teams * p.requests_per_team_per_day * DAYS_PER_MONTH, "1", noun="requests",
                  formula="{teams} × {requests_per_team_per_day} × {days_per_month}")
    avg = d.step("average_rps", "Average request rate", reqs / SECONDS_PER_MONTH, "1/s", noun="requests",
                 formula="{requests_per_month} / ({days_per_month} × 86,400 s)")
    peak = d.step("peak_rps", "Peak request rate", avg * p.peak_to_average, "1/s", noun="requests",
                  formula="{average_rps} req/s × {peak_to_average}")
    cin = d.step("input_cost_per_request_usd", "Input cost of one request",
                 p.input_tokens * p.input_usd_per_mtok / TOKENS_PER_MTOK, "USD",
                 formula="{input_tokens} × {input_usd_per_mtok} USD / 1e6")
    cout = d.step("output_cost_per_request_usd", "Output cost of one request",
                  p.output_tokens * p.output_usd_per_mtok / TOKENS_PER_MTOK, "USD",
                  formula="{output_tokens} × {output_usd_per_mtok} USD / 1e6")
    cost = d.step("cost_per_request_usd", "Cost of the average request", cin + cout, "USD",
                  formula="{input_cost_per_request_usd} USD + {output_cost_per_request_usd} USD")
    d.step("output_share_of_cost", "Output's share of the cost", cout / cost, "1", percent=True,
           formula="{output_cost_per_request_usd} / {cost_per_request_usd}")
    spend = d.step("spend_per_month_usd", "Spend per month, all teams", reqs * cost, "USD",
                   formula="{requests_per_month} × {cost_per_request_usd} USD")

    # --- the cache: deterministic calls only ---
    cacheable = d.step("cacheable_requests_per_month", "Deterministic requests per month (the only cacheable ones)",
                       reqs * p.cacheable_share, "1", noun="requests",
                       formula="{requests_per_month} × {cacheable_share}")
    hits = d.step("cache_hits_per_month", "Cache hits per month", cacheable * p.cache_hit_rate, "1", noun="requests",
                  formula="{cacheable_requests_per_month} × {cache_hit_rate}")
    d.step("cache_savings_per_month_usd", "Provider spend the cache avoids per month", hits * cost, "USD",
           formula="{cache_hits_per_month} × {cost_per_request_usd} USD")
    d.step("cache_savings_share", "Savings as a share of spend", p.cacheable_share * p.cache_hit_rate, "1",
           percent=True,
           formula="{cacheable_share} × {cache_hit_rate}")
    d.step("cache_savings_if_all_cached_usd", "The same hit rate claimed over all traffic (wrong)",
           spend * p.cache_hit_rate, "USD", formula="{spend_per_month_usd} USD × {cache_hit_rate}")
    misses = d.step("cache_entries_per_month", "New cache entries per month (cacheable misses)",
                    cacheable - hits, "1", noun="entries",
                    formula="{cacheable_requests_per_month} − {cache_hits_per_month}")
    d.step("cache_bytes_per_month", "Response text those entries hold", misses * p.output_tokens * p.bytes_per_token,
           "B", formula="{cache_entries_per_month} × {output_tokens} × {bytes_per_token} B")

    # --- provider-side prompt caching: the stable prefix billed at the cached rate ---
    d.step("min_cacheable_prefix_tokens", "Shortest prefix OpenAI and Anthropic will cache (their docs)",
           MIN_CACHEABLE_PREFIX_TOKENS, "1", noun="tokens", kind="lookup")
    prefix = d.step("prefix_tokens", "Stable prefix per request", p.input_tokens * p.prefix_share, "1", noun="tokens",
                    formula="{input_tokens} × {prefix_share}")
    cacheable_prefix = prefix >= MIN_CACHEABLE_PREFIX_TOKENS
    d.step("prefix_cacheable", "Is the prefix long enough for the provider to cache?",
           "yes" if cacheable_prefix else "no", "1", formula="{prefix_tokens} ≥ {min_cacheable_prefix_tokens}",
           kind="verdict")
    net = p.prefix_warm_share * (1 - p.cached_input_price_fraction) - (1 - p.prefix_warm_share) * p.cache_write_premium
    per_req = d.step(
        "prompt_cache_saving_per_request_usd", "Input cost the provider's prompt cache saves per request (net of writes)",
        prefix * p.input_usd_per_mtok / TOKENS_PER_MTOK * net if cacheable_prefix else 0.0, "USD",
        formula=("{prefix_tokens} × {input_usd_per_mtok} USD / 1e6 × ({prefix_warm_share} × "
                 "(1 − {cached_input_price_fraction}) − (1 − {prefix_warm_share}) × {cache_write_premium})")
        if cacheable_prefix else "0 USD")
    provider_reqs = reqs - hits
    pc = d.step("prompt_cache_savings_per_month_usd", "Provider prompt caching saves per month",
                provider_reqs * per_req, "USD",
                formula="({requests_per_month} − {cache_hits_per_month}) × {prompt_cache_saving_per_request_usd} USD")
    d.step("prompt_cache_savings_share", "Prompt caching's saving as a share of spend", pc / spend, "1", percent=True,
           formula="{prompt_cache_savings_per_month_usd} / {spend_per_month_usd}")
    resp = d.value("cache_savings_per_month_usd")
    d.step("bigger_cache_lever", "Which cache saves more", "provider prompt caching" if pc > resp else "the response cache",
           "1", formula="{prompt_cache_savings_per_month_usd} against {cache_savings_per_month_usd}", kind="verdict")

    # --- a semantic cache: more hits, some of them wrong ---
    sem = d.step("semantic_hits_per_month", "Requests a semantic cache would answer from a stored response",
                 provider_reqs * p.semantic_hit_rate, "1", noun="requests",
                 formula="({requests_per_month} − {cache_hits_per_month}) × {semantic_hit_rate}")
    d.step("semantic_savings_per_month_usd", "Provider spend those hits avoid", sem * cost, "USD",
           formula="{semantic_hits_per_month} × {cost_per_request_usd} USD")
    wrong = d.step("semantic_wrong_answers_per_month", "Wrong answers served from the semantic cache per month",
                   sem * p.semantic_false_hit_share, "1", noun="answers",
                   formula="{semantic_hits_per_month} × {semantic_false_hit_share}")
    d.step("semantic_wrong_answers_per_day", "The same per day", wrong / DAYS_PER_MONTH, "1", noun="answers",
           formula="{semantic_wrong_answers_per_month} / {days_per_month}")
    d.step("semantic_saving_per_wrong_answer_usd", "What each wrong answer buys in savings",
           cost / p.semantic_false_hit_share if p.semantic_false_hit_share > 0 else math.inf, "USD",
           formula="{cost_per_request_usd} USD / {semantic_false_hit_share}" if p.semantic_false_hit_share > 0 else "",
           note="Unbounded when no semantic hit is wrong.")

    # --- fallbacks: independent, then correlated ---
    u = 1 - p.provider_availability
    d.step("provider_unavailability", "Unavailability of one provider", u, "1", percent=True,
                   formula="1 − {provider_availability}")
    d.step("provider_downtime_per_month_s", "One provider's downtime per month", u * SECONDS_PER_MONTH, "s",
           formula="{provider_unavailability} × {days_per_month} × 86,400 s")
    indep = d.step("unavailability_with_fallback", "All providers down at once, if they fail independently",
                   u**p.providers, "1", percent=True, formula="{provider_unavailability}^{providers}")
    d.step("downtime_with_fallback_per_month_s", "Downtime per month with fallback, independent failures",
           indep * SECONDS_PER_MONTH, "s", formula="{unavailability_with_fallback} × {days_per_month} × 86,400 s")
    c = d.step("common_cause_unavailability", "Downtime that hits every provider path at once",
               p.common_cause_share * u, "1", percent=True,
               formula="{common_cause_share} × {provider_unavailability}")
    d.step("independent_unavailability", "Each provider's remaining, independent unavailability",
           (u - c) / (1 - c), "1", percent=True,
           formula="({provider_unavailability} − {common_cause_unavailability}) / (1 − {common_cause_unavailability})")
    corr = d.step("unavailability_correlated", "All providers down at once, with the common cause",
                  all_down(u, p.common_cause_share, p.providers), "1", percent=True,
                  formula="{common_cause_unavailability} + (1 − {common_cause_unavailability}) × "
                          "{independent_unavailability}^{providers}")
    d.step("downtime_correlated_per_month_s", "Downtime per month with fallback, common cause included",
           corr * SECONDS_PER_MONTH, "s", formula="{unavailability_correlated} × {days_per_month} × 86,400 s")
    d.step("correlation_penalty", "How much worse the correlated figure is", corr / indep if indep > 0 else math.inf,
           "1", noun="times", formula="{unavailability_correlated} / {unavailability_with_fallback}")
    e2e = d.step("unavailability_end_to_end", "What a team sees: the gateway in series with the fallback chain",
                 1 - p.gateway_availability * (1 - corr), "1", percent=True,
                 formula="1 − {gateway_availability} × (1 − {unavailability_correlated})")
    d.step("downtime_end_to_end_per_month_s", "Downtime per month a team sees", e2e * SECONDS_PER_MONTH, "s",
           formula="{unavailability_end_to_end} × {days_per_month} × 86,400 s")

    # --- health routing: how fast a dead provider is noticed ---
    per_provider = d.step("per_provider_rps", "Requests per second one provider sees at the average rate",
                          avg / p.providers, "1/s", noun="requests", formula="{average_rps} req/s / {providers}")
    d.step("breaker_detect_s", "Time to fill the breaker's window once a provider dies",
           p.breaker_min_requests / per_provider, "s",
           formula="{breaker_min_requests} requests / {per_provider_rps} req/s")

    # --- budgets per team ---
    per_team = d.step("average_team_spend_usd", "Average team's spend per month", spend / p.teams, "USD",
                      formula="{spend_per_month_usd} USD / {teams}")
    d.step("average_team_budget_usd", "Average team budget per month", per_team * (1 + p.budget_headroom), "USD",
           formula="{average_team_spend_usd} USD × (1 + {budget_headroom})")
    worst = d.step("max_request_cost_usd", "Dearest request a budget check must price (input + max_tokens)",
                   cin + p.max_tokens * p.output_usd_per_mtok / TOKENS_PER_MTOK, "USD",
                   formula="{input_cost_per_request_usd} USD + {max_tokens} × {output_usd_per_mtok} USD / 1e6")
    team_peak = d.step("team_peak_rps", "One average team at peak", peak / p.teams, "1/s", noun="requests",
                       formula="{peak_rps} req/s / {teams}")
    in_flight = d.step("team_in_flight", "That team's requests in flight (Little's law)",
                       team_peak * p.request_latency_s, "1", noun="requests",
                       formula="{team_peak_rps} req/s × {request_latency_s} s")
    d.step("budget_overshoot_usd", "Most a settle-after counter lets a team overspend", in_flight * worst, "USD",
           formula="{team_in_flight} × {max_request_cost_usd} USD")

    # --- the audit trail ---
    d.step("audit_bytes_per_month", "Audit bytes per month, metadata and hashes only",
           reqs * p.audit_record_bytes, "B", formula="{requests_per_month} × {audit_record_bytes} B")
    text = d.step("text_bytes_per_request", "Prompt and completion text of one request",
                  (p.input_tokens + p.output_tokens) * p.bytes_per_token, "B",
                  formula="({input_tokens} + {output_tokens}) × {bytes_per_token} B")
    with_text = d.step("audit_bytes_per_month_with_prompts", "Audit bytes per month, prompts and completions kept",
                       reqs * (p.audit_record_bytes + text), "B",
                       formula="{requests_per_month} × ({audit_record_bytes} B + {text_bytes_per_request} B)")
    d.step("prompt_storage_multiplier", "Keeping the text multiplies the trail by",
           (p.audit_record_bytes + text) / p.audit_record_bytes, "1", noun="×",
           formula="({audit_record_bytes} + {text_bytes_per_request}) / {audit_record_bytes}")
    d.step("audit_retained_bytes_with_prompts", "Retained with prompts, at the retention period",
           with_text * p.audit_retention_months, "B",
           formula="{audit_bytes_per_month_with_prompts} B × {audit_retention_months}")
    return d
