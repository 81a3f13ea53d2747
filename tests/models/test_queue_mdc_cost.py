"""The M/D/c figures stay cheap at any knob setting, and their approximations stay close to exact.

A chart solves its page 60-100 times per slider move, so a queueing figure that costs 0.2 s at one
corner of the knobs (512 servers at 99.5% busy; 84 s for a 50,000-GPU fleet before this guard)
freezes the page there. Exact answers where they are cheap, named approximations elsewhere.
"""

from __future__ import annotations

import math
import time

import pytest

from models.sim import queue as Q


def _clear() -> None:
    for f in (Q._mdc_summary, Q._mdc_cdf, Q._mdc_pmf, Q._mdc_quantile, Q.erlang_c_wait_probability):
        f.cache_clear()


def _erlang_b_recursion(c: int, a: float) -> float:
    b = 1.0
    for k in range(1, c + 1):
        b = a * b / (k + a * b)
    return b


@pytest.mark.parametrize("c,a", [(2001, 1900.0), (2500, 2400.0), (3000, 2000.0), (5000, 4990.0)])
def test_erlang_b_for_large_fleets_matches_the_recursion(c, a):
    assert Q._erlang_b_large(c, a) == pytest.approx(_erlang_b_recursion(c, a), rel=1e-9)


@pytest.mark.parametrize("c", [8, 64, 128, 256])
@pytest.mark.parametrize("rho", [0.8, 0.9, 0.95, 0.98, 0.995])
def test_the_exponential_tail_is_within_13_percent_of_the_exact_p99(c, rho):
    a = rho * c
    exact = Q._mdc_quantile(c, a, 0.99)
    p_wait = Q._mdc_summary(c, a)[0]
    if p_wait <= 0.01:
        assert exact == 0
        return
    mean = Q._mdc_summary(c, a)[1] / a  # in service times: arrival rate a per service time
    approx = mean / p_wait * math.log(p_wait / 0.01)
    assert approx == pytest.approx(exact, rel=0.13)


def test_the_method_is_chosen_by_cost():
    assert Q.mdc_method(8, 6.4, 1.0) == "exact"  # 8 x 80 grid points
    assert Q.mdc_method(512, 0.98 * 512, 1.0) == "exponential tail"  # 512 x 800
    assert Q.mdc_method(5_000, 4_000, 1.0) == "half of M/M/c"


def test_a_huge_fleet_gets_half_the_erlang_c_mean_wait():
    c, lam, d = 5_000, 4_990.0, 1.0
    mmc = Q.erlang_c_wait_probability(c, lam * d) / (c / d - lam)
    assert Q.mdc_mean_wait_s(c, lam, d) == pytest.approx(mmc / 2, rel=1e-12)


@pytest.mark.parametrize("c", [1, 8, 64, 512, 1_000, 1_001, 20_000, 2_000_000])
@pytest.mark.parametrize("rho", [0.5, 0.95, 0.998])
def test_every_figure_costs_under_25_ms_cold(c, rho):
    _clear()
    t = time.process_time()
    for p in (0.95, 0.99):
        Q.mdc_wait_quantile_s(c, rho * c / 0.2, 0.2, p)
    Q.mdc_mean_wait_s(c, rho * c / 0.2, 0.2)
    Q.mdc_wait_probability(c, rho * c / 0.2, 0.2)
    assert (time.process_time() - t) * 1000 < 25
