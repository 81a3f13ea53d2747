"""moe-1t-training: the issue's figures from their own arithmetic, hand-worked variants, directions,
the layout's invariants, and the content's references."""

from __future__ import annotations

import math
import typing
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from models.content import load_content
from models.engine.training import STATES, TrainingState
from models.mock import draw_scenario_or_none
from models.training.moe_1t_training import EPSize, Params, remote_node_copies, solve

ROOT = Path(__file__).resolve().parents[2]
CONTENT = ROOT / "content" / "training" / "moe-1t-training.md"
DIRECTIVES = {("diagram", "layout"), ("chart", "a2a_vs_ep"), ("chart", "node_limit"), ("chart", "imbalance")}


def v(d, key):
    return d.value(key)


def hypergeometric_none(experts: int, per_node: int, k: int) -> float:
    """P(none of k distinct experts drawn from `experts` lands among a given node's `per_node`), as a product."""
    p = 1.0
    for i in range(k):
        p *= (experts - per_node - i) / (experts - i)
    return p


# --- the shapes, counted by hand from the models' config.json --------------------------------

D = 7168  # hidden size of both Kimi K2 and DeepSeek-V3
EXPERT_LAYER = 3 * D * 2048  # one routed expert in one layer: gated MLP, moe_intermediate_size 2048


def mla(heads):  # q through the 1536-rank bottleneck, kv down to 512 + 64 RoPE, kv up, o
    return D * 1536 + 1536 * heads * (128 + 64) + D * (512 + 64) + 512 * heads * (128 + 128) + heads * 128 * D


# Kimi K2 (huggingface.co/moonshotai/Kimi-K2-Instruct config.json): 61 layers, the first dense
# (intermediate 18432), 384 routed experts top-8 plus 1 shared, 64 heads, vocab 163840, untied head.
K2_MOE = 60
K2_TOTAL = 163840 * D * 2 + 61 * mla(64) + 3 * D * 18432 + K2_MOE * (385 * EXPERT_LAYER + D * 384)
K2_ACTIVE = 163840 * D * 2 + 61 * mla(64) + 3 * D * 18432 + K2_MOE * (9 * EXPERT_LAYER + D * 384)
K2_EXPERT = K2_MOE * EXPERT_LAYER
K2_ROUTED = 384 * K2_EXPERT
K2_ALWAYS_ON = K2_TOTAL - K2_ROUTED
# DeepSeek-V3 (arXiv 2412.19437 and its config.json): 3 dense layers, 58 MoE, 256 routed top-8 + 1
# shared, 128 heads, vocab 129280.
DSV3_TOTAL = 129280 * D * 2 + 61 * mla(128) + 3 * 3 * D * 18432 + 58 * (257 * EXPERT_LAYER + D * 256)
DSV3_ACTIVE = 129280 * D * 2 + 61 * mla(128) + 3 * 3 * D * 18432 + 58 * (9 * EXPERT_LAYER + D * 256)
# Megatron-LM's distributed-optimizer table, "float16 param, fp32 grads": 18 B, or 6 + 12/d sharded.
KEPT, SHARDED = 2 + 4, 4 + 4 + 4


def test_hand_counts_match_the_published_totals():
    assert K2_TOTAL == pytest.approx(1.0e12, rel=0.03)  # "1 trillion total"
    assert K2_ACTIVE == pytest.approx(32e9, rel=0.03)  # "32 billion activated"
    assert DSV3_TOTAL == pytest.approx(671e9, rel=0.01)
    assert DSV3_ACTIVE == pytest.approx(37e9, rel=0.02)


# --- the issue's figures, from their own arithmetic -------------------------------------------


def test_issue_figures_storage_follows_total_compute_follows_active():
    d = solve(Params())
    assert v(d, "total_params") == K2_TOTAL
    assert v(d, "active_params") == K2_ACTIVE
    assert v(d, "adam_bytes_per_param") == 18  # 2 bf16 weight + 4 fp32 grad buffer + 12 fp32 master, m, v
    assert v(d, "state_TB") == pytest.approx(K2_TOTAL * 18 / 1e12)  # 18.5 TB
    # The seed's 16 TB is the ZeRO paper's 16 B on a round 1T; on the counted shape it is 16.4 TB.
    assert v(d, "state_zero_paper_TB") == pytest.approx(K2_TOTAL * 16 / 1e12)
    assert 1e12 * 16 / 1e12 == pytest.approx(v(d, "state_zero_paper_TB"), rel=0.03)
    assert v(d, "checkpoint_TB") == pytest.approx(K2_TOTAL * 14 / 1e12)  # 14 B/param: no gradients
    assert v(d, "train_flops_per_token") == pytest.approx(6 * K2_ACTIVE)  # 1.97e11
    assert v(d, "compute_ratio_if_active") == pytest.approx(K2_TOTAL / K2_ACTIVE)  # 31.2, "~31x"
    assert round(v(d, "compute_ratio_if_active")) == 31
    assert v(d, "state_if_dense_active_TB") == pytest.approx(K2_ACTIVE * 18 / 1e12)  # 0.59 TB


def test_gpu_hours_for_fifteen_trillion_tokens_at_forty_percent():
    d = solve(Params())
    flops = 6 * K2_ACTIVE * 15e12  # 2.96e24
    per_gpu = 989e12 * 0.4  # H100 SXM dense BF16 at 40% MFU
    assert v(d, "run_flops") == pytest.approx(flops)
    assert v(d, "gpu_hours") == pytest.approx(flops / per_gpu / 3600)  # 2.08M h
    assert v(d, "training_days") == pytest.approx(flops / per_gpu / 3600 / 4096 / 24)  # 21.1 days
    assert v(d, "gpu_hours_if_active") == pytest.approx(v(d, "gpu_hours") * K2_TOTAL / K2_ACTIVE)


def test_deepseek_v3_reported_hours_imply_about_a_third_of_peak():
    # DeepSeek-V3 report, Table 1: 2,664K H800 GPU-hours for 14.8T pre-training tokens; the H800's
    # dense BF16 is the H100 SXM's 989 TFLOP/s.
    d = solve(Params())
    implied = 6 * DSV3_ACTIVE * 14.8e12 / (2.664e6 * 3600 * 989e12)
    assert v(d, "dsv3_implied_mfu") == pytest.approx(implied)
    assert 0.34 < v(d, "dsv3_implied_mfu") < 0.36


def test_layout_falls_out_of_the_budget():
    d = solve(Params())
    assert v(d, "expert_params") == pytest.approx(K2_EXPERT)
    assert v(d, "always_on_params") == pytest.approx(K2_ALWAYS_ON)  # ~11.8B
    assert v(d, "routed_params") == pytest.approx(K2_ROUTED)
    assert v(d, "state_budget_per_gpu_GB") == pytest.approx(40)  # 80 GB x 50%
    assert v(d, "min_gpus_for_state") == math.ceil(K2_TOTAL * 18 / 40e9)  # 462
    per_rank = K2_ALWAYS_ON + K2_ROUTED / 8  # EP 8: always-on replicated, experts split
    # PP 16 leaves 6 x per_rank / 16 = 50.7 GB of weights + grads: too much; PP 32 gives 26 GB.
    assert KEPT * per_rank / 16 / 1e9 > 40
    assert v(d, "pp_size") == 32
    assert v(d, "model_parallel_gpus") == 256
    assert v(d, "dp_size") == 16
    opt_gb = SHARDED * per_rank / 32 / 16 / 1e9  # ZeRO-1 over the 16 replicas
    assert v(d, "optimizer_per_gpu_GB") == pytest.approx(opt_gb)  # 3.25 GB
    assert v(d, "weights_grads_per_gpu_GB") == pytest.approx(KEPT * per_rank / 32 / 1e9)
    assert v(d, "state_per_gpu_GB") == pytest.approx(KEPT * per_rank / 32 / 1e9 + opt_gb)  # 29.2 GB
    assert v(d, "activation_room_GB") == pytest.approx(80 - v(d, "state_per_gpu_GB"))
    # With the ZeRO paper's bf16 gradients (4 B kept) 16 stages fit: 4 x per_rank / 16 + 12 x per_rank / 16 / 32.
    assert (4 * per_rank / 16 + 12 * per_rank / 16 / 32) / 1e9 < 40
    assert v(d, "pp_size_bf16_grads") == 16


def test_kimi_k2_reported_layout_reproduced():
    # Kimi K2 technical report (arXiv 2507.20534, section 2.4.2, "Parallelism for model scaling"):
    # H800s, 16-way PP x 16-way EP with ZeRO-1; "storing the model parameters in BF16 and their
    # gradient accumulation buffer in FP32 requires approximately 6 TB of GPU memory, distributed over
    # a model-parallel group of 256 GPUs"; "each GPU [holds] approximately 30 GB of GPU memory for all
    # states". Entered here: H800, EP 16, the page's 40 GB budget; the search must land on PP 16.
    d = solve(Params(gpu="H800", ep_size=16, gpus=4096))
    assert v(d, "weights_grads_one_copy_TB") == pytest.approx(KEPT * K2_TOTAL / 1e12)  # 6.16 TB
    assert v(d, "weights_grads_one_copy_TB") == pytest.approx(6, rel=0.05)  # "approximately 6 TB"
    per_rank = K2_ALWAYS_ON + K2_ROUTED / 16
    assert KEPT * per_rank / 8 / 1e9 > 40  # PP 8 would hold 55 GB of weights and gradients
    assert v(d, "pp_size") == 16
    assert v(d, "model_parallel_gpus") == 256  # the report's model-parallel group
    dp = 4096 // 256
    per_gpu = (KEPT * per_rank / 16 + SHARDED * per_rank / 16 / dp) / 1e9  # 27.6 + 3.5 GB
    assert v(d, "state_per_gpu_GB") == pytest.approx(per_gpu)
    assert v(d, "state_per_gpu_GB") == pytest.approx(30, rel=0.1)  # "approximately 30 GB"
    assert v(d, "k2_layout_state_per_gpu_GB") == pytest.approx(per_gpu)
    assert v(d, "k2_layout_weights_grads_TB") == pytest.approx(KEPT * (K2_ALWAYS_ON * 16 + K2_ROUTED) / 1e12)


def test_all_to_all_against_nvlink_and_the_nic():
    d = solve(Params())
    tps = 989e12 * 0.4 / (6 * K2_ACTIVE)  # 2,006 tokens/s per GPU
    per_token = 4 * 60 * (8 * 7 / 8) * 7168 * 2  # 4 all-to-alls x 60 MoE layers x 7 remote copies x 14,336 B
    assert v(d, "tokens_per_s_per_gpu") == pytest.approx(tps)
    assert v(d, "a2a_bytes_per_token") == pytest.approx(per_token)  # 24.08 MB
    assert v(d, "a2a_egress_per_gpu_GBps") == pytest.approx(per_token * tps / 1e9)  # 48.3 GB/s
    assert v(d, "nvlink_GBps") == pytest.approx(900 / 2)  # H100 NVLink 4, one way
    assert v(d, "nic_GBps") == pytest.approx(400 / 8)  # NDR 400G
    assert v(d, "a2a_share_if_all_nvlink") == pytest.approx(per_token * tps / 1e9 / 450)  # 11%
    assert v(d, "a2a_share_if_all_nic") == pytest.approx(per_token * tps / 1e9 / 50)  # 97%
    assert v(d, "nvlink_over_nic") == pytest.approx(9)
    # EP 8 fills one node: nothing on the NIC.
    assert v(d, "nic_copies_per_token") == 0
    assert v(d, "a2a_share") == pytest.approx(v(d, "a2a_share_if_all_nvlink"))


def test_cross_node_expert_parallelism_with_routing_limits():
    d = solve(Params())
    tps = 989e12 * 0.4 / (6 * K2_ACTIVE)
    scale = 4 * 60 * 7168 * 2 * tps / 1e9 / 50  # share of compute per NIC copy
    assert v(d, "wide_nic_copies_naive") == pytest.approx(8 * 56 / 64)  # 7
    none = hypergeometric_none(384, 48, 8)  # a node of 48 experts gets none of the 8
    assert v(d, "wide_nic_copies_dedup") == pytest.approx(8 * (1 - none) * 7 / 8)  # ~4.6
    none4 = hypergeometric_none(4 * 48, 48, 8)  # limited to 4 nodes: 8 experts among their 192
    assert v(d, "wide_nic_copies_limited") == pytest.approx(4 * (1 - none4) * 7 / 8)  # ~3.2
    assert v(d, "wide_nic_share_naive") == pytest.approx(7 * scale)
    assert v(d, "wide_nic_share_limited") == pytest.approx(v(d, "wide_nic_copies_limited") * scale)
    assert v(d, "wide_nic_share_limited") < v(d, "wide_nic_share_dedup") < v(d, "wide_nic_share_naive")


def test_imbalance_and_the_capacity_factor():
    d = solve(Params())
    s = 8 * K2_EXPERT / K2_ACTIVE  # routed experts' share of FLOPs, 64%
    r = v(d, "a2a_share")
    assert v(d, "expert_share_of_compute") == pytest.approx(s)
    assert v(d, "step_slowdown_from_imbalance") == pytest.approx((1 + 0.3 * s + 1.3 * r) / (1 + r))  # ~1.20
    assert v(d, "step_slowdown_capped") == pytest.approx((1 + 0.25 * s + 1.25 * r) / (1 + r))
    assert v(d, "dropped_share_hot_rank") == pytest.approx(1 - 1.25 / 1.3)  # 3.8%
    assert v(d, "gpu_hours_lost_to_imbalance") == pytest.approx(v(d, "gpu_hours") * (v(d, "step_slowdown_from_imbalance") - 1))


def test_llama3_interruption_rate_over_the_run():
    d = solve(Params())
    per_day = 419 / (54 * 16384) * 4096  # 1.94 a day on 4,096 GPUs
    assert v(d, "interruptions_per_day") == pytest.approx(per_day)
    assert v(d, "job_mtbf_h") == pytest.approx(24 / per_day)
    assert v(d, "expected_interruptions") == pytest.approx(per_day * v(d, "training_days"))
    assert v(d, "checkpoint_per_gpu_GB") == pytest.approx(K2_TOTAL * 14 / 1e9 / 4096)


# --- a variant worked by hand -------------------------------------------------------------------


def test_variant_b200_sixteen_way_ep_eight_thousand_gpus():
    p = Params(gpu="B200", gpus=8192, ep_size=16, train_tokens_t=20, train_mfu=0.35, state_share_of_hbm=0.6)
    d = solve(p)
    assert v(d, "state_budget_per_gpu_GB") == pytest.approx(108)  # 180 GB x 60%
    per_rank = K2_ALWAYS_ON + K2_ROUTED / 16  # 75.2B
    # 6 B x 75.2B / PP + optimizer <= 108 GB -> PP >= 4.2 -> 8
    assert KEPT * per_rank / 4 / 1e9 > 108
    assert v(d, "pp_size") == 8
    assert v(d, "dp_size") == 8192 // 128
    opt_gb = SHARDED * (K2_ALWAYS_ON * 16 + K2_ROUTED) / 8192 / 1e9  # 1.7 GB
    assert v(d, "optimizer_per_gpu_GB") == pytest.approx(opt_gb)
    assert v(d, "state_per_gpu_GB") == pytest.approx(KEPT * per_rank / 8 / 1e9 + opt_gb)  # 58 GB
    assert v(d, "gpu_hours") == pytest.approx(6 * K2_ACTIVE * 20e12 / (2250e12 * 0.35) / 3600)  # 1.39M h
    assert v(d, "training_days") == pytest.approx(v(d, "gpu_hours") / 8192 / 24)
    tps = 2250e12 * 0.35 / (6 * K2_ACTIVE)  # 3,994 tokens/s
    copy = 7168 * 2
    assert v(d, "remote_copies_per_token") == pytest.approx(8 * 15 / 16)
    assert v(d, "a2a_egress_per_gpu_GBps") == pytest.approx(4 * 60 * 7.5 * copy * tps / 1e9)  # 103 GB/s
    # NVLink: 3.5 copies to same-node experts, plus forwarding 7 of every 8 of the 4 copies for the other node.
    assert v(d, "nvlink_copies_per_token") == pytest.approx(8 * 7 / 16 + 8 * 8 / 16 * 7 / 8)
    assert v(d, "a2a_share_nvlink") == pytest.approx(4 * 60 * 7 * copy * tps / 1e9 / 900)
    # Two nodes of 192 experts each, one copy per node: the other node is touched unless all 8 land here.
    nic_copies = 1 - hypergeometric_none(384, 192, 8)
    assert v(d, "nic_copies_per_token") == pytest.approx(nic_copies)
    assert v(d, "a2a_share_nic") == pytest.approx(4 * 60 * nic_copies * copy * tps / 1e9 / 50)


def test_variant_deepseek_v3():
    d = solve(Params(model="DeepSeek-V3", gpu="H800", gpus=2048, ep_size=64, train_mfu=0.35, train_tokens_t=15))
    assert v(d, "state_TB") == pytest.approx(DSV3_TOTAL * 18 / 1e12)  # 12.1 TB
    assert v(d, "checkpoint_TB") == pytest.approx(DSV3_TOTAL * 14 / 1e12)  # 9.4 TB
    assert v(d, "compute_ratio_if_active") == pytest.approx(DSV3_TOTAL / DSV3_ACTIVE)
    assert v(d, "moe_layers") == 58  # 61 layers, first 3 dense
    assert v(d, "nvlink_GBps") == pytest.approx(400 / 2)  # the H800's cut NVLink, 400 GB/s both ways
    # 15T tokens at 35%: close to the 2.664M H800 GPU-hours the report gives for 14.8T.
    assert v(d, "gpu_hours") == pytest.approx(6 * DSV3_ACTIVE * 15e12 / (989e12 * 0.35) / 3600)
    assert v(d, "gpu_hours") == pytest.approx(2.664e6, rel=0.03)


def test_custom_gpu_and_custom_moe_run_and_dense_models_are_refused():
    # A made-up part: 96 GB, 400 TFLOP/s bf16, 300 GB/s links, 4 to a node.
    p = Params(gpu="Custom", custom_hbm_GB=96, custom_bf16_TFLOPs=400, custom_link_GBps=300, custom_domain=4)
    d = solve(p)
    assert v(d, "gpu_peak_flops") == pytest.approx(400e12)
    assert v(d, "gpus_per_node") == 4
    assert v(d, "ep_nodes") == 2  # EP 8 over nodes of 4
    assert v(d, "state_budget_per_gpu_GB") == pytest.approx(48)
    m = solve(Params(model="Custom", custom_experts=64, custom_experts_per_token=4, custom_moe_ffn_dim=2048))
    assert v(m, "routed_experts") == 64
    with pytest.raises(ValidationError, match="dense"):
        Params(model="Llama-3-70B")
    with pytest.raises(ValidationError, match="do not split evenly"):
        Params(model="Mixtral-8x7B", ep_size=16)
    with pytest.raises(ValidationError, match="whole scale-up domains"):
        Params(gpu="Custom", custom_domain=6)


def test_remote_node_copies_edge_cases():
    assert remote_node_copies(384, 8, 1, 4) == 0
    # With a limit of one node, a token stays on one node: it crosses with probability 7/8.
    assert remote_node_copies(384, 8, 8, 1) == pytest.approx(7 / 8)
    # No limit beyond the node count.
    assert remote_node_copies(384, 8, 8, 8) == pytest.approx(remote_node_copies(384, 8, 8, 16))


def test_infeasible_layout_is_rejected_in_plain_words():
    with pytest.raises(ValidationError, match="does not fit"):
        Params(gpus=1024, ep_size=4)


# --- moves the right way -----------------------------------------------------------------------


def valid(**kw):
    try:
        return Params(**kw)
    except ValidationError:
        assume(False)


scenario = st.fixed_dictionaries({
    "model": st.sampled_from(("Kimi-K2 1T", "DeepSeek-V3", "Mixtral-8x7B")),
    "gpu": st.sampled_from(("H100 SXM", "H200", "B200", "GB200 (NVL72)", "H800", "MI300X", "TPU v5p")),
    "training_state": st.sampled_from(typing.get_args(TrainingState)),
    "gpus": st.sampled_from(typing.get_args(Params.model_fields["gpus"].annotation)),
    "train_tokens_t": st.floats(1, 100),
    "train_mfu": st.floats(0.15, 0.7),
    "state_share_of_hbm": st.floats(0.2, 0.9),
    "ep_size": st.sampled_from(typing.get_args(EPSize)),
    "nic": st.sampled_from(typing.get_args(Params.model_fields["nic"].annotation)),
    "max_nodes_per_token": st.integers(1, 16),
    "router_imbalance": st.floats(1, 4),
    "capacity_factor": st.floats(1, 4),
})


@settings(max_examples=150, deadline=None)
@given(kw=scenario)
def test_layout_invariants(kw):
    p = valid(**kw)
    d = solve(p)
    pp = v(d, "pp_size")
    assert pp & (pp - 1) == 0  # a power of two
    assert pp * p.ep_size * v(d, "dp_size") <= p.gpus
    assert v(d, "state_per_gpu_GB") <= v(d, "state_budget_per_gpu_GB") * (1 + 1e-12)
    assert v(d, "state_per_gpu_GB") >= v(d, "perfect_shard_per_gpu_GB") * (1 - 1e-12)  # replication only adds
    if pp > 1:  # half as many stages would not fit the budget
        per_rank = v(d, "always_on_params") + v(d, "routed_params") / p.ep_size
        half = pp // 2
        dp_half = p.gpus // (half * p.ep_size)
        sb = STATES[p.training_state]
        state_half = (sb.replicated("zero1") * per_rank / half + sb.sharded("zero1") * per_rank / half / dp_half) / 1e9
        assert state_half > v(d, "state_budget_per_gpu_GB")
    assert v(d, "state_TB") > v(d, "checkpoint_TB")
    assert 1 <= v(d, "step_slowdown_capped") <= v(d, "step_slowdown_from_imbalance") * (1 + 1e-12)
    assert v(d, "wide_nic_copies_limited") <= v(d, "wide_nic_copies_dedup") * (1 + 1e-12)
    assert v(d, "wide_nic_copies_dedup") <= v(d, "wide_nic_copies_naive")


@settings(max_examples=100, deadline=None)
@given(kw=scenario, factor=st.floats(1.01, 3))
def test_more_tokens_cost_proportionally_more(kw, factor):
    p = valid(**kw)
    q = valid(**{**kw, "train_tokens_t": min(100, kw["train_tokens_t"] * factor)})
    a, b = solve(p), solve(q)
    assert v(b, "gpu_hours") / v(a, "gpu_hours") == pytest.approx(q.train_tokens_t / p.train_tokens_t)
    assert v(b, "state_TB") == v(a, "state_TB")  # tokens never change the state


@settings(max_examples=100, deadline=None)
@given(kw=scenario, m2=st.floats(0.15, 0.7))
def test_higher_mfu_fewer_hours_more_all_to_all_pressure(kw, m2):
    lo, hi = sorted((kw["train_mfu"], m2))
    a, b = solve(valid(**{**kw, "train_mfu": lo})), solve(valid(**{**kw, "train_mfu": hi}))
    assert v(b, "gpu_hours") <= v(a, "gpu_hours") * (1 + 1e-12)
    assert v(b, "a2a_egress_per_gpu_GBps") >= v(a, "a2a_egress_per_gpu_GBps") * (1 - 1e-12)
    assert v(b, "a2a_share") >= v(a, "a2a_share") * (1 - 1e-12)


@settings(max_examples=100, deadline=None)
@given(kw=scenario, i2=st.floats(1, 4))
def test_more_imbalance_never_speeds_the_step(kw, i2):
    lo, hi = sorted((kw["router_imbalance"], i2))
    a, b = solve(valid(**{**kw, "router_imbalance": lo})), solve(valid(**{**kw, "router_imbalance": hi}))
    assert v(b, "step_slowdown_from_imbalance") >= v(a, "step_slowdown_from_imbalance") * (1 - 1e-12)
    assert v(b, "dropped_share_hot_rank") >= v(a, "dropped_share_hot_rank") - 1e-9
    assert v(a, "step_slowdown_from_imbalance") >= 1 - 1e-12


@settings(max_examples=100, deadline=None)
@given(kw=scenario, m2=st.integers(1, 16))
def test_looser_node_limit_never_cuts_nic_traffic(kw, m2):
    lo, hi = sorted((kw["max_nodes_per_token"], m2))
    a, b = solve(valid(**{**kw, "max_nodes_per_token": lo})), solve(valid(**{**kw, "max_nodes_per_token": hi}))
    assert v(b, "wide_nic_copies_limited") >= v(a, "wide_nic_copies_limited") * (1 - 1e-12)
    assert v(b, "nic_copies_per_token") >= v(a, "nic_copies_per_token") * (1 - 1e-12)


def test_wider_ep_moves_traffic_onto_the_nic():
    shares = [v(solve(Params(ep_size=ep)), "a2a_share_nic") for ep in (8, 16, 32, 64)]
    assert shares[0] == 0
    assert shares == sorted(shares) and shares[1] > 0


def test_faster_nic_shrinks_the_nic_share():
    slow = solve(Params(ep_size=32, nic="IB NDR 400G"))
    fast = solve(Params(ep_size=32, nic="IB XDR 800G"))
    assert v(fast, "a2a_share_nic") == pytest.approx(v(slow, "a2a_share_nic") / 2)


# --- content -----------------------------------------------------------------------------------


def test_the_page_draws_its_figures_and_states_the_issues_facts():
    c = load_content(CONTENT)
    assert set(c.directives()) == DIRECTIVES
    text = " ".join(s.body for s in c.sections)
    for phrase in ("419 unexpected interruptions in 54 days on 16,384 GPUs", "DeepSeek-V3", "node"):
        assert phrase in text, phrase


def test_infiniband_traffic_bubble_and_activations_by_hand():
    d = solve(Params())
    tps = 989e12 * 0.4 / (6 * v(d, "active_params"))  # tokens/s one H100 trains at 40% MFU
    assert v(d, "tokens_per_s_per_gpu") == pytest.approx(tps)
    step = 2**26 / (4096 * tps)  # 67M-token global batch over 4,096 GPUs: about 8.2 s
    assert v(d, "step_s") == pytest.approx(step)
    pp, dp, params = v(d, "pp_size"), v(d, "dp_size"), v(d, "params_per_gpu")
    assert (pp, dp) == (32, 16)  # 8 EP x 32 PP x 16 DP = 4,096
    dp_bytes = 15 / 16 * params * (4 + 2)  # reduce-scatter fp32 grads + all-gather bf16 weights, ZeRO-1
    assert v(d, "dp_bytes_per_gpu_per_step") == pytest.approx(dp_bytes / 1e9)
    assert v(d, "dp_GBps") == pytest.approx(dp_bytes / 1e9 / step)
    pp_rate = tps * 31 * 2 * 7168 * 2  # 31 boundaries, forward activation + backward gradient, bf16 d_model
    assert v(d, "pp_GBps") == pytest.approx(pp_rate / 1e9)
    assert v(d, "a2a_nic_GBps") == 0  # EP 8 stays inside one NVLink node
    assert v(d, "ib_GBps") == pytest.approx(dp_bytes / 1e9 / step + pp_rate / 1e9)
    assert v(d, "ib_share_of_nic") == pytest.approx(v(d, "ib_GBps") / 50)  # NDR 400G = 50 GB/s
    m = 2**26 / (16 * 8 * 4096)  # microbatches per pipeline: 128
    assert v(d, "microbatches") == pytest.approx(128) == pytest.approx(m)
    assert v(d, "bubble_share") == pytest.approx(31 / (128 + 31))  # idle over idle + compute: 19.5% of the step
    assert v(d, "microbatches_at_16") == pytest.approx(64)
    assert v(d, "bubble_share_at_16") == pytest.approx(15 / (64 + 15))  # 19.0%: fewer stages barely help
    assert v(d, "bubble_depth_verdict") == "the stage count barely matters"
    assert v(d, "in_flight_microbatches") == 32
    act = 32 * 4096 * (61 / 32) * 34 * 7168  # first stage under 1F1B, selective recomputation
    assert v(d, "activation_GB") == pytest.approx(act / 1e9)  # 61 GB
    assert v(d, "activations_fit") != "yes"  # more than the 51 GB the state leaves
    full = solve(Params(act_bytes_per_token_layer_over_h=2))  # full recomputation keeps layer inputs only
    assert v(full, "activations_fit") == "yes"
    interleaved = solve(Params(virtual_stages=2))
    assert v(interleaved, "bubble_share") == pytest.approx(31 / (2 * 128 + 31))


def test_activation_fixes_and_ep_placement_by_hand():
    d = solve(Params())
    room = 80 - v(d, "state_per_gpu_GB")  # H100 HBM minus the state: about 50.8 GB
    per_byte = 32 * 4096 * (61 / 32) * 7168 / 1e9  # GB per byte of activation per hidden element
    assert v(d, "act_bytes_fit_max") == pytest.approx(room / per_byte)  # about 28 B: below selective's 34
    assert v(d, "microbatch_tokens_fit") == pytest.approx(4096 * room / (per_byte * 34))  # about 3,400 tokens
    fixed = solve(Params(microbatch_tokens=3072))  # below the fitted size
    assert v(fixed, "activations_fit") == "yes"
    assert v(d, "ep_placement") == "inside one NVLink domain"  # 8 <= 8
    wide = solve(Params(ep_size=16, gpus=4096))
    assert v(wide, "ep_placement").startswith("across")  # 16 > 8: the group spans two nodes
    frac = solve(Params(global_batch_tokens=5e7, microbatch_tokens=4096))
    raw = 5e7 / (v(frac, "dp_size") * 8 * 4096)
    assert v(frac, "microbatches") == max(1, int(raw))  # rounded down to whole microbatches


def test_bubble_is_a_share_of_the_step_and_an_unfilled_pipeline_is_refused():
    # 8 stages (bf16 grads on 16,384 H200s) and a 30M-token batch in 8,000-token microbatches: the
    # seed's mock draw 2 once showed a "233%" bubble with a single microbatch per pipeline.
    p = Params(gpus=16384, gpu="H200", state_share_of_hbm=0.4, training_state="bf16 weights and grads (ZeRO paper)",
               global_batch_tokens=3e7, microbatch_tokens=8000, virtual_stages=3)
    d = solve(p)
    pp, dp = v(d, "pp_size"), v(d, "dp_size")
    m = max(1, int(3e7 // (dp * 8 * 8000)))  # whole microbatches per pipeline
    assert v(d, "microbatches") == m
    assert v(d, "bubble_share") == pytest.approx((pp - 1) / (3 * m + pp - 1))
    assert 0 < v(d, "bubble_share") < 1  # a share of the step can never pass 100%
    assert (m >= pp) == d.feasible  # fewer microbatches than stages: the mock never draws it
    for seed in range(1, 6):  # every drawn scenario states a bubble below the whole step
        drawn = draw_scenario_or_none(Params, seed, solve=solve)
        if drawn is not None:
            dd = solve(drawn)
            assert dd.value("microbatches") >= dd.value("pp_size")
            assert dd.value("bubble_share") < 0.5


def test_the_seed_recomputes_just_enough_layers_in_full():
    d = solve(Params())
    act = 32 * 4096 * (61 / 32) * 34 * 7168 / 1e9  # 60.9 GB in flight on the first stage, selective level
    room = 80 - v(d, "state_per_gpu_GB")  # about 50.8 GB
    full = act * 2 / 34  # full recomputation keeps each layer's bf16 input: 2 B per hidden element
    assert v(d, "activation_GB_full_recompute") == pytest.approx(full)  # 3.6 GB
    share = (act - room) / (act - full)  # the smallest share of layers that brings 60.9 GB down to the room
    assert v(d, "recompute_layer_share") == pytest.approx(share)  # about 18%
    assert v(d, "activation_GB_planned") == pytest.approx(room)
    assert v(d, "microbatch_tokens_planned") == 4096  # no shrink needed
    assert v(d, "recompute_extra_compute") == pytest.approx(share * 2 / 6)  # one more forward: about 6%
    assert v(d, "activation_plan").startswith("fully recompute part")
    fits = solve(Params(microbatch_tokens=2048))  # half the microbatch: 30 GB fits as it is
    assert v(fits, "recompute_layer_share") == 0 and v(fits, "recompute_extra_compute") == 0
    assert v(fits, "activation_plan").startswith("keep selective")
    # 16 x the microbatch and 4 x the batch (still 32 microbatches in flight): even full recomputation overflows
    tight = solve(Params(microbatch_tokens=65536, global_batch_tokens=2**28))
    full_t = 32 * 65536 * (61 / 32) * 2 * 7168 / 1e9  # about 57 GB at 2 B per element
    assert v(tight, "activation_GB_full_recompute") == pytest.approx(full_t)
    assert v(tight, "recompute_layer_share") == 1
    assert v(tight, "microbatch_tokens_planned") == pytest.approx(65536 * room / full_t)
    assert v(tight, "activation_plan").endswith("shrink the microbatch")
