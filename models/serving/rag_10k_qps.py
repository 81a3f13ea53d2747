"""Retrieval-augmented answers at 10,000 queries a second (seeds 000, 003, 004).

Four fleets behind one request: a query embedder, a sharded vector index, a cross-encoder
reranker and an answer model, with an answer cache in front of the answer model only. Each
fleet is sized from the unit of work it actually does, never from queries:

- embedder: query tokens/s x 2 x params FLOP, on GPUs at a stated encoder MFU of their bf16 peak;
- index: bytes of vectors plus graph links against usable memory per node gives shards; every
  query visits every shard, so each shard's replicas carry the full query rate;
- reranker: (query, passage) pairs/s x tokens per pair x 2 x params FLOP;
- answer model: the engine's replica (models/engine): prefill at the prefill MFU plus its
  tensor-parallel all-reduces, decode at the batch each replica holds when every sequence is
  served at the TPOT target, the fleet the fewest replicas whose prefill plus decode stay under
  the target utilization (models/engine/serving.py `fleet`).

Modelling choices (stated on the page): the answer cache is keyed on the normalized query and
the IDs/versions of the passages the reranker chose, so it sits in front of the LLM and a hit
skips only the LLM; the retrieval tiers see every query. Encoders run in bf16 whatever the
answer model's formats. An LLM node is one tensor-parallel replica, and prefill and decode share
its time (chunked prefill), so their busy shares add. The prompt is built from the page's knobs
(instructions, question, passages), so the engine's prompt-length knob is not on this page.
"""

from __future__ import annotations

import math
from dataclasses import replace
from types import SimpleNamespace
from typing import Annotated, Any, Literal

from pydantic import model_validator

from models.catalog import INFER_FLOPS_PER_PARAM_TOKEN
from models.core import Derivation, Knob, StrictModel
from models.engine import serving as sv
from models.engine.knobs import EngineKnobs, accelerator, engine_values, llm, replica, subset, with_defaults
from models.engine.record import record_fleet, record_served
from models.engine.serving import Served, served_problem
from models.engine.serving_knobs import BatchKnobs, RequestKnobs, SloKnobs
from models.serving.serving_platform import record_trtllm_anchor, record_vllm_defaults
from models.units import format_number, format_quantity

# HNSW keeps 2M neighbours per vector on its bottom layer (hnswlib's maxM0 = 2M), 4-byte ids.
HNSW_LINK_BYTES = 4
# Bytes per stored vector element for each format; PQ stores a fixed 64-byte code per vector.
VECTOR_FORMATS = {"fp32": 4.0, "fp16": 2.0, "int8": 1.0}
PQ_CODE_BYTES = 64
# A stage is never run on a single GPU: one failure would be an outage.
MIN_GPUS_PER_FLEET = 2
# The encoders' tensor-core format, whatever the answer model runs in.
ENCODER_FORMAT = "bf16"


# The seed's answer model: a 70B in FP8 (weights, KV cache and tensor cores) on one 8-GPU node.
_Engine = with_defaults(EngineKnobs, tp_degree=8, weight_precision="fp8", kv_precision="fp8",
                        compute_precision="fp8")
# 200-token answers; no prefix cache: the passages differ from query to query.
_AnswerKnobs = subset(RequestKnobs, "_AnswerKnobs", output_tokens=200, prefix_cache_hit=0.0)


class _RagKnobs(StrictModel):
    """The retrieval tiers, the prompt they build and the answer cache: this page's own knobs."""

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
        help="Length of each stored vector.", draw=(384, 3072),
        # the widths embedders ship (MiniLM 384 ... text-embedding-3-large 3072), never 600
        draw_choices=(384, 512, 768, 1024, 1536, 3072),
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
        help="Graph degree; the bottom layer keeps 2M neighbour ids per vector.", draw=(8, 64),
        draw_choices=(8, 16, 32, 48, 64),  # the values index configs use (hnswlib's default is 16)
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
        help="Search threads one index node runs in parallel.", draw=(8, 128),
        draw_choices=(8, 16, 32, 48, 64, 96, 128),  # the core counts CPU servers are sold with
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
        help="Share of the accelerator's bf16 peak the embedder and reranker achieve (not the answer "
             "model's prefill or decode MFU).", draw=(0.2, 0.5),
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
    cache_hit_rate: Annotated[float, Knob(
        "Answer-cache hit rate", "", 0.0, 0.99, 0.01, percent=True,
        help="Share of queries answered from the cache without touching the answer model.",
        draw=(0.2, 0.85),
    )] = 0.7
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


class Params(_Engine, BatchKnobs, SloKnobs, _AnswerKnobs, _RagKnobs):
    """The page's tiers first, then the answer, the SLO and the shared engine."""

    @model_validator(mode="after")
    def _servable(self) -> "Params":
        why = served_problem(_served(self, prompt_tokens(self)))
        if why:
            raise ValueError(why)
        return self


def prompt_tokens(p: Any) -> int:
    return p.system_prompt_tokens + p.query_tokens + p.passages_in_prompt * p.passage_tokens


def _served(p: Any, prompt: float, r=None) -> Served:
    return Served(r or replica(p), prompt, p.output_tokens, p.prefix_cache_hit, p.tpot_target_ms / 1000,
                  p.given_batch)


def harmonic(n: int) -> float:
    """H_n = 1 + 1/2 + ... + 1/n: the expected maximum of n exponential waits, in units of one."""
    if n <= 200:
        return sum(1.0 / k for k in range(1, n + 1))
    return math.log(n) + 0.5772156649015329 + 1 / (2 * n) - 1 / (12 * n * n)


def harmonic_formula(n: int, key: str) -> str:
    """`harmonic(n)` as arithmetic: the sum itself while it is short, else its expansion
    ln N + γ + 1/(2N) − 1/(12N²) + 1/(120N⁴), which agrees with the sum to 1e-8 beyond ten terms."""
    x = "{" + key + "}"
    if n <= 10:
        return " + ".join(["1"] + [f"1/{k}" for k in range(2, n)] + ([f"1/{x}"] if n > 1 else []))
    return f"ln({x}) + 0.5772157 + 1/(2 × {x}) − 1/(12 × {x}²) + 1/(120 × {x}⁴)"


def variant_nodes(p: Any, fmt: str | None, prompt: float, rate: float) -> float:
    """LLM nodes for `rate` at this `prompt`, with weights, KV cache and tensor cores all in `fmt`
    (None: the scenario's own formats): the what-ifs the seed's absolute count hinges on. inf
    where the variant cannot run on these nodes."""
    # Four what-ifs per solve, each a fleet search: kept by what they read, so a sweep or a move of a
    # knob they do not read (the retrieval side, the cache's hit rate for three of them) finds them here.
    key = (engine_values(p), p.output_tokens, p.prefix_cache_hit, p.tpot_target_ms, p.given_batch,
           p.target_utilization, fmt, prompt, rate)
    found = _variants_seen.get(key)
    if found is None:
        if len(_variants_seen) > 1024:
            _variants_seen.clear()
        found = _variants_seen[key] = _variant_nodes(p, fmt, prompt, rate)
    return found


_variants_seen: dict[tuple, float] = {}


def _variant_nodes(p: Any, fmt: str | None, prompt: float, rate: float) -> float:
    r = replica(p)
    if fmt is not None:
        if not r.hw.has(fmt):
            return math.inf
        r = replace(r, weight_fmt=fmt, kv_fmt=fmt, compute_fmt=fmt)
    s = _served(p, prompt, r)
    if served_problem(s):
        return math.inf
    return sv.fleet(s, rate, p.target_utilization).replicas


def _rate_at_saturation(s: Served, nodes: int, qps: float) -> float:
    """The query rate at which `nodes` replicas are 100% busy, or `qps` if they are not at it."""
    return min(qps, sv.rate_at_busy(s, nodes, 1.0))


def solve(p: Params) -> Derivation:
    d = Derivation(p)
    hw, m = accelerator(p), llm(p)

    # --- the tokens each tier sees -------------------------------------------------------------
    prompt = d.step(
        "prompt_tokens", "Answer-model prompt: instructions + question + pasted passages", prompt_tokens(p), "1",
        noun="tokens",
        formula="{system_prompt_tokens} + {query_tokens} + {passages_in_prompt} × {passage_tokens}",
    )
    d.step(
        "llm_prompt_tokens_per_s", "Prompt tokens per second if every query reached the LLM",
        p.qps * prompt, "1/s", noun="tokens",
        formula="{qps} × {prompt_tokens}",
    )
    d.step(
        "llm_output_tokens_per_s", "Output tokens per second if every query reached the LLM",
        p.qps * p.output_tokens, "1/s", noun="tokens",
        formula="{qps} × {output_tokens}",
    )

    # --- embedder: sized from query tokens --------------------------------------------------------
    embed_tok = d.step(
        "embed_tokens_per_s", "Tokens the embedder encodes per second", p.qps * p.query_tokens, "1/s",
        noun="tokens", formula="{qps} × {query_tokens}",
    )
    embed_flop_per_query = INFER_FLOPS_PER_PARAM_TOKEN * p.embedder_params_m * 1e6 * p.query_tokens
    embed_flops = d.step(
        "embed_flops_per_s", "Embedder compute: 2 FLOP per parameter per token",
        embed_tok * INFER_FLOPS_PER_PARAM_TOKEN * p.embedder_params_m * 1e6, "FLOP/s",
        formula="{embed_tokens_per_s} × 2 FLOP × {embedder_params_m} × 10⁶",
    )
    d.step("encoder_peak_flops", f"{hw.name} dense {ENCODER_FORMAT} peak (the encoders' format)",
           hw.peak(ENCODER_FORMAT), "FLOP/s")
    enc_rate = d.step(
        "encoder_gpu_flops", "One GPU running an encoder: bf16 peak × encoder MFU",
        hw.peak(ENCODER_FORMAT) * p.encoder_mfu, "FLOP/s", formula="{encoder_peak_flops} × {encoder_mfu}",
    )
    d.step(
        "embedder_gpus_at_full_load", "Embedder GPUs the load alone needs",
        embed_flops / (enc_rate * p.target_utilization), "1", noun="GPUs",
        formula="{embed_flops_per_s} / ({encoder_gpu_flops} × {target_utilization})",
    )
    embedder_gpus = d.step(
        "embedder_gpus", "Embedder GPUs (never fewer than two)",
        max(MIN_GPUS_PER_FLEET, math.ceil(embed_flops / (enc_rate * p.target_utilization) - 1e-9)), "1",
        noun="GPUs", formula="max(2, ⌈{embedder_gpus_at_full_load}⌉)",
    )

    # --- vector index: shards from memory, replicas from the query rate -----------------------
    if p.vector_format == "PQ 64 B":
        vec_bytes = float(PQ_CODE_BYTES)
        vec_formula = "64 B (PQ code)"
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
        formula="{corpus_passages} × {bytes_per_vector}",
    )
    usable = d.step(
        "index_usable_bytes_per_node", "Index bytes one node may hold",
        p.index_node_memory_gb * 1e9 * p.index_memory_fill, "B",
        formula="{index_node_memory_gb} GB × {index_memory_fill}",
    )
    d.step(
        "index_shards_continuous", "Shards before rounding up", index_bytes / usable, "1", noun="shards",
        formula="{index_bytes} / {index_usable_bytes_per_node}",
    )
    shards = d.step(
        "index_shards", "Shards: the index divided by what one node may hold",
        math.ceil(index_bytes / usable - 1e-9), "1", noun="shards", formula="⌈{index_shards_continuous}⌉",
    )
    node_qps = d.step(
        "index_node_qps", "Searches one index node completes per second",
        p.index_cores_per_node * 1000 / p.search_cpu_ms, "1/s", noun="queries",
        formula="{index_cores_per_node} / {search_cpu_ms}",
    )
    d.step(
        "replicas_for_load_continuous", "Replicas each shard's load needs, before rounding up",
        p.qps / (node_qps * p.target_utilization), "1", noun="replicas",
        formula="{qps} / ({index_node_qps} × {target_utilization})",
    )
    load_replicas = d.step(
        "replicas_for_load", "Replicas each shard needs for the load (every query visits every shard)",
        math.ceil(p.qps / (node_qps * p.target_utilization) - 1e-9), "1", noun="replicas",
        formula="⌈{replicas_for_load_continuous}⌉",
    )
    replicas = d.step(
        "replicas_per_shard", "Replicas per shard: load plus spares", load_replicas + p.spare_replicas, "1",
        noun="replicas", formula="{replicas_for_load} + {spare_replicas}",
    )
    d.step(
        "index_nodes", "Index nodes", shards * replicas, "1", noun="nodes",
        formula="{index_shards} × {replicas_per_shard}",
    )
    d.step(
        "corpus_hidden_per_lost_shard_share", "Share of the corpus a query silently misses with one shard down",
        1 / shards, "1", percent=True, formula="1 / {index_shards}",
    )
    # One shard has no partial result to return: losing it (every replica) fails every query.
    d.step(
        "lost_shard_clause", "What a lost shard does to a query",
        f"Queries still return, missing {format_number(100 / shards)}% of the corpus without an error. Keep "
        f"{p.spare_replicas} spare per shard, mark partial results, and alert on shard coverage, not on error rate"
        if shards > 1 else
        "With a single shard there is no partial result: every query fails until a replica is back. Keep "
        f"{p.spare_replicas} spare, and alert on the replicas left, long before the last one goes", "1",
        formula="{index_shards} against 1", kind="verdict",
    )

    # --- reranker: sized from query-passage pairs -----------------------------------------------
    pairs = d.step(
        "rerank_pairs_per_s", "Query-passage pairs the reranker scores per second",
        p.qps * p.rerank_candidates, "1/s", noun="pairs",
        formula="{qps} × {rerank_candidates}",
    )
    pair_tokens = d.step(
        "rerank_tokens_per_pair", "Tokens in one pair: the query and one passage, read together",
        p.query_tokens + p.passage_tokens, "1", noun="tokens",
        formula="{query_tokens} + {passage_tokens}",
    )
    pair_flop = d.step(
        "rerank_flop_per_pair", "Reranker FLOP for one pair: 2 FLOP per parameter per token",
        INFER_FLOPS_PER_PARAM_TOKEN * p.reranker_params_m * 1e6 * pair_tokens, "FLOP",
        formula="2 FLOP × {reranker_params_m} × 10⁶ × {rerank_tokens_per_pair}",
    )
    rerank_flops = d.step(
        "rerank_flops_per_s", "Reranker compute", pairs * pair_flop, "FLOP/s",
        formula="{rerank_pairs_per_s} × {rerank_flop_per_pair}",
    )
    d.step(
        "reranker_gpus_continuous", "Reranker GPUs the load needs, before rounding up",
        rerank_flops / (enc_rate * p.target_utilization), "1", noun="GPUs",
        formula="{rerank_flops_per_s} / ({encoder_gpu_flops} × {target_utilization})",
    )
    reranker_gpus = d.step(
        "reranker_gpus", "Reranker GPUs",
        max(MIN_GPUS_PER_FLEET, math.ceil(rerank_flops / (enc_rate * p.target_utilization) - 1e-9)), "1",
        noun="GPUs", formula="max(2, ⌈{reranker_gpus_continuous}⌉)",
    )
    d.step(
        "rerank_to_embed_compute", "Reranker compute over embedder compute", rerank_flops / embed_flops, "1",
        noun="×", formula="{rerank_flops_per_s} / {embed_flops_per_s}",
    )

    # --- answer model: the engine's replica, then the fleets with and without the cache --------
    # The engine reads the prompt from its request knob; here the prompt is the one built above.
    e_p = SimpleNamespace(**dict(p), prompt_tokens=prompt)
    s = record_served(d, e_p)
    prefill_s = s.prefill_s_per_request
    r = s.replica
    # The prefill split in two, so the prose can set each half beside the seed's all-FLOP 12.2 ms
    # (the engine records the all-reduce half).
    prefill_ar_s = d.value("prefill_allreduce_s")
    d.step(
        "prefill_compute_s", "Prefill's FLOP at the prefill MFU", prefill_s - prefill_ar_s, "s",
        formula="{prefill_flops_per_request} / {replica_prefill_flops}",
    )
    d.step(
        "prefill_attention_share", "Attention's share of prefill FLOP at this prompt length",
        1 - d.value("prefill_flops_textbook") / d.value("prefill_flops_per_request"), "1", percent=True,
        formula="1 − {prefill_flops_textbook} / {prefill_flops_per_request}",
    )
    # With the attention term switched off the share is 0 by construction: say so rather than
    # state it as a fact about attention.
    att_share = d.value("prefill_attention_share")
    d.step(
        "attention_clause", "What the page says about attention's share of prefill",
        f"Attention is {format_number(100 * att_share)}% of prefill FLOP at {prompt_tokens(p):,} tokens and grows with "
        "the square of the prompt" if p.attention_flops else
        "Attention FLOP are not modelled in this scenario (the attention term is off); they would grow with "
        "the square of the prompt", "1", formula="{prefill_attention_share}", kind="verdict",
    )
    miss_rate = d.step(
        "llm_query_rate", "Queries that miss the cache and reach the LLM",
        p.qps * (1 - p.cache_hit_rate), "1/s", noun="queries",
        formula="{qps} × (1 − {cache_hit_rate})",
    )
    f = record_fleet(d, e_p, "llm_query_rate", s)
    # A decode step reads every weight once, so a TPOT target shorter than that read is met at no
    # batch (Params refuses it too, unless a fixed batch is given).
    d.require("weight_read_floor_busy", d.value("weight_read_floor_busy") <= 1, lambda: (
        f"No batch can meet this TPOT target: reading the weights once takes "
        f"{format_quantity(d.value('weight_read_s'), 's')}, longer than the {format_quantity(p.tpot_target_ms, 'ms')} "
        "target. Loosen the target or spread the weights over more accelerators."))
    with_cache = d.step(
        "llm_nodes_with_cache", "LLM nodes with the answer cache", f.replicas, "1", noun="nodes",
        formula="{replicas}",
    )
    d.step(
        "llm_gpus_with_cache", "LLM GPUs with the cache", d.value("gpus"), "1", noun="GPUs", formula="{gpus}",
    )
    held = max(1.0, f.held_batch)
    d.step(
        "held_batch_allreduce_s", "All-reduces in the decode step at that batch", r.allreduce_s(held), "s",
        formula="{allreduce_fixed_s} + max(1, {held_batch}) × {allreduce_per_sequence_s}" if r.tp > 1 else "",
    )
    # What a reader sees: an engine steps back to back, so below the target utilization each node
    # holds fewer sequences than the sizing batch and streams faster than the TPOT target. The fixed
    # point of b = a x step(b) (continuous batching), with prefill's share of the node taken out.
    node_rate = miss_rate / with_cache
    d.step(
        "decode_time_share", "Share of a cached-fleet node's time left for decode steps once prefill is served",
        1 - node_rate * prefill_s, "1", percent=True,
        formula="1 − {llm_query_rate} / {llm_nodes_with_cache} × {prefill_s_per_request}",
    )
    run_b = d.step(
        "running_batch", "Sequences a node holds stepping back to back at this load (continuous batching)",
        sv.running_batch(s, node_rate), "1", noun="sequences",
        formula="the b with b = {llm_query_rate} / {llm_nodes_with_cache} × {output_tokens} × step(b) / "
                "{decode_time_share}", kind="search",
    )
    run_step = d.step(
        "running_step_s", "Decode step at that batch", s.step_s(max(1.0, run_b)), "s",
        formula="max({weight_read_s} + max(1, {running_batch}) × {kv_read_per_sequence_s}, "
                "max(1, {running_batch}) × {compute_per_sequence_s}) + {allreduce_fixed_s} + "
                "max(1, {running_batch}) × {allreduce_per_sequence_s} + {step_overhead_s}",
    )
    gap = d.step(
        "stream_gap_s", "Time between two tokens of one answer: the step, stretched by the prefill it shares with",
        run_step / (1 - node_rate * prefill_s), "s", formula="{running_step_s} / {decode_time_share}",
    )
    # Only once a batch can meet the target at all (the condition above says why not otherwise).
    d.require("stream_gap_s", gap <= s.tpot_s * (1 + 1e-9) or d.value("weight_read_floor_busy") > 1, lambda: (
        f"Stepping flat out, a node streams a token every {format_quantity(gap, 's')}, slower than the "
        f"{format_quantity(p.tpot_target_ms, 'ms')} TPOT target: add nodes or lower the target utilization."))
    _, vllm_seqs = record_vllm_defaults(d, hw)
    d.step(
        "vllm_seq_cap_clause", "The TPOT cap against vLLM's default max_num_seqs",
        f"vLLM's default max_num_seqs on this part, {vllm_seqs:,}, would stop a node before that cap"
        if vllm_seqs < d.value("decode_batch") else
        f"vLLM's default max_num_seqs on this part, {vllm_seqs:,}, sits above it, so the {d.value('batch_limited_by')} "
        "cap binds first",
        "1", formula="{vllm_max_num_seqs} against {decode_batch}", kind="verdict",
    )
    d.step(
        "prefill_chunks", "Steps one prompt's prefill spans under vLLM's default token budget",
        math.ceil(d.value("uncached_prompt_tokens") / d.value("vllm_max_num_batched_tokens")), "1", noun="steps",
        formula="⌈{uncached_prompt_tokens} / {vllm_max_num_batched_tokens}⌉",
    )
    d.step("node_gpus", "GPUs in one LLM node (one tensor-parallel replica)", p.tp_degree, "1", noun="GPUs",
           formula="{tp_degree}")
    d.step(
        "node_tp_clause", "How one LLM node is built",
        f"split tensor-parallel over {p.tp_degree} GPUs" if p.tp_degree > 1 else
        "on a single GPU (no tensor parallelism)", "1", formula="{tp_degree}", kind="verdict",
    )
    d.step(
        "prefill_allreduce_clause", "What prefill pays beside its FLOP",
        f"plus the two all-reduces per layer that carry every prompt token's hidden state across the node, "
        f"{format_quantity(prefill_ar_s, 's')}" if p.tp_degree > 1 else
        "with no all-reduce to pay on one GPU", "1", formula="{prefill_allreduce_s}", kind="verdict",
    )
    decode_s = d.step(
        "decode_node_seconds", "Decode: node-seconds per query at the batch each node holds",
        p.output_tokens * f.held_step_s / held, "s",
        formula="{output_tokens} × {held_batch_step_s} / max(1, {held_batch})",
    )
    node_s = d.step(
        "llm_node_seconds_per_query", "LLM node-seconds per query: prefill + decode",
        prefill_s + decode_s, "s",
        formula="{prefill_s_per_request} + {decode_node_seconds}",
    )
    d.step(
        "llm_bill_verdict", "Which half of a query costs more node time",
        "the prompt (prefill)" if prefill_s >= decode_s else "the answer (decode)",
        formula="{prefill_s_per_request} against {decode_node_seconds}", kind="verdict",
    )
    d.step(
        "held_step_fixed_share", "Share of the held decode step that is weight read, all-reduces and fixed cost",
        (d.value("weight_read_s") + d.value("held_batch_allreduce_s") + d.value("step_overhead_s")) / f.held_step_s,
        "1", percent=True,
        formula="({weight_read_s} + {held_batch_allreduce_s} + {step_overhead_s}) / {held_batch_step_s}",
    )
    # Published check, prefill-heavy like this traffic: TensorRT-LLM's 70B FP8 on 2 x H100.
    record_trtllm_anchor(d, e_p, runs=((2048, 128, 762.0), (5000, 500, 898.0)))
    d.step(
        "llm_nodes_at_full_busy", "Nodes if every query reached the LLM and nodes ran 100% busy",
        p.qps * node_s, "1", noun="nodes",
        formula="{qps} × {llm_node_seconds_per_query}",
    )
    f0 = sv.fleet(s, p.qps, p.target_utilization)
    d.step(
        "llm_nodes_no_cache_continuous", "LLM nodes without the cache, before rounding up", f0.replicas_continuous,
        "1", noun="nodes",
        formula="the fewest R with {qps} × {prefill_s_per_request} / R + decode busy at the batch each holds "
                "≤ {target_utilization}", kind="search",
    )
    no_cache = d.step(
        "llm_nodes_no_cache", "LLM nodes without an answer cache", f0.replicas, "1", noun="nodes",
        formula="ceil({llm_nodes_no_cache_continuous})",
    )
    d.step(
        "llm_cache_node_ratio", "With-cache nodes over no-cache nodes (the miss rate, up to rounding)",
        with_cache / no_cache, "1", formula="{llm_nodes_with_cache} / {llm_nodes_no_cache}",
    )
    d.step(
        "cache_miss_share", "Share of queries that miss the answer cache", 1 - p.cache_hit_rate, "1", percent=True,
        formula="1 − {cache_hit_rate}",
    )

    # --- the assumptions the seed's absolute count hinges on, shown live ------------------------
    d.step(
        "llm_nodes_no_cache_fp8", "No-cache nodes in FP8 (weights, KV, tensor cores), this scenario otherwise",
        variant_nodes(p, "fp8", prompt, p.qps), "1", noun="nodes",
        formula="the same fleet with weights, KV cache and compute in fp8", kind="variant",
        note="∞ where the accelerator has no fp8 rate or the variant does not fit.",
    )
    d.step(
        "llm_nodes_no_cache_bf16", "No-cache nodes in BF16, this scenario otherwise",
        variant_nodes(p, "bf16", prompt, p.qps), "1", noun="nodes",
        formula="the same fleet with weights, KV cache and compute in bf16", kind="variant",
        note="∞ where bf16 weights do not fit on the node.",
    )
    d.step(
        "llm_nodes_with_cache_bf16", "With-cache nodes in BF16", variant_nodes(p, "bf16", prompt, miss_rate), "1",
        noun="nodes", formula="the same fleet at {llm_query_rate} queries/s with everything in bf16", kind="variant",
        note="∞ where bf16 weights do not fit on the node.",
    )
    d.step(
        "llm_nodes_no_cache_double_prompt", "No-cache nodes with twice the prompt",
        variant_nodes(p, None, 2 * prompt, p.qps), "1", noun="nodes",
        formula="the same fleet with 2 × {prompt_tokens} prompt tokens", kind="variant",
        note="∞ where a sequence of twice the prompt no longer fits or meets the TPOT target.",
    )
    sat_rate = d.step(
        "saturation_query_rate", "Query rate at which the cached fleet is 100% busy (at most the peak rate)",
        _rate_at_saturation(s, with_cache, p.qps), "1/s", noun="queries",
        formula="the largest rate, up to {qps}, at which {llm_nodes_with_cache} nodes are at most 100% busy",
        kind="search",
    )
    d.step(
        "hit_rate_at_saturation_fraction", "Hit rate below which the cached fleet is 100% busy",
        1 - sat_rate / p.qps, "1", percent=True,
        formula="1 − {saturation_query_rate} / {qps}",
    )
    cold_batch = d.step(
        "cold_cache_held_batch", "Sequences each cached-fleet node holds if every query misses",
        sv.held_batch(p.qps / with_cache, p.output_tokens, s.tpot_s), "1", noun="sequences",
        formula="{qps} / {llm_nodes_with_cache} × {output_tokens} × {tpot_target_s}",
    )
    d.step(
        "cold_cache_step_s", "Decode step at that batch", s.step_s(max(1.0, cold_batch)), "s",
        formula="max({weight_read_s} + max(1, {cold_cache_held_batch}) × {kv_read_per_sequence_s}, "
                "max(1, {cold_cache_held_batch}) × {compute_per_sequence_s}) + {allreduce_fixed_s} + "
                "max(1, {cold_cache_held_batch}) × {allreduce_per_sequence_s} + {step_overhead_s}",
    )
    d.step(
        "cold_cache_load_share", "Load on the cached fleet if the cache goes cold (every query misses)",
        sv.busy_share(s, p.qps, with_cache), "1", percent=True,
        formula="{qps} × {prefill_s_per_request} / {llm_nodes_with_cache} + {qps} / {llm_nodes_with_cache} × "
                "{output_tokens} × {cold_cache_step_s} / max(1, {cold_cache_held_batch})",
    )
    d.step(
        "total_gpus", "GPUs in all three GPU tiers, with the cache",
        embedder_gpus + reranker_gpus + with_cache * p.tp_degree, "1", noun="GPUs",
        formula="{embedder_gpus} + {reranker_gpus} + {llm_gpus_with_cache}",
    )
    d.step(
        "reembed_corpus_gpu_hours", "Re-embedding the whole corpus (a new embedder model)",
        p.corpus_passages * p.passage_tokens * INFER_FLOPS_PER_PARAM_TOKEN * p.embedder_params_m * 1e6
        / enc_rate / 3600, "h",
        formula="{corpus_passages} × {passage_tokens} × 2 FLOP × {embedder_params_m} × 10⁶ / {encoder_gpu_flops}",
        noun="GPU")

    # --- latency budget to the first token, stage by stage --------------------------------------
    window_s = p.batch_window_ms / 1000
    t_net = d.step(
        "latency_budget_ms_network", "Network: client round trip, internal hops, cache lookup",
        p.network_ms, "ms", formula="{network_ms}",
    )
    embed_batch = d.step(
        "embed_batch_queries", "Queries one embedder GPU collects in a window",
        max(1.0, p.qps / embedder_gpus * window_s), "1", noun="queries",
        formula="max(1, {qps} / {embedder_gpus} × {batch_window_ms})",
    )
    d.step(
        "embed_flop_per_query", "Embedder FLOP for one query: 2 FLOP per parameter per token",
        embed_flop_per_query, "FLOP", formula="2 FLOP × {embedder_params_m} × 10⁶ × {query_tokens}",
    )
    t_embed = d.step(
        "latency_budget_ms_embed", "Embed: batching window + running that batch",
        p.batch_window_ms + 1000 * embed_batch * embed_flop_per_query / enc_rate, "ms",
        formula="{batch_window_ms} + {embed_batch_queries} × {embed_flop_per_query} / {encoder_gpu_flops}",
    )
    h_shards = d.step(
        "fanout_tail_factor", "Slowest of N shards over one shard (exponential tails: H_N)",
        harmonic(shards), "1", noun="×", formula=harmonic_formula(shards, "index_shards"),
    )
    # The budget is a p95 target, so the retrieve stage is the p95 of the slowest shard, not its
    # mean: with exponential shard times of mean m, P(max of N <= t) = (1 - e^(-t/m))^N.
    p95_factor = d.step(
        "fanout_p95_factor", "p95 of the slowest of N shards, over one shard's mean",
        -math.log(1 - 0.95 ** (1 / shards)), "1", noun="×",
        formula="−ln(1 − 0.95^(1 / {index_shards}))",
    )
    d.step(
        "fanout_p99_factor", "p99 of the slowest of N shards, over one shard's mean",
        -math.log(1 - 0.99 ** (1 / shards)), "1", noun="×",
        formula="−ln(1 − 0.99^(1 / {index_shards}))",
    )
    d.step(
        "fanout_clause", "What the fan-out does to retrieval's tail",
        f"The merge waits for the slowest of {shards} shards: with an exponential tail, "
        f"{format_number(harmonic(shards))} × one search on average" if shards > 1 else
        "With one shard there is no fan-out: retrieval's tail is one search's own", "1",
        formula="{fanout_tail_factor}", kind="verdict",
    )
    t_retrieve = d.step(
        "latency_budget_ms_retrieve", "Retrieve: the slowest shard, at its p95",
        p.search_cpu_ms * p95_factor, "ms", formula="{search_cpu_ms} × {fanout_p95_factor}",
    )
    rerank_batch = d.step(
        "rerank_batch_pairs", "Pairs in the batch that carries one query (at least its own candidates)",
        max(float(p.rerank_candidates), pairs / reranker_gpus * window_s), "1", noun="pairs",
        formula="max({rerank_candidates}, {rerank_pairs_per_s} / {reranker_gpus} × {batch_window_ms})",
    )
    t_rerank = d.step(
        "latency_budget_ms_rerank", "Rerank: batching window + scoring the batch on one GPU",
        p.batch_window_ms + 1000 * rerank_batch * pair_flop / enc_rate, "ms",
        formula="{batch_window_ms} + {rerank_batch_pairs} × {rerank_flop_per_pair} / {encoder_gpu_flops}",
    )
    t_queue = d.step(
        "latency_budget_ms_llm_queue", "LLM admission queue at peak (an allowance)",
        p.llm_queue_ms, "ms", formula="{llm_queue_ms}",
    )
    t_prefill = d.step(
        "latency_budget_ms_prefill", "Prefill the prompt on one node, then one decode step at the batch it holds",
        1000 * (prefill_s + f.held_step_s), "ms",
        formula="{prefill_s_per_request} + {held_batch_step_s}",
    )
    total = d.step(
        "latency_budget_ms", "Time to first token: the stages added up",
        t_net + t_embed + t_retrieve + t_rerank + t_queue + t_prefill, "ms",
        formula="{latency_budget_ms_network} + {latency_budget_ms_embed} + {latency_budget_ms_retrieve} + "
                "{latency_budget_ms_rerank} + {latency_budget_ms_llm_queue} + {latency_budget_ms_prefill}",
    )
    d.step(
        "latency_slack_ms", "Slack left under the first-token target", p.ttft_slo_ms - total, "ms",
        formula="{ttft_slo_ms} − {latency_budget_ms}",
    )
    stages = {"network": t_net, "embedding": t_embed, "retrieval": t_retrieve, "reranking": t_rerank,
              "the LLM queue": t_queue, "prefill and the first step": t_prefill}

    def over_target() -> str:
        big = max(stages, key=stages.get)
        return (f"The stages do not fit the first-token target: they add up to {format_quantity(total, 'ms')} "
                f"against {format_quantity(p.ttft_slo_ms, 'ms')}, {format_quantity(total - p.ttft_slo_ms, 'ms')} "
                f"over, before any burst; the largest is {big}, {format_quantity(stages[big], 'ms')}. Loosen the "
                "target, or shrink that stage (a shorter queueing allowance, fewer passages in the prompt, fewer "
                "candidates reranked).")

    d.require("latency_slack_ms", total <= p.ttft_slo_ms, over_target)
    d.step(
        "latency_cache_hit_ms", "A cache hit: everything but the LLM queue and prefill",
        t_net + t_embed + t_retrieve + t_rerank, "ms",
        formula="{latency_budget_ms_network} + {latency_budget_ms_embed} + {latency_budget_ms_retrieve} + "
                "{latency_budget_ms_rerank}",
    )
    stream = d.step(
        "answer_stream_s", "Streaming the rest of the answer, one token per gap",
        (p.output_tokens - 1) * gap, "s", formula="({output_tokens} − 1) × {stream_gap_s}",
    )
    d.step(
        "answer_complete_s", "Last token of the answer", total / 1000 + stream, "s",
        formula="{latency_budget_ms} + {answer_stream_s}",
    )
    return d
