"""Conversations across HBM, DRAM and SSD: one serving replica's KV cache tiers, event by event.

Entry point, as in every module of models/sim: `run(Config, seed) -> Result` (a KVTiersResult).

Conversations arrive as a Poisson stream. Each has `turns` turns; between two turns the user
thinks for a lognormal time. Turn k sees a context of C_k = first + (k - 1) x growth tokens, of
which the last `message` tokens are the user's new message and the rest, P_k, is the prefix
the cache may hold (everything up to the previous reply). After turn k the replica holds the
KV of P_(k+1) = C_k + reply tokens; after the last turn it still holds it, because the server
cannot know the user has gone (those "dead" entries only leave by eviction).

Where the KV lives:
    during a turn    in the running batch (the replica's working memory, not the cache)
    between turns    in exactly one cache tier, or nowhere:
                     HBM (capacity per replica), DRAM, SSD, each an LRU list by bytes.
    turn ends        the entry goes in at the HBM list's most-recent end; whatever overflows
                     falls from the least-recent end into the next tier (demotion), and from
                     SSD out of the cache (dropped). An entry larger than a tier skips it.
    turn returns     the entry leaves its tier: HBM costs nothing, DRAM and SSD reload over
                     their link (one FIFO transfer at a time per link), a miss recomputes the
                     prefix on the GPUs. Tiers are exclusive: a conversation is never in two.

The replica's prefill is one FIFO server at the effective FLOP rate: a turn's work is the
restore (recompute only on a miss) plus the new message, FLOP(P + m) - FLOP(P) where
FLOP(n) = w n + a n^2 / 2 (w = 2 x active params, a = attention FLOP per earlier token). Decode
then streams `reply` tokens at `tpot_s` each. Decode's share of the GPU, demotion copies and SSD
write traffic are not charged (the page states it). Pure Python heapq loop over numpy draws made
up front with `numpy.random.default_rng(seed)`, so two runs that differ only in capacity see
the same conversations and the same think times.

Conservation, checked by the tests: every turn ends with exactly one outcome; bytes written
into the cache = bytes resident at the end + bytes taken out by returning turns + bytes
dropped; with `validate=True` the run also asserts after every event that each tier's byte
count equals the sum of its entries and that no conversation sits in two tiers.
"""

from __future__ import annotations

import heapq
import math
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

FIRST, HBM, DRAM, SSD, MISS = 0, 1, 2, 3, 4
OUTCOMES = ("first turn", "HBM hit", "DRAM hit", "SSD hit", "miss (recompute)")
TIER_NAMES = ("HBM", "DRAM", "SSD")
_ARRIVE, _READY, _END = 0, 1, 2


def growth_tokens(first_turn_tokens: float, conversation_tokens: float, turns: int) -> float:
    """Tokens each turn adds so that the last of `turns` turns sees `conversation_tokens`."""
    return (conversation_tokens - first_turn_tokens) / max(turns - 1, 1)


def context_tokens(first_turn_tokens: float, conversation_tokens: float, turns: int, k: int) -> int:
    """C_k = first + (k - 1) x growth, whole tokens."""
    return int(round(first_turn_tokens + (k - 1) * growth_tokens(first_turn_tokens, conversation_tokens, turns)))


@dataclass(frozen=True)
class Config:
    """One run, in base units (bytes, FLOP, seconds, tokens). Capacities may be math.inf."""

    kv_bytes_per_token: int = 327_680
    weight_flops_per_token: float = 2 * 70.6e9
    attn_flops_per_position: float = 4 * 80 * 64 * 128
    replica_flops: float = 8 * 989e12 * 0.5
    prefill_fixed_s: float = 0.0  # paid by every prefill whatever its length (the all-reduces' latency)
    gpus: int = 8
    hbm_bytes: float = 50e9
    dram_bytes: float = 1000e9
    ssd_bytes: float = 8e12
    dram_Bps: float = 8 * 63.015e9 * 0.8
    ssd_Bps: float = 7e9
    conversations_per_s: float = 0.1
    turns: int = 8
    first_turn_tokens: int = 2000
    conversation_tokens: int = 30_000  # context of the last turn
    reply_tokens: int = 500
    think_median_s: float = 60.0
    think_sigma: float = 1.5
    tpot_s: float = 0.03
    horizon_s: float = 7200.0  # conversations start in [0, horizon_s); the run ends when all finish
    cache: bool = True  # False: no tier at all, every returning turn recomputes
    validate: bool = False
    grid_points: int = 241
    hit_bins: int = 24

    def __post_init__(self) -> None:
        if self.turns < 1:
            raise ValueError("a conversation has at least one turn")
        if self.first_turn_tokens < 1 or self.conversation_tokens < self.first_turn_tokens:
            raise ValueError("need 1 <= first_turn_tokens <= conversation_tokens")
        if self.reply_tokens < 0 or self.reply_tokens > self.growth_tokens:
            raise ValueError("the reply must fit in what a turn adds (0 <= reply <= growth)")
        if min(self.hbm_bytes, self.dram_bytes, self.ssd_bytes) < 0:
            raise ValueError("capacities cannot be negative")
        if self.conversations_per_s <= 0 or self.horizon_s <= 0 or self.think_median_s <= 0 or self.think_sigma < 0:
            raise ValueError("rates, horizon and think time must be positive")

    @property
    def growth_tokens(self) -> float:
        """Tokens one turn adds (message + reply), so that turn `turns` sees conversation_tokens."""
        return growth_tokens(self.first_turn_tokens, self.conversation_tokens, self.turns)

    def context_tokens(self, k: int) -> int:
        """C_k: the whole context turn k (1-based) prefills or restores."""
        return context_tokens(self.first_turn_tokens, self.conversation_tokens, self.turns, k)

    def stored_tokens(self, k: int) -> int:
        """Tokens of KV the replica holds after turn k: its context plus its reply."""
        return self.context_tokens(k) + self.reply_tokens

    def prefix_tokens(self, k: int) -> int:
        """P_k: what turn k >= 2 can restore from the cache (what turn k - 1 left behind)."""
        return self.stored_tokens(k - 1) if k >= 2 else 0

    def flops(self, n: float) -> float:
        """Prefill FLOP of n tokens from an empty cache: weights plus causal attention."""
        return self.weight_flops_per_token * n + self.attn_flops_per_position * n * n / 2

    def recompute_s(self, n: float) -> float:
        return self.flops(n) / self.replica_flops + (self.prefill_fixed_s if n > 0 else 0.0)


@dataclass(frozen=True)
class KVTiersResult:
    # per turn, in the order turns started
    conversation: np.ndarray
    turn: np.ndarray  # 1-based
    arrival_s: np.ndarray
    prefix_tokens: np.ndarray  # what the cache could restore (0 on first turns)
    outcome: np.ndarray  # FIRST, HBM, DRAM, SSD, MISS
    ttft_s: np.ndarray
    link_wait_s: np.ndarray  # waiting for the DRAM or SSD link
    transfer_s: np.ndarray  # the reload itself
    gpu_wait_s: np.ndarray  # waiting for the replica's prefill
    prefill_s: np.ndarray  # GPU time of the turn: recompute (misses) plus the new message
    recompute_s_of_prefix: np.ndarray  # what recomputing P_k would cost on the replica
    # time series on a grid
    grid_s: np.ndarray
    occupancy_bytes: np.ndarray  # shape (3, grid): HBM, DRAM, SSD
    entries: np.ndarray  # shape (3, grid): conversations parked per tier
    thinking: np.ndarray  # conversations between two of their turns (not counting ended ones)
    # hit shares over time, returning turns binned by arrival
    bin_edges_s: np.ndarray
    bin_counts: np.ndarray  # shape (5, bins): FIRST..MISS per bin (FIRST row is all first turns)
    # accounting
    end_s: float
    conversations: int
    bytes_written: int  # KV put into the cache at turn ends
    bytes_taken: int  # KV taken out by returning turns (HBM hits and reloads)
    bytes_dropped: int  # KV that fell out of the last tier
    bytes_resident_end: int
    tier_bytes_end: tuple[int, int, int]
    drops: int
    demotions: int
    gpus: int
    gpu_busy_s: float  # replica-seconds of prefill work
    thinking_area: float  # integral of `thinking` over the run, conversation-seconds
    think_total_s: float  # sum of every think time drawn
    event_s: np.ndarray  # the state log behind the grids: time of every change
    event_thinking: np.ndarray  # conversations thinking right after that change

    # --- summaries -----------------------------------------------------------------------------

    @property
    def returning(self) -> np.ndarray:
        return self.outcome != FIRST

    def count(self, outcome: int) -> int:
        return int(np.sum(self.outcome == outcome))

    def share(self, outcome: int) -> float:
        """Share of returning turns with this outcome (0 if there were none)."""
        n = int(self.returning.sum())
        return self.count(outcome) / n if n else 0.0

    @property
    def hit_rate(self) -> float:
        """Share of returning turns whose prefix came from any tier."""
        return self.share(HBM) + self.share(DRAM) + self.share(SSD)

    @property
    def gpu_seconds_avoided(self) -> float:
        """GPU-seconds the hits did not spend recomputing their prefix."""
        hits = (self.outcome == HBM) | (self.outcome == DRAM) | (self.outcome == SSD)
        return float(self.recompute_s_of_prefix[hits].sum()) * self.gpus

    @property
    def gpu_seconds_recomputed(self) -> float:
        return float(self.recompute_s_of_prefix[self.outcome == MISS].sum()) * self.gpus

    def ttft_quantile(self, outcome: int, q: float) -> float:
        x = self.ttft_s[self.outcome == outcome]
        return float(np.quantile(x, q)) if x.size else math.nan

    def shares_between(self, t0: float, t1: float) -> tuple[float, float, float, float]:
        """HBM, DRAM, SSD, miss as shares of the returning turns that arrived in [t0, t1)."""
        m = self.returning & (self.arrival_s >= t0) & (self.arrival_s < t1)
        n = int(m.sum())
        if not n:
            return (math.nan,) * 4
        o = self.outcome[m]
        return tuple(float(np.sum(o == x)) / n for x in (HBM, DRAM, SSD, MISS))  # type: ignore[return-value]

    def thinking_average(self, t0: float, t1: float) -> float:
        """Time-average of conversations between turns over [t0, t1], exact from the event log."""
        t = np.clip(self.event_s, t0, t1)
        dt = np.diff(np.append(t, t1))
        return float(np.sum(self.event_thinking * dt) / (t1 - t0))

    def hit_share_over_time(self) -> np.ndarray:
        """Shape (4, bins): HBM, DRAM, SSD, miss as fractions of each bin's returning turns."""
        ret = self.bin_counts[1:]
        total = ret.sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(total > 0, ret / np.maximum(total, 1), np.nan)


class _Tiers:
    """Three exclusive LRU lists by bytes, HBM first; the last one drops what overflows."""

    def __init__(self, capacity: tuple[float, float, float]) -> None:
        self.cap = capacity
        self.lru: list[OrderedDict[int, int]] = [OrderedDict(), OrderedDict(), OrderedDict()]
        self.used = [0, 0, 0]
        self.loc: dict[int, int] = {}
        self.dropped_bytes = 0
        self.drops = 0
        self.demotions = 0

    def place(self, conv: int, size: int, tier: int = 0) -> None:
        while tier < 3 and size > self.cap[tier]:
            tier += 1  # too big for this tier: it goes straight to the next
        if tier == 3:
            self.dropped_bytes += size
            self.drops += 1
            return
        lru = self.lru[tier]
        lru[conv] = size  # most recent at the end
        self.used[tier] += size
        self.loc[conv] = tier
        while self.used[tier] > self.cap[tier]:
            victim, vsize = lru.popitem(last=False)
            self.used[tier] -= vsize
            del self.loc[victim]
            if tier < 2:
                self.demotions += 1
            self.place(victim, vsize, tier + 1)

    def take(self, conv: int) -> tuple[int, int]:
        """Remove a returning conversation; (tier, bytes) or (-1, 0) on a miss."""
        tier = self.loc.pop(conv, -1)
        if tier < 0:
            return -1, 0
        size = self.lru[tier].pop(conv)
        self.used[tier] -= size
        return tier, size

    def check(self, active: set[int]) -> None:
        seen: set[int] = set()
        for t in range(3):
            keys = set(self.lru[t])
            assert not (keys & seen), "a conversation sits in two tiers"
            assert not (keys & active), "a conversation in its turn is also parked in a tier"
            seen |= keys
            assert sum(self.lru[t].values()) == self.used[t], "tier bytes do not add up"
            assert self.used[t] <= self.cap[t], "a tier holds more than its capacity"
            assert all(self.loc[c] == t for c in keys), "location map disagrees with the tier"
        assert seen == set(self.loc), "location map lists a conversation no tier holds"


Result = KVTiersResult


def run(cfg: Config, seed: int = 0) -> KVTiersResult:
    rng = np.random.default_rng(seed)
    # Everything random is drawn first, in a fixed order, so capacity changes keep the draws.
    gaps = rng.exponential(1.0 / cfg.conversations_per_s, int(cfg.conversations_per_s * cfg.horizon_s * 1.5) + 20)
    starts = np.cumsum(gaps)
    starts = starts[starts < cfg.horizon_s]
    n_conv = int(starts.size)
    think = np.exp(np.log(cfg.think_median_s) + cfg.think_sigma * rng.standard_normal((n_conv, max(cfg.turns - 1, 1))))

    T = cfg.turns
    kvb = int(cfg.kv_bytes_per_token)
    ctx = [cfg.context_tokens(k) for k in range(1, T + 1)]
    prefix = [0] + [cfg.prefix_tokens(k) for k in range(2, T + 1)]  # index k - 1
    stored = [cfg.stored_tokens(k) for k in range(1, T + 1)]
    message = [ctx[k] - prefix[k] for k in range(T)]  # tokens turn k + 1 prefills on top of its prefix
    recompute_prefix = [cfg.recompute_s(p) for p in prefix]
    work_hit = [(cfg.flops(ctx[k]) - cfg.flops(prefix[k])) / cfg.replica_flops + cfg.prefill_fixed_s for k in range(T)]
    work_miss = [cfg.recompute_s(ctx[k]) for k in range(T)]
    decode_s = cfg.reply_tokens * cfg.tpot_s
    link_Bps = (math.inf, cfg.dram_Bps, cfg.ssd_Bps)

    cap = (cfg.hbm_bytes, cfg.dram_bytes, cfg.ssd_bytes) if cfg.cache else (0.0, 0.0, 0.0)
    tiers = _Tiers(cap)
    link_free = [0.0, 0.0, 0.0]
    gpu_free = 0.0
    gpu_busy = 0.0

    n_turns = n_conv * T
    # Plain lists in the loop: assigning numpy scalars one at a time is several times slower.
    conv_a = [0] * n_turns
    turn_a = [0] * n_turns
    arr_a = [0.0] * n_turns
    pre_a = [0] * n_turns
    out_a = [0] * n_turns
    ttft_a = [0.0] * n_turns
    lw_a = [0.0] * n_turns
    xf_a = [0.0] * n_turns
    gw_a = [0.0] * n_turns
    pf_a = [0.0] * n_turns
    rc_a = [0.0] * n_turns
    think_l = think.tolist()

    events: list[tuple[float, int, int, int, int, int]] = []  # t, tiebreak, kind, conv, turn, row
    seq = 0
    for c in range(n_conv):
        events.append((float(starts[c]), seq, _ARRIVE, c, 1, -1))
        seq += 1
    heapq.heapify(events)

    # occupancy log: one row per state change
    log_t: list[float] = [0.0]
    log_u: list[tuple[int, int, int]] = [(0, 0, 0)]
    log_n: list[tuple[int, int, int]] = [(0, 0, 0)]
    log_think: list[int] = [0]
    thinking = 0
    thinking_area = 0.0
    last_t = 0.0
    written = taken = 0
    active: set[int] = set()
    i_turn = 0

    while events:
        t, _, kind, c, k, i = heapq.heappop(events)
        thinking_area += thinking * (t - last_t)
        last_t = t
        if kind == _ARRIVE:
            i = i_turn
            i_turn += 1
            conv_a[i], turn_a[i], arr_a[i], pre_a[i] = c, k, t, prefix[k - 1]
            rc_a[i] = recompute_prefix[k - 1]
            if k > 1:
                thinking -= 1
            tier, size = tiers.take(c)
            active.add(c)
            if k == 1:
                out_a[i], work, ready = FIRST, work_miss[0], t
            elif tier < 0:
                out_a[i], work, ready = MISS, work_miss[k - 1], t
            else:
                taken += size
                if cfg.validate:
                    assert size == prefix[k - 1] * kvb, "a returning turn found KV of the wrong size"
                out_a[i], work = (HBM, DRAM, SSD)[tier], work_hit[k - 1]
                if tier == 0:
                    ready = t
                else:
                    start = max(t, link_free[tier])
                    xfer = size / link_Bps[tier]
                    link_free[tier] = start + xfer
                    lw_a[i], xf_a[i] = start - t, xfer
                    ready = start + xfer
            pf_a[i] = work
            heapq.heappush(events, (ready, seq, _READY, c, k, i))
            seq += 1
        elif kind == _READY:
            start = max(t, gpu_free)
            gpu_free = start + pf_a[i]
            gpu_busy += pf_a[i]
            gw_a[i] = start - t
            ttft_a[i] = gpu_free - arr_a[i]
            heapq.heappush(events, (gpu_free + decode_s, seq, _END, c, k, i))
            seq += 1
            continue  # no state change worth logging
        else:  # _END: the turn's KV goes back into the cache
            active.discard(c)
            size = stored[k - 1] * kvb
            written += size
            tiers.place(c, size, 0)
            if k < T:
                thinking += 1
                heapq.heappush(events, (t + think_l[c][k - 1], seq, _ARRIVE, c, k + 1, -1))
                seq += 1
        if cfg.validate:
            tiers.check(active)
        log_t.append(t)
        log_u.append((tiers.used[0], tiers.used[1], tiers.used[2]))
        log_n.append((len(tiers.lru[0]), len(tiers.lru[1]), len(tiers.lru[2])))
        log_think.append(thinking)

    end_s = max(last_t, cfg.horizon_s)
    assert i_turn == n_turns, "a turn was lost"
    conv_a, turn_a, pre_a = (np.asarray(x, dtype=np.int64) for x in (conv_a, turn_a, pre_a))
    out_a = np.asarray(out_a, dtype=np.int8)
    arr_a, ttft_a, lw_a, xf_a, gw_a, pf_a, rc_a = (np.asarray(x, dtype=float)
                                                   for x in (arr_a, ttft_a, lw_a, xf_a, gw_a, pf_a, rc_a))
    # Charts cover the arrival window; the tail of late returns is in the per-turn arrays.
    grid = np.linspace(0.0, cfg.horizon_s, cfg.grid_points)
    lt = np.asarray(log_t)
    pick = np.clip(np.searchsorted(lt, grid, side="right") - 1, 0, len(log_t) - 1)
    occ = np.asarray(log_u, dtype=float)[pick].T
    ent = np.asarray(log_n, dtype=float)[pick].T
    thk = np.asarray(log_think, dtype=float)[pick]

    edges = np.linspace(0.0, cfg.horizon_s, cfg.hit_bins + 1)
    counts = np.zeros((5, cfg.hit_bins), dtype=np.int64)
    inside = arr_a < cfg.horizon_s
    if inside.any():
        b = np.clip(np.searchsorted(edges, arr_a[inside], side="right") - 1, 0, cfg.hit_bins - 1)
        np.add.at(counts, (out_a[inside].astype(np.int64), b), 1)

    resident = sum(tiers.used)
    return KVTiersResult(
        conversation=conv_a, turn=turn_a, arrival_s=arr_a, prefix_tokens=pre_a, outcome=out_a, ttft_s=ttft_a,
        link_wait_s=lw_a, transfer_s=xf_a, gpu_wait_s=gw_a, prefill_s=pf_a, recompute_s_of_prefix=rc_a,
        grid_s=grid, occupancy_bytes=occ, entries=ent, thinking=thk, bin_edges_s=edges, bin_counts=counts,
        end_s=end_s, conversations=n_conv, bytes_written=written, bytes_taken=taken,
        bytes_dropped=tiers.dropped_bytes, bytes_resident_end=resident,
        tier_bytes_end=(tiers.used[0], tiers.used[1], tiers.used[2]), drops=tiers.drops,
        demotions=tiers.demotions, gpus=cfg.gpus, gpu_busy_s=gpu_busy, thinking_area=thinking_area,
        think_total_s=float(think[:, : T - 1].sum()) if T > 1 else 0.0,
        event_s=lt, event_thinking=np.asarray(log_think, dtype=float),
    )
