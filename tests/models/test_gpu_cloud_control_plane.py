"""gpu-cloud-control-plane: the seed's scenario by hand, a variant by hand, directions, the lifecycle
invariant on random event sequences, and the content's placeholders."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models.content import load_content
from models.platform import gpu_cloud_control_plane as m
from models.platform.gpu_cloud_control_plane import Params, solve

ROOT = Path(__file__).resolve().parents[2]
CONTENT = ROOT / "content" / "platform" / "gpu-cloud-control-plane.md"
SOME = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def v(d, key):
    return d.value(key)


# --- the seed scenario by hand ------------------------------------------------------------------


def test_seed_promises_thousands_of_nodes_in_minutes():
    p = Params()
    d = solve(p)
    # "keeps thousands converging": the default fleet is in the thousands
    assert 1000 <= p.nodes < 10_000
    # "expect them in minutes": 30 s partition update + 3 min check + 6 min boot = 570 s
    assert v(d, "handoff_s") == pytest.approx(30 + 3 * 60 + 6 * 60) == pytest.approx(570)
    assert 60 <= v(d, "handoff_s") < 3600
    # ...and only from a burned-in pool: 48 h of burn-in first is two days
    assert v(d, "cold_handoff_s") == pytest.approx(48 * 3600 + 570)


def test_fleet_and_failures_by_hand():
    d = solve(Params())
    assert v(d, "fleet_gpus") == 4000 * 8 == 32_000
    # Llama 3: 419 unexpected interruptions, 54 days, 16,384 GPUs
    rate = 419 / (54 * 16_384)
    assert v(d, "interruptions_per_gpu_day") == pytest.approx(rate)
    assert v(d, "node_failures_per_day") == pytest.approx(32_000 * rate)  # ≈ 15.2
    assert v(d, "nodes_in_repair") == pytest.approx(32_000 * rate * 3)  # ≈ 45.5
    assert v(d, "repair_share") == pytest.approx(32_000 * rate * 3 / 4000)


def test_warm_pool_by_hand():
    d = solve(Params())
    # failures: 32,000 GPUs x 419 / (54 x 16,384) = 15.155 nodes a day; one 48 h burn-in is 2 days
    rate = 419 / (54 * 16_384)
    assert v(d, "warm_pool_swaps_nodes") == pytest.approx(32_000 * rate * 2)  # 30.31 nodes
    # one 64-node allocation plus those swaps: ceil(64 + 30.31) = 95 nodes, 95 / 4,000 = 2.375%
    assert v(d, "warm_pool_nodes") == 95
    assert v(d, "warm_pool_share") == pytest.approx(0.02375)
    # 95 nodes x 8 GPUs x $2.5 = $1,900 of GPU time an hour not sold
    assert v(d, "warm_pool_idle_usd_per_h") == pytest.approx(1900)
    # 4,000 x 15% unallocated = 600 nodes, less 45.46 in repair = 554.5 nodes, enough for 95
    assert v(d, "unallocated_healthy_nodes") == pytest.approx(600 - 32_000 * rate * 3)
    assert v(d, "warm_pool_covered") == "yes"
    # sold past 1 - (95 + 45.46) / 4,000 = 96.49%, the pool is gone
    assert v(d, "max_sellable_share_with_pool") == pytest.approx(1 - (95 + 32_000 * rate * 3) / 4000)
    assert v(solve(Params(allocated_fraction=0.98)), "warm_pool_covered") == "no"


def test_reconciler_by_hand():
    d = solve(Params())
    assert v(d, "reconciles_per_s") == pytest.approx(4000 / 30)
    assert v(d, "api_qps") == pytest.approx(4000 / 30 * 5) == pytest.approx(666.667, rel=1e-4)
    assert v(d, "api_qps_with_cache") == pytest.approx(4000 / 30 * 5 * 0.02)
    assert v(d, "reconcile_work_s") == pytest.approx(5 * 0.020)
    # 133.3 reconciles/s × 0.1 s = 13.3 busy workers of 20
    assert v(d, "reconciler_busy_share") == pytest.approx((4000 / 30) * 0.1 / 20)
    assert v(d, "reconciler_keeps_up") == "yes"
    assert v(d, "full_resync_s") == pytest.approx(4000 * 0.1 / 20) == pytest.approx(20)


def test_heartbeats_by_hand():
    d = solve(Params())
    assert v(d, "heartbeat_writes_per_s") == pytest.approx(4000 / 10) == 400
    assert v(d, "failure_detection_s") == pytest.approx(10 * 4) == 40
    assert v(d, "blip_tolerated_s") == pytest.approx(3 * 10)


def test_health_gate_by_hand():
    d = solve(Params())
    # 1 − 0.99^64
    assert v(d, "p_allocation_has_bad_node") == pytest.approx(1 - 0.99**64)
    assert v(d, "p_allocation_has_bad_node") == pytest.approx(0.4744, abs=0.0001)
    assert v(d, "expected_bad_nodes") == pytest.approx(0.64)
    # the gate passes 0.99 + 0.001 of the pool; 0.001 of it is bad: 0.001 / 0.991
    passed_bad = 0.01 * 0.1 / (1 - 0.009)
    assert v(d, "bad_fraction_after_gate") == pytest.approx(passed_bad)
    assert v(d, "p_allocation_has_bad_node_gated") == pytest.approx(1 - (1 - passed_bad) ** 64)
    assert v(d, "p_allocation_has_bad_node_gated") == pytest.approx(0.0626, abs=0.0001)


def test_meter_buffer_by_hand():
    d = solve(Params())
    # 6 h of 60 s intervals = 360; 8 GPUs × 200 B each = 1,600 B per interval
    assert v(d, "meter_intervals_in_outage") == pytest.approx(360)
    assert v(d, "meter_records_per_interval") == 8
    assert v(d, "meter_buffer_per_node_KB") == pytest.approx(360 * 1600 / 1000) == pytest.approx(576)
    assert v(d, "fleet_buffer_bytes") == pytest.approx(576_000 * 4000)
    # replayed over 30 min: 4,000 × 8 × 360 / 1,800 s
    assert v(d, "replay_records_per_s") == pytest.approx(6400)
    assert v(d, "revenue_in_outage_usd") == pytest.approx(4000 * 0.85 * 8 * 2.5 * 6) == pytest.approx(408_000)


def test_variant_by_hand():
    p = Params(nodes=1500, gpus_per_node=4, reconcile_interval_s=60, calls_per_reconcile=4, api_call_ms=50,
               reconciler_workers=4, drift_fraction=0.1, heartbeat_interval_s=5, missed_beats=6,
               bad_node_fraction=0.02, allocation_nodes=16, gate_catch_fraction=0.5, meter_interval_s=10,
               meter_record_bytes=128, outage_h=2, replay_window_min=10)
    d = solve(p)
    assert v(d, "reconciles_per_s") == pytest.approx(25)  # 1,500 / 60
    assert v(d, "api_qps") == pytest.approx(100)  # 25 × 4
    assert v(d, "api_qps_with_cache") == pytest.approx(10)
    assert v(d, "reconcile_work_s") == pytest.approx(0.2)  # 4 × 50 ms
    assert v(d, "reconciler_busy_share") == pytest.approx(1.25)  # 25 × 0.2 / 4 = 1.25
    assert v(d, "reconciler_keeps_up") == "no"
    assert v(d, "heartbeat_writes_per_s") == pytest.approx(300)  # 1,500 / 5
    assert v(d, "failure_detection_s") == pytest.approx(30)  # 5 × 6
    # 1 − 0.98^16 = 0.2762
    assert v(d, "p_allocation_has_bad_node") == pytest.approx(0.2762, abs=0.0001)
    # 0.02 × 0.5 / (1 − 0.01) = 0.010101; 1 − (1 − 0.010101)^16 = 1 − e^(16 × −0.010152) = 0.1499
    assert v(d, "bad_fraction_after_gate") == pytest.approx(0.01 / 0.99)
    assert v(d, "p_allocation_has_bad_node_gated") == pytest.approx(0.1499, abs=0.0001)
    # 2 h / 10 s = 720 intervals × 4 records × 128 B = 368,640 B
    assert v(d, "meter_buffer_per_node_KB") == pytest.approx(368.64)
    assert v(d, "replay_records_per_s") == pytest.approx(1500 * 4 * 720 / 600)


def test_a_perfect_gate_leaves_no_bad_node_and_no_gate_changes_nothing():
    assert solve(Params(gate_catch_fraction=0)).value("p_allocation_has_bad_node_gated") == pytest.approx(
        solve(Params()).value("p_allocation_has_bad_node"))
    assert solve(Params(gate_catch_fraction=0.999)).value("bad_fraction_after_gate") == pytest.approx(
        0.01 * 0.001 / (1 - 0.01 * 0.999))


# --- directions ----------------------------------------------------------------------------------


@SOME
@given(a=st.integers(1, 2048), b=st.integers(1, 2048), q=st.floats(0.0001, 0.2), c=st.floats(0, 0.999))
def test_bigger_allocations_are_never_safer_and_the_gate_never_hurts(a, b, q, c):
    lo, hi = sorted((a, b))
    d_lo = solve(Params(allocation_nodes=lo, bad_node_fraction=q, gate_catch_fraction=c))
    d_hi = solve(Params(allocation_nodes=hi, bad_node_fraction=q, gate_catch_fraction=c))
    for key in ("p_allocation_has_bad_node", "p_allocation_has_bad_node_gated"):
        assert d_hi.value(key) >= d_lo.value(key) - 1e-9
    assert d_lo.value("p_allocation_has_bad_node_gated") <= d_lo.value("p_allocation_has_bad_node") + 1e-9
    assert 0 <= d_lo.value("p_allocation_has_bad_node_gated") <= 1


@SOME
@given(c1=st.floats(0, 0.999), c2=st.floats(0, 0.999))
def test_a_better_gate_lets_fewer_bad_nodes_through(c1, c2):
    lo, hi = sorted((c1, c2))
    assert solve(Params(gate_catch_fraction=hi)).value("p_allocation_has_bad_node_gated") <= solve(
        Params(gate_catch_fraction=lo)).value("p_allocation_has_bad_node_gated") + 1e-9


@SOME
@given(n1=st.integers(100, 50_000), n2=st.integers(100, 50_000), interval=st.floats(1, 600))
def test_more_nodes_mean_more_load(n1, n2, interval):
    lo, hi = sorted((n1, n2))
    d_lo = solve(Params(nodes=lo, reconcile_interval_s=interval))
    d_hi = solve(Params(nodes=hi, reconcile_interval_s=interval))
    for key in ("api_qps", "api_qps_with_cache", "heartbeat_writes_per_s", "reconciler_busy_share",
                "node_failures_per_day", "fleet_buffer_bytes", "replay_records_per_s"):
        assert d_hi.value(key) >= d_lo.value(key)
    assert d_lo.value("api_qps_with_cache") <= d_lo.value("api_qps")


@SOME
@given(i1=st.floats(1, 120), i2=st.floats(1, 120), beats=st.integers(1, 10))
def test_faster_heartbeats_detect_sooner_and_write_more(i1, i2, beats):
    lo, hi = sorted((i1, i2))
    fast = solve(Params(heartbeat_interval_s=lo, missed_beats=beats))
    slow = solve(Params(heartbeat_interval_s=hi, missed_beats=beats))
    assert fast.value("failure_detection_s") <= slow.value("failure_detection_s")
    assert fast.value("heartbeat_writes_per_s") >= slow.value("heartbeat_writes_per_s")
    assert fast.value("blip_tolerated_s") <= slow.value("blip_tolerated_s")


@SOME
@given(h1=st.floats(0.1, 168), h2=st.floats(0.1, 168))
def test_longer_outages_need_bigger_buffers(h1, h2):
    lo, hi = sorted((h1, h2))
    assert solve(Params(outage_h=hi)).value("meter_buffer_per_node_KB") >= solve(
        Params(outage_h=lo)).value("meter_buffer_per_node_KB")


# --- the lifecycle ----------------------------------------------------------------------------


def _fleet():
    return m.Fleet(tuple(m.Node(f"n{i}", s) for i, s in enumerate(m.STATES)))


def test_allocate_only_from_ready_and_never_twice():
    f = m.Fleet((m.Node("a", "READY"),))
    assert not m.apply(f, "a", "allocate", "acme").accepted  # gate on, not checked yet
    f = m.apply(f, "a", "health_check").fleet
    out = m.apply(f, "a", "allocate", "acme")
    assert out.accepted and out.fleet.node("a").tenant == "acme"
    again = m.apply(out.fleet, "a", "allocate", "globex")
    assert not again.accepted and again.fleet == out.fleet
    for state in m.STATES:
        if state != "READY":
            g = m.Fleet((m.Node("x", state, checked=True),))
            assert not m.apply(g, "x", "allocate", "acme", gate=False).accepted, state


def test_guards_route_by_the_hidden_fault():
    f = m.inject_fault(m.Fleet((m.Node("a", "BURN_IN"), m.Node("b", "BURN_IN"))), "a", "detectable")
    f = m.inject_fault(f, "b", "silent")
    assert m.apply(f, "a", "burn_in").fleet.node("a").state == "REPAIR"
    assert m.apply(f, "b", "burn_in").fleet.node("b").state == "READY"  # silent faults pass
    # a node needing a third repair must go back to the vendor
    r = m.Fleet((m.Node("r", "REPAIR", repairs=m.MAX_FIELD_REPAIRS),))
    assert not m.apply(r, "r", "repair").accepted
    assert m.apply(r, "r", "rma").fleet.node("r").state == "RMA"
    # nothing to report on a healthy node
    h = m.Fleet((m.Node("h", "ALLOCATED", tenant="acme"),))
    assert not m.apply(h, "h", "fault_reported").accepted


def test_scripted_runs_end_in_the_states_the_page_describes():
    on, off = m.scenario(gate=True), m.scenario(gate=False)
    assert on[-1].bad_handed == 1  # the silent fault gets through the gate
    assert off[-1].bad_handed == 2  # without it, the flapping link does too
    # the two refusals are in both runs: a node of another tenant, a node still burning in
    for frames in (on, off):
        refused = [(f.node, f.event, f.tenant) for f in frames if not f.accepted]
        assert refused == [("n3", "allocate", "globex"), ("n6", "allocate", "globex")]
    gated = {n.name: n.state for n in on[-1].fleet.nodes}
    assert gated == {"n1": "READY", "n2": "READY", "n3": "ALLOCATED", "n4": "READY", "n5": "PROVISIONING",
                     "n6": "ALLOCATED"}
    assert on[-1].fleet.tenants() == {"acme": ("n3", "n6")}


events = st.sampled_from(m.EVENTS)
tenants = st.sampled_from(["", "acme", "globex", "initech"])
steps = st.lists(st.tuples(st.integers(0, 3), events, tenants, st.sampled_from(["", "", "detectable", "silent"])),
                 max_size=60)


@settings(max_examples=300, deadline=None)
@given(seq=steps, gate=st.booleans())
def test_invariant_one_tenant_per_node_and_only_from_ready(seq, gate):
    fleet = m.Fleet(tuple(m.Node(f"n{i}", "PROVISIONING") for i in range(4)))
    for idx, event, tenant, fault in seq:
        name = f"n{idx}"
        if fault:
            fleet = m.inject_fault(fleet, name, fault)
        before = fleet.node(name)
        out = m.apply(fleet, name, event, tenant, gate)
        after = out.fleet.node(name)
        if not out.accepted:
            assert out.fleet == fleet
        if after.state == "ALLOCATED" and before.state != "ALLOCATED":
            assert before.state == "READY" and before.tenant == "" and event == "allocate"
            assert before.checked or not gate
        if before.tenant and after.tenant:
            assert before.tenant == after.tenant  # a tenant is never swapped for another
        fleet = out.fleet
        for n in fleet.nodes:
            assert (n.tenant != "") == (n.state in m.TENANT_STATES), n
            assert n.state in m.STATES
        owners = [n.name for n in fleet.nodes if n.state == "ALLOCATED"]
        assert len(owners) == len(set(owners))


# --- the page's own figures and prose (the contract every page meets: tests/test_contract.py) ---


def test_the_page_draws_its_figures():
    content = load_content(CONTENT)
    assert set(content.directives()) == {("diagram", "control_plane"), ("chart", "bad_node_vs_allocation"),
                                         ("chart", "api_load_vs_nodes"), ("sim", "node_lifecycle")}


def test_probability_formula_matches_a_direct_count():
    # enumerate all 2^k outcomes for a small k and add the ones with at least one bad node
    k, q = 6, 0.1
    total = 0.0
    for mask in range(1 << k):
        bad = bin(mask).count("1")
        if bad:
            total += q**bad * (1 - q) ** (k - bad)
    assert solve(Params(allocation_nodes=k, bad_node_fraction=q)).value("p_allocation_has_bad_node") == \
        pytest.approx(total)
    assert math.isclose(total, 1 - 0.9**6)
