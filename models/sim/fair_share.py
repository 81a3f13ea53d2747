"""A shared research cluster: a quota tree, a decayed fair-share factor, lending and preemption.

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


def run(
    total_gpus: int,
    teams: Sequence[TeamSpec],
    *,
    hours: float,
    tick_h: float = 5 / 60,
    half_life_h: float = 24.0,
    guaranteed_fraction: float = 1.0,
    save_h: float = 2 / 60,
    victim_policy: VictimPolicy = "checkpoint",
    checkpoint_on_signal: bool = True,
    charge_by_allocation: bool = True,
    seed: int = 0,
) -> FairShareResult:
    if total_gpus < 1 or not teams:
        raise ValueError("need at least one GPU and one team")
    if tick_h <= 0 or hours <= 0:
        raise ValueError("tick and horizon must be positive")
    if victim_policy not in ("checkpoint", "random"):
        raise ValueError(f"unknown victim policy {victim_policy!r}")
    n = len(teams)
    names = tuple(t.name for t in teams)
    div_names: list[str] = []
    for t in teams:
        if t.division not in div_names:
            div_names.append(t.division)
    div_of = np.array([div_names.index(t.division) for t in teams])
    n_div = len(div_names)
    shares = np.array([t.share for t in teams], dtype=float)
    if np.any(shares <= 0):
        raise ValueError("every team needs a positive share")
    shares = shares / shares.sum()
    d_shares = np.bincount(div_of, weights=shares, minlength=n_div)
    guar = total_gpus * guaranteed_fraction * shares
    guar_l = guar.tolist()
    hold = [min(float(t.hold_gpus), guar_l[i]) for i, t in enumerate(teams)]
    ckpt_of_team = [float(t.checkpoint_h) for t in teams]
    if min(ckpt_of_team) <= 0 or min(t.job_hours for t in teams) <= 0 or min(t.job_gpus for t in teams) < 1:
        raise ValueError("jobs need positive GPUs, duration and checkpoint interval")

    T = int(math.ceil(hours / tick_h - 1e-9))
    r = _decay(tick_h, half_life_h)
    root = np.random.default_rng(seed)
    arr_rng, victim_rng, cf_rng = root.spawn(3)

    # --- jobs, drawn up front so a policy change never changes the arrivals -----------------
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
    ckpt_of = np.array([ckpt_of_team[i] for i in team_of])
    psi = arr_rng.uniform(0.0, 1.0, team_of.size) * ckpt_of
    arr_tick = np.ceil(arrival_h / tick_h - 1e-9).astype(np.int64)
    # jobs running at t = 0 first, then by tick, team and arrival time
    order = np.lexsort((arrival_h, team_of, ~initial, arr_tick))
    team_of, arrival_h, work_h, initial = team_of[order], arrival_h[order], work_h[order], initial[order]
    gpus_of, ckpt_of, psi, arr_tick = gpus_of[order], ckpt_of[order], psi[order], arr_tick[order]
    N = team_of.size
    start_gpus = [float(gpus_of[initial & (team_of == i)].sum()) for i in range(n)]
    if sum(max(start_gpus[i], hold[i]) for i in range(n)) > total_gpus + _EPS:
        raise ValueError("the jobs running at t = 0 and the holds do not fit in the cluster")

    # plain Python lists in the loop: indexing numpy scalars one at a time is several times slower
    t_team = team_of.tolist()
    t_gpus = gpus_of.tolist()
    t_work = work_h.tolist()
    t_ckpt = ckpt_of.tolist()
    t_psi = psi.tolist()
    t_arr_tick = arr_tick.tolist()
    p0 = [0.0] * N  # progress when the current run started (or when queued)
    saved0 = [0.0] * N  # checkpointed progress at that moment
    run_start = [0] * N
    run_id = [0] * N
    state = [0] * N
    first_start = [-1] * N
    finish_tick = [-1] * N
    n_pre = [0] * N

    save_ticks = int(math.ceil(save_h / tick_h - 1e-9)) if checkpoint_on_signal and save_h > 0 else 0
    ready = [0] * N  # a preempted job cannot restart before its checkpoint is written
    saving = [0.0] * n  # GPUs of victims still writing their checkpoint, by victim team
    incoming = [0.0] * n  # the same GPUs, by the owner they will go to
    drains: list[tuple[int, int, float, int]] = []
    queues = [deque() for _ in range(n)]
    running_sets: list[set[int]] = [set() for _ in range(n)]
    running = [0.0] * n
    queued = [0.0] * n
    heap: list[tuple[int, int, int]] = []
    usage = [float(t.initial_usage_gpu_h) for t in teams]
    share_l = shares.tolist()
    d_share_l = d_shares.tolist()
    members = [[i for i in range(n) if div_of[i] == d] for d in range(n_div)]

    rec_alloc: list[list[float]] = []
    rec_busy: list[list[float]] = []
    rec_saving: list[list[float]] = []
    rec_incoming: list[list[float]] = []
    rec_target: list[list[float]] = []
    rec_demand: list[list[float]] = []
    rec_queued: list[list[float]] = []
    rec_factor: list[list[float]] = []
    rec_usage: list[list[float]] = []
    out_pre = np.zeros((T, n))
    out_lost_nw = np.zeros(T)
    out_lost_sig = np.zeros(T)
    ev: list[tuple] = []
    lost_applied = 0.0
    slack = 0.0

    def alloc_of(i: int) -> float:
        busy = running[i] + saving[i]
        return busy if busy > hold[i] else hold[i]

    def settled(i: int) -> float:
        """What a team will hold once its victims have finished saving."""
        return running[i] if running[i] > hold[i] else hold[i]

    def free_gpus() -> float:
        return total_gpus - sum(alloc_of(i) for i in range(n))

    def start(j: int, t: int) -> None:
        i = t_team[j]
        if queues[i][0] == j:
            queues[i].popleft()
        else:
            queues[i].remove(j)
        queued[i] -= t_gpus[j]
        running[i] += t_gpus[j]
        running_sets[i].add(j)
        state[j] = _RUNNING
        run_start[j] = t
        if first_start[j] < 0:
            first_start[j] = t
        ticks = max(1, math.ceil((t_work[j] - p0[j]) / tick_h - 1e-9))
        heapq.heappush(heap, (t + ticks, j, run_id[j]))

    def loss_now(j: int, t: int) -> tuple[float, float]:
        """(progress now, hours of work since the last checkpoint) of a running job."""
        p = p0[j] + (t - run_start[j]) * tick_h
        saved = p - ((p + t_psi[j]) % t_ckpt[j])
        if saved < saved0[j]:
            saved = saved0[j]
        return p, p - saved

    def pick(need: float, owner: int, t: int, how: str, rng) -> list[int] | None:
        cands = [j for k in range(n) if k != owner and settled(k) > guar_l[k] + _EPS for j in running_sets[k]]
        if not cands:
            return None
        cands.sort()  # sets iterate in hash order: sort so a seed always replays the same run
        if how == "checkpoint":
            cands.sort(key=lambda j: (loss_now(j, t)[1], j))
        else:
            cands = [cands[x] for x in rng.permutation(len(cands))]
        taken: list[int] = []
        lose = [0.0] * n
        freed = 0.0
        for j in cands:
            k = t_team[j]
            after = running[k] - lose[k] - t_gpus[j]
            if (after if after > hold[k] else hold[k]) < guar_l[k] - _EPS:
                continue
            lose[k] += t_gpus[j]
            taken.append(j)
            freed += t_gpus[j]
            if freed >= need - _EPS:
                return taken
        return None

    def preempt(victims: list[int], t: int, owner: int) -> tuple[float, float]:
        nonlocal lost_applied
        lost_nw = lost_sig = 0.0
        for j in victims:
            k = t_team[j]
            p, lost = loss_now(j, t)
            g = t_gpus[j]
            lost_nw += g * lost
            lost_sig += g * save_h
            if checkpoint_on_signal:
                p0[j] = saved0[j] = p
            else:
                p0[j] = saved0[j] = p - lost
                lost_applied += g * lost
            running[k] -= g
            running_sets[k].discard(j)
            if save_ticks:
                # the victim keeps its GPUs while it writes the checkpoint; they are the owner's after
                saving[k] += g
                incoming[owner] += g
                heapq.heappush(drains, (t + save_ticks, k, g, owner))
                ready[j] = t + save_ticks
            queued[k] += g
            queues[k].appendleft(j)
            state[j] = _QUEUED
            run_id[j] += 1
            n_pre[j] += 1
            out_pre[t, k] += g
        return lost_nw, lost_sig

    # jobs running at t = 0: place them before the first tick
    ptr = 0
    while ptr < N and t_arr_tick[ptr] <= 0 and initial[ptr]:
        i = t_team[ptr]
        state[ptr] = _QUEUED
        queues[i].append(ptr)
        queued[i] += t_gpus[ptr]
        start(ptr, 0)
        ptr += 1

    team_range = range(n)
    for t in range(T):
        # 1. completions
        while heap and heap[0][0] <= t:
            ft, j, rid = heapq.heappop(heap)
            if rid != run_id[j] or state[j] != _RUNNING:
                continue
            i = t_team[j]
            slack += t_gpus[j] * ((ft - run_start[j]) * tick_h - (t_work[j] - p0[j]))
            p0[j] = t_work[j]
            state[j] = _DONE
            finish_tick[j] = ft
            running[i] -= t_gpus[j]
            running_sets[i].discard(j)
        while drains and drains[0][0] <= t:
            _, k, g, owner = heapq.heappop(drains)
            saving[k] -= g
            incoming[owner] -= g
        # 2. arrivals
        while ptr < N and t_arr_tick[ptr] <= t:
            i = t_team[ptr]
            state[ptr] = _QUEUED
            queues[i].append(ptr)
            queued[i] += t_gpus[ptr]
            ptr += 1
        # 3. fair-share factors from the usage so far
        total_u = sum(usage)
        if total_u > 0:
            f_l = [2.0 ** (-(usage[i] / total_u) / share_l[i]) for i in team_range]
            fd_l = [2.0 ** (-(sum(usage[i] for i in m) / total_u) / d_share_l[d]) for d, m in enumerate(members)]
        else:
            f_l = [1.0] * n
            fd_l = [1.0] * n_div
        # 4. targets
        # a hoarder's queued jobs start inside its hold, so the hold is a floor, not an addend
        demand = [max(running[i] + queued[i], hold[i]) for i in team_range]
        target = _allocate(total_gpus, demand, guar_l, [share_l[i] * f_l[i] for i in team_range], members,
                           [d_share_l[d] * fd_l[d] for d in range(n_div)])
        rec_demand.append(demand)
        rec_target.append(target)
        rec_factor.append(f_l)
        rec_usage.append(list(usage))
        # 5. guarantees, by preemption where needed
        owners = [i for i in team_range
                  if queues[i] and settled(i) + incoming[i] < min(demand[i], guar_l[i]) - _EPS]
        owners.sort(key=lambda i: (settled(i) + incoming[i] - min(demand[i], guar_l[i]), i))
        for i in owners:
            reserved = 0.0  # GPUs still being saved that earlier jobs of this owner will take
            planned = running[i]
            k = 0
            while k < len(queues[i]):
                j = queues[i][k]
                g = t_gpus[j]
                if ready[j] > t or max(planned + g, hold[i]) > guar_l[i] + _EPS:
                    break  # not startable yet, or past the guarantee: no right to preempt for it
                avail = free_gpus() + (hold[i] - running[i] if hold[i] > running[i] else 0.0)
                if avail >= g - _EPS:
                    start(j, t)
                    planned += g
                    continue
                spare = incoming[i] - reserved
                need = g - max(0.0, avail) - max(0.0, spare)
                if spare >= g - _EPS or need <= _EPS:
                    reserved += g  # starts when the victims' saves complete
                    planned += g
                    k += 1
                    continue
                by_ckpt = pick(need, i, t, "checkpoint", None)
                by_rand = pick(need, i, t, "random", cf_rng)
                chosen = by_ckpt if victim_policy == "checkpoint" else pick(need, i, t, "random", victim_rng)
                if chosen is None:
                    break
                lost_ck = sum(t_gpus[v] * loss_now(v, t)[1] for v in by_ckpt) if by_ckpt else math.nan
                lost_rd = sum(t_gpus[v] * loss_now(v, t)[1] for v in by_rand) if by_rand else math.nan
                victim_teams = tuple(t_team[v] for v in chosen)
                lnw, lsig = preempt(chosen, t, i)
                out_lost_nw[t] += lnw
                out_lost_sig[t] += lsig
                ev.append((t, i, len(chosen), float(sum(t_gpus[v] for v in chosen)), lost_ck, lost_rd, lsig,
                           victim_teams))
        # 6. admission up to the targets, then backfill whatever is still free
        free = free_gpus()
        for i in sorted((i for i in team_range if queues[i]), key=lambda i: (alloc_of(i) - target[i], i)):
            while queues[i]:
                j = queues[i][0]
                g = t_gpus[j]
                idle_hold = hold[i] - running[i] if hold[i] > running[i] else 0.0
                if (ready[j] > t or max(running[i] + saving[i] + g, hold[i]) > target[i] + _EPS
                        or free + idle_hold < g - _EPS):
                    break
                start(j, t)
                free = free_gpus()
        while True:
            best, best_key = -1, None
            for i in team_range:
                if not queues[i] or ready[queues[i][0]] > t:
                    continue
                idle_hold = hold[i] - running[i] if hold[i] > running[i] else 0.0
                if free + idle_hold < t_gpus[queues[i][0]] - _EPS:
                    continue
                key = (target[i] - alloc_of(i), f_l[i], -i)
                if best_key is None or key > best_key:
                    best, best_key = i, key
            if best < 0:
                break
            start(queues[best][0], t)
            free = free_gpus()
        # 7. record and charge
        alloc_now = [alloc_of(i) for i in team_range]
        rec_alloc.append(alloc_now)
        rec_busy.append(list(running))
        rec_saving.append(list(saving))
        rec_incoming.append(list(incoming))
        rec_queued.append(list(queued))
        charge = alloc_now if charge_by_allocation else running
        usage = [usage[i] * r + charge[i] * tick_h for i in team_range]

    # jobs whose last tick was the final one finished with it
    while heap and heap[0][0] <= T:
        ft, j, rid = heapq.heappop(heap)
        if rid != run_id[j] or state[j] != _RUNNING:
            continue
        slack += t_gpus[j] * ((ft - run_start[j]) * tick_h - (t_work[j] - p0[j]))
        p0[j] = t_work[j]
        state[j] = _DONE
        finish_tick[j] = ft
        running_sets[t_team[j]].discard(j)
    progress = np.array([p0[j] + ((T - run_start[j]) * tick_h if state[j] == _RUNNING else 0.0) for j in range(N)])

    fs = np.array(first_start, dtype=float)
    ft_arr = np.array(finish_tick, dtype=float)
    return FairShareResult(
        team_names=names,
        division_names=tuple(div_names),
        division_of=div_of,
        total_gpus=int(total_gpus),
        tick_h=float(tick_h),
        shares=shares,
        guarantee=guar,
        t_h=np.arange(T) * tick_h,
        alloc=np.array(rec_alloc, dtype=float).reshape(T, n),
        busy=np.array(rec_busy, dtype=float).reshape(T, n),
        saving=np.array(rec_saving, dtype=float).reshape(T, n),
        incoming=np.array(rec_incoming, dtype=float).reshape(T, n),
        target=np.array(rec_target, dtype=float).reshape(T, n),
        demand=np.array(rec_demand, dtype=float).reshape(T, n),
        queued=np.array(rec_queued, dtype=float).reshape(T, n),
        factor=np.array(rec_factor, dtype=float).reshape(T, n),
        usage_gpu_h=np.array(rec_usage, dtype=float).reshape(T, n),
        preempted=out_pre,
        lost_no_warning_gpu_h=out_lost_nw,
        lost_signal_gpu_h=out_lost_sig,
        lost_applied_gpu_h=lost_applied,
        slack_gpu_h=slack,
        ev_tick=np.array([e[0] for e in ev], dtype=np.int64),
        ev_owner=np.array([e[1] for e in ev], dtype=np.int64),
        ev_victims=np.array([e[2] for e in ev], dtype=np.int64),
        ev_gpus=np.array([e[3] for e in ev], dtype=float),
        ev_lost_checkpoint_gpu_h=np.array([e[4] for e in ev], dtype=float),
        ev_lost_random_gpu_h=np.array([e[5] for e in ev], dtype=float),
        ev_lost_signal_gpu_h=np.array([e[6] for e in ev], dtype=float),
        ev_victim_team=tuple(e[7] for e in ev),
        job_team=team_of,
        job_gpus=gpus_of,
        job_arrival_h=arrival_h,
        job_work_h=work_h,
        job_initial=initial,
        job_first_start_h=np.where(fs >= 0, fs * tick_h, np.nan),
        job_finish_h=np.where(ft_arr >= 0, ft_arr * tick_h, np.nan),
        job_progress_h=progress,
        job_preemptions=np.array(n_pre, dtype=np.int64),
        job_state=np.array(state, dtype=np.int64),
        victim_policy=victim_policy,
        checkpoint_on_signal=bool(checkpoint_on_signal),
    )
