"""cluster-10k-gpus: the seed's figures from the seed's own arithmetic, the fabric counted by hand,
variants worked by hand, the spare pool against an independent Poisson sum, and directions."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from models.content import load_content
from models.training.cluster_10k_gpus import Params, fabric, poisson_quantile, solve

ROOT = Path(__file__).resolve().parents[2]
CONTENT = ROOT / "content" / "training" / "cluster-10k-gpus.md"
DIRECTIVES = {("diagram", "fabric"), ("chart", "switches_vs_gpus"), ("chart", "spares_vs_repair")}

# Llama 3 (arXiv 2407.21783, section 3.3.4): 419 unexpected interruptions in 54 days on 16,384 GPUs.
PER_GPU_DAY = 419 / (54 * 16_384)


def v(d, key):
    return d.value(key)


def poisson_cdf(k: int, mean: float) -> float:
    """P(X <= k), written out term by term with factorials (independent of the model's loop)."""
    return sum(math.exp(-mean) * mean**i / math.factorial(i) for i in range(k + 1))


def hand_quantile(mean: float, q: float) -> int:
    k = 0
    while poisson_cdf(k, mean) < q:
        k += 1
    return k


# --- the seed's own arithmetic ----------------------------------------------------------------


def test_nodes_and_pods_follow_the_seed():
    d = solve(Params())
    assert v(d, "nodes_needed") == 10_000 / 8 == 1250
    # a pod is what one layer of 64-port leaves and spines reaches: 64^2 / 4 = 1,024 NICs = 128 nodes
    assert v(d, "nodes_per_pod") == 64 * 64 // 4 // 8 == 128
    assert v(d, "pods") == math.ceil(1250 / 128) == 10  # "ten pods"
    assert v(d, "nodes_built") == 10 * 128 == 1280  # "10,000 GPUs is 1,280 nodes" only after rounding up
    assert v(d, "nodes_from_rounding") == 30
    assert v(d, "gpus_built") == 10_240


def test_switches_counted_by_hand_from_ports_and_taper():
    # Topology: 8 NICs per node, one per GPU, rail-optimized; a 64-port leaf has 32 down / 32 up;
    # a spine has 32 down to leaves and 32 / 2 = 16 up to the core (2:1 taper); a core switch has 64 down.
    d = solve(Params())
    leaves_per_pod = 8 * (128 // 32)  # 8 rails x 4 leaves per rail = 32
    spines_per_pod = leaves_per_pod * 32 // 32  # every leaf up-link lands on a spine down-port
    assert v(d, "leaf_down_ports") == 32
    assert v(d, "leaf_switches") == 10 * leaves_per_pod == 320
    assert v(d, "spine_switches") == 10 * spines_per_pod == 320
    assert v(d, "spine_up_ports") == 32 // 2 == 16
    assert v(d, "core_switches") == 320 * 16 // 64 == 80
    assert v(d, "total_switches") == 320 + 320 + 80 == 720
    assert abs(720 - 700) / 700 < 0.05  # "about 700 switches"
    # non-blocking: 32 up per spine, 320 x 32 / 64 = 160 core switches, ~800 in all
    assert v(d, "total_switches_nonblocking") == 320 + 320 + 160 == 800
    # cables: 10,240 NIC links + 320 x 32 leaf up-links + 320 x 16 spine up-links
    assert v(d, "fabric_links") == 10_240 + 10_240 + 5_120
    assert v(d, "transceivers") == 2 * 25_600
    assert v(d, "max_gpus_three_tier") == 64**3 // 4 == 65_536
    assert v(d, "fabric_fits_three_tiers") == "yes"


# Llama 3.1 405B counted from its config.json: 126 layers, d 16,384, 128 heads and 8 KV heads of 128,
# SwiGLU width 53,248, untied 128,256-token embeddings.
L405_PARAMS = 126 * (2 * 16384 * 16384 + 2 * 16384 * 8 * 128 + 3 * 16384 * 53248) + 2 * 128256 * 16384


def test_checkpoint_write_follows_the_seed():
    d = solve(Params())
    assert v(d, "checkpoint_write_GBps") == pytest.approx(5000 / 60)  # 83.3 GB/s
    assert v(d, "checkpoint_write_GBps") >= 83  # "5 TB in under a minute needs >= 83 GB/s"
    assert v(d, "checkpoint_per_gpu_GB") == pytest.approx(0.5)
    assert v(d, "checkpoint_params_b") == pytest.approx(5e12 / 14 / 1e9)  # 357B params at 14 B/param
    # bf16 weights 2 + fp32 master, m, v 12 over Llama 3.1 405B's 405.85B counted parameters
    assert v(d, "checkpoint_bytes_per_param") == 14
    assert v(d, "model_checkpoint_TB") == pytest.approx(L405_PARAMS * 14 / 1e12)  # 5.68 TB
    assert v(d, "model_checkpoint_write_GBps") == pytest.approx(L405_PARAMS * 14 / 1e9 / 60)  # 94.7 GB/s
    assert v(d, "model_checkpoint_TB") == pytest.approx(405e9 * 14 / 1e12, rel=0.003)  # the seed's 5.67 TB
    assert v(d, "storage_servers") == math.ceil(83.33 / 20) == 5


def test_power_follows_the_seed():
    d = solve(Params())
    node_w = 8 * 700 + 4600  # DGX H100 nameplate, 10.2 kW
    it_w = 1280 * node_w + 720 * 1300
    assert v(d, "node_W") == node_w == 10_200
    assert v(d, "it_load_MW") == pytest.approx(it_w / 1e6)  # 13.99 MW
    assert round(v(d, "it_load_MW")) == 14  # "a 14 MW feed" is IT at nameplate
    assert v(d, "facility_power_MW") == pytest.approx(it_w / 1e6 * 1.2)  # 16.8 MW at PUE 1.2
    assert round(v(d, "facility_power_MW")) == 17
    assert v(d, "energy_per_year_Wh") == pytest.approx(it_w * 1.2 * 8760)
    assert v(d, "power_cost_per_year_USD") == pytest.approx(it_w * 1.2 * 8760 / 1000 * 0.08)


def test_flops_side_of_the_bill():
    d = solve(Params())
    flops = 6 * L405_PARAMS * 15e12
    assert v(d, "train_flops") == pytest.approx(flops)
    assert flops == pytest.approx(6 * 405e9 * 15e12, rel=0.003)  # the seed's round 405B
    assert v(d, "gpu_effective_flops") == pytest.approx(989e12 * 0.4)
    assert v(d, "training_days") == pytest.approx(flops / (10_000 * 989e12 * 0.4) / 86_400)  # ~107 days


def test_worked_problem_llama3_405b_reported_run():
    # The Llama 3 Herd of Models (arXiv 2407.21783): 405B trained on 15.6T tokens, up to 16,384 H100s
    # at 38-43% BF16 MFU (Table 4: 41% on 16,384 GPUs), and "approximately 3.8 x 10^25 FLOPs".
    d = solve(Params(gpus=16_384, train_tokens_t=15.6, train_mfu=0.41))
    flops = 6 * L405_PARAMS * 15.6e12
    assert v(d, "train_flops") == pytest.approx(flops)
    assert v(d, "train_flops") == pytest.approx(3.8e25, rel=0.01)
    assert v(d, "training_days") == pytest.approx(flops / (16_384 * 989e12 * 0.41) / 86_400)  # 66 days
    # 54 days of the run are the reliability snapshot; the whole pre-training ran longer.
    assert v(d, "training_days") > 54


def test_custom_part_needs_its_power_and_tpus_are_refused():
    d = solve(Params(gpu="Custom", custom_bf16_TFLOPs=1500, custom_module_W=900))
    assert v(d, "gpu_effective_flops") == pytest.approx(1500e12 * 0.4)
    assert v(d, "node_W") == 8 * 900 + 4600
    with pytest.raises(ValidationError, match="no published module power"):
        Params(gpu="TPU v5e")


def test_spares_from_the_llama3_rate():
    d = solve(Params())
    per_node_day = PER_GPU_DAY * 8
    per_day = per_node_day * 1280
    assert v(d, "interruptions_per_node_day") == pytest.approx(per_node_day)
    assert v(d, "interruptions_per_day") == pytest.approx(per_day)  # ~4.85 a day
    assert v(d, "job_interruption_interval_s") == pytest.approx(86_400 / (per_node_day * 1250))  # ~5.1 h
    assert v(d, "checkpoint_interval_s") == pytest.approx(math.sqrt(2 * 60 * 86_400 / (per_node_day * 1250)))
    repairs = per_day * 0.78
    mean = repairs * 48 / 24  # Little's law: L = lambda x W
    assert v(d, "repairs_per_day") == pytest.approx(repairs)
    assert v(d, "mean_nodes_in_repair") == pytest.approx(mean)  # ~7.6 nodes
    # the p99 by hand: the CDF crosses 0.99 between 14 and 15
    assert poisson_cdf(14, mean) < 0.99 <= poisson_cdf(15, mean)
    assert v(d, "spare_nodes_p99") == 15
    assert v(d, "spare_nodes_p999") == hand_quantile(mean, 0.999)
    assert v(d, "rounding_covers_spares") == "yes"  # 30 free nodes >= 15
    assert v(d, "nodes_needed_with_spares") == 1250 + 15


# --- what-ifs the page shows live ---------------------------------------------------------------


def test_without_rounding_the_build_is_the_need_and_the_switches_do_not_move():
    d = solve(Params(round_to_whole_pods=False))
    assert v(d, "nodes_built") == 1250
    assert v(d, "nodes_from_rounding") == 0
    # 9 full pods + 98 nodes: the partial pod still needs 8 rails x ceil(98 / 32) = 32 leaves
    assert v(d, "leaf_switches") == 9 * 32 + 8 * math.ceil(98 / 32) == 320
    assert v(d, "total_switches") == 720
    assert v(d, "rounding_covers_spares").startswith("no")


def test_taper_one_is_the_nonblocking_count():
    d = solve(Params(core_taper=1.0))
    assert v(d, "core_switches") == 160
    assert v(d, "total_switches") == v(d, "total_switches_nonblocking") == 800


def test_pue_moves_the_feed_not_the_it_load():
    a, b = solve(Params()), solve(Params(pue=1.5))
    assert v(b, "it_load_MW") == v(a, "it_load_MW")
    assert v(b, "facility_power_MW") == pytest.approx(v(a, "it_load_MW") * 1.5)


# --- variants worked by hand --------------------------------------------------------------------


def test_variant_partial_pod_saves_switches_only_when_not_rounded():
    # 2,100 GPUs -> ceil(262.5) = 263 nodes -> 3 pods of 128.
    rounded = solve(Params(gpus=2100))
    assert v(rounded, "nodes_needed") == 263
    assert v(rounded, "pods") == 3
    assert v(rounded, "nodes_built") == 384
    assert v(rounded, "leaf_switches") == 3 * 32 == 96
    assert v(rounded, "spine_switches") == 96
    assert v(rounded, "core_switches") == 96 * 16 // 64 == 24
    assert v(rounded, "total_switches") == 216
    # Unrounded: 2 full pods + 7 nodes; the partial pod has 8 rails x 1 leaf and 8 spines.
    exact = solve(Params(gpus=2100, round_to_whole_pods=False))
    assert v(exact, "nodes_built") == 263
    assert v(exact, "leaf_switches") == 64 + 8 == 72
    assert v(exact, "spine_switches") == 72
    assert v(exact, "core_switches") == math.ceil(72 * 16 / 64) == 18
    assert v(exact, "total_switches") == 162
    assert v(exact, "fabric_links") == 263 * 8 + 72 * 32 + 72 * 16


def test_variant_128_port_switches_twenty_thousand_gpus_nonblocking():
    p = Params(gpus=20_000, switch_radix=128, core_taper=1.0, round_to_whole_pods=False)
    d = solve(p)
    assert v(d, "nodes_needed") == 2500
    assert v(d, "nodes_per_pod") == 128 * 128 // 4 // 8 == 512
    assert v(d, "pods") == math.ceil(2500 / 512) == 5
    # 4 full pods of 8 x (512 / 64) = 64 leaves, and 452 nodes needing 8 x ceil(452 / 64) = 64 more
    assert v(d, "leaf_switches") == 5 * 64 == 320
    assert v(d, "spine_switches") == 320  # 64 up-links per leaf onto 64 down-ports per spine
    assert v(d, "spine_up_ports") == 64
    assert v(d, "core_switches") == 320 * 64 // 128 == 160
    assert v(d, "total_switches") == 800
    assert v(d, "max_gpus_three_tier") == 128**3 // 4


def test_variant_b200_power():
    d = solve(Params(gpu="B200"))
    node_w = 8 * 1000 + 4600
    assert v(d, "node_W") == node_w
    assert v(d, "it_load_MW") == pytest.approx((1280 * node_w + 720 * 1300) / 1e6)  # 17.07 MW
    assert v(d, "gpu_effective_flops") == pytest.approx(2250e12 * 0.4)


def test_variant_moe_checkpoint_follows_total_params_and_flops_follow_active():
    d = solve(Params(model="DeepSeek-V3"))
    # DeepSeek-V3 counted from its config: 671.0B total, 37.55B active
    assert v(d, "train_flops") == pytest.approx(6 * 37e9 * 15e12, rel=0.02)
    assert v(d, "model_checkpoint_TB") == pytest.approx(671e9 * 14 / 1e12, rel=0.001)  # 9.39 TB
    assert v(d, "model_checkpoint_TB") / (v(d, "train_flops") / 6 / 15e12 * 14 / 1e12) == pytest.approx(671 / 37.55, rel=0.001)


def test_variant_young_fleet_outgrows_the_free_spares():
    d = solve(Params(failure_rate_scale=2.0, repair_hours=120))
    mean = 2 * PER_GPU_DAY * 8 * 1280 * 0.78 * 120 / 24  # ~37.8 nodes
    assert v(d, "mean_nodes_in_repair") == pytest.approx(mean)
    assert v(d, "spare_nodes_p99") == hand_quantile(mean, 0.99)
    assert v(d, "spare_nodes_p99") > 30
    assert v(d, "rounding_covers_spares").startswith("no")


def test_one_pod_needs_no_core():
    d = solve(Params(gpus=1024))
    assert v(d, "pods") == 1
    assert v(d, "core_switches") == 0
    assert v(d, "total_switches") == 32 + 32
    assert v(d, "fabric_links") == 1024 + 32 * 32  # no spine up-links without a core


def test_32_port_switches_cannot_hold_ten_thousand_gpus_in_three_tiers():
    d = solve(Params(switch_radix=32))
    assert v(d, "nodes_per_pod") == 32 * 32 // 4 // 8 == 32
    assert v(d, "pods") == math.ceil(1250 / 32) == 40
    assert v(d, "max_gpus_three_tier") == 32**3 // 4 == 8192
    assert v(d, "fabric_fits_three_tiers").startswith("no")


def test_fabric_helper_matches_a_hand_count():
    f = fabric(nodes=256, radix=64, taper=2)
    assert (f["pods"], f["leaves"], f["spines"], f["core"]) == (2, 64, 64, 64 * 16 // 64)


# --- the Poisson quantile -----------------------------------------------------------------------


@pytest.mark.parametrize("mean", [0.3, 1.0, 2.5, 7.565, 20.0, 55.5])
@pytest.mark.parametrize("q", [0.5, 0.9, 0.99, 0.999])
def test_poisson_quantile_matches_a_factorial_sum(mean, q):
    assert poisson_quantile(mean, q) == hand_quantile(mean, q)


def test_poisson_quantile_survives_a_mean_too_large_for_exp():
    # exp(-800) underflows to zero in floats; the quantile must still sit near mean + 2.33 sd.
    k = poisson_quantile(800.0, 0.99)
    assert 800 + 2.2 * math.sqrt(800) < k < 800 + 2.5 * math.sqrt(800)
    assert poisson_quantile(0.0, 0.99) == 0


# --- moves the right way --------------------------------------------------------------------------

scenarios = st.builds(
    Params,
    gpus=st.integers(1024, 100_000),
    gpu=st.sampled_from(["H100 SXM", "H200", "B200"]),
    switch_radix=st.sampled_from([32, 64, 128]),
    core_taper=st.sampled_from([1.0, 1.5, 2.0, 2.5, 3.0, 4.0]),
    round_to_whole_pods=st.booleans(),
    repair_hours=st.floats(2, 720),
    failure_rate_scale=st.floats(0.25, 4),
    repair_share=st.floats(0.1, 1.0),
)


@settings(max_examples=120, deadline=None)
@given(p=scenarios, extra=st.integers(1, 20_000))
def test_more_gpus_never_need_less(p, extra):
    more = Params(**{**p.model_dump(), "gpus": min(p.gpus + extra, 100_000)})
    a, b = solve(p), solve(more)
    for key in ("nodes_needed", "nodes_built", "pods", "leaf_switches", "spine_switches", "core_switches",
                "total_switches", "it_load_MW", "facility_power_MW", "interruptions_per_day",
                "mean_nodes_in_repair", "spare_nodes_p99"):
        assert v(b, key) >= v(a, key) - 1e-9, key


@settings(max_examples=120, deadline=None)
@given(p=scenarios)
def test_orderings_that_always_hold(p):
    d = solve(p)
    assert v(d, "nodes_built") >= v(d, "nodes_needed")
    assert v(d, "total_switches") <= v(d, "total_switches_nonblocking")
    assert v(d, "spare_nodes_p999") >= v(d, "spare_nodes_p99") >= v(d, "mean_nodes_in_repair") - 1
    assert v(d, "facility_power_MW") >= v(d, "it_load_MW")
    # every node's NICs land on a leaf port, every leaf up-link on a spine port
    assert v(d, "leaf_switches") * v(d, "leaf_down_ports") >= v(d, "gpus_built")
    assert v(d, "spine_switches") * v(d, "leaf_down_ports") >= v(d, "leaf_switches") * v(d, "leaf_down_ports")
    if v(d, "pods") > 1:
        assert v(d, "core_switches") * p.switch_radix >= v(d, "spine_switches") * v(d, "spine_up_ports")
    # rounding to pods never changes the switch count by more than one partial pod's worth
    other = solve(Params(**{**p.model_dump(), "round_to_whole_pods": not p.round_to_whole_pods}))
    assert max(v(d, "nodes_built"), v(other, "nodes_built")) - min(v(d, "nodes_built"), v(other, "nodes_built")) \
        < v(d, "nodes_per_pod")


@settings(max_examples=80, deadline=None)
@given(p=scenarios, factor=st.floats(1.01, 10))
def test_longer_repairs_need_more_spares_and_taper_saves_core(p, factor):
    longer = Params(**{**p.model_dump(), "repair_hours": min(p.repair_hours * factor, 720)})
    assert v(solve(longer), "spare_nodes_p99") >= v(solve(p), "spare_nodes_p99")
    thinner = Params(**{**p.model_dump(), "core_taper": 4.0})
    a, b = solve(p), solve(thinner)
    assert v(b, "core_switches") <= v(a, "core_switches")
    assert (v(b, "leaf_switches"), v(b, "spine_switches")) == (v(a, "leaf_switches"), v(a, "spine_switches"))


# --- idle spine ports, optics, racks, the front end: counted by hand -------------------------------


def test_spines_use_48_of_64_ports_and_the_empty_ones_are_the_upgrade_path():
    d = solve(Params())
    # a 64-port spine: 32 down (one per leaf of its pod), 32 / 2 = 16 up at a 2:1 taper, 16 empty
    assert v(d, "spine_ports_used") == 32 + 16 == 48
    assert v(d, "spine_idle_ports") == 64 - 48 == 16
    # non-blocking the 320 spines send 32 up each: 320 * 32 / 64 = 160 core switches, against 80 now
    assert v(d, "core_upgrade_switches") == 320 * 32 // 64 - 320 * 16 // 64 == 80
    # spending the empty ports on leaves: a spine could take 64 * 2/3 = 42.7 leaves, 5 per rail (40),
    # each leaf 32 nodes: pods of 5 * 32 = 160 nodes
    assert v(d, "pod_nodes_spines_full") == 5 * 32 == 160
    flat = solve(Params(core_taper=1.0))
    assert v(flat, "spine_idle_ports") == 0 and v(flat, "core_upgrade_switches") == 0
    assert v(flat, "pod_nodes_spines_full") == v(flat, "nodes_per_pod") == 128


def test_optics_counted_by_hand():
    d = solve(Params())
    nic_links, leaf_up, spine_up = 10_240, 320 * 32, 320 * 16
    assert v(d, "fabric_links") == nic_links + leaf_up + spine_up == 25_600
    # switch ends: one per NIC link, two per switch-to-switch link
    switch_ends = nic_links + 2 * (leaf_up + spine_up)
    assert v(d, "switch_link_ends") == switch_ends == 40_960
    # the only empty switch ports are the spines' idle ones: 720 * 64 - 40,960 = 320 * 16
    assert 720 * 64 - switch_ends == 320 * 16
    assert v(d, "twin_port_modules") == switch_ends // 2 == 20_480
    assert v(d, "optical_modules") == 10_240 + 20_480
    assert v(d, "optics_kW") == pytest.approx((20_480 * 17 + 10_240 * 9) / 1000)  # 440.32 kW


def test_racks_against_the_hall():
    d = solve(Params())
    assert v(d, "rack_kW") == pytest.approx(4 * 10.2)  # NVIDIA's four DGX H100 a rack: 40.8 kW
    assert v(d, "compute_racks") == 1280 / 4 == 320
    assert v(d, "rack_fits_hall").startswith("no")  # 40.8 kW > 30 kW
    assert v(d, "nodes_per_rack_hall") == 2  # floor(30 / 10.2)
    assert v(d, "racks_at_hall_limit") == 640
    liquid = solve(Params(hall_rack_kW=120))
    assert v(liquid, "rack_fits_hall") == "yes" and v(liquid, "nodes_per_rack_hall") == 11
    tiny = solve(Params(hall_rack_kW=10))  # below one node: still one a rack
    assert v(tiny, "nodes_per_rack_hall") == 1 and v(tiny, "racks_at_hall_limit") == 1280


def test_the_checkpoint_burst_is_a_sliver_of_the_front_end():
    d = solve(Params())
    assert v(d, "frontend_node_GBps") == pytest.approx(2 * 200 / 8)  # 50 GB/s
    # 83.33 GB/s over the 1,250 writing nodes: 66.7 MB/s each, 0.13% of 50 GB/s
    burst = max(5000 / 60, L405_PARAMS * 14 / 1e9 / 60)  # the 405B model's full checkpoint is the larger
    assert v(d, "checkpoint_node_GBps") == pytest.approx(burst / 1250)
    assert v(d, "checkpoint_frontend_share") == pytest.approx(burst / 1250 / 50)


# --- the page's own figures and prose (the contract every page meets: tests/test_contract.py) -----


def test_the_page_draws_its_figures_and_names_each_assumption():
    c = load_content(CONTENT)
    assert set(c.directives()) == DIRECTIVES
    # the seed figures that hold only under an assumption are named with it
    body = " ".join(s.body for s in c.sections)
    for phrase in ("{{total_switches_nonblocking}}", "{{facility_power_MW}}", "{{nodes_needed}}",
                   "Build whole pods", "nameplate", ":1 taper", "Little's law", "Poisson", "Llama 3",
                   "RoCE", "InfiniBand", "MegaScale", "front-end", "{{spine_idle_ports}}"):
        assert phrase in body, phrase


# --- the page -----------------------------------------------------------------------------------


def test_page_whole_pods_toggle_moves_metric_and_prose(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("WALKTHROUGHS_DB", str(tmp_path / "apptest.duckdb"))
    at = AppTest.from_file(str(ROOT / "pages" / "training" / "cluster_10k_gpus.py"), default_timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    metric = {m.label: m.value for m in at.metric}
    assert metric["Nodes built"] == "1,280 nodes"
    assert metric["Fabric switches"] == "720 switches"
    assert len(at.get("plotly_chart")) == 3  # the fabric diagram and two sweeps
    at.toggle(key="cluster-10k-gpus.round_to_whole_pods").set_value(False).run()
    assert not at.exception
    metric = {m.label: m.value for m in at.metric}
    assert metric["Nodes built"] == "1,250 nodes"  # 10,000 / 8, no rounding
    assert metric["Fabric switches"] == "720 switches"  # the partial pod still needs its switches
    text = "\n".join(m.value for m in at.markdown)
    assert "**1,250 nodes**" in text and "**0 nodes**" in text


def test_one_burst_figure_and_the_build_rule_by_hand():
    d = solve(Params())
    full = L405_PARAMS * 14 / 1e9 / 60  # 405B x 14 B in 60 s: about 94.7 GB/s, above the stated 83.3
    assert v(d, "burst_write_GBps") == pytest.approx(max(5000 / 60, full)) == pytest.approx(full)
    assert v(d, "storage_servers") == math.ceil(full / 20)
    big = solve(Params(checkpoint_tb=20))  # 20 TB / 60 s = 333 GB/s, above the model's
    assert v(big, "burst_write_GBps") == pytest.approx(20000 / 60)
    assert v(d, "build_rule").startswith("rounded up") and "first spares" in v(d, "build_rule")  # 1,280 - 1,250
    exact = solve(Params(round_to_whole_pods=False))
    assert v(exact, "nodes_from_rounding") == 0
    assert "bought on top" in v(exact, "build_rule")


def test_tiers_spine_plan_and_switch_optics_by_hand():
    d = solve(Params())
    assert v(d, "fabric_tier_name") == "three-tier"  # 10 pods of 64-port switches
    assert v(solve(Params(gpus=1024)), "fabric_tier_name").startswith("two-tier")  # one pod: leaf and spine
    assert v(solve(Params(switch_radix=32)), "fabric_tier_name").startswith("four-tier")  # 10,240 > 32^3 / 4
    assert v(d, "spine_port_plan").startswith("They are the upgrade path")  # 16 of 64 empty at 2:1
    assert v(solve(Params(core_taper=1.0)), "spine_port_plan").startswith("At 1:1 none are empty")
    # a 64-port switch has 32 OSFP cages, each a 17 W twin-port module: 544 W of its 1,300 W
    assert v(d, "switch_optics_W") == 32 * 17 == 544
    assert v(d, "switch_optics_share") == pytest.approx(544 / 1300)
    assert d.feasible
    # a 128-port switch carries 64 cages, 1,088 W of optics: 850 W for the whole switch cannot be
    low = solve(Params(switch_radix=128, switch_W=850))
    assert not low.feasible and low.violations[0][0] == "switch_power_covers_optics"


def test_anchors_for_storage_and_pue_by_hand():
    d = solve(Params())
    assert v(d, "perlmutter_oss_GBps") == pytest.approx(5000 / 274)  # over 5 TB/s from 274 OSSs
    it = (1280 * 10_200 + 720 * 1300) / 1e6  # the IT load counted by hand: 13.99 MW
    assert v(d, "facility_power_MW_avg_pue") == pytest.approx(it * 1.58)  # Uptime's 2023 average: 22.1 MW
