"""training-disaster-recovery: seed figures from the seed's own arithmetic, hand-worked variants,
Young's interval checked as a true minimum, and properties that say which way each number moves."""

import math

import pytest
from hypothesis import given, settings, strategies as st

from models.registry import QUESTIONS
from models.training.training_disaster_recovery import Params, solve


# The Llama 3 paper, section 3.3.4: 419 unexpected interruptions in 54 days on 16,384 GPUs.
LLAMA3_PER_GPU_DAY = 419 / (54 * 16384)


def test_seed_scenario_three_months_on_8000_gpus():
    d = solve(Params())
    # "three months on 8,000 GPUs": 8,000 x 90 days x 24 h
    assert d.value("run_gpu_hours") == 8000 * 90 * 24 == 17_280_000
    # the Llama 3 rate scaled to 8,000 GPUs: 3.79 a day, one every 6.33 h, 341 in 90 days
    per_day = LLAMA3_PER_GPU_DAY * 8000
    assert d.value("interruptions_per_day") == pytest.approx(per_day)
    assert d.value("job_mtbf_h") == pytest.approx(24 / per_day)
    assert d.value("job_mtbf_h") == pytest.approx(6.335, abs=0.001)
    assert d.value("expected_interruptions") == pytest.approx(per_day * 90)
    assert round(d.value("expected_interruptions")) == 341


def test_loss_and_young_by_hand():
    d = solve(Params())
    # 405e9 params x 14 B = 5.67 TB; over a 100 GB/s burst tier: 56.7 s
    assert d.value("checkpoint_TB") == pytest.approx(5.67)
    assert d.value("checkpoint_write_s") == pytest.approx(56.7)
    # half of 30 min + 15 min restart = 30 min per interruption, on all 8,000 GPUs
    assert d.value("loss_per_interruption_min") == pytest.approx(30)
    n = LLAMA3_PER_GPU_DAY * 8000 * 90
    assert d.value("gpu_hours_lost") == pytest.approx(n * 0.5 * 8000)
    assert d.value("fraction_lost") == pytest.approx(n * 0.5 * 8000 / 17_280_000)
    assert d.value("fraction_lost") == pytest.approx(0.0789, abs=0.0001)
    # Young (1974): T* = sqrt(2 x delta x M) = sqrt(2 x 56.7 s x 22,805 s) = 1,608 s = 26.8 min
    m_s = 24 / (LLAMA3_PER_GPU_DAY * 8000) * 3600
    assert d.value("young_optimal_interval_min") == pytest.approx(math.sqrt(2 * 56.7 * m_s) / 60)
    assert d.value("young_optimal_interval_min") == pytest.approx(26.8, abs=0.05)
    assert d.value("checkpoint_overhead_fraction") == pytest.approx(56.7 / 1800)
    assert d.value("restart_share_of_loss") == pytest.approx(0.5)


def test_site_loss_rpo_and_rto_by_hand():
    d = solve(Params())
    # 5.67 TB = 45,360 Gb over 100 Gb/s = 453.6 s = 7.56 min
    assert d.value("replication_s") == pytest.approx(453.6)
    assert d.value("replicate_every") == 1
    # worst: one interval + the transfer; mean: half an interval + the transfer
    assert d.value("rpo_worst_min") == pytest.approx(30 + 7.56)
    assert d.value("rpo_mean_min") == pytest.approx(15 + 7.56)
    # RTO: detect 5 + decide 30 + launch 20 + 5,670 GB / 50 GB/s = 113.4 s
    assert d.value("load_from_second_site_s") == pytest.approx(113.4)
    assert d.value("rto_min") == pytest.approx(5 + 30 + 20 + 113.4 / 60)
    assert d.value("site_loss_gpu_hours_worst") == pytest.approx(8000 * (37.56 + 55 + 1.89) / 60)
    # drills: 12 in 90 days (every 7) on 512 GPUs for 2 h
    assert d.value("drills_per_run") == 12
    assert d.value("drill_gpu_hours") == 12 * 512 * 2
    assert d.value("silent_break_rpo_days") == pytest.approx(7 + 37.56 / 1440)


def test_variant_slow_link_skips_checkpoints():
    d = solve(Params(replication_gbps=10))
    # 45,360 Gb / 10 Gb/s = 4,536 s = 75.6 min > 30 min: ship one in every ceil(75.6 / 30) = 3
    assert d.value("replication_s") == pytest.approx(4536)
    assert d.value("replicate_every") == 3
    assert d.value("rpo_worst_min") == pytest.approx(90 + 75.6)
    assert d.value("rpo_mean_min") == pytest.approx(45 + 75.6)


def test_variant_70b_on_16000_gpus_hourly_saves():
    p = Params(gpus=16_000, params_b=70, interval_min=60, write_tier_GBps=50, restart_min=10,
               replication_gbps=400, second_site_read_GBps=100, second_site_fraction=0.5, run_days=60)
    d = solve(p)
    per_day = LLAMA3_PER_GPU_DAY * 16_000  # 7.58 a day
    mtbf_h = 24 / per_day  # 3.17 h
    assert d.value("job_mtbf_h") == pytest.approx(mtbf_h)
    assert d.value("expected_interruptions") == pytest.approx(per_day * 60)
    # 70e9 x 14 = 980 GB; 980 / 50 = 19.6 s
    assert d.value("checkpoint_write_s") == pytest.approx(19.6)
    assert d.value("young_optimal_interval_min") == pytest.approx(math.sqrt(2 * 19.6 * mtbf_h * 3600) / 60)
    # 30 + 10 = 40 min a loss
    assert d.value("gpu_hours_lost") == pytest.approx(per_day * 60 * 40 / 60 * 16_000)
    # 980 GB x 8 / 400 Gb/s = 19.6 s; rpo = 60 + 0.327 min
    assert d.value("rpo_worst_min") == pytest.approx(60 + 19.6 / 60)
    assert d.value("rto_min") == pytest.approx(5 + 30 + 20 + 9.8 / 60)
    assert d.value("second_site_gpus") == 8000
    assert d.value("days_added_midrun_failover") == pytest.approx(30)


def test_preset_about_lines_hold():
    q = QUESTIONS["training-disaster-recovery"]
    presets = {pr.name: pr.values for pr in q.content.presets}
    d = solve(Params(**presets["A 10 Gb/s link between the sites"]))
    assert d.value("replicate_every") == 3
    assert d.value("rpo_worst_min") == pytest.approx(165.6)
    d = solve(Params(**presets["A cold second site"]))
    assert d.value("rto_min") / 60 == pytest.approx(12.6, abs=0.05)
    d = solve(Params(**presets["Half-size second cluster"]))
    assert d.value("second_site_gpus") == 4000
    assert d.value("days_added_midrun_failover") == pytest.approx(45)


params_strategy = st.builds(
    Params,
    gpus=st.integers(512, 100_000),
    params_b=st.floats(1, 2000),
    write_tier_GBps=st.floats(10, 2000),
    interval_min=st.floats(5, 240),
    restart_min=st.floats(1, 120),
    failure_rate_multiplier=st.floats(0.25, 4),
)


@settings(max_examples=200, deadline=None)
@given(p=params_strategy)
def test_young_interval_is_the_minimum_of_the_total(p):
    d = solve(p)
    # T* minimises delta/T + (T/2 + restart)/M over T; no interval does better
    assert d.value("young_total_overhead_fraction") <= d.value("total_overhead_fraction") + 1e-12
    t = d.value("young_optimal_interval_min")
    for factor in (0.8, 1.25):
        other = solve(p.model_copy(update={"interval_min": min(240, max(5, t * factor))}))
        assert d.value("young_total_overhead_fraction") <= other.value("total_overhead_fraction") + 1e-12


@settings(max_examples=150, deadline=None)
@given(g1=st.integers(512, 100_000), g2=st.integers(512, 100_000))
def test_more_gpus_fail_more_often_and_save_more_often(g1, g2):
    lo, hi = sorted((g1, g2))
    d_lo, d_hi = solve(Params(gpus=lo)), solve(Params(gpus=hi))
    assert d_hi.value("job_mtbf_h") <= d_lo.value("job_mtbf_h")
    assert d_hi.value("expected_interruptions") >= d_lo.value("expected_interruptions")
    assert d_hi.value("young_optimal_interval_min") <= d_lo.value("young_optimal_interval_min")
    assert d_hi.value("run_gpu_hours") >= d_lo.value("run_gpu_hours")
    # the lost share is (T/2 + restart) / MTBF: a shorter MTBF loses a larger share
    assert d_hi.value("fraction_lost") >= d_lo.value("fraction_lost") - 1e-12


@settings(max_examples=150, deadline=None)
@given(l1=st.floats(1, 3200), l2=st.floats(1, 3200), size=st.floats(1, 2000))
def test_faster_link_never_worsens_the_rpo(l1, l2, size):
    lo, hi = sorted((l1, l2))
    d_lo = solve(Params(replication_gbps=lo, params_b=size))
    d_hi = solve(Params(replication_gbps=hi, params_b=size))
    assert d_hi.value("rpo_worst_min") <= d_lo.value("rpo_worst_min") + 1e-9
    assert d_hi.value("rpo_mean_min") <= d_lo.value("rpo_mean_min") + 1e-9
    for d in (d_lo, d_hi):
        assert d.value("rpo_mean_min") < d.value("rpo_worst_min")
        # the replica is always at least one transfer old, never more than k intervals + transfer
        assert d.value("rpo_worst_min") >= d.value("replication_s") / 60


@settings(max_examples=150, deadline=None)
@given(field=st.sampled_from(["detect_min", "decide_min", "launch_min"]), a=st.floats(5, 60), b=st.floats(5, 60))
def test_every_rto_term_adds(field, a, b):
    lo, hi = sorted((a, b))
    d_lo = solve(Params(**{field: lo}))
    d_hi = solve(Params(**{field: hi}))
    assert d_hi.value("rto_min") - d_lo.value("rto_min") == pytest.approx(hi - lo, abs=1e-9)


@settings(max_examples=100, deadline=None)
@given(f1=st.floats(0.1, 1), f2=st.floats(0.1, 1))
def test_smaller_second_site_adds_days(f1, f2):
    lo, hi = sorted((f1, f2))
    assert solve(Params(second_site_fraction=lo)).value("days_added_midrun_failover") >= solve(
        Params(second_site_fraction=hi)).value("days_added_midrun_failover")


@settings(max_examples=100, deadline=None)
@given(a=st.floats(1, 90), b=st.floats(1, 90))
def test_rarer_drills_cost_less_and_risk_more(a, b):
    lo, hi = sorted((a, b))
    d_lo, d_hi = solve(Params(drill_every_days=lo)), solve(Params(drill_every_days=hi))
    assert d_hi.value("drill_gpu_hours") <= d_lo.value("drill_gpu_hours")
    assert d_hi.value("silent_break_rpo_days") >= d_lo.value("silent_break_rpo_days")


def test_page_moves_prose_with_a_knob(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("WALKTHROUGHS_DB", str(tmp_path / "apptest.duckdb"))
    at = AppTest.from_file(str(QUESTIONS["training-disaster-recovery"].page_path), default_timeout=30).run()
    assert not at.exception
    text = lambda: "\n".join(m.value for m in at.markdown)  # noqa: E731
    assert "**37.56 min**" in text()
    at.slider(key="training-disaster-recovery.interval_min").set_value(60).run()
    assert not at.exception
    # one hour between saves: worst RPO 60 + 7.56 min
    assert "**67.56 min**" in text()


def test_replication_egress_and_the_expected_value_case_by_hand():
    import math as _m

    from models.training.training_disaster_recovery import Params as _P, solve as _solve
    d = _solve(_P())
    ckpt_tb = 405e9 * 14 / 1e12  # 5.67 TB: a 405B dense model at 14 B/param
    # a 100 Gb/s link ships one in 454 s < the 30 min interval, so every checkpoint crosses: 90 d x 48 a day
    assert d.value("replicated_checkpoints") == 90 * 48 == 4320
    assert d.value("replication_egress_PB") == pytest.approx(4320 * ckpt_tb / 1000)  # 24.5 PB
    egress = 4320 * ckpt_tb * 1000 * 0.02  # GB x 0.02 USD/GB = 490k USD
    assert d.value("replication_egress_usd") == pytest.approx(egress)
    drills = 12 * 512 * 2 * 2.0  # floor(90 / 7) drills x 512 GPUs x 2 h x 2 USD
    assert d.value("drill_usd") == pytest.approx(drills)
    assert d.value("dr_cost_usd") == pytest.approx(egress + drills)
    prob = 1 - _m.exp(-0.02 * 90 / 365)  # 0.49% chance of a site loss in 90 days at 2% a year
    assert d.value("site_loss_probability_run") == pytest.approx(prob)
    run_h = 8000 * 90 * 24
    assert d.value("exposure_no_dr_gpu_hours") == pytest.approx(run_h / 2)
    saved = run_h / 2 - 8000 * (d.value("rpo_worst_min") + d.value("rto_min")) / 60
    assert d.value("dr_saves_gpu_hours") == pytest.approx(saved)
    assert d.value("dr_expected_saving_usd") == pytest.approx(prob * saved * 2.0)  # about 85k USD
    assert d.value("break_even_site_loss_probability") == pytest.approx((egress + drills) / (saved * 2.0))
    assert d.value("dr_pays_on_expected_value") == "no"  # per-GB egress outweighs a 0.5% risk
    assert d.value("worst_case_loss_no_dr_usd") == pytest.approx(run_h * 2.0)
    owned_link = _solve(_P(egress_usd_per_GB=0))  # drills alone: 24.6k USD < 85k USD expected
    assert owned_link.value("dr_pays_on_expected_value") == "yes"


def test_meta_rate_is_raw_and_multiplier_applies_after():
    # Meta's own rate: 419 / (54 x 16,384) = 0.0004736 per GPU-day, whatever the multiplier
    d = solve(Params(failure_rate_multiplier=1.9))
    assert d.value("meta_failures_per_gpu_day") == pytest.approx(0.0004736, abs=1e-7)
    # scaled to this job: 0.0004736 x 1.9 = 0.0008998
    assert d.value("failures_per_gpu_day") == pytest.approx(0.0008998, abs=1e-7)


def test_break_even_as_yearly_odds_against_the_uptime_survey_by_hand():
    import math as _m

    from models.training.training_disaster_recovery import Params as _P, solve as _solve
    d = _solve(_P())
    # running cost: egress 4,320 checkpoints x 5,670 GB x 0.02 USD/GB = 489,888 USD, plus
    # 12 drills x 512 GPUs x 2 h x 2 USD/h = 24,576 USD: 514,464 USD
    cost = 4320 * 5670 * 0.02 + 12 * 512 * 2 * 2.0
    # saved: half the run, 8,000 x 90 x 24 / 2 = 8,640,000 GPU-h, less 8,000 GPUs x (RPO 37.56 min
    # + RTO 56.89 min) = 8,000 x 94.45 / 60 = 12,593 GPU-h
    rpo = 30 + 5.67e12 * 8 / 100e9 / 60  # one interval + 453.6 s transfer = 37.56 min
    rto = 5 + 30 + 20 + 5.67e12 / 50e9 / 60  # detect, decide, launch, 113.4 s load = 56.89 min
    saved = 8000 * 90 * 24 / 2 - 8000 * (rpo + rto) / 60
    be_run = cost / (saved * 2.0)  # about 2.98% during the 90-day run
    be_year = -_m.log(1 - be_run) * 365 / 90  # invert 1 - exp(-r x 90/365): about 12.3% a year
    assert d.value("break_even_site_loss_per_year") == pytest.approx(be_year, rel=1e-3)
    assert 0.12 < be_year < 0.125
    # one organization in five reports a serious outage in three years: 1 - 0.8^(1/3) = 7.17% a year
    assert d.value("uptime_serious_outage_share_3y") == pytest.approx(0.2)
    assert d.value("uptime_serious_outage_per_year") == pytest.approx(1 - 0.8 ** (1 / 3))
    assert d.value("break_even_over_uptime_rate") == pytest.approx(be_year / (1 - 0.8 ** (1 / 3)), rel=1e-3)
    # a running cost above what a certain loss would save has no break-even odds
    # 512 GPUs for 7 days save at most 512 x 168 / 2 = 43,008 GPU-h, 21,504 USD at 0.5 USD/h; shipping a
    # 28 TB checkpoint (2,000 B params x 14 B) every 5 min at 0.1 USD/GB costs millions
    costly = _solve(_P(gpus=512, run_days=7, params_b=2000, interval_min=5, replication_gbps=3200,
                       usd_per_gpu_hour=0.5, egress_usd_per_GB=0.1))
    assert costly.value("break_even_site_loss_probability") > 1
    assert _m.isinf(costly.value("break_even_site_loss_per_year"))
