"""design-doc-review: the document's capacity error from the seed's own arithmetic, the risk costs
and the ranking scores worked by hand, properties of the scoring, the content, and the page."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.content import load_content
from models.product.design_doc_review import (
    CHECKLIST,
    DISPLAY_ORDER,
    DOC_COVERS,
    DOC_MISSING,
    RISK_KEYS,
    Params,
    average_ranks,
    check_alternative,
    costs_of,
    kendall_tau_b,
    ranks_from_order,
    reference_order,
    score_checklist,
    score_ranking,
    solve,
    spearman_rho,
)
from models.serving import batched_inference_api as batched

SLUG = "design-doc-review"
ROOT = Path(__file__).resolve().parents[2]
CONTENT = ROOT / "content" / "product" / "design-doc-review.md"
HOURS_PER_YEAR = 8760


def v(d, key):
    return d.value(key)


# --- the seed scenario, worked by hand -----------------------------------------------------------


def test_seed_contract_and_the_documents_floor():
    d = solve(Params())
    # "A full batch serves 50 / 0.2 = 250 requests per second per GPU, so 8 GPUs is the floor."
    assert v(d, "per_gpu_full_batch_rps") == pytest.approx(50 / 0.2) == pytest.approx(250)
    assert v(d, "doc_floor_gpus") == 2000 / 250 == 8
    assert v(d, "doc_fleet_gpus") == 8
    assert v(d, "doc_fleet_cost_per_year_usd") == pytest.approx(8 * 2.5 * HOURS_PER_YEAR)  # 175,200


def test_seed_half_full_batches_need_sixteen():
    d = solve(Params())
    # a full batch takes 50 / 2,000 = 25 ms to arrive; the 12 ms timer fires first
    assert v(d, "batch_fill_time_s") == pytest.approx(0.025)
    # the first request plus 2,000 req/s x 0.012 s = 25 inputs: half the limit of 50
    assert v(d, "inputs_per_call_at_peak") == pytest.approx(1 + 2000 * 0.012) == pytest.approx(25)
    assert v(d, "batch_fill_at_peak") == pytest.approx(0.5)
    # "With half-full batches you need 16": 2,000 / (25 / 0.2 = 125)
    assert v(d, "per_gpu_rps_at_doc_timer") == pytest.approx(125)
    assert v(d, "gpus_needed_at_peak") == 2000 / 125 == 16
    assert v(d, "shortfall_at_peak_gpus") == 16 - 8 == 8


def test_seed_consequences_of_the_shortfall():
    d = solve(Params())
    assert v(d, "doc_capacity_rps") == pytest.approx(8 * 125)  # 1,000
    assert v(d, "doc_load_at_peak") == pytest.approx(2000 / 1000)  # 200%
    assert v(d, "excess_rps_at_peak") == pytest.approx(1000)
    assert v(d, "backlog_after_peak_minute") == pytest.approx(1000 * 60)
    assert v(d, "wait_after_peak_minute_s") == pytest.approx(60_000 / 1000)
    # the 100%-busy assumption dropped: 2,000 / (125 x 0.8) = 20, short by 12
    assert v(d, "gpus_needed_with_headroom") == 20
    assert v(d, "shortfall_with_headroom_gpus") == 12


def test_seed_alternative_timer():
    d = solve(Params())
    # timer = fill time 25 ms (inside 500 - 200 ms); 1 + 2,000 x 0.025 = 51, capped at 50
    assert v(d, "alt_timeout_s") == pytest.approx(0.025)
    assert v(d, "alt_inputs_per_call") == 50
    # 2,000 / (250 x 0.8) = 10 GPUs, two more than the document
    assert v(d, "alt_gpus_with_headroom") == 10
    assert v(d, "alt_extra_gpus") == 2
    assert v(d, "fix_by_timer_cost_per_year_usd") == pytest.approx(2 * 2.5 * HOURS_PER_YEAR)  # 43,800
    assert v(d, "fix_by_buying_cost_per_year_usd") == pytest.approx(12 * 2.5 * HOURS_PER_YEAR)  # 262,800
    assert v(d, "alt_saving_per_year_usd") == pytest.approx(10 * 2.5 * HOURS_PER_YEAR)
    # worst batching wait: 12 ms at the document's timer; (50 - 1) / 2,000 = 24.5 ms at the fill time
    assert v(d, "doc_worst_latency_s") == pytest.approx(0.012 + 0.2)
    assert v(d, "alt_worst_latency_s") == pytest.approx(0.0245 + 0.2)
    assert v(d, "alt_added_wait_s") == pytest.approx(0.0125)


def test_seed_risk_costs_and_ranking():
    d = solve(Params())
    # excess 1,000 req/s x 3 h x 3,600 s x 14 days x $0.005
    assert v(d, "capacity_impact_usd") == pytest.approx(1000 * 3 * 3600 * 14 * 0.005)  # 756,000
    assert v(d, "capacity_impact_without_shedding_usd") == pytest.approx(2000 * 3 * 3600 * 14 * 0.005)
    expected = {
        "capacity": 0.8 * 756_000,  # 604,800
        "rollback": 0.4 * 300_000,  # 120,000
        "dispatcher": 0.6 * 130_000,  # 78,000
        "security": 0.04 * 1_500_000,  # 60,000
        "retries": 0.6 * 60_000,  # 36,000
        "observability": 0.5 * 50_000,  # 25,000
    }
    for key, cost in expected.items():
        assert v(d, f"risk_expected_annual_cost_usd_{key}") == pytest.approx(cost), key
    assert v(d, "risk_ranking") == "capacity > rollback > dispatcher > security > retries > observability"
    assert v(d, "top_risk") == "capacity"
    # tiers within 2x of a tier's first: 604,800 alone (120,000 < 302,400); 78,000 and 60,000 are at
    # least half of 120,000; 36,000 < 60,000 starts a tier, and 25,000 >= 18,000 joins it
    assert v(d, "risk_tiers") == "capacity > rollback ≈ dispatcher ≈ security > retries ≈ observability"
    assert v(d, "risk_expected_annual_cost_usd") == pytest.approx(604_800)
    assert v(d, "total_expected_annual_cost_usd") == pytest.approx(923_800)
    assert v(d, "top_risk_share") == pytest.approx(604_800 / 923_800)
    assert v(d, "top_to_second_ratio") == pytest.approx(604_800 / 120_000)
    assert v(d, "checklist_items") == 8
    assert v(d, "checklist_missing_count") == 5
    assert v(d, "checklist_covered_count") == 3


def test_seed_how_far_the_guesses_can_move():
    d = solve(Params())
    # the largest risk besides capacity is the rollout: 0.4 x $300,000
    assert v(d, "largest_other_risk_usd") == pytest.approx(120_000)
    # capacity = p x $756,000 ties $120,000 at p = 120,000 / 756,000 = 15.9%
    assert v(d, "capacity_break_even_p") == pytest.approx(120_000 / 756_000)
    # or, at p = 0.8, when a failed request is worth $0.005 x 120,000 / 604,800
    assert v(d, "capacity_break_even_value_usd") == pytest.approx(0.005 * 120_000 / 604_800)
    # the guess below the break-even flips the lead, the one above keeps it
    assert v(solve(Params(p_capacity=0.15)), "top_risk") == "rollback"
    assert v(solve(Params(p_capacity=0.17)), "top_risk") == "capacity"
    assert v(solve(Params(value_per_request_usd=0.0009)), "top_risk") == "rollback"


def test_nothing_short_means_capacity_never_leads():
    d = solve(Params(flush_timeout_ms=25))
    assert v(d, "capacity_impact_usd") == 0
    assert math.isinf(v(d, "capacity_break_even_p")) and math.isinf(v(d, "capacity_break_even_value_usd"))


def test_batching_arithmetic_is_the_batched_pages_not_a_copy():
    d = solve(Params())
    ref = batched.solve(batched.Params(flush_timeout_ms=12, dispatchers=1))
    assert v(d, "per_gpu_full_batch_rps") == ref.value("per_gpu_rps_full")
    assert v(d, "gpus_needed_at_peak") == ref.value("gpus_with_timeout_flush")
    assert v(d, "gpus_needed_with_headroom") == ref.value("gpus_recommended")


# --- a variant scenario, by hand ----------------------------------------------------------------


def test_variant_smaller_faster_calls_more_traffic_two_spares():
    p = Params(max_batch_inputs=32, call_time_ms=100, peak_rps=3000, flush_timeout_ms=5, doc_spare_gpus=2,
               target_utilization=0.75)
    d = solve(p)
    assert v(d, "per_gpu_full_batch_rps") == pytest.approx(320)  # 32 / 0.1
    assert v(d, "doc_floor_gpus") == 10  # ceil(3,000 / 320 = 9.375)
    assert v(d, "doc_fleet_gpus") == 12  # + 2 spares
    assert v(d, "batch_fill_time_s") == pytest.approx(32 / 3000)  # 10.7 ms
    assert v(d, "inputs_per_call_at_peak") == pytest.approx(16)  # 1 + 3,000 x 0.005
    assert v(d, "per_gpu_rps_at_doc_timer") == pytest.approx(160)  # 16 / 0.1
    assert v(d, "gpus_needed_at_peak") == 19  # ceil(18.75)
    assert v(d, "shortfall_at_peak_gpus") == 7
    assert v(d, "doc_capacity_rps") == pytest.approx(1920)  # 12 x 160
    assert v(d, "excess_rps_at_peak") == pytest.approx(1080)
    assert v(d, "backlog_after_peak_minute") == pytest.approx(64_800)
    assert v(d, "wait_after_peak_minute_s") == pytest.approx(33.75)  # 64,800 / 1,920
    assert v(d, "gpus_needed_with_headroom") == 25  # 3,000 / 120 = 25 exactly: no round-up
    assert v(d, "shortfall_with_headroom_gpus") == 13
    # alternative: timer = 10.67 ms; 1 + 3,000 x 0.01067 = 33 -> 32; 3,000 / (320 x 0.75) = 12.5 -> 13
    assert v(d, "alt_timeout_s") == pytest.approx(32 / 3000)
    assert v(d, "alt_inputs_per_call") == 32
    assert v(d, "alt_gpus_with_headroom") == 13
    assert v(d, "alt_extra_gpus") == 1
    # 1,080 req/s x 3 h x 3,600 x 14 days x $0.005 = 816,480; x 0.8
    assert v(d, "capacity_impact_usd") == pytest.approx(816_480)
    assert v(d, "risk_expected_annual_cost_usd_capacity") == pytest.approx(653_184)
    assert v(d, "top_risk") == "capacity"


def test_variant_timer_at_the_fill_time_removes_the_error_and_reorders():
    d = solve(Params(flush_timeout_ms=25))
    assert v(d, "inputs_per_call_at_peak") == 50  # 1 + 2,000 x 0.025 = 51, capped
    assert v(d, "gpus_needed_at_peak") == 8
    assert v(d, "shortfall_at_peak_gpus") == 0
    assert v(d, "excess_rps_at_peak") == 0
    assert v(d, "backlog_after_peak_minute") == 0
    assert v(d, "risk_expected_annual_cost_usd_capacity") == 0
    assert v(d, "capacity_impact_without_shedding_usd") == 0
    # headroom is still missing: 2,000 / (250 x 0.8) = 10
    assert v(d, "shortfall_with_headroom_gpus") == 2
    assert v(d, "top_risk") == "rollback"
    assert v(d, "risk_ranking").endswith("capacity")


def test_variant_a_peak_that_may_not_come():
    d = solve(Params(p_capacity=0.15))
    # 0.15 x 756,000 = 113,400 < 120,000 for rollback
    assert v(d, "risk_expected_annual_cost_usd_capacity") == pytest.approx(113_400)
    assert v(d, "risk_ranking").startswith("rollback > capacity")


def test_alternative_timer_respects_the_latency_target_and_the_documents_timer():
    # 100 req/s: fill time 500 ms, but the target leaves 500 - 200 = 300 ms
    d = solve(Params(peak_rps=100))
    assert v(d, "alt_timeout_s") == pytest.approx(0.3)
    # a document timer already past the fill time is kept
    assert v(solve(Params(flush_timeout_ms=40)), "alt_timeout_s") == pytest.approx(0.04)


# --- scoring: hand cases ------------------------------------------------------------------------


def test_average_ranks_by_hand():
    assert average_ranks([30, 10, 20]) == [3, 1, 2]
    assert average_ranks([5, 5, 1, 9]) == [2.5, 2.5, 1, 4]
    assert average_ranks([7, 7, 7]) == [2, 2, 2]


def test_ranks_from_order_by_hand():
    items = ["a", "b", "c", "d"]
    assert ranks_from_order(["c", "a", "d", "b"], items) == [2, 4, 1, 3]
    # two ranked, two left out: they share places 3 and 4
    assert ranks_from_order(["b", "d"], items) == [3.5, 1, 3.5, 2]
    assert ranks_from_order([], items) == [2.5] * 4
    with pytest.raises(ValueError):
        ranks_from_order(["a", "a"], items)
    with pytest.raises(ValueError):
        ranks_from_order(["z"], items)


def test_spearman_by_hand():
    ref = [1, 2, 3, 4, 5, 6]
    assert spearman_rho(ref, ref) == pytest.approx(1)
    assert spearman_rho(ref[::-1], ref) == pytest.approx(-1)
    # one swap of neighbours: sum d^2 = 2; 1 - 6 x 2 / (6 x 35) = 1 - 12/210
    assert spearman_rho([2, 1, 3, 4, 5, 6], ref) == pytest.approx(1 - 12 / 210)
    # first and last swapped: d = 5 and 5, sum d^2 = 50; 1 - 300/210
    assert spearman_rho([6, 2, 3, 4, 5, 1], ref) == pytest.approx(1 - 300 / 210)
    # ties, by Pearson on ranks: user (1, 2.5, 2.5) against (1, 2, 3); both means 2;
    # deviations (-1, .5, .5) and (-1, 0, 1): cov 1.5, variances 1.5 and 2 -> 1.5 / sqrt(3)
    assert spearman_rho([1, 2.5, 2.5], [1, 2, 3]) == pytest.approx(1.5 / math.sqrt(3))
    assert spearman_rho([2, 2, 2], [1, 2, 3]) is None


def test_kendall_by_hand():
    ref = [1, 2, 3, 4, 5, 6]
    assert kendall_tau_b(ref, ref) == pytest.approx(1)
    assert kendall_tau_b(ref[::-1], ref) == pytest.approx(-1)
    # one neighbour swap: 14 concordant, 1 discordant of 15 pairs
    assert kendall_tau_b([2, 1, 3, 4, 5, 6], ref) == pytest.approx(13 / 15)
    # ties: pairs (0,1) C, (0,2) C, (1,2) tied on the left: 2 / sqrt((3 - 1) x 3)
    assert kendall_tau_b([1, 2.5, 2.5], [1, 2, 3]) == pytest.approx(2 / math.sqrt(6))
    assert kendall_tau_b([1, 1], [1, 2]) is None


def test_score_ranking_against_the_seed_reference():
    costs = costs_of(solve(Params()))
    ref = ["capacity", "rollback", "dispatcher", "security", "retries", "observability"]
    assert reference_order(costs) == ref
    perfect = score_ranking(ref, costs)
    assert perfect.spearman == pytest.approx(1) and perfect.kendall == pytest.approx(1) and perfect.top_match
    worst_last = score_ranking(ref[1:] + ref[:1], costs)
    assert not worst_last.top_match
    # capacity moved from 1 to 6, the rest up one: sum d^2 = 25 + 5 x 1 = 30; 1 - 180/210
    assert worst_last.spearman == pytest.approx(1 - 180 / 210)
    only_top = score_ranking(["capacity"], costs)
    assert only_top.top_match and only_top.ranked == 1
    # user ranks (1, 4 x5) against (1..6): Pearson by hand
    u, r = [1, 4, 4, 4, 4, 4], [1, 2, 3, 4, 5, 6]
    mu, mr = sum(u) / 6, 3.5
    cov = sum((a - mu) * (b - mr) for a, b in zip(u, r))
    var_u = sum((a - mu) ** 2 for a in u)
    assert only_top.spearman == pytest.approx(cov / math.sqrt(var_u * 17.5))
    assert score_ranking([], costs).spearman is None


def test_checklist_scoring_by_hand():
    assert set(DOC_MISSING) == {"failure modes", "rollout and rollback", "observability", "security", "migration"}
    assert len(CHECKLIST) == 8 and set(DOC_COVERS) | set(DOC_MISSING) == set(CHECKLIST)
    assert score_checklist(DOC_MISSING).coverage == 1
    assert score_checklist([]).coverage == pytest.approx(3 / 8)  # only the three present ones right
    everything = score_checklist(CHECKLIST)
    assert everything.coverage == pytest.approx(5 / 8)
    assert set(everything.false_alarms) == set(DOC_COVERS)
    some = score_checklist(["security", "alternatives"])
    assert some.coverage == pytest.approx((1 + 2) / 8)  # security right, alternatives wrong; 2 present right
    assert some.found == ("security",) and some.false_alarms == ("alternatives",)
    assert len(some.overlooked) == 4
    with pytest.raises(ValueError):
        score_checklist(["vibes"])


def test_alternative_check():
    full = check_alternative("Stretch the timer to 25 ms: 10 GPUs instead of 20, but 12.5 ms more wait.")
    assert full.has_number and full.names_a_tradeoff and full.works_inside_the_contract and full.passed == 3
    vague = check_alternative("Use continuous batching.")
    assert not vague.has_number and not vague.names_a_tradeoff
    assert check_alternative("").passed == 0


# --- properties -----------------------------------------------------------------------------------


perms = st.permutations(list(range(1, 7)))


@settings(max_examples=200, deadline=None)
@given(a=perms, b=perms)
def test_spearman_matches_the_no_ties_formula_and_is_symmetric(a, b):
    n = len(a)
    d2 = sum((x - y) ** 2 for x, y in zip(a, b))
    assert spearman_rho(a, b) == pytest.approx(1 - 6 * d2 / (n * (n * n - 1)))
    assert spearman_rho(a, b) == pytest.approx(spearman_rho(b, a))
    discordant = sum(1 for i, j in itertools.combinations(range(n), 2) if (a[i] - a[j]) * (b[i] - b[j]) < 0)
    assert kendall_tau_b(a, b) == pytest.approx(1 - 4 * discordant / (n * (n - 1)))


@settings(max_examples=200, deadline=None)
@given(a=st.lists(st.integers(1, 4), min_size=2, max_size=8), data=st.data())
def test_correlations_stay_in_range_with_ties(a, data):
    b = data.draw(st.lists(st.integers(1, 4), min_size=len(a), max_size=len(a)))
    for fn in (spearman_rho, kendall_tau_b):
        r = fn(a, b)
        assert r is None or -1 - 1e-9 <= r <= 1 + 1e-9


@settings(max_examples=150, deadline=None)
@given(r1=st.floats(10, 100_000), r2=st.floats(10, 100_000), timer=st.floats(1, 1000))
def test_more_traffic_never_needs_fewer_gpus(r1, r2, timer):
    lo, hi = sorted((r1, r2))
    d_lo, d_hi = solve(Params(peak_rps=lo, flush_timeout_ms=timer)), solve(Params(peak_rps=hi, flush_timeout_ms=timer))
    for key in ("doc_floor_gpus", "gpus_needed_at_peak", "gpus_needed_with_headroom", "alt_gpus_with_headroom"):
        assert v(d_hi, key) >= v(d_lo, key), key


@settings(max_examples=150, deadline=None)
@given(t1=st.floats(1, 1000), t2=st.floats(1, 1000), rate=st.floats(10, 100_000))
def test_longer_timer_never_needs_more_gpus(t1, t2, rate):
    lo, hi = sorted((t1, t2))
    d_lo, d_hi = solve(Params(flush_timeout_ms=lo, peak_rps=rate)), solve(Params(flush_timeout_ms=hi, peak_rps=rate))
    assert v(d_hi, "gpus_needed_at_peak") <= v(d_lo, "gpus_needed_at_peak")
    assert v(d_hi, "shortfall_at_peak_gpus") <= v(d_lo, "shortfall_at_peak_gpus")
    assert v(d_hi, "risk_expected_annual_cost_usd_capacity") <= v(d_lo, "risk_expected_annual_cost_usd_capacity") + 1e-6


@settings(max_examples=150, deadline=None)
@given(rate=st.floats(10, 100_000), timer=st.floats(1, 1000), spares=st.integers(0, 64), util=st.floats(0.3, 1))
def test_invariants(rate, timer, spares, util):
    d = solve(Params(peak_rps=rate, flush_timeout_ms=timer, doc_spare_gpus=spares, target_utilization=util))
    assert v(d, "shortfall_at_peak_gpus") >= 0 and v(d, "excess_rps_at_peak") >= 0
    assert v(d, "gpus_needed_at_peak") <= v(d, "gpus_needed_with_headroom")
    # the reviewer's timer never makes calls emptier than the document's
    assert v(d, "alt_inputs_per_call") >= v(d, "inputs_per_call_at_peak")
    assert v(d, "alt_gpus_with_headroom") <= v(d, "gpus_needed_with_headroom")
    costs = costs_of(d)
    assert v(d, "risk_expected_annual_cost_usd") == pytest.approx(max(costs.values()))
    assert v(d, "risk_ranking").split(" > ") == reference_order(costs)
    assert v(d, "capacity_impact_without_shedding_usd") >= v(d, "capacity_impact_usd")


@settings(max_examples=100, deadline=None)
@given(key=st.sampled_from(RISK_KEYS[1:]), p1=st.floats(0.001, 1), p2=st.floats(0.001, 1))
def test_raising_a_probability_never_lowers_that_risk_in_the_order(key, p1, p2):
    lo, hi = sorted((p1, p2))
    d_lo, d_hi = solve(Params(**{f"p_{key}": lo})), solve(Params(**{f"p_{key}": hi}))
    assert v(d_hi, f"risk_expected_annual_cost_usd_{key}") >= v(d_lo, f"risk_expected_annual_cost_usd_{key}")
    pos = lambda d: v(d, "risk_ranking").split(" > ").index(key)  # noqa: E731
    assert pos(d_hi) <= pos(d_lo)


# --- the risks and the prose (the generic contract is tests/test_contract.py) ----------------------


def test_every_risk_has_a_cost_step_and_the_ranking_is_not_the_documents_order():
    d = solve(Params())
    for key in RISK_KEYS:
        assert d[f"risk_expected_annual_cost_usd_{key}"].unit == "USD", key
    assert isinstance(v(d, "risk_ranking"), str)
    assert set(DISPLAY_ORDER) == set(RISK_KEYS) and list(DISPLAY_ORDER) != reference_order(costs_of(d))


def test_the_prose_asks_for_the_review_simulation():
    assert ("sim", "review") in list(_directives(load_content(CONTENT)))


def _directives(content):
    """Content.directives() reads the sections only; this page puts its review simulation in the intro."""
    from models.content import DIRECTIVE

    for text in [content.intro, *(s.body for s in content.sections)]:
        for line in text.splitlines():
            m = DIRECTIVE.match(line.strip())
            if m:
                yield m.group(1), m.group(2)


def test_presets_differ_from_the_seed_and_teach_what_they_say():
    content = load_content(CONTENT)
    by_name = {p.name: p.values for p in content.presets}
    padded = solve(Params(**by_name["The author pads the fleet"]))
    assert v(padded, "doc_fleet_gpus") == 12 and v(padded, "shortfall_at_peak_gpus") == 4
    assert v(padded, "shortfall_with_headroom_gpus") == 8
    timer = solve(Params(**by_name["Timer at the fill time"]))
    assert v(timer, "shortfall_at_peak_gpus") == 0 and v(timer, "top_risk") == "rollback"
    assert v(solve(Params(**by_name["A peak that may not come"])), "top_risk") == "rollback"


# --- the page, through AppTest ----------------------------------------------------------------------


@pytest.fixture
def app(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("WALKTHROUGHS_DB", str(tmp_path / "apptest.duckdb"))
    return AppTest.from_file(str(ROOT / "pages" / "product" / "design_doc_review.py"), default_timeout=30)


def _metrics(at):
    return {x.label: x.value for x in at.metric}


def test_page_scores_a_perfect_review(app):
    at = app.run()
    assert not at.exception, [e.value for e in at.exception]
    assert "Spearman's rho" not in _metrics(at)  # nothing is scored before the button
    at.multiselect(key=f"{SLUG}.sim_rank").set_value(
        ["capacity", "rollback", "dispatcher", "security", "retries", "observability"])
    for item in DOC_MISSING:
        at.checkbox(key=f"{SLUG}.sim_missing_{item.replace(' ', '_')}").check()
    at.text_area(key=f"{SLUG}.sim_alternative").input("Timer at 25 ms: 10 GPUs instead of 20, but 12.5 ms more wait.")
    at.button(key=f"{SLUG}.sim_score").click().run()
    assert not at.exception, [e.value for e in at.exception]
    m = _metrics(at)
    assert m["Spearman's rho"] == "1.00"
    assert m["Kendall's tau-b"] == "1.00"
    assert m["Led with the worst"] == "yes"
    assert m["Checklist coverage"] == "100%"


def test_page_scores_a_review_that_buries_the_lead(app):
    at = app.run()
    at.multiselect(key=f"{SLUG}.sim_rank").set_value(["observability", "retries", "capacity"])
    at.checkbox(key=f"{SLUG}.sim_missing_alternatives").check()
    at.button(key=f"{SLUG}.sim_score").click().run()
    assert not at.exception, [e.value for e in at.exception]
    m = _metrics(at)
    assert m["Led with the worst"] == "no"
    assert float(m["Spearman's rho"]) < 0
    assert m["Checklist coverage"] == "25%"  # goals and scale right; alternatives a false alarm; 5 overlooked
    assert any("False alarms" in x.value for x in at.markdown)


# --- the p99 goal against queueing -------------------------------------------------------------------


def _erlang_c_by_the_chain(c: int, a: float) -> float:
    """P(wait) in M/M/c from the birth-death chain's stationary distribution (its own derivation)."""
    below = [a ** k / math.factorial(k) for k in range(c)]
    waiting = a ** c / math.factorial(c) * c / (c - a)  # sum over n >= c of a^c / c! (a / c)^(n - c)
    return waiting / (sum(below) + waiting)


def _mmc_p99_by_hand(c: int, lam: float, call_s: float) -> float:
    # P(W > t) = C e^{-(c mu - lambda) t} = 0.01  =>  t = ln(C / 0.01) / (c mu - lambda)
    return max(0.0, math.log(_erlang_c_by_the_chain(c, lam * call_s) / 0.01) / (c / call_s - lam))


def test_seed_document_fleet_cannot_hold_any_percentile():
    d = solve(Params())
    # the 12 ms timer seals calls of 25: 2,000 / 25 = 80 batches/s x 0.2 s = 16 GPUs of work on 8
    assert v(d, "doc_batch_rate_per_s") == pytest.approx(80)
    assert v(d, "doc_offered_load_gpus") == pytest.approx(16)
    assert v(d, "doc_p99_goal_met") == "no" and v(d, "doc_p99_goal_met_fixed_calls") == "no"
    # no stationary queue, so no percentile is recorded for it
    assert "doc_queue_wait_p99_s" not in d and "doc_latency_p99_s" not in d


def test_seed_reviewers_fleet_p99_by_hand():
    d = solve(Params())
    # 25 ms timer: full calls of 50, 40 batches/s, 8 GPUs of work on 10 GPUs
    assert v(d, "alt_batch_rate_per_s") == pytest.approx(40)
    assert v(d, "alt_offered_load_gpus") == pytest.approx(8)
    assert v(d, "alt_erlang_c") == pytest.approx(_erlang_c_by_the_chain(10, 8.0), rel=1e-9)
    wait = _mmc_p99_by_hand(10, 40, 0.2)
    assert v(d, "alt_queue_wait_p99_s") == pytest.approx(wait, rel=1e-9)
    assert wait == pytest.approx(0.3712, abs=1e-4)
    # worst batching wait 49 / 2,000 s plus the 200 ms call, plus the p99 wait: 596 ms > 500 ms
    assert v(d, "alt_latency_p99_s") == pytest.approx(49 / 2000 + 0.2 + wait)
    assert v(d, "alt_p99_goal_met") == "no"
    # fixed calls: the batched page's exact M/D/c tail for the same fleet and load, well under M/M/c
    same = batched.solve(batched.Params())
    assert same.value("gpus_recommended") == 10 and same.value("batch_rate_per_s") == pytest.approx(40)
    assert v(d, "alt_queue_wait_p99_fixed_calls_s") == pytest.approx(same.value("queue_wait_p99_s"), rel=1e-9)
    assert v(d, "alt_latency_p99_fixed_calls_s") < 0.5 < v(d, "alt_latency_p99_s")
    assert v(d, "alt_p99_goal_met_fixed_calls") == "yes"
    assert v(d, "p99_goal_verdict") == ("document: missed (the queue has no bound); "
                                         "reviewer's fix: met only because calls are fixed")


def test_fewest_gpus_for_the_goal_at_the_documents_timer():
    d = solve(Params())
    assert v(d, "p99_goal_min_gpus_doc_timer") == 19
    allowed = 0.5 - (0.012 + 0.2)  # the target less the worst batching wait and the call
    assert _mmc_p99_by_hand(19, 80, 0.2) <= allowed < _mmc_p99_by_hand(18, 80, 0.2)


def test_a_padded_document_meets_its_goal_by_hand():
    d = solve(Params(doc_spare_gpus=12))  # 20 GPUs for 16 GPUs of work
    wait = _mmc_p99_by_hand(20, 80, 0.2)
    assert v(d, "doc_queue_wait_p99_s") == pytest.approx(wait, rel=1e-9)
    assert v(d, "doc_latency_p99_s") == pytest.approx(0.212 + wait)
    assert v(d, "doc_p99_goal_met") == "yes"
    assert v(d, "p99_goal_verdict").startswith("document: met;")


def test_a_target_below_the_call_cannot_be_met_by_any_fleet():
    d = solve(Params(latency_target_ms=200))  # every request spends the 200 ms call at least
    assert math.isinf(v(d, "p99_goal_min_gpus_doc_timer"))
    assert v(d, "p99_goal_verdict").endswith("reviewer's fix: missed")


@settings(max_examples=40, deadline=None)
@given(s1=st.integers(0, 64), s2=st.integers(0, 64), rate=st.floats(500, 4000))
def test_spares_never_lengthen_the_documents_tail(s1, s2, rate):
    lo, hi = sorted((s1, s2))
    d_lo, d_hi = solve(Params(doc_spare_gpus=lo, peak_rps=rate)), solve(Params(doc_spare_gpus=hi, peak_rps=rate))
    if "doc_latency_p99_s" in d_lo:
        assert v(d_hi, "doc_latency_p99_s") <= v(d_lo, "doc_latency_p99_s") + 1e-12
        assert v(d_lo, "doc_latency_p99_fixed_calls_s") <= v(d_lo, "doc_latency_p99_s")
    assert not (v(d_lo, "doc_p99_goal_met") == "yes" and v(d_hi, "doc_p99_goal_met") == "no")


def test_security_place_follows_its_rank():
    d = solve(Params())  # 4% x $1.5M = $60,000: below capacity, rollback, dispatcher; above retries, observability
    assert v(d, "risk_expected_annual_cost_usd_security") == pytest.approx(0.04 * 1.5e6)
    assert v(d, "security_rank") == 4
    assert v(d, "security_rank_place") == "mid-table"
    low = solve(Params(p_security=0.01, security_impact_usd=1.2e6))  # $12,000, below observability's $25,000
    assert v(low, "security_rank") == 6
    assert v(low, "security_rank_place") == "at the bottom"
