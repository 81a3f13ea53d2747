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
from functools import cached_property

from models.catalog import HBM_USABLE_FRACTION, INFER_FLOPS_PER_PARAM_TOKEN, LLM
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
class Replica:
    """One replica's engine. Efficiencies are fractions of peak; times in seconds."""

    model: LLM
    hw: Hardware
    tp: int
    weight_fmt: str = "bf16"
    kv_fmt: str = "bf16"
    compute_fmt: str = "bf16"
    hbm_efficiency: float = 0.8  # MBU a decode step achieves
    decode_mfu: float = 0.5
    prefill_mfu: float = 0.5
    usable_hbm_fraction: float = HBM_USABLE_FRACTION
    step_overhead_s: float = 0.0  # launches and sampling per step; the all-reduces are counted apart
    allreduce_latency_s: float = 0.0  # the fixed cost of one all-reduce, whatever its size
    attention_flops: bool = True

    # --- memory ---------------------------------------------------------------------------------

    @property
    def bytes_per_weight(self) -> float:
        return bytes_per_element(self.weight_fmt)

    @property
    def bytes_per_kv_element(self) -> float:
        return bytes_per_element(self.kv_fmt)

    @property
    def weight_bytes(self) -> float:
        return self.model.total_params * self.bytes_per_weight

    @property
    def kv_bytes_per_token(self) -> float:
        return self.model.kv_bytes_per_token(self.bytes_per_kv_element)

    @property
    def hbm_bytes(self) -> float:
        return self.tp * self.hw.hbm_bytes

    @property
    def usable_hbm_bytes(self) -> float:
        return self.hbm_bytes * self.usable_hbm_fraction

    @property
    def kv_room_bytes(self) -> float:
        return self.usable_hbm_bytes - self.weight_bytes

    def kv_batch_cap(self, context_tokens: float) -> float:
        """Sequences of `context_tokens` whose KV fits beside the weights (before the floor)."""
        return max(0.0, self.kv_room_bytes / (self.kv_bytes_per_token * context_tokens))

    # --- rates ----------------------------------------------------------------------------------

    @property
    def hbm_Bps(self) -> float:
        return self.tp * self.hw.hbm_Bps

    @property
    def achieved_hbm_Bps(self) -> float:
        return self.hbm_Bps * self.hbm_efficiency

    @property
    def peak_flops(self) -> float:
        return self.tp * self.hw.peak(self.compute_fmt)

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

    @cached_property
    def attention_flops_per_position(self) -> float:
        """Attention FLOP one token spends per earlier token (QK^T and AV, every head and layer)."""
        if not self.attention_flops:
            return 0.0
        m = self.model
        qk, v = m.head_dim, m.head_dim
        if m.attention == "MLA":  # keys carry the shared RoPE part too; values have their own width
            qk += m.qk_rope_head_dim or 0
            v = m.v_head_dim or m.head_dim
        return ATTENTION_FLOPS_PER_MAC * m.layers * m.heads * (qk + v)

    @property
    def weight_flops_per_token(self) -> float:
        return INFER_FLOPS_PER_PARAM_TOKEN * self.model.active_params

    def flops_per_token(self, position: float) -> float:
        return self.weight_flops_per_token + self.attention_flops_per_position * position

    # --- the tensor-parallel all-reduce -------------------------------------------------------------

    def allreduce_bytes(self, tokens: float) -> float:
        """One all-reduce's payload: each token's hidden state in bf16."""
        return tokens * self.model.d_model * ACTIVATION_BYTES

    def allreduce_s(self, tokens: float) -> float:
        """Every all-reduce of one forward pass over `tokens` tokens: latency plus a ring's bytes."""
        if self.tp == 1:
            return 0.0
        n = self.tp
        one = self.allreduce_latency_s + 2 * (n - 1) / n * self.allreduce_bytes(tokens) / self.hw.link_Bps_per_direction
        return self.model.layers * ALLREDUCES_PER_LAYER * one

    # --- decode -----------------------------------------------------------------------------------

    def decode_step(self, batch: float, context_tokens: float) -> DecodeStep:
        """One step of `batch` sequences, each reading `context_tokens` of KV."""
        read = self.weight_bytes + batch * self.kv_bytes_per_token * context_tokens
        flops = batch * self.flops_per_token(context_tokens)
        return DecodeStep(read, read / self.achieved_hbm_Bps, flops, flops / (self.peak_flops * self.decode_mfu),
                          self.allreduce_s(batch), self.step_overhead_s)

    def tpot_batch_cap(self, tpot_s: float, context_tokens: float) -> float:
        """The largest batch (before the floor) whose step meets `tpot_s`: each side is linear in
        the batch, so each gives its own cap and the tighter one holds."""
        fixed = self.step_overhead_s + self.allreduce_s(0)
        per_seq_ar = self.allreduce_s(1) - self.allreduce_s(0)
        kv_s = self.kv_bytes_per_token * context_tokens / self.achieved_hbm_Bps
        memory_cap = (tpot_s - fixed - self.weight_bytes / self.achieved_hbm_Bps) / (kv_s + per_seq_ar)
        per_seq_compute = self.flops_per_token(context_tokens) / (self.peak_flops * self.decode_mfu)
        compute_cap = (tpot_s - fixed) / (per_seq_compute + per_seq_ar)
        return max(0.0, min(memory_cap, compute_cap))

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
