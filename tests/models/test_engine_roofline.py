"""The roofline against worked problems people publish, each derived here by hand.

Sources:
  [SB8] Austin et al., "How To Scale Your Model", part 8, "Serving LLaMA 3-70B on TPUs",
        https://jax-ml.github.io/scaling-book/applied-inference/ : LLaMA 3-70B on TPU v5e with
        int8 weights and int8 KV; KV per token 2 x 8 x 128 x 80 = 160 kB; at batch 32 and 8k
        context the KV is 41.9 GB beside 70 GB of weights, 8 chips at least, a step of
        (70e9 + 41.9e9) / (8 x 8.1e11) = 17 ms, 235 tokens/s per chip; critical batch 240 with bf16
        weights and 120 with int8 weights at bf16 compute.
"""

import math

import pytest

from models.catalog import model
from models.engine.hardware import custom, named
from models.engine.roofline import Replica, floor_batch
from models.engine.shape import with_counted_params

LLAMA70 = with_counted_params(model("Llama-3-70B"))


def sb8(tp=8, **kw):
    return Replica(LLAMA70, named("TPU v5e"), tp, weight_fmt="int8", kv_fmt="int8", compute_fmt="bf16",
                   hbm_efficiency=1.0, decode_mfu=1.0, prefill_mfu=1.0, attention_flops=False, **kw)


def test_sb8_kv_per_token_in_int8():
    assert sb8().kv_bytes_per_token == 2 * 8 * 128 * 80 * 1 == 163_840  # "160 kB"


def test_sb8_memory_and_the_smallest_slice():
    r = sb8()
    kv = 32 * 8192 * r.kv_bytes_per_token  # 42.9 GB exactly; the book rounds 160 kB and gets 41.9
    assert kv == pytest.approx(41.9e9, rel=0.03)
    need = r.weight_bytes + kv
    assert need == pytest.approx(112e9, rel=0.02)  # "~112 GB"
    assert math.ceil(need / 16e9) == 8  # 16 GB chips: 8 is the smallest 2D slice that holds it


def test_sb8_decode_step_and_throughput_per_chip():
    r = sb8()
    step = r.decode_step(32, 8192)
    assert step.bound == "memory"
    assert step.roofline_s == pytest.approx(0.017, rel=0.03)  # (70 + 41.9) GB / (8 x 0.81 TB/s)
    assert 32 / step.roofline_s / 8 == pytest.approx(235, rel=0.03)
    # What the book's estimate leaves out: 160 all-reduces of 32 x 8,192 x 2 B over 200 GB/s of ICI
    # each way, 2 x 7/8 of each: 0.73 ms more a step.
    assert step.allreduce_s == pytest.approx(160 * 2 * 7 / 8 * 32 * 8192 * 2 / 200e9, rel=1e-9)


def test_sb8_critical_batch_by_weight_precision():
    # 1.97e14 FLOP/s / 8.19e11 B/s = 240.5 FLOP per byte: with 2-byte weights B* = 240, with 1-byte 120
    assert sb8().critical_batch == pytest.approx(120, rel=0.01)
    bf16 = Replica(LLAMA70, named("TPU v5e"), 16, hbm_efficiency=1.0)
    assert bf16.critical_batch == pytest.approx(240, rel=0.01)


def test_h100_weight_read_by_hand():
    # 70.55 B x 2 B = 141.1 GB over 4 x 3.35 TB/s at 80%: 13.16 ms before any KV
    r = Replica(LLAMA70, named("H100 SXM"), 4, hbm_efficiency=0.8)
    assert r.decode_step(0, 0).memory_s == pytest.approx(70_552_387_584 * 2 / (4 * 3.35e12 * 0.8), rel=1e-9)


def test_the_tensor_parallel_allreduce_by_hand():
    # Llama-3-70B, TP 8 on H100 (450 GB/s each way), batch 64: each all-reduce carries 64 x 8,192 x 2 B
    # = 1,048,576 B; a ring sends 2 x 7/8 of it over each link: 4.08 us, plus 6 us of fixed latency.
    r = Replica(LLAMA70, named("H100 SXM"), 8, allreduce_latency_s=6e-6)
    one = 2 * 7 / 8 * 64 * 8192 * 2 / 450e9 + 6e-6
    assert r.allreduce_s(64) == pytest.approx(80 * 2 * one, rel=1e-9)
    assert Replica(LLAMA70, named("H100 SXM"), 1).allreduce_s(64) == 0


def test_the_tpot_cap_meets_the_target_exactly():
    r = Replica(LLAMA70, named("H100 SXM"), 4, hbm_efficiency=0.8, decode_mfu=0.5, step_overhead_s=0.003,
                allreduce_latency_s=5e-6)
    cap = r.tpot_batch_cap(0.05, 2200)
    assert r.decode_step(cap, 2200).step_s == pytest.approx(0.05, rel=1e-9)
    assert r.decode_step(floor_batch(cap) + 1, 2200).step_s > 0.05 >= r.decode_step(floor_batch(cap), 2200).step_s


def test_a_custom_accelerator_runs_the_same_arithmetic():
    h100 = named("H100 SXM")
    described = custom(80, 3.35, 989, 1979, 1979, 450, 8, 400)
    a, b = Replica(LLAMA70, h100, 4), Replica(LLAMA70, described, 4)
    assert a.decode_step(32, 4096).step_s == pytest.approx(b.decode_step(32, 4096).step_s, rel=1e-12)
    assert not custom(80, 3.35, 989, 0, 0, 450, 8, 400).has("fp8")


def test_prefill_flops_count_the_attention_pairs():
    # 2,000 tokens after 1,000 cached: each new token attends to the cache and to the new tokens before it
    r = Replica(LLAMA70, named("H100 SXM"), 4)
    pairs = 2000 * 1000 + 2000 * 1999 / 2
    attention = 2 * 80 * 64 * (128 + 128)  # QK^T and AV, 2 FLOP a multiply-add
    assert r.prefill_flops(2000, 1000) == pytest.approx(2000 * 2 * LLAMA70.active_params + attention * pairs)


def test_switching_the_attention_term_off_gives_the_textbook_2pn():
    r = Replica(LLAMA70, named("H100 SXM"), 4, attention_flops=False)
    assert r.prefill_flops(2000, 1000) == 2 * LLAMA70.active_params * 2000


def test_a_missing_rate_is_a_message():
    with pytest.raises(ValueError, match="no dense fp8"):
        Replica(LLAMA70, named("A100 80GB"), 4, compute_fmt="fp8").peak_flops


def test_a_verify_pass_reads_once_and_computes_per_position():
    # Speculative verification of 4 drafts (5 positions) for 16 sequences at 2,000 tokens of context,
    # Llama-3-70B on 4 x H100 at 80% MBU and 50% decode MFU: the weights (141.1 GB) and each
    # sequence's KV (327,680 B x 2,000) are read once; every position costs 2 x 70.55 B + attention.
    r = Replica(LLAMA70, named("H100 SXM"), 4, hbm_efficiency=0.8, decode_mfu=0.5, step_overhead_s=1e-3,
                allreduce_latency_s=6e-6)
    read = 70_552_387_584 * 2 + 16 * 327_680 * 2000
    flop_per_token = 2 * 70_552_387_584 + 2 * 80 * 64 * 256 * 2000
    v = r.pass_step(16, 2000, positions=5)
    assert v.bytes_read == pytest.approx(read, rel=1e-12)
    assert v.memory_s == pytest.approx(read / (4 * 3.35e12 * 0.8), rel=1e-12)
    assert v.compute_s == pytest.approx(16 * 5 * flop_per_token / (4 * 989e12 * 0.5), rel=1e-12)
    # all-reduces over 80 tokens: 160 of them, 6 us + 2 x 3/4 x 80 x 8,192 x 2 B / 450 GB/s each
    assert v.allreduce_s == pytest.approx(160 * (6e-6 + 1.5 * 80 * 8192 * 2 / 450e9), rel=1e-12)
    assert v.step_s == pytest.approx(max(v.memory_s, v.compute_s) + v.allreduce_s + 1e-3, rel=1e-12)


def test_a_fused_chunk_adds_its_prefix_read_and_prefill_flops():
    # 32 sequences decoding at 3,000 tokens plus a 512-token prompt chunk starting at position 1,536:
    # the chunk reads the 1,536 tokens of KV before it once, and runs at the prefill MFU (60%).
    r = Replica(LLAMA70, named("H100 SXM"), 8, hbm_efficiency=0.8, decode_mfu=0.5, prefill_mfu=0.6)
    plain = r.decode_step(32, 3000)
    fused = r.pass_step(32, 3000, chunk_tokens=512, chunk_start=1536)
    assert fused.bytes_read - plain.bytes_read == pytest.approx(327_680 * 1536, rel=1e-12)
    pairs = 512 * 1536 + 512 * 511 / 2
    chunk_flops = 512 * 2 * 70_552_387_584 + 2 * 80 * 64 * 256 * pairs
    assert fused.compute_s - plain.compute_s == pytest.approx(chunk_flops / (8 * 989e12 * 0.6), rel=1e-9)
    assert fused.allreduce_s == pytest.approx(r.allreduce_s(32 + 512), rel=1e-12)


def test_the_step_lines_are_the_pass_at_every_batch():
    r = Replica(LLAMA70, named("H100 SXM"), 8, step_overhead_s=1.9e-3, allreduce_latency_s=6e-6)
    for kw in (dict(), dict(positions=4), dict(chunk_tokens=256, chunk_start=4000)):
        lines = r.step_lines(2400, **kw)
        for b in (0, 1, 3.5, 64, 900):
            assert lines.step_s(b) == pytest.approx(r.pass_step(b, 2400, **kw).step_s, rel=1e-12)
        # each side's cap lands that side exactly on the budget
        mem_cap, flop_cap = lines.caps(0.05)
        (m0, m1), (c0, c1) = lines.sides
        assert m0 + m1 * mem_cap == pytest.approx(0.05, rel=1e-12)
        assert c0 + c1 * flop_cap == pytest.approx(0.05, rel=1e-12)


def test_mla_decodes_absorbed_and_prefills_decompressed():
    # DeepSeek-V3: 61 layers, 128 heads, latent 512, RoPE key 64, nope and V head 128. Decode meets the
    # cached latent: 2 x 61 x 128 x ((512 + 64) + 512) = 16,990,208 FLOP per cached token; prefill runs
    # on decompressed K and V: 2 x 61 x 128 x ((128 + 64) + 128) = 4,997,120 (vLLM's two MLA paths).
    ds = Replica(with_counted_params(model("DeepSeek-V3")), named("H200"), 8, weight_fmt="fp8", compute_fmt="fp8")
    assert ds.decode_attention_flops_per_position == 2 * 61 * 128 * (512 + 64 + 512) == 16_990_208
    assert ds.attention_flops_per_position == 2 * 61 * 128 * (128 + 64 + 128) == 4_997_120
    step = ds.decode_step(10, 4000)
    assert step.flops == pytest.approx(10 * (2 * ds.model.active_params + 16_990_208 * 4000), rel=1e-12)
    assert ds.prefill_flops(100) == pytest.approx(100 * 2 * ds.model.active_params + 4_997_120 * 100 * 99 / 2)
    # grouped-query attention decodes as it prefills
    assert Replica(LLAMA70, named("H100 SXM"), 4).decode_attention_flops_per_position == 2 * 80 * 64 * 256
