"""One serving replica, iteration by iteration: admission queue, scheduler, engine, stream.

Entry point, as in every module of models/sim: `run(Config, seed) -> Result` (a BatchingResult).

The engine policies (`static`, `continuous`, `chunked`) advance one model iteration at a time.
Each iteration the scheduler admits from the queue, the engine runs one step over the live
batch, and the step's duration comes from the roofline of what it touches:

    step = max((weights + KV read) / bandwidth, decode FLOP / decode compute
                                                 + prompt FLOP / prefill compute)
           + all-reduce latency + tokens x all-reduce time per token + fixed overhead
    decode token at context c:   reads c x KV bytes/token;  2 x active params + a x c FLOP
    prompt token at position i:  2 x active params + a x i FLOP (its chunk also reads the
                                 prefix's KV once)

where `a` is the attention FLOP per earlier token (QK^T and AV). Bandwidth and compute are
already multiplied by their efficiencies by the caller: the page builds them from the engine's
Replica (models/engine/roofline.py), so a step here is the engine's decode step, a prompt chunk
fused into it at the prefill MFU. The tensor-parallel all-reduces are linear in the tokens a
step carries, so two numbers (latency part, time per token) carry them. A share
`cached_prompt_fraction` of every prompt is already in the KV cache (a shared prefix): it is
read, never prefilled, and each sequence still holds its blocks.

Policies:
    static      the engine takes up to `max_running` queued requests when it is idle, prefills
                them in one step, and decodes until the longest is done; finished members stay
                in the batch as padding (their KV is still read). KV is reserved at full context
                (no paging), so the caller must keep `max_running` within the full-context cap.
    continuous  admits at every iteration while a slot and the prompt's KV blocks are free
                (paged KV, `block_tokens` per block). Newly admitted prompts run as one
                prefill-only step (up to `max_prefill_tokens`), during which decodes wait.
                When a decode needs a block and none is free, the most recently admitted
                sequence is preempted by recompute: its blocks are freed and it goes back to
                the head of the queue to prefill prompt + generated tokens again.
    chunked     continuous, but every step carries all decoding sequences plus at most
                `chunk_tokens` prompt tokens, so a long prompt never stalls the decodes.

Each policy is a small object in the `POLICIES` registry holding its decisions (how many queue
heads join, who decodes while a prompt prefills, how many prompt tokens a step takes); `_engine`
does the rest identically for all three.

`fixed-contract` is a different engine: the batched-inference-API contract (flush at
`max_inputs` or when the oldest input has waited `timeout_s`; every call takes `call_s`;
`gpus` workers take sealed batches first come, first served), run on the shared queue engine.

Streaming: a client reads its tokens at a finite rate (`slow_tokens_per_s`) with probability
`slow_fraction`, otherwise instantly. Each stream has a buffer of `stream_buffer_tokens`.
`stream_policy="cut"` drops a stream whose backlog overflows the buffer and frees its slot and
KV at once; `"block"` makes the engine wait until every live stream has room, which is the
design the page warns against.

Conservation, checked by the tests: arrived = done + cut + running + queued at the end, and
every emitted token belongs to exactly one request. Pure numpy, seeded with
`numpy.random.default_rng(seed)`; no global random state.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import deque
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from models.sim.queue import fifo

Policy = Literal["static", "continuous", "chunked", "fixed-contract"]

QUEUED, RUNNING, DONE, CUT = 0, 1, 2, 3
MAX_ITERATIONS = 40_000  # a safety stop; the callers size the horizon for a few thousand
WARMUP_FRACTION = 0.25  # steady-state figures skip the first quarter of a run


# ---------------------------------------------------------------------------------------------
# Scheduling policies: the decisions that tell static, continuous and chunked batching apart.
# The engine (`_engine`) does the rest (KV blocks, preemption, step time, streaming) the same way
# for all three; `paged` says which KV memory model a policy runs on.


class StaticBatching:
    """Whole batches: admit only when the engine is idle, prefill every prompt in one step, and
    keep finished members as padding (no paging: KV is reserved at full context)."""

    name = "static"
    paged = False

    def admit(self, cfg: "Config", running: int, heads, free_blocks: int) -> int:
        """How many queue heads join the batch now. `heads` yields (tokens to hold, tokens to
        prefill) per head, in queue order; `free_blocks` is the free KV in blocks."""
        if running:
            return 0
        return sum(1 for _, _ in zip(range(cfg.max_running), heads))

    def decoders(self, pre: np.ndarray) -> np.ndarray:
        """In a step where some sequence still prefills (`pre` > 0 prompt tokens left), which
        sequences decode: none, the whole step is the batch's prefill."""
        return np.zeros(pre.size, bool)

    def prompt_take(self, cfg: "Config", prefilling: np.ndarray) -> np.ndarray:
        """Prompt tokens each prefilling sequence runs this step: all that are left."""
        return prefilling


class ContinuousBatching(StaticBatching):
    """Admit at every step while a slot and the prompt's KV blocks are free; newly admitted
    prompts (up to `max_prefill_tokens` in one step) run as a prefill-only step."""

    name = "continuous"
    paged = True

    def prefill_budget(self, cfg: "Config") -> int:
        return cfg.max_prefill_tokens

    def admit(self, cfg: "Config", running: int, heads, free_blocks: int) -> int:
        room = cfg.max_running - running
        prefill_room = self.prefill_budget(cfg)
        k = 0
        for need, prefill in heads:
            if room <= 0:
                break
            blk = -(-need // cfg.block_tokens)
            # the first admitted prompt may exceed the budget: it must run some time
            if blk > free_blocks or (k and prefill > prefill_room):
                break
            free_blocks -= blk
            room -= 1
            prefill_room -= prefill
            k += 1
        return k


class ChunkedPrefill(ContinuousBatching):
    """Continuous, but every step carries all decoding sequences plus at most `chunk_tokens`
    prompt tokens (first come, first served), so a long prompt never stalls the decodes."""

    name = "chunked"

    def prefill_budget(self, cfg: "Config") -> int:
        return 1 << 62  # admission is bounded by slots and KV only: the chunk paces the prefill

    def decoders(self, pre: np.ndarray) -> np.ndarray:
        return pre == 0

    def prompt_take(self, cfg: "Config", prefilling: np.ndarray) -> np.ndarray:
        before = np.cumsum(prefilling) - prefilling
        return np.minimum(np.maximum(cfg.chunk_tokens - before, 0), prefilling)


POLICIES: dict[str, StaticBatching] = {p.name: p for p in (StaticBatching(), ContinuousBatching(), ChunkedPrefill())}
# `fixed-contract` is not an iteration policy but a different engine (request-level batches on many GPUs)
POLICY_NAMES: tuple[str, ...] = (*POLICIES, "fixed-contract")


@dataclass(frozen=True)
class Config:
    """Everything one run needs, in base units (bytes, FLOP, seconds, tokens)."""

    policy: str = "chunked"
    # the replica (effective rates: peak x efficiency)
    weight_bytes: float = 141.2e9
    kv_bytes_per_token: float = 327_680
    weight_flops_per_token: float = 2 * 70.6e9
    attn_flops_per_position: float = 4 * 80 * 64 * 128
    replica_Bps: float = 4 * 3.35e12 * 0.8
    replica_flops: float = 4 * 989e12 * 0.5
    overhead_s: float = 0.003
    prefill_flops: float = 0.0  # prompt tokens' compute (peak x prefill MFU); 0: the same as replica_flops
    allreduce_fixed_s: float = 0.0  # every tensor-parallel all-reduce's latency, summed over one step
    allreduce_per_token_s: float = 0.0  # their payload time per token the step carries
    kv_budget_tokens: int = 448_000  # KV capacity of the replica, in tokens
    block_tokens: int = 16
    # scheduler
    max_running: int = 54
    chunk_tokens: int = 512
    max_prefill_tokens: int = 8192  # continuous: prompt tokens per prefill-only step
    # workload
    arrival_rps: float = 2.0
    on_fraction: float = 1.0  # 1 = Poisson; below 1, traffic is on for this share of each period
    burst_period_s: float = 20.0
    prompt_mean: float = 2000
    cached_prompt_fraction: float = 0.0  # prefix-cache hit: the share of each prompt never prefilled
    output_mean: float = 400
    length_spread: float = 0.0  # lognormal sigma; 0 = every request has exactly the means
    max_context: int = 8192
    # streaming
    slow_fraction: float = 0.0
    slow_tokens_per_s: float = 5.0
    stream_buffer_tokens: int = 256
    stream_policy: str = "cut"
    # fixed contract (batched inference API)
    gpus: int = 8
    max_inputs: int = 50
    call_s: float = 0.2
    timeout_s: float = 0.05
    # the run
    horizon_s: float = 60.0

    def __post_init__(self) -> None:
        if self.policy not in POLICY_NAMES:
            raise ValueError(f"policy must be one of {', '.join(POLICY_NAMES)}; got {self.policy!r}")
        if self.stream_policy not in ("cut", "block"):
            raise ValueError("stream_policy is 'cut' or 'block'")
        if self.max_running < 1 or self.block_tokens < 1 or self.chunk_tokens < 1:
            raise ValueError("max_running, block_tokens and chunk_tokens must be at least 1")
        if not 0 < self.on_fraction <= 1:
            raise ValueError("on_fraction must be in (0, 1]")
        if not 0 <= self.cached_prompt_fraction < 1:
            raise ValueError("cached_prompt_fraction must be in [0, 1)")
        if self.prompt_mean < 1 or self.output_mean < 1 or self.prompt_mean + 1 > self.max_context:
            raise ValueError("need prompt >= 1, output >= 1 and prompt + 1 <= max_context")
        if self.policy != "fixed-contract":
            blocks_one = math.ceil((self.max_context - 1) / self.block_tokens)
            if self.kv_budget_tokens // self.block_tokens < blocks_one:
                raise ValueError("the KV budget must hold at least one sequence at full context")

    # --- step time: one formula for every policy --------------------------------------------

    @property
    def prompt_flops(self) -> float:
        return self.prefill_flops or self.replica_flops

    def step_s(self, kv_read_tokens: float, tokens: float, attn_positions: float,
               prompt_tokens: float = 0.0, prompt_positions: float = 0.0) -> float:
        """One engine step: bytes side vs FLOP side, plus the all-reduces and the fixed overhead.
        `tokens` and `attn_positions` are the decodes'; `prompt_*` the prompt chunk's."""
        mem = (self.weight_bytes + self.kv_bytes_per_token * kv_read_tokens) / self.replica_Bps
        flop = ((self.weight_flops_per_token * tokens + self.attn_flops_per_position * attn_positions)
                / self.replica_flops
                + (self.weight_flops_per_token * prompt_tokens + self.attn_flops_per_position * prompt_positions)
                / self.prompt_flops)
        comms = self.allreduce_fixed_s + self.allreduce_per_token_s * (tokens + prompt_tokens)
        return max(mem, flop) + comms + self.overhead_s

    def cached_tokens(self, prompt: int) -> int:
        """Tokens of a prompt the prefix cache already holds (never the whole prompt)."""
        return min(prompt - 1, round(prompt * self.cached_prompt_fraction))

    def prefill_s(self, prompt: int) -> float:
        """A whole prompt in one step, after the part the prefix cache holds (read once)."""
        c = self.cached_tokens(prompt)
        t = prompt - c
        return self.step_s(c, 0, 0, t, t * c + t * (t - 1) / 2)


@dataclass(frozen=True)
class BatchingResult:
    policy: str
    horizon_s: float  # the run's end: arrivals stop at config.horizon_s, the last step may run past it
    # per request (every request that arrived)
    arrival_s: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    slow: np.ndarray
    status: np.ndarray  # QUEUED, RUNNING, DONE, CUT at the end
    queue_wait_s: np.ndarray  # total time in the queue, preemptions included, censored at the end
    ttft_s: np.ndarray  # nan if no token yet
    tpot_s: np.ndarray  # mean time per output token after the first, done requests with >= 2 tokens
    e2e_s: np.ndarray  # nan unless done
    exit_s: np.ndarray  # when the request left the engine (done or cut); nan if still queued or running
    generated: np.ndarray  # tokens emitted (streamed) per request
    preemptions: np.ndarray  # per request
    # per step (engine policies) or per batch call (fixed contract)
    t_s: np.ndarray  # step start
    step_s: np.ndarray
    batch: np.ndarray  # sequences in the step (fixed contract: inputs in the call)
    kv_tokens: np.ndarray  # KV in use at the step's start, tokens (fixed contract: zeros)
    queue_len: np.ndarray  # requests queued as the step starts (after admission)
    tokens: np.ndarray  # tokens the step emitted (fixed contract: requests the call answered)
    token_gaps_s: np.ndarray  # every gap between two consecutive tokens of one stream
    # accounting
    queue_area: float  # integral of the queue length over [0, horizon_s], request-seconds
    busy_s: float  # engine time spent in steps (fixed contract: GPU-seconds / gpus)
    stall_s: float  # engine time spent waiting on slow streams (block policy)
    kv_budget_tokens: int
    iterations: int
    truncated: bool = False
    extra: dict = field(default_factory=dict)

    # --- counts ------------------------------------------------------------------------------

    @property
    def arrived(self) -> int:
        return int(self.arrival_s.size)

    def count(self, status: int) -> int:
        return int(np.sum(self.status == status))

    @property
    def done(self) -> int:
        return self.count(DONE)

    @property
    def cut(self) -> int:
        return self.count(CUT)

    @property
    def running(self) -> int:
        return self.count(RUNNING)

    @property
    def queued(self) -> int:
        return self.count(QUEUED)

    @property
    def tokens_out(self) -> int:
        return int(self.generated.sum())

    @property
    def tokens_per_s(self) -> float:
        return self.tokens_out / self.horizon_s

    @property
    def requests_per_s(self) -> float:
        return self.done / self.horizon_s

    @property
    def preemptions_total(self) -> int:
        return int(self.preemptions.sum())

    @property
    def busy_fraction(self) -> float:
        return self.busy_s / self.horizon_s

    # --- Little's law on the queue ---------------------------------------------------------

    @property
    def mean_queue_len(self) -> float:
        """Time-average number waiting, from the engine's own queue over the run."""
        return self.queue_area / self.horizon_s

    @property
    def arrival_rate(self) -> float:
        return self.arrived / self.horizon_s

    @property
    def mean_queue_wait_s(self) -> float:
        return float(self.queue_wait_s.mean()) if self.arrived else 0.0

    # --- distributions ---------------------------------------------------------------------

    @staticmethod
    def _pct(x: np.ndarray, q: float) -> float:
        x = x[np.isfinite(x)]
        return float(np.percentile(x, q)) if x.size else math.nan

    def ttft(self, q: float) -> float:
        return self._pct(self.ttft_s, q)

    def tpot(self, q: float) -> float:
        return self._pct(self.tpot_s, q)

    def token_gap(self, q: float) -> float:
        return self._pct(self.token_gaps_s, q)

    def e2e(self, q: float) -> float:
        return self._pct(self.e2e_s, q)

    @property
    def mean_batch(self) -> float:
        """Time-weighted mean of the sequences in a step (engine idle time excluded)."""
        if not self.step_s.size:
            return 0.0
        return float(np.sum(self.batch * self.step_s) / np.sum(self.step_s))

    # --- steady state: the same figures after the run has filled up --------------------------

    @property
    def warmup_s(self) -> float:
        """The first quarter of the run: an empty replica takes a few request lifetimes to fill."""
        return WARMUP_FRACTION * self.horizon_s

    def _after(self) -> np.ndarray:
        return self.t_s >= self.warmup_s

    @property
    def steady_tokens_per_s(self) -> float:
        return float(self.tokens[self._after()].sum()) / (self.horizon_s - self.warmup_s)

    @property
    def steady_batch(self) -> float:
        """Time-average of the sequences in the engine after warm-up (idle time counts as zero)."""
        m = self._after()
        return float(np.sum(self.batch[m] * self.step_s[m])) / (self.horizon_s - self.warmup_s)

    @property
    def steady_requests_per_s(self) -> float:
        finish = self.arrival_s + self.e2e_s
        return float(np.sum(finish >= self.warmup_s)) / (self.horizon_s - self.warmup_s)

    def steady_tpot(self, q: float) -> float:
        first = self.arrival_s + self.ttft_s
        return self._pct(self.tpot_s[first >= self.warmup_s], q)

    def summary(self) -> dict[str, float]:
        return {
            "arrived": self.arrived, "done": self.done, "cut": self.cut, "running": self.running,
            "queued": self.queued, "tokens_per_s": self.tokens_per_s, "requests_per_s": self.requests_per_s,
            "ttft_p50_s": self.ttft(50), "ttft_p95_s": self.ttft(95), "ttft_p99_s": self.ttft(99),
            "tpot_p50_s": self.tpot(50), "tpot_p95_s": self.tpot(95), "tpot_p99_s": self.tpot(99),
            "token_gap_p95_s": self.token_gap(95), "preemptions": self.preemptions_total,
            "mean_batch": self.mean_batch, "busy_fraction": self.busy_fraction,
            "mean_queue_len": self.mean_queue_len, "mean_queue_wait_s": self.mean_queue_wait_s,
        }


Result = BatchingResult


# ---------------------------------------------------------------------------------------------
# Workload


def arrivals(rng: np.random.Generator, cfg: Config) -> np.ndarray:
    """Poisson at `arrival_rps` on average; on/off bursts when `on_fraction` < 1.

    Bursty: traffic is on for `on_fraction` of every `burst_period_s` (starting on) at
    `arrival_rps / on_fraction`, so the mean rate is the same and only the shape changes.
    """
    on_len = cfg.burst_period_s * cfg.on_fraction
    total_on = cfg.horizon_s * cfg.on_fraction if cfg.on_fraction < 1 else cfg.horizon_s
    rate = cfg.arrival_rps / cfg.on_fraction
    n = rng.poisson(rate * total_on)
    u = np.sort(rng.uniform(0.0, total_on, n))  # Poisson points given their count
    if cfg.on_fraction >= 1:
        return u
    t = np.floor(u / on_len) * cfg.burst_period_s + np.mod(u, on_len)
    return t[t < cfg.horizon_s]


def lengths(rng: np.random.Generator, mean: float, spread: float, n: int, lo: int, hi: np.ndarray | int) -> np.ndarray:
    """Integer lengths with the given mean: fixed when spread is 0, else lognormal(sigma=spread).

    Clipped to [lo, hi]; the clip trims the far tail, so a wide spread lowers the mean a little.
    """
    if spread <= 0:
        x = np.full(n, float(mean))
    else:
        mu = math.log(mean) - spread**2 / 2
        x = rng.lognormal(mu, spread, n)
    return np.clip(np.rint(x), lo, hi).astype(np.int64)


def workload(cfg: Config, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Arrival times, prompt and output lengths, slow-client flags: the same for every policy."""
    rng = np.random.default_rng(seed)
    arr = arrivals(rng, cfg)
    n = arr.size
    prompt = lengths(rng, cfg.prompt_mean, cfg.length_spread, n, 1, cfg.max_context - 1)
    output = lengths(rng, cfg.output_mean, cfg.length_spread, n, 1, cfg.max_context - prompt)
    slow = rng.random(n) < cfg.slow_fraction
    return arr, prompt, output, slow


# ---------------------------------------------------------------------------------------------
# Engine policies


def run(cfg: Config, seed: int = 0) -> BatchingResult:
    """The module's one entry point, as in every module of models/sim: one seeded run."""
    if cfg.policy == "fixed-contract":
        return _run_contract(cfg, seed)
    arr, prompt, output, slow = workload(cfg, seed)
    return _engine(cfg, arr, prompt, output, slow)


def _engine(cfg: Config, arr: np.ndarray, prompt: np.ndarray, output: np.ndarray, slow: np.ndarray) -> BatchingResult:
    n = arr.size
    T = cfg.horizon_s
    B = cfg.block_tokens
    policy = POLICIES[cfg.policy]
    paged = policy.paged
    W, kvb, Wf, af = cfg.weight_bytes, cfg.kv_bytes_per_token, cfg.weight_flops_per_token, cfg.attn_flops_per_position
    BW, FL, FLp, ovh = cfg.replica_Bps, cfg.replica_flops, cfg.prompt_flops, cfg.overhead_s
    ar0, ar1 = cfg.allreduce_fixed_s, cfg.allreduce_per_token_s
    slow_rate = cfg.slow_tokens_per_s
    buf = cfg.stream_buffer_tokens
    blocking = cfg.stream_policy == "block"

    # per request
    status = np.zeros(n, np.int8)
    q_enter = arr.copy()  # when the request (re)entered the queue
    q_wait = np.zeros(n)
    first_t = np.full(n, np.nan)
    finish_t = np.full(n, np.nan)
    gen = np.zeros(n, np.int64)
    preempt = np.zeros(n, np.int64)
    last = np.full(n, np.nan)  # when each stream got its last token
    arr_list = arr.tolist()
    csum = np.concatenate([[0.0], np.cumsum(arr)]).tolist()  # for the queue-area integral
    prompt_list = prompt.tolist()
    cached = np.minimum(prompt - 1, np.rint(prompt * cfg.cached_prompt_fraction)).astype(np.int64)
    cached_list = cached.tolist()

    # The live batch in admission order (the last one is the first preempted).
    rid = np.zeros(0, np.int64)
    ctx = np.zeros(0, np.int64)  # tokens whose KV is stored
    pre = np.zeros(0, np.int64)  # prompt tokens still to prefill
    left = np.zeros(0, np.int64)  # output tokens still to emit
    nblk = np.zeros(0, np.int64)  # KV blocks held
    pad = np.zeros(0, bool)  # static only: finished or cut, kept as padding until the batch ends
    slw = np.zeros(0, bool)  # slow stream
    n_pf = 0  # sequences still prefilling
    n_slow = 0  # slow streams in the batch
    total_blocks = cfg.kv_budget_tokens // B
    free_blocks = total_blocks

    queue: deque[int] = deque()
    ptr = 0
    now = 0.0
    q_area = 0.0
    busy = 0.0
    stall = 0.0
    ts_t: list[float] = []
    ts_dt: list[float] = []
    ts_batch: list[int] = []
    ts_kv: list[int] = []
    ts_q: list[int] = []
    ts_tok: list[int] = []
    gaps: list[np.ndarray] = []
    iterations = 0
    truncated = False

    def area_until(t_end: float) -> float:
        """Queue-seconds, up to t_end, of the arrivals the loop has not enqueued yet."""
        k2 = bisect_right(arr_list, t_end, ptr)
        return (k2 - ptr) * t_end - (csum[k2] - csum[ptr])

    while now < T:
        if iterations >= MAX_ITERATIONS:
            truncated = True
            break
        if ptr < n and arr_list[ptr] <= now:
            k = bisect_right(arr_list, now, ptr)
            queue.extend(range(ptr, k))
            ptr = k
        nl = rid.size
        if nl == 0 and not queue:
            if ptr >= n:
                now = T
                break
            now = arr_list[ptr]
            continue

        # --- admission: the policy says how many queue heads join -----------------------------
        if queue:
            # a preempted request recomputes what it had: it holds prompt + generated tokens
            heads = ((prompt_list[r] + int(gen[r]), prompt_list[r] + int(gen[r]) - cached_list[r]) for r in queue)
            k = policy.admit(cfg, nl, heads, free_blocks)
            if k:
                idx = np.array([queue.popleft() for _ in range(k)], np.int64)
                nd = prompt[idx] + gen[idx]
                q_wait[idx] += now - q_enter[idx]
                status[idx] = RUNNING
                rid = np.concatenate([rid, idx])
                ctx = np.concatenate([ctx, cached[idx]])
                pre = np.concatenate([pre, nd - cached[idx]])
                left = np.concatenate([left, output[idx] - gen[idx]])
                if paged:
                    blocks = -(-nd // B)
                    free_blocks -= int(blocks.sum())
                else:
                    blocks = np.zeros(k, np.int64)  # reserved at full context: no paging
                nblk = np.concatenate([nblk, blocks])
                pad = np.concatenate([pad, np.zeros(k, bool)])
                s_new = slow[idx]
                slw = np.concatenate([slw, s_new])
                n_pf += k
                n_slow += int(s_new.sum())
        nl = rid.size

        # --- which sequences decode this step; KV blocks for their new tokens ----------------
        if n_pf == 0:
            all_decode = True  # (static: padding members are computed too)
            dec = None
        else:
            all_decode = False
            dec = policy.decoders(pre)
        if paged:
            grow = ctx % B == 0
            if dec is not None:
                grow &= dec
            need_blocks = int(np.count_nonzero(grow))
            # Preempt by recompute, newest first, until the new tokens' blocks fit.
            while need_blocks > free_blocks and nl:
                r = int(rid[-1])
                free_blocks += int(nblk[-1])
                need_blocks -= int(grow[-1])
                preempt[r] += 1
                status[r] = QUEUED
                q_enter[r] = now
                queue.appendleft(r)
                n_pf -= int(pre[-1] > 0)
                n_slow -= int(slw[-1])
                rid, ctx, pre, left = rid[:-1], ctx[:-1], pre[:-1], left[:-1]
                nblk, pad, slw = nblk[:-1], pad[:-1], slw[:-1]
                grow = grow[:-1]
                if dec is not None:
                    dec = dec[:-1]
                nl -= 1
                all_decode = all_decode or n_pf == 0
            if need_blocks:
                free_blocks -= need_blocks
                nblk = nblk + grow
            if nl == 0:
                continue

        # --- a stream that blocks the engine (the anti-pattern the page warns against) -------
        if blocking and n_slow:
            s_idx = rid[slw & ~pad]
            s_idx = s_idx[(gen[s_idx] >= buf)]
            if s_idx.size:
                wait_until = float(np.max(first_t[s_idx] + (gen[s_idx] - buf + 1) / slow_rate))
                if wait_until > now:
                    q_area += len(queue) * (wait_until - now) + area_until(wait_until)
                    k = bisect_right(arr_list, wait_until, ptr)
                    queue.extend(range(ptr, k))
                    ptr = k
                    stall += wait_until - now
                    now = wait_until

        # --- the step's bytes and FLOP --------------------------------------------------------
        if all_decode:
            sum_ctx = int(ctx.sum())
            kv_read, tokens, positions = sum_ctx, nl, sum_ctx
            p_tokens = p_positions = 0
            take = None
        else:
            pf = ~dec
            take = np.zeros(nl, np.int64)
            take[pf] = policy.prompt_take(cfg, pre[pf])
            ctx_dec = ctx[dec]
            sum_ctx = int(ctx_dec.sum())
            s0 = ctx[take > 0]
            tk = take[take > 0]
            kv_read = sum_ctx + int(s0.sum())
            tokens, positions = ctx_dec.size, sum_ctx
            p_tokens = int(tk.sum())
            p_positions = float(np.sum(tk * s0) + np.sum(tk * (tk - 1)) / 2)
        mem = (W + kvb * kv_read) / BW
        flop = (Wf * tokens + af * positions) / FL + (Wf * p_tokens + af * p_positions) / FLp
        dt = (mem if mem > flop else flop) + ar0 + ar1 * (tokens + p_tokens) + ovh
        end = now + dt

        ts_t.append(now)
        ts_dt.append(dt)
        ts_batch.append(nl)
        ts_kv.append((total_blocks - free_blocks) * B if paged else int(ctx.sum()))
        ts_q.append(len(queue))
        q_area += len(queue) * dt + area_until(end)
        busy += dt
        iterations += 1

        # --- advance: KV grows, tokens stream out ---------------------------------------------
        if all_decode:
            ctx += 1
            emit = None if paged else ~pad
        else:
            if dec.any():
                ctx[dec] += 1
            ctx += take
            pre -= take
            done_pf = (take > 0) & (pre == 0)
            n_pf -= int(np.count_nonzero(done_pf))
            emit = dec | done_pf
        er = rid if emit is None else rid[emit]
        ts_tok.append(int(er.size))
        if er.size:
            lt = last[er]
            seen = ~np.isnan(lt)
            if seen.all():
                gaps.append(end - lt)
            else:
                if seen.any():
                    gaps.append(end - lt[seen])
                first_t[er[~seen]] = end
            gen[er] += 1
            last[er] = end
            if emit is None:
                left -= 1
            else:
                left[emit] -= 1
        finished = left == 0 if emit is None else emit & (left == 0)
        any_finished = bool(finished.any())
        cut = None
        if n_slow and not blocking:
            live_slow = slw & ~pad & ~finished
            if live_slow.any():
                s_idx = rid[live_slow]
                over = gen[s_idx] - slow_rate * (end - first_t[s_idx]) > buf
                if over.any():
                    cut = np.zeros(nl, bool)
                    cut[np.flatnonzero(live_slow)[over]] = True
        now = end
        if any_finished or cut is not None:
            gone = finished if cut is None else finished | cut
            fr = rid[finished]
            finish_t[fr] = end
            status[fr] = DONE
            if cut is not None:
                status[rid[cut]] = CUT
                finish_t[rid[cut]] = end
            if not paged:
                pad = pad | gone
                if pad.all():  # the whole batch is done: the engine is idle and admits anew
                    rid, ctx, pre, left = rid[:0], ctx[:0], pre[:0], left[:0]
                    nblk, pad, slw = nblk[:0], pad[:0], slw[:0]
                    n_pf = n_slow = 0
            else:
                free_blocks += int(nblk[gone].sum())
                n_slow -= int(np.count_nonzero(slw & gone))
                keep = ~gone
                rid, ctx, pre, left = rid[keep], ctx[keep], pre[keep], left[keep]
                nblk, pad, slw = nblk[keep], pad[keep], slw[keep]

    # The clock stops at the last step's end (or at T after an idle tail). Arrivals during the
    # last step are already in the queue area; enqueue them. A truncated run ends at `now`, and
    # requests arriving after it are not part of the run.
    end_t = now if truncated else max(now, T)
    m = bisect_right(arr_list, end_t)
    if m > ptr:
        queue.extend(range(ptr, m))
        ptr = m
    qi = np.fromiter(queue, np.int64, len(queue))
    q_wait[qi] += end_t - q_enter[qi]

    keep = slice(0, m)
    arr, prompt, output, slow = arr[keep], prompt[keep], output[keep], slow[keep]
    status, q_wait = status[keep], q_wait[keep]
    first_t, finish_t, gen, preempt = first_t[keep], finish_t[keep], gen[keep], preempt[keep]
    ttft = first_t - arr
    done = status == DONE
    e2e = np.where(done, finish_t - arr, np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        tpot = np.where(done & (output >= 2), (finish_t - first_t) / (output - 1), np.nan)
    return BatchingResult(
        policy=cfg.policy, horizon_s=end_t,
        arrival_s=arr, prompt_tokens=prompt, output_tokens=output, slow=slow, status=status,
        queue_wait_s=q_wait, ttft_s=ttft, tpot_s=tpot, e2e_s=e2e, exit_s=finish_t, generated=gen,
        preemptions=preempt,
        t_s=np.array(ts_t), step_s=np.array(ts_dt), batch=np.array(ts_batch, np.int64),
        kv_tokens=np.array(ts_kv, np.int64), queue_len=np.array(ts_q, np.int64), tokens=np.array(ts_tok, np.int64),
        token_gaps_s=np.concatenate(gaps) if gaps else np.zeros(0),
        queue_area=q_area, busy_s=busy, stall_s=stall, kv_budget_tokens=total_blocks * B,
        iterations=iterations, truncated=truncated,
    )


# ---------------------------------------------------------------------------------------------
# The fixed contract: request-level batches on many GPUs


def form_batches(arr: np.ndarray, max_inputs: int, timeout_s: float) -> tuple[np.ndarray, np.ndarray]:
    """Dispatcher: a batch opens with its first request and is sealed when it holds
    `max_inputs` or when its first request has waited `timeout_s`, whichever is first.
    Returns each batch's first index and its seal time."""
    starts: list[int] = []
    seals: list[float] = []
    n = arr.size
    i = 0
    while i < n:
        deadline = arr[i] + timeout_s
        j_time = int(np.searchsorted(arr, deadline, side="right"))
        j = min(i + max_inputs, j_time)
        starts.append(i)
        seals.append(float(arr[j - 1]) if j - i == max_inputs else deadline)
        i = j
    return np.array(starts, np.int64), np.array(seals)


def _run_contract(cfg: Config, seed: int = 0) -> BatchingResult:
    rng = np.random.default_rng(seed)
    arr = arrivals(rng, cfg)
    n = arr.size
    T = cfg.horizon_s
    starts, seals = form_batches(arr, cfg.max_inputs, cfg.timeout_s)
    sizes = np.diff(np.append(starts, n))
    # Only batches sealed within the run are handed to the GPUs.
    sealed = seals <= T
    q = fifo(seals[sealed], np.full(int(sealed.sum()), cfg.call_s), cfg.gpus)
    batch_of = np.repeat(np.arange(starts.size), sizes)
    start_b = np.full(starts.size, np.inf)
    finish_b = np.full(starts.size, np.inf)
    start_b[sealed] = q.start_s
    finish_b[sealed] = q.finish_s
    start_r = start_b[batch_of]
    finish_r = finish_b[batch_of]
    status = np.where(finish_r <= T, DONE, np.where(start_r <= T, RUNNING, QUEUED)).astype(np.int8)
    # Waiting = from arrival until the call starts (in the dispatcher, then for a GPU).
    q_wait = np.minimum(start_r, T) - arr
    done = status == DONE
    e2e = np.where(done, finish_r - arr, np.nan)
    calls = int(sealed.sum())
    in_run = np.minimum(finish_b[sealed], T) - np.minimum(start_b[sealed], T)
    zeros = np.zeros(n)
    return BatchingResult(
        policy="fixed-contract", horizon_s=T,
        arrival_s=arr, prompt_tokens=np.zeros(n, np.int64), output_tokens=np.ones(n, np.int64),
        slow=np.zeros(n, bool), status=status, queue_wait_s=q_wait,
        ttft_s=e2e.copy(), tpot_s=np.full(n, np.nan), e2e_s=e2e, exit_s=np.where(done, finish_r, np.nan),
        generated=done.astype(np.int64),
        preemptions=np.zeros(n, np.int64),
        t_s=q.start_s, step_s=np.full(calls, cfg.call_s), batch=sizes[sealed].astype(np.int64),
        kv_tokens=np.zeros(calls, np.int64),
        queue_len=_waiting_at(arr, start_r, q.start_s), tokens=sizes[sealed].astype(np.int64),
        token_gaps_s=zeros[:0],
        queue_area=float(q_wait.sum()), busy_s=float(in_run.sum()) / cfg.gpus, stall_s=0.0,
        kv_budget_tokens=0, iterations=calls,
        extra={"batch_seal_s": seals, "gpus": cfg.gpus},
    )


def _waiting_at(arr: np.ndarray, start_r: np.ndarray, times: np.ndarray) -> np.ndarray:
    """Requests arrived and not yet in a call at each time (in the dispatcher or for a GPU)."""
    arrived = np.searchsorted(arr, times, side="right")
    started = np.searchsorted(np.sort(start_r), times, side="right")
    return (arrived - started).astype(np.int64)


def contract_backlog(cfg: Config, seed: int, at_s: np.ndarray) -> np.ndarray:
    """Requests waiting (arrived, not yet in a call) at each time in `at_s`."""
    r = _run_contract(cfg, seed)
    start_r = np.where(r.status == QUEUED, np.inf, r.arrival_s + r.queue_wait_s)
    return _waiting_at(r.arrival_s, start_r, np.asarray(at_s, float))


# ---------------------------------------------------------------------------------------------
# Bounds the tests hold every run to


def kv_capped_batch(cfg: Config, min_context: int) -> int:
    """Most sequences that can share a step: the scheduler's limit, or what the KV blocks hold
    when every sequence is at `min_context` (static reserves nothing per block: its limit)."""
    if cfg.policy in POLICIES and not POLICIES[cfg.policy].paged:
        return cfg.max_running
    blocks_each = max(1, -(-min_context // cfg.block_tokens))
    return max(1, min(cfg.max_running, (cfg.kv_budget_tokens // cfg.block_tokens) // blocks_each))


def tokens_per_s_ceiling(cfg: Config, min_context: int) -> float:
    """No run emits tokens faster than this. A step emits at most one token per sequence in it,
    at most `kv_capped_batch` sequences share a step, and a step emitting e tokens costs at least
    max(weights / bandwidth, e x 2 x active params / FLOP/s) + its all-reduces + overhead; e / that
    time grows with e, so the KV-capped batch gives the maximum."""
    b = kv_capped_batch(cfg, min_context)
    # a prompt token's FLOP may run at the faster prefill rate, so the bound takes the faster one
    fastest = max(cfg.replica_flops, cfg.prompt_flops)
    return b / (max(cfg.weight_bytes / cfg.replica_Bps, b * cfg.weight_flops_per_token / fastest)
                + cfg.allreduce_fixed_s + b * cfg.allreduce_per_token_s + cfg.overhead_s)
