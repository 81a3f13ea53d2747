"""Training state: the bytes one parameter costs while it trains, as a named choice.

Megatron-LM's distributed-optimizer guide tabulates the bytes per parameter by the dtype of the
parameters and of the gradients, with the optimizer replicated and with it sharded over `d`
data-parallel ranks (docs.nvidia.com/megatron-core/developer-guide/latest/distrib_optimizer.html):

    float16 param, float16 grads     20      4 + 16/d
    float16 param, fp32 grads        18      6 + 12/d
    fp32 param, fp32 grads           16      8 + 8/d

Read as weights + gradients + optimizer state: a 16-bit parameter keeps an fp32 main copy and
Adam's fp32 m and v (12 B), and with 16-bit gradients also an fp32 main gradient (4 B more) that
the distributed optimizer shards with the rest. The ZeRO paper (Rajbhandari et al. 2019, arXiv
1910.02054, section 3.1) counts mixed-precision Adam as 2 + 2 + K with K = 12: 16 B, the same
16-bit weights and gradients without a separate fp32 gradient copy. ZeRO's stages shard what the
distributed optimizer does (stage 1: optimizer state), then the gradients (2), then the weights (3).

A checkpoint that resumes the run stores the weights and the optimizer's fp32 copies, never the
gradients or a main-gradient buffer (they are rebuilt by the next backward pass).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from models.core import Knob, StrictModel

TrainingState = Literal[
    "bf16 weights, fp32 grads (Megatron)",
    "bf16 weights and grads (ZeRO paper)",
    "bf16 weights and grads (Megatron)",
    "fp32 weights and grads",
]
ShardStage = Literal["none", "zero1", "zero2", "zero3"]


@dataclass(frozen=True)
class StateBytes:
    """Bytes per parameter, split by what each ZeRO stage shards."""

    weights: float
    grads: float
    optimizer: float  # fp32 main weights, Adam m and v, and an fp32 main gradient where kept
    checkpoint_optimizer: float  # the part of the optimizer state a resumable checkpoint stores
    source: str

    @property
    def total(self) -> float:
        return self.weights + self.grads + self.optimizer

    @property
    def checkpoint(self) -> float:
        return self.weights + self.checkpoint_optimizer

    def replicated(self, stage: ShardStage) -> float:
        """Bytes per parameter every data-parallel rank keeps whole."""
        return {"none": self.total, "zero1": self.weights + self.grads, "zero2": self.weights,
                "zero3": 0.0}[stage]

    def sharded(self, stage: ShardStage) -> float:
        """Bytes per parameter split over the data-parallel ranks."""
        return self.total - self.replicated(stage)

    def per_rank(self, stage: ShardStage, dp: int) -> float:
        return self.replicated(stage) + self.sharded(stage) / dp


_MEGATRON = "Megatron-LM distributed optimizer guide"
STATES: dict[str, StateBytes] = {
    "bf16 weights, fp32 grads (Megatron)": StateBytes(2, 4, 12, 12, f"{_MEGATRON}: 18, or 6 + 12/d sharded"),
    "bf16 weights and grads (ZeRO paper)": StateBytes(2, 2, 12, 12, "ZeRO paper, 2 + 2 + K with K = 12: 16"),
    "bf16 weights and grads (Megatron)": StateBytes(2, 2, 16, 12, f"{_MEGATRON}: 20, or 4 + 16/d sharded"),
    "fp32 weights and grads": StateBytes(4, 4, 8, 8, f"{_MEGATRON}: 16, or 8 + 8/d sharded"),
}


class TrainingStateKnobs(StrictModel):
    training_state: Annotated[TrainingState, Knob(
        "Training state per parameter",
        help="Weights, gradients and Adam state by dtype, as Megatron-LM's distributed-optimizer guide "
             "tabulates them (18, 20 or 16 B) or as the ZeRO paper counts mixed precision (16 B). The "
             "optimizer's fp32 copies are what a distributed optimizer (ZeRO-1) shards.",
        draw_choices=("bf16 weights, fp32 grads (Megatron)", "bf16 weights and grads (ZeRO paper)"))] = \
        "bf16 weights, fp32 grads (Megatron)"


def state_bytes(p: Any) -> StateBytes:
    return STATES[p.training_state]
