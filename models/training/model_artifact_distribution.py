"""Ship a 141 GB model artifact to a thousand nodes: why a Docker image takes an hour a node.

141 GB is a 70B model in bf16 (Llama-3-70B's 70.6B parameters, counted from its shape, x 2 bytes). At 10 Gb/s those
bytes cross a node's link in under two minutes, so "an hour per node" is not bandwidth: it is
the image pull path. Modelled with stated rates:

    download   = artifact / min(registry per-node stream, node link)
    unpack     = artifact / gzip decompress rate + artifact / extract rate
                 (one thread reads the gzip stream and writes the files, buffer after buffer,
                 so the two per-byte costs add; a gzip stream cannot be split across cores)
    per node   = max(download, unpack) + min(download, unpack) / layers
                 (a layer unpacks while the next one downloads; with one layer nothing overlaps)

A rollout multiplies the download by the node count through the registry's egress; the fix is
content-addressed chunks and a manifest per version, fanned out peer to peer. The fan-out
arithmetic is not retyped here: it is `models.training.checkpoint_distribution.solve` (relay
chain, swarm estimate) on this scenario, and its swarm simulation.
"""

from __future__ import annotations

import math
from typing import Annotated

from pydantic import create_model

from models.catalog import LINKS
from models.core import Derivation, Knob, StrictModel
from models.engine.knobs import ModelKnobs, ReplicaKnobs, llm
from models.engine.precision import bytes_per_element
from models.engine.training import STATES
from models.sim import swarm
from models.training import checkpoint_distribution as cd

# The serving weights' format, the one knob of ReplicaKnobs this page needs (declared there, reused).
_WeightFormat = create_model("_WeightFormat", __base__=StrictModel,
                             weight_precision=(ReplicaKnobs.model_fields["weight_precision"].annotation,
                                               ReplicaKnobs.model_fields["weight_precision"]))
# The checkpoint training writes, for contrast: bf16 weights with fp32 master, m and v (14 B).
TRAINING_STATE = STATES["bf16 weights, fp32 grads (Megatron)"]
LOCAL_DISK = LINKS["NVMe Gen4 SSD"]
K8S_DEFAULT_MAX_UNAVAILABLE = 0.25  # Deployment RollingUpdate maxUnavailable when unset (Kubernetes API reference)
# Dragonfly's dfdaemon: upload and download rateLimit default to 10 GiB/s (d7y.io, Rate Limits).
DRAGONFLY_DEFAULT_RATE_LIMIT_GiBps = 10  # where a node stages the artifact before loading it
# Kraken's agent token buckets (lib/torrent/scheduler/conn/bandwidth/limiter.go): egress 400 Mbit/s and
# ingress 600 Mbit/s per host when the config leaves them unset.
KRAKEN_DEFAULT_EGRESS_Mbps, KRAKEN_DEFAULT_INGRESS_Mbps = 400, 600
# Dragonfly's scheduler ranks candidate parents by a weighted score (scheduler/scheduling/evaluator):
# pieces held 0.2, upload success 0.2, free upload slots 0.15, host type 0.15, IDC 0.15, location 0.15.
DRAGONFLY_TOPOLOGY_WEIGHT = 0.15 + 0.15

# Series for the rollout chart (time against nodes), bound last.
CHART_SERIES = ("naive_registry_rollout_s", "docker_time_per_node_s", "chunked_relay_rollout_s",
                "swarm_estimate_s", "per_node_lower_bound_s")


class _RolloutKnobs(StrictModel):
    nodes: Annotated[
        int,
        Knob("Nodes to reach", "nodes", 2, 20_000, 1, log=True,
             help="Serving nodes that must hold the new version.", draw=(100, 5000)),
    ] = 1000
    node_link_gbps: Annotated[
        float,
        Knob("Node link", "Gb/s", 1, 800, 1, log=True,
             help="Each node's front-end NIC, the path artifacts arrive on (bits, not bytes).", draw=(10, 200)),
    ] = 10
    registry_stream_gbps: Annotated[
        float,
        Knob("Registry rate per node", "Gb/s", 0.1, 100, 0.1, log=True,
             help="What one node gets pulling a layer alone: one HTTP stream from an object-storage-backed "
                  "registry (~100 MB/s is typical of one stream).",
             draw=(0.5, 10)),
    ] = 1
    gzip_MBps: Annotated[
        float,
        Knob("gzip decompress, one core", "MB/s", 20, 1000, 1, log=True,
             help="Output rate of single-threaded gzip inflate on weights that barely compress.",
             draw=(60, 300)),
    ] = 100
    extract_MBps: Annotated[
        float,
        Knob("Extract to disk", "MB/s", 20, 2000, 1, log=True,
             help="tar extraction into the container filesystem, with the layer's digest computed on the way.",
             draw=(100, 1000)),
    ] = 200
    layers: Annotated[
        int,
        Knob("Layers holding the weights", "", 1, 100, 1, log=True,
             help="One `COPY` of the weights is one layer; splitting lets a layer unpack while the next downloads.",
             draw=(1, 20)),
    ] = 1
    registry_egress_gbps: Annotated[
        float,
        Knob("Registry egress", "Gb/s", 1, 10_000, 1, log=True,
             help="What the registry and its storage can serve to everyone at once.", draw=(20, 800)),
    ] = 100
    chunk_mb: Annotated[
        float,
        Knob("Chunk size", "MB", 1, 10_000, 1, log=True,
             help="Unit of addressing, hashing and forwarding in the chunked design.", draw=(16, 1000)),
    ] = 256
    sha256_MBps: Annotated[
        float,
        Knob("SHA-256, one core", "MB/s", 100, 5000, 10, log=True,
             help="Hash rate of one core with SHA extensions.", draw=(500, 2500)),
    ] = 1500
    hash_cores: Annotated[
        int,
        Knob("Cores verifying chunks", "cores", 1, 128, 1, log=True,
             help="Chunks are independent, so verification spreads over cores.", draw=(2, 32), draw_choices=(2, 4, 8, 16, 32)),
    ] = 8
    nvme_drives: Annotated[
        int,
        Knob("NVMe drives striped", "drives", 1, 16, 1,
             help="Local drives the artifact is staged on; loading reads them in parallel.", draw=(1, 8), draw_choices=(1, 2, 4, 8)),
    ] = 1
    health_check_s: Annotated[
        float,
        Knob("Warm-up and health check", "s", 5, 600, 5, log=True,
             help="After loading: compile, warm, answer a test request before taking traffic.", draw=(20, 180)),
    ] = 60
    canary_fraction: Annotated[
        float,
        Knob("Canary share", "", 0.001, 0.5, 0.001, percent=True,
             help="Nodes that serve the new version first, after it passed evaluation.", draw=(0.01, 0.1)),
    ] = 0.02
    max_unavailable_fraction: Annotated[
        float,
        Knob("Max unavailable during cutover", "", 0.01, 1.0, 0.01, percent=True,
             help="Share of the fleet allowed to be switching at once.", draw=(0.05, 0.25)),
    ] = 0.1
    nodes_per_rack: Annotated[
        int,
        Knob("Nodes per rack", "nodes", 1, 64, 1,
             help="Serving nodes behind one top-of-rack switch.", draw=(8, 32)),
    ] = 16
    rack_uplink_gbps: Annotated[
        float,
        Knob("Rack uplink", "Gb/s", 10, 3200, 10, log=True,
             help="Top-of-rack switch's bandwidth to the rest of the fabric, the shared path into a rack "
                  "(16 nodes at 10 Gb/s behind 40 Gb/s is 4:1 oversubscribed).",
             draw=(40, 200)),
    ] = 40
    serving_gbps_per_node: Annotated[
        float,
        Knob("Serving traffic per node, peak", "Gb/s", 0, 100, 0.1,
             help="Request and response bytes one node moves at peak; it crosses the rack uplink.",
             draw=(0.2, 1.2)),
    ] = 1
    swarm_link_cap: Annotated[
        float,
        Knob("Swarm cap, share of a node's link", "", 0.05, 1, 0.05, percent=True,
             help="Token-bucket limit on each node's swarm upload and download (Kraken's egress/ingress "
                  "bits per second, Dragonfly's rateLimit), so serving keeps the rest.", draw=(0.3, 0.8)),
    ] = 0.5
    slow_peer_fraction: Annotated[
        float,
        Knob("Slow nodes", "", 0, 0.5, 0.01, percent=True,
             help="Share of nodes with a congested or throttled NIC (swarm simulation).", draw=(0, 0.2), simulation=True),
    ] = 0.0
    slow_peer_speed: Annotated[
        float,
        Knob("Slow node speed", "", 0.05, 1, 0.05, percent=True,
             help="Fraction of link speed a slow node achieves, both directions.", draw=(0.1, 0.5)),
    ] = 0.25
    failed_peer_fraction: Annotated[
        float,
        Knob("Nodes that die mid-rollout", "", 0, 0.3, 0.01, percent=True,
             help="Share of nodes that crash during the first half of the fan-out (swarm simulation).",
             draw=(0, 0.1), simulation=True),
    ] = 0.0


class Params(ModelKnobs, _WeightFormat, _RolloutKnobs):
    """The rollout, the pull path and the fan-out, then the weights' format and the model."""


def _artifact_bytes(p: Params) -> float:
    return llm(p).total_params * bytes_per_element(p.weight_precision)


def fanout_params(p: Params) -> cd.Params:
    """The checkpoint-distribution scenario this rollout is: same bytes, links, hosts, chunks."""
    return cd.Params(
        checkpoint_gb=_artifact_bytes(p) / 1e9, link_gbps=p.node_link_gbps, hosts=p.nodes, chunk_mb=p.chunk_mb,
        slow_peer_fraction=p.slow_peer_fraction, slow_peer_speed=p.slow_peer_speed,
        failed_peer_fraction=p.failed_peer_fraction,
    )


def _pull(download_s: float, unpack_s: float, layers: int) -> float:
    """Layered pull: the larger stage runs end to end, the smaller one only on the first or last layer."""
    return max(download_s, unpack_s) + min(download_s, unpack_s) / layers


def solve(p: Params) -> Derivation:
    d = Derivation(p)
    m = llm(p)

    # --- numbers ---
    d.step("model_params", f"{m.name} parameters (counted from its shape)", m.total_params, "1", noun="parameters")
    d.step("bytes_per_param", f"Bytes per weight in {p.weight_precision}", bytes_per_element(p.weight_precision), "B",
           kind="lookup")
    size = d.step("artifact_bytes", "Artifact: the weights, nothing else", _artifact_bytes(p), "B",
                  formula="{model_params} × {bytes_per_param}")
    d.step("resumable_checkpoint_bytes", "The training checkpoint of the same model (weights + fp32 master + Adam)",
           m.total_params * TRAINING_STATE.checkpoint, "B",
           formula=f"{{model_params}} × {TRAINING_STATE.checkpoint:g} B")
    link = d.step("node_link_Bps", "Node link in bytes", p.node_link_gbps * 1e9 / 8, "B/s",
                  formula="{node_link_gbps}")
    bound = d.step("per_node_lower_bound_s", "Lower bound: the artifact through one node's link", size / link, "s",
                   formula="{artifact_bytes} B / {node_link_Bps} B/s")

    # --- the Docker pull path, one node alone ---
    stream = d.step("registry_stream_Bps", "Download rate one node gets from the registry",
                    min(p.registry_stream_gbps, p.node_link_gbps) * 1e9 / 8, "B/s",
                    formula="min({registry_stream_gbps}, {node_link_gbps})")
    download = d.step("docker_download_s", "Download, one node alone", size / stream, "s",
                      formula="{artifact_bytes} B / {registry_stream_Bps} B/s")
    inflate = d.step("decompress_s", "gzip decompress on one core", size / (p.gzip_MBps * 1e6), "s",
                     formula="{artifact_bytes} B / {gzip_MBps} MB/s")
    extract = d.step("extract_s", "Extract into the image filesystem", size / (p.extract_MBps * 1e6), "s",
                     formula="{artifact_bytes} B / {extract_MBps} MB/s")
    unpack = d.step("unpack_s", "Unpack: decompress and extract on the same thread", inflate + extract, "s",
                    formula="{decompress_s} s + {extract_s} s")
    docker = d.step("docker_time_per_node_s", "Docker pull, one node alone", _pull(download, unpack, p.layers), "s",
                    formula="max({docker_download_s} s, {unpack_s} s) + min({docker_download_s} s, {unpack_s} s) "
                            "/ {layers}")
    d.step("docker_vs_bound", "Docker pull over the link bound", docker / bound, "1", noun="×",
           formula="{docker_time_per_node_s} s / {per_node_lower_bound_s} s")
    d.step("unpack_share", "Share of the pull spent unpacking", min(1.0, unpack / docker), "1", percent=True,
           formula="min(100%, {unpack_s} / {docker_time_per_node_s})")
    d.step("docker_bottleneck", "Which term of the pull is the larger?",
           "mostly single-core unpack" if unpack >= download else "mostly the download from the registry",
           formula="{unpack_s} ≥ {docker_download_s}", kind="verdict")
    d.step("docker_at_line_rate_s", "The same pull with the registry at full link speed",
           _pull(bound, unpack, p.layers), "s",
           formula="max({per_node_lower_bound_s} s, {unpack_s} s) + min({per_node_lower_bound_s} s, {unpack_s} s) "
                   "/ {layers}")
    d.step("docker_many_layers_s", "The same pull split into 100 layers (the overlap limit)",
           _pull(download, unpack, 100), "s",
           formula="max({docker_download_s} s, {unpack_s} s) + min({docker_download_s} s, {unpack_s} s) / 100")

    # --- the registry under a rollout ---
    egress_tb = d.step("registry_egress_TB", "Registry egress for one rollout", p.nodes * size / 1e12, "TB",
                       formula="{nodes} × {artifact_bytes} B")
    egress = d.step("registry_egress_Bps", "Registry egress capacity", p.registry_egress_gbps * 1e9 / 8, "B/s",
                    formula="{registry_egress_gbps}")
    drain = d.step("registry_drain_s", "Registry serving every copy at full egress", egress_tb * 1e12 / egress, "s",
                   formula="{registry_egress_TB} TB / {registry_egress_Bps} B/s")
    d.step("per_node_share_Bps", "Each node's share of the registry while all pull", egress / p.nodes, "B/s",
           formula="{registry_egress_Bps} B/s / {nodes}")
    rollout_dl = d.step("rollout_download_s", "Download during a rollout: the slower of stream and share",
                        max(download, drain), "s", formula="max({docker_download_s} s, {registry_drain_s} s)")
    naive = d.step("naive_registry_rollout_s", "Every node pulls the image from the registry at once",
                   _pull(rollout_dl, unpack, p.layers), "s",
                   formula="max({rollout_download_s} s, {unpack_s} s) + min({rollout_download_s} s, {unpack_s} s) "
                           "/ {layers}")
    d.step("naive_vs_bound", "Naive rollout over the link bound", naive / bound, "1", noun="×",
           formula="{naive_registry_rollout_s} s / {per_node_lower_bound_s} s")

    # --- content-addressed chunks, fanned out peer to peer (checkpoint_distribution's arithmetic) ---
    f = cd.solve(fanout_params(p))
    d.step("chunk_bytes", "Chunk size", f.value("chunk_GB") * 1e9, "B", formula="min({chunk_mb} MB, {artifact_bytes} B)")
    chunks = d.step("chunk_count", "Chunks in the manifest", f.value("chunk_count"), "1", noun="chunks",
                    formula="ceil({artifact_bytes} B / {chunk_bytes} B)")
    d.step("manifest_bytes", "Manifest: one SHA-256 digest per chunk", chunks * cd.SHA256_BYTES, "B",
           formula=f"{{chunk_count}} × {cd.SHA256_BYTES} B")
    d.step("chunk_time_s", "One chunk over one link", f.value("chunk_time_s"), "s",
           formula="{chunk_bytes} B / {node_link_Bps} B/s")
    relay = d.step("chunked_relay_rollout_s", "Chunked relay chain: each node forwards a chunk once verified",
                   f.value("pipeline_s"), "s", formula="({chunk_count} + {nodes} − 1) × {chunk_time_s} s")
    d.step("relay_vs_bound", "Relay chain over the link bound", relay / bound, "1", noun="×",
           formula="{chunked_relay_rollout_s} s / {per_node_lower_bound_s} s")
    d.step("swarm_fill_rounds", "Doublings until every node holds a first chunk", swarm.fill_rounds(p.nodes), "1",
           noun="rounds", formula="⌈log2({nodes} + 1)⌉")
    swarm_s = d.step("swarm_estimate_s", "Swarm, estimate (the simulation checks it)", f.value("swarm_estimate_s"),
                     "s", formula="{per_node_lower_bound_s} s + {swarm_fill_rounds} × {chunk_time_s} s")
    d.step("chain_with_one_slow_peer_s", "Relay chain whose first relay runs slow",
           f.value("chain_with_one_slow_peer_s"), "s",
           formula="({chunk_count} + 1) × {chunk_time_s} s / {slow_peer_speed} + ({nodes} − 2) × {chunk_time_s} s")
    d.step("speedup_over_naive", "Swarm over the naive registry rollout", naive / swarm_s, "1", noun="×",
           formula="{naive_registry_rollout_s} s / {swarm_estimate_s} s")
    d.step("origin_egress_ratio", "Origin egress saved: naive copies per swarm copy", p.nodes, "1", noun="×",
           formula="{nodes} / 1 (about one copy leaves the origin)")

    # --- topology: rack uplinks, and a swarm throttled so serving keeps its share ---
    d.step("racks", "Racks", math.ceil(p.nodes / p.nodes_per_rack), "1", noun="racks",
           formula="⌈{nodes} / {nodes_per_rack}⌉")
    d.step("rack_oversubscription", "Rack oversubscription: node links over the uplink",
           p.nodes_per_rack * p.node_link_gbps / p.rack_uplink_gbps, "1", noun="×",
           formula="{nodes_per_rack} × {node_link_gbps} / {rack_uplink_gbps}")
    serving_up = d.step("serving_uplink_gbps", "Serving traffic through one rack uplink at peak",
                        p.nodes_per_rack * p.serving_gbps_per_node, "Gb/s",
                        formula="{nodes_per_rack} × {serving_gbps_per_node}")
    headroom = d.step("uplink_headroom_gbps", "Uplink left for the swarm at peak serving",
                      max(0.0, p.rack_uplink_gbps - serving_up), "Gb/s",
                      formula="max(0 Gb/s, {rack_uplink_gbps} − {serving_uplink_gbps})")
    cross = d.step("cross_rack_share_random", "Chance a random peer sits in another rack",
                   max(0, p.nodes - p.nodes_per_rack) / (p.nodes - 1), "1", percent=True,
                   formula="max(0, {nodes} − {nodes_per_rack}) / ({nodes} − 1)")
    ingress_random = d.step("rack_ingress_random_bytes", "Bytes into a rack when peers are random",
                            p.nodes_per_rack * size * cross, "B",
                            formula="{nodes_per_rack} × {artifact_bytes} × {cross_rack_share_random}")
    d.step("rack_ingress_aware_bytes", "Bytes into a rack when peers prefer their rack: one copy", size, "B",
           formula="{artifact_bytes}")
    swarm_node = d.step("swarm_node_gbps", "Swarm rate a node may use", p.node_link_gbps * p.swarm_link_cap, "Gb/s",
                        formula="{node_link_gbps} × {swarm_link_cap}")
    d.step("serving_fits_beside_swarm", "Does peak serving fit beside the capped swarm on a node's link?",
           "yes" if swarm_node + p.serving_gbps_per_node <= p.node_link_gbps + 1e-9 else "no: lower the cap",
           formula="{swarm_node_gbps} + {serving_gbps_per_node} ≤ {node_link_gbps}", kind="verdict")
    demand = d.step("random_uplink_demand_gbps", "What random peers would pull through one uplink at the cap",
                    p.nodes_per_rack * swarm_node * cross, "Gb/s",
                    formula="{nodes_per_rack} × {swarm_node_gbps} × {cross_rack_share_random}")
    d.step("random_peers_squeeze_serving", "Would random peers push serving off the uplink?",
           "yes: cap the swarm per rack or pick peers in the rack" if demand > headroom + 1e-9 else "no",
           formula="{random_uplink_demand_gbps} > {uplink_headroom_gbps}", kind="verdict")
    dflt = d.step("dragonfly_default_cap_gbps", "Dragonfly's default per-peer rate limit, in bits",
                  DRAGONFLY_DEFAULT_RATE_LIMIT_GiBps * 2**30 * 8 / 1e9, "Gb/s",
                  formula=f"{DRAGONFLY_DEFAULT_RATE_LIMIT_GiBps:g} GiB/s")
    d.step("default_cap_leaves_serving_room", "Does that default leave serving its peak on this link?",
           "yes" if dflt + p.serving_gbps_per_node <= p.node_link_gbps + 1e-9
           else "no: set the limit from the serving peak",
           formula="{dragonfly_default_cap_gbps} + {serving_gbps_per_node} ≤ {node_link_gbps}", kind="verdict")
    kr_in = d.step("kraken_default_ingress_gbps", "Kraken's default per-host ingress limit",
                   KRAKEN_DEFAULT_INGRESS_Mbps / 1000, "Gb/s", formula=f"{KRAKEN_DEFAULT_INGRESS_Mbps} Mbit/s")
    d.step("kraken_default_egress_gbps", "Kraken's default per-host egress limit",
           KRAKEN_DEFAULT_EGRESS_Mbps / 1000, "Gb/s", formula=f"{KRAKEN_DEFAULT_EGRESS_Mbps} Mbit/s")
    d.step("kraken_default_node_s", "One node's download held to Kraken's default ingress limit",
           size * 8 / (kr_in * 1e9), "s", formula="{artifact_bytes} / {kraken_default_ingress_gbps}")
    d.step("dragonfly_topology_weight", "Share of Dragonfly's parent score that is topology (IDC + location)",
           DRAGONFLY_TOPOLOGY_WEIGHT, "1", percent=True, formula="0.15 + 0.15")
    hr_Bps = headroom * 1e9 / 8
    random_up = d.step("random_uplink_s", "Random peers: the rack's bytes through the uplink headroom",
                       ingress_random / hr_Bps if hr_Bps > 0 else (math.inf if ingress_random > 0 else 0.0), "s",
                       formula="{rack_ingress_random_bytes} / {uplink_headroom_gbps}")
    aware_up = d.step("aware_uplink_s", "Rack-first peers: one copy through the uplink headroom",
                      size / hr_Bps if hr_Bps > 0 else math.inf, "s",
                      formula="{rack_ingress_aware_bytes} / {uplink_headroom_gbps}")
    tb = d.step("throttled_bound_s", "Link bound at the swarm cap", size / (swarm_node * 1e9 / 8), "s",
                formula="{artifact_bytes} / {swarm_node_gbps}")
    fill = f.value("chunk_time_s") / p.swarm_link_cap
    throttled = d.step("throttled_swarm_s", "Capped, rack-first swarm: the slower of link and uplink, plus the fill",
                       max(tb, aware_up) + swarm.fill_rounds(p.nodes) * fill, "s",
                       formula="max({throttled_bound_s}, {aware_uplink_s}) + {swarm_fill_rounds} × {chunk_time_s} / "
                               "{swarm_link_cap}")
    rnd = d.step("random_peer_swarm_s", "Capped swarm with random peers, sharing the uplink fairly with serving",
                 max(tb, random_up) + swarm.fill_rounds(p.nodes) * fill, "s",
                 formula="max({throttled_bound_s}, {random_uplink_s}) + {swarm_fill_rounds} × {chunk_time_s} / "
                         "{swarm_link_cap}")
    d.step("rack_first_speedup", "Random peers over rack-first peers", rnd / throttled if math.isfinite(throttled) else 1.0,
           "1", noun="×", formula="{random_peer_swarm_s} / {throttled_swarm_s}")

    # --- integrity: verification keeps up because chunks are independent ---
    hash_rate = d.step("hash_Bps", "SHA-256 rate over the verifying cores", p.sha256_MBps * 1e6 * p.hash_cores,
                       "B/s", formula="{sha256_MBps} MB/s × {hash_cores}")
    d.step("verify_s", "Verifying every chunk on those cores", size / hash_rate, "s",
           formula="{artifact_bytes} B / {hash_Bps} B/s")
    d.step("verify_one_core_s", "The same on one core (what a single stream would cost)",
           size / (p.sha256_MBps * 1e6), "s", formula="{artifact_bytes} B / {sha256_MBps} MB/s")
    d.step("hash_keeps_up", "Does verification keep up with the link?", "yes" if hash_rate >= link else "no",
           formula="{hash_Bps} B/s ≥ {node_link_Bps} B/s")
    # Chunks are hashed as they land, so a node finishes at the slower of its download and its hashing.
    verify = size / hash_rate
    d.step("swarm_verified_s", "Uncapped swarm, verified: the slower of the swarm and the hashing",
           max(swarm_s, verify), "s", formula="max({swarm_estimate_s}, {verify_s})")
    d.step("throttled_verified_s", "Capped, rack-first swarm, verified", max(throttled, verify), "s",
           formula="max({throttled_swarm_s}, {verify_s})")

    # --- from bytes on disk to serving, and the promotion gate ---
    disk = d.step("local_read_Bps", f"Local read: {LOCAL_DISK.name} × drives", LOCAL_DISK.Bps * p.nvme_drives, "B/s",
                  formula=f"{{nvme_drives}} × {LOCAL_DISK.GBps:g} GB/s")
    load = d.step("load_s", "Loading the staged artifact into GPU memory", size / disk, "s",
                  formula="{artifact_bytes} B / {local_read_Bps} B/s")
    d.step("time_to_ready_s", "Rollout until every node could serve (swarm + load + health check)",
           swarm_s + load + p.health_check_s, "s",
           formula="{swarm_estimate_s} s + {load_s} s + {health_check_s} s")
    d.step("disk_needed_bytes", "Local disk for the serving version plus the one being staged", 2 * size, "B",
           formula="2 × {artifact_bytes} B")
    d.step("canary_nodes", "Canary nodes", max(1, math.ceil(p.nodes * p.canary_fraction - 1e-9)), "1",
           noun="nodes", formula="ceil({nodes} × {canary_fraction})")
    waves = d.step("cutover_waves", "Cutover waves at the availability limit",
                   math.ceil(1 / p.max_unavailable_fraction - 1e-9), "1", noun="waves",
                   formula="ceil(1 / {max_unavailable_fraction})")
    d.step("cutover_s", "Cutover with the bytes already staged: waves × (load + check)",
           waves * (load + p.health_check_s), "s", formula="{cutover_waves} × ({load_s} s + {health_check_s} s)")
    d.step("k8s_default_max_unavailable", "Kubernetes Deployment: maxUnavailable when the rollout sets none",
           K8S_DEFAULT_MAX_UNAVAILABLE, "1", percent=True, kind="lookup")
    k8s_waves = d.step("k8s_default_cutover_waves", "Cutover waves at Kubernetes' default limit",
                       math.ceil(1 / K8S_DEFAULT_MAX_UNAVAILABLE - 1e-9), "1", noun="waves",
                       formula="ceil(1 / {k8s_default_max_unavailable})")
    d.step("k8s_default_cutover_s", "Cutover at Kubernetes' default limit: waves × (load + check)",
           k8s_waves * (load + p.health_check_s), "s",
           formula="{k8s_default_cutover_waves} × ({load_s} s + {health_check_s} s)")
    d.step("k8s_default_nodes_out", "Nodes out of serving at once at Kubernetes' default limit",
           math.floor(p.nodes * K8S_DEFAULT_MAX_UNAVAILABLE), "1", noun="nodes",
           formula="floor({nodes} × {k8s_default_max_unavailable})")
    wave_dl = d.step("wave_download_s", "Download if each wave pulled then: the slower of stream and the wave's "
                     "share of the registry", max(download, drain / waves), "s",
                     formula="max({docker_download_s}, {registry_drain_s} / {cutover_waves})")
    wave_pull = d.step("wave_pull_s", "That wave's Docker pull", _pull(wave_dl, unpack, p.layers), "s",
                       formula="max({wave_download_s}, {unpack_s}) + min({wave_download_s}, {unpack_s}) / {layers}")
    d.step("cutover_if_pulling_s", "Cutover if each wave pulled its image then (registry shared by one wave)",
           waves * (wave_pull + load + p.health_check_s), "s",
           formula="{cutover_waves} × ({wave_pull_s} + {load_s} + {health_check_s})")
    return d


def sim_step_s(p: Params) -> float:
    return cd.sim_step_s(fanout_params(p))


def sim_chunks(p: Params) -> int:
    return cd.sim_chunks(fanout_params(p))


def simulate(p: Params, seed: int = 0) -> swarm.SwarmResult:
    """The checkpoint-distribution swarm on this rollout (nodes capped, chunks coarsened as there)."""
    return cd.simulate(fanout_params(p), seed=seed)
