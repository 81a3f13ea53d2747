"""Usage billing where a dropped event is money (seed 004).

Teaching order, the interview's: how many usage events a month the engines emit (each counted once,
by the engine that ran the request), the Kafka partitions that carry them at peak, the dedup index
that makes them idempotent over its window, what a drop rate costs per month, and the hourly rollup
rows that close a month instead of the raw events.

`bill` is the page's live demo: a small pure event-stream function. It takes twelve usage events,
injects any of the six faults (drop, duplicate, late, reordered, mis-priced, mis-attributed) and
bills them with any subset of five guards (replay from the engine's spool on a reconciliation gap,
dedup by idempotency key, watermark + late-event window, price version at event time, tenant of
the API key at event time). `compare` returns the truth, the bill with the chosen guards and the
bill with none.

Modelling choices, stated on the page:
- A month is 30 days (2,592,000 s, 720 hours).
- One usage event per request by default (the engine emits it when the request ends, or when it
  is cancelled); a long stream may emit partial events, each carrying its own token deltas.
- Partitions are sized by what one consumer can process (dedup lookup and enrichment), not by
  Kafka's bytes per second, at peak with growth headroom.
- The dedup index holds every key seen within the window at a fixed cost per key (key, timestamp
  and hash-table overhead).
- A dropped event loses its revenue; revenue per event is the mean request's tokens at list price.
- Rollup rows: tenants × models × meters × hours, times the share of those cells that see traffic.
- In the demo the stream stands for a dense one: the watermark follows the arrival clock minus the
  allowed out-of-orderness, so an event is late when it arrives after its hour's window has closed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Annotated

from models.core import Derivation, Knob, StrictModel

SECONDS_PER_MONTH = 30 * 86_400
HOURS_PER_MONTH = 30 * 24
STRIPE_STREAM_EVENTS_PER_S = 10_000  # Stripe v2 meter event stream, livemode (its 2024-09-30 changelog)
BLOOM_FPR = 0.01  # a pre-filter only: a false positive would drop a real event
BLOOM_BITS_PER_KEY = -math.log(BLOOM_FPR) / math.log(2) ** 2  # 9.585 bits at 1%


class Params(StrictModel):
    requests_per_s: Annotated[
        float,
        Knob("Requests per second (average)", "req/s", 10, 1_000_000, log=True,
             help="Billable API requests across every engine, averaged over the month.", draw=(500, 50_000)),
    ] = 5000
    events_per_request: Annotated[
        float,
        Knob("Usage events per request", "", 1, 20, 0.5,
             help="1 = one final event per request; more when long streams emit partial events.", draw=(1, 3)),
    ] = 1
    peak_to_average: Annotated[
        float,
        Knob("Peak over average", "×", 1, 10, 0.5,
             help="The busiest hour's event rate over the month's average.", draw=(1.5, 4)),
    ] = 2.5
    partition_events_per_s: Annotated[
        float,
        Knob("Events one consumer processes", "events/s", 100, 100_000, log=True,
             help="Per partition: dedup lookup, price and tenant lookup, rollup update, offset commit.",
             draw=(500, 10_000)),
    ] = 1000
    partition_headroom: Annotated[
        float,
        Knob("Partition headroom", "×", 1, 10, 0.5,
             help="Growth room: partitions are cheap to have and disruptive to add (keys move).",
             draw=(1.5, 4)),
    ] = 2
    event_bytes: Annotated[
        float,
        Knob("Usage event size", "B", 100, 4000, log=True,
             help="Key, request id, API key, model, token counts by meter, engine, event time, schema version.",
             draw=(200, 1000)),
    ] = 400
    kafka_retention_days: Annotated[
        float,
        Knob("Kafka retention", "days", 1, 30, 1,
             help="How far back the raw stream can be replayed (Kafka's default is 7 days).", draw=(3, 14)),
    ] = 7
    replication_factor: Annotated[
        int,
        Knob("Replication factor", "copies", 1, 5, 1, help="Copies of every partition.", draw=(3, 3)),
    ] = 3
    dedup_window_h: Annotated[
        float,
        Knob("Dedup window", "h", 1, 720, 1,
             help="How long a seen idempotency key is remembered; must cover the longest replay.",
             draw=(6, 168)),
    ] = 24
    dedup_bytes_per_key: Annotated[
        float,
        Knob("Dedup cost per key", "B", 16, 256, log=True,
             help="A 16-byte key hash, an 8-byte timestamp and the hash table's overhead.", draw=(32, 100)),
    ] = 48
    mean_input_tokens: Annotated[
        float,
        Knob("Mean input tokens", "tokens", 10, 200_000, log=True, help="Per request.", draw=(300, 10_000)),
    ] = 1500
    mean_output_tokens: Annotated[
        float,
        Knob("Mean output tokens", "tokens", 1, 20_000, log=True, help="Per request.", draw=(100, 2000)),
    ] = 400
    input_usd_per_mtok: Annotated[
        float,
        Knob("Input price", "USD/M tokens", 0.05, 100, log=True, help="List price.", draw=(0.25, 15)),
    ] = 3
    output_usd_per_mtok: Annotated[
        float,
        Knob("Output price", "USD/M tokens", 0.1, 200, log=True, help="List price.", draw=(1, 75)),
    ] = 15
    drop_rate: Annotated[
        float,
        Knob("Events dropped in transit", "", 0.000001, 0.05, log=True, percent=True,
             help="Share lost between engine and ledger with fire-and-forget emission (no spool, no acks).",
             draw=(0.00001, 0.005)),
    ] = 0.001
    duplicate_rate: Annotated[
        float,
        Knob("Events delivered twice", "", 0.000001, 0.1, log=True, percent=True,
             help="Share re-sent by producer retries after a timeout whose first write had landed.",
             draw=(0.0001, 0.01)),
    ] = 0.002
    capped_tenant_share: Annotated[
        float,
        Knob("Traffic of the tenant with a spend cap", "", 0.0001, 1, log=True, percent=True,
             help="Share of all requests that one capped tenant sends: its spend rate is this share of revenue.",
             draw=(0.005, 0.05)),
    ] = 0.02
    max_output_tokens: Annotated[
        float,
        Knob("Output-token limit per request", "tokens", 16, 200_000, log=True,
             help="The request's max_tokens: the most output a request can bill, which a hard cap reserves.",
             draw=(4096, 16384)),
    ] = 4096
    spend_counter_lag_s: Annotated[
        float,
        Knob("Spend counter lag", "s", 0.1, 3600, log=True,
             help="How far behind real spend a streaming per-tenant counter runs (consumer lag plus flush).",
             draw=(1, 30)),
    ] = 5
    tenants: Annotated[
        int,
        Knob("Paying tenants", "tenants", 1, 1_000_000, log=True, help="Accounts that receive an invoice.",
             draw=(1000, 100_000)),
    ] = 20_000
    models_per_tenant: Annotated[
        float,
        Knob("Models per tenant", "models", 1, 20, 0.5, help="Distinct models a tenant uses in a month.",
             draw=(1, 4)),
    ] = 2
    meters_per_model: Annotated[
        int,
        Knob("Meters per model", "meters", 1, 8, 1,
             help="Separately priced counts: input, cached input, output (3); more with images or audio.",
             draw=(2, 4)),
    ] = 3
    hourly_active_fraction: Annotated[
        float,
        Knob("Tenant-model hours with traffic", "", 0.01, 1, 0.01, percent=True,
             help="Share of (tenant, model, hour) cells that see at least one request: rollups are sparse.",
             draw=(0.05, 0.6)),
    ] = 0.25


def solve(p: Params) -> Derivation:
    d = Derivation(p)
    month = d.step("seconds_per_month", "Seconds in a billing month (30 days)", SECONDS_PER_MONTH, "s",
                   formula="30 days")
    rate = d.step("events_per_s", "Usage events per second, average", p.requests_per_s * p.events_per_request,
                  "1/s", noun="events", formula="{requests_per_s} req/s × {events_per_request}")
    events = d.step("events_per_month", "Usage events per month", rate * month, "1", noun="events",
                    formula="{events_per_s} × {seconds_per_month}")
    peak = d.step("peak_events_per_s", "Usage events per second at peak", rate * p.peak_to_average, "1/s",
                  noun="events", formula="{events_per_s} × {peak_to_average}")
    d.step("kafka_partitions", "Kafka partitions for the usage topic",
           math.ceil(peak * p.partition_headroom / p.partition_events_per_s - 1e-9), "1", noun="partitions",
           formula="⌈{peak_events_per_s} × {partition_headroom} / {partition_events_per_s}⌉")
    d.step("peak_ingest_Bps", "Bytes per second into the topic at peak", peak * p.event_bytes, "B/s",
           formula="{peak_events_per_s} × {event_bytes}")
    d.step("kafka_retained_bytes", "Bytes the topic holds at full retention",
           rate * p.event_bytes * p.kafka_retention_days * 86_400 * p.replication_factor, "B",
           formula="{events_per_s} × {event_bytes} × {kafka_retention_days} × {replication_factor}")

    keys = d.step("dedup_keys_in_window", "Idempotency keys remembered at once", rate * p.dedup_window_h * 3600,
                  "1", noun="keys", formula="{events_per_s} × {dedup_window_h}")
    d.step("dedup_covers_retention", "Does the dedup window cover Kafka's replay horizon?",
           "yes" if p.dedup_window_h >= p.kafka_retention_days * 24
           else "no",
           formula="{dedup_window_h} ≥ {kafka_retention_days}", kind="verdict")
    d.step("dedup_index_GB", "Dedup index over the window", keys * p.dedup_bytes_per_key / 1e9, "GB",
           formula="{dedup_keys_in_window} × {dedup_bytes_per_key}")
    parts = d["kafka_partitions"].value
    d.step("dedup_keys_per_partition", "Idempotency keys one partition's consumer remembers", keys / parts, "1",
           noun="keys", formula="{dedup_keys_in_window} / {kafka_partitions}")
    d.step("dedup_index_per_partition_GB", "Dedup state one partition's consumer holds",
           keys * p.dedup_bytes_per_key / 1e9 / parts, "GB", formula="{dedup_index_GB} / {kafka_partitions}")
    d.step("bloom_bits_per_key", "Bloom filter bits per key at a 1% false-positive rate", BLOOM_BITS_PER_KEY, "bits",
           formula="−ln(0.01) / ln(2)² × 1 bit")
    d.step("bloom_prefilter_GB", "A 1% Bloom pre-filter over the same keys",
           keys * BLOOM_BITS_PER_KEY / 8 / 1e9, "GB",
           formula="{dedup_keys_in_window} × {bloom_bits_per_key}")

    per_request = d.step("revenue_per_request_usd", "Revenue of the mean request",
                         p.mean_input_tokens * p.input_usd_per_mtok / 1e6
                         + p.mean_output_tokens * p.output_usd_per_mtok / 1e6, "USD",
                         formula="{mean_input_tokens} × {input_usd_per_mtok} / 1,000,000 + "
                                 "{mean_output_tokens} × {output_usd_per_mtok} / 1,000,000")
    per_event = d.step("revenue_per_event_usd", "Revenue one usage event carries", per_request / p.events_per_request,
                       "USD", formula="{revenue_per_request_usd} / {events_per_request}")
    d.step("revenue_per_month_usd", "Revenue billed per month", events * per_event, "USD",
           formula="{events_per_month} × {revenue_per_event_usd}")
    dropped = d.step("dropped_events_per_month", "Events dropped per month", events * p.drop_rate, "1",
                     noun="events", formula="{events_per_month} × {drop_rate}")
    d.step("revenue_lost_to_drops_per_month_usd", "Revenue lost to drops per month", dropped * per_event, "USD",
           formula="{dropped_events_per_month} × {revenue_per_event_usd}")
    dupes = d.step("duplicate_events_per_month", "Events delivered twice per month", events * p.duplicate_rate, "1",
                   noun="events", formula="{events_per_month} × {duplicate_rate}")
    d.step("overbilled_without_dedup_per_month_usd", "Overbilled per month without dedup", dupes * per_event, "USD",
           formula="{duplicate_events_per_month} × {revenue_per_event_usd}")
    d.step("missing_events_per_hour", "Events the hourly reconciliation finds missing, fleet-wide",
           rate * 3600 * p.drop_rate, "1", noun="events", formula="{events_per_s} × 1 h × {drop_rate}")

    # A real-time spend cap: enforced at admission, before the hourly rollups have counted.
    tenant_rate = d.step("capped_tenant_usd_per_s", "The capped tenant's spend rate",
                         events * per_event / month * p.capped_tenant_share, "USD/s",
                         formula="{revenue_per_month_usd} / {seconds_per_month} × {capped_tenant_share}")
    d.step("cap_overshoot_rollup_usd", "Spend past the cap if it is checked against the hourly rollups",
           tenant_rate * 3600, "USD", formula="{capped_tenant_usd_per_s} × 1 h")
    d.step("cap_overshoot_counter_usd", "Spend past the cap with a streaming counter",
           tenant_rate * p.spend_counter_lag_s, "USD", formula="{capped_tenant_usd_per_s} × {spend_counter_lag_s}")
    reserve = d.step("cap_reservation_usd", "Reserved at admission: the request's worst case",
                     p.mean_input_tokens * p.input_usd_per_mtok / 1e6 + p.max_output_tokens * p.output_usd_per_mtok / 1e6,
                     "USD", formula="{mean_input_tokens} × {input_usd_per_mtok} / 1,000,000 + "
                                    "{max_output_tokens} × {output_usd_per_mtok} / 1,000,000")
    d.step("reservation_over_actual", "Reservation over what the mean request spends", reserve / per_request, "1",
           noun="×", formula="{cap_reservation_usd} / {revenue_per_request_usd}")

    cells = d.step("rollup_cells_per_month", "Possible (tenant, model, meter, hour) cells",
                   p.tenants * p.models_per_tenant * p.meters_per_model * HOURS_PER_MONTH, "1", noun="cells",
                   formula="{tenants} × {models_per_tenant} × {meters_per_model} × {seconds_per_month} / 1 h")
    rows = d.step("rollup_rows_per_month", "Hourly rollup rows per month (cells with traffic)",
                  cells * p.hourly_active_fraction, "1", noun="rows",
                  formula="{rollup_cells_per_month} × {hourly_active_fraction}")
    d.step("rollup_compression", "Raw events per rollup row", events / rows, "1", noun="×",
           formula="{events_per_month} / {rollup_rows_per_month}")

    # Forwarding to a Stripe-style meter: its v2 meter event stream takes 10,000 events/s.
    limit = d.step("stripe_stream_events_per_s", "Stripe v2 meter event stream limit (livemode)",
                   STRIPE_STREAM_EVENTS_PER_S, "1/s", noun="events", formula="Stripe's documented limit",
                   kind="lookup")
    d.step("peak_share_of_stripe_stream", "Our peak event rate as a share of that limit", peak / limit, "1",
           percent=True, formula="{peak_events_per_s} / {stripe_stream_events_per_s}")
    d.step("rollup_rows_per_hour", "Rollup rows one hour closes (what goes to the billing provider)",
           rows / HOURS_PER_MONTH, "1", noun="rows", formula="{rollup_rows_per_month} × 1 h / {seconds_per_month}")
    return d


# ---------------------------------------------------------------------------------------------
# The live demo: twelve events, six faults, five guards
# ---------------------------------------------------------------------------------------------

FAULTS = ("drop", "duplicate", "late", "reordered", "mis-priced", "mis-attributed")
GUARDS = ("replay", "dedup", "watermark", "price_at_event_time", "tenant_at_event_time")
GUARD_FOR = {"drop": "replay", "duplicate": "dedup", "late": "watermark", "reordered": "watermark",
             "mis-priced": "price_at_event_time", "mis-attributed": "tenant_at_event_time"}
FAULT_TEXT = {
    "drop": "E06 is lost between engine eng-2 and the broker (fire-and-forget send, broker failover).",
    "duplicate": "E10 is sent twice: the producer timed out waiting for an ack that had in fact landed.",
    "late": "E11, stamped Jan 31 23:58, is spooled by an engine that lost its network and arrives Feb 1 06:00.",
    "reordered": "E04, stamped 09:59:30, takes a slow path and arrives 80 s later, after E05 of 10:00:20.",
    "mis-priced": "The large model's price drops on Jan 20; the price table gains a second version.",
    "mis-attributed": "API key ak-shared-7 moves from acme to globex on Jan 18 (a team changed companies).",
}
GUARD_TEXT = {
    "replay": "Reconcile each engine-hour against the engine's own tally; replay a short cell from the engine's spool",
    "dedup": "Drop any event whose idempotency key was already billed",
    "watermark": "Watermark 10 min behind arrival, and keep each month open 3 days for late events",
    "price_at_event_time": "Price with the price version in effect at the event's time",
    "tenant_at_event_time": "Bill the tenant that owned the API key at the event's time",
}

START = datetime(2025, 1, 1)
LAG = timedelta(seconds=5)  # normal pipeline delay from engine to consumer
OUT_OF_ORDERNESS = timedelta(minutes=10)  # with the watermark guard
ALLOWED_LATENESS = timedelta(days=3)  # with the watermark guard: the month stays open this long
REPLAY_DELAY = timedelta(hours=2)  # reconciliation runs two hours after an hour ends
PRICE_CHANGE = datetime(2025, 1, 20)
KEY_MOVE = datetime(2025, 1, 18)

# USD per million tokens: (input, output). The large model's second version exists only with the
# "mis-priced" fault (a price change mid-month).
PRICE_V1 = {"large": (3.00, 15.00), "small": (0.25, 1.25)}
PRICE_V2 = {"large": (2.00, 8.00), "small": (0.25, 1.25)}
KEY_OWNER = {"ak-acme-prod": "acme", "ak-globex": "globex", "ak-shared-7": "acme"}
KEY_OWNER_AFTER_MOVE = {**KEY_OWNER, "ak-shared-7": "globex"}


@dataclass(frozen=True)
class UsageEvent:
    key: str  # idempotency key: request id and sequence number, minted once at the engine
    engine: str
    api_key: str
    model: str
    t: datetime  # event time: when the engine finished counting
    input_tokens: int
    output_tokens: int


def _e(n: int, engine: str, api_key: str, model: str, t: str, tin: int, tout: int) -> UsageEvent:
    return UsageEvent(f"E{n:02d}", engine, api_key, model, datetime.fromisoformat(f"2025-{t}"), tin, tout)


EVENTS: tuple[UsageEvent, ...] = (
    _e(1, "eng-1", "ak-acme-prod", "large", "01-03 10:15:00", 120_000, 30_000),
    _e(2, "eng-2", "ak-globex", "small", "01-05 16:40:00", 800_000, 200_000),
    _e(3, "eng-1", "ak-shared-7", "large", "01-09 08:05:00", 200_000, 40_000),
    _e(4, "eng-2", "ak-globex", "large", "01-12 09:59:30", 100_000, 20_000),
    _e(5, "eng-1", "ak-acme-prod", "small", "01-12 10:00:20", 400_000, 100_000),
    _e(6, "eng-2", "ak-acme-prod", "large", "01-15 14:10:00", 150_000, 50_000),
    _e(7, "eng-2", "ak-globex", "small", "01-15 14:35:00", 600_000, 120_000),
    _e(8, "eng-1", "ak-shared-7", "large", "01-17 11:00:00", 100_000, 25_000),
    _e(9, "eng-1", "ak-shared-7", "large", "01-22 13:30:00", 250_000, 60_000),
    _e(10, "eng-2", "ak-acme-prod", "large", "01-26 18:20:00", 180_000, 45_000),
    _e(11, "eng-1", "ak-globex", "large", "01-31 23:58:00", 90_000, 30_000),
    _e(12, "eng-2", "ak-acme-prod", "small", "02-01 02:00:00", 500_000, 100_000),
)
BY_KEY = {e.key: e for e in EVENTS}


@dataclass(frozen=True)
class Delivery:
    event: UsageEvent
    arrival: datetime
    how: str = "sent"  # "sent", "retry" (a duplicate), "replay"


@dataclass(frozen=True)
class Line:
    """What the consumer did with one delivery."""

    key: str
    arrival: datetime
    how: str
    outcome: str  # "billed", "duplicate skipped", "late: discarded"
    tenant: str
    month: str
    price_version: str
    usd: float


@dataclass(frozen=True)
class Cell:
    """One reconciliation cell: an engine's own token tally for an hour against the ledger's."""

    engine: str
    hour: datetime
    engine_tokens: int
    ledger_tokens: int

    @property
    def gap(self) -> int:
        return self.ledger_tokens - self.engine_tokens


@dataclass(frozen=True)
class Bill:
    totals: dict[tuple[str, str], float]  # (tenant, month) -> USD
    lines: tuple[Line, ...]
    cells: tuple[Cell, ...]  # only the cells that disagree
    lost: tuple[str, ...]  # keys the engines counted that never reached the consumer

    @property
    def total(self) -> float:
        return sum(self.totals.values())


def _month(t: datetime) -> str:
    return t.strftime("%Y-%m")


def _hour(t: datetime) -> datetime:
    return t.replace(minute=0, second=0, microsecond=0)


def _price(e: UsageEvent, faults: frozenset[str], at_event_time: bool) -> tuple[str, float]:
    changed = "mis-priced" in faults
    use_v2 = changed and (not at_event_time or e.t >= PRICE_CHANGE)
    table, version = (PRICE_V2, "v2") if use_v2 else (PRICE_V1, "v1")
    if e.model == "small":
        version = "v1"
    pin, pout = table[e.model]
    return version, (e.input_tokens * pin + e.output_tokens * pout) / 1e6


def _tenant(e: UsageEvent, faults: frozenset[str], at_event_time: bool) -> str:
    moved = "mis-attributed" in faults
    if moved and (not at_event_time or e.t >= KEY_MOVE):
        return KEY_OWNER_AFTER_MOVE[e.api_key]
    return KEY_OWNER[e.api_key]


def event_usd(e: UsageEvent, faults: frozenset[str] = frozenset()) -> float:
    """The right price for one event: the version in effect at its time."""
    return _price(e, frozenset(faults), True)[1]


def truth(faults: frozenset[str] | set[str] = frozenset()) -> dict[tuple[str, str], float]:
    """What each tenant owes per month: every event once, at its time's price, to its time's owner."""
    faults = frozenset(faults)
    out: dict[tuple[str, str], float] = {}
    for e in EVENTS:
        k = (_tenant(e, faults, True), _month(e.t))
        out[k] = out.get(k, 0.0) + _price(e, faults, True)[1]
    return out


def deliveries(faults: frozenset[str] | set[str]) -> list[Delivery]:
    """The stream as the consumer sees it, in arrival order, with the stream faults injected."""
    faults = frozenset(faults)
    out: list[Delivery] = []
    for e in EVENTS:
        if e.key == "E06" and "drop" in faults:
            continue
        arrival = e.t + LAG
        if e.key == "E04" and "reordered" in faults:
            arrival = e.t + timedelta(seconds=80)
        if e.key == "E11" and "late" in faults:
            arrival = datetime(2025, 2, 1, 6, 0)
        out.append(Delivery(e, arrival))
        if e.key == "E10" and "duplicate" in faults:
            out.append(Delivery(e, e.t + timedelta(seconds=35), "retry"))
    return sorted(out, key=lambda x: (x.arrival, x.event.key))


def _consume(stream: list[Delivery], faults: frozenset[str], guards: frozenset[str]) -> list[Line]:
    ooo = OUT_OF_ORDERNESS if "watermark" in guards else timedelta(0)
    lateness = ALLOWED_LATENESS if "watermark" in guards else timedelta(0)
    seen: set[str] = set()
    lines = []
    for dlv in sorted(stream, key=lambda x: (x.arrival, x.event.key)):
        e = dlv.event
        watermark = dlv.arrival - ooo  # a dense stream: the watermark follows the arrival clock
        window_end = _hour(e.t) + timedelta(hours=1)
        tenant = _tenant(e, faults, "tenant_at_event_time" in guards)
        version, usd = _price(e, faults, "price_at_event_time" in guards)
        if watermark >= window_end + lateness:
            outcome, usd = "late: discarded", 0.0
        elif "dedup" in guards and e.key in seen:
            outcome, usd = "duplicate skipped", 0.0
        else:
            outcome = "billed"
            seen.add(e.key)
        lines.append(Line(e.key, dlv.arrival, dlv.how, outcome, tenant, _month(e.t), version, usd))
    return lines


def _cells(lines: list[Line]) -> list[Cell]:
    engine: dict[tuple[str, datetime], int] = {}
    for e in EVENTS:
        k = (e.engine, _hour(e.t))
        engine[k] = engine.get(k, 0) + e.input_tokens + e.output_tokens
    ledger: dict[tuple[str, datetime], int] = {k: 0 for k in engine}
    for ln in lines:
        if ln.outcome == "billed":
            e = BY_KEY[ln.key]
            ledger[(e.engine, _hour(e.t))] += e.input_tokens + e.output_tokens
    return [Cell(k[0], k[1], engine[k], ledger[k]) for k in sorted(engine) if engine[k] != ledger[k]]


def bill(faults: frozenset[str] | set[str], guards: frozenset[str] | set[str]) -> Bill:
    """Bill the twelve events with `faults` injected and `guards` on. Pure and deterministic."""
    faults, guards = frozenset(faults), frozenset(guards)
    unknown = (faults - set(FAULTS)) | (guards - set(GUARDS))
    if unknown:
        raise ValueError(f"unknown fault or guard: {sorted(unknown)}")
    stream = deliveries(faults)
    lines = _consume(stream, faults, guards)
    if "replay" in guards:
        # The hourly reconciliation compares each engine-hour with the ledger; a cell short of its
        # engine's tally is replayed whole from the engine's spool two hours after the hour ends.
        short = [c for c in _cells(lines) if c.gap < 0]
        replayed = [Delivery(e, c.hour + timedelta(hours=1) + REPLAY_DELAY, "replay")
                    for c in short for e in EVENTS if e.engine == c.engine and _hour(e.t) == c.hour]
        if replayed:
            lines = _consume(stream + replayed, faults, guards)
    totals: dict[tuple[str, str], float] = {}
    for ln in lines:
        if ln.outcome == "billed":
            k = (ln.tenant, ln.month)
            totals[k] = totals.get(k, 0.0) + ln.usd
    arrived = {ln.key for ln in lines}
    lost = tuple(e.key for e in EVENTS if e.key not in arrived)
    return Bill(totals, tuple(lines), tuple(_cells(lines)), lost)


@dataclass(frozen=True)
class Comparison:
    truth: dict[tuple[str, str], float]
    guarded: Bill
    unguarded: Bill

    def rows(self) -> list[tuple[str, str, float, float, float]]:
        """(tenant, month, truth, with the chosen guards, with none) for every (tenant, month) seen."""
        keys = sorted(set(self.truth) | set(self.guarded.totals) | set(self.unguarded.totals))
        return [(t, mth, self.truth.get((t, mth), 0.0), self.guarded.totals.get((t, mth), 0.0),
                 self.unguarded.totals.get((t, mth), 0.0)) for t, mth in keys]


def compare(faults: frozenset[str] | set[str], guards: frozenset[str] | set[str]) -> Comparison:
    return Comparison(truth(faults), bill(faults, guards), bill(faults, frozenset()))


def with_fault(fault: str) -> tuple[float, float]:
    """(truth total, unguarded total) with one fault alone: what that fault costs unguarded."""
    c = compare({fault}, set())
    return sum(c.truth.values()), c.unguarded.total
