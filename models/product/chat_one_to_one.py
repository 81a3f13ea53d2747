"""A one-to-one chat system: durable inbox, lossy live path, presence, and the message bus (seed 001).

Teaching order, the interview's: traffic (messages a day, the peak rate, people online), the
presence write rate that decides the design (a last-seen write per heartbeat against a key that
expires in a cache, so the database sees only online/offline transitions), the database and cache
fleets that follow, the Kafka sizing (partitions from the peak and a per-partition throughput, the
consumer-group parallelism they cap, what acks=all with min.insync.replicas survives, what a
rebalance delays, what log compaction keeps), and the storage a day of history costs.

`deliver` is the page's step-through: one message to a recipient who may be offline, with the
server's three operations (inbox write, sender ack, live publish) in either order and a crash after
any of them. The invariant the tests check over every combination: when the inbox write precedes
the ack, a message the sender saw as sent always reaches the recipient, exactly once; when the
publish and the ack come first, a crash before the inbox write loses it.

Modelling choices, stated on the page:
- Traffic is DAU × messages per user per day, spread over 86,400 s, times a peak-to-average factor.
- A heartbeat is one cache write (SET with an expiry) per online user per interval; the naive design
  makes it one database write instead. Presence transitions are two per session (online, offline).
- Each message costs `db_writes_per_message` database writes (history row and recipient inbox row).
- One partition is consumed by one consumer of a group at `partition_msgs_per_s`; the partition
  count adds a headroom factor, because adding partitions later re-maps keys.
- With acks=1 a leader's crash loses what its followers had not yet copied: the messages of the
  partitions it led (1/brokers of traffic) over one replication lag.
- An eager rebalance pauses every partition of the group; a cooperative one only the partitions
  that move (one consumer's share).
- Storage counts the history row for every message, times the database's replication factor.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Literal

from models.core import Derivation, Knob, StrictModel

SECONDS_PER_DAY = 86_400
# A presence key in Redis: user id key, gateway id value, expiry, and the per-key overhead of the
# dictionary entry; roughly 50-100 bytes. Memory is not what sizes the presence tier.
PRESENCE_KEY_BYTES = 100
# Estimate: usable data one wide-column node holds with room left for compaction; Cassandra
# operators commonly keep nodes at a few TB so streaming a replacement node stays hours, not days.
DB_NODE_DISK_TB = 4
# DataStax's published node density for Cassandra-family clusters: up to 2 TB of data a node, more
# only for write-once time series under TimeWindowCompactionStrategy. The page's 4 TB leans on that
# exception (chat history is appended once and read newest bucket first); 2 TB is the vendor's line.
VENDOR_NODE_DENSITY_TB = 2


class Params(StrictModel):
    daily_active_users: Annotated[
        int,
        Knob("Daily active users", "users", 100_000, 2_000_000_000, log=True,
             help="People who open the app on a given day; one device each.", draw=(1_000_000, 500_000_000)),
    ] = 50_000_000
    messages_per_user_per_day: Annotated[
        float,
        Knob("Messages sent per user per day", "messages", 1, 500, log=True,
             help="Average over active users; heavy senders are in the average.", draw=(10, 100)),
    ] = 40
    peak_to_average: Annotated[
        float,
        Knob("Peak-to-average traffic", "×", 1, 10, 0.5,
             help="Busiest second over the day's mean: evenings, New Year's midnight.", draw=(2, 5)),
    ] = 3
    message_bytes: Annotated[
        float,
        Knob("Stored message row", "B", 100, 10_000, log=True,
             help="Text (about 100 B), ids, sequence number, timestamps, status and index overhead.",
             draw=(200, 2000)),
    ] = 500
    db_replication: Annotated[
        int,
        Knob("Database replication factor", "copies", 1, 5, 1,
             help="Copies of every history row the message store keeps.", draw=(3, 3)),
    ] = 3
    peak_online_fraction: Annotated[
        float,
        Knob("Online at peak", "", 0.01, 1.0, 0.01, percent=True,
             help="Share of daily users holding a live connection at the busiest moment.", draw=(0.1, 0.4)),
    ] = 0.2
    heartbeat_interval_s: Annotated[
        float,
        Knob("Heartbeat interval", "s", 5, 300, log=True,
             help="How often an online client proves it is there.", draw=(10, 60)),
    ] = 30
    missed_heartbeats: Annotated[
        int,
        Knob("Heartbeats missed before offline", "", 1, 5, 1,
             help="The presence key's expiry, in heartbeat intervals.", draw=(2, 3)),
    ] = 2
    sessions_per_user_per_day: Annotated[
        float,
        Knob("Sessions per user per day", "sessions", 1, 50, log=True,
             help="Connects a day; each is one online and one offline transition.", draw=(3, 20)),
    ] = 5
    contacts_per_user: Annotated[
        int,
        Knob("Contacts per user", "contacts", 1, 1000, log=True,
             help="People whose presence a user may watch.", draw=(20, 200)),
    ] = 50
    db_writes_per_message: Annotated[
        int,
        Knob("Database writes per message", "writes", 1, 5, 1,
             help="History row and recipient inbox row; more if receipts are rows too.", draw=(2, 3)),
    ] = 2
    db_node_writes_per_s: Annotated[
        float,
        Knob("Replica writes one database node sustains", "writes/s", 1000, 200_000, log=True,
             help="Durable writes a node applies, counting every copy it holds: each logical write lands on "
                  "one node per replica. Netflix measured about 11,500 per node on Cassandra in 2011.",
             draw=(5000, 50_000)),
    ] = 10_000
    busy_conversation_msgs_per_day: Annotated[
        float,
        Knob("Messages a day in a busy conversation", "messages", 10, 100_000, log=True,
             help="Two people who chat all day, or a bot that never stops.", draw=(300, 3000)),
    ] = 1000
    conversation_years: Annotated[
        float,
        Knob("Years a conversation lives", "years", 0.5, 20, 0.5, help="History is kept forever; a long one.",
             draw=(2, 10)),
    ] = 5
    bucket_days: Annotated[
        float,
        Knob("Time bucket per partition", "days", 1, 365, log=True,
             help="The partition key is (conversation id, bucket): one partition per window of this length.",
             draw=(7, 60)),
    ] = 30
    partition_limit_MB: Annotated[
        float,
        Knob("Largest partition you accept", "MB", 10, 1000, log=True,
             help="Cassandra's guidance is to keep partitions under about 100 MB.", draw=(100, 100)),
    ] = 100
    cache_shard_ops_per_s: Annotated[
        float,
        Knob("Operations one cache shard serves", "ops/s", 10_000, 1_000_000, log=True,
             help="A single-threaded Redis primary does on the order of 100,000 simple commands a second.",
             draw=(50_000, 200_000)),
    ] = 100_000
    cache_target_utilization: Annotated[
        float,
        Knob("Cache shard target load", "", 0.2, 0.9, 0.05, percent=True,
             help="Leave room for reconnect storms and a failed shard's traffic.", draw=(0.4, 0.7)),
    ] = 0.5
    connections_per_gateway: Annotated[
        int,
        Knob("Connections per gateway server", "connections", 10_000, 2_000_000, log=True,
             help="Idle WebSocket connections one server holds (memory and file descriptors).",
             draw=(100_000, 1_000_000)),
    ] = 200_000
    partition_msgs_per_s: Annotated[
        float,
        Knob("Messages one partition's consumer handles", "messages/s", 100, 100_000, log=True,
             help="Per partition: look up the recipient's gateway, push, commit the offset.",
             draw=(1000, 20_000)),
    ] = 5000
    partition_headroom: Annotated[
        float,
        Knob("Partition headroom", "×", 1, 10, 0.5,
             help="Growth room: adding partitions later re-maps keys and breaks ordering during the move.",
             draw=(1.5, 4)),
    ] = 2
    brokers: Annotated[
        int,
        Knob("Kafka brokers", "brokers", 3, 100, 1, help="Brokers the topic's partitions spread over.",
             draw=(3, 24)),
    ] = 6
    kafka_replication: Annotated[
        int,
        Knob("Kafka replication factor", "copies", 1, 5, 1, help="Replicas of every partition.",
             draw=(3, 3)),
    ] = 3
    min_insync_replicas: Annotated[
        int,
        Knob("min.insync.replicas", "", 1, 5, 1,
             help="With acks=all, a write is refused unless at least this many replicas are in sync.",
             draw=(2, 2)),
    ] = 2
    follower_lag_s: Annotated[
        float,
        Knob("Follower replication lag", "s", 0.001, 5, log=True,
             help="How far a healthy follower trails its leader; what acks=1 exposes.", draw=(0.01, 0.5)),
    ] = 0.1
    rebalance_pause_s: Annotated[
        float,
        Knob("Rebalance pause", "s", 0.5, 120, log=True,
             help="Time partitions are unowned while a consumer group reassigns them.", draw=(2, 30)),
    ] = 10
    kafka_retention_days: Annotated[
        float,
        Knob("Kafka retention", "days", 1, 30, 1, help="How far back an uncompacted topic can be replayed.",
             draw=(3, 14)),
    ] = 7
    active_conversations_per_user: Annotated[
        int,
        Knob("Conversations per user with a read position", "conversations", 1, 500, log=True,
             help="Keys of the compacted read-receipt topic: one per (user, conversation).", draw=(5, 50)),
    ] = 10
    receipt_bytes: Annotated[
        float,
        Knob("Read-receipt record", "B", 20, 1000, log=True,
             help="Key (user, conversation), last read sequence number, timestamp, record overhead.",
             draw=(50, 200)),
    ] = 100


def solve(p: Params) -> Derivation:
    d = Derivation(p)

    # --- Numbers: traffic and people online -----------------------------------------------------
    per_day = d.step(
        "messages_per_day", "Messages a day", p.daily_active_users * p.messages_per_user_per_day, "1",
        noun="messages", formula="{daily_active_users} users × {messages_per_user_per_day} messages",
    )
    avg = d.step(
        "avg_messages_per_s", "Average message rate", per_day / SECONDS_PER_DAY, "1/s", noun="messages",
        formula="{messages_per_day} / 86,400 s",
    )
    peak = d.step(
        "peak_messages_per_s", "Peak message rate", avg * p.peak_to_average, "1/s", noun="messages",
        formula="{avg_messages_per_s} × {peak_to_average}",
    )
    online = d.step(
        "online_users_peak", "People connected at peak", p.daily_active_users * p.peak_online_fraction, "1",
        noun="connections", formula="{daily_active_users} × {peak_online_fraction}",
    )
    d.step(
        "gateway_servers", "Gateway servers holding the connections",
        math.ceil(online / p.connections_per_gateway - 1e-9), "1", noun="servers",
        formula="⌈{online_users_peak} / {connections_per_gateway}⌉",
    )
    hb = d.step(
        "heartbeats_per_s", "Heartbeats arriving per second", online / p.heartbeat_interval_s, "1/s",
        noun="heartbeats", formula="{online_users_peak} / {heartbeat_interval_s} s",
    )
    d.step(
        "heartbeat_to_message_ratio", "Heartbeats per message at peak", hb / peak, "1", noun="×",
        formula="{heartbeats_per_s} / {peak_messages_per_s}",
    )

    # --- Presence: a write per heartbeat against an expiring key ----------------------------------
    d.step(
        "presence_ttl_s", "Presence key expiry (also the worst offline-detection delay)",
        p.heartbeat_interval_s * p.missed_heartbeats, "s",
        formula="{heartbeat_interval_s} s × {missed_heartbeats} missed",
    )
    transitions = d.step(
        "presence_transitions_per_s", "Online/offline transitions at peak (the only presence DB writes)",
        p.daily_active_users * p.sessions_per_user_per_day * 2 / SECONDS_PER_DAY * p.peak_to_average, "1/s",
        noun="writes",
        formula="{daily_active_users} × {sessions_per_user_per_day} sessions × 2 / 86,400 s × {peak_to_average}",
    )
    d.step(
        "heartbeat_to_transition_ratio", "Heartbeat writes per transition write", hb / transitions, "1",
        noun="×", formula="{heartbeats_per_s} / {presence_transitions_per_s}",
    )
    msg_writes = d.step(
        "message_db_writes_per_s", "Database writes for messages at peak", peak * p.db_writes_per_message,
        "1/s", noun="writes", formula="{peak_messages_per_s} × {db_writes_per_message} writes",
    )
    d.step(
        "measured_replica_writes_per_node", "Published anchor: Netflix's Cassandra benchmark, replica writes per node",
        3_300_000 / 288, "1/s", noun="writes",
        formula="3,300,000 writes/s / 288 nodes",
        note="1.1 M client writes/s at replication 3 is 3.3 M replica writes/s on 288 m1.xlarge nodes (2011).",
    )
    ttl_replica = d.step(
        "ttl_replica_writes_per_s", "Replica writes at peak: messages plus presence transitions, every copy",
        (msg_writes + transitions) * p.db_replication, "1/s", noun="writes",
        formula="({message_db_writes_per_s} + {presence_transitions_per_s}) × {db_replication} copies",
    )
    naive_replica = d.step(
        "naive_replica_writes_per_s", "Replica writes at peak with a last-seen write per heartbeat, every copy",
        (msg_writes + hb) * p.db_replication, "1/s", noun="writes",
        formula="({message_db_writes_per_s} + {heartbeats_per_s}) × {db_replication} copies",
    )
    ttl_nodes = d.step(
        "db_nodes_ttl_presence", "Database nodes: messages plus presence transitions",
        max(p.db_replication, math.ceil(ttl_replica / p.db_node_writes_per_s - 1e-9)), "1", noun="nodes",
        formula="max({db_replication}, ⌈{ttl_replica_writes_per_s} / {db_node_writes_per_s} writes/s⌉)",
        note="Never fewer nodes than copies: each replica of a row lives on a different node.",
    )
    d.step(
        "db_nodes_naive_presence", "Database nodes: messages plus a last-seen write per heartbeat",
        max(p.db_replication, math.ceil(naive_replica / p.db_node_writes_per_s - 1e-9)), "1", noun="nodes",
        formula="max({db_replication}, ⌈{naive_replica_writes_per_s} / {db_node_writes_per_s} writes/s⌉)",
    )
    d.step(
        "naive_load_on_sized_cluster_share", "Naive heartbeat writes on the cluster sized without them",
        naive_replica / (ttl_nodes * p.db_node_writes_per_s), "1", percent=True,
        formula="{naive_replica_writes_per_s} / ({db_nodes_ttl_presence} × {db_node_writes_per_s})",
    )
    d.step(
        "presence_shards", "Cache shards for the presence keys",
        math.ceil(hb / (p.cache_shard_ops_per_s * p.cache_target_utilization) - 1e-9), "1", noun="shards",
        formula="⌈{heartbeats_per_s} / ({cache_shard_ops_per_s} ops/s × {cache_target_utilization})⌉",
    )
    d.step(
        "presence_memory_GB", "Memory for every online user's presence key", online * PRESENCE_KEY_BYTES / 1e9,
        "GB", formula="{online_users_peak} keys × 100 B",
    )
    d.step(
        "presence_fanout_per_s", "Presence pushes to online contacts, on transitions only",
        transitions * p.contacts_per_user * p.peak_online_fraction, "1/s", noun="pushes",
        formula="{presence_transitions_per_s} × {contacts_per_user} contacts × {peak_online_fraction} online",
    )

    # --- Kafka: partitions, consumers, replication, rebalancing, compaction -------------------------
    partitions = d.step(
        "kafka_partitions", "Partitions for the message topic",
        math.ceil(peak * p.partition_headroom / p.partition_msgs_per_s - 1e-9), "1", noun="partitions",
        formula="⌈{peak_messages_per_s} × {partition_headroom} / {partition_msgs_per_s} messages/s⌉",
    )
    consumers = d.step(
        "consumers_needed", "Consumers the peak needs in one group",
        math.ceil(peak / p.partition_msgs_per_s - 1e-9), "1", noun="consumers",
        formula="⌈{peak_messages_per_s} / {partition_msgs_per_s} messages/s⌉",
    )
    d.step(
        "max_consumers_per_group", "Most consumers a group can use (one per partition)", partitions, "1",
        noun="consumers", formula="{kafka_partitions}",
    )
    d.step(
        "single_log_overload", "Load on one partition if every message shared one global order",
        peak / p.partition_msgs_per_s, "1", noun="× its capacity",
        formula="{peak_messages_per_s} / {partition_msgs_per_s} messages/s",
    )
    d.step(
        "kafka_ingress_Bps", "Bytes into the topic at peak (before replication)", peak * p.message_bytes, "B/s",
        formula="{peak_messages_per_s} × {message_bytes} B",
    )
    d.step(
        "replicas_per_broker", "Partition replicas each broker hosts",
        partitions * p.kafka_replication / p.brokers, "1", noun="replicas",
        formula="{kafka_partitions} × {kafka_replication} / {brokers} brokers",
    )
    d.step(
        "broker_losses_still_writable", "Replica losses a partition takes and still accepts acks=all writes",
        max(0, p.kafka_replication - p.min_insync_replicas), "1", noun="of its replicas",
        formula="max(0, {kafka_replication} − {min_insync_replicas})",
    )
    d.step(
        "broker_losses_no_acked_loss", "Replica losses guaranteed to keep every acknowledged message",
        max(0, min(p.min_insync_replicas, p.kafka_replication) - 1), "1", noun="of its replicas",
        formula="max(0, min({min_insync_replicas}, {kafka_replication}) − 1)",
    )
    d.step(
        "acks1_lost_per_broker_loss", "Acknowledged messages lost when a leader dies under acks=1",
        peak * p.follower_lag_s / p.brokers, "1", noun="messages",
        formula="{peak_messages_per_s} × {follower_lag_s} s / {brokers} brokers",
    )
    d.step(
        "eager_rebalance_backlog", "Messages held up by an eager (stop-the-world) rebalance",
        peak * p.rebalance_pause_s, "1", noun="messages",
        formula="{peak_messages_per_s} × {rebalance_pause_s} s",
    )
    d.step(
        "cooperative_rebalance_backlog", "Messages held up when only one consumer's partitions move",
        peak * p.rebalance_pause_s / consumers, "1", noun="messages",
        formula="{peak_messages_per_s} × {rebalance_pause_s} s / {consumers_needed} consumers",
    )
    receipt_log = d.step(
        "receipt_log_GB", "Read receipts kept as a plain log over the retention",
        per_day * p.receipt_bytes * p.kafka_retention_days / 1e9, "GB",
        formula="{messages_per_day} / 1 day × {receipt_bytes} × {kafka_retention_days}",
    )
    compacted = d.step(
        "receipt_compacted_GB", "Same topic compacted: the latest read position per key",
        p.daily_active_users * p.active_conversations_per_user * p.receipt_bytes / 1e9, "GB",
        formula="{daily_active_users} users × {active_conversations_per_user} conversations × {receipt_bytes} B",
    )
    d.step(
        "compaction_ratio", "Plain log over compacted topic", receipt_log / compacted, "1", noun="×",
        formula="{receipt_log_GB} GB / {receipt_compacted_GB} GB",
    )

    # --- Storage ------------------------------------------------------------------------------------
    logical = d.step(
        "history_per_day_TB", "New history a day, one copy", per_day * p.message_bytes / 1e12, "TB",
        formula="{messages_per_day} × {message_bytes} B",
    )
    per_day_tb = d.step(
        "storage_per_day_TB", "Disk filled a day, all replicas", logical * p.db_replication, "TB",
        formula="{history_per_day_TB} TB × {db_replication} copies",
    )
    year_pb = d.step(
        "storage_per_year_PB", "Disk filled a year, all replicas", per_day_tb * 365 / 1000, "PB",
        formula="{storage_per_day_TB} × 365 (days a year)",
    )
    d.step(
        "db_node_disk_TB", "Usable disk per database node (estimate)", DB_NODE_DISK_TB, "TB",
        formula="4 TB",
        note="Estimate: a few TB a node keeps compaction headroom and node replacement to hours.",
    )
    storage_nodes = d.step(
        "db_nodes_for_year_of_history", "Database nodes to hold one year of history, all replicas",
        math.ceil(year_pb * 1000 / DB_NODE_DISK_TB - 1e-9), "1", noun="nodes",
        formula="⌈{storage_per_year_PB} × 1,000 TB/PB / {db_node_disk_TB}⌉",
    )
    d.step(
        "vendor_node_density_TB", "Published anchor: DataStax's recommended data per node", VENDOR_NODE_DENSITY_TB,
        "TB", formula="2 TB",
        note="Up to 2 TB a node; write-once time series under TWCS may go larger.",
    )
    d.step(
        "db_nodes_for_year_at_vendor_density", "Database nodes to hold one year of history at 2 TB a node",
        math.ceil(year_pb * 1000 / VENDOR_NODE_DENSITY_TB - 1e-9), "1", noun="nodes",
        formula="⌈{storage_per_year_PB} × 1,000 TB/PB / {vendor_node_density_TB}⌉",
    )
    d.step(
        "db_nodes_sized", "Database nodes after one year: the larger of writes and storage",
        max(ttl_nodes, storage_nodes), "1", noun="nodes",
        formula="max({db_nodes_ttl_presence}, {db_nodes_for_year_of_history})",
    )

    # --- Partitioning a long conversation in a wide-column store -----------------------------------
    conv_bytes_per_day = p.busy_conversation_msgs_per_day * p.message_bytes
    d.step(
        "unbucketed_partition_MB", "One partition per conversation: its size after the conversation's life",
        conv_bytes_per_day * 365 * p.conversation_years / 1e6, "MB",
        formula="{busy_conversation_msgs_per_day} / 1 day × {message_bytes} B × 365 days × {conversation_years} / 1 year",
    )
    d.step(
        "unbucketed_to_limit_ratio", "That partition over the largest partition you accept",
        conv_bytes_per_day * 365 * p.conversation_years / 1e6 / p.partition_limit_MB, "1", noun="×",
        formula="{unbucketed_partition_MB} MB / {partition_limit_MB} MB",
    )
    d.step(
        "bucket_partition_MB", "One partition per time bucket: its size",
        conv_bytes_per_day * p.bucket_days / 1e6, "MB",
        formula="{busy_conversation_msgs_per_day} / 1 day × {message_bytes} B × {bucket_days}",
    )
    d.step(
        "max_bucket_days", "Longest bucket that keeps a busy conversation's partition under the limit",
        p.partition_limit_MB * 1e6 / conv_bytes_per_day, "d",
        formula="{partition_limit_MB} MB / ({busy_conversation_msgs_per_day} × {message_bytes} B) × 1 day",
    )
    d.step(
        "busy_conversation_peak_writes_per_s", "Writes a second into the busiest conversation's partition at peak",
        p.busy_conversation_msgs_per_day / SECONDS_PER_DAY * p.peak_to_average * p.db_writes_per_message, "1/s",
        noun="writes",
        formula="{busy_conversation_msgs_per_day} / 86,400 s × {peak_to_average} × {db_writes_per_message}",
    )
    return d


# =================================================================================================
# The step-through: one message to a recipient who may be offline
# =================================================================================================

Order = Literal["inbox_first", "publish_first"]
ORDERS: dict[str, tuple[str, str, str]] = {
    # The server's three operations for one message, in the order each design runs them.
    "inbox_first": ("write_inbox", "ack_sender", "publish"),
    "publish_first": ("publish", "ack_sender", "write_inbox"),
}
OP_TEXT = {
    "write_inbox": "write the message to Bob's inbox table (durable, replicated)",
    "ack_sender": "acknowledge Alice: her screen shows one tick, 'sent'",
    "publish": "publish on the live transport (pub/sub: fire and forget, nothing kept)",
}
OP_SHORT = {"write_inbox": "write Bob's inbox row", "ack_sender": "acknowledge Alice", "publish": "publish"}


@dataclass(frozen=True)
class Frame:
    index: int
    actor: str  # "Alice", "Bob", "server"
    event: str
    message: str
    inbox: tuple[str, ...]  # durable rows waiting for Bob
    bob_has: tuple[str, ...]  # what Bob's client holds (deduplicated by message id)
    alice_sees: str  # "sending…", "sent ✓", "delivered ✓✓"
    bob_online: bool
    server_up: bool
    live: str  # what the live path did on this event, "" if nothing


@dataclass(frozen=True)
class Outcome:
    acked: bool  # Alice saw "sent" (or "delivered") at some point
    delivered: bool  # Bob holds the message at the end
    lost: bool  # acknowledged to Alice, never reaches Bob
    copies_received: int  # deliveries Bob's client saw, before its own deduplication
    durable: bool  # a durable inbox row existed at some point


def deliver(order: Order = "inbox_first", crash_after: int | None = None,
            recipient_online: bool = False) -> tuple[list[Frame], Outcome]:
    """Alice sends m1 to Bob. The server runs its three operations in `order`; with `crash_after`
    = 0, 1 or 2 the server dies after that many of them (None: no crash). Alice's client retries a
    send it never saw acknowledged, with the same client message id, so the retry is idempotent.
    Bob's client acknowledges what it receives (live, or from the inbox), which deletes the inbox
    row; it syncs the inbox on reconnect (if he was offline) or on its next periodic sync, and keeps
    one copy per message id."""
    ops = ORDERS[order]
    if crash_after is not None and not 0 <= crash_after < len(ops):
        raise ValueError("crash_after counts the operations completed before the crash: 0, 1, 2 or None")
    frames: list[Frame] = []
    inbox: list[str] = []
    bob: list[str] = []
    state = {"alice": "sending…", "bob_online": recipient_online, "server_up": True,
             "received": 0, "acked": False, "durable": False}

    def push(actor: str, event: str, message: str, live: str = "") -> None:
        frames.append(Frame(len(frames), actor, event, message, tuple(inbox), tuple(bob), state["alice"],
                            state["bob_online"], state["server_up"], live))

    def bob_receives(how: str) -> None:
        state["received"] += 1
        dup = "m1" in bob
        if not dup:
            bob.append("m1")
        had_row = "m1" in inbox
        inbox.clear()
        state["alice"] = "delivered ✓✓"
        what = ("already holds m1 and keeps one copy (deduplicated by message id)" if dup else "shows m1")
        row = "; the inbox row is deleted" if had_row else ""
        push("Bob", "ack", f"Bob's client {what}. It acknowledges sequence 1 {how}{row}. Alice sees two "
             "ticks, 'delivered'.")

    def run(op: str, attempt: int) -> None:
        tag = "" if attempt == 1 else " (retry)"
        if op == "write_inbox":
            if state["durable"] and attempt > 1:
                push("server", op, f"Inbox write{tag}: a row keyed by Alice's client id c1 was already written, "
                     "so the write is a no-op. Idempotency keeps the retry from making a second message.")
            else:
                inbox.append("m1")
                state["durable"] = True
                push("server", op, f"Server: {OP_TEXT[op]}{tag}.")
        elif op == "ack_sender":
            state["acked"] = True
            if state["alice"] == "sending…":
                state["alice"] = "sent ✓"
                push("server", op, f"Server: {OP_TEXT[op]}{tag}.")
            else:
                push("server", op, f"Server: acknowledge Alice{tag}; her screen already shows 'delivered'.")
        elif state["bob_online"]:
            push("server", op, f"Server: {OP_TEXT[op]}{tag}. Bob is connected: his gateway pushes m1 to "
                 "his phone.", live="delivered")
            bob_receives("over the live connection")
        else:
            push("server", op, f"Server: {OP_TEXT[op]}{tag}. Bob has no live connection, so nobody is "
                 "subscribed: m1 is gone from the live path.", live="lost")

    where = "connected" if recipient_online else "offline (his phone is in a tunnel)"
    push("Alice", "send", f"Alice sends m1 to Bob with client id c1; the server gives it sequence 1 in their "
         f"conversation. Bob is {where}.")
    done = len(ops) if crash_after is None else crash_after
    for op in ops[:done]:
        run(op, 1)
    if done < len(ops):
        state["server_up"] = False
        missing = [OP_SHORT[o] for o in ops[done:]]
        push("server", "crash", "The chat server crashes before it can " + ", ".join(missing[:-1])
             + (" or " if len(missing) > 1 else "") + missing[-1] + ".")
        state["server_up"] = True
        if not state["acked"]:
            push("Alice", "retry", "Alice's client never saw an ack, so after its timeout it resends m1 with "
                 "the same client id c1; another server picks it up.")
            for op in ops:
                run(op, 2)
        else:
            push("server", "restart", "Another server takes over. Alice already saw 'sent', so her client "
                 "does not retry: whatever the crashed server had not done stays undone.")
    if recipient_online:
        push("Bob", "sync", "Bob's client runs its periodic sync: it asks the inbox for every row still "
             "waiting for him.")
    else:
        state["bob_online"] = True
        push("Bob", "reconnect", "Bob comes out of the tunnel and reconnects. His client asks the inbox for "
             "every row still waiting for him.")
    if inbox:
        bob_receives("after the drain")
    elif "m1" in bob and state["durable"]:
        push("Bob", "drain", "The inbox is empty: m1 arrived live and its acknowledgement already cleared it.")
    elif "m1" in bob:
        push("Bob", "drain", "The inbox is empty and always was: m1 arrived live, but no durable row was ever "
             "written, so the server's history lacks it and Bob's phone holds the only copy.")
    else:
        push("Bob", "drain", "The inbox is empty. Alice's screen says 'sent' and Bob will never see m1: "
             "the message is lost.")
    delivered = "m1" in bob
    outcome = Outcome(state["acked"], delivered, state["acked"] and not delivered, state["received"],
                      state["durable"])
    return frames, outcome


# What the page's step-through offers and shows (ui: pages/product/chat_one_to_one.py): the replay is
# scripted by its own three controls, so it stays a page panel; its words and its one figure are here.

ORDER_LABELS = {"inbox_first": "Inbox, ack, publish (the design)", "publish_first": "Publish, ack, inbox (the bug)"}
CRASH_CHOICES = (-1, 0, 1, 2)  # -1: no crash


def crash_label(order: Order, crash: int) -> str:
    """The crash selector's words for one choice under this order."""
    if crash < 0:
        return "No crash"
    if crash == 0:
        return "Crash before anything"
    return "Crash after: " + " and ".join(OP_SHORT[o] for o in ORDERS[order][:crash])


def frame_cards(f: Frame) -> list[tuple[str, str]]:
    """(label, value) of the four cards under one event: who sees what."""
    return [("Alice's screen", f.alice_sees), ("Bob's inbox rows", ", ".join(f.inbox) or "empty"),
            ("Bob's phone shows", ", ".join(f.bob_has) or "nothing"),
            ("Bob connected", "yes" if f.bob_online else "no")]


def frame_tone(f: Frame, last: bool, outcome: Outcome) -> str:
    """"error" for a crash or a loss, "success" for a good ending, else "info"."""
    if f.event == "crash" or f.live == "lost" or (last and outcome.lost):
        return "error"
    return "success" if last else "info"


def event_log(frames: list[Frame]) -> dict[str, list]:
    """The events so far as the log table's columns."""
    return {"#": [x.index for x in frames], "Who": [x.actor for x in frames], "Event": [x.event for x in frames],
            "Live path": [x.live or "" for x in frames], "Inbox": [", ".join(x.inbox) for x in frames],
            "Alice sees": [x.alice_sees for x in frames]}


def delivery_steps(p: Params, outcome: Outcome) -> Derivation:
    """How one step-through run ends, as steps: the copies Bob's client received (before it keeps one per
    message id) and the sentence the panel closes with."""
    d = Derivation(p)
    d.step("replay_copies_received", "Copies of m1 Bob's client received, before deduplication",
           outcome.copies_received, "1", noun="copies", kind="simulated")
    verdict = ("lost: Alice was told 'sent' and Bob never receives it" if outcome.lost
               else "delivered" + ("" if outcome.durable else ", but never written durably"))
    copies = (f" Bob's client received {d['replay_copies_received'].display()} and shows one."
              if outcome.delivered else "")
    d.step("replay_ending", "How this run ends", f"This run ends {verdict}.{copies}", "1", kind="verdict",
           formula="{replay_copies_received} received; lost when Alice was acknowledged and Bob holds nothing")
    return d
