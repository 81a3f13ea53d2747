"""KV cache tiers: seed figures by the seed's arithmetic, hand-worked variants, directions, content."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from models.content import load_content
from models.core import knobs_of
from models.serving.kv_cache_tiers import (
    SIM_MAX_TURNS, Params, expected_min_think, sim_config, sim_window_minutes, simulate, solve, think_cdf,
)

ROOT = Path(__file__).resolve().parents[2]
CONTENT = ROOT / "content" / "serving" / "kv-cache-tiers.md"
DIRECTIVES = {("diagram", "tiers"), ("chart", "reload_vs_recompute"), ("chart", "shares_vs_think"), ("sim", "kv-tiers")}

# Hand constants (the seed's and the datasheets' own figures, typed here on purpose).
KV_TOKEN = 2 * 80 * 8 * 128 * 2  # K and V x layers x KV heads x head_dim x bf16 bytes = 327,680
PCIE5_X16 = 32e9 * 16 * (128 / 130) / 8  # 63.0 GB/s each way
NVME5 = 14e9
# Llama-3-70B's parameters counted matrix by matrix: untied embeddings, q/k/v/o, a SwiGLU MLP.
N70 = 2 * 128_256 * 8192 + 80 * (2 * 8192 * 8192 + 2 * 8192 * 1024 + 3 * 8192 * 28_672)  # 70.55e9
W = 2 * N70  # FLOP per token through the weights
A = 2 * 2 * 80 * 64 * 128  # attention FLOP per earlier token: QK^T and AV, 2 FLOP a MAC, 64 query heads
AR_LATENCY_S = 160 * 6e-6  # 2 all-reduces a layer at the engine's 6 µs each


def ring_s_per_token(tp=8, link=450e9):
    """Each token's bf16 hidden state over a ring: 160 x 2 (tp − 1) / tp x 8,192 x 2 B per link."""
    return 160 * 2 * (tp - 1) / tp * 8192 * 2 / link


def w_eff(F, tp=8):
    """The break-evens' FLOP per token: the exact pairs take A / 2 off, the ring's bytes add their time x F."""
    return W - A / 2 + ring_s_per_token(tp) * F


def crossing_by_hand(bandwidth_Bps, F, tp=8):
    """Where reload (kv n / B) meets recompute ((w_eff n + A n^2 / 2) / F + the all-reduces' latency):
    the larger root of A n^2 / (2F) − g n + c = 0, g = kv / B − w_eff / F, by the quadratic formula."""
    g = KV_TOKEN / bandwidth_Bps - w_eff(F, tp) / F
    k = A / F
    return (g + math.sqrt(g * g - 2 * k * AR_LATENCY_S)) / k


def v(d, key):
    return d.value(key)


def recompute_by_hand(n: float, flops_per_s: float, tp: int = 8) -> float:
    """The engine's prefill: weights and exact causal pairs at the prefill rate, plus the all-reduces."""
    return (W * n + A * n * (n - 1) / 2) / flops_per_s + AR_LATENCY_S + ring_s_per_token(tp) * n


# --- the seed's own arithmetic ------------------------------------------------------------------


def test_seed_figures():
    d = solve(Params())
    assert v(d, "kv_bytes_per_token") == KV_TOKEN == 327_680
    assert v(d, "kv_kib_per_token") == 320  # "320 KB" is binary kilobytes
    assert v(d, "conversation_kv_bytes") == 30_000 * 327_680  # 9.8304e9 B
    assert v(d, "conversation_kv_bytes") / 1e9 == pytest.approx(9.8, abs=0.05)  # "~9.8 GB", the seed's "10 GB"
    # HBM: 8 x 80 GB x 0.9 usable - 141.1 GB of bf16 weights = 434.9 GB; 44 conversations of 9.83 GB.
    assert v(d, "hbm_kv_room_bytes") == pytest.approx(0.9 * 8 * 80e9 - 2 * N70)
    assert v(d, "hbm_room_conversations") == 44
    assert v(d, "hbm_cache_conversations") == 5  # 50 GB / 9.83 GB
    assert v(d, "dram_cache_conversations") == 101  # 1 TB / 9.83 GB
    # Tier bandwidths: 8 GPUs x 63.0 GB/s x 0.8; one Gen5 drive x 14 GB/s x 0.5.
    dram_Bps = 8 * PCIE5_X16 * 0.8
    assert v(d, "dram_reload_Bps") == pytest.approx(dram_Bps)  # 403.3 GB/s
    assert v(d, "ssd_reload_Bps") == pytest.approx(7e9)
    assert v(d, "reload_s_dram") == pytest.approx(9.8304e9 / dram_Bps)  # 24.4 ms
    assert v(d, "reload_s_dram") == pytest.approx(0.02437, abs=1e-4)
    assert v(d, "reload_s_ssd") == pytest.approx(9.8304e9 / 7e9)  # 1.404 s
    # Recompute: 2 x 70.55e9 x 30,000 = 4.233e15; attention 2,621,440 x 30,000 x 29,999 / 2 = 1.180e15;
    # 5.413e15 FLOP over 8 x 989e12 x 0.6 (the engine's prefill MFU) = 4.747e15 FLOP/s = 1.140 s, plus
    # 160 all-reduces of 6 µs + 1.75 x 30,000 x 8,192 x 2 B / 450 GB/s (1.91 ms each): 0.307 s. 1.447 s in all.
    F = 8 * 989e12 * 0.6
    assert v(d, "recompute_weight_flops") == pytest.approx(2 * N70 * 30_000) == pytest.approx(4.233e15, rel=1e-3)
    assert v(d, "recompute_attention_flops") == pytest.approx(2_621_440 * 30_000 * 29_999 / 2)
    assert v(d, "recompute_allreduce_s") == pytest.approx(AR_LATENCY_S + ring_s_per_token() * 30_000)
    assert v(d, "recompute_allreduce_s") == pytest.approx(0.307, abs=0.001)
    assert v(d, "recompute_s") == pytest.approx(recompute_by_hand(30_000, F))
    assert v(d, "recompute_s") == pytest.approx(1.447, abs=0.001)
    assert v(d, "recompute_gpu_seconds") == pytest.approx(8 * 1.447, abs=0.01)
    assert v(d, "attention_share") == pytest.approx(1.18e15 / 5.413e15, abs=0.0005)
    # Break-evens: 9.8304e9 B / 1.447 s = 6.79 GB/s; at short prefixes 327,680 x 4.747e15 / w_eff,
    # w_eff = 1.411e11 − 1.3e6 + 10.2 µs x 4.747e15 = 1.895e11 FLOP a token: 8.21 GB/s.
    assert v(d, "break_even_bandwidth_Bps") == pytest.approx(9.8304e9 / recompute_by_hand(30_000, F))
    assert v(d, "break_even_bandwidth_Bps") / 1e9 == pytest.approx(6.79, abs=0.01)
    assert v(d, "break_even_bandwidth_short_Bps") == pytest.approx(KV_TOKEN * F / w_eff(F))
    assert v(d, "break_even_bandwidth_short_Bps") / 1e9 == pytest.approx(8.21, abs=0.01)
    # SSD at 7 GB/s is below 8.21: it wins above n* = 2 (kv F / B - w_eff) / a = 24,967 tokens
    # without the all-reduces' 0.96 ms latency, 24,827 with it, so the seed's 30,000-token
    # conversation is just past the crossing.
    assert round(2 * (KV_TOKEN * F / 7e9 - w_eff(F)) / A) == 24_967
    n_star = crossing_by_hand(7e9, F)
    assert v(d, "break_even_prefix_tokens_ssd") == pytest.approx(n_star)
    assert round(n_star) == 24_827
    assert v(d, "break_even_prefix_tokens_dram") == "none (DRAM reload wins at every prefix length)"
    assert v(d, "faster_at_this_length") == "SSD reload"  # 1.404 s against 1.447 s at 30k tokens
    assert v(d, "ssd_drives_to_always_win") == 2  # ceil(8.21 / 7)
    assert v(d, "dram_speedup") == pytest.approx(1.447 / 0.02437, rel=2e-3)


def test_crossing_is_where_the_curves_meet():
    """At n* the SSD reload and the recompute take the same time (both sides computed by hand)."""
    # A slower SSD path (35% of one drive: 4.9 GB/s) puts the crossing well inside the range.
    d = solve(Params(ssd_efficiency=0.35))
    n = v(d, "break_even_prefix_tokens_ssd")
    F = 8 * 989e12 * 0.6
    assert n == pytest.approx(crossing_by_hand(4.9e9, F))  # ~97,600 tokens
    # the all-reduces' fixed latency (under a millisecond) counted, the two times are equal there
    assert n * KV_TOKEN / 4.9e9 == pytest.approx(recompute_by_hand(n, F), rel=1e-9)
    below = solve(Params(ssd_efficiency=0.35, conversation_tokens=60_000))
    above = solve(Params(ssd_efficiency=0.35, conversation_tokens=128_000))
    assert v(below, "reload_s_ssd") > v(below, "recompute_s")
    assert v(above, "reload_s_ssd") < v(above, "recompute_s")
    assert v(above, "faster_at_this_length") == "SSD reload"


def test_traffic_shape_figures():
    d = solve(Params())
    # 6 conversations a minute; think lognormal median 60 s, sigma 1.5: mean 60 e^(1.125) = 184.8 s.
    assert v(d, "conversations_per_s") == pytest.approx(0.1)
    assert v(d, "think_mean_s") == pytest.approx(60 * math.exp(1.125))
    # 8 turns from 2,000 to 30,000 tokens: 4,000 per turn, 500 of them the reply, 3,500 the message.
    assert v(d, "turn_growth_tokens") == 4000 and v(d, "message_tokens") == 3500
    # Parked after turns 1..7: contexts 2,000, 6,000, ..., 26,000, each + 500 reply.
    parked = sum(2000 + 4000 * k + 500 for k in range(7)) * KV_TOKEN
    assert v(d, "returning_kv_bytes") == pytest.approx(parked)
    assert v(d, "dead_kv_bytes") == pytest.approx(30_500 * KV_TOKEN)
    assert v(d, "dead_kv_inflow_Bps") == pytest.approx(0.1 * 30_500 * KV_TOKEN)  # ~1.0 GB/s
    assert v(d, "kv_inflow_Bps") == pytest.approx(0.1 * (parked + 30_500 * KV_TOKEN))
    # Recompute-only: every returning turn re-prefills the prefix its predecessor parked, at 60% MFU.
    F = 8 * 989e12 * 0.6
    per_conv = sum(recompute_by_hand(2000 + 4000 * k + 500, F) for k in range(7))
    assert v(d, "recompute_s_per_conversation") == pytest.approx(per_conv)  # 4.59 s
    assert v(d, "recompute_only_load") == pytest.approx(0.1 * per_conv)  # ~46% of the replica


def _survival_integral(t: float, median: float, sigma: float) -> float:
    """E[min(X, t)] = integral of P(X > v) over [0, t], by the trapezoid rule on a fine grid."""
    from math import erf, log, sqrt
    grid = np.linspace(1e-9, t, 200_001)
    surv = np.array([0.5 * (1 - erf(log(x / median) / (sigma * sqrt(2)))) for x in grid[::100]])
    return float(np.trapezoid(surv, grid[::100]))


def test_residency_solves_its_equation_independently():
    p = Params()
    d = solve(p)
    lam, ret, dead = v(d, "conversations_per_s"), v(d, "returning_kv_bytes"), v(d, "dead_kv_bytes")
    for key, cap in (("hbm_residency_s", 50e9), ("dram_residency_s", 50e9 + 1e12)):
        t = v(d, key)
        pushed = lam * (ret * _survival_integral(t, 60, 1.5) + dead * t)
        print(f"\n{key}: {t:.1f} s, KV pushed above by then {pushed / 1e9:.2f} GB of {cap / 1e9:.0f} GB")
        assert pushed == pytest.approx(cap, rel=2e-3)
    # HBM residency is close to capacity / inflow (the drill's shortcut) because few users return that fast.
    assert v(d, "hbm_residency_s") == pytest.approx(50e9 / v(d, "kv_inflow_Bps"), rel=0.1)
    shares = [v(d, k) for k in ("predicted_hit_share_hbm", "predicted_hit_share_dram", "predicted_hit_share_ssd",
                                "predicted_miss_share")]
    assert sum(shares) == pytest.approx(1)
    assert v(d, "busiest_tier") == "DRAM"
    assert v(d, "think_over_hbm_residency") == pytest.approx(60 / v(d, "hbm_residency_s"))


def test_lognormal_helpers():
    assert think_cdf(60, 60, 1.5) == pytest.approx(0.5)
    assert expected_min_think(math.inf, 60, 1.5) == pytest.approx(60 * math.exp(1.125))
    assert expected_min_think(1e-3, 60, 1.5) == pytest.approx(1e-3, rel=1e-6)  # nobody has returned yet


def test_failure_mode_figures():
    d = solve(Params())
    # SSD writes: returning entries that outlive DRAM plus every dead entry.
    f_d = think_cdf(v(d, "dram_residency_s"), 60, 1.5)
    writes = 0.1 * (v(d, "returning_kv_bytes") * (1 - f_d) + 30_500 * KV_TOKEN)
    assert v(d, "ssd_write_Bps") == pytest.approx(writes)
    assert v(d, "ssd_writes_per_day_bytes") == pytest.approx(writes * 86_400)  # one replica per node
    assert v(d, "ssd_drive_writes_per_day") == pytest.approx(writes * 86_400 / 7.68e12)  # ~13.5 a day
    assert v(d, "ssd_drive_writes_per_day") > 3  # past even a mixed-use drive's rating
    # After a restart: live parked conversations (Little's law) each recompute once.
    lost = 0.1 * 7 * expected_min_think(v(d, "dram_residency_s"), 60, 1.5)
    assert v(d, "restart_lost_conversations") == pytest.approx(lost)
    assert v(d, "restart_recompute_s") == pytest.approx(lost * v(d, "recompute_s_per_conversation") / 7)


# --- variants worked by hand ----------------------------------------------------------------------


def test_variant_h200_tp4_shares_the_node():
    # H200 (141 GB, same compute as H100), 4 GPUs per replica: two replicas share the node's DRAM and drive.
    d = solve(Params(gpu="H200", tp_degree=4))
    assert v(d, "replicas_per_node") == 2
    assert v(d, "hbm_kv_room_bytes") == pytest.approx(0.9 * 4 * 141e9 - 2 * N70)  # 366.5 GB
    assert v(d, "hbm_room_conversations") == 37  # 366.4 / 9.83
    assert v(d, "dram_cache_bytes") == pytest.approx(500e9)
    assert v(d, "dram_reload_Bps") == pytest.approx(4 * PCIE5_X16 * 0.8)  # 201.6 GB/s
    assert v(d, "ssd_reload_Bps") == pytest.approx(14e9 * 0.5 / 2)  # 3.5 GB/s
    F = 4 * 989e12 * 0.6
    assert v(d, "recompute_s") == pytest.approx(recompute_by_hand(30_000, F, tp=4))  # 2.54 s
    assert v(d, "break_even_bandwidth_short_Bps") == pytest.approx(KV_TOKEN * F / w_eff(F, tp=4))  # 4.81 GB/s
    n_star = crossing_by_hand(3.5e9, F, tp=4)
    assert v(d, "break_even_prefix_tokens_ssd") == pytest.approx(n_star)
    assert v(d, "ssd_drives_to_always_win") == math.ceil(KV_TOKEN * F / w_eff(F, tp=4) * 2 / 7e9)  # 2


def test_variant_b200_raises_the_bar_and_two_drives_clear_h100s():
    # B200: 2,250 TFLOP/s dense bf16. Recompute 2.21x faster, so a tier must be 2.2x faster to win.
    b = solve(Params(gpu="B200"))
    F = 8 * 2250e12 * 0.6
    ring = 160 * 1.75 * 8192 * 2 / 900e9  # NVLink 5: 900 GB/s each way
    assert v(b, "recompute_s") == pytest.approx((W * 30_000 + A * 30_000 * 29_999 / 2) / F + AR_LATENCY_S
                                                + ring * 30_000)
    short = KV_TOKEN * F / (W - A / 2 + ring * F)  # 18.0 GB/s
    assert v(b, "break_even_bandwidth_short_Bps") == pytest.approx(short)
    assert v(b, "ssd_drives_to_always_win") == math.ceil(short / 7e9) == 3
    two = solve(Params(ssd_drives_per_node=2))
    assert v(two, "ssd_reload_Bps") == pytest.approx(14e9)
    assert v(two, "break_even_prefix_tokens_ssd") == "none (SSD reload wins at every prefix length)"
    assert v(two, "faster_at_this_length") == "SSD reload"


def test_variant_no_lower_tiers():
    d = solve(Params(dram_per_node_gb=0, ssd_tb_per_node=0))
    assert v(d, "dram_residency_s") == pytest.approx(v(d, "hbm_residency_s"))
    assert v(d, "predicted_hit_share_dram") == pytest.approx(0, abs=1e-9)
    assert v(d, "predicted_hit_share_ssd") == pytest.approx(0, abs=1e-9)
    assert v(d, "ssd_write_Bps") == 0
    assert v(d, "ssd_drive_writes_per_day") == 0


def test_hbm_cache_is_capped_at_the_room():
    d = solve(Params(tp_degree=2, hbm_cache_gb=100))
    # 2 x 80 GB x 0.9 = 144 GB - 141.1 GB = 2.9 GB: no room for even one conversation.
    assert v(d, "hbm_cache_bytes") == pytest.approx(144e9 - 2 * N70)
    assert v(d, "hbm_cache_conversations") == 0
    assert v(d, "replicas_per_node") == 4


# --- moves the right way -------------------------------------------------------------------------

scenarios = st.builds(
    Params,
    conversation_tokens=st.integers(20_000, 128_000),
    gpu=st.sampled_from(["H100 SXM", "H200", "B200"]),
    tp_degree=st.sampled_from([4, 8]),
    prefill_mfu=st.floats(0.1, 0.8),
    pcie_efficiency=st.floats(0.3, 1.0),
    ssd_drives_per_node=st.integers(1, 16),
    ssd_efficiency=st.floats(0.1, 1.0),
    hbm_cache_gb=st.floats(0, 400),
    dram_per_node_gb=st.floats(0, 4000),
    ssd_tb_per_node=st.floats(0, 64),
    conversations_per_min=st.floats(0.5, 60),
    turns=st.integers(2, 12),
    think_median_s=st.floats(5, 3600),
    think_sigma=st.floats(0.2, 2.5),
)


@settings(max_examples=150, deadline=None)
@given(p=scenarios, factor=st.floats(1.05, 3))
def test_longer_conversations_cost_superlinearly_and_lower_the_bar(p, factor):
    n2 = min(int(p.conversation_tokens * factor), 128_000)
    if n2 <= p.conversation_tokens:
        return
    a, b = solve(p), solve(p.model_copy(update={"conversation_tokens": n2}))
    ratio = n2 / p.conversation_tokens
    assert v(b, "recompute_s") > ratio * v(a, "recompute_s")  # attention makes it grow faster than n
    assert v(b, "reload_s_dram") == pytest.approx(ratio * v(a, "reload_s_dram"))  # reload is linear
    assert v(b, "break_even_bandwidth_Bps") < v(a, "break_even_bandwidth_Bps")
    assert v(a, "break_even_bandwidth_Bps") < v(a, "break_even_bandwidth_short_Bps")


@settings(max_examples=150, deadline=None)
@given(p=scenarios)
def test_crossing_agrees_with_the_times(p):
    d = solve(p)
    n_star = v(d, "break_even_prefix_tokens_ssd")
    faster = v(d, "faster_at_this_length")
    if isinstance(n_star, str):
        assert v(d, "ssd_reload_Bps") >= v(d, "break_even_bandwidth_short_Bps")
        assert faster == "SSD reload"
    else:
        assert v(d, "ssd_reload_Bps") < v(d, "break_even_bandwidth_short_Bps")
        expect = "SSD reload" if p.conversation_tokens > n_star else "recompute"
        if abs(p.conversation_tokens - n_star) > 1:
            assert faster == expect


@settings(max_examples=150, deadline=None)
@given(p=scenarios, which=st.sampled_from(["hbm_cache_gb", "dram_per_node_gb", "ssd_tb_per_node"]),
       grow=st.floats(1.1, 4))
def test_more_capacity_never_lowers_the_predicted_hit_rate(p, which, grow):
    knob = knobs_of(Params)[which]
    bigger = p.model_copy(update={which: min(getattr(p, which) * grow + 1, knob.max)})
    a, b = solve(p), solve(bigger)
    assert v(b, "predicted_hit_rate") >= v(a, "predicted_hit_rate") - 1e-9
    assert v(b, "ssd_residency_s") >= v(a, "ssd_residency_s") * (1 - 1e-9)


@settings(max_examples=150, deadline=None)
@given(p=scenarios, factor=st.floats(1.1, 10))
def test_longer_thinking_and_more_traffic_lower_the_predicted_hit_rate(p, factor):
    d = solve(p)
    slow = solve(p.model_copy(update={"think_median_s": min(p.think_median_s * factor, 3600)}))
    busy = solve(p.model_copy(update={"conversations_per_min": min(p.conversations_per_min * factor, 60)}))
    assert v(slow, "predicted_hit_rate") <= v(d, "predicted_hit_rate") + 1e-9
    assert v(busy, "predicted_hit_rate") <= v(d, "predicted_hit_rate") + 1e-9
    assert v(busy, "hbm_residency_s") <= v(d, "hbm_residency_s") * (1 + 1e-9)


@settings(max_examples=150, deadline=None)
@given(p=scenarios)
def test_faster_gpus_raise_the_break_even_and_links_lower_reload(p):
    d = solve(p)
    more_mfu = solve(p.model_copy(update={"prefill_mfu": min(p.prefill_mfu * 1.5, 0.8)}))
    assert v(more_mfu, "break_even_bandwidth_short_Bps") >= v(d, "break_even_bandwidth_short_Bps")
    faster = solve(p.model_copy(update={"pcie_efficiency": 1.0, "ssd_drives_per_node": 16, "ssd_efficiency": 1.0}))
    assert v(faster, "reload_s_dram") <= v(d, "reload_s_dram")
    assert v(faster, "reload_s_ssd") <= v(d, "reload_s_ssd")
    assert v(d, "reload_s_ssd") >= v(d, "reload_s_dram") * (1 - 1e-12)  # SSD never beats the PCIe it crosses


# --- the page's own figures and prose (the contract every page meets: tests/test_contract.py) -----


def test_params_defaults_and_the_first_slider():
    p = Params()
    assert (p.conversation_tokens, p.gpu, p.tp_degree, p.prefill_mfu) == (30_000, "H100 SXM", 8, 0.6)
    # The bench reruns the page by moving the first non-log knob with a slider: it must be one.
    first = next(n for n, k in knobs_of(Params).items() if not k.log)
    assert first == "conversation_tokens"


@pytest.mark.parametrize(("update", "message"), [
    ({"first_turn_tokens": 20_000, "conversation_tokens": 10_000}, "must be shorter than the conversation"),
    ({"turns": 40, "conversation_tokens": 10_000, "reply_tokens": 1000}, "fewer than the"),
    ({"conversation_tokens": 200_000}, "Conversation length"),
])
def test_invalid_scenarios_say_why(update, message):
    with pytest.raises(ValidationError) as err:
        Params(**update)
    assert message in str(err.value)


def test_sim_config_matches_the_derivation():
    p = Params()
    d, cfg = solve(p), sim_config(p)
    assert cfg.kv_bytes_per_token == v(d, "kv_bytes_per_token")
    assert cfg.dram_Bps == pytest.approx(v(d, "dram_reload_Bps"))
    assert cfg.ssd_Bps == pytest.approx(v(d, "ssd_reload_Bps"))
    assert cfg.replica_flops == pytest.approx(v(d, "replica_flops"))
    assert (cfg.hbm_bytes, cfg.dram_bytes, cfg.ssd_bytes) == (v(d, "hbm_cache_bytes"), v(d, "dram_cache_bytes"),
                                                              v(d, "ssd_cache_bytes"))
    # the simulation charges the engine's prefill, the all-reduces' fixed latency included
    assert cfg.prefill_fixed_s == pytest.approx(AR_LATENCY_S)
    assert cfg.recompute_s(30_000) == pytest.approx(v(d, "recompute_s"))
    assert cfg.context_tokens(p.turns) == p.conversation_tokens


def test_heavy_scenarios_shorten_the_simulated_window():
    heavy = Params(conversations_per_min=60, turns=40, conversation_tokens=128_000, sim_minutes=480)
    minutes = sim_window_minutes(heavy)
    assert minutes < 480
    assert minutes * 60 * 40 <= SIM_MAX_TURNS or minutes == 10
    assert sim_window_minutes(Params()) == 120
    r = simulate(Params(sim_minutes=20), seed=1)
    assert r.grid_s[-1] == pytest.approx(20 * 60)


# --- content --------------------------------------------------------------------------------------


def test_the_page_draws_its_figures_where_the_prose_needs_them():
    c = load_content(CONTENT)
    assert set(c.directives()) == DIRECTIVES
    assert "::chart reload_vs_recompute" in c.section("Arithmetic").body.splitlines()
    assert "::sim kv-tiers" in c.section("Depth").body.splitlines()


# --- a published worked problem, entered on the page ------------------------------------------


def test_scaling_book_llama3_70b_kv_on_tpu_v5e():
    # Austin et al., "How To Scale Your Model", Part 8 "Serving LLaMA 3-70B on TPUs"
    # (https://jax-ml.github.io/scaling-book/applied-inference/): LLaMA 3-70B's int8 KV cache is
    # 2 x 8 KV heads x 128 x 80 layers = 160 kB a token, "at 32k context: 5.3 GB per sequence",
    # against 70 GB of int8 parameters on a TPU v5e 4x2 (8 chips of 16 GB). Entered with int8
    # weights and KV, bf16 FLOPs, on 8 x TPU v5e. Its prefill estimate takes "half" of the 100%-MFU
    # bound ("At best, we are probably getting half that"): prefill MFU 50%. It states nothing on the
    # all-reduces, so the engine's 6 µs and ring stay.
    p = Params(gpu="TPU v5e", tp_degree=8, weight_precision="int8", kv_precision="int8", compute_precision="bf16",
               conversation_tokens=32_768, hbm_cache_gb=10, prefill_mfu=0.5)
    d = solve(p)
    assert v(d, "kv_bytes_per_token") == 2 * 8 * 128 * 80 == 163_840  # "160 kB"
    assert v(d, "conversation_kv_bytes") == 32_768 * 163_840
    assert v(d, "conversation_kv_bytes") / 1e9 == pytest.approx(5.3, rel=0.02)  # "5.3 GB per sequence"
    assert v(d, "weight_bytes") == pytest.approx(N70) == pytest.approx(70e9, rel=0.01)  # "70 GB"
    # 8 x 16 GB x 0.9 = 115.2 GB usable, 44.6 GB beside the weights: 8 such conversations.
    assert v(d, "hbm_kv_room_bytes") == pytest.approx(8 * 16e9 * 0.9 - N70)
    assert v(d, "hbm_room_conversations") == math.floor((8 * 16e9 * 0.9 - N70) / (32_768 * 163_840)) == 8
    # Recompute at bf16: 8 x 197 TFLOP/s x 50%, plus the ICI ring at 200 GB/s one way.
    F = 8 * 197e12 * 0.5
    expect = ((W * 32_768 + A * 32_768 * 32_767 / 2) / F + AR_LATENCY_S
              + 160 * 1.75 * 8192 * 2 / 200e9 * 32_768)
    assert v(d, "recompute_s") == pytest.approx(expect)


def test_a_replica_that_cannot_hold_one_conversation_says_so():
    # 2 x 80 GB x 0.9 = 144 GB usable, 141.1 GB of weights: 2.9 GB left against one 30,000-token
    # conversation of 30,000 x 327,680 B = 9.83 GB. The page names all three numbers.
    d = solve(Params(tp_degree=2))
    assert 144e9 - 2 * N70 < 30_000 * KV_TOKEN
    (key, message), = d.violations
    assert key == "hbm_room_conversations"
    assert "9.83 GB" in message and "2.895 GB" in message and "141.1 GB" in message
    assert solve(Params(tp_degree=4)).violations == []  # 288 - 141.1 = 146.9 GB: 14 conversations


def test_the_kv_drill_quotes_the_drawn_models_shape():
    from models.registry import QUESTIONS
    from ui.prose import render

    q = QUESTIONS["kv-cache-tiers"]
    drill = next(dr for dr in q.drills if dr.key == "kv_bytes_per_token")
    # Llama-3-8B: 32 layers, 8 KV heads of 128 (its config), not the seed's 80 layers.
    p = Params(model="Llama-3-8B")
    d = solve(p)
    text = render(drill.question, d, p).replace("*", "")
    assert "(32 layers, 8 KV heads of dimension 128)" in text and "Llama-3-70B" not in text
    assert d.value("kv_bytes_per_token") == 2 * 32 * 8 * 128 * 2
    # The seed's shape still reads as before.
    seed = render(drill.question, solve(Params()), Params()).replace("*", "")
    assert "(80 layers, 8 KV heads of dimension 128)" in seed


def test_the_ssd_verdict_follows_the_drive_count():
    """One drive at 7 GB/s is under the 8.21 GB/s bar: it wins only above the crossing; two drives
    (14 GB/s) clear it and win at every length."""
    assert v(solve(Params()), "ssd_verdict") == "wins only above the crossing"
    assert v(solve(Params(ssd_drives_per_node=2)), "ssd_verdict") == "wins at every prefix length"
    assert v(solve(Params(ssd_drives_per_node=8)), "ssd_verdict") == "wins at every prefix length"
    # A shared switch uplink halves the DRAM path: 2 x 24.37 ms.
    assert v(solve(Params()), "reload_s_dram_shared_uplink") == pytest.approx(2 * 9.8304e9 / (8 * PCIE5_X16 * 0.8))


def test_layerwise_overlap_and_the_cost_of_recompute_by_hand():
    d = solve(Params())
    F = 8 * 989e12 * 0.6
    # Each turn adds (30,000 − 2,000) / 7 = 4,000 tokens; the reply is 500, the message 3,500.
    m, n = 3_500, 30_000
    assert v(d, "message_tokens") == m
    msg = (W * m + A * (m * n + m * (m - 1) / 2)) / F + AR_LATENCY_S + ring_s_per_token() * m
    assert v(d, "message_prefill_s") == pytest.approx(msg)
    assert msg == pytest.approx(0.202, abs=0.001)
    ssd = 9.8304e9 / 7e9  # 1.404 s
    dram = 9.8304e9 / (8 * PCIE5_X16 * 0.8)  # 24.4 ms
    assert v(d, "ttft_ssd_serial_s") == pytest.approx(ssd + msg)  # 1.606 s
    # 80 layers: the slower side runs whole, the faster side adds one layer's share.
    assert v(d, "ttft_ssd_layerwise_s") == pytest.approx(ssd + msg / 80)  # 1.407 s
    assert v(d, "ttft_dram_layerwise_s") == pytest.approx(msg + dram / 80)  # 202.3 ms
    # A miss prefills prefix and message together: 33,500 tokens.
    assert v(d, "ttft_miss_s") == pytest.approx(recompute_by_hand(n + m, F))
    # The SSD tier's hits in GPU-seconds: 3,600 s x 0.1 /s x recompute per conversation x 8 GPUs x SSD share.
    share = v(d, "predicted_hit_share_ssd")
    per_conv = v(d, "recompute_s_per_conversation")
    assert v(d, "ssd_hits_gpu_seconds_per_hour") == pytest.approx(3600 * 0.1 * per_conv * 8 * share)
    assert v(d, "recompute_gpu_seconds") == pytest.approx(8 * recompute_by_hand(n, F))


@pytest.mark.parametrize("capacity_GB", [0.5, 40, 2_000, 60_000])
@pytest.mark.parametrize("median_s, sigma", [(30, 0.3), (120, 1.0), (600, 2.2)])
def test_residency_is_where_halving_the_pushed_bytes_lands(capacity_GB, median_s, sigma):
    """residency_s (Newton kept in a bracket) against 200 halvings of the same pushed-bytes curve:
    the age at which later KV fills the tier."""
    from models.serving.kv_cache_tiers import expected_min_think, residency_s

    rate, returning, dead, cap = 2.0, 9.8e9, 3.1e9, capacity_GB * 1e9

    def pushed(t):
        return rate * (returning * expected_min_think(t, median_s, sigma) + dead * t)

    lo, hi = 0.0, cap / (rate * dead)
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if pushed(mid) < cap else (lo, mid)
    t = residency_s(cap, rate, returning, dead, median_s, sigma)
    assert t == pytest.approx(lo, rel=1e-9)
    assert pushed(t) == pytest.approx(cap, rel=1e-9)


def test_attention_term_off_says_so_and_shows_it_counted():
    on, off = solve(Params()), solve(Params(attention_flops=False))
    # Llama-3-70B: QK^T and AV, 2 matmuls x 2 FLOP x 80 layers x 64 heads x 128 = 2,621,440 FLOP a pair
    a = 2 * 2 * 80 * 64 * 128
    assert off.value("attention_flops_per_position") == 0
    assert off.value("attention_flops_per_position_if_counted") == a
    assert off.value("recompute_attention_flops_if_counted") == pytest.approx(a * 30_000 * 29_999 / 2)
    assert on.value("attention_clause").startswith("Causal attention adds")
    assert off.value("attention_clause").startswith("Causal attention is not counted")
    # one drive is below the short break-even, so with no attention term SSD never wins; counted,
    # reload kv n / B beats (w_eff' n + a n^2 / 2) / F above n = 2 (kv F / B - w_eff') / a,
    # with w_eff' = w_eff - a / 2 (the off scenario's w_eff carries no attention)
    kv, F, B = off.value("kv_bytes_per_token"), off.value("replica_flops"), off.value("ssd_reload_Bps")
    w_eff = off.value("recompute_flops_per_token_effective")
    n_on = 2 * (kv * F / B - (w_eff - a / 2)) / a
    assert off.value("break_even_prefix_tokens_ssd_if_counted") == pytest.approx(n_on)
    assert off.value("ssd_verdict").startswith("never wins without the attention term")


def test_provider_ttls_against_the_think_time_and_the_residency():
    from models.serving.kv_cache_tiers import Params, solve
    d = solve(Params())
    # Anthropic's TTLs: 5 min = 300 s, 1 h = 3,600 s.
    assert d.value("provider_ttl_default_s") == 300
    assert d.value("provider_ttl_long_s") == 3600
    # Lognormal think, median 60 s, sigma 1.5: P(think <= 300 s) = Phi(ln(300/60) / 1.5)
    # = Phi(1.6094 / 1.5) = Phi(1.0730) = 0.8584; P(think <= 3,600 s) = Phi(ln 60 / 1.5)
    # = Phi(4.0943 / 1.5) = Phi(2.7296) = 0.9968.
    assert d.value("returns_within_ttl_default") == pytest.approx(0.8584, abs=2e-4)
    assert d.value("returns_within_ttl_long") == pytest.approx(0.9968, abs=2e-4)
    # HBM plus DRAM keeps an idle conversation ~608 s (the residency step) > 300 s.
    assert d.value("dram_residency_s") > 300
    assert d.value("dram_keeps_default_ttl").startswith("yes")
    # With an eighth of the DRAM the residency drops under five minutes and the answer flips.
    small = solve(Params(dram_per_node_gb=64))
    assert small.value("dram_residency_s") < 300
    assert small.value("dram_keeps_default_ttl").startswith("no")
