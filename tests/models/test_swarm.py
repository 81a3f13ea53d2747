"""The swarm simulation: bound, overhead, conservation, direction of effects, determinism."""

from __future__ import annotations

import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models.sim.swarm import Config, fill_rounds, run

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _assert_conserved(r) -> None:
    survivors = ~r.failed_mask
    assert r.finished
    # Every survivor ends with every chunk and was marked done when it got the last one.
    assert np.all(r.held_final[survivors] == r.chunks)
    assert np.all(r.have_final[survivors])
    assert np.array_equal(r.have_final.sum(axis=1), r.held_final)
    assert np.all(r.done_step[survivors] >= r.chunks)
    assert np.all(r.done_step[r.failed_mask] == -1)
    # Each landed transfer is one new chunk at one peer: nothing duplicated, nothing invented.
    assert r.transfers == r.chunks * r.survivors + int(r.held_final[r.failed_mask].sum())
    assert r.transfers == int(r.held_final.sum())
    # Every upload either landed or was lost with a peer that died that step.
    assert r.source_uploads + r.peer_uploads == r.transfers + r.lost_transfers
    assert r.completed_per_step[-1] == r.survivors
    assert np.all(np.diff(r.completed_per_step) >= 0)
    assert len(r.completed_per_step) == len(r.uplink_utilization) == r.finish_steps
    assert np.all((r.uplink_utilization >= 0) & (r.uplink_utilization <= 1 + 1e-9))


@FAST
@given(
    hosts=st.integers(2, 60),
    chunks=st.integers(1, 60),
    slow=st.sampled_from([0.0, 0.1, 0.3, 0.5]),
    speed=st.sampled_from([0.1, 0.25, 0.5, 1.0]),
    failed=st.sampled_from([0.0, 0.1, 0.3]),
    seed=st.integers(0, 2**16),
)
def test_never_beats_the_download_bound_and_conserves_chunks(hosts, chunks, slow, speed, failed, seed):
    r = run(Config(hosts, chunks, slow_fraction=slow, slow_speed=speed, failed_fraction=failed), seed)
    _assert_conserved(r)
    # Every surviving peer downloads every chunk at most one per step (slower if slow).
    assert r.finish_steps >= chunks
    assert r.finish_steps >= r.lower_bound_steps
    assert r.lower_bound_steps >= chunks


@pytest.mark.parametrize(("hosts", "chunks"), [(2, 50), (5, 400), (20, 50), (100, 50), (200, 50), (400, 200)])
def test_healthy_swarm_overhead_is_logarithmic(hosts, chunks):
    r = run(Config(hosts, chunks), 7)
    _assert_conserved(r)
    limit = 3 * fill_rounds(hosts) + 3
    print(f"\nhosts={hosts} chunks={chunks}: finish {r.finish_steps} steps, overhead "
          f"{r.overhead_steps} (log2 fill {fill_rounds(hosts)}, limit {limit})")
    assert r.lower_bound_steps == chunks
    assert 0 <= r.overhead_steps <= limit


@pytest.mark.parametrize("hosts", [20, 200])
def test_overhead_matches_the_doubling_estimate(hosts):
    # The page's analytic swarm estimate charges ceil(log2(hosts + 1)) chunk-steps of fill.
    overheads = [run(Config(hosts, 100), s).overhead_steps for s in range(5)]
    mean = float(np.mean(overheads))
    print(f"\nhosts={hosts} chunks=100: simulated overhead {mean:.1f} steps (5 seeds, "
          f"range {min(overheads)}-{max(overheads)}), estimate {fill_rounds(hosts)}")
    assert abs(mean - fill_rounds(hosts)) <= 3


def test_more_chunks_approach_the_bound_at_fixed_size():
    # Same checkpoint cut finer: one step is size / (chunks x link), so the time overhead as a
    # fraction of size / link is overhead_steps / chunks.
    fractions = []
    for chunks in (10, 40, 160):
        r = run(Config(100, chunks), 3)
        fractions.append(r.overhead_steps / chunks)
        print(f"\nhosts=100 chunks={chunks}: overhead {r.overhead_steps} steps = "
              f"{fractions[-1]:.1%} of size/link")
    assert fractions[0] > fractions[1] > fractions[2]
    assert fractions[2] < 0.1


def test_more_hosts_never_finish_sooner_on_average():
    def mean_finish(hosts):
        return np.mean([run(Config(hosts, 30), s).finish_steps for s in range(5)])

    small, large = mean_finish(20), mean_finish(80)
    print(f"\nmean finish over 5 seeds: 20 hosts {small:.1f} steps, 80 hosts {large:.1f} steps")
    assert large >= small


def test_slow_peers_raise_the_finish_time():
    base = run(Config(60, 40), 1)
    slow = run(Config(60, 40, slow_fraction=0.2, slow_speed=0.25), 1)
    _assert_conserved(slow)
    assert slow.slow_peers == 12
    assert slow.lower_bound_steps == 160  # a slow peer downloads a chunk every 4 steps
    assert slow.finish_steps > base.finish_steps
    assert slow.finish_steps >= slow.lower_bound_steps


def test_dead_peers_lose_in_flight_chunks_but_survivors_finish():
    r = run(Config(100, 40, failed_fraction=0.2), 5)
    _assert_conserved(r)
    assert r.failed_peers == 20 and r.survivors == 80
    assert np.all(r.fail_step[r.failed_mask] >= 1)
    assert np.all(r.fail_step[~r.failed_mask] == -1)


def test_rarest_first_spreads_the_load_off_the_source():
    r = run(Config(200, 100), 0)
    # The source injects each chunk about once; peers carry almost all the rest.
    assert r.source_uploads >= r.chunks
    assert r.source_share < 0.02
    assert r.peer_uploads > 100 * r.source_uploads


def test_same_seed_same_arrays_different_seed_may_differ():
    a = run(Config(50, 30, slow_fraction=0.1, failed_fraction=0.1), 11)
    b = run(Config(50, 30, slow_fraction=0.1, failed_fraction=0.1), 11)
    for name in ("completed_per_step", "uplink_utilization", "done_step", "held_final",
                 "slow_mask", "failed_mask", "fail_step"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert (a.finish_steps, a.transfers, a.source_uploads) == (b.finish_steps, b.transfers, b.source_uploads)
    others = [run(Config(50, 30, slow_fraction=0.1, failed_fraction=0.1), s) for s in range(12, 16)]
    assert any(not np.array_equal(o.done_step, a.done_step) for o in others)


def test_rejects_nonsense():
    with pytest.raises(ValueError):
        run(Config(0, 10))
    with pytest.raises(ValueError):
        run(Config(10, 10, slow_speed=0))


def test_runtime_budget():
    def best(hosts, chunks):
        times = []
        for s in range(3):
            t0 = time.process_time()
            run(Config(hosts, chunks), s)
            times.append(time.process_time() - t0)
        return min(times)

    t200, t400 = best(200, 200), best(400, 200)
    print(f"\nswarm 200 hosts x 200 chunks: {t200 * 1e3:.0f} ms; 400 x 200: {t400 * 1e3:.0f} ms")
    # Budgets 0.2 s and 0.6 s, with slack for a loaded CI machine.
    assert t200 < 0.4
    assert t400 < 1.2
