"""ttft-slo-200ms: the 200 ms budget worked by hand from published figures, a hand-worked variant,
properties, and the FIFO queue engine against the M/M/1 and M/M/c tails over replications."""

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st
from pydantic import ValidationError

from models.engine.knobs import CATALOG_ACCELERATORS, CATALOG_MODELS
from models.serving.ttft_slo_200ms import Params, run_queue, simulate, simulation_steps, solve

# Published figures, typed here on purpose so the test does not lean on the code under test.
H100_BF16 = 989e12  # dense, H100 SXM datasheet
H100_FP8 = 1979e12
NVLINK = 450e9  # H100 NVLink 4, each way
# Llama 3 shapes (the Llama 3 paper): 70B has 80 layers, d_model 8,192 (64 heads x 128), 8 KV heads,
# an MLP of 28,672, vocabulary 128,256; 8B has 32 layers, d_model 4,096, 8 KV heads, MLP 14,336.
# Parameters are counted from the matrices, as the engine does (the norms' 0.002% left out).
L70_LAYERS, L70_DMODEL = 80, 8192
L70_PARAMS = 80 * (2 * 8192**2 + 2 * 8192 * 1024 + 3 * 8192 * 28672) + 2 * 128256 * 8192  # 70.55e9
L8_LAYERS, L8_DMODEL = 32, 4096
L8_PARAMS = 32 * (2 * 4096**2 + 2 * 4096 * 1024 + 3 * 4096 * 14336) + 2 * 128256 * 4096  # 8.03e9
# The engine's conventions: 6 us per all-reduce, two all-reduces per layer, a ring over NVLink.
# Its defaults (models/engine/defaults.py) the seed tests use: prefill at 60% of peak, and the
# weight read of a decode iteration at 80% of HBM bandwidth.
AR_LATENCY = 6e-6


def prefill_flops(params, layers, d_model, n, before=0.0):
    """2 x params per token, plus causal attention: each token meets every earlier one, QK^T and
    AV at 2 FLOP a multiply-add over d_model (heads x head_dim) -> 4 x d_model per pair and layer.
    n new tokens after `before` cached ones make n x before + n (n - 1) / 2 pairs."""
    return 2 * params * n + 4 * layers * d_model * (n * before + n * (n - 1) / 2)


def allreduce_s(layers, d_model, n, tp, link=NVLINK, latency=AR_LATENCY):
    """Two all-reduces a layer of n tokens' bf16 hidden states: latency plus 2 (tp - 1) / tp of the
    payload over each link."""
    if tp == 1:
        return 0.0
    return 2 * layers * (latency + 2 * (tp - 1) / tp * n * d_model * 2 / link)


def prefill_s(params, layers, d_model, n, flops, tp, before=0.0):
    return prefill_flops(params, layers, d_model, n, before) / flops + allreduce_s(layers, d_model, n, tp)


def longest_flops(params, layers, d_model, flops_budget):
    """Largest n with 2 P n + 2 L d n (n - 1) <= budget: the positive root of the quadratic."""
    a, b = 2 * layers * d_model, 2 * params - 2 * layers * d_model
    return math.floor((-b + math.sqrt(b * b + 4 * a * flops_budget)) / (2 * a))


def longest_prompt(params, layers, d_model, flops, tp, budget_s):
    """Largest n whose prefill, all-reduces included, fits budget_s: the same quadratic in time."""
    a = 2 * layers * d_model / flops
    ar1 = allreduce_s(layers, d_model, 1, tp) - allreduce_s(layers, d_model, 0, tp)
    b = (2 * params - 2 * layers * d_model) / flops + ar1
    c = allreduce_s(layers, d_model, 0, tp) - budget_s
    if c >= 0:
        return 0
    return max(0, math.floor((-b + math.sqrt(b * b - 4 * a * c)) / (2 * a)))


def erlang_c(c, a):
    """Erlang C from the textbook formula with factorials (fine for small c)."""
    top = a**c / math.factorial(c) * c / (c - a)
    return top / (sum(a**k / math.factorial(k) for k in range(c)) + top)


def mm1_limit_newton(k, eps):
    """rho with rho e^{-k (1 - rho)} = eps, by Newton on ln rho + k rho = ln eps + k."""
    rho = eps
    for _ in range(50):
        g = math.log(rho) + k * rho - math.log(eps) - k
        rho -= g / (1 / rho + k)
    return rho


def test_seed_budget_two_hundred_ms_at_p99():
    d = solve(Params())
    # 200 - 40 network - 10 routing - 50 queue - 20 first token = 80 ms for prefill
    assert d.value("prefill_budget_s") == pytest.approx(0.080)
    assert d.value("prefill_share_of_slo") == pytest.approx(0.40)


def test_seed_prompt_length_the_budget_allows():
    d = solve(Params())
    flops = 8 * H100_BF16 * 0.6  # 4.747e15 FLOP/s at 60% prefill MFU
    assert d.value("replica_prefill_flops") == pytest.approx(flops)
    budget = 0.080 * flops  # 3.798e14 FLOP
    # linear: 3.798e14 / (2 x 70.55e9) = 2,691.4 -> 2,691 tokens
    assert d.value("max_prompt_tokens_linear") == math.floor(budget / (2 * L70_PARAMS)) == 2691
    # attention coefficient 2 x 80 x 8,192 = 1,310,720 FLOP per token pair... per n (n - 1)
    assert d.value("attention_prefill_coefficient") == 2 * L70_LAYERS * L70_DMODEL == 1_310_720
    n = longest_flops(L70_PARAMS, L70_LAYERS, L70_DMODEL, budget)
    assert d.value("max_prompt_tokens_with_attention") == n == 2627
    assert prefill_flops(L70_PARAMS, L70_LAYERS, L70_DMODEL, n) <= budget
    assert prefill_flops(L70_PARAMS, L70_LAYERS, L70_DMODEL, n + 1) > budget
    # the all-reduces: 160 x (6 us + 2 x 7/8 x n x 8,192 x 2 B / 450 GB/s) = 0.96 ms + 10.19 us a token
    assert d.value("allreduce_fixed_s") == pytest.approx(160 * 6e-6)
    assert d.value("allreduce_per_token_s") == pytest.approx(160 * 1.75 * 16384 / 450e9)
    n_all = longest_prompt(L70_PARAMS, L70_LAYERS, L70_DMODEL, flops, 8, 0.080)
    assert d.value("max_prompt_tokens") == n_all == 1953
    assert prefill_s(L70_PARAMS, L70_LAYERS, L70_DMODEL, n_all, flops, 8) <= 0.080
    assert prefill_s(L70_PARAMS, L70_LAYERS, L70_DMODEL, n_all + 1, flops, 8) > 0.080
    # 0.96 ms + 1,953 x 10.19 us = 20.87 ms of the 79.97 ms: 26%
    ar = allreduce_s(L70_LAYERS, L70_DMODEL, 1953, 8)
    assert d.value("allreduce_share_at_max") == pytest.approx(
        ar / prefill_s(L70_PARAMS, L70_LAYERS, L70_DMODEL, 1953, flops, 8)) == pytest.approx(0.2610, rel=1e-3)
    # attention equals weights where 2 L d n (n - 1) = 2 P n: n = P / (L d) + 1 = 107,655
    assert d.value("attention_equals_weights_tokens") == pytest.approx(L70_PARAMS / (L70_LAYERS * L70_DMODEL) + 1)
    # "prefill alone spends it on a long prompt": the whole 200 ms, at 4,825 tokens
    assert d.value("tokens_for_whole_slo") == longest_prompt(L70_PARAMS, L70_LAYERS, L70_DMODEL, flops, 8, 0.2) == 4825


def test_seed_long_prompt_and_chunked_prefill():
    d = solve(Params())
    flops = 8 * H100_BF16 * 0.6
    # 32,000 tokens in one piece: (141.1e9 x 32,000 + 1,310,720 x 32,000 x 31,999) / 4.747e15 = 1.234 s,
    # + 327 ms of all-reduces = 1.56 s
    whole = prefill_s(L70_PARAMS, L70_LAYERS, L70_DMODEL, 32_000, flops, 8)
    assert d.value("long_prompt_prefill_s") == pytest.approx(whole)
    assert whole == pytest.approx(1.5611, rel=1e-3)
    # last 512-token chunk: 31,488 tokens before it;
    # 512 x (141.1e9 + 4 x 80 x 8,192 x (31,488 + 255.5)) / 4.747e15 + 0.96 ms + 512 x 10.19 us
    last = (512 * (2 * L70_PARAMS + 4 * L70_LAYERS * L70_DMODEL * (32_000 - 512 + 255.5)) / flops
            + 160 * (6e-6 + 1.75 * 512 * 16384 / 450e9))
    assert d.value("chunk_time_s") == pytest.approx(last)
    assert d.value("chunk_time_s") == pytest.approx(prefill_s(L70_PARAMS, L70_LAYERS, L70_DMODEL, 512, flops, 8,
                                                              31_488))
    assert last == pytest.approx(0.03037, rel=1e-3)
    assert d.value("long_prompt_chunks_continuous") == pytest.approx(62.5)
    assert d.value("long_prompt_chunks") == math.ceil(32_000 / 512) == 63
    # admission: the 80 ms budget minus one such chunk
    n = longest_prompt(L70_PARAMS, L70_LAYERS, L70_DMODEL, flops, 8, 0.080 - last)
    assert d.value("max_admissible_prompt_tokens") == n == 1209
    # the smallest compute-bound chunk: 141.1 GB / (8 x 3.35 TB/s x 0.8) = 6.58 ms of weight read,
    # which 4.747e15 FLOP/s spends on 221.4 tokens' weight FLOP
    read = 2 * L70_PARAMS / (8 * 3.35e12 * 0.8)
    assert d.value("weight_read_s") == pytest.approx(read)
    assert d.value("chunk_floor_tokens_continuous") == pytest.approx(read * flops / (2 * L70_PARAMS))
    assert d.value("chunk_floor_tokens") == math.ceil(read * flops / (2 * L70_PARAMS)) == 222


def test_a_chunk_that_overruns_the_prefill_budget_is_a_declared_condition_with_zero_tokens():
    flops = 8 * H100_BF16 * 0.6
    # the seed's last 512-token chunk of the 32,000-token prompt, by hand (30.37 ms, as above)
    last = (512 * (2 * L70_PARAMS + 4 * L70_LAYERS * L70_DMODEL * (32_000 - 512 + 255.5)) / flops
            + 160 * (6e-6 + 1.75 * 512 * 16384 / 450e9))
    assert solve(Params()).violations == []  # 80 ms - 30.37 ms leaves 1,209 tokens (above)
    # 100 ms of network: 200 - 100 - 10 - 50 - 20 = 20 ms for prefill, 10.4 ms short of one chunk
    d = solve(Params(network_ms=100))
    assert d.value("prefill_budget_s") == pytest.approx(0.020)
    assert d.value("admission_prefill_budget_s") == pytest.approx(0.020 - last)
    assert d.value("max_admissible_prompt_tokens") == 0  # none, not a negative count
    messages = dict(d.violations)
    assert list(messages) == ["max_admissible_prompt_tokens"]
    text = messages["max_admissible_prompt_tokens"]
    assert "512-token chunk of the 32,000-token prompt takes 30.37 ms, more than the 20 ms of the 200 ms SLO" in text
    # A budget above the chunk but below one token's prefill (the all-reduces' 160 x 6 us = 0.96 ms
    # come first): a 99 ms queue allowance leaves 31 ms, 0.63 ms after the chunk. Still no prompt fits.
    d = solve(Params(queue_budget_ms=99))
    assert d.value("admission_prefill_budget_s") == pytest.approx(0.031 - last)
    assert 0 < 0.031 - last < 160 * 6e-6
    assert d.value("max_admissible_prompt_tokens") == 0
    (key, text), = d.violations
    assert key == "max_admissible_prompt_tokens"
    # one token: 0.96 ms of all-reduce latency + 10.2 us of ring bytes + 29.7 us of FLOP
    one_token = prefill_s(L70_PARAMS, L70_LAYERS, L70_DMODEL, 1, flops, 8)
    assert f"less than a one-token prefill ({one_token * 1000:.4g} ms)" in text
    # 95 ms: 35 ms - 30.37 ms = 4.63 ms, room for a few hundred tokens, and the scenario holds
    d = solve(Params(queue_budget_ms=95))
    n = longest_prompt(L70_PARAMS, L70_LAYERS, L70_DMODEL, flops, 8, 0.035 - last)
    assert d.value("max_admissible_prompt_tokens") == n > 0
    assert d.violations == []


def test_seed_utilization_the_slo_costs():
    d = solve(Params())
    flops = 8 * H100_BF16 * 0.6
    svc = prefill_s(L70_PARAMS, L70_LAYERS, L70_DMODEL, 1000, flops, 8)  # 30.0 ms of FLOP + 11.2 ms of all-reduces
    mu, lam, t, eps = 1 / svc, 100.0, 0.050, 0.01
    a = lam * svc
    assert d.value("service_time_s") == pytest.approx(svc) == pytest.approx(0.04115, rel=1e-3)
    assert d.value("offered_load") == pytest.approx(a)
    # M/M/1: rho e^{-mu (1 - rho) t} = 0.01, solved by Newton here
    rho = mm1_limit_newton(mu * t, eps)
    assert d.value("max_utilization_mm1") == pytest.approx(rho, rel=1e-6)
    assert rho == pytest.approx(0.0324, abs=5e-4)
    assert d.value("replicas_separate_continuous") == pytest.approx(a / rho, rel=1e-6)
    # 4.115 replicas' worth of work at 3.24% busy: 127.02 -> 128
    assert d.value("replicas_separate") == math.ceil(a / rho) == 128
    # M/M/c: six replicas miss (3.2% past the allowance), seven meet (0.46%)
    tail = lambda c: erlang_c(c, a) * math.exp(-(c * mu - lam) * t)  # noqa: E731
    assert tail(6) > eps >= tail(7)
    assert d.value("replicas_pooled") == 7
    assert d.value("max_utilization_pooled") == pytest.approx(a / 7)
    assert d.value("pooled_wait_probability") == pytest.approx(erlang_c(7, a))
    assert d.value("pooled_tail_at_budget") == pytest.approx(tail(7))
    assert d.value("pooled_tail_after_losing_one") == pytest.approx(tail(6))
    assert d.value("pooled_quantile_wait_s") == pytest.approx(math.log(erlang_c(7, a) / eps) / (7 * mu - lam))
    # per-replica queues run as busy as the pool: p99 wait ln(rho / 0.01) / (mu (1 - rho))
    r = a / 7
    assert d.value("mm1_quantile_wait_at_pooled_util_s") == pytest.approx(math.log(r / eps) / (mu * (1 - r)))
    assert d.value("gpus_pooled") == 56 and d.value("gpus_separate") == 1024


def test_variant_small_model_fp8_looser_slo_by_hand():
    # One GPU per replica: no all-reduces, so prefill is FLOP alone.
    p = Params(model="Llama-3-8B", tp_degree=1, weight_precision="fp8", compute_precision="fp8", prefill_mfu=0.4,
               slo_ms=300, slo_percentile=0.999, network_ms=60, routing_ms=10, queue_budget_ms=80, first_token_ms=30,
               mean_prompt_tokens=2000, long_prompt_tokens=64_000, chunk_tokens=1024, arrival_rps=50)
    d = solve(p)
    assert L8_PARAMS == 8_029_995_008
    flops = 1 * H100_FP8 * 0.4  # 791.6 TFLOP/s
    budget_s = (300 - 60 - 10 - 80 - 30) / 1000  # 120 ms
    assert d.value("prefill_budget_s") == pytest.approx(budget_s)
    assert d.value("allreduce_fixed_s") == 0 and d.value("allreduce_per_token_s") == 0
    assert d.value("max_prompt_tokens_linear") == math.floor(budget_s * flops / (2 * L8_PARAMS))
    n = longest_flops(L8_PARAMS, L8_LAYERS, L8_DMODEL, budget_s * flops)
    assert d.value("max_prompt_tokens_with_attention") == n == d.value("max_prompt_tokens")
    last = prefill_flops(L8_PARAMS, L8_LAYERS, L8_DMODEL, 1024, 64_000 - 1024) / flops
    assert d.value("chunk_time_s") == pytest.approx(last)
    assert d.value("max_admissible_prompt_tokens") == longest_flops(L8_PARAMS, L8_LAYERS, L8_DMODEL,
                                                                    (budget_s - last) * flops)
    svc = prefill_flops(L8_PARAMS, L8_LAYERS, L8_DMODEL, 2000) / flops
    mu, lam, t, eps = 1 / svc, 50.0, 0.080, 0.001
    rho = mm1_limit_newton(mu * t, eps)
    assert d.value("max_utilization_mm1") == pytest.approx(rho, rel=1e-6)
    assert d.value("replicas_separate") == math.ceil(lam * svc / rho)
    a = lam * svc
    c = math.floor(a) + 1
    while erlang_c(c, a) * math.exp(-(c * mu - lam) * t) > eps:
        c += 1
    assert d.value("replicas_pooled") == c


def test_jax_scaling_book_prefill_of_240_tokens_on_a_tpu_v5e_4x2():
    """Austin et al., "How To Scale Your Model", Part 8 "Serving LLaMA 3-70B on TPUs", "What about
    prefill?" (jax-ml.github.io/scaling-book/applied-inference): LLaMA 3-70B with int8 weights and
    int8 OPs on a TPU v5e 4x2. "Very roughly ... the MLP layers, which use batch x 2 x 3 x d_model² x
    ffw_multiplier x n_layers int8 OPs. Using BS=240, that is 26e12 FLOPs. On a TPU v5e 4x2, this is
    8ms minimum at 100% MFU. At best, we are probably getting half that, so 16ms ... Including
    attention, I would guess this puts us somewhere around 20-30ms." Entered here as a 240-token
    chunk, the first of a prompt, on 8 x TPU v5e (393 TOP/s int8, 200 GB/s ICI a link)."""
    # The book's own arithmetic: 240 x 2 x 3 x 8,192² x 3.5 x 80 = 2.7e13 (it rounds to 26e12).
    mlp = 240 * 2 * 3 * 8192**2 * 3.5 * 80
    assert mlp == pytest.approx(26e12, rel=0.05)
    assert mlp / (8 * 393e12) == pytest.approx(0.0086, rel=0.01)  # "8ms minimum at 100% MFU"
    kw = dict(gpu="TPU v5e", tp_degree=8, weight_precision="int8", compute_precision="int8", chunk_tokens=240)
    ops = 8 * 393e12
    # The page counts every weight (attention projections and embeddings too, 70.55e9 against the
    # MLP's 56.4e9), the causal attention of the 240 tokens, and the ICI all-reduces:
    # 160 x (6 us + 2 x 7/8 x 240 x 8,192 x 2 B / 200 GB/s) = 6.47 ms.
    ar = 160 * (6e-6 + 2 * 7 / 8 * 240 * 8192 * 2 / 200e9)
    assert ar == pytest.approx(0.006465, rel=1e-3)
    for mfu in (1.0, 0.5):
        d = solve(Params(prefill_mfu=mfu, **kw))
        by_hand = prefill_flops(L70_PARAMS, L70_LAYERS, L70_DMODEL, 240) / (ops * mfu) + ar
        assert d.value("first_chunk_time_s") == pytest.approx(by_hand)
    # at 100%: 10.8 ms of OPs + 6.5 ms = 17.3 ms; at the book's "half", 28.1 ms: inside its 20-30 ms
    assert solve(Params(prefill_mfu=1.0, **kw)).value("first_chunk_time_s") == pytest.approx(0.01726, rel=1e-3)
    assert 0.020 <= solve(Params(prefill_mfu=0.5, **kw)).value("first_chunk_time_s") <= 0.030


def test_impossible_scenarios_are_refused_in_plain_words():
    with pytest.raises(ValidationError, match="leaves"):
        Params(network_ms=150, queue_budget_ms=50)  # 150 + 10 + 50 + 20 = 230 > 200
    with pytest.raises(ValidationError, match="GB of weights"):
        Params(model="Llama-3.1-405B")  # 810 GB in bf16 on 8 x 80 GB
    with pytest.raises(ValidationError, match="scale-up domain"):
        Params(tp_degree=16)  # H100 SXM: 8 to an NVLink domain


@settings(max_examples=120, deadline=None)
@given(model=st.sampled_from(CATALOG_MODELS + ("Custom",)), gpu=st.sampled_from(CATALOG_ACCELERATORS + ("Custom",)),
       tp=st.sampled_from([1, 2, 4, 8, 16, 32, 64, 72]), weights=st.sampled_from(["bf16", "fp8", "int8", "int4"]),
       compute=st.sampled_from(["bf16", "fp8", "int8"]))
def test_every_model_part_and_format_runs_or_is_refused_in_a_sentence(model, gpu, tp, weights, compute):
    try:
        p = Params(model=model, gpu=gpu, tp_degree=tp, weight_precision=weights, compute_precision=compute)
    except ValidationError as e:
        assert str(e.errors()[0]["msg"]).endswith("."), e
        return
    d = solve(p)
    assert d.value("max_prompt_tokens") <= d.value("max_prompt_tokens_with_attention")
    assert all(not (isinstance(s.value, float) and math.isnan(s.value)) for s in d)


# --- properties ------------------------------------------------------------------------------


def _params(**kw):
    try:
        return Params(**kw)
    except ValidationError:
        assume(False)


@settings(max_examples=150, deadline=None)
@given(n1=st.floats(0, 300), n2=st.floats(0, 300), mfu=st.floats(0.1, 0.8))
def test_more_network_never_allows_a_longer_prompt(n1, n2, mfu):
    lo, hi = sorted((n1, n2))
    a, b = _params(network_ms=lo, prefill_mfu=mfu), _params(network_ms=hi, prefill_mfu=mfu)
    da, db = solve(a), solve(b)
    for key in ("prefill_budget_s", "max_prompt_tokens_linear", "max_prompt_tokens_with_attention", "max_prompt_tokens",
                "max_admissible_prompt_tokens"):
        assert db.value(key) <= da.value(key), key


@settings(max_examples=150, deadline=None)
@given(q1=st.floats(1, 1000), q2=st.floats(1, 1000), rate=st.floats(1, 2000), prompt=st.integers(50, 16_000),
       pct=st.floats(0.9, 0.9999))
def test_a_longer_queue_allowance_never_lowers_the_utilization_or_adds_replicas(q1, q2, rate, prompt, pct):
    lo, hi = sorted((q1, q2))
    kw = dict(slo_ms=2000, network_ms=10, routing_ms=5, first_token_ms=5, arrival_rps=rate,
              mean_prompt_tokens=prompt, slo_percentile=pct)
    da, db = solve(_params(queue_budget_ms=lo, **kw)), solve(_params(queue_budget_ms=hi, **kw))
    assert db.value("max_utilization_mm1") >= da.value("max_utilization_mm1") - 1e-11
    assert db.value("replicas_pooled") <= da.value("replicas_pooled")
    assert db.value("replicas_separate") <= da.value("replicas_separate")


@settings(max_examples=150, deadline=None)
@given(c1=st.integers(64, 8192), c2=st.integers(64, 8192), long=st.integers(1000, 128_000))
def test_a_bigger_chunk_never_shortens_the_tail_wait(c1, c2, long):
    lo, hi = sorted((c1, c2))
    da, db = solve(_params(chunk_tokens=lo, long_prompt_tokens=long)), solve(_params(chunk_tokens=hi, long_prompt_tokens=long))
    assert db.value("chunk_time_s") >= da.value("chunk_time_s") - 1e-15
    assert db.value("max_admissible_prompt_tokens") <= da.value("max_admissible_prompt_tokens")


@settings(max_examples=200, deadline=None)
@given(rate=st.floats(1, 2000), prompt=st.integers(50, 16_000), q=st.floats(1, 150), pct=st.floats(0.9, 0.9999),
       long=st.integers(1000, 128_000), chunk=st.integers(64, 8192), net=st.floats(0, 100))
def test_invariants_hold_everywhere(rate, prompt, q, pct, long, chunk, net):
    d = solve(_params(arrival_rps=rate, mean_prompt_tokens=prompt, queue_budget_ms=q, slo_percentile=pct,
                      long_prompt_tokens=long, chunk_tokens=chunk, network_ms=net))
    assert d.value("max_prompt_tokens_with_attention") <= d.value("max_prompt_tokens_linear")
    assert d.value("max_prompt_tokens") <= d.value("max_prompt_tokens_with_attention")
    assert d.value("max_admissible_prompt_tokens") <= d.value("max_prompt_tokens")
    assert d.value("chunk_time_s") <= d.value("long_prompt_prefill_s") * (1 + 1e-12)
    # pooling never needs more replicas than separate queues, and the pool keeps its promise
    assert d.value("replicas_pooled") <= d.value("replicas_separate")
    assert d.value("pooled_tail_at_budget") <= (1 - pct) * (1 + 1e-9)
    assert d.value("max_utilization_pooled") < 1
    assert (1 - pct) <= d.value("max_utilization_mm1") < 1


# --- the queue engine against the closed forms -----------------------------------------------


def _replicate(servers, lam, mu, budget, tail, reps=20, customers=200_000):
    q, over = [], []
    for seed in range(reps):
        r = run_queue("check", servers, lam, mu, budget, tail, np.random.default_rng(500 + seed), customers)
        q.append(r.sim_quantile_s)
        over.append(r.sim_over_budget)
    q, over = np.array(q), np.array(over)
    t = 2.093 / math.sqrt(reps)  # 95% t interval, 19 dof (at a 2.8% busy M/M/1 only ~1 in 36 waits at all)
    return r, q.mean(), t * q.std(ddof=1), over.mean(), t * over.std(ddof=1)


@pytest.mark.parametrize("which", ["separate", "pooled", "separate_at_pooled_util"])
def test_queue_engine_confirms_the_tail_over_replications(which):
    p = Params()
    d = solve(p)
    mu, qb, eps = d.value("service_rate_per_s"), d.value("queue_budget_s"), d.value("tail_probability")
    servers, lam = {
        "separate": (1, d.value("max_utilization_mm1") * mu),
        "pooled": (d.value("replicas_pooled"), p.arrival_rps),
        "separate_at_pooled_util": (1, d.value("max_utilization_pooled") * mu),
    }[which]
    r, q_mean, q_half, o_mean, o_half = _replicate(servers, lam, mu, qb, eps)
    print(f"{which}: simulated p99 wait {q_mean * 1000:.2f} ± {q_half * 1000:.2f} ms, closed form "
          f"{r.analytic_quantile_s * 1000:.2f} ms; past the allowance {o_mean:.5f} ± {o_half:.5f}, "
          f"closed form {r.analytic_over_budget:.5f}")
    assert abs(q_mean - r.analytic_quantile_s) <= max(q_half, 1e-4)
    assert q_half / r.analytic_quantile_s < 0.05
    assert abs(o_mean - r.analytic_over_budget) <= o_half
    if which == "separate":  # the M/M/1 limit puts exactly the tail share past the allowance
        assert r.analytic_over_budget == pytest.approx(eps)


def test_simulate_returns_the_three_queues_seeded():
    a, b = simulate(Params(), seed=4, customers=20_000), simulate(Params(), seed=4, customers=20_000)
    assert a.pooled.sim_quantile_s == b.pooled.sim_quantile_s
    assert a.pooled.servers == 7 and a.separate.servers == 1  # the seven of the utilization test
    # the per-replica queue as busy as the pool misses the allowance at the percentile, the pool does not
    assert a.separate_at_pooled_util.sim_quantile_s > 0.05 > a.pooled.analytic_quantile_s


def test_erlang_c_survives_loads_where_factorial_terms_overflow():
    """The shared engine's a^k / k! terms overflow past a ~ 700 (its result is NaN); the model
    falls back to the Erlang B recursion. Check both against a log-space textbook formula."""
    from models.serving.ttft_slo_200ms import erlang_c as model_erlang_c
    from models.sim.queue import erlang_c_wait_probability

    def log_space(c, a):
        logs = [k * math.log(a) - math.lgamma(k + 1) for k in range(c)]
        log_top = c * math.log(a) - math.lgamma(c + 1) + math.log(c / (c - a))
        m = max(max(logs), log_top)
        top = math.exp(log_top - m)
        return top / (sum(math.exp(x - m) for x in logs) + top)

    for c, a in [(6, 3.6), (40, 35.0), (300, 280.0)]:
        assert model_erlang_c(c, a) == pytest.approx(erlang_c_wait_probability(c, a), rel=1e-9)
    for c, a in [(760, 700.0), (1300, 1250.0), (4400, 4300.0)]:  # past ~710 the engine returns NaN today
        assert model_erlang_c(c, a) == pytest.approx(log_space(c, a), rel=1e-9)
    d = solve(Params(arrival_rps=1796, mean_prompt_tokens=10177, queue_budget_ms=1, slo_percentile=0.9375))
    assert all(not (isinstance(s.value, float) and math.isnan(s.value)) for s in d)


# --- routing: random (M/M/1), power of two choices (mean field), one shared queue (M/M/c) ----------

from collections import deque  # noqa: E402

from models.serving.ttft_slo_200ms import power_of_two_wait_quantile, power_of_two_wait_tail  # noqa: E402


def _p2_tail_by_hand(rho, mu, t, terms=40):
    """Mean-field power of two: s_k = rho^(2^k - 1); an arrival finds k ahead with probability
    s_k^2 - s_(k+1)^2 and then waits k exponential services: P(Erlang(k, mu) > t)."""
    s = [rho ** (2 ** k - 1) for k in range(terms)]
    total = 0.0
    for k in range(1, terms - 1):
        erlang = math.exp(-mu * t) * sum((mu * t) ** j / math.factorial(j) for j in range(k))
        total += (s[k] ** 2 - s[k + 1] ** 2) * erlang
    return total


def test_seed_routing_comparison_by_hand():
    d = solve(Params())
    mu, a = d.value("service_rate_per_s"), d.value("offered_load")
    assert d.value("replicas_pooled") == 7
    rho = a / 7
    assert d.value("routing_utilization") == pytest.approx(rho)
    # random routing: P(W > t) = rho e^{-mu (1 - rho) t} per replica
    for pct in (95, 99):
        q = 1 - pct / 100
        assert d.value(f"random_wait_p{pct}_s") == pytest.approx(math.log(rho / q) / (mu * (1 - rho)))
        assert _p2_tail_by_hand(rho, mu, d.value(f"power_of_two_wait_p{pct}_s")) == pytest.approx(q, rel=1e-6)
        c_wait = d.value("pooled_wait_probability")
        assert d.value(f"pooled_wait_p{pct}_s") == pytest.approx(math.log(c_wait / q) / (7 * mu - 100))
        # a better router never waits longer
        pooled, two, random = (d.value(f"{who}_wait_p{pct}_s") for who in ("pooled", "power_of_two", "random"))
        assert pooled < two < random
    # power of two: only rho^2 wait at all (both sampled queues busy)
    assert d.value("power_of_two_wait_probability") == pytest.approx(rho * rho)
    # means: M/M/1 1 / (mu (1 - rho)); mean field (1 + rho^2 + rho^6 + rho^14 + ...) / mu;
    # M/M/c C / (c mu - lambda) + 1 / mu
    assert d.value("random_mean_sojourn_s") == pytest.approx(1 / (mu * (1 - rho)))
    assert d.value("power_of_two_mean_sojourn_s") == pytest.approx(sum(rho ** (2 ** i - 2) for i in range(1, 30)) / mu)
    assert d.value("pooled_mean_sojourn_s") == pytest.approx(c_wait / (7 * mu - 100) + 1 / mu)
    # the bounds: 40 + 10 + p99 wait + 80 + 20 ms
    for who in ("random", "power_of_two", "pooled"):
        assert d.value(f"ttft_p99_bound_{who}_s") == pytest.approx(0.150 + d.value(f"{who}_wait_p99_s"))


def test_power_of_two_by_hand_at_half_load():
    # rho = 1/2, mu = 1: s = 1, 1/2, 1/8, 1/128; P(W > 0) = s_1^2 = 1/4
    assert power_of_two_wait_tail(0.5, 1.0, 0.0) == pytest.approx(0.25)
    # P(W > 1) = (1/4 - 1/64) e^-1 + (1/64 - 1/16384) e^-1 (1 + 1) + (1/16384 - 2^-30) e^-1 (1 + 1 + 1/2) + ...
    want = (1 / 4 - 1 / 64) / math.e + (1 / 64 - 1 / 16384) * 2 / math.e + (1 / 16384 - 2 ** -30) * 2.5 / math.e
    assert power_of_two_wait_tail(0.5, 1.0, 1.0) == pytest.approx(want, rel=1e-8)
    # fewer than 1% wait when rho^2 <= 1%: the p99 wait is 0 at rho = 0.09 (0.81% wait), not at 0.11
    assert power_of_two_wait_quantile(0.09, 1.0, 0.01) == 0.0
    assert power_of_two_wait_quantile(0.11, 1.0, 0.01) > 0


def test_replicas_for_power_of_two_is_the_fewest_that_meets_the_allowance():
    d = solve(Params())
    mu, a, qb = d.value("service_rate_per_s"), d.value("offered_load"), d.value("queue_budget_s")
    n = d.value("replicas_power_of_two")
    assert _p2_tail_by_hand(a / n, mu, qb) <= 0.01 < _p2_tail_by_hand(a / (n - 1), mu, qb)
    assert d.value("replicas_pooled") < n < d.value("replicas_separate")


def _power_of_two_sim(n_queues, rho, mu, customers, rng):
    """N single-server FIFO queues; each arrival samples two at random and joins the shorter."""
    lam = rho * mu * n_queues
    t = np.cumsum(rng.exponential(1 / lam, customers)).tolist()
    svc = rng.exponential(1 / mu, customers).tolist()
    picks = rng.integers(0, n_queues, size=(customers, 2)).tolist()
    queues = [deque() for _ in range(n_queues)]  # departure times of the requests in each queue
    waits = np.empty(customers)
    for i in range(customers):
        now = t[i]
        a, b = picks[i]
        for j in (a, b):
            dq = queues[j]
            while dq and dq[0] <= now:
                dq.popleft()
        j = a if len(queues[a]) <= len(queues[b]) else b
        dq = queues[j]
        start = dq[-1] if dq else now
        waits[i] = start - now
        dq.append(start + svc[i])
    return waits[customers // 10:]


def test_power_of_two_mean_field_against_a_large_fleet_simulation():
    """The mean field is the N -> infinity limit; 200 replicas are close to it (finite-N corrections
    are O(1/N)). Five replications, each its own seed."""
    d = solve(Params())
    mu, rho = d.value("service_rate_per_s"), d.value("routing_utilization")
    p99, p95, share = [], [], []
    for seed in range(5):
        w = _power_of_two_sim(200, rho, mu, 200_000, np.random.default_rng(900 + seed))
        p99.append(np.quantile(w, 0.99))
        p95.append(np.quantile(w, 0.95))
        share.append(np.mean(w > 0))
    print(f"power of two, 200 queues: p99 {np.mean(p99) * 1000:.1f} ms (mean field "
          f"{d.value('power_of_two_wait_p99_s') * 1000:.1f}), p95 {np.mean(p95) * 1000:.1f} ms "
          f"({d.value('power_of_two_wait_p95_s') * 1000:.1f}), waiting {np.mean(share):.4f} ({rho * rho:.4f})")
    assert np.mean(p99) == pytest.approx(d.value("power_of_two_wait_p99_s"), rel=0.05)
    assert np.mean(p95) == pytest.approx(d.value("power_of_two_wait_p95_s"), rel=0.05)
    assert np.mean(share) == pytest.approx(rho * rho, rel=0.03)
    # and random routing's p99 is far outside what the simulation shows: the test can tell them apart
    assert d.value("random_wait_p99_s") > 2 * max(p99)


def test_pooled_p95_confirmed_by_the_queue_engine():
    p = Params()
    d = solve(p)
    mu, qb = d.value("service_rate_per_s"), d.value("queue_budget_s")
    r, q_mean, q_half, _, _ = _replicate(d.value("replicas_pooled"), p.arrival_rps, mu, qb, 0.05, reps=20,
                                         customers=100_000)
    print(f"pooled p95 wait: simulated {q_mean * 1000:.2f} ± {q_half * 1000:.2f} ms, "
          f"closed form {d.value('pooled_wait_p95_s') * 1000:.2f} ms")
    assert abs(q_mean - d.value("pooled_wait_p95_s")) <= q_half
    assert q_half / d.value("pooled_wait_p95_s") < 0.05


@settings(max_examples=60, deadline=None)
@given(rate=st.floats(5, 1000), prompt=st.integers(100, 4000), q=st.floats(10, 90))
def test_better_routers_never_wait_longer(rate, prompt, q):
    try:
        d = solve(Params(arrival_rps=rate, mean_prompt_tokens=prompt, queue_budget_ms=q))
    except ValidationError:
        assume(False)
    for pct in (95, 99):
        assert 0 <= d.value(f"pooled_wait_p{pct}_s") <= d.value(f"power_of_two_wait_p{pct}_s") + 1e-12
        assert d.value(f"power_of_two_wait_p{pct}_s") <= d.value(f"random_wait_p{pct}_s") + 1e-12
    assert d.value("replicas_pooled") <= d.value("replicas_power_of_two") <= d.value("replicas_separate")
    # (on one replica the three are the same queue: equal up to rounding)
    assert d.value("pooled_mean_sojourn_s") <= d.value("power_of_two_mean_sojourn_s") * (1 + 1e-12)
    assert d.value("power_of_two_mean_sojourn_s") <= d.value("random_mean_sojourn_s") * (1 + 1e-12)


def test_the_sweeps_end_where_an_allowance_leaves_nothing_for_prefill():
    d = solve(Params())
    # 200 ms SLO less routing 10, queue 50 and first token 20 leaves 120 ms for the round trip;
    # less network 40, routing 10 and first token 20 leaves 130 ms for the queue.
    assert d.value("network_s_at_zero_prefill") == pytest.approx(0.120)
    assert d.value("queue_budget_s_at_zero_prefill") == pytest.approx(0.130)


def test_the_live_panel_reads_steps_of_the_run_beside_their_closed_forms():
    p = Params()
    r = simulate(p, seed=2, customers=20_000)
    s = simulation_steps(p, r)
    own, pool = r.separate, r.pooled
    assert s.value("own_at_limit_wait_s") == own.sim_quantile_s and s["own_at_limit_wait_s"].kind == "simulated"
    # M/M/1: P(wait > t) = rho e^{-(mu - lambda) t}, so the 1 - tail quantile is ln(rho / tail) / (mu - lambda)
    lam, mu, tail = own.arrival_rps, own.service_rate, 1 - p.slo_percentile
    assert s.value("own_at_limit_wait_closed_form_s") == pytest.approx(math.log(lam / mu / tail) / (mu - lam))
    assert s.value("pool_busy") == pytest.approx(p.arrival_rps / (pool.servers * mu))
    assert s["pool_busy"].percent and s["pool_busy"].display().endswith("%")
    assert s.value("pool_past_allowance") == pool.sim_over_budget
    assert s.value("simulated_requests") == 20_000


def test_the_decode_side_by_hand():
    """70B bf16 on 8 x H100 decoding 400 tokens after a 1,000-token prompt at a 50 ms TPOT, at the
    engine's default decode MFU (50%), MBU (80%), fixed cost (1.9 ms) and usable HBM (90%)."""
    d = solve(Params())
    H100_HBM, H100_MEM, MBU, DECODE_MFU, FIXED = 3.35e12, 80e9, 0.8, 0.5, 1.9e-3
    kv_tok = 2 * 80 * 8 * 128 * 2  # 327,680 B
    room = 0.9 * 8 * H100_MEM - L70_PARAMS * 2
    mem_cap = math.floor(room / (kv_tok * 1400))
    assert d.value("decode_batch_memory_cap") == mem_cap == 947
    ctx = 1000 + 400 / 2
    w_s = L70_PARAMS * 2 / (8 * H100_HBM * MBU)
    kv_s = kv_tok * ctx / (8 * H100_HBM * MBU)
    comp_s = (2 * L70_PARAMS + 4 * 80 * 8192 * ctx) / (8 * H100_BF16 * DECODE_MFU)
    ar0, ar1 = allreduce_s(80, 8192, 0, 8), allreduce_s(80, 8192, 1, 8) - allreduce_s(80, 8192, 0, 8)

    def step(b):
        return max(w_s + b * kv_s, b * comp_s) + ar0 + b * ar1 + FIXED

    tpot_cap = max(b for b in range(1, 5000) if step(b) <= 0.05)
    assert d.value("decode_batch_tpot_cap") == tpot_cap
    batch = min(mem_cap, tpot_cap)
    assert d.value("decode_batch") == batch
    assert d.value("decode_step_s") == pytest.approx(step(batch), rel=1e-9)
    per_replica = batch / step(batch)
    assert d.value("decode_tokens_per_s_per_replica") == pytest.approx(per_replica)
    # 100 req/s x 400 tokens = 40,000 tokens/s over about 20,100 a replica flat out: 2 replicas
    assert d.value("decode_output_tokens_per_s") == 40_000
    assert d.value("decode_replicas_flat_out") == math.ceil(40_000 / per_replica) == 2
    # Sized like a fleet instead: 100 x 400 x 50 ms = 2,000 sequences in flight; R replicas hold
    # 2,000 / R each, busy 40,000 / R x step(2,000 / R) / (2,000 / R), and must stay within 70%
    # and within the 947-sequence batch.
    in_flight = 100 * 400 * 0.05
    assert d.value("decode_sequences_in_flight") == pytest.approx(in_flight)

    def busy(r):
        held = in_flight / r
        return 40_000 / r * step(held) / held

    reps = next(r for r in range(1, 50) if busy(r) <= 0.7 and in_flight / r <= batch)
    assert reps == 3  # two would hold 1,000 each, over the 947 that fit, at 99% busy
    assert busy(3) == pytest.approx(0.679, abs=1e-3)
    assert d.value("decode_replicas") == reps
    assert d.value("decode_held_batch") == pytest.approx(in_flight / 3)
    assert d.value("decode_busy_share") == pytest.approx(busy(3), rel=1e-9)
    assert d.value("decode_flat_out_held_batch") == pytest.approx(1000)
    assert d.value("decode_flat_out_busy_share") == pytest.approx(busy(2), rel=1e-9)
    assert "do not fit the 947" in d.value("decode_flat_out_clause")
    assert d.value("total_gpus_pooled") == d.value("gpus_pooled") + 24
    # A looser target utilization lets the ceiling's count stand only where the slots allow it.
    assert solve(Params(target_utilization=0.95)).value("decode_replicas") == 3  # 1,000 > 947 still


def test_the_engines_default_chunk_overruns_the_budget():
    """The last 8,192-token chunk of a 32,000-token prompt, attending to the 23,808 before it."""
    d = solve(Params())
    fl = 8 * H100_BF16 * 0.6
    t = prefill_s(L70_PARAMS, 80, 8192, 8192, fl, 8, before=32_000 - 8192)
    assert d.value("engine_chunk_time_s") == pytest.approx(t, rel=1e-9)
    assert d.value("engine_chunk_share_of_prefill_budget") == pytest.approx(t / 0.08, rel=1e-9)
    assert d.value("engine_chunk_share_of_prefill_budget") > 1


def test_a_class_the_decode_side_cannot_serve_is_refused():
    with pytest.raises(ValidationError, match="decode side"):
        Params(tpot_target_ms=2)


def test_routing_at_the_slo_percentile_and_the_verdicts():
    # At the seed the SLO percentile is 99%, so the SLO-percentile waits equal the p99 ones, and the
    # bounds add 40 + 10 + 80 + 20 ms = 150 ms of fixed allowances.
    d = solve(Params())
    mu, rho = d.value("service_rate_per_s"), d.value("routing_utilization")
    assert d.value("random_wait_slo_s") == pytest.approx(math.log(rho / 0.01) / (mu * (1 - rho)))
    assert d.value("power_of_two_wait_slo_s") == pytest.approx(d.value("power_of_two_wait_p99_s"))
    for who, wait in (("random", "random_wait_slo_s"), ("pooled", "pooled_quantile_wait_s")):
        assert d.value(f"ttft_slo_bound_{who}_s") == pytest.approx(0.150 + d.value(wait))
    # the pooled fleet meets its 50 ms allowance, so its bound is within 200 ms
    assert d.value("ttft_slo_bound_pooled_s") <= 0.200
    assert d.value("pooled_bound_verdict").startswith("which is within")
    # the mean prompt of 1,000 tokens sits under the seed's admission cap (1,209 tokens)
    assert d.value("mean_prompt_verdict").startswith("it fits")
    # at p95 the random wait is ln(rho / 0.05) / (mu (1 - rho))
    d95 = solve(Params(slo_percentile=0.95))
    mu, rho = d95.value("service_rate_per_s"), d95.value("routing_utilization")
    assert d95.value("random_wait_slo_s") == pytest.approx(max(0.0, math.log(rho / 0.05) / (mu * (1 - rho))))
    # a mean prompt of 4,000 tokens cannot fit an 80 ms prefill budget (the seed's longest is 1,953)
    big = solve(Params(mean_prompt_tokens=4000, arrival_rps=10.0))
    assert big.value("mean_prompt_verdict").startswith("it does not fit")


def test_replica_gpus_agrees_with_its_count():
    assert solve(Params()).value("replica_gpus") == 8
    one = solve(Params(model="Llama-3-8B", tp_degree=1))
    assert one.value("replica_gpus") == 1


def test_the_decode_efficiencies_against_tensorrt_llms_published_70b_by_hand():
    """TensorRT-LLM's Llama-3.3-70B in FP8 on 2 x H100, 2,048 in and 2,048 out: 3,082 output tokens/s
    measured. This page's efficiencies (MBU 80%, prefill MFU 60%, 6 us all-reduces) and the engine's
    decode defaults (MFU 50%, 1.9 ms a step) on that setup, written out."""
    d = solve(Params())
    weights = L70_PARAMS * 1  # fp8
    kv_tok = 2 * 80 * 8 * 128 * 1  # fp8 KV: 163,840 B
    isl = osl = 2048
    # floor((0.9 x 2 x 80 GB - 70.55 GB) / (163,840 B x 4,096)) = floor(109.4) = 109
    cap = math.floor((0.9 * 2 * 80e9 - weights) / (kv_tok * (isl + osl)))
    assert d.value("anchor_2048_batch") == cap == 109
    ctx = isl + osl / 2
    attn = 4 * 80 * 64 * 128
    ar_fixed = 2 * 80 * AR_LATENCY
    ar_tok = 2 * 80 * 2 * (2 - 1) / 2 * 8192 * 2 / NVLINK
    mem = (weights + cap * kv_tok * ctx) / (2 * 3.35e12 * 0.8)
    comp = cap * (2 * L70_PARAMS + attn * ctx) / (2 * H100_FP8 * 0.5)
    step = max(mem, comp) + ar_fixed + cap * ar_tok + 1.9e-3
    prefill = (2 * L70_PARAMS * isl + attn * isl * (isl - 1) / 2) / (2 * H100_FP8 * 0.6) + ar_fixed + isl * ar_tok
    tokens_per_s = osl / (prefill + osl * step / cap)
    assert d.value("anchor_2048_predicted_tokens_per_s") == pytest.approx(tokens_per_s, rel=1e-6)
    assert d.value("anchor_2048_measured_tokens_per_s") == 3082
    assert d.value("anchor_2048_error") == pytest.approx(tokens_per_s / 3082 - 1, rel=1e-6)
    assert abs(d.value("anchor_2048_error")) < 0.1
    assert d.value("anchor_1000_measured_tokens_per_s") == 4205
