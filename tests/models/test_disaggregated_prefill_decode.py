"""disaggregated-prefill-decode: the seed's four figures (phases against the ridge, the pool ratio,
the KV hand-off and its link, the load where the split wins) worked by hand from published specs,
a hand-worked variant, and properties that say which way each number must move."""

import math
import statistics
import time

import pytest
from hypothesis import assume, given, settings, strategies as st
from pydantic import ValidationError

from models.content import PLACEHOLDER
from models.core import knobs_of
from models.registry import QUESTIONS
from models.serving.disaggregated_prefill_decode import Params, solve

SLUG = "disaggregated-prefill-decode"

# Published figures, typed here on purpose so the test does not lean on the code under test.
H100 = dict(hbm=3.35e12, bf16=989e12, fp8=1979e12, mem=80e9)  # H100 SXM datasheet (dense)
H200 = dict(hbm=4.8e12, bf16=989e12, fp8=1979e12, mem=141e9)  # H200 SXM datasheet (dense)
L70 = dict(params=70.6e9, layers=80, heads=64, kv_heads=8, head_dim=128)  # Llama 3 paper, Table 3
NDR_Bps = 400e9 / 8  # InfiniBand NDR, 400 Gb/s per port
GBE100_Bps = 100e9 / 8


def _scanned_crossover(cap_p, cap_d, cap_m, util, step=0.01):
    """The fleets compared at every 0.01 req/s up to twice the one-node load (where the saving
    outgrows two extra round-ups): the last load where the split needs more nodes."""
    fleet = lambda load, cap: max(1, math.ceil(load / (cap * util) - 1e-9))  # noqa: E731
    last_bad, limit = 0.0, 2 * util / (1 / cap_m - 1 / cap_p - 1 / cap_d)
    for i in range(1, int(limit / step) + 2):
        load = i * step
        if fleet(load, cap_p) + fleet(load, cap_d) > fleet(load, cap_m):
            last_bad = load
    return last_bad


def _by_hand(*, gpu, model, gpus, bpp, peak, prompt, output, tpot, k, util, load, link_Bps, nics,
             eff=0.7, mfu=0.5, hit=0.0):
    """The page's chain written out from first principles."""
    weights = model["params"] * bpp
    kv_tok = 2 * model["layers"] * model["kv_heads"] * model["head_dim"] * 2  # K and V, bf16
    room = 0.9 * gpus * gpu["mem"] - weights
    mem_cap = math.floor(room / (kv_tok * (prompt + output)))
    bw = gpus * gpu["hbm"] * eff
    flops = gpus * peak * mfu
    ctx = prompt + output / 2
    w_s = weights / bw
    kv_s = kv_tok * ctx / bw
    attn = 4 * model["layers"] * model["heads"] * model["head_dim"]  # QK^T and AV, 2 FLOP per MAC
    per_tok = 2 * model["params"] + attn * ctx
    tpot_cap = min(math.floor((tpot - w_s) / kv_s), math.floor(tpot * flops / per_tok))
    batch = min(mem_cap, tpot_cap)
    step = max(w_s + batch * kv_s, batch * per_tok / flops)
    uncached = prompt * (1 - hit)
    pf_flops = uncached * (2 * model["params"] + attn * (prompt - uncached + uncached / 2))
    prefill_s = pf_flops / flops
    dec_s = output * step / batch
    kv_req = kv_tok * prompt
    node_link = nics * link_Bps
    cap_p = min(1 / prefill_s, node_link / kv_req)
    cap_d = min(1 / dec_s, node_link / kv_req)
    share = prefill_s / (prefill_s + dec_s)
    cap_dis = 1 / (1 / cap_p + 1 / cap_d)
    cap_m = 1 / (prefill_s + dec_s / (1 - k * share))
    saving = 1 / cap_m - 1 / cap_dis
    one_node = math.inf if saving <= 0 else util / saving  # nodes saved = load x saving / util = 1
    return dict(
        ridge=peak / gpu["hbm"], batch=batch, prefill_s=prefill_s, dec_s=dec_s,
        pf_ai=pf_flops / (weights + kv_req), dec_ai=batch * per_tok / (weights + batch * kv_tok * ctx),
        ratio=cap_d / cap_p, kv_req=kv_req, egress=kv_req / prefill_s, cap_p=cap_p, cap_d=cap_d,
        cap_dis=cap_dis, cap_m=cap_m, one_node=one_node,
        cross=_scanned_crossover(cap_p, cap_d, cap_m, util) if saving > 0 else math.inf,
        n_m=math.ceil(load / (cap_m * util)), n_p=math.ceil(load / (cap_p * util)),
        n_d=math.ceil(load / (cap_d * util)),
    )


SEED = dict(gpu=H100, model=L70, gpus=8, bpp=2, peak=H100["bf16"], prompt=2000, output=400, tpot=0.05, k=0.3,
            util=0.7, load=400, link_Bps=NDR_Bps, nics=8)


def test_seed_phases_against_the_ridge():
    d = solve(Params())
    h = _by_hand(**SEED)
    # ridge: 989 TFLOP/s / 3.35 TB/s = 295 FLOP per byte
    assert d.value("ridge_flops_per_byte") == pytest.approx(989e12 / 3.35e12) == pytest.approx(295.2, abs=0.1)
    # prefill: one 2,000-token prompt reads 141.2 GB of weights once and does ~2,000 x 2 x 70.6e9 FLOP:
    # about 2,000 FLOP per byte, well above the ridge -> compute-bound
    assert d.value("prefill_arithmetic_intensity") == pytest.approx(h["pf_ai"], rel=1e-9)
    assert 1900 < d.value("prefill_arithmetic_intensity") < 2100
    assert d.value("prefill_arithmetic_intensity") > 5 * d.value("ridge_flops_per_byte")
    # decode at batch 1: ~1 FLOP per byte; at the operating batch still under the ridge -> bandwidth-bound
    assert d.value("decode_ai_batch_1") == pytest.approx(1.04, abs=0.01)
    assert d.value("decode_batch") == h["batch"] == 552  # floor(434.8 GB / (327,680 B x 2,400))
    assert d.value("decode_arithmetic_intensity") == pytest.approx(h["dec_ai"], rel=1e-9)
    assert d.value("decode_arithmetic_intensity") < d.value("ridge_flops_per_byte")
    # an infinite batch cannot pass (2 x 70.6e9 + 2,621,440 x 2,200) / (327,680 x 2,200) = 204 FLOP/B
    assert d.value("decode_ai_ceiling") == pytest.approx((2 * 70.6e9 + 2_621_440 * 2200) / (327_680 * 2200))


def test_seed_pool_ratio_from_prompt_and_output_lengths():
    d = solve(Params())
    h = _by_hand(**SEED)
    # prefill: 2,000 x (141.2e9 + 2,621,440 x 1,000) FLOP / (8 x 989e12 x 0.5) = 72.7 ms
    assert d.value("prefill_s_per_request") == pytest.approx(2000 * (141.2e9 + 2_621_440 * 1000) / (8 * 989e12 * 0.5))
    # decode: step = 7.53 ms + 552 x 38.4 us = 28.7 ms, so 400 tokens cost 400 x 28.7 ms / 552 = 20.8 ms
    assert d.value("decode_node_s_per_request") == pytest.approx(h["dec_s"], rel=1e-9)
    assert d.value("decode_node_s_per_request") == pytest.approx(0.0208, abs=0.0002)
    assert d.value("prefill_to_decode_node_ratio") == pytest.approx(h["ratio"], rel=1e-9)
    assert d.value("prefill_to_decode_node_ratio") == pytest.approx(3.49, abs=0.01)


def test_seed_kv_transfer_and_the_link_it_needs():
    d = solve(Params())
    # 2 (K, V) x 80 layers x 8 KV heads x 128 x 2 B = 327,680 B per token; x 2,000 = 655 MB per request
    assert d.value("kv_transfer_bytes_per_request") == 327_680 * 2000
    # one every 72.7 ms -> 9.0 GB/s = 72 Gb/s per prefill node
    egress = 327_680 * 2000 / d.value("prefill_s_per_request")
    assert d.value("kv_egress_per_prefill_node_Bps") == pytest.approx(egress)
    assert egress * 8 / 1e9 == pytest.approx(72.1, abs=0.2)
    # 8 NDR ports carry 400 GB/s: 2.25% busy; one request moves in 655 MB / 400 GB/s = 1.64 ms
    assert d.value("kv_egress_link_utilization") == pytest.approx(100 * egress / (8 * NDR_Bps))
    assert d.value("kv_transfer_s") == pytest.approx(655.36e6 / 400e9)
    # the decode side takes in the egress times the pool ratio
    assert d.value("kv_ingress_per_decode_node_Bps") == pytest.approx(
        egress * d.value("prefill_to_decode_node_ratio"), rel=1e-9)


def test_seed_load_where_the_split_beats_the_monolith():
    d = solve(Params())
    h = _by_hand(**SEED)
    # the split: 1 / (72.7 ms + 20.8 ms) = 10.7 req/s per node
    assert d.value("disaggregated_capacity_per_node") == pytest.approx(h["cap_dis"], rel=1e-9)
    assert d.value("disaggregated_capacity_per_node") == pytest.approx(10.69, abs=0.01)
    # the monolith: prefill share 77.7%, decode loses 30% x 77.7% = 23.3% -> 10.0 req/s per node
    assert d.value("prefill_share") == pytest.approx(77.74, abs=0.01)
    assert d.value("monolith_decode_loss") == pytest.approx(0.3 * 77.74, abs=0.01)
    assert d.value("monolith_capacity_per_node") == pytest.approx(h["cap_m"], rel=1e-9)
    # one node saved: 0.7 / (1/10.01 - 1/10.69 s) = 110.5 req/s (the old 1 / (0.7 x saving) = 225.6 had the
    # utilization on the wrong side); from the fleets themselves the split is never larger from 77.1 req/s
    assert d.value("one_node_saving_load") == pytest.approx(h["one_node"], rel=1e-9)
    assert d.value("one_node_saving_load") == pytest.approx(110.5, abs=0.1)
    assert d.value("crossover_load") == pytest.approx(h["cross"], abs=0.011)
    assert d.value("crossover_load") == pytest.approx(77.1, abs=0.05)
    # at 400 req/s: 58 monolith nodes against 42 + 12
    assert (d.value("monolith_nodes"), d.value("prefill_nodes"), d.value("decode_nodes")) == (
        h["n_m"], h["n_p"], h["n_d"]) == (58, 42, 12)
    assert d.value("verdict") == "disaggregate"


def test_assumption_without_interference_the_two_designs_tie():
    # The popular claim that the split wins holds only under an interference model: with none,
    # the monolith carries exactly the split's load and the crossover never arrives.
    d = solve(Params(interference=0))
    assert d.value("monolith_capacity_per_node") == pytest.approx(d.value("disaggregated_capacity_per_node"))
    assert math.isinf(d.value("crossover_load"))
    # and on a perfect-overlap roofline the monolith is ahead: prefill hides in decode's idle tensor time
    assert d.value("roofline_monolith_capacity_per_node") > d.value("disaggregated_capacity_per_node")


def test_variant_h200_fp8_long_prompts_on_frontend_ethernet():
    p = Params(gpu="H200", weight_precision="fp8", prompt_tokens=4000, output_tokens=250, tpot_target_ms=40,
               interference=0.5, target_utilization=0.75, request_rate=150, kv_link="100GbE", kv_nics_per_node=2)
    d = solve(p)
    h = _by_hand(gpu=H200, model=L70, gpus=8, bpp=1, peak=H200["fp8"], prompt=4000, output=250, tpot=0.04, k=0.5,
                 util=0.75, load=150, link_Bps=GBE100_Bps, nics=2)
    # ridge for FP8 on H200: 1,979e12 / 4.8e12 = 412 FLOP/B
    assert d.value("ridge_flops_per_byte") == pytest.approx(1979e12 / 4.8e12)
    assert d.value("decode_batch") == h["batch"]
    assert d.value("kv_transfer_bytes_per_request") == 327_680 * 4000  # 1.31 GB
    # two 100 GbE ports = 25 GB/s: 1.31 GB / 25 GB/s = 52 ms per request, and they cap the decode node
    assert d.value("kv_transfer_s") == pytest.approx(327_680 * 4000 / 25e9)
    assert d.value("decode_node_capacity") == pytest.approx(h["cap_d"])
    assert d.value("decode_node_capacity") == pytest.approx(25e9 / (327_680 * 4000))  # NIC-bound
    for key, ref in [("prefill_to_decode_node_ratio", "ratio"), ("disaggregated_capacity_per_node", "cap_dis"),
                     ("monolith_capacity_per_node", "cap_m"), ("kv_egress_per_prefill_node_Bps", "egress")]:
        assert d.value(key) == pytest.approx(h[ref], rel=1e-9), key
    if math.isfinite(h["cross"]):
        assert d.value("crossover_load") == pytest.approx(h["cross"], abs=0.011)
    else:
        assert math.isinf(d.value("crossover_load"))
    assert (d.value("monolith_nodes"), d.value("prefill_nodes"), d.value("decode_nodes")) == (
        h["n_m"], h["n_p"], h["n_d"])


def test_a_single_slow_nic_makes_the_decode_side_bind_and_the_split_never_pays():
    d = solve(Params(kv_link="100GbE", kv_nics_per_node=1))
    # 12.5 GB/s / 655 MB = 19.1 hand-offs per second, below the decode node's 48 req/s of HBM work
    assert d.value("decode_node_capacity") == pytest.approx(12.5e9 / 655.36e6)
    assert d.value("kv_egress_link_utilization") == pytest.approx(72.1, abs=0.1)
    assert math.isinf(d.value("crossover_load"))
    assert d.value("verdict") == "stay monolithic"


def test_infeasible_scenario_is_refused_in_plain_words():
    with pytest.raises(ValidationError, match="Use more GPUs per replica"):
        Params(model="Llama-3.1-405B", gpus_per_replica=4)


# --- properties -------------------------------------------------------------------------------

interference = st.floats(0, 1)


@settings(max_examples=80, deadline=None)
@given(a=interference, b=interference)
def test_more_interference_never_helps_the_monolith(a, b):
    lo, hi = sorted((a, b))
    d_lo, d_hi = solve(Params(interference=lo)), solve(Params(interference=hi))
    assert d_hi.value("monolith_capacity_per_node") <= d_lo.value("monolith_capacity_per_node") + 1e-12
    assert d_hi.value("crossover_load") <= d_lo.value("crossover_load")
    assert d_hi.value("disaggregated_capacity_per_node") == d_lo.value("disaggregated_capacity_per_node")


@settings(max_examples=80, deadline=None)
@given(k=st.floats(0.01, 1), load_factor=st.floats(1, 50, exclude_min=True))  # above it: at it, a pool may still round up
def test_beyond_the_crossover_the_split_is_never_larger(k, load_factor):
    cross = solve(Params(interference=k)).value("crossover_load")
    assume(math.isfinite(cross) and cross * load_factor <= 10_000)
    d = solve(Params(interference=k, request_rate=cross * load_factor))
    assert d.value("disaggregated_nodes") <= d.value("monolith_nodes")


@settings(max_examples=60, deadline=None)
@given(a=st.integers(500, 16_000), b=st.integers(500, 16_000))
def test_longer_prompts_shift_the_pools_toward_prefill(a, b):
    lo, hi = sorted((a, b))
    assume(hi > lo)
    d_lo, d_hi = solve(Params(prompt_tokens=lo)), solve(Params(prompt_tokens=hi))
    assert d_hi.value("prefill_to_decode_node_ratio") > d_lo.value("prefill_to_decode_node_ratio")
    assert d_hi.value("kv_transfer_bytes_per_request") > d_lo.value("kv_transfer_bytes_per_request")
    assert d_hi.value("prefill_arithmetic_intensity") > d_lo.value("prefill_arithmetic_intensity")
    # attention FLOP grow with the prompt, so egress per prefill node can only fall
    assert d_hi.value("kv_egress_per_prefill_node_Bps") <= d_lo.value("kv_egress_per_prefill_node_Bps") * (1 + 1e-12)


@settings(max_examples=60, deadline=None)
@given(a=st.integers(100, 1000), b=st.integers(100, 1000))
def test_longer_outputs_shift_the_pools_toward_decode(a, b):
    lo, hi = sorted((a, b))
    assume(hi > lo)
    assert solve(Params(output_tokens=hi)).value("prefill_to_decode_node_ratio") < solve(
        Params(output_tokens=lo)).value("prefill_to_decode_node_ratio")


@settings(max_examples=60, deadline=None)
@given(prompt=st.integers(500, 16_000), output=st.integers(100, 1000), k=st.floats(0, 1))
def test_invariants(prompt, output, k):
    d = solve(Params(prompt_tokens=prompt, output_tokens=output, interference=k))
    assert d.value("decode_ai_batch_1") <= d.value("decode_arithmetic_intensity") <= d.value("decode_ai_ceiling")
    assert d.value("prefill_arithmetic_intensity") > d.value("ridge_flops_per_byte")
    assert d.value("monolith_capacity_per_node") <= d.value("disaggregated_capacity_per_node") * (1 + 1e-12)
    assert d.value("monolith_capacity_per_node") <= d.value("roofline_monolith_capacity_per_node") * (1 + 1e-12)


# --- contract ---------------------------------------------------------------------------------

KEY_FIGURES = {
    "prefill_arithmetic_intensity": "FLOP/B", "decode_arithmetic_intensity": "FLOP/B",
    "prefill_to_decode_node_ratio": "1", "kv_transfer_bytes_per_request": "B",
    "kv_egress_per_prefill_node_Bps": "B/s", "monolith_capacity_per_node": "1/s",
    "disaggregated_capacity_per_node": "1/s", "crossover_load": "1/s",
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
