"""Multi-server FIFO queue: arrival and service times in, per-customer wait and sojourn out.

The engine behind the batcher, the TTFT budget's utilization check and autoscaling. One heap
of server free-times: each customer, in arrival order, takes the server that frees first, so a
run costs O(n log c) and 100,000 customers take a few tens of milliseconds. Randomness lives
in the caller (draw the arrays with `numpy.random.default_rng(seed)`); the engine is exact and
deterministic given its inputs.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np


@dataclass(frozen=True)
class QueueResult:
    arrival_s: np.ndarray
    start_s: np.ndarray
    finish_s: np.ndarray
    server: np.ndarray

    @property
    def wait_s(self) -> np.ndarray:
        return self.start_s - self.arrival_s

    @property
    def sojourn_s(self) -> np.ndarray:
        return self.finish_s - self.arrival_s

    def in_system_at(self, t: float) -> int:
        """Customers arrived by t and not yet finished (Little's law checks count these)."""
        return int(np.sum((self.arrival_s <= t) & (self.finish_s > t)))


def fifo(arrival_s: np.ndarray, service_s: np.ndarray, servers: int) -> QueueResult:
    """First come, first served on `servers` identical servers."""
    arrival = np.asarray(arrival_s, dtype=float)
    service = np.asarray(service_s, dtype=float)
    if arrival.shape != service.shape or arrival.ndim != 1:
        raise ValueError("arrival_s and service_s must be 1-D arrays of the same length")
    if servers < 1:
        raise ValueError("servers must be at least 1")
    if arrival.size and np.any(np.diff(arrival) < 0):
        raise ValueError("arrival_s must be sorted")
    n = arrival.size
    start = np.empty(n)
    server_of = np.empty(n, dtype=np.int64)
    free = [(0.0, k) for k in range(servers)]  # (time the server frees, server id)
    heapq.heapify(free)
    # Plain floats in the loop: indexing numpy scalars one at a time is several times slower.
    arr = arrival.tolist()
    svc = service.tolist()
    for i in range(n):
        t_free, k = heapq.heappop(free)
        a = arr[i]
        s = a if a > t_free else t_free
        start[i] = s
        server_of[i] = k
        heapq.heappush(free, (s + svc[i], k))
    return QueueResult(arrival, start, start + service, server_of)


def poisson_arrivals(rng: np.random.Generator, rate_per_s: float, n: int) -> np.ndarray:
    return np.cumsum(rng.exponential(1.0 / rate_per_s, n))


@lru_cache(maxsize=8192)  # a page asks for the same fleet and load from several steps
def erlang_c_wait_probability(servers: int, offered_load: float) -> float:
    """P(wait > 0) in M/M/c with offered load a = lambda / mu (Erlang C).

    Built from the Erlang B recursion B(k) = a B(k-1) / (k + a B(k-1)), which never forms a^c
    or c!, so it stays finite for thousands of servers (the plain sum overflows near a = 710).
    """
    c, a = servers, offered_load
    if a >= c:
        return 1.0
    if c <= _ERLANG_LOOP_MAX_SERVERS:
        b = 1.0
        for k in range(1, c + 1):
            b = a * b / (k + a * b)
    else:
        b = _erlang_b_large(c, a)
    return c * b / (c - a * (1 - b))


# The recursion is a Python loop over the servers: 2 million GPUs (a mock draw can ask) took 0.8 s.
_ERLANG_LOOP_MAX_SERVERS = 2_000


def _erlang_b_large(c: int, a: float) -> float:
    """Erlang B as Poisson(a)'s pmf at c over its cdf to c, both in logs over the terms that carry
    mass: those within 12 standard deviations of the mean (the rest sum below 1e-30)."""
    reach = 12 * math.sqrt(a) + 10
    ks = np.arange(max(0, math.floor(a - reach)), min(c, math.ceil(a + reach)) + 1, dtype=float)
    # ln pmf(k + 1) = ln pmf(k) + ln a - ln(k + 1): one lgamma, then a cumulative sum.
    first = ks[0] * math.log(a) - a - math.lgamma(ks[0] + 1)
    log_pmf = first + np.concatenate(([0.0], np.cumsum(math.log(a) - np.log(ks[1:]))))
    log_at_c = c * math.log(a) - a - math.lgamma(c + 1)
    if ks[-1] < c:  # c lies beyond the bulk: its own term is added once
        log_pmf = np.append(log_pmf, log_at_c)
    top = float(log_pmf.max())
    log_cdf = top + math.log(float(np.exp(log_pmf - top).sum()))
    return math.exp(log_at_c - log_cdf)


def erlang_c_mean_wait_s(servers: int, arrival_rate_per_s: float, service_rate_per_s: float) -> float:
    a = arrival_rate_per_s / service_rate_per_s
    if a >= servers:
        return math.inf
    p_wait = erlang_c_wait_probability(servers, a)
    return p_wait / (servers * service_rate_per_s - arrival_rate_per_s)


# --- M/D/c: Poisson arrivals, every service exactly D, c servers (the exact waiting time) ---------
#
# Crommelin (1932), in the form of Franx (2001, "A simple solution for the M/D/c waiting time
# distribution", Oper. Res. Lett. 29): with D = 1 and a = lambda D, the number waiting at any
# instant, Q, has the generating function
#     Q(z) = K (z - 1) prod_k (z - z_k) / (z^c - e^{a (z - 1)}),   K = (c - a) / prod_k (1 - z_k),
# over the c - 1 roots z_k != 1 of z^c = e^{a (z - 1)} in the unit disk, and K = P(no wait).
# Service is deterministic and FIFO, so customers leave in arrival order, and a customer arriving
# at 0 has waited at most m + y (m whole, 0 <= y < 1) exactly when fewer than c of those ahead of
# it are left at m + y; those are the Q waiting at y - 1 less c per whole D, plus the arrivals of
# (y - 1, 0). Hence P(W <= (m + y) D) = P(Q + Poisson(a (1 - y)) <= (m + 1) c - 1).


def _mdc_roots(servers: int, utilization: float) -> np.ndarray:
    """The roots z != 1 of z^c = e^{c rho (z - 1)} with |z| < 1: z_k = w_k e^{rho (z_k - 1)}, w_k the
    c-th roots of unity, a contraction on the disk (slope <= rho), then Newton to machine precision."""
    w = np.exp(2j * np.pi * np.arange(1, servers) / servers)
    z = 0.5 * w
    for _ in range(12):
        z = w * np.exp(utilization * (z - 1))
    for _ in range(60):
        e = w * np.exp(utilization * (z - 1))
        step = (z - e) / (1 - utilization * e)
        z = z - step
        if not step.size or float(np.max(np.abs(step))) < 1e-15:
            break
    return z


# Beyond this utilization the grid the distribution needs outgrows memory (its tail falls as
# e^(-2 (1 - rho) j)); the percentiles are reported as unbounded there, the mean stays exact.
MDC_MAX_UTILIZATION = 0.999
_MDC_MAX_GRID = 1 << 14


@lru_cache(maxsize=8192)  # sweeps re-solve a page with the same fleet and load many times
def _mdc_summary(servers: int, offered_load: float) -> tuple[float, float, tuple[complex, ...]]:
    """(P(wait > 0), mean number waiting, the roots) from the roots alone: O(c)."""
    c, a = servers, offered_load
    roots = _mdc_roots(c, a / c)
    log_prod = complex(np.sum(np.log(1 - roots))) if roots.size else 0j
    no_wait = min(1.0, max(0.0, (c - a) / math.exp(log_prod.real)))
    # E[Q] = Q'(1), from the series of numerator and denominator at z = 1.
    mean_q = float(np.sum(1 / (1 - roots)).real) - (c * (c - 1) - a * a) / (2 * (c - a))
    return 1.0 - no_wait, mean_q, tuple(roots.tolist())


@lru_cache(maxsize=8192)
def _mdc_cdf(servers: int, offered_load: float) -> np.ndarray:
    """Cumulative distribution of the number waiting at an arbitrary instant, to 1e-14."""
    c, a = servers, offered_load
    rho = a / c
    roots = np.array(_mdc_summary(c, a)[2], dtype=complex)
    log_prod = complex(np.sum(np.log(1 - roots))) if roots.size else 0j
    # The tail of Q falls as z*^-j, z* > 1 the root of ln z = rho (z - 1): size the grid for 1e-14.
    zs = nxt = 2.0 / rho
    for _ in range(200):
        nxt = zs - (math.log(zs) - rho * (zs - 1)) / (1 / zs - rho)
        if abs(nxt - zs) < 1e-15 * zs:
            break
        zs = nxt
    length = min(_MDC_MAX_GRID, int(math.ceil(math.log(1e14) / math.log(nxt))) + 1)
    n = 1 << max(5, (length - 1).bit_length())
    x = np.exp(2j * np.pi * np.arange(1, n) / n)  # the unit circle without z = 1, where Q(1) = 1
    den = x ** c - np.exp(a * (x - 1))
    if roots.size < 400:  # |x - z_k| <= 2, so the plain product stays below 2^400: no overflow
        g = (c - a) / math.exp(log_prod.real) * (x - 1) * np.prod(x[:, None] - roots[None, :], axis=1) / den
        g = g * np.exp(-1j * log_prod.imag)
    else:  # in logs, in blocks that bound the (nodes x roots) array in memory
        num = math.log(c - a) - log_prod + np.log(x - 1)
        rows = max(1, (1 << 20) // roots.size)
        for i in range(0, x.size, rows):
            num[i:i + rows] += np.log(x[i:i + rows, None] - roots[None, :]).sum(axis=1)
        g = np.exp(num - np.log(den))
    # Q's coefficients from its values on the circle (an inverse DFT; aliasing is below 1e-14).
    q = np.fft.fft(np.concatenate(([1.0 + 0j], g))).real[:length] / n
    cdf = np.minimum(1.0, np.cumsum(np.maximum(q, 0.0)))
    cdf.setflags(write=False)
    return cdf


@lru_cache(maxsize=8192)
def _mdc_pmf(servers: int, offered_load: float) -> np.ndarray:
    pmf = np.diff(np.concatenate(([0.0], _mdc_cdf(servers, offered_load))))
    pmf.setflags(write=False)
    return pmf


def _poisson_pmf(mean: float, n: int) -> np.ndarray:
    k = np.arange(n)
    if mean <= 0:
        return (k == 0).astype(float)
    return np.exp(k * math.log(mean) - mean - _log_factorials(n))


_LOG_FACTORIALS = np.zeros(1)


def _log_factorials(n: int) -> np.ndarray:
    """ln k! for k < n, from one table that grows to the largest n asked for."""
    global _LOG_FACTORIALS
    if _LOG_FACTORIALS.size < n:
        size = max(n, 2 * _LOG_FACTORIALS.size)
        _LOG_FACTORIALS = np.concatenate(([0.0], np.cumsum(np.log(np.arange(1, size)))))
    return _LOG_FACTORIALS[:n]


def _mdc_checked(servers: int, arrival_rate_per_s: float, service_s: float) -> float:
    if servers < 1:
        raise ValueError("servers must be at least 1")
    if arrival_rate_per_s <= 0 or service_s <= 0:
        raise ValueError("arrival rate and service time must be positive")
    return arrival_rate_per_s * service_s


# What the exact answers cost, so a page stays interactive at any knob setting (a chart solves its
# page 60-100 times per slider move). The roots are O(c) per Newton pass: exact P(wait) and mean up
# to MDC_EXACT_MAX_SERVERS servers (about 1 ms there). The distribution multiplies c roots by a grid
# of about 16 / (1 - rho) points (its tail falls as e^(-2 (1 - rho) j)): exact while that product
# stays under MDC_EXACT_BUDGET (about 1 ms; 512 servers at 99.5% busy took 240 ms).
MDC_EXACT_MAX_SERVERS = 1_000
MDC_EXACT_BUDGET = 30_000


def mdc_method(servers: int, arrival_rate_per_s: float, service_s: float) -> str:
    """How the M/D/c figures at this point are computed: "exact" (Crommelin's distribution),
    "exponential tail" (exact P(wait) and mean, the tail taken as exponential: the heavy-traffic
    form, within 13% of the exact p99 from 80% busy and closer as the load rises, tests/models/
    test_queue_mdc_cost.py), or "half of M/M/c" (a fleet too large for the roots: Erlang C's P(wait)
    and half its mean wait, Kingman's heavy-traffic factor (1 + 0) / 2 for fixed service)."""
    a = _mdc_checked(servers, arrival_rate_per_s, service_s)
    if servers > MDC_EXACT_MAX_SERVERS:
        return "half of M/M/c"
    rho = a / servers
    if rho >= 1 or servers * min(_MDC_MAX_GRID, 16 / max(1e-9, 1 - rho)) <= MDC_EXACT_BUDGET:
        return "exact"
    return "exponential tail"


def mdc_wait_probability(servers: int, arrival_rate_per_s: float, service_s: float) -> float:
    """P(wait > 0) in M/D/c (1 when the servers cannot keep up)."""
    a = _mdc_checked(servers, arrival_rate_per_s, service_s)
    if a >= servers:
        return 1.0
    if servers > MDC_EXACT_MAX_SERVERS:
        return erlang_c_wait_probability(servers, a)
    return _mdc_summary(servers, a)[0]


def mdc_mean_wait_s(servers: int, arrival_rate_per_s: float, service_s: float) -> float:
    """Mean wait in M/D/c: the mean number waiting over the arrival rate (Little's law)."""
    a = _mdc_checked(servers, arrival_rate_per_s, service_s)
    if a >= servers:
        return math.inf
    if servers > MDC_EXACT_MAX_SERVERS:
        return 0.5 * erlang_c_mean_wait_s(servers, arrival_rate_per_s, 1 / service_s)
    return _mdc_summary(servers, a)[1] / arrival_rate_per_s


def mdc_wait_cdf(servers: int, arrival_rate_per_s: float, service_s: float, t_s: float) -> float:
    """P(wait <= t) in M/D/c, exact."""
    a = _mdc_checked(servers, arrival_rate_per_s, service_s)
    if a >= servers * MDC_MAX_UTILIZATION:
        raise ValueError(f"M/D/c distributions are computed up to {MDC_MAX_UTILIZATION:.1%} busy")
    if t_s < 0:
        return 0.0
    m, y = divmod(t_s / service_s, 1.0)
    return _mdc_cdf_at(servers, a, int(m), y)


def _mdc_cdf_at(c: int, a: float, m: int, y: float) -> float:
    return _mdc_cdf_and_slope(c, a, m, y)[0]


def _mdc_cdf_and_slope(c: int, a: float, m: int, y: float) -> tuple[float, float]:
    """P(W <= (m + y) D) and its derivative in y."""
    cdf, pmf = _mdc_cdf(c, a), _mdc_pmf(c, a)
    top = (m + 1) * c - 1  # fewer than c of those ahead remain: at most (m + 1) c - 1 waiting before
    pois = _poisson_pmf(a * (1 - y), top + 1)
    # Q beyond the grid has probability below 1e-14: its cdf is 1 there and its pmf 0.
    n = min(top + 1, cdf.size)
    f = float(np.dot(pois[top - n + 1:][::-1], cdf[:n])) + float(pois[:top - n + 1].sum())
    # d/dmu of P(Poisson(mu) <= k) is -pmf(k): so dF/dy = a sum_j pmf(j) P(Q = top - j)
    slope = a * float(np.dot(pois[top - n + 1:][::-1], pmf[:n]))
    return min(1.0, f), slope


def mdc_wait_quantile_s(servers: int, arrival_rate_per_s: float, service_s: float, p: float) -> float:
    """The wait a share p of customers do not exceed, in M/D/c (0 when that share never waits)."""
    if not 0 < p < 1:
        raise ValueError("the percentile must be between 0 and 1")
    a = _mdc_checked(servers, arrival_rate_per_s, service_s)
    if a >= servers * MDC_MAX_UTILIZATION:
        return math.inf
    if mdc_method(servers, arrival_rate_per_s, service_s) != "exact":
        # P(W > t) = P(wait) e^(-t P(wait) / E[W]): an exponential tail with the right mass and mean.
        p_wait = mdc_wait_probability(servers, arrival_rate_per_s, service_s)
        if p_wait <= 1 - p:
            return 0.0
        return mdc_mean_wait_s(servers, arrival_rate_per_s, service_s) / p_wait * math.log(p_wait / (1 - p))
    return _mdc_quantile(servers, a, p) * service_s


@lru_cache(maxsize=8192)
def _mdc_quantile(c: int, a: float, p: float) -> float:
    """The p-quantile of the wait in service times."""
    p_wait = _mdc_summary(c, a)[0]
    if 1 - p_wait >= p:
        return 0.0
    cdf = _mdc_cdf(c, a)
    # P(W <= m D) = P(Q <= m c - 1) for whole m >= 1: the first whole m that reaches p ...
    m = 1
    while (cdf[m * c - 1] if m * c - 1 < cdf.size else 1.0) < p:
        m += 1
    # ... then the fraction y of the last service time: Newton, kept inside a shrinking bracket
    # (F rises with y, so bisection takes over whenever a Newton step leaves it).
    lo, hi, y = 0.0, 1.0, 0.5
    for _ in range(60):
        f, slope = _mdc_cdf_and_slope(c, a, m - 1, y)
        if f >= p:
            hi = y
        else:
            lo = y
        if hi - lo < 1e-12:
            break
        nxt = y - (f - p) / slope if slope > 0 else lo - 1.0
        y = nxt if lo < nxt < hi else (lo + hi) / 2
        if abs(f - p) < 1e-13:
            break
    return m - 1 + y
