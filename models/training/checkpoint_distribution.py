"""Distribute a large checkpoint from one source to hundreds of hosts.

The teaching order is the interview's: the download bound every design must respect, the
naive pull that serializes every copy through the source, the store-and-forward tree, then
chunking. A chunked relay chain nearly meets the bound but one slow or dead relay ruins it;
a chunked k-ary tree still pushes every chunk k times through each parent's uplink, so it
stays near k x the bound; a swarm with rarest-first meets the bound and tolerates bad peers,
which `simulate` checks.
"""

from __future__ import annotations

import math
from typing import Annotated

from models.core import Derivation, Knob, StrictModel
from models.sim import swarm

SHA256_BYTES = 32  # one digest per chunk in the manifest
SIM_MAX_HOSTS = 400

# Series for the `times_vs_hosts` chart (time versus hosts, log-log), bound last.
PERLMUTTER_GBPS, PERLMUTTER_OSS = 5000.0, 274  # NERSC docs: over 5 TB/s aggregate from 274 OSS servers
CHART_SERIES = ("naive_pull_s", "tree_s", "binomial_s", "pfs_s", "chunked_tree_s", "pipeline_s", "swarm_estimate_s",
                "lower_bound_s")


class Params(StrictModel):
    checkpoint_gb: Annotated[
        float,
        Knob(
            "Checkpoint size", "GB", 1, 4000, step=1, log=True,
            help="Bytes every host must end up holding: weights, plus optimizer state if training resumes.",
            draw=(20, 2000),
        ),
    ] = 400
    link_gbps: Annotated[
        float,
        Knob(
            "Link speed per host", "Gb/s", 1, 800, step=1, log=True,
            help="Each host's (and the source's) NIC, the same in both directions; bits, not bytes.",
            draw=(10, 400),
        ),
    ] = 10
    hosts: Annotated[
        int,
        Knob(
            "Hosts to reach", "", 2, 20000, step=1, log=True,
            help="Receivers; the source that starts with the checkpoint is not one of them.",
            draw=(50, 4000),
        ),
    ] = 200
    chunk_mb: Annotated[
        float,
        Knob(
            "Chunk size", "MB", 1, 10000, step=1, log=True,
            help="Unit of forwarding and of hashing: a host relays a chunk as soon as it has verified it.",
            draw=(16, 1000),
        ),
    ] = 100
    tree_fanout: Annotated[
        int,
        Knob(
            "Tree fan-out", "", 2, 8, step=1,
            help="Children per parent in the tree designs; each child costs the parent one more full push.",
            draw=(2, 4),
        ),
    ] = 2
    slow_peer_fraction: Annotated[
        float,
        Knob(
            "Slow peers", "", 0, 0.5, step=0.01, percent=True,
            help="Share of hosts whose NIC is congested or throttled (used by the swarm simulation).",
            draw=(0, 0.2), simulation=True),
    ] = 0.0
    slow_peer_speed: Annotated[
        float,
        Knob(
            "Slow peer speed", "", 0.05, 1, step=0.05, percent=True,
            help="Fraction of the link speed a slow peer achieves, in both directions.",
            draw=(0.1, 0.5),
        ),
    ] = 0.25
    pfs_read_GBps: Annotated[
        float,
        Knob(
            "Parallel filesystem read, for this rollout", "GB/s", 5, 5000, step=1, log=True,
            help="Aggregate read a shared filesystem (Lustre, GPFS, Weka) gives this rollout, next to every "
                 "other job's traffic. A planning figure.",
            draw=(20, 1000),
        ),
    ] = 100
    pfs_server_read_GBps: Annotated[
        float,
        Knob(
            "Read per filesystem server", "GB/s", 1, 100, step=1, log=True,
            help="What one filesystem server delivers, after its drives and NICs (a planning figure).",
            draw=(10, 40),
        ),
    ] = 20
    failed_peer_fraction: Annotated[
        float,
        Knob(
            "Peers that die mid-transfer", "", 0, 0.3, step=0.01, percent=True,
            help="Share of hosts that crash during the first half of the rollout (swarm simulation).",
            draw=(0, 0.1), simulation=True),
    ] = 0.0


def _tree_capacity(fanout: int, levels: int) -> int:
    """Hosts a k-ary tree of `levels` levels below the source holds: k + k^2 + ... + k^levels."""
    total, width = 0, 1
    for _ in range(levels):
        width *= fanout
        total += width
    return total


def _tree_levels(fanout: int, hosts: int) -> int:
    """Smallest L with k + ... + k^L >= hosts, in integers (no log rounding at the boundaries)."""
    levels, total, width = 0, 0, 1
    while total < hosts:
        width *= fanout
        total += width
        levels += 1
    return levels


def solve(p: Params) -> Derivation:
    d = Derivation(p)
    link = d.step(
        "link_GBps", "Link speed in bytes", p.link_gbps / 8, "GB/s",
        formula="{link_gbps} Gb/s / 8 bits per byte",
    )
    bound = d.step(
        "lower_bound_s", "Lower bound: every host pulls every byte through its own downlink",
        p.checkpoint_gb / link, "s",
        formula="{checkpoint_gb} GB / {link_GBps} GB/s",
    )
    naive = d.step(
        "naive_pull_s", "Naive pull: every copy leaves through the source's one uplink",
        p.hosts * p.checkpoint_gb / link, "s",
        formula="{hosts} copies × {checkpoint_gb} GB / {link_GBps} GB/s",
    )
    d.step(
        "naive_vs_bound_ratio", "Naive pull over the bound", naive / bound, "1", noun="×",
        formula="{naive_pull_s} s / {lower_bound_s} s",
    )

    k = p.tree_fanout
    levels = d.step(
        "tree_levels", "Tree levels below the source to hold every host", _tree_levels(k, p.hosts), "1",
        noun="levels",
        formula="smallest L with {tree_fanout} + {tree_fanout}² + … + {tree_fanout}^L ≥ {hosts}", kind="search",
    )
    d.step(
        "tree_capacity", "Hosts a tree of that depth holds", _tree_capacity(k, levels), "1", noun="hosts",
        formula="{tree_fanout} × ({tree_fanout}^{tree_levels} − 1) / ({tree_fanout} − 1)",
        note="The geometric sum k + k² + … + k^L.",
    )
    d.step(
        "tree_short_capacity", "Hosts one level fewer would hold", _tree_capacity(k, levels - 1), "1",
        noun="hosts",
        formula="{tree_fanout} × ({tree_fanout}^({tree_levels} − 1) − 1) / ({tree_fanout} − 1)",
    )
    d.step(
        "tree_leaf_share", "Hosts on the tree's last level, all leaves", (p.hosts - _tree_capacity(k, levels - 1)) / p.hosts,
        "1", percent=True,
        formula="({hosts} − {tree_short_capacity}) / {hosts}",
    )
    per_level = d.step(
        "tree_per_level_s", "Tree, per level: a parent pushes a full copy to each child through one uplink",
        k * p.checkpoint_gb / link, "s",
        formula="{tree_fanout} children × {checkpoint_gb} GB / {link_GBps} GB/s",
    )
    tree = d.step(
        "tree_s", "Tree, store-and-forward: levels run one after another", levels * per_level, "s",
        formula="{tree_levels} levels × {tree_per_level_s} s",
    )
    d.step(
        "tree_vs_bound_ratio", "Tree over the bound (fan-out × levels)", tree / bound, "1", noun="×",
        formula="{tree_s} s / {lower_bound_s} s",
    )
    d.step(
        "speedup_tree_over_naive", "Tree speed-up over the naive pull", naive / tree, "1", noun="×",
        formula="{naive_pull_s} s / {tree_s} s",
    )

    # Binomial tree: every holder (the source included) sends a whole copy to one new host each
    # round, so holders double: 1, 2, 4, ... and hosts + 1 holders take ceil(log2(hosts + 1)) rounds.
    b_rounds = d.step(
        "binomial_rounds", "Binomial tree: rounds while every holder sends one whole copy each",
        swarm.fill_rounds(p.hosts), "1", noun="rounds",
        formula="⌈log2({hosts} + 1)⌉",
    )
    binomial = d.step(
        "binomial_s", "Binomial tree, whole copies: one full push per round", b_rounds * bound, "s",
        formula="{binomial_rounds} × {lower_bound_s} s",
    )
    d.step(
        "binomial_vs_bound", "Binomial tree over the bound", binomial / bound, "1", noun="×",
        formula="{binomial_s} s / {lower_bound_s} s",
    )
    # A shared parallel filesystem: every host reads its own copy; the filesystem's aggregate read
    # or the hosts' downlinks, whichever is lower, sets the pace.
    fleet = d.step(
        "fleet_downlink_GBps", "Every host's downlink together", p.hosts * link, "GB/s",
        formula="{hosts} × {link_GBps}",
    )
    pfs = d.step(
        "pfs_s", "Parallel filesystem: every host reads its own copy",
        p.hosts * p.checkpoint_gb / min(p.pfs_read_GBps, fleet), "s",
        formula="{hosts} × {checkpoint_gb} / min({pfs_read_GBps}, {fleet_downlink_GBps})",
    )
    d.step(
        "pfs_vs_bound", "Parallel filesystem over the bound", pfs / bound, "1", noun="×",
        formula="{pfs_s} s / {lower_bound_s} s",
    )
    d.step(
        "pfs_servers_for_bound", "Filesystem servers it takes to feed every downlink at once",
        math.ceil(fleet / p.pfs_server_read_GBps - 1e-9), "1", noun="servers",
        formula="⌈{fleet_downlink_GBps} / {pfs_server_read_GBps}⌉",
    )
    # NERSC Perlmutter's all-flash Lustre: over 5 TB/s from 274 OSS servers (a measured anchor).
    perl_server = d.step("perlmutter_oss_GBps", "Measured anchor: one Perlmutter all-flash Lustre server",
                         PERLMUTTER_GBPS / PERLMUTTER_OSS, "GB/s",
                         formula=f"{PERLMUTTER_GBPS / 1000:g} TB/s / {PERLMUTTER_OSS} OSS servers")
    d.step("pfs_server_vs_perlmutter", "The assumed server read over a Perlmutter server's",
           p.pfs_server_read_GBps / perl_server, "1", noun="×",
           formula="{pfs_server_read_GBps} / {perlmutter_oss_GBps}")
    d.step("pfs_perlmutter_s", "The rollout on all of a Perlmutter-sized filesystem (5 TB/s), every other job stopped",
           p.hosts * p.checkpoint_gb / min(PERLMUTTER_GBPS, fleet), "s",
           formula=f"{{hosts}} × {{checkpoint_gb}} / min({PERLMUTTER_GBPS:,.0f} GB/s, {{fleet_downlink_GBps}})")
    d.step(
        "pfs_read_TB", "Bytes the filesystem serves for one rollout", p.hosts * p.checkpoint_gb / 1000, "TB",
        formula="{hosts} × {checkpoint_gb}",
    )

    chunk_gb = d.step(
        "chunk_GB", "Chunk size (a chunk cannot exceed the checkpoint)",
        min(p.chunk_mb / 1000, p.checkpoint_gb), "GB",
        formula="min({chunk_mb} MB, {checkpoint_gb} GB)",
    )
    # The epsilon keeps 0.3 GB / 0.1 GB from becoming 4 chunks through float rounding.
    chunks = d.step(
        "chunk_count", "Chunks", math.ceil(p.checkpoint_gb / chunk_gb - 1e-9), "1", noun="chunks",
        formula="⌈{checkpoint_gb} GB / {chunk_GB} GB⌉",
    )
    chunk_s = d.step(
        "chunk_time_s", "One chunk over one link", chunk_gb / link, "s",
        formula="{chunk_GB} GB / {link_GBps} GB/s",
    )
    pipeline = d.step(
        "pipeline_s", "Chunked relay chain: each host forwards a chunk as soon as it lands",
        (chunks + p.hosts - 1) * chunk_s, "s",
        formula="({chunk_count} + {hosts} − 1) × {chunk_time_s} s",
    )
    d.step(
        "pipeline_vs_bound", "Relay chain over the bound", pipeline / bound, "1", noun="×",
        formula="{pipeline_s} s / {lower_bound_s} s",
    )
    d.step(
        "pipeline_overhead_s", "Relay chain above the bound (the pipeline fill)", pipeline - bound, "s",
        formula="{pipeline_s} s − {lower_bound_s} s",
    )
    chunked_tree = d.step(
        "chunked_tree_s", "Chunked tree: every chunk still leaves each parent k times",
        k * (chunks + levels - 1) * chunk_s, "s",
        formula="{tree_fanout} × ({chunk_count} + {tree_levels} − 1) × {chunk_time_s} s",
    )
    d.step(
        "chunked_tree_vs_bound", "Chunked tree over the bound", chunked_tree / bound, "1", noun="×",
        formula="{chunked_tree_s} s / {lower_bound_s} s",
    )
    d.step(
        "manifest_bytes", "Manifest of per-chunk SHA-256 digests", chunks * SHA256_BYTES, "B",
        formula="{chunk_count} chunks × 32 B",
    )
    d.step(
        "chain_worst_stranded", "Hosts cut off when the first relay of a chain dies", p.hosts - 1, "1",
        noun="hosts",
        formula="{hosts} − 1",
    )
    # Worst place for a slow relay is the head: it receives and forwards at `slow_peer_speed`,
    # everyone after it relays at full speed one chunk behind. At speed 1 this is pipeline_s.
    slow_chain = d.step(
        "chain_with_one_slow_peer_s",
        "Relay chain whose first relay runs slow (throttled stream + pipeline fill)",
        (chunks + 1) * chunk_s / p.slow_peer_speed + (p.hosts - 2) * chunk_s, "s",
        formula="({chunk_count} + 1) × {chunk_time_s} s / {slow_peer_speed} + ({hosts} − 2) × {chunk_time_s} s",
    )
    d.step(
        "slow_chain_vs_bound", "Chain with one slow relay over the bound", slow_chain / bound, "1", noun="×",
        formula="{chain_with_one_slow_peer_s} s / {lower_bound_s} s",
    )
    rounds = d.step(
        "swarm_fill_rounds", "Doublings until every host holds a first chunk", swarm.fill_rounds(p.hosts), "1",
        noun="rounds",
        formula="⌈log2({hosts} + 1)⌉",
    )
    fill = d.step(
        "swarm_fill_s", "Swarm pipeline fill through a doubling fan-out", rounds * chunk_s, "s",
        formula="{swarm_fill_rounds} × {chunk_time_s} s",
    )
    swarm_s = d.step(
        "swarm_estimate_s", "Swarm, estimate (the simulation checks it)", bound + fill, "s",
        formula="{lower_bound_s} s + {swarm_fill_s} s",
    )
    d.step(
        "swarm_vs_bound", "Swarm estimate over the bound", swarm_s / bound, "1", noun="×",
        formula="{swarm_estimate_s} s / {lower_bound_s} s",
    )
    return d


def sim_chunks(p: Params, max_chunks: int = 200) -> int:
    chunks = math.ceil(p.checkpoint_gb / min(p.chunk_mb / 1000, p.checkpoint_gb) - 1e-9)
    return max(1, min(chunks, max_chunks))


def sim_step_s(p: Params, max_chunks: int = 200) -> float:
    """Seconds per simulation step: the (possibly coarsened) chunk over one full-speed link."""
    d = solve(p)
    return d.value("chunk_count") * d.value("chunk_time_s") / sim_chunks(p, max_chunks)


def simulate(p: Params, seed: int = 0, max_chunks: int = 200) -> swarm.SwarmResult:
    """Run the swarm for this scenario; results are in chunk-steps (`sim_step_s` gives seconds).

    Hosts are capped at 400 to keep a slider move interactive; that shortens the pipeline fill
    by about log2(hosts / 400) steps, a handful at most. Beyond `max_chunks` the sim coarsens
    the checkpoint into `max_chunks` larger chunks: a bigger chunk makes each fill step longer,
    so coarsening only raises the simulated overhead and the result stays a conservative check
    of `swarm_estimate_s`.
    """
    return swarm.run(swarm.Config(
        min(p.hosts, SIM_MAX_HOSTS),
        sim_chunks(p, max_chunks),
        slow_fraction=p.slow_peer_fraction,
        slow_speed=p.slow_peer_speed,
        failed_fraction=p.failed_peer_fraction,
    ), seed)
