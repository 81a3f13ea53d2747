"""chat-one-to-one: the default scenario by hand, a variant by hand, directions, the seed's claims
(inbox before publish, presence off the database, per-conversation order), the delivery step-through
over every order x crash point x connection, and the content's placeholders."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.product import chat_one_to_one as m
from models.product.chat_one_to_one import Params, deliver, solve
from models.registry import QUESTIONS

SLUG = "chat-one-to-one"


def v(d, key):
    return d.value(key)


# --- the default scenario, by hand ------------------------------------------------------------------


def test_traffic_by_hand():
    d = solve(Params())
    # 50 M users x 40 messages = 2e9 a day; / 86,400 s = 23,148 /s; x 3 at peak = 69,444 /s
    assert v(d, "messages_per_day") == pytest.approx(50e6 * 40) == pytest.approx(2e9)
    assert v(d, "avg_messages_per_s") == pytest.approx(2e9 / 86_400)
    assert v(d, "peak_messages_per_s") == pytest.approx(2e9 / 86_400 * 3)
    assert v(d, "peak_messages_per_s") == pytest.approx(69_444.4, abs=0.1)


def test_presence_write_rates_by_hand():
    d = solve(Params())
    # heartbeats_per_s = online users / interval = (50 M x 20%) / 30 s = 333,333 /s
    assert v(d, "online_users_peak") == pytest.approx(10e6)
    assert v(d, "heartbeats_per_s") == pytest.approx(10e6 / 30)
    assert v(d, "gateway_servers") == 50  # 10 M connections / 200,000 per server
    assert v(d, "presence_ttl_s") == 60  # 30 s x 2 missed heartbeats
    # transitions: 50 M x 5 sessions x 2 edges / 86,400 s x 3 = 17,361 /s
    transitions = 50e6 * 5 * 2 / 86_400 * 3
    assert v(d, "presence_transitions_per_s") == pytest.approx(transitions)
    assert v(d, "heartbeat_to_transition_ratio") == pytest.approx((10e6 / 30) / transitions)  # 19.2x
    # message writes: 69,444 /s x 2 = 138,889 /s
    msg_writes = 2e9 / 86_400 * 3 * 2
    assert v(d, "message_db_writes_per_s") == pytest.approx(msg_writes)
    # every logical write lands on 3 replicas, and a node applies 10,000 replica writes/s:
    # (138,889 + 17,361) x 3 = 468,750 -> 47 nodes; (138,889 + 333,333) x 3 = 1,416,667 -> 142 nodes
    assert v(d, "ttl_replica_writes_per_s") == pytest.approx((msg_writes + transitions) * 3)
    assert v(d, "naive_replica_writes_per_s") == pytest.approx((msg_writes + 10e6 / 30) * 3)
    assert v(d, "db_nodes_ttl_presence") == math.ceil((msg_writes + transitions) * 3 / 10_000) == 47
    assert v(d, "db_nodes_naive_presence") == math.ceil((msg_writes + 10e6 / 30) * 3 / 10_000) == 142
    assert v(d, "naive_load_on_sized_cluster_share") == pytest.approx((msg_writes + 10e6 / 30) * 3 / 470_000)
    # the published anchor: 3.3 M replica writes/s over 288 Cassandra nodes
    assert v(d, "measured_replica_writes_per_node") == pytest.approx(3.3e6 / 288)  # 11,458


def test_partitioning_a_long_conversation_by_hand():
    d = solve(Params())
    # 1,000 messages a day x 500 B = 0.5 MB a day
    assert v(d, "unbucketed_partition_MB") == pytest.approx(0.5 * 365 * 5)  # 912.5 MB after five years
    assert v(d, "bucket_partition_MB") == pytest.approx(0.5 * 30)  # 15 MB per 30-day bucket
    assert v(d, "max_bucket_days") == pytest.approx(100 / 0.5)  # 200 days fit 100 MB
    # the busiest one-to-one conversation writes far below one write a second: size, not heat
    assert v(d, "busy_conversation_peak_writes_per_s") == pytest.approx(1000 / 86_400 * 3 * 2)


def test_never_fewer_database_nodes_than_copies():
    d = solve(Params(daily_active_users=1_000_000, db_node_writes_per_s=200_000))
    assert v(d, "db_nodes_ttl_presence") == 3 and v(d, "db_nodes_naive_presence") == 3


def test_presence_cache_by_hand():
    d = solve(Params())
    # 333,333 SETs a second over shards of 100,000 ops/s kept at 50%: ceil(6.67) = 7 shards
    assert v(d, "presence_shards") == math.ceil((10e6 / 30) / (100_000 * 0.5)) == 7
    assert v(d, "presence_memory_GB") == pytest.approx(10e6 * 100 / 1e9)  # 1 GB: memory is not the limit
    # pushes on transitions only: 17,361 /s x 50 contacts x 20% online
    assert v(d, "presence_fanout_per_s") == pytest.approx(50e6 * 5 * 2 / 86_400 * 3 * 50 * 0.2)


def test_kafka_by_hand():
    d = solve(Params())
    peak = 2e9 / 86_400 * 3
    # kafka_partitions = ceil(peak x headroom / per-partition throughput) = ceil(27.8) = 28
    assert v(d, "kafka_partitions") == math.ceil(peak * 2 / 5000) == 28
    assert v(d, "consumers_needed") == math.ceil(peak / 5000) == 14
    assert v(d, "max_consumers_per_group") == 28  # one consumer per partition caps the group
    assert v(d, "single_log_overload") == pytest.approx(peak / 5000)  # one global log: 13.9x one partition
    assert v(d, "kafka_ingress_Bps") == pytest.approx(peak * 500)  # 34.7 MB/s
    assert v(d, "replicas_per_broker") == pytest.approx(28 * 3 / 6)
    # RF 3, min ISR 2, acks=all: writable after one loss; no acked loss after one loss
    assert v(d, "broker_losses_still_writable") == 1
    assert v(d, "broker_losses_no_acked_loss") == 1
    assert v(d, "acks1_lost_per_broker_loss") == pytest.approx(peak * 0.1 / 6)  # 1,157 messages
    assert v(d, "eager_rebalance_backlog") == pytest.approx(peak * 10)
    assert v(d, "cooperative_rebalance_backlog") == pytest.approx(peak * 10 / 14)


def test_compaction_and_storage_by_hand():
    d = solve(Params())
    assert v(d, "receipt_log_GB") == pytest.approx(2e9 * 100 * 7 / 1e9)  # 1,400 GB
    assert v(d, "receipt_compacted_GB") == pytest.approx(50e6 * 10 * 100 / 1e9)  # 50 GB
    assert v(d, "compaction_ratio") == pytest.approx(28)
    # storage_per_day_TB = 2e9 messages x 500 B x 3 copies = 3 TB
    assert v(d, "history_per_day_TB") == pytest.approx(1.0)
    assert v(d, "storage_per_day_TB") == pytest.approx(2e9 * 500 * 3 / 1e12) == pytest.approx(3.0)
    assert v(d, "storage_per_year_PB") == pytest.approx(3 * 365 / 1000)


def test_worked_arithmetic_reads_like_the_formulas():
    d = solve(Params())
    assert d["heartbeats_per_s"].worked() == "10,000,000 connections / 30 s = 333,333 heartbeats/s"
    assert d["kafka_partitions"].worked().endswith("= 28 partitions")
    assert d["storage_per_day_TB"].worked() == "1 TB × 3 copies = 3 TB"


# --- a variant, by hand ----------------------------------------------------------------------------


def test_variant_small_app_fast_heartbeat():
    p = Params(daily_active_users=2_000_000, messages_per_user_per_day=25, peak_to_average=4,
               peak_online_fraction=0.3, heartbeat_interval_s=15, missed_heartbeats=3,
               sessions_per_user_per_day=8, db_node_writes_per_s=20_000, db_writes_per_message=3,
               partition_msgs_per_s=2000, partition_headroom=3, message_bytes=1000, db_replication=2,
               cache_shard_ops_per_s=80_000, cache_target_utilization=0.6, brokers=4,
               kafka_replication=3, min_insync_replicas=3)
    d = solve(p)
    # 2 M x 25 = 50 M a day; / 86,400 = 578.7 /s; x 4 = 2,314.8 /s
    peak = 50e6 / 86_400 * 4
    assert v(d, "peak_messages_per_s") == pytest.approx(2314.81, abs=0.01)
    # 600,000 online / 15 s = 40,000 heartbeats/s
    assert v(d, "heartbeats_per_s") == pytest.approx(40_000)
    assert v(d, "presence_ttl_s") == 45
    # transitions: 2 M x 8 x 2 / 86,400 x 4 = 1,481.5 /s
    transitions = 2e6 * 8 * 2 / 86_400 * 4
    # DB, 2 copies: 3 writes a message = 6,944 /s; +1,481 = 8,426 x 2 = 16,852 -> 1 node, but 2 copies
    # need 2 nodes; +40,000 = 46,944 x 2 = 93,889 -> 5 nodes
    assert v(d, "db_nodes_ttl_presence") == 2
    assert v(d, "db_nodes_naive_presence") == 5
    assert v(d, "naive_load_on_sized_cluster_share") == pytest.approx((peak * 3 + 40_000) * 2 / 40_000)
    # cache: 40,000 / (80,000 x 0.6 = 48,000) -> 1 shard
    assert v(d, "presence_shards") == 1
    assert transitions == pytest.approx(v(d, "presence_transitions_per_s"))
    # partitions: 2,314.8 x 3 / 2,000 = 3.47 -> 4; consumers: 1.16 -> 2
    assert v(d, "kafka_partitions") == 4
    assert v(d, "consumers_needed") == 2
    # RF 3 with min ISR 3: any loss stops acks=all writes, but two losses keep acked data
    assert v(d, "broker_losses_still_writable") == 0
    assert v(d, "broker_losses_no_acked_loss") == 2
    # storage: 50 M x 1,000 B x 2 copies = 0.1 TB a day
    assert v(d, "storage_per_day_TB") == pytest.approx(0.1)


def test_start_up_preset_claim_naive_fits_as_well():
    """The prose says: in the start-up preset the naive design needs no more DB nodes than the TTL one."""
    preset = next(pr for pr in QUESTIONS[SLUG].content.presets if pr.name == "A start-up's chat")
    d = solve(Params(**{**Params().model_dump(), **preset.values}))
    assert v(d, "db_nodes_naive_presence") == v(d, "db_nodes_ttl_presence")
    assert v(d, "naive_load_on_sized_cluster_share") <= 1


def test_min_isr_one_preset_loses_the_guarantee():
    d = solve(Params(min_insync_replicas=1))
    assert v(d, "broker_losses_no_acked_loss") == 0
    assert v(d, "broker_losses_still_writable") == 2


def test_min_isr_above_replication_never_writes():
    d = solve(Params(kafka_replication=2, min_insync_replicas=3))
    assert v(d, "broker_losses_still_writable") == 0


# --- the seed's claims at the default scenario ----------------------------------------------------


def test_seed_claims_hold_at_scale():
    d = solve(Params())
    # "writing a last-seen time on every heartbeat melts the database"
    assert v(d, "naive_load_on_sized_cluster_share") > 2
    assert v(d, "heartbeats_per_s") > v(d, "peak_messages_per_s")
    # "presence comes from heartbeats and an expiring key": the DB sees transitions only
    assert v(d, "presence_transitions_per_s") < v(d, "heartbeats_per_s") / 10
    # "promise ordering per conversation only": one global log would overload a partition
    assert v(d, "single_log_overload") > 1


# --- the delivery step-through -----------------------------------------------------------------------

CRASHES = (None, 0, 1, 2)


@pytest.mark.parametrize(("crash", "online"), list(itertools.product(CRASHES, (False, True))))
def test_inbox_first_never_loses_and_shows_once(crash, online):
    frames, out = deliver("inbox_first", crash, online)
    assert out.acked and out.delivered and not out.lost
    assert out.durable
    assert frames[-1].bob_has == ("m1",)  # one copy on Bob's phone, whatever arrived twice
    assert frames[-1].inbox == ()  # acknowledged rows are deleted
    assert frames[-1].alice_sees == "delivered ✓✓"


@pytest.mark.parametrize(("crash", "online"), list(itertools.product(CRASHES, (False, True))))
def test_publish_first_loses_exactly_when_it_crashes_between_publish_and_inbox(crash, online):
    _, out = deliver("publish_first", crash, online)
    assert out.acked
    assert out.lost == (crash == 2 and not online)


def test_publish_first_crash_with_bob_online_leaves_no_durable_copy():
    _, out = deliver("publish_first", 2, True)
    assert out.delivered and not out.durable


def test_default_walkthrough_is_the_brief_sequence():
    frames, out = deliver()
    assert [f.event for f in frames] == ["send", "write_inbox", "ack_sender", "publish", "reconnect", "ack"]
    publish = frames[3]
    assert publish.live == "lost" and publish.inbox == ("m1",) and publish.bob_has == ()
    assert frames[2].alice_sees == "sent ✓"
    assert frames[-1].bob_has == ("m1",) and not out.lost


def test_reversed_order_crash_walkthrough():
    frames, out = deliver("publish_first", crash_after=2)
    assert [f.event for f in frames] == ["send", "publish", "ack_sender", "crash", "restart", "reconnect", "drain"]
    assert frames[2].alice_sees == "sent ✓" and frames[-1].alice_sees == "sent ✓"
    assert frames[-1].bob_has == () and frames[-1].inbox == ()
    assert out.lost
    assert not frames[3].server_up


def test_retry_after_unacked_crash_is_idempotent():
    # inbox written, crash before the ack: Alice retries; the second inbox write is a no-op
    frames, out = deliver("inbox_first", crash_after=1)
    writes = [f for f in frames if f.event == "write_inbox"]
    assert len(writes) == 2 and "no-op" in writes[1].message
    assert max(len(f.inbox) for f in frames) == 1
    assert out.copies_received == 1


def test_duplicates_are_received_but_shown_once():
    _, out = deliver("publish_first", crash_after=1, recipient_online=True)
    assert out.copies_received == 3  # live, live again on the retry, then the inbox drain
    frames, _ = deliver("publish_first", crash_after=1, recipient_online=True)
    assert frames[-1].bob_has == ("m1",)


def test_bad_crash_point_is_rejected():
    with pytest.raises(ValueError):
        deliver("inbox_first", crash_after=3)


def test_frames_are_numbered_in_order():
    for order, crash, online in itertools.product(m.ORDERS, CRASHES, (False, True)):
        frames, _ = deliver(order, crash, online)
        assert [f.index for f in frames] == list(range(len(frames)))
        assert all(f.message for f in frames)


# --- moves the right way -------------------------------------------------------------------------------

scenarios = st.builds(
    Params,
    daily_active_users=st.integers(100_000, 2_000_000_000),
    messages_per_user_per_day=st.floats(1, 500),
    peak_to_average=st.floats(1, 10),
    peak_online_fraction=st.floats(0.01, 1),
    heartbeat_interval_s=st.floats(5, 300),
    partition_msgs_per_s=st.floats(100, 100_000),
    partition_headroom=st.floats(1, 10),
    db_node_writes_per_s=st.floats(1000, 200_000),
    kafka_replication=st.integers(1, 5),
    min_insync_replicas=st.integers(1, 5),
)


@settings(max_examples=150, deadline=None)
@given(p=scenarios, factor=st.floats(1.01, 10))
def test_more_users_never_need_less(p, factor):
    more = Params(**{**p.model_dump(), "daily_active_users": min(int(p.daily_active_users * factor), 2_000_000_000)})
    a, b = solve(p), solve(more)
    for key in ("peak_messages_per_s", "heartbeats_per_s", "presence_shards", "kafka_partitions",
                "storage_per_day_TB", "db_nodes_naive_presence", "db_nodes_ttl_presence", "gateway_servers"):
        assert v(b, key) >= v(a, key) * (1 - 1e-12), key


@settings(max_examples=150, deadline=None)
@given(p=scenarios, factor=st.floats(1.01, 10))
def test_longer_heartbeat_interval_cuts_heartbeat_load_only(p, factor):
    longer = Params(**{**p.model_dump(), "heartbeat_interval_s": min(p.heartbeat_interval_s * factor, 300)})
    a, b = solve(p), solve(longer)
    for key in ("heartbeats_per_s", "presence_shards", "db_nodes_naive_presence"):
        assert v(b, key) <= v(a, key) * (1 + 1e-12), key
    assert v(b, "presence_ttl_s") >= v(a, "presence_ttl_s")  # slower offline detection is the price
    # the expiring-key design's database does not see heartbeats at all
    assert v(b, "db_nodes_ttl_presence") == v(a, "db_nodes_ttl_presence")
    assert v(b, "kafka_partitions") == v(a, "kafka_partitions")


@settings(max_examples=200, deadline=None)
@given(p=scenarios)
def test_orderings_that_always_hold(p):
    d = solve(p)
    assert v(d, "db_nodes_naive_presence") >= v(d, "db_nodes_ttl_presence") or (
        v(d, "heartbeats_per_s") < v(d, "presence_transitions_per_s"))
    assert v(d, "kafka_partitions") >= v(d, "consumers_needed")  # headroom >= 1
    assert v(d, "max_consumers_per_group") == v(d, "kafka_partitions")
    assert v(d, "cooperative_rebalance_backlog") <= v(d, "eager_rebalance_backlog")
    assert 0 <= v(d, "broker_losses_no_acked_loss") <= p.kafka_replication - 1 or p.kafka_replication == 1
    assert v(d, "presence_shards") >= 1 and v(d, "kafka_partitions") >= 1


# --- content -------------------------------------------------------------------------------------------


def test_the_page_draws_its_figures():
    c = QUESTIONS[SLUG].content
    assert set(c.directives()) == {("diagram", "chat_shape"), ("chart", "presence_vs_interval"),
                                   ("chart", "partitions_vs_users"), ("sim", "delivery")}


# --- issue 19: the step-through's words and its one figure come from the model ------------------------


@pytest.mark.parametrize(("order", "crash", "online", "ending"), [
    # the design, Bob offline: the publish finds nobody, the drain on reconnect brings the one copy
    ("inbox_first", None, False, "This run ends delivered. Bob's client received 1 copy and shows one."),
    # the bug, crash after publish and ack with Bob offline: acknowledged, no inbox row, nothing to drain
    ("publish_first", 2, False, "This run ends lost: Alice was told 'sent' and Bob never receives it."),
    # the bug with Bob online: the live push reached him, but no durable row was ever written
    ("publish_first", 2, True,
     "This run ends delivered, but never written durably. Bob's client received 1 copy and shows one."),
    # crash after the publish alone, Bob online: live once, live again on Alice's retry, then the inbox drain
    ("publish_first", 1, True, "This run ends delivered. Bob's client received 3 copies and shows one."),
])
def test_the_step_through_ends_in_a_sentence_with_its_copies_a_step(order, crash, online, ending):
    _, out = deliver(order, crash, online)
    d = m.delivery_steps(Params(), out)
    assert d.value("replay_ending") == ending
    copies = {None: 1, 2: 1, 1: 3}[crash] if out.delivered else 0
    assert d.value("replay_copies_received") == copies
    assert d["replay_copies_received"].kind == "simulated" and d["replay_ending"].kind == "verdict"


def test_the_step_through_controls_and_cards_read_in_words():
    assert [m.crash_label("inbox_first", c) for c in m.CRASH_CHOICES] == [
        "No crash", "Crash before anything", "Crash after: write Bob's inbox row",
        "Crash after: write Bob's inbox row and acknowledge Alice"]
    assert m.crash_label("publish_first", 2) == "Crash after: publish and acknowledge Alice"
    assert set(m.ORDER_LABELS) == set(m.ORDERS)
    frames, out = deliver()  # send, write_inbox, ack_sender, publish (lost: Bob offline), reconnect, ack
    assert m.frame_cards(frames[3]) == [("Alice's screen", "sent ✓"), ("Bob's inbox rows", "m1"),
                                        ("Bob's phone shows", "nothing"), ("Bob connected", "no")]
    assert [m.frame_tone(f, i == len(frames) - 1, out) for i, f in enumerate(frames)] == [
        "info", "info", "info", "error", "info", "success"]
    log = m.event_log(frames[:4])
    assert log["#"] == [0, 1, 2, 3] and log["Live path"] == ["", "", "", "lost"]
    assert log["Inbox"] == ["", "m1", "m1", "m1"] and log["Alice sees"][-1] == "sent ✓"
    lost_frames, lost = deliver("publish_first", 2, False)
    assert m.frame_tone(lost_frames[-1], True, lost) == "error"  # a lost message ends in red


def test_storage_sized_node_count_by_hand():
    d = solve(Params())
    # a year of history: 3 TB/day x 365 = 1,095 TB; at 4 TB a node, 1,095 / 4 = 273.75 -> 274 nodes
    assert v(d, "db_node_disk_TB") == 4
    assert v(d, "db_nodes_for_year_of_history") == 274
    # writes alone size the seed at 47 nodes; the cluster is the larger of the two
    assert v(d, "db_nodes_ttl_presence") == 47
    assert v(d, "db_nodes_sized") == 274


def test_storage_nodes_at_the_vendors_density_by_hand():
    d = solve(Params())
    # 1.095 PB a year over all copies (3 TB a day x 365); at DataStax's 2 TB a node:
    # 1,095 TB / 2 TB = 547.5 -> 548 nodes, twice the page's 274 at 4 TB a node
    assert v(d, "vendor_node_density_TB") == pytest.approx(2)
    assert v(d, "db_nodes_for_year_at_vendor_density") == 548
    assert v(d, "db_nodes_for_year_of_history") == 274
