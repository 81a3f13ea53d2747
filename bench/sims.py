"""Simulation benchmark: each simulation at its page's default scenario and at 10x its size,
plus the queue engine against its Erlang C target.

    .venv/bin/python -m bench.sims

Median and worst of five runs, wall clock (run it on a quiet machine). Targets: default under
200 ms; the queue engine's 100,000 M/M/10 customers under 300 ms.
"""

from __future__ import annotations

import statistics
import time
from typing import Callable

import numpy as np


def _time(fn: Callable[[], object], repeats: int = 5) -> tuple[float, float]:
    fn()  # warm caches and imports
    samples = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t) * 1000)
    return statistics.median(samples), max(samples)


def cases() -> list[tuple[str, str, Callable[[], object]]]:
    from models.serving import continuous_batching as cb
    from models.serving import kv_cache_tiers as kv
    from models.sim import failover, queue
    from models.training import checkpoint_distribution as ck

    def mm10():
        rng = np.random.default_rng(0)
        queue.fifo(queue.poisson_arrivals(rng, 9.0, 100_000), rng.exponential(1.0, 100_000), 10)

    out = [
        ("queue engine (M/M/10, rho 0.9)", "100,000 customers", mm10),
        ("swarm (checkpoint-distribution)", "default: 200 hosts x 200 chunks", lambda: ck.simulate(ck.Params())),
        ("swarm (checkpoint-distribution)", "400 hosts x 200 chunks", lambda: ck.simulate(ck.Params(hosts=4000))),
        ("batching (continuous-batching)", "default", lambda: cb.simulate(cb.Params())),
        ("batching (continuous-batching)", "10x horizon", lambda: cb.simulate(cb.Params(), horizon_scale=10)),
        ("kv tiers (kv-cache-tiers)", "default", lambda: kv.simulate(kv.Params())),
        ("kv tiers (kv-cache-tiers)", "10x conversations", lambda: kv.simulate(kv.Params(conversations_per_min=60))),
        ("failover (multi-region-failover)", "default", lambda: failover.run(failover.Config(), 0)),
        ("failover (multi-region-failover)", "10x replicas", lambda: failover.run(failover.Config(replicas_per_region=400), 0)),
    ]
    try:
        from models.platform import research_cluster_fair_share as fs

        out += [("fair share (research-cluster-fair-share)", "default", lambda: fs.simulate(fs.Params()))]
        if hasattr(fs, "simulate_scaled"):
            out += [("fair share (research-cluster-fair-share)", "10x", lambda: fs.simulate_scaled(fs.Params(), 10))]
    except ImportError:
        pass
    return out


def main() -> None:
    from models.sim.queue import erlang_c_mean_wait_s, fifo, poisson_arrivals

    print(f"{'simulation':44s} {'scenario':34s} {'median ms':>10s} {'worst ms':>9s}")
    for name, scenario, fn in cases():
        med, worst = _time(fn)
        print(f"{name:44s} {scenario:34s} {med:10.1f} {worst:9.1f}")
    rng = np.random.default_rng(0)
    waits = fifo(poisson_arrivals(rng, 9.0, 100_000), rng.exponential(1.0, 100_000), 10).wait_s
    print(f"\nM/M/10 at rho 0.9, one run of 100,000: mean wait {waits[5000:].mean():.3f} s "
          f"against Erlang C {erlang_c_mean_wait_s(10, 9.0, 1.0):.3f} s "
          "(one run is noisy: tests/models/test_queue.py checks ten 1M-customer replications)")


if __name__ == "__main__":
    main()
