"""data-platform-sensitivity: the seed's storage formula (events/s x bytes/event x retention) by hand,
tiers and backfill by hand, a variant by hand, directions, the access policy checked by hand and by
property (no role ever sees a column above its clearance in clear), and the content's placeholders."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.product import data_platform_sensitivity as m
from models.product.data_platform_sensitivity import Column, Params, Role, apply_policy, solve
from models.registry import QUESTIONS

SLUG = "data-platform-sensitivity"


def v(d, key):
    return d.value(key)


# --- the seed's storage formula, by hand ------------------------------------------------------------


def test_storage_from_events_bytes_retention():
    d = solve(Params())
    # events/s x bytes/event x 86,400 s: 100,000 x 1,000 B x 86,400 = 8.64e12 B = 8.64 TB a day
    assert v(d, "events_per_day") == pytest.approx(100_000 * 86_400)
    assert v(d, "raw_per_day_TB") == pytest.approx(100_000 * 1000 * 86_400 / 1e12) == pytest.approx(8.64)
    assert v(d, "raw_per_hour_TB") == pytest.approx(0.36)
    # x retention, literally: 8.64 x 365 = 3,153.6 TB of bronze; x 1.5 with derived tables = 4,730.4 TB
    assert v(d, "stored_uncompressed_TB") == pytest.approx(8.64 * 365 * 1.5)
    # with 5x compression: 1.728 TB a day, 630.72 TB of bronze, 946.08 TB with derived tables, one copy
    assert v(d, "compressed_per_day_TB") == pytest.approx(1.728)
    assert v(d, "bronze_retained_TB") == pytest.approx(630.72)
    assert v(d, "stored_TB") == pytest.approx(8.64 * 365 / 5 * 1.5 * 1) == pytest.approx(946.08)


def test_tiers_and_cost_by_hand():
    d = solve(Params())
    # 30 of 365 days hot: 946.08 x 30/365 = 77.76 TB hot, 868.32 TB cold
    assert v(d, "hot_TB") == pytest.approx(77.76)
    assert v(d, "cold_TB") == pytest.approx(868.32)
    # 77.76 x $23 + 868.32 x $4 = 1,788.48 + 3,473.28 = $5,261.76 a month
    assert v(d, "storage_cost_per_month_usd") == pytest.approx(77.76 * 23 + 868.32 * 4) == pytest.approx(5261.76)
    assert v(d, "all_hot_cost_per_month_usd") == pytest.approx(946.08 * 23)  # $21,759.84
    assert v(d, "tiering_saving_share") == pytest.approx(1 - 5261.76 / 21759.84)
    # retention is one year, so the bill one year in is already the steady state
    assert v(d, "cost_after_one_year_usd") == pytest.approx(5261.76)


def test_ingestion_and_audit_by_hand():
    d = solve(Params())
    assert v(d, "replay_buffer_TB") == pytest.approx(1.728 * 7 * 3)  # 36.288 TB
    assert v(d, "duplicates_per_day") == pytest.approx(8.64e9 * 0.001)  # 8.64 M
    assert v(d, "dedup_state_GB") == pytest.approx(100_000 * 3600 * 16 / 1e9)  # 5.76 GB
    # 1,440 commits a day x 16 tasks x 8 partitions each
    assert v(d, "streaming_files_per_day") == pytest.approx(86_400 / 60 * 16 * 8)  # 184,320 files
    assert v(d, "streaming_file_MB") == pytest.approx(1.728e6 / 184_320)  # 9.375 MB: small
    assert v(d, "files_per_compacted_file") == pytest.approx(512 / 9.375)  # 54.6 merged into one
    assert v(d, "small_files_verdict").startswith("small")
    assert v(d, "compacted_files_per_day") == math.ceil(1.728e6 / 512) == 3375
    assert v(d, "audit_per_year_GB") == pytest.approx(200_000 * 1000 * 365 / 1e9)  # 73 GB


def test_one_commit_per_hour_from_one_task_is_not_a_small_file_problem():
    d = solve(Params(commit_interval_s=3600, writer_tasks=1, partitions_per_commit=1))
    # 24 files a day of 1.728 TB / 24 = 72 GB each: far above 512 MB
    assert v(d, "streaming_file_MB") == pytest.approx(1.728e6 / 24)
    assert v(d, "small_files_verdict").startswith("already near")


def test_erasing_one_user_by_hand():
    d = solve(Params())
    # 120 active days x 3,375 files a day, each 512 MB, when files are sorted by time
    assert v(d, "erasure_days") == pytest.approx(120)
    assert v(d, "erasure_files_unclustered") == 120 * 3375  # 405,000 files
    assert v(d, "erasure_rewrite_TB_unclustered") == pytest.approx(405_000 * 512 / 1e6)  # 207.4 TB
    assert v(d, "erasure_rewrite_GB_clustered") == pytest.approx(120 * 512 / 1e3)  # 61.44 GB, one file a day
    short = solve(Params(retention_days=30))
    assert v(short, "erasure_days") == pytest.approx(30)  # cannot span more days than are kept


def test_files_one_erasure_touches_by_hand():
    d = solve(Params())
    # 200 events a day dropped at random into 3,375 files: 3,375 x (1 - (1 - 1/3,375)^200)
    # ln(1 - 1/3,375) = -2.963402e-4; x 200 = -0.0592680; e^that = 0.942454; 1 - it = 0.057546
    # -> 194.2 distinct files a day (a few of the 200 events share a file)
    assert v(d, "erasure_files_per_day_expected") == pytest.approx(3375 * 0.057546, rel=1e-4)  # 194.2
    assert v(d, "erasure_files_expected") == pytest.approx(120 * 194.217, rel=1e-4)  # 23,306 files
    assert v(d, "erasure_rewrite_TB_expected") == pytest.approx(23_306 * 512 / 1e6, rel=1e-4)  # 11.93 TB
    # a user with far more events than files is in every file: the worst case above
    busy = solve(Params(erasure_events_per_active_day=100_000))
    assert v(busy, "erasure_files_expected") == pytest.approx(v(busy, "erasure_files_unclustered"), rel=1e-6)
    # one event a day touches exactly one file a day
    one = solve(Params(erasure_events_per_active_day=1))
    assert v(one, "erasure_files_expected") == pytest.approx(120)


def test_blast_radius_by_hand():
    d = solve(Params())
    # backfill_hours = data volume / backfill throughput = (0.36 TB/h x 6 h) / 1 TB/h = 2.16 h
    assert v(d, "bad_data_TB") == pytest.approx(0.36 * 6)
    assert v(d, "backfill_hours") == pytest.approx(2.16)
    assert v(d, "partitions_to_rewrite") == 6 * 12  # hourly partitions x downstream tables
    assert v(d, "backfill_hours_per_detection_hour") == pytest.approx(0.36)


def test_worked_arithmetic_reads_like_the_formula():
    d = solve(Params())
    assert d["raw_per_day_TB"].worked() == "8.64 × 10⁹ events × 1,000 B = 8.64 TB"  # 100,000 events/s × 86,400 s
    assert d["backfill_hours"].worked() == "2.16 TB / 1 TB/h = 2.16 h"


# --- a variant, by hand ------------------------------------------------------------------------------


def test_variant_seven_years_two_copies_slow_detection():
    p = Params(events_per_s=20_000, bytes_per_event=2000, retention_days=730, compression_ratio=8,
               derived_fraction=1.0, copies=2, hot_days=60, hot_price_usd_per_TB_month=20,
               cold_price_usd_per_TB_month=2, detection_delay_h=30.5, downstream_tables=5,
               backfill_TB_per_h=0.5)
    d = solve(p)
    # 20,000 x 2,000 B x 86,400 = 3.456 TB a day
    assert v(d, "raw_per_day_TB") == pytest.approx(3.456)
    # / 8 = 0.432 TB a day; x 730 = 315.36 TB; x 2 layers x 2 copies = 1,261.44 TB
    assert v(d, "stored_TB") == pytest.approx(3.456 / 8 * 730 * 2 * 2) == pytest.approx(1261.44)
    # hot: 60/730 of it = 103.68 TB at $20; cold: 1,157.76 TB at $2
    assert v(d, "hot_TB") == pytest.approx(103.68)
    assert v(d, "storage_cost_per_month_usd") == pytest.approx(103.68 * 20 + 1157.76 * 2)  # $4,389.12
    # one year in: 365 days exist, 60 hot and 305 cold, 0.432 x 4 = 1.728 TB stored a day
    assert v(d, "cost_after_one_year_usd") == pytest.approx(1.728 * (60 * 20 + 305 * 2))  # $3,127.68
    # backfill: 0.144 TB/h x 30.5 h = 4.392 TB at 0.5 TB/h = 8.784 h; ceil(30.5) = 31 hours x 5 tables
    assert v(d, "backfill_hours") == pytest.approx(3.456 / 24 * 30.5 / 0.5) == pytest.approx(8.784)
    assert v(d, "partitions_to_rewrite") == 31 * 5


def test_hot_window_longer_than_retention_is_all_hot():
    d = solve(Params(retention_days=20, hot_days=30))
    assert v(d, "hot_days_effective") == 20
    assert v(d, "cold_TB") == pytest.approx(0)
    assert v(d, "storage_cost_per_month_usd") == pytest.approx(v(d, "all_hot_cost_per_month_usd"))


def test_found_a_week_later_preset_scales_with_the_delay():
    preset = next(pr for pr in QUESTIONS[SLUG].content.presets if pr.name == "Found a week later")
    a = solve(Params())
    b = solve(Params(**{**Params().model_dump(), **preset.values}))
    assert v(b, "backfill_hours") / v(a, "backfill_hours") == pytest.approx(168 / 6)
    assert v(b, "partitions_to_rewrite") / v(a, "partitions_to_rewrite") == pytest.approx(168 / 6)


# --- the access policy, by hand ----------------------------------------------------------------------


def _treatments(role):
    return {c.name: how for c, how in apply_policy(role).columns}


def test_dataset_label_is_its_highest_column():
    assert m.dataset_label() == "restricted"
    assert m.dataset_label((Column("a", "public"), Column("b", "internal"))) == "internal"


def test_analyst_by_hand():
    r = apply_policy("analyst")  # clearance internal, all rows
    t = _treatments("analyst")
    assert [n for n, how in t.items() if how == "clear"] == ["order_id", "order_date", "region", "product", "vendor"]
    assert t["amount_usd"] == "masked" and t["customer_id"] == "masked"  # confidential: one level up, has a mask
    assert t["customer_email"] == "dropped" and t["card_last4"] == "dropped"  # restricted: two levels up
    assert len(r.rows) == 5 and r.rows_by_label == 1 and r.rows_by_filter == 0  # o-1005 is under legal hold
    first = r.rows[0]
    assert first["amount_usd"] == "0–50"  # $42 bucketed
    assert first["customer_id"].startswith("tok_") and first["customer_id"] != "c-17"
    assert "customer_email" not in first and "card_last4" not in first
    # the same customer gets the same token, so distinct counts and joins survive masking
    by_order = {row["order_id"]: row for row in r.rows}
    assert by_order["o-1001"]["customer_id"] == by_order["o-1003"]["customer_id"]
    assert by_order["o-1001"]["customer_id"] != by_order["o-1002"]["customer_id"]


def test_partner_by_hand():
    r = apply_policy("partner (Acme)")  # clearance public, vendor = 'Acme'
    t = _treatments("partner (Acme)")
    assert t["order_id"] == "masked"  # internal: one level up, tokenised
    assert t["amount_usd"] == "dropped" and t["customer_id"] == "dropped"  # two levels up
    assert [row["product"] for row in r.rows] == ["kettle", "kettle", "desk"]  # o-1001, o-1004, o-1006
    assert r.rows_by_filter == 2 and r.rows_by_label == 1  # two Brightly rows; one Acme row on hold
    assert all(row["vendor"] == "Acme" for row in r.rows)


def test_support_agent_by_hand():
    r = apply_policy("support agent (EU)")  # clearance confidential, region = 'EU'
    assert [row["order_id"] for row in r.rows] == ["o-1001", "o-1003", "o-1006"]
    assert r.rows[0]["customer_email"] == "***@example.de"  # restricted, masked to its domain
    assert r.rows[0]["amount_usd"] == 42.0 and r.rows[0]["customer_id"] == "c-17"  # confidential in clear
    assert "card_last4" not in r.rows[0]  # restricted without a masked form


def test_privacy_officer_sees_everything_and_the_audit_says_so():
    r = apply_policy("privacy officer")
    assert len(r.rows) == len(m.SAMPLE_ROWS)
    assert r.rows[4]["card_last4"] == "5150"  # the legal-hold row, in clear
    assert r.audit["columns_masked"] == [] and r.audit["columns_dropped"] == []
    assert r.audit["rows_returned"] == 6 and r.audit["rows_withheld"] == 0


def test_audit_record_matches_what_was_returned():
    for name in m.ROLES:
        r = apply_policy(name)
        a = r.audit
        assert a["dataset"] == m.DATASET and a["dataset_label"] == "restricted"
        assert a["clearance"] == m.ROLES[name].clearance and a["purpose"]
        returned = set(r.rows[0]) if r.rows else set(a["columns_clear"]) | set(a["columns_masked"])
        assert returned == set(a["columns_clear"]) | set(a["columns_masked"])
        assert a["rows_returned"] + a["rows_withheld"] == len(m.SAMPLE_ROWS)
        assert set(a["columns_clear"]) | set(a["columns_masked"]) | set(a["columns_dropped"]) == {
            c.name for c in m.COLUMNS}


def test_masks():
    assert m._bucket(42) == "0–50" and m._bucket(310) == "200–1000" and m._bucket(1450) == "1000+"
    assert m._email_domain("lena@example.de") == "***@example.de"
    assert m._token("c-17") == m._token("c-17") != m._token("c-23")


# --- the policy, by property: a role never sees a column above its clearance in clear --------------

levels = st.sampled_from(m.LEVELS)
masks = st.sampled_from(["", "token", "bucket", "domain"])
regions = st.sampled_from(["EU", "US", "APAC"])


@st.composite
def tables(draw):
    n_cols = draw(st.integers(1, 6))
    cols = tuple(Column(f"c{i}", draw(levels), draw(masks)) for i in range(n_cols))
    n_rows = draw(st.integers(0, 8))
    rows = tuple(
        {**{c.name: draw(st.integers(0, 5000)) for c in cols}, "region": draw(regions), "row_label": draw(levels)}
        for _ in range(n_rows)
    )
    return cols, rows


@settings(max_examples=300, deadline=None)
@given(table=tables(), clearance=levels, region=st.one_of(st.none(), regions))
def test_no_clear_value_above_clearance(table, clearance, region):
    cols, rows = table
    role = Role("r", clearance, "test", "region filter",
                (lambda row: True) if region is None else (lambda row, rg=region: row["region"] == rg))
    r = apply_policy(role, rows, cols)
    cap = m.RANK[clearance]
    by_name = {c.name: c for c in cols}
    for c, how in r.columns:
        gap = m.RANK[c.label] - cap
        assert how == ("clear" if gap <= 0 else "masked" if gap == 1 and c.mask else "dropped")
    for out in r.rows:
        for name, value in out.items():
            col = by_name[name]
            if m.RANK[col.label] > cap:
                assert m.RANK[col.label] == cap + 1 and col.mask  # only a masked form, one level up
                assert isinstance(value, str)  # every mask returns a string, never the raw number
    # rows: exactly those within clearance that pass the filter
    expected = [row for row in rows if m.RANK[row["row_label"]] <= cap and (region is None or row["region"] == region)]
    assert len(r.rows) == len(expected)
    assert r.rows_by_label + r.rows_by_filter + len(r.rows) == len(rows)


@settings(max_examples=100, deadline=None)
@given(table=tables())
def test_higher_clearance_never_sees_less(table):
    cols, rows = table
    seen = []
    for level in m.LEVELS:
        r = apply_policy(Role("r", level, "", "all rows", lambda row: True), rows, cols)
        seen.append(({c.name for c, how in r.columns if how == "clear"}, len(r.rows)))
    for (clear_a, n_a), (clear_b, n_b) in zip(seen, seen[1:]):
        assert clear_a <= clear_b and n_a <= n_b


# --- moves the right way -----------------------------------------------------------------------------

scenarios = st.builds(
    Params,
    events_per_s=st.floats(100, 10_000_000),
    bytes_per_event=st.floats(50, 100_000),
    retention_days=st.floats(7, 3650),
    compression_ratio=st.floats(1, 20),
    derived_fraction=st.floats(0, 3),
    copies=st.integers(1, 3),
    hot_days=st.floats(1, 365),
    hot_price_usd_per_TB_month=st.floats(1, 200),
    cold_price_usd_per_TB_month=st.floats(0.5, 50),
    detection_delay_h=st.floats(0.25, 720),
    backfill_TB_per_h=st.floats(0.05, 100),
)


@settings(max_examples=150, deadline=None)
@given(p=scenarios, factor=st.floats(1.01, 10))
def test_more_events_never_cost_less(p, factor):
    more = Params(**{**p.model_dump(), "events_per_s": min(p.events_per_s * factor, 10_000_000)})
    a, b = solve(p), solve(more)
    for key in ("raw_per_day_TB", "stored_TB", "storage_cost_per_month_usd", "backfill_hours", "replay_buffer_TB"):
        assert v(b, key) >= v(a, key) * (1 - 1e-12), key


@settings(max_examples=150, deadline=None)
@given(p=scenarios, factor=st.floats(1.01, 10))
def test_better_compression_never_stores_more(p, factor):
    better = Params(**{**p.model_dump(), "compression_ratio": min(p.compression_ratio * factor, 20)})
    a, b = solve(p), solve(better)
    for key in ("stored_TB", "storage_cost_per_month_usd", "compressed_per_day_TB"):
        assert v(b, key) <= v(a, key) * (1 + 1e-12), key
    assert v(b, "raw_per_day_TB") == v(a, "raw_per_day_TB")
    assert v(b, "stored_uncompressed_TB") == v(a, "stored_uncompressed_TB")


@settings(max_examples=150, deadline=None)
@given(p=scenarios, factor=st.floats(1.01, 10))
def test_later_detection_never_shrinks_the_blast_radius(p, factor):
    later = Params(**{**p.model_dump(), "detection_delay_h": min(p.detection_delay_h * factor, 720)})
    a, b = solve(p), solve(later)
    for key in ("bad_data_TB", "backfill_hours", "partitions_to_rewrite"):
        assert v(b, key) >= v(a, key), key


@settings(max_examples=200, deadline=None)
@given(p=scenarios)
def test_orderings_that_always_hold(p):
    d = solve(p)
    tiny = 1e-9
    assert v(d, "stored_TB") <= v(d, "stored_uncompressed_TB") * (1 + tiny)
    assert v(d, "hot_TB") + v(d, "cold_TB") == pytest.approx(v(d, "stored_TB"))
    assert v(d, "cold_TB") >= -tiny
    cheaper_cold = p.cold_price_usd_per_TB_month <= p.hot_price_usd_per_TB_month
    if cheaper_cold:
        assert v(d, "storage_cost_per_month_usd") <= v(d, "all_hot_cost_per_month_usd") * (1 + tiny)
    assert v(d, "cost_after_one_year_usd") <= v(d, "storage_cost_per_month_usd") * (1 + tiny)
    assert v(d, "backfill_hours") == pytest.approx(v(d, "bad_data_TB") / p.backfill_TB_per_h)


# --- content -------------------------------------------------------------------------------------------


def test_the_page_draws_its_figures():
    c = QUESTIONS[SLUG].content
    assert set(c.directives()) == {("diagram", "platform_shape"), ("chart", "cost_vs_retention"),
                                   ("chart", "backfill_vs_detection"), ("sim", "access")}
