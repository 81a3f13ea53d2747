"""Checkpoint distribution: seed figures, hand-worked variants, directions, contract, content."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from models.content import load_content
from models.training.checkpoint_distribution import Params, sim_chunks, sim_step_s, simulate, solve

ROOT = Path(__file__).resolve().parents[2]
CONTENT = ROOT / "content" / "training" / "checkpoint-distribution.md"
DIRECTIVES = {("chart", "times_vs_hosts"), ("sim", "swarm")}


def v(d, key):
    return d.value(key)


# --- the seed's own arithmetic --------------------------------------------------------------


def test_seed_figures():
    d = solve(Params())
    assert v(d, "link_GBps") == pytest.approx(10 / 8)  # 10 Gbps is 1.25 GB/s
    assert v(d, "lower_bound_s") == pytest.approx(400 / 1.25)  # 320 s
    assert v(d, "lower_bound_s") == pytest.approx(320)
    assert v(d, "naive_pull_s") == pytest.approx(200 * 320)  # 64,000 s
    assert v(d, "naive_pull_s") / 3600 == pytest.approx(17.8, abs=0.05)  # "close to 18 hours"
    assert v(d, "tree_levels") == 7  # 2 + 4 + ... + 128 = 254 >= 200; six levels hold 126
    assert v(d, "tree_capacity") == 254
    assert v(d, "tree_short_capacity") == 126
    assert v(d, "tree_per_level_s") == pytest.approx(640)  # two full copies per parent
    assert v(d, "tree_s") == pytest.approx(7 * 640)  # 4,480 s
    assert v(d, "tree_s") / 60 == pytest.approx(75, abs=0.5)  # "close to 75 minutes"
    assert v(d, "chunk_count") == 4000  # 400 GB / 100 MB
    assert v(d, "chunk_time_s") == pytest.approx(0.1 / 1.25)  # 0.08 s
    assert v(d, "pipeline_s") == pytest.approx(320 + 199 * 0.08, abs=0.05)  # 335.92
    assert v(d, "pipeline_overhead_s") == pytest.approx(15.92, abs=0.01)
    assert v(d, "chunked_tree_s") == pytest.approx(2 * (4000 + 7 - 1) * 0.08)  # 640.96: 2x the bound
    assert v(d, "manifest_bytes") == 4000 * 32  # 128,000 B of SHA-256 digests
    assert v(d, "chain_with_one_slow_peer_s") == pytest.approx(4001 * 0.08 / 0.25 + 198 * 0.08)
    assert v(d, "swarm_fill_rounds") == 8  # ceil(log2(201))
    assert v(d, "swarm_estimate_s") == pytest.approx(320 + 8 * 0.08)
    assert v(d, "naive_vs_bound_ratio") == pytest.approx(200)
    assert v(d, "tree_vs_bound_ratio") == pytest.approx(14)  # fan-out 2 x 7 levels
    assert v(d, "speedup_tree_over_naive") == pytest.approx(64000 / 4480)


def test_seed_worked_arithmetic_reads_like_the_seed():
    d = solve(Params())
    assert d["lower_bound_s"].worked().startswith("400 GB / 1.25 GB/s = 320 s")
    assert d["tree_s"].worked().startswith("7 levels × 640 s = 4,480 s")
    assert d["naive_pull_s"].worked().startswith("200 copies × 400 GB / 1.25 GB/s = 64,000 s")


# --- variants worked by hand ------------------------------------------------------------------


def test_variant_fast_fabric_thousand_hosts():
    # 141 GB over 100 Gb/s to 1,000 hosts, 1 GB chunks, fan-out 3.
    d = solve(Params(checkpoint_gb=141, link_gbps=100, hosts=1000, chunk_mb=1000, tree_fanout=3))
    assert v(d, "link_GBps") == pytest.approx(12.5)
    assert v(d, "lower_bound_s") == pytest.approx(141 / 12.5)  # 11.28 s
    assert v(d, "naive_pull_s") == pytest.approx(1000 * 11.28)  # 11,280 s
    assert v(d, "tree_levels") == 6  # 3+9+27+81+243 = 363 < 1000 <= 363+729 = 1,092
    assert v(d, "tree_capacity") == 1092
    assert v(d, "tree_per_level_s") == pytest.approx(3 * 11.28)  # 33.84 s
    assert v(d, "tree_s") == pytest.approx(6 * 33.84)  # 203.04 s
    assert v(d, "chunk_count") == 141
    assert v(d, "chunk_time_s") == pytest.approx(1 / 12.5)  # 0.08 s
    assert v(d, "pipeline_s") == pytest.approx((141 + 999) * 0.08)  # 91.2 s: the fill dominates
    assert v(d, "chunked_tree_s") == pytest.approx(3 * (141 + 6 - 1) * 0.08)  # 35.04 s
    assert v(d, "manifest_bytes") == 141 * 32
    assert v(d, "swarm_fill_rounds") == 10  # 2^10 = 1,024 >= 1,001
    assert v(d, "swarm_estimate_s") == pytest.approx(11.28 + 10 * 0.08)


def test_variant_small_checkpoint_partial_last_chunk():
    # 70 GB over 25 Gb/s to 50 hosts, 256 MB chunks, fan-out 4.
    d = solve(Params(checkpoint_gb=70, link_gbps=25, hosts=50, chunk_mb=256, tree_fanout=4))
    assert v(d, "link_GBps") == pytest.approx(3.125)
    assert v(d, "lower_bound_s") == pytest.approx(22.4)  # 70 / 3.125
    assert v(d, "tree_levels") == 3  # 4 + 16 = 20 < 50 <= 20 + 64 = 84
    assert v(d, "tree_s") == pytest.approx(3 * 4 * 22.4)  # 268.8 s
    assert v(d, "chunk_count") == 274  # 70,000 / 256 = 273.4, the last chunk partial
    assert v(d, "chunk_time_s") == pytest.approx(0.256 / 3.125)  # 81.92 ms
    assert v(d, "pipeline_s") == pytest.approx((274 + 49) * 0.08192)  # 26.46 s


def test_chunk_larger_than_checkpoint_is_one_chunk():
    d = solve(Params(checkpoint_gb=5, chunk_mb=10000))
    assert v(d, "chunk_count") == 1
    assert v(d, "chunk_time_s") == pytest.approx(v(d, "lower_bound_s"))


@pytest.mark.parametrize(("hosts", "levels"), [(2, 1), (6, 2), (7, 3), (126, 6), (127, 7), (254, 7), (255, 8)])
def test_binary_tree_level_boundaries(hosts, levels):
    assert solve(Params(hosts=hosts, tree_fanout=2)).value("tree_levels") == levels


def test_tree_levels_are_exact_at_large_powers():
    # 8 + ... + 8^4 = 4,680 exactly: no floating log may push it to five levels.
    assert solve(Params(hosts=4680, tree_fanout=8)).value("tree_levels") == 4
    assert solve(Params(hosts=4681, tree_fanout=8)).value("tree_levels") == 5


# --- moves the right way ----------------------------------------------------------------------

scenarios = st.builds(
    Params,
    checkpoint_gb=st.floats(1, 4000),
    link_gbps=st.floats(1, 800),
    hosts=st.integers(2, 20000),
    chunk_mb=st.floats(1, 10000),
    tree_fanout=st.integers(2, 8),
    slow_peer_speed=st.floats(0.05, 1),
)


@settings(max_examples=150, deadline=None)
@given(p=scenarios, extra=st.integers(1, 5000))
def test_more_hosts_never_finish_sooner(p, extra):
    more = p.model_copy(update={"hosts": min(p.hosts + extra, 20000)})
    a, b = solve(p), solve(Params(**more.model_dump()))
    for key in ("naive_pull_s", "tree_s", "pipeline_s", "chunked_tree_s", "swarm_estimate_s",
                "chain_with_one_slow_peer_s"):
        assert v(b, key) >= v(a, key) * (1 - 1e-12), key
    assert v(b, "lower_bound_s") == v(a, "lower_bound_s")  # the bound ignores the host count


@settings(max_examples=150, deadline=None)
@given(p=scenarios, factor=st.floats(1.01, 50))
def test_faster_link_is_never_slower(p, factor):
    faster = Params(**{**p.model_dump(), "link_gbps": min(p.link_gbps * factor, 800)})
    a, b = solve(p), solve(faster)
    for key in ("lower_bound_s", "naive_pull_s", "tree_s", "pipeline_s", "chunked_tree_s", "swarm_estimate_s"):
        assert v(b, key) <= v(a, key) * (1 + 1e-12), key


@settings(max_examples=200, deadline=None)
@given(p=scenarios)
def test_orderings_that_always_hold(p):
    d = solve(p)
    bound = v(d, "lower_bound_s")
    tiny = 1e-9
    assert v(d, "pipeline_s") >= bound * (1 - tiny)
    assert v(d, "swarm_estimate_s") >= bound
    assert v(d, "chunked_tree_s") >= p.tree_fanout * bound * (1 - tiny)
    assert v(d, "naive_pull_s") >= v(d, "tree_s") * (1 - tiny) or p.hosts <= p.tree_fanout * v(d, "tree_levels")
    assert v(d, "chain_with_one_slow_peer_s") >= v(d, "pipeline_s") * (1 - tiny)
    # The tree holds every host, and one level fewer would not.
    assert v(d, "tree_capacity") >= p.hosts > v(d, "tree_short_capacity")
    assert v(d, "chunk_count") * v(d, "chunk_time_s") >= bound * (1 - tiny)
    # the binomial tree is the fewest rounds of whole-copy pushes, so never slower than the k-ary tree
    assert bound * (1 - tiny) <= v(d, "binomial_s") <= v(d, "tree_s") * (1 + tiny)
    assert v(d, "pfs_s") >= bound * (1 - tiny)


# --- simulation hook --------------------------------------------------------------------------


def test_simulate_checks_the_estimate_conservatively():
    p = Params()
    r = simulate(p, seed=0)
    assert r.hosts == 200 and r.chunks == 200  # 4,000 chunks coarsened to 200
    step = sim_step_s(p)
    assert step == pytest.approx(400 / 1.25 / 200)  # 1.6 s per coarse chunk
    d = solve(p)
    simulated = r.finish_steps * step
    print(f"\nseed scenario: swarm sim {simulated:.1f} s, estimate {v(d, 'swarm_estimate_s'):.1f} s, "
          f"bound {v(d, 'lower_bound_s'):.0f} s, relay chain {v(d, 'pipeline_s'):.1f} s")
    assert simulated >= v(d, "lower_bound_s")
    assert simulated < 1.1 * v(d, "lower_bound_s")  # approaches the bound
    assert simulated < v(d, "chunked_tree_s")


def test_simulate_caps_hosts_and_passes_fractions():
    p = Params(hosts=5000, checkpoint_gb=10, chunk_mb=1000, slow_peer_fraction=0.1, failed_peer_fraction=0.1)
    assert sim_chunks(p) == 10
    r = simulate(p, seed=2)
    assert r.hosts == 400 and r.chunks == 10
    assert r.slow_peers == 40 and r.failed_peers == 40


# --- the page's own figures and prose (the contract every page meets: tests/test_contract.py) ---


def test_params_defaults_are_the_seed_scenario():
    p = Params()
    assert (p.checkpoint_gb, p.link_gbps, p.hosts, p.chunk_mb, p.tree_fanout) == (400, 10, 200, 100, 2)


def test_unknown_field_is_rejected():
    with pytest.raises(ValidationError):
        Params(bogus=1)


# --- content ----------------------------------------------------------------------------------


def test_the_page_draws_its_figures_where_the_prose_needs_them():
    c = load_content(CONTENT)
    assert set(c.directives()) == DIRECTIVES
    arithmetic, depth = c.section("Arithmetic").body, c.section("Depth").body
    assert "::chart times_vs_hosts" in arithmetic.splitlines()
    assert "::sim swarm" in depth.splitlines()


def test_binomial_tree_and_parallel_filesystem_by_hand():
    d = solve(Params())
    bound = 400 / (10 / 8)  # 320 s
    # holders double each round: 1, 2, 4, ..., 256 >= 201 (the source plus 200 hosts) after 8 rounds
    assert v(d, "binomial_rounds") == 8 and 2**7 < 201 <= 2**8
    assert v(d, "binomial_s") == pytest.approx(8 * bound)  # 2,560 s, against the binary tree's 2 x 7 x 320
    assert v(d, "tree_s") == pytest.approx(2 * 7 * bound)
    # 200 downlinks of 1.25 GB/s = 250 GB/s; a 100 GB/s filesystem serves 200 x 400 GB = 80 TB in 800 s
    assert v(d, "fleet_downlink_GBps") == pytest.approx(250)
    assert v(d, "pfs_read_TB") == pytest.approx(80)
    assert v(d, "pfs_s") == pytest.approx(80_000 / 100)
    assert v(d, "pfs_vs_bound") == pytest.approx(2.5)
    assert v(d, "pfs_servers_for_bound") == math.ceil(250 / 20) == 13
    # a filesystem faster than every downlink together only reaches the bound
    big = solve(Params(pfs_read_GBps=1000))
    assert v(big, "pfs_s") == pytest.approx(bound)


def test_tree_leaf_share_follows_the_fanout():
    # seed: 200 hosts, binary tree: 2 + 4 + ... + 64 = 126 hosts above the last level, 74 on it
    assert solve(Params()).value("tree_leaf_share") == pytest.approx(74 / 200)
    # 1,000 hosts at fan-out 3: 3 + 9 + 27 + 81 + 243 = 363 above the last level, 637 on it
    assert solve(Params(hosts=1000, tree_fanout=3)).value("tree_leaf_share") == pytest.approx(637 / 1000)


def test_the_filesystem_is_placed_against_perlmutter_by_hand():
    d = solve(Params())
    assert d.value("perlmutter_oss_GBps") == pytest.approx(5000 / 274)  # over 5 TB/s from 274 OSSs
    assert d.value("pfs_server_vs_perlmutter") == pytest.approx(20 / (5000 / 274))  # the assumed 20 GB/s server
    # 200 hosts x 400 GB = 80 TB; Perlmutter's 5 TB/s exceeds the fleet's 200 x 1.25 = 250 GB/s of downlinks,
    # so the downlinks cap the read and it lands at the bound, 80,000 GB / 250 GB/s = 320 s
    assert d.value("pfs_perlmutter_s") == pytest.approx(200 * 400 / 250) == pytest.approx(d.value("lower_bound_s"))
    big = solve(Params(hosts=8000))  # 8,000 x 1.25 GB/s = 10 TB/s of downlinks: now the 5 TB/s store caps it
    assert big.value("pfs_perlmutter_s") == pytest.approx(8000 * 400 / 5000)
