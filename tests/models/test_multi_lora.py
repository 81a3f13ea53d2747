"""multi-lora: seed figures from the seed's own arithmetic, the same question on the shared engine
worked by hand, a published worked problem entered on the page, a hand-worked variant,
directions, contract and content."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from models.content import load_content
from models.serving.multi_lora import Params, expected_distinct, solve

ROOT = Path(__file__).resolve().parents[2]
CONTENT = ROOT / "content" / "serving" / "multi-lora.md"


def v(d, key):
    return d.value(key)


# Llama-3-70B, written out once for the hand arithmetic below (the model reads the catalog).
D, HEADS, KV_HEADS, HEAD_DIM, FFN, LAYERS, VOCAB = 8192, 64, 8, 128, 28_672, 80, 128_256
KV_OUT = KV_HEADS * HEAD_DIM
PARAMS = 2 * VOCAB * D + LAYERS * (2 * D * HEADS * HEAD_DIM + 2 * D * KV_OUT + 3 * D * FFN)  # 70.55 B
KV_PER_TOKEN = 2 * 80 * 8 * 128 * 2  # 327,680 B
H100 = dict(hbm=3.35e12, mem=80e9, bf16=989e12, link=450e9)
H200 = dict(hbm=4.8e12, mem=141e9, bf16=989e12, link=450e9)
PCIE5_GBPS = 32 * 16 * (128 / 130) / 8  # 63.0 GB/s each way
# The engine's defaults: MBU 80%, decode MFU 50%, 1.9 ms a step, 6 µs an all-reduce, 90% usable.
MBU, MFU, FIXED_S, AR_S, USABLE = 0.8, 0.5, 1.9e-3, 6e-6, 0.9
ATTN_PER_POSITION = 2 * LAYERS * HEADS * 2 * HEAD_DIM


def step_s(b, ctx=2200, g=H100, tp=8):
    """The engine's decode step for the 70B in bf16, by hand."""
    memory = (2 * PARAMS + b * ctx * KV_PER_TOKEN) / (tp * g["hbm"] * MBU)
    compute = b * (2 * PARAMS + ATTN_PER_POSITION * ctx) / (tp * g["bf16"] * MFU)
    ar = 2 * LAYERS * (AR_S + 2 * (tp - 1) / tp * b * D * 2 / g["link"]) if tp > 1 else 0
    return max(memory, compute) + ar + FIXED_S


def hand_fleet(tokens_per_s, step, tpot=0.05, util=0.7):
    """The fewest replicas whose busy share, tokens/s x step(b) / b at the b = tokens/s x TPOT
    sequences each holds, stays within the target."""
    n = 1
    while True:
        b = tokens_per_s / n * tpot
        busy = tokens_per_s / n * step(max(1, b)) / max(1, b)
        if busy <= util:
            return n, b, busy
        n += 1


# --- the seed's own arithmetic ----------------------------------------------------------------


def test_seed_a_replica_per_variant():
    # "100 variants x 140 GB base": 70.55 B parameters x 2 B; "800 GPUs": a replica of 8 each.
    d = solve(Params())
    assert v(d, "base_params") == pytest.approx(PARAMS)
    assert v(d, "base_weight_bytes") == pytest.approx(2 * PARAMS) == pytest.approx(140e9, rel=0.01)
    assert v(d, "dedicated_weight_bytes") == pytest.approx(100 * 2 * PARAMS)
    assert v(d, "dedicated_replicas_per_variant") == 1
    assert v(d, "dedicated_gpus") == 100 * 8 == 800


def test_seed_mostly_idle():
    # 30,000 tokens/s over 100 variants is 300 each: at a 50 ms TPOT a replica holds 15 sequences
    # and steps in about 10 ms (141.1 GB + 15 x 2,200 x 327,680 B over 8 x 3.35 TB/s x 0.8 = 7.1 ms,
    # + 160 all-reduces of 6 µs and 1.9 ms fixed), so it is busy a fifth of the time.
    d = solve(Params())
    assert v(d, "per_variant_tokens_per_s") == pytest.approx(300)
    assert v(d, "dedicated_held_batch") == pytest.approx(300 * 0.05)
    assert v(d, "dedicated_utilization") == pytest.approx(300 * step_s(15) / 15)
    assert v(d, "dedicated_utilization") < 0.25


def test_seed_800_gpus_holds_only_at_eight_per_variant():
    """The seed's 800 is its replica of 8. One H100 (72 GB usable) cannot hold 141 GB; two hold it
    with 2.9 GB of KV room, floor(2.9 GB / (2,400 x 327,680 B)) = 3 sequences, so the 15 held need
    5 replicas, 10 GPUs; four hold it with 147 GB to spare, stepping 15 sequences in ~17 ms, busy
    300 x 17 ms / 15 = 34%: 4 GPUs per variant, 400 in all. In fp8 on one H200 (127 GB usable),
    70.6 GB of weights leave room for 71 sequences and a 15-sequence step of ~23 ms (no all-reduce),
    busy 46%: 1 GPU per variant, 100 in all."""
    d = solve(Params())
    seq = 2400 * KV_PER_TOKEN
    assert 0.9 * 80e9 < 2 * PARAMS  # one H100 cannot hold the base
    assert math.floor((0.9 * 2 * 80e9 - 2 * PARAMS) / seq) == 3  # two hold 3 sequences: 5 replicas
    n4, _b, busy4 = hand_fleet(300, lambda b: step_s(b, tp=4))
    assert n4 == 1 and busy4 < 0.7
    assert v(d, "dedicated_smallest_gpus_per_variant") == 4
    assert v(d, "dedicated_gpus_smallest") == 400 == v(d, "dedicated_gpus") / 2
    h200_step = (PARAMS + 15 * 2200 * KV_PER_TOKEN) / (4.8e12 * MBU) + FIXED_S
    assert 300 * h200_step / 15 < 0.7
    assert v(d, "fp8_h200_gpus_per_variant") == 1
    assert v(d, "dedicated_gpus_fp8_h200") == 100
    # scaling a full fine-tune to zero: 141 GB back from one NVMe Gen5 drive at 14 GB/s, ~10 s
    assert v(d, "full_finetune_load_from_nvme_s") == pytest.approx(2 * PARAMS / 14e9, rel=0.01)


def test_seed_adapter_rank_8_on_q_and_v_is_about_33_mb():
    d = solve(Params())
    per_rank = (D + D) + (D + KV_OUT)  # q: 8,192 x 8,192; v: 8,192 x 1,024
    assert v(d, "lora_params_per_rank_per_layer") == per_rank == 25_600
    assert v(d, "adapter_params") == 8 * per_rank * LAYERS == 16_384_000
    assert v(d, "adapter_bytes") == 2 * 16_384_000


def test_seed_rank_16_on_all_seven_is_much_larger():
    d = solve(Params())
    per_rank = 2 * (D + D) + 2 * (D + KV_OUT) + 3 * (D + FFN)
    assert v(d, "heavy_params_per_rank_per_layer") == per_rank == 161_792
    assert v(d, "heavy_adapter_bytes") == 16 * per_rank * LAYERS * 2


def test_seed_hundreds_of_adapters_in_a_few_gigabytes():
    d = solve(Params())
    assert v(d, "adapters_total_bytes") == pytest.approx(100 * 32_768_000)  # 3.3 GB
    assert v(d, "adapter_slots_per_replica") == math.floor(8e9 / 32_768_000) == 244


def test_seed_shared_fleet_by_hand():
    d = solve(Params())
    # Memory: 8 x 80 GB x 0.9 - 141.1 GB - 8 GB reserve, over 2,400 tokens x 327,680 B a sequence.
    room = 8 * 80e9 * 0.9 - 2 * PARAMS - 8e9
    assert v(d, "batch_memory_cap") == math.floor(room / (2400 * KV_PER_TOKEN)) == 542
    assert v(d, "decode_batch") == 542  # memory binds before the 50 ms TPOT target

    def lora(b):
        return step_s(b) * 1.05 + expected_distinct(100, b) * 32_768_000 / (8 * 3.35e12 * 0.8)

    # Three replicas hold 30,000 / 3 x 50 ms = 500 sequences each, a step of 33 ms: 66% busy.
    n, b, busy = hand_fleet(30_000, lora)
    assert v(d, "multi_lora_replicas") == n == 3
    assert v(d, "held_batch") == pytest.approx(b) == pytest.approx(500)
    assert v(d, "distinct_adapters_per_batch") == pytest.approx(100 * (1 - 0.99**500))
    assert v(d, "lora_step_s") == pytest.approx(lora(500))
    assert v(d, "mixed_batch_overhead_fraction") == pytest.approx(1 - step_s(500) / lora(500))
    assert v(d, "multi_lora_utilization") == pytest.approx(busy)
    assert v(d, "multi_lora_gpus") == 24
    assert v(d, "multi_lora_replica_weight_bytes") == pytest.approx(2 * PARAMS + 100 * 32_768_000)
    assert v(d, "gpu_saving_ratio") == pytest.approx(800 / 24)


def test_seed_routing_and_misses():
    d = solve(Params())
    assert v(d, "adapters_routed_per_replica") == math.ceil(100 * 2 / 3) == 67
    assert v(d, "adapter_load_from_dram_s") == pytest.approx(32_768_000 / (8 * PCIE5_GBPS * 1e9))
    assert v(d, "heavy_adapter_slots_per_replica") == math.floor(8e9 / (16 * 161_792 * 80 * 2)) == 19


def test_seed_measured_load_beside_the_floor_and_the_engine_caps():
    d = solve(Params())
    floor_s = 32_768_000 / (8 * PCIE5_GBPS * 1e9)  # 32.8 MB over eight PCIe Gen5 links: 0.065 ms
    # LoRAX's 500 ms (its issue 433: "500ms ~ 1+s") is about 7,700 floors and 15 shared decode steps.
    assert v(d, "lorax_measured_load_s") == 0.5
    assert v(d, "measured_load_over_floor") == pytest.approx(0.5 / floor_s)
    assert 7_000 < 0.5 / floor_s < 8_000
    assert v(d, "measured_load_in_steps") == pytest.approx(0.5 / v(d, "lora_step_s"))
    # vLLM's max_loras is 1, SGLang's max_loras_per_batch 8; a routed batch here mixes 67 adapters.
    assert (v(d, "vllm_max_loras"), v(d, "sglang_max_loras_per_batch")) == (1, 8)
    routed = 67 * (1 - (1 - 1 / 67) ** 500)
    assert v(d, "distinct_adapters_per_batch_routed") == pytest.approx(routed)
    assert v(d, "engine_cap_clause").startswith("Both defaults are below")
    # Four variants: a routed batch holds at most four adapters, which SGLang's 8 covers.
    few = solve(Params(variants=4))
    assert v(few, "distinct_adapters_per_batch") <= 4 < 8
    assert v(few, "engine_cap_clause").startswith("Even SGLang's default covers")


def test_seed_own_replica_threshold():
    # Alone, a replica at b = tokens/s x TPOT is busy step(b) / TPOT: 70% when its step is 35 ms.
    # Memory side: (141.1 GB + b x 2,200 x 327,680 B) / 21.44 TB/s + all-reduces + 1.9 ms = 35 ms
    # at b = 583 sequences, more than the 542 whose KV fits: memory caps the replica first, and
    # the threshold is 542 / 50 ms = 10,840 tokens/s.
    d = solve(Params())
    bw = 8 * 3.35e12 * 0.8
    fixed = FIXED_S + 160 * AR_S
    per_seq = 2200 * KV_PER_TOKEN / bw + 160 * 2 * 7 / 8 * D * 2 / 450e9
    b = (0.035 - fixed - 2 * PARAMS / bw) / per_seq
    assert step_s(b) == pytest.approx(0.035)
    assert round(b) == 583
    assert v(d, "dedicate_threshold_tokens_per_s") == pytest.approx(min(542, b) / 0.05) == pytest.approx(10_840)
    assert v(d, "top_variant_earns_replica") == "no"  # 3,000 tokens/s
    # 3,000 tokens/s against 10,840 a replica carries at the target: one replica; at a 40% share of 30,000
    # (12,000 tokens/s) ceil(12,000 / 10,840) = 2
    assert v(d, "top_variant_dedicated_replicas") == 1
    assert v(solve(Params(top_variant_share=0.4)), "top_variant_dedicated_replicas") == 2


def test_seed_pool_against_the_smallest_dedicated_deployment():
    d = solve(Params())
    # dedicated: 800 on 8 GPUs each, 400 on the smallest H100 replica, 100 with fp8 on H200; the pool is 24
    fewest = min(v(d, "dedicated_gpus"), v(d, "dedicated_gpus_smallest"), v(d, "dedicated_gpus_fp8_h200"))
    assert v(d, "dedicated_gpus_fewest") == fewest == 100
    assert v(d, "gpu_saving_ratio_fewest") == pytest.approx(100 / 24)


# --- a published worked problem, entered on the page ------------------------------------------


def test_lora_paper_gpt3_budget_of_18m_parameters():
    # Hu et al., "LoRA: Low-Rank Adaptation of Large Language Models" (ICLR 2022,
    # arXiv:2106.09685), section 7.1: "a parameter budget of 18M (roughly 35MB if stored in FP16)
    # on GPT-3 175B, which corresponds to r = 8 if we adapt one type of attention weights or r = 4
    # if we adapt two types, for all 96 layers". GPT-3 175B: 96 layers, d_model 12,288, 96 heads
    # of 128 (multi-head attention). Entered as a custom model; its MLP width of 32,768 gated
    # (3 x 12,288 x 32,768) carries the same parameters as GPT-3's plain 49,152 (2 x 12,288 x 49,152).
    p = Params(model="Custom", custom_layers=96, custom_d_model=12288, custom_heads=96, custom_kv_heads=96,
               custom_head_dim=128, custom_ffn_dim=32768, custom_vocab=50257, lora_rank=4, targets="q,v",
               variants=10, total_tokens_per_s=1000, prompt_tokens=1000, output_tokens=200)
    d = solve(p)
    params = 4 * (12288 + 12288) * 2 * 96  # r x (d_in + d_out) x two projections x 96 layers
    assert params == 18_874_368
    assert v(d, "adapter_params") == params == pytest.approx(18e6, rel=0.05)
    assert v(d, "adapter_bytes") == 2 * params
    assert v(d, "adapter_bytes") / 2**20 == pytest.approx(35, rel=0.04)  # "roughly 35MB" (36 MiB)
    # The base in bf16 is GPT-3's 350 GB: 2 x (96 x 12 x 12,288^2 + 50,257 x 12,288 x 2).
    base = 2 * (96 * 12 * 12288**2 + 2 * 50257 * 12288)
    assert v(d, "base_weight_bytes") == pytest.approx(base) == pytest.approx(350e9, rel=0.02)
    # ...so the paper's 10,000-fold cut in trainable parameters is the adapter-to-base ratio.
    assert 1 / v(d, "adapter_to_base_ratio") == pytest.approx(base / 2 / params)
    assert base / 2 / params == pytest.approx(10_000, rel=0.1)


# --- a variant worked by hand ----------------------------------------------------------------


def test_variant_h200_four_gpus_rank_16_attention_adapters():
    p = Params(gpu="H200", tp_degree=4, lora_rank=16, targets="q,k,v,o", variants=300, total_tokens_per_s=60_000,
               adapter_budget_gb=16, sgmv_overhead_fraction=0.1, replicas_per_adapter=3)
    d = solve(p)
    per_rank = 2 * (D + D) + 2 * (D + KV_OUT)  # 51,200
    adapter = 16 * per_rank * LAYERS * 2
    assert v(d, "adapter_bytes") == adapter == 131_072_000
    room = 4 * 141e9 * 0.9 - 2 * PARAMS - 16e9
    assert v(d, "batch_memory_cap") == math.floor(room / (2400 * KV_PER_TOKEN))

    def base(b):
        return step_s(b, g=H200, tp=4)

    def lora(b):
        return base(b) * 1.1 + expected_distinct(300, b) * adapter / (4 * 4.8e12 * 0.8)

    n, b, _ = hand_fleet(60_000, lora)
    cap = v(d, "decode_batch")
    n = max(n, math.ceil(60_000 * 0.05 / cap - 1e-9))
    assert v(d, "multi_lora_replicas") == n
    assert v(d, "multi_lora_gpus") == 4 * n
    nd, _, _ = hand_fleet(200, base)
    assert v(d, "dedicated_gpus") == 300 * nd * 4
    assert v(d, "adapter_slots_per_replica") == math.floor(16e9 / adapter) == 122


def test_scenarios_the_page_cannot_run_are_refused_in_a_sentence():
    with pytest.raises(ValidationError, match="GB usable"):
        Params(tp_degree=1)  # 141 GB of bf16 weights on one 80 GB GPU
    with pytest.raises(ValidationError, match="adapter reserve"):
        Params(tp_degree=2, gpu="H100 SXM", weight_precision="fp8", adapter_budget_gb=100)
    with pytest.raises(ValidationError, match="mixture of experts"):
        Params(model="Mixtral-8x7B", targets="all seven")
    with pytest.raises(ValidationError, match="MLA"):
        Params(model="DeepSeek-V3", gpu="B200", weight_precision="fp8")
    d = solve(Params(model="Mixtral-8x7B", tp_degree=2))
    assert v(d, "heavy_params_per_rank_per_layer") == 2 * (4096 + 4096) + 2 * (4096 + 1024)


# --- moves the right way -------------------------------------------------------------------------


@st.composite
def scenarios(draw):
    values = dict(
        variants=draw(st.integers(1, 2000)),
        gpu=draw(st.sampled_from(["H100 SXM", "H200", "B200"])),
        tp_degree=draw(st.sampled_from([4, 8])),
        lora_rank=draw(st.integers(1, 128)),
        targets=draw(st.sampled_from(["q,v", "q,k,v,o", "all seven"])),
        total_tokens_per_s=draw(st.floats(100, 1_000_000)),
        sgmv_overhead_fraction=draw(st.floats(0, 0.5)),
        target_utilization=draw(st.floats(0.3, 1.0)),
        adapter_budget_gb=draw(st.floats(0.5, 20)),
    )
    try:
        return Params(**values)
    except ValidationError:
        assume(False)


def _with(p, **kw):
    try:
        return Params(**{**p.model_dump(), **kw})
    except ValidationError:
        assume(False)


@settings(max_examples=60, deadline=None)
@given(p=scenarios(), extra=st.integers(1, 1000))
def test_more_variants_never_need_fewer_gpus(p, extra):
    more = _with(p, variants=min(2000, p.variants + extra))
    a, b = solve(p), solve(more)
    # Each variant's count is rounded up on its own: 2 x ceil(85.6) > 3 x ceil(56.9) replicas,
    # so a replica per variant only grows for sure once one replica each carries the load.
    if v(a, "dedicated_replicas_per_variant") == 1:
        assert v(b, "dedicated_gpus") >= v(a, "dedicated_gpus")
    assert v(b, "multi_lora_gpus") >= v(a, "multi_lora_gpus")


@settings(max_examples=60, deadline=None)
@given(p=scenarios(), factor=st.floats(1.01, 100))
def test_more_traffic_never_needs_fewer_gpus(p, factor):
    more = _with(p, total_tokens_per_s=min(10_000_000, p.total_tokens_per_s * factor))
    a, b = solve(p), solve(more)
    assert v(b, "dedicated_gpus") >= v(a, "dedicated_gpus")
    assert v(b, "multi_lora_gpus") >= v(a, "multi_lora_gpus")


@settings(max_examples=60, deadline=None)
@given(p=scenarios(), extra=st.integers(1, 100))
def test_higher_rank_weighs_more_and_costs_more(p, extra):
    more = _with(p, lora_rank=min(256, p.lora_rank + extra))
    a, b = solve(p), solve(more)
    assert v(b, "adapter_bytes") > v(a, "adapter_bytes")
    assert v(b, "multi_lora_gpus") >= v(a, "multi_lora_gpus")


@settings(max_examples=60, deadline=None)
@given(p=scenarios())
def test_orderings_that_always_hold(p):
    d = solve(p)
    assert v(d, "distinct_adapters_per_batch_routed") <= v(d, "distinct_adapters_per_batch") + 1e-9
    assert v(d, "mixed_batch_overhead_routed_fraction") <= v(d, "mixed_batch_overhead_fraction") + 1e-9
    assert v(d, "multi_lora_replicas") >= v(d, "multi_lora_replicas_continuous") - 1e-9
    assert v(d, "held_batch") <= v(d, "decode_batch") + 1e-9
    assert v(d, "replica_fits_in_hbm") == "yes"


@settings(max_examples=60, deadline=None)
@given(p=scenarios(), tax=st.floats(0, 0.5))
def test_a_bigger_kernel_tax_never_helps(p, tax):
    lo, hi = sorted((p.sgmv_overhead_fraction, tax))
    a, b = solve(_with(p, sgmv_overhead_fraction=lo)), solve(_with(p, sgmv_overhead_fraction=hi))
    assert v(b, "multi_lora_gpus") >= v(a, "multi_lora_gpus")


# --- content -------------------------------------------------------------------------------------


def test_the_page_draws_its_figures():
    c = load_content(CONTENT)
    assert set(c.directives()) == {("diagram", "fleet"), ("chart", "adapter_bytes"), ("chart", "gpus_vs_traffic"),
                                   ("chart", "overhead_vs_variants")}


# --- the page, driven through AppTest ------------------------------------------------------------


def test_page_knobs_move_metrics_and_prose(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("WALKTHROUGHS_DB", str(tmp_path / "apptest.duckdb"))
    at = AppTest.from_file(str(ROOT / "pages" / "serving" / "multi_lora.py"), default_timeout=30).run()
    assert not at.exception, [e.value for e in at.exception]
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["A replica per variant"] == "800 GPUs"
    assert metrics["Shared multi-LoRA pool"] == "24 GPUs"
    assert metrics["One adapter"] == "32.77 MB"
    at.select_slider(key="multi-lora.variants").set_value(200).run()
    assert not at.exception
    # 200 variants x 8 GPUs
    assert {m.label: m.value for m in at.metric}["A replica per variant"] == "1,600 GPUs"
    assert "**1,600 GPUs**" in "\n".join(m.value for m in at.markdown)
    at.selectbox(key="multi-lora.targets").set_value("all seven").run()
    assert not at.exception
    # rank 8 on all seven: 8 x 161,792 x 80 x 2 B = 207,093,760 B
    assert {m.label: m.value for m in at.metric}["One adapter"] == "207.1 MB"


def test_the_adapter_drill_quotes_the_drawn_models_shape():
    from models.registry import QUESTIONS
    from ui.prose import render

    q = QUESTIONS["multi-lora"]
    drill = next(dr for dr in q.drills if dr.key == "adapter_bytes")
    # Llama-3-8B (its config): 32 layers, d_model 4,096, 32 heads and 8 KV heads of 128, MLP 14,336.
    p = Params(model="Llama-3-8B", lora_rank=8, targets="q,v")
    d = solve(p)
    text = render(drill.question, d, p).replace("*", "")
    assert ("(32 layers, d_model 4,096; q projects to 4,096, k and v to 1,024; MLP width 14,336)" in text
            and "Llama-3-70B" not in text)
    # q: 4,096 + 4,096, v: 4,096 + 1,024 per unit rank per layer; x 8 x 32 layers x 2 B = 6.82 MB
    assert d.value("adapter_bytes") == (4096 + 4096 + 4096 + 1024) * 8 * 32 * 2
    seed = render(drill.question, solve(Params()), Params()).replace("*", "")
    assert "(80 layers, d_model 8,192; q projects to 8,192, k and v to 1,024; MLP width 28,672)" in seed


@pytest.mark.parametrize("tokens_per_s", [3.0, 250.0, 40_000.0, 2e6])
@pytest.mark.parametrize("step_of", [
    lambda b: 0.012 + 0.0004 * b,                     # a straight step: memory-bound decode
    lambda b: max(0.012 + 0.0001 * b, 0.002 * b),     # two sides: compute binds past a batch
    lambda b: 0.012 + 0.0003 * b + 0.004 * (1 - 0.97 ** b),  # adapters read grow then saturate
])
def test_the_fleet_root_is_where_halving_the_busy_share_lands(tokens_per_s, step_of):
    """_fleet's continuous replicas against a plain bisection of the same busy share (200 halvings):
    the secant search it uses must land on the same count."""
    from models.serving.multi_lora import _fleet

    tpot, util = 0.05, 0.7

    def busy(n):
        t = tokens_per_s / n
        b = t * tpot
        return t * step_of(max(1.0, b)) / max(1.0, b)

    lo, hi = 1e-9, 1e9
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if busy(mid) > util else (lo, mid)
    continuous, n, *_ = _fleet(tokens_per_s, step_of, tpot, util, batch_cap=10**9)
    assert continuous == pytest.approx(hi, rel=1e-9)
    assert n == max(1, math.ceil(hi - 1e-9))
