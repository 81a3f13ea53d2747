"""ttft-slo-200ms: the 200 ms budget worked by hand from published figures, a hand-worked variant,
properties, and the FIFO queue engine against the M/M/1 and M/M/c tails over replications."""

import math
import time

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st
from pydantic import ValidationError

from models.content import PLACEHOLDER
from models.core import knobs_of
from models.registry import QUESTIONS
from models.serving.ttft_slo_200ms import Params, run_queue, simulate, solve

# Published figures, typed here on purpose so the test does not lean on the code under test.
H100_BF16 = 989e12  # dense, H100 SXM datasheet
H100_FP8 = 1979e12
L70_PARAMS, L70_LAYERS, L70_DMODEL = 70.6e9, 80, 8192  # Llama 3 paper: 64 heads x 128 = 8,192
L8_PARAMS, L8_LAYERS, L8_DMODEL = 8.03e9, 32, 4096


def prefill_flops(params, layers, d_model, n, before=0.0):
    """2 x params per token, plus causal attention: per layer QK^T and AV are n x n x d_model
    multiply-adds each (4 n^2 d FLOP), halved by the mask -> 2 x layers x d_model x n^2. A chunk
    of n after `before` tokens attends, per token, to `before` + its own earlier tokens."""
    return 2 * params * n + 2 * layers * d_model * (n * n + 2 * n * before)


def longest_prompt(params, layers, d_model, flops):
    a, b = 2 * layers * d_model, 2 * params
    return math.floor((-b + math.sqrt(b * b + 4 * a * flops)) / (2 * a))


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
    assert d.value("prefill_share_of_slo") == pytest.approx(40)


def test_seed_prompt_length_the_budget_allows():
    d = solve(Params())
    flops = 8 * H100_BF16 * 0.5  # 3.956e15 FLOP/s at 50% MFU
    assert d.value("replica_flops") == pytest.approx(flops)
    budget = 0.080 * flops  # 3.165e14 FLOP
    # linear: 3.165e14 / (2 x 70.6e9) = 2,241.4 -> 2,241 tokens
    assert d.value("max_prompt_tokens_linear") == math.floor(budget / (2 * L70_PARAMS)) == 2241
    # attention coefficient 2 x 80 x 8,192 = 1,310,720 FLOP per token^2
    assert d.value("attention_prefill_coefficient") == 2 * L70_LAYERS * L70_DMODEL == 1_310_720
    n = longest_prompt(L70_PARAMS, L70_LAYERS, L70_DMODEL, budget)
    assert d.value("max_prompt_tokens_with_attention") == n == 2196
    assert prefill_flops(L70_PARAMS, L70_LAYERS, L70_DMODEL, n) <= budget
    assert prefill_flops(L70_PARAMS, L70_LAYERS, L70_DMODEL, n + 1) > budget
    # attention equals weights where 2 x layers x d_model x n = 2 x params: n = 70.6e9 / 655,360
    assert d.value("attention_equals_weights_tokens") == pytest.approx(L70_PARAMS / (L70_LAYERS * L70_DMODEL))
    # "prefill alone spends it on a long prompt": the whole 200 ms
    assert d.value("tokens_for_whole_slo") == longest_prompt(L70_PARAMS, L70_LAYERS, L70_DMODEL, 0.2 * flops)


def test_seed_long_prompt_and_chunked_prefill():
    d = solve(Params())
    flops = 8 * H100_BF16 * 0.5
    # 32,000 tokens in one piece: (141.2e9 x 32,000 + 1,310,720 x 32,000^2) / 3.956e15 = 1.48 s
    whole = (2 * L70_PARAMS * 32_000 + 2 * L70_LAYERS * L70_DMODEL * 32_000**2) / flops
    assert d.value("long_prompt_prefill_s") == pytest.approx(whole)
    assert whole == pytest.approx(1.4815, rel=1e-3)
    # last 512-token chunk: 31,488 tokens before it; 512 x (141.2e9 + 4 x 80 x 8,192 x 31,744) / 3.956e15
    last = 512 * (2 * L70_PARAMS + 4 * L70_LAYERS * L70_DMODEL * (32_000 - 512 + 256)) / flops
    assert d.value("chunk_time_s") == pytest.approx(last)
    assert d.value("chunk_time_s") == pytest.approx(prefill_flops(L70_PARAMS, L70_LAYERS, L70_DMODEL, 512, 31_488)
                                                     / flops)
    assert last == pytest.approx(0.02904, rel=1e-3)
    assert d.value("long_prompt_chunks") == math.ceil(32_000 / 512) == 63
    # admission: the 80 ms budget minus one such chunk
    n = longest_prompt(L70_PARAMS, L70_LAYERS, L70_DMODEL, (0.080 - last) * flops)
    assert d.value("max_admissible_prompt_tokens") == n
    # the smallest compute-bound chunk: 141.2 GB / (8 x 3.35 TB/s x 0.7) = 7.527 ms of weight read
    read = 141.2e9 / (8 * 3.35e12 * 0.7)
    assert d.value("weight_read_s") == pytest.approx(read)
    assert d.value("chunk_floor_tokens") == math.ceil(read * flops / (2 * L70_PARAMS))


def test_seed_utilization_the_slo_costs():
    d = solve(Params())
    flops = 8 * H100_BF16 * 0.5
    svc = prefill_flops(L70_PARAMS, L70_LAYERS, L70_DMODEL, 1000) / flops  # 36.0 ms
    mu, lam, t, eps = 1 / svc, 100.0, 0.050, 0.01
    a = lam * svc
    assert d.value("service_time_s") == pytest.approx(svc)
    assert d.value("offered_load") == pytest.approx(a)
    # M/M/1: rho e^{-mu (1 - rho) t} = 0.01, solved by Newton here
    rho = mm1_limit_newton(mu * t, eps)
    assert d.value("max_utilization_mm1") == pytest.approx(100 * rho, rel=1e-6)
    assert rho == pytest.approx(0.038, abs=5e-4)
    assert d.value("replicas_separate") == math.ceil(a / rho) == 95
    # M/M/c: five replicas miss, six meet
    tail = lambda c: erlang_c(c, a) * math.exp(-(c * mu - lam) * t)  # noqa: E731
    assert tail(5) > eps >= tail(6)
    assert d.value("replicas_pooled") == 6
    assert d.value("max_utilization_pooled") == pytest.approx(100 * a / 6)
    assert d.value("pooled_wait_probability") == pytest.approx(100 * erlang_c(6, a))
    assert d.value("pooled_tail_at_budget") == pytest.approx(100 * tail(6))
    assert d.value("pooled_tail_after_losing_one") == pytest.approx(100 * tail(5))
    assert d.value("pooled_quantile_wait_s") == pytest.approx(math.log(erlang_c(6, a) / eps) / (6 * mu - lam))
    # per-replica queues run as busy as the pool: p99 wait ln(rho / 0.01) / (mu (1 - rho))
    r = a / 6
    assert d.value("mm1_quantile_wait_at_pooled_util_s") == pytest.approx(math.log(r / eps) / (mu * (1 - r)))
    assert d.value("gpus_pooled") == 48 and d.value("gpus_separate") == 760


def test_variant_small_model_fp8_looser_slo_by_hand():
    p = Params(model="Llama-3-8B", gpus_per_replica=1, weight_precision="fp8", mfu=0.4, slo_ms=300,
               slo_percentile=0.999, network_ms=60, routing_ms=10, queue_budget_ms=80, first_token_ms=30,
               mean_prompt_tokens=2000, long_prompt_tokens=64_000, chunk_tokens=1024, arrival_rps=50)
    d = solve(p)
    flops = 1 * H100_FP8 * 0.4  # 791.6 TFLOP/s
    budget_s = (300 - 60 - 10 - 80 - 30) / 1000  # 120 ms
    assert d.value("prefill_budget_s") == pytest.approx(budget_s)
    assert d.value("max_prompt_tokens_linear") == math.floor(budget_s * flops / (2 * L8_PARAMS))
    assert d.value("max_prompt_tokens_with_attention") == longest_prompt(L8_PARAMS, L8_LAYERS, L8_DMODEL,
                                                                         budget_s * flops)
    last = prefill_flops(L8_PARAMS, L8_LAYERS, L8_DMODEL, 1024, 64_000 - 1024) / flops
    assert d.value("chunk_time_s") == pytest.approx(last)
    assert d.value("max_admissible_prompt_tokens") == longest_prompt(L8_PARAMS, L8_LAYERS, L8_DMODEL,
                                                                     (budget_s - last) * flops)
    svc = prefill_flops(L8_PARAMS, L8_LAYERS, L8_DMODEL, 2000) / flops
    mu, lam, t, eps = 1 / svc, 50.0, 0.080, 0.001
    rho = mm1_limit_newton(mu * t, eps)
    assert d.value("max_utilization_mm1") == pytest.approx(100 * rho, rel=1e-6)
    assert d.value("replicas_separate") == math.ceil(lam * svc / rho)
    a = lam * svc
    c = math.floor(a) + 1
    while erlang_c(c, a) * math.exp(-(c * mu - lam) * t) > eps:
        c += 1
    assert d.value("replicas_pooled") == c


def test_impossible_scenarios_are_refused_in_plain_words():
    with pytest.raises(ValidationError, match="leaves"):
        Params(network_ms=150, queue_budget_ms=50)  # 150 + 10 + 50 + 20 = 230 > 200
    with pytest.raises(ValidationError, match="GB of weights"):
        Params(model="Llama-3.1-405B")  # 810 GB in bf16 on 8 x 80 GB


def test_key_figures_exist_with_their_units():
    d = solve(Params())
    want = {"prefill_budget_s": "s", "max_prompt_tokens_linear": "1", "max_prompt_tokens_with_attention": "1",
            "chunk_time_s": "s", "max_admissible_prompt_tokens": "1", "max_utilization_mm1": "%",
            "max_utilization_pooled": "%", "replicas_pooled": "1", "replicas_separate": "1"}
    for key, unit in want.items():
        assert key in d, key
        assert d[key].unit == unit, key


def test_every_placeholder_and_drill_resolves():
    q = QUESTIONS["ttft-slo-200ms"]
    d = solve(Params())
    names = set(d.keys()) | set(knobs_of(Params))
    c = q.content
    for text in [c.hook, c.intro, *(s.body for s in c.sections), *(dr.prompt for dr in c.drills)]:
        for m in PLACEHOLDER.finditer(text):
            assert m.group(1) in names, m.group(1)
    assert all(dr.key in d for dr in c.drills)
    assert len(c.drills) >= 6
    assert {dr.phase for dr in c.drills} >= {"numbers", "arithmetic", "depth", "failure_modes"}


def test_solve_is_fast():
    p = Params()
    solve(p)
    times = []
    for _ in range(200):
        t = time.process_time()
        solve(p)
        times.append(time.process_time() - t)
    assert sorted(times)[len(times) // 2] < 1e-3


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
    a, b = _params(network_ms=lo, mfu=mfu), _params(network_ms=hi, mfu=mfu)
    da, db = solve(a), solve(b)
    for key in ("prefill_budget_s", "max_prompt_tokens_linear", "max_prompt_tokens_with_attention",
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
    assert db.value("max_utilization_mm1") >= da.value("max_utilization_mm1") - 1e-9
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
    assert d.value("max_admissible_prompt_tokens") <= d.value("max_prompt_tokens_with_attention")
    assert d.value("chunk_time_s") <= d.value("long_prompt_prefill_s") * (1 + 1e-12)
    # pooling never needs more replicas than separate queues, and the pool keeps its promise
    assert d.value("replicas_pooled") <= d.value("replicas_separate")
    assert d.value("pooled_tail_at_budget") <= 100 * (1 - pct) * (1 + 1e-9)
    assert d.value("max_utilization_pooled") < 100
    assert 100 * (1 - pct) <= d.value("max_utilization_mm1") < 100


# --- the queue engine against the closed forms -----------------------------------------------


def _replicate(servers, lam, mu, budget, tail, reps=10, customers=200_000):
    q, over = [], []
    for seed in range(reps):
        r = run_queue("check", servers, lam, mu, budget, tail, np.random.default_rng(500 + seed), customers)
        q.append(r.sim_quantile_s)
        over.append(r.sim_over_budget)
    q, over = np.array(q), np.array(over)
    t = 2.262 / math.sqrt(reps)  # 95% t interval, 9 dof
    return r, q.mean(), t * q.std(ddof=1), over.mean(), t * over.std(ddof=1)


@pytest.mark.parametrize("which", ["separate", "pooled", "separate_at_pooled_util"])
def test_queue_engine_confirms_the_tail_over_replications(which):
    p = Params()
    d = solve(p)
    mu, qb, eps = d.value("service_rate_per_s"), d.value("queue_budget_s"), d.value("tail_probability")
    servers, lam = {
        "separate": (1, d.value("max_utilization_mm1") / 100 * mu),
        "pooled": (d.value("replicas_pooled"), p.arrival_rps),
        "separate_at_pooled_util": (1, d.value("max_utilization_pooled") / 100 * mu),
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
    assert a.pooled.servers == 6 and a.separate.servers == 1
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
