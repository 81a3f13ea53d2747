"""Multi-region serving and the 30 seconds after a region drops (seeds 000, 003, 004).

The interview's arithmetic, in the order it is asked: what each region carries today, what the
survivors carry when one region is gone (N u / (N - 1): two regions at 60% leave one at 120%),
the utilization that N-1 sizing allows, what piles up in the window before capacity arrives,
what is lost in flight (Little's law) and how fast it comes back as retries, and what the warm
pool and the autoscaler buy. `simulate` runs the same scenario step by step
(`models.sim.failover`), and the page shows the two side by side.

Modelling choices, stated on the page: capacity is the request rate a replica sustains within
its latency SLO, so utilization 1.0 is the SLO limit, not the hardware limit; traffic is even
across regions; resident traffic (data that must not leave its region) is never moved; the
key sizing figures assume, as the seed does, that all traffic may move, and separate steps show
what residency and a partial drop change.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

from models.core import Derivation, Knob, StrictModel
from models.engine.knobs import ModelKnobs, llm
from models.sim import failover as sim



class _FailoverKnobs(StrictModel):
    regions: Annotated[
        int,
        Knob("Regions", "", 2, 8, 1, help="Serving regions, each with the same capacity and its own nearby clients.",
             draw=(2, 4)),
    ] = 2
    utilization: Annotated[
        float,
        Knob("Utilization today", "", 0.1, 0.95, 0.01, percent=True,
             help="Each region's load as a share of its capacity before anything fails.", draw=(0.35, 0.75)),
    ] = 0.6
    replicas_per_region: Annotated[
        int,
        Knob("Replicas per region", "", 1, 1000, 1, log=True,
             help="Model replicas serving in each region today.", draw=(8, 200)),
    ] = 40
    replica_rps: Annotated[
        float,
        Knob("Requests/s per replica", "req/s", 0.5, 500, log=True,
             help="The request rate one replica sustains within its latency SLO (its capacity).", draw=(5, 100)),
    ] = 25
    mean_request_s: Annotated[
        float,
        Knob("Mean request duration", "s", 0.5, 60, log=True,
             help="Time a request spends in service, first byte to last streamed token.", draw=(2, 30)),
    ] = 8
    failover_ceiling: Annotated[
        float,
        Knob("Admission ceiling", "", 0.5, 1.0, 0.01, percent=True,
             help="Highest share of capacity a region admits; the free tier is shed above it.", draw=(0.8, 1.0)),
    ] = 1.0
    window_s: Annotated[
        float,
        Knob("Window after the drop", "s", 5, 120, 1,
             help="The stretch the question asks about: what piles up before new capacity arrives.", draw=(15, 60)),
    ] = 30
    detection_s: Annotated[
        float,
        Knob("Detection delay", "s", 0, 120, 1,
             help="From the drop until the router stops sending the region its traffic.", draw=(3, 60)),
    ] = 15
    shift: Annotated[
        Literal["immediate", "ramp"],
        Knob("Traffic shift", help="Move the lost region's traffic at once, or along a linear weighted ramp.", simulation=True),
    ] = "immediate"
    ramp_s: Annotated[
        float,
        Knob("Ramp length", "s", 1, 120, 1, help="Length of the weighted ramp, if the shift ramps.", draw=(10, 60), simulation=True),
    ] = 30
    retry_policy: Annotated[
        Literal["immediate", "backoff", "backoff_jitter"],
        Knob("Client retries", help="Retry at once; exponential back-off with the same delay for everyone; "
             "or exponential back-off with full jitter."),
    ] = "backoff_jitter"
    retry_base_s: Annotated[
        float,
        Knob("Back-off base", "s", 0.1, 30, log=True,
             help="The first retry waits up to this long; each later one doubles it (capped at 60 s).",
             draw=(0.5, 5)),
    ] = 2
    max_retries: Annotated[
        int,
        Knob("Max retries", "", 0, 8, 1, help="Retries a client makes before it gives up.", draw=(1, 5)),
    ] = 3
    drop_fraction: Annotated[
        float,
        Knob("Share of the region lost", "", 0.1, 1.0, 0.05, percent=True,
             help="100% is a whole region; less is a zone or a cluster inside it.", draw=(1.0, 1.0)),
    ] = 1.0
    residency_fraction: Annotated[
        float,
        Knob("Resident traffic", "", 0, 0.9, 0.01, percent=True,
             help="Share of each region's traffic whose data must stay in that region (never failed over).",
             draw=(0.05, 0.3)),
    ] = 0.1
    paid_fraction: Annotated[
        float,
        Knob("Paid share of traffic", "", 0, 1, 0.05, percent=True,
             help="The rest is free tier, which admission control sheds first.", draw=(0.4, 0.9)),
    ] = 0.7
    admission_control: Annotated[
        bool, Knob("Admission control", help="Off: nothing is shed and every queue grows without bound.", simulation=True),
    ] = True
    queue_limit_s: Annotated[
        float,
        Knob("Queue bound", "s", 0.5, 120, log=True,
             help="Seconds of work at full capacity a region may hold queued before it sheds paid traffic too.",
             draw=(1, 20), simulation=True),
    ] = 5
    warm_pool_replicas: Annotated[
        int,
        Knob("Warm replicas per region", "", 0, 200, 1,
             help="Standby replicas with weights already in GPU memory: they take traffic as soon as the "
                  "router shifts.", draw=(0, 10)),
    ] = 2
    cold_start_s: Annotated[
        float,
        Knob("Cold start", "s", 5, 900, log=True,
             help="A new replica from request to useful, weights already staged in the region.", draw=(30, 300)),
    ] = 70
    autoscale_target: Annotated[
        float,
        Knob("Autoscaler target", "", 0.5, 1.0, 0.05, percent=True,
             help="Utilization the autoscaler sizes the survivors for.", draw=(0.6, 0.9)),
    ] = 0.8
    dns_ttl_s: Annotated[
        float,
        Knob("DNS TTL on the global name", "s", 0, 3600, 1,
             help="How long resolvers may keep the old answer after the router changes it. 0 models anycast or "
                  "a proxying global load balancer, which shift without a DNS change.", draw=(0, 300)),
    ] = 60
    health_check_interval_s: Annotated[
        float,
        Knob("Health-check interval", "s", 1, 120, 1,
             help="Seconds between a health checker's probes of a region's endpoint.", draw=(10, 30)),
    ] = 30
    health_check_failures: Annotated[
        int,
        Knob("Failed checks before unhealthy", "", 1, 10, 1,
             help="Consecutive failed probes before the checker marks the region down.", draw=(2, 5)),
    ] = 3
    gray_error_fraction: Annotated[
        float,
        Knob("Errors in a gray failure", "", 0.005, 0.5, 0.005, percent=True,
             help="Share of a region's requests failing while its health checks still pass (a bad NIC, a "
                  "wedged GPU, a full disk on some replicas).", draw=(0.01, 0.2)),
    ] = 0.05
    obtainable_gpu_fraction: Annotated[
        float,
        Knob("Cold replicas the survivor can get", "", 0, 1, 0.05, percent=True,
             help="Share of the replicas the autoscaler asks for that the survivor's cloud region can actually "
                  "supply on demand while everyone else fails over too; reserved capacity is 100%.",
             draw=(0.1, 1.0)),
    ] = 0.25
    weights_prestaged: Annotated[
        bool, Knob("Weights staged in every region", help="Off: new replicas pull weights across regions."),
    ] = True
    interregion_gbps: Annotated[
        float,
        Knob("Inter-region link", "Gb/s", 1, 1000, log=True,
             help="Bandwidth available to pull weights from another region.", draw=(10, 400)),
    ] = 100


class Params(ModelKnobs, _FailoverKnobs):
    """The failover's own knobs, then the model served (any catalog shape, or a custom one): its
    weights are what a cold replica pulls."""

    @classmethod
    def draw_together(cls, values: dict, rng) -> dict:
        """A mock's survivors are overloaded once the region drops (1.05-1.5 times their capacity,
        today's utilization 35-90%), as the question presumes: drawn on its own, nine scenarios in
        ten left the survivors with headroom, and nothing piled up or needed a cold replica."""
        per_utilization = sim.steady_loads(values["regions"], 1.0, values["drop_fraction"],
                                           values["residency_fraction"])[1]
        return {"utilization": min(0.9, max(0.35, rng.uniform(1.05, 1.5) / per_utilization))}


# Envoy's outlier detection defaults (its OutlierDetection proto): eject after 5 consecutive 5xx.
ENVOY_CONSECUTIVE_5XX = 5


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def attempts_rps(unique_rps: float, capacity_rps: float, retries: int) -> float:
    """Attempts/s when `unique_rps` new requests compete for `capacity_rps` of admissions and every
    refused attempt comes back, up to `retries` times, with the same chance as any other attempt.

    In steady state an attempt is admitted with probability p = capacity / attempts, so the
    attempts are A = unique x (1 + q + ... + q^retries) with q = 1 - p: a fixed point, found by
    bisection between `unique` (nothing refused) and `unique x (retries + 1)` (everything refused).
    """
    if unique_rps <= capacity_rps:
        return unique_rps
    if capacity_rps <= 0:
        return unique_rps * (retries + 1)
    lo, hi = unique_rps, unique_rps * (retries + 1)
    for _ in range(60):
        mid = (lo + hi) / 2
        q = 1 - capacity_rps / mid
        if unique_rps * sum(q**k for k in range(retries + 1)) > mid:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def _horizon_formula(p: Params) -> str:
    """The sum of the back-off windows as arithmetic: the doubling terms below the cap, then the
    capped ones at 60 s each (an immediate retry waits one 100 ms tick)."""
    if p.retry_policy == "immediate":
        return "{max_retries} retries × 0.1 s (one tick each)"
    doubling = sum(1 for a in range(1, p.max_retries + 1) if sim.backoff_s(p.retry_policy, p.retry_base_s, a)
                   < sim.BACKOFF_CAP_S)
    if doubling == p.max_retries:
        return "{retry_base_s} × (2^{max_retries} − 1) (doubling windows)"
    return (f"{{retry_base_s}} × (2^{doubling} − 1) + {p.max_retries - doubling} × {sim.BACKOFF_CAP_S:g} s "
            "(the later windows capped)")


def solve(p: Params) -> Derivation:
    d = Derivation(p)
    n, u, f, r = p.regions, p.utilization, p.drop_fraction, p.residency_fraction

    # --- numbers ---------------------------------------------------------------------------
    cap = d.step(
        "capacity_per_region_rps", "One region's capacity: replicas × each one's SLO throughput",
        p.replicas_per_region * p.replica_rps, "1/s", noun="requests",
        formula="{replicas_per_region} replicas × {replica_rps} req/s",
    )
    load = d.step(
        "load_per_region_rps", "One region's load today", u * cap, "1/s", noun="requests",
        formula="{utilization} × {capacity_per_region_rps} req/s",
    )
    total = d.step(
        "total_load_rps", "Load across all regions", n * load, "1/s", noun="requests",
        formula="{regions} × {load_per_region_rps} req/s",
    )
    d.step(
        "in_flight_per_region", "Requests in service in one region (Little's law: rate × time in service)",
        load * p.mean_request_s, "1", noun="requests",
        formula="{load_per_region_rps} req/s × {mean_request_s} s",
    )

    # --- N-1 arithmetic (the seed's assumption: all traffic may move) ---------------------
    d.step(
        "survivor_utilization_after_loss", "Each survivor's load after one region is lost, as a multiple of its capacity",
        n * u / (n - 1), "1", noun="× capacity",
        formula="{regions} × {utilization} / ({regions} − 1)",
    )
    surv_load = d.step(
        "survivor_load_rps", "Each survivor's load when all the lost region's traffic moves", total / (n - 1), "1/s",
        noun="requests", formula="{total_load_rps} req/s / ({regions} − 1)",
    )
    d.step(
        "n_minus_1_max_utilization", "Highest utilization today that survives losing one region",
        p.failover_ceiling * (n - 1) / n, "1", noun="× capacity",
        formula="{failover_ceiling} × ({regions} − 1) / {regions}",
    )
    required = d.step(
        "required_capacity_per_region", "Capacity each region needs for N-1, relative to today",
        n * u / ((n - 1) * p.failover_ceiling), "1", noun="× today",
        formula="{regions} × {utilization} / (({regions} − 1) × {failover_ceiling})",
    )
    extra = d.step(
        "n_minus_1_extra_replicas", "Replicas to add per region for N-1",
        max(0, math.ceil(p.replicas_per_region * required - 1e-9) - p.replicas_per_region), "1", noun="replicas",
        formula="max(0, ⌈{replicas_per_region} × {required_capacity_per_region}⌉ − {replicas_per_region})",
    )
    # The price of static stability: that headroom is held (reserved, paid for) every day, not bought
    # during the outage.
    d.step(
        "n_minus_1_extra_share", "N-1 headroom as a share of today's fleet (GPUs held every day)",
        extra / p.replicas_per_region, "1", percent=True,
        formula="{n_minus_1_extra_replicas} / {replicas_per_region}",
    )
    d.step(
        "n_minus_1_extra_fleet_replicas", "N-1 headroom across all regions",
        n * extra, "1", noun="replicas", formula="{regions} × {n_minus_1_extra_replicas}",
    )

    # --- what residency and a partial drop change ------------------------------------------
    keep = sim.keep_share(n, f, r)
    d.step(
        "keep_share", "Share of the hit region's portable traffic it keeps (equal utilization everywhere)",
        keep, "1", percent=True,
        formula="max(0, min(1, ({regions} × (1 − {drop_fraction}) / ({regions} − {drop_fraction}) − "
                "{residency_fraction}) / (1 − {residency_fraction})))",
    )
    affected_u, other_u = sim.steady_loads(n, u, f, r)
    d.step(
        "survivor_utilization_steady", "Each untouched region after the shift, residency included",
        other_u, "1", noun="× capacity",
        formula="{utilization} × (1 + (1 − {keep_share}) × (1 − {residency_fraction}) / ({regions} − 1))",
    )
    steady = d.step(
        "survivor_steady_load_rps", "Each untouched region's load after the shift", other_u * cap, "1/s",
        noun="requests", formula="{survivor_utilization_steady} × {capacity_per_region_rps} req/s",
    )
    affected = d.step(
        "affected_steady_load_rps", "Load the hit region keeps after the shift", affected_u * cap, "1/s",
        noun="requests",
        formula="0 req/s (the whole region is gone)" if f >= 1 else
        "{utilization} × ({residency_fraction} + {keep_share} × (1 − {residency_fraction})) × "
        "{capacity_per_region_rps}",
    )
    d.step(
        "stranded_resident_rps", "Resident requests with nowhere to go", max(0.0, r * load - (1 - f) * cap), "1/s",
        noun="requests",
        formula="max(0 req/s, {residency_fraction} × {load_per_region_rps} − (1 − {drop_fraction}) × "
                "{capacity_per_region_rps})",
    )
    excess = d.step(
        "excess_rps", "Load above capacity across the live regions",
        (n - 1) * max(0.0, steady - cap) + (max(0.0, affected - (1 - f) * cap) if f < 1 else 0.0), "1/s",
        noun="requests",
        formula="({regions} − 1) × max(0 req/s, {survivor_steady_load_rps} − {capacity_per_region_rps})" + (
            "" if f >= 1 else
            " + max(0 req/s, {affected_steady_load_rps} − (1 − {drop_fraction}) × {capacity_per_region_rps})"),
    )
    backlog = d.step(
        "backlog_after_window", "Requests queued over the window with no shedding", excess * p.window_s, "1",
        noun="requests", formula="{excess_rps} req/s × {window_s} s",
    )
    live_cap = d.step(
        "live_capacity_rps", "Capacity still alive after the drop", (n - f) * cap, "1/s", noun="requests",
        formula="({regions} − {drop_fraction}) × {capacity_per_region_rps} req/s",
    )
    fill = 0.0
    if steady > cap:
        fill = p.mean_request_s * math.log((steady - load) / (steady - cap))
    fill = d.step(
        "idle_fill_s", "Seconds the survivors' idle slots absorb before a queue forms",
        fill, "s",
        formula="{mean_request_s} s × ln(({survivor_steady_load_rps} − {load_per_region_rps}) / "
                "({survivor_steady_load_rps} − {capacity_per_region_rps}))" if steady > cap
        else "0 s (the survivors are not overloaded)",
    )
    d.step(
        "backlog_after_window_net", "Queued at the end of the window once the idle slots are counted",
        excess * max(0.0, p.window_s - fill), "1", noun="requests",
        formula="{excess_rps} req/s × max(0, {window_s} s − {idle_fill_s} s)",
    )
    # The wait behind the queue as it stands at the window's end (idle slots counted).
    d.step(
        "queue_wait_after_window_s", "Extra wait for a request arriving at the end of the window",
        excess * max(0.0, p.window_s - fill) / live_cap, "s",
        formula="{backlog_after_window_net} / {live_capacity_rps} req/s",
    )

    # --- in flight and retries -------------------------------------------------------------
    lost = d.step(
        "in_flight_lost", "Requests in flight on the lost capacity (Little's law)", load * f * p.mean_request_s, "1",
        noun="requests", formula="{load_per_region_rps} req/s × {drop_fraction} × {mean_request_s} s",
    )
    d.step(
        "failed_before_detection", "Requests the hit region cannot serve before the router notices",
        max(0.0, load - (1 - f) * cap) * p.detection_s, "1", noun="requests",
        formula="max(0 req/s, {load_per_region_rps} − (1 − {drop_fraction}) × {capacity_per_region_rps}) × "
                "{detection_s}",
    )
    d.step(
        "health_check_detection_s", "Time a checker needs to mark a dead region down (interval × failures)",
        p.health_check_interval_s * p.health_check_failures, "s",
        formula="{health_check_interval_s} s × {health_check_failures}",
    )
    d.step(
        "failed_during_dns_ttl", "Requests still sent to the dead region by resolvers holding the old answer",
        max(0.0, load - (1 - f) * cap) * p.dns_ttl_s, "1", noun="requests",
        formula="max(0 req/s, {load_per_region_rps} − (1 − {drop_fraction}) × {capacity_per_region_rps}) × "
                "{dns_ttl_s}",
    )
    d.step(
        "traffic_shift_complete_s", "From the drop until the last cached answer expires",
        p.detection_s + p.dns_ttl_s, "s", formula="{detection_s} s + {dns_ttl_s} s",
    )
    # DNS failover end to end: the checkers must see the failures, then every resolver's cached answer
    # must expire (a client that caches past the TTL adds more).
    dns_failover = d.step(
        "dns_failover_s", "DNS failover at these health-check settings: detection, then the TTL",
        p.health_check_interval_s * p.health_check_failures + p.dns_ttl_s, "s",
        formula="{health_check_interval_s} s × {health_check_failures} + {dns_ttl_s} s",
    )
    d.step(
        "failed_during_dns_failover", "Requests sent to the dead region over that whole DNS failover",
        max(0.0, load - (1 - f) * cap) * dns_failover, "1", noun="requests",
        formula="max(0 req/s, {load_per_region_rps} − (1 − {drop_fraction}) × {capacity_per_region_rps}) × "
                "{dns_failover_s}",
    )
    d.step(
        "dns_meets_detection_verdict", "Can DNS failover shift traffic within the assumed detection delay?",
        "no: only anycast or a proxying load balancer shifts that fast" if dns_failover > p.detection_s
        else "yes, with these checks and this TTL", "1",
        formula="{dns_failover_s} against {detection_s}", kind="verdict",
    )
    d.step(
        "gray_failed_per_min", "Requests failing each minute in a gray failure the health checks never flag",
        load * p.gray_error_fraction * 60, "1", noun="requests",
        formula="{load_per_region_rps} req/s × {gray_error_fraction} × 60 s",
    )
    # Envoy's consecutive-5xx outlier detection ejects a host after 5 failures in a row (its default).
    # With the gray errors spread evenly, each request fails independently with probability q: the
    # expected requests until k in a row is (1 - q^k) / ((1 - q) q^k).
    q = p.gray_error_fraction
    k = d.step("envoy_consecutive_5xx", "Envoy's consecutive-5xx ejection threshold (its default)",
               ENVOY_CONSECUTIVE_5XX, "1", formula="Envoy OutlierDetection.consecutive_5xx",
               kind="lookup")
    runs = d.step(
        "consecutive_5xx_expected_requests", f"Requests a replica serves, on average, before {k} failures in a row",
        (1 - q**k) / ((1 - q) * q**k), "1", noun="requests",
        formula="(1 − {gray_error_fraction}^{envoy_consecutive_5xx}) / ((1 − {gray_error_fraction}) × "
                "{gray_error_fraction}^{envoy_consecutive_5xx})",
    )
    per_replica = d.step(
        "replica_load_rps", "One replica's load today", u * p.replica_rps, "1/s", noun="requests",
        formula="{utilization} × {replica_rps} req/s",
    )
    eject = d.step(
        "consecutive_5xx_eject_s", "Time until that run, at one replica's load",
        runs / per_replica, "s", formula="{consecutive_5xx_expected_requests} / {replica_load_rps} req/s",
    )
    d.step(
        "consecutive_5xx_verdict", "Does consecutive-5xx ejection catch the gray failure within the window?",
        "no: it waits longer than the window, so detection has to come from the error rate" if eject > p.window_s
        else "yes, within the window, for replicas that fail this often", "1",
        formula="{consecutive_5xx_eject_s} against {window_s}", kind="verdict",
    )
    sync_rate = d.step(
        "retry_rate_synchronized_per_s", "Retry rate if every client retries on the same 100 ms tick",
        lost / sim.STEP_S, "1/s", noun="requests", formula="{in_flight_lost} / 0.1 s",
    )
    jitter_rate = d.step(
        "retry_rate_jittered_per_s", "Retry rate with full jitter over the first back-off",
        lost / p.retry_base_s, "1/s", noun="requests", formula="{in_flight_lost} / {retry_base_s} s",
    )
    if p.retry_policy == "backoff_jitter":
        rate, formula = jitter_rate, "{retry_rate_jittered_per_s} req/s (full jitter)"
    else:
        rate, formula = sync_rate, "{retry_rate_synchronized_per_s} req/s (no jitter, one tick)"
    rate = d.step(
        "retry_rate_per_s", "Rate the lost in-flight requests come back at, with this retry policy", rate, "1/s",
        noun="requests", formula=formula,
    )
    d.step(
        "retry_wave_vs_live_capacity", "That retry wave against the capacity still alive", rate / live_cap, "1",
        noun="× capacity",
        formula="{retry_rate_per_s} / {live_capacity_rps}",
    )
    # The simulation's clock ticks every 100 ms, so an "immediate" retry comes one tick later.
    horizon = sum(max(sim.STEP_S, sim.backoff_s(p.retry_policy, p.retry_base_s, a)) for a in range(1, p.max_retries + 1))
    horizon = d.step(
        "retry_horizon_s", "Longest a client keeps retrying (sum of its back-off windows, each capped at 60 s)",
        horizon, "s",
        formula=_horizon_formula(p),
    )
    d.step(
        "retries_outlast_detection", "Do a client's retries last past detection?", _yes(horizon > p.detection_s), "1",
        formula="{retry_horizon_s} s > {detection_s} s", kind="verdict",
    )

    # --- warm pool, autoscaler, weights ----------------------------------------------------
    short = d.step(
        "replicas_short_per_survivor", "Replicas each survivor lacks to stay under the ceiling",
        math.ceil(max(0.0, steady - cap * p.failover_ceiling) / p.replica_rps - 1e-9), "1", noun="replicas",
        formula="⌈max(0 req/s, {survivor_steady_load_rps} − {capacity_per_region_rps} × {failover_ceiling}) / "
                "{replica_rps}⌉",
    )
    # A target above the admission ceiling would never buy what admission control needs.
    target = min(p.autoscale_target, p.failover_ceiling)
    d.step(
        "autoscale_target_used", "Utilization the autoscaler sizes the survivor for", target, "1", percent=True,
        formula="min({autoscale_target}, {failover_ceiling})",
    )
    scale = d.step(
        "autoscale_replicas_per_survivor", "Replicas the autoscaler adds per survivor",
        max(0, math.ceil(steady / (p.replica_rps * target) - 1e-9) - p.replicas_per_region), "1",
        noun="replicas",
        formula="max(0, ⌈{survivor_steady_load_rps} / ({replica_rps} × min({autoscale_target}, {failover_ceiling}))⌉ − "
                "{replicas_per_region})",
    )
    warm_used = min(scale, p.warm_pool_replicas)
    covers = warm_used >= short
    d.step(
        "warm_pool_covers", "Does the warm pool cover the shortfall?", _yes(covers), "1",
        formula="min({autoscale_replicas_per_survivor}, {warm_pool_replicas}) ≥ {replicas_short_per_survivor}",
        kind="verdict",
    )
    cold = d.step(
        "cold_replicas_per_survivor", "Of those, replicas that must cold-start", scale - warm_used, "1",
        noun="replicas",
        formula="{autoscale_replicas_per_survivor} − min({autoscale_replicas_per_survivor}, {warm_pool_replicas})",
    )
    obtained = d.step(
        "cold_replicas_obtained", "Cold replicas the survivor actually gets",
        math.floor(cold * p.obtainable_gpu_fraction + 1e-9), "1", noun="replicas",
        formula="⌊{cold_replicas_per_survivor} × {obtainable_gpu_fraction}⌋",
    )
    short_gpus = d.step(
        "uncovered_without_gpus_rps", "Load each survivor still cannot admit once those replicas land",
        max(0.0, steady - (p.replicas_per_region + warm_used + obtained) * p.replica_rps * p.failover_ceiling),
        "1/s", noun="requests",
        formula="max(0 req/s, {survivor_steady_load_rps} − ({replicas_per_region} + min({autoscale_replicas_per_survivor}, "
                "{warm_pool_replicas}) + {cold_replicas_obtained}) × {replica_rps} × {failover_ceiling})",
    )
    d.step(
        "autoscaler_closes_gap", "Does the capacity the survivor can get close the gap?", _yes(short_gpus <= 1e-9), "1",
        formula="{uncovered_without_gpus_rps} = 0 req/s", kind="verdict",
    )
    d.step(
        "model_params", f"Parameters of {llm(p).name} (counted from its shape)", llm(p).total_params, "1",
        noun="parameters", formula="{model}, models/catalog.py", kind="lookup",
    )
    weights = d.step(
        "weights_bytes", "Weights one replica loads (bf16)", llm(p).total_params * 2, "B",
        formula="2 B × {model_params}",
    )
    pull = d.step(
        "weights_pull_s", "Pulling those weights across regions for every cold replica",
        (n - 1) * cold * weights / (p.interregion_gbps * 1e9 / 8), "s",
        formula="({regions} − 1) × {cold_replicas_per_survivor} × {weights_bytes} / {interregion_gbps}",
    )
    cold_eff = d.step(
        "cold_start_effective_s", "Cold start as it happens here", p.cold_start_s + (0.0 if p.weights_prestaged else pull),
        "s",
        formula="{cold_start_s} s" + (" (weights already staged)" if p.weights_prestaged else " + {weights_pull_s} s"),
    )
    to_cap = d.step(
        "time_to_capacity_s", "From the drop until the survivors have the capacity they need",
        p.detection_s + (0.0 if covers else cold_eff), "s",
        formula="{detection_s} s" + (" (the warm pool covers it)" if covers else " + {cold_start_effective_s} s"),
    )
    uncovered = d.step(
        "uncovered_rps_per_survivor", "Load each survivor cannot admit until the cold replicas land",
        max(0.0, steady - (p.replicas_per_region + warm_used) * p.replica_rps * p.failover_ceiling), "1/s",
        noun="requests",
        formula="max(0 req/s, {survivor_steady_load_rps} − ({replicas_per_region} + min({autoscale_replicas_per_survivor}, "
                "{warm_pool_replicas})) × {replica_rps} × {failover_ceiling})",
    )
    d.step(
        "seconds_short_s", "How long the survivors run short of capacity", to_cap - p.detection_s, "s",
        formula="{time_to_capacity_s} s − {detection_s} s",
    )
    d.step(
        "overflow_until_capacity", "Requests shed or queued before the autoscaler lands",
        (n - 1) * uncovered * (to_cap - p.detection_s), "1", noun="requests",
        formula="({regions} − 1) × {uncovered_rps_per_survivor} req/s × {seconds_short_s} s",
    )
    short_cap = d.step(
        "capacity_while_short_rps", "What each survivor admits until then",
        (p.replicas_per_region + warm_used) * p.replica_rps * p.failover_ceiling, "1/s", noun="requests",
        formula="({replicas_per_region} + min({autoscale_replicas_per_survivor}, {warm_pool_replicas})) × "
                "{replica_rps} req/s × {failover_ceiling}",
    )
    paid = p.paid_fraction * steady
    offered_short = d.step(
        "offered_while_short_rps", "Offered to each survivor meanwhile, refused requests retrying (steady state)",
        attempts_rps(paid, short_cap, p.max_retries)
        + attempts_rps(steady - paid, max(0.0, short_cap - paid), p.max_retries), "1/s", noun="requests",
        formula="per tier, the A with A = unique × (1 + q + … + q^{max_retries}), q = 1 − admitted / A; "
                "paid first: {paid_fraction} × {survivor_steady_load_rps} req/s on {capacity_while_short_rps} req/s",
        kind="search",
    )
    d.step(
        "retry_amplification", "Offered load over unique demand while short", offered_short / steady, "1",
        noun="× unique demand", formula="{offered_while_short_rps} / {survivor_steady_load_rps}",
    )
    free_load = (1 - p.paid_fraction) * steady
    d.step(
        "free_tier_shed_share", "Share of the survivors' free tier shed meanwhile",
        min(1.0, uncovered / free_load) if free_load > 0 else (1.0 if uncovered > 0 else 0.0), "1", percent=True,
        formula="min(100%, {uncovered_rps_per_survivor} / ((1 − {paid_fraction}) × {survivor_steady_load_rps}))",
    )
    free_rps = d.step(
        "free_tier_rps_per_survivor", "Free-tier load on each survivor", free_load, "1/s", noun="requests",
        formula="(1 − {paid_fraction}) × {survivor_steady_load_rps}",
    )
    paid_shed = d.step(
        "paid_shed_rps_per_survivor", "Paid load each survivor sheds once the free tier is gone",
        max(0.0, uncovered - free_rps), "1/s", noun="requests",
        formula="max(0 req/s, {uncovered_rps_per_survivor} − {free_tier_rps_per_survivor})",
    )
    d.step(
        "shed_source_verdict", "Does the free tier absorb the shortfall?",
        "more than the whole free tier, so paid traffic is shed too" if paid_shed > 1e-9
        else "the free tier absorbs it, and no paid request is shed", "1",
        formula="{uncovered_rps_per_survivor} against {free_tier_rps_per_survivor}", kind="verdict",
    )
    return d


def sim_config(p: Params) -> sim.FailoverConfig:
    """The simulation's configuration for this scenario (cold start as `solve` derives it)."""
    return sim.FailoverConfig(
        regions=p.regions,
        replicas_per_region=p.replicas_per_region,
        replica_rps=p.replica_rps,
        utilization=p.utilization,
        request_s=p.mean_request_s,
        paid_fraction=p.paid_fraction,
        residency_fraction=p.residency_fraction,
        drop_fraction=p.drop_fraction,
        detection_s=p.detection_s,
        shift=p.shift,
        ramp_s=p.ramp_s,
        retry_policy=p.retry_policy,
        retry_base_s=p.retry_base_s,
        max_retries=p.max_retries,
        admission_control=p.admission_control,
        ceiling=p.failover_ceiling,
        queue_limit_s=p.queue_limit_s,
        warm_pool_replicas=p.warm_pool_replicas,
        cold_start_s=solve(p).value("cold_start_effective_s"),
        autoscale_target=p.autoscale_target,
    )


def simulate(p: Params, seed: int = 0) -> sim.FailoverResult:
    return sim.run(sim_config(p), seed=seed)
