"""models/engine/training.py against Megatron-LM's distributed-optimizer table and the ZeRO paper."""

from __future__ import annotations

import typing

import pytest
from pydantic import ValidationError

from models.engine.training import STATES, TrainingState, TrainingStateKnobs, state_bytes


def test_megatron_table_rows():
    # docs.nvidia.com/megatron-core/developer-guide/latest/distrib_optimizer.html, bytes per parameter
    # (non-distributed, distributed over d ranks):
    #   float16 param, float16 grads  20   4 + 16/d
    #   float16 param, fp32 grads     18   6 + 12/d
    #   fp32 param, fp32 grads        16   8 + 8/d
    rows = {"bf16 weights and grads (Megatron)": (20, 4, 16),
            "bf16 weights, fp32 grads (Megatron)": (18, 6, 12),
            "fp32 weights and grads": (16, 8, 8)}
    for name, (whole, kept, split) in rows.items():
        s = STATES[name]
        assert s.total == whole, name
        assert s.replicated("zero1") == kept, name
        assert s.sharded("zero1") == split, name
        for d in (1, 8, 64):
            assert s.per_rank("zero1", d) == pytest.approx(kept + split / d), name


def test_zero_paper_mixed_precision_adam():
    # ZeRO (arXiv 1910.02054) section 3.1: 2 + 2 + K, K = 12 -> 16 B; with N_d ranks, stage 1 keeps
    # 4 + 12/N_d, stage 2 keeps 2 + 14/N_d, stage 3 keeps 16/N_d (figure 1, Psi = 7.5B, N_d = 64:
    # 120 GB, 31.4 GB, 16.6 GB, 1.9 GB).
    s = STATES["bf16 weights and grads (ZeRO paper)"]
    psi, nd = 7.5e9, 64
    assert s.per_rank("none", nd) * psi / 1e9 == pytest.approx(120)
    assert s.per_rank("zero1", nd) * psi / 1e9 == pytest.approx((4 + 12 / 64) * 7.5)  # 31.4
    assert s.per_rank("zero2", nd) * psi / 1e9 == pytest.approx((2 + 14 / 64) * 7.5)  # 16.6
    assert s.per_rank("zero3", nd) * psi / 1e9 == pytest.approx(16 / 64 * 7.5)  # 1.9
    assert round(s.per_rank("zero1", nd) * psi / 1e9, 1) == 31.4
    assert round(s.per_rank("zero2", nd) * psi / 1e9, 1) == 16.6


def test_checkpoint_drops_gradients_and_main_gradient_buffers():
    assert STATES["bf16 weights and grads (ZeRO paper)"].checkpoint == 14  # 2 bf16 + 4 master + 4 m + 4 v
    assert STATES["bf16 weights, fp32 grads (Megatron)"].checkpoint == 14
    assert STATES["bf16 weights and grads (Megatron)"].checkpoint == 14  # the fp32 main grad is not saved
    assert STATES["fp32 weights and grads"].checkpoint == 12  # the weights are the master copy


def test_knob_offers_every_tabulated_state_and_refuses_others():
    assert set(typing.get_args(TrainingState)) == set(STATES)
    assert state_bytes(TrainingStateKnobs()).total == 18
    with pytest.raises(ValidationError):
        TrainingStateKnobs(training_state="fp8 everything")
