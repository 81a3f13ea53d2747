"""moe-1t-serving: the seed's figures (1T total, 32B active, 72 GPUs, a step from bandwidth and two
all-to-alls, a compressed cache, the cost of imbalance) worked by hand from published specs, a
hand-worked variant, and properties that say which way each number must move."""

import math
import statistics
import time

import pytest
from hypothesis import assume, given, settings, strategies as st
from pydantic import ValidationError

from models.content import PLACEHOLDER
from models.core import knobs_of
from models.registry import QUESTIONS
from models.serving.moe_1t_serving import Params, solve

SLUG = "moe-1t-serving"

# Published figures, typed here on purpose so the test does not lean on the code under test.
K2 = dict(total=1.0e12, active=32e9, experts=384, k=8, layers=61, moe_layers=60, d_model=7168, heads=64,
          head_dim=128, latent=512, rope=64)  # Kimi K2 model card / config.json
DSV3 = dict(total=671e9, active=37e9, experts=256, k=8, layers=61, moe_layers=58, d_model=7168, heads=128,
            head_dim=128, latent=512, rope=64)  # DeepSeek-V3 technical report
B200 = dict(mem=180e9, hbm=8e12, bf16=2250e12, fp8=4500e12)  # DGX B200 datasheet, per GPU, dense
H200 = dict(mem=141e9, hbm=4.8e12, bf16=989e12, fp8=1979e12)
NVLINK5_ONE_WAY = 900e9  # 1.8 TB/s bidirectional per GPU
NVLINK4_ONE_WAY = 450e9


def _by_hand(*, m, g, gpus, bpp, peak, b, ctx, imb, link, eff_link=0.7, lat_us=10.0, overlap=False, hbm_eff=0.7,
             mfu=0.5):
    expert = (m["total"] - m["active"]) / (m["experts"] - m["k"])
    always_on = m["active"] - m["k"] * expert
    slots = math.ceil(m["experts"] / gpus)
    w_gpu = slots * expert * bpp + always_on * bpp
    usable = 0.9 * g["mem"]
    kv_tok = m["layers"] * (m["latent"] + m["rope"]) * 2
    bw = g["hbm"] * hbm_eff
    touched = 1 - (1 - m["k"] / m["experts"]) ** (b * gpus)
    w_read = (always_on * bpp + slots * expert * bpp * touched) / bw
    kv_read = b * ctx * kv_tok / bw
    attn_per_pos = 2 * m["layers"] * m["heads"] * (2 * m["latent"] + m["rope"])
    compute = b * (2 * always_on + imb * 2 * m["k"] * expert) / (peak * mfu) + b * attn_per_pos * ctx / (g["bf16"] * mfu)
    a2a_bytes = m["moe_layers"] * imb * b * m["k"] * m["d_model"] * (bpp + 2) * (gpus - 1) / gpus
    a2a = a2a_bytes / (link * eff_link) + 2 * m["moe_layers"] * lat_us * 1e-6
    memory = w_read + kv_read
    step = max(memory, compute, a2a) if overlap else max(memory, compute) + a2a
    return dict(expert=expert, always_on=always_on, slots=slots, w_gpu=w_gpu, kv_tok=kv_tok,
                min_gpus=math.ceil(m["total"] * bpp / usable), w_read=w_read, kv_read=kv_read, compute=compute,
                a2a=a2a, step=step, tps=gpus * b / step, per_user=1 / step,
                max_batch=math.floor((usable - w_gpu) / (ctx * kv_tok)))


SEED = dict(m=K2, g=B200, gpus=72, bpp=1, peak=B200["fp8"], b=64, ctx=4000, imb=1.5, link=NVLINK5_ONE_WAY)


def test_seed_one_trillion_total_32b_active_on_72_gpus():
    d = solve(Params())
    assert d.value("total_params") == 1e12 and d.value("active_params") == 32e9 and Params().gpus == 72
    # one routed expert: (1e12 - 32e9) / (384 - 8) = 2.574e9 parameters over the 60 MoE layers, i.e.
    # 42.9M per layer: 3 x 7,168 x 2,048 = 44.0M in the config, so the catalog totals are consistent
    assert d.value("expert_params") == pytest.approx(968e9 / 376)
    assert d.value("expert_params") / 60 == pytest.approx(3 * 7168 * 2048, rel=0.03)
    # always-on: 32e9 - 8 x 2.574e9 = 11.4e9
    assert d.value("always_on_params") == pytest.approx(32e9 - 8 * 968e9 / 376)


def test_assumption_the_weights_do_not_need_a_rack():
    # "The weights need a rack" is loose: in FP8 the 1 TB fits on ceil(1e12 / (0.9 x 180e9)) = 7 B200s.
    d = solve(Params())
    assert d.value("total_weight_bytes") == 1e12
    assert d.value("min_gpus_for_weights") == math.ceil(1e12 / 162e9) == 7
    # what the rack buys: on 7 GPUs each step reads 1e12 / 7 B at 5.6 TB/s = 25.5 ms (<= 39 tokens/s per user)
    assert d.value("weight_read_s_at_min_gpus") == pytest.approx(1e12 / 7 / 5.6e12)
    assert d.value("tokens_per_s_per_user_ceiling_at_min_gpus") == pytest.approx(5.6e12 * 7 / 1e12)
    # ...against 26.85 GB per GPU on the rack (4.8 ms), and 70x the KV room
    assert d.value("all_experts_read_s") == pytest.approx((6 * 968e9 / 376 + (32e9 - 8 * 968e9 / 376)) / 5.6e12)
    assert d.value("rack_sequences") > 50 * d.value("sequences_at_min_gpus")
    # in bf16 the handful doubles
    assert solve(Params(weight_precision="bf16", batch_per_gpu=8)).value("min_gpus_for_weights") == math.ceil(2e12 / 162e9)


def test_seed_memory_plan_per_gpu():
    d = solve(Params())
    h = _by_hand(**SEED)
    # 384 experts over 72 GPUs: ceil = 6 slots per layer, 6 x 72 - 384 = 48 spare
    assert d.value("slots_per_gpu") == 6 and d.value("redundant_slots") == 48
    assert d.value("weight_bytes_per_gpu") == pytest.approx(h["w_gpu"])
    assert d.value("weight_bytes_per_gpu") == pytest.approx(26.85e9, rel=1e-3)
    assert d.value("kv_room_bytes_per_gpu") == pytest.approx(162e9 - h["w_gpu"])
    assert d.value("max_batch_per_gpu") == h["max_batch"] == 480


def test_seed_compressed_cache_against_gqa():
    d = solve(Params())
    # MLA: 61 layers x (512 + 64) x 2 B = 70,272 B; GQA-8: 2 x 61 x 8 x 128 x 2 B = 249,856 B
    assert d.value("kv_bytes_per_token") == 61 * 576 * 2 == 70_272
    assert d.value("gqa_kv_bytes_per_token") == 2 * 61 * 8 * 128 * 2 == 249_856
    assert d.value("mla_saving_vs_gqa") == pytest.approx(249_856 / 70_272)


def test_seed_decode_step_from_bandwidth_and_two_all_to_alls():
    d = solve(Params())
    h = _by_hand(**SEED)
    # at 72 x 64 = 4,608 tokens per step every expert is touched: the whole 26.85 GB is read
    assert d.value("experts_touched") == pytest.approx(100, abs=1e-6)
    assert d.value("weight_read_s") == pytest.approx(26.85e9 / 5.6e12, rel=1e-3)
    # KV: 64 x 4,000 x 70,272 B = 18.0 GB at 5.6 TB/s = 3.2 ms
    assert d.value("kv_read_s") == pytest.approx(64 * 4000 * 70_272 / 5.6e12)
    # two all-to-alls per MoE layer: 60 x 1.5 x 64 x 8 x 7,168 x (1 + 2) B x 71/72 = 977 MB over
    # 630 GB/s, plus 120 x 10 us
    assert d.value("a2a_bytes") == pytest.approx(60 * 1.5 * 64 * 8 * 7168 * 3 * 71 / 72)
    assert d.value("all_to_all_s") == pytest.approx(977.14e6 / 630e9 + 120 * 10e-6, rel=1e-4)
    for key, ref in [("weight_read_s", "w_read"), ("kv_read_s", "kv_read"), ("compute_s", "compute"),
                     ("all_to_all_s", "a2a"), ("decode_step_s", "step"), ("tokens_per_s", "tps"),
                     ("tokens_per_s_per_user", "per_user")]:
        assert d.value(key) == pytest.approx(h[ref], rel=1e-9), key
    # bandwidth-bound: 4.8 + 3.2 = 8.0 ms of bytes against 4.3 ms of FLOP, plus 2.75 ms of all-to-all
    assert d.value("step_bound_by") == "bandwidth"
    assert d.value("decode_step_s") == pytest.approx(0.01076, abs=1e-5)
    assert d.value("tokens_per_s_per_user") == pytest.approx(93, abs=0.5)


def test_seed_what_imbalance_costs_in_each_phase():
    d = solve(Params())
    balanced = _by_hand(**{**SEED, "imb": 1.0})
    h = _by_hand(**SEED)
    assert d.value("imbalance_throughput_loss") == pytest.approx(100 * (1 - balanced["step"] / h["step"]))
    # bandwidth-bound: only the extra all-to-all bytes show (the hot GPU's FLOP hide under memory)
    assert d.value("imbalance_throughput_loss") < 6
    # compute-bound limit: experts are 31% of a token's compute; 1 - 1 / (1 + 0.5 x 0.31) = 13.5%
    share = d.value("expert_compute_share") / 100
    assert d.value("imbalance_loss_compute_bound") == pytest.approx(100 * (1 - 1 / (1 + 0.5 * share)))
    # at the KV cap (480 per GPU) the step is compute-bound and the loss is far larger
    full, full_bal = _by_hand(**{**SEED, "b": 480}), _by_hand(**{**SEED, "b": 480, "imb": 1.0})
    assert d.value("imbalance_loss_at_max_batch") == pytest.approx(100 * (1 - full_bal["step"] / full["step"]))
    assert d.value("imbalance_loss_at_max_batch") > 3 * d.value("imbalance_throughput_loss")


def test_variant_deepseek_v3_on_32_h200s_bf16_overlapped():
    p = Params(model="DeepSeek-V3", gpu="H200", gpus=32, weight_precision="bf16", batch_per_gpu=32,
               context_tokens=2000, imbalance=2.0, a2a_link="NVLink4", overlap_a2a=True, a2a_latency_us=20)
    d = solve(p)
    h = _by_hand(m=DSV3, g=H200, gpus=32, bpp=2, peak=H200["bf16"], b=32, ctx=2000, imb=2.0, link=NVLINK4_ONE_WAY,
                 lat_us=20, overlap=True)
    # (671e9 - 37e9) / (256 - 8) = 2.556e9 per expert; 8 slots per GPU in bf16 = 40.9 GB; always-on 33.1 GB
    assert d.value("slots_per_gpu") == 8 and d.value("redundant_slots") == 0
    assert d.value("weight_bytes_per_gpu") == pytest.approx(h["w_gpu"])
    assert d.value("min_gpus_for_weights") == h["min_gpus"] == math.ceil(1342e9 / 126.9e9)  # 11
    assert d.value("moe_layers") == 58
    for key, ref in [("weight_read_s", "w_read"), ("kv_read_s", "kv_read"), ("compute_s", "compute"),
                     ("all_to_all_s", "a2a"), ("decode_step_s", "step"), ("tokens_per_s", "tps"),
                     ("tokens_per_s_per_user", "per_user")]:
        assert d.value(key) == pytest.approx(h[ref], rel=1e-9), key
    assert d.value("decode_step_s") == pytest.approx(max(h["w_read"] + h["kv_read"], h["compute"], h["a2a"]))


def test_small_group_touches_fewer_experts_at_batch_one():
    d = solve(Params(gpus=8, batch_per_gpu=1))
    # 8 tokens x 8 picks over 384 experts: 1 - (376/384)^8 = 15.5% of resident experts read
    assert d.value("experts_touched") == pytest.approx(100 * (1 - (376 / 384) ** 8))


def test_kv_that_does_not_fit_is_refused_in_plain_words():
    with pytest.raises(ValidationError, match="room for 480 sequences"):
        Params(batch_per_gpu=600)


# --- properties -------------------------------------------------------------------------------


def _cap(**kw) -> int:
    return solve(Params(batch_per_gpu=1, **kw)).value("max_batch_per_gpu")


@settings(max_examples=60, deadline=None)
@given(a=st.integers(1, 480), b=st.integers(1, 480))
def test_bigger_batches_trade_user_speed_for_rack_throughput(a, b):
    lo, hi = sorted((a, b))
    d_lo, d_hi = solve(Params(batch_per_gpu=lo)), solve(Params(batch_per_gpu=hi))
    assert d_hi.value("tokens_per_s") >= d_lo.value("tokens_per_s") * (1 - 1e-12)
    assert d_hi.value("tokens_per_s_per_user") <= d_lo.value("tokens_per_s_per_user") * (1 + 1e-12)
    assert d_hi.value("experts_touched") >= d_lo.value("experts_touched")


@settings(max_examples=60, deadline=None)
@given(a=st.floats(1, 4), b=st.floats(1, 4), batch=st.integers(1, 480))
def test_more_imbalance_never_helps(a, b, batch):
    lo, hi = sorted((a, b))
    d_lo, d_hi = solve(Params(imbalance=lo, batch_per_gpu=batch)), solve(Params(imbalance=hi, batch_per_gpu=batch))
    assert d_hi.value("decode_step_s") >= d_lo.value("decode_step_s")
    assert d_hi.value("imbalance_throughput_loss") >= d_lo.value("imbalance_throughput_loss") - 1e-9
    assert d_hi.value("imbalance_loss_compute_bound") >= d_lo.value("imbalance_loss_compute_bound") - 1e-9


@settings(max_examples=40, deadline=None)
@given(batch=st.integers(1, 480))
def test_balanced_routing_costs_nothing(batch):
    d = solve(Params(imbalance=1.0, batch_per_gpu=batch))
    assert d.value("imbalance_throughput_loss") == pytest.approx(0, abs=1e-9)


@settings(max_examples=60, deadline=None)
@given(batch=st.integers(1, 480), imb=st.floats(1, 4), overlap=st.booleans())
def test_step_is_at_least_each_part_and_overlap_never_slower(batch, imb, overlap):
    d = solve(Params(batch_per_gpu=batch, imbalance=imb, overlap_a2a=overlap))
    step = d.value("decode_step_s")
    for key in ("memory_s", "compute_s", "all_to_all_s"):
        assert step >= d.value(key) - 1e-15
    assert d.value("decode_step_if_overlapped_s") <= step + 1e-15


@settings(max_examples=40, deadline=None)
@given(a=st.integers(16, 72), b=st.integers(16, 72))
def test_more_gpus_never_put_more_weights_on_each(a, b):
    lo, hi = sorted((a, b))
    assume(_cap(gpus=lo) >= 1)
    d_lo, d_hi = solve(Params(gpus=lo, batch_per_gpu=1)), solve(Params(gpus=hi, batch_per_gpu=1))
    assert d_hi.value("weight_bytes_per_gpu") <= d_lo.value("weight_bytes_per_gpu")
    assert d_hi.value("rack_sequences") >= d_lo.value("rack_sequences")


@settings(max_examples=40, deadline=None)
@given(heads=st.integers(1, 64))
def test_gqa_comparison_scales_with_kv_heads(heads):
    d = solve(Params(gqa_kv_heads=heads))
    assert d.value("mla_saving_vs_gqa") == pytest.approx(2 * 61 * heads * 128 * 2 / 70_272)


# --- contract ---------------------------------------------------------------------------------

KEY_FIGURES = {
    "weight_bytes_per_gpu": "B", "min_gpus_for_weights": "1", "kv_bytes_per_token": "B", "weight_read_s": "s",
    "kv_read_s": "s", "all_to_all_s": "s", "decode_step_s": "s", "tokens_per_s": "1/s",
    "tokens_per_s_per_user": "1/s", "imbalance_throughput_loss": "%",
}


def test_issue_key_figures_exist_with_units():
    d = solve(Params())
    for key, unit in KEY_FIGURES.items():
        assert key in d, key
        assert d[key].unit == unit, (key, d[key].unit)


def test_every_placeholder_and_drill_resolves():
    q = QUESTIONS[SLUG]
    d = solve(Params())
    names = set(d.keys()) | set(knobs_of(Params))
    content = q.content
    for text in [content.hook, content.intro, *(s.body for s in content.sections),
                 *(dr.prompt for dr in content.drills)]:
        for m in PLACEHOLDER.finditer(text):
            assert m.group(1) in names, m.group(1)
    assert len(content.drills) >= 6
    assert {dr.phase for dr in content.drills} >= {"numbers", "shape", "arithmetic", "depth", "failure_modes"}
    for dr in content.drills:
        assert dr.key in d and math.isfinite(d.value(dr.key)), dr.key


def test_solve_is_fast():
    p = Params()
    times = []
    for _ in range(200):
        t0 = time.process_time()
        solve(p)
        times.append(time.process_time() - t0)
    assert statistics.median(times) < 1e-3
