"""multi-lora: seed figures from the seed's own arithmetic, a hand-worked variant, directions,
contract and content."""

from __future__ import annotations

import math
import statistics
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from models.content import PLACEHOLDER, load_content
from models.core import knobs_of
from models.serving.multi_lora import LLAMA3_70B_FFN_DIM, Params, solve
from models.units import parse_unit

ROOT = Path(__file__).resolve().parents[2]
CONTENT = ROOT / "content" / "serving" / "multi-lora.md"


def v(d, key):
    return d.value(key)


# Llama-3-70B, written out once for the hand arithmetic below (the model reads the catalog).
D, KV_OUT, FFN, LAYERS, PARAMS = 8192, 8 * 128, 28_672, 80, 70.6e9
KV_PER_TOKEN = 2 * 80 * 8 * 128 * 2  # 327,680 B
H100_TBPS, H200_TBPS = 3.35, 4.8
PCIE5_GBPS = 32 * 16 * (128 / 130) / 8  # 63.0 GB/s each way


def test_ffn_constant_is_the_llama3_70b_value():
    assert LLAMA3_70B_FFN_DIM == 28_672


# --- the seed's own arithmetic ------------------------------------------------------------------


def test_seed_a_replica_per_variant():
    d = solve(Params())
    # "100 copies of a 140 GB base": 70.6e9 x 2 B = 141.2 GB, so 14.12 TB; the seed rounds to 140 GB
    assert v(d, "base_weight_bytes") == pytest.approx(70.6e9 * 2)
    assert v(d, "dedicated_weight_bytes") == pytest.approx(100 * 141.2e9)
    assert v(d, "dedicated_weight_bytes") == pytest.approx(100 * 140e9, rel=0.01)
    # "800 GPUs": 100 replicas x 8 GPUs
    assert v(d, "dedicated_gpus") == 100 * 8 == 800


def test_seed_mostly_idle():
    d = solve(Params())
    # one replica: (141.2 GB + 64 x 2,000 x 327,680 B) / (8 x 3.35 TB/s x 0.7) per step, 64 tokens a step
    step_s = (141.2e9 + 64 * 2000 * 327_680) / (8 * 3.35e12 * 0.7)
    assert v(d, "base_step_s") == pytest.approx(step_s)  # 9.76 ms
    assert v(d, "replica_tokens_per_s") == pytest.approx(64 / step_s)  # ~6,556 tokens/s
    # 30,000 tokens/s over 100 replicas of ~6,556 each: under 5% busy
    assert v(d, "dedicated_utilization") == pytest.approx(100 * 30_000 / (100 * 64 / step_s))
    assert v(d, "dedicated_utilization") < 5


def test_seed_adapter_rank_8_on_q_and_v_is_about_33_mb():
    d = solve(Params())
    # per layer: q r x (8,192 + 8,192) + v r x (8,192 + 1,024) = 25,600 r
    assert v(d, "lora_params_per_rank_per_layer") == (8192 + 8192) + (8192 + 1024) == 25_600
    # 8 x 25,600 x 80 layers x 2 B = 32,768,000 B, the "~33 MB"
    assert v(d, "adapter_bytes") == 8 * 25_600 * 80 * 2 == 32_768_000
    assert v(d, "adapter_bytes") / 1e6 == pytest.approx(33, abs=0.5)


def test_seed_rank_16_on_all_seven_is_much_larger():
    d = solve(Params())
    # q,o: 8,192 + 8,192; k,v: 8,192 + 1,024; gate, up, down: 8,192 + 28,672
    per_rank = 2 * (8192 + 8192) + 2 * (8192 + 1024) + 3 * (8192 + 28_672)
    assert per_rank == 161_792
    assert v(d, "heavy_params_per_rank_per_layer") == per_rank
    assert v(d, "heavy_adapter_bytes") == 16 * 161_792 * 80 * 2 == 414_187_520  # ~414 MB
    assert v(d, "heavy_to_adapter_ratio") == pytest.approx(414_187_520 / 32_768_000)  # ~12.6x


def test_seed_hundreds_of_adapters_in_a_few_gigabytes():
    d = solve(Params())
    assert v(d, "adapters_total_bytes") == pytest.approx(100 * 32_768_000)  # 3.28 GB
    # "hundreds": 300 narrow adapters are still under 10 GB; 100 heavy ones are not "a few" at all
    assert solve(Params(variants=300)).value("adapters_total_bytes") == pytest.approx(300 * 32.768e6)
    assert 300 * 32.768e6 < 10e9
    assert v(d, "heavy_adapters_total_bytes") == pytest.approx(100 * 414_187_520)  # 41.4 GB


def test_seed_shared_fleet_by_hand():
    d = solve(Params())
    bw = 8 * 3.35e12 * 0.7
    base_step = (141.2e9 + 64 * 2000 * 327_680) / bw
    distinct = 100 * (1 - 0.99 ** 64)  # 47.4 distinct adapters in a batch of 64
    assert v(d, "distinct_adapters_per_batch") == pytest.approx(distinct)
    lora_step = base_step * 1.05 + distinct * 32_768_000 / bw
    assert v(d, "lora_step_s") == pytest.approx(lora_step)
    overhead = 1 - base_step / lora_step  # ~5.5%
    assert v(d, "mixed_batch_overhead_fraction") == pytest.approx(100 * overhead)
    per_replica = 64 / lora_step  # ~6,194 tokens/s
    replicas = math.ceil(30_000 / (per_replica * 0.7))  # 6.9 -> 7
    assert replicas == 7
    assert v(d, "multi_lora_replicas") == 7
    assert v(d, "multi_lora_gpus") == 56
    # the base once plus all 100 adapters (8 GB holds 244 of them)
    assert v(d, "adapter_slots_per_replica") == math.floor(8e9 / 32_768_000) == 244
    assert v(d, "multi_lora_replica_weight_bytes") == pytest.approx(141.2e9 + 100 * 32_768_000)
    assert v(d, "gpu_saving_ratio") == pytest.approx(800 / 56)


def test_seed_routing_and_misses():
    d = solve(Params())
    assert v(d, "adapters_routed_per_replica") == math.ceil(100 * 2 / 7) == 29
    assert v(d, "distinct_adapters_per_batch_routed") == pytest.approx(29 * (1 - (28 / 29) ** 64))
    assert v(d, "routed_adapters_fit") == "yes"
    assert v(d, "heavy_adapter_slots_per_replica") == math.floor(8e9 / 414_187_520) == 19
    assert v(d, "heavy_routed_adapters_fit") == "no"  # 29 routed, 19 slots: thrashing
    assert v(d, "adapter_load_from_dram_s") == pytest.approx(32_768_000 / (8 * PCIE5_GBPS * 1e9))  # 65 us
    assert v(d, "adapter_load_from_nvme_s") == pytest.approx(32_768_000 / 14e9)  # 2.3 ms


def test_seed_own_replica_threshold():
    d = solve(Params())
    cap = 64 / ((141.2e9 + 64 * 2000 * 327_680) / (8 * 3.35e12 * 0.7))
    assert v(d, "dedicate_threshold_tokens_per_s") == pytest.approx(cap * 0.7)  # ~4,589 tokens/s
    assert v(d, "top_variant_tokens_per_s") == pytest.approx(3000)
    assert v(d, "top_variant_earns_replica") == "no"
    assert solve(Params(top_variant_share=0.2)).value("top_variant_earns_replica") == "yes"  # 6,000 > 4,589
    assert v(d, "full_finetune_extra_gpus") == 8


# --- a variant worked by hand --------------------------------------------------------------------


def test_variant_h200_four_gpus_rank_16_attention_adapters():
    p = Params(variants=200, gpu="H200", gpus_per_replica=4, lora_rank=16, targets="q,k,v,o",
               total_tokens_per_s=100_000, decode_batch=128, mean_context_tokens=4000, hbm_efficiency=0.8,
               sgmv_overhead_fraction=0.1, target_utilization=0.6, adapter_budget_gb=20, replicas_per_adapter=3,
               top_variant_share=0.3)
    d = solve(p)
    # q 16,384 + k 9,216 + v 9,216 + o 16,384 = 51,200 per unit rank per layer
    assert v(d, "lora_params_per_rank_per_layer") == 51_200
    assert v(d, "adapter_bytes") == 16 * 51_200 * 80 * 2 == 131_072_000
    bw = 4 * 4.8e12 * 0.8  # 15.36 TB/s
    kv = 128 * 4000 * 327_680  # 167.8 GB
    base_step = (141.2e9 + kv) / bw  # 20.1 ms
    cap = 128 / base_step  # ~6,363 tokens/s
    assert v(d, "replica_tokens_per_s") == pytest.approx(cap)
    # 500 tokens/s per variant is far below one replica at 60%: one replica each, 200 x 4 GPUs
    assert v(d, "dedicated_gpus") == 800
    distinct = 200 * (1 - (199 / 200) ** 128)  # ~94.7
    lora_step = base_step * 1.1 + distinct * 131_072_000 / bw
    assert v(d, "mixed_batch_overhead_fraction") == pytest.approx(100 * (1 - base_step / lora_step))
    # base step 20.1 ms x 1.1 + 94.7 x 131 MB / 15.36 TB/s (0.81 ms) = 22.9 ms; 128 / 22.9 ms x 0.6 = 3,349
    replicas = math.ceil(100_000 / (128 / lora_step * 0.6))
    assert replicas == 30  # 29.9, rounded up
    assert v(d, "multi_lora_replicas") == 30
    assert v(d, "multi_lora_gpus") == 4 * 30 == 120
    # 20 GB / 131 MB = 152 slots, 200 variants: 152 resident
    assert v(d, "adapter_slots_per_replica") == 152
    assert v(d, "multi_lora_replica_weight_bytes") == pytest.approx(141.2e9 + 152 * 131_072_000)
    # HBM: 4 x 141 GB x 0.9 = 507.6 GB, minus base, reserve and KV
    assert v(d, "replica_hbm_left_bytes") == pytest.approx(507.6e9 - 141.2e9 - 20e9 - kv)
    assert v(d, "replica_fits_in_hbm") == "yes"
    assert v(d, "adapters_routed_per_replica") == math.ceil(200 * 3 / 30) == 20
    # 30% of 100,000 = 30,000 tokens/s against 6,363 x 0.6 = 3,818: the busiest variant earns replicas
    assert v(d, "top_variant_earns_replica") == "yes"


def test_too_few_gpus_do_not_fit():
    d = solve(Params(gpus_per_replica=2))
    # 2 x 80 GB x 0.9 = 144 GB < 141.2 GB + 8 GB + 41.9 GB
    assert v(d, "replica_fits_in_hbm") == "no"


# --- moves the right way ---------------------------------------------------------------------------

scenarios = st.builds(
    Params,
    variants=st.integers(1, 2000),
    gpu=st.sampled_from(["H100 SXM", "H200", "B200"]),
    gpus_per_replica=st.integers(2, 16),
    lora_rank=st.integers(1, 256),
    targets=st.sampled_from(["q,v", "q,k,v,o", "all seven"]),
    total_tokens_per_s=st.floats(100, 1e7),
    decode_batch=st.integers(1, 512),
    mean_context_tokens=st.floats(100, 128_000),
    sgmv_overhead_fraction=st.floats(0, 0.5),
    replicas_per_adapter=st.integers(1, 16),
)


def _with(p, **kw):
    return Params(**{**p.model_dump(), **kw})


@settings(max_examples=150, deadline=None)
@given(p=scenarios, extra=st.integers(1, 1000))
def test_more_variants_never_need_fewer_gpus(p, extra):
    a, b = solve(p), solve(_with(p, variants=min(2000, p.variants + extra)))
    # Each variant gets at least one replica; while one is enough, more variants mean more GPUs.
    # (Above that, splitting the same traffic finer can round down: that is the model, not a bug.)
    assert v(b, "dedicated_gpus") >= min(2000, p.variants + extra) * p.gpus_per_replica
    if v(a, "dedicated_replicas_per_variant") == 1:
        assert v(b, "dedicated_gpus") >= v(a, "dedicated_gpus")
    assert v(b, "dedicated_weight_bytes") >= v(a, "dedicated_weight_bytes")
    assert v(b, "mixed_batch_overhead_fraction") >= v(a, "mixed_batch_overhead_fraction") - 1e-9
    assert v(b, "multi_lora_gpus") >= v(a, "multi_lora_gpus")


@settings(max_examples=150, deadline=None)
@given(p=scenarios, factor=st.floats(1.01, 100))
def test_more_traffic_never_needs_fewer_gpus(p, factor):
    a, b = solve(p), solve(_with(p, total_tokens_per_s=min(1e7, p.total_tokens_per_s * factor)))
    assert v(b, "multi_lora_gpus") >= v(a, "multi_lora_gpus")
    assert v(b, "dedicated_gpus") >= v(a, "dedicated_gpus")
    assert v(b, "dedicated_utilization") >= v(a, "dedicated_utilization") * (1 - 1e-12) or \
        v(b, "dedicated_gpus") > v(a, "dedicated_gpus")


@settings(max_examples=150, deadline=None)
@given(p=scenarios, extra=st.integers(1, 200))
def test_higher_rank_weighs_more_and_costs_more(p, extra):
    a, b = solve(p), solve(_with(p, lora_rank=min(256, p.lora_rank + extra)))
    assert v(b, "adapter_bytes") >= v(a, "adapter_bytes")
    assert v(b, "mixed_batch_overhead_fraction") >= v(a, "mixed_batch_overhead_fraction") - 1e-9
    assert v(b, "adapter_slots_per_replica") <= v(a, "adapter_slots_per_replica")


@settings(max_examples=150, deadline=None)
@given(p=scenarios)
def test_orderings_that_always_hold(p):
    d = solve(p)
    sizes = [solve(_with(p, targets=t)).value("adapter_bytes") for t in ("q,v", "q,k,v,o", "all seven")]
    assert sizes[0] < sizes[1] < sizes[2]
    assert 1 - 1e-9 <= v(d, "distinct_adapters_per_batch") <= min(p.variants, p.decode_batch) + 1e-9
    assert v(d, "distinct_adapters_per_batch_routed") <= v(d, "distinct_adapters_per_batch") + 1e-9
    assert v(d, "mixed_batch_overhead_routed_fraction") <= v(d, "mixed_batch_overhead_fraction") + 1e-9
    assert v(d, "heavy_mixed_batch_overhead_routed_fraction") <= v(d, "heavy_mixed_batch_overhead_fraction") + 1e-9
    assert 0 <= v(d, "mixed_batch_overhead_fraction") < 100
    assert v(d, "multi_lora_utilization") <= 100 * p.target_utilization + 1e-9
    assert v(d, "multi_lora_replica_weight_bytes") >= v(d, "base_weight_bytes")
    assert v(d, "dedicated_weight_bytes") == pytest.approx(p.variants * v(d, "base_weight_bytes"))


@settings(max_examples=100, deadline=None)
@given(p=scenarios, tax=st.floats(0, 0.5))
def test_a_bigger_kernel_tax_never_helps(p, tax):
    lo, hi = sorted((p.sgmv_overhead_fraction, tax))
    a, b = solve(_with(p, sgmv_overhead_fraction=lo)), solve(_with(p, sgmv_overhead_fraction=hi))
    assert v(b, "mixed_batch_overhead_fraction") >= v(a, "mixed_batch_overhead_fraction") - 1e-9
    assert v(b, "multi_lora_gpus") >= v(a, "multi_lora_gpus")


def test_solve_is_fast():
    p = Params()
    times = []
    for _ in range(200):
        t0 = time.process_time()
        solve(p)
        times.append(time.process_time() - t0)
    assert statistics.median(times) < 1e-3


# --- contract ------------------------------------------------------------------------------------


def test_issue_key_figures_are_steps_with_their_units():
    d = solve(Params())
    expected = {
        "dedicated_gpus": "1", "dedicated_weight_bytes": "B", "adapter_bytes": "B",
        "multi_lora_replica_weight_bytes": "B", "mixed_batch_overhead_fraction": "%", "multi_lora_gpus": "1",
    }
    for key, unit in expected.items():
        assert key in d, key
        assert d[key].unit == unit, key


def test_every_step_has_a_unit_and_renders():
    d = solve(Params())
    for s in d:
        parse_unit(s.unit)
        assert s.worked()
        if s.is_numeric:
            assert math.isfinite(float(s.value)), s.key


def test_knobs_have_ranges_help_and_draws():
    p = Params()
    for name, knob in knobs_of(Params).items():
        assert knob.label and knob.help, name
        if isinstance(getattr(p, name), (int, float)):
            assert knob.draw, name
            assert knob.min <= knob.draw[0] <= knob.draw[1] <= knob.max, name
            assert knob.min <= getattr(p, name) <= knob.max, name


def test_out_of_range_knob_names_its_label():
    with pytest.raises(ValidationError, match="LoRA rank"):
        Params(lora_rank=1024)


# --- content -------------------------------------------------------------------------------------


def test_every_placeholder_resolves():
    c = load_content(CONTENT)
    d = solve(Params())
    names = set(d.keys()) | set(Params.model_fields)
    texts = [c.hook, c.intro, *(s.body for s in c.sections), *(dr.prompt for dr in c.drills)]
    unknown = {m.group(1) for t in texts for m in PLACEHOLDER.finditer(t)} - names
    assert not unknown, sorted(unknown)
    for drill in c.drills:
        assert drill.key in d, drill.key
    for key, _label in c.metrics:
        assert key in d, key


def test_content_shape():
    c = load_content(CONTENT)
    assert [s.title for s in c.sections] == ["Numbers", "Shape", "Arithmetic", "Depth", "Failure modes", "Takeaways"]
    assert len(c.drills) >= 6
    assert {dr.phase for dr in c.drills} == {"numbers", "shape", "arithmetic", "depth", "failure_modes"}
    assert set(c.directives()) == {("diagram", "fleet"), ("chart", "adapter_bytes"), ("chart", "gpus_vs_traffic"),
                                   ("chart", "overhead_vs_variants")}
    words = len((c.intro + " ".join(s.body for s in c.sections)).split())
    assert 900 <= words <= 1600, words


# --- the page, driven through AppTest ------------------------------------------------------------


def test_page_knobs_move_metrics_and_prose(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("WALKTHROUGHS_DB", str(tmp_path / "apptest.duckdb"))
    at = AppTest.from_file(str(ROOT / "pages" / "serving" / "multi_lora.py"), default_timeout=30).run()
    assert not at.exception, [e.value for e in at.exception]
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["A replica per variant"] == "800 GPUs"
    assert metrics["Shared multi-LoRA pool"] == "56 GPUs"
    assert metrics["One adapter"] == "32.77 MB"
    at.select_slider(key="multi-lora.variants").set_value(200).run()
    assert not at.exception
    # 200 variants x 8 GPUs
    assert {m.label: m.value for m in at.metric}["A replica per variant"] == "1,600 GPUs"
    assert "**1,600 GPUs**" in "\n".join(m.value for m in at.markdown)
    at.selectbox(key="multi-lora.targets").set_value("all seven").run()
    assert not at.exception
    # rank 8 on all seven: 8 x 161,792 x 80 x 2 B = 207,093,760 B
    assert {m.label: m.value for m in at.metric}["One adapter"] == "207.1 MB"
