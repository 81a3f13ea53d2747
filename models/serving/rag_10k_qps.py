"""Retrieval-augmented answers at 10,000 queries a second (seeds 000, 003, 004).

Four fleets behind one request: a query embedder, a sharded vector index, a cross-encoder
reranker and a 70B answer model, with an answer cache in front of the answer model only.
Each fleet is sized from the unit of work it actually does, never from queries:

- embedder: query tokens/s x 2 x params FLOP, on GPUs at a stated encoder MFU;
- index: bytes of vectors plus graph links against usable memory per node gives shards; every
  query visits every shard, so each shard's replicas carry the full query rate;
- reranker: (query, passage) pairs/s x tokens per pair x 2 x params FLOP;
- answer model: node-seconds per query = prefill (compute at an MFU) + decode (one step of a
  batch reads the weights and the batch's KV cache at an HBM efficiency, or is compute-bound,
  whichever is slower, shared by the batch).

Modelling choices (stated on the page): the answer cache is keyed on the normalized query and
the IDs/versions of the passages the reranker chose, so it sits in front of the LLM and a hit
skips only the LLM; the retrieval tiers see every query. Encoders run in BF16 whatever the
answer model's precision. An LLM node is one tensor-parallel replica over its 8 GPUs, and
prefill and decode share its time (chunked prefill), so their node-seconds add.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

from models.catalog import GPUS_PER_NODE, HBM_USABLE_FRACTION, INFER_FLOPS_PER_PARAM_TOKEN, gpu, model
from models.core import Derivation, Knob, StrictModel
from models.units import format_number

ANSWER_MODEL = "Llama-3-70B"
# HNSW keeps 2M neighbours per vector on its bottom layer (hnswlib's maxM0 = 2M), 4-byte ids.
HNSW_LINK_BYTES = 4
# Bytes per stored vector element for each format; PQ stores a fixed 64-byte code per vector.
VECTOR_FORMATS = {"fp32": 4.0, "fp16": 2.0, "int8": 1.0}
PQ_CODE_BYTES = 64
# A stage is never run on a single GPU: one failure would be an outage.
MIN_GPUS_PER_FLEET = 2


class Params(StrictModel):
    qps: Annotated[float, Knob(
        "Query rate", "queries/s", 100, 100_000, log=True,
        help="Peak queries per second arriving at the front door.", draw=(1_000, 30_000),
    )] = 10_000
    query_tokens: Annotated[int, Knob(
        "Query length", "tokens", 5, 200, 1,
        help="Tokens in the user's question: what the embedder encodes.", draw=(15, 60),
    )] = 30
    embedder_params_m: Annotated[float, Knob(
        "Embedder size", "M params", 20, 8000, log=True,
        help="Parameters of the query embedder (a BERT-large class encoder is ~335M).", draw=(100, 1500),
    )] = 335
    embedding_dims: Annotated[int, Knob(
        "Embedding dimensions", "dims", 128, 4096, log=True,
        help="Length of each stored vector.", draw=(384, 1536),
    )] = 1024
    vector_format: Annotated[Literal["fp32", "fp16", "int8", "PQ 64 B"], Knob(
        "Vector storage format", "",
        help="How each vector is stored in RAM; PQ keeps a 64-byte code and loses some recall.",
    )] = "fp16"
    corpus_passages: Annotated[float, Knob(
        "Passages indexed", "passages", 1e6, 1e11, log=True,
        help="Chunks in the corpus, one vector each.", draw=(1e7, 1e10),
    )] = 1e9
    hnsw_degree: Annotated[int, Knob(
        "HNSW degree M", "links", 4, 128, 1,
        help="Graph degree; the bottom layer keeps 2M neighbour ids per vector.", draw=(16, 64),
    )] = 32
    index_node_memory_gb: Annotated[float, Knob(
        "RAM per index node", "GB", 64, 4096, log=True,
        help="Memory of one CPU search node.", draw=(256, 2048),
    )] = 512
    index_memory_fill: Annotated[float, Knob(
        "Index share of node RAM", "", 0.3, 0.95, 0.05, percent=True,
        help="Fraction of RAM the index may fill; the rest is OS, filters, segment merges and growth.",
        draw=(0.5, 0.8),
    )] = 0.6
    index_cores_per_node: Annotated[int, Knob(
        "Cores per index node", "cores", 4, 256, 1,
        help="Search threads one index node runs in parallel.", draw=(16, 96),
    )] = 32
    search_cpu_ms: Annotated[float, Knob(
        "Search time per shard", "ms", 0.2, 100, log=True,
        help="CPU time of one approximate-nearest-neighbour search on one shard (one core).",
        draw=(1, 20),
    )] = 5
    spare_replicas: Annotated[int, Knob(
        "Spare replicas per shard", "", 0, 3, 1,
        help="Replicas beyond what the load needs, so a node loss does not hide part of the corpus.",
        draw=(1, 2),
    )] = 1
    rerank_candidates: Annotated[int, Knob(
        "Candidates reranked", "candidates", 1, 1000, log=True,
        help="Passages per query the cross-encoder scores against the query.", draw=(20, 200),
    )] = 50
    passage_tokens: Annotated[int, Knob(
        "Passage length", "tokens", 32, 2000, log=True,
        help="Tokens per indexed chunk.", draw=(100, 512),
    )] = 150
    reranker_params_m: Annotated[float, Knob(
        "Reranker size", "M params", 20, 8000, log=True,
        help="Parameters of the cross-encoder (a BERT-base class reranker is ~280M).", draw=(30, 600),
    )] = 278
    encoder_mfu: Annotated[float, Knob(
        "Encoder MFU", "", 0.05, 0.8, 0.05, percent=True,
        help="Share of the GPU's BF16 peak the embedder and reranker achieve.", draw=(0.2, 0.5),
    )] = 0.4
    passages_in_prompt: Annotated[int, Knob(
        "Passages in the prompt", "passages", 1, 40, 1,
        help="Top reranked passages pasted into the answer model's prompt: the prompt-length lever.",
        draw=(3, 10),
    )] = 3
    system_prompt_tokens: Annotated[int, Knob(
        "Instructions", "tokens", 0, 8000, 50,
        help="Fixed system prompt and formatting instructions in every prompt.", draw=(100, 1000),
    )] = 200
    output_tokens: Annotated[int, Knob(
        "Answer length", "tokens", 10, 4000, log=True,
        help="Tokens the answer model generates per query.", draw=(100, 500),
    )] = 200
    gpu: Annotated[Literal["H100 SXM", "H200", "B200"], Knob(
        "GPU", "", help="GPU in every tier; an answer-model node holds 8.",
    )] = "H100 SXM"
    precision: Annotated[Literal["FP8", "BF16"], Knob(
        "Answer-model precision", "",
        help="Weights, KV cache and tensor-core rate of the 70B model; FP8 halves bytes and doubles peak.",
    )] = "FP8"
    prefill_mfu: Annotated[float, Knob(
        "LLM MFU", "", 0.1, 0.8, 0.05, percent=True,
        help="Share of the node's tensor peak that prefill (and compute-bound decode) achieves.",
        draw=(0.35, 0.6),
    )] = 0.5
    hbm_efficiency: Annotated[float, Knob(
        "HBM efficiency", "", 0.3, 0.95, 0.05, percent=True,
        help="Share of peak HBM bandwidth a decode step achieves.", draw=(0.6, 0.85),
    )] = 0.8
    decode_batch: Annotated[int, Knob(
        "Decode batch per node", "sequences", 1, 1024, log=True,
        help="Sequences one node decodes together; capped by the KV cache that fits.", draw=(64, 512),
    )] = 256
    cache_hit_rate: Annotated[float, Knob(
        "Answer-cache hit rate", "", 0.0, 0.99, 0.01, percent=True,
        help="Share of queries answered from the cache without touching the answer model.",
        draw=(0.2, 0.85),
    )] = 0.7
    target_utilization: Annotated[float, Knob(
        "Target GPU utilization", "", 0.3, 1.0, 0.05, percent=True,
        help="Busy fraction every fleet is sized for at peak; the rest absorbs bursts.", draw=(0.6, 0.85),
    )] = 0.8
    network_ms: Annotated[float, Knob(
        "Network and hops", "ms", 1, 300, log=True,
        help="Client round trip plus the internal hops and the cache lookup.", draw=(20, 100),
    )] = 40
    batch_window_ms: Annotated[float, Knob(
        "Encoder batching window", "ms", 0.5, 50, log=True,
        help="How long the embedder and reranker wait to fill a batch.", draw=(2, 20),
    )] = 5
    llm_queue_ms: Annotated[float, Knob(
        "LLM queueing allowance", "ms", 1, 2000, log=True,
        help="Budget for waiting in the answer model's admission queue at peak.", draw=(20, 300),
    )] = 100
    ttft_slo_ms: Annotated[float, Knob(
        "Time-to-first-token target", "ms", 100, 5000, log=True,
        help="The p95 target the stage budgets must fit inside.", draw=(300, 1500),
    )] = 500


def harmonic(n: int) -> float:
    """H_n = 1 + 1/2 + ... + 1/n: the expected maximum of n exponential waits, in units of one."""
    if n <= 200:
        return sum(1.0 / k for k in range(1, n + 1))
    return math.log(n) + 0.5772156649015329 + 1 / (2 * n) - 1 / (12 * n * n)


def precision_bytes(precision: str) -> float:
    return 1.0 if precision == "FP8" else 2.0


def node_peak_flops(gpu_name: str, precision: str) -> float:
    g = gpu(gpu_name)
    tflops = g.dense_fp8_TFLOPs if precision == "FP8" else g.dense_bf16_TFLOPs
    return GPUS_PER_NODE * tflops * 1e12


def llm_node_seconds(gpu_name: str, precision: str, prompt: float, output: float,
                     mfu: float, hbm_eff: float, batch: int) -> dict[str, float]:
    """Node-seconds one query costs on the answer tier, with its parts (used for what-ifs)."""
    m, g = model(ANSWER_MODEL), gpu(gpu_name)
    b = precision_bytes(precision)
    weights = m.weight_bytes(b)
    kv_token = m.kv_bytes_per_token(b)
    flops_rate = node_peak_flops(gpu_name, precision) * mfu
    hbm_rate = GPUS_PER_NODE * g.hbm_Bps * hbm_eff
    prefill_flops = (INFER_FLOPS_PER_PARAM_TOKEN * m.total_params * prompt
                     + 2 * m.layers * prompt * prompt * m.heads * m.head_dim)
    prefill_s = prefill_flops / flops_rate
    kv_room = GPUS_PER_NODE * g.memory_bytes * HBM_USABLE_FRACTION - weights
    batch_limit = max(1, math.floor(kv_room / ((prompt + output) * kv_token)))
    eff_batch = min(batch, batch_limit)
    context = prompt + output / 2
    memory_s = (weights + eff_batch * context * kv_token) / hbm_rate
    compute_s = INFER_FLOPS_PER_PARAM_TOKEN * m.total_params * eff_batch / flops_rate
    step_s = max(memory_s, compute_s)
    decode_s = output * step_s / eff_batch
    return {
        "prefill_s": prefill_s, "decode_s": decode_s, "total_s": prefill_s + decode_s,
        "step_s": step_s, "batch": eff_batch, "batch_limit": batch_limit,
    }


def nodes_for(rate: float, node_s: float, util: float) -> int:
    # The epsilon keeps 59.999999 from becoming 61 nodes through float rounding.
    return max(1, math.ceil(rate * node_s / util - 1e-9))


def solve(p: Params) -> Derivation:
    d = Derivation(p)
    m = model(ANSWER_MODEL)
    g = gpu(p.gpu)

    # --- the tokens each tier sees -------------------------------------------------------------
    prompt = d.step(
        "prompt_tokens", "Answer-model prompt: instructions + question + pasted passages",
        p.system_prompt_tokens + p.query_tokens + p.passages_in_prompt * p.passage_tokens, "1",
        noun="tokens",
        formula="{system_prompt_tokens} + {query_tokens} + {passages_in_prompt} × {passage_tokens} tokens",
    )
    d.step(
        "llm_prompt_tokens_per_s", "Prompt tokens per second if every query reached the LLM",
        p.qps * prompt, "1/s", noun="tokens",
        formula="{qps} queries/s × {prompt_tokens} tokens",
    )
    d.step(
        "llm_output_tokens_per_s", "Output tokens per second if every query reached the LLM",
        p.qps * p.output_tokens, "1/s", noun="tokens",
        formula="{qps} queries/s × {output_tokens} tokens",
    )

    # --- embedder: sized from query tokens --------------------------------------------------------
    embed_tok = d.step(
        "embed_tokens_per_s", "Tokens the embedder encodes per second", p.qps * p.query_tokens, "1/s",
        noun="tokens", formula="{qps} queries/s × {query_tokens} tokens",
    )
    embed_flop_per_query = INFER_FLOPS_PER_PARAM_TOKEN * p.embedder_params_m * 1e6 * p.query_tokens
    embed_flops = d.step(
        "embed_flops_per_s", "Embedder compute: 2 FLOP per parameter per token",
        embed_tok * INFER_FLOPS_PER_PARAM_TOKEN * p.embedder_params_m * 1e6, "FLOP/s",
        formula="{embed_tokens_per_s} tokens/s × 2 × {embedder_params_m}M params",
    )
    enc_rate = d.step(
        "encoder_gpu_flops", "One GPU running an encoder: BF16 peak × encoder MFU",
        g.dense_bf16_flops * p.encoder_mfu, "FLOP/s",
        formula=f"{g.dense_bf16_TFLOPs:g} TFLOP/s × {{encoder_mfu}}",
    )
    d.step(
        "embedder_gpus_at_full_load", "Embedder GPUs the load alone needs",
        embed_flops / (enc_rate * p.target_utilization), "1", noun="GPUs",
        formula="{embed_flops_per_s} FLOP/s / ({encoder_gpu_flops} FLOP/s × {target_utilization})",
    )
    embedder_gpus = d.step(
        "embedder_gpus", "Embedder GPUs (never fewer than two)",
        max(MIN_GPUS_PER_FLEET, math.ceil(embed_flops / (enc_rate * p.target_utilization) - 1e-9)), "1",
        noun="GPUs", formula="max(2, ⌈{embedder_gpus_at_full_load}⌉)",
    )

    # --- vector index: shards from memory, replicas from the query rate -----------------------
    if p.vector_format == "PQ 64 B":
        vec_bytes = float(PQ_CODE_BYTES)
        vec_formula = "64 B code"
    else:
        vec_bytes = p.embedding_dims * VECTOR_FORMATS[p.vector_format]
        vec_formula = f"{{embedding_dims}} dims × {VECTOR_FORMATS[p.vector_format]:g} B"
    link_bytes = 2 * p.hnsw_degree * HNSW_LINK_BYTES
    per_vector = d.step(
        "bytes_per_vector", "RAM per indexed passage: the vector plus its bottom-layer graph links",
        vec_bytes + link_bytes, "B",
        formula=vec_formula + " + 2 × {hnsw_degree} links × 4 B",
    )
    index_bytes = d.step(
        "index_bytes", "The whole index in RAM", p.corpus_passages * per_vector, "B",
        formula="{corpus_passages} passages × {bytes_per_vector} B",
    )
    usable = d.step(
        "index_usable_bytes_per_node", "Index bytes one node may hold",
        p.index_node_memory_gb * 1e9 * p.index_memory_fill, "B",
        formula="{index_node_memory_gb} GB × {index_memory_fill}",
    )
    shards = d.step(
        "index_shards", "Shards: the index divided by what one node may hold",
        math.ceil(index_bytes / usable - 1e-9), "1", noun="shards",
        formula="⌈{index_bytes} B / {index_usable_bytes_per_node} B⌉",
    )
    node_qps = d.step(
        "index_node_qps", "Searches one index node completes per second",
        p.index_cores_per_node * 1000 / p.search_cpu_ms, "1/s", noun="queries",
        formula="{index_cores_per_node} cores × 1,000 ms/s / {search_cpu_ms} ms",
    )
    load_replicas = d.step(
        "replicas_for_load", "Replicas each shard needs for the load (every query visits every shard)",
        math.ceil(p.qps / (node_qps * p.target_utilization) - 1e-9), "1", noun="replicas",
        formula="⌈{qps} queries/s / ({index_node_qps} queries/s × {target_utilization})⌉",
    )
    replicas = d.step(
        "replicas_per_shard", "Replicas per shard: load plus spares", load_replicas + p.spare_replicas, "1",
        noun="replicas", formula="{replicas_for_load} + {spare_replicas}",
    )
    d.step(
        "index_nodes", "Index nodes", shards * replicas, "1", noun="nodes",
        formula="{index_shards} shards × {replicas_per_shard} replicas",
    )
    d.step(
        "corpus_hidden_per_lost_shard_pct", "Share of the corpus a query silently misses with one shard down",
        100 / shards, "%", formula="100 / {index_shards} shards",
    )

    # --- reranker: sized from query-passage pairs -----------------------------------------------
    pairs = d.step(
        "rerank_pairs_per_s", "Query-passage pairs the reranker scores per second",
        p.qps * p.rerank_candidates, "1/s", noun="pairs",
        formula="{qps} queries/s × {rerank_candidates} candidates",
    )
    pair_tokens = d.step(
        "rerank_tokens_per_pair", "Tokens in one pair: the query and one passage, read together",
        p.query_tokens + p.passage_tokens, "1", noun="tokens",
        formula="{query_tokens} + {passage_tokens} tokens",
    )
    pair_flop = INFER_FLOPS_PER_PARAM_TOKEN * p.reranker_params_m * 1e6 * pair_tokens
    rerank_flops = d.step(
        "rerank_flops_per_s", "Reranker compute", pairs * pair_flop, "FLOP/s",
        formula="{rerank_pairs_per_s} pairs/s × {rerank_tokens_per_pair} tokens × 2 × {reranker_params_m}M params",
    )
    reranker_gpus = d.step(
        "reranker_gpus", "Reranker GPUs",
        max(MIN_GPUS_PER_FLEET, math.ceil(rerank_flops / (enc_rate * p.target_utilization) - 1e-9)), "1",
        noun="GPUs",
        formula="max(2, ⌈{rerank_flops_per_s} FLOP/s / ({encoder_gpu_flops} FLOP/s × {target_utilization})⌉)",
    )
    d.step(
        "rerank_to_embed_compute", "Reranker compute over embedder compute", rerank_flops / embed_flops, "1",
        noun="×", formula="{rerank_flops_per_s} / {embed_flops_per_s}",
    )

    # --- answer model: node-seconds per query ---------------------------------------------------
    b = precision_bytes(p.precision)
    weights = d.step(
        "llm_weight_bytes", "70B weights at this precision", m.weight_bytes(b), "B",
        formula=f"{m.total_params / 1e9:g}B params × {b:g} B",
    )
    kv_token = d.step(
        "kv_bytes_per_token", "KV cache per token (K and V, every layer)", m.kv_bytes_per_token(b), "B",
        formula=f"2 × {m.layers} layers × {m.kv_heads} KV heads × {m.head_dim} × {b:g} B",
    )
    node_flops = d.step(
        "llm_node_flops", "One 8-GPU node at this precision and MFU",
        node_peak_flops(p.gpu, p.precision) * p.prefill_mfu, "FLOP/s",
        formula=f"8 × {node_peak_flops(p.gpu, p.precision) / 8e12:g} TFLOP/s × {{prefill_mfu}}",
    )
    linear = INFER_FLOPS_PER_PARAM_TOKEN * m.total_params * prompt
    attention = 2 * m.layers * prompt * prompt * m.heads * m.head_dim
    d.step(
        "prefill_attention_share_pct", "Attention's share of prefill FLOPs at this prompt length",
        100 * attention / (linear + attention), "%",
        formula=f"2 × {m.layers} × {{prompt_tokens}}² × {m.heads * m.head_dim} / total prefill FLOP",
    )
    prefill_flops = d.step(
        "prefill_flops_per_query", "Prefill FLOPs: 2 × params × prompt, plus causal attention",
        linear + attention, "FLOP",
        formula=f"2 × {m.total_params / 1e9:g}B × {{prompt_tokens}} + 2 × {m.layers} × {{prompt_tokens}}² × "
                f"{m.heads * m.head_dim}",
    )
    prefill_s = d.step(
        "prefill_node_seconds", "Prefill: node-seconds per query", prefill_flops / node_flops, "s",
        formula="{prefill_flops_per_query} FLOP / {llm_node_flops} FLOP/s",
    )
    kv_room = GPUS_PER_NODE * g.memory_bytes * HBM_USABLE_FRACTION - weights
    batch_limit = d.step(
        "decode_batch_kv_limit", "Sequences whose KV fits beside the weights",
        max(1, math.floor(kv_room / ((prompt + p.output_tokens) * kv_token))), "1", noun="sequences",
        formula=f"⌊(8 × {g.memory_GB:g} GB × 0.9 − {{llm_weight_bytes}} B) / "
                "(({prompt_tokens} + {output_tokens}) × {kv_bytes_per_token} B)⌋",
    )
    batch = d.step(
        "decode_batch_effective", "Decode batch actually run", min(p.decode_batch, batch_limit), "1",
        noun="sequences", formula="min({decode_batch}, {decode_batch_kv_limit})",
    )
    hbm_rate = d.step(
        "llm_node_hbm_Bps", "HBM bandwidth one node's decode achieves",
        GPUS_PER_NODE * g.hbm_Bps * p.hbm_efficiency, "B/s",
        formula=f"8 × {g.hbm_TBps:g} TB/s × {{hbm_efficiency}}",
    )
    mem_step = d.step(
        "decode_step_memory_s", "Decode step, memory side: weights + the batch's KV read once",
        (weights + batch * (prompt + p.output_tokens / 2) * kv_token) / hbm_rate, "s",
        formula="({llm_weight_bytes} B + {decode_batch_effective} × ({prompt_tokens} + {output_tokens}/2) × "
                "{kv_bytes_per_token} B) / {llm_node_hbm_Bps} B/s",
    )
    comp_step = d.step(
        "decode_step_compute_s", "Decode step, compute side: 2 × params per sequence",
        INFER_FLOPS_PER_PARAM_TOKEN * m.total_params * batch / node_flops, "s",
        formula=f"2 × {m.total_params / 1e9:g}B × {{decode_batch_effective}} / {{llm_node_flops}} FLOP/s",
    )
    step_s = d.step(
        "decode_step_s", "Decode step (time per output token, TPOT): the slower side",
        max(mem_step, comp_step), "s",
        formula="max({decode_step_memory_s} s, {decode_step_compute_s} s)",
    )
    d.step(
        "decode_tokens_per_node_s", "Output tokens one node produces per second", batch / step_s, "1/s",
        noun="tokens", formula="{decode_batch_effective} / {decode_step_s} s",
    )
    decode_s = d.step(
        "decode_node_seconds", "Decode: node-seconds per query",
        p.output_tokens * step_s / batch, "s",
        formula="{output_tokens} tokens × {decode_step_s} s / {decode_batch_effective}",
    )
    node_s = d.step(
        "llm_node_seconds_per_query", "LLM node-seconds per query: prefill + decode",
        prefill_s + decode_s, "s",
        formula="{prefill_node_seconds} s + {decode_node_seconds} s",
    )
    d.step(
        "llm_nodes_at_full_busy", "Nodes if every query reached the LLM and nodes ran 100% busy",
        p.qps * node_s, "1", noun="nodes",
        formula="{qps} queries/s × {llm_node_seconds_per_query} s",
    )
    no_cache = d.step(
        "llm_nodes_no_cache", "LLM nodes without an answer cache",
        nodes_for(p.qps, node_s, p.target_utilization), "1", noun="nodes",
        formula="⌈{qps} × {llm_node_seconds_per_query} s / {target_utilization}⌉",
    )
    miss_rate = d.step(
        "llm_query_rate", "Queries that miss the cache and reach the LLM",
        p.qps * (1 - p.cache_hit_rate), "1/s", noun="queries",
        formula="{qps} queries/s × (1 − {cache_hit_rate})",
    )
    with_cache = d.step(
        "llm_nodes_with_cache", "LLM nodes with the answer cache",
        nodes_for(miss_rate, node_s, p.target_utilization), "1", noun="nodes",
        formula="⌈{llm_query_rate} × {llm_node_seconds_per_query} s / {target_utilization}⌉",
    )
    d.step(
        "llm_cache_node_ratio", "With-cache nodes over no-cache nodes (the miss rate, up to rounding)",
        with_cache / no_cache, "1", formula="{llm_nodes_with_cache} / {llm_nodes_no_cache}",
    )
    d.step(
        "llm_gpus_with_cache", "LLM GPUs with the cache", with_cache * GPUS_PER_NODE, "1", noun="GPUs",
        formula="{llm_nodes_with_cache} nodes × 8",
    )

    # --- the assumptions the 200 hinges on, shown live ------------------------------------------
    def nodes_if(precision: str, prompt_tokens: float, rate: float = p.qps) -> int:
        alt = llm_node_seconds(p.gpu, precision, prompt_tokens, p.output_tokens, p.prefill_mfu,
                               p.hbm_efficiency, p.decode_batch)
        return nodes_for(rate, alt["total_s"], p.target_utilization)

    d.step(
        "llm_nodes_no_cache_fp8", "No-cache nodes in FP8, this scenario otherwise", nodes_if("FP8", prompt), "1",
        noun="nodes", formula="the same solve with precision = FP8",
    )
    d.step(
        "llm_nodes_no_cache_bf16", "No-cache nodes in BF16, this scenario otherwise", nodes_if("BF16", prompt), "1",
        noun="nodes", formula="the same solve with precision = BF16",
    )
    d.step(
        "llm_nodes_with_cache_bf16", "With-cache nodes in BF16", nodes_if("BF16", prompt, miss_rate), "1",
        noun="nodes", formula="the same solve with precision = BF16",
    )
    d.step(
        "llm_nodes_no_cache_double_prompt", "No-cache nodes with twice the prompt",
        nodes_if(p.precision, 2 * prompt), "1", noun="nodes",
        formula="the same solve with 2 × {prompt_tokens} prompt tokens",
    )
    d.step(
        "hit_rate_at_saturation_pct", "Hit rate below which the cached fleet is 100% busy",
        100 * max(0.0, 1 - with_cache / (p.qps * node_s)), "%",
        formula="100 × (1 − {llm_nodes_with_cache} / ({qps} × {llm_node_seconds_per_query} s))",
    )
    d.step(
        "cold_cache_load_pct", "Load on the cached fleet if the cache goes cold (every query misses)",
        100 * p.qps * node_s / with_cache, "%",
        formula="100 × {qps} × {llm_node_seconds_per_query} s / {llm_nodes_with_cache} nodes",
    )
    d.step(
        "total_gpus", "GPUs in all three GPU tiers, with the cache",
        embedder_gpus + reranker_gpus + with_cache * GPUS_PER_NODE, "1", noun="GPUs",
        formula="{embedder_gpus} + {reranker_gpus} + {llm_gpus_with_cache}",
    )
    d.step(
        "reembed_corpus_gpu_hours", "Re-embedding the whole corpus (a new embedder model)",
        p.corpus_passages * p.passage_tokens * INFER_FLOPS_PER_PARAM_TOKEN * p.embedder_params_m * 1e6
        / enc_rate / 3600, "h",
        formula="{corpus_passages} × {passage_tokens} tokens × 2 × {embedder_params_m}M / "
                "{encoder_gpu_flops} FLOP/s / 3,600 s/h", noun="GPU")

    # --- latency budget to the first token, stage by stage --------------------------------------
    window_s = p.batch_window_ms / 1000
    t_net = d.step(
        "latency_budget_ms_network", "Network: client round trip, internal hops, cache lookup",
        p.network_ms, "ms", formula="{network_ms} ms",
    )
    embed_batch = d.step(
        "embed_batch_queries", "Queries one embedder GPU collects in a window",
        max(1.0, p.qps / embedder_gpus * window_s), "1", noun="queries",
        formula="max(1, {qps} / {embedder_gpus} × {batch_window_ms} ms)",
    )
    t_embed = d.step(
        "latency_budget_ms_embed", "Embed: batching window + running that batch",
        p.batch_window_ms + 1000 * embed_batch * embed_flop_per_query / enc_rate, "ms",
        formula=f"{{batch_window_ms}} ms + {{embed_batch_queries}} × {format_number(embed_flop_per_query)} FLOP / "
                "{encoder_gpu_flops} FLOP/s",
    )
    h_shards = d.step(
        "fanout_tail_factor", "Slowest of N shards over one shard (exponential tails: H_N)",
        harmonic(shards), "1", noun="×", formula="1 + 1/2 + … + 1/{index_shards}",
    )
    t_retrieve = d.step(
        "latency_budget_ms_retrieve", "Retrieve: wait for the slowest shard",
        p.search_cpu_ms * h_shards, "ms", formula="{search_cpu_ms} ms × {fanout_tail_factor}",
    )
    rerank_batch = d.step(
        "rerank_batch_pairs", "Pairs in the batch that carries one query (at least its own candidates)",
        max(float(p.rerank_candidates), pairs / reranker_gpus * window_s), "1", noun="pairs",
        formula="max({rerank_candidates}, {rerank_pairs_per_s} / {reranker_gpus} × {batch_window_ms} ms)",
    )
    t_rerank = d.step(
        "latency_budget_ms_rerank", "Rerank: batching window + scoring the batch on one GPU",
        p.batch_window_ms + 1000 * rerank_batch * pair_flop / enc_rate, "ms",
        formula=f"{{batch_window_ms}} ms + {{rerank_batch_pairs}} × {format_number(pair_flop)} FLOP / "
                "{encoder_gpu_flops} FLOP/s",
    )
    t_queue = d.step(
        "latency_budget_ms_llm_queue", "LLM admission queue at peak (an allowance)",
        p.llm_queue_ms, "ms", formula="{llm_queue_ms} ms",
    )
    t_prefill = d.step(
        "latency_budget_ms_prefill", "Prefill the prompt on one node, then one decode step",
        1000 * (prefill_s + step_s), "ms",
        formula="({prefill_node_seconds} s + {decode_step_s} s) × 1,000",
    )
    total = d.step(
        "latency_budget_ms", "Time to first token: the stages added up",
        t_net + t_embed + t_retrieve + t_rerank + t_queue + t_prefill, "ms",
        formula="{latency_budget_ms_network} + {latency_budget_ms_embed} + {latency_budget_ms_retrieve} + "
                "{latency_budget_ms_rerank} + {latency_budget_ms_llm_queue} + {latency_budget_ms_prefill} ms",
    )
    d.step(
        "latency_slack_ms", "Slack left under the first-token target", p.ttft_slo_ms - total, "ms",
        formula="{ttft_slo_ms} ms − {latency_budget_ms} ms",
    )
    d.step(
        "latency_cache_hit_ms", "A cache hit: everything but the LLM queue and prefill",
        t_net + t_embed + t_retrieve + t_rerank, "ms",
        formula="{latency_budget_ms_network} + {latency_budget_ms_embed} + {latency_budget_ms_retrieve} + "
                "{latency_budget_ms_rerank} ms",
    )
    stream = d.step(
        "answer_stream_s", "Streaming the rest of the answer at one token per decode step",
        (p.output_tokens - 1) * step_s, "s", formula="({output_tokens} − 1) × {decode_step_s} s",
    )
    d.step(
        "answer_complete_s", "Last token of the answer", total / 1000 + stream, "s",
        formula="{latency_budget_ms} ms + {answer_stream_s} s",
    )
    return d
