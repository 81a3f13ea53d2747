"""A data platform for stakeholders with different clearance (seed 001).

Teaching order, the interview's: the volume (events a second × bytes an event → a day of raw data),
the storage that retention turns it into (compression, derived tables, billed copies) and what the
hot and cold tiers cost a month; the ingestion numbers that make replay and idempotency concrete
(the bus's replay buffer, duplicates a day, the dedup state a window needs, the small files a
streaming writer leaves behind); the audit trail's size; and the blast radius of bad data (what
arrives before detection, the partitions it touches, the hours a backfill takes).

`apply_policy` is the page's live demo: a pure function from a role to the rows and columns of a
sample table that the role may see. Labels live on columns (and on rows, for records under a legal
hold); a dataset's label is the highest of its columns. A column at or below the role's clearance
is returned in clear; one level above, a column with a masking rule is returned masked; anything
else is dropped. Rows pass when their label is within clearance and the role's row filter accepts
them. Every call returns the audit record it would write.

Modelling choices, stated on the page:
- A day is 86,400 s of the average rate; stored figures are the steady state once the retention
  window is full (the first year fills linearly towards it).
- Compressed size is raw size over one ratio (columnar files with zstd); derived (silver and gold)
  tables add a fraction of the bronze size; `copies` counts the copies you pay for (1 on object
  storage, whose durability is in the price).
- The newest `hot_days` of every table sit in the hot tier, the rest in the cold tier.
- The bus keeps `replay_days` of compressed batches on 3 replicas.
- Bad data flows at the average raw rate from its first record until detection; a backfill reruns
  that raw volume through every downstream table at `backfill_TB_per_h` (raw TB processed per hour),
  in hourly partitions.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Annotated, Callable

from models.core import Derivation, Knob, StrictModel

SECONDS_PER_DAY = 86_400
BUS_REPLICATION = 3  # Kafka's usual replication factor for data that matters
EVENT_ID_BYTES = 16  # a 128-bit event id (UUID); the dedup set stores one per event in its window


class Params(StrictModel):
    events_per_s: Annotated[
        float,
        Knob("Events per second (average)", "events/s", 100, 10_000_000, log=True,
             help="Clickstream, service logs, transactions: every source together.", draw=(10_000, 1_000_000)),
    ] = 100_000
    bytes_per_event: Annotated[
        float,
        Knob("Bytes per event (raw)", "B", 50, 100_000, log=True,
             help="As it arrives: JSON or Avro with its envelope.", draw=(200, 5000)),
    ] = 1000
    retention_days: Annotated[
        float,
        Knob("Retention", "days", 7, 3650, log=True,
             help="How long the bronze (raw) tables are kept; derived tables follow.", draw=(90, 1095)),
    ] = 365
    compression_ratio: Annotated[
        float,
        Knob("Compression ratio", "×", 1, 20, 0.5,
             help="Raw bytes over stored bytes: columnar files with zstd get 3-10× on event data.",
             draw=(3, 10)),
    ] = 5
    derived_fraction: Annotated[
        float,
        Knob("Derived tables, relative to bronze", "×", 0, 3, 0.1,
             help="Silver (cleaned, joined) and gold (aggregates) tables as a fraction of the raw layer.",
             draw=(0.2, 1.0)),
    ] = 0.5
    copies: Annotated[
        int,
        Knob("Copies billed", "", 1, 3, 1,
             help="1 on object storage (durability is in the price), 2 with a cross-region copy, 3 on HDFS.",
             draw=(1, 2)),
    ] = 1
    hot_days: Annotated[
        float,
        Knob("Days in the hot tier", "days", 1, 365, log=True,
             help="Recent partitions that dashboards and jobs read daily.", draw=(7, 90)),
    ] = 30
    hot_price_usd_per_TB_month: Annotated[
        float,
        Knob("Hot tier price", "USD/TB-month", 1, 200, log=True,
             help="Object storage, standard class: about $23 per TB-month at list price.", draw=(15, 30)),
    ] = 23
    cold_price_usd_per_TB_month: Annotated[
        float,
        Knob("Cold tier price", "USD/TB-month", 0.5, 50, log=True,
             help="Infrequent-access or instant-retrieval archive class: about $4 per TB-month; "
                  "deep archive about $1, with hours to restore.", draw=(1, 12.5)),
    ] = 4
    replay_days: Annotated[
        float,
        Knob("Bus retention for replay", "days", 1, 30, 1,
             help="How far back a streaming consumer can rewind on the bus itself.", draw=(3, 14)),
    ] = 7
    duplicate_fraction: Annotated[
        float,
        Knob("Duplicate deliveries", "", 0.00001, 0.05, log=True, percent=True,
             help="Share of events delivered twice by at-least-once producers and retries.", draw=(0.0001, 0.01)),
    ] = 0.001
    dedup_window_h: Annotated[
        float,
        Knob("Streaming dedup window", "h", 0.1, 168, log=True,
             help="How long the stream remembers event ids; later duplicates are left to the batch MERGE.",
             draw=(0.5, 24)),
    ] = 1
    commit_interval_s: Annotated[
        float,
        Knob("Streaming commit interval", "s", 5, 3600, log=True,
             help="How often the streaming writer commits a batch of files to the table.", draw=(30, 600)),
    ] = 60
    writer_tasks: Annotated[
        int,
        Knob("Streaming writer tasks", "tasks", 1, 512, log=True,
             help="Parallel writers; each commit writes one file per task.", draw=(4, 64)),
    ] = 16
    partitions_per_commit: Annotated[
        int,
        Knob("Partitions each writer task writes per commit", "partitions", 1, 256, log=True,
             help="A stream fanned out to several tables, and late events reaching back into earlier hour "
                  "partitions: each task writes one file per partition it touches.", draw=(2, 32)),
    ] = 8
    erasure_active_days: Annotated[
        float,
        Knob("Days of data one erased user spans", "days", 1, 3650, log=True,
             help="The days within retention on which the user produced events (their rows sit in those "
                  "days' partitions).", draw=(10, 365)),
    ] = 120
    erasure_events_per_active_day: Annotated[
        float,
        Knob("Events the erased user produces on an active day", "events", 1, 1_000_000, log=True,
             help="An assumption about one typical user. Files sorted by time hold a day's events in "
                  "arrival order, so each of the user's events lands in a file picked about at random.",
             draw=(20, 2000)),
    ] = 200
    target_file_MB: Annotated[
        float,
        Knob("Target file size after compaction", "MB", 32, 2048, log=True,
             help="Columnar files of a few hundred MB keep scans and metadata cheap.", draw=(128, 1024)),
    ] = 512
    queries_per_day: Annotated[
        float,
        Knob("Queries per day", "queries", 1000, 100_000_000, log=True,
             help="Reads through the access layer by people, dashboards and jobs; each writes an audit record.",
             draw=(10_000, 2_000_000)),
    ] = 200_000
    audit_record_bytes: Annotated[
        float,
        Knob("Audit record", "B", 200, 20_000, log=True,
             help="Who, role, purpose, dataset, columns (clear/masked), rows, query text hash, time.",
             draw=(500, 4000)),
    ] = 1000
    detection_delay_h: Annotated[
        float,
        Knob("Time to detect bad data", "h", 0.25, 720, log=True,
             help="From the first bad record to quarantine: an hourly check, or a dashboard someone reads.",
             draw=(1, 168)),
    ] = 6
    downstream_tables: Annotated[
        int,
        Knob("Tables downstream of the bad source", "tables", 1, 500, log=True,
             help="Bronze, silver and gold tables that read the bad partitions, directly or not.",
             draw=(3, 60)),
    ] = 12
    backfill_TB_per_h: Annotated[
        float,
        Knob("Backfill throughput", "TB/h", 0.05, 100, log=True,
             help="Raw TB an hour the spare cluster reprocesses through the whole downstream chain.",
             draw=(0.2, 10)),
    ] = 1


def solve(p: Params) -> Derivation:
    d = Derivation(p)

    # --- Numbers: volume -----------------------------------------------------------------------------
    per_day = d.step(
        "events_per_day", "Events a day", p.events_per_s * SECONDS_PER_DAY, "1", noun="events",
        formula="{events_per_s} × 86,400 s",
    )
    raw = d.step(
        "raw_per_day_TB", "Raw data a day", per_day * p.bytes_per_event / 1e12, "TB",
        formula="{events_per_day} × {bytes_per_event} B",
    )
    raw_h = d.step(
        "raw_per_hour_TB", "Raw data an hour", raw / 24, "TB", formula="{raw_per_day_TB} TB / 24",
    )

    # --- Storage and its tiers -----------------------------------------------------------------------
    compressed = d.step(
        "compressed_per_day_TB", "Bronze data a day, compressed", raw / p.compression_ratio, "TB",
        formula="{raw_per_day_TB} TB / {compression_ratio}",
    )
    bronze = d.step(
        "bronze_retained_TB", "Bronze over the retention window", compressed * p.retention_days, "TB",
        formula="{compressed_per_day_TB} / 1 day × {retention_days}",
    )
    layers = 1 + p.derived_fraction
    stored = d.step(
        "stored_TB", "Stored at steady state: bronze, derived tables, billed copies",
        bronze * layers * p.copies, "TB",
        formula="{bronze_retained_TB} TB × (1 + {derived_fraction}) × {copies}",
    )
    d.step(
        "stored_uncompressed_TB", "The same without compression",
        raw * p.retention_days * layers * p.copies, "TB",
        formula="{raw_per_day_TB} / 1 day × {retention_days} × (1 + {derived_fraction}) × {copies}",
    )
    hot_days = d.step(
        "hot_days_effective", "Days in the hot tier (no more than the retention)",
        min(p.hot_days, p.retention_days), "d", formula="min({hot_days} days, {retention_days} days)",
    )
    hot = d.step(
        "hot_TB", "Hot tier", stored * hot_days / p.retention_days, "TB",
        formula="{stored_TB} TB × {hot_days_effective} / {retention_days} days",
    )
    cold = d.step(  # the days left for cold, not stored - hot: that difference rounds to -2e-9 TB
        "cold_TB", "Cold tier", stored * (p.retention_days - hot_days) / p.retention_days, "TB",
        formula="{stored_TB} TB × ({retention_days} − {hot_days_effective}) / {retention_days} days",
    )
    cost = d.step(
        "storage_cost_per_month_usd", "Storage a month, tiered",
        hot * p.hot_price_usd_per_TB_month + cold * p.cold_price_usd_per_TB_month, "USD",
        formula="{hot_TB} × {hot_price_usd_per_TB_month} / 1 TB + {cold_TB} × {cold_price_usd_per_TB_month} / 1 TB",
    )
    all_hot = d.step(
        "all_hot_cost_per_month_usd", "Storage a month with everything in the hot tier",
        stored * p.hot_price_usd_per_TB_month, "USD",
        formula="{stored_TB} × {hot_price_usd_per_TB_month} / 1 TB",
    )
    d.step(
        "tiering_saving_share", "Saved by tiering", (1 - cost / all_hot) if all_hot else 0.0, "1", percent=True,
        formula="1 − {storage_cost_per_month_usd} / {all_hot_cost_per_month_usd}",
    )
    # The bill one year in: only `elapsed` days exist yet, the newest of them hot.
    elapsed = min(365.0, p.retention_days)
    per_day_stored = d.step(
        "stored_per_day_TB", "Stored per day kept: bronze, derived tables, billed copies",
        compressed * layers * p.copies, "TB", formula="{compressed_per_day_TB} × (1 + {derived_fraction}) × {copies}",
    )
    hot_year = d.step(
        "hot_days_after_one_year", "Days in the hot tier one year after launch", min(p.hot_days, elapsed), "d",
        formula="min({hot_days_effective}, 365 days)",
    )
    d.step(
        "cold_days_after_one_year", "Days in the cold tier one year after launch", elapsed - hot_year, "d",
        formula="min(365 days, {retention_days}) − {hot_days_after_one_year}",
    )
    d.step(
        "cost_after_one_year_usd", "Storage bill a month, one year after launch",
        per_day_stored * (min(p.hot_days, elapsed) * p.hot_price_usd_per_TB_month
                          + (elapsed - min(p.hot_days, elapsed)) * p.cold_price_usd_per_TB_month), "USD",
        formula="{stored_per_day_TB} / 1 day × ({hot_days_after_one_year} × {hot_price_usd_per_TB_month} + "
                "{cold_days_after_one_year} × {cold_price_usd_per_TB_month}) / 1 TB",
    )

    # --- Ingestion: replay, duplicates, small files ----------------------------------------------------
    d.step(
        "replay_buffer_TB", "Bus disk for the replay window, all replicas",
        compressed * p.replay_days * BUS_REPLICATION, "TB",
        formula="{compressed_per_day_TB} / 1 day × {replay_days} × 3 replicas",
    )
    d.step(
        "duplicates_per_day", "Duplicate events arriving a day", per_day * p.duplicate_fraction, "1",
        noun="events", formula="{events_per_day} × {duplicate_fraction}",
    )
    d.step(
        "dedup_state_GB", "Event ids the stream must remember for its window",
        p.events_per_s * p.dedup_window_h * 3600 * EVENT_ID_BYTES / 1e9, "GB",
        formula="{events_per_s} × {dedup_window_h} × 16 B",
    )
    files = d.step(
        "streaming_files_per_day", "Files a streaming writer leaves a day",
        SECONDS_PER_DAY / p.commit_interval_s * p.writer_tasks * p.partitions_per_commit, "1", noun="files",
        formula="86,400 s / {commit_interval_s} s × {writer_tasks} tasks × {partitions_per_commit}",
    )
    small = d.step(
        "streaming_file_MB", "Average size of those files", compressed * 1e6 / files, "MB",
        formula="{compressed_per_day_TB} TB / {streaming_files_per_day}",
    )
    merged = d.step(
        "files_per_compacted_file", "Streaming files compaction merges into one", p.target_file_MB / small, "1",
        noun="×", formula="{target_file_MB} MB / {streaming_file_MB} MB",
    )
    d.step(
        "small_files_verdict", "Are the streaming files small?",
        "small: compaction is worth running" if merged >= 4
        else "already near the target size: compaction buys little, so commit less often instead", "1",
        kind="verdict", formula="{files_per_compacted_file} against 4×",
    )
    d.step(
        "compacted_files_per_day", "Files a day after compaction",
        math.ceil(compressed * 1e6 / p.target_file_MB - 1e-9), "1", noun="files",
        formula="⌈{compressed_per_day_TB} / {target_file_MB} − 1e-9⌉",
    )

    # --- Erasure: one user's rows in immutable files ---------------------------------------------------
    days = d.step(
        "erasure_days", "Day partitions holding the erased user's rows", min(p.erasure_active_days, p.retention_days),
        "d", formula="min({erasure_active_days} days, {retention_days} days)",
    )
    touched = d.step(
        "erasure_files_unclustered", "Bronze files holding some of the user's rows, files sorted by time",
        days * d.value("compacted_files_per_day"), "1", noun="files",
        formula="{erasure_days} / 1 day × {compacted_files_per_day}",
        note="Events are spread by time, not by user: an active user has a row in nearly every file of the day.",
    )
    d.step(
        "erasure_rewrite_TB_unclustered", "Copy-on-write delete: bronze rewritten, files sorted by time",
        touched * p.target_file_MB / 1e6, "TB", formula="{erasure_files_unclustered} × {target_file_MB} MB",
    )
    d.step(
        "erasure_rewrite_GB_clustered", "Copy-on-write delete: bronze rewritten, files clustered by user id",
        days * p.target_file_MB / 1e3, "GB", formula="{erasure_days} / 1 day × {target_file_MB} MB",
        note="Clustered by user id within each day partition, one user's rows sit in about one file a day.",
    )
    # k events dropped at random into a day's F files touch F × (1 − (1 − 1/F)^k) distinct files:
    # about k while k ≪ F, all F once k ≫ F. The worst case above is the k ≫ F end.
    per_day_files = d.value("compacted_files_per_day")
    touched_day = d.step(
        "erasure_files_per_day_expected", "Files one active day of the user's rows lands in, files sorted by time",
        per_day_files * (1 - (1 - 1 / per_day_files) ** p.erasure_events_per_active_day), "1", noun="files",
        formula="{compacted_files_per_day} × (1 − (1 − 1 / {compacted_files_per_day})^{erasure_events_per_active_day})",
        note="Each event in a file picked at random among the day's files; distinct files counted once.",
    )
    touched_expected = d.step(
        "erasure_files_expected", "Bronze files holding some of the user's rows, expected, files sorted by time",
        days * touched_day, "1", noun="files",
        formula="{erasure_days} / 1 day × {erasure_files_per_day_expected}",
    )
    d.step(
        "erasure_rewrite_TB_expected", "Copy-on-write delete: bronze rewritten, expected, files sorted by time",
        touched_expected * p.target_file_MB / 1e6, "TB",
        formula="{erasure_files_expected} × {target_file_MB} MB",
    )

    # --- Governance -----------------------------------------------------------------------------------
    d.step(
        "audit_per_year_GB", "Audit trail a year", p.queries_per_day * p.audit_record_bytes * 365 / 1e9, "GB",
        formula="{queries_per_day} × {audit_record_bytes} × 365 (days a year)",
    )

    # --- Blast radius -------------------------------------------------------------------------------
    bad = d.step(
        "bad_data_TB", "Raw data that arrived before detection", raw_h * p.detection_delay_h, "TB",
        formula="{raw_per_hour_TB} / 1 h × {detection_delay_h}",
    )
    d.step(
        "partitions_to_rewrite", "Hourly partitions to quarantine and rewrite",
        math.ceil(p.detection_delay_h - 1e-9) * p.downstream_tables, "1", noun="partitions",
        formula="⌈{detection_delay_h} / 1 h⌉ × {downstream_tables}",
    )
    d.step(
        "backfill_hours", "Backfill: reprocess the bad window through every downstream table",
        bad / p.backfill_TB_per_h, "h",
        formula="{bad_data_TB} TB / {backfill_TB_per_h} TB/h",
    )
    d.step(
        "backfill_hours_per_detection_hour", "Backfill hours added by each hour detection takes",
        raw_h / p.backfill_TB_per_h, "h",
        formula="{raw_per_hour_TB} TB / {backfill_TB_per_h} TB/h",
    )
    return d


# =================================================================================================
# The live demo: labels, roles, row filters and masks over a sample table
# =================================================================================================

LEVELS = ("public", "internal", "confidential", "restricted")
RANK = {name: i for i, name in enumerate(LEVELS)}
DATASET = "sales.customer_orders"


def _token(value: object) -> str:
    """Deterministic pseudonym: equal inputs give equal tokens, so joins and distinct counts still work.
    (In production the hash is keyed with a secret, so nobody can hash a guess and compare.)"""
    return "tok_" + hashlib.sha256(f"demo-salt:{value}".encode()).hexdigest()[:8]


def _bucket(value: object) -> str:
    v = float(value)  # type: ignore[arg-type]
    for lo, hi in ((0, 50), (50, 200), (200, 1000)):
        if lo <= v < hi:
            return f"{lo}–{hi}"
    return "1000+"


def _email_domain(value: object) -> str:
    return "***@" + str(value).split("@", 1)[-1]


@dataclass(frozen=True)
class Column:
    name: str
    label: str
    mask: str = ""  # "token", "bucket", "domain", or "" (no masked form: dropped above clearance)
    note: str = ""


MASKS: dict[str, Callable[[object], str]] = {"token": _token, "bucket": _bucket, "domain": _email_domain}
MASK_TEXT = {
    "token": "keyed hash",
    "bucket": "range bucket",
    "domain": "domain only",
}

COLUMNS: tuple[Column, ...] = (
    Column("order_id", "internal", "token", "joins to shipping and support tickets"),
    Column("order_date", "public"),
    Column("region", "public"),
    Column("product", "public"),
    Column("vendor", "public", note="the partner who sells the product"),
    Column("amount_usd", "confidential", "bucket"),
    Column("customer_id", "confidential", "token"),
    Column("customer_email", "restricted", "domain", "personal data"),
    Column("card_last4", "restricted", note="payment data: no masked form"),
)

# `row_label` is the row's own sensitivity: most rows add nothing ("public"), but a customer under a
# legal hold is restricted whatever the columns say.
SAMPLE_ROWS: tuple[dict, ...] = (
    dict(order_id="o-1001", order_date="2025-03-01", region="EU", product="kettle", vendor="Acme",
         amount_usd=42.0, customer_id="c-17", customer_email="lena@example.de", card_last4="4242",
         row_label="public"),
    dict(order_id="o-1002", order_date="2025-03-01", region="US", product="lamp", vendor="Brightly",
         amount_usd=129.0, customer_id="c-23", customer_email="sam@example.com", card_last4="1881",
         row_label="public"),
    dict(order_id="o-1003", order_date="2025-03-02", region="EU", product="lamp", vendor="Brightly",
         amount_usd=310.0, customer_id="c-17", customer_email="lena@example.de", card_last4="4242",
         row_label="public"),
    dict(order_id="o-1004", order_date="2025-03-02", region="APAC", product="kettle", vendor="Acme",
         amount_usd=55.0, customer_id="c-41", customer_email="kenji@example.jp", card_last4="0007",
         row_label="public"),
    dict(order_id="o-1005", order_date="2025-03-03", region="US", product="desk", vendor="Acme",
         amount_usd=1450.0, customer_id="c-52", customer_email="maya@example.org", card_last4="5150",
         row_label="restricted"),
    dict(order_id="o-1006", order_date="2025-03-03", region="EU", product="desk", vendor="Acme",
         amount_usd=980.0, customer_id="c-60", customer_email="jonas@example.fr", card_last4="3003",
         row_label="public"),
)


@dataclass(frozen=True)
class Role:
    name: str
    clearance: str
    purpose: str
    row_rule: str  # the row filter, as a person reads it
    row_filter: Callable[[dict], bool]


ROLES: dict[str, Role] = {
    r.name: r
    for r in (
        Role("partner (Acme)", "public", "sales of their own products",
             "vendor = 'Acme'", lambda row: row["vendor"] == "Acme"),
        Role("analyst", "internal", "product and revenue trends", "all rows", lambda row: True),
        Role("support agent (EU)", "confidential", "answer EU customers' tickets",
             "region = 'EU'", lambda row: row["region"] == "EU"),
        Role("finance", "confidential", "revenue and refunds", "all rows", lambda row: True),
        Role("privacy officer", "restricted", "data-subject requests and legal holds", "all rows",
             lambda row: True),
    )
}


def dataset_label(columns: tuple[Column, ...] = COLUMNS) -> str:
    """A dataset carries the highest label of its columns."""
    return max((c.label for c in columns), key=RANK.__getitem__)


def treatment(column: Column, clearance: str) -> str:
    """'clear' at or below clearance; 'masked' one level above when a masked form exists; else 'dropped'."""
    gap = RANK[column.label] - RANK[clearance]
    if gap <= 0:
        return "clear"
    if gap == 1 and column.mask:
        return "masked"
    return "dropped"


@dataclass(frozen=True)
class AccessResult:
    role: Role
    columns: tuple[tuple[Column, str], ...]  # every column of the table with its treatment
    rows: tuple[dict, ...]  # what the role receives: surviving columns only, masked where masked
    rows_by_filter: int  # rows the role's row filter removed
    rows_by_label: int  # rows whose own label is above the role's clearance
    audit: dict


def apply_policy(role: Role | str, rows: tuple[dict, ...] = SAMPLE_ROWS,
                 columns: tuple[Column, ...] = COLUMNS) -> AccessResult:
    """The rows and columns `role` may see, and the audit record the read writes."""
    r = ROLES[role] if isinstance(role, str) else role
    decided = tuple((c, treatment(c, r.clearance)) for c in columns)
    out, by_filter, by_label = [], 0, 0
    for row in rows:
        if RANK[row.get("row_label", "public")] > RANK[r.clearance]:
            by_label += 1
            continue
        if not r.row_filter(row):
            by_filter += 1
            continue
        shown = {}
        for c, how in decided:
            if how == "clear":
                shown[c.name] = row[c.name]
            elif how == "masked":
                shown[c.name] = MASKS[c.mask](row[c.name])
        out.append(shown)
    audit = {
        "who": f"user in role '{r.name}'",
        "purpose": r.purpose,
        "dataset": DATASET,
        "dataset_label": dataset_label(columns),
        "clearance": r.clearance,
        "row_filter": r.row_rule,
        "columns_clear": [c.name for c, how in decided if how == "clear"],
        "columns_masked": [c.name for c, how in decided if how == "masked"],
        "columns_dropped": [c.name for c, how in decided if how == "dropped"],
        "rows_returned": len(out),
        "rows_withheld": by_filter + by_label,
    }
    return AccessResult(r, decided, tuple(out), by_filter, by_label, audit)
