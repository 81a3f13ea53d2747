"""disaggregated-prefill-decode: the seed's four figures (phases against the ridge, the pool ratio,
the KV hand-off and its link, the load where the split wins) worked by hand from published specs,
a hand-worked variant, and properties that say which way each number must move."""

import math

import pytest
from hypothesis import assume, given, settings, strategies as st
from pydantic import ValidationError

from models.serving.disaggregated_prefill_decode import Params, solve


# Published figures, typed here on purpose so the test does not lean on the code under test.
H100 = dict(hbm=3.35e12, bf16=989e12, fp8=1979e12, mem=80e9, link=450e9)  # H100 SXM datasheet (dense; NVLink each way)
H200 = dict(hbm=4.8e12, bf16=989e12, fp8=1979e12, mem=141e9, link=450e9)  # H200 SXM datasheet (dense)
V5E = dict(hbm=819e9, bf16=197e12, mem=16e9, link=200e9)  # Cloud TPU v5e docs (ICI 400 GB/s both ways)
# Llama 3 70B (Llama 3 paper, Table 3): 80 layers, d_model 8,192, 64 heads, 8 KV heads of 128, SwiGLU
# width 28,672, vocabulary 128,256, untied embeddings. Its parameters counted matrix by matrix:
L70_PARAMS = 2 * 128_256 * 8192 + 80 * (2 * 8192 * 8192 + 2 * 8192 * 1024 + 3 * 8192 * 28_672)  # 70.55e9
LAYERS, HEADS, KV_HEADS, HEAD_DIM, D_MODEL = 80, 64, 8, 128, 8192
NDR_Bps = 400e9 / 8  # InfiniBand NDR, 400 Gb/s per port
GBE100_Bps = 100e9 / 8
# The engine's defaults (models/engine/defaults.py, the accuracy page's fits): decode MBU 80%, decode MFU
# 50%, prefill MFU 60%, 1.9 ms fixed per step, 6 us per all-reduce.
MBU, DECODE_MFU, PREFILL_MFU = 0.8, 0.5, 0.6
FIXED_S, AR_LATENCY_S = 1.9e-3, 6e-6


def _scanned_crossover(s_p, s_d, s_m, step=0.01):
    """The fleets, each `load x node-seconds per request` rounded up, compared at every 0.01 req/s up
    to twice the one-node load (where the saving outgrows two extra round-ups): the last load where
    the split needs more nodes."""
    fleet = lambda load, s: max(1, math.ceil(load * s - 1e-9))  # noqa: E731
    last_bad, limit = 0.0, 2 / (s_m - s_p - s_d)
    for i in range(1, int(limit / step) + 2):
        load = i * step
        if fleet(load, s_p) + fleet(load, s_d) > fleet(load, s_m):
            last_bad = load
    return last_bad


def _fleet_s_per_request(*, pf, f, o, tpot, util, sides, full_step, batch):
    """Node-seconds a fleet provisions per request, from what one node carries, x req/s. Busy share:
    x pf of prefill plus f x step(b) / TPOT of decode paced at the TPOT target, with b = x o TPOT
    sequences held (Little's law) and f the monolith's interference slowdown. On each side of the
    step, step(b) = i + k b, so busy reaches the target at x = (util - f i / TPOT) / (pf + f k o),
    and the side that gets there first binds. Below one sequence held, every token is a step of its
    own. Slots: stepping flat out at the full batch, the node carries 1 / (pf + f o step(B) / B)."""
    x = min((util - f * i / tpot) / (pf + f * k * o) for i, k in sides)
    if x * o * tpot < 1:
        x = util / (pf + f * o * max(i + k for i, k in sides))
    return 1 / min(x, 1 / (pf + f * o * full_step / batch))


def _allreduce_s(gpus, tokens, link_Bps, latency=AR_LATENCY_S):
    """80 layers x 2 all-reduces, each a latency plus a ring's 2 (n - 1) / n of tokens x 8,192 x 2 B."""
    if gpus == 1:
        return 0.0
    return 2 * LAYERS * (latency + 2 * (gpus - 1) / gpus * tokens * D_MODEL * 2 / link_Bps)


def _by_hand(*, gpu, gpus, bpp, peak, prompt, output, tpot, k, util, load, link_Bps, nics,
             kv_bpe=2, eff=MBU, dec_mfu=DECODE_MFU, pf_mfu=PREFILL_MFU, hit=0.0, fixed=FIXED_S, ar_latency=AR_LATENCY_S,
             attention=True, usable=0.9, batch=None):
    """The page's chain written out from first principles, with the engine's conventions: decode step =
    max(bytes / achieved bandwidth, FLOP / (peak x decode MFU)) + all-reduces + fixed cost; prefill at
    the prefill MFU with exact attention pairs, plus its all-reduces; the fleets as the engine sizes
    them, decode charged at the batch each node holds."""
    weights = L70_PARAMS * bpp
    kv_tok = 2 * LAYERS * KV_HEADS * HEAD_DIM * kv_bpe
    room = usable * gpus * gpu["mem"] - weights
    mem_cap = math.floor(room / (kv_tok * (prompt + output)))
    bw = gpus * gpu["hbm"] * eff
    dec_flops, pf_flops_s = gpus * peak * dec_mfu, gpus * peak * pf_mfu
    ctx = prompt + output / 2
    w_s = weights / bw
    kv_s = kv_tok * ctx / bw
    attn = 2 * LAYERS * HEADS * (HEAD_DIM + HEAD_DIM) if attention else 0  # QK^T and AV, 2 FLOP per MAC
    per_tok = 2 * L70_PARAMS + attn * ctx
    ar = lambda tokens: _allreduce_s(gpus, tokens, gpu["link"], ar_latency)  # noqa: E731
    ar_seq, fixed_all = ar(1) - ar(0), fixed + ar(0)
    tpot_cap = min(math.floor((tpot - fixed_all - w_s) / (kv_s + ar_seq)),
                   math.floor((tpot - fixed_all) / (per_tok / dec_flops + ar_seq)))
    batch = batch or max(1, min(mem_cap, tpot_cap))
    step = max(w_s + batch * kv_s, batch * per_tok / dec_flops) + ar(batch) + fixed
    uncached = prompt * (1 - hit)
    cached = prompt - uncached
    pf_flops = uncached * 2 * L70_PARAMS + attn * (uncached * cached + uncached * (uncached - 1) / 2)
    prefill_s = pf_flops / pf_flops_s + ar(uncached)
    dec_s = output * step / batch
    kv_req = kv_tok * prompt
    node_link = nics * link_Bps
    cap_p = min(1 / prefill_s, node_link / kv_req)
    cap_d = min(1 / dec_s, node_link / kv_req)
    share = prefill_s / (prefill_s + dec_s)
    cap_dis = 1 / (1 / cap_p + 1 / cap_d)
    cap_m = 1 / (prefill_s + dec_s / (1 - k * share))
    # the fleets: node-seconds provisioned per request, decode charged at the batch each node holds
    sides = [(w_s + fixed_all, kv_s + ar_seq), (fixed_all, per_tok / dec_flops + ar_seq)]
    fleet = dict(o=output, tpot=tpot, util=util, sides=sides, full_step=step, batch=batch)
    s_p = max(prefill_s, kv_req / node_link) / util
    s_d = max(_fleet_s_per_request(pf=0.0, f=1.0, **fleet), kv_req / (node_link * util))
    s_m = _fleet_s_per_request(pf=prefill_s, f=1 / (1 - k * share), **fleet)
    saving = s_m - s_p - s_d
    one_node = math.inf if saving <= 0 else 1 / saving  # nodes saved = load x saving = 1
    return dict(
        ridge=peak / gpu["hbm"], batch=batch, mem_cap=mem_cap, tpot_cap=tpot_cap, step=step, prefill_s=prefill_s,
        prefill_ar=ar(uncached), dec_s=dec_s, pf_ai=pf_flops / (weights + kv_req),
        dec_ai=batch * per_tok / (weights + batch * kv_tok * ctx),
        ratio=cap_d / cap_p, kv_req=kv_req, egress=kv_req / prefill_s, cap_p=cap_p, cap_d=cap_d,
        cap_dis=cap_dis, cap_m=cap_m, s_p=s_p, s_d=s_d, s_m=s_m, one_node=one_node, sides=sides,
        held_m=output * tpot / s_m,  # sequences a monolith node holds: its req/s x output x TPOT
        cross=_scanned_crossover(s_p, s_d, s_m) if saving > 0 else math.inf,
        n_m=math.ceil(load * s_m), n_p=math.ceil(load * s_p), n_d=math.ceil(load * s_d),
    )


SEED = dict(gpu=H100, gpus=8, bpp=2, peak=H100["bf16"], prompt=2000, output=400, tpot=0.05, k=0.3,
            util=0.7, load=400, link_Bps=NDR_Bps, nics=8)


def test_seed_phases_against_the_ridge():
    d = solve(Params())
    h = _by_hand(**SEED)
    assert d.value("model_params") == L70_PARAMS == 70_552_387_584
    # ridge: 989 TFLOP/s / 3.35 TB/s = 295 FLOP per byte
    assert d.value("ridge_flops_per_byte") == pytest.approx(989e12 / 3.35e12) == pytest.approx(295.2, abs=0.1)
    # prefill: one 2,000-token prompt reads 141.1 GB of weights once and does ~2,000 x 2 x 70.55e9 FLOP:
    # about 2,000 FLOP per byte, well above the ridge -> compute-bound
    assert d.value("prefill_arithmetic_intensity") == pytest.approx(h["pf_ai"], rel=1e-9)
    assert 1900 < d.value("prefill_arithmetic_intensity") < 2100
    assert d.value("prefill_arithmetic_intensity") > 5 * d.value("ridge_flops_per_byte")
    # decode at batch 1: ~1 FLOP per byte; at the operating batch still under the ridge -> bandwidth-bound
    assert d.value("decode_ai_batch_1") == pytest.approx(1.04, abs=0.01)
    # memory: floor((576 - 141.1) GB / (327,680 B x 2,400)) = 552; TPOT, at 8 x 3.35 TB/s x 0.8 = 21.44 TB/s:
    # (50 - 1.9 - 0.96 - 6.58 ms) / (33.6 + 10.2 us of KV read and all-reduce per sequence) = 925, so memory binds
    assert (d.value("batch_memory_cap"), d.value("batch_tpot_cap")) == (h["mem_cap"], h["tpot_cap"]) == (552, 925)
    assert d.value("batch_tpot_cap_continuous") == pytest.approx(
        (50e-3 - 1.9e-3 - 160 * 6e-6 - L70_PARAMS * 2 / (8 * 3.35e12 * 0.8))
        / (327_680 * 2200 / (8 * 3.35e12 * 0.8) + 160 * 2 * 7 / 8 * 8192 * 2 / 450e9))
    assert d.value("decode_batch") == h["batch"] == 552
    assert d.value("decode_arithmetic_intensity") == pytest.approx(h["dec_ai"], rel=1e-9)
    assert d.value("decode_arithmetic_intensity") < d.value("ridge_flops_per_byte")
    # an infinite batch cannot pass (2 x 70.55e9 + 2,621,440 x 2,200) / (327,680 x 2,200) = 204 FLOP/B
    assert d.value("decode_ai_ceiling") == pytest.approx((2 * L70_PARAMS + 2_621_440 * 2200) / (327_680 * 2200))


def test_seed_pool_ratio_from_prompt_and_output_lengths():
    d = solve(Params())
    h = _by_hand(**SEED)
    # prefill FLOP: (2,000 x 2 x 70.55e9 + 2,621,440 x 2,000 x 1,999 / 2) / (8 x 989e12 x 0.6) = 60.6 ms;
    # its all-reduces: 160 x (6 us + 2 x 7/8 x 2,000 x 8,192 x 2 B / 450 GB/s) = 21.3 ms; 81.9 ms in all
    flops_s = (2000 * 2 * L70_PARAMS + 2_621_440 * 2000 * 1999 / 2) / (8 * 989e12 * 0.6)
    ar_s = 160 * (6e-6 + 2 * 7 / 8 * 2000 * 8192 * 2 / 450e9)
    assert d.value("prefill_compute_s") == pytest.approx(flops_s)
    assert d.value("prefill_allreduce_s") == pytest.approx(ar_s)
    assert d.value("prefill_s_per_request") == pytest.approx(flops_s + ar_s) == pytest.approx(0.0819, abs=1e-4)
    # decode step at 21.44 TB/s: 6.58 ms of weights + 552 x 33.6 us of KV, plus 160 x (6 us + 2 x 7/8 x 552 x
    # 16 kB / 450 GB/s) = 6.59 ms of all-reduce and 1.9 ms fixed = 33.6 ms; 400 tokens cost 400 x 33.6 ms / 552
    assert d.value("decode_step_allreduce_s") == pytest.approx(160 * (6e-6 + 2 * 7 / 8 * 552 * 8192 * 2 / 450e9))
    assert d.value("decode_step_s") == pytest.approx(
        (L70_PARAMS * 2 + 552 * 327_680 * 2200) / (8 * 3.35e12 * 0.8) + 160 * (6e-6 + 2 * 7 / 8 * 552 * 8192 * 2 / 450e9)
        + 1.9e-3)
    assert d.value("decode_step_s") == pytest.approx(h["step"]) == pytest.approx(0.03363, abs=1e-5)
    assert d.value("decode_node_s_per_request") == pytest.approx(h["dec_s"], rel=1e-9)
    assert d.value("decode_node_s_per_request") == pytest.approx(0.02437, abs=0.0002)
    assert d.value("prefill_to_decode_node_ratio") == pytest.approx(h["ratio"], rel=1e-9)
    assert d.value("prefill_to_decode_node_ratio") == pytest.approx(3.36, abs=0.01)


def test_seed_kv_transfer_and_the_link_it_needs():
    d = solve(Params())
    # 2 (K, V) x 80 layers x 8 KV heads x 128 x 2 B = 327,680 B per token; x 2,000 = 655 MB per request
    assert d.value("kv_transfer_bytes_per_request") == 327_680 * 2000
    # one every 81.9 ms -> 8.00 GB/s = 64.0 Gb/s per prefill node
    egress = 327_680 * 2000 / d.value("prefill_s_per_request")
    assert d.value("kv_egress_per_prefill_node_Bps") == pytest.approx(egress)
    assert egress * 8 / 1e9 == pytest.approx(64.0, abs=0.2)
    # 8 NDR ports carry 400 GB/s: 2.0% busy; one request moves in 655 MB / 400 GB/s = 1.64 ms
    assert d.value("kv_egress_link_utilization") == pytest.approx(egress / (8 * NDR_Bps))
    assert d.value("kv_transfer_s") == pytest.approx(655.36e6 / 400e9)
    # the decode side takes in the egress times the pool ratio
    assert d.value("kv_ingress_per_decode_node_Bps") == pytest.approx(
        egress * d.value("prefill_to_decode_node_ratio"), rel=1e-9)
    # and fills that share of its own 8 NDR ports
    assert d.value("kv_ingress_link_utilization") == pytest.approx(
        egress * d.value("prefill_to_decode_node_ratio") / (8 * NDR_Bps), rel=1e-9)


def test_seed_goodput_a_full_batch_monolith_cannot_meet_both_targets():
    """DistServe's argument on the seed: at the full batch of 552 the step is 33.6 ms of a 50 ms TPOT.
    An unchunked 2,000-token prompt (81.9 ms of prefill) makes that step 115.5 ms for every stream;
    chunked into the 16.4 ms of slack a step leaves, the prompt takes 81.9 / (1 - 33.6 / 50) = 250 ms
    to prefill, and the node starts 0.327 / 81.9 ms = 4.0 prompts/s while its batch retires
    552 / (400 x 33.6 ms) = 41 requests/s. Split, an idle prefill node answers in 81.9 ms plus
    1.64 ms / 80 layers of exposed hand-off."""
    d = solve(Params())
    h = _by_hand(**SEED)
    step, pf = h["step"], h["prefill_s"]
    assert d.value("monolith_spike_step_s") == pytest.approx(step + pf) == pytest.approx(0.1155, abs=2e-4)
    assert d.value("monolith_spike_verdict") == "misses the TPOT target"
    assert d.value("chunk_trade_verdict") == "One chunk size trades one target against the other"
    slack = 1 - step / 0.05
    assert d.value("monolith_prefill_slack_share") == pytest.approx(slack) == pytest.approx(0.327, abs=0.002)
    assert d.value("monolith_chunked_prefill_s") == pytest.approx(pf / slack) == pytest.approx(0.250, abs=0.002)
    assert d.value("monolith_admit_rate_full_batch") == pytest.approx(slack / pf) == pytest.approx(4.0, abs=0.02)
    assert d.value("monolith_admit_rate_full_batch") < 552 / (400 * step)
    assert d.value("monolith_refill_verdict").startswith("cannot")
    assert d.value("split_ttft_s") == pytest.approx(pf + 655.36e6 / 400e9 / 80)


def test_seed_load_where_the_split_beats_the_monolith():
    d = solve(Params())
    h = _by_hand(**SEED)
    # per node at the full batch, the split: 1 / (81.9 ms + 24.4 ms) = 9.41 req/s
    assert d.value("disaggregated_capacity_per_node") == pytest.approx(h["cap_dis"], rel=1e-9)
    assert d.value("disaggregated_capacity_per_node") == pytest.approx(9.41, abs=0.01)
    # the monolith: prefill share 77.1%, decode loses 30% x 77.1% = 23.1% -> 8.80 req/s per node
    assert d.value("prefill_share") == pytest.approx(0.7707, abs=0.0001)
    assert d.value("monolith_decode_loss") == pytest.approx(0.3 * 0.7707, abs=0.0001)
    assert d.value("monolith_capacity_per_node") == pytest.approx(h["cap_m"], rel=1e-9)
    assert d.value("monolith_capacity_per_node") == pytest.approx(8.80, abs=0.01)
    # Sized linearly at those capacities, 400 req/s would take 400 / (8.80 x 0.7) = 64.9 monolith nodes
    # and 400 / (41.0 x 0.7) = 13.9 decode nodes.
    assert d.value("monolith_nodes_linear") == pytest.approx(400 / (h["cap_m"] * 0.7), rel=1e-9)
    assert d.value("decode_nodes_linear") == pytest.approx(400 / (h["cap_d"] * 0.7), rel=1e-9)
    # The fleets charge decode at the batch a node holds, paced at the 50 ms TPOT: busy = x pf + f x step(b)
    # / 50 ms with b = x x 400 x 50 ms. The bytes side binds: step(b) = 9.44 ms + b x 43.8 us (6.58 ms of
    # weights, 0.96 ms of all-reduce latency, 1.9 ms fixed; 33.6 us of KV and 10.2 us of all-reduce each).
    # Decode pool (pf = 0, f = 1): x = (0.7 - 9.44 / 50) / (400 x 43.8 us) = 29.2 req/s per node, 583
    # sequences held, so 0.0343 node-s per request (the slots, at 41.0 req/s flat out, do not bind).
    assert d.value("decode_fleet_s_per_request") == pytest.approx(h["s_d"], rel=1e-9)
    assert d.value("decode_fleet_s_per_request") == pytest.approx(0.0343, abs=1e-4)
    assert d.value("decode_accept_rate") == pytest.approx(1 / h["s_d"], rel=1e-9) == pytest.approx(29.16, abs=0.01)
    # Monolith (pf = 81.9 ms, f = 1 / (1 - 23.1%) = 1.30): x = (0.7 - 1.30 x 9.44 / 50) / (81.9 ms + 1.30 x
    # 400 x 43.8 us) = 4.34 req/s per node, holding only 86.8 sequences: 0.230 node-s per request.
    assert d.value("monolith_fleet_s_per_request") == pytest.approx(h["s_m"], rel=1e-9)
    assert d.value("monolith_fleet_s_per_request") == pytest.approx(0.2304, abs=1e-4)
    assert d.value("monolith_held_batch") == pytest.approx(h["held_m"], rel=1e-9) == pytest.approx(86.8, abs=0.1)
    # Prefill pool: 81.9 ms / 0.7 = 0.117 node-s per request.
    assert d.value("prefill_fleet_s_per_request") == pytest.approx(h["s_p"], rel=1e-9)
    assert d.value("prefill_fleet_s_per_request") == pytest.approx(0.0819 / 0.7, abs=1e-4)
    # one node saved: 1 / (0.2304 - 0.1170 - 0.0343 s) = 12.6 req/s; from the fleets themselves the split
    # is never larger from 8.68 req/s, 2 / 0.2304: just below it the monolith has two nodes and the split
    # 2 + 1, since the prefill pool passes one node at 1 / 0.117 = 8.55 req/s
    assert d.value("one_node_saving_load") == pytest.approx(h["one_node"], rel=1e-9)
    assert d.value("one_node_saving_load") == pytest.approx(12.64, abs=0.01)
    assert d.value("crossover_load") == pytest.approx(h["cross"], abs=0.011)
    assert d.value("crossover_load") == pytest.approx(2 / h["s_m"], rel=1e-6) == pytest.approx(8.68, abs=0.01)
    # at 400 req/s: 92.2 -> 93 monolith nodes against 46.8 + 13.7 -> 47 + 14
    assert d.value("monolith_nodes_continuous") == pytest.approx(400 * h["s_m"], rel=1e-9)
    assert d.value("prefill_nodes_continuous") == pytest.approx(400 * h["s_p"], rel=1e-9)
    assert d.value("decode_nodes_continuous") == pytest.approx(400 * h["s_d"], rel=1e-9)
    assert (d.value("monolith_nodes"), d.value("prefill_nodes"), d.value("decode_nodes")) == (
        h["n_m"], h["n_p"], h["n_d"]) == (93, 47, 14)
    assert d.value("verdict") == "disaggregate"


def _bisect(f, lo, hi, n=200):
    """The b in [lo, hi] where the decreasing-minus-increasing f(b) crosses zero (f(lo) > 0)."""
    for _ in range(n):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if f(mid) > 0 else (lo, mid)
    return lo


def test_seed_goodput_within_both_targets():
    """Goodput, DistServe's measure: requests/s per GPU that meet the 200 ms TTFT and the 50 ms TPOT at
    once, flat out. A chunked monolith pads each step of b sequences with prompt work up to the TPOT
    target, so prefill gets 1 - step(b) / TPOT of the node and a prompt's TTFT is prefill / that share."""
    d = solve(Params())
    h = _by_hand(**SEED)
    pf, tpot, ttft, out = h["prefill_s"], 0.05, 0.2, 400
    step = lambda b: max(i + k * b for i, k in h["sides"])  # noqa: E731  (the decode step, bytes or FLOP side)
    # the split: an idle prefill node answers in 81.9 ms + 655.36 MB / 400 GB/s / 80 layers = 81.92 ms,
    # within 200 ms, so its 9.41 req/s a node all count: 1.176 per GPU
    xfer = 2 * LAYERS * KV_HEADS * HEAD_DIM * 2 * 2000 / (8 * NDR_Bps)
    assert d.value("split_ttft_s") == pytest.approx(pf + xfer / 80, rel=1e-9) == pytest.approx(0.08192, abs=1e-5)
    assert d.value("split_goodput_per_gpu") == pytest.approx(h["cap_dis"] / 8, rel=1e-9)
    assert d.value("split_goodput_per_gpu") == pytest.approx(1.176, abs=1e-3)
    # the monolith's TTFT limit: step(b) <= 50 ms x (1 - 81.9 / 200) = 29.5 ms, about 458 sequences
    budget = tpot * (1 - pf / ttft)
    cap_ttft = _bisect(lambda b: budget - step(b), 0, 10_000)
    assert d.value("monolith_ttft_batch_cap") == pytest.approx(cap_ttft, rel=1e-6) == pytest.approx(458.3, abs=0.1)
    # the refill: admitted prompts (slack / prefill) = retired ones (b / (400 x 50 ms)), about 163 sequences
    refill = _bisect(lambda b: (1 - step(b) / tpot) / pf - b / (out * tpot), 0, 10_000)
    assert d.value("monolith_refill_batch") == pytest.approx(refill, rel=1e-6) == pytest.approx(163.2, abs=0.1)
    # the smallest of 458, 163 and the 552 that fit binds: prefill admission
    assert d.value("monolith_goodput_batch") == pytest.approx(min(cap_ttft, refill, h["batch"]), rel=1e-6)
    assert d.value("monolith_goodput_limit") == "prefill admission"
    # TTFT there: 81.9 ms / (1 - step(163.2) / 50 ms) = 122.6 ms; goodput 163.2 / 20 s / 8 = 1.020 per GPU
    assert d.value("monolith_goodput_ttft_s") == pytest.approx(pf / (1 - step(refill) / tpot), rel=1e-6)
    assert d.value("monolith_goodput_ttft_s") == pytest.approx(0.1226, abs=1e-4)
    assert d.value("monolith_goodput_per_gpu") == pytest.approx(refill / (out * tpot) / 8, rel=1e-6)
    assert d.value("monolith_goodput_per_gpu") == pytest.approx(1.020, abs=1e-3)
    assert d.value("goodput_ratio") == pytest.approx(h["cap_dis"] / 8 / (refill / (out * tpot) / 8), rel=1e-6)
    assert d.value("goodput_verdict") == "the split"
    # at the full batch the chunked TTFT is 81.9 ms / (1 - 33.63 / 50) = 250 ms, over 200 ms, and its
    # slack admits 4.0 prompts/s against the 552 / 20 s = 27.6 it retires
    assert d.value("monolith_chunked_prefill_s") == pytest.approx(pf / (1 - h["step"] / tpot), rel=1e-9)
    assert d.value("monolith_chunked_prefill_s") == pytest.approx(0.2501, abs=1e-4)
    assert d.value("monolith_chunked_ttft_verdict") == "over the TTFT target"
    assert d.value("monolith_full_batch_retire_rate") == pytest.approx(552 / (out * tpot)) == pytest.approx(27.6)
    assert d.value("monolith_refill_verdict").startswith("cannot refill")
    # the tightest TTFT a monolith meets while decoding one sequence: 81.9 ms / (1 - step(1) / 50 ms),
    # 101 ms, against the split's 81.9 ms: the monolith gives out first
    assert d.value("monolith_ttft_floor_s") == pytest.approx(pf / (1 - step(1) / tpot), rel=1e-9)
    assert d.value("monolith_ttft_floor_s") == pytest.approx(0.1011, abs=1e-4)
    assert d.value("ttft_floor_verdict") == "the monolith gives out first"
    # the fleet's monolith nodes hold 86.8 sequences: TTFT 81.9 ms / (1 - step(86.8) / 50 ms) = 111 ms
    assert d.value("monolith_fleet_ttft_s") == pytest.approx(pf / (1 - step(h["held_m"]) / tpot), rel=1e-6)
    assert d.value("monolith_fleet_ttft_verdict") == "meets the TTFT target"


def test_below_the_monoliths_ttft_floor_only_the_split_has_goodput():
    # 90 ms: below the monolith's 101 ms floor, above the split's 81.9 ms
    d = solve(Params(ttft_target_ms=90))
    assert d.value("monolith_goodput_per_gpu") == 0
    assert d.value("monolith_goodput_limit") == "the TTFT target at any batch"
    assert d.value("split_goodput_per_gpu") == solve(Params()).value("split_goodput_per_gpu")
    assert d.value("goodput_verdict") == "only the split meets both targets"
    assert d.value("monolith_fleet_ttft_verdict").endswith("no monolith fleet of any size meets it")
    # 80 ms: below the split's 81.9 ms too, and prefill alone is what misses it
    d = solve(Params(ttft_target_ms=80))
    assert d.value("split_goodput_per_gpu") == 0 == d.value("monolith_goodput_per_gpu")
    assert d.value("goodput_verdict").startswith("neither")


@settings(max_examples=60, deadline=None)
@given(a=st.floats(10, 10_000), b=st.floats(10, 10_000), prompt=st.integers(500, 16_000))
def test_a_tighter_ttft_never_raises_goodput_and_the_monolith_never_beats_a_split_that_meets_it(a, b, prompt):
    lo, hi = sorted((a, b))
    d_lo, d_hi = (solve(Params(ttft_target_ms=t, prompt_tokens=prompt)) for t in (lo, hi))
    for key in ("monolith_goodput_per_gpu", "split_goodput_per_gpu"):
        assert d_lo.value(key) <= d_hi.value(key) * (1 + 1e-9) + 1e-12, key
    # with the hand-off not binding (eight NDR ports), a split that meets the TTFT target carries at
    # least what the chunked monolith does: same prefill, decode at the full batch instead of a smaller one
    for d in (d_lo, d_hi):
        if d.value("split_goodput_per_gpu") > 0:
            assert d.value("monolith_goodput_per_gpu") <= d.value("split_goodput_per_gpu") * (1 + 1e-9)


def test_worked_problem_llama3_70b_int8_on_tpu_v5e_4x4():
    """The JAX scaling book, Part 8 ("Serving LLaMA 3-70B on TPUs", jax-ml.github.io/scaling-book/
    applied-inference): LLaMA 3-70B, int8 weights and int8 KV caches, bfloat16 FLOPs, TPU v5e 4x4
    (16-way model parallelism), at roofline (no overheads). Its figures: "2 * K * H * L = 2 * 8 * 128 *
    80 = 160kiB" of KV per token; a 32k-token sequence "uses 162e3 * 32,768 = 5.3GB"; the FFW blocks
    are compute bound above B = 240 in bfloat16 (the ridge, C / W_hbm); "Assuming we do prefill and
    generation on separate servers", prefill of long prompts is compute bound."""
    p = Params(model="Llama-3-70B", gpu="TPU v5e", tp_degree=16, weight_precision="int8", kv_precision="int8",
               compute_precision="bf16", hbm_efficiency=1.0, decode_mfu=1.0, prefill_mfu=1.0, step_overhead_ms=0,
               allreduce_latency_us=0, attention_flops=False, usable_hbm_fraction=1.0,
               prompt_tokens=32_768, output_tokens=512, given_batch=1, tpot_target_ms=50)
    d = solve(p)
    h = _by_hand(gpu=V5E, gpus=16, bpp=1, kv_bpe=1, peak=V5E["bf16"], prompt=32_768, output=512, tpot=0.05,
                 k=0.3, util=0.7, load=400, link_Bps=NDR_Bps, nics=8, eff=1.0, dec_mfu=1.0, pf_mfu=1.0,
                 fixed=0, ar_latency=0, attention=False, usable=1.0, batch=1)
    assert d.value("kv_bytes_per_token") == 2 * 8 * 128 * 80 == 163_840
    assert d.value("kv_transfer_bytes_per_request") == 163_840 * 32_768 == pytest.approx(5.3e9, rel=0.015)
    # the ridge in bf16: 197e12 / 819e9 = 240.5 FLOP per byte
    assert d.value("ridge_flops_per_byte") == pytest.approx(197e12 / 819e9) == pytest.approx(240, abs=1)
    # prefill: 32,768 x 2 x 70.55e9 / (16 x 197e12) = 1.467 s of FLOP, plus the all-reduces the book
    # overlaps: 160 x 2 x 15/16 x 32,768 x 8,192 x 2 B / 200 GB/s = 0.805 s
    assert d.value("prefill_compute_s") == pytest.approx(32_768 * 2 * L70_PARAMS / (16 * 197e12))
    assert d.value("prefill_allreduce_s") == pytest.approx(160 * 2 * 15 / 16 * 32_768 * 8192 * 2 / 200e9)
    assert d.value("prefill_s_per_request") == pytest.approx(h["prefill_s"])
    assert d.value("prefill_over_ridge") > 1  # compute-bound, as the book says
    # decode at the given batch of 1: (70.55 GB + 163,840 x 33,024 B) / 13.1 TB/s + 24.6 us = 5.82 ms
    assert d.value("decode_step_s") == pytest.approx(
        (L70_PARAMS + 163_840 * (32_768 + 256)) / (16 * 819e9) + 160 * 2 * 15 / 16 * 8192 * 2 / 200e9)
    assert d.value("decode_step_s") == pytest.approx(h["step"])
    assert d.value("decode_node_s_per_request") == pytest.approx(h["dec_s"])
    assert d.value("prefill_to_decode_node_ratio") == pytest.approx(h["ratio"])
    assert d.value("decode_over_ridge") < 1  # bandwidth-bound at batch 1


def test_assumption_without_interference_a_node_ties_but_the_fleets_do_not():
    # With no interference a monolith node at the full batch carries exactly the split's load per node.
    # The fleets still differ: a monolith node, its time mostly prefill, holds 102.8 sequences where a
    # decode node holds 583, and each small step rereads every weight. Monolith: x = (0.7 - 9.44 / 50) /
    # (81.9 ms + 400 x 43.8 us) = 5.14 req/s per node, 0.1945 node-s per request against the split's
    # 0.1170 + 0.0343: one node saved at 1 / 0.0432 = 23.1 req/s, never larger from 2 / 0.1945 = 10.3 req/s.
    d = solve(Params(interference=0))
    h = _by_hand(**{**SEED, "k": 0.0})
    assert d.value("monolith_capacity_per_node") == pytest.approx(d.value("disaggregated_capacity_per_node"))
    assert d.value("monolith_fleet_s_per_request") == pytest.approx(h["s_m"], rel=1e-9)
    assert d.value("monolith_fleet_s_per_request") == pytest.approx(0.1945, abs=1e-4)
    assert d.value("monolith_held_batch") == pytest.approx(h["held_m"], rel=1e-9) == pytest.approx(102.8, abs=0.1)
    assert d.value("one_node_saving_load") == pytest.approx(h["one_node"], rel=1e-9)
    assert d.value("one_node_saving_load") == pytest.approx(23.14, abs=0.01)
    assert d.value("crossover_load") == pytest.approx(h["cross"], abs=0.011)
    assert d.value("crossover_load") == pytest.approx(10.28, abs=0.01)
    # and on a perfect-overlap roofline the monolith is ahead: prefill hides in decode's idle tensor time
    assert d.value("roofline_monolith_capacity_per_node") > d.value("disaggregated_capacity_per_node")


def test_variant_h200_fp8_long_prompts_on_frontend_ethernet():
    # fp8 weights and fp8 compute (the page's old single precision knob meant both); KV stays bf16
    p = Params(gpu="H200", weight_precision="fp8", compute_precision="fp8", prompt_tokens=4000, output_tokens=250,
               tpot_target_ms=40,
               interference=0.5, target_utilization=0.75, request_rate=150, kv_link="100GbE", kv_nics_per_node=2)
    d = solve(p)
    h = _by_hand(gpu=H200, gpus=8, bpp=1, peak=H200["fp8"], prompt=4000, output=250, tpot=0.04, k=0.5,
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


def test_a_single_slow_nic_makes_the_decode_side_bind_and_halves_the_saving():
    d = solve(Params(kv_link="100GbE", kv_nics_per_node=1))
    h = _by_hand(**{**SEED, "link_Bps": GBE100_Bps, "nics": 1})
    # 12.5 GB/s / 655 MB = 19.1 hand-offs per second, below the decode node's 41 req/s of HBM work
    assert d.value("decode_node_capacity") == pytest.approx(12.5e9 / 655.36e6)
    assert d.value("kv_egress_link_utilization") == pytest.approx(8.00e9 / 12.5e9, abs=0.001)
    # per node at the full batch the split now carries less than the monolith, 7.44 against 8.80 req/s
    assert d.value("disaggregated_capacity_per_node") == pytest.approx(h["cap_dis"], rel=1e-9)
    assert d.value("disaggregated_capacity_per_node") < d.value("monolith_capacity_per_node")
    # but the decode pool, sized by its NICs at 655.36 MB / (12.5 GB/s x 0.7) = 0.0749 node-s per request,
    # still leaves the split 0.2304 - 0.1170 - 0.0749 = 0.0385 node-s ahead of the monolith per request:
    # one node at 26.0 req/s, and never larger from 4 / 0.2304 = 17.4 req/s, twice the seed's crossover
    assert d.value("decode_fleet_s_per_request") == pytest.approx(655.36e6 / (12.5e9 * 0.7))
    assert d.value("one_node_saving_load") == pytest.approx(h["one_node"], rel=1e-9)
    assert d.value("one_node_saving_load") == pytest.approx(25.96, abs=0.01)
    assert d.value("crossover_load") == pytest.approx(h["cross"], abs=0.011)
    assert d.value("crossover_load") == pytest.approx(4 / h["s_m"], rel=1e-6) == pytest.approx(17.36, abs=0.01)
    assert d.value("crossover_load") > 1.9 * solve(Params()).value("crossover_load")
    # at 400 req/s: 93 monolith nodes against 47 + 30
    assert (d.value("monolith_nodes"), d.value("prefill_nodes"), d.value("decode_nodes")) == (
        h["n_m"], h["n_p"], h["n_d"]) == (93, 47, 30)
    assert d.value("verdict") == "disaggregate"


def test_infeasible_scenario_is_refused_in_plain_words():
    with pytest.raises(ValidationError, match="Use more accelerators per replica"):
        Params(model="Llama-3.1-405B", tp_degree=4)
    # a part with no fp8 rate, asked to compute in fp8
    with pytest.raises(ValidationError, match="no dense fp8 rate"):
        Params(gpu="A100 80GB", compute_precision="fp8")


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
    # near 100% interference the monolith cannot hold a batch at the target and the crossover falls
    # below the knob's 1 req/s: every load the page takes is then beyond it
    d = solve(Params(interference=k, request_rate=max(1.0, cross * load_factor)))
    assert d.value("disaggregated_nodes") <= d.value("monolith_nodes")


@settings(max_examples=60, deadline=None)
@given(a=st.integers(500, 16_000), b=st.integers(500, 16_000))
def test_longer_prompts_shift_the_pools_toward_prefill(a, b):
    lo, hi = sorted((a, b))
    assume(hi > lo)
    d_lo, d_hi = solve(Params(prompt_tokens=lo)), solve(Params(prompt_tokens=hi))
    # The trend is up, but the decode node holds a whole number of sequences: when a longer prompt
    # drops that batch by one, a decode request's share of the step jumps by up to one sequence's
    # (hypothesis: 7,724 -> 7,793 tokens, 163 -> 161 sequences, the ratio 4.30388 -> 4.30382).
    r_lo, r_hi = d_lo.value("prefill_to_decode_node_ratio"), d_hi.value("prefill_to_decode_node_ratio")
    assert r_hi > r_lo * (1 - 1 / d_lo.value("decode_batch"))
    if hi >= 2 * lo:  # far enough apart for the trend to beat any one sequence's rounding
        assert r_hi > r_lo
    assert d_hi.value("kv_transfer_bytes_per_request") > d_lo.value("kv_transfer_bytes_per_request")
    assert d_hi.value("prefill_arithmetic_intensity") > d_lo.value("prefill_arithmetic_intensity")
    # attention FLOP grow with the prompt, so egress per prefill node can only fall once the all-reduces'
    # fixed latency (160 x 6 us per prompt, whatever its length) is left out
    e_lo, e_hi = (solve(Params(prompt_tokens=n, allreduce_latency_us=0)).value("kv_egress_per_prefill_node_Bps")
                  for n in (lo, hi))
    assert e_hi <= e_lo * (1 + 1e-12)


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


def test_the_chunk_trade_verdict_follows_the_spike():
    # an 8B model on four B200s: the unchunked prefill is a few ms on a step well under 75 ms
    d = solve(Params(model="Llama-3-8B", gpu="B200", tp_degree=4, tpot_target_ms=75.0, prompt_tokens=7500,
                     output_tokens=250, kv_link="100GbE"))
    assert d.value("monolith_spike_step_s") <= 0.075
    assert d.value("chunk_trade_verdict").startswith("Here even the unchunked step meets")


def test_the_engine_against_tensorrt_llms_published_70b_by_hand():
    """TensorRT-LLM's Llama-3.3-70B in FP8 on 2 x H100 at full load, 2,048 in and 2,048 out: 3,082
    output tokens/s measured. The page's default efficiencies on that setup, written out."""
    d = solve(Params())
    kv_tok = 2 * LAYERS * KV_HEADS * HEAD_DIM * 1  # fp8 KV: 163,840 B
    isl = osl = 2048
    cap = math.floor((0.9 * 2 * H100["mem"] - L70_PARAMS) / (kv_tok * (isl + osl)))  # floor(109.4)
    assert d.value("anchor_2048_batch") == cap == 109
    ctx = isl + osl / 2
    attn = 4 * LAYERS * HEADS * HEAD_DIM
    ar_fixed = 2 * LAYERS * AR_LATENCY_S
    ar_tok = 2 * LAYERS * 2 * (2 - 1) / 2 * D_MODEL * 2 / H100["link"]
    mem = (L70_PARAMS + cap * kv_tok * ctx) / (2 * H100["hbm"] * MBU)
    comp = cap * (2 * L70_PARAMS + attn * ctx) / (2 * H100["fp8"] * DECODE_MFU)
    step = max(mem, comp) + ar_fixed + cap * ar_tok + FIXED_S
    prefill = ((2 * L70_PARAMS * isl + attn * isl * (isl - 1) / 2) / (2 * H100["fp8"] * PREFILL_MFU)
               + ar_fixed + isl * ar_tok)
    tokens_per_s = osl / (prefill + osl * step / cap)
    assert d.value("anchor_2048_predicted_tokens_per_s") == pytest.approx(tokens_per_s, rel=1e-6)
    assert d.value("anchor_2048_error") == pytest.approx(tokens_per_s / 3082 - 1, rel=1e-6)
    assert d.value("anchor_1000_measured_tokens_per_s") == 4205
