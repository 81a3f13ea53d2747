"""pretraining-data-pipeline: the seed's figures from the seed's own arithmetic, a variant worked by
hand, the token-width rule at its boundaries, the keep-rate validator, and directions."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from models.content import load_content
from models.training.pretraining_data_pipeline import STAGES, Params, solve, token_id_bytes

ROOT = Path(__file__).resolve().parents[2]
CONTENT = ROOT / "content" / "training" / "pretraining-data-pipeline.md"
DIRECTIVES = {("diagram", "stages"), ("chart", "core_hours_by_stage"), ("chart", "cores_vs_keep")}
WINDOW_S = 14 * 86_400


def v(d, key):
    return d.value(key)


# --- the seed's own arithmetic ----------------------------------------------------------------


def test_shards_are_two_bytes_a_token_only_up_to_65536_ids():
    d = solve(Params())
    assert v(d, "token_id_bits") == 16
    assert v(d, "bytes_per_token") == 2
    assert v(d, "shards_TB") == pytest.approx(15e12 * 2 / 1e12) == pytest.approx(30)  # "30 TB of shards"
    # Llama 3's 128,256-id tokenizer needs 17 bits, stored as uint32: 15e12 x 4 B = 60 TB
    big = solve(Params(vocab_size=128_256))
    assert v(big, "token_id_bits") == 17
    assert v(big, "bytes_per_token") == 4
    assert v(big, "shards_TB") == pytest.approx(60)
    # the default model is Llama 3.1 405B, whose own vocabulary gives the 60 TB what-if live
    assert v(d, "model_vocab") == 128_256
    assert v(d, "shards_TB_model_vocab") == pytest.approx(60)
    assert v(d, "ids_overflowing_uint16") == 128_256 - 65_536


def test_clean_text_and_raw_crawl_follow_the_keep_rate():
    d = solve(Params())
    assert v(d, "clean_text_TB") == pytest.approx(15e12 * 4 / 1e12)  # 60 TB of clean text
    # FineWeb: 15T tokens from 96 crawls of 200-400 TiB uncompressed each, a keep rate near 0.2%
    assert v(d, "raw_PB") == pytest.approx(60 / 0.002 / 1000)  # 30 PB uncompressed
    assert 96 * 200 * 2**40 / 1e15 <= v(d, "raw_PB") <= 96 * 400 * 2**40 / 1e15  # 21-42 PB
    assert v(d, "raw_PB_at_half_keep") == pytest.approx(60 / 0.001 / 1000)  # 60 PB at 0.1%
    assert v(d, "raw_compressed_PB") == pytest.approx(30 / 3.2)  # 9.4 PB gzipped: "a few petabytes"
    assert v(d, "raw_TiB_per_crawl") == pytest.approx(30e15 / 96 / 2**40)  # 284 TiB, inside 200-400
    # extraction keeps what the filters and dedup leave of the end-to-end rate: 0.002 / (0.3 x 0.4)
    assert v(d, "extract_yield_share") == pytest.approx(0.002 / 0.12)
    assert v(d, "extracted_text_TB") == pytest.approx(500)  # 30 PB x 1/60
    assert v(d, "filtered_text_TB") == pytest.approx(150)  # 500 TB x 0.3
    assert 150 * 0.4 == pytest.approx(v(d, "clean_text_TB"))  # dedup closes the chain


def test_minhash_state_and_the_per_crawl_choice():
    d = solve(Params())
    docs = 150e12 / 3e3  # 150 TB of filtered text / 3 kB per document = 50 B documents
    assert v(d, "dedup_docs") == pytest.approx(docs)
    assert v(d, "minhash_sig_B") == 14 * 8 * 8 == 896  # datatrove's FineWeb config: 14 bands x 8 x 64-bit
    assert v(d, "minhash_state_TB") == pytest.approx(docs * 896 / 1e12)  # 44.8 TB
    assert v(d, "minhash_band_TB_global") == pytest.approx(44.8 / 14)  # 3.2 TB per band to sort
    assert v(d, "minhash_band_GB_per_crawl") == pytest.approx(3200 / 96)  # 33 GB: one machine's memory


def test_the_quality_classifier_is_a_small_gpu_bill():
    d = solve(Params())
    docs = 500e12 / 3e3  # all extracted text, 3 kB per document: 166.7 B documents
    assert v(d, "classifier_docs") == pytest.approx(docs)
    assert v(d, "classifier_tokens_per_doc") == pytest.approx(512)  # 3 kB / 4 B = 750 tokens, truncated to 512
    gpu_h = docs * 512 / 2e5 / 3600  # 118.5k GPU-hours
    assert v(d, "classifier_gpu_hours") == pytest.approx(gpu_h)
    train_h = 6 * 405_849_243_648 * 1.7e6 / (989e12 * 0.4) * 15e12 / 1.7e6 / 3600
    assert v(d, "classifier_share_of_training") == pytest.approx(gpu_h / train_h)
    assert v(d, "classifier_share_of_training") < 0.01
    short = solve(Params(doc_kb=1))  # 1 kB / 4 B = 250 tokens, under the 512 limit
    assert v(short, "classifier_tokens_per_doc") == pytest.approx(250)


def test_stage_rates_over_two_weeks():
    d = solve(Params())
    assert v(d, "window_s") == WINDOW_S
    assert v(d, "extract_input_GBps") == pytest.approx(30e15 / WINDOW_S / 1e9)  # 24.8 GB/s
    assert v(d, "filter_input_GBps") == pytest.approx(500e12 / WINDOW_S / 1e9)
    assert v(d, "dedup_input_GBps") == pytest.approx(150e12 / WINDOW_S / 1e9)
    assert v(d, "tokenize_input_GBps") == pytest.approx(60e12 / WINDOW_S / 1e9)
    assert v(d, "shard_input_GBps") == pytest.approx(30e12 / WINDOW_S / 1e9)


def test_where_the_time_goes():
    d = solve(Params())
    # core-hours = input MB / (MB/s per core) / 3,600
    hours = {
        "extract": 30e9 / 2 / 3600, "filter": 500e6 / 10 / 3600, "dedup": 150e6 / 1 / 3600,
        "tokenize": 60e6 / 5 / 3600, "shard": 30e6 / 50 / 3600,
    }
    for stage, h in hours.items():
        assert v(d, f"{stage}_core_hours") == pytest.approx(h), stage
    assert v(d, "pipeline_core_hours") == pytest.approx(sum(hours.values()))
    assert v(d, "top_two_stages") == "extract and dedup"
    assert v(d, "top_two_share") == pytest.approx((hours["extract"] + hours["dedup"]) / sum(hours.values()))
    assert v(d, "extract_cores") == math.ceil(30e9 / 2 / WINDOW_S)  # 12,401 cores
    assert v(d, "dedup_cores") == math.ceil(150e6 / 1 / WINDOW_S)  # 125 cores
    assert v(d, "dedup_core_hours_if_first") == pytest.approx(500e6 / 1 / 3600)
    assert v(d, "pipeline_cpu_cost_USD") == pytest.approx(sum(hours.values()) * 0.03)
    assert v(d, "shard_count") == 30_000


def test_the_trainer_end():
    d = solve(Params())
    assert v(d, "training_duration_days") == pytest.approx(15e12 / 1.7e6 / 86_400)  # ~102 days per pass
    assert round(v(d, "training_duration_days")) == 102
    assert v(d, "trainer_read_MBps") == pytest.approx(1.7e6 * 2 / 1e6)  # 3.4 MB/s: "a few MB/s"
    # Llama 3.1 405B: 405,849,243,648 parameters counted from its published shape (test_engine_shape.py)
    gpus = 6 * 405_849_243_648 * 1.7e6 / (989e12 * 0.4)  # ~10.5k H100s for a 405B dense model at 40% MFU
    assert v(d, "implied_training_gpus") == pytest.approx(gpus)
    assert 9_500 < gpus < 11_000
    assert v(d, "read_per_gpu_Bps") == pytest.approx(3.4e6 / gpus)
    assert v(d, "training_gpu_hours") == pytest.approx(gpus * 15e12 / 1.7e6 / 3600)
    assert v(d, "pipeline_days_serial") == 5 * 14


# --- a variant worked by hand -------------------------------------------------------------------


def test_variant_ten_trillion_tokens_one_week_windows():
    p = Params(train_tokens_t=10, vocab_size=32_000, text_bytes_per_token=3.5, keep_end_to_end=0.01,
               filter_keep=0.5, dedup_keep=0.4, window_days=7, train_tokens_per_s=1e6, model="Llama-3-70B",
               gpu="H200", train_mfu=0.5, shard_gb=0.5)
    d = solve(p)
    week = 7 * 86_400
    assert v(d, "token_id_bits") == 15  # 2^15 = 32,768 >= 32,000
    assert v(d, "bytes_per_token") == 2
    assert v(d, "shards_TB") == pytest.approx(20)  # 10e12 x 2 B
    assert v(d, "clean_text_TB") == pytest.approx(35)  # 10e12 x 3.5 B
    assert v(d, "raw_PB") == pytest.approx(3.5)  # 35 TB / 0.01
    assert v(d, "extract_yield_share") == pytest.approx(0.05)  # 0.01 / (0.5 x 0.4)
    assert v(d, "extracted_text_TB") == pytest.approx(175)
    assert v(d, "filtered_text_TB") == pytest.approx(87.5)
    assert v(d, "extract_input_GBps") == pytest.approx(3.5e15 / week / 1e9)  # 5.79 GB/s
    assert v(d, "dedup_input_GBps") == pytest.approx(87.5e12 / week / 1e9)
    assert v(d, "extract_cores") == math.ceil(3.5e9 / 2 / week)  # 2,894 cores
    assert v(d, "shard_count") == 40_000  # 20 TB / 0.5 GB
    assert v(d, "training_duration_days") == pytest.approx(10e12 / 1e6 / 86_400)  # 115.7 days
    assert v(d, "trainer_read_MBps") == pytest.approx(2)
    assert v(d, "implied_training_gpus") == pytest.approx(6 * 70_552_387_584 * 1e6 / (989e12 * 0.5))  # ~856 (70.55 B counted from the shape)
    assert v(d, "pipeline_days_serial") == 35


def test_variant_moe_trainer_uses_active_params():
    d = solve(Params(model="DeepSeek-V3"))
    assert v(d, "implied_training_gpus") == pytest.approx(6 * 37_551_276_032 * 1.7e6 / (989e12 * 0.4))  # DeepSeek-V3's 37.6 B active, counted
    assert v(d, "model_vocab") == 129_280
    assert v(d, "shards_TB_model_vocab") == pytest.approx(60)


@pytest.mark.parametrize(("vocab", "width"), [
    (2, 1), (256, 1), (257, 2), (32_000, 2), (65_536, 2), (65_537, 4), (128_256, 4), (2**32, 4), (2**32 + 1, 8),
])
def test_token_id_width_boundaries(vocab, width):
    assert token_id_bytes(vocab) == width


def test_keep_rate_above_what_the_filters_allow_is_rejected_in_plain_words():
    with pytest.raises(ValidationError) as err:
        Params(keep_end_to_end=0.1, filter_keep=0.4, dedup_keep=0.2)  # 0.4 x 0.2 = 8% < 10%
    assert "end-to-end keep rate" in str(err.value)
    Params(keep_end_to_end=0.08, filter_keep=0.4, dedup_keep=0.2)  # exactly 100% extraction yield is allowed


# --- moves the right way --------------------------------------------------------------------------


@st.composite
def scenarios(draw):
    filter_keep = draw(st.floats(0.05, 1.0))
    dedup_keep = draw(st.floats(0.05, 1.0))
    keep = draw(st.floats(0.0005, 0.2).filter(lambda k: k <= filter_keep * dedup_keep))
    return Params(
        train_tokens_t=draw(st.floats(1, 100)),
        vocab_size=draw(st.sampled_from([32_000, 50_257, 65_536, 128_256, 163_840, 262_144])),
        text_bytes_per_token=draw(st.floats(2, 8)),
        keep_end_to_end=keep, filter_keep=filter_keep, dedup_keep=dedup_keep,
        window_days=draw(st.floats(1, 60)),
        train_tokens_per_s=draw(st.floats(1e5, 2e7)),
        model=draw(st.sampled_from(["Llama-3.1-405B", "Llama-3-70B", "Llama-3-8B", "DeepSeek-V3", "Kimi-K2 1T"])),
        train_mfu=draw(st.floats(0.2, 0.7)),
    )


@settings(max_examples=120, deadline=None)
@given(p=scenarios(), factor=st.floats(1.05, 10))
def test_a_lower_keep_rate_needs_more_crawl_and_leaves_the_shards_alone(p, factor):
    lower = Params(**{**p.model_dump(), "keep_end_to_end": max(p.keep_end_to_end / factor, 0.0005)})
    a, b = solve(p), solve(lower)
    assert v(b, "raw_PB") >= v(a, "raw_PB")
    assert v(b, "extract_input_GBps") >= v(a, "extract_input_GBps")
    assert v(b, "extract_core_hours") >= v(a, "extract_core_hours")
    for key in ("shards_TB", "clean_text_TB", "filtered_text_TB", "dedup_core_hours", "trainer_read_MBps"):
        assert v(b, key) == pytest.approx(v(a, key)), key


@settings(max_examples=120, deadline=None)
@given(p=scenarios(), factor=st.floats(1.05, 10))
def test_longer_windows_lower_the_rates_but_not_the_work(p, factor):
    longer = Params(**{**p.model_dump(), "window_days": min(p.window_days * factor, 60)})
    a, b = solve(p), solve(longer)
    for stage in STAGES:
        assert v(b, f"{stage}_input_GBps") <= v(a, f"{stage}_input_GBps") * (1 + 1e-12)
        assert v(b, f"{stage}_core_hours") == pytest.approx(v(a, f"{stage}_core_hours"))
    assert v(b, "extract_cores") <= v(a, "extract_cores")


@settings(max_examples=120, deadline=None)
@given(p=scenarios(), factor=st.floats(1.05, 10))
def test_a_faster_trainer_finishes_sooner_on_more_gpus(p, factor):
    faster = Params(**{**p.model_dump(), "train_tokens_per_s": min(p.train_tokens_per_s * factor, 2e7)})
    a, b = solve(p), solve(faster)
    assert v(b, "training_duration_days") <= v(a, "training_duration_days")
    assert v(b, "implied_training_gpus") >= v(a, "implied_training_gpus")
    assert v(b, "trainer_read_MBps") >= v(a, "trainer_read_MBps")


@settings(max_examples=150, deadline=None)
@given(p=scenarios())
def test_bytes_shrink_at_every_boundary_and_stage_rates_follow(p):
    d = solve(p)
    raw_tb = v(d, "raw_PB") * 1000
    assert raw_tb >= v(d, "extracted_text_TB") * (1 - 1e-9)
    assert v(d, "extracted_text_TB") >= v(d, "filtered_text_TB") * (1 - 1e-9)
    assert v(d, "filtered_text_TB") >= v(d, "clean_text_TB") * (1 - 1e-9)
    assert v(d, "extract_yield_share") <= 1 + 1e-9
    assert v(d, "shards_TB") in (pytest.approx(p.train_tokens_t * 2), pytest.approx(p.train_tokens_t * 4))
    assert v(d, "extract_input_GBps") >= v(d, "filter_input_GBps") * (1 - 1e-9)
    # the two named stages really are the two largest
    named = v(d, "top_two_stages")
    top = sorted(STAGES, key=lambda s: v(d, f"{s}_core_hours"), reverse=True)[:2]
    assert all(v(d, f"{s}_core_hours") <= v(d, f"{top[1]}_core_hours") for s in STAGES if s not in top)
    assert named.count(" and ") >= 1


# --- the page's own figures and prose (the contract every page meets: tests/test_contract.py) -----


def test_every_stage_has_its_input_rate():
    per_stage = [k for k in solve(Params()).keys() if k.endswith("_input_GBps")]
    assert len(per_stage) == len(STAGES) == 5


def test_the_page_draws_its_figures_and_names_its_figures():
    c = load_content(CONTENT)
    assert set(c.directives()) == DIRECTIVES
    body = " ".join(s.body for s in c.sections)
    for phrase in ("{{shards_TB_model_vocab}}", "{{raw_PB_at_half_keep}}", "{{minhash_state_TB}}", "{{keep_end_to_end}}", "65,536",
                   "{{implied_training_gpus}}", "{{top_two_stages}}"):
        assert phrase in body, phrase


# --- the page -----------------------------------------------------------------------------------


def test_page_vocabulary_choice_doubles_the_shards(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("WALKTHROUGHS_DB", str(tmp_path / "apptest.duckdb"))
    at = AppTest.from_file(str(ROOT / "pages" / "training" / "pretraining_data_pipeline.py"), default_timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    metric = {m.label: m.value for m in at.metric}
    assert metric["Token shards"] == "30 TB"
    assert metric["Raw crawl"] == "30 PB"
    assert len(at.get("plotly_chart")) == 3  # the stage diagram, the core-hour bars, the keep-rate sweep
    at.selectbox(key="pretraining-data-pipeline.vocab_size").set_value(128_256).run()
    assert not at.exception
    metric = {m.label: m.value for m in at.metric}
    assert metric["Token shards"] == "60 TB"  # 15e12 tokens x 4 B
    text = "\n".join(m.value for m in at.markdown)
    assert "**6.8 MB/s**" in text  # 1.7M tokens/s x 4 B


def test_verdicts_follow_the_numbers():
    d = solve(Params())
    # seed: 118.5k classifier GPU-hours against ~25.6M training GPU-hours, under 1%
    assert v(d, "pipeline_cost_verdict") == "the pipeline's cost is iteration rounds, not dollars"
    # seed vocab 50k (uint16) against Llama 3.1's 128,256 ids (uint32): too narrow
    assert v(d, "token_width_verdict") == "shards that narrow cannot hold them"
    assert v(solve(Params(vocab_size=128_256)), "token_width_verdict") == "the drawn width holds them"
    gpus = 6 * 405_849_243_648 * 1.7e6 / (989e12 * 0.4)
    assert v(d, "implied_training_gpus_whole") == math.ceil(gpus)
    # an 8B model at 750k tokens/s: a small fleet, so 640-token documents at 150k tokens/s dominate
    small = solve(Params(model="Llama-3-8B", gpu="MI300X", train_tokens_t=10.0, train_tokens_per_s=750_000.0,
                         classifier_tokens_per_s_per_gpu=150_000.0, classifier_max_tokens=640, doc_kb=2.5))
    assert v(small, "classifier_share_of_training") > 0.10
    assert v(small, "pipeline_cost_verdict").startswith("the classifier is a real line")


def test_keep_rate_against_fineweb_by_hand():
    from models.training.pretraining_data_pipeline import Params as _P, solve as _solve
    d = _solve(_P())
    # 96 snapshots x 200 TiB = 96 x 200 x 2^40 B = 21.11 PB; x 400 TiB = 42.22 PB
    assert d.value("fineweb_raw_PB_low") == pytest.approx(96 * 200 * 2**40 / 1e15)
    assert d.value("fineweb_raw_PB_high") == pytest.approx(96 * 400 * 2**40 / 1e15)
    # 15T tokens x 4 B = 60 TB of text, so the keep rate is 60 TB / 42.22 PB = 0.142% to 60 TB / 21.11 PB = 0.284%
    assert d.value("fineweb_text_TB") == pytest.approx(60)
    assert d.value("fineweb_keep_low") == pytest.approx(60e12 / (96 * 400 * 2**40))
    assert d.value("fineweb_keep_high") == pytest.approx(60e12 / (96 * 200 * 2**40))
    assert d.value("keep_vs_fineweb") == "inside FineWeb's range"  # the seed's 0.2%
    assert _solve(_P(keep_end_to_end=0.005)).value("keep_vs_fineweb").startswith("above")
    assert _solve(_P(keep_end_to_end=0.001)).value("keep_vs_fineweb").startswith("below")
