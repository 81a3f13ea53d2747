"""Model artifact distribution: seed figures, hand-worked variants, directions, contract, content."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.content import load_content
from models.training import checkpoint_distribution as cd
from models.training.model_artifact_distribution import Params, fanout_params, sim_step_s, simulate, solve

ROOT = Path(__file__).resolve().parents[2]
CONTENT = ROOT / "content" / "training" / "model-artifact-distribution.md"
DIRECTIVES = {("diagram", "distribution"), ("chart", "pull_vs_registry_rate"), ("chart", "rollout_vs_nodes"),
              ("sim", "swarm")}


def v(d, key):
    return d.value(key)


# --- the seed's own arithmetic --------------------------------------------------------------


# Llama 3 70B counted by hand from its config.json: 80 layers of GQA attention (d 8192, 64 heads,
# 8 KV heads of 128) and a SwiGLU MLP of 28,672, plus untied 128,256-token embeddings: 70.55B.
L70_PARAMS = 80 * (8192 * 8192 * 2 + 2 * 8192 * 8 * 128 + 3 * 8192 * 28672) + 2 * 128256 * 8192
SIZE = L70_PARAMS * 2  # bf16: 141.1 GB


def test_141_gb_is_a_70b_model_in_bf16():
    d = solve(Params())
    assert v(d, "model_params") == L70_PARAMS
    assert v(d, "artifact_bytes") == pytest.approx(L70_PARAMS * 2)  # Llama-3-70B x 2 bytes
    assert round(v(d, "artifact_bytes") / 1e9) == 141  # the seed's 141 GB
    assert v(d, "resumable_checkpoint_bytes") == pytest.approx(L70_PARAMS * 14)  # not what serving ships


def test_the_link_is_not_the_hour():
    d = solve(Params())
    assert v(d, "per_node_lower_bound_s") == pytest.approx(SIZE / (10e9 / 8))  # SIZE / 1.25e9 s
    assert v(d, "per_node_lower_bound_s") < 120  # "under two minutes"


def test_docker_pull_by_hand():
    d = solve(Params())
    download = SIZE / (1e9 / 8)  # one registry stream at 1 Gb/s: 1,129.6 s
    inflate = SIZE / 100e6  # gzip on one core at 100 MB/s: 1,412 s
    extract = SIZE / 200e6  # tar to disk at 200 MB/s: 706 s
    assert v(d, "docker_download_s") == pytest.approx(download)
    assert v(d, "decompress_s") == pytest.approx(inflate)
    assert v(d, "extract_s") == pytest.approx(extract)
    assert v(d, "unpack_s") == pytest.approx(inflate + extract)  # same thread: the times add
    per_node = download + inflate + extract  # one layer: nothing overlaps
    assert v(d, "docker_time_per_node_s") == pytest.approx(per_node)  # 3,247.6 s
    assert 45 * 60 < per_node < 65 * 60  # "an hour per node"
    # Without the assumption of a slow registry the unpack still holds the pull above half an hour.
    assert v(d, "docker_at_line_rate_s") == pytest.approx(inflate + extract + SIZE / 1.25e9)
    assert v(d, "docker_many_layers_s") == pytest.approx(inflate + extract + download / 100)


def test_registry_rollout_by_hand():
    d = solve(Params())
    assert v(d, "registry_egress_TB") == pytest.approx(1000 * SIZE / 1e12)  # 141.1 TB
    drain = SIZE * 1000 / (100e9 / 8)  # 11,296 s at 100 Gb/s
    assert v(d, "registry_drain_s") == pytest.approx(drain)
    assert v(d, "per_node_share_Bps") == pytest.approx(12.5e9 / 1000)  # 12.5 MB/s each
    assert v(d, "naive_registry_rollout_s") == pytest.approx(drain + SIZE / 100e6 + SIZE / 200e6)  # 13,405 s


def test_chunks_and_fanout_by_hand():
    d = solve(Params())
    assert v(d, "chunk_count") == math.ceil(SIZE / 1e6 / 256) == 552
    assert v(d, "manifest_bytes") == 552 * 32
    chunk_s = 0.256 / 1.25  # 204.8 ms
    assert v(d, "chunk_time_s") == pytest.approx(chunk_s)
    assert v(d, "chunked_relay_rollout_s") == pytest.approx((552 + 1000 - 1) * chunk_s)  # 317.6 s: minutes
    assert v(d, "chunked_relay_rollout_s") < 10 * 60  # "a thousand nodes in minutes"
    assert v(d, "swarm_fill_rounds") == 10  # 2^10 = 1,024 >= 1,001
    assert v(d, "swarm_estimate_s") == pytest.approx(SIZE / 1.25e9 + 10 * chunk_s)
    assert v(d, "verify_s") == pytest.approx(SIZE / (1.5e9 * 8))
    assert v(d, "load_s") == pytest.approx(SIZE / 7e9)  # one Gen4 NVMe
    assert v(d, "cutover_waves") == 10
    assert v(d, "cutover_s") == pytest.approx(10 * (SIZE / 7e9 + 60))
    assert v(d, "canary_nodes") == 20


def test_fanout_is_checkpoint_distribution_not_a_copy():
    p = Params()
    mine, theirs = solve(p), cd.solve(fanout_params(p))
    assert v(mine, "chunked_relay_rollout_s") == v(theirs, "pipeline_s")
    assert v(mine, "swarm_estimate_s") == v(theirs, "swarm_estimate_s")
    assert v(mine, "chunk_count") == v(theirs, "chunk_count")
    assert v(mine, "per_node_lower_bound_s") == pytest.approx(v(theirs, "lower_bound_s"))


# --- variants worked by hand ------------------------------------------------------------------


def test_variant_405b_fp8_on_fast_links():
    p = Params(model="Llama-3.1-405B", weight_precision="fp8", nodes=2000, node_link_gbps=100,
               registry_stream_gbps=5, gzip_MBps=200, extract_MBps=400, layers=4, registry_egress_gbps=400,
               chunk_mb=1000)
    d = solve(p)
    # Llama 3.1 405B: 126 layers, d 16,384, 128 heads / 8 KV heads of 128, MLP 53,248, 128,256 tokens
    size = 126 * (2 * 16384 * 16384 + 2 * 16384 * 8 * 128 + 3 * 16384 * 53248) + 2 * 128256 * 16384  # x 1 byte
    assert v(d, "artifact_bytes") == pytest.approx(size)
    assert v(d, "per_node_lower_bound_s") == pytest.approx(size / 12.5e9)  # 32.5 s
    download = size / 625e6  # 648 s
    unpack = size / 200e6 + size / 400e6  # 2,025 + 1,012.5 = 3,037.5 s
    assert v(d, "docker_time_per_node_s") == pytest.approx(unpack + download / 4)  # 3,199.5 s
    assert v(d, "registry_egress_TB") == pytest.approx(2000 * size / 1e12)  # 812 TB
    drain = 2000 * size / 50e9  # 16,234 s
    assert v(d, "naive_registry_rollout_s") == pytest.approx(drain + unpack / 4)  # 16,959 s
    assert v(d, "chunk_count") == math.ceil(size / 1e9) == 406
    assert v(d, "chunked_relay_rollout_s") == pytest.approx((406 + 1999) * 0.08)  # 192.4 s
    assert v(d, "swarm_fill_rounds") == 11  # 2^11 = 2,048 >= 2,001
    assert v(d, "swarm_estimate_s") == pytest.approx(size / 12.5e9 + 11 * 0.08)


def test_variant_registry_faster_than_the_link_is_capped_by_the_link():
    d = solve(Params(registry_stream_gbps=40, node_link_gbps=25))
    assert v(d, "registry_stream_Bps") == pytest.approx(25e9 / 8)
    assert v(d, "docker_download_s") == pytest.approx(v(d, "per_node_lower_bound_s"))


# --- moves the right way ----------------------------------------------------------------------

scenarios = st.builds(
    Params,
    model=st.sampled_from(["Llama-3-8B", "Llama-3-70B", "Llama-3.1-405B", "Mixtral-8x7B", "DeepSeek-V3"]),
    weight_precision=st.sampled_from(["bf16", "fp8"]),
    nodes=st.integers(2, 20_000),
    node_link_gbps=st.floats(1, 800),
    registry_stream_gbps=st.floats(0.1, 100),
    gzip_MBps=st.floats(20, 1000),
    extract_MBps=st.floats(20, 2000),
    layers=st.integers(1, 100),
    registry_egress_gbps=st.floats(1, 10_000),
    chunk_mb=st.floats(1, 10_000),
)


@settings(max_examples=150, deadline=None)
@given(p=scenarios, extra=st.integers(1, 5000))
def test_more_nodes_never_finish_sooner(p, extra):
    more = Params(**{**p.model_dump(), "nodes": min(p.nodes + extra, 20_000)})
    a, b = solve(p), solve(more)
    for key in ("naive_registry_rollout_s", "chunked_relay_rollout_s", "swarm_estimate_s", "registry_egress_TB"):
        assert v(b, key) >= v(a, key) * (1 - 1e-12), key
    for key in ("per_node_lower_bound_s", "docker_time_per_node_s", "unpack_s"):
        assert v(b, key) == v(a, key), key  # one node alone does not care how many others exist


@settings(max_examples=150, deadline=None)
@given(p=scenarios, factor=st.floats(1.01, 50))
def test_faster_registry_or_cpu_never_slows_the_pull(p, factor):
    a = solve(p)
    for field, cap in (("registry_stream_gbps", 100), ("gzip_MBps", 1000), ("extract_MBps", 2000),
                       ("registry_egress_gbps", 10_000)):
        b = solve(Params(**{**p.model_dump(), field: min(getattr(p, field) * factor, cap)}))
        assert v(b, "docker_time_per_node_s") <= v(a, "docker_time_per_node_s") * (1 + 1e-12), field
        assert v(b, "naive_registry_rollout_s") <= v(a, "naive_registry_rollout_s") * (1 + 1e-12), field


@settings(max_examples=150, deadline=None)
@given(p=scenarios, more_layers=st.integers(1, 99))
def test_layers_overlap_but_never_beat_the_slower_stage(p, more_layers):
    a = solve(p)
    b = solve(Params(**{**p.model_dump(), "layers": min(100, p.layers + more_layers)}))
    assert v(b, "docker_time_per_node_s") <= v(a, "docker_time_per_node_s") * (1 + 1e-12)
    floor = max(v(b, "docker_download_s"), v(b, "unpack_s"))
    assert v(b, "docker_time_per_node_s") >= floor * (1 - 1e-12)


@settings(max_examples=200, deadline=None)
@given(p=scenarios)
def test_orderings_that_always_hold(p):
    d = solve(p)
    bound = v(d, "per_node_lower_bound_s")
    tiny = 1e-9
    assert v(d, "docker_time_per_node_s") >= bound * (1 - tiny)
    assert v(d, "docker_time_per_node_s") >= v(d, "unpack_s") * (1 - tiny)
    assert v(d, "naive_registry_rollout_s") >= v(d, "docker_time_per_node_s") * (1 - tiny)
    assert v(d, "chunked_relay_rollout_s") >= bound * (1 - tiny)
    assert v(d, "swarm_estimate_s") >= bound
    assert v(d, "chunk_count") * v(d, "chunk_bytes") >= v(d, "artifact_bytes") * (1 - tiny)
    assert v(d, "registry_egress_TB") == pytest.approx(p.nodes * v(d, "artifact_bytes") / 1e12)


# --- simulation: the checkpoint-distribution swarm on this rollout ------------------------------


def test_swarm_simulation_lands_near_the_bound():
    p = Params()
    r = simulate(p, seed=0)
    assert r.hosts == 400 and r.chunks == 200  # 1,000 nodes capped, 552 chunks coarsened
    step = sim_step_s(p)
    assert step == pytest.approx(552 * 0.2048 / 200)  # 552 chunks of 204.8 ms folded into 200 steps
    finish = r.finish_steps * step
    d = solve(p)
    print(f"\nswarm sim {finish:.1f} s, estimate {v(d, 'swarm_estimate_s'):.1f} s, bound "
          f"{v(d, 'per_node_lower_bound_s'):.1f} s, relay chain {v(d, 'chunked_relay_rollout_s'):.1f} s")
    assert r.finished
    assert v(d, "per_node_lower_bound_s") <= finish < 1.15 * v(d, "per_node_lower_bound_s")
    assert finish < v(d, "chunked_relay_rollout_s") < v(d, "naive_registry_rollout_s")
    assert r.source_share < 0.05  # the origin sends about one copy


# --- the page's own figures and prose (the contract every page meets: tests/test_contract.py) ---


def test_params_defaults_are_the_seed_scenario():
    p = Params()
    assert (p.model, p.weight_precision, p.nodes, p.node_link_gbps) == ("Llama-3-70B", "bf16", 1000, 10)


# --- content ----------------------------------------------------------------------------------


def test_the_page_draws_its_figures_where_the_prose_needs_them():
    c = load_content(CONTENT)
    assert set(c.directives()) == DIRECTIVES
    assert "::sim swarm" in c.section("Depth").body.splitlines()


# --- the page -------------------------------------------------------------------------------------


def test_page_knob_moves_metric_and_prose(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("WALKTHROUGHS_DB", str(tmp_path / "apptest.duckdb"))
    at = AppTest.from_file(str(ROOT / "pages" / "training" / "model_artifact_distribution.py"),
                           default_timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    text = "\n".join(m.value for m in at.markdown)
    assert "**141.1 TB**" in text and "**552 chunks**" in text
    assert len(at.get("plotly_chart")) >= 4  # the diagram, two charts and the swarm panel
    at.select_slider(key="model-artifact-distribution.nodes").set_value(2000).run()
    assert not at.exception
    text = "\n".join(m.value for m in at.markdown)
    assert "**282.2 TB**" in text  # 2,000 x 141.1 GB


def test_worked_problem_bloom_176b_serving_artifact():
    # BigScience's BLOOM training page (bigscience.notion.site, "BigScience 176B Model"): 70 layers,
    # 112 heads, hidden 14,336; "only the bf16 weights are 329GB" (binary GB). Vocabulary 250,680
    # (arXiv 2211.05100). Its plain 4 x d GeLU MLP (8 d^2) is entered as a gated MLP of 8 d / 3 =
    # 38,229; the custom shape's untied output head adds 3.6B that BLOOM ties.
    d_model, width = 14336, 38229
    p = Params(model="Custom", custom_layers=70, custom_d_model=d_model, custom_heads=112, custom_kv_heads=112,
               custom_head_dim=128, custom_ffn_dim=width, custom_vocab=250680, weight_precision="bf16")
    n = 70 * (4 * d_model * d_model + 3 * d_model * width) + 2 * 250680 * d_model
    d = solve(p)
    assert v(d, "artifact_bytes") == pytest.approx(2 * n)
    assert v(d, "artifact_bytes") / 2**30 == pytest.approx(329, rel=0.02)
    assert v(d, "per_node_lower_bound_s") == pytest.approx(2 * n / (10e9 / 8))  # 288 s through 10 Gb/s
    assert v(d, "chunk_count") == math.ceil(2 * n / 256e6)


def test_int4_weights_quarter_the_artifact():
    d = solve(Params(weight_precision="int4"))
    assert v(d, "artifact_bytes") == pytest.approx(L70_PARAMS * 0.5)


# --- rack uplinks and a throttled swarm: worked by hand -------------------------------------------


def test_rack_uplinks_and_the_throttled_swarm_by_hand():
    d = solve(Params())
    size = d.value("artifact_bytes")  # 141.1 GB
    # 1,000 nodes, 16 a rack: 63 racks; 16 x 10 Gb/s behind 40 Gb/s is 4:1
    assert d.value("racks") == math.ceil(1000 / 16) == 63
    assert d.value("rack_oversubscription") == pytest.approx(16 * 10 / 40)
    # serving at 1 Gb/s a node takes 16 Gb/s of the uplink, leaving 24
    assert d.value("serving_uplink_gbps") == pytest.approx(16)
    assert d.value("uplink_headroom_gbps") == pytest.approx(24)
    # a random peer is outside the rack with probability 984 / 999
    cross = (1000 - 16) / 999
    assert d.value("cross_rack_share_random") == pytest.approx(cross)
    assert d.value("rack_ingress_random_bytes") == pytest.approx(16 * size * cross)  # 2.22 TB
    assert d.value("rack_ingress_aware_bytes") == pytest.approx(size)
    # capped at half of 10 Gb/s: 5 Gb/s a node, 1 Gb/s of serving fits beside it
    assert d.value("swarm_node_gbps") == pytest.approx(5)
    assert d.value("serving_fits_beside_swarm") == "yes"
    # random peers at the cap would pull 16 x 5 x 0.985 = 78.8 Gb/s into a 24 Gb/s headroom
    assert d.value("random_uplink_demand_gbps") == pytest.approx(16 * 5 * cross)
    assert d.value("random_peers_squeeze_serving").startswith("yes")
    assert d.value("random_uplink_s") == pytest.approx(16 * size * cross * 8 / 24e9)  # 741 s
    assert d.value("aware_uplink_s") == pytest.approx(size * 8 / 24e9)  # 47 s
    assert d.value("throttled_bound_s") == pytest.approx(size * 8 / 5e9)  # 226 s
    # the fill: ceil(log2(1,001)) = 10 chunk times of 256 MB at the capped 0.625 GB/s
    fill = 10 * 0.256e9 / (5e9 / 8)
    assert d.value("throttled_swarm_s") == pytest.approx(size * 8 / 5e9 + fill)
    assert d.value("random_peer_swarm_s") == pytest.approx(16 * size * cross * 8 / 24e9 + fill)
    # Dragonfly's 10 GiB/s default is 85.9 Gb/s: no cap at all on a 10 Gb/s link
    assert d.value("dragonfly_default_cap_gbps") == pytest.approx(10 * 2**30 * 8 / 1e9)
    assert d.value("default_cap_leaves_serving_room").startswith("no")
    # a fat uplink makes random peers harmless
    fat = solve(Params(rack_uplink_gbps=400))
    assert fat.value("random_peers_squeeze_serving") == "no"
    assert fat.value("rack_first_speedup") == pytest.approx(1)


def test_the_larger_pull_term_and_verified_swarm_by_hand():
    d = solve(Params())  # unpack 1,412 + 706 = 2,118 s beats a 1,130 s download
    assert v(d, "docker_bottleneck") == "mostly single-core unpack"
    slow = solve(Params(registry_stream_gbps=0.25))  # download 4 x longer: 4,518 s > 2,118 s
    assert v(slow, "docker_download_s") == pytest.approx(SIZE / (0.25e9 / 8))
    assert v(slow, "docker_bottleneck") == "mostly the download from the registry"
    # 8 cores x 1.5 GB/s = 12 GB/s of SHA-256 beats the 1.25 GB/s link: the swarm's time stands
    assert v(d, "swarm_verified_s") == pytest.approx(max(v(d, "swarm_estimate_s"), SIZE / 12e9))
    one = solve(Params(hash_cores=1, sha256_MBps=500))  # 0.5 GB/s hashing, slower than the link
    assert v(one, "hash_keeps_up") == "no"
    assert v(one, "swarm_verified_s") == pytest.approx(SIZE / 0.5e9)
    assert v(one, "throttled_verified_s") == pytest.approx(max(v(one, "throttled_swarm_s"), SIZE / 0.5e9))


def test_cutover_at_kubernetes_default_max_unavailable_by_hand():
    from models.training.model_artifact_distribution import Params as _P, solve as _solve
    d = _solve(_P())
    # Deployment RollingUpdate: maxUnavailable defaults to 25%, so ceil(1 / 0.25) = 4 waves
    assert d.value("k8s_default_max_unavailable") == pytest.approx(0.25)
    assert d.value("k8s_default_cutover_waves") == 4
    # each wave loads 141.1 GB from NVMe at 7 GB/s (20.16 s) and passes a 60 s check: 4 x 80.16 = 320.6 s
    load = 70.55e9 * 2 / 7e9
    assert d.value("load_s") == pytest.approx(load, rel=2e-3)
    assert d.value("k8s_default_cutover_s") == pytest.approx(4 * (load + 60), rel=2e-3)
    # against the seed's 10% limit: 10 waves, 801.6 s, but only 100 nodes out at a time instead of 250
    assert d.value("k8s_default_nodes_out") == 250  # floor(1,000 x 0.25)


def test_kraken_and_dragonfly_defaults_by_hand():
    d = solve(Params())
    assert d.value("kraken_default_ingress_gbps") == pytest.approx(0.6)  # 600 Mbit/s when unset
    assert d.value("kraken_default_egress_gbps") == pytest.approx(0.4)  # 400 Mbit/s when unset
    size = 70.55e9 * 2  # Llama 3 70B in bf16, about 141.1 GB
    assert d.value("kraken_default_node_s") == pytest.approx(d.value("artifact_bytes") * 8 / 0.6e9)
    assert d.value("kraken_default_node_s") == pytest.approx(size * 8 / 0.6e9, rel=1e-3)  # about 31 minutes
    # Dragonfly's parent score: IDC 0.15 + location 0.15 of weights summing to 1
    assert d.value("dragonfly_topology_weight") == pytest.approx(0.3)
    assert 0.2 + 0.2 + 0.15 + 0.15 + 0.15 + 0.15 == pytest.approx(1.0)
