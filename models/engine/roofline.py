"""The one roofline every LLM page runs: a replica of `tp` accelerators serving one model.

    weights            total parameters x bytes per weight (every expert is resident)
    KV per token       2 (K, V) x layers x KV heads x head dim x bytes per KV element (MLA: the latent)
    FLOP per token     2 x active parameters, plus attention 2 x layers x heads x (qk + v width) per
                       earlier token when that term is counted (the textbook 2.P.n leaves it out)
    decode step        max(bytes read / (HBM B/s x MBU), FLOP / (peak x decode MFU))
                       + the tensor-parallel all-reduces + a fixed cost per step
    all-reduce         2 per layer (after attention, after the MLP) of tokens x d_model x 2 B: a fixed
                       latency each, plus 2 (tp - 1) / tp of the payload over each link (a ring's
                       bandwidth term). Measured, a TP-8 all-reduce on H100 costs about 6 us at
                       512 B and 34 us at 1 MB (SGLang PR 2904, custom all-reduce): this model is
                       right for the small decode messages and optimistic near a megabyte
    prefill            uncached tokens x FLOP per token / (peak x prefill MFU) + its all-reduces

MBU (model bandwidth utilization) is the share of peak HBM bandwidth a decode step achieves; MFU
the share of dense peak FLOP/s. Decode and prefill get their own MFU: a decode GEMM is a few rows
tall and runs far from peak, a prefill GEMM is thousands of rows and runs near it, and one knob
for both turns decode compute-bound on paper.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from models.catalog import HBM_USABLE_FRACTION, INFER_FLOPS_PER_PARAM_TOKEN, LLM
from models.engine.defaults import DEFAULT_DECODE_MFU, DEFAULT_HBM_EFFICIENCY, DEFAULT_PREFILL_MFU
from models.engine.hardware import Hardware
from models.engine.precision import ACTIVATION_BYTES, bytes_per_element

ALLREDUCES_PER_LAYER = 2  # Megatron-style tensor parallelism: attention output and MLP output
ATTENTION_FLOPS_PER_MAC = 2


@dataclass(frozen=True)
class DecodeStep:
    bytes_read: float
    memory_s: float  # the bytes at the achieved bandwidth
    flops: float
    compute_s: float  # the FLOP at the decode MFU
    allreduce_s: float
    overhead_s: float

    @property
    def roofline_s(self) -> float:
        return max(self.memory_s, self.compute_s)

    @property
    def step_s(self) -> float:
        return self.roofline_s + self.allreduce_s + self.overhead_s

    @property
    def bound(self) -> str:
        return "memory" if self.memory_s >= self.compute_s else "compute"


@dataclass(frozen=True)
class StepLines:
    """A forward pass as three lines in the batch b, each (value at b = 0, slope per sequence):
    the bytes side, the FLOP side, and the all-reduces plus the fixed cost, which add to whichever
    side binds. Every piece of a step is linear in b, so the step is

        step(b) = max(memory0 + memory1 b, compute0 + compute1 b) + extra0 + extra1 b

    and the batch a time budget allows is closed-form on each side (`caps`). The fleet search,
    the chunked-prefill step and speculative verification all solve on these lines."""

    memory: tuple[float, float]
    compute: tuple[float, float]
    extra: tuple[float, float]

    def step_s(self, batch: float) -> float:
        return (max(self.memory[0] + self.memory[1] * batch, self.compute[0] + self.compute[1] * batch)
                + self.extra[0] + self.extra[1] * batch)

    @property
    def sides(self) -> tuple[tuple[float, float], tuple[float, float]]:
        """Each side with the extra added: (intercept, slope) of the bytes side, then the FLOP side."""
        e0, e1 = self.extra
        return (self.memory[0] + e0, self.memory[1] + e1), (self.compute[0] + e0, self.compute[1] + e1)

    def caps(self, budget_s: float) -> tuple[float, float]:
        """The batch (before the floor) at which each side, with the extra, reaches `budget_s`."""
        fixed, per = budget_s - self.extra[0], self.extra[1]
        return ((fixed - self.memory[0]) / (self.memory[1] + per),
                (fixed - self.compute[0]) / (self.compute[1] + per))


@dataclass(frozen=True)
class Replica:
    """One replica's engine. Efficiencies are fractions of peak; times in seconds."""

    model: LLM
    hw: Hardware
    tp: int
    weight_fmt: str = "bf16"
    kv_fmt: str = "bf16"
    compute_fmt: str = "bf16"
    hbm_efficiency: float = DEFAULT_HBM_EFFICIENCY  # MBU a decode step achieves
    decode_mfu: float = DEFAULT_DECODE_MFU
    prefill_mfu: float = DEFAULT_PREFILL_MFU
    usable_hbm_fraction: float = HBM_USABLE_FRACTION
    step_overhead_s: float = 0.0  # launches and sampling per step; the all-reduces are counted apart
    allreduce_latency_s: float = 0.0  # the fixed cost of one all-reduce, whatever its size
    attention_flops: bool = True

    # Every figure below that depends on the fields only is computed once, here: a sweep solves a
    # page hundreds of times per slider move, and each solve reads these dozens of times (as
    # properties they were half of an LLM page's solve). Set with object.__setattr__ because the
    # dataclass is frozen; `replace()` builds a new Replica, so they never go stale.
    def __post_init__(self) -> None:
        put = lambda name, value: object.__setattr__(self, name, value)  # noqa: E731
        m, hw = self.model, self.hw
        put("bytes_per_weight", bytes_per_element(self.weight_fmt))
        put("bytes_per_kv_element", bytes_per_element(self.kv_fmt))
        put("weight_bytes", m.total_params * self.bytes_per_weight)
        put("kv_bytes_per_token", m.kv_bytes_per_token(self.bytes_per_kv_element))
        put("hbm_bytes", self.tp * hw.hbm_bytes)
        put("usable_hbm_bytes", self.hbm_bytes * self.usable_hbm_fraction)
        put("kv_room_bytes", self.usable_hbm_bytes - self.weight_bytes)
        put("hbm_Bps", self.tp * hw.hbm_Bps)
        put("achieved_hbm_Bps", self.hbm_Bps * self.hbm_efficiency)
        put("weight_flops_per_token", INFER_FLOPS_PER_PARAM_TOKEN * m.active_params)
        put("attention_flops_per_position", self._attention_flops_per_position())
        put("decode_attention_flops_per_position", self._decode_attention_flops_per_position())
        # All-reduces of a pass over n tokens: fixed + per_token x n (0 and 0 on one accelerator).
        if self.tp == 1:
            fixed = per_token = 0.0
        else:
            calls = m.layers * ALLREDUCES_PER_LAYER
            ring = 2 * (self.tp - 1) / self.tp / hw.link_Bps_per_direction
            fixed, per_token = calls * self.allreduce_latency_s, calls * ring * m.d_model * ACTIVATION_BYTES
        peak = hw.peak_flops.get(self.compute_fmt)
        put("_peak_flops", None if peak is None else self.tp * peak)
        put("_allreduce_fixed_s", fixed)
        put("_allreduce_per_token_s", per_token)

    # --- memory ---------------------------------------------------------------------------------
    # bytes_per_weight, bytes_per_kv_element, weight_bytes = total params x bytes per weight,
    # kv_bytes_per_token (the model's KV elements x bytes per element), hbm_bytes = tp x HBM,
    # usable_hbm_bytes = that x the usable fraction, kv_room_bytes = usable - weights: set above.

    def kv_batch_cap(self, context_tokens: float) -> float:
        """Sequences of `context_tokens` whose KV fits beside the weights (before the floor)."""
        return max(0.0, self.kv_room_bytes / (self.kv_bytes_per_token * context_tokens))

    # --- rates ----------------------------------------------------------------------------------

    # hbm_Bps = tp x the part's bandwidth, achieved_hbm_Bps = that x the MBU: set above.

    @property
    def peak_flops(self) -> float:
        """tp x the part's dense peak in the compute format (a ValueError if it has none)."""
        if self._peak_flops is None:
            self.hw.peak(self.compute_fmt)  # raises, saying which format the part lacks
        return self._peak_flops

    @property
    def ridge_flops_per_byte(self) -> float:
        """FLOP per byte above which a kernel on this replica is compute-bound, at peak."""
        return self.peak_flops / self.hbm_Bps

    @property
    def critical_batch(self) -> float:
        """The batch at which a decode step's weight FLOP catch up with its weight bytes, at peak:
        each weight brings 2 FLOP per sequence and costs its bytes once, so B* = ridge x bytes / 2.
        (The KV read only pushes the real crossover further out.)"""
        return self.ridge_flops_per_byte * self.bytes_per_weight / INFER_FLOPS_PER_PARAM_TOKEN

    # --- FLOP -----------------------------------------------------------------------------------

    def _attention_flops_per_position(self) -> float:
        """Attention FLOP one token spends per earlier token (QK^T and AV, every head and layer)."""
        if not self.attention_flops:
            return 0.0
        m = self.model
        qk, v = m.head_dim, m.head_dim
        if m.attention == "MLA":  # keys carry the shared RoPE part too; values have their own width
            qk += m.qk_rope_head_dim or 0
            v = m.v_head_dim or m.head_dim
        return ATTENTION_FLOPS_PER_MAC * m.layers * m.heads * (qk + v)

    def _decode_attention_flops_per_position(self) -> float:
        """What a decoded token spends per cached token. MLA decodes with its up-projections absorbed
        into the query and the output (vLLM's "data-movement friendly" path for decode, FlashMLA,
        SGLang): each head's query meets the cached latent and RoPE key, and the attention sums the
        latent, 2 x layers x heads x ((latent + rope) + latent), 3.4 times the count on decompressed
        K and V for DeepSeek-V3 (which prefill runs, the "compute friendly" path). Other attention
        decodes as it prefills. (vllm/v1/attention/backends/mla/common.py explains both paths.)"""
        m = self.model
        if m.attention != "MLA" or not self.attention_flops:
            return self.attention_flops_per_position
        return ATTENTION_FLOPS_PER_MAC * m.layers * m.heads * (2 * m.kv_lora_rank + (m.qk_rope_head_dim or 0))

    def flops_per_token(self, position: float) -> float:
        """A prompt token's FLOP at `position` (prefill's attention)."""
        return self.weight_flops_per_token + self.attention_flops_per_position * position

    def decode_flops_per_token(self, context_tokens: float) -> float:
        """A decoded token's FLOP over `context_tokens` of cache (decode's attention)."""
        return self.weight_flops_per_token + self.decode_attention_flops_per_position * context_tokens

    # --- the tensor-parallel all-reduce -------------------------------------------------------------

    def allreduce_bytes(self, tokens: float) -> float:
        """One all-reduce's payload: each token's hidden state in bf16."""
        return tokens * self.model.d_model * ACTIVATION_BYTES

    def allreduce_s(self, tokens: float) -> float:
        """Every all-reduce of one forward pass over `tokens` tokens: latency plus a ring's bytes."""
        return self._allreduce_fixed_s + self._allreduce_per_token_s * tokens

    # --- decode -----------------------------------------------------------------------------------

    def decode_step(self, batch: float, context_tokens: float) -> DecodeStep:
        """One step of `batch` sequences, each reading `context_tokens` of KV."""
        return self.pass_step(batch, context_tokens)

    def pass_step(self, batch: float, context_tokens: float, positions: int = 1, chunk_tokens: float = 0.0,
                  chunk_start: float = 0.0) -> DecodeStep:
        """One forward pass: `batch` sequences at `context_tokens` each, each scoring `positions`
        tokens (1 for decode; k + 1 when a speculative draft of k is verified: the weights and each
        sequence's KV are read once for all of them, the FLOP and all-reduce payload grow k + 1
        times), plus a prompt chunk of `chunk_tokens` starting at position `chunk_start` (chunked
        prefill: it reads that prefix's KV once and runs at the prefill MFU)."""
        read = self.weight_bytes + batch * self.kv_bytes_per_token * context_tokens
        flops = batch * positions * self.decode_flops_per_token(context_tokens)
        compute_s = flops / (self.peak_flops * self.decode_mfu)
        tokens = batch * positions
        if chunk_tokens:
            read += self.kv_bytes_per_token * chunk_start
            chunk = self.prefill_flops(chunk_tokens, chunk_start)
            flops += chunk
            compute_s += chunk / (self.peak_flops * self.prefill_mfu)
            tokens += chunk_tokens
        return DecodeStep(read, read / self.achieved_hbm_Bps, flops, compute_s, self.allreduce_s(tokens),
                          self.step_overhead_s)

    def step_lines(self, context_tokens: float, positions: int = 1, chunk_tokens: float = 0.0,
                   chunk_start: float = 0.0) -> StepLines:
        """`pass_step` as lines in the batch, read off it at 0 and 1 sequence."""
        zero = self.pass_step(0, context_tokens, positions, chunk_tokens, chunk_start)
        one = self.pass_step(1, context_tokens, positions, chunk_tokens, chunk_start)
        e0, e1 = zero.allreduce_s + zero.overhead_s, one.allreduce_s + one.overhead_s
        return StepLines((zero.memory_s, one.memory_s - zero.memory_s), (zero.compute_s, one.compute_s - zero.compute_s),
                         (e0, e1 - e0))

    def tpot_batch_cap(self, tpot_s: float, context_tokens: float) -> float:
        """The largest batch (before the floor) whose step meets `tpot_s`: each side is linear in
        the batch, so each gives its own cap and the tighter one holds."""
        return max(0.0, min(self.step_lines(context_tokens).caps(tpot_s)))

    def mbu(self, step: DecodeStep) -> float:
        """Model bandwidth utilization over a whole step: bytes read / (step time x peak HBM B/s)."""
        return step.bytes_read / (step.step_s * self.hbm_Bps)

    # --- prefill ----------------------------------------------------------------------------------

    def prefill_flops(self, tokens: float, cached_tokens: float = 0.0) -> float:
        """FLOP for `tokens` new prompt tokens after `cached_tokens` already in the KV cache."""
        pairs = tokens * cached_tokens + tokens * (tokens - 1) / 2  # earlier positions each attends to
        return tokens * self.weight_flops_per_token + self.attention_flops_per_position * pairs

    def prefill_s(self, tokens: float, cached_tokens: float = 0.0) -> float:
        if tokens <= 0:
            return 0.0
        return (self.prefill_flops(tokens, cached_tokens) / (self.peak_flops * self.prefill_mfu)
                + self.allreduce_s(tokens))


def floor_batch(cap: float) -> int:
    """Whole sequences: the floor, with a hair of slack for float round-off at exact fits."""
    return max(0, math.floor(cap + 1e-9))
