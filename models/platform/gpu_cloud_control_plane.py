"""A GPU cloud control plane: thousands of nodes handed to tenants in minutes, and working (seed 004).

Teaching order, the interview's: the fleet and what fails in it per day, the reconciler that keeps
desired and observed state converging (its API load and its worker budget), the heartbeat that
detects a dead node (write rate against detection time), the health gate that pulls a bad node
before a tenant gets it (the chance a k-node allocation holds one, with and without the gate),
and the local meter that lets billing survive a control-plane outage (buffer per node, replay).

The node lifecycle is a pure transition table (`TRANSITIONS`) with guards; `apply` runs one event
against a `Fleet` and `scenario` scripts the page's step-through, with and without the health gate.
The invariant the tests check on random event sequences: a node is allocated to at most one tenant,
and only from READY.

Modelling choices, stated on the page:
- One reconcile per node per interval, `calls_per_reconcile` API calls each when it reads through
  the API server; with a watch cache (informers) reads are local and only reconciles that find
  drift call the API.
- A heartbeat is one write per node per interval; a node is declared dead after `missed_beats`
  intervals without one (the worst case after the last beat).
- Bad nodes are independent: each node handed out is bad with probability p, so a k-node
  allocation holds at least one with 1 − (1 − p)^k. A gate that catches a fraction c of bad nodes
  leaves p(1 − c) / (1 − pc) bad among the nodes it passes.
- Node failures per day scale the Llama 3 interruption rate per GPU-day (catalog) to the fleet;
  each interruption takes its node to REPAIR.
- The meter writes one record per GPU per interval to local disk; an outage buffers every record
  until the control plane is back, then the fleet replays them over a chosen window.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Annotated, Literal

from models.catalog import LLAMA3_INTERRUPTIONS
from models.core import Derivation, Knob, StrictModel
from models.units import format_number, format_quantity

# ---------------------------------------------------------------------------------------------
# The node lifecycle: states, events, guards
# ---------------------------------------------------------------------------------------------

STATES = ("PROVISIONING", "BURN_IN", "READY", "ALLOCATED", "DRAINING", "REPAIR", "RMA")
TENANT_STATES = frozenset({"ALLOCATED", "DRAINING"})  # the tenant's data may still be on the node
EVENTS = ("imaged", "burn_in", "health_check", "allocate", "release", "fault_reported", "drained",
          "repair", "rma", "replaced")
MAX_FIELD_REPAIRS = 2  # a node that needs a third repair goes back to the vendor

Fault = Literal["", "detectable", "silent"]
Guard = Literal["", "fault_detectable", "no_detectable_fault", "fault_present", "gate_passed",
                "repairs_left"]


@dataclass(frozen=True)
class Transition:
    src: str
    event: str
    dst: str
    guard: Guard
    why: str


TRANSITIONS: tuple[Transition, ...] = (
    Transition("PROVISIONING", "imaged", "BURN_IN", "",
               "OS image and pinned firmware written; the node is in the inventory, not yet in the pool"),
    Transition("BURN_IN", "burn_in", "REPAIR", "fault_detectable",
               "the stress run found the fault: the node never reaches the pool"),
    Transition("BURN_IN", "burn_in", "READY", "no_detectable_fault",
               "stress, NCCL and memory tests passed: the node joins the READY pool"),
    Transition("READY", "health_check", "REPAIR", "fault_detectable",
               "the pre-handoff check caught a fault that appeared while the node sat idle"),
    Transition("READY", "health_check", "READY", "no_detectable_fault",
               "the pre-handoff check passed: the node may be handed out now"),
    Transition("READY", "allocate", "ALLOCATED", "gate_passed",
               "bound to one tenant: fabric partition joined, image booted, metering starts"),
    Transition("ALLOCATED", "release", "DRAINING", "",
               "the tenant let go: metering stops, the wipe begins"),
    Transition("ALLOCATED", "fault_reported", "DRAINING", "fault_present",
               "an Xid error or a tenant ticket, confirmed by a targeted test: the tenant gets a replacement"),
    Transition("DRAINING", "drained", "REPAIR", "fault_detectable",
               "disks wiped and partitions left; the known fault sends it to repair"),
    Transition("DRAINING", "drained", "READY", "no_detectable_fault",
               "disks wiped, GPUs reset, partitions left, check passed: back in the pool, tenant cleared"),
    Transition("REPAIR", "repair", "BURN_IN", "repairs_left",
               "part swapped or reseated; a repaired node burns in again before it is trusted"),
    Transition("REPAIR", "rma", "RMA", "",
               "returned to the vendor: the board is replaced, not fixed on site"),
    Transition("RMA", "replaced", "PROVISIONING", "",
               "a replacement board arrives and starts from scratch"),
)

GUARD_TEXT = {
    "fault_detectable": "a fault the check can see",
    "no_detectable_fault": "no fault the check can see",
    "fault_present": "a fault is present",
    "gate_passed": "passed the pre-handoff check since it became READY (when the gate is on)",
    "repairs_left": f"fewer than {MAX_FIELD_REPAIRS} field repairs so far",
}


@dataclass(frozen=True)
class Node:
    name: str
    state: str
    tenant: str = ""
    fault: Fault = ""  # the truth, which the control plane does not see until a check or a report
    checked: bool = False  # passed the pre-handoff check since it last became READY
    repairs: int = 0


@dataclass(frozen=True)
class Fleet:
    nodes: tuple[Node, ...]

    def node(self, name: str) -> Node:
        return next(n for n in self.nodes if n.name == name)

    def count(self, state: str) -> int:
        return sum(n.state == state for n in self.nodes)

    def tenants(self) -> dict[str, tuple[str, ...]]:
        out: dict[str, list[str]] = {}
        for n in self.nodes:
            if n.state == "ALLOCATED":
                out.setdefault(n.tenant, []).append(n.name)
        return {t: tuple(v) for t, v in out.items()}

    def _with(self, node: Node) -> "Fleet":
        return Fleet(tuple(node if n.name == node.name else n for n in self.nodes))


@dataclass(frozen=True)
class Outcome:
    fleet: Fleet
    accepted: bool
    message: str
    transition: Transition | None = None
    handed_bad_node: bool = False  # an allocation gave a tenant a node with a fault


def _guard_holds(guard: Guard, node: Node, gate: bool) -> bool:
    if guard == "":
        return True
    if guard == "fault_detectable":
        return node.fault == "detectable"
    if guard == "no_detectable_fault":
        return node.fault != "detectable"
    if guard == "fault_present":
        return node.fault != ""
    if guard == "gate_passed":
        return node.checked or not gate
    if guard == "repairs_left":
        return node.repairs < MAX_FIELD_REPAIRS
    raise ValueError(f"unknown guard {guard}")


def inject_fault(fleet: Fleet, name: str, kind: Fault) -> Fleet:
    """The world, not the control plane: a fault appears on a node and nobody knows yet."""
    return fleet._with(replace(fleet.node(name), fault=kind))


def apply(fleet: Fleet, name: str, event: str, tenant: str = "", gate: bool = True) -> Outcome:
    """One event for one node. Pure: a new fleet, or the same one with the reason it was refused."""
    node = fleet.node(name)
    candidates = [t for t in TRANSITIONS if t.src == node.state and t.event == event]
    if not candidates:
        legal = sorted({t.event for t in TRANSITIONS if t.src == node.state})
        return Outcome(fleet, False, f"{name} is {node.state}: '{event}' is not a legal event there "
                                     f"(legal: {', '.join(legal)})")
    if event == "allocate" and not tenant:
        return Outcome(fleet, False, f"allocate {name}: no tenant named")
    t = next((c for c in candidates if _guard_holds(c.guard, node, gate)), None)
    if t is None:
        guard = candidates[0].guard
        return Outcome(fleet, False, f"{name}: '{event}' refused: the guard needs {GUARD_TEXT[guard]}")
    new = replace(node, state=t.dst)
    bad = False
    if event == "allocate":
        new = replace(new, tenant=tenant, checked=False)
        bad = node.fault != ""
    elif event == "health_check" and t.dst == "READY":
        new = replace(new, checked=True)
    elif event == "fault_reported":
        new = replace(new, fault="detectable")  # the targeted test now knows what to look for
    elif event == "drained":
        new = replace(new, tenant="", checked=False)
    elif event == "repair":
        new = replace(new, fault="", repairs=node.repairs + 1)
    elif event == "replaced":
        new = replace(new, fault="", repairs=0)
    if t.dst in ("READY", "BURN_IN", "REPAIR") and event != "health_check":
        new = replace(new, checked=False)
    who = f" to {tenant}" if event == "allocate" else ""
    return Outcome(fleet._with(new), True, f"{name}: {t.src} → {t.dst}{who}: {t.why}", t, bad)


# ---------------------------------------------------------------------------------------------
# The step-through
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Frame:
    index: int
    node: str  # "" for the opening frame
    event: str  # a lifecycle event, or "fault" for the world injecting one
    tenant: str
    accepted: bool
    message: str
    fleet: Fleet
    bad_handed: int  # allocations so far that gave a tenant a faulty node
    note: str = ""


def initial_fleet() -> Fleet:
    nodes = [Node(f"n{i}", "BURN_IN") for i in range(1, 6)] + [Node("n6", "PROVISIONING")]
    fleet = Fleet(tuple(nodes))
    return inject_fault(fleet, "n4", "detectable")  # a weak HBM stack that burn-in will find


def scenario(gate: bool = True) -> list[Frame]:
    """Six nodes, two tenants. Burn-in catches one bad node; two faults appear on READY nodes (one the
    check can see, one it cannot); acme asks for four nodes; globex tries to take one of acme's and
    one still burning in; the faults surface; nodes are released, drained, repaired and returned to
    the vendor. With `gate=False` the pre-handoff check is skipped: acme is handed both bad nodes
    instead of one, and its job crashes on the one the check would have caught."""
    fleet = initial_fleet()
    frames = [Frame(0, "", "", "", True,
                    "Five nodes are burning in and one is still being imaged. n4 carries a weak HBM stack "
                    "(hidden: only a test can see it).", fleet, 0)]
    bad = 0

    def push(node: str, event: str, tenant: str = "", note: str = "") -> None:
        nonlocal fleet, bad
        out = apply(fleet, node, event, tenant, gate)
        fleet = out.fleet
        bad += out.handed_bad_node
        frames.append(Frame(len(frames), node, event, tenant, out.accepted, out.message, fleet, bad, note))

    def fault(node: str, kind: Fault, text: str) -> None:
        nonlocal fleet
        fleet = inject_fault(fleet, node, kind)
        frames.append(Frame(len(frames), node, "fault", "", True, text, fleet, bad))

    for n in ("n1", "n2", "n3", "n4", "n5"):
        push(n, "burn_in")
    push("n6", "imaged")
    fault("n2", "detectable", "While n2 sits in READY, one of its InfiniBand links starts flapping. "
                              "Nothing in the control plane knows yet.")
    fault("n5", "silent", "n5 develops a GPU that runs 8% slow under load: no quick check flags it.")
    candidates = ("n1", "n2", "n3", "n5")
    if gate:
        notes = {"n1": "acme asks for four nodes: each candidate is checked just before the handoff.",
                 "n2": "The gate pulls the bad node before any tenant sees it.",
                 "n5": "The slow GPU passes: a gate catches a share of bad nodes, not all of them."}
        for n in candidates:
            push(n, "health_check", note=notes.get(n, ""))
        for n in candidates:
            if fleet.node(n).state == "READY":
                push(n, "allocate", "acme")
    else:
        for i, n in enumerate(candidates):
            push(n, "allocate", "acme", note="acme asks for four nodes; no check runs before the handoff."
                 if i == 0 else "")
    push("n3", "allocate", "globex", note="The guard that keeps a node with one tenant: only READY nodes "
                                          "are allocated.")
    push("n6", "allocate", "globex", note="Only READY, so never a node that is still burning in.")
    push("n6", "burn_in")
    if gate:
        push("n6", "health_check")
        push("n6", "allocate", "acme", note="acme's fourth node, a burn-in later than without the gate: "
                                            "the gate costs capacity and minutes.")
    else:
        push("n6", "allocate", "globex")
        push("n2", "fault_reported", note="acme's job crashed on the flapping link in its first hour; all "
                                          "four nodes restart from the last checkpoint and a replacement is owed.")
        push("n2", "drained")
    push("n5", "fault_reported", note="acme's step time is 8% slower than it should be; a targeted test "
                                      "on the node finds the slow GPU.")
    push("n5", "drained")
    push("n1", "release", note="acme is done with n1.")
    push("n1", "drained", note="Wiped and re-checked: another tenant can have it.")
    push("n2", "repair")
    push("n2", "burn_in")
    push("n4", "repair")
    push("n4", "burn_in")
    push("n5", "rma", note="A slow GPU is a board problem: it goes back to the vendor.")
    push("n5", "replaced")
    return frames


# ---------------------------------------------------------------------------------------------
# The arithmetic
# ---------------------------------------------------------------------------------------------

SECONDS_PER_DAY = 86_400


class Params(StrictModel):
    nodes: Annotated[
        int,
        Knob("Nodes in the fleet", "nodes", 100, 50_000, log=True,
             help="Whole GPU servers under one control plane (the seed's 'thousands').",
             draw=(800, 20_000)),
    ] = 4000
    gpus_per_node: Annotated[
        int,
        Knob("GPUs per node", "GPUs", 1, 16, 1,
             help="8 on an HGX server, 4 on a GB200 compute tray.", draw=(4, 8), draw_choices=(4, 8)),
    ] = 8
    reconcile_interval_s: Annotated[
        float,
        Knob("Reconcile interval per node", "s", 1, 600, log=True,
             help="How often each node's desired and observed state are compared, even with no event.",
             draw=(10, 120)),
    ] = 30
    calls_per_reconcile: Annotated[
        int,
        Knob("API calls per reconcile", "calls", 1, 20, 1,
             help="Reads and writes one pass makes when it goes through the API server (node, spec, "
                  "partitions, status patch, event).", draw=(3, 8)),
    ] = 5
    api_call_ms: Annotated[
        float,
        Knob("API call latency", "ms", 1, 500, log=True,
             help="One round trip to the API server or the state store.", draw=(5, 50)),
    ] = 20
    reconciler_workers: Annotated[
        int,
        Knob("Reconciler workers", "workers", 1, 256, log=True,
             help="Concurrent reconciles; each works on one node at a time from a de-duplicating queue.",
             draw=(16, 64)),
    ] = 20
    drift_fraction: Annotated[
        float,
        Knob("Reconciles that find drift", "", 0.001, 1, log=True, percent=True,
             help="Share of passes where observed differs from desired and something must be written.",
             draw=(0.005, 0.1)),
    ] = 0.02
    heartbeat_interval_s: Annotated[
        float,
        Knob("Heartbeat interval", "s", 1, 120, log=True,
             help="Each node agent renews its lease this often.", draw=(5, 30)),
    ] = 10
    missed_beats: Annotated[
        int,
        Knob("Missed heartbeats before 'dead'", "beats", 1, 10, 1,
             help="Renewals a node may miss before the control plane declares it dead.", draw=(3, 6)),
    ] = 4
    bad_node_fraction: Annotated[
        float,
        Knob("Bad nodes in the READY pool", "", 0.0001, 0.2, log=True, percent=True,
             help="Share of idle nodes carrying a fault (flapping link, failing HBM, slow GPU). New "
                  "clusters run higher.", draw=(0.002, 0.05)),
    ] = 0.01
    allocation_nodes: Annotated[
        int,
        Knob("Nodes in one allocation", "nodes", 1, 2048, log=True,
             help="What one tenant reserves for one job (64 nodes = 512 GPUs on 8-GPU nodes).",
             draw=(8, 512)),
    ] = 64
    gate_catch_fraction: Annotated[
        float,
        Knob("Health gate catches", "", 0, 0.999, 0.01, percent=True,
             help="Share of bad nodes the pre-handoff check finds (the rest are silent faults).",
             draw=(0.5, 0.98)),
    ] = 0.9
    repair_days: Annotated[
        float,
        Knob("Mean time in repair", "days", 0.25, 30, log=True,
             help="From a failure to the node back in READY: triage, parts, burn-in.", draw=(1, 10)),
    ] = 3
    fabric_config_s: Annotated[
        float,
        Knob("Fabric partition update", "s", 1, 600, log=True,
             help="Adding the nodes' ports to the tenant's partition key, VLAN and NVLink partition.",
             draw=(5, 120)),
    ] = 30
    precheck_min: Annotated[
        float,
        Knob("Pre-handoff health check", "min", 0, 60, 0.5,
             help="The gate: a short diagnostic run just before a node is handed out.", draw=(1, 10)),
    ] = 3
    boot_min: Annotated[
        float,
        Knob("Reboot into the tenant's image", "min", 0.5, 30, 0.5,
             help="Firmware POST plus the tenant's OS image on a bare-metal GPU server.", draw=(3, 12)),
    ] = 6
    burn_in_h: Annotated[
        float,
        Knob("Burn-in", "h", 1, 240, log=True,
             help="Stress, memory and fabric tests a new or repaired node runs before it joins the pool.",
             draw=(12, 96)),
    ] = 48
    meter_interval_s: Annotated[
        float,
        Knob("Meter interval", "s", 1, 3600, log=True,
             help="The node agent writes one usage record per GPU this often.", draw=(10, 300)),
    ] = 60
    meter_record_bytes: Annotated[
        float,
        Knob("Meter record size", "B", 32, 4096, log=True,
             help="Node, GPU, tenant, allocation id, interval start and end, sequence number, checksum.",
             draw=(100, 500)),
    ] = 200
    outage_h: Annotated[
        float,
        Knob("Control-plane outage", "h", 0.1, 168, log=True,
             help="How long the billing path must survive without the control plane.", draw=(1, 72)),
    ] = 6
    replay_window_min: Annotated[
        float,
        Knob("Replay spread", "min", 1, 1440, log=True,
             help="Agents replay their buffers with jitter spread over this window after the outage.",
             draw=(10, 120)),
    ] = 30
    allocated_fraction: Annotated[
        float,
        Knob("Fleet allocated to tenants", "", 0.1, 1, 0.01, percent=True,
             help="Share of nodes earning revenue at a given moment.", draw=(0.6, 0.95)),
    ] = 0.85
    gpu_hour_usd: Annotated[
        float,
        Knob("Price per GPU-hour", "USD", 0.5, 10, 0.05,
             help="What a tenant pays for one GPU for one hour.", draw=(1.5, 4)),
    ] = 2.5


def solve(p: Params) -> Derivation:
    d = Derivation(p)
    # --- the fleet ---------------------------------------------------------------------------------
    gpus = d.step("fleet_gpus", "GPUs under the control plane", p.nodes * p.gpus_per_node, "1", noun="GPUs",
                  formula="{nodes} nodes × {gpus_per_node} GPUs")
    rate = d.step("interruptions_per_gpu_day", "Unexpected interruptions per GPU per day (Llama 3, 16,384 H100s)",
                  LLAMA3_INTERRUPTIONS.per_gpu_day, "1",
                  formula="419 interruptions / (54 × 16,384 GPU-days)")
    failures = d.step("node_failures_per_day", "Nodes that fail per day", gpus * rate, "1", noun="nodes",
                      formula="{fleet_gpus} GPUs × {interruptions_per_gpu_day}")
    d.step("nodes_in_repair", "Nodes in REPAIR at any time (Little's law)", failures * p.repair_days, "1",
           noun="nodes", formula="{node_failures_per_day} per day × {repair_days} / 1 day")
    d.step("repair_share", "Share of the fleet in repair", failures * p.repair_days / p.nodes, "1", percent=True,
           formula="{nodes_in_repair} / {nodes}")
    handoff = d.step("handoff_s", "From request to login, for a node already READY",
                     p.fabric_config_s + 60 * p.precheck_min + 60 * p.boot_min, "s",
                     formula="{fabric_config_s} + {precheck_min} + {boot_min}")
    d.step("cold_handoff_s", "The same from a node that still has to burn in",
           3600 * p.burn_in_h + handoff, "s", formula="{burn_in_h} + {handoff_s}")

    # --- the warm pool: READY nodes held back so "in minutes" holds --------------------------------
    # A tenant's failed node is swapped from READY at once, while anything that refills READY (a new
    # or repaired node) first spends a burn-in. So the pool covers one allocation of the size sold in
    # minutes plus the swaps expected during one burn-in. Released nodes drain straight back to READY
    # and only help; they are left out, so the figure errs high.
    repair = failures * p.repair_days
    swaps = d.step("warm_pool_swaps_nodes", "Failed nodes swapped out of READY during one burn-in",
                   failures * p.burn_in_h / 24, "1", noun="nodes",
                   formula="{node_failures_per_day} per day × {burn_in_h} / 24 h")
    pool = d.step("warm_pool_nodes", "Burned-in READY nodes to hold back (the warm pool)",
                  math.ceil(p.allocation_nodes + swaps - 1e-9), "1", noun="nodes",
                  formula="⌈{allocation_nodes} + {warm_pool_swaps_nodes}⌉")
    d.step("warm_pool_share", "Share of the fleet held as the warm pool", pool / p.nodes, "1", percent=True,
           formula="{warm_pool_nodes} / {nodes}")
    d.step("warm_pool_idle_usd_per_h", "What the warm pool forgoes an hour at list price",
           pool * p.gpus_per_node * p.gpu_hour_usd, "USD/h",
           formula="{warm_pool_nodes} × {gpus_per_node} × {gpu_hour_usd} / 1 h")
    free = d.step("unallocated_healthy_nodes", "Nodes neither allocated nor in repair",
                  max(0.0, p.nodes * (1 - p.allocated_fraction) - repair), "1", noun="nodes",
                  formula="max(0, {nodes} × (1 − {allocated_fraction}) − {nodes_in_repair})")
    d.step("max_sellable_share_with_pool", "Highest share of the fleet sold that still leaves the warm pool",
           max(0.0, 1 - (pool + repair) / p.nodes), "1", percent=True,
           formula="max(0, 1 − ({warm_pool_nodes} + {nodes_in_repair}) / {nodes})")
    d.step("warm_pool_covered", "Do the unallocated nodes hold the warm pool?", "yes" if free >= pool else "no",
           "1", kind="verdict", formula="{unallocated_healthy_nodes} ≥ {warm_pool_nodes}")

    # --- the reconciler ---------------------------------------------------------------------------
    rps = d.step("reconciles_per_s", "Reconciles per second across the fleet", p.nodes / p.reconcile_interval_s,
                 "1/s", noun="reconciles", formula="{nodes} nodes / {reconcile_interval_s} s")
    qps = d.step("api_qps", "API calls per second, every reconcile reading through the API server",
                 rps * p.calls_per_reconcile, "1/s", noun="calls",
                 formula="{reconciles_per_s} × {calls_per_reconcile}")
    d.step("api_qps_with_cache", "API calls per second with a watch cache (only drift calls the API)",
           qps * p.drift_fraction, "1/s", noun="calls", formula="{api_qps} × {drift_fraction}")
    work = d.step("reconcile_work_s", "One reconcile, start to finish", p.calls_per_reconcile * p.api_call_ms / 1000,
                  "s", formula="{calls_per_reconcile} calls × {api_call_ms} ms")
    util = d.step("reconciler_busy_share", "Busy share of the reconciler workers",
                  rps * work / p.reconciler_workers, "1", percent=True,
                  formula="{reconciles_per_s} × {reconcile_work_s} / {reconciler_workers}")
    d.step("reconciler_keeps_up", "Do the workers keep up with the interval?", "yes" if util < 1 else "no", "1",
           formula="{reconciler_busy_share} < 100 %", kind="verdict")
    d.require("reconciler_keeps_up", util < 1, lambda: (
        f"The reconciler cannot keep up: visiting {format_number(p.nodes)} nodes every "
        f"{format_quantity(p.reconcile_interval_s, 's')} needs {format_quantity(100 * util, '%')} of "
        f"{format_number(p.reconciler_workers)} workers' time, so the interval it promises is never met. "
        "Add workers, lengthen the interval or cut the calls per reconcile."))
    d.step("full_resync_s", "Time for the workers to visit every node once (after a restart)",
           p.nodes * work / p.reconciler_workers, "s",
           formula="{nodes} nodes × {reconcile_work_s} s / {reconciler_workers} workers")

    # --- heartbeats -------------------------------------------------------------------------------
    d.step("heartbeat_writes_per_s", "Heartbeat (lease) writes per second", p.nodes / p.heartbeat_interval_s,
           "1/s", noun="writes", formula="{nodes} nodes / {heartbeat_interval_s} s")
    detect = d.step("failure_detection_s", "Worst case from a node's last heartbeat to 'dead'",
                    p.heartbeat_interval_s * p.missed_beats, "s",
                    formula="{heartbeat_interval_s} s × {missed_beats} beats")
    d.step("blip_tolerated_s", "Longest control-plane blip that flags no healthy node",
           detect - p.heartbeat_interval_s, "s",
           formula="{failure_detection_s} s − {heartbeat_interval_s} s")

    # --- the health gate --------------------------------------------------------------------------
    q = p.bad_node_fraction
    k = p.allocation_nodes
    d.step("expected_bad_nodes", "Bad nodes expected in one allocation, no gate", k * q, "1", noun="nodes",
           formula="{allocation_nodes} × {bad_node_fraction}")
    d.step("p_allocation_has_bad_node", "Chance an allocation holds at least one bad node, no gate",
           1 - (1 - q) ** k, "1", percent=True, formula="1 − (1 − {bad_node_fraction})^{allocation_nodes}")
    c = p.gate_catch_fraction
    passed_bad = d.step("bad_fraction_after_gate", "Bad share among the nodes the gate passes",
                        q * (1 - c) / (1 - q * c), "1", percent=True,
                        formula="{bad_node_fraction} × (1 − {gate_catch_fraction}) / "
                                "(1 − {bad_node_fraction} × {gate_catch_fraction})")
    d.step("p_allocation_has_bad_node_gated", "Chance an allocation holds at least one bad node, behind the gate",
           1 - (1 - passed_bad) ** k, "1", percent=True,
           formula="1 − (1 − {bad_fraction_after_gate})^{allocation_nodes}")

    # --- billing through an outage ----------------------------------------------------------------
    intervals = d.step("meter_intervals_in_outage", "Meter intervals during the outage",
                       3600 * p.outage_h / p.meter_interval_s, "1", noun="intervals",
                       formula="{outage_h} / {meter_interval_s}")
    per_interval = d.step("meter_records_per_interval", "Records per node per interval (one per GPU)",
                          p.gpus_per_node, "1", noun="records", formula="{gpus_per_node} GPUs")
    buf_kb = d.step("meter_buffer_per_node_KB", "Local meter buffer one node needs for the outage",
                    p.meter_record_bytes * per_interval * intervals / 1000, "kB",
                    formula="{meter_record_bytes} × {meter_records_per_interval} × {meter_intervals_in_outage}")
    d.step("fleet_buffer_bytes", "The same across the fleet", buf_kb * 1000 * p.nodes, "B",
           formula="{meter_buffer_per_node_KB} × {nodes}")
    d.step("replay_records_per_s", "Records per second into billing while the fleet replays",
           p.nodes * per_interval * intervals / (60 * p.replay_window_min), "1/s", noun="records",
           formula="{nodes} × {meter_records_per_interval} × {meter_intervals_in_outage} / {replay_window_min}")
    d.step("revenue_in_outage_usd", "Revenue the outage window carries (what an unmetered outage loses)",
           p.nodes * p.allocated_fraction * p.gpus_per_node * p.gpu_hour_usd * p.outage_h, "USD",
           formula="{nodes} × {allocated_fraction} × {gpus_per_node} × {gpu_hour_usd} / 1 h × {outage_h}")
    return d

