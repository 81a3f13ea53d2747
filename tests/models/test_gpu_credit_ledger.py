"""gpu-credit-ledger: the seed's 4,096 GPUs worked by hand, water-filling against hand-worked cases and
its fairness properties, the double-entry invariant of the live ledger, directions, and content."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from models.content import load_content
from models.platform.gpu_credit_ledger import (
    Params,
    job_ledger,
    solve,
    water_fill,
    water_fill_trace,
    whole_units,
)

ROOT = Path(__file__).resolve().parents[2]
CONTENT = ROOT / "content" / "platform" / "gpu-credit-ledger.md"
DIRECTIVES = {("chart", "credits_vs_spend"), ("diagram", "ledger_path"), ("sim", "ledger"),
              ("chart", "debits_vs_interval"), ("sim", "water_fill"), ("chart", "allocation_vs_demand")}


def v(d, key):
    return d.value(key)


# --- the seed scenario, worked by hand ----------------------------------------------------------


def test_seed_capacity_and_overbooking():
    d = solve(Params())
    assert v(d, "capacity_gpu_hours") == 4096 * 24 * 30 == 2_949_120
    assert v(d, "credits_to_issue_gpu_hours") == pytest.approx(2_949_120 / 0.8)  # 3,686,400
    assert v(d, "overbooking_ratio") == pytest.approx(1.25)
    assert v(d, "unhonourable_if_all_spend") == pytest.approx(0.2)  # (3,686,400 - 2,949,120) / 3,686,400
    assert v(d, "grant_pretraining_gpu_hours") == pytest.approx(3_686_400 * 3 / 7)
    assert v(d, "grant_research_gpu_hours") == pytest.approx(3_686_400 / 7)


def test_seed_debit_path():
    d = solve(Params())
    assert v(d, "jobs_running") == 4096 / 8  # 512 jobs
    assert v(d, "ledger_debits_per_s") == pytest.approx(512 / 60)  # 8.53 per second
    assert v(d, "per_gpu_second_debits_per_s") == 4096
    assert v(d, "debit_reduction") == pytest.approx(8 * 60)  # 480x fewer writes
    assert v(d, "debits_per_period") == pytest.approx(512 / 60 * 30 * 86400)  # 22.1M
    assert v(d, "postings_per_period") == pytest.approx(2 * 512 / 60 * 30 * 86400)
    assert v(d, "hold_gpu_hours") == 8 * 24  # 192
    assert v(d, "held_gpu_hours_total") == 512 * 192
    assert v(d, "unmetered_exposure_gpu_hours") == pytest.approx(4096 * 60 / 3600)  # 68.3 GPU-h
    # The example job: 3.5 h of 8 GPUs.
    assert v(d, "job_debits") == 210  # 3.5 h / 60 s
    assert v(d, "job_spend_gpu_hours") == pytest.approx(28)
    assert v(d, "hold_release_gpu_hours") == pytest.approx(192 - 28)
    assert v(d, "ledger_example_admitted") == "yes"


def test_seed_contention_by_water_filling():
    d = solve(Params())
    # Demands 3,072 / 1,024 / 1,024 / 256, weights 3 / 2 / 1 / 1 on 4,096 GPUs.
    assert v(d, "total_demand_gpus") == 5376
    assert v(d, "oversubscription") == pytest.approx(5376 / 4096)
    # Round 1: level 4,096 / 7 = 585.1. Post-training wants 1,024 <= 2 x 585.1; Evals 256 <= 585.1: frozen.
    assert v(d, "first_level_gpus_per_weight") == pytest.approx(4096 / 7)
    assert v(d, "satisfied_demand_gpus") == 1024 + 256
    assert v(d, "satisfied_teams") == "Post-training and Evals"
    # Round 2: (4,096 - 1,280) / (3 + 1) = 704; Pretraining 3 x 704 = 2,112 < 3,072, Research 704 < 1,024.
    assert v(d, "water_level_gpus_per_weight") == pytest.approx(704)
    assert v(d, "capped_teams") == "Pretraining and Research"
    assert v(d, "fill_rounds") == 2
    assert v(d, "contention_allocation_gpus") == 2112
    assert (v(d, "alloc_posttraining_gpus"), v(d, "alloc_research_gpus"), v(d, "alloc_evals_gpus")) == (1024, 704, 256)
    assert v(d, "idle_gpus") == 0
    assert v(d, "weighted_share_pretraining_gpus") == pytest.approx(4096 * 3 / 7)  # 1,755
    assert v(d, "proportional_evals_gpus") == pytest.approx(4096 * 256 / 5376)  # 195: less than it asked for


def test_seed_exhaustion():
    d = solve(Params())
    grant = 3_686_400 * 3 / 7
    assert v(d, "hours_to_exhaust_at_burst") == pytest.approx(grant / 3072)  # 514.3 h, about 21 days
    assert v(d, "hours_to_exhaust_at_allocation") == pytest.approx(grant / 2112)  # 748 h: past the period
    assert v(d, "jobs_per_grant_research") == math.floor(3_686_400 / 7 / 192)


def test_seed_exchange_rate_and_scheduler_quota():
    d = solve(Params())
    # A credit is an H100-hour; an H100 does 3x an A100's work, so an A100-hour costs 1/3 credit.
    assert v(d, "a100_credit_rate") == pytest.approx(1 / 3)
    # The example job (8 GPUs, 3.5 h on H100s) takes 10.5 h on A100s and costs 8 x 10.5 / 3 = 28 credits,
    # the same 8 x 3.5 = 28 it costs on H100s.
    assert v(d, "example_job_a100_hours") == pytest.approx(10.5)
    assert v(d, "example_job_a100_credits") == pytest.approx(28)
    # Slurm truncates a job's billing to an integer: one A100 at weight 1/3 bills floor(0.333) = 0, so the
    # weights are scaled by 100: H100 100, A100 100 / 3 = 33.3.
    assert v(d, "slurm_one_a100_billing_unscaled") == 0
    assert v(d, "slurm_h100_billing_weight") == 100
    assert v(d, "slurm_a100_billing_weight") == pytest.approx(100 / 3)
    # Pretraining's grant of 3,686,400 x 3/7 GPU-hours as billing-minutes at 100 per H100:
    # GrpTRESMins=billing=3,686,400 x 3/7 x 60 x 100
    assert v(d, "slurm_grptresmins_pretraining") == pytest.approx(3_686_400 * 3 / 7 * 60 * 100)  # 9.48e9


def test_exchange_rate_variant():
    d = solve(Params(h100_speedup_over_a100=2.0, job_run_h=5, gpus_per_job=16))
    assert v(d, "a100_credit_rate") == pytest.approx(0.5)
    assert v(d, "example_job_a100_hours") == pytest.approx(10)  # 5 h x 2
    assert v(d, "example_job_a100_credits") == pytest.approx(16 * 10 * 0.5) == pytest.approx(80)  # = 16 x 5
    assert v(d, "slurm_a100_billing_weight") == pytest.approx(50)  # 100 x 1/2


def test_equal_speed_bills_one_a100_whole():
    d = solve(Params(h100_speedup_over_a100=1.0))
    assert v(d, "a100_credit_rate") == pytest.approx(1)
    assert v(d, "slurm_one_a100_billing_unscaled") == 1  # floor(1 x 1): no truncation when the rate is 1


# --- a variant worked by hand -------------------------------------------------------------------


def test_variant_bigger_cluster_one_week_big_jobs():
    p = Params(gpus=8192, period_days=7, expected_spend_fraction=0.6, gpus_per_job=64, meter_interval_s=300,
               weight_pretraining=4, demand_pretraining_gpus=8192, weight_posttraining=2,
               demand_posttraining_gpus=2048, weight_research=1, demand_research_gpus=512, weight_evals=1,
               demand_evals_gpus=512)
    d = solve(p)
    assert v(d, "capacity_gpu_hours") == 8192 * 168  # 1,376,256
    assert v(d, "credits_to_issue_gpu_hours") == pytest.approx(1_376_256 / 0.6)  # 2,293,760
    assert v(d, "ledger_debits_per_s") == pytest.approx(128 / 300)  # 8,192 / 64 jobs, every 5 min
    # Level 8,192 / 8 = 1,024: Post-training 2,048 <= 2,048, Research and Evals 512 <= 1,024: all frozen.
    # Pretraining takes the rest: 8,192 - 3,072 = 5,120 (its level is 5,120 / 4 = 1,280).
    assert v(d, "water_level_gpus_per_weight") == pytest.approx(1280)
    assert v(d, "contention_allocation_gpus") == 5120
    assert v(d, "hours_to_exhaust_at_burst") == pytest.approx(2_293_760 * 4 / 8 / 8192)  # 140 h
    assert v(d, "hold_gpu_hours") == 64 * 24


# --- water-filling: hand-worked cases -----------------------------------------------------------


@pytest.mark.parametrize(("capacity", "demands", "weights", "expected"), [
    (4096, [3072, 1024, 1024, 256], [3, 2, 1, 1], [2112, 1024, 704, 256]),  # the seed
    (100, [50, 50, 50], [1, 1, 1], [100 / 3] * 3),  # nobody fits: equal thirds
    (100, [10, 20, 30], [1, 5, 1], [10, 20, 30]),  # enough for everyone
    (100, [10, 40, 100], [1, 1, 1], [10, 40, 50]),  # three rounds: 33.3, then 45, then 50
    (900, [1000, 1000], [2, 1], [600, 300]),  # split by weight
    (100, [30, 30, 80], [1, 1, 0], [30, 30, 40]),  # the scavenger gets what is left
    (100, [80, 80, 50], [1, 1, 0], [50, 50, 0]),  # ...and nothing when nothing is left
    (100, [0, 70, 70], [5, 1, 1], [0, 50, 50]),  # a heavy team that wants nothing takes nothing
    (0, [10, 10], [1, 1], [0, 0]),
])
def test_water_fill_hand_cases(capacity, demands, weights, expected):
    assert water_fill(capacity, demands, weights) == pytest.approx(expected)


def test_water_fill_rounds_for_the_three_round_case():
    t = water_fill_trace(100, [10, 40, 100], [1, 1, 1])
    assert [r.level for r in t.rounds] == pytest.approx([100 / 3, 45, 50])
    assert [r.satisfied for r in t.rounds] == [(0,), (1,), ()]
    assert t.level == pytest.approx(50)


def test_water_fill_rejects_nonsense():
    with pytest.raises(ValueError):
        water_fill(100, [10, -1], [1, 1])
    with pytest.raises(ValueError):
        water_fill(100, [10], [1, 1])


def test_whole_units_hand_case():
    # Thirds of 100: 33.3 each floors to 33; the spare GPU goes to one team, never past a demand.
    assert sorted(whole_units([100 / 3] * 3, [50, 50, 50], 100)) == [33, 33, 34]
    assert whole_units([10.0, 0.5], [10, 0.5], 11) == [10, 0]  # a demand of half a GPU cannot round up


# --- water-filling: properties ----------------------------------------------------------------------

teams = st.integers(1, 8)


@st.composite
def problems(draw):
    n = draw(teams)
    demands = draw(st.lists(st.floats(0, 5000, allow_nan=False), min_size=n, max_size=n))
    weights = draw(st.lists(st.one_of(st.just(0.0), st.floats(0.1, 10)), min_size=n, max_size=n))
    capacity = draw(st.floats(0, 20000, allow_nan=False))
    return capacity, demands, weights


@settings(max_examples=400, deadline=None)
@given(problems())
def test_water_fill_properties(problem):
    cap, demands, weights = problem
    a = water_fill(cap, demands, weights)
    tol = 1e-6 * max(1.0, cap, sum(demands))
    assert sum(a) <= cap + tol  # never exceeds capacity
    for x, dm in zip(a, demands):
        assert -tol <= x <= dm + tol  # never more than asked
    if sum(demands) >= cap:
        assert sum(a) == pytest.approx(cap, abs=tol)  # work-conserving
    else:
        assert a == pytest.approx(demands, abs=tol)  # everyone satisfied
    positive = [i for i, w in enumerate(weights) if w > 0]
    total_w = sum(weights[i] for i in positive)
    unsatisfied = [i for i in positive if a[i] < demands[i] - tol]
    if unsatisfied:
        level = a[unsatisfied[0]] / weights[unsatisfied[0]]
        for i in unsatisfied:  # unsatisfied teams sit at one level per unit of weight
            assert a[i] / weights[i] == pytest.approx(level, rel=1e-6, abs=1e-6)
        for i in positive:  # nobody got more per unit of weight than the level
            assert a[i] / weights[i] <= level + (tol + 1e-6 * max(1, level)) / weights[i]
        for i, w in enumerate(weights):  # scavengers wait for every weighted team
            if w == 0:
                assert a[i] == pytest.approx(0, abs=tol)
    for i in positive:  # at least min(demand, weight x first level)
        assert a[i] >= min(demands[i], weights[i] * cap / total_w) - tol


@settings(max_examples=200, deadline=None)
@given(problems(), st.floats(0, 5000))
def test_more_capacity_never_takes_from_anyone(problem, extra):
    cap, demands, weights = problem
    a, b = water_fill(cap, demands, weights), water_fill(cap + extra, demands, weights)
    for x, y in zip(a, b):
        assert y >= x - 1e-6 * max(1.0, cap + extra)


@settings(max_examples=200, deadline=None)
@given(problems())
def test_whole_units_properties(problem):
    cap, demands, weights = problem
    cap, demands = int(cap), [float(int(x)) for x in demands]  # GPUs come whole
    a = water_fill(cap, demands, weights)
    w = whole_units(a, demands, cap)
    assert all(isinstance(x, int) for x in w)
    assert sum(w) <= cap
    assert all(x <= dm + 1e-9 for x, dm in zip(w, demands))
    assert all(abs(x - y) < 1 + 1e-9 for x, y in zip(w, a))
    assert sum(w) == min(cap, math.floor(sum(a) + 1e-9))


# --- the live ledger: double entry ---------------------------------------------------------------


def test_ledger_hand_case():
    led = job_ledger("research", 500, 8, 24, 3.5, 1.0)  # hourly debits for the table
    kinds = [p.kind for p in led.postings[::2]]
    assert kinds == ["grant", "hold", "debit", "debit", "debit", "debit", "release"]
    assert [p.amount for p in led.postings if p.kind == "debit" and p.amount > 0] == pytest.approx([8, 8, 8, 4])
    assert led.hold_gpu_hours == 192 and led.spent_gpu_hours == pytest.approx(28)
    assert led.released_gpu_hours == pytest.approx(164)
    bal = led.balances()
    assert bal == pytest.approx({"org:issuance": -500, "research:available": 472, "research:held": 0,
                                 "cluster:consumed": 28})
    assert all(s == pytest.approx(0, abs=1e-12) for s in led.transaction_sums().values())


def test_ledger_refuses_a_hold_the_balance_cannot_cover():
    led = job_ledger("research", 100, 8, 24, 3.5, 1.0)  # hold 192 > 100
    assert not led.admitted
    assert {p.kind for p in led.postings} == {"grant"}  # nothing held, nothing debited
    assert led.balances()["research:available"] == 100


def test_ledger_stops_a_job_at_its_hold():
    led = job_ledger("research", 1000, 8, 2, 5, 0.5)
    assert led.spent_gpu_hours == pytest.approx(16)  # 8 GPUs x 2 h, not 5
    assert led.debits == 4 and led.released_gpu_hours == 0
    assert "release" not in {p.kind for p in led.postings}
    assert led.balances()["research:held"] == pytest.approx(0)


@settings(max_examples=300, deadline=None)
@given(balance=st.floats(0, 1e5), gpus=st.integers(1, 512), max_h=st.floats(0.1, 100), run_h=st.floats(0, 200),
       interval_h=st.floats(0.01, 2))
def test_every_transaction_sums_to_zero(balance, gpus, max_h, run_h, interval_h):
    assume(min(run_h, max_h) / interval_h < 5000)  # keep the example small
    led = job_ledger("t", balance, gpus, max_h, run_h, interval_h)
    tol = 1e-9 * max(1.0, balance, gpus * max_h)
    for txn, total in led.transaction_sums().items():
        assert abs(total) <= tol, txn
    bal = led.balances()
    assert sum(bal.values()) == pytest.approx(0, abs=tol * 10)
    assert bal["org:issuance"] == pytest.approx(-balance)
    keys = [p.key for p in led.postings[::2]]
    assert len(keys) == len(set(keys))  # one idempotency key per transaction
    if led.admitted:
        assert bal["t:held"] == pytest.approx(0, abs=tol * 10)
        assert led.spent_gpu_hours == pytest.approx(gpus * min(run_h, max_h), rel=1e-9, abs=tol)
        assert bal["t:available"] == pytest.approx(balance - led.spent_gpu_hours, abs=tol * 10)
        assert bal.get("cluster:consumed", 0) == pytest.approx(led.spent_gpu_hours, abs=tol * 10)
        assert all(p.amount >= -tol for p in led.postings if p.account == "cluster:consumed")
    else:
        assert gpus * max_h > balance


# --- moves the right way ---------------------------------------------------------------------------

scenarios = st.builds(
    Params,
    gpus=st.integers(256, 65536),
    period_days=st.integers(1, 92),
    expected_spend_fraction=st.floats(0.3, 1.0),
    gpus_per_job=st.integers(1, 1024),
    meter_interval_s=st.floats(1, 3600),
    max_runtime_h=st.floats(1, 336),
    job_run_h=st.floats(0.1, 336),
    weight_pretraining=st.floats(0, 10),
    demand_pretraining_gpus=st.integers(0, 16384),
    weight_research=st.floats(0, 10),
    demand_research_gpus=st.integers(0, 16384),
)


@settings(max_examples=150, deadline=None)
@given(p=scenarios, spend=st.floats(0.3, 1.0))
def test_lower_expected_spend_issues_more_credits(p, spend):
    q = Params(**{**p.model_dump(), "expected_spend_fraction": spend})
    a, b = solve(p), solve(q)
    assert v(a, "capacity_gpu_hours") == v(b, "capacity_gpu_hours")
    if spend < p.expected_spend_fraction:
        assert v(b, "credits_to_issue_gpu_hours") >= v(a, "credits_to_issue_gpu_hours")
    assert v(b, "credits_to_issue_gpu_hours") >= v(b, "capacity_gpu_hours") * (1 - 1e-12)


@settings(max_examples=150, deadline=None)
@given(p=scenarios, factor=st.floats(1.01, 100))
def test_longer_interval_fewer_debits_more_exposure(p, factor):
    q = Params(**{**p.model_dump(), "meter_interval_s": min(3600, p.meter_interval_s * factor)})
    a, b = solve(p), solve(q)
    assert v(b, "ledger_debits_per_s") <= v(a, "ledger_debits_per_s") * (1 + 1e-12)
    assert v(b, "unmetered_exposure_gpu_hours") >= v(a, "unmetered_exposure_gpu_hours") * (1 - 1e-12)
    assert v(a, "ledger_debits_per_s") <= v(a, "per_gpu_second_debits_per_s") * (1 + 1e-12)


@settings(max_examples=150, deadline=None)
@given(p=scenarios, extra=st.integers(8, 8192))
def test_more_demand_never_shrinks_own_allocation_nor_grows_others(p, extra):
    q = Params(**{**p.model_dump(), "demand_pretraining_gpus": min(16384, p.demand_pretraining_gpus + extra)})
    a, b = solve(p), solve(q)
    assert v(b, "contention_allocation_gpus") >= v(a, "contention_allocation_gpus") - 1  # whole-GPU rounding
    for key in ("alloc_posttraining_gpus", "alloc_research_gpus", "alloc_evals_gpus"):
        assert v(b, key) <= v(a, key) + 1
    if v(a, "hours_to_exhaust_at_burst") < math.inf:
        assert v(b, "hours_to_exhaust_at_burst") <= v(a, "hours_to_exhaust_at_burst") * (1 + 1e-12)


@settings(max_examples=150, deadline=None)
@given(p=scenarios)
def test_allocations_fit_the_cluster(p):
    d = solve(p)
    allocs = [v(d, k) for k in ("contention_allocation_gpus", "alloc_posttraining_gpus", "alloc_research_gpus",
                                "alloc_evals_gpus")]
    assert sum(allocs) + v(d, "idle_gpus") == p.gpus
    assert v(d, "idle_gpus") >= 0
    if v(d, "total_demand_gpus") >= p.gpus:
        assert v(d, "idle_gpus") == 0


# --- content -------------------------------------------------------------------------------------


def test_the_page_draws_its_figures():
    assert set(load_content(CONTENT).directives()) == DIRECTIVES


def test_the_team_a_split_by_demand_favours_by_hand():
    d = solve(Params())
    # 4,096 GPUs over 5,376 demanded: Pretraining 3,072 -> 2,340.6 by demand against 2,112 water-filled (+228.6);
    # Post-training 780.2 vs 1,024, Research 780.2 vs 704 (+76.2), Evals 195 vs 256
    assert v(d, "by_demand_gainer") == "Pretraining"
    assert v(d, "by_demand_gain_gpus") == pytest.approx(4096 * 3072 / 5376 - 2112)


def test_ledger_bills_a_run_shorter_than_the_rounding_slack():
    # 2 GPUs for 1e-9 h on a 1 h interval: one partial debit of 2 x 1e-9 GPU-h, not none
    led = job_ledger("t", 1.0, 2, 0.5, 1e-9, 1.0)
    assert led.debits == 1
    assert led.spent_gpu_hours == pytest.approx(2e-9, rel=1e-9)


def test_mock_draws_are_contended():
    # The page teaches water-filling under contention: a drawn cluster is smaller than the total demand.
    from models.mock import draw_scenario
    for seed in range(60):
        p = draw_scenario(Params, seed)
        assert sum(p.demands()) > p.gpus, seed
