"""Autoscaling when the cold start outlasts the burst: the warm pool wins the first minute.

The seeds give the scenario: a replica is useful 70 s after it is ordered, the burst arrives in
60 s, so no autoscaler, however well tuned, adds capacity before the burst has fully landed;
a warm pool sized from Little's law and the burst profile has to carry it. The chain:

    in flight        = arrival rate x request duration                      (Little's law)
    replica holds    = slots x target utilization requests in flight
    first cold help  = signal delay + cold start after the burst begins
    warm pool        = replicas for the in-flight requests at that moment (the burst profile),
                       minus the base fleet
    backlog, no pool = the integral of (arrivals - base fleet throughput) until first cold help
    scale-up cooldown = cold start + signal delay (a controller that sees only ready replicas)
    scale-down hold  = ski-rental break-even: idle time that costs as much as one cold start

Modelling choices (the page states them): the burst is a linear ramp from base to peak; Little's
law is applied quasi-statically (in flight = rate(t) x duration), which overstates the in-flight
count during a ramp by about slope x duration^2 / 2 requests (the simulation shows the lag);
the base fleet serves at every slot full when it is overrun; TTFT and queueing are small beside
the decode time, so the request duration is output tokens x TPOT.

A replica is sized elsewhere (the serving pages): here it is its slots, the TPOT target it decodes
them at and the accelerators it pays for. Those knobs are the engine's own (`tp_degree`,
`output_tokens`, `tpot_target_ms`, `target_utilization`), so a scenario carried over from a serving
page means the same numbers here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated

from models.core import Derivation, Knob, StrictModel
from models.engine.knobs import with_defaults
from models.engine.record import record_served
from models.engine.serving_knobs import ServingKnobs
from models.sim import burst
from models.units import format_quantity


class _WarmPoolKnobs(StrictModel):
    base_rps: Annotated[
        float,
        Knob("Base traffic", "req/s", 1, 5000, 1, log=True,
             help="Arrival rate before the burst; the fleet is sized for it.", draw=(10, 500)),
    ] = 40
    burst_multiplier: Annotated[
        float,
        Knob("Burst peak over base", "×", 1.1, 20, 0.1,
             help="Peak arrival rate as a multiple of the base (a launch, a viral post, a batch client).",
             draw=(1.5, 6)),
    ] = 3
    burst_ramp_s: Annotated[
        float,
        Knob("Burst arrives in", "s", 5, 1800, 1, log=True,
             help="Time from base to peak; the ramp is linear.", draw=(30, 300)),
    ] = 60
    burst_hold_s: Annotated[
        float,
        Knob("Burst lasts at peak", "s", 0, 3600, 10,
             help="How long the peak holds before traffic ramps back down (used by the live simulation).",
             draw=(60, 600), simulation=True),
    ] = 240
    cold_start_s: Annotated[
        float,
        Knob("Cold start", "s", 5, 1800, 1, log=True,
             help="Order to useful: node, image, weights into GPU memory, warm-up.", draw=(30, 600)),
    ] = 70
    signal_delay_s: Annotated[
        float,
        Knob("Leading-signal delay", "s", 0, 300, 1,
             help="Arrival rate or queue depth: scrape interval plus the window the autoscaler reads.",
             draw=(5, 30)),
    ] = 15
    lagging_signal_delay_s: Annotated[
        float,
        Knob("Lagging-signal delay", "s", 0, 600, 5,
             help="GPU utilization averaged over a window: it moves only once replicas are already full.",
             draw=(30, 180)),
    ] = 60
    image_pull_s: Annotated[
        float,
        Knob("Image pull and container start", "s", 1, 600, 1, log=True,
             help="Pulling the serving image (many GB with CUDA and the engine) and starting the container.",
             draw=(5, 30)),
    ] = 15
    weight_load_GBps: Annotated[
        float,
        Knob("Weight load bandwidth", "GB/s", 0.5, 100, 0.5, log=True,
             help="Achieved read rate from the weight store into HBM (object storage, a shared file system, local NVMe).",
             draw=(2, 20)),
    ] = 5
    engine_warmup_s: Annotated[
        float,
        Knob("Engine warm-up", "s", 0, 600, 1,
             help="torch.compile (or its cache), CUDA graph capture, KV cache allocation and a dummy forward pass.",
             draw=(10, 60)),
    ] = 20
    snapshot_cold_start_s: Annotated[
        float,
        Knob("Cold start with a snapshot", "s", 1, 600, 1, log=True,
             help="Weights pre-staged on local NVMe or a memory snapshot restored instead of a fresh load.",
             draw=(5, 40)),
    ] = 20
    gpu_hour_usd: Annotated[
        float,
        Knob("GPU-hour price", "USD", 0.5, 20, 0.1, log=True, help="What one GPU costs per hour, idle or not.",
             draw=(1.5, 5)),
    ] = 2.5
    cold_start_cost_factor: Annotated[
        float,
        Knob("Cold-start cost factor", "×", 1, 10, 0.1,
             help="Cost of one cold start in replica-time per second of boot: 1 counts only the GPU time it "
                  "burns; above 1 also prices the pull traffic and the SLO damage of a late replica.",
             draw=(1, 3)),
    ] = 1.0


# The replica is the serving engine's (a 70B model on a node of eight by default): its slots are the
# batch the engine decodes within the TPOT target (25 ms: 40 tokens/s a user) and its KV room, and
# the autoscaler aims to fill 80% of them. A given batch (the engine's knob) overrides the slots.
class Params(with_defaults(ServingKnobs, tp_degree=8, tpot_target_ms=25, target_utilization=0.8), _WarmPoolKnobs):
    pass


def excess_arrivals(base: float, peak: float, ramp_s: float, capacity: float, until_s: float) -> float:
    """Integral over [0, until_s] of max(0, rate(t) - capacity), rate a linear ramp from base to
    peak over ramp_s then flat: the requests that queue behind a fleet of fixed throughput."""
    if capacity >= peak or until_s <= 0:
        return 0.0
    slope = (peak - base) / ramp_s
    start = max(0.0, (capacity - base) / slope)  # when arrivals first exceed the capacity
    if until_s <= start:
        return 0.0
    total = 0.0
    on_ramp_end = min(until_s, ramp_s)
    if on_ramp_end > start:
        total += (base - capacity) * (on_ramp_end - start) + slope * (on_ramp_end ** 2 - start ** 2) / 2
    if until_s > ramp_s:
        total += (peak - capacity) * (until_s - max(ramp_s, start))
    return total


def _warm_pool(in_flight_base: float, growth_per_s: float, burst_in_flight: float, reaction_s: float,
               per_replica: float, base_replicas: int) -> int:
    """Warm replicas to carry what arrives before the first cold replica is useful."""
    uncovered = min(burst_in_flight, growth_per_s * reaction_s)
    return max(0, math.ceil((in_flight_base + uncovered) / per_replica - 1e-9) - base_replicas)


def solve(p: Params) -> Derivation:
    d = Derivation(p)
    e = record_served(d, p)

    # --- the replica: its slots are the engine's batch ---
    slots = d.step("slots_per_replica", "Slots one replica decodes at once (the engine's batch: TPOT and KV caps, "
                   "or the batch given)", e.batch, "1", noun="slots", formula="{decode_batch}")

    # --- Little's law ---
    dur = d.step("request_duration_s", "Time one request is in flight", p.output_tokens * p.tpot_target_ms / 1000,
                 "s", formula="{output_tokens} × {tpot_target_ms} ms")
    peak = d.step("peak_rps", "Peak arrival rate", p.base_rps * p.burst_multiplier, "1/s", noun="requests",
                  formula="{base_rps} req/s × {burst_multiplier}")
    base_if = d.step("in_flight_base", "Requests in flight before the burst (Little's law)", p.base_rps * dur, "1",
                     noun="requests", formula="{base_rps} req/s × {request_duration_s} s")
    peak_if = d.step("in_flight_peak", "Requests in flight at the peak (Little's law)", peak * dur, "1",
                     noun="requests", formula="{peak_rps} req/s × {request_duration_s} s")
    per_rep = d.step("in_flight_per_replica", "In-flight requests one replica carries at the target",
                     slots * p.target_utilization, "1", noun="requests",
                     formula="{slots_per_replica} × {target_utilization}")
    d.step("replica_rps", "Requests per second one replica serves at the target", per_rep / dur, "1/s",
           noun="requests", formula="{in_flight_per_replica} / {request_duration_s} s")
    base_reps = d.step("base_replicas", "Replicas for the base traffic",
                       max(1, math.ceil(base_if / per_rep - 1e-9)), "1", noun="replicas",
                       formula="ceil({in_flight_base} / {in_flight_per_replica})")
    peak_reps = d.step("peak_replicas", "Replicas for the peak", max(1, math.ceil(peak_if / per_rep - 1e-9)), "1",
                       noun="replicas", formula="ceil({in_flight_peak} / {in_flight_per_replica})")

    d.step("burst_replicas", "Replicas the whole burst needs beyond the base fleet", peak_reps - base_reps, "1",
           noun="replicas", formula="{peak_replicas} − {base_replicas}")

    # --- the cold start, part by part (the stated total is the knob; the parts say where it goes) ---
    pull = d.step("cold_start_image_s", "Cold start: image pull and container start", p.image_pull_s, "s",
                  formula="{image_pull_s}")
    load = d.step("cold_start_weights_s", "Cold start: weights into GPU memory",
                  d.value("weight_bytes") / (p.weight_load_GBps * 1e9), "s",
                  formula="{weight_bytes} / {weight_load_GBps} GB/s")
    warmup = d.step("cold_start_warmup_s", "Cold start: engine warm-up (compile, CUDA graphs, KV allocation)",
                    p.engine_warmup_s, "s", formula="{engine_warmup_s}")
    parts = d.step("cold_start_parts_s", "Those three parts together", pull + load + warmup, "s",
                   formula="{cold_start_image_s} + {cold_start_weights_s} + {cold_start_warmup_s}")
    rest = p.cold_start_s - parts
    d.step("cold_start_other_s", "The rest of the stated cold start: node scheduling, health checks, routing",
           max(0.0, rest), "s", formula="max(0, {cold_start_s} − {cold_start_parts_s})")
    # A remainder over half the stated cold start is more than scheduling and health checks take:
    # the page says so rather than booking it to them.
    d.step("cold_start_parts_verdict", "Do the parts fit the stated cold start?",
           "the parts alone exceed it, so the stated cold start assumes a faster path than these parts" if rest < 0
           else f"the remaining {format_quantity(rest, 's')} goes to scheduling the pod, health checks and joining the router"
           if rest <= p.cold_start_s / 2
           else f"the remaining {format_quantity(rest, 's')} is more than half of it, longer than scheduling the pod, "
                "health checks and joining the router should take: ask what else the stated cold start includes "
                "(a node to provision, a slower store)",
           "1", formula="{cold_start_parts_s} against {cold_start_s}", kind="verdict")
    d.step("cold_start_weights_share", "Weight loading's share of the stated cold start",
           min(1.0, load / p.cold_start_s), "1", percent=True,
           formula="min(1, {cold_start_weights_s} / {cold_start_s})")

    # --- the race: the burst against the cold start ---
    burst_if = d.step("burst_in_flight", "Extra requests in flight the burst brings", peak_if - base_if, "1",
                      noun="requests", formula="{in_flight_peak} − {in_flight_base}")
    growth = d.step("in_flight_growth_per_s", "In-flight requests added per second of the ramp",
                    burst_if / p.burst_ramp_s, "1/s", noun="requests",
                    formula="{burst_in_flight} / {burst_ramp_s} s")
    reaction = d.step("first_cold_replica_s", "First cold replica useful, after the burst begins",
                      p.signal_delay_s + p.cold_start_s, "s", formula="{signal_delay_s} s + {cold_start_s} s")
    d.step("cold_start_outlasts_burst", "Does the burst land before any cold replica?",
           "yes" if reaction >= p.burst_ramp_s else "no", formula="{first_cold_replica_s} s ≥ {burst_ramp_s} s")
    uncovered = d.step("uncovered_in_flight", "Extra in-flight requests before the first cold replica",
                       min(burst_if, growth * reaction), "1", noun="requests",
                       formula="min({burst_in_flight}, {in_flight_growth_per_s} × {first_cold_replica_s})")
    d.step("uncovered_share_of_burst", "Share of the burst the warm pool carries alone",
           uncovered / burst_if if burst_if > 0 else 0.0, "1", percent=True,
           formula="{uncovered_in_flight} / {burst_in_flight}")
    warm = d.step("warm_pool_replicas", "Warm pool: replicas for base plus uncovered, minus the base fleet",
                  _warm_pool(base_if, growth, burst_if, reaction, per_rep, base_reps), "1", noun="replicas",
                  formula="max(0, ceil(({in_flight_base} + {uncovered_in_flight}) / {in_flight_per_replica}) − {base_replicas})")
    both = d.step("base_plus_pool_replicas", "Base fleet plus warm pool", base_reps + warm, "1", noun="replicas",
                  formula="{base_replicas} + {warm_pool_replicas}")
    d.step("pool_vs_static_verdict", "Is base plus pool the same as provisioning for the peak?",
           "the same as provisioning for the peak all day, so the pool saves money only through the batch work "
           "its idle replicas run" if both >= peak_reps else "fewer than provisioning for the peak all day",
           "1", formula="{base_plus_pool_replicas} against {peak_replicas}", kind="verdict")
    d.step("warm_pool_over_base", "Warm pool over the base fleet", warm / base_reps, "1", noun="×",
           formula="{warm_pool_replicas} / {base_replicas}")
    d.step("warm_replicas_per_second_of_cold_start",
           "Warm replicas each second of cold start costs while the cold start is inside the ramp",
           growth / per_rep, "1/s", noun="replicas",
           formula="{in_flight_growth_per_s} / {in_flight_per_replica}")
    d.step("warm_pool_shrinks_below_s", "Cold start below which the warm pool starts to shrink",
           max(0.0, p.burst_ramp_s - p.signal_delay_s), "s", formula="max(0, {burst_ramp_s} s − {signal_delay_s} s)")
    inside = reaction < p.burst_ramp_s
    d.step("marginal_warm_replicas_per_s", "Warm replicas one more second of cold start costs, at this cold start",
           growth / per_rep if inside else 0.0, "1/s", noun="replicas",
           formula="{warm_replicas_per_second_of_cold_start}" if inside
           else "{first_cold_replica_s} s ≥ {burst_ramp_s} s: the pool already carries the whole burst",
           kind="" if inside else "verdict")

    # --- what the pool becomes with a faster start, and with a lagging signal ---
    fast = d.step("snapshot_reaction_s", "First cold replica with the snapshot", p.signal_delay_s + p.snapshot_cold_start_s,
                  "s", formula="{signal_delay_s} s + {snapshot_cold_start_s} s")
    snap_pool = d.step("warm_pool_with_snapshot", "Warm pool with the snapshot cold start",
           _warm_pool(base_if, growth, burst_if, fast, per_rep, base_reps), "1", noun="replicas",
           formula="max(0, ceil(({in_flight_base} + min({burst_in_flight}, {in_flight_growth_per_s} × "
                   "{snapshot_reaction_s})) / {in_flight_per_replica}) − {base_replicas})")
    d.step("snapshot_pool_verdict", "Does the snapshot shrink the warm pool?",
           "falls to" if snap_pool < warm else "stays at", "1",
           formula="{warm_pool_with_snapshot} against {warm_pool_replicas}", kind="verdict")
    lag = d.step("lagging_snapshot_reaction_s", "First cold replica with the snapshot but a lagging signal",
                 p.lagging_signal_delay_s + p.snapshot_cold_start_s, "s",
                 formula="{lagging_signal_delay_s} s + {snapshot_cold_start_s} s")
    d.step("warm_pool_with_snapshot_lagging_signal", "Warm pool with the snapshot, scaled on GPU utilization",
           _warm_pool(base_if, growth, burst_if, lag, per_rep, base_reps), "1", noun="replicas",
           formula="max(0, ceil(({in_flight_base} + min({burst_in_flight}, {in_flight_growth_per_s} × "
                   "{lagging_snapshot_reaction_s})) / {in_flight_per_replica}) − {base_replicas})")

    # --- money ---
    rep_h = d.step("replica_usd_per_hour", "One replica per hour", p.tp_degree * p.gpu_hour_usd, "USD",
                   formula="{tp_degree} GPUs × {gpu_hour_usd} USD")
    d.step("warm_pool_usd_per_day", "Warm pool held all day", warm * rep_h * 24, "USD",
           formula="{warm_pool_replicas} × {replica_usd_per_hour} × 24 (hours a day)")
    d.step("cold_start_second_usd_per_day", "Each second of cold start inside the ramp, per day of warm pool",
           growth / per_rep * rep_h * 24, "USD",
           formula="{warm_replicas_per_second_of_cold_start} × 1 s × {replica_usd_per_hour} × 24 (hours a day)")

    # --- no pool: the backlog ---
    cap = d.step("base_capacity_rps", "Base fleet throughput with every slot full",
                 base_reps * slots / dur, "1/s", noun="requests",
                 formula="{base_replicas} × {slots_per_replica} / {request_duration_s} s")
    overrun = cap < peak  # otherwise arrivals never pass the base fleet and nothing queues
    never = "{base_capacity_rps} ≥ {peak_rps}: arrivals never pass the base fleet"
    start = d.step("overrun_at_s", "Arrivals pass the base fleet's throughput at",
                   max(0.0, (cap - p.base_rps) / (peak - p.base_rps) * p.burst_ramp_s) if overrun else math.inf, "s",
                   formula="max(0, ({base_capacity_rps} − {base_rps}) / ({peak_rps} − {base_rps}) × {burst_ramp_s})"
                   if overrun else never, kind="" if overrun else "verdict")
    # The prose's sentence about the overrun, chosen here: at an unbounded overrun_at_s there is no
    # moment to name ("pass that at unbounded into the ramp"), and nothing piles up.
    d.step("overrun_clause", "When arrivals pass the base fleet's throughput",
           f"arrivals pass it {format_quantity(start, 's')} into the ramp, and from then on the excess piles up"
           if overrun else f"even the peak, {format_quantity(peak, '1/s', noun='requests')}, stays under it, "
                           "so nothing piles up",
           formula="{base_capacity_rps} against {peak_rps}", kind="verdict")
    # The queue grows at rate(t) − capacity: a triangle on the ramp from the overrun to the ramp's end
    # (or the first cold replica, if sooner), then a rectangle at the peak.
    backlog_formula = ("({key_end} − {{overrun_at_s}})² × ({{peak_rps}} − {{base_rps}}) / {{burst_ramp_s}} / 2 + "
                       "({{peak_rps}} − {{base_capacity_rps}}) × max(0, {key_until} − {{burst_ramp_s}})")
    d.step("overrun_ramp_end_s", "Overrun on the ramp ends at (ramp's end, or the first cold replica if sooner)",
           max(start, min(reaction, p.burst_ramp_s)), "s",
           formula="max({overrun_at_s}, min({first_cold_replica_s}, {burst_ramp_s}))")
    backlog = d.step("backlog_without_pool", "Requests queued when the first cold replica arrives, no warm pool",
                     excess_arrivals(p.base_rps, peak, p.burst_ramp_s, cap, reaction), "1", noun="requests",
                     formula=backlog_formula.format(key_end="{overrun_ramp_end_s}", key_until="{first_cold_replica_s}")
                     if overrun else never, kind="" if overrun else "verdict",
                     note="The integral of max(0, rate(t) − base capacity) up to the first cold replica.")
    # The base fleet never clears the queue while arrivals exceed its throughput (the peak holds): the
    # queue drains at the peak fleet's spare throughput, what it serves beyond the peak's arrivals.
    d.step("backlog_drain_verdict", "Can the base fleet alone clear that queue?",
           "the base fleet alone never clears it, because arrivals stay above its throughput while the peak holds"
           if backlog > 0 else "there is nothing to clear", "1",
           formula="{backlog_without_pool} against 0, {base_capacity_rps} against {peak_rps}", kind="verdict")
    peak_cap = d.step("peak_capacity_rps", "Peak fleet throughput with every slot full",
                      peak_reps * slots / dur, "1/s", noun="requests",
                      formula="{peak_replicas} × {slots_per_replica} / {request_duration_s} s")
    spare = d.step("drain_spare_rps", "Peak fleet throughput beyond the peak's arrivals", max(0.0, peak_cap - peak),
                   "1/s", noun="requests", formula="max(0, {peak_capacity_rps} − {peak_rps})")
    d.step("backlog_drain_s", "Time the peak fleet's spare throughput takes to clear that backlog",
           backlog / spare if spare > 0 else (0.0 if backlog <= 0 else math.inf), "s",
           formula="{backlog_without_pool} / {drain_spare_rps}")
    lagging = d.step("lagging_first_cold_replica_s", "First cold replica useful with a lagging signal",
                     p.lagging_signal_delay_s + p.cold_start_s, "s", formula="{lagging_signal_delay_s} + {cold_start_s}")
    d.step("overrun_ramp_end_lagging_s", "Overrun on the ramp ends at, with a lagging signal",
           max(start, min(lagging, p.burst_ramp_s)), "s",
           formula="max({overrun_at_s}, min({lagging_first_cold_replica_s}, {burst_ramp_s}))")
    d.step("backlog_lagging_signal", "The same backlog if the autoscaler reads GPU utilization",
           excess_arrivals(p.base_rps, peak, p.burst_ramp_s, cap, p.lagging_signal_delay_s + p.cold_start_s), "1",
           noun="requests",
           formula=backlog_formula.format(key_end="{overrun_ramp_end_lagging_s}",
                                          key_until="{lagging_first_cold_replica_s}") if overrun else never,
           kind="" if overrun else "verdict")
    d.step("littles_law_lag_requests", "How much the quasi-static Little's law overstates the backlog",
           growth * dur / 2 if overrun else 0.0, "1", noun="requests",
           formula="{in_flight_growth_per_s} × {request_duration_s} / 2" if overrun else never,
           kind="" if overrun else "verdict")

    # --- cooldowns from the cold start ---
    d.step("scale_up_cooldown_s", "Scale-up cooldown when only ready replicas count",
           p.cold_start_s + p.signal_delay_s, "s", formula="{cold_start_s} s + {signal_delay_s} s")
    d.step("scale_up_cooldown_counting_booting_s", "Scale-up cooldown when booting replicas count as supply",
           p.signal_delay_s, "s", formula="{signal_delay_s} s")
    evals = d.step("evaluations_before_ready", "Evaluations that see the same deficit before the first order is ready",
                   math.floor(p.cold_start_s / max(p.signal_delay_s, 1)), "1", noun="evaluations",
                   formula="floor({cold_start_s} / max({signal_delay_s}, 1 s))")
    d.step("overorders_without_cooldown", "Up to this many replicas ordered again for the same deficit with no cooldown",
           max(0, peak_reps - base_reps) * evals, "1",
           noun="replicas", formula="{burst_replicas} × {evaluations_before_ready}")
    hold = d.step("scale_down_hold_s", "Scale-down hold: idle time that costs one cold start (ski rental)",
                  p.cold_start_s * p.cold_start_cost_factor, "s",
                  formula="{cold_start_s} s × {cold_start_cost_factor}")
    d.step("hold_cost_usd", "Most an idle replica costs before release (= one cold start)",
           hold / 3600 * rep_h, "USD", formula="{scale_down_hold_s} / 3,600 s × {replica_usd_per_hour}")
    return d


# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WarmPoolSim:
    with_pool: burst.BurstResult
    without_pool: burst.BurstResult
    burst_start_s: float
    first_cold_replica_at_s: float  # absolute time in the run


def burst_config(p: Params, warm_pool: int, poisson: bool = True) -> burst.BurstConfig:
    d = solve(p)
    return burst.BurstConfig(
        base_rps=p.base_rps, peak_rps=d.value("peak_rps"), ramp_s=p.burst_ramp_s, hold_s=p.burst_hold_s,
        request_s=d.value("request_duration_s"), slots_per_replica=d.value("slots_per_replica"),
        target_utilization=p.target_utilization, initial_replicas=d.value("base_replicas"), warm_pool=warm_pool,
        cold_start_s=p.cold_start_s, signal_delay_s=p.signal_delay_s, scale_down_hold_s=d.value("scale_down_hold_s"),
        poisson=poisson,
    )


def simulate(p: Params, seed: int = 0, poisson: bool = True) -> WarmPoolSim:
    """The same burst twice (same arrivals): with the warm pool, and with none."""
    d = solve(p)
    with_cfg = burst_config(p, d.value("warm_pool_replicas"), poisson)
    without_cfg = burst_config(p, 0, poisson)
    return WarmPoolSim(
        with_pool=burst.run(with_cfg, seed),
        without_pool=burst.run(without_cfg, seed),
        burst_start_s=with_cfg.start_s,
        first_cold_replica_at_s=with_cfg.start_s + d.value("first_cold_replica_s"),
    )


def simulation_steps(p: Params, r: WarmPoolSim) -> Derivation:
    """The run's figures as steps: the backlog with no pool when the first cold replica arrives
    (beside the closed form), each fleet's longest wait and paid replica time, and the books that
    show every request is finished, in service or queued."""
    d = Derivation(p)
    w, n = r.with_pool, r.without_pool
    d.step("simulated_steps", "Steps in the run", len(w.t), "1", noun="steps", kind="given")
    d.step("simulated_step_s", "One step of the run", w.step_s, "s", kind="given")
    d.step("simulated_backlog_without_pool", "Backlog, no pool", n.queue_at(r.first_cold_replica_at_s - 1e-6), "1",
           noun="requests", kind="simulated", note="Requests queued when the first cold replica becomes useful.")
    d.step("simulated_max_wait_without_pool_s", "Longest wait, no pool", n.max_wait_s, "s", kind="simulated")
    d.step("simulated_max_wait_with_pool_s", "Longest wait, warm pool", w.max_wait_s, "s", kind="simulated")
    d.step("simulated_replica_hours_with_pool", "Replica-hours, warm pool", w.replica_seconds / 3600, "h",
           noun="replica", kind="simulated", note="Paid replica time over the run, booting included.")
    d.step("simulated_replica_hours_without_pool", "Replica-hours, no pool", n.replica_seconds / 3600, "h",
           noun="replica", kind="simulated", note="Paid replica time over the run, booting included.")
    d.step("simulated_conservation_error", "Largest imbalance of arrived against finished + in service + queued",
           max(w.conservation_error, n.conservation_error), "1", noun="requests", kind="simulated")
    return d
