"""The multi-server FIFO queue engine against hand-worked cases and Erlang C."""

import math
import time

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from models.sim.queue import erlang_c_mean_wait_s, erlang_c_wait_probability, fifo, poisson_arrivals


def test_hand_worked_single_server():
    # arrivals 0, 1, 2; services 3, 1, 1 on one server:
    # customer 0 runs 0-3; customer 1 waits 2 s and runs 3-4; customer 2 waits 2 s and runs 4-5
    r = fifo(np.array([0.0, 1.0, 2.0]), np.array([3.0, 1.0, 1.0]), servers=1)
    assert r.wait_s.tolist() == [0.0, 2.0, 2.0]
    assert r.finish_s.tolist() == [3.0, 4.0, 5.0]


def test_hand_worked_two_servers():
    # two servers: 0 and 1 start at once; customer 2 (t=0.5) waits for the first to free at t=1
    r = fifo(np.array([0.0, 0.0, 0.5]), np.array([1.0, 4.0, 1.0]), servers=2)
    assert r.wait_s.tolist() == [0.0, 0.0, 0.5]
    assert r.finish_s.tolist() == [1.0, 4.0, 2.0]


def test_no_wait_when_servers_outnumber_customers_in_flight():
    arrivals = np.arange(100, dtype=float)  # one a second
    r = fifo(arrivals, np.full(100, 0.5), servers=1)
    assert np.all(r.wait_s == 0)


def test_erlang_c_against_the_birth_death_chain():
    # independent derivation: stationary distribution of the M/M/c chain, truncated far out
    c, a = 10, 9.0
    p = [a**k / math.factorial(k) for k in range(c)] + [a**c / math.factorial(c) * (a / c) ** j for j in range(5000)]
    total = sum(p)
    p_wait = sum(p[c:]) / total
    assert erlang_c_wait_probability(c, a) == pytest.approx(p_wait, rel=1e-9)
    mean_queue = sum((k - c) * p[k] for k in range(c, len(p))) / total
    assert erlang_c_mean_wait_s(c, 9.0, 1.0) == pytest.approx(mean_queue / 9.0, rel=1e-9)


def test_mm10_at_rho_09_matches_erlang_c():
    """Ten independent 1M-customer replications; one 100k run can miss by 20% (heavy tails)."""
    c, lam, mu, n = 10, 9.0, 1.0, 1_000_000
    analytic = erlang_c_mean_wait_s(c, lam, mu)
    means = []
    for seed in range(10):
        rng = np.random.default_rng(1000 + seed)
        r = fifo(poisson_arrivals(rng, lam, n), rng.exponential(1 / mu, n), c)
        means.append(r.wait_s[n // 20:].mean())  # drop the empty-start warm-up
    m = np.array(means)
    half_width = 2.262 * m.std(ddof=1) / math.sqrt(len(m))  # 95% t interval, 9 dof
    print(f"simulated mean wait {m.mean():.4f} s ± {half_width:.4f}; Erlang C {analytic:.4f} s")
    assert abs(m.mean() - analytic) <= half_width
    assert half_width / analytic < 0.03
    assert abs(m.mean() - analytic) / analytic < 0.03


def test_littles_law_on_one_run():
    rng = np.random.default_rng(7)
    lam, n = 5.0, 200_000
    r = fifo(poisson_arrivals(rng, lam, n), rng.exponential(1.5, n), servers=10)
    horizon = r.arrival_s[-1]
    times = np.linspace(horizon * 0.1, horizon * 0.9, 400)
    L = np.mean([r.in_system_at(t) for t in times])
    W = r.sojourn_s[n // 10: 9 * n // 10].mean()
    print(f"L = {L:.3f}, lambda W = {lam * W:.3f}")
    assert L == pytest.approx(lam * W, rel=0.05)


def test_100k_customers_under_300_ms():
    rng = np.random.default_rng(0)
    a = poisson_arrivals(rng, 9.0, 100_000)
    s = rng.exponential(1.0, 100_000)
    fifo(a[:1000], s[:1000], 10)
    t = time.process_time()
    fifo(a, s, 10)
    elapsed = time.process_time() - t
    print(f"100,000 customers on 10 servers: {elapsed * 1000:.0f} ms")
    assert elapsed < 0.3


@settings(max_examples=100, deadline=None)
@given(
    n=st.integers(1, 200), servers=st.integers(1, 8), seed=st.integers(0, 10_000),
)
def test_conservation_and_order(n, servers, seed):
    rng = np.random.default_rng(seed)
    r = fifo(poisson_arrivals(rng, 3.0, n), rng.exponential(1.0, n), servers)
    assert np.all(r.wait_s >= 0)
    assert np.all(r.finish_s >= r.start_s)
    # FIFO: service starts in arrival order
    assert np.all(np.diff(r.start_s) >= -1e-12)
    # never more than `servers` in service at any start instant
    for t in r.start_s[:: max(1, n // 20)]:
        busy = np.sum((r.start_s <= t) & (r.finish_s > t))
        assert busy <= servers


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 1000))
def test_more_servers_never_wait_longer(seed):
    rng = np.random.default_rng(seed)
    a = poisson_arrivals(rng, 4.0, 500)
    s = rng.exponential(1.0, 500)
    assert fifo(a, s, 6).wait_s.sum() <= fifo(a, s, 5).wait_s.sum() + 1e-9


def test_bad_input_is_a_clear_error():
    with pytest.raises(ValueError, match="sorted"):
        fifo(np.array([1.0, 0.0]), np.array([1.0, 1.0]), 1)
    with pytest.raises(ValueError, match="servers"):
        fifo(np.array([0.0]), np.array([1.0]), 0)


def test_erlang_c_stays_finite_for_large_pools():
    # log-space reference: P(wait) from the terms a^k/k! computed with lgamma
    c, a = 4000, 3900.0
    logs = [k * math.log(a) - math.lgamma(k + 1) for k in range(c)]
    top = c * math.log(a) - math.lgamma(c + 1) + math.log(c / (c - a))
    m = max(max(logs), top)
    expected = math.exp(top - m) / (sum(math.exp(x - m) for x in logs) + math.exp(top - m))
    got = erlang_c_wait_probability(c, a)
    assert math.isfinite(got)
    assert got == pytest.approx(expected, rel=1e-9)
