"""N serving regions, one of them (or part of one) drops: what the next five minutes look like.

Entry point, as in every module of models/sim: `run(Config, seed) -> Result` (FailoverConfig,
FailoverResult).

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


Config = FailoverConfig
Result = FailoverResult


def _pending_after(pending: np.ndarray, spread: np.ndarray | None, rate: np.ndarray, steps: int) -> float:
    """Retries scheduled to arrive after the horizon."""
    if spread is None:
        return float(pending[:, steps:].sum())
    # Arrivals at each later step: today's rate plus the changes recorded from then on.
    tail = rate[:, None] + np.cumsum(spread[:, steps:], axis=1)
    return float(tail.sum())


class _Fleet:
    """One run's state; the phases of a step (the module docstring's list) are its methods."""

    def __init__(self, cfg: FailoverConfig, seed: int) -> None:
        self.cfg = cfg
        rng = np.random.default_rng(seed)
        self.dt = dt = cfg.step_s
        self.n = n = cfg.regions
        self.retries_max = retries_max = cfg.max_retries
        self.attempts = retries_max + 1
        self.steps = steps = int(round(cfg.horizon_s / dt))
        self.t_drop = int(round(cfg.drop_at_s / dt))
        self.t_detect = self.t_drop + int(round(cfg.detection_s / dt))
        self.ramp_steps = 0 if cfg.shift == "immediate" else max(1, int(round(cfg.ramp_s / dt)))
        self.p_done = dt / cfg.request_s
        self.cap_rps = cfg.replicas_per_region * cfg.replica_rps
        load_rps = cfg.utilization * self.cap_rps
        self.whole_region = cfg.drop_fraction >= 1.0
        self.s_keep = keep_share(n, cfg.drop_fraction, cfg.residency_fraction)
        self.slots_per_replica = cfg.replica_rps * cfg.request_s

        # Home classes: paid portable, paid resident, free portable, free resident.
        p, r = cfg.paid_fraction, cfg.residency_fraction
        home_share = np.array([p * (1 - r), p * r, (1 - p) * (1 - r), (1 - p) * r])
        self.new = rng.poisson(load_rps * dt * home_share, size=(steps, n, 4)).astype(float)

        # Retries waiting to fire, by retry number, step, home region and home class.
        cap_steps = int(math.ceil(BACKOFF_CAP_S / dt)) + 2
        self.pending = np.zeros((max(retries_max, 1), steps + cap_steps + 1, n, 4))
        self.delay_steps = [max(1, int(round(backoff_s(cfg.retry_policy, cfg.retry_base_s, a) / dt)))
                            for a in range(1, retries_max + 1)]
        self.jitter = cfg.retry_policy == "backoff_jitter"
        # Full jitter spreads a failure evenly over m future steps: kept as a difference array of
        # retry rates (add at the first step, take away after the last), so a spread costs two small
        # additions however long it is. `rate` is the running sum: the retries arriving this step.
        self.spread = np.zeros_like(self.pending) if self.jitter else None
        self.rate = np.zeros((max(retries_max, 1), n, 4))

        self.replicas = np.full(n, float(cfg.replicas_per_region))
        self.busy = np.zeros((n, 6))
        self.busy[:, NATIVE] = load_rps * cfg.request_s * home_share  # start in steady state
        self.queue = np.zeros((n, 6))
        self.initial_in_service = float(self.busy.sum())

        self.offered = np.zeros((steps, n))
        self.served = np.zeros((steps, n))
        self.shed_rec = np.zeros((steps, n))
        self.failed_rec = np.zeros((steps, n))
        self.queued_rec = np.zeros((steps, n))
        self.busy_rec = np.zeros((steps, n))
        self.capacity = np.zeros((steps, n))
        self.moved_first = np.zeros(steps)  # first attempts the router moved out of region 0
        self.shed_paid_t = np.zeros(steps)
        self.shed_free_t = np.zeros(steps)
        self.failed_portable_t = np.zeros(steps)

        self.shed_final = np.zeros(2)  # paid, free
        self.lost_final = np.zeros(2)  # portable, resident
        self.in_flight_lost = 0.0
        self.cold_at = -1
        self.cold_add = np.zeros(n)
        self.warm_added = self.cold_added = 0.0

        self._limits()
        self.demand = np.empty((self.attempts, n, 4))
        self.arr = np.zeros((self.attempts, n, 6))
        self.fail = np.zeros((self.attempts, n, 4))
        self.queued = False  # is anything waiting anywhere (skips work on quiet steps)

    def _limits(self) -> None:
        """Slots, the paid queue bound, the load below which nobody is shed, and capacity."""
        cfg = self.cfg
        slots_now = self.replicas * self.slots_per_replica
        qlimit_now = cfg.queue_limit_s * slots_now / cfg.request_s
        self.slots, self.qlimit = slots_now, qlimit_now
        self.no_shed_below = np.minimum(cfg.ceiling * slots_now, slots_now + qlimit_now) + _TINY
        self.cap_now = self.replicas * cfg.replica_rps

    def _schedule(self, t: int, fail: np.ndarray, dead_last: np.ndarray | None) -> None:
        """Send this step's failures to their retry slot, or to the books if out of retries.

        `fail` is (attempt, home, home class); `dead_last` the part of its last attempt that hit
        dead capacity, given up as lost rather than shed."""
        active = fail.reshape(self.attempts, -1).any(axis=1)
        if active[-1]:
            last = fail[-1].sum(axis=0)  # by home class
            if dead_last is not None:
                self.lost_final[0] += dead_last[PORTABLE_HOME].sum()
                self.lost_final[1] += dead_last[RESIDENT_HOME].sum()
                last = last - dead_last
            self.shed_final[0] += last[0] + last[1]
            self.shed_final[1] += last[2] + last[3]
        for a in range(self.retries_max):
            if not active[a]:
                continue
            m = self.delay_steps[a]
            if self.jitter:
                share = fail[a] / m
                self.spread[a, t + 1] += share
                self.spread[a, t + 1 + m] -= share
            else:
                self.pending[a, t + m] += fail[a]

    # --- the phases of a step --------------------------------------------------------------

    def events(self, t: int) -> None:
        """The drop, the detection (and the autoscaler's order), the cold replicas joining."""
        cfg, n = self.cfg, self.n
        if t == self.t_drop:
            f = cfg.drop_fraction
            busy, queue = self.busy, self.queue
            lost = (busy[0] + queue[0]) * f  # only own classes live in region 0 before the shift
            busy[0] *= 1 - f
            queue[0] *= 1 - f
            self.queued = bool(queue.any())
            self.in_flight_lost = float(lost.sum())
            self.replicas[0] *= 1 - f
            self._limits()
            fail = self.fail
            fail[:] = 0.0
            fail[0, 0] = lost[NATIVE]
            self.failed_portable_t[t] += lost[0] + lost[3]
            self.failed_rec[t, 0] += self.in_flight_lost
            self._schedule(t, fail, fail[-1, 0].copy() if self.retries_max == 0 else None)
        if t == self.t_detect:
            affected, other = steady_loads(n, cfg.utilization, cfg.drop_fraction, cfg.residency_fraction)
            expect = np.full(n, other * self.cap_rps)
            expect[0] = affected * self.cap_rps
            # Never size above the admission ceiling: capacity admission control would not use.
            need = np.ceil(expect / (cfg.replica_rps * min(cfg.autoscale_target, cfg.ceiling)) - 1e-9)
            extra = np.maximum(need - self.replicas, 0)
            if self.whole_region:
                extra[0] = 0.0
            warm = np.minimum(extra, cfg.warm_pool_replicas)
            self.cold_add = extra - warm
            self.warm_added, self.cold_added = float(warm.sum()), float(self.cold_add.sum())
            self.replicas += warm
            self._limits()
            self.cold_at = t + int(round(cfg.cold_start_s / self.dt)) if self.cold_added > 0 else -1
        if t == self.cold_at:
            self.replicas += self.cold_add
            self._limits()

    def route(self, t: int) -> tuple[np.ndarray, np.ndarray | None]:
        """New requests and due retries, sent home until the shift, then partly moved out of
        region 0. Returns the arrivals by (region, class) and what hit a dead region."""
        demand, arr, n = self.demand, self.arr, self.n
        demand[0] = self.new[t]
        if self.jitter:
            self.rate += self.spread[:, t]
            self.pending[:, t] = self.rate  # what arrives this step, kept for the retry series
            demand[1:] = self.rate
        elif self.retries_max:
            demand[1:] = self.pending[:, t]
        arr[:, :, NATIVE] = demand
        if t >= self.t_detect and self.s_keep < 1:
            progress = 1.0 if self.ramp_steps == 0 else min(1.0, (t - self.t_detect + 1) / self.ramp_steps)
            moved = demand[:, 0, PORTABLE_HOME] * (progress * (1 - self.s_keep))  # (attempt, tier)
            arr[:, 0, [0, 3]] -= moved
            arr[:, 1:, SPILLED] = (moved / (n - 1))[:, None, :]
            self.moved_first[t] = moved[0].sum()
        by_class = _add(arr, axis=0)  # (region, class)
        self.offered[t] = _add(by_class, axis=1)

        dead = None
        if self.whole_region and t >= self.t_drop:
            dead = arr[:, 0, NATIVE]  # (attempt, home class): every request sent there fails
            by_class[0] = 0.0
            self.failed_rec[t, 0] += self.offered[t, 0]
            self.failed_portable_t[t] += dead[:, PORTABLE_HOME].sum()
        return by_class, dead

    def complete(self, t: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Requests in service finish; returns (slots in use, free slots, queued) per region."""
        busy = self.busy
        done = busy * self.p_done
        busy -= done
        self.served[t] = _add(done, axis=1)
        in_use = _add(busy, axis=1)
        return in_use, np.maximum(self.slots - in_use, 0.0), _add(self.queue, axis=1)

    def admission(self, t: int, by_class: np.ndarray, arriving: np.ndarray, dead: np.ndarray | None,
                  in_use: np.ndarray, free_slots: np.ndarray, queued_now: np.ndarray):
        """The free tier only below the ceiling, paid up to the queue bound. Returns what is
        admitted by (region, class), its total per region, and the shed attempts (or None)."""
        cfg, n = self.cfg, self.n
        if not (cfg.admission_control and (in_use + queued_now + arriving > self.no_shed_below).any()):
            return by_class, arriving, None
        tiers = by_class.reshape(n, 2, 3).sum(axis=2)  # (region, tier)
        room = np.maximum(free_slots + self.qlimit - queued_now, 0.0)
        admit = np.empty((n, 2))
        np.minimum(tiers[:, 0], room, out=admit[:, 0])
        free_room = np.minimum(room - admit[:, 0], cfg.ceiling * self.slots - in_use - queued_now - admit[:, 0])
        np.minimum(tiers[:, 1], np.maximum(free_room, 0.0), out=admit[:, 1])
        refused = tiers - admit
        if refused.max() <= _TINY:
            return by_class, arriving, None
        share = np.divide(refused, tiers, out=np.zeros_like(refused), where=tiers > 0)
        shed = self.arr * np.repeat(share, 3, axis=1)[None]  # (attempt, region, class)
        if dead is not None:
            shed[:, 0] = 0.0
        self.shed_rec[t] = refused.sum(axis=1)
        self.shed_paid_t[t], self.shed_free_t[t] = refused.sum(axis=0)
        return by_class - shed.sum(axis=0), admit.sum(axis=1), shed

    def serve(self, by_class: np.ndarray, arriving: np.ndarray, free_slots: np.ndarray,
              queued_now: np.ndarray) -> None:
        """Free slots take the queue, paid first."""
        busy, queue, n = self.busy, self.queue, self.n
        if (queued_now + arriving <= free_slots).all():
            if self.queued:
                busy += queue  # everything waiting starts now
                queue[:] = 0.0
                self.queued = False
            busy += by_class
            return
        self.queued = True
        queue += by_class
        pool = queue.reshape(n, 2, 3).sum(axis=2)  # (region, tier)
        starting = np.empty((n, 2))
        np.minimum(free_slots, pool[:, 0], out=starting[:, 0])
        np.minimum(free_slots - starting[:, 0], pool[:, 1], out=starting[:, 1])
        frac = np.divide(starting, pool, out=np.zeros_like(pool), where=pool > 0)
        starts = queue * np.repeat(frac, 3, axis=1)
        queue -= starts
        busy += starts

    def send_back(self, t: int, shed: np.ndarray | None, dead: np.ndarray | None) -> None:
        """Failures go back to their clients: by home region, through the router again."""
        if shed is None and dead is None:
            return
        fail = self.fail
        dead_last = None
        if shed is not None:
            fail[:] = shed[:, :, NATIVE]
            fail[:, 0, PORTABLE_HOME] += shed[:, :, SPILLED].sum(axis=1)
        else:
            fail[:] = 0.0
        if dead is not None:
            fail[:, 0] += dead
            dead_last = dead[-1].copy()
        self._schedule(t, fail, dead_last)

    def record(self, t: int) -> None:
        if self.queued:
            self.queued_rec[t] = _add(self.queue, axis=1)
        self.busy_rec[t] = _add(self.busy, axis=1)
        self.capacity[t] = self.cap_now

    def step(self, t: int) -> None:
        self.events(t)
        by_class, dead = self.route(t)
        in_use, free_slots, queued_now = self.complete(t)
        arriving = self.offered[t] if dead is None else _add(by_class, axis=1)
        by_class, arriving, shed = self.admission(t, by_class, arriving, dead, in_use, free_slots, queued_now)
        self.serve(by_class, arriving, free_slots, queued_now)
        self.send_back(t, shed, dead)
        self.record(t)

    def result(self) -> FailoverResult:
        """The summary figures and the books, from the recorded series."""
        cfg, dt, steps, n, t_drop = self.cfg, self.dt, self.steps, self.n, self.t_drop
        retries_max, moved_first, capacity = self.retries_max, self.moved_first, self.capacity
        retries = self.pending[:, :steps].sum(axis=(0, 2, 3)) if retries_max else np.zeros(steps)
        first = self.new.sum(axis=2)
        first[:, 0] -= moved_first
        first[:, 1:] += moved_first[:, None] / (n - 1)

        live = capacity > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            utilization = np.where(live, self.busy_rec / (capacity * cfg.request_s), np.nan)
            latency = np.where(live, cfg.request_s + self.queued_rec / capacity, np.nan)
            w = max(1, int(round(SMOOTH_S / dt)))
            csum = np.cumsum(self.offered, axis=0)
            smooth = csum.copy()
            smooth[w:] = csum[w:] - csum[:-w]
            smooth /= np.minimum(np.arange(1, steps + 1), w)[:, None] * dt
            offered_util = np.where(live, smooth / capacity, np.nan)
        util_after = offered_util[t_drop:]
        peak_util = float(np.nanmax(util_after)) if np.isfinite(util_after).any() else 0.0
        over = np.nan_to_num(util_after, nan=0.0) > 1 + 1e-9
        seconds_over = float(over.any(axis=1).sum() * dt)

        wait = np.nan_to_num(latency - cfg.request_s, nan=0.0)
        bad = ((self.shed_rec.sum(axis=1) > _TINY) | (self.failed_portable_t > _TINY)
               | (wait > RECOVERED_WAIT_S).any(axis=1))
        bad[:t_drop] = False
        bad_steps = np.nonzero(bad)[0]
        if bad_steps.size == 0:
            recover = 0.0
        elif bad_steps[-1] >= steps - 1:
            recover = math.inf
        else:
            recover = (bad_steps[-1] + 1) * dt - cfg.drop_at_s

        settle = self.t_detect + self.ramp_steps
        steady = float(first[settle:, 1:].mean() / dt / self.cap_rps) if settle < steps else math.nan
        cold_at = self.cold_at

        return FailoverResult(
            config=cfg,
            t_s=np.arange(steps) * dt,
            offered=self.offered,
            offered_first=first,
            served=self.served,
            shed=self.shed_rec,
            failed=self.failed_rec,
            queued=self.queued_rec,
            in_service=self.busy_rec,
            capacity_rps=capacity,
            retries=retries,
            shed_paid=self.shed_paid_t,
            shed_free=self.shed_free_t,
            utilization=utilization,
            offered_utilization=offered_util,
            latency_proxy_s=latency,
            offered_total=float(self.new.sum()) + self.initial_in_service,
            initial_in_service=self.initial_in_service,
            served_total=float(self.served.sum()),
            in_service_end=float(self.busy.sum()),
            queued_end=float(self.queue.sum()),
            retry_pending_end=_pending_after(self.pending, self.spread, self.rate, steps) if retries_max else 0.0,
            shed_paid_total=float(self.shed_final[0]),
            shed_free_total=float(self.shed_final[1]),
            lost_total=float(self.lost_final.sum()),
            lost_resident_total=float(self.lost_final[1]),
            in_flight_lost=self.in_flight_lost,
            retry_attempts=float(retries.sum()),
            peak_retry_rate_per_s=float(retries.max() / dt),
            peak_utilization=peak_util,
            seconds_over_capacity=seconds_over,
            time_to_recover_s=recover,
            steady_survivor_utilization=steady,
            capacity_added_s=cold_at * dt if cold_at >= 0 else math.nan,
            replicas_added_warm=self.warm_added,
            replicas_added_cold=self.cold_added,
        )


_add = np.add.reduce  # the bare reduction: ndarray.sum's wrapper costs a microsecond a call


def run(cfg: FailoverConfig, seed: int = 0) -> FailoverResult:
    fleet = _Fleet(cfg, seed)
    for t in range(fleet.steps):
        fleet.step(t)
    return fleet.result()
