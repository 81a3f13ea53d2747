"""From petabytes of raw crawl to 15 trillion training tokens (seeds 000, 003, 004).

The seed's line: "Fifteen trillion tokens starts as a few petabytes of raw text and ends as 30 TB
of shards a training job reads at 1.7 million tokens per second". The model runs it backwards,
from the tokens the run needs to the crawl that has to be read, and each figure's assumption is a
knob:

    30 TB of shards   15T tokens x 2 B per token id: uint16 holds a vocabulary of at most 65,536;
                      anything larger (Llama 3's 128,256) is stored as uint32, 4 B: 60 TB
    a few PB raw      clean text (15T x ~4 B of UTF-8 per token = 60 TB) over an END-TO-END keep
                      rate (clean bytes / uncompressed crawl bytes). FineWeb: 96 crawls of 200-400 TiB
                      for 15T tokens, about 0.2%, so 30 PB uncompressed; "a few PB" is that crawl
                      gzipped (~3x) or extracted text, not the bytes extraction parses
    1.7M tokens/s     15T / 1.7M = 102 days for one pass; x 2 B = 3.4 MB/s at the trainer; and
                      6 x 405B x 1.7M FLOP/s / (989 TFLOP/s x 40% MFU) = ~10.4k H100s

Stages and their keep rates: extract (HTML -> text; its yield is whatever the end-to-end keep
rate leaves after the filters and dedup), filter (language and quality), dedup, tokenize (text
bytes -> token-id bytes), shuffle and shard (bytes unchanged). Every stage gets the whole
window to process its input, so its required rate is input bytes / window. Where the time goes
is CPU work: input bytes / a per-core processing rate per stage, summed into core-hours.
The per-core rates are planning figures to replace with a measurement on a sample.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import model_validator

from models.catalog import TRAIN_FLOPS_PER_PARAM_TOKEN
from models.core import Derivation, Knob, StrictModel
from models.engine.knobs import AcceleratorKnobs, accelerator, llm, with_defaults

SECONDS_PER_DAY = 86_400
# FineWeb, the published anchor for the keep rate: 15T tokens from 96 Common Crawl snapshots, each
# snapshot 200 to 400 TiB of content (the FineWeb authors' range).
FINEWEB_TOKENS = 15e12
FINEWEB_CRAWLS = 96
FINEWEB_CRAWL_TIB_LOW = 200.0
FINEWEB_CRAWL_TIB_HIGH = 400.0
STAGES = ("extract", "filter", "dedup", "tokenize", "shard")
CLASSIFIER_SMALL_SHARE = 0.10  # judgement line: under a tenth of a training pass, the GPU stage is not the bill
STAGE_NAMES = {
    "extract": "extract",
    "filter": "language and quality filter",
    "dedup": "dedup",
    "tokenize": "tokenize",
    "shard": "shuffle and shard",
}

Vocab = Literal[32_000, 50_257, 65_536, 128_256, 163_840, 262_144]


def _rate_knob(label: str, help: str, draw: tuple[float, float]) -> Knob:
    return Knob(label, "MB/s/core", 0.1, 500, 0.1, log=True, help=help, draw=draw)


class _PipelineKnobs(StrictModel):
    train_tokens_t: Annotated[
        float,
        Knob("Training tokens", "T tokens", 1, 100, 0.5, log=True,
             help="Tokens one pass of the run consumes (Llama 3: about 15T).", draw=(2, 40)),
    ] = 15
    vocab_size: Annotated[
        Vocab,
        Knob("Tokenizer vocabulary", "", 32_000, 262_144, draw=(32_000, 262_144),
             help="Sets the token-id width: up to 65,536 ids fit uint16 (2 B); more need uint32 (4 B)."),
    ] = 65_536
    text_bytes_per_token: Annotated[
        float,
        Knob("Clean text per token", "B", 2, 8, 0.1,
             help="UTF-8 bytes of clean text one token covers: about 4 for English BPE, fewer for code-heavy or CJK text.",
             draw=(3, 5)),
    ] = 4.0
    keep_end_to_end: Annotated[
        float,
        Knob("End-to-end keep rate", "", 0.0005, 0.2, 0.0005, log=True, percent=True,
             help="Clean, deduplicated text bytes over raw crawl bytes (uncompressed WARC records: HTML and "
                  "headers). FineWeb's 15T tokens from 96 crawls of 200-400 TiB each is about 0.2%.",
             draw=(0.001, 0.005)),
    ] = 0.002
    filter_keep: Annotated[
        float,
        Knob("Filter keep rate", "", 0.05, 1.0, 0.01, percent=True,
             help="Share of extracted text bytes that pass language ID and the quality filters.",
             draw=(0.2, 0.6)),
    ] = 0.3
    dedup_keep: Annotated[
        float,
        Knob("Dedup keep rate", "", 0.05, 1.0, 0.01, percent=True,
             help="Share of filtered bytes left after exact and near-duplicate removal.",
             draw=(0.25, 0.7)),
    ] = 0.4
    window_days: Annotated[
        float,
        Knob("Window per stage", "days", 1, 60, 1,
             help="Wall-clock time each stage has to process its whole input.", draw=(7, 28)),
    ] = 14
    extract_MBps_per_core: Annotated[
        float, _rate_knob("Extract rate", "Decompress WARC, parse HTML, strip boilerplate (trafilatura-class).", (1, 5)),
    ] = 2
    filter_MBps_per_core: Annotated[
        float, _rate_knob("Filter rate", "fastText language ID plus heuristic quality rules.", (5, 30)),
    ] = 10
    dedup_MBps_per_core: Annotated[
        float, _rate_knob("Dedup rate", "MinHash signatures, LSH buckets, clustering and removal, per input byte.",
                          (0.5, 3)),
    ] = 1
    tokenize_MBps_per_core: Annotated[
        float, _rate_knob("Tokenize rate", "A Rust BPE tokenizer on one core.", (2, 20)),
    ] = 5
    shard_MBps_per_core: Annotated[
        float, _rate_knob("Shuffle-and-shard rate", "Read, permute, write: I/O bound.", (20, 200)),
    ] = 50
    usd_per_core_hour: Annotated[
        float,
        Knob("CPU price", "USD/core-hour", 0.005, 0.2, 0.005, log=True,
             help="Cloud or amortized on-prem price of one core for an hour.", draw=(0.01, 0.06)),
    ] = 0.03
    shard_gb: Annotated[
        float,
        Knob("Shard size", "GB", 0.05, 10, 0.05, log=True,
             help="Bytes of token ids per shard file.", draw=(0.25, 4)),
    ] = 1
    train_tokens_per_s: Annotated[
        float,
        Knob("Trainer throughput", "tokens/s", 1e5, 2e7, 1000, log=True,
             help="Tokens per second the whole training job consumes.", draw=(3e5, 5e6)),
    ] = 1.7e6
    train_mfu: Annotated[
        float,
        Knob("Training MFU", "", 0.2, 0.7, 0.01, percent=True,
             help="Share of dense BF16 peak the training step achieves.", draw=(0.3, 0.55)),
    ] = 0.4

    warc_compression: Annotated[
        float,
        Knob("WARC gzip ratio", "×", 2, 6, 0.1,
             help="Uncompressed crawl bytes over gzipped WARC bytes (an assumption: gzip on HTML is about 3x).",
             draw=(2.8, 4)),
    ] = 3.2
    crawls: Annotated[
        int,
        Knob("Crawls read", "", 1, 200, 1, help="Common Crawl snapshots the corpus draws on (FineWeb: 96).",
             draw=(40, 120)),
    ] = 96
    doc_kb: Annotated[
        float,
        Knob("Mean document", "kB", 0.5, 20, 0.5, log=True,
             help="Mean bytes of extracted text per web document (an estimate: a few kB for a typical page).",
             draw=(2, 6)),
    ] = 3
    minhash_buckets: Annotated[
        int, Knob("LSH bands", "", 1, 50, 1, help="MinHash LSH bands (datatrove and FineWeb: 14).",
                  draw=(9, 20)),
    ] = 14
    minhash_hashes_per_bucket: Annotated[
        int, Knob("Hashes per band", "", 1, 20, 1, help="Hashes per LSH band (datatrove and FineWeb: 8).",
                  draw=(5, 13)),
    ] = 8
    minhash_hash_bytes: Annotated[
        Literal[4, 8], Knob("Hash width", "B", 4, 8, help="Bytes per MinHash value (FineWeb: 64-bit).",
                            draw=(4, 8)),
    ] = 8
    classifier_tokens_per_s_per_gpu: Annotated[
        float,
        Knob("Quality-classifier throughput", "tokens/s", 1e4, 2e6, 1e4, log=True,
             help="Tokens a second one GPU scores with a BERT-sized quality classifier (an estimate: about a "
                  "fifth of what 2 FLOPs per parameter at full bf16 peak would allow).", draw=(1e5, 5e5)),
    ] = 2e5
    classifier_max_tokens: Annotated[
        int, Knob("Classifier context", "tokens", 128, 2048, 128,
                  help="Tokens of each document the classifier reads (an assumption: a BERT-class encoder's 512).",
                  draw=(256, 1024)),
    ] = 512

    @model_validator(mode="after")
    def _extraction_yield_possible(self) -> "_PipelineKnobs":
        if self.keep_end_to_end > self.filter_keep * self.dedup_keep:
            raise ValueError(
                f"An end-to-end keep rate of {self.keep_end_to_end:.1%} is more than the filters "
                f"({self.filter_keep:.0%}) and dedup ({self.dedup_keep:.0%}) let through even if extraction "
                "kept every raw byte; lower the end-to-end rate or raise a stage's keep rate."
            )
        return self


class Params(with_defaults(AcceleratorKnobs, model="Llama-3.1-405B"), _PipelineKnobs):
    """The pipeline's own knobs, then the model trained and its accelerator (catalog or custom):
    active parameters set the FLOP, the tokenizer the what-if shard size, the part its bf16 peak."""


def token_id_bytes(vocab: int) -> int:
    """Width of the smallest standard unsigned integer (1, 2, 4, 8 B) that holds every id."""
    bits = max(1, math.ceil(math.log2(vocab)))
    for width in (1, 2, 4, 8):
        if bits <= 8 * width:
            return width
    raise ValueError(f"vocabulary of {vocab} ids is too large")


def solve(p: Params) -> Derivation:
    d = Derivation(p)
    tokens = p.train_tokens_t * 1e12

    # --- the bytes at each boundary, from the end backwards ---
    d.step("train_tokens", "Training tokens", tokens, "1", noun="tokens", formula="{train_tokens_t} × 10¹²")
    bits = d.step("token_id_bits", "Bits to name every token id", math.ceil(math.log2(p.vocab_size)), "1",
                  noun="bits", formula="⌈log2({vocab_size})⌉")
    width = d.step(
        "bytes_per_token", "Bytes per stored token id", token_id_bytes(p.vocab_size), "B",
        formula="smallest of uint8/16/32/64 holding {token_id_bits} bits", kind="search",
    )
    shards_tb = d.step(
        "shards_TB", "Token shards", tokens * width / 1e12, "TB",
        formula="{train_tokens} × {bytes_per_token}",
    )
    m = llm(p)
    d.step("model_vocab", "The trained model's own vocabulary (catalog)", m.vocab, "1", noun="ids",
           formula="{model} tokenizer", kind="lookup")
    model_width = d.step(
        "model_bytes_per_token", "Bytes per token id with that vocabulary", token_id_bytes(m.vocab), "B",
        formula="smallest of uint8/16/32/64 holding ⌈log2({model_vocab})⌉ bits", kind="search",
    )
    d.step(
        "shards_TB_model_vocab", "Shards written with the model's own tokenizer", tokens * model_width / 1e12, "TB",
        formula="{train_tokens} × {model_bytes_per_token}",
    )
    d.step(
        "token_width_verdict", "Do shards at the drawn vocabulary's width hold the model's own ids?",
        "the drawn width holds them" if model_width <= width else "shards that narrow cannot hold them",
        formula="{model_bytes_per_token} ≤ {bytes_per_token}",
    )
    d.step(
        "ids_overflowing_uint16", "Of those ids, how many a uint16 cannot hold (they would wrap silently)",
        max(0, m.vocab - 65_536), "1", noun="ids",
        formula="max(0, {model_vocab} − 65,536)",
    )
    clean = d.step(
        "clean_text_TB", "Clean text after dedup", tokens * p.text_bytes_per_token / 1e12, "TB",
        formula="{train_tokens} × {text_bytes_per_token}",
    )
    raw_tb = clean / p.keep_end_to_end
    d.step(
        "raw_PB", "Raw crawl to read", raw_tb / 1000, "PB",
        formula="{clean_text_TB} / {keep_end_to_end}",
    )
    yield_frac = p.keep_end_to_end / (p.filter_keep * p.dedup_keep)
    d.step(
        "extract_yield_share", "Text bytes extraction keeps per raw byte (what the keep rate leaves)",
        yield_frac, "1", percent=True,
        formula="{keep_end_to_end} / ({filter_keep} × {dedup_keep})",
    )
    extracted = d.step(
        "extracted_text_TB", "Extracted text", raw_tb * yield_frac, "TB",
        formula="{raw_PB} × {extract_yield_share}",
    )
    filtered = d.step(
        "filtered_text_TB", "Text passing language and quality filters", extracted * p.filter_keep, "TB",
        formula="{extracted_text_TB} × {filter_keep}",
    )
    d.step(
        "raw_PB_at_half_keep", "Raw crawl if the keep rate halves", clean / (p.keep_end_to_end / 2) / 1000, "PB",
        formula="{clean_text_TB} / ({keep_end_to_end} / 2)",
    )
    d.step(
        "raw_compressed_PB", "That crawl as gzipped WARC files", raw_tb / p.warc_compression / 1000, "PB",
        formula="{raw_PB} / {warc_compression}",
    )
    d.step(
        "raw_TiB_per_crawl", "Uncompressed crawl per snapshot", raw_tb * 1e12 / p.crawls / 2**40, "TiB",
        formula="{raw_PB} / {crawls}",
    )

    # --- the keep rate against FineWeb's own numbers ---
    d.step("fineweb_crawl_TiB_low", "FineWeb: smallest uncompressed snapshot in its stated range",
           FINEWEB_CRAWL_TIB_LOW, "TiB", kind="lookup")
    d.step("fineweb_crawl_TiB_high", "FineWeb: largest uncompressed snapshot in its stated range",
           FINEWEB_CRAWL_TIB_HIGH, "TiB", kind="lookup")
    fw_low = d.step("fineweb_raw_PB_low", "FineWeb's 96 snapshots at the low end of the range",
                    FINEWEB_CRAWLS * FINEWEB_CRAWL_TIB_LOW * 2**40 / 1e15, "PB",
                    formula="96 × {fineweb_crawl_TiB_low}")
    fw_high = d.step("fineweb_raw_PB_high", "FineWeb's 96 snapshots at the high end of the range",
                     FINEWEB_CRAWLS * FINEWEB_CRAWL_TIB_HIGH * 2**40 / 1e15, "PB",
                     formula="96 × {fineweb_crawl_TiB_high}")
    fw_text_tb = d.step("fineweb_text_TB", "FineWeb's 15T tokens as text at this page's bytes per token",
                        FINEWEB_TOKENS * p.text_bytes_per_token / 1e12, "TB",
                        formula="15 × 10¹² × {text_bytes_per_token}")
    keep_hi = d.step("fineweb_keep_high", "FineWeb's keep rate if its snapshots were at the low end",
                     fw_text_tb / (fw_low * 1000), "1", percent=True,
                     formula="{fineweb_text_TB} / {fineweb_raw_PB_low}")
    keep_lo = d.step("fineweb_keep_low", "FineWeb's keep rate if its snapshots were at the high end",
                     fw_text_tb / (fw_high * 1000), "1", percent=True,
                     formula="{fineweb_text_TB} / {fineweb_raw_PB_high}")
    d.step("keep_vs_fineweb", "Where the assumed keep rate sits against FineWeb's",
           "inside FineWeb's range" if keep_lo <= p.keep_end_to_end <= keep_hi
           else ("above FineWeb's range: the crawl is undersized unless the filters keep more than FineWeb's"
                 if p.keep_end_to_end > keep_hi
                 else "below FineWeb's range: stricter filters than FineWeb's, so a larger crawl"),
           formula="{fineweb_keep_low} ≤ {keep_end_to_end} ≤ {fineweb_keep_high}", kind="verdict")

    # --- dedup state: one MinHash signature per document ---
    docs = d.step(
        "dedup_docs", "Documents entering dedup", filtered * 1e9 / p.doc_kb, "1", noun="documents",
        formula="{filtered_text_TB} / {doc_kb}",
    )
    sig = d.step(
        "minhash_sig_B", "MinHash signature per document",
        p.minhash_buckets * p.minhash_hashes_per_bucket * p.minhash_hash_bytes, "B",
        formula="{minhash_buckets} × {minhash_hashes_per_bucket} × {minhash_hash_bytes}",
    )
    state = d.step(
        "minhash_state_TB", "Signatures for the whole corpus", docs * sig / 1e12, "TB",
        formula="{dedup_docs} × {minhash_sig_B}",
    )
    band = d.step(
        "minhash_band_TB_global", "One band's signatures to sort, dedup across all crawls", state / p.minhash_buckets,
        "TB", formula="{minhash_state_TB} / {minhash_buckets}",
    )
    d.step(
        "minhash_band_GB_per_crawl", "One band's signatures to sort, dedup within each crawl",
        band * 1000 / p.crawls, "GB", formula="{minhash_band_TB_global} / {crawls}",
    )

    # --- the model-based quality classifier: a GPU stage inside the filter ---
    cls_docs = d.step(
        "classifier_docs", "Documents the quality classifier scores (all extracted text, an upper bound)",
        extracted * 1e9 / p.doc_kb, "1", noun="documents", formula="{extracted_text_TB} / {doc_kb}",
    )
    doc_tokens = d.step(
        "classifier_tokens_per_doc", "Tokens the classifier reads per document",
        min(p.classifier_max_tokens, p.doc_kb * 1000 / p.text_bytes_per_token), "1", noun="tokens",
        formula="min({classifier_max_tokens}, {doc_kb} / {text_bytes_per_token})",
    )
    cls_gpu_h = d.step(
        "classifier_gpu_hours", "GPU-hours to score them", cls_docs * doc_tokens / p.classifier_tokens_per_s_per_gpu
        / 3600, "1", noun="GPU-hours",
        formula="{classifier_docs} × {classifier_tokens_per_doc} / {classifier_tokens_per_s_per_gpu} / 1 h",
    )

    # --- the rate each stage needs to finish in the window ---
    window_s = d.step("window_s", "Window per stage", p.window_days * SECONDS_PER_DAY, "s",
                      formula="{window_days}")
    inputs_tb = {"extract": raw_tb, "filter": extracted, "dedup": filtered, "tokenize": clean, "shard": shards_tb}
    sources = {"extract": "{raw_PB}", "filter": "{extracted_text_TB}", "dedup": "{filtered_text_TB}",
               "tokenize": "{clean_text_TB}", "shard": "{shards_TB}"}
    for stage in STAGES:
        d.step(
            f"{stage}_input_GBps", f"Input rate for {STAGE_NAMES[stage]} to finish in the window",
            inputs_tb[stage] * 1000 / window_s, "GB/s",
            formula=f"{sources[stage]} / {{window_s}}",
        )

    # --- where the time goes: core-hours per stage ---
    core_hours = {}
    for stage in STAGES:
        rate = getattr(p, f"{stage}_MBps_per_core")
        core_hours[stage] = d.step(
            f"{stage}_core_hours", f"Core-hours to {STAGE_NAMES[stage]}", inputs_tb[stage] * 1e6 / rate / 3600,
            "1", noun="core-hours",
            formula=f"{sources[stage]} / {{{stage}_MBps_per_core}} / 1 h",
        )
    total = d.step(
        "pipeline_core_hours", "Core-hours, all stages", sum(core_hours.values()), "1", noun="core-hours",
        formula=" + ".join(f"{{{s}_core_hours}}" for s in STAGES),
    )
    ranked = sorted(STAGES, key=lambda s: core_hours[s], reverse=True)
    d.step(
        "top_two_stages", "The two stages where the time goes",
        f"{STAGE_NAMES[ranked[0]]} and {STAGE_NAMES[ranked[1]]}",
        formula="the two largest core-hour totals",
    )
    d.step(
        "top_two_share", "Their share of all core-hours",
        (core_hours[ranked[0]] + core_hours[ranked[1]]) / total, "1", percent=True,
        formula=f"({{{ranked[0]}_core_hours}} + {{{ranked[1]}_core_hours}}) / {{pipeline_core_hours}}",
    )
    d.step(
        "dedup_core_hours_if_first", "Dedup core-hours if it ran before the filters",
        extracted * 1e6 / p.dedup_MBps_per_core / 3600, "1", noun="core-hours",
        formula="{extracted_text_TB} / {dedup_MBps_per_core} / 1 h",
    )
    d.step(
        "extract_cores", "Cores extraction keeps busy for the window",
        math.ceil(core_hours["extract"] * 3600 / window_s - 1e-9), "1", noun="cores",
        formula="⌈{extract_core_hours} × 1 h / {window_s}⌉",
    )
    d.step(
        "dedup_cores", "Cores dedup keeps busy for the window",
        math.ceil(core_hours["dedup"] * 3600 / window_s - 1e-9), "1", noun="cores",
        formula="⌈{dedup_core_hours} × 1 h / {window_s}⌉",
    )
    d.step(
        "pipeline_cpu_cost_USD", "CPU bill for one full pass of the pipeline", total * p.usd_per_core_hour, "USD",
        formula="{pipeline_core_hours} × {usd_per_core_hour}",
    )
    d.step(
        "shard_count_continuous", "Shard files before rounding up", shards_tb * 1000 / p.shard_gb, "1",
        noun="shards", formula="{shards_TB} / {shard_gb}",
    )
    d.step(
        "shard_count", "Shard files", math.ceil(shards_tb * 1000 / p.shard_gb - 1e-9), "1", noun="shards",
        formula="⌈{shard_count_continuous}⌉",
    )

    # --- the trainer's end ---
    d.step(
        "training_duration_days", "One pass at the trainer's rate", tokens / p.train_tokens_per_s / SECONDS_PER_DAY,
        "d", formula="{train_tokens} / {train_tokens_per_s}",
    )
    read = d.step(
        "trainer_read_MBps", "Bytes the trainer reads", p.train_tokens_per_s * width / 1e6, "MB/s",
        formula="{train_tokens_per_s} × {bytes_per_token}",
    )
    hw = accelerator(p)
    peak = d.step("gpu_peak_flops", f"{hw.name} dense bf16 peak", hw.peak("bf16"), "FLOP/s",
                  formula="{gpu} datasheet", kind="lookup")
    d.step("active_params", f"{m.name} parameters each token runs through", m.active_params, "1",
           noun="parameters", formula="{model} shape", kind="lookup")
    need = d.step(
        "train_flops_per_s", "Compute that throughput needs (6 × active params per token)",
        TRAIN_FLOPS_PER_PARAM_TOKEN * m.active_params * p.train_tokens_per_s, "FLOP/s",
        formula=f"{TRAIN_FLOPS_PER_PARAM_TOKEN} FLOP × {{active_params}} × {{train_tokens_per_s}}",
    )
    gpus = d.step(
        "implied_training_gpus", "GPUs that throughput implies", need / (peak * p.train_mfu), "1", noun="GPUs",
        formula="{train_flops_per_s} / ({gpu_peak_flops} × {train_mfu})",
    )
    d.step(
        "implied_training_gpus_whole", "Whole GPUs that throughput needs", math.ceil(gpus - 1e-9), "1",
        noun="GPUs", formula="⌈{implied_training_gpus}⌉",
    )
    d.step(
        "training_gpu_hours", "GPU-hours for one pass", gpus * tokens / p.train_tokens_per_s / 3600, "1",
        noun="GPU-hours",
        formula="{implied_training_gpus} × {training_duration_days} / 1 h",
    )
    d.step(
        "read_per_gpu_Bps", "Bytes each GPU reads", read * 1e6 / gpus, "B/s",
        formula="{trainer_read_MBps} / {implied_training_gpus}",
    )
    d.step(
        "classifier_share_of_training", "Classifier GPU-hours against one pass of training",
        cls_gpu_h / (gpus * tokens / p.train_tokens_per_s / 3600), "1", percent=True,
        formula="{classifier_gpu_hours} / {training_gpu_hours}",
    )
    share = cls_gpu_h / (gpus * tokens / p.train_tokens_per_s / 3600)
    d.step(
        "pipeline_cost_verdict", "Is the pipeline's GPU stage small next to training (under 10%, a judgement line)?",
        "the pipeline's cost is iteration rounds, not dollars" if share < CLASSIFIER_SMALL_SHARE
        else "the classifier is a real line in the GPU budget: score fewer documents or use a smaller model",
        formula="{classifier_share_of_training} < 10%",
    )
    d.step(
        "pipeline_days_serial", "Pipeline wall time if each stage waits for the one before",
        len(STAGES) * p.window_days, "d",
        formula="5 stages × {window_days} days",
    )
    return d
