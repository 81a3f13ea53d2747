"""N serving regions, one of them (or part of one) drops: what the next five minutes look like.

Time advances in 100 ms steps over five minutes; region 0 is the one that drops, at 20 s.
Requests are a fluid: new arrivals are Poisson counts per step and home region, and every later
split (routing, admission, shedding, service, retry) divides those counts in proportion, so a
region holds fractional requests and every flow is tallied exactly (conservation holds to
floating-point rounding, and a test counts it).

The model, in the order a step applies it:

- **Traffic.** Each region's own clients offer `utilization x capacity` requests/s, split into
  paid/free and portable/resident (a resident request must be served in its home region).
- **Capacity.** A region has `replicas x replica_rps x request_s` slots (Little's law: the
  requests in service when every replica runs at its SLO throughput). A request holds a slot for
  an exponentially distributed time with mean `request_s` (a fraction `step / request_s` of the
  requests in service completes each step), so Little's law holds on average in every region.
- **The drop.** At `drop_at_s` region 0 loses `drop_fraction` of its replicas, and the same share
  of the requests it was serving or queueing: those are the in-flight losses, and their clients
  see an error. A whole region lost also fails every later request the router still sends it.
- **Detection and shift.** For `detection_s` the router keeps sending region 0 its own traffic
  (latency routing: every client goes to its nearest region). Then it moves region 0's portable
  traffic to the others, at once or along a linear ramp of `ramp_s`, keeping in region 0 the
  share its remaining capacity carries at the same utilization as everyone else
  (`keep_share`). Resident traffic never moves: the residency override beats the latency rule.
- **Admission control.** A region with admission control admits paid requests while its queue
  holds less than `queue_limit_s` of work at its capacity; free requests only while its slots
  in use plus its queue stay under `ceiling x slots`. So the free tier is shed first, as soon as
  a region is full, and paid traffic only when the queue bound is hit. Without admission
  control nothing is shed and the queue grows without bound.
- **Service.** Free slots take queued requests, paid first.
- **Retries.** A shed request, a request sent to a dead region and a request lost in flight each
  come back after a client back-off: `immediate` (next step), `backoff` (base x 2^(n-1), the
  same delay for every client, so synchronized), or `backoff_jitter` (full jitter: uniform over
  [0, base x 2^(n-1)]), each capped at 60 s. A retry is routed like a new request from its home
  region. After `max_retries` retries the request is given up: shed (if the last refusal was
  admission control) or lost (if it hit dead capacity or was in flight at the drop). A request
  lost in flight counts as a first failure; retries before the drop are rare and ignored there.
- **Warm pool and autoscaler.** At detection every live region computes the replicas its
  expected post-shift load needs at `autoscale_target` utilization (or the admission ceiling, if
  lower: capacity above it would never be admitted) (the router knows the shift it
  is making: a leading signal, not a lagging one). Up to `warm_pool_replicas` of them are warm
  (weights already in GPU memory) and join at once; the rest join `cold_start_s` later.

Pure numpy, seeded with `numpy.random.default_rng(seed)`; no global random state.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

STEP_S = 0.1
HORIZON_S = 300.0
DROP_AT_S = 20.0
BACKOFF_CAP_S = 60.0  # the usual cap on an exponential back-off
RECOVERED_WAIT_S = 1.0  # "recovered": no shedding, no failures, every queue drains in under this
SMOOTH_S = 1.0  # offered utilization is averaged over this window before peaks are taken
_TINY = 1e-6  # requests: below this a fluid remainder is rounding, not traffic

RetryPolicy = Literal["immediate", "backoff", "backoff_jitter"]
ShiftMode = Literal["immediate", "ramp"]
RETRY_POLICIES: tuple[str, ...] = ("immediate", "backoff", "backoff_jitter")
SHIFT_MODES: tuple[str, ...] = ("immediate", "ramp")

# Classes of a request inside a region (last axis of the queue and in-service arrays): tier
# (paid, free) x origin (own portable, own resident, moved here from region 0).
PAID = np.array([0, 1, 2])
FREE = np.array([3, 4, 5])
NATIVE = np.array([0, 1, 3, 4])  # same order as the home classes below
SPILLED = np.array([2, 5])
PORTABLE_HOME = np.array([0, 2])  # home classes: paid portable, paid resident, free portable, free resident
RESIDENT_HOME = np.array([1, 3])


@dataclass(frozen=True)
class FailoverConfig:
    regions: int = 2
    replicas_per_region: float = 40
    replica_rps: float = 25.0
    utilization: float = 0.6
    request_s: float = 8.0
    paid_fraction: float = 0.7
    residency_fraction: float = 0.1
    drop_fraction: float = 1.0
    detection_s: float = 15.0
    shift: ShiftMode = "immediate"
    ramp_s: float = 30.0
    retry_policy: RetryPolicy = "backoff_jitter"
    retry_base_s: float = 2.0
    max_retries: int = 3
    admission_control: bool = True
    ceiling: float = 1.0
    queue_limit_s: float = 5.0
    warm_pool_replicas: float = 2
    cold_start_s: float = 70.0
    autoscale_target: float = 0.8
    horizon_s: float = HORIZON_S
    drop_at_s: float = DROP_AT_S
    step_s: float = STEP_S

    def __post_init__(self) -> None:
        checks = [
            (self.regions >= 2, "regions must be at least 2"),
            (self.replicas_per_region > 0 and self.replica_rps > 0, "capacity must be positive"),
            (0 <= self.utilization < 5, "utilization must be a fraction"),
            (self.request_s >= self.step_s, "a request must last at least one step"),
            (0 <= self.paid_fraction <= 1, "paid_fraction must be within 0-1"),
            (0 <= self.residency_fraction < 1, "residency_fraction must be within 0-1 (exclusive)"),
            (0 < self.drop_fraction <= 1, "drop_fraction must be within (0, 1]"),
            (self.detection_s >= 0 and self.ramp_s > 0, "detection and ramp must be non-negative"),
            (self.retry_policy in RETRY_POLICIES, f"retry_policy is one of {RETRY_POLICIES}"),
            (self.shift in SHIFT_MODES, f"shift is one of {SHIFT_MODES}"),
            (self.retry_base_s > 0 and self.max_retries >= 0, "retry settings must be non-negative"),
            (0 < self.ceiling <= 1.5 and self.queue_limit_s >= 0, "admission settings out of range"),
            (self.warm_pool_replicas >= 0 and self.cold_start_s >= 0, "scaling settings out of range"),
            (0 < self.autoscale_target <= 1.5, "autoscale_target must be a fraction"),
            (0 <= self.drop_at_s < self.horizon_s, "the drop must happen inside the horizon"),
        ]
        for ok, message in checks:
            if not ok:
                raise ValueError(message)


def keep_share(regions: int, drop_fraction: float, residency: float) -> float:
    """Share of the affected region's portable traffic the router keeps there after the shift.

    The router aims at equal utilization everywhere: with a share h = 1 - drop_fraction of its
    capacity left, the affected region can carry N h / (N - 1 + h) of its own load. Its resident
    share r stays regardless, so it keeps (that - r) / (1 - r) of the portable rest, never less
    than nothing (then residents alone overload it) and never more than all of it.
    """
    h = 1.0 - drop_fraction
    if h <= 0:
        return 0.0
    carry = regions * h / (regions - 1 + h)
    return min(1.0, max(0.0, (carry - residency) / (1.0 - residency)))


def steady_loads(regions: int, utilization: float, drop_fraction: float, residency: float) -> tuple[float, float]:
    """(affected, each other) region's load after the shift, as a multiple of today's capacity.

    Unique demand only: retries come on top. A whole region lost carries nothing; its resident
    share is stranded.
    """
    s = keep_share(regions, drop_fraction, residency)
    u, r = utilization, residency
    affected = 0.0 if drop_fraction >= 1 else u * (r + s * (1 - r))
    other = u * (1 + (1 - s) * (1 - r) / (regions - 1))
    return affected, other


def backoff_s(policy: str, base_s: float, attempt: int) -> float:
    """Longest wait before retry number `attempt` (1-based): the jitter window, or the fixed delay."""
    if policy == "immediate":
        return 0.0
    return min(BACKOFF_CAP_S, base_s * 2.0 ** (attempt - 1))


@dataclass(frozen=True)
class FailoverResult:
    """Time series (rows = steps, columns = regions; region 0 dropped) and summary figures.

    Per-step arrays count requests (attempts) in that step, except `queued` and `in_service`
    (the state at the end of the step) and the rates and ratios named as such.
    """

    config: FailoverConfig
    t_s: np.ndarray  # (T,) start of each step
    offered: np.ndarray  # (T, N) attempts arriving: new requests plus retries
    offered_first: np.ndarray  # (T, N) first attempts only (unique demand)
    served: np.ndarray  # (T, N) completions
    shed: np.ndarray  # (T, N) attempts refused by admission control
    failed: np.ndarray  # (T, N) attempts sent to dead capacity, plus the in-flight loss at the drop
    queued: np.ndarray  # (T, N) waiting at the end of the step
    in_service: np.ndarray  # (T, N) in service at the end of the step
    capacity_rps: np.ndarray  # (T, N) replicas x replica_rps
    retries: np.ndarray  # (T,) retry attempts arriving, all regions
    shed_paid: np.ndarray  # (T,) attempts shed, paid tier
    shed_free: np.ndarray  # (T,) attempts shed, free tier
    utilization: np.ndarray  # (T, N) slots in use / slots (busy fraction)
    offered_utilization: np.ndarray  # (T, N) offered rate over SMOOTH_S / capacity (nan where dead)
    latency_proxy_s: np.ndarray  # (T, N) request_s + queue / capacity rate (nan where dead)
    # -- the books: offered_total == served + in_service + queued + retry_pending + shed + lost
    offered_total: float  # unique requests: arrivals plus those already in service at t = 0
    initial_in_service: float
    served_total: float
    in_service_end: float
    queued_end: float
    retry_pending_end: float  # scheduled to retry after the horizon
    shed_paid_total: float  # unique requests given up after a refusal, paid tier
    shed_free_total: float
    lost_total: float  # unique requests given up after dead capacity or the in-flight loss
    lost_resident_total: float  # part of lost_total: resident traffic with nowhere to go
    # -- summary
    in_flight_lost: float
    retry_attempts: float
    peak_retry_rate_per_s: float
    peak_utilization: float  # max offered_utilization over live regions after the drop
    seconds_over_capacity: float  # time after the drop with any live region offered more than capacity
    time_to_recover_s: float  # from the drop; inf if still degraded at the horizon
    steady_survivor_utilization: float  # first attempts per other region / today's capacity, after the shift
    capacity_added_s: float  # when the autoscaler's cold replicas joined (nan if none)
    replicas_added_warm: float  # per region, summed over live regions
    replicas_added_cold: float

    @property
    def shed_total(self) -> float:
        return self.shed_paid_total + self.shed_free_total

    @property
    def conservation_gap(self) -> float:
        accounted = (self.served_total + self.in_service_end + self.queued_end + self.retry_pending_end
                     + self.shed_total + self.lost_total)
        return self.offered_total - accounted

    @property
    def step_s(self) -> float:
        return self.config.step_s

    @property
    def detection_at_s(self) -> float:
        return self.config.drop_at_s + self.config.detection_s

    def offered_rps(self, start_s: float, end_s: float) -> float:
        """Mean attempts/s offered to each untouched region between two times (retries included)."""
        a, b = self.at(start_s), self.at(end_s)
        if b <= a:
            return math.nan
        return float(self.offered[a:b, 1:].mean() / self.config.step_s)

    def at(self, t_s: float) -> int:
        """Index of the step containing time t_s (clamped to the run)."""
        return int(min(len(self.t_s) - 1, max(0, math.floor(t_s / self.config.step_s + 1e-9))))


def _pending_after(pending: np.ndarray, spread: np.ndarray | None, rate: np.ndarray, steps: int) -> float:
    """Retries scheduled to arrive after the horizon."""
    if spread is None:
        return float(pending[:, steps:].sum())
    # Arrivals at each later step: today's rate plus the changes recorded from then on.
    tail = rate[:, None] + np.cumsum(spread[:, steps:], axis=1)
    return float(tail.sum())


def run(cfg: FailoverConfig, seed: int = 0) -> FailoverResult:
    rng = np.random.default_rng(seed)
    dt = cfg.step_s
    n = cfg.regions
    retries_max = cfg.max_retries
    attempts = retries_max + 1
    steps = int(round(cfg.horizon_s / dt))
    t_drop = int(round(cfg.drop_at_s / dt))
    t_detect = t_drop + int(round(cfg.detection_s / dt))
    ramp_steps = 0 if cfg.shift == "immediate" else max(1, int(round(cfg.ramp_s / dt)))
    p_done = dt / cfg.request_s
    cap_rps = cfg.replicas_per_region * cfg.replica_rps
    load_rps = cfg.utilization * cap_rps
    whole_region = cfg.drop_fraction >= 1.0
    s_keep = keep_share(n, cfg.drop_fraction, cfg.residency_fraction)
    slots_per_replica = cfg.replica_rps * cfg.request_s

    # Home classes: paid portable, paid resident, free portable, free resident.
    p, r = cfg.paid_fraction, cfg.residency_fraction
    home_share = np.array([p * (1 - r), p * r, (1 - p) * (1 - r), (1 - p) * r])
    new = rng.poisson(load_rps * dt * home_share, size=(steps, n, 4)).astype(float)

    # Retries waiting to fire, by retry number, step, home region and home class.
    cap_steps = int(math.ceil(BACKOFF_CAP_S / dt)) + 2
    pending = np.zeros((max(retries_max, 1), steps + cap_steps + 1, n, 4))
    delay_steps = [max(1, int(round(backoff_s(cfg.retry_policy, cfg.retry_base_s, a) / dt)))
                   for a in range(1, retries_max + 1)]
    jitter = cfg.retry_policy == "backoff_jitter"
    # Full jitter spreads a failure evenly over m future steps: kept as a difference array of
    # retry rates (add at the first step, take away after the last), so a spread costs two small
    # additions however long it is. `rate` is the running sum: the retries arriving this step.
    spread = np.zeros_like(pending) if jitter else None
    rate = np.zeros((max(retries_max, 1), n, 4))

    replicas = np.full(n, float(cfg.replicas_per_region))
    slots = replicas * slots_per_replica
    busy = np.zeros((n, 6))
    busy[:, NATIVE] = load_rps * cfg.request_s * home_share  # start in steady state
    queue = np.zeros((n, 6))
    initial_in_service = float(busy.sum())

    offered = np.zeros((steps, n))
    served = np.zeros((steps, n))
    shed_rec = np.zeros((steps, n))
    failed_rec = np.zeros((steps, n))
    queued_rec = np.zeros((steps, n))
    busy_rec = np.zeros((steps, n))
    capacity = np.zeros((steps, n))
    moved_first = np.zeros(steps)  # first attempts the router moved out of region 0
    shed_paid_t = np.zeros(steps)
    shed_free_t = np.zeros(steps)
    failed_portable_t = np.zeros(steps)

    shed_final = np.zeros(2)  # paid, free
    lost_final = np.zeros(2)  # portable, resident
    in_flight_lost = 0.0
    cold_at = -1
    cold_add = np.zeros(n)
    warm_added = cold_added = 0.0

    def schedule(t: int, fail: np.ndarray, dead_last: np.ndarray | None) -> None:
        """Send this step's failures to their retry slot, or to the books if out of retries.

        `fail` is (attempt, home, home class); `dead_last` the part of its last attempt that hit
        dead capacity, given up as lost rather than shed."""
        active = fail.reshape(attempts, -1).any(axis=1)
        if active[-1]:
            last = fail[-1].sum(axis=0)  # by home class
            if dead_last is not None:
                lost_final[0] += dead_last[PORTABLE_HOME].sum()
                lost_final[1] += dead_last[RESIDENT_HOME].sum()
                last = last - dead_last
            shed_final[0] += last[0] + last[1]
            shed_final[1] += last[2] + last[3]
        for a in range(retries_max):
            if not active[a]:
                continue
            m = delay_steps[a]
            if jitter:
                share = fail[a] / m
                spread[a, t + 1] += share
                spread[a, t + 1 + m] -= share
            else:
                pending[a, t + m] += fail[a]

    add = np.add.reduce  # the bare reduction: ndarray.sum's wrapper costs a microsecond a call

    def limits() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        slots_now = replicas * slots_per_replica
        qlimit_now = cfg.queue_limit_s * slots_now / cfg.request_s
        fast = np.minimum(cfg.ceiling * slots_now, slots_now + qlimit_now) + _TINY
        return slots_now, qlimit_now, fast, replicas * cfg.replica_rps

    slots, qlimit, no_shed_below, cap_now = limits()
    demand = np.empty((attempts, n, 4))
    arr = np.zeros((attempts, n, 6))
    fail = np.zeros((attempts, n, 4))
    queued = False  # is anything waiting anywhere (skips work on quiet steps)
    for t in range(steps):
        # --- events -------------------------------------------------------------------------
        if t == t_drop:
            f = cfg.drop_fraction
            lost = (busy[0] + queue[0]) * f  # only own classes live in region 0 before the shift
            busy[0] *= 1 - f
            queue[0] *= 1 - f
            queued = bool(queue.any())
            in_flight_lost = float(lost.sum())
            replicas[0] *= 1 - f
            slots, qlimit, no_shed_below, cap_now = limits()
            fail[:] = 0.0
            fail[0, 0] = lost[NATIVE]
            failed_portable_t[t] += lost[0] + lost[3]
            failed_rec[t, 0] += in_flight_lost
            schedule(t, fail, fail[-1, 0].copy() if retries_max == 0 else None)
        if t == t_detect:
            affected, other = steady_loads(n, cfg.utilization, cfg.drop_fraction, cfg.residency_fraction)
            expect = np.full(n, other * cap_rps)
            expect[0] = affected * cap_rps
            # Never size above the admission ceiling: capacity admission control would not use.
            need = np.ceil(expect / (cfg.replica_rps * min(cfg.autoscale_target, cfg.ceiling)) - 1e-9)
            extra = np.maximum(need - replicas, 0)
            if whole_region:
                extra[0] = 0.0
            warm = np.minimum(extra, cfg.warm_pool_replicas)
            cold_add = extra - warm
            warm_added, cold_added = float(warm.sum()), float(cold_add.sum())
            replicas += warm
            slots, qlimit, no_shed_below, cap_now = limits()
            cold_at = t + int(round(cfg.cold_start_s / dt)) if cold_added > 0 else -1
        if t == cold_at:
            replicas += cold_add
            slots, qlimit, no_shed_below, cap_now = limits()

        # --- demand and routing: latency routing sends everyone home until the shift --------
        demand[0] = new[t]
        if jitter:
            rate += spread[:, t]
            pending[:, t] = rate  # what arrives this step, kept for the retry series
            demand[1:] = rate
        elif retries_max:
            demand[1:] = pending[:, t]
        arr[:, :, NATIVE] = demand
        if t >= t_detect and s_keep < 1:
            progress = 1.0 if ramp_steps == 0 else min(1.0, (t - t_detect + 1) / ramp_steps)
            moved = demand[:, 0, PORTABLE_HOME] * (progress * (1 - s_keep))  # (attempt, tier)
            arr[:, 0, [0, 3]] -= moved
            arr[:, 1:, SPILLED] = (moved / (n - 1))[:, None, :]
            moved_first[t] = moved[0].sum()
        by_class = add(arr, axis=0)  # (region, class)
        offered[t] = add(by_class, axis=1)

        dead = None
        if whole_region and t >= t_drop:
            dead = arr[:, 0, NATIVE]  # (attempt, home class): every request sent there fails
            by_class[0] = 0.0
            failed_rec[t, 0] += offered[t, 0]
            failed_portable_t[t] += dead[:, PORTABLE_HOME].sum()

        # --- completions ------------------------------------------------------------------------
        done = busy * p_done
        busy -= done
        served[t] = add(done, axis=1)
        in_use = add(busy, axis=1)
        free_slots = np.maximum(slots - in_use, 0.0)
        queued_now = add(queue, axis=1)

        # --- admission control: free tier only below the ceiling, paid up to the queue bound -
        arriving = offered[t] if dead is None else add(by_class, axis=1)
        shed = None
        if cfg.admission_control and (in_use + queued_now + arriving > no_shed_below).any():
            tiers = by_class.reshape(n, 2, 3).sum(axis=2)  # (region, tier)
            room = np.maximum(free_slots + qlimit - queued_now, 0.0)
            admit = np.empty((n, 2))
            np.minimum(tiers[:, 0], room, out=admit[:, 0])
            free_room = np.minimum(room - admit[:, 0], cfg.ceiling * slots - in_use - queued_now - admit[:, 0])
            np.minimum(tiers[:, 1], np.maximum(free_room, 0.0), out=admit[:, 1])
            refused = tiers - admit
            if refused.max() > _TINY:
                share = np.divide(refused, tiers, out=np.zeros_like(refused), where=tiers > 0)
                shed = arr * np.repeat(share, 3, axis=1)[None]  # (attempt, region, class)
                if dead is not None:
                    shed[:, 0] = 0.0
                by_class = by_class - shed.sum(axis=0)
                arriving = admit.sum(axis=1)
                shed_rec[t] = refused.sum(axis=1)
                shed_paid_t[t], shed_free_t[t] = refused.sum(axis=0)

        # --- service: free slots take the queue, paid first ---------------------------------
        if (queued_now + arriving <= free_slots).all():
            if queued:
                busy += queue  # everything waiting starts now
                queue[:] = 0.0
                queued = False
            busy += by_class
        else:
            queued = True
            queue += by_class
            pool = queue.reshape(n, 2, 3).sum(axis=2)  # (region, tier)
            starting = np.empty((n, 2))
            np.minimum(free_slots, pool[:, 0], out=starting[:, 0])
            np.minimum(free_slots - starting[:, 0], pool[:, 1], out=starting[:, 1])
            frac = np.divide(starting, pool, out=np.zeros_like(pool), where=pool > 0)
            starts = queue * np.repeat(frac, 3, axis=1)
            queue -= starts
            busy += starts

        # --- failures go back to their clients: by home region, through the router again ------
        if shed is not None or dead is not None:
            dead_last = None
            if shed is not None:
                fail[:] = shed[:, :, NATIVE]
                fail[:, 0, PORTABLE_HOME] += shed[:, :, SPILLED].sum(axis=1)
            else:
                fail[:] = 0.0
            if dead is not None:
                fail[:, 0] += dead
                dead_last = dead[-1].copy()
            schedule(t, fail, dead_last)

        if queued:
            queued_rec[t] = add(queue, axis=1)
        busy_rec[t] = add(busy, axis=1)
        capacity[t] = cap_now

    # --- summary ------------------------------------------------------------------------------
    retries = pending[:, :steps].sum(axis=(0, 2, 3)) if retries_max else np.zeros(steps)
    first = new.sum(axis=2)
    first[:, 0] -= moved_first
    first[:, 1:] += moved_first[:, None] / (n - 1)

    live = capacity > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        utilization = np.where(live, busy_rec / (capacity * cfg.request_s), np.nan)
        latency = np.where(live, cfg.request_s + queued_rec / capacity, np.nan)
        w = max(1, int(round(SMOOTH_S / dt)))
        csum = np.cumsum(offered, axis=0)
        smooth = csum.copy()
        smooth[w:] = csum[w:] - csum[:-w]
        smooth /= np.minimum(np.arange(1, steps + 1), w)[:, None] * dt
        offered_util = np.where(live, smooth / capacity, np.nan)
    util_after = offered_util[t_drop:]
    peak_util = float(np.nanmax(util_after)) if np.isfinite(util_after).any() else 0.0
    over = np.nan_to_num(util_after, nan=0.0) > 1 + 1e-9
    seconds_over = float(over.any(axis=1).sum() * dt)

    wait = np.nan_to_num(latency - cfg.request_s, nan=0.0)
    bad = (shed_rec.sum(axis=1) > _TINY) | (failed_portable_t > _TINY) | (wait > RECOVERED_WAIT_S).any(axis=1)
    bad[:t_drop] = False
    bad_steps = np.nonzero(bad)[0]
    if bad_steps.size == 0:
        recover = 0.0
    elif bad_steps[-1] >= steps - 1:
        recover = math.inf
    else:
        recover = (bad_steps[-1] + 1) * dt - cfg.drop_at_s

    settle = t_detect + ramp_steps
    steady = float(first[settle:, 1:].mean() / dt / cap_rps) if settle < steps else math.nan

    return FailoverResult(
        config=cfg,
        t_s=np.arange(steps) * dt,
        offered=offered,
        offered_first=first,
        served=served,
        shed=shed_rec,
        failed=failed_rec,
        queued=queued_rec,
        in_service=busy_rec,
        capacity_rps=capacity,
        retries=retries,
        shed_paid=shed_paid_t,
        shed_free=shed_free_t,
        utilization=utilization,
        offered_utilization=offered_util,
        latency_proxy_s=latency,
        offered_total=float(new.sum()) + initial_in_service,
        initial_in_service=initial_in_service,
        served_total=float(served.sum()),
        in_service_end=float(busy.sum()),
        queued_end=float(queue.sum()),
        retry_pending_end=_pending_after(pending, spread, rate, steps) if retries_max else 0.0,
        shed_paid_total=float(shed_final[0]),
        shed_free_total=float(shed_final[1]),
        lost_total=float(lost_final.sum()),
        lost_resident_total=float(lost_final[1]),
        in_flight_lost=in_flight_lost,
        retry_attempts=float(retries.sum()),
        peak_retry_rate_per_s=float(retries.max() / dt),
        peak_utilization=peak_util,
        seconds_over_capacity=seconds_over,
        time_to_recover_s=recover,
        steady_survivor_utilization=steady,
        capacity_added_s=cold_at * dt if cold_at >= 0 else math.nan,
        replicas_added_warm=warm_added,
        replicas_added_cold=cold_added,
    )
