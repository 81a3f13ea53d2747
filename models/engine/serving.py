"""A replica serving one request shape at a TPOT target, and the fleet that carries a load.

    batch caps       memory: KV room / KV of one sequence at its longest
                     TPOT:   the largest batch whose decode step meets the target (the roofline's
                             bytes side and FLOP side each give one; the tighter holds)
    batch            the given batch if the question gives one, else max(1, min(both caps))
    decode context   prompt + output / 2: the average KV a decode step reads per sequence
    prefill          uncached prompt tokens at the prefill MFU, after the cached ones
    fleet            the fewest replicas whose prefill plus decode, at the batch each replica then
                     holds (each sequence served at the TPOT target: Little's law), stay within the
                     target utilization, and whose decode slots hold the sequences in flight

Every decode step rereads all the weights however few sequences ride in it, so a replica holding
fewer sequences than its cap pays nearly the full step for each of their tokens.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from models.engine.roofline import DecodeStep, Replica, floor_batch


@dataclass(frozen=True)
class Served:
    replica: Replica
    prompt_tokens: float
    output_tokens: float
    prefix_cache_hit: float
    tpot_s: float
    given_batch: int = 0  # 0: the batch the caps allow

    # The caps, the batch and the step's lines are computed once, here (the fleet search and the
    # sweeps read them thousands of times per slider move); frozen, so set with object.__setattr__.
    def __post_init__(self) -> None:
        put = lambda name, value: object.__setattr__(self, name, value)  # noqa: E731
        r = self.replica
        # memory: KV room / KV of one sequence at its longest
        put("kv_bytes_per_sequence", r.kv_bytes_per_token * (self.prompt_tokens + self.output_tokens))
        put("batch_memory_cap_continuous", max(0.0, r.kv_room_bytes / self.kv_bytes_per_sequence))
        put("batch_memory_cap", floor_batch(self.batch_memory_cap_continuous))
        # decode: each sequence reads its prompt and, on average, half its output
        put("decode_context_tokens", self.prompt_tokens + self.output_tokens / 2)
        # The decode step as lines in the batch (the fleet search evaluates it thousands of times);
        # the TPOT cap is where the binding side reaches the target.
        put("lines", r.step_lines(self.decode_context_tokens))
        put("batch_tpot_cap_continuous", max(0.0, min(self.lines.caps(self.tpot_s))))
        put("batch_tpot_cap", floor_batch(self.batch_tpot_cap_continuous))
        put("derived_batch", max(1, min(self.batch_memory_cap, self.batch_tpot_cap)))
        put("batch", self.given_batch or self.derived_batch)
        put("decode", self.step(self.batch))
        # prefill: the uncached prompt tokens, after the cached ones
        put("prefill_flops_per_request", r.prefill_flops(self.uncached_prompt_tokens, self.cached_prompt_tokens))
        put("prefill_s_per_request", r.prefill_s(self.uncached_prompt_tokens, self.cached_prompt_tokens))

    def step(self, batch: float) -> DecodeStep:
        return self.replica.decode_step(batch, self.decode_context_tokens)

    def step_s(self, batch: float) -> float:
        """`step(batch).step_s`, fast."""
        return self.lines.step_s(batch)

    @property
    def decode_step_s(self) -> float:
        return self.decode.step_s

    @property
    def decode_tokens_per_s(self) -> float:
        return self.batch / self.decode_step_s

    # --- prefill --------------------------------------------------------------------------------

    @property
    def uncached_prompt_tokens(self) -> float:
        return self.prompt_tokens * (1 - self.prefix_cache_hit)

    @property
    def cached_prompt_tokens(self) -> float:
        return self.prompt_tokens - self.uncached_prompt_tokens

    # prefill_flops_per_request and prefill_s_per_request (the uncached tokens after the cached
    # ones, at the prefill MFU): set in __post_init__.

    def with_prefix_cache_hit(self, hit: float) -> "Served":
        return replace(self, prefix_cache_hit=hit)


# --- the fleet -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fleet:
    prefill_replica_equivalents: float
    decode_replica_equivalents: float  # at the batch each replica holds, summed over the fleet
    replicas: int
    replicas_continuous: float  # before the ceiling
    held_batch: float  # sequences each replica decodes at once
    held_step_s: float  # its decode step at that batch


def held_batch(rate_per_replica: float, output_tokens: float, tpot_s: float) -> float:
    """Sequences a replica decodes at once when each is served at the TPOT target (Little's law)."""
    return rate_per_replica * output_tokens * tpot_s


def decode_busy(s: Served, rate_per_replica: float) -> tuple[float, float, float]:
    """(busy share, held batch, step) of one replica's decode at the batch it actually holds:
    tokens/s x step(b) / b, with at least one rider (below one sequence at a time each token is a
    step of its own)."""
    b = held_batch(rate_per_replica, s.output_tokens, s.tpot_s)
    riders = max(1.0, b)
    step = s.step_s(riders)
    return rate_per_replica * s.output_tokens * step / riders, b, step


def busy_share(s: Served, rate: float, replicas: float, prefill_s_per_request: float | None = None) -> float:
    """Busy share of each of `replicas` carrying `rate` requests/s: prefill plus decode."""
    pf = s.prefill_s_per_request if prefill_s_per_request is None else prefill_s_per_request
    return rate * pf / replicas + decode_busy(s, rate / replicas)[0]


def rate_at_busy(s: Served, replicas: float, target: float = 1.0,
                 prefill_s_per_request: float | None = None) -> float:
    """The request rate at which each of `replicas` is `target` busy: `busy_share` solved for the
    rate. Busy is linear in the rate on each side of the step, so this is closed-form, the
    inverse of `_replicas_for_busy`: with b = rate x output x TPOT / R >= 1 sequences each, busy is
    the larger over the sides (c, k) of c / TPOT + rate x (prefill + output x k) / R, and below one
    sequence rate x (prefill + output x step(1)) / R. 0 where the fixed costs alone exceed it."""
    pf = s.prefill_s_per_request if prefill_s_per_request is None else prefill_s_per_request
    o, tpot = s.output_tokens, s.tpot_s
    rate = math.inf
    for intercept, per_token in s.lines.sides:
        floor_share = intercept / tpot
        if floor_share >= target:
            return 0.0
        rate = min(rate, (target - floor_share) * replicas / (pf + o * per_token))
    if rate * o * tpot / replicas >= 1:
        return rate
    return target * replicas / (pf + o * s.step_s(1))


def running_batch(s: Served, rate_per_replica: float, prefill_s_per_request: float | None = None) -> float:
    """Sequences a replica holds when it steps as fast as it can (continuous batching): the fixed
    point of b = a x step(b), a the sequences per second of step time once prefill's share is taken
    out. The step is the larger of two lines in b, so the fixed point is the larger of each line's;
    inf when the replica cannot keep up at any batch."""
    pf = s.prefill_s_per_request if prefill_s_per_request is None else prefill_s_per_request
    free = 1 - rate_per_replica * pf
    if free <= 0:
        return math.inf
    a = rate_per_replica * s.output_tokens / free
    points = []
    for intercept, slope in s.lines.sides:
        if a * slope >= 1:
            return math.inf
        points.append(a * intercept / (1 - a * slope))
    return max(points)


def _replicas_for_busy(s: Served, rate: float, pf: float, target: float) -> float:
    """The continuous R where prefill / R plus decode busy at the batch each replica holds equals
    the target. With b = rate x output x TPOT / R sequences each (b >= 1), busy is the larger of two
    lines in 1/R, c + k / R, so each side gives its R and the larger holds; below one sequence at a
    time a replica steps once per token: busy = rate x (prefill + output x step(1)) / R."""
    o, tpot = s.output_tokens, s.tpot_s
    many = 0.0
    for intercept, per_token in s.lines.sides:
        floor_share = intercept / tpot
        if floor_share >= target:  # the weight read and fixed costs alone exceed the target
            many = math.inf
            break
        many = max(many, rate * (pf + o * per_token) / (target - floor_share))
    if many < math.inf and rate * o * tpot / many >= 1:
        return many
    return rate * (pf + o * s.step_s(1)) / target


def _replicas_for_slots(s: Served, rate: float, pf: float) -> float:
    """The continuous R at which the sequences each replica holds, stepping flat out, fit its batch."""
    batch = s.batch
    a_max = min(batch / (intercept + slope * batch) for intercept, slope in s.lines.sides)
    return rate * pf + rate * s.output_tokens / a_max


def fleet(s: Served, rate: float, target_utilization: float, prefill_s_per_request: float | None = None) -> Fleet:
    """The fewest replicas that carry `rate` requests/s within the target utilization and whose
    decode slots hold the sequences in flight. `prefill_s_per_request` overrides the prefill cost
    (0: prefill hidden inside decode steps)."""
    pf = s.prefill_s_per_request if prefill_s_per_request is None else prefill_s_per_request
    continuous = max(_replicas_for_busy(s, rate, pf, target_utilization), _replicas_for_slots(s, rate, pf))
    replicas = max(1, math.ceil(continuous - 1e-9))
    share, b, step = decode_busy(s, rate / replicas)
    return Fleet(rate * pf, share * replicas, replicas, continuous, b, step)


def served_problem(s: Served) -> str | None:
    """Why one sequence of this shape cannot be served at the target, in a sentence, or None."""
    r = s.replica
    if r.kv_room_bytes < s.kv_bytes_per_sequence:
        return (f"{r.model.name} needs {r.weight_bytes / 1e9:,.0f} GB of weights plus "
                f"{s.kv_bytes_per_sequence / 1e9:,.1f} GB of KV for one sequence, but {r.tp} × {r.hw.name} offer "
                f"{r.usable_hbm_bytes / 1e9:,.0f} GB usable. Use more accelerators per replica, a larger part, "
                f"a smaller weight or KV format, or a shorter sequence.")
    if s.given_batch > s.batch_memory_cap:
        return (f"A batch of {s.given_batch} sequences needs {s.given_batch * s.kv_bytes_per_sequence / 1e9:,.1f} GB "
                f"of KV at its longest; beside the weights, {r.tp} × {r.hw.name} hold "
                f"{s.batch_memory_cap} such sequences.")
    one = s.step(1)
    if one.step_s > s.tpot_s and not s.given_batch:
        return (f"One decode step of {r.model.name} on {r.tp} × {r.hw.name} takes at least "
                f"{one.step_s * 1000:,.1f} ms, more than the {s.tpot_s * 1000:,.0f} ms TPOT target. "
                f"Loosen the target, add accelerators per replica or pick a faster part.")
    return None
