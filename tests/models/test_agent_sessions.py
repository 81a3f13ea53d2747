"""agent-sessions: seed figures from the seed's own arithmetic, a hand-worked variant, directions,
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
from models.serving.agent_sessions import Params, solve
from models.units import parse_unit

ROOT = Path(__file__).resolve().parents[2]
CONTENT = ROOT / "content" / "serving" / "agent-sessions.md"

# Llama-3-70B and the parts, written out for the hand arithmetic (the model reads the catalog).
PARAMS_70B, LAYERS, ATTN_WIDTH = 70.6e9, 80, 64 * 128
KV_PER_TOKEN = 2 * 80 * 8 * 128 * 2  # 327,680 B
PCIE5_BPS = 32e9 * 16 * (128 / 130) / 8  # 63.0 GB/s each way
H100_FLOPS, H200_FLOPS = 989e12, 989e12


def v(d, key):
    return d.value(key)


def prefill_flops(n):
    return 2 * PARAMS_70B * n + 2 * LAYERS * ATTN_WIDTH * n * n


# --- the seed's own arithmetic ------------------------------------------------------------------


def test_seed_the_hour_is_loose():
    d = solve(Params())
    # "think for a second, a tool for a minute, a hundred times": 100 x (1 + 60) s
    assert v(d, "step_period_s") == 61
    assert v(d, "session_duration_s") == 100 * 61 == 6100
    assert v(d, "session_duration_h") == pytest.approx(6100 / 3600)  # ~1.7 h, not "an hour"
    assert v(d, "steps_in_an_hour") == 3600 // 61 == 59
    assert v(d, "tool_s_for_an_hour") == pytest.approx(3600 / 100 - 1)  # 35 s tools would fit an hour
    assert v(d, "hour_undercount_factor") == pytest.approx(6100 / 3600)


def test_seed_gpu_duty_cycle():
    d = solve(Params())
    assert v(d, "gpu_duty_cycle") == pytest.approx(100 / 61)  # 1.64%
    assert v(d, "sessions_thinking") == pytest.approx(1000 / 61)  # 16.4 of 1,000


def test_seed_kv_grows_with_the_context():
    d = solve(Params())
    assert v(d, "kv_bytes_per_token") == KV_PER_TOKEN == 327_680
    assert v(d, "final_context_tokens") == 4000 + 100 * 500 == 54_000
    assert v(d, "kv_bytes_final") == pytest.approx(54_000 * 327_680)  # 17.7 GB
    # mean over steps of 4,000 + 500 i, i = 1..100: 4,000 + 500 x 50.5 = 29,250 tokens
    assert v(d, "mean_context_tokens") == pytest.approx(sum(4000 + 500 * i for i in range(1, 101)) / 100)
    assert v(d, "kv_bytes_mean") == pytest.approx(29_250 * 327_680)  # 9.6 GB
    assert v(d, "transcript_bytes_final") == 54_000 * 4
    assert v(d, "kv_to_text_ratio") == pytest.approx(327_680 / 4)


def test_seed_holding_kv_in_hbm():
    d = solve(Params())
    kv_cap = 8 * 80e9 * 0.9 - 141.2e9  # 434.8 GB per 8 x H100 replica
    assert v(d, "kv_capacity_per_replica") == pytest.approx(kv_cap)
    assert v(d, "replicas_to_hold_kv") == math.ceil(1000 * 29_250 * 327_680 / kv_cap) == 23
    # 16.4 thinking sessions fit one replica's 64 slots and its KV
    assert v(d, "replicas_for_compute") == 1


def test_seed_reload_versus_recompute():
    d = solve(Params())
    reload = 29_250 * 327_680 / (8 * PCIE5_BPS * 0.8)
    assert v(d, "reload_per_step_s") == pytest.approx(reload)  # ~24 ms
    assert v(d, "reload_final_step_s") == pytest.approx(54_000 * 327_680 / (8 * PCIE5_BPS * 0.8))
    rate = 8 * H100_FLOPS * 0.5
    total = sum(prefill_flops(4000 + 500 * i) for i in range(1, 101))
    assert v(d, "recompute_flops_total") == pytest.approx(total)
    assert v(d, "recompute_per_step_s") == pytest.approx(total / 100 / rate)  # ~1.4 s
    assert v(d, "recompute_final_step_s") == pytest.approx(prefill_flops(54_000) / rate)
    # tokens: sum of 4,000 + 500 i over 100 steps = 2,925,000, against 54,000 prefilled once
    assert v(d, "recompute_tokens_total") == sum(4000 + 500 * i for i in range(1, 101)) == 2_925_000
    assert v(d, "recompute_multiplier") == pytest.approx(2_925_000 / 54_000)  # ~54x
    assert v(d, "recompute_flop_multiplier") == pytest.approx(total / prefill_flops(54_000))
    assert v(d, "replicas_for_recompute") == math.ceil(1000 * (total / 100 / rate) / 61)
    assert v(d, "nodes_of_dram_for_parked_kv") == math.ceil(1000 * 29_250 * 327_680 / 2000e9) == 5


def test_seed_sandbox():
    d = solve(Params())
    assert v(d, "session_starts_per_s") == pytest.approx(1000 / 6100)
    assert v(d, "sandbox_warm_pool") == math.ceil(1000 / 6100 * 2) == 1
    assert v(d, "sandbox_wait_s") == pytest.approx(2 - 1)
    assert v(d, "sandbox_boot_every_step_s") == 200


def test_seed_checkpoints_resume_a_step_not_an_hour():
    d = solve(Params())
    assert v(d, "expected_loss_per_failure_s") == pytest.approx(6100 / 2)  # half a session
    rate = 8 * H100_FLOPS * 0.5
    recompute = sum(prefill_flops(4000 + 500 * i) for i in range(1, 101)) / 100 / rate
    with_ckpt = 61 / 2 + 2 + recompute  # half a step + a new sandbox + one re-prefill
    assert v(d, "expected_loss_per_failure_with_checkpoints_s") == pytest.approx(with_ckpt)
    assert v(d, "checkpoint_bytes_per_step") == pytest.approx(500 * 4 + 10e6)
    assert v(d, "failures_per_session") == pytest.approx(6100 / (24 * 3600))
    assert v(d, "failure_probability_per_session") == pytest.approx(100 * (1 - math.exp(-6100 / 86400)))


# --- a variant worked by hand --------------------------------------------------------------------


def test_variant_h200_long_context_short_tools():
    p = Params(steps=50, think_s=2, tool_s=30, initial_context_tokens=10_000, tokens_per_step=1000,
               concurrent_sessions=5000, gpu="H200", gpus_per_replica=8, decode_slots_per_replica=128,
               prefill_mfu=0.4, pcie_efficiency=0.7, host_dram_per_node_gb=4000, sandbox_cold_start_s=10,
               sandbox_diff_per_step_mb=50, mtbf_h=12)
    d = solve(p)
    assert v(d, "session_duration_s") == 50 * 32 == 1600  # under an hour this time
    assert v(d, "steps_in_an_hour") == 112  # 3,600 / 32 = 112.5
    assert v(d, "gpu_duty_cycle") == pytest.approx(100 * 2 / 32)  # 6.25%
    thinking = 5000 * 2 / 32  # 312.5 sessions on a GPU
    assert v(d, "final_context_tokens") == 10_000 + 50 * 1000 == 60_000
    mean_tok = 10_000 + 1000 * 51 / 2  # 35,500
    kv_mean = mean_tok * 327_680  # 11.6 GB
    assert v(d, "kv_bytes_mean") == pytest.approx(kv_mean)
    kv_cap = 8 * 141e9 * 0.9 - 141.2e9  # 874 GB per 8 x H200 replica
    # thinking: ceil(312.5 / 128) = 3 by slots; ceil(312.5 x 11.6 GB / 874 GB) = 5 by KV
    assert math.ceil(thinking / 128) == 3
    assert math.ceil(thinking * kv_mean / kv_cap) == 5
    assert v(d, "replicas_for_compute") == 5
    assert v(d, "replicas_to_hold_kv") == math.ceil(5000 * kv_mean / kv_cap) == 67
    assert v(d, "reload_per_step_s") == pytest.approx(kv_mean / (8 * PCIE5_BPS * 0.7))
    total = sum(prefill_flops(10_000 + 1000 * i) for i in range(1, 51))
    recompute = total / 50 / (8 * H200_FLOPS * 0.4)
    assert v(d, "recompute_per_step_s") == pytest.approx(recompute)
    tokens = sum(10_000 + 1000 * i for i in range(1, 51))  # 1,775,000
    assert v(d, "recompute_multiplier") == pytest.approx(tokens / 60_000)
    assert v(d, "nodes_of_dram_for_parked_kv") == math.ceil(5000 * kv_mean / 4000e9) == 15
    assert v(d, "sandbox_warm_pool") == math.ceil(5000 / 1600 * 10) == 32
    assert v(d, "sandbox_wait_s") == pytest.approx(8)
    assert v(d, "expected_loss_per_failure_s") == pytest.approx(800)
    assert v(d, "expected_loss_per_failure_with_checkpoints_s") == pytest.approx(16 + 10 + recompute)
    assert v(d, "checkpoint_write_Bps") == pytest.approx(5000 * (1000 * 4 + 50e6) / 32)


# --- moves the right way ---------------------------------------------------------------------------

scenarios = st.builds(
    Params,
    steps=st.integers(1, 1000),
    think_s=st.floats(0.1, 60),
    tool_s=st.floats(0.5, 1800),
    initial_context_tokens=st.floats(100, 100_000),
    tokens_per_step=st.floats(10, 20_000),
    concurrent_sessions=st.integers(1, 1_000_000),
    gpu=st.sampled_from(["H100 SXM", "H200", "B200"]),
    gpus_per_replica=st.integers(2, 16),
    prefill_mfu=st.floats(0.1, 0.8),
    pcie_efficiency=st.floats(0.3, 1.0),
    sandbox_cold_start_s=st.floats(0.1, 300),
)


def _with(p, **kw):
    return Params(**{**p.model_dump(), **kw})


@settings(max_examples=150, deadline=None)
@given(p=scenarios, extra=st.integers(1, 500))
def test_more_steps_cost_more(p, extra):
    a, b = solve(p), solve(_with(p, steps=min(1000, p.steps + extra)))
    for key in ("session_duration_s", "kv_bytes_final", "kv_bytes_mean", "recompute_multiplier",
                "recompute_per_step_s", "reload_per_step_s", "expected_loss_per_failure_s",
                "replicas_to_hold_kv"):
        assert v(b, key) >= v(a, key) * (1 - 1e-12), key


@settings(max_examples=150, deadline=None)
@given(p=scenarios, factor=st.floats(1.01, 100))
def test_longer_tools_lower_the_duty_cycle_and_never_add_compute(p, factor):
    a, b = solve(p), solve(_with(p, tool_s=min(1800, p.tool_s * factor)))
    assert v(b, "gpu_duty_cycle") <= v(a, "gpu_duty_cycle")
    assert v(b, "replicas_for_compute") <= v(a, "replicas_for_compute")
    assert v(b, "replicas_for_recompute") <= v(a, "replicas_for_recompute")
    assert v(b, "expected_loss_per_failure_with_checkpoints_s") >= v(a, "expected_loss_per_failure_with_checkpoints_s")


@settings(max_examples=150, deadline=None)
@given(p=scenarios, factor=st.floats(1.01, 100))
def test_more_sessions_never_need_fewer_replicas(p, factor):
    a = solve(p)
    b = solve(_with(p, concurrent_sessions=min(1_000_000, math.ceil(p.concurrent_sessions * factor))))
    for key in ("replicas_to_hold_kv", "replicas_for_compute", "replicas_for_recompute",
                "nodes_of_dram_for_parked_kv", "sandbox_warm_pool"):
        assert v(b, key) >= v(a, key), key


@settings(max_examples=200, deadline=None)
@given(p=scenarios)
def test_orderings_that_always_hold(p):
    d = solve(p)
    assert v(d, "replicas_to_hold_kv") >= v(d, "replicas_for_compute") >= 1
    assert v(d, "kv_bytes_final") >= v(d, "kv_bytes_mean")
    # Recompute is a full prefill; reload is a copy. On every part and knob setting the copy wins.
    assert v(d, "recompute_per_step_s") > v(d, "reload_per_step_s")
    # sum of a growing context over the final one: at least (S + 1) / 2, at most S
    s = p.steps
    assert (s + 1) / 2 * (1 - 1e-9) <= v(d, "recompute_multiplier") <= s * (1 + 1e-9)
    assert 1 - 1e-9 <= v(d, "recompute_flop_multiplier") <= s * (1 + 1e-9)
    assert 0 < v(d, "gpu_duty_cycle") < 100
    assert v(d, "steps_in_an_hour") * v(d, "step_period_s") <= 3600 + 1e-6


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
        "session_duration_s": "s", "gpu_duty_cycle": "%", "kv_bytes_mean": "B", "kv_bytes_final": "B",
        "replicas_to_hold_kv": "1", "reload_per_step_s": "s", "recompute_per_step_s": "s",
        "recompute_multiplier": "1", "expected_loss_per_failure_s": "s",
        "expected_loss_per_failure_with_checkpoints_s": "s",
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
    with pytest.raises(ValidationError, match="Tool time per step"):
        Params(tool_s=10_000)


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


def test_content_shape_and_the_hour_is_called_out():
    c = load_content(CONTENT)
    assert [s.title for s in c.sections] == ["Numbers", "Shape", "Arithmetic", "Depth", "Failure modes", "Takeaways"]
    assert len(c.drills) >= 6
    assert {dr.phase for dr in c.drills} == {"numbers", "shape", "arithmetic", "depth", "failure_modes"}
    assert set(c.directives()) == {("diagram", "session"), ("chart", "duration_vs_tool"),
                                   ("chart", "replicas_vs_sessions"), ("chart", "reload_vs_recompute")}
    numbers = c.section("Numbers").body
    for key in ("session_duration_s", "session_duration_h", "steps_in_an_hour", "tool_s_for_an_hour"):
        assert "{{" + key + "}}" in numbers, key
    words = len((c.intro + " ".join(s.body for s in c.sections)).split())
    assert 900 <= words <= 1600, words


# --- the page, driven through AppTest ------------------------------------------------------------


def test_page_knobs_move_metrics_and_prose(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("WALKTHROUGHS_DB", str(tmp_path / "apptest.duckdb"))
    at = AppTest.from_file(str(ROOT / "pages" / "serving" / "agent_sessions.py"), default_timeout=30).run()
    assert not at.exception, [e.value for e in at.exception]
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["One session"] == "6,100 s"
    assert metrics["Replicas to hold KV in HBM"] == "23 replicas"
    text = "\n".join(m.value for m in at.markdown)
    assert "**59 steps**" in text and "**35 s**" in text  # the hour holds 59 steps; 35 s tools would fit 100
    at.select_slider(key="agent-sessions.tool_s").set_value(30.0).run()
    assert not at.exception
    # 100 x (1 + 30) s
    assert {m.label: m.value for m in at.metric}["One session"] == "3,100 s"
    assert "**3,100 s" in "\n".join(m.value for m in at.markdown)
