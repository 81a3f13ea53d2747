"""Checkpoint storage for a synchronous burst every 30 minutes (seeds 000 and 004).

Teaching order: the burst arithmetic (aggregate, per GPU, peak-to-average, the drain), the two
tiers that fall out of it (a burst tier sized by bandwidth, a durable tier sized by capacity),
retention (last K plus milestones), resharding onto a different rank count, and the failures
that break each number.

Modelling choices, all stated on the page:
- The checkpoint is resumable training state: the weights and the optimizer's fp32 copies, no
  gradients (models/engine/training.py: 14 B/param for bf16 weights with fp32 master, m and v;
  12 for fp32 training). Parameters are counted from the model's shape (models/engine/shape.py).
  The seed's 1 TB is a 70B-class model: Llama 3 70B's 70.6B x 14 B = 0.99 TB.
- Writes are spread evenly: every GPU writes a distinct 1/N of the state (fully sharded, or
  data-parallel replicas splitting the replicated part), so the per-GPU share is size / GPUs.
- Resharding treats the state as one flat array cut into equal contiguous ranges (FSDP-style
  flat shards). Real layouts cut along tensor dimensions, but the overlap count is the same
  question asked per tensor.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

from models.catalog import GPUS_PER_NODE, LINKS
from models.core import Derivation, Knob, StrictModel
from models.engine.knobs import ModelKnobs, llm, with_defaults
from models.engine.training import TrainingStateKnobs, state_bytes
# Burst-tier slots: the checkpoint being written, the newest complete one (draining), and the one
# before it (the fallback if the newest proves unloadable).
FAST_TIER_SLOTS = 3
SNAPSHOT_LINK = "PCIe Gen5 x16"  # GPU -> pinned host memory for an asynchronous snapshot
# What real burst tiers and parallel file systems deliver per server (public figures, cited on the page):
# NERSC's Cori burst buffer (Cray DataWarp): up to 6.5 GB/s per burst-buffer node, over 1.7 TB/s in all.
CORI_BB_NODE_GBPS = 6.5
# NERSC's Perlmutter scratch (all-flash Lustre, ClusterStor E1000): over 5 TB/s from 274 OSS servers.
PERLMUTTER_GBPS, PERLMUTTER_OSS = 5000.0, 274
# Meta's Tectonic for Llama 3: 2 TB/s sustained (7 TB/s peak) from 7,500 SSD-equipped servers.
TECTONIC_GBPS, TECTONIC_SERVERS = 2000.0, 7500


def max_source_shards(old: int, new: int) -> int:
    """Most old shards any new rank's range overlaps, when [0, 1) is cut into `old` equal shards
    and then into `new` equal ranges.

    In units of 1 / (old * new): old shard i is [i*new, (i+1)*new), new rank j is
    [j*old, (j+1)*old). Rank j overlaps shards floor(j*old/new) .. ceil((j+1)*old/new) - 1, a count
    of ceil((j+1)*old/new) - floor(j*old/new). With g = gcd, n = old/g, m = new/g and
    r = (j*n) mod m, that count is ceil((r + n) / m); r takes every value 0..m-1 as j runs over one
    period of m ranks (n and m are coprime), so the maximum is at r = m - 1: ceil((n + m - 1) / m).
    O(1), so solve stays fast at any rank count; the tests check it against the enumeration.
    """
    g = math.gcd(old, new)
    n, m = old // g, new // g
    return -(-(n + m - 1) // m)


class _CheckpointKnobs(StrictModel):
    gpus: Annotated[
        int,
        Knob("GPUs writing", "GPUs", 8, 100_000, log=True,
             help="GPUs in the job; each writes an equal, distinct share of the checkpoint.",
             draw=(256, 16_384), draw_choices=(256, 512, 1024, 2048, 4096, 8192, 16384)),
    ] = 1000
    interval_min: Annotated[
        float,
        Knob("Checkpoint interval", "min", 5, 240, 5,
             help="Start of one checkpoint to the start of the next.", draw=(10, 120)),
    ] = 30
    burst_window_s: Annotated[
        float,
        Knob("Burst window", "s", 10, 600, log=True,
             help="The save must be complete (on the burst tier) within this time; training waits for it.",
             draw=(30, 300)),
    ] = 60
    fast_server_write_GBps: Annotated[
        float,
        Knob("Write rate per burst-tier server", "GB/s", 1, 100, log=True,
             help="Sustained write one all-flash storage server absorbs (its NICs or its drives, "
             "whichever is lower). An assumption: a Cori burst-buffer node gave 6.5 GB/s, a "
             "Perlmutter all-flash Lustre server about 18 GB/s.",
             draw=(5, 40)),
    ] = 10
    fast_tier_headroom: Annotated[
        float,
        Knob("Burst-tier headroom", "×", 1, 4, 0.1,
             help="Provisioned write rate over the bare requirement, so a lost server or a slow "
             "writer does not push the burst past its window.",
             draw=(1, 3)),
    ] = 2.0
    keep_last: Annotated[
        int,
        Knob("Keep the last K", "checkpoints", 1, 50,
             help="Most recent checkpoints kept on durable storage (rollback after a loss spike).",
             draw=(2, 10)),
    ] = 5
    milestone_every_h: Annotated[
        float,
        Knob("Milestone every", "h", 1, 720, log=True,
             help="One checkpoint per period is pinned for the life of the run.", draw=(6, 168)),
    ] = 24
    milestone_contents: Annotated[
        Literal["full state", "weights only"],
        Knob("Milestones keep", help="Full state can resume training from the milestone; "
             "weights only (2 B/param) can be evaluated or fine-tuned, not resumed."),
    ] = "full state"
    run_days: Annotated[
        float,
        Knob("Run length", "days", 1, 365, 1, help="Length of the training run.", draw=(14, 120)),
    ] = 90
    old_shards: Annotated[
        int,
        Knob("Shards in the saved checkpoint", "shards", 8, 4096, 8,
             help="Ranks that wrote the checkpoint, each one equal contiguous range.",
             draw=(128, 2048)),
    ] = 512
    new_ranks: Annotated[
        int,
        Knob("Ranks resuming", "ranks", 8, 4096, 8,
             help="Ranks of the job that loads it (after losing nodes, or on another cluster).",
             draw=(64, 2048)),
    ] = 256
    uneven_new_ranks: Annotated[
        int,
        Knob("A second resume size to compare", "ranks", 8, 4096, 8,
             help="Another rank count, typically one that does not divide the shard count.",
             draw=(64, 2048)),
    ] = 320
    peer_replicas: Annotated[
        int,
        Knob("In-memory copies on peers", "copies", 1, 3,
             help="Other nodes whose CPU memory holds a copy of each node's shard (Gemini-style in-memory "
             "checkpoints); a node's own snapshot is not counted.", draw=(1, 2)),
    ] = 1
    peer_link_GBps: Annotated[
        float,
        Knob("Bandwidth for peer copies", "GB/s", 1, 100, log=True,
             help="What one node spends on sending its shard to peers: part of its 400G NICs "
             "(50 GB/s each), shared with training traffic. A planning figure.", draw=(5, 50)),
    ] = 25
    in_memory_interval_min: Annotated[
        float,
        Knob("In-memory checkpoint interval", "min", 0.5, 60, 0.5, log=True,
             help="How often the peer copies are refreshed; Gemini refreshes after every step.", draw=(1, 10)),
    ] = 2
    host_memory_GB: Annotated[
        float,
        Knob("CPU memory per node", "GB", 256, 4096, log=True,
             help="System memory of one 8-GPU node (a DGX H100 has 2 TB).", draw=(1024, 2048)),
    ] = 2048
    micro_batch_seqs: Annotated[
        int,
        Knob("Micro-batch per rank", "sequences", 1, 16,
             help="Sequences one data-parallel rank runs per forward/backward pass.", draw=(1, 4)),
    ] = 1
    grad_accum_saved: Annotated[
        int,
        Knob("Gradient accumulation when saved", "micro-batches", 1, 64,
             help="Micro-batches each rank accumulated per optimizer step in the job that saved.", draw=(1, 8)),
    ] = 2
    resume_step: Annotated[
        int,
        Knob("Optimizer step of the checkpoint", "steps", 1, 1_000_000, log=True,
             help="The step the checkpoint was taken at; with the global batch it fixes the data position.",
             draw=(1000, 200_000)),
    ] = 20_000


class Params(with_defaults(ModelKnobs, model="Llama-3-70B"), TrainingStateKnobs, _CheckpointKnobs):
    """The save schedule and the tiers, the training-state convention, then the model."""


def solve(p: Params) -> Derivation:
    d = Derivation(p)
    m, sb = llm(p), state_bytes(p)
    # --- Numbers: the burst ---------------------------------------------------------------
    params = d.step("model_params", f"{m.name} parameters (counted from its shape)", m.total_params, "1",
                    noun="parameters", kind="lookup")
    d.step("training_state_bytes_per_param", f"Training state per parameter ({p.training_state})", sb.total, "B",
           note=sb.source, kind="lookup")
    bpp = d.step("checkpoint_bytes_per_param", "Checkpoint per parameter: weights and fp32 optimizer state",
                 sb.checkpoint, "B", formula=f"{sb.weights:g} B (weights) + {sb.checkpoint_optimizer:g} B "
                                             "(optimizer state, no gradients)")
    ckpt_tb = d.step(
        "checkpoint_TB", "Checkpoint: resumable training state", params * bpp / 1e12, "TB",
        formula="{model_params} × {checkpoint_bytes_per_param} B",
    )
    ckpt_gb = ckpt_tb * 1000
    wbpp = d.step("weight_bytes_per_param", "Working weights per parameter", sb.weights, "B", kind="lookup")
    d.step(
        "weights_only_GB", "The same model's working weights alone (not resumable)", params * wbpp / 1e9, "GB",
        formula="{model_params} × {weight_bytes_per_param} B",
    )
    shard_gb = d.step(
        "per_gpu_shard_GB", "Each GPU's share of the checkpoint", ckpt_gb / p.gpus, "GB",
        formula="{checkpoint_TB} TB / {gpus} GPUs",
    )
    interval_s = p.interval_min * 60
    ratio = d.step(
        "peak_to_average", "Peak write rate over the average", interval_s / p.burst_window_s, "1", noun="×",
        formula="{interval_min} / {burst_window_s}",
    )
    agg = d.step(
        "aggregate_write_GBps", "Aggregate write rate the burst needs", ckpt_gb / p.burst_window_s, "GB/s",
        formula="{checkpoint_TB} TB / {burst_window_s} s",
    )
    d.step(
        "per_gpu_write_GBps", "Write rate per GPU during the burst", agg / p.gpus, "GB/s",
        formula="{aggregate_write_GBps} GB/s / {gpus} GPUs",
    )
    drain = d.step(
        "min_drain_GBps", "Drain to durable storage: the average rate", ckpt_gb / interval_s, "GB/s",
        formula="{checkpoint_TB} / {interval_min}",
    )
    # --- Shape: two tiers -----------------------------------------------------------------
    provisioned = d.step(
        "fast_tier_GBps", "Burst tier, provisioned write rate", agg * p.fast_tier_headroom, "GB/s",
        formula="{aggregate_write_GBps} GB/s × {fast_tier_headroom}",
    )
    # Never fewer than two servers, so one can fail without taking the tier with it.
    servers = d.step(
        "fast_tier_servers", "Burst-tier servers (at least two)",
        max(2, math.ceil(provisioned / p.fast_server_write_GBps - 1e-9)), "1", noun="servers",
        formula="max(2, ⌈{fast_tier_GBps} GB/s / {fast_server_write_GBps} GB/s⌉)",
    )
    cori = d.step("cori_bb_node_GBps", "NERSC Cori burst buffer: peak write per burst-buffer node", CORI_BB_NODE_GBPS,
                  "GB/s", kind="lookup", note="NERSC docs: up to 6.5 GB/s a node, over 1.7 TB/s in all.")
    perl = d.step("perlmutter_oss_GBps", "NERSC Perlmutter all-flash Lustre: bandwidth per storage server",
                  PERLMUTTER_GBPS / PERLMUTTER_OSS, "GB/s",
                  formula=f"{PERLMUTTER_GBPS / 1000:g} TB/s / {PERLMUTTER_OSS} OSS servers",
                  note="NERSC docs: over 5 TB/s aggregate from 274 OSSs, so at least this.")
    d.step("tectonic_server_GBps", "Meta's Tectonic (Llama 3): sustained write per server",
           TECTONIC_GBPS / TECTONIC_SERVERS, "GB/s",
           formula=f"{TECTONIC_GBPS / 1000:g} TB/s / {TECTONIC_SERVERS:,} servers")
    d.step("fast_server_vs_reference", "Where the assumed per-server rate sits against those systems",
           ("below a Cori burst-buffer node: conservative" if p.fast_server_write_GBps < cori
            else "within the range of a Cori burst-buffer node to a Perlmutter flash server"
            if p.fast_server_write_GBps <= perl
            else "above a Perlmutter flash server: check the vendor's measured write, not its read"),
           formula="{cori_bb_node_GBps} ≤ {fast_server_write_GBps} ≤ {perlmutter_oss_GBps}", kind="verdict")
    d.step("fast_tier_servers_cori", "Burst-tier servers at a Cori burst-buffer node's rate",
           max(2, math.ceil(provisioned / cori - 1e-9)), "1", noun="servers",
           formula="max(2, ⌈{fast_tier_GBps} / {cori_bb_node_GBps}⌉)")
    d.step("fast_tier_servers_perlmutter", "Burst-tier servers at a Perlmutter flash server's rate",
           max(2, math.ceil(provisioned / perl - 1e-9)), "1", noun="servers",
           formula="max(2, ⌈{fast_tier_GBps} / {perlmutter_oss_GBps}⌉)")
    d.step(
        "fast_tier_capacity_TB", "Burst-tier capacity: in flight, newest, fallback",
        FAST_TIER_SLOTS * ckpt_tb, "TB",
        formula="3 × {checkpoint_TB} TB",
    )
    d.step(
        "single_tier_idle_fraction", "Share of the time a tier sized for the peak sits idle",
        1 - 1 / ratio, "1", percent=True,
        formula="1 − 1 / {peak_to_average}",
    )
    sync_frac = d.step(
        "sync_stall_fraction", "Training time spent waiting on a synchronous save",
        p.burst_window_s / interval_s, "1", percent=True,
        formula="{burst_window_s} / {interval_min}",
    )
    d.step(
        "sync_stall_gpu_hours_per_day", "GPU time a synchronous save costs per day",
        p.gpus * 24 * sync_frac, "h",
        formula="{gpus} GPUs × 24 h × {sync_stall_fraction}", noun="GPU")
    snapshot_GBps = d.step(
        "snapshot_link_GBps", f"GPU to host memory over {SNAPSHOT_LINK}", LINKS[SNAPSHOT_LINK].GBps, "GB/s",
        formula=f"{SNAPSHOT_LINK}, models/catalog.py", kind="lookup",
    )
    d.step(
        "snapshot_stall_s", "Asynchronous save: GPU pause to copy its share to host memory",
        shard_gb / snapshot_GBps, "s",
        formula="{per_gpu_shard_GB} / {snapshot_link_GBps}",
    )
    d.step(
        "rpo_burst_min", "Oldest the newest safe checkpoint gets, flushed within the window",
        p.interval_min + p.burst_window_s / 60, "min",
        formula="{interval_min} + {burst_window_s}",
    )
    d.step(
        "rpo_async_average_min", "Oldest it gets if the snapshot trickles out at the average rate",
        2 * p.interval_min, "min",
        formula="2 × {interval_min} min",
    )
    # --- In-memory checkpoints on peers (Gemini-style) -----------------------------------------
    nodes = d.step("nodes", "Nodes in the job", math.ceil(p.gpus / GPUS_PER_NODE), "1", noun="nodes",
                   formula=f"⌈{{gpus}} / {GPUS_PER_NODE} GPUs per node⌉")
    node_gb = d.step("node_shard_GB", "One node's share of the checkpoint", ckpt_gb / nodes, "GB",
                     formula="{checkpoint_TB} / {nodes}")
    held = d.step("peer_host_GB", "CPU memory each node holds: its own snapshot plus its peers' copies",
                  (1 + p.peer_replicas) * node_gb, "GB",
                  formula="(1 + {peer_replicas}) × {node_shard_GB}")
    d.step("peer_host_share", "Share of a node's CPU memory that takes", held / p.host_memory_GB, "1", percent=True,
           formula="{peer_host_GB} / {host_memory_GB}")
    copy_s = d.step("peer_copy_s", "Time to send a node's shard to its peers", p.peer_replicas * node_gb / p.peer_link_GBps,
                    "s", formula="{peer_replicas} × {node_shard_GB} / {peer_link_GBps}")
    d.step("peer_copy_duty", "Share of each in-memory interval the copy keeps that bandwidth busy",
           copy_s / (p.in_memory_interval_min * 60), "1", percent=True,
           formula="{peer_copy_s} / {in_memory_interval_min}")
    d.step("peer_rpo_min", "Oldest the newest in-memory copy gets", p.in_memory_interval_min + copy_s / 60, "min",
           formula="{in_memory_interval_min} + {peer_copy_s}")
    d.step("peer_recover_s", "A replacement node pulls its shard back from a peer", node_gb / p.peer_link_GBps, "s",
           formula="{node_shard_GB} / {peer_link_GBps}")
    # --- Retention --------------------------------------------------------------------------
    per_day = d.step(
        "checkpoints_per_day", "Checkpoints per day", 1440 / p.interval_min, "1", noun="checkpoints",
        formula="1,440 min / {interval_min} min",
    )
    vol = d.step(
        "volume_per_day_TB", "Written per day", per_day * ckpt_tb, "TB",
        formula="{checkpoints_per_day} × {checkpoint_TB} TB",
    )
    milestones = d.step(
        "milestones_kept", "Milestones pinned over the run",
        math.floor(p.run_days * 24 / p.milestone_every_h + 1e-9), "1", noun="milestones",
        formula="⌊{run_days} / {milestone_every_h}⌋",
    )
    full = p.milestone_contents == "full state"
    ms_tb = d.step(
        "milestone_TB", f"One milestone ({p.milestone_contents})", params * (bpp if full else wbpp) / 1e12, "TB",
        formula="{model_params} × " + ("{checkpoint_bytes_per_param}" if full else "{weight_bytes_per_param}"),
    )
    d.step(
        "retained_TB", "Retained on durable storage at the end of the run",
        p.keep_last * ckpt_tb + milestones * ms_tb, "TB",
        formula="{keep_last} × {checkpoint_TB} TB + {milestones_kept} × {milestone_TB} TB",
    )
    d.step(
        "keep_everything_TB", "Retained if nothing were ever deleted", vol * p.run_days, "TB",
        formula="{volume_per_day_TB} / 1 day × {run_days}",
    )
    # --- Resharding ---------------------------------------------------------------------------
    d.step(
        "old_shard_GB", "One saved shard", ckpt_gb / p.old_shards, "GB",
        formula="{checkpoint_TB} TB / {old_shards} shards",
    )
    d.step(
        "reshard_ratio", "Saved shards per resuming rank", p.old_shards / p.new_ranks, "1", noun="shards",
        formula="{old_shards} / {new_ranks}",
    )
    d.step(
        "reshard_bytes_per_rank_GB", "Bytes each resuming rank loads", ckpt_gb / p.new_ranks, "GB",
        formula="{checkpoint_TB} TB / {new_ranks} ranks",
    )
    src = d.step(
        "reshard_max_source_shards_per_rank", "Most saved shards one resuming rank reads from",
        max_source_shards(p.old_shards, p.new_ranks), "1", noun="shards",
        formula="max over ranks j of ⌈(j+1) × {old_shards} / {new_ranks}⌉ − ⌊j × {old_shards} / {new_ranks}⌋",
        kind="search",
    )
    d.step(
        "reshard_whole_file_read_GB", "What that rank reads if it fetches whole shard files",
        src * ckpt_gb / p.old_shards, "GB",
        formula="{reshard_max_source_shards_per_rank} × {old_shard_GB} GB",
    )
    d.step(
        "uneven_bytes_per_rank_GB", "Bytes per rank at the second resume size", ckpt_gb / p.uneven_new_ranks, "GB",
        formula="{checkpoint_TB} TB / {uneven_new_ranks} ranks",
    )
    usrc = d.step(
        "uneven_max_source_shards", "Most saved shards one rank reads at the second size",
        max_source_shards(p.old_shards, p.uneven_new_ranks), "1", noun="shards",
        formula="max over ranks j of ⌈(j+1) × {old_shards} / {uneven_new_ranks}⌉ − ⌊j × {old_shards} / {uneven_new_ranks}⌋",
        kind="search",
    )
    d.step(
        "uneven_whole_file_read_GB", "Whole-file reads of that rank at the second size",
        usrc * ckpt_gb / p.old_shards, "GB",
        formula="{uneven_max_source_shards} × {old_shard_GB} GB",
    )
    # --- The batch and the data position across a resume ----------------------------------------
    d.step("micro_batch", "Sequences per micro-batch per rank", p.micro_batch_seqs, "1", noun="sequences",
           formula="{micro_batch_seqs}", kind="given")
    gbatch = d.step("global_batch_seqs", "Global batch when saved: ranks × micro-batch × accumulation",
                    p.old_shards * p.micro_batch_seqs * p.grad_accum_saved, "1", noun="sequences",
                    formula="{old_shards} × {micro_batch_seqs} × {grad_accum_saved}")
    accum = d.step("new_grad_accum", "Accumulation that keeps the global batch on the resuming ranks",
                   gbatch / (p.new_ranks * p.micro_batch_seqs), "1", noun="micro-batches",
                   formula="{global_batch_seqs} / ({new_ranks} × {micro_batch_seqs})")
    d.step("new_accum_whole", "Is that a whole number of micro-batches?",
           "yes" if abs(accum - round(accum)) < 1e-9 else "no: change the micro-batch or the global batch",
           formula="{new_grad_accum} is whole", kind="verdict")
    uaccum = d.step("uneven_grad_accum", "Accumulation at the second resume size",
                    gbatch / (p.uneven_new_ranks * p.micro_batch_seqs), "1", noun="micro-batches",
                    formula="{global_batch_seqs} / ({uneven_new_ranks} × {micro_batch_seqs})")
    d.step("uneven_accum_whole", "Is that a whole number at the second size?",
           "yes" if abs(uaccum - round(uaccum)) < 1e-9 else "no: change the micro-batch or the global batch",
           formula="{uneven_grad_accum} is whole", kind="verdict")
    d.step("step_time_ratio", "Each optimizer step's time on the resuming ranks over the saving ranks'",
           p.old_shards / p.new_ranks, "1", noun="×", formula="{old_shards} / {new_ranks}")
    d.step("samples_consumed", "Data position: sequences consumed before the checkpoint", p.resume_step * gbatch, "1",
           noun="sequences", formula="{resume_step} × {global_batch_seqs}")
    installed = d.step(
        "fast_tier_installed_GBps", "Burst tier as installed: whole servers", servers * p.fast_server_write_GBps,
        "GB/s", formula="{fast_tier_servers} × {fast_server_write_GBps} GB/s",
    )
    d.step(
        "restore_s", "Every resuming rank reads its range from the installed burst tier in parallel",
        ckpt_gb / installed, "s",
        formula="{checkpoint_TB} TB / {fast_tier_installed_GBps} GB/s",
    )
    # --- Failure: a burst-tier server lost in the middle of a save ------------------------------
    d.step(
        "burst_one_server_down_s", "Burst with one server down",
        ckpt_gb / ((servers - 1) * p.fast_server_write_GBps), "s",
        formula="{checkpoint_TB} TB / (({fast_tier_servers} − 1) × {fast_server_write_GBps} GB/s)",
    )
    bare = d.step(
        "servers_without_headroom", "Servers sized for the bare burst (at least two)",
        max(2, math.ceil(agg / p.fast_server_write_GBps - 1e-9)), "1", noun="servers",
        formula="max(2, ⌈{aggregate_write_GBps} GB/s / {fast_server_write_GBps} GB/s⌉)",
    )
    d.step(
        "burst_one_down_without_headroom_s", "Burst with one of those down",
        ckpt_gb / ((bare - 1) * p.fast_server_write_GBps), "s",
        formula="{checkpoint_TB} TB / (({servers_without_headroom} − 1) × {fast_server_write_GBps} GB/s)",
    )
    d.step(
        "headroom_adds_server", "Does the headroom buy servers beyond the bare sizing?",
        "yes: the headroom's extra servers are what keep this save short" if servers > bare
        else "no: here the headroom adds no server, so both sizings are the same tier and it buys nothing "
             "against this failure",
        formula="{fast_tier_servers} > {servers_without_headroom}", kind="verdict",
    )
    return d
