"""A traffic burst against a fleet whose new replicas take a cold start to become useful.

Entry point, as in every module of models/sim: `run(Config, seed) -> Result` (BurstConfig, BurstResult).

A fluid time-step model, seeded with `numpy.random.default_rng(seed)`:

- **Traffic.** Base rate, then at `start_s` a linear ramp to the peak over `ramp_s`, the peak
  for `hold_s`, a linear ramp back down over `ramp_s`, base again. Each step's arrivals are a
  Poisson count of the offered rate (or exactly rate x step with `poisson=False`).
- **Service.** A replica serves up to `slots_per_replica` requests at once (the decode batch
  its TPOT target allows). A request holds its slot for an exponentially distributed time of
  mean `request_s`, so a fraction 1 - e^(-step / request_s) of the requests in service finishes
  each step and Little's law holds in the steady state. Requests that find every slot taken
  wait in one FIFO queue; nothing is shed, so the queue is the backlog.
- **Autoscaler.** Its signal is the offered arrival rate as the metrics pipeline reports it,
  `signal_delay_s` late (a leading signal: arrivals, not GPU utilization). It wants
  ceil(rate x request_s / (slots x target_utilization)) serving replicas plus `warm_pool`
  idle warm ones on top. It counts booting replicas as supply, so it never orders twice for
  the same deficit and needs no scale-up cooldown. An order becomes a ready replica
  `cold_start_s` later. Surplus is released only after it has lasted `scale_down_hold_s`
  (booting replicas first, then ready ones, never below what the requests in service occupy).
- **The warm pool** starts ready: `initial_replicas` serve the base load, `warm_pool` more
  hold weights in GPU memory and take traffic the moment it arrives.

Conservation: every request that arrived is finished, in service or queued, to floating-point
rounding (`conservation_error`). Pure numpy; no global random state.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class BurstConfig:
    base_rps: float
    peak_rps: float
    ramp_s: float
    hold_s: float
    request_s: float
    slots_per_replica: int
    target_utilization: float
    initial_replicas: int
    warm_pool: int
    cold_start_s: float
    signal_delay_s: float
    scale_down_hold_s: float
    start_s: float = 30.0
    poisson: bool = True
    max_steps: int = 4000

    @property
    def horizon_s(self) -> float:
        return (self.start_s + 2 * self.ramp_s + self.hold_s + self.scale_down_hold_s + 2 * self.cold_start_s
                + 4 * self.request_s + 60)

    @property
    def step_s(self) -> float:
        # A quarter of a request's duration at most, so the per-step completion share stays small.
        return min(max(0.25, self.horizon_s / self.max_steps), self.request_s / 4)


def offered_rps(cfg: BurstConfig, t: np.ndarray | float) -> np.ndarray:
    """The burst profile: base, ramp up, peak, ramp down, base."""
    t = np.asarray(t, dtype=float) - cfg.start_s
    up = np.clip(t / cfg.ramp_s, 0, 1)
    down = np.clip((t - cfg.ramp_s - cfg.hold_s) / cfg.ramp_s, 0, 1)
    return cfg.base_rps + (cfg.peak_rps - cfg.base_rps) * (up - down)


def serving_need(cfg: BurstConfig, rate: float) -> int:
    """Serving replicas the autoscaler wants for an arrival rate (Little's law at the target)."""
    return max(1, math.ceil(rate * cfg.request_s / (cfg.slots_per_replica * cfg.target_utilization) - 1e-9))


@dataclass(frozen=True)
class BurstResult:
    config: BurstConfig
    t: np.ndarray  # end of each step, s
    offered_rps: np.ndarray
    arrived: np.ndarray  # cumulative arrivals at t
    admitted: np.ndarray  # cumulative requests that entered service by t
    completed: np.ndarray  # cumulative completions by t
    queue: np.ndarray  # waiting for a slot at t
    in_service: np.ndarray
    ready: np.ndarray  # replicas able to serve at t
    booting: np.ndarray  # replicas ordered, not yet useful
    initial_in_service: float
    orders: int  # replicas ordered over the run
    releases: int  # replicas released over the run

    @property
    def step_s(self) -> float:
        return self.config.step_s

    def queue_at(self, t: float) -> float:
        return float(np.interp(t, self.t, self.queue))

    @property
    def peak_queue(self) -> float:
        return float(self.queue.max())

    @property
    def conservation_error(self) -> float:
        """Arrived - (completed + in service + queued), counting the requests in service at t = 0."""
        residual = self.initial_in_service + self.arrived - (self.completed + self.in_service + self.queue)
        return float(np.max(np.abs(residual)))

    def cohort_waits(self) -> tuple[np.ndarray, np.ndarray]:
        """(arrival time, wait) for each step's cohort: FIFO, so a cohort enters service when the
        cumulative admissions reach the cumulative arrivals it closes. Cohorts still queued at
        the horizon get the horizon as their start (a lower bound)."""
        t0 = np.concatenate([[0.0], self.t])
        adm = np.concatenate([[0.0], self.admitted])
        arr = np.concatenate([[0.0], self.arrived])
        # np.interp needs increasing xp; admissions are non-decreasing, so nudge ties apart.
        adm_strict = adm + np.arange(adm.size) * 1e-12
        start = np.interp(arr, adm_strict, t0, right=t0[-1])
        return t0[1:], np.maximum(start[1:] - t0[1:], 0.0)

    @property
    def max_wait_s(self) -> float:
        return float(self.cohort_waits()[1].max())

    @property
    def mean_wait_s(self) -> float:
        """Queue time averaged over requests: the area under the queue over the arrivals (Little)."""
        total = self.arrived[-1]
        return float(np.sum(self.queue) * self.step_s / total) if total > 0 else 0.0

    @property
    def replica_seconds(self) -> float:
        """Paid replica time, booting included."""
        return float(np.sum(self.ready + self.booting) * self.step_s)


Config = BurstConfig
Result = BurstResult


def run(cfg: BurstConfig, seed: int = 0) -> BurstResult:
    rng = np.random.default_rng(seed)
    dt = cfg.step_s
    n = int(math.ceil(cfg.horizon_s / dt))
    t_end = (np.arange(n) + 1) * dt
    rates = offered_rps(cfg, t_end - dt / 2)
    if cfg.poisson:
        arrivals = rng.poisson(rates * dt).astype(float)
    else:
        arrivals = rates * dt
    done_frac = dt / cfg.request_s
    slots = cfg.slots_per_replica

    in_service = min(cfg.base_rps * cfg.request_s, cfg.initial_replicas * slots)
    initial_in_service = in_service
    queued = cfg.base_rps * cfg.request_s - in_service  # a fleet too small for the base starts behind
    ready = cfg.initial_replicas + cfg.warm_pool
    # Replicas still booting, as cohorts [ready time, count] in order of readiness: an order for a
    # million replicas is one entry, not a million (a list of single replicas made a large
    # scenario quadratic and hung the page).
    boots: deque[list] = deque()
    booting = 0
    excess_since: float | None = None
    orders = releases = 0
    arrived_cum = admitted_cum = completed_cum = 0.0

    out = {k: np.empty(n) for k in ("arrived", "admitted", "completed", "queue", "in_service", "ready", "booting")}
    for k in range(n):
        t = t_end[k]
        # replicas whose cold start ends inside this step serve from its end
        while boots and boots[0][0] <= t:
            _, count = boots.popleft()
            ready += count
            booting -= count
        done = in_service * done_frac
        in_service -= done
        completed_cum += done
        queued += arrivals[k]
        arrived_cum += arrivals[k]
        admit = min(queued, max(0.0, ready * slots - in_service))
        queued -= admit
        in_service += admit
        admitted_cum += admit

        # autoscaler decision at the end of the step
        observed = float(offered_rps(cfg, t - cfg.signal_delay_s))
        desired = serving_need(cfg, observed) + cfg.warm_pool
        supply = ready + booting
        if desired > supply:
            boots.append([t + cfg.cold_start_s, desired - supply])
            booting += desired - supply
            orders += desired - supply
            excess_since = None
        elif desired < supply:
            if excess_since is None:
                excess_since = t
            elif t - excess_since >= cfg.scale_down_hold_s:
                surplus = supply - desired
                cancel = min(surplus, booting)
                left = cancel
                while left:  # the latest orders are cancelled first
                    take = min(left, boots[-1][1])
                    boots[-1][1] -= take
                    left -= take
                    if boots[-1][1] == 0:
                        boots.pop()
                booting -= cancel
                floor = math.ceil(in_service / slots - 1e-9)
                drop = max(0, min(surplus - cancel, ready - max(desired, floor)))
                ready -= drop
                releases += cancel + drop
                excess_since = None
        else:
            excess_since = None

        out["arrived"][k] = arrived_cum
        out["admitted"][k] = admitted_cum
        out["completed"][k] = completed_cum
        out["queue"][k] = queued
        out["in_service"][k] = in_service
        out["ready"][k] = ready
        out["booting"][k] = booting

    # The backlog a fleet too small for the base load starts with is counted as arrived at t = 0.
    initial_queue = cfg.base_rps * cfg.request_s - initial_in_service
    return BurstResult(
        config=cfg, t=t_end, offered_rps=rates,
        arrived=out["arrived"] + initial_queue, admitted=out["admitted"], completed=out["completed"],
        queue=out["queue"], in_service=out["in_service"], ready=out["ready"], booting=out["booting"],
        initial_in_service=initial_in_service, orders=orders, releases=releases,
    )
