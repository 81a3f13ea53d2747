"""Bill of materials for a 10,000-GPU training cluster (seeds 000, 003, 004).

The seed's line: "10,000 GPUs is 1,280 nodes, ten pods, about 700 switches, a filesystem that
swallows a 5 TB checkpoint in under a minute and a 14 MW feed". Each figure holds only under an
assumption, and the model makes each one a knob or a what-if step:

    1,280 nodes      10,000 / 8 = 1,250 nodes, rounded up to whole pods (10 x 128); without the
                     rounding the build is 1,250 (`round_to_whole_pods`)
    ~700 switches    a three-tier fat tree of 64-port switches with a 2:1 taper at the core: 720;
                     non-blocking it is 800 (`core_taper`, `total_switches_nonblocking`)
    14 MW            IT load at nameplate (DGX-class node 10.2 kW plus switches), no cooling;
                     the feed at PUE 1.2 is ~17 MW (`pue`, `facility_power_MW`)
    5 TB in a minute 5,000 GB / 60 s = 83 GB/s of write; a 405B model's full 14 B/param state is
                     5.67 TB and needs 94.5 GB/s (`model_checkpoint_write_GBps`)

Topology (stated on the page): 8 GPUs per node, one 400G NIC per GPU, rail-optimized (NIC k of
every node in a pod goes to the rail-k leaves). A leaf uses half its ports down to NICs and half
up to the pod's spines (non-blocking). A spine uses half its ports down to leaves, and
floor(half / taper) up to the core. A pod is what one layer of spines can reach: radix/2 leaves
of radix/2 NICs each, so radix^2/4 NICs (128 nodes at radix 64); a core switch needs one port per
pod, so a three-tier tree holds at most `radix` pods. One pod needs no core.

Spares: every powered node fails at the Llama 3 rate (419 unexpected interruptions in 54 days on
16,384 GPUs, per GPU-day, times 8 per node); a share of interruptions pulls the node for a repair
of fixed mean length. Nodes in repair form an M/G/inf queue: the count is Poisson with mean
arrival rate x repair time (Little's law), whatever the repair-time distribution; the pool is
its 99th percentile, computed exactly by summing the Poisson pmf.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import model_validator

from models.catalog import GPUS, GPUS_PER_NODE, LLAMA3_INTERRUPTIONS, TRAIN_FLOPS_PER_PARAM_TOKEN
from models.core import Derivation, Knob, StrictModel
from models.engine.hardware import CUSTOM
from models.engine.knobs import AcceleratorKnobs, accelerator, llm, with_defaults
from models.engine.training import TrainingStateKnobs, state_bytes

SECONDS_PER_DAY = 86_400
# NVIDIA's optics datasheets: a twin-port 2x400G single-mode OSFP (MMS4X00-NS) draws 17 W on the
# switch; the single-port 400G OSFP in a ConnectX-7 (MMS4X00-NS400) draws 9 W.
TWIN_PORT_W = 17
NIC_MODULE_W = 9
HOURS_PER_YEAR = 8_760
# Uptime Institute's industry-average PUE for 2023 (its annual survey): 1.58, flat at 1.55-1.59 since 2020.
UPTIME_AVG_PUE = 1.58
# NERSC Perlmutter scratch, all-flash Lustre: over 5 TB/s from 274 OSS servers (a measured storage anchor).
PERLMUTTER_GBPS, PERLMUTTER_OSS = 5000.0, 274

Radix = Literal[32, 64, 128]


class _ClusterKnobs(StrictModel):
    gpus: Annotated[
        int,
        Knob("GPUs the job needs", "GPUs", 1024, 100_000, 1, log=True,
             help="The training job's size; the build rounds it up to whole nodes (and pods).",
             draw=(2000, 50_000), draw_choices=(2000, 4000, 8000, 10000, 16000, 24000, 32000, 50000)),
    ] = 10_000
    train_tokens_t: Annotated[
        float,
        Knob("Training tokens", "T tokens", 1, 100, 0.5, log=True,
             help="Tokens in the run (Llama 3.1 405B: 15.6T).", draw=(5, 40)),
    ] = 15
    train_mfu: Annotated[
        float,
        Knob("Training MFU", "", 0.2, 0.7, 0.01, percent=True,
             help="Share of dense BF16 peak the training step achieves (Llama 3 405B reported 38-43%).",
             draw=(0.3, 0.55)),
    ] = 0.4
    switch_radix: Annotated[
        Radix,
        Knob("Switch ports (radix)", "", 32, 128, draw=(64, 128),
             help="Ports per switch at the NIC speed: 64 x 400G is an InfiniBand Quantum-2 QM9700; 128 x 400G is a 51.2 Tb/s Ethernet switch."),
    ] = 64
    core_taper: Annotated[
        float,
        Knob("Core taper (down:up)", "", 1, 4, 0.5,
             help="Spine down-ports per up-port; 1 = non-blocking, 2 = half the bandwidth between pods.",
             draw=(1, 3)),
    ] = 2
    round_to_whole_pods: Annotated[
        bool,
        Knob("Build whole pods",
             help="Round the node count up to full pods (the seed's 1,280); off builds exactly the nodes needed."),
    ] = True
    checkpoint_tb: Annotated[
        float,
        Knob("Checkpoint size", "TB", 0.1, 50, 0.1, log=True,
             help="Bytes one checkpoint writes (the seed says 5 TB).", draw=(1, 20)),
    ] = 5
    checkpoint_write_s: Annotated[
        float,
        Knob("Checkpoint write deadline", "s", 10, 600, 1, log=True,
             help="Time the training loop may spend writing one checkpoint.", draw=(30, 300)),
    ] = 60
    storage_server_GBps: Annotated[
        float,
        Knob("Write rate per storage server", "GB/s", 2, 100, 1, log=True,
             help="Sustained write one filesystem server absorbs after its redundancy overhead (planning figure).",
             draw=(10, 40)),
    ] = 20
    node_overhead_W: Annotated[
        float,
        Knob("Node power besides the GPUs", "W", 1000, 10_000, 100,
             help="CPUs, DRAM, NICs, fans, PSU loss. DGX H100 lists 10.2 kW max: 8 x 700 W GPUs + 4.6 kW.",
             draw=(3000, 6000)),
    ] = 4600
    switch_W: Annotated[
        float,
        Knob("Power per switch with optics", "W", 300, 5000, 50,
             help="One fabric switch with a transceiver in every port (planning figure).", draw=(800, 2000)),
    ] = 1300
    nodes_per_rack: Annotated[
        int,
        Knob("Nodes per rack", "nodes", 1, 8, 1,
             help="Compute nodes in one rack. NVIDIA's DGX H100 SuperPOD puts four 10.2 kW systems in a rack (40.8 kW).",
             draw=(2, 4)),
    ] = 4
    hall_rack_kW: Annotated[
        float,
        Knob("Rack power the hall can cool", "kW", 10, 150, 1,
             help="What the room removes per rack: ~30 kW is a common air-cooled ceiling, 40-50 kW needs "
                  "containment or rear-door heat exchangers, 100+ kW is direct liquid cooling.",
             draw=(25, 60)),
    ] = 30
    frontend_ports_per_node: Annotated[
        int,
        Knob("Front-end ports per node", "ports", 1, 4, 1,
             help="Ethernet ports to the front-end (storage, data, management) network; NVIDIA's HGX reference "
                  "architecture uses two, to two switches.", draw=(2, 2)),
    ] = 2
    frontend_port_Gbps: Annotated[
        float,
        Knob("Front-end port speed", "Gb/s", 25, 800, 25, log=True,
             help="Speed of one front-end port (200 GbE in NVIDIA's HGX reference architecture).", draw=(100, 400)),
    ] = 200
    pue: Annotated[
        float,
        Knob("PUE", "", 1.0, 2.0, 0.05,
             help="Facility power over IT power: cooling and distribution. 1.1-1.3 for new liquid-cooled halls.",
             draw=(1.1, 1.5)),
    ] = 1.2
    usd_per_kwh: Annotated[
        float,
        Knob("Electricity price", "USD/kWh", 0.02, 0.4, 0.01, log=True,
             help="All-in price per kWh at the meter.", draw=(0.04, 0.15)),
    ] = 0.08
    failure_rate_scale: Annotated[
        float,
        Knob("Failure rate vs Llama 3", "×", 0.25, 4, 0.05, log=True,
             help="1 = Llama 3's observed 419 unexpected interruptions in 54 days on 16,384 H100s.",
             draw=(0.5, 2)),
    ] = 1.0
    repair_share: Annotated[
        float,
        Knob("Interruptions that pull the node", "", 0.1, 1.0, 0.01, percent=True,
             help="Llama 3 attributes ~78% of unexpected interruptions to hardware; the rest restart in place.",
             draw=(0.6, 1.0)),
    ] = 0.78
    repair_hours: Annotated[
        float,
        Knob("Mean repair time", "h", 2, 720, 1, log=True,
             help="From pulling a node to returning it burned-in: diagnose, swap a part, re-test.",
             draw=(12, 168)),
    ] = 48
    custom_module_W: Annotated[
        float,
        Knob("Custom part: module power", "W", 100, 3000, 10, only_if=("gpu", CUSTOM),
             help="The accelerator's maximum module power (its datasheet's TDP).", draw=(500, 1200)),
    ] = 700


class Params(with_defaults(AcceleratorKnobs, model="Llama-3.1-405B"), TrainingStateKnobs, _ClusterKnobs):
    """The job and the build, the training-state convention, then the model and the accelerator."""

    @model_validator(mode="after")
    def _has_power(self) -> "Params":
        if module_W(self) is None:
            raise ValueError(f"{self.gpu} has no published module power; pick Custom and type one in.")
        return self


def module_W(p: Params) -> float | None:
    """The part's maximum module power: the catalog's, or the custom part's typed-in figure."""
    return p.custom_module_W if p.gpu == CUSTOM else GPUS[p.gpu].tdp_W


# ---------------------------------------------------------------------------------------------
# The fabric, from port counts


def fabric(nodes: int, radix: int, taper: float, gpus_per_node: int = GPUS_PER_NODE) -> dict[str, int]:
    """Switch counts of a rail-optimized three-tier fat tree for `nodes` nodes.

    Full pods are identical; a last partial pod gets the leaves its nodes need (one per rail per
    radix/2 nodes) and one spine per radix/2 leaf up-links. The core is sized by port count:
    every spine up-link lands on a core port.
    """
    leaf_down = radix // 2
    leaf_up = radix - leaf_down
    spine_down = radix // 2
    spine_up = math.floor(spine_down / taper)
    nodes_per_pod = radix * radix // 4 // gpus_per_node

    def pod(n: int) -> tuple[int, int]:
        leaves = gpus_per_node * math.ceil(n / leaf_down)
        return leaves, math.ceil(leaves * leaf_up / spine_down)

    full, rem = divmod(nodes, nodes_per_pod)
    f_leaves, f_spines = pod(nodes_per_pod)
    r_leaves, r_spines = pod(rem) if rem else (0, 0)
    leaves = full * f_leaves + r_leaves
    spines = full * f_spines + r_spines
    pods = full + (1 if rem else 0)
    core = math.ceil(spines * spine_up / radix) if pods > 1 else 0
    return {
        "leaf_down": leaf_down, "leaf_up": leaf_up, "spine_down": spine_down, "spine_up": spine_up,
        "nodes_per_pod": nodes_per_pod, "pods": pods, "leaves": leaves, "spines": spines, "core": core,
        "total": leaves + spines + core,
        "links": nodes * gpus_per_node + leaves * leaf_up + (spines * spine_up if core else 0),
    }


def poisson_quantile(mean: float, q: float) -> int:
    """Smallest k with P(X <= k) >= q for X ~ Poisson(mean): the pmf summed term by term.

    The terms are built in log space so a large mean cannot underflow the first one to zero.
    """
    if mean <= 0:
        return 0
    k = 0
    log_p = -mean
    cdf = math.exp(log_p)
    log_mean = math.log(mean)
    while cdf < q:
        k += 1
        log_p += log_mean - math.log(k)
        cdf += math.exp(log_p)
    return k


def solve(p: Params) -> Derivation:
    d = Derivation(p)
    hw, m, sb = accelerator(p), llm(p), state_bytes(p)
    gpu_W = module_W(p)

    # --- from the FLOPs the model needs ---
    d.step("model_params", f"{m.name} parameters (counted from its shape)", m.total_params, "1", noun="parameters")
    d.step("active_params", "Parameters each token runs through (counted from the shape)", m.active_params, "1",
           noun="parameters")
    d.step("train_tokens", "Training tokens", p.train_tokens_t * 1e12, "1", noun="tokens",
           formula="{train_tokens_t}", kind="given")
    flops = d.step(
        "train_flops", "Training compute, 6 × active params × tokens",
        TRAIN_FLOPS_PER_PARAM_TOKEN * m.active_params * p.train_tokens_t * 1e12, "FLOP",
        formula=f"{TRAIN_FLOPS_PER_PARAM_TOKEN:g} FLOP × {{active_params}} × {{train_tokens}}",
    )
    peak = d.step("gpu_peak_flops", f"{hw.name} dense BF16 peak", hw.peak("bf16"), "FLOP/s",
                  formula="" if p.gpu != CUSTOM else "{custom_bf16_TFLOPs}",
                  kind="lookup" if p.gpu != CUSTOM else "",
                  note="The datasheet's dense rate." if p.gpu != CUSTOM else "")
    per_gpu = d.step(
        "gpu_effective_flops", "One GPU at that MFU", peak * p.train_mfu, "FLOP/s",
        formula="{gpu_peak_flops} FLOP/s × {train_mfu}",
    )
    d.step(
        "training_days", "Days to train on the job's GPUs", flops / (p.gpus * per_gpu) / SECONDS_PER_DAY, "d",
        formula="{train_flops} / ({gpus} × {gpu_effective_flops})",
    )

    # --- nodes and pods ---
    per_node = d.step("gpus_per_node", "GPUs (and 400G NICs) per node", GPUS_PER_NODE, "1",
                      kind="lookup", note="One HGX baseboard.")
    needed = d.step(
        "nodes_needed", "Nodes the job needs", math.ceil(p.gpus / per_node), "1", noun="nodes",
        formula="⌈{gpus} GPUs / {gpus_per_node}⌉",
    )
    radix = int(p.switch_radix)
    npp = d.step(
        "nodes_per_pod", "Nodes one pod of leaves and spines holds", radix * radix // 4 // per_node, "1",
        noun="nodes",
        formula="{switch_radix}² / 4 NIC ports / {gpus_per_node} NICs per node",
    )
    pods = d.step(
        "pods", "Pods", math.ceil(needed / npp), "1", noun="pods",
        formula="⌈{nodes_needed} / {nodes_per_pod}⌉",
    )
    built = d.step(
        "nodes_built", "Nodes built",
        pods * npp if p.round_to_whole_pods else needed, "1", noun="nodes",
        formula="{pods} pods × {nodes_per_pod}" if p.round_to_whole_pods else "{nodes_needed} (no rounding to pods)",
    )
    d.step(
        "nodes_from_rounding", "Nodes the rounding adds", built - needed, "1", noun="nodes",
        formula="{nodes_built} − {nodes_needed}",
    )
    d.step(
        "build_rule", "How the build is rounded, and what the extra nodes are",
        ("rounded up to whole pods, and the extra nodes are the first spares" if built > needed
         else "rounded up to whole pods, which adds none here, so every spare is bought on top")
        if p.round_to_whole_pods else "exactly the nodes needed (no rounding), so every spare is bought on top",
        formula="{nodes_built} > {nodes_needed}", kind="verdict",
    )
    gpus_built = d.step(
        "gpus_built", "GPUs built", built * per_node, "1", noun="GPUs",
        formula="{nodes_built} × {gpus_per_node}",
    )

    # --- the fabric ---
    f = fabric(built, radix, p.core_taper, per_node)
    d.step("rails", "Rails: one per NIC position in a node", per_node, "1", noun="rails",
           formula="{gpus_per_node} NICs per node")
    d.step("leaf_down_ports", "Leaf ports down to NICs (half the radix)", f["leaf_down"], "1", noun="ports",
           formula="{switch_radix} / 2")
    full_pods = d.step("full_pods", "Full pods built", built // npp, "1", noun="pods",
                       formula="⌊{nodes_built} / {nodes_per_pod}⌋")
    d.step("last_pod_nodes", "Nodes in a last, partial pod", built - full_pods * npp, "1", noun="nodes",
           formula="{nodes_built} − {full_pods} × {nodes_per_pod}")
    d.step(
        "leaf_switches", "Leaf switches: one per rail per group of NICs", f["leaves"], "1", noun="switches",
        formula="{rails} × ({full_pods} × ⌈{nodes_per_pod} / {leaf_down_ports}⌉ + ⌈{last_pod_nodes} / "
                "{leaf_down_ports}⌉)",
    )
    d.step(
        "spine_switches", "Spine switches: absorb every leaf up-link", f["spines"], "1", noun="switches",
        formula="{leaf_switches} leaves × {leaf_down_ports} up-links / {leaf_down_ports} down-ports",
    )
    d.step(
        "spine_up_ports", "Spine ports up to the core", f["spine_up"], "1", noun="ports",
        formula="⌊{leaf_down_ports} / {core_taper}⌋",
    )
    d.step(
        "core_switches", "Core switches: one port per spine up-link", f["core"], "1", noun="switches",
        formula="⌈{spine_switches} × {spine_up_ports} / {switch_radix}⌉" if f["pods"] > 1
        else "0 (one pod needs no core)",
    )
    d.step(
        "total_switches", "Switches in the fabric", f["total"], "1", noun="switches",
        formula="{leaf_switches} + {spine_switches} + {core_switches}",
    )
    nb = fabric(built, radix, 1.0, per_node)
    d.step(
        "total_switches_nonblocking", "Switches if the core were non-blocking (taper 1)", nb["total"], "1",
        noun="switches",
        formula=f"{{leaf_switches}} + {{spine_switches}} + {nb['core']:,} core",
    )
    d.step("spine_ports_used", "Spine ports in use (down to leaves + up to the core)",
           f["spine_down"] + f["spine_up"], "1", noun="ports",
           formula="{leaf_down_ports} + {spine_up_ports}")
    d.step("spine_idle_ports", "Spine ports left empty", radix - f["spine_down"] - f["spine_up"], "1", noun="ports",
           formula="{switch_radix} − {spine_ports_used}")
    d.step("spine_port_plan", "What the empty spine ports are for",
           "They are the upgrade path: cable them to more core switches and the core becomes non-blocking without "
           "recabling a pod." if radix - f["spine_down"] - f["spine_up"] > 0 and p.core_taper > 1
           else "At 1:1 none are empty: the core is already non-blocking." if p.core_taper <= 1
           else "None are empty here: the taper leaves no spare port.",
           formula="{spine_idle_ports} > 0 and {core_taper} > 1", kind="verdict")
    d.step("core_upgrade_switches", "Core switches to add to go non-blocking later", nb["core"] - f["core"], "1",
           noun="switches",
           formula=f"{nb['core']:,} − {{core_switches}}")
    leaves_per_rail_full = math.floor(radix * p.core_taper / (p.core_taper + 1) / per_node + 1e-9)
    d.step("pod_nodes_spines_full", "Nodes per pod if the empty spine ports took more leaves instead",
           leaves_per_rail_full * f["leaf_down"], "1", noun="nodes",
           formula="⌊{switch_radix} × {core_taper} / ({core_taper} + 1) / {rails}⌋ × {leaf_down_ports}")
    links = d.step(
        "fabric_links", "Cables: NIC-leaf, leaf-spine, spine-core", f["links"], "1", noun="links",
        formula="{gpus_built} + {leaf_switches} × {leaf_down_ports} + {spine_switches} × {spine_up_ports}"
        if f["core"] else "{gpus_built} + {leaf_switches} × {leaf_down_ports}",
    )
    d.step("transceivers", "Optics if every link is optical (one per end)", 2 * links, "1", noun="transceivers",
           formula="2 × {fabric_links}")
    switch_ends = d.step("switch_link_ends", "Switch ports cabled (a NIC link has one switch end, a switch link two)",
                         2 * links - gpus_built, "1", noun="ports",
                         formula="2 × {fabric_links} − {gpus_built}")
    twin = d.step("twin_port_modules", "Twin-port 800G OSFP modules on the switches (two 400G ports each)",
                  math.ceil(switch_ends / 2), "1", noun="modules", formula="⌈{switch_link_ends} / 2⌉")
    d.step("optical_modules", "Optical modules to buy: one per NIC plus the twin-port switch modules",
           gpus_built + twin, "1", noun="modules", formula="{gpus_built} + {twin_port_modules}")
    d.step("switch_optics_W", "One fully cabled switch's own optics (one twin-port module a cage)",
           radix / 2 * TWIN_PORT_W, "W", formula=f"{{switch_radix}} / 2 cages × {TWIN_PORT_W:g} W")
    d.require("switch_power_covers_optics", p.switch_W >= radix / 2 * TWIN_PORT_W,
              lambda: (f"A {radix}-port switch's own optics draw {radix / 2 * TWIN_PORT_W:,.0f} W, more than the "
                       f"{p.switch_W:,.0f} W given for the whole switch; raise the switch power."))
    d.step("switch_optics_share", "Share of the assumed switch power those optics take",
           radix / 2 * TWIN_PORT_W / p.switch_W, "1", percent=True, formula="{switch_optics_W} / {switch_W}")
    d.step("optics_kW", "Power of those optics (17 W a twin-port module, 9 W a NIC module)",
           (twin * TWIN_PORT_W + gpus_built * NIC_MODULE_W) / 1000, "kW",
           formula=f"{{twin_port_modules}} × {TWIN_PORT_W:g} W + {{gpus_built}} × {NIC_MODULE_W:g} W")
    max_gpus = d.step(
        "max_gpus_three_tier", "Most GPUs a three-tier tree of this radix holds",
        radix * radix * radix // 4, "1", noun="GPUs",
        formula="{switch_radix} pods × {switch_radix}² / 4 NICs",
    )
    d.step("fabric_tier_name", "Tiers this build's fabric has",
           "two-tier (leaf and spine; one pod needs no core)" if f["pods"] == 1
           else "three-tier" if gpus_built <= max_gpus else "four-tier (past three tiers of this radix)",
           formula="{pods} = 1 → two tiers; {gpus_built} ≤ {max_gpus_three_tier} → three", kind="verdict")
    d.step(
        "fabric_fits_three_tiers", "Does the build fit three tiers?",
        "yes" if gpus_built <= max_gpus else "no: a fourth tier or bigger switches",
        formula="{gpus_built} ≤ {max_gpus_three_tier}", kind="verdict",
    )

    # --- the checkpoint write ---
    write = d.step(
        "checkpoint_write_GBps", "Write rate to land a checkpoint in the deadline",
        p.checkpoint_tb * 1000 / p.checkpoint_write_s, "GB/s",
        formula="{checkpoint_tb} / {checkpoint_write_s}",
    )
    d.step(
        "checkpoint_per_gpu_GB", "Share each GPU writes", p.checkpoint_tb * 1000 / p.gpus, "GB",
        formula="{checkpoint_tb} / {gpus}",
    )
    bpp = d.step("checkpoint_bytes_per_param", f"Checkpoint per parameter ({p.training_state}): weights and fp32 "
                 "optimizer state, no gradients", sb.checkpoint, "B", note=sb.source,
                 formula=f"{sb.weights:g} B (weights) + {sb.checkpoint_optimizer:g} B (optimizer state kept for resuming)")
    d.step(
        "checkpoint_params_b", "Params whose resumable state is that checkpoint",
        p.checkpoint_tb * 1e12 / bpp / 1e9, "1", noun="B params",
        formula="{checkpoint_tb} / {checkpoint_bytes_per_param} / 10⁹",
    )
    model_ckpt = d.step(
        "model_checkpoint_TB", "Full checkpoint of the model (every parameter, counted from its shape)",
        m.total_params * bpp / 1e12, "TB",
        formula="{model_params} × {checkpoint_bytes_per_param}",
    )
    d.step(
        "model_checkpoint_write_GBps", "Write rate for the model's full checkpoint",
        model_ckpt * 1000 / p.checkpoint_write_s, "GB/s",
        formula="{model_checkpoint_TB} / {checkpoint_write_s}",
    )
    write = d.step(
        "burst_write_GBps", "Write rate to size storage for: the larger of the stated checkpoint's and the model's",
        max(write, model_ckpt * 1000 / p.checkpoint_write_s), "GB/s",
        formula="max({checkpoint_write_GBps}, {model_checkpoint_write_GBps})",
    )
    fe = d.step("frontend_node_GBps", "One node's front-end bandwidth",
                p.frontend_ports_per_node * p.frontend_port_Gbps / 8, "GB/s",
                formula="{frontend_ports_per_node} × {frontend_port_Gbps} / 8 bit/B")
    ck_node = d.step("checkpoint_node_GBps", "Checkpoint write per node during the burst", write / needed, "GB/s",
                     formula="{burst_write_GBps} / {nodes_needed}")
    d.step("checkpoint_frontend_share", "Share of a node's front-end link the burst uses", ck_node / fe, "1",
           percent=True, formula="{checkpoint_node_GBps} / {frontend_node_GBps}")
    d.step("perlmutter_oss_GBps", "Measured anchor: a Perlmutter all-flash Lustre server",
           PERLMUTTER_GBPS / PERLMUTTER_OSS, "GB/s",
           formula=f"{PERLMUTTER_GBPS / 1000:g} TB/s / {PERLMUTTER_OSS} OSS servers")
    d.step(
        "storage_servers", "Filesystem servers for the burst", math.ceil(write / p.storage_server_GBps - 1e-9),
        "1", noun="servers",
        formula="⌈{burst_write_GBps} GB/s / {storage_server_GBps} GB/s⌉",
    )

    # --- power ---
    node_w = d.step(
        "node_W", "One node at nameplate", per_node * gpu_W + p.node_overhead_W, "W",
        formula=f"{{gpus_per_node}} × {gpu_W:,.0f} W + {{node_overhead_W}} W",
    )
    rack_kw = d.step("rack_kW", "One rack of nodes at nameplate", p.nodes_per_rack * node_w / 1000, "kW",
                     formula="{nodes_per_rack} × {node_W}")
    d.step("compute_racks", "Compute racks", math.ceil(built / p.nodes_per_rack), "1", noun="racks",
           formula="⌈{nodes_built} / {nodes_per_rack}⌉")
    d.step("rack_fits_hall", "Can the hall cool a rack this dense?",
           "yes" if rack_kw <= p.hall_rack_kW + 1e-9 else "no: rear-door or direct liquid cooling, or fewer nodes a rack",
           formula="{rack_kW} ≤ {hall_rack_kW}", kind="verdict")
    fit = d.step("nodes_per_rack_hall", "Nodes a rack holds within the hall's cooling",
                 max(1, math.floor(p.hall_rack_kW * 1000 / node_w + 1e-9)), "1", noun="nodes",
                 formula="max(1, ⌊{hall_rack_kW} / {node_W}⌋)")
    d.step("racks_at_hall_limit", "Compute racks at that density", math.ceil(built / fit), "1", noun="racks",
           formula="⌈{nodes_built} / {nodes_per_rack_hall}⌉")
    it = d.step(
        "it_load_MW", "IT load at nameplate (nodes + fabric)",
        (built * node_w + f["total"] * p.switch_W) / 1e6, "MW",
        formula="{nodes_built} × {node_W} + {total_switches} × {switch_W}",
    )
    d.step(
        "it_W_per_gpu", "IT watts per GPU, all in", it * 1e6 / gpus_built, "W",
        formula="{it_load_MW} MW / {gpus_built}",
    )
    facility = d.step(
        "facility_power_MW", "Facility feed (IT × PUE)", it * p.pue, "MW",
        formula="{it_load_MW} MW × {pue}",
    )
    d.step("facility_power_MW_avg_pue", "The feed at the industry-average PUE (Uptime Institute, 2023)",
           it * UPTIME_AVG_PUE, "MW", formula=f"{{it_load_MW}} MW × {UPTIME_AVG_PUE:g}")
    energy = d.step(
        "energy_per_year_Wh", "Energy a year at that draw", facility * 1e6 * HOURS_PER_YEAR, "Wh",
        formula="{facility_power_MW} MW × 8,760 h",
    )
    d.step(
        "power_cost_per_year_USD", "Electricity a year", energy / 1000 * p.usd_per_kwh, "USD",
        formula="{energy_per_year_Wh} × {usd_per_kwh}",
    )

    # --- failures and spares ---
    rate = d.step(
        "interruptions_per_node_day", "Interruptions per node-day (Llama 3 rate)",
        LLAMA3_INTERRUPTIONS.per_gpu_day * per_node * p.failure_rate_scale, "1", noun="per node-day",
        formula=(f"{LLAMA3_INTERRUPTIONS.unexpected_interruptions} interruptions / ({LLAMA3_INTERRUPTIONS.days:g} × "
                 f"{LLAMA3_INTERRUPTIONS.gpus:,} GPU days) × {{gpus_per_node}} × {{failure_rate_scale}}"),
    )
    per_day = d.step(
        "interruptions_per_day", "Interruptions a day across the nodes built", rate * built, "1",
        noun="per day",
        formula="{interruptions_per_node_day} × {nodes_built} nodes",
    )
    job_mtbf_s = d.step(
        "job_interruption_interval_s", "Mean time between interruptions of the job",
        SECONDS_PER_DAY / (rate * needed), "s",
        formula="86,400 s / ({interruptions_per_node_day} × {nodes_needed} nodes)",
    )
    d.step(
        "checkpoint_interval_s", "Checkpoint interval (Young: √(2 × write × MTBF))",
        math.sqrt(2 * p.checkpoint_write_s * job_mtbf_s), "s",
        formula="(2 × {checkpoint_write_s} × {job_interruption_interval_s})^0.5",
    )
    repairs = d.step(
        "repairs_per_day", "Nodes pulled for repair a day", per_day * p.repair_share, "1", noun="per day",
        formula="{interruptions_per_day} × {repair_share}",
    )
    in_repair = d.step(
        "mean_nodes_in_repair", "Mean nodes in repair (Little's law)", repairs * p.repair_hours / 24, "1",
        noun="nodes",
        formula="{repairs_per_day} × {repair_hours} / 24 h",
    )
    p99 = d.step(
        "spare_nodes_p99", "Spares covering repairs 99% of the time (Poisson)", poisson_quantile(in_repair, 0.99),
        "1", noun="nodes",
        formula="smallest k with P(Poisson({mean_nodes_in_repair}) ≤ k) ≥ 0.99", kind="search",
    )
    d.step(
        "spare_nodes_p999", "Spares covering repairs 99.9% of the time", poisson_quantile(in_repair, 0.999),
        "1", noun="nodes",
        formula="smallest k with P(Poisson({mean_nodes_in_repair}) ≤ k) ≥ 0.999", kind="search",
    )
    d.step(
        "rounding_covers_spares", "Do the rounding's extra nodes cover the p99 spares?",
        "yes" if built - needed >= p99 else "no: buy the spares on top",
        formula="{nodes_from_rounding} ≥ {spare_nodes_p99}", kind="verdict",
    )
    d.step(
        "nodes_needed_with_spares", "Nodes to keep the job whole at p99", needed + p99, "1", noun="nodes",
        formula="{nodes_needed} + {spare_nodes_p99}",
    )
    return d
