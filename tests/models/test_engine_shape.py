"""Parameters counted from a model's shape: by hand, matrix by matrix, and against the totals the
model cards publish (Llama-3-70B 70.55 B, Llama-3.1-405B 405 B, Mixtral 46.7 B / 12.9 B,
DeepSeek-V3 671 B / 37 B, Kimi K2 "1T" / 32 B, LLaMA-2-13B 13 B)."""

import pytest

from models.catalog import MODELS, model
from models.engine.shape import count, with_counted_params


def test_llama3_70b_by_hand():
    d, ffn, vocab, layers = 8192, 28_672, 128_256, 80
    attention = d * d + 2 * d * (8 * 128) + d * d  # q, k and v for 8 KV heads of 128, o
    mlp = 3 * d * ffn  # gate, up, down
    embeddings = 2 * vocab * d  # input embedding and an untied output head
    expected = layers * (attention + mlp) + embeddings
    assert expected == 70_552_387_584  # the config with its 161 RMSNorm vectors counts 70,553,706,496
    assert count(model("Llama-3-70B")).total == expected


def test_mixtral_by_hand():
    d, expert_ffn = 4096, 14_336
    expert = 3 * d * expert_ffn
    attention = 2 * d * d + 2 * d * 1024
    router = d * 8
    total = 32 * (attention + 8 * expert + router) + 2 * 32_000 * d
    active = 32 * (attention + 2 * expert + router) + 2 * 32_000 * d
    c = count(model("Mixtral-8x7B"))
    assert (c.total, c.active) == (total, active)


def test_deepseek_v3_mla_and_moe_by_hand():
    d, heads = 7168, 128
    q = d * 1536 + 1536 * heads * (128 + 64)  # through the q low-rank bottleneck; 128 no-RoPE + 64 RoPE
    kv_down = d * (512 + 64)  # the cached latent and the shared RoPE key
    kv_up = 512 * heads * (128 + 128)  # keys (no-RoPE part) and values from the latent
    o = heads * 128 * d
    attention = q + kv_down + kv_up + o
    expert = 3 * d * 2048
    moe_layer = (256 + 1) * expert + d * 256  # routed + shared experts, router
    total = 61 * attention + 3 * 3 * d * 18_432 + 58 * moe_layer + 2 * 129_280 * d
    active = 61 * attention + 3 * 3 * d * 18_432 + 58 * ((8 + 1) * expert + d * 256) + 2 * 129_280 * d
    c = count(model("DeepSeek-V3"))
    assert (c.total, c.active) == (total, active)


@pytest.mark.parametrize(("name", "total_rel", "active_rel"), [
    ("Llama-3-8B", 0.005, 0.005),
    ("Llama-3-70B", 0.001, 0.001),  # 70.55 B against the card's rounded 70.6 B
    ("Llama-3.1-405B", 0.005, 0.005),
    ("Mixtral-8x7B", 0.005, 0.005),
    ("DeepSeek-V3", 0.005, 0.02),  # 37.55 B active: the report's 37 B rounds down
    ("Kimi-K2 1T", 0.03, 0.03),  # 1.026 T: the card's "1T" (others quote 1.04 T) and 32 B
    ("LLaMA-2-13B", 0.005, 0.005),
    ("GPT-13B", 0.02, 0.02),  # 12.84 B: GPT-3's biases and 2,048 positions are not counted
])
def test_the_count_matches_the_published_totals(name, total_rel, active_rel):
    m, c = model(name), count(model(name))
    assert c.total == pytest.approx(m.total_params, rel=total_rel)
    assert c.active == pytest.approx(m.active_params, rel=active_rel)


def test_a_counted_model_carries_its_count():
    m = with_counted_params(model("Mixtral-8x7B"))
    assert m.total_params == count(model("Mixtral-8x7B")).total and m.active_params < m.total_params


def test_every_catalog_model_can_be_counted():
    for m in MODELS.values():
        c = count(m)
        assert 0 < c.active <= c.total, m.name


def test_kv_bytes_per_token_of_the_two_13bs():
    # MHA: 2 (K, V) x 40 layers x 40 heads x 128 x 2 B = 819,200 B, 2.5x Llama-3-70B's 327,680 B
    assert model("LLaMA-2-13B").kv_bytes_per_token(2) == 819_200
    assert model("LLaMA-2-13B").kv_bytes_per_token(2) / model("Llama-3-70B").kv_bytes_per_token(2) == 2.5
