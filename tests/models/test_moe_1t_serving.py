"""moe-1t-serving: the seed's figures (1T total, 32B active, 72 GPUs, a step from bandwidth and two
all-to-alls, a compressed cache, the cost of imbalance) worked by hand from published specs with
the engine's conventions, DeepEP's measured all-to-all entered on the page, and properties that
say which way each number must move."""

import math

import pytest
from hypothesis import assume, given, settings, strategies as st
from pydantic import ValidationError

from models.serving.moe_1t_serving import Params, solve


# Published shapes, typed here on purpose so the test does not lean on the code under test.
# Kimi K2: model card + config.json (61 layers, 1 dense, hidden 7168, 64 heads, q_lora 1536, kv_lora 512,
# rope 64, nope/v head 128, 384 routed + 1 shared experts of width 2048, top-8, dense MLP 18432, vocab 163840).
K2 = dict(layers=61, dense=1, d=7168, heads=64, q_lora=1536, latent=512, rope=64, hd=128, experts=384, shared=1,
          k=8, moe_ffn=2048, ffn=18432, vocab=163840)
# DeepSeek-V3: technical report section 4.2 + config.json (3 dense layers, 128 heads, 256 routed experts).
DSV3 = dict(layers=61, dense=3, d=7168, heads=128, q_lora=1536, latent=512, rope=64, hd=128, experts=256, shared=1,
            k=8, moe_ffn=2048, ffn=18432, vocab=129280)
GB200 = dict(mem=186e9, hbm=8e12, bf16=2500e12, fp8=5000e12, link=900e9, nic=400e9 / 8)  # NVL72 spec, per GPU
H200 = dict(mem=141e9, hbm=4.8e12, bf16=989e12, fp8=1979e12, link=450e9, nic=400e9 / 8)
# Engine defaults every serving page shares (models/engine/defaults.py, the accuracy page's fits): MBU 80%,
# decode MFU 50%, 1.9 ms per step, 90% usable HBM.
MBU, MFU, FIXED_S, USABLE = 0.8, 0.5, 1.9e-3, 0.9


def _counted(m):
    """Parameters matrix by matrix (no biases or norms): what the engine's shape count must give."""
    d = m["d"]
    emb = 2 * m["vocab"] * d
    attn = (d * m["q_lora"] + m["q_lora"] * m["heads"] * (m["hd"] + m["rope"]) + d * (m["latent"] + m["rope"])
            + m["latent"] * m["heads"] * (m["hd"] + m["hd"]) + m["heads"] * m["hd"] * d)
    expert_layer = 3 * d * m["moe_ffn"]
    router = d * m["experts"]
    moe_layers = m["layers"] - m["dense"]
    fixed = emb + m["layers"] * attn + m["dense"] * 3 * d * m["ffn"]
    total = fixed + moe_layers * ((m["experts"] + m["shared"]) * expert_layer + router)
    active = fixed + moe_layers * ((m["k"] + m["shared"]) * expert_layer + router)
    return total, active, expert_layer * moe_layers, moe_layers


def _by_hand(*, m, g, gpus, bpp, peak, b, ctx, imb, link, eff_link=0.7, lat_us=10.0, overlap=False,
             dispatch_bytes=1.0, kv_bpe=2.0):
    total, active, expert, moe_layers = _counted(m)
    always_on = active - m["k"] * expert
    slots = math.ceil(m["experts"] / gpus)
    w_gpu = slots * expert * bpp + always_on * bpp
    usable = USABLE * g["mem"]
    kv_tok = m["layers"] * (m["latent"] + m["rope"]) * kv_bpe
    bw = g["hbm"] * MBU
    touched = 1 - (1 - m["k"] / m["experts"]) ** (b * gpus)
    w_read = (always_on * bpp + slots * expert * bpp * touched) / bw
    kv_read = b * ctx * kv_tok / bw
    # MLA decode with absorbed up-projections: per head q.k over latent + rope, p.v over the latent
    attn_per_pos = 2 * m["layers"] * m["heads"] * (2 * m["latent"] + m["rope"])
    compute = b * (2 * active + (imb - 1) * 2 * m["k"] * expert + attn_per_pos * ctx) / (peak * MFU)
    a2a_bytes = moe_layers * imb * b * m["k"] * m["d"] * (dispatch_bytes + 2) * (gpus - 1) / gpus
    a2a = a2a_bytes / (link * eff_link) + 2 * moe_layers * lat_us * 1e-6
    memory = w_read + kv_read
    step = (max(memory, compute, a2a) if overlap else max(memory, compute) + a2a) + FIXED_S
    return dict(total=total, active=active, expert=expert, always_on=always_on, slots=slots, w_gpu=w_gpu,
                kv_tok=kv_tok, min_gpus=math.ceil(total * bpp / usable), w_read=w_read, kv_read=kv_read,
                compute=compute, a2a=a2a, a2a_bytes=a2a_bytes, step=step, tps=gpus * b / step, per_user=1 / step,
                max_batch=math.floor((usable - w_gpu) / (ctx * kv_tok)))


SEED = dict(m=K2, g=GB200, gpus=72, bpp=1, peak=GB200["fp8"], b=64, ctx=4000, imb=1.5, link=GB200["link"])


def test_seed_defaults_are_kimi_k2_on_one_gb200_nvl72_rack_in_fp8():
    p = Params()
    assert (p.model, p.gpu, p.tp_degree) == ("Kimi-K2 1T", "GB200 (NVL72)", 72)
    assert (p.weight_precision, p.compute_precision, p.kv_precision) == ("fp8", "fp8", "bf16")
    assert (p.hbm_efficiency, p.decode_mfu, p.step_overhead_ms, p.usable_hbm_fraction) == (0.8, 0.5, 1.9, 0.9)


def test_seed_one_trillion_total_32b_active_counted_from_the_shape():
    d = solve(Params())
    h = _by_hand(**SEED)
    assert d.value("model_params") == pytest.approx(h["total"], rel=1e-12)
    assert d.value("active_params") == pytest.approx(h["active"], rel=1e-12)
    # the card's rounded 1T and 32B: the count lands within 3%
    assert d.value("model_params") == pytest.approx(1e12, rel=0.03)
    assert d.value("active_params") == pytest.approx(32e9, rel=0.03)
    # one routed expert: 60 MoE layers x 3 x 7,168 x 2,048 = 2.642e9
    assert d.value("expert_params") == 60 * 3 * 7168 * 2048
    assert d.value("always_on_params") == pytest.approx(h["active"] - 8 * 60 * 3 * 7168 * 2048)


def test_assumption_the_weights_do_not_need_a_rack():
    # in FP8 the 1.026 TB fits on ceil(1.026e12 / (0.9 x 186e9)) = ceil(6.13) = 7 GB200s
    d = solve(Params())
    h = _by_hand(**SEED)
    assert d.value("weight_bytes") == pytest.approx(h["total"])
    assert d.value("min_gpus_for_weights_continuous") == pytest.approx(h["total"] / 167.4e9)
    assert d.value("min_gpus_for_weights") == 7
    # what the rack buys: on 7 GPUs each step reads 1.026e12 / 7 B at 8 TB/s x 0.8 = 6.4 TB/s: 22.9 ms,
    # plus 1.9 ms fixed, so no user beats 1 / 24.8 ms = 40.3 tokens/s
    assert d.value("weight_read_s_at_min_gpus") == pytest.approx(h["total"] / 7 / (8e12 * 0.8))
    assert d.value("tokens_per_s_per_user_ceiling_at_min_gpus") == pytest.approx(
        1 / (h["total"] / 7 / (8e12 * 0.8) + 1.9e-3))
    assert d.value("tokens_per_s_per_user_ceiling_at_min_gpus") == pytest.approx(40.3, abs=0.05)
    assert d.value("all_experts_read_s") == pytest.approx(h["w_gpu"] / (8e12 * 0.8))
    assert d.value("rack_sequences") > 50 * d.value("sequences_at_min_gpus")
    # in bf16 the handful doubles: ceil(2.053e12 / 167.4e9) = 13
    d16 = solve(Params(weight_precision="bf16", batch_per_gpu=8))
    assert d16.value("min_gpus_for_weights") == math.ceil(2 * h["total"] / 167.4e9) == 13


def test_seed_memory_plan_per_gpu():
    d = solve(Params())
    h = _by_hand(**SEED)
    # 384 experts over 72 GPUs: ceil = 6 slots per layer, 6 x 72 - 384 = 48 spare
    assert d.value("slots_per_gpu") == 6 and d.value("redundant_slots") == 48
    assert d.value("weight_bytes_per_gpu") == pytest.approx(h["w_gpu"])
    assert d.value("weight_bytes_per_gpu") == pytest.approx(27.58e9, rel=1e-3)
    assert d.value("kv_room_bytes_per_gpu") == pytest.approx(167.4e9 - h["w_gpu"])
    # (167.4e9 - 27.58e9) / (4,000 x 70,272 B) = 497.4
    assert d.value("max_batch_per_gpu") == h["max_batch"] == 497
    assert d.value("max_batch_per_gpu_continuous") == pytest.approx((167.4e9 - h["w_gpu"]) / (4000 * 70_272))


def test_seed_compressed_cache_against_gqa():
    d = solve(Params())
    # MLA: 61 layers x (512 + 64) x 2 B = 70,272 B; GQA-8: 2 x 61 x 8 x 128 x 2 B = 249,856 B
    assert d.value("kv_bytes_per_token") == 61 * 576 * 2 == 70_272
    assert d.value("gqa_kv_bytes_per_token") == 2 * 61 * 8 * 128 * 2 == 249_856
    assert d.value("mla_saving_vs_gqa") == pytest.approx(249_856 / 70_272)
    # an fp8 cache halves both
    d8 = solve(Params(kv_precision="fp8"))
    assert d8.value("kv_bytes_per_token") == 61 * 576 and d8.value("gqa_kv_bytes_per_token") == 2 * 61 * 8 * 128


def test_seed_decode_step_from_bandwidth_and_two_all_to_alls():
    d = solve(Params())
    h = _by_hand(**SEED)
    # at 72 x 64 = 4,608 tokens per step every expert is touched: the whole 27.58 GB is read
    assert d.value("experts_touched") == pytest.approx(1, abs=1e-8)
    assert d.value("weight_read_s") == pytest.approx(27.58e9 / (8e12 * 0.8), rel=1e-3)
    # KV: 64 x 4,000 x 70,272 B = 18.0 GB at 6.4 TB/s = 2.81 ms
    assert d.value("kv_read_s") == pytest.approx(64 * 4000 * 70_272 / (8e12 * 0.8))
    # FLOP, hottest GPU: 64 x (2 x 32.86e9 + 0.5 x 2 x 8 x 2.642e9 + 2 x 61 x 64 x 1,088 x 4,000) / 2.5e15
    assert d.value("attention_flops_per_position") == 2 * 61 * 64 * (2 * 512 + 64)
    assert d.value("compute_s") == pytest.approx(h["compute"], rel=1e-12)
    # two all-to-alls per MoE layer: 60 x 1.5 x 64 x 8 x 7,168 x (1 fp8 + 2 bf16) B x 71/72 = 977 MB over
    # 900 GB/s x 0.7, plus 120 x 10 us
    assert d.value("a2a_bytes") == pytest.approx(60 * 1.5 * 64 * 8 * 7168 * 3 * 71 / 72)
    assert d.value("all_to_all_s") == pytest.approx(977.14e6 / 630e9 + 120 * 10e-6, rel=1e-4)
    for key, ref in [("weight_read_s", "w_read"), ("kv_read_s", "kv_read"), ("compute_s", "compute"),
                     ("all_to_all_s", "a2a"), ("decode_step_s", "step"), ("tokens_per_s", "tps"),
                     ("tokens_per_s_per_user", "per_user")]:
        assert d.value(key) == pytest.approx(h[ref], rel=1e-9), key
    # bandwidth-bound: 4.31 + 2.81 = 7.12 ms of bytes against 3.09 ms of FLOP, plus 2.75 ms of all-to-all,
    # plus 1.9 ms fixed = 11.77 ms, so 85.0 tokens/s per user
    assert d.value("step_bound_by") == "bandwidth"
    assert d.value("decode_step_s") == pytest.approx(
        (h["w_gpu"] + 64 * 4000 * 70_272) / (8e12 * 0.8) + 977.14e6 / (900e9 * 0.7) + 120 * 10e-6 + 1.9e-3, rel=1e-5)
    assert d.value("decode_step_s") == pytest.approx(0.01177, abs=1e-5)
    assert d.value("tokens_per_s_per_user") == pytest.approx(85.0, abs=0.1)


def test_all_to_all_over_the_nic_is_ten_times_slower():
    d = solve(Params())
    # the same 977 MB over GB200's 400 Gb/s NIC (50 GB/s) at 70%: 27.9 ms + 1.2 ms
    assert d.value("all_to_all_over_nic_s") == pytest.approx(977.14e6 / (50e9 * 0.7) + 120e-5, rel=1e-4)
    nic = solve(Params(a2a_path="NIC (scale-out)"))
    assert nic.value("all_to_all_s") == pytest.approx(d.value("all_to_all_over_nic_s"))


def test_seed_what_imbalance_costs_in_each_phase():
    d = solve(Params())
    balanced = _by_hand(**{**SEED, "imb": 1.0})
    h = _by_hand(**SEED)
    assert d.value("imbalance_throughput_loss") == pytest.approx(1 - balanced["step"] / h["step"])
    # bandwidth-bound: only the extra all-to-all bytes show (the hot GPU's FLOP hide under memory)
    assert d.value("imbalance_throughput_loss") < 0.06
    # compute-bound limit: experts are 2 x 8 x 2.642e9 over (2 x 32.86e9 + 8.49e6 x 4,000) of a token's FLOP
    share = 2 * 8 * h["expert"] / (2 * h["active"] + 2 * 61 * 64 * 1088 * 4000)
    assert d.value("expert_compute_share") == pytest.approx(share)
    assert d.value("imbalance_loss_compute_bound") == pytest.approx(1 - 1 / (1 + 0.5 * share))
    full, full_bal = _by_hand(**{**SEED, "b": 497}), _by_hand(**{**SEED, "b": 497, "imb": 1.0})
    assert d.value("imbalance_loss_at_max_batch") == pytest.approx(1 - full_bal["step"] / full["step"])
    # per sequence the hottest GPU's FLOP (48.3 us) now outgrow its KV read at 6.4 TB/s (43.9 us), but the
    # 4.31 ms of resident weights take 4.31 ms / 4.42 us = 976 sequences to catch up: past the KV cap of 497
    c_seq = (2 * h["always_on"] + 1.5 * 2 * 8 * h["expert"] + 2 * 61 * 64 * 1088 * 4000) / 2.5e15
    kv_seq = 4000 * 70_272 / (8e12 * 0.8)
    assert d.value("compute_bound_batch_per_gpu") == pytest.approx(h["w_gpu"] / (8e12 * 0.8) / (c_seq - kv_seq))
    assert d.value("compute_bound_batch_per_gpu") == pytest.approx(975.6, abs=0.1)
    assert d.value("compute_bound_batch_per_gpu") > d.value("max_batch_per_gpu")
    # a shorter context tips it (KV read per sequence falls 3.2 times faster than attention FLOP:
    # 70,272 B / 6.4e12 B/s against 8.495e6 FLOP / 2.5e15 FLOP/s per token of context): compute-bound
    # below the cap, and the loss at the cap outgrows the seed's
    hot = solve(Params(imbalance=2.0, context_tokens=1000, batch_per_gpu=32))
    assert math.isfinite(hot.value("compute_bound_batch_per_gpu"))
    assert hot.value("imbalance_loss_at_max_batch") > 2 * d.value("imbalance_loss_at_max_batch")


def test_variant_deepseek_v3_on_eight_h200s_fp8_weights_bf16_compute_overlapped():
    # weight-only fp8: the weights' bytes halve, the GEMMs and the dispatch stay bf16
    p = Params(model="DeepSeek-V3", gpu="H200", tp_degree=8, weight_precision="fp8", compute_precision="bf16",
               batch_per_gpu=32, context_tokens=2000, imbalance=2.0, overlap_a2a=True, a2a_latency_us=20)
    d = solve(p)
    h = _by_hand(m=DSV3, g=H200, gpus=8, bpp=1, peak=H200["bf16"], b=32, ctx=2000, imb=2.0, link=H200["link"],
                 lat_us=20, overlap=True, dispatch_bytes=2.0)
    # 256 / 8 = 32 slots per GPU, none spare; 58 MoE layers; 32 x 2.554e9 B + 17.1e9 B always-on = 98.9 GB
    assert d.value("slots_per_gpu") == 32 and d.value("redundant_slots") == 0
    assert d.value("weight_bytes_per_gpu") == pytest.approx(32 * 58 * 3 * 7168 * 2048 + h["always_on"])
    # in bf16 even one copy, 1,342 GB, overflows the 8 x 126.9 GB: refused by the engine in a sentence
    with pytest.raises(ValidationError, match="1,342 GB of weights"):
        Params(**{**p.model_dump(), "weight_precision": "bf16"})
    assert d.value("moe_layers") == 58
    assert d.value("weight_bytes_per_gpu") == pytest.approx(h["w_gpu"])
    for key, ref in [("weight_read_s", "w_read"), ("kv_read_s", "kv_read"), ("compute_s", "compute"),
                     ("all_to_all_s", "a2a"), ("decode_step_s", "step"), ("tokens_per_s", "tps"),
                     ("tokens_per_s_per_user", "per_user")]:
        assert d.value(key) == pytest.approx(h[ref], rel=1e-9), key
    assert d.value("decode_step_s") == pytest.approx(max(h["w_read"] + h["kv_read"], h["compute"], h["a2a"]) + 1.9e-3)


def test_worked_problem_deepep_low_latency_all_to_all_at_ep64():
    # DeepEP README (github.com/deepseek-ai/DeepEP), low-latency kernels with pure RDMA: H800 GPUs, each on
    # a CX7 InfiniBand 400 Gb/s NIC (~50 GB/s), "a typical DeepSeek-V3/R1 production setting (128 tokens
    # per batch, 7168 hidden, top-8 experts, FP8 dispatching and BF16 combining)". At EP 64 it measures
    # dispatch 173 us at 43 GB/s and combine 314 us at 46 GB/s, per MoE layer.
    # The page: DeepSeek-V3 over 64 H800-class GPUs (typed in: the catalog's H800 board is an 8-GPU
    # domain), 128 sequences per GPU, fp8 compute (fp8 dispatch), all-to-all over the NIC.
    h800_ep64 = dict(gpu="Custom", custom_hbm_GB=80, custom_hbm_TBps=3.35, custom_bf16_TFLOPs=989,
                     custom_fp8_TFLOPs=1979, custom_link_GBps=200, custom_domain=64, custom_nic_Gbps=400)
    # the measured bytes per layer: 43e9 x 173e-6 + 46e9 x 314e-6 = 7.44 MB + 14.44 MB = 21.88 MB,
    # achieved over 487 us: 44.9 GB/s, 90% of the NIC's 50 GB/s
    measured_bytes = 43e9 * 173e-6 + 46e9 * 314e-6
    eff = measured_bytes / 487e-6 / 50e9
    p = Params(model="DeepSeek-V3", tp_degree=64, weight_precision="fp8", compute_precision="fp8",
               batch_per_gpu=128, context_tokens=2000, imbalance=1.0, a2a_path="NIC (scale-out)",
               a2a_efficiency=round(eff, 2), a2a_latency_us=1, **h800_ep64)
    d = solve(p)
    # the page's bytes from the source's inputs: 128 x 8 x 7,168 x (1 + 2) B x 63/64 = 21.67 MB per layer,
    # within 1% of what DeepEP moved (its FP8 dispatch also carries one fp32 scale per 128 elements)
    per_layer = 128 * 8 * 7168 * 3 * 63 / 64
    assert d.value("a2a_bytes") == pytest.approx(58 * per_layer)
    assert per_layer == pytest.approx(measured_bytes, rel=0.015)
    # and the time per layer matches the measured dispatch + combine, 487 us, within 2%
    assert d.value("all_to_all_s") / 58 == pytest.approx(173e-6 + 314e-6, rel=0.02)
    # 58 layers of it is 28 ms a step: why DeepSeek overlaps two micro-batches
    assert d.value("all_to_all_s") == pytest.approx(58 * 487e-6, rel=0.02)


def test_small_group_touches_fewer_experts_at_batch_one():
    d = solve(Params(tp_degree=8, batch_per_gpu=1))
    # 8 tokens x 8 picks over 384 experts: 1 - (376/384)^8 = 15.5% of resident experts read
    assert d.value("experts_touched") == pytest.approx(1 - (376 / 384) ** 8)


def test_kv_that_does_not_fit_is_refused_in_plain_words():
    with pytest.raises(ValidationError, match="room for 497 sequences"):
        Params(batch_per_gpu=600)


@pytest.mark.parametrize("kw, words", [
    (dict(model="Llama-3-70B"), "is dense"),
    (dict(model="Custom"), "is dense"),
    (dict(gpu="H200"), "scale-up domain"),
    (dict(gpu="TPU v5e", tp_degree=64), "no dense fp8"),
    (dict(tp_degree=4), "1,026 GB of weights"),
    # one copy fits 8 x 130.5 GB, but every GPU also keeps the 11.7 GB always-on copy: 138.6 GB each
    (dict(gpu="Custom", custom_hbm_GB=145, custom_domain=72, tp_degree=8), "138.6|139 GB of weights on each"),
])
def test_scenarios_the_page_cannot_run_are_refused_with_a_sentence(kw, words):
    with pytest.raises(ValidationError, match=words):
        Params(**kw)


@pytest.mark.parametrize("kw", [
    dict(model="Mixtral-8x7B", batch_per_gpu=8),
    dict(model="DeepSeek-V3"),
    dict(gpu="B200", tp_degree=8, batch_per_gpu=8),
    dict(gpu="TPU v5p", tp_degree=64, compute_precision="bf16", batch_per_gpu=8),
    dict(model="Custom", custom_experts=64, custom_experts_per_token=4, custom_moe_ffn_dim=1024, tp_degree=8,
         batch_per_gpu=8),
    dict(attention_flops=False),
])
def test_other_mixtures_and_parts_run(kw):
    d = solve(Params(**kw))
    assert math.isfinite(d.value("decode_step_s")) and d.value("decode_step_s") > 1.9e-3


# --- properties -------------------------------------------------------------------------------


def _cap(**kw) -> int:
    return solve(Params(batch_per_gpu=1, **kw)).value("max_batch_per_gpu")


@settings(max_examples=60, deadline=None)
@given(a=st.integers(1, 497), b=st.integers(1, 497))
def test_bigger_batches_trade_user_speed_for_rack_throughput(a, b):
    lo, hi = sorted((a, b))
    d_lo, d_hi = solve(Params(batch_per_gpu=lo)), solve(Params(batch_per_gpu=hi))
    assert d_hi.value("tokens_per_s") >= d_lo.value("tokens_per_s") * (1 - 1e-12)
    assert d_hi.value("tokens_per_s_per_user") <= d_lo.value("tokens_per_s_per_user") * (1 + 1e-12)
    assert d_hi.value("experts_touched") >= d_lo.value("experts_touched")


@settings(max_examples=60, deadline=None)
@given(a=st.floats(1, 4), b=st.floats(1, 4), batch=st.integers(1, 497))
def test_more_imbalance_never_helps(a, b, batch):
    lo, hi = sorted((a, b))
    d_lo, d_hi = solve(Params(imbalance=lo, batch_per_gpu=batch)), solve(Params(imbalance=hi, batch_per_gpu=batch))
    assert d_hi.value("decode_step_s") >= d_lo.value("decode_step_s")
    assert d_hi.value("imbalance_throughput_loss") >= d_lo.value("imbalance_throughput_loss") - 1e-9
    assert d_hi.value("imbalance_loss_compute_bound") >= d_lo.value("imbalance_loss_compute_bound") - 1e-9


@settings(max_examples=40, deadline=None)
@given(batch=st.integers(1, 497))
def test_balanced_routing_costs_nothing(batch):
    d = solve(Params(imbalance=1.0, batch_per_gpu=batch))
    assert d.value("imbalance_throughput_loss") == pytest.approx(0, abs=1e-9)


@settings(max_examples=60, deadline=None)
@given(batch=st.integers(1, 497), imb=st.floats(1, 4), overlap=st.booleans())
def test_step_is_at_least_each_part_plus_the_fixed_cost_and_overlap_never_slower(batch, imb, overlap):
    d = solve(Params(batch_per_gpu=batch, imbalance=imb, overlap_a2a=overlap))
    step = d.value("decode_step_s")
    for key in ("memory_s", "compute_s", "all_to_all_s"):
        assert step >= d.value(key) + 1.9e-3 - 1e-15
    assert d.value("decode_step_if_overlapped_s") <= step + 1e-15


@settings(max_examples=30, deadline=None)
@given(a=st.sampled_from([8, 16, 32, 64, 72]), b=st.sampled_from([8, 16, 32, 64, 72]))
def test_more_gpus_never_put_more_weights_on_each(a, b):
    lo, hi = sorted((a, b))
    assume(_cap(tp_degree=lo) >= 1)
    d_lo, d_hi = solve(Params(tp_degree=lo, batch_per_gpu=1)), solve(Params(tp_degree=hi, batch_per_gpu=1))
    assert d_hi.value("weight_bytes_per_gpu") <= d_lo.value("weight_bytes_per_gpu")
    assert d_hi.value("rack_sequences") >= d_lo.value("rack_sequences")


@settings(max_examples=40, deadline=None)
@given(heads=st.integers(1, 64))
def test_gqa_comparison_scales_with_kv_heads(heads):
    d = solve(Params(gqa_kv_heads=heads))
    assert d.value("mla_saving_vs_gqa") == pytest.approx(2 * 61 * heads * 128 * 2 / 70_272)


def test_all_to_all_latency_sensitivity_at_deepeps_measured_time():
    # DeepEP legacy README, low-latency kernels (H800, EP 8, 128 tokens, pure RDMA): dispatch 77 us,
    # combine 114 us, so 95.5 us for a mean all-to-all against the seed's 10 us.
    d = solve(Params())
    lat = (77 + 114) / 2
    assert d.value("deepep_a2a_latency_s") == pytest.approx(95.5e-6)
    # Kimi K2 has 61 layers, 1 dense: 60 MoE layers x 2 all-to-alls x 95.5 us = 11.46 ms a step
    assert d.value("a2a_latency_floor_at_deepep_s") == pytest.approx(2 * 60 * 95.5e-6)
    h = _by_hand(**SEED, lat_us=lat)
    assert d.value("all_to_all_at_deepep_s") == pytest.approx(h["a2a"], rel=1e-9)
    assert d.value("decode_step_at_deepep_s") == pytest.approx(h["step"], rel=1e-9)
    assert d.value("tokens_per_s_per_user_at_deepep") == pytest.approx(h["per_user"], rel=1e-9)
    assert d.value("tokens_per_s_at_deepep") == pytest.approx(h["tps"], rel=1e-9)
    assert d.value("a2a_floor_share_at_deepep") == pytest.approx(2 * 60 * 95.5e-6 / h["step"])
    # the seed's 10 us is the optimistic end: the measured time nearly halves per-user speed
    assert d.value("tokens_per_s_per_user_at_deepep") < 0.6 * d.value("tokens_per_s_per_user")


def test_nvlink_and_no_overlap_variants_by_hand():
    # draw-like scenario: the all-to-all over the NIC, with two-batch overlap on
    p = Params(a2a_path="NIC (scale-out)", overlap_a2a=True)
    d = solve(p)
    nic = _by_hand(**{**SEED, "link": GB200["nic"]}, overlap=True)
    nvl = _by_hand(**SEED)
    # 900 GB/s NVLink per direction vs 50 GB/s NIC: the same bytes, 18x the rate
    assert d.value("all_to_all_over_nvlink_s") == pytest.approx(nvl["a2a"], rel=1e-9)
    assert d.value("all_to_all_s") == pytest.approx(nic["a2a"], rel=1e-9)
    assert d.value("decode_step_s") == pytest.approx(nic["step"], rel=1e-9)
    serial = max(nic["w_read"] + nic["kv_read"], nic["compute"]) + nic["a2a"] + FIXED_S
    assert d.value("decode_step_no_overlap_s") == pytest.approx(serial, rel=1e-9)


def test_the_charts_end_and_the_group_name_by_hand():
    # the seed: 497 whole sequences of 4,000 tokens fit a GPU's KV room, above its batch of 64
    d = solve(Params())
    assert d.value("batch_chart_to") == max(2, d.value("max_batch_per_gpu"), 64) == d.value("max_batch_per_gpu")
    assert d.value("serving_group") == "GB200 NVL72: 72 GPUs, one NVLink domain"
    # a batch above the KV's cap is refused, so the charts end at the cap, never below the knob's 2
    short = solve(Params(context_tokens=500, batch_per_gpu=256, output_tokens=200))
    assert short.value("batch_chart_to") == max(2, short.value("max_batch_per_gpu"), 256)
    assert solve(Params(gpu="B200", tp_degree=8)).value("serving_group") == "8 × B200"


def test_model_card_rounding_names_the_drawn_model():
    assert solve(Params()).value("model_card_counts") == "the model card rounds them to 1T and 32B"
    dsv3 = solve(Params(model="DeepSeek-V3", gpu="H200", tp_degree=8))
    assert dsv3.value("model_card_counts") == "the model card rounds them to 671B and 37B"


def test_prefill_gpus_that_feed_the_rack_by_hand():
    d = solve(Params())
    h = _by_hand(**SEED)
    # a reply of 1,000 tokens at an average context of 4,000: the prompt is 4,000 - 1,000 / 2 = 3,500
    assert d.value("prompt_tokens") == 3500
    # the rack finishes 72 x 64 / step / 1,000 requests a second (391.5 at the seed)
    req = 72 * 64 / h["step"] / 1000
    assert d.value("requests_per_s") == pytest.approx(req)
    assert req == pytest.approx(391.5, abs=0.1)
    # prefill attends on decompressed K and V: 2 FLOP x 61 layers x 64 heads x ((128 + 64) + 128) per pair
    attn = 2 * 61 * 64 * (128 + 64 + 128)
    assert d.value("prefill_attention_flops_per_position") == attn == 2_498_560
    flops = 3500 * 2 * h["active"] + attn * 3500 * 3499 / 2
    assert d.value("prefill_flops_per_request") == pytest.approx(flops)
    # one GB200 at 5 PFLOP/s fp8 x 60% prefill MFU = 3 PFLOP/s
    assert d.value("gpu_prefill_flops") == pytest.approx(3e15)
    gpu_s = flops / 3e15
    assert d.value("prefill_gpu_s_per_request") == pytest.approx(gpu_s)
    assert d.value("prefill_tokens_per_s_per_gpu") == pytest.approx(3500 / gpu_s)
    assert d.value("prefill_gpus_continuous") == pytest.approx(req * gpu_s)
    assert d.value("prefill_gpus") == math.ceil(req * gpu_s) == 33
    assert d.value("prefill_gpus_per_decode_gpu") == pytest.approx(req * gpu_s / 72)
    # SGLang measured 18,471 prompt tokens/s per GB200 (DeepSeek, BF16 attention, FP8 MoE)
    assert d.value("prefill_roofline_over_measured") == pytest.approx(3500 / gpu_s / 18_471)
    assert d.value("prefill_gpus_at_measured_rate") == math.ceil(req * 3500 / 18_471) == 75
    # the hand-off: 3,500 x 70,272 B = 246 MB a prompt, spread over 72 decode GPUs, against 50 GB/s NICs
    assert d.value("kv_handoff_bytes_per_request") == 3500 * 70_272
    assert d.value("kv_handoff_Bps_per_decode_gpu") == pytest.approx(req * 3500 * 70_272 / 72)
    assert d.value("kv_handoff_nic_share") == pytest.approx(req * 3500 * 70_272 / 72 / 50e9)


def test_measured_decode_sits_between_this_batch_and_the_kv_cap():
    d = solve(Params())
    here = 64 / _by_hand(**SEED)["step"]
    at_cap = 497 / _by_hand(**{**SEED, "b": 497})["step"]
    assert d.value("tokens_per_s_per_gpu_at_max_batch") == pytest.approx(at_cap)
    assert d.value("sglang_decode_tokens_per_s_per_gpu") == 9_087
    # 5,437 < 9,087 < 12,039 tokens/s per GPU
    assert here < 9_087 < at_cap
    assert d.value("measured_decode_vs_model") == "between the two"
    assert solve(Params(batch_per_gpu=497)).value("measured_decode_vs_model") == "below both"


def test_a_reply_longer_than_twice_the_context_is_refused():
    with pytest.raises(ValidationError, match="leaves no prompt"):
        Params(context_tokens=1000, output_tokens=2000)
