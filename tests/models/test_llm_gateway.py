"""llm-gateway: the seed's 40 teams, 3 providers and 100 keys from its own arithmetic, the default
scenario and a variant worked by hand, the directions every figure must move, the key figures
and their units, and the content's references."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.content import load_content
from models.serving.llm_gateway import Params, solve

ROOT = Path(__file__).resolve().parents[2]
CONTENT = ROOT / "content" / "serving" / "llm-gateway.md"
MONTH_S = 30 * 86_400


def v(d, key):
    return d.value(key)


# --- the seed's own arithmetic ----------------------------------------------------------------


def test_seed_forty_teams_three_providers_hundred_keys():
    d = solve(Params())
    # "Forty teams calling three providers with a hundred API keys"
    assert v(d, "keys_per_team") == pytest.approx(100 / 40) == pytest.approx(2.5)
    # every team wired to every provider: 40 x 3 point-to-point integrations
    assert v(d, "team_provider_routes") == 40 * 3 == 120
    # "One endpoint": each team and each provider connects once
    assert v(d, "gateway_connections") == 40 + 3 == 43
    # the gateway keeps two keys per provider (one live, one rotating): 3 x 2
    assert v(d, "gateway_provider_keys") == 6


def test_default_scenario_worked_by_hand():
    d = solve(Params())
    requests = 40 * 20_000 * 30  # 24 million a month
    assert v(d, "requests_per_month") == pytest.approx(requests)
    assert v(d, "average_rps") == pytest.approx(requests / MONTH_S)  # 9.26 req/s
    assert v(d, "peak_rps") == pytest.approx(3 * requests / MONTH_S)
    cost = 1_500 * 3 / 1e6 + 400 * 15 / 1e6  # 0.0045 + 0.006 = 0.0105 USD
    assert v(d, "cost_per_request_usd") == pytest.approx(0.0105)
    assert v(d, "output_share_of_cost") == pytest.approx(0.006 / 0.0105)
    assert v(d, "spend_per_month_usd") == pytest.approx(requests * cost) == pytest.approx(252_000)
    # cache: only the 30% deterministic share, 40% of it hits
    assert v(d, "cache_hits_per_month") == pytest.approx(requests * 0.3 * 0.4)  # 2.88 M
    assert v(d, "cache_savings_per_month_usd") == pytest.approx(252_000 * 0.3 * 0.4) == pytest.approx(30_240)
    assert v(d, "cache_savings_if_all_cached_usd") == pytest.approx(252_000 * 0.4)
    assert v(d, "cache_savings_share") == pytest.approx(0.12)
    # fallback: 0.5% each, independent -> 0.005^3
    assert v(d, "unavailability_with_fallback") == pytest.approx(0.005**3)  # 1.25e-5 %
    assert v(d, "downtime_with_fallback_per_month_s") == pytest.approx(0.005**3 * MONTH_S)  # 0.32 s
    # correlated: 10% of 0.5% is shared (0.05%); the rest is independent
    c = 0.1 * 0.005
    q = (0.005 - c) / (1 - c)
    assert v(d, "unavailability_correlated") == pytest.approx(c + (1 - c) * q**3)
    assert v(d, "downtime_correlated_per_month_s") == pytest.approx((c + (1 - c) * q**3) * MONTH_S, rel=1e-9)
    assert v(d, "downtime_correlated_per_month_s") == pytest.approx(1_296, rel=1e-3)  # about 21.6 minutes
    assert v(d, "unavailability_end_to_end") == pytest.approx(1 - 0.9999 * (1 - (c + (1 - c) * q**3)))
    # breaker: 20 requests at 9.26 / 3 req/s
    assert v(d, "breaker_detect_s") == pytest.approx(20 / (requests / MONTH_S / 3))
    # budgets
    assert v(d, "average_team_spend_usd") == pytest.approx(252_000 / 40)
    assert v(d, "average_team_budget_usd") == pytest.approx(252_000 / 40 * 1.2) == pytest.approx(7_560)
    worst = 1_500 * 3 / 1e6 + 4_096 * 15 / 1e6
    assert v(d, "max_request_cost_usd") == pytest.approx(worst)
    in_flight = 3 * requests / MONTH_S / 40 * 8
    assert v(d, "budget_overshoot_usd") == pytest.approx(in_flight * worst)
    # audit: 1,000 B a request; text adds (1,500 + 400) x 4 B
    assert v(d, "audit_bytes_per_month") == pytest.approx(requests * 1_000) == pytest.approx(24e9)
    assert v(d, "audit_bytes_per_month_with_prompts") == pytest.approx(requests * (1_000 + 1_900 * 4))
    assert v(d, "audit_retained_bytes_with_prompts") == pytest.approx(12 * requests * 8_600)


def test_variant_small_org_worked_by_hand():
    p = Params(teams=10, providers=2, api_keys=30, requests_per_team_per_day=1_000, input_tokens=500,
               output_tokens=100, input_usd_per_mtok=1, output_usd_per_mtok=4, cacheable_share=0.5,
               cache_hit_rate=0.2, provider_availability=0.99, common_cause_share=0.0, budget_headroom=0.0,
               audit_record_bytes=2_000)
    d = solve(p)
    assert v(d, "keys_per_team") == pytest.approx(3)
    assert v(d, "team_provider_routes") == 20
    # 10 x 1,000 x 30 = 300,000 requests; 500 x 1e-6 + 100 x 4e-6 = 0.0009 USD each
    assert v(d, "spend_per_month_usd") == pytest.approx(300_000 * 0.0009) == pytest.approx(270)
    assert v(d, "cache_savings_per_month_usd") == pytest.approx(300_000 * 0.5 * 0.2 * 0.0009) == pytest.approx(27)
    # two providers at 1% each: 0.01^2 = 1e-4 = 0.01%; no common cause -> the same
    assert v(d, "unavailability_with_fallback") == pytest.approx(1e-4)
    assert v(d, "unavailability_correlated") == pytest.approx(1e-4)
    assert v(d, "average_team_budget_usd") == pytest.approx(27)
    assert v(d, "audit_bytes_per_month") == pytest.approx(300_000 * 2_000) == pytest.approx(6e8)


def test_all_common_cause_means_fallback_buys_nothing():
    d = solve(Params(common_cause_share=1.0))
    assert v(d, "unavailability_correlated") == pytest.approx(v(d, "provider_unavailability"))


# --- moves the right way ----------------------------------------------------------------------

shares = st.floats(0, 1)


@settings(max_examples=150, deadline=None)
@given(cacheable=shares, hit=shares)
def test_savings_only_on_the_cacheable_share(cacheable, hit):
    d = solve(Params(cacheable_share=cacheable, cache_hit_rate=hit))
    spend = v(d, "spend_per_month_usd")
    assert v(d, "cache_savings_per_month_usd") <= spend * cacheable + 1e-6
    assert v(d, "cache_savings_per_month_usd") <= v(d, "cache_savings_if_all_cached_usd") + 1e-6


@settings(max_examples=100, deadline=None)
@given(a=shares, b=shares)
def test_more_cacheable_traffic_never_saves_less(a, b):
    lo, hi = sorted((a, b))
    assert v(solve(Params(cacheable_share=hi)), "cache_savings_per_month_usd") >= v(
        solve(Params(cacheable_share=lo)), "cache_savings_per_month_usd")


@settings(max_examples=150, deadline=None)
@given(avail=st.floats(0.9, 0.99999), beta=shares, n=st.integers(1, 8))
def test_correlation_sits_between_independence_and_one_provider(avail, beta, n):
    d = solve(Params(provider_availability=avail, common_cause_share=beta, providers=n))
    indep, corr, one = (v(d, k) for k in ("unavailability_with_fallback", "unavailability_correlated",
                                          "provider_unavailability"))
    assert indep <= corr * (1 + 1e-9) + 1e-15
    assert corr <= one * (1 + 1e-9)
    assert corr >= v(d, "common_cause_unavailability") * (1 - 1e-9)


@settings(max_examples=100, deadline=None)
@given(n1=st.integers(1, 8), n2=st.integers(1, 8), beta=shares)
def test_more_providers_never_make_fallback_worse(n1, n2, beta):
    lo, hi = sorted((n1, n2))
    d_lo, d_hi = solve(Params(providers=lo, common_cause_share=beta)), solve(Params(providers=hi, common_cause_share=beta))
    assert v(d_hi, "unavailability_with_fallback") <= v(d_lo, "unavailability_with_fallback")
    assert v(d_hi, "unavailability_correlated") <= v(d_lo, "unavailability_correlated") * (1 + 1e-12)


@settings(max_examples=100, deadline=None)
@given(b1=shares, b2=shares)
def test_more_common_cause_is_never_better(b1, b2):
    lo, hi = sorted((b1, b2))
    assert v(solve(Params(common_cause_share=hi)), "unavailability_correlated") >= v(
        solve(Params(common_cause_share=lo)), "unavailability_correlated") * (1 - 1e-12)


@settings(max_examples=100, deadline=None)
@given(teams=st.integers(2, 1000), headroom=st.floats(0, 2))
def test_spend_scales_with_teams_and_budgets_cover_it(teams, headroom):
    d = solve(Params(teams=teams, budget_headroom=headroom))
    assert v(d, "spend_per_month_usd") == pytest.approx(teams * 20_000 * 30 * 0.0105)
    assert v(d, "average_team_budget_usd") >= v(d, "average_team_spend_usd") * (1 - 1e-12)


@settings(max_examples=100, deadline=None)
@given(rec=st.floats(100, 20_000), bpt=st.floats(1, 8))
def test_keeping_prompts_always_costs_more_bytes(rec, bpt):
    d = solve(Params(audit_record_bytes=rec, bytes_per_token=bpt))
    assert v(d, "audit_bytes_per_month_with_prompts") > v(d, "audit_bytes_per_month")


# --- the page's own figures and prose (the contract every page meets: tests/test_contract.py) ---


def test_the_page_draws_its_figures():
    c = load_content(CONTENT)
    assert set(c.directives()) == {("diagram", "gateway_shape"), ("chart", "savings_vs_cacheable"),
                                   ("chart", "unavailability_vs_common_cause")}


def test_provider_prompt_caching_at_the_seed_by_hand():
    from models.serving.llm_gateway import Params, solve
    d = solve(Params())
    # 80% of 1,500 input tokens is a 1,200-token stable prefix, over the 1,024-token minimum
    assert d.value("prefix_tokens") == pytest.approx(1200)
    assert d.value("prefix_cacheable") == "yes"
    # warm 80% of the time at 0.1x the price, rewritten 20% of the time at +25%:
    # 1,200 x $3/M x (0.8 x 0.9 - 0.2 x 0.25) = $0.0036 x 0.67 = $0.002412 a request
    assert d.value("prompt_cache_saving_per_request_usd") == pytest.approx(1200 * 3e-6 * 0.67)
    # 40 teams x 20,000 x 30 = 24M requests; the response cache answers 24M x 0.3 x 0.4 = 2.88M of them
    provider_requests = 24e6 - 2.88e6
    assert d.value("prompt_cache_savings_per_month_usd") == pytest.approx(provider_requests * 0.002412)
    # spend: 24M x (1,500 x $3 + 400 x $15) / 1M = 24M x $0.0105 = $252,000
    assert d.value("prompt_cache_savings_share") == pytest.approx(provider_requests * 0.002412 / 252_000)
    # the response cache saves 2.88M x $0.0105 = $30,240: prompt caching (~$50.9k) is the bigger lever
    assert d.value("bigger_cache_lever") == "provider prompt caching"


def test_a_short_prefix_is_not_cached_by_the_provider():
    from models.serving.llm_gateway import Params, solve
    d = solve(Params(input_tokens=1000))
    # 80% of 1,000 = 800 tokens, under 1,024: the provider caches nothing
    assert d.value("prefix_cacheable") == "no"
    assert d.value("prompt_cache_savings_per_month_usd") == 0
    assert d.value("bigger_cache_lever") == "the response cache"


def test_semantic_cache_hits_and_wrong_answers_by_hand():
    from models.serving.llm_gateway import Params, solve
    d = solve(Params())
    # 10% of the 21.12M requests the exact cache misses: 2.112M hits, saving 2.112M x $0.0105
    assert d.value("semantic_hits_per_month") == pytest.approx(2.112e6)
    assert d.value("semantic_savings_per_month_usd") == pytest.approx(2.112e6 * 0.0105)
    # 10% of them wrong: 211,200 a month, 7,040 a day; each wrong answer buys $0.0105 / 0.1 = $0.105
    assert d.value("semantic_wrong_answers_per_month") == pytest.approx(211_200)
    assert d.value("semantic_wrong_answers_per_day") == pytest.approx(7_040)
    assert d.value("semantic_saving_per_wrong_answer_usd") == pytest.approx(0.105)
