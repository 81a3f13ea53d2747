"""usage-billing-pipeline: the scenario by hand, a variant by hand, directions, the six faults and
their guards on the twelve-event demo worked by hand, and the content's placeholders."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models.content import load_content
from models.platform import usage_billing_pipeline as m
from models.platform.usage_billing_pipeline import Params, solve

ROOT = Path(__file__).resolve().parents[2]
CONTENT = ROOT / "content" / "platform" / "usage-billing-pipeline.md"
SOME = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MONTH_S = 30 * 86_400


def v(d, key):
    return d.value(key)


# --- the scenario by hand -----------------------------------------------------------------------


def test_scenario_by_hand():
    d = solve(Params())
    assert v(d, "seconds_per_month") == MONTH_S == 2_592_000
    assert v(d, "events_per_month") == pytest.approx(5000 * MONTH_S) == pytest.approx(1.296e10)
    assert v(d, "peak_events_per_s") == pytest.approx(12_500)
    # ceil(12,500 × 2 / 1,000) = 25
    assert v(d, "kafka_partitions") == 25
    assert v(d, "peak_ingest_Bps") == pytest.approx(12_500 * 400)  # 5 MB/s
    assert v(d, "kafka_retained_bytes") == pytest.approx(5000 * 400 * 7 * 86_400 * 3)
    # 5,000/s × 86,400 s = 432 M keys × 48 B = 20.7 GB
    assert v(d, "dedup_keys_in_window") == pytest.approx(432e6)
    assert v(d, "dedup_index_GB") == pytest.approx(432e6 * 48 / 1e9) == pytest.approx(20.736)
    assert v(d, "bloom_prefilter_GB") == pytest.approx(432e6 * (math.log(100) / math.log(2) ** 2) / 8 / 1e9)
    # 1,500 × $3/M + 400 × $15/M = $0.0045 + $0.006
    assert v(d, "revenue_per_request_usd") == pytest.approx(0.0105)
    assert v(d, "revenue_per_month_usd") == pytest.approx(1.296e10 * 0.0105)  # $136 M
    assert v(d, "dropped_events_per_month") == pytest.approx(1.296e7)
    assert v(d, "revenue_lost_to_drops_per_month_usd") == pytest.approx(1.296e7 * 0.0105) == pytest.approx(136_080)
    assert v(d, "overbilled_without_dedup_per_month_usd") == pytest.approx(2.592e7 * 0.0105)
    assert v(d, "missing_events_per_hour") == pytest.approx(5000 * 3600 * 0.001) == 18_000
    # 20,000 × 2 × 3 × 720 = 86.4 M cells; a quarter see traffic
    assert v(d, "rollup_cells_per_month") == pytest.approx(86.4e6)
    assert v(d, "rollup_rows_per_month") == pytest.approx(21.6e6)
    assert v(d, "rollup_compression") == pytest.approx(1.296e10 / 21.6e6) == pytest.approx(600)


def test_dedup_state_per_partition_and_the_spend_cap_by_hand():
    d = solve(Params())
    # Keys are partitioned by request id, so each of the 25 consumers holds 1/25 of the window's keys:
    # 432 M / 25 = 17.28 M keys, 20.736 GB / 25 = 829 MB.
    assert v(d, "dedup_keys_per_partition") == pytest.approx(432e6 / 25) == pytest.approx(17.28e6)
    assert v(d, "dedup_index_per_partition_GB") == pytest.approx(20.736 / 25)
    # The capped tenant sends 2% of 5,000 req/s = 100 req/s at $0.0105: $1.05 a second.
    assert v(d, "capped_tenant_usd_per_s") == pytest.approx(100 * 0.0105) == pytest.approx(1.05)
    # Checked against hourly rollups it can run an hour past the cap; with a 5 s counter, 5 s.
    assert v(d, "cap_overshoot_rollup_usd") == pytest.approx(1.05 * 3600) == pytest.approx(3780)
    assert v(d, "cap_overshoot_counter_usd") == pytest.approx(1.05 * 5)
    # A hard cap reserves the worst case: 1,500 in at $3/M + 4,096 out at $15/M = $0.0045 + $0.06144.
    assert v(d, "cap_reservation_usd") == pytest.approx(0.0045 + 0.06144)
    assert v(d, "reservation_over_actual") == pytest.approx(0.06594 / 0.0105)  # 6.28x


def test_spend_cap_variant_by_hand():
    d = solve(Params(requests_per_s=1000, capped_tenant_share=0.1, spend_counter_lag_s=30,
                     mean_input_tokens=1000, mean_output_tokens=1000, max_output_tokens=2000,
                     input_usd_per_mtok=1, output_usd_per_mtok=10))
    # 100 req/s of $0.001 + $0.01 = $0.011: $1.10 a second; 30 s behind, $33 past the cap.
    assert v(d, "capped_tenant_usd_per_s") == pytest.approx(1.1)
    assert v(d, "cap_overshoot_counter_usd") == pytest.approx(33)
    assert v(d, "cap_reservation_usd") == pytest.approx(0.001 + 0.02)
    assert v(d, "reservation_over_actual") == pytest.approx(0.021 / 0.011)


def test_forwarding_to_a_stripe_style_meter_by_hand():
    d = solve(Params())
    # Peak 5,000 req/s x 1 event x 2.5 = 12,500 events/s against Stripe's 10,000/s stream: 125%
    assert v(d, "stripe_stream_events_per_s") == 10_000
    assert v(d, "peak_share_of_stripe_stream") == pytest.approx(12_500 / 10_000)
    # 20,000 tenants x 2 models x 3 meters x 25% active = 30,000 rows close each hour
    assert v(d, "rollup_rows_per_hour") == pytest.approx(20_000 * 2 * 3 * 0.25)
    d = solve(Params(requests_per_s=1500, events_per_request=1.5, peak_to_average=3.5))
    assert v(d, "peak_share_of_stripe_stream") == pytest.approx(1500 * 1.5 * 3.5 / 10_000)  # 78.75%


def test_seed_claims_a_drop_costs_money_and_a_duplicate_overbills():
    d = solve(Params())
    assert v(d, "revenue_lost_to_drops_per_month_usd") > 0
    assert v(d, "overbilled_without_dedup_per_month_usd") > 0
    assert solve(Params(drop_rate=0.000001)).value("revenue_lost_to_drops_per_month_usd") < v(
        d, "revenue_lost_to_drops_per_month_usd")


def test_variant_by_hand():
    p = Params(requests_per_s=800, events_per_request=2, peak_to_average=3, partition_events_per_s=500,
               partition_headroom=1.5, dedup_window_h=168, dedup_bytes_per_key=64, mean_input_tokens=4000,
               mean_output_tokens=1000, input_usd_per_mtok=1, output_usd_per_mtok=4, drop_rate=0.0005,
               tenants=5000, models_per_tenant=1.5, meters_per_model=2, hourly_active_fraction=0.1)
    d = solve(p)
    assert v(d, "events_per_s") == pytest.approx(1600)
    assert v(d, "events_per_month") == pytest.approx(1600 * 2_592_000)  # 4.147e9
    # 1,600 × 3 = 4,800 at peak; × 1.5 / 500 = 14.4 -> 15
    assert v(d, "kafka_partitions") == 15
    # 1,600 × 168 × 3,600 = 967.68 M keys × 64 B = 61.93 GB
    assert v(d, "dedup_index_GB") == pytest.approx(967.68e6 * 64 / 1e9)
    # 4,000 × $1/M + 1,000 × $4/M = $0.008 per request, $0.004 per event
    assert v(d, "revenue_per_event_usd") == pytest.approx(0.004)
    assert v(d, "revenue_lost_to_drops_per_month_usd") == pytest.approx(1600 * 2_592_000 * 0.0005 * 0.004)
    # 5,000 × 1.5 × 2 × 720 × 0.1 = 1.08 M rows
    assert v(d, "rollup_rows_per_month") == pytest.approx(1.08e6)


def test_partitions_round_up_but_not_on_an_exact_division():
    assert solve(Params(requests_per_s=1000, peak_to_average=2, partition_headroom=2,
                        partition_events_per_s=1000)).value("kafka_partitions") == 4
    assert solve(Params(requests_per_s=1001, peak_to_average=2, partition_headroom=2,
                        partition_events_per_s=1000)).value("kafka_partitions") == 5


# --- directions ----------------------------------------------------------------------------------


@SOME
@given(a=st.floats(10, 1e6), b=st.floats(10, 1e6))
def test_more_traffic_means_more_of_everything(a, b):
    lo, hi = sorted((a, b))
    d_lo, d_hi = solve(Params(requests_per_s=lo)), solve(Params(requests_per_s=hi))
    for key in ("events_per_month", "kafka_partitions", "dedup_index_GB", "revenue_lost_to_drops_per_month_usd",
                "missing_events_per_hour"):
        assert d_hi.value(key) >= d_lo.value(key)
    assert d_hi.value("rollup_rows_per_month") == d_lo.value("rollup_rows_per_month")  # rollups follow tenants


@SOME
@given(w1=st.floats(1, 720), w2=st.floats(1, 720))
def test_a_longer_window_costs_more_and_the_bloom_filter_stays_smaller(w1, w2):
    lo, hi = sorted((w1, w2))
    d_lo, d_hi = solve(Params(dedup_window_h=lo)), solve(Params(dedup_window_h=hi))
    assert d_hi.value("dedup_index_GB") >= d_lo.value("dedup_index_GB")
    assert d_lo.value("bloom_prefilter_GB") < d_lo.value("dedup_index_GB")


@SOME
@given(r1=st.floats(1e-6, 0.05), r2=st.floats(1e-6, 0.05))
def test_more_drops_lose_more(r1, r2):
    lo, hi = sorted((r1, r2))
    assert solve(Params(drop_rate=hi)).value("revenue_lost_to_drops_per_month_usd") >= solve(
        Params(drop_rate=lo)).value("revenue_lost_to_drops_per_month_usd")


@SOME
@given(k=st.floats(1, 20))
def test_partial_events_split_revenue_not_multiply_it(k):
    d1, dk = solve(Params()), solve(Params(events_per_request=k))
    assert dk.value("revenue_per_month_usd") == pytest.approx(d1.value("revenue_per_month_usd"))
    assert dk.value("revenue_lost_to_drops_per_month_usd") == pytest.approx(
        d1.value("revenue_lost_to_drops_per_month_usd"))
    assert dk.value("events_per_month") == pytest.approx(k * d1.value("events_per_month"))


# --- the demo, by hand ---------------------------------------------------------------------------

# Per-event prices worked by hand from the price list (USD per million tokens, in / out):
# large v1 3 / 15, large v2 (from Jan 20, with the price change) 2 / 8, small 0.25 / 1.25.
E01 = 0.12 * 3 + 0.03 * 15        # 0.81   acme (ak-acme-prod)
E02 = 0.8 * 0.25 + 0.2 * 1.25     # 0.45   globex
E03 = 0.2 * 3 + 0.04 * 15         # 1.20   ak-shared-7, Jan 9
E04 = 0.1 * 3 + 0.02 * 15         # 0.60   globex, 09:59:30
E05 = 0.4 * 0.25 + 0.1 * 1.25     # 0.225  acme, 10:00:20
E06 = 0.15 * 3 + 0.05 * 15        # 1.20   acme, eng-2 Jan 15 14:10
E07 = 0.6 * 0.25 + 0.12 * 1.25    # 0.30   globex, eng-2 Jan 15 14:35
E08 = 0.1 * 3 + 0.025 * 15        # 0.675  ak-shared-7, Jan 17
E09 = 0.25 * 3 + 0.06 * 15        # 1.65   ak-shared-7, Jan 22 (v2: 0.5 + 0.48 = 0.98)
E10 = 0.18 * 3 + 0.045 * 15       # 1.215  acme, Jan 26 (v2: 0.36 + 0.36 = 0.72)
E11 = 0.09 * 3 + 0.03 * 15        # 0.72   globex, Jan 31 23:58 (v2: 0.18 + 0.24 = 0.42)
E12 = 0.5 * 0.25 + 0.1 * 1.25     # 0.25   acme, February
E09_V2, E10_V2, E11_V2 = 0.98, 0.72, 0.42

ACME_JAN = E01 + E03 + E05 + E06 + E08 + E09 + E10  # ak-shared-7 stays with acme without the move
GLOBEX_JAN = E02 + E04 + E07 + E11


def _approx(d):
    return {k: pytest.approx(val) for k, val in d.items()}


def test_truth_without_any_change_by_hand():
    assert m.truth() == _approx({("acme", "2025-01"): ACME_JAN, ("globex", "2025-01"): GLOBEX_JAN,
                                 ("acme", "2025-02"): E12})
    assert ACME_JAN == pytest.approx(6.975) and GLOBEX_JAN == pytest.approx(2.07)


def test_each_fault_alone_unguarded_by_hand():
    jan = {"acme": ACME_JAN, "globex": GLOBEX_JAN}
    cases = {
        "drop": {"acme": ACME_JAN - E06},                        # E06 never arrives
        "duplicate": {"acme": ACME_JAN + E10},                   # E10 billed twice
        "late": {"globex": GLOBEX_JAN - E11},                    # E11 arrives Feb 1 06:00, discarded
        "reordered": {"globex": GLOBEX_JAN - E04},               # E04 arrives at 10:00:50, behind the watermark
        # priced at close with v2: every large event of January at the new price
        "mis-priced": {"acme": (0.12 * 2 + 0.03 * 8) + (0.2 * 2 + 0.04 * 8) + E05
                       + (0.15 * 2 + 0.05 * 8) + (0.1 * 2 + 0.025 * 8) + E09_V2 + E10_V2,
                       "globex": E02 + (0.1 * 2 + 0.02 * 8) + E07 + E11_V2},
        # attributed at close: every ak-shared-7 event to globex
        "mis-attributed": {"acme": ACME_JAN - E03 - E08 - E09, "globex": GLOBEX_JAN + E03 + E08 + E09},
    }
    for fault, changed in cases.items():
        want = {("acme", "2025-01"): changed.get("acme", jan["acme"]),
                ("globex", "2025-01"): changed.get("globex", jan["globex"]), ("acme", "2025-02"): E12}
        assert m.bill({fault}, set()).totals == _approx(want), fault


def test_the_truth_moves_with_the_price_change_and_the_key_move():
    t = m.truth({"mis-priced", "mis-attributed"})
    # after Jan 18 ak-shared-7 is globex's; after Jan 20 large is priced at v2
    assert t[("acme", "2025-01")] == pytest.approx(E01 + E03 + E05 + E06 + E08 + E10_V2)
    assert t[("globex", "2025-01")] == pytest.approx(E02 + E04 + E07 + E09_V2 + E11_V2)
    # the key move changes who pays, not how much is paid
    assert sum(m.truth({"mis-attributed"}).values()) == pytest.approx(sum(m.truth().values()))


def test_each_guard_repairs_its_fault():
    for fault in ("duplicate", "late", "reordered", "mis-priced", "mis-attributed"):
        assert m.bill({fault}, {m.GUARD_FOR[fault]}).totals == _approx(m.truth({fault})), fault
    # the replay is itself late: alone it is discarded, with the late window it lands
    assert m.bill({"drop"}, {"replay"}).totals == _approx(m.bill({"drop"}, set()).totals)
    assert m.bill({"drop"}, {"replay", "watermark", "dedup"}).totals == _approx(m.truth())
    # without dedup the replayed cell bills E07 twice: the drop is repaired and globex overbilled
    no_dedup = m.bill({"drop"}, {"replay", "watermark"}).totals
    assert no_dedup[("acme", "2025-01")] == pytest.approx(ACME_JAN)
    assert no_dedup[("globex", "2025-01")] == pytest.approx(GLOBEX_JAN + E07)


def test_all_guards_repair_every_combination_of_faults():
    for r in range(len(m.FAULTS) + 1):
        for faults in itertools.combinations(m.FAULTS, r):
            assert m.bill(set(faults), set(m.GUARDS)).totals == _approx(m.truth(set(faults))), faults


def test_reconciliation_sees_counts_but_not_prices_or_tenants():
    unguarded = m.bill(set(m.FAULTS), set())
    gaps = {(c.engine, c.hour.day, c.hour.hour): c.gap for c in unguarded.cells}
    assert gaps == {
        ("eng-2", 15, 14): -(150_000 + 50_000),   # E06 dropped
        ("eng-2", 26, 18): +(180_000 + 45_000),   # E10 twice
        ("eng-1", 31, 23): -(90_000 + 30_000),    # E11 discarded as late
        ("eng-2", 12, 9): -(100_000 + 20_000),    # E04 discarded behind the watermark
    }
    assert unguarded.lost == ("E06",)
    wrong_but_reconciled = m.bill({"mis-priced", "mis-attributed"}, set())
    assert wrong_but_reconciled.cells == ()
    assert wrong_but_reconciled.totals != _approx(m.truth({"mis-priced", "mis-attributed"}))


def test_no_fault_means_no_guard_changes_anything():
    for r in range(len(m.GUARDS) + 1):
        for guards in itertools.combinations(m.GUARDS, r):
            assert m.bill(set(), set(guards)).totals == _approx(m.truth()), guards


@settings(max_examples=200, deadline=None)
@given(faults=st.sets(st.sampled_from(m.FAULTS)), guards=st.sets(st.sampled_from(m.GUARDS)))
def test_the_bill_is_deterministic_and_dedup_never_bills_a_key_twice(faults, guards):
    a, b = m.bill(faults, guards), m.bill(faults, guards)
    assert a == b
    billed = [ln.key for ln in a.lines if ln.outcome == "billed"]
    if "dedup" in guards:
        assert len(billed) == len(set(billed))
    # every event the engines counted either reached the consumer or is reported lost
    assert {ln.key for ln in a.lines} | set(a.lost) == set(m.BY_KEY)
    # the comparison's unguarded side is the bill with no guards
    assert m.compare(faults, guards).unguarded == m.bill(faults, set())


def test_unknown_fault_is_refused():
    with pytest.raises(ValueError):
        m.bill({"flood"}, set())


# --- the page's own figures and prose (the contract every page meets: tests/test_contract.py) ---


def test_the_page_draws_its_figures():
    content = load_content(CONTENT)
    assert set(content.directives()) == {("diagram", "billing_path"), ("chart", "dedup_vs_window"),
                                         ("chart", "drops_cost"), ("chart", "partitions_vs_traffic"),
                                         ("sim", "six_faults")}


def test_dedup_window_against_the_replay_horizon_by_hand():
    d = solve(Params())  # 24 h of dedup against 7 days (168 h) of Kafka retention
    assert d.value("dedup_covers_retention") != "yes"
    week = solve(Params(dedup_window_h=7 * 24))
    assert week.value("dedup_covers_retention") == "yes"
