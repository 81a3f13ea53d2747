"""A shared research cluster: a quota tree, a decayed fair-share factor, lending and preemption.

Entry point, as in every module of models/sim: `run(Config, seed) -> Result` (a FairShareResult).

`total_gpus` GPUs are owned through a two-level quota tree: the org splits into divisions, a
division into teams. A team's *share* is a weight (normalized over all teams); its *guarantee*
is `guaranteed_fraction x share x total_gpus` GPUs. Time moves in ticks of `tick_h` hours
(five minutes by default). Every tick, in this order:

1. **Completions.** Jobs whose work ended during the last tick release their GPUs.
2. **Arrivals.** Jobs submitted during the last tick join their team's FIFO queue.
3. **Fair-share factor** (Slurm's classic formula). Each team carries a decayed usage `U`
   in GPU-hours: every tick `U <- U x 2^(-tick / half_life) + charged_gpus x tick`. With
   `u = U / sum(U)` (normalized usage) and `s` the normalized share, `F = 2^(-u / s)`: 1 for a
   team that has used nothing, 1/2 for a team whose usage matches its share, towards 0 for a
   heavy user. A division's factor uses the sums of its teams. No usage anywhere gives F = 1.
   A half-life of 0 keeps only the last tick; an infinite one never forgets.
4. **Targets: guarantees first, then weighted max-min.** Demand is GPUs running + GPUs queued,
   or the hold if that is larger. Each division is entitled to min(demand, its guarantees); what is left (idle
   guarantees and any unguaranteed pool) is water-filled across divisions with weights
   `share x F` (no division gets more than it asks for), then inside each division the same
   way across its teams: a team's unused guarantee goes to its siblings before its cousins.
5. **Guarantees are enforced by preemption.** A team below min(demand, guarantee) whose next
   job fits inside its guarantee takes free GPUs, and if there are too few it preempts jobs of
   teams that run above their guarantee. A victim is eligible only if its team stays at or above
   its own guarantee without it (otherwise the victim's team would preempt back next tick).
   `victim_policy="checkpoint"` takes victims in order of least work lost since their last
   checkpoint (per GPU freed); `"random"` in random order. If the eligible victims cannot free
   enough, nobody is preempted and the owner waits for jobs to end. A preempted job goes back to
   the head of its team's queue. With `checkpoint_on_signal` the victim saves on the signal and
   loses only the save time, but keeps its GPUs while it saves (`save_h`, rounded up to whole
   ticks), so the owner starts when the save completes; without, the victim is killed at once,
   the owner starts this tick, and the victim restarts from its last periodic checkpoint.
   Preemption is never used to move borrowed capacity between borrowers: that happens as jobs
   end.
6. **Admission to targets, then backfill.** Teams furthest below their target start queued
   jobs (FIFO per team, whole jobs, gang-scheduled) up to the target; then any GPUs still free
   go to whichever queue head fits, largest remaining deficit first (largest-remainder rounding
   of the fractional targets), so the cluster is work-conserving.
7. **Charging.** Usage is charged by allocation (GPUs held, busy or idle) or, for comparison,
   by use (GPUs running jobs).

Jobs: per team, Poisson arrivals at `offered_gpus / (job_gpus x job_hours)` per hour from
`start_h`, an optional burst submitted at `start_h`, and jobs already running at t = 0.
Durations are exponential with mean `job_hours`. A job checkpoints every `checkpoint_h` hours
of progress, on a phase drawn uniformly per job, so a victim taken at a random moment has lost
`checkpoint_h / 2` on average. A *hoarding* team holds `hold_gpus` allocated at all times: its
own jobs start inside the hold at once, and the idle part is neither lent nor free.

Accounting (the tests check it): GPU-hours of running jobs = progress of every job + work lost
to preemption without warning + slack (a job that ends mid-tick holds its GPUs to the tick);
jobs arrived = queued + running + done; allocated GPUs never exceed `total_gpus`.

Seeded with `numpy.random.default_rng(seed)`, spawned into independent streams for arrivals,
victim draws and the counterfactual random draw, so two policies see identical arrivals.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass
from typing import Literal, Sequence

import numpy as np

VictimPolicy = Literal["checkpoint", "random"]
_EPS = 1e-9
_QUEUED, _RUNNING, _DONE = 1, 2, 3


@dataclass(frozen=True)
class TeamSpec:
    name: str
    division: str
    share: float  # weight in the quota tree, normalized over all teams
    offered_gpus: float = 0.0  # mean GPUs the Poisson arrivals ask for (rate x job_gpus x job_hours)
    job_gpus: int = 16
    job_hours: float = 8.0  # mean of an exponential duration
    checkpoint_h: float = 1.0
    start_h: float = 0.0  # Poisson arrivals (and the burst) start here
    burst_gpus: float = 0.0  # submitted at once at start_h, in whole jobs (rounded up)
    hold_gpus: float = 0.0  # hoarding: GPUs kept allocated, busy or idle (at most the guarantee)
    initial_running_gpus: float = 0.0  # whole jobs (rounded down) already running at t = 0
    initial_usage_gpu_h: float = 0.0  # decayed usage carried in from before t = 0


# ---------------------------------------------------------------------------------------------
# The three pure pieces the analytic model shares with the simulation.


def fair_share_factors(usage_gpu_h: Sequence[float], shares: Sequence[float]) -> np.ndarray:
    """Slurm's classic fair-share factor F = 2^(-u / s), u and s normalized to sum to one."""
    u = np.asarray(usage_gpu_h, dtype=float)
    s = np.asarray(shares, dtype=float)
    s = s / s.sum()
    total = u.sum()
    if total <= 0:
        return np.ones_like(u)
    return np.exp2(-(u / total) / s)


def _waterfill(capacity: float, caps: list[float], weights: list[float]) -> list[float]:
    """Weighted max-min on plain lists (the hot path: a handful of teams, every tick)."""
    out = [0.0] * len(caps)
    left = capacity if capacity > 0 else 0.0
    open_ = sorted((i for i in range(len(caps)) if caps[i] > _EPS and weights[i] > 0),
                   key=lambda i: caps[i] / weights[i])
    wsum = 0.0
    for i in open_:
        wsum += weights[i]
    for pos, i in enumerate(open_):
        if left <= _EPS:
            break
        level = left / wsum
        if caps[i] <= level * weights[i]:
            out[i] = caps[i]
            left -= caps[i]
            wsum -= weights[i]
        else:
            for j in open_[pos:]:
                out[j] = level * weights[j]
            break
    return out


def waterfill_list(capacity: float, caps: Sequence[float], weights: Sequence[float]) -> list[float]:
    """`waterfill` on plain lists, for callers that must stay well under a millisecond."""
    return _waterfill(float(capacity), [max(0.0, float(c)) for c in caps], [float(w) for w in weights])


def waterfill(capacity: float, caps: Sequence[float], weights: Sequence[float]) -> np.ndarray:
    """Weighted max-min: raise a common level L, each i gets min(cap_i, L x w_i), until the
    capacity is spent or every cap is met. Positive weights; the sum never exceeds capacity."""
    return np.array(_waterfill(float(capacity), [max(0.0, float(c)) for c in caps], [float(w) for w in weights]))


def _allocate(total: float, demand: list[float], guar: list[float], w: list[float],
              members: list[list[int]], dw: list[float]) -> list[float]:
    d_demand = [sum(demand[i] for i in m) for m in members]
    d_entitled = [min(d_demand[d], sum(guar[i] for i in m)) for d, m in enumerate(members)]
    extra = _waterfill(total - sum(d_entitled), [d_demand[d] - d_entitled[d] for d in range(len(members))], dw)
    out = [min(demand[i], guar[i]) for i in range(len(demand))]
    for d, m in enumerate(members):
        spare = d_entitled[d] + extra[d] - sum(out[i] for i in m)
        add = _waterfill(spare, [demand[i] - out[i] for i in m], [w[i] for i in m])
        for k, i in enumerate(m):
            out[i] += add[k]
    return out


def allocate(total_gpus: float, demand, guarantee, team_weight, division_of, division_weight) -> np.ndarray:
    """Targets for one tick: guarantees first, then the rest water-filled down the tree
    (across divisions by division weight, then inside each division by team weight)."""
    division_of = [int(d) for d in division_of]
    members = [[i for i, d in enumerate(division_of) if d == k] for k in range(len(division_weight))]
    return np.array(_allocate(float(total_gpus), [float(x) for x in demand], [float(x) for x in guarantee],
                              [float(x) for x in team_weight], members, [float(x) for x in division_weight]))


def expected_least_loss_fraction(victims: int, candidates: int) -> float:
    """Mean of the `victims` smallest of `candidates` uniform [0, 1) phases: (k + 1) / (2 (n + 1))."""
    if victims <= 0 or candidates <= 0:
        return 0.0
    k = min(victims, candidates)
    return (k + 1) / (2 * (candidates + 1))


# ---------------------------------------------------------------------------------------------
# The simulation.


@dataclass(frozen=True)
class FairShareResult:
    """Per-tick arrays are (ticks, teams), recorded after the tick's scheduling decisions."""

    team_names: tuple[str, ...]
    division_names: tuple[str, ...]
    division_of: np.ndarray  # (teams,)
    total_gpus: int
    tick_h: float
    shares: np.ndarray  # normalized
    guarantee: np.ndarray  # GPUs
    t_h: np.ndarray  # (ticks,) start of each tick
    alloc: np.ndarray  # GPUs held: running + saving, or the hold if larger
    busy: np.ndarray  # GPUs running jobs
    saving: np.ndarray  # GPUs of preempted jobs still writing their checkpoint (victim's team)
    incoming: np.ndarray  # the same GPUs, by the owner that gets them when the save completes
    target: np.ndarray  # water-filling target
    demand: np.ndarray  # max(running + queued, held), before scheduling
    queued: np.ndarray  # GPUs waiting, after scheduling
    factor: np.ndarray  # fair-share factor used this tick
    usage_gpu_h: np.ndarray  # decayed usage at the start of the tick
    preempted: np.ndarray  # GPUs preempted from each team this tick
    lost_no_warning_gpu_h: np.ndarray  # (ticks,) work since the last checkpoint of this tick's victims
    lost_signal_gpu_h: np.ndarray  # (ticks,) save time of this tick's victims
    lost_applied_gpu_h: float  # work really thrown away (0 with checkpoint on signal)
    slack_gpu_h: float
    # preemption events (one per owner claim that preempted)
    ev_tick: np.ndarray
    ev_owner: np.ndarray
    ev_victims: np.ndarray  # jobs preempted
    ev_gpus: np.ndarray
    ev_lost_checkpoint_gpu_h: np.ndarray  # least-work-lost victims on this state, no warning
    ev_lost_random_gpu_h: np.ndarray  # random victims on the same state, no warning (nan if none fit)
    ev_lost_signal_gpu_h: np.ndarray
    ev_victim_team: tuple[tuple[int, ...], ...]
    # jobs
    job_team: np.ndarray
    job_gpus: np.ndarray
    job_arrival_h: np.ndarray
    job_work_h: np.ndarray
    job_initial: np.ndarray  # running at t = 0 (no wait to measure)
    job_first_start_h: np.ndarray  # nan if never started
    job_finish_h: np.ndarray  # nan if not finished
    job_progress_h: np.ndarray  # at the end of the run
    job_preemptions: np.ndarray
    job_state: np.ndarray  # 0 not yet arrived, 1 queued, 2 running, 3 done
    victim_policy: str
    checkpoint_on_signal: bool

    # --- summaries ---------------------------------------------------------------------------

    @property
    def ticks(self) -> int:
        return len(self.t_h)

    @property
    def utilization(self) -> np.ndarray:
        """Allocated (held) GPUs over the cluster, per tick."""
        return self.alloc.sum(axis=1) / self.total_gpus

    @property
    def busy_utilization(self) -> np.ndarray:
        """GPUs running jobs over the cluster: what hoarding costs is the gap to `utilization`."""
        return self.busy.sum(axis=1) / self.total_gpus

    @property
    def oversubscribed(self) -> np.ndarray:
        """Ticks where demand (running + queued, or the hold) was at least the cluster."""
        return self.demand.sum(axis=1) >= self.total_gpus - _EPS

    @property
    def min_utilization_when_oversubscribed(self) -> float:
        m = self.oversubscribed
        return float(self.utilization[m].min()) if m.any() else float("nan")

    @property
    def borrowed(self) -> np.ndarray:
        return np.maximum(0.0, self.alloc - self.guarantee)

    @property
    def mean_alloc(self) -> np.ndarray:
        return self.alloc.mean(axis=0)

    @property
    def preemptions(self) -> int:
        return int(self.ev_victims.sum())

    @property
    def preempted_gpus_total(self) -> float:
        return float(self.preempted.sum())

    @property
    def lost_no_warning_total(self) -> float:
        return float(self.lost_no_warning_gpu_h.sum())

    @property
    def lost_signal_total(self) -> float:
        return float(self.lost_signal_gpu_h.sum())

    @property
    def hoard_idle_gpu_h(self) -> float:
        return float((self.alloc - self.busy - self.saving).sum() * self.tick_h)

    @property
    def wait_h(self) -> np.ndarray:
        """First-start wait of every job that arrived after t = 0 and has started."""
        m = ~self.job_initial & ~np.isnan(self.job_first_start_h)
        return self.job_first_start_h[m] - self.job_arrival_h[m]

    def waits_by_team(self) -> list[np.ndarray]:
        m = ~self.job_initial & ~np.isnan(self.job_first_start_h)
        w = self.job_first_start_h - self.job_arrival_h
        return [w[m & (self.job_team == i)] for i in range(len(self.team_names))]

    def tick_at(self, hours: float) -> int:
        return int(min(self.ticks - 1, max(0, math.ceil(hours / self.tick_h - 1e-9))))


def _decay(tick_h: float, half_life_h: float) -> float:
    if half_life_h <= 0:
        return 0.0
    if math.isinf(half_life_h):
        return 1.0
    return 2.0 ** (-tick_h / half_life_h)


@dataclass(frozen=True)
class Config:
    total_gpus: int
    teams: tuple[TeamSpec, ...]  # a list is accepted and kept as a tuple
    hours: float
    tick_h: float = 5 / 60
    half_life_h: float = 24.0
    guaranteed_fraction: float = 1.0
    save_h: float = 2 / 60
    victim_policy: VictimPolicy = "checkpoint"
    checkpoint_on_signal: bool = True
    charge_by_allocation: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "teams", tuple(self.teams))  # frozen and hashable, whatever was passed
        if self.total_gpus < 1 or not self.teams:
            raise ValueError("need at least one GPU and one team")
        if self.tick_h <= 0 or self.hours <= 0:
            raise ValueError("tick and horizon must be positive")
        if self.victim_policy not in ("checkpoint", "random"):
            raise ValueError(f"unknown victim policy {self.victim_policy!r}")


Result = FairShareResult


class _Cluster:
    """One run's state; each phase of a tick (the module docstring's numbered list) is a method.

    Per-job and per-team state lives in plain Python lists: indexing numpy scalars one at a time
    in the loop is several times slower."""

    def __init__(self, cfg: Config, seed: int) -> None:
        self.cfg = cfg
        teams, total_gpus, tick_h = cfg.teams, cfg.total_gpus, cfg.tick_h
        self.n = n = len(teams)
        self.names = tuple(t.name for t in teams)
        div_names: list[str] = []
        for t in teams:
            if t.division not in div_names:
                div_names.append(t.division)
        self.div_names = div_names
        self.div_of = div_of = np.array([div_names.index(t.division) for t in teams])
        self.n_div = n_div = len(div_names)
        shares = np.array([t.share for t in teams], dtype=float)
        if np.any(shares <= 0):
            raise ValueError("every team needs a positive share")
        self.shares = shares = shares / shares.sum()
        d_shares = np.bincount(div_of, weights=shares, minlength=n_div)
        self.guar = guar = total_gpus * cfg.guaranteed_fraction * shares
        self.guar_l = guar_l = guar.tolist()
        self.hold = hold = [min(float(t.hold_gpus), guar_l[i]) for i, t in enumerate(teams)]
        self.ckpt_of_team = [float(t.checkpoint_h) for t in teams]
        if min(self.ckpt_of_team) <= 0 or min(t.job_hours for t in teams) <= 0 or min(t.job_gpus for t in teams) < 1:
            raise ValueError("jobs need positive GPUs, duration and checkpoint interval")

        self.T = int(math.ceil(cfg.hours / tick_h - 1e-9))
        self.r = _decay(tick_h, cfg.half_life_h)
        root = np.random.default_rng(seed)
        arr_rng, self.victim_rng, self.cf_rng = root.spawn(3)
        self._draw_jobs(arr_rng)
        N = self.N
        start_gpus = [float(self.gpus_of[self.initial & (self.team_of == i)].sum()) for i in range(n)]
        if sum(max(start_gpus[i], hold[i]) for i in range(n)) > total_gpus + _EPS:
            raise ValueError("the jobs running at t = 0 and the holds do not fit in the cluster")

        self.t_team = self.team_of.tolist()
        self.t_gpus = self.gpus_of.tolist()
        self.t_work = self.work_h.tolist()
        self.t_ckpt = self.ckpt_of.tolist()
        self.t_psi = self.psi.tolist()
        self.t_arr_tick = self.arr_tick.tolist()
        self.p0 = [0.0] * N  # progress when the current run started (or when queued)
        self.saved0 = [0.0] * N  # checkpointed progress at that moment
        self.run_start = [0] * N
        self.run_id = [0] * N
        self.state = [0] * N
        self.first_start = [-1] * N
        self.finish_tick = [-1] * N
        self.n_pre = [0] * N

        save_h = cfg.save_h
        self.save_ticks = int(math.ceil(save_h / tick_h - 1e-9)) if cfg.checkpoint_on_signal and save_h > 0 else 0
        self.ready = [0] * N  # a preempted job cannot restart before its checkpoint is written
        self.saving = [0.0] * n  # GPUs of victims still writing their checkpoint, by victim team
        self.incoming = [0.0] * n  # the same GPUs, by the owner they will go to
        self.drains: list[tuple[int, int, float, int]] = []
        self.queues = [deque() for _ in range(n)]
        self.running_sets: list[set[int]] = [set() for _ in range(n)]
        self.running = [0.0] * n
        self.queued = [0.0] * n
        self.heap: list[tuple[int, int, int]] = []
        self.usage = [float(t.initial_usage_gpu_h) for t in teams]
        self.share_l = shares.tolist()
        self.d_share_l = d_shares.tolist()
        self.members = [[i for i in range(n) if div_of[i] == d] for d in range(n_div)]

        self.rec: dict[str, list[list[float]]] = {k: [] for k in (
            "alloc", "busy", "saving", "incoming", "target", "demand", "queued", "factor", "usage")}
        self.out_pre = np.zeros((self.T, n))
        self.out_lost_nw = np.zeros(self.T)
        self.out_lost_sig = np.zeros(self.T)
        self.ev: list[tuple] = []
        self.lost_applied = 0.0
        self.slack = 0.0

        # jobs running at t = 0: place them before the first tick
        self.ptr = 0
        while self.ptr < N and self.t_arr_tick[self.ptr] <= 0 and self.initial[self.ptr]:
            self._enqueue(self.ptr)
            self._start(self.ptr, 0)
            self.ptr += 1

    def _draw_jobs(self, arr_rng: np.random.Generator) -> None:
        """Every job of the run, drawn up front so a policy change never changes the arrivals."""
        teams, hours, tick_h = self.cfg.teams, self.cfg.hours, self.cfg.tick_h
        j_team, j_arr, j_work, j_init = [], [], [], []
        for i, t in enumerate(teams):
            n0 = int(math.floor(t.initial_running_gpus / t.job_gpus + 1e-9))
            nb = int(math.ceil(t.burst_gpus / t.job_gpus - 1e-9)) if t.burst_gpus > 0 else 0
            rate = t.offered_gpus / (t.job_gpus * t.job_hours)
            span = max(0.0, hours - t.start_h)
            npois = int(arr_rng.poisson(rate * span)) if rate > 0 and span > 0 else 0
            times = np.concatenate([np.zeros(n0), np.full(nb, float(t.start_h)),
                                    np.sort(t.start_h + arr_rng.uniform(0.0, span, npois))])
            j_team.append(np.full(times.size, i))
            j_arr.append(times)
            j_work.append(arr_rng.exponential(t.job_hours, times.size))
            j_init.append(np.arange(times.size) < n0)
        team_of = np.concatenate(j_team).astype(np.int64)
        arrival_h = np.concatenate(j_arr)
        work_h = np.maximum(np.concatenate(j_work), 1e-6)
        initial = np.concatenate(j_init)
        gpus_of = np.array([teams[i].job_gpus for i in team_of], dtype=np.int64)
        ckpt_of = np.array([self.ckpt_of_team[i] for i in team_of])
        psi = arr_rng.uniform(0.0, 1.0, team_of.size) * ckpt_of
        arr_tick = np.ceil(arrival_h / tick_h - 1e-9).astype(np.int64)
        # jobs running at t = 0 first, then by tick, team and arrival time
        order = np.lexsort((arrival_h, team_of, ~initial, arr_tick))
        self.team_of, self.arrival_h, self.work_h = team_of[order], arrival_h[order], work_h[order]
        self.initial, self.gpus_of, self.ckpt_of = initial[order], gpus_of[order], ckpt_of[order]
        self.psi, self.arr_tick = psi[order], arr_tick[order]
        self.N = team_of.size

    # --- small pieces the phases share -----------------------------------------------------

    def alloc_of(self, i: int) -> float:
        busy = self.running[i] + self.saving[i]
        return busy if busy > self.hold[i] else self.hold[i]

    def settled(self, i: int) -> float:
        """What a team will hold once its victims have finished saving."""
        return self.running[i] if self.running[i] > self.hold[i] else self.hold[i]

    def free_gpus(self) -> float:
        return self.cfg.total_gpus - sum(self.alloc_of(i) for i in range(self.n))

    def _enqueue(self, j: int) -> None:
        i = self.t_team[j]
        self.state[j] = _QUEUED
        self.queues[i].append(j)
        self.queued[i] += self.t_gpus[j]

    def _start(self, j: int, t: int) -> None:
        i = self.t_team[j]
        q = self.queues[i]
        if q[0] == j:
            q.popleft()
        else:
            q.remove(j)
        g = self.t_gpus[j]
        self.queued[i] -= g
        self.running[i] += g
        self.running_sets[i].add(j)
        self.state[j] = _RUNNING
        self.run_start[j] = t
        if self.first_start[j] < 0:
            self.first_start[j] = t
        ticks = max(1, math.ceil((self.t_work[j] - self.p0[j]) / self.cfg.tick_h - 1e-9))
        heapq.heappush(self.heap, (t + ticks, j, self.run_id[j]))

    def _finish(self, ft: int, j: int) -> None:
        """A job whose work ended at tick `ft`: it held its GPUs to the tick (the slack)."""
        self.slack += self.t_gpus[j] * ((ft - self.run_start[j]) * self.cfg.tick_h - (self.t_work[j] - self.p0[j]))
        self.p0[j] = self.t_work[j]
        self.state[j] = _DONE
        self.finish_tick[j] = ft

    def loss_now(self, j: int, t: int) -> tuple[float, float]:
        """(progress now, hours of work since the last checkpoint) of a running job."""
        p = self.p0[j] + (t - self.run_start[j]) * self.cfg.tick_h
        saved = p - ((p + self.t_psi[j]) % self.t_ckpt[j])
        if saved < self.saved0[j]:
            saved = self.saved0[j]
        return p, p - saved

    def pick(self, need: float, owner: int, t: int, how: str, rng) -> list[int] | None:
        """Victims freeing `need` GPUs for `owner`, none leaving its team below its guarantee."""
        running, hold, guar_l, t_gpus = self.running, self.hold, self.guar_l, self.t_gpus
        cands = [j for k in range(self.n) if k != owner and self.settled(k) > guar_l[k] + _EPS
                 for j in self.running_sets[k]]
        if not cands:
            return None
        cands.sort()  # sets iterate in hash order: sort so a seed always replays the same run
        if how == "checkpoint":
            cands.sort(key=lambda j: (self.loss_now(j, t)[1], j))
        else:
            cands = [cands[x] for x in rng.permutation(len(cands))]
        taken: list[int] = []
        lose = [0.0] * self.n
        freed = 0.0
        for j in cands:
            k = self.t_team[j]
            after = running[k] - lose[k] - t_gpus[j]
            if (after if after > hold[k] else hold[k]) < guar_l[k] - _EPS:
                continue
            lose[k] += t_gpus[j]
            taken.append(j)
            freed += t_gpus[j]
            if freed >= need - _EPS:
                return taken
        return None

    def preempt(self, victims: list[int], t: int, owner: int) -> tuple[float, float]:
        lost_nw = lost_sig = 0.0
        save_h = self.cfg.save_h
        for j in victims:
            k = self.t_team[j]
            p, lost = self.loss_now(j, t)
            g = self.t_gpus[j]
            lost_nw += g * lost
            lost_sig += g * save_h
            if self.cfg.checkpoint_on_signal:
                self.p0[j] = self.saved0[j] = p
            else:
                self.p0[j] = self.saved0[j] = p - lost
                self.lost_applied += g * lost
            self.running[k] -= g
            self.running_sets[k].discard(j)
            if self.save_ticks:
                # the victim keeps its GPUs while it writes the checkpoint; they are the owner's after
                self.saving[k] += g
                self.incoming[owner] += g
                heapq.heappush(self.drains, (t + self.save_ticks, k, g, owner))
                self.ready[j] = t + self.save_ticks
            self.queued[k] += g
            self.queues[k].appendleft(j)
            self.state[j] = _QUEUED
            self.run_id[j] += 1
            self.n_pre[j] += 1
            self.out_pre[t, k] += g
        return lost_nw, lost_sig

    # --- the phases of a tick --------------------------------------------------------------

    def complete(self, t: int) -> None:
        """1. Jobs whose work ended release their GPUs; finished checkpoint saves hand theirs over."""
        heap, drains = self.heap, self.drains
        while heap and heap[0][0] <= t:
            ft, j, rid = heapq.heappop(heap)
            if rid != self.run_id[j] or self.state[j] != _RUNNING:
                continue
            i = self.t_team[j]
            self._finish(ft, j)
            self.running[i] -= self.t_gpus[j]
            self.running_sets[i].discard(j)
        while drains and drains[0][0] <= t:
            _, k, g, owner = heapq.heappop(drains)
            self.saving[k] -= g
            self.incoming[owner] -= g

    def arrive(self, t: int) -> None:
        """2. Jobs submitted during the last tick join their team's queue."""
        while self.ptr < self.N and self.t_arr_tick[self.ptr] <= t:
            self._enqueue(self.ptr)
            self.ptr += 1

    def factors(self) -> tuple[list[float], list[float]]:
        """3. Fair-share factors of teams and divisions from the usage so far."""
        usage, share_l, n = self.usage, self.share_l, self.n
        total_u = sum(usage)
        if total_u > 0:
            f_l = [2.0 ** (-(usage[i] / total_u) / share_l[i]) for i in range(n)]
            fd_l = [2.0 ** (-(sum(usage[i] for i in m) / total_u) / self.d_share_l[d])
                    for d, m in enumerate(self.members)]
        else:
            f_l = [1.0] * n
            fd_l = [1.0] * self.n_div
        return f_l, fd_l

    def targets(self, f_l: list[float], fd_l: list[float]) -> tuple[list[float], list[float]]:
        """4. Demand, and the targets: guarantees first, then weighted max-min down the tree."""
        n = self.n
        # a hoarder's queued jobs start inside its hold, so the hold is a floor, not an addend
        demand = [max(self.running[i] + self.queued[i], self.hold[i]) for i in range(n)]
        target = _allocate(self.cfg.total_gpus, demand, self.guar_l, [self.share_l[i] * f_l[i] for i in range(n)],
                           self.members, [self.d_share_l[d] * fd_l[d] for d in range(self.n_div)])
        self.rec["demand"].append(demand)
        self.rec["target"].append(target)
        self.rec["factor"].append(f_l)
        self.rec["usage"].append(list(self.usage))
        return demand, target

    def enforce_guarantees(self, t: int, demand: list[float]) -> None:
        """5. A team below min(demand, guarantee) takes free GPUs, or preempts borrowers."""
        guar_l, hold, running, incoming, queues, t_gpus = (self.guar_l, self.hold, self.running, self.incoming,
                                                           self.queues, self.t_gpus)
        owners = [i for i in range(self.n)
                  if queues[i] and self.settled(i) + incoming[i] < min(demand[i], guar_l[i]) - _EPS]
        owners.sort(key=lambda i: (self.settled(i) + incoming[i] - min(demand[i], guar_l[i]), i))
        for i in owners:
            reserved = 0.0  # GPUs still being saved that earlier jobs of this owner will take
            planned = running[i]
            k = 0
            while k < len(queues[i]):
                j = queues[i][k]
                g = t_gpus[j]
                if self.ready[j] > t or max(planned + g, hold[i]) > guar_l[i] + _EPS:
                    break  # not startable yet, or past the guarantee: no right to preempt for it
                avail = self.free_gpus() + (hold[i] - running[i] if hold[i] > running[i] else 0.0)
                if avail >= g - _EPS:
                    self._start(j, t)
                    planned += g
                    continue
                spare = incoming[i] - reserved
                need = g - max(0.0, avail) - max(0.0, spare)
                if spare >= g - _EPS or need <= _EPS:
                    reserved += g  # starts when the victims' saves complete
                    planned += g
                    k += 1
                    continue
                if not self._claim(i, t, need):
                    break

    def _claim(self, owner: int, t: int, need: float) -> bool:
        """Preempt for one of the owner's jobs, and record what each victim choice would lose."""
        t_gpus = self.t_gpus
        by_ckpt = self.pick(need, owner, t, "checkpoint", None)
        by_rand = self.pick(need, owner, t, "random", self.cf_rng)
        chosen = by_ckpt if self.cfg.victim_policy == "checkpoint" else self.pick(need, owner, t, "random",
                                                                                  self.victim_rng)
        if chosen is None:
            return False
        lost_ck = sum(t_gpus[v] * self.loss_now(v, t)[1] for v in by_ckpt) if by_ckpt else math.nan
        lost_rd = sum(t_gpus[v] * self.loss_now(v, t)[1] for v in by_rand) if by_rand else math.nan
        victim_teams = tuple(self.t_team[v] for v in chosen)
        lnw, lsig = self.preempt(chosen, t, owner)
        self.out_lost_nw[t] += lnw
        self.out_lost_sig[t] += lsig
        self.ev.append((t, owner, len(chosen), float(sum(t_gpus[v] for v in chosen)), lost_ck, lost_rd, lsig,
                        victim_teams))
        return True

    def admit_and_backfill(self, t: int, target: list[float], f_l: list[float]) -> None:
        """6. Teams furthest below target start queued jobs up to it; then any free GPUs go to the
        queue head that fits, largest remaining deficit first (work conservation)."""
        queues, hold, running, t_gpus, ready = self.queues, self.hold, self.running, self.t_gpus, self.ready
        team_range = range(self.n)
        free = self.free_gpus()
        for i in sorted((i for i in team_range if queues[i]), key=lambda i: (self.alloc_of(i) - target[i], i)):
            while queues[i]:
                j = queues[i][0]
                g = t_gpus[j]
                idle_hold = hold[i] - running[i] if hold[i] > running[i] else 0.0
                if (ready[j] > t or max(running[i] + self.saving[i] + g, hold[i]) > target[i] + _EPS
                        or free + idle_hold < g - _EPS):
                    break
                self._start(j, t)
                free = self.free_gpus()
        while True:
            best, best_key = -1, None
            for i in team_range:
                if not queues[i] or ready[queues[i][0]] > t:
                    continue
                idle_hold = hold[i] - running[i] if hold[i] > running[i] else 0.0
                if free + idle_hold < t_gpus[queues[i][0]] - _EPS:
                    continue
                key = (target[i] - self.alloc_of(i), f_l[i], -i)
                if best_key is None or key > best_key:
                    best, best_key = i, key
            if best < 0:
                break
            self._start(queues[best][0], t)
            free = self.free_gpus()

    def record_and_charge(self) -> None:
        """7. Record the tick, then charge usage by allocation (or by use) and decay it."""
        team_range = range(self.n)
        alloc_now = [self.alloc_of(i) for i in team_range]
        rec = self.rec
        rec["alloc"].append(alloc_now)
        rec["busy"].append(list(self.running))
        rec["saving"].append(list(self.saving))
        rec["incoming"].append(list(self.incoming))
        rec["queued"].append(list(self.queued))
        charge = alloc_now if self.cfg.charge_by_allocation else self.running
        r, tick_h, usage = self.r, self.cfg.tick_h, self.usage
        self.usage = [usage[i] * r + charge[i] * tick_h for i in team_range]

    def result(self) -> FairShareResult:
        """Close the books after the last tick and package the run."""
        T, N, tick_h, cfg = self.T, self.N, self.cfg.tick_h, self.cfg
        # jobs whose last tick was the final one finished with it
        heap = self.heap
        while heap and heap[0][0] <= T:
            ft, j, rid = heapq.heappop(heap)
            if rid != self.run_id[j] or self.state[j] != _RUNNING:
                continue
            self._finish(ft, j)
            self.running_sets[self.t_team[j]].discard(j)
        p0, state, run_start = self.p0, self.state, self.run_start
        progress = np.array([p0[j] + ((T - run_start[j]) * tick_h if state[j] == _RUNNING else 0.0) for j in range(N)])

        n, ev = self.n, self.ev
        fs = np.array(self.first_start, dtype=float)
        ft_arr = np.array(self.finish_tick, dtype=float)
        per_tick = {k: np.array(v, dtype=float).reshape(T, n) for k, v in self.rec.items()}
        return FairShareResult(
            team_names=self.names,
            division_names=tuple(self.div_names),
            division_of=self.div_of,
            total_gpus=int(cfg.total_gpus),
            tick_h=float(tick_h),
            shares=self.shares,
            guarantee=self.guar,
            t_h=np.arange(T) * tick_h,
            alloc=per_tick["alloc"],
            busy=per_tick["busy"],
            saving=per_tick["saving"],
            incoming=per_tick["incoming"],
            target=per_tick["target"],
            demand=per_tick["demand"],
            queued=per_tick["queued"],
            factor=per_tick["factor"],
            usage_gpu_h=per_tick["usage"],
            preempted=self.out_pre,
            lost_no_warning_gpu_h=self.out_lost_nw,
            lost_signal_gpu_h=self.out_lost_sig,
            lost_applied_gpu_h=self.lost_applied,
            slack_gpu_h=self.slack,
            ev_tick=np.array([e[0] for e in ev], dtype=np.int64),
            ev_owner=np.array([e[1] for e in ev], dtype=np.int64),
            ev_victims=np.array([e[2] for e in ev], dtype=np.int64),
            ev_gpus=np.array([e[3] for e in ev], dtype=float),
            ev_lost_checkpoint_gpu_h=np.array([e[4] for e in ev], dtype=float),
            ev_lost_random_gpu_h=np.array([e[5] for e in ev], dtype=float),
            ev_lost_signal_gpu_h=np.array([e[6] for e in ev], dtype=float),
            ev_victim_team=tuple(e[7] for e in ev),
            job_team=self.team_of,
            job_gpus=self.gpus_of,
            job_arrival_h=self.arrival_h,
            job_work_h=self.work_h,
            job_initial=self.initial,
            job_first_start_h=np.where(fs >= 0, fs * tick_h, np.nan),
            job_finish_h=np.where(ft_arr >= 0, ft_arr * tick_h, np.nan),
            job_progress_h=progress,
            job_preemptions=np.array(self.n_pre, dtype=np.int64),
            job_state=np.array(state, dtype=np.int64),
            victim_policy=cfg.victim_policy,
            checkpoint_on_signal=bool(cfg.checkpoint_on_signal),
        )


def run(cfg: Config, seed: int = 0) -> FairShareResult:
    c = _Cluster(cfg, seed)
    for t in range(c.T):
        c.complete(t)
        c.arrive(t)
        f_l, fd_l = c.factors()
        demand, target = c.targets(f_l, fd_l)
        c.enforce_guarantees(t, demand)
        c.admit_and_backfill(t, target, f_l)
        c.record_and_charge()
    return c.result()
