"""A chunked peer-to-peer swarm: one source, `hosts` peers, rarest-first from announced holdings.

Entry point, as in every module of models/sim: `run(Config, seed) -> Result` (a SwarmResult).

Time is discrete, one step = the time to move one chunk over a full-speed link. Every step:

1. Each live peer earns upload and download credit at its speed (1 chunk/step, or `slow_speed`
   for a slow peer on both directions; fractional credit accumulates and is capped at one
   chunk so an idle peer cannot bank bandwidth). The source uploads 1 chunk/step and never fails.
2. Uploaders (the source and live peers holding something, with credit) are paired with
   downloaders (live peers missing something, with credit): a pair is useful only if the
   uploader holds a chunk the downloader lacks. Random one-to-one proposals pair most of them;
   a short augmenting-path repair then lets a leftover downloader take over an uploader whose
   partner can switch to an idle one. That repair stands in for what a real peer gets from
   keeping several connections open; without it a small swarm wastes a download slot on many
   steps and the waste grows with the number of chunks. Each downloader receives at most one
   chunk per step and each uploader sends at most one.
3. For each kept pair the uploader sends the rarest chunk it has and the receiver lacks, rarity
   being the number of live peers that announce holding it at the start of the step (random
   tie-break). Nobody decides centrally who sends what: each pair acts on announced holdings,
   so two pairs can fetch the same rare chunk in the same step, as in a real swarm.
4. A chunk that lands this step can be forwarded from the next step on.

Failed peers die at a uniformly random step in the first half of the expected run; the
transfers they were sending or receiving that step are lost (`lost_transfers`) and they are
excluded from "done". Conservation, checked by the tests:

    transfers == sum of final holdings of all peers (survivors: every chunk; failed: partial)
    source_uploads + peer_uploads == transfers + lost_transfers

Pure numpy, seeded with `numpy.random.default_rng(seed)`; no global random state.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

_EPS = 1e-9  # float credit: 4 x 0.25 is exact, 10 x 0.1 is not
_ROUNDS = 4  # random matching rounds per step; later rounds only retry the useless pairs
_MAX_VISITS = 24  # downloaders examined per augmenting-path search
_STEP_VISITS = 96  # and over all searches of one step: bounds the cost of a step


@dataclass(frozen=True)
class SwarmResult:
    """Arrays and summary figures of one run, in chunk-steps (the caller knows the seconds)."""

    hosts: int
    chunks: int
    finished: bool
    finish_steps: int  # steps until every surviving peer holds every chunk
    lower_bound_steps: int  # no surviving peer can download faster than its link allows
    completed_per_step: np.ndarray  # surviving peers done by the end of each step (index 0 = step 1)
    uplink_utilization: np.ndarray  # per step: uploads / uplinks able to send (source + live peers)
    done_step: np.ndarray  # per peer: step it held every chunk, -1 if never (failed peers)
    held_final: np.ndarray  # per peer: chunks held at the end (or at death)
    have_final: np.ndarray  # (peers, chunks) bool: who holds what at the end (or at death)
    slow_mask: np.ndarray  # per peer
    failed_mask: np.ndarray  # per peer
    fail_step: np.ndarray  # per peer: step of death, -1 for survivors
    source_uploads: int
    peer_uploads: int
    transfers: int  # chunks that landed
    lost_transfers: int  # chunks in flight to or from a peer that died that step
    failed_peers: int
    slow_peers: int
    survivors: int

    @property
    def overhead_steps(self) -> int:
        """Steps beyond the download bound: the pipeline fill plus matching losses."""
        return self.finish_steps - self.lower_bound_steps

    @property
    def mean_utilization(self) -> float:
        return float(self.uplink_utilization.mean()) if self.uplink_utilization.size else 0.0

    @property
    def source_share(self) -> float:
        """Fraction of all uploads that came from the source (the rest came from peers)."""
        total = self.source_uploads + self.peer_uploads
        return self.source_uploads / total if total else 0.0


def fill_rounds(hosts: int) -> int:
    """ceil(log2(hosts + 1)) in integers: doublings for the source plus peers to reach everyone."""
    return int(hosts).bit_length()


def _useful(bits_u: np.ndarray, bits_d: np.ndarray) -> np.ndarray:
    """Row-wise: does the uploader hold a chunk the downloader lacks? (bit-packed holdings)"""
    return (bits_u & ~bits_d).any(axis=-1)


def _match(bits: np.ndarray, U: np.ndarray, D: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Pair uploaders with downloaders; a pair is useful if the uploader holds a chunk the
    downloader lacks. Each side is used at most once. Returns (uploaders, downloaders).

    Random one-to-one proposals do most of the work; the few downloaders left over then look
    for a short augmenting path (take an uploader from a matched downloader that has another
    option). Without the repair, small swarms lose a download slot on many steps and the loss
    grows with the number of chunks, which no real swarm with several connections per peer does.
    """
    n_rows = bits.shape[0]
    partner_of_u = np.full(n_rows, -1, dtype=np.int64)
    partner_of_d = np.full(n_rows, -1, dtype=np.int64)
    free_u, open_d = U, D
    for _ in range(_ROUNDS):
        if open_d.size == 0 or free_u.size == 0:
            break
        free_u = rng.permutation(free_u)
        if open_d.size > free_u.size:
            open_d = rng.permutation(open_d)
        m = min(open_d.size, free_u.size)
        u, d = free_u[:m], open_d[:m]
        ok = _useful(bits[u], bits[d])
        partner_of_u[u[ok]] = d[ok]
        partner_of_d[d[ok]] = u[ok]
        free_u = np.concatenate((u[~ok], free_u[m:]))
        open_d = np.concatenate((d[~ok], open_d[m:]))

    if open_d.size and free_u.size:
        # An augmenting path must end at a free uploader that is useful to someone.
        held_by_all = np.bitwise_and.reduce(bits[D], axis=0)
        if _useful(bits[free_u], held_by_all).any():
            _augment(bits, U, open_d, partner_of_u, partner_of_d)
    rd = np.flatnonzero(partner_of_d >= 0)
    return partner_of_d[rd], rd


def _augment(bits, U, open_d, partner_of_u, partner_of_d) -> None:
    """Breadth-first search for alternating paths, downloader -> useful uploader -> that
    uploader's partner -> ..., ending at a free uploader; flipping a path adds one pair."""
    bits_u = bits[U]
    n_rows = bits.shape[0]
    budget = _STEP_VISITS
    # Holdings do not change within a step, so which uploaders can serve a downloader does not
    # either: the searches from different roots keep meeting the same downloaders (about 67
    # visits per step at 400 peers, far fewer distinct ones), so each is computed once.
    useful_to: dict[int, np.ndarray] = {}
    for root in open_d.tolist():
        parent = np.full(n_rows, -1, dtype=np.int64)  # uploader -> downloader that reached it
        frontier = [root]
        found = -1
        visits = 0
        while frontier and found < 0 and visits < _MAX_VISITS and budget > 0:
            nxt: list[int] = []
            for x in frontier:
                visits += 1
                budget -= 1
                useful = useful_to.get(x)
                if useful is None:
                    useful = useful_to[x] = U[_useful(bits_u, bits[x])]
                new = useful[parent[useful] < 0]
                parent[new] = x
                free = new[partner_of_u[new] < 0]
                if free.size:
                    found = int(free[0])
                    break
                nxt.extend(partner_of_u[new].tolist())
                if visits >= _MAX_VISITS or budget <= 0:
                    break
            frontier = nxt
        u = found
        while u >= 0:  # flip the path: each downloader on it takes the uploader found for it
            x = int(parent[u])
            previous = int(partner_of_d[x])
            partner_of_u[u] = x
            partner_of_d[x] = u
            u = previous
        if budget <= 0:
            return


@dataclass(frozen=True)
class Config:
    hosts: int
    chunks: int
    slow_fraction: float = 0.0
    slow_speed: float = 0.25  # a slow peer's link, as a fraction of full speed (both directions)
    failed_fraction: float = 0.0
    max_steps: int | None = None  # None: far beyond any run that makes progress

    def __post_init__(self) -> None:
        if self.hosts < 1 or self.chunks < 1:
            raise ValueError("a swarm needs at least one peer and one chunk")
        if not (0 < self.slow_speed <= 1):
            raise ValueError("slow_speed is a fraction of link speed in (0, 1]")
        if not (0 <= self.slow_fraction <= 1 and 0 <= self.failed_fraction < 1):
            raise ValueError("slow_fraction and failed_fraction are fractions of the peers")


Result = SwarmResult


def run(cfg: Config, seed: int = 0) -> SwarmResult:
    rng = np.random.default_rng(seed)
    N, C = int(cfg.hosts), int(cfg.chunks)
    slow_fraction, slow_speed, failed_fraction = cfg.slow_fraction, cfg.slow_speed, cfg.failed_fraction
    max_steps = cfg.max_steps
    SRC = N  # row N of `have` is the source, which holds everything

    # Who is slow and who fails: disjoint random sets, at least one survivor.
    n_fail = min(int(round(failed_fraction * N)), N - 1)
    n_slow = min(int(round(slow_fraction * N)), N - n_fail)
    order = rng.permutation(N)
    failed_mask = np.zeros(N, dtype=bool)
    failed_mask[order[:n_fail]] = True
    slow_mask = np.zeros(N, dtype=bool)
    slow_mask[order[n_fail : n_fail + n_slow]] = True
    speed = np.where(slow_mask, float(slow_speed), 1.0)

    survivor_speed = speed[~failed_mask].min()
    lower_bound = int(math.ceil(C / survivor_speed - _EPS))
    expected = lower_bound + fill_rounds(N)
    fail_step = np.full(N, -1, dtype=np.int64)
    fail_step[failed_mask] = rng.integers(1, max(1, expected // 2) + 1, size=n_fail)
    if max_steps is None:
        max_steps = 20 * (expected + N) + 100

    have = np.zeros((N + 1, C), dtype=bool)
    have[SRC] = True
    # The same holdings packed 64 chunks to a word: the matching tests "has something the
    # other lacks" thousands of times per run, on rows a few words long instead of C bytes.
    W = (C + 63) // 64
    bits = np.zeros((N + 1, W), dtype=np.uint64)
    bits[SRC] = np.packbits(np.ones(W * 64, dtype=bool), bitorder="little").view(np.uint64)
    if C % 64:
        bits[SRC, -1] = np.uint64((1 << (C % 64)) - 1)
    ONE = np.uint64(1)
    held = np.zeros(N, dtype=np.int64)
    counts = np.zeros(C, dtype=np.int64)  # live peers announcing each chunk
    alive = np.ones(N, dtype=bool)
    up_credit = np.zeros(N)
    down_credit = np.zeros(N)
    done_step = np.full(N, -1, dtype=np.int64)
    survivors = ~failed_mask
    n_survivors = int(survivors.sum())

    completed: list[int] = []
    utilization: list[float] = []
    source_uploads = peer_uploads = transfers = lost = 0
    t = 0
    finished = False

    while t < max_steps:
        t += 1
        np.minimum(up_credit + speed, 1.0, out=up_credit)
        np.minimum(down_credit + speed, 1.0, out=down_credit)

        want = alive & (held < C) & (down_credit >= 1 - _EPS)
        can_send = alive & (up_credit >= 1 - _EPS)
        give = can_send & (held > 0)
        D = np.flatnonzero(want)
        U = np.append(np.flatnonzero(give), SRC)

        su, rd = _match(bits, U, D, rng)
        # Rarest first among the chunks the uploader has and the downloader lacks, by the
        # counts peers announced at the start of the step; noise (< 1) breaks ties at random.
        if su.size:
            eligible = have[su] > have[rd]  # bool > bool: the uploader has it, the downloader lacks it
            assert eligible.any(axis=1).all(), "matched a pair with nothing to send"
            # Key = count x 2^16 + 16 random bits: the lowest count wins, ties at random. Integer
            # noise is a third of the cost of a float per (pair, chunk), the bulk of a step.
            key = (counts << 16) + rng.integers(0, 1 << 16, eligible.shape, dtype=np.uint16)
            np.putmask(key, ~eligible, np.iinfo(np.int64).max)
            pc = key.argmin(axis=1)
        else:
            pc = np.zeros(0, dtype=np.int64)

        from_src = su == SRC
        n_src = int(from_src.sum())
        source_uploads += n_src
        peer_uploads += su.size - n_src
        peer_senders = su[~from_src]
        up_credit[peer_senders] -= 1
        down_credit[rd] -= 1
        # Capacity this step: the source plus every live peer whose uplink could send a chunk
        # now (a slow peer counts on the steps its credit allows), holding data or not.
        utilization.append(su.size / (1 + int(can_send.sum())))

        dying = np.flatnonzero(fail_step == t)
        if dying.size:
            dead_now = np.zeros(N + 1, dtype=bool)
            dead_now[dying] = True
            lost_pair = dead_now[su] | dead_now[rd]
            lost += int(lost_pair.sum())
            su, rd, pc = su[~lost_pair], rd[~lost_pair], pc[~lost_pair]

        have[rd, pc] = True
        bits[rd, pc >> 6] |= ONE << (pc & 63).astype(np.uint64)  # rd is unique within a step
        held[rd] += 1
        transfers += rd.size
        counts += np.bincount(pc, minlength=C)

        if dying.size:
            alive[dying] = False
            counts -= have[dying].sum(axis=0)

        newly_done = (held == C) & (done_step < 0) & alive
        done_step[newly_done] = t
        n_done = int(((done_step > 0) & survivors).sum())
        completed.append(n_done)
        if n_done == n_survivors:
            finished = True
            break

    # Peers scheduled to fail after the finish still count as failed (excluded from done).
    done_step[failed_mask] = -1
    return SwarmResult(
        hosts=N,
        chunks=C,
        finished=finished,
        finish_steps=t if finished else -1,
        lower_bound_steps=lower_bound,
        completed_per_step=np.asarray(completed, dtype=np.int64),
        uplink_utilization=np.asarray(utilization, dtype=np.float64),
        done_step=done_step,
        held_final=held.copy(),
        have_final=have[:N].copy(),
        slow_mask=slow_mask,
        failed_mask=failed_mask,
        fail_step=fail_step,
        source_uploads=source_uploads,
        peer_uploads=peer_uploads,
        transfers=transfers,
        lost_transfers=lost,
        failed_peers=n_fail,
        slow_peers=n_slow,
        survivors=n_survivors,
    )
