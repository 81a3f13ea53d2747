"""playground-abuse: the seed's bytes per token, the default scenario and a variant worked by
hand, directions, key figures with their units, and the content's references."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from models.content import load_content
from models.serving.playground_abuse import Params, solve

ROOT = Path(__file__).resolve().parents[2]
CONTENT = ROOT / "content" / "serving" / "playground-abuse.md"


def v(d, key):
    return d.value(key)


# Llama 3 config.json shapes, counted matrix by matrix (embeddings and head 2 x vocab x d; q, o d x d;
# k, v d x 1,024; SwiGLU 3 x d x ffn): the engine counts the same from the catalog's shape.
def _llama(d, ffn, layers):
    return 2 * 128_256 * d + layers * (2 * d * d + 2 * d * 1024 + 3 * d * ffn)


P70, P8 = _llama(8192, 28_672, 80), _llama(4096, 14_336, 32)  # 70.55 B and 8.03 B
PAIR_70B = 2 * 80 * 64 * (128 + 128)  # QK^T and AV FLOP per token per earlier token
PAIR_8B = 2 * 32 * 32 * (128 + 128)
NVLINK = 450e9


def _prefill_s(params, pair, layers, d_model, n, gpus, peak=989e12, mfu=0.6, latency=6e-6):
    """The engine's full prefill: FLOP at the prefill MFU, then 2 all-reduces a layer of n tokens."""
    flops = 2 * params * n + pair * n * (n - 1) / 2
    allreduce = layers * 2 * (latency + 2 * (gpus - 1) / gpus * n * d_model * 2 / NVLINK) if gpus > 1 else 0
    return flops / (gpus * peak * mfu) + allreduce


# --- the seed's own arithmetic ----------------------------------------------------------------


def test_seed_text_is_4_bytes_a_token_kv_is_327680():
    d = solve(Params())
    # Llama-3-70B: K and V x 80 layers x 8 KV heads x 128 dims x 2 bytes = 327,680 B per token
    assert v(d, "kv_bytes_per_token") == 2 * 80 * 8 * 128 * 2 == 327_680
    # "text is ~4 bytes a token": 327,680 / 4 = 81,920
    assert v(d, "kv_to_text_ratio") == pytest.approx(327_680 / 4) == pytest.approx(81_920)


def test_default_scenario_worked_by_hand():
    d = solve(Params())
    # Little's law: 500 tokens at 50 tokens/s = 10 s a reply; a turn is 50 + 10 = 60 s;
    # 20,000 users / 60 s = 333.3 generations/s; x 10 s = 3,333 streams open.
    assert v(d, "stream_s") == pytest.approx(10)
    assert v(d, "generations_per_s") == pytest.approx(20_000 / 60)
    assert v(d, "concurrent_streams") == pytest.approx(20_000 * 10 / 60)
    assert v(d, "output_tokens_per_s") == pytest.approx(20_000 * 10 / 60 * 50)  # 166,667
    # Transport: SSE holds 3,333 x 64 KB = 213 MB; WebSocket 20,000 x 64 KB = 1.28 GB, 83% idle.
    assert v(d, "gateway_memory_sse_bytes") == pytest.approx(3_333.33 * 64_000, rel=1e-5)
    assert v(d, "gateway_memory_websocket_bytes") == pytest.approx(1.28e9)
    assert v(d, "gateway_memory_bytes") == pytest.approx(v(d, "gateway_memory_sse_bytes"))
    assert v(d, "websocket_idle_share") == pytest.approx(50 / 60)
    assert v(d, "gateway_nodes") == 2  # ceil(3,333 / 10,000) + 1 spare
    # Egress: 4 B of text + 96 B of framing per one-token event = 100 B; 166,667 x 100 = 16.7 MB/s
    assert v(d, "wire_bytes_per_token") == pytest.approx(100)
    assert v(d, "egress_Bps") == pytest.approx(166_666.67 * 100, rel=1e-6)
    assert v(d, "framing_overhead") == pytest.approx(25)
    # Session: 8,000 tokens = 32,000 B of text or 8,000 x 327,680 = 2.62 GB of KV.
    assert v(d, "session_text_bytes") == 32_000
    assert v(d, "session_kv_bytes") == pytest.approx(8_000 * 327_680)
    assert v(d, "text_store_bytes") == pytest.approx(20_000 * 32_000)  # 640 MB
    assert v(d, "gpus_to_hold_session_kv") == pytest.approx(20_000 * 8_000 * 327_680 / 80e9)  # 655
    # Re-prefill: 2 x 70.55e9 x 8,000 + 2,621,440 x 8,000 x 7,999 / 2 FLOP on 8 x 989 TFLOP/s at the
    # engine's 60% prefill MFU (255.5 ms), plus 160 all-reduces of 6 us + 2 x 7/8 x 8,000 x 8,192 x 2 B
    # / 450 GB/s (82.5 ms).
    linear = 2 * P70 * 8_000
    attention = PAIR_70B * 8_000 * 7_999 / 2
    assert v(d, "prefill_flops") == pytest.approx(linear + attention)
    assert v(d, "prefill_allreduce_s") == pytest.approx(160 * (6e-6 + 2 * 7 / 8 * 8_000 * 8192 * 2 / 450e9))
    reprefill = _prefill_s(P70, PAIR_70B, 80, 8192, 8_000, 8)
    assert v(d, "reprefill_on_resume_s") == pytest.approx(reprefill) == pytest.approx(0.3380, rel=1e-3)
    # Holding: 2.62 GB / 80 GB = 0.0328 GPUs pinned; 8 x 0.338 GPU-s / 0.0328 = 82.5 s break-even.
    assert v(d, "kv_hold_break_even_s") == pytest.approx(8 * reprefill / (8_000 * 327_680 / 80e9))
    assert v(d, "kv_hold_break_even_s") == pytest.approx(82.51, rel=1e-3)
    # The batch: 64 given; the KV allows 156. The 20 ms TPOT allows 77: each step pays 1.9 ms fixed,
    # 160 x 6 us of all-reduce latency and 141.1 GB of weights at 8 x 3.35 TB/s x 80% (6.58 ms), then
    # each sequence reads 327,680 B x 8,250 of KV (0.126 ms) and adds 160 x 2 x 7/8 x 16 kB / 450 GB/s
    # (10.2 us) of all-reduce; the FLOP side (41.1 us a sequence at 50% decode MFU) allows 333.
    bw = 8 * 3.35e12 * 0.8
    fixed = 1.9e-3 + 160 * 6e-6
    ar_per_seq = 160 * 2 * 7 / 8 * 8192 * 2 / NVLINK
    kv_per_seq = 327_680 * 8_250 / bw
    tpot_cap = math.floor((0.020 - fixed - 2 * P70 / bw) / (kv_per_seq + ar_per_seq))
    flop_cap = math.floor((0.020 - fixed) / ((2 * P70 + PAIR_70B * 8_250) / (8 * 989e12 * 0.5) + ar_per_seq))
    assert (tpot_cap, flop_cap) == (77, 333)
    assert v(d, "decode_batch") == 64
    assert v(d, "batch_memory_cap") == math.floor((8 * 80e9 * 0.9 - 2 * P70) / (8_500 * 327_680)) == 156
    assert v(d, "derived_batch") == min(156, tpot_cap, flop_cap) == 77
    step_64 = 2 * P70 / bw + 64 * kv_per_seq + fixed + 64 * ar_per_seq  # 18.2 ms: bytes bind
    assert v(d, "decode_step_s") == pytest.approx(step_64) == pytest.approx(0.01816, rel=1e-3)
    assert v(d, "decode_step_s") < 0.020
    assert v(d, "cache_through_think_time") == "yes"
    # Quotas: 48 x 64 = 3,072 streams; x 50 tokens/s x 86,400 s x 0.5 = 6.64e9 tokens a day;
    # over 200,000 users spending a quarter of their quota = 132,710 tokens each.
    assert v(d, "replicas_for_peak_demand") == 53  # ceil(3,333 / 64)
    assert v(d, "free_fleet_streams") == 3_072
    assert v(d, "peak_waiting_share") == pytest.approx(1 - 3_072 / (20_000 * 10 / 60))  # 7.84%
    assert v(d, "free_tier_tokens_per_day") == pytest.approx(3_072 * 50 * 86_400 * 0.5)
    assert v(d, "per_user_daily_quota_tokens") == pytest.approx(3_072 * 50 * 86_400 * 0.5 / (200_000 * 0.25))
    assert v(d, "quota_overcommit") == pytest.approx(4)
    # Abuse: 1e9 tokens a day / 132,710 = 7,536 accounts; / 3 per device = 2,512 devices.
    assert v(d, "accounts_to_farm") == math.ceil(1e9 / 132_710.4)
    assert v(d, "devices_to_farm") == math.ceil(7_536 / 3)
    assert v(d, "abuser_share_of_free_fleet") == pytest.approx(1e9 / 6.63552e9)
    assert v(d, "free_account_value_usd_per_day") == pytest.approx(132_710.4 * 10 / 1e6)
    assert v(d, "abuser_requests_per_s") == pytest.approx(1e9 / 1_024 / 86_400)  # 11.3


# --- a variant worked by hand ------------------------------------------------------------------


def test_scraping_for_distillation_and_the_safety_classifier_worked_by_hand():
    d = solve(Params())
    # The reseller's 1e9 tokens a day at the 1,024-token cap are 976,562.5 examples a day; a
    # 52,000-example set (Alpaca's size) takes 52,000 x 1,024 / 1e9 of a day = 0.0532 x 86,400 = 4,600.6 s.
    assert v(d, "distill_examples_per_day") == pytest.approx(1e9 / 1_024)
    assert v(d, "distill_time_for_dataset_s") == pytest.approx(52_000 / (1e9 / 1_024) * 86_400)
    assert v(d, "distill_time_for_dataset_s") == pytest.approx(4_600.6, abs=0.1)
    # Every prompt and every reply screened: 2 x 333.3 generations/s = 666.7 checks/s; a 7B
    # classifier over the same tokens costs 7e9 / 70.55e9 = 9.9% of the 70B generation's compute.
    assert v(d, "moderation_checks_per_s") == pytest.approx(2 * 20_000 / 60)
    assert v(d, "moderation_compute_share") == pytest.approx(7e9 / 70_552_387_584)


def test_variant_websocket_small_model_h200():
    p = Params(users_online=100_000, think_time_s=25, output_tokens=300, tpot_target_ms=1000 / 60,
               transport="WebSocket", gateway_kb_per_connection=32, connections_per_gateway_node=50_000,
               framing_bytes_per_event=80, tokens_per_event=4, prompt_tokens=4_000,
               model="Llama-3-8B", gpu="H200", tp_degree=2, prefill_mfu=0.5, given_batch=128,
               free_tier_replicas=100, fleet_average_utilization=0.4, daily_active_users=1_000_000,
               quota_use_fraction=0.2, abuser_tokens_per_day=5e9)
    d = solve(p)
    assert v(d, "stream_s") == pytest.approx(5)  # 300 / 60
    assert v(d, "concurrent_streams") == pytest.approx(100_000 * 5 / 30)  # 16,667
    assert v(d, "open_connections") == 100_000  # one socket per visit
    assert v(d, "gateway_memory_bytes") == pytest.approx(100_000 * 32_000)  # 3.2 GB
    assert v(d, "gateway_memory_sse_bytes") == pytest.approx(16_666.67 * 32_000, rel=1e-6)
    assert v(d, "gateway_nodes") == 3  # ceil(100,000 / 50,000) + 1
    assert v(d, "reconnects_per_node_loss") == pytest.approx(100_000 / 3)
    assert v(d, "wire_bytes_per_token") == pytest.approx(4 + 80 / 4)  # 24 B
    assert v(d, "egress_Bps") == pytest.approx(16_666.67 * 60 * 24, rel=1e-6)  # 24 MB/s
    # Llama-3-8B: 2 x 32 layers x 8 x 128 x 2 B = 131,072 B per token; / 4 = 32,768
    assert v(d, "kv_bytes_per_token") == 131_072
    assert v(d, "kv_to_text_ratio") == pytest.approx(32_768)
    assert v(d, "session_kv_bytes") == pytest.approx(4_000 * 131_072)
    # the variant sets the prefill MFU at 50%: 68 ms of FLOP + 3.7 ms of all-reduces
    reprefill = _prefill_s(P8, PAIR_8B, 32, 4096, 4_000, 2, mfu=0.5)
    assert v(d, "reprefill_on_resume_s") == pytest.approx(reprefill)
    assert v(d, "kv_hold_break_even_s") == pytest.approx(2 * reprefill / (4_000 * 131_072 / 141e9))
    assert v(d, "free_fleet_streams") == 12_800
    assert v(d, "free_tier_tokens_per_day") == pytest.approx(12_800 * 60 * 86_400 * 0.4)
    quota = 12_800 * 60 * 86_400 * 0.4 / (1_000_000 * 0.2)
    assert v(d, "per_user_daily_quota_tokens") == pytest.approx(quota)
    assert v(d, "accounts_to_farm") == math.ceil(5e9 / quota)


def test_a_long_think_time_tips_the_cache_decision():
    # 200 s of thinking against the default's 82.5 s break-even: drop the KV, keep the text.
    assert solve(Params(think_time_s=200)).value("cache_through_think_time") == "no"


def test_fleet_larger_than_the_peak_keeps_nobody_waiting():
    d = solve(Params(free_tier_replicas=100))
    assert v(d, "peak_waiting_share") == 0


def test_unknown_choices_and_scenarios_that_do_not_fit_are_refused():
    with pytest.raises(ValidationError):
        Params(transport="carrier pigeon")
    with pytest.raises(ValidationError):
        Params(gpu="TPU v5")
    with pytest.raises(ValidationError, match="GB of weights"):
        Params(model="Llama-3.1-405B")
    with pytest.raises(ValidationError, match="such sequences"):
        Params(given_batch=200)


def test_worked_problem_scaling_book_llama_3_70b_int8_on_tpu_v5e():
    """How to Scale Your Model (Austin et al., jax-ml.github.io/scaling-book), "Serving LLaMA 3-70B":
    LLaMA 3-70B with int8 parameters and int8 KV on 8 TPU v5e chips (16 GB each), batch 32 at 8,192
    tokens of context: 70 GB of weights plus 160 kB x 8,192 x 32 = 41.9 GB of KV, and a decode step of
    "(70e9 + 41.9e9) / (8 chips x 8.1e11) = 17ms". Entered here as the free fleet's replica, the
    conversation 8,192 tokens long and replies of 1 token, so that the KV cache holds what the book's
    does. The book works at roofline: full HBM bandwidth and peak FLOP/s, no fixed cost per step, the
    collectives left out; so the efficiencies are set to match, not left at the page's defaults."""
    p = Params(model="Llama-3-70B", gpu="TPU v5e", tp_degree=8, weight_precision="int8", kv_precision="int8",
               compute_precision="bf16", given_batch=32, prompt_tokens=8_191, output_tokens=1,
               hbm_efficiency=1.0, decode_mfu=1.0, prefill_mfu=1.0, step_overhead_ms=0, allreduce_latency_us=0)
    d = solve(p)
    kv_tok = 2 * 80 * 8 * 128 * 1  # 163,840 B (the book's 160 kB is 160 KiB)
    assert v(d, "kv_bytes_per_token") == kv_tok
    assert v(d, "weight_bytes") == pytest.approx(P70) == pytest.approx(70e9, rel=0.01)
    # 8 x 16 GB x 90% - 70.55 GB = 44.6 GB of room: 33 sequences of 8,192 tokens, so the 32 fit
    assert v(d, "batch_memory_cap") == math.floor((8 * 16e9 * 0.9 - P70) / (kv_tok * 8_192)) == 33
    assert 32 * kv_tok * 8_192 == pytest.approx(41.9e9, rel=0.03)
    # The decode step: 70.55 GB of weights and 32 x 163,840 B x 8,191.5 (the average context) of KV at
    # 8 x 819 GB/s = 17.3 ms, the book's 17 ms (it reads 8.1e11 a chip and 41.9 GB of KV). The FLOP side,
    # 32 x (2 x 70.55e9 + 2,621,440 x 8,191.5) / (8 x 197 TFLOP/s) = 3.3 ms, is far below it. The page
    # adds the all-reduces' bytes the book leaves out: 160 x 2 x 7/8 x 32 x 8,192 x 2 B / 200 GB/s.
    memory = (P70 + 32 * kv_tok * 8_191.5) / (8 * 819e9)
    compute = 32 * (2 * P70 + PAIR_70B * 8_191.5) / (8 * 197e12)
    assert memory == pytest.approx(0.017, rel=0.03)
    assert compute < memory  # bytes bind
    decode_allreduce = 160 * 2 * 7 / 8 * 32 * 8192 * 2 / 200e9  # 0.73 ms
    assert v(d, "decode_step_s") == pytest.approx(memory + decode_allreduce)
    # the one KV the page holds per conversation, and the re-prefill on 8 x 197 TFLOP/s bf16 at peak
    # over the chips' 200 GB/s links
    assert v(d, "session_kv_bytes") == pytest.approx(8_191 * kv_tok)
    flops = 2 * P70 * 8_191 + PAIR_70B * 8_191 * 8_190 / 2
    allreduce = 160 * 2 * 7 / 8 * 8_191 * 8192 * 2 / 200e9
    assert v(d, "reprefill_on_resume_s") == pytest.approx(flops / (8 * 197e12) + allreduce)


# --- moves the right way ----------------------------------------------------------------------

def _valid(**kw):
    try:
        return Params(**kw)
    except ValidationError:
        return None


scenarios = st.builds(
    _valid,
    users_online=st.integers(100, 10_000_000),
    think_time_s=st.floats(5, 600),
    output_tokens=st.integers(10, 8_000),
    tpot_target_ms=st.floats(1000 / 300, 200),
    prompt_tokens=st.integers(100, 200_000),
    model=st.sampled_from(["Llama-3-70B", "Llama-3-8B", "Mixtral-8x7B"]),
    gpu=st.sampled_from(["H100 SXM", "H200", "B200", "A100 80GB", "MI300X"]),
    tp_degree=st.sampled_from([1, 2, 4, 8]),
    given_batch=st.just(1),
    daily_active_users=st.integers(100, 100_000_000),
).filter(lambda p: p is not None)  # a scenario the engine refuses is no scenario


@settings(max_examples=200, deadline=None)
@given(p=scenarios)
def test_websocket_never_holds_fewer_connections_than_sse(p):
    d = solve(p)
    assert v(d, "websocket_connections") >= v(d, "sse_connections") * (1 - 1e-12)
    assert v(d, "gateway_memory_websocket_bytes") >= v(d, "gateway_memory_sse_bytes") * (1 - 1e-12)
    assert 0 <= v(d, "websocket_idle_share") < 1
    assert v(d, "session_kv_bytes") > 1000 * v(d, "session_text_bytes")


@settings(max_examples=200, deadline=None)
@given(p=scenarios, factor=st.floats(1.01, 10))
def test_more_users_more_streams_memory_and_egress_same_quota(p, factor):
    more = Params(**{**p.model_dump(), "users_online": min(int(p.users_online * factor) + 1, 10_000_000)})
    a, b = solve(p), solve(more)
    for key in ("concurrent_streams", "gateway_memory_bytes", "egress_Bps", "text_store_bytes", "gateway_nodes"):
        assert v(b, key) >= v(a, key) * (1 - 1e-12), key
    assert v(b, "per_user_daily_quota_tokens") == pytest.approx(v(a, "per_user_daily_quota_tokens"))


@settings(max_examples=200, deadline=None)
@given(p=scenarios, factor=st.floats(1.01, 10))
def test_longer_thinking_fewer_streams_more_idle_sockets(p, factor):
    longer = Params(**{**p.model_dump(), "think_time_s": min(p.think_time_s * factor, 600)})
    a, b = solve(p), solve(longer)
    assert v(b, "concurrent_streams") <= v(a, "concurrent_streams") * (1 + 1e-12)
    assert v(b, "websocket_idle_share") >= v(a, "websocket_idle_share") - 1e-9
    assert v(b, "websocket_connections") == v(a, "websocket_connections")


@settings(max_examples=200, deadline=None)
@given(p=scenarios)
def test_reprefill_grows_faster_than_the_conversation(p):
    n = p.prompt_tokens
    if 2 * n > 200_000:
        n = 100_000
    pa, pb = _valid(**{**p.model_dump(), "prompt_tokens": n}), _valid(**{**p.model_dump(), "prompt_tokens": 2 * n})
    assume(pa is not None and pb is not None)
    a, b = solve(pa), solve(pb)
    # the attention term: FLOP grow faster than the conversation (the all-reduces only in step)
    assert v(b, "prefill_flops") > 2 * v(a, "prefill_flops")
    assert v(b, "reprefill_on_resume_s") > v(a, "reprefill_on_resume_s")
    if p.tp_degree == 1:
        # with all-reduces, their fixed latency is spread over more tokens and a short conversation's
        # break-even can fall as it grows; without them the attention term only pushes it out
        assert v(b, "kv_hold_break_even_s") >= v(a, "kv_hold_break_even_s")


@settings(max_examples=100, deadline=None)
@given(m1=st.floats(0.1, 0.8), m2=st.floats(0.1, 0.8))
def test_higher_mfu_rebuilds_faster(m1, m2):
    lo, hi = sorted((m1, m2))
    assert solve(Params(prefill_mfu=hi)).value("reprefill_on_resume_s") <= solve(
        Params(prefill_mfu=lo)).value("reprefill_on_resume_s")


@settings(max_examples=100, deadline=None)
@given(u1=st.integers(100, 100_000_000), u2=st.integers(100, 100_000_000))
def test_more_daily_users_smaller_quota_more_accounts_to_farm(u1, u2):
    lo, hi = sorted((u1, u2))
    a, b = solve(Params(daily_active_users=lo)), solve(Params(daily_active_users=hi))
    assert v(b, "per_user_daily_quota_tokens") <= v(a, "per_user_daily_quota_tokens")
    assert v(b, "accounts_to_farm") >= v(a, "accounts_to_farm")


@settings(max_examples=50, deadline=None)
@given(k1=st.integers(1, 64), k2=st.integers(1, 64))
def test_coalescing_tokens_cuts_egress(k1, k2):
    lo, hi = sorted((k1, k2))
    assert solve(Params(tokens_per_event=hi)).value("egress_Bps") <= solve(
        Params(tokens_per_event=lo)).value("egress_Bps")


# --- the page's own figures and prose (the contract every page meets: tests/test_contract.py) ---


def test_the_quota_counts_tokens():
    assert solve(Params())["per_user_daily_quota_tokens"].noun == "tokens"


def test_the_page_draws_its_figures():
    c = load_content(CONTENT)
    assert set(c.directives()) == {("diagram", "playground_path"), ("chart", "memory_vs_think_time"),
                                   ("chart", "reprefill_vs_context"), ("chart", "quota_vs_daily_users")}


# --- the page -------------------------------------------------------------------------------------


def test_page_transport_choice_moves_metric_and_prose(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("WALKTHROUGHS_DB", str(tmp_path / "apptest.duckdb"))
    at = AppTest.from_file(str(ROOT / "pages" / "serving" / "playground_abuse.py"), default_timeout=30).run()
    assert not at.exception and not at.error
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Gateway memory"] == "213.3 MB"  # 3,333 SSE responses x 64 KB
    assert metrics["KV / text per token"] == "81,920 ×"
    assert len(at.get("plotly_chart")) == 4
    at.selectbox(key="playground-abuse.transport").set_value("WebSocket").run()
    assert not at.exception
    # 20,000 sockets x 64 KB = 1.28 GB
    assert {m.label: m.value for m in at.metric}["Gateway memory"] == "1.28 GB"
    assert "With **WebSocket** it holds" in "\n".join(m.value for m in at.markdown)


def test_decode_batch_source_says_whether_the_batch_is_a_knob():
    assert solve(Params()).value("decode_batch_source") == "a knob the serving team sets, not derived"
    assert solve(Params(given_batch=0)).value("decode_batch_source") == "the tighter of the TPOT and KV caps"
