"""rag-10k-qps: the seed's 60-versus-200 from its own arithmetic, hand-worked variants, the
assumptions the absolute count hinges on, directions, the key figures and the content."""

from __future__ import annotations

import math
import statistics
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from models.content import PLACEHOLDER, load_content
from models.core import knobs_of
from models.serving.rag_10k_qps import Params, harmonic, llm_node_seconds, solve
from models.units import parse_unit

ROOT = Path(__file__).resolve().parents[2]
CONTENT = ROOT / "content" / "serving" / "rag-10k-qps.md"
DIRECTIVES = {("diagram", "rag_path"), ("chart", "latency_budget"), ("chart", "llm_vs_hit_rate"),
              ("chart", "llm_vs_prompt")}

# Llama-3-70B and the GPUs, written out here on purpose: the test recomputes from the published
# figures rather than from the model's own helpers.
N70 = 70.6e9
LAYERS, KV_HEADS, HEAD_DIM, Q_WIDTH = 80, 8, 128, 64 * 128
H100 = dict(fp8=1979e12, bf16=989e12, hbm=3.35e12, mem=80e9)
B200 = dict(fp8=4500e12, bf16=2250e12, hbm=8.0e12, mem=180e9)


def v(d, key):
    return d.value(key)


def hand_node_seconds(g, bytes_per, prompt, output, mfu, hbm_eff, batch):
    """Prefill on compute, decode on the slower of HBM and compute, per 8-GPU node."""
    peak = 8 * (g["fp8"] if bytes_per == 1 else g["bf16"]) * mfu
    prefill = (2 * N70 * prompt + 2 * LAYERS * prompt**2 * Q_WIDTH) / peak
    kv = 2 * LAYERS * KV_HEADS * HEAD_DIM * bytes_per
    room = 8 * g["mem"] * 0.9 - N70 * bytes_per
    batch = min(batch, math.floor(room / ((prompt + output) * kv)))
    memory = (N70 * bytes_per + batch * (prompt + output / 2) * kv) / (8 * g["hbm"] * hbm_eff)
    compute = 2 * N70 * batch / peak
    step = max(memory, compute)
    return prefill + output * step / batch, prefill, step


# --- the seed's own arithmetic --------------------------------------------------------------


def test_seed_ratio_fixes_the_hit_rate_and_nothing_else():
    # "the cache decides whether the LLM tier is 60 nodes or 200": 60 / 200 = 0.3 of queries
    # still reach the model, so the cache must answer 1 - 0.3 = 70% of them.
    assert 60 / 200 == pytest.approx(0.3)
    d = solve(Params())
    assert Params().cache_hit_rate == pytest.approx(1 - 60 / 200)
    assert v(d, "llm_nodes_no_cache") == 200
    assert v(d, "llm_nodes_with_cache") == 60
    assert v(d, "llm_cache_node_ratio") == pytest.approx(0.3)
    assert v(d, "llm_query_rate") == pytest.approx(10_000 * 0.3)
    # The ratio survives a change of hardware and precision; the absolute count does not.
    for gpu in ("H100 SXM", "H200", "B200"):
        for precision in ("FP8", "BF16"):
            alt = solve(Params(gpu=gpu, precision=precision))
            # up to one node of rounding on each count
            assert abs(v(alt, "llm_nodes_with_cache") - 0.3 * v(alt, "llm_nodes_no_cache")) <= 1


def test_seed_two_hundred_nodes_from_first_principles():
    # 70B in FP8 on 8 x H100 SXM; prompt 200 instructions + 30 question + 3 x 150 passages = 680
    # tokens, 200 output tokens, prefill at 50% MFU, decode batch 256 at 80% of HBM, fleet at
    # 80% busy.
    prompt = 200 + 30 + 3 * 150
    assert prompt == 680
    prefill_flop = 2 * 70.6e9 * 680 + 2 * 80 * 680**2 * 8192  # 9.601e13 + 6.06e11
    node_flops = 8 * 1979e12 * 0.5  # 7.916e15 FLOP/s
    prefill_s = prefill_flop / node_flops  # 12.2 ms
    kv_fp8 = 2 * 80 * 8 * 128 * 1  # 163,840 B per token
    memory_step = (70.6e9 + 256 * (680 + 100) * kv_fp8) / (8 * 3.35e12 * 0.8)  # 4.82 ms
    compute_step = 2 * 70.6e9 * 256 / node_flops  # 4.57 ms
    step = max(memory_step, compute_step)
    node_s = prefill_s + 200 * step / 256  # 16.0 ms
    assert node_s == pytest.approx(0.01597, rel=1e-3)
    assert math.ceil(10_000 * node_s / 0.8) == 200
    assert math.ceil(3_000 * node_s / 0.8) == 60

    d = solve(Params())
    assert v(d, "prompt_tokens") == 680
    assert v(d, "kv_bytes_per_token") == kv_fp8
    assert v(d, "prefill_flops_per_query") == pytest.approx(prefill_flop)
    assert v(d, "prefill_node_seconds") == pytest.approx(prefill_s)
    assert v(d, "decode_step_memory_s") == pytest.approx(memory_step)
    assert v(d, "decode_step_compute_s") == pytest.approx(compute_step)
    assert v(d, "decode_step_s") == pytest.approx(memory_step)  # just memory-bound: on the ridge
    assert v(d, "llm_node_seconds_per_query") == pytest.approx(node_s)
    assert v(d, "llm_nodes_at_full_busy") == pytest.approx(10_000 * node_s)
    assert v(d, "llm_gpus_with_cache") == 480


def test_bf16_doubles_the_seed_figures():
    # Twice the bytes per weight and per KV element, half the tensor rate: every term doubles.
    node_s, _, _ = hand_node_seconds(H100, 2, 680, 200, 0.5, 0.8, 256)
    fp8_s, _, _ = hand_node_seconds(H100, 1, 680, 200, 0.5, 0.8, 256)
    assert node_s / fp8_s == pytest.approx(2, rel=1e-3)
    d = solve(Params())
    assert v(d, "llm_nodes_no_cache_bf16") == math.ceil(10_000 * node_s / 0.8) == 400
    assert v(d, "llm_nodes_with_cache_bf16") == math.ceil(3_000 * node_s / 0.8) == 120
    assert v(d, "llm_nodes_no_cache_fp8") == 200
    bf = solve(Params(precision="BF16"))
    assert v(bf, "llm_nodes_no_cache") == 400 and v(bf, "llm_nodes_with_cache") == 120
    assert v(bf, "llm_weight_bytes") == pytest.approx(141.2e9)
    assert v(bf, "kv_bytes_per_token") == 327_680


def test_doubling_the_prompt_is_not_doubling_the_fleet():
    # 1,360 prompt tokens: prefill doubles (plus a little attention), decode grows by its KV reads.
    node_s, _, _ = hand_node_seconds(H100, 1, 1360, 200, 0.5, 0.8, 256)
    assert v(solve(Params()), "llm_nodes_no_cache_double_prompt") == math.ceil(10_000 * node_s / 0.8) == 368


def test_seed_fleets_from_tokens_and_pairs():
    d = solve(Params())
    # Embedder: 10,000 q/s x 30 tokens x 2 x 335M = 2.01e14 FLOP/s; a GPU at 40% of 989 TFLOP/s
    # is 3.956e14; at 80% busy the load is 0.64 of a GPU; never fewer than two.
    assert v(d, "embed_flops_per_s") == pytest.approx(10_000 * 30 * 2 * 335e6)
    assert v(d, "encoder_gpu_flops") == pytest.approx(989e12 * 0.4)
    assert v(d, "embedder_gpus_at_full_load") == pytest.approx(2.01e14 / (3.956e14 * 0.8))
    assert v(d, "embedder_gpus") == 2
    # Reranker: 10,000 x 50 pairs x (30 + 150) tokens x 2 x 278M = 5.004e16 FLOP/s -> 158.1 -> 159.
    assert v(d, "rerank_pairs_per_s") == 500_000
    assert v(d, "rerank_flops_per_s") == pytest.approx(500_000 * 180 * 2 * 278e6)
    assert v(d, "reranker_gpus") == math.ceil(5.004e16 / (3.956e14 * 0.8)) == 159
    assert v(d, "rerank_to_embed_compute") == pytest.approx(50 * 180 * 278 / (30 * 335))
    # Index: 1e9 x (1,024 x 2 B + 2 x 32 x 4 B) = 2.304 TB; 512 GB x 0.6 = 307.2 GB -> 7.5 -> 8 shards.
    assert v(d, "bytes_per_vector") == 2048 + 256
    assert v(d, "index_bytes") == pytest.approx(2.304e12)
    assert v(d, "index_shards") == 8
    # 32 cores / 5 ms = 6,400 searches/s; 10,000 / (6,400 x 0.8) = 1.95 -> 2, plus 1 spare.
    assert v(d, "index_node_qps") == pytest.approx(6400)
    assert v(d, "replicas_for_load") == 2
    assert v(d, "replicas_per_shard") == 3
    assert v(d, "index_nodes") == 24
    assert v(d, "total_gpus") == 2 + 159 + 480


def test_seed_latency_budget_by_stage():
    d = solve(Params())
    h8 = 1 + 1 / 2 + 1 / 3 + 1 / 4 + 1 / 5 + 1 / 6 + 1 / 7 + 1 / 8  # 761 / 280
    assert v(d, "fanout_tail_factor") == pytest.approx(h8)
    stages = {
        "latency_budget_ms_network": 40,
        # 5 ms window; 10,000 / 2 GPUs x 5 ms = 25 queries of 2 x 335M x 30 FLOP each
        "latency_budget_ms_embed": 5 + 1000 * 25 * (2 * 335e6 * 30) / (989e12 * 0.4),
        "latency_budget_ms_retrieve": 5 * h8,
        # one query's 50 pairs of 180 tokens on one GPU (more than the window collects: 15.7)
        "latency_budget_ms_rerank": 5 + 1000 * 50 * (2 * 278e6 * 180) / (989e12 * 0.4),
        "latency_budget_ms_llm_queue": 100,
    }
    _, prefill_s, step = hand_node_seconds(H100, 1, 680, 200, 0.5, 0.8, 256)
    stages["latency_budget_ms_prefill"] = 1000 * (prefill_s + step)
    for key, expected in stages.items():
        assert v(d, key) == pytest.approx(expected), key
    total = sum(stages.values())
    assert v(d, "latency_budget_ms") == pytest.approx(total)
    assert total == pytest.approx(194.5, abs=0.1)
    assert v(d, "latency_slack_ms") == pytest.approx(500 - total)
    assert v(d, "answer_complete_s") == pytest.approx(total / 1000 + 199 * step)


def test_seed_failure_mode_figures():
    d = solve(Params())
    node_s, _, _ = hand_node_seconds(H100, 1, 680, 200, 0.5, 0.8, 256)
    # A cold cache sends all 10,000 q/s to 60 nodes sized for 3,000.
    assert v(d, "cold_cache_load_pct") == pytest.approx(100 * 10_000 * node_s / 60)
    # 60 nodes run flat out at 60 / node_s q/s, i.e. a miss rate of 60 / (10,000 x node_s).
    assert v(d, "hit_rate_at_saturation_pct") == pytest.approx(100 * (1 - 60 / (10_000 * node_s)))
    assert v(d, "corpus_hidden_per_lost_shard_pct") == pytest.approx(12.5)
    # Re-embedding 1e9 passages of 150 tokens with 335M params on one GPU at 3.956e14 FLOP/s.
    assert v(d, "reembed_corpus_gpu_hours") == pytest.approx(1e9 * 150 * 2 * 335e6 / 3.956e14 / 3600)


# --- variants worked by hand ------------------------------------------------------------------


def test_variant_b200_bf16_longer_prompt_half_hit_rate():
    p = Params(gpu="B200", precision="BF16", system_prompt_tokens=300, query_tokens=50, passages_in_prompt=5,
               passage_tokens=200, output_tokens=300, cache_hit_rate=0.5, target_utilization=0.7,
               decode_batch=128)
    d = solve(p)
    prompt = 300 + 50 + 5 * 200  # 1,350
    peak = 8 * 2250e12 * 0.5  # 9e15 FLOP/s
    prefill = (2 * 70.6e9 * 1350 + 2 * 80 * 1350**2 * 8192) / peak
    kv = 327_680
    memory = (141.2e9 + 128 * (1350 + 150) * kv) / (8 * 8e12 * 0.8)  # (1.412e11 + 6.29e10) / 5.12e13
    compute = 2 * 70.6e9 * 128 / peak
    step = max(memory, compute)  # memory-bound: 3.99 ms vs 2.01 ms
    assert step == memory
    node_s = prefill + 300 * step / 128
    assert v(d, "prompt_tokens") == prompt
    assert v(d, "llm_node_seconds_per_query") == pytest.approx(node_s)
    assert v(d, "llm_nodes_no_cache") == math.ceil(10_000 * node_s / 0.7)
    assert v(d, "llm_nodes_with_cache") == math.ceil(5_000 * node_s / 0.7)
    assert v(d, "llm_cache_node_ratio") == pytest.approx(0.5, abs=0.01)


def test_variant_int8_index_small_degree_bigger_nodes():
    p = Params(qps=20_000, corpus_passages=5e9, embedding_dims=768, vector_format="int8", hnsw_degree=16,
               index_node_memory_gb=256, index_memory_fill=0.6, index_cores_per_node=64, search_cpu_ms=2,
               target_utilization=0.7, spare_replicas=2)
    d = solve(p)
    assert v(d, "bytes_per_vector") == 768 + 2 * 16 * 4  # 896 B
    assert v(d, "index_bytes") == pytest.approx(4.48e12)
    assert v(d, "index_shards") == math.ceil(4.48e12 / 153.6e9) == 30  # 29.2 -> 30
    assert v(d, "index_node_qps") == pytest.approx(64 * 1000 / 2)  # 32,000
    assert v(d, "replicas_for_load") == 1  # 20,000 / 22,400
    assert v(d, "replicas_per_shard") == 3
    assert v(d, "index_nodes") == 90
    assert v(d, "corpus_hidden_per_lost_shard_pct") == pytest.approx(100 / 30)


def test_variant_pq_codes_shrink_the_index():
    d = solve(Params(vector_format="PQ 64 B"))
    assert v(d, "bytes_per_vector") == 64 + 256
    assert v(d, "index_shards") == math.ceil(1e9 * 320 / 307.2e9) == 2


def test_variant_bigger_encoders_more_traffic():
    p = Params(qps=20_000, query_tokens=50, embedder_params_m=1000, rerank_candidates=100, passage_tokens=200,
               reranker_params_m=560, encoder_mfu=0.3, target_utilization=0.7)
    d = solve(p)
    gpu = 989e12 * 0.3 * 0.7  # 2.0769e14 FLOP/s of useful work per GPU
    assert v(d, "embedder_gpus") == math.ceil(20_000 * 50 * 2 * 1e9 / gpu) == 10  # 9.63 -> 10
    assert v(d, "reranker_gpus") == math.ceil(20_000 * 100 * 250 * 2 * 560e6 / gpu) == 2697


def test_long_prompt_caps_the_decode_batch_by_kv_memory():
    p = Params(precision="BF16", passages_in_prompt=40, passage_tokens=2000)
    d = solve(p)
    prompt = 200 + 30 + 40 * 2000  # 80,230
    per_seq = (prompt + 200) * 327_680  # 26.4 GB of KV per sequence
    limit = math.floor((8 * 80e9 * 0.9 - 141.2e9) / per_seq)  # 434.8 GB / 26.4 GB = 16
    assert limit == 16
    assert v(d, "decode_batch_kv_limit") == limit
    assert v(d, "decode_batch_effective") == limit
    assert v(d, "prefill_attention_share_pct") > 30  # attention matters at 80k tokens


def test_harmonic_numbers():
    assert harmonic(1) == 1
    assert harmonic(8) == pytest.approx(761 / 280)
    exact = sum(1 / k for k in range(1, 1001))
    assert harmonic(1000) == pytest.approx(exact, rel=1e-9)


def test_what_if_helper_agrees_with_the_steps():
    for precision in ("FP8", "BF16"):
        p = Params(precision=precision)
        d = solve(p)
        parts = llm_node_seconds(p.gpu, p.precision, v(d, "prompt_tokens"), p.output_tokens, p.prefill_mfu,
                                 p.hbm_efficiency, p.decode_batch)
        assert parts["total_s"] == pytest.approx(v(d, "llm_node_seconds_per_query"))
        assert v(d, f"llm_nodes_no_cache_{precision.lower()}") == v(d, "llm_nodes_no_cache")


# --- moves the right way ----------------------------------------------------------------------

scenarios = st.builds(
    Params,
    qps=st.floats(100, 100_000),
    passages_in_prompt=st.integers(1, 40),
    passage_tokens=st.integers(32, 2000),
    output_tokens=st.integers(10, 4000),
    gpu=st.sampled_from(["H100 SXM", "H200", "B200"]),
    precision=st.sampled_from(["FP8", "BF16"]),
    decode_batch=st.integers(1, 1024),
    cache_hit_rate=st.floats(0, 0.99),
    target_utilization=st.floats(0.3, 1.0),
    corpus_passages=st.floats(1e6, 1e11),
    rerank_candidates=st.integers(1, 1000),
)

FLEETS = ("embedder_gpus", "reranker_gpus", "replicas_per_shard", "llm_nodes_no_cache", "llm_nodes_with_cache")


@settings(max_examples=150, deadline=None)
@given(p=scenarios, factor=st.floats(1.01, 20))
def test_more_traffic_never_needs_less(p, factor):
    more = Params(**{**p.model_dump(), "qps": min(p.qps * factor, 100_000)})
    a, b = solve(p), solve(more)
    for key in FLEETS:
        assert v(b, key) >= v(a, key), key
    assert v(b, "index_shards") == v(a, "index_shards")  # shards follow bytes, not traffic


@settings(max_examples=150, deadline=None)
@given(p=scenarios, h=st.floats(0, 0.99))
def test_a_better_cache_shrinks_only_the_cached_tier(p, h):
    lo, hi = sorted((p.cache_hit_rate, h))
    a = solve(Params(**{**p.model_dump(), "cache_hit_rate": lo}))
    b = solve(Params(**{**p.model_dump(), "cache_hit_rate": hi}))
    assert v(b, "llm_nodes_with_cache") <= v(a, "llm_nodes_with_cache")
    for key in ("llm_nodes_no_cache", "embedder_gpus", "reranker_gpus", "index_nodes"):
        assert v(b, key) == v(a, key), key


@settings(max_examples=150, deadline=None)
@given(p=scenarios, extra=st.integers(1, 20))
def test_longer_prompts_never_need_fewer_llm_nodes(p, extra):
    more = Params(**{**p.model_dump(), "passages_in_prompt": min(p.passages_in_prompt + extra, 40)})
    a, b = solve(p), solve(more)
    assert v(b, "prompt_tokens") >= v(a, "prompt_tokens")
    assert v(b, "llm_node_seconds_per_query") >= v(a, "llm_node_seconds_per_query") * (1 - 1e-12)
    assert v(b, "llm_nodes_no_cache") >= v(a, "llm_nodes_no_cache")


@settings(max_examples=150, deadline=None)
@given(p=scenarios, b1=st.integers(1, 1024), b2=st.integers(1, 1024))
def test_bigger_decode_batches_never_cost_more_node_seconds(p, b1, b2):
    lo, hi = sorted((b1, b2))
    a = solve(Params(**{**p.model_dump(), "decode_batch": lo}))
    b = solve(Params(**{**p.model_dump(), "decode_batch": hi}))
    assert v(b, "decode_node_seconds") <= v(a, "decode_node_seconds") * (1 + 1e-12)
    assert v(b, "decode_step_s") >= v(a, "decode_step_s") * (1 - 1e-12)  # ...but every step is longer


@settings(max_examples=200, deadline=None)
@given(p=scenarios)
def test_orderings_that_always_hold(p):
    d = solve(p)
    assert v(d, "llm_nodes_with_cache") <= v(d, "llm_nodes_no_cache")
    # BF16 costs at least twice FP8 per query, so its fleet is at least 2x (less one for rounding).
    assert v(d, "llm_nodes_no_cache_bf16") >= 2 * v(d, "llm_nodes_no_cache_fp8") - 1
    assert v(d, "decode_batch_effective") <= min(p.decode_batch, v(d, "decode_batch_kv_limit"))
    assert v(d, "hit_rate_at_saturation_pct") <= 100 * p.cache_hit_rate + 1e-9
    assert v(d, "embedder_gpus") >= 2 and v(d, "reranker_gpus") >= 2
    assert v(d, "replicas_per_shard") >= 1 + p.spare_replicas
    stages = [k for k in d.keys() if k.startswith("latency_budget_ms_")]
    assert len(stages) == 6
    assert v(d, "latency_budget_ms") == pytest.approx(sum(v(d, k) for k in stages))
    assert v(d, "latency_cache_hit_ms") < v(d, "latency_budget_ms")


@settings(max_examples=100, deadline=None)
@given(c1=st.floats(1e6, 1e11), c2=st.floats(1e6, 1e11), m1=st.floats(64, 4096), m2=st.floats(64, 4096))
def test_shards_follow_corpus_bytes_over_node_memory(c1, c2, m1, m2):
    small, big = sorted((c1, c2))
    assert v(solve(Params(corpus_passages=big)), "index_shards") >= v(solve(Params(corpus_passages=small)),
                                                                     "index_shards")
    less, more = sorted((m1, m2))
    assert v(solve(Params(index_node_memory_gb=more)), "index_shards") <= v(
        solve(Params(index_node_memory_gb=less)), "index_shards")


@settings(max_examples=100, deadline=None)
@given(a=st.integers(1, 1000), b=st.integers(1, 1000))
def test_more_candidates_never_need_fewer_reranker_gpus(a, b):
    lo, hi = sorted((a, b))
    assert v(solve(Params(rerank_candidates=hi)), "reranker_gpus") >= v(solve(Params(rerank_candidates=lo)),
                                                                       "reranker_gpus")


def test_solve_is_fast():
    p = Params()
    times = []
    for _ in range(200):
        t0 = time.process_time()
        solve(p)
        times.append(time.process_time() - t0)
    median = statistics.median(times)
    print(f"\nsolve median {median * 1e6:.0f} µs")
    assert median < 1e-3


# --- contract -----------------------------------------------------------------------------------


def test_issue_key_figures_exist_with_their_units():
    d = solve(Params())
    expected = {
        "embedder_gpus": "1", "reranker_gpus": "1", "index_shards": "1", "replicas_per_shard": "1",
        "llm_node_seconds_per_query": "s", "llm_nodes_no_cache": "1", "llm_nodes_with_cache": "1",
        "latency_budget_ms": "ms", "latency_budget_ms_network": "ms", "latency_budget_ms_embed": "ms",
        "latency_budget_ms_retrieve": "ms", "latency_budget_ms_rerank": "ms",
        "latency_budget_ms_llm_queue": "ms", "latency_budget_ms_prefill": "ms",
    }
    for key, unit in expected.items():
        assert key in d, key
        assert d[key].unit == unit, key
    # Millisecond steps read as milliseconds; node-seconds below a second read in ms too.
    assert d["latency_budget_ms"].display() == "194.5 ms"
    assert d["latency_budget_ms_network"].display() == "40 ms"
    assert d["llm_node_seconds_per_query"].display() == "15.97 ms"
    assert d["llm_nodes_no_cache"].display() == "200 nodes"
    assert parse_unit("ms") == parse_unit("s") / 1000


def test_every_step_has_a_parsable_unit_and_a_formula():
    d = solve(Params())
    for s in d:
        parse_unit(s.unit)
        assert s.formula, s.key
        assert s.worked()
        assert math.isfinite(float(s.value)), s.key


def test_params_defaults_and_knobs():
    for name, knob in knobs_of(Params).items():
        default = getattr(Params(), name)
        assert knob.label and knob.help, name
        if isinstance(default, str):
            continue
        assert knob.draw, name
        lo, hi = knob.draw
        assert knob.min <= lo <= hi <= knob.max, name
        assert knob.min <= default <= knob.max, name


@pytest.mark.parametrize(("field", "value", "label"), [
    ("qps", 1e6, "Query rate"),
    ("cache_hit_rate", 1.0, "Answer-cache hit rate"),
    ("passages_in_prompt", 0, "Passages in the prompt"),
])
def test_out_of_range_knob_names_its_label(field, value, label):
    with pytest.raises(ValidationError) as err:
        Params(**{field: value})
    assert label in str(err.value)


def test_unknown_choice_is_rejected():
    with pytest.raises(ValidationError):
        Params(precision="FP4")


# --- content ----------------------------------------------------------------------------------


def test_content_placeholders_and_drills_resolve():
    c = load_content(CONTENT)
    d = solve(Params())
    names = set(d.keys()) | set(knobs_of(Params))
    for text in [c.hook, c.intro, *(s.body for s in c.sections)]:
        for m in PLACEHOLDER.finditer(text):
            assert m.group(1) in names, m.group(1)
    for drill in c.drills:
        assert drill.key in d, drill.key
        for m in PLACEHOLDER.finditer(drill.prompt):
            assert m.group(1) in names, (drill.key, m.group(1))
    for key, _label in c.metrics:
        assert key in d, key
    assert set(c.directives()) == DIRECTIVES


def test_content_shape():
    c = load_content(CONTENT)
    assert [s.title for s in c.sections] == ["Numbers", "Shape", "Arithmetic", "Depth", "Failure modes", "Takeaways"]
    assert c.hook and len(c.metrics) <= 6
    assert len(c.drills) >= 6
    assert {dr.phase for dr in c.drills} == {"numbers", "shape", "arithmetic", "depth", "failure_modes"}
    words = len(c.intro.split()) + sum(len(s.body.split()) for s in c.sections)
    assert 900 <= words <= 1600, words
    # Every issue key figure is taught in the prose, not only computed.
    prose = c.intro + "".join(s.body for s in c.sections)
    for key in ("embedder_gpus", "reranker_gpus", "index_shards", "replicas_per_shard",
                "llm_node_seconds_per_query", "llm_nodes_no_cache", "llm_nodes_with_cache", "latency_budget_ms",
                "llm_nodes_no_cache_bf16", "llm_nodes_no_cache_double_prompt"):
        assert "{{" + key + "}}" in prose, key


# --- the page -------------------------------------------------------------------------------------


def _metric(at, label):
    return next(m.value for m in at.metric if m.label == label)


def test_page_precision_and_hit_rate_move_the_llm_tier(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("WALKTHROUGHS_DB", str(tmp_path / "apptest.duckdb"))
    at = AppTest.from_file(str(ROOT / "pages" / "serving" / "rag_10k_qps.py"), default_timeout=30).run()
    assert not at.exception, [e.value for e in at.exception]
    assert len(at.get("plotly_chart")) == 4  # diagram + three charts
    assert _metric(at, "LLM nodes, no cache") == "200 nodes"
    assert _metric(at, "LLM nodes, with cache") == "60 nodes"
    assert _metric(at, "Time to first token") == "194.5 ms"
    at.selectbox(key="rag-10k-qps.precision").set_value("BF16").run()
    assert not at.exception
    # twice the bytes and half the tensor rate: 400 and 120
    assert _metric(at, "LLM nodes, no cache") == "400 nodes"
    assert _metric(at, "LLM nodes, with cache") == "120 nodes"
    at.slider(key="rag-10k-qps.cache_hit_rate").set_value(50.0).run()
    assert not at.exception
    # half the queries reach the model: ceil(5,000 x 2 x 15.97 ms / 0.8) = 200
    assert _metric(at, "LLM nodes, with cache") == "200 nodes"
    assert "**200 nodes**" in "\n".join(m.value for m in at.markdown)
