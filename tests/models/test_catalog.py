"""models.catalog: the constants, checked against hand derivations written out in full."""

from __future__ import annotations

import dataclasses
import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # `pytest` (not `python -m pytest`) does not put the repo on the path
    sys.path.insert(0, str(ROOT))

from models import catalog  # noqa: E402
from models.catalog import (  # noqa: E402
    ADAM_MIXED_BYTES_PER_PARAM,
    CHECKPOINT_BYTES_PER_PARAM,
    GPU_NAMES,
    GPUS,
    INFER_FLOPS_PER_PARAM_TOKEN,
    LINKS,
    LLAMA3_INTERRUPTIONS,
    MODEL_NAMES,
    MODELS,
    TRAIN_FLOPS_PER_PARAM_TOKEN,
    gpu,
    model,
)

# ----------------------------------------------------------------------------- KV cache


def test_llama3_70b_kv_bytes_per_token():
    # 2 (K and V) x 80 layers x 8 KV heads x 128 head dim x 2 bytes (bf16)
    # = 2 * 80 = 160; 160 * 8 = 1,280; 1,280 * 128 = 163,840 elements; x 2 B = 327,680 B
    assert 2 * 80 * 8 * 128 * 2 == 327_680
    assert model("Llama-3-70B").kv_bytes_per_token(2) == 327_680


def test_llama3_8b_kv_bytes_per_token():
    # 2 x 32 layers x 8 x 128 x 2 B = 64 * 8 = 512; 512 * 128 = 65,536; x 2 = 131,072 B (128 KiB)
    assert 2 * 32 * 8 * 128 * 2 == 131_072
    assert model("Llama-3-8B").kv_bytes_per_token(2) == 131_072


def test_llama31_405b_kv_bytes_per_token():
    # 2 x 126 layers x 8 x 128 x 2 B = 252 * 8 = 2,016; 2,016 * 128 = 258,048; x 2 = 516,096 B
    assert 2 * 126 * 8 * 128 * 2 == 516_096
    assert model("Llama-3.1-405B").kv_bytes_per_token(2) == 516_096


def test_kv_bytes_scale_with_element_size():
    m = model("Llama-3-70B")
    assert m.kv_bytes_per_token(1) == 163_840  # fp8 cache: half of bf16
    assert m.kv_bytes_per_token() == m.kv_bytes_per_token(2)  # default is bf16


def test_deepseek_v3_mla_kv_bytes_per_token():
    # MLA caches one latent (kv_lora_rank 512) + one RoPE key (64) per token per layer:
    # 61 layers x (512 + 64) = 61 x 576 = 35,136 elements; x 2 B = 70,272 B
    assert 61 * 576 * 2 == 70_272
    assert model("DeepSeek-V3").kv_bytes_per_token(2) == 70_272


def test_mla_cache_is_far_smaller_than_naive_mha_would_be():
    ds = model("DeepSeek-V3")
    # without compression: 2 x 61 x 128 heads x 128 x 2 B = 3,997,696 B, ~57x the MLA cache
    naive = 2 * 61 * 128 * 128 * 2
    assert naive == 3_997_696
    assert ds.kv_bytes_per_token(2) < naive / 50


def test_kimi_k2_mla_cache_matches_deepseek_v3():
    # same 61 layers and the same 512 + 64 latent, so the same 70,272 B per token at bf16
    assert model("Kimi-K2 1T").kv_bytes_per_token(2) == 61 * (512 + 64) * 2 == 70_272


def test_gpt_13b_is_mha():
    m = model("GPT-13B")
    assert m.kv_heads == m.heads == 40
    assert m.heads * m.head_dim == m.d_model == 5120
    # 2 x 40 layers x 40 heads x 128 x 2 B = 819,200 B per token (~0.8 MB)
    assert m.kv_bytes_per_token(2) == 2 * 40 * 40 * 128 * 2 == 819_200


# ----------------------------------------------------------------------------- GPUs


def test_h100_ridge_point():
    # 989e12 FLOP/s / 3.35e12 B/s = 295.2... FLOP per byte
    assert 989e12 / 3.35e12 == pytest.approx(295.2, abs=0.1)
    assert gpu("H100 SXM").ridge_flops_per_byte == pytest.approx(295, abs=1)


def test_ridge_points_of_other_gpus():
    # A100 80GB: 312e12 / 2.039e12 = 153.0; H200: 989e12 / 4.8e12 = 206.0;
    # B200: 2250e12 / 8e12 = 281.25; MI300X: 1307.4e12 / 5.3e12 = 246.7
    assert gpu("A100 80GB").ridge_flops_per_byte == pytest.approx(153.0, abs=0.1)
    assert gpu("H200").ridge_flops_per_byte == pytest.approx(206.0, abs=0.1)
    assert gpu("B200").ridge_flops_per_byte == pytest.approx(281.25)
    assert gpu("MI300X").ridge_flops_per_byte == pytest.approx(246.7, abs=0.1)


def test_required_gpus_and_datasheet_values():
    for name in ("A100 80GB", "A100 40GB", "H100 SXM", "H200", "B200", "MI300X"):
        assert name in GPUS
    h100 = gpu("H100 SXM")
    assert (h100.memory_GB, h100.hbm_TBps, h100.dense_bf16_TFLOPs, h100.dense_fp8_TFLOPs) == (
        80, 3.35, 989, 1979
    )
    assert (h100.nvlink_GBps, h100.tdp_W) == (900, 700)
    h200 = gpu("H200")
    assert (h200.memory_GB, h200.hbm_TBps) == (141, 4.8)
    assert h200.dense_bf16_TFLOPs == h100.dense_bf16_TFLOPs  # same compute as H100
    assert gpu("A100 80GB").hbm_TBps == 2.039
    assert gpu("A100 40GB").hbm_TBps == 1.555
    assert gpu("MI300X").dense_bf16_TFLOPs == 1307.4


def test_nvlink_is_stored_bidirectional_and_halves_per_direction():
    # vendors quote 900 GB/s for H100 = 450 GB/s each way; LINKS stores the one-way figure
    assert gpu("H100 SXM").nvlink_GBps_per_direction == 450 == LINKS["NVLink4"].GBps
    assert gpu("B200").nvlink_GBps_per_direction == 900 == LINKS["NVLink5"].GBps
    assert gpu("A100 80GB").nvlink_GBps_per_direction == 300 == LINKS["NVLink3"].GBps


def test_fp8_is_double_bf16_where_present():
    for g in GPUS.values():
        if g.dense_fp8_TFLOPs is not None and g.kind == "GPU":  # TPU v5p lists FP8 at the BF16 rate
            assert g.dense_fp8_TFLOPs == pytest.approx(2 * g.dense_bf16_TFLOPs, rel=0.01), g.name


# ----------------------------------------------------------------------------- links


def test_network_links_are_line_rate_over_eight():
    # 400 Gb/s / 8 bits per byte = 50 GB/s; 200 -> 25; 800 -> 100
    assert LINKS["IB NDR 400G"].GBps == 50
    assert LINKS["IB HDR 200G"].GBps == 25
    assert LINKS["IB XDR 800G"].GBps == 100
    assert LINKS["IB NDR 400G"].Gbps == 400
    assert LINKS["10GbE"].GBps == 1.25
    assert LINKS["100GbE"].GBps == 12.5
    assert LINKS["400GbE"].Gbps == 400


def test_pcie_x16_per_direction():
    # Gen4: 16 GT/s x 16 lanes x 128/130 / 8 = 31.507... GB/s; Gen5 doubles it: 63.015...
    assert LINKS["PCIe Gen4 x16"].GBps == pytest.approx(16 * 16 * 128 / 130 / 8)
    assert LINKS["PCIe Gen4 x16"].GBps == pytest.approx(31.5, abs=0.01)
    assert LINKS["PCIe Gen5 x16"].GBps == pytest.approx(63.0, abs=0.02)


def test_nvme_ssds():
    assert LINKS["NVMe Gen4 SSD"].GBps == pytest.approx(7, abs=0.5)
    assert LINKS["NVMe Gen5 SSD"].GBps == pytest.approx(14, abs=1)
    # a drive cannot beat its x4 link: Gen4 x4 = 16 * 4 * 128/130 / 8 = 7.88 GB/s
    assert LINKS["NVMe Gen4 SSD"].GBps < 16 * 4 * 128 / 130 / 8
    assert LINKS["NVMe Gen5 SSD"].GBps < 32 * 4 * 128 / 130 / 8


# ----------------------------------------------------------------------------- sources


@pytest.mark.parametrize(
    "entry",
    [*GPUS.values(), *LINKS.values(), *MODELS.values(), LLAMA3_INTERRUPTIONS],
    ids=lambda e: getattr(e, "name", "reliability"),
)
def test_every_entry_has_a_source(entry):
    assert isinstance(entry.source, str) and entry.source.strip()


def test_entries_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        gpu("H100 SXM").memory_GB = 96  # type: ignore[misc]


def test_dict_keys_match_entry_names():
    for table in (GPUS, LINKS, MODELS):
        for key, entry in table.items():
            assert key == entry.name


# ----------------------------------------------------------------------------- models


def test_active_never_exceeds_total_and_dense_models_are_equal():
    for m in MODELS.values():
        assert 0 < m.active_params <= m.total_params, m.name
        if not m.is_moe:
            assert m.active_params == m.total_params, m.name
            assert m.active_fraction == 1.0


def test_kimi_k2_active_fraction():
    # 32e9 active / 1e12 total = 0.032
    assert model("Kimi-K2 1T").active_fraction == pytest.approx(0.032)


def test_moe_shapes():
    mix = model("Mixtral-8x7B")
    assert (mix.moe_experts, mix.experts_per_token) == (8, 2)
    assert (mix.total_params, mix.active_params) == (46.7e9, 12.9e9)
    ds = model("DeepSeek-V3")
    assert (ds.moe_experts, ds.shared_experts, ds.experts_per_token) == (256, 1, 8)
    assert (ds.total_params, ds.active_params) == (671e9, 37e9)
    kimi = model("Kimi-K2 1T")
    assert (kimi.moe_experts, kimi.experts_per_token, kimi.layers, kimi.d_model) == (384, 8, 61, 7168)


def test_llama_shapes():
    for name, layers, d, heads in (
        ("Llama-3-8B", 32, 4096, 32),
        ("Llama-3-70B", 80, 8192, 64),
        ("Llama-3.1-405B", 126, 16384, 128),
    ):
        m = model(name)
        assert (m.layers, m.d_model, m.heads, m.kv_heads, m.head_dim, m.vocab) == (
            layers, d, heads, 8, 128, 128_256
        )
        assert m.heads * m.head_dim == m.d_model


def test_weight_bytes():
    # 70.6e9 params x 2 B = 141.2 GB in bf16: does not fit one 80 GB H100
    assert model("Llama-3-70B").weight_bytes(2) == pytest.approx(141.2e9)
    assert model("Llama-3-70B").weight_bytes(2) > gpu("H100 SXM").memory_bytes


def test_mla_override_must_match_latent_dims():
    with pytest.raises(ValueError):
        dataclasses.replace(model("DeepSeek-V3"), kv_cache_elems_per_token_per_layer=512)


# ----------------------------------------------------------------------------- reliability


def test_llama3_interruption_rate():
    # 419 interruptions / (54 days x 16,384 GPUs = 884,736 GPU-days) = 4.736e-4 per GPU-day
    assert 54 * 16384 == 884_736
    assert LLAMA3_INTERRUPTIONS.per_gpu_day == pytest.approx(419 / (54 * 16384))
    assert LLAMA3_INTERRUPTIONS.per_gpu_day == pytest.approx(4.736e-4, rel=1e-3)
    # fleet-level: 54 x 24 h / 419 = 3.09 h between interruptions
    assert LLAMA3_INTERRUPTIONS.mean_hours_between_interruptions == pytest.approx(3.093, abs=0.001)
    assert LLAMA3_INTERRUPTIONS.mean_hours_between_interruptions_at(16384) == pytest.approx(
        LLAMA3_INTERRUPTIONS.mean_hours_between_interruptions
    )


# ----------------------------------------------------------------------------- conventions


def test_training_state_conventions():
    # bf16 weights 2 + bf16 grads 2 + fp32 master 4 + Adam m 4 + Adam v 4 = 16
    assert ADAM_MIXED_BYTES_PER_PARAM == 2 + 2 + 4 + 4 + 4 == 16
    # checkpoint drops the gradients: 16 - 2 = 14
    assert CHECKPOINT_BYTES_PER_PARAM == ADAM_MIXED_BYTES_PER_PARAM - 2 == 14
    assert TRAIN_FLOPS_PER_PARAM_TOKEN == 3 * INFER_FLOPS_PER_PARAM_TOKEN == 6


# ----------------------------------------------------------------------------- look-ups


def test_names_tuples_follow_dicts():
    assert GPU_NAMES == tuple(GPUS) and isinstance(GPU_NAMES, tuple)
    assert MODEL_NAMES == tuple(MODELS) and isinstance(MODEL_NAMES, tuple)


def test_unknown_names_list_the_known_ones():
    with pytest.raises(KeyError, match="H100 SXM"):
        gpu("H100 PCIe")
    with pytest.raises(KeyError, match="Llama-3-70B"):
        model("Llama-2-70B")
    with pytest.raises(KeyError, match="NVLink4"):
        catalog.link("NVLink9")


def test_no_ui_dependencies():
    src = Path(catalog.__file__).read_text()
    for banned in ("streamlit", "plotly", "duckdb"):
        assert f"import {banned}" not in src and f"from {banned}" not in src
    assert math.isfinite(gpu("B200").ridge_flops_per_byte)
