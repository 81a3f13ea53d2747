"""agent-sessions: seed figures from the seed's own arithmetic, a hand-worked variant, directions,
contract and content."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from models.content import load_content
from models.serving.agent_sessions import Params, solve

ROOT = Path(__file__).resolve().parents[2]
CONTENT = ROOT / "content" / "serving" / "agent-sessions.md"

# Llama-3-70B and the parts, written out for the hand arithmetic (the model reads the catalog).
# Parameters counted from the config.json shape: embeddings and head 2 x 128,256 x 8,192, and per
# layer q and o 8,192 x 8,192 each, k and v 8,192 x 1,024 each, a SwiGLU MLP 3 x 8,192 x 28,672.
PARAMS_70B = 2 * 128_256 * 8192 + 80 * (2 * 8192 * 8192 + 2 * 8192 * 1024 + 3 * 8192 * 28_672)  # 70.55 B
LAYERS, HEADS, HEAD_DIM, D_MODEL = 80, 64, 128, 8192
KV_PER_TOKEN = 2 * 80 * 8 * 128 * 2  # 327,680 B
PCIE5_BPS = 32e9 * 16 * (128 / 130) / 8  # 63.0 GB/s each way
H100_FLOPS, H200_FLOPS = 989e12, 989e12  # dense bf16
H100_HBM, H100_MEM, H200_MEM, NVLINK = 3.35e12, 80e9, 141e9, 450e9
# The engine's defaults: MBU 80%, decode MFU 50%, prefill MFU 60%, 1.9 ms a step, 6 us an all-reduce,
# 90% of HBM usable.
MBU, DECODE_MFU, PREFILL_MFU, FIXED_S, AR_LATENCY_S, USABLE = 0.8, 0.5, 0.6, 1.9e-3, 6e-6, 0.9
PAIR_FLOPS = 2 * LAYERS * HEADS * (HEAD_DIM + HEAD_DIM)  # QK^T and AV: 2,621,440 FLOP a token pair
AR_FIXED = LAYERS * 2 * AR_LATENCY_S  # 160 all-reduces a pass on eight GPUs
AR_PER_TOKEN = LAYERS * 2 * 2 * 7 / 8 * D_MODEL * 2 / NVLINK  # a ring's 2 (n-1)/n of a bf16 hidden state


def v(d, key):
    return d.value(key)


def prefill_flops(n):
    """The engine's full prefill of n tokens: 2 FLOP a parameter a token, attention over n (n-1)/2 pairs."""
    return 2 * PARAMS_70B * n + PAIR_FLOPS * n * (n - 1) / 2


def prefill_s(n, rate):
    return prefill_flops(n) / rate + AR_FIXED + n * AR_PER_TOKEN


# --- the seed's own arithmetic ------------------------------------------------------------------


def test_seed_the_hour_is_loose():
    d = solve(Params())
    # "think for a second, a tool for a minute, a hundred times": 100 x (1 + 60) s
    assert v(d, "step_period_s") == 61
    assert v(d, "session_duration_s") == 100 * 61 == 6100
    assert v(d, "session_duration_h") == pytest.approx(6100 / 3600)  # ~1.7 h, not "an hour"
    assert v(d, "steps_in_an_hour") == 3600 // 61 == 59
    assert v(d, "tool_s_for_an_hour") == pytest.approx(3600 / 100 - 1)  # 35 s tools would fit an hour
    assert v(d, "hour_undercount_factor") == pytest.approx(6100 / 3600)


def test_seed_gpu_duty_cycle():
    d = solve(Params())
    assert v(d, "gpu_duty_cycle") == pytest.approx(1 / 61)  # 1.64%
    assert v(d, "sessions_thinking") == pytest.approx(1000 / 61)  # 16.4 of 1,000


def test_seed_kv_grows_with_the_context():
    d = solve(Params())
    assert v(d, "kv_bytes_per_token") == KV_PER_TOKEN == 327_680
    assert v(d, "final_context_tokens") == 4000 + 100 * 500 == 54_000
    assert v(d, "kv_bytes_final") == pytest.approx(54_000 * 327_680)  # 17.7 GB
    # mean over steps of 4,000 + 500 i, i = 1..100: 4,000 + 500 x 50.5 = 29,250 tokens
    assert v(d, "mean_context_tokens") == pytest.approx(sum(4000 + 500 * i for i in range(1, 101)) / 100)
    assert v(d, "kv_bytes_mean") == pytest.approx(29_250 * 327_680)  # 9.6 GB
    assert v(d, "transcript_bytes_final") == 54_000 * 4
    assert v(d, "kv_to_text_ratio") == pytest.approx(327_680 / 4)


def test_seed_holding_kv_in_hbm():
    d = solve(Params())
    kv_cap = 8 * 80e9 * 0.9 - 2 * PARAMS_70B  # 434.9 GB per 8 x H100 replica
    assert v(d, "kv_capacity_per_replica") == pytest.approx(kv_cap)
    assert v(d, "replicas_to_hold_kv") == math.ceil(1000 * 29_250 * 327_680 / kv_cap) == 23
    # the batch: 45 sessions' mean KV fit, and the 50 ms TPOT target would allow 88 (bytes side:
    # (50 ms - 1.9 ms - 0.96 ms - 141.1 GB / 21.44 TB/s) / (9.58 GB / 21.44 TB/s + 10.2 µs))
    assert v(d, "batch_memory_cap_continuous") == pytest.approx(kv_cap / (29_250 * 327_680)) == pytest.approx(45.37, rel=1e-3)
    bw, flops = 8 * H100_HBM * MBU, 8 * H100_FLOPS * DECODE_MFU
    fixed = FIXED_S + AR_FIXED
    kv_s = 327_680 * 29_250 / bw
    compute_s = (2 * PARAMS_70B + PAIR_FLOPS * 29_250) / flops
    tpot_cap = min((0.05 - fixed - 2 * PARAMS_70B / bw) / (kv_s + AR_PER_TOKEN), (0.05 - fixed) / (compute_s + AR_PER_TOKEN))
    assert v(d, "batch_tpot_cap_continuous") == pytest.approx(tpot_cap) == pytest.approx(88.70, rel=1e-3)
    assert v(d, "decode_batch") == 45
    # 16.4 thinking sessions: 16.4 / (45 x 70%) = 0.52 of a replica's slots, and their KV fits one
    assert v(d, "replicas_for_slots_continuous") == pytest.approx(1000 / 61 / (45 * 0.7))
    assert v(d, "replicas_for_compute") == 1


def test_seed_reload_versus_recompute():
    d = solve(Params())
    reload = 29_250 * 327_680 / (8 * PCIE5_BPS * 0.8)
    assert v(d, "reload_per_step_s") == pytest.approx(reload)  # ~24 ms
    assert v(d, "reload_final_step_s") == pytest.approx(54_000 * 327_680 / (8 * PCIE5_BPS * 0.8))
    rate = 8 * H100_FLOPS * PREFILL_MFU  # 4.747e15 FLOP/s
    total = sum(prefill_flops(4000 + 500 * i) for i in range(1, 101))
    assert v(d, "recompute_flops_total") == pytest.approx(total)
    # the FLOP alone are 1.16 s a step; the all-reduces of 29,250 tokens on average add 0.30 s
    per_step = sum(prefill_s(4000 + 500 * i, rate) for i in range(1, 101)) / 100
    assert v(d, "recompute_allreduce_total_s") == pytest.approx(100 * AR_FIXED + 2_925_000 * AR_PER_TOKEN)
    assert v(d, "recompute_per_step_s") == pytest.approx(per_step) == pytest.approx(1.462, rel=1e-3)
    assert v(d, "recompute_final_step_s") == pytest.approx(prefill_s(54_000, rate))
    # tokens: sum of 4,000 + 500 i over 100 steps = 2,925,000, against 54,000 prefilled once
    assert v(d, "recompute_tokens_total") == sum(4000 + 500 * i for i in range(1, 101)) == 2_925_000
    assert v(d, "recompute_multiplier") == pytest.approx(2_925_000 / 54_000)  # ~54x
    assert v(d, "recompute_flop_multiplier") == pytest.approx(total / prefill_flops(54_000))
    assert v(d, "replicas_for_recompute") == math.ceil(1000 * per_step / 61) == 24
    assert v(d, "nodes_of_dram_for_parked_kv") == math.ceil(1000 * 29_250 * 327_680 / 2000e9) == 5


def test_seed_sandbox():
    d = solve(Params())
    assert v(d, "session_starts_per_s") == pytest.approx(1000 / 6100)
    assert v(d, "sandbox_warm_pool") == math.ceil(1000 / 6100 * 2) == 1
    assert v(d, "sandbox_wait_s") == pytest.approx(2 - 1)
    assert v(d, "sandbox_boot_every_step_s") == 200


def test_seed_checkpoints_resume_a_step_not_an_hour():
    d = solve(Params())
    assert v(d, "expected_loss_per_failure_s") == pytest.approx(6100 / 2)  # half a session
    rate = 8 * H100_FLOPS * PREFILL_MFU
    recompute = sum(prefill_s(4000 + 500 * i, rate) for i in range(1, 101)) / 100
    with_ckpt = 61 / 2 + 2 + recompute  # half a step + a new sandbox + one re-prefill: 33.96 s
    assert v(d, "expected_loss_per_failure_with_checkpoints_s") == pytest.approx(with_ckpt)
    assert v(d, "checkpoint_bytes_per_step") == pytest.approx(500 * 4 + 10e6)
    assert v(d, "failures_per_session") == pytest.approx(6100 / (24 * 3600))
    assert v(d, "failure_probability_per_session") == pytest.approx(1 - math.exp(-6100 / 86400))


# --- a variant worked by hand --------------------------------------------------------------------


def test_variant_h200_long_context_short_tools():
    p = Params(steps=50, think_s=2, tool_s=30, initial_context_tokens=10_000, tokens_per_step=1000,
               concurrent_sessions=5000, gpu="H200", tp_degree=8, given_batch=64,
               prefill_mfu=0.4, pcie_efficiency=0.7, host_dram_per_node_gb=4000, sandbox_cold_start_s=10,
               sandbox_diff_per_step_mb=50, mtbf_h=12)
    d = solve(p)
    assert v(d, "session_duration_s") == 50 * 32 == 1600  # under an hour this time
    assert v(d, "steps_in_an_hour") == 112  # 3,600 / 32 = 112.5
    assert v(d, "gpu_duty_cycle") == pytest.approx(2 / 32)  # 6.25%
    thinking = 5000 * 2 / 32  # 312.5 sessions on a GPU
    assert v(d, "final_context_tokens") == 10_000 + 50 * 1000 == 60_000
    mean_tok = 10_000 + 1000 * 51 / 2  # 35,500
    kv_mean = mean_tok * 327_680  # 11.6 GB
    assert v(d, "kv_bytes_mean") == pytest.approx(kv_mean)
    kv_cap = 8 * H200_MEM * 0.9 - 2 * PARAMS_70B  # 874 GB per 8 x H200 replica
    # thinking: ceil(312.5 / (64 x 70%)) = 7 by slots; ceil(312.5 x 11.6 GB / 874 GB) = 5 by KV
    assert math.ceil(thinking / (64 * 0.7)) == 7
    assert math.ceil(thinking * kv_mean / kv_cap) == 5
    assert v(d, "replicas_for_compute") == 7
    assert v(d, "replicas_to_hold_kv") == math.ceil(5000 * kv_mean / kv_cap) == 67
    assert v(d, "reload_per_step_s") == pytest.approx(kv_mean / (8 * PCIE5_BPS * 0.7))
    recompute = sum(prefill_s(10_000 + 1000 * i, 8 * H200_FLOPS * 0.4) for i in range(1, 51)) / 50
    assert v(d, "recompute_per_step_s") == pytest.approx(recompute)
    tokens = sum(10_000 + 1000 * i for i in range(1, 51))  # 1,775,000
    assert v(d, "recompute_multiplier") == pytest.approx(tokens / 60_000)
    assert v(d, "nodes_of_dram_for_parked_kv") == math.ceil(5000 * kv_mean / 4000e9) == 15
    assert v(d, "sandbox_warm_pool") == math.ceil(5000 / 1600 * 10) == 32
    assert v(d, "sandbox_wait_s") == pytest.approx(8)
    assert v(d, "expected_loss_per_failure_s") == pytest.approx(800)
    assert v(d, "expected_loss_per_failure_with_checkpoints_s") == pytest.approx(16 + 10 + recompute)
    assert v(d, "checkpoint_write_Bps") == pytest.approx(5000 * (1000 * 4 + 50e6) / 32)


def test_worked_problem_scaling_book_llama_3_70b_int8_on_tpu_v5e():
    """How to Scale Your Model (Austin et al., jax-ml.github.io/scaling-book), "Serving LLaMA 3-70B":
    LLaMA 3-70B with int8 parameters and an int8 KV cache, batch 32 at 8,192 tokens of context, on 8
    TPU v5e chips (16 GB, 8.1e11 B/s each): KV 160 kB x 8,192 x 32 = 41.9 GB beside 70 GB of
    weights, and a bandwidth-bound step of (70e9 + 41.9e9) B / (8 x 8.1e11 B/s) = 17 ms.

    Entered here as one think of a one-step session whose mean context is 8,192 tokens, at the
    book's 100% of peak bandwidth and no fixed cost; the engine still adds the all-reduce payload
    over the chips' 200 GB/s links, which the book leaves out."""
    p = Params(model="Llama-3-70B", gpu="TPU v5e", tp_degree=8, weight_precision="int8", kv_precision="int8",
               compute_precision="bf16", given_batch=32, steps=1, initial_context_tokens=7692, tokens_per_step=500,
               hbm_efficiency=1.0, step_overhead_ms=0, allreduce_latency_us=0)
    d = solve(p)
    assert v(d, "mean_context_tokens") == 8192
    kv_tok = 2 * 80 * 8 * 128 * 1  # 163,840 B: the book's "160 kB" is 160 KiB
    assert v(d, "kv_bytes_per_token") == kv_tok
    kv = kv_tok * 8192 * 32  # 42.9 GB (the book rounds 160 kB to 160e3 B: 41.9 GB)
    assert kv == pytest.approx(41.9e9, rel=0.03)
    # 8 x 16 GB x 90% - 70.55 GB leaves 44.6 GB: the 32 sequences fit, 33 at most
    room = 8 * 16e9 * 0.9 - PARAMS_70B
    assert v(d, "kv_capacity_per_replica") == pytest.approx(room)
    assert v(d, "batch_memory_cap_continuous") == pytest.approx(room / (kv_tok * 8192))
    bytes_s = (PARAMS_70B + kv) / (8 * 819e9)  # 17.3 ms, the book's 17 ms with 70.55 GB and 8.19e11
    assert bytes_s == pytest.approx(17e-3, rel=0.03)
    compute_s = 32 * (2 * PARAMS_70B + PAIR_FLOPS * 8192) / (8 * 197e12 * 0.5)  # 6.6 ms: bandwidth-bound
    assert compute_s < bytes_s
    allreduce_s = 160 * 2 * 7 / 8 * 32 * 8192 * 2 / 200e9  # 0.73 ms over the ICI
    assert v(d, "think_decode_step_s") == pytest.approx(bytes_s + allreduce_s) == pytest.approx(18.06e-3, rel=1e-3)


def test_impossible_scenarios_are_refused_in_plain_words():
    with pytest.raises(ValidationError, match="GB of weights"):
        Params(model="Llama-3.1-405B")
    with pytest.raises(ValidationError, match="such sessions"):
        Params(given_batch=64)  # 45 mean-context sessions fit
    with pytest.raises(ValidationError, match="scale-up domain"):
        Params(tp_degree=16)
    with pytest.raises(ValidationError, match="beside the weights"):
        Params(tp_degree=4, initial_context_tokens=100_000, tokens_per_step=20_000, steps=100)


def test_every_catalog_model_and_part_solves_or_is_refused():
    from models.engine.knobs import CATALOG_ACCELERATORS, CATALOG_MODELS
    for model in [*CATALOG_MODELS, "Custom"]:
        for gpu in [*CATALOG_ACCELERATORS, "Custom"]:
            p = _valid(model=model, gpu=gpu)
            if p is not None:
                assert v(solve(p), "recompute_per_step_s") > v(solve(p), "reload_per_step_s") > 0


# --- moves the right way ---------------------------------------------------------------------------

def _valid(**kw):
    try:
        return Params(**kw)
    except ValidationError:
        return None


scenarios = st.builds(
    _valid,
    steps=st.integers(1, 1000),
    think_s=st.floats(0.1, 60),
    tool_s=st.floats(0.5, 1800),
    initial_context_tokens=st.floats(100, 100_000),
    tokens_per_step=st.floats(10, 20_000),
    concurrent_sessions=st.integers(1, 1_000_000),
    gpu=st.sampled_from(["H100 SXM", "H200", "B200", "MI300X", "TPU v5p"]),
    tp_degree=st.sampled_from([2, 4, 8, 16]),
    prefill_mfu=st.floats(0.1, 0.8),
    pcie_efficiency=st.floats(0.3, 1.0),
    sandbox_cold_start_s=st.floats(0.1, 300),
).filter(lambda p: p is not None)  # a scenario the engine refuses (weights that do not fit) is no scenario


def _with(p, **kw):
    q = _valid(**{**p.model_dump(), **kw})
    assume(q is not None)
    return q


@settings(max_examples=150, deadline=None)
@given(p=scenarios, extra=st.integers(1, 500))
def test_more_steps_cost_more(p, extra):
    a, b = solve(p), solve(_with(p, steps=min(1000, p.steps + extra)))
    for key in ("session_duration_s", "kv_bytes_final", "kv_bytes_mean", "recompute_multiplier",
                "recompute_per_step_s", "reload_per_step_s", "expected_loss_per_failure_s",
                "replicas_to_hold_kv"):
        assert v(b, key) >= v(a, key) * (1 - 1e-12), key


@settings(max_examples=150, deadline=None)
@given(p=scenarios, factor=st.floats(1.01, 100))
def test_longer_tools_lower_the_duty_cycle_and_never_add_compute(p, factor):
    a, b = solve(p), solve(_with(p, tool_s=min(1800, p.tool_s * factor)))
    assert v(b, "gpu_duty_cycle") <= v(a, "gpu_duty_cycle")
    assert v(b, "replicas_for_compute") <= v(a, "replicas_for_compute")
    assert v(b, "replicas_for_recompute") <= v(a, "replicas_for_recompute")
    assert v(b, "expected_loss_per_failure_with_checkpoints_s") >= v(a, "expected_loss_per_failure_with_checkpoints_s")


@settings(max_examples=150, deadline=None)
@given(p=scenarios, factor=st.floats(1.01, 100))
def test_more_sessions_never_need_fewer_replicas(p, factor):
    a = solve(p)
    b = solve(_with(p, concurrent_sessions=min(1_000_000, math.ceil(p.concurrent_sessions * factor))))
    for key in ("replicas_to_hold_kv", "replicas_for_compute", "replicas_for_recompute",
                "nodes_of_dram_for_parked_kv", "sandbox_warm_pool"):
        assert v(b, key) >= v(a, key), key


@settings(max_examples=200, deadline=None)
@given(p=scenarios)
def test_orderings_that_always_hold(p):
    d = solve(p)
    assert v(d, "replicas_to_hold_kv") >= v(d, "replicas_for_compute") >= 1
    assert v(d, "kv_bytes_final") >= v(d, "kv_bytes_mean")
    # Recompute is a full prefill; reload is a copy. On every part and knob setting the copy wins.
    assert v(d, "recompute_per_step_s") > v(d, "reload_per_step_s")
    # sum of a growing context over the final one: at least (S + 1) / 2, at most S
    s = p.steps
    assert (s + 1) / 2 * (1 - 1e-9) <= v(d, "recompute_multiplier") <= s * (1 + 1e-9)
    assert 1 - 1e-9 <= v(d, "recompute_flop_multiplier") <= s * (1 + 1e-9)
    assert 0 < v(d, "gpu_duty_cycle") < 1
    assert v(d, "steps_in_an_hour") * v(d, "step_period_s") <= 3600 + 1e-6


# --- content -------------------------------------------------------------------------------------


def test_the_page_draws_its_figures_and_the_hour_is_called_out():
    c = load_content(CONTENT)
    assert set(c.directives()) == {("diagram", "session"), ("chart", "duration_vs_tool"),
                                   ("chart", "replicas_vs_sessions"), ("chart", "reload_vs_recompute")}
    numbers = c.section("Numbers").body
    for key in ("session_duration_s", "session_duration_h", "steps_in_an_hour", "tool_s_for_an_hour"):
        assert "{{" + key + "}}" in numbers, key


# --- the page, driven through AppTest ------------------------------------------------------------


def test_page_knobs_move_metrics_and_prose(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("WALKTHROUGHS_DB", str(tmp_path / "apptest.duckdb"))
    at = AppTest.from_file(str(ROOT / "pages" / "serving" / "agent_sessions.py"), default_timeout=30).run()
    assert not at.exception, [e.value for e in at.exception]
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["One session"] == "6,100 s"
    assert metrics["Replicas to hold KV in HBM"] == "23 replicas"
    text = "\n".join(m.value for m in at.markdown)
    assert "**59 steps**" in text and "**35 s**" in text  # the hour holds 59 steps; 35 s tools would fit 100
    at.select_slider(key="agent-sessions.tool_s").set_value(30.0).run()
    assert not at.exception
    # 100 x (1 + 30) s
    assert {m.label: m.value for m in at.metric}["One session"] == "3,100 s"
    assert "**3,100 s" in "\n".join(m.value for m in at.markdown)


def test_the_think_is_tied_to_its_tokens():
    d = solve(Params())
    step = d.value("think_decode_step_s")
    # the decode rate is one token per decode step; a 1 s think decodes 1 / step tokens
    assert d.value("think_tokens_per_s") == pytest.approx(1 / step)
    assert d.value("think_token_budget") == pytest.approx(1.0 / step)
    # the seed's 30-token action takes 30 steps
    assert d.value("think_decode_s") == pytest.approx(30 * step)
    # the engine's step at a batch of 45 and 29,250 tokens of context is about 30 ms: 33 tokens a second
    assert 25 < d.value("think_tokens_per_s") < 40
    assert d.value("think_fits") == "yes"
    # a 100-token action (some reasoning) at ~30 ms a token no longer fits a 1 s think
    assert solve(Params(action_tokens=100)).value("think_fits") == "no"


def test_provider_prompt_cache_across_the_tool_call():
    d = solve(Params())
    # a 60 s tool call is inside a 5-minute TTL
    assert d.value("provider_cache_ttl_s") == 300
    assert d.value("prefix_stays_warm") == "yes"
    # mean context 4,000 + 500 x 101 / 2 = 29,250 tokens; all but the 500 new ones read at 0.1x,
    # the new ones written at 1.25x: (28,750 x 0.1 + 500 x 1.25) / 29,250 = 3,500 / 29,250
    assert d.value("think_input_cost_share") == pytest.approx(3500 / 29250)
    # a 10-minute tool call outlives the TTL: every think rewrites the whole prefix at 1.25x
    cold = solve(Params(tool_s=600))
    assert cold.value("prefix_stays_warm") == "no"
    assert cold.value("think_input_cost_share") == pytest.approx(1.25)


def test_the_hour_verdict_the_flop_basis_and_the_nouns():
    from models.serving.agent_sessions import Params, solve
    # seed: 100 x (1 s + 60 s) = 6,100 s, longer than an hour -> an "hour" undercounts
    d = solve(Params())
    assert d.value("hour_count_verdict") == "undercounts"
    assert d.value("recompute_flop_basis") == "with the attention term"
    assert d.value("replica_gpus") == 8
    # 80 x (4 s + 10 s) = 1,120 s, shorter than an hour -> an "hour" overcounts
    short = solve(Params(steps=80, think_s=4.0, tool_s=10.0))
    assert short.value("hour_count_verdict") == "overcounts"
    off = solve(Params(attention_flops=False))
    assert off.value("recompute_flop_basis").startswith("with the attention term switched off")
    # "sandbox" takes "es"; "GPU" an "s"
    from models.serving.agent_sessions import _noun
    assert _noun(5, "sandbox") == "sandboxes" and _noun(1, "sandbox") == "sandbox" and _noun(2, "GPU") == "GPUs"
    assert d.value("parked_kv_hosts_verdict") == ("it outgrows them" if d.value("parked_kv_outgrows_hosts") == "yes"
                                                  else "they hold it")
