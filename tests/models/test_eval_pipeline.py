"""Eval pipeline: seed figures, hand-worked variants, directions, contract, content."""

from __future__ import annotations

import math
import statistics
import time
from pathlib import Path
from typing import Literal, get_origin

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from models.content import PLACEHOLDER, load_content
from models.core import knobs_of
from models.training.eval_pipeline import Params, solve
from models.units import parse_unit

ROOT = Path(__file__).resolve().parents[2]
CONTENT = ROOT / "content" / "training" / "eval-pipeline.md"
DIRECTIVES = {("diagram", "pipeline"), ("chart", "gpus_vs_turnaround"), ("chart", "makespan_vs_largest_eval"),
              ("chart", "detectable_vs_prompts")}


def v(d, key):
    return d.value(key)


# --- the seed's own arithmetic --------------------------------------------------------------


def test_seed_prompt_count():
    d = solve(Params())
    assert v(d, "prompts_per_checkpoint") == 2000 * 5000 == 10_000_000  # "ten million prompts per run"


def _replica_by_hand(params, active, layers, heads, kv_heads, head_dim, gpus, hbm_Bps, peak, prompt, hit, out,
                     tpot_s=0.1, hbm_eff=0.7, mfu=0.5, hbm_bytes=80e9):
    """The serving arithmetic written out: batch from HBM, decode step, prefill, seconds per prompt."""
    weights = params * 2  # bf16
    room = 0.9 * gpus * hbm_bytes - weights  # 90% of HBM usable
    kv_tok = 2 * layers * kv_heads * head_dim * 2  # K and V, bf16
    mem_cap = math.floor(room / (kv_tok * (prompt + out)))
    bw = gpus * hbm_Bps * hbm_eff
    fl = gpus * peak * mfu
    ctx = prompt + out / 2
    attn = 4 * layers * heads * head_dim  # QK^T and AV, 2 FLOP per multiply-add
    flop_tok = 2 * active + attn * ctx
    tpot_cap = min(math.floor((tpot_s - weights / bw) / (kv_tok * ctx / bw)), math.floor(tpot_s * fl / flop_tok))
    batch = min(mem_cap, tpot_cap)
    step = max(weights / bw + batch * kv_tok * ctx / bw, batch * flop_tok / fl)
    decode_tps = batch / step
    uncached = prompt * (1 - hit)
    cached = prompt - uncached
    prefill_s = uncached * (2 * active + attn * (cached + uncached / 2)) / fl
    return batch, step, prefill_s, prefill_s + out / decode_tps


def test_seed_fleet_by_hand():
    # Llama-3-70B (80 layers, 64 heads, 8 KV heads, 128 head dim) on 8 x H100 SXM (3.35 TB/s, 989 TFLOP/s).
    batch, step, prefill_s, per_prompt_s = _replica_by_hand(70.6e9, 70.6e9, 80, 64, 8, 128, 8, 3.35e12, 989e12,
                                                            1000, 0.3, 250)
    assert batch == 1061  # floor(434.8 GB / 409.6 MB): HBM binds
    assert step == pytest.approx(0.03866, rel=1e-3)  # compute side: 1,061 x 144.1 GFLOP / 3.956 PFLOP/s
    assert prefill_s == pytest.approx(0.02529, rel=1e-3)
    assert per_prompt_s == pytest.approx(0.0344, rel=1e-3)
    d = solve(Params())
    assert v(d, "decode_batch") == batch
    assert v(d, "replica_s_per_prompt") == pytest.approx(per_prompt_s, rel=1e-9)

    tokens = 10_000_000 * (1000 + 250)
    assert v(d, "tokens_per_checkpoint") == tokens == 1.25e10
    tps_gpu = 1250 / per_prompt_s / 8
    assert v(d, "tokens_per_s_per_gpu") == pytest.approx(tps_gpu, rel=1e-9)
    assert tps_gpu == pytest.approx(4543, rel=1e-3)
    gpu_h = tokens / tps_gpu / 3600
    assert v(d, "gpu_hours_per_checkpoint") == pytest.approx(gpu_h, rel=1e-9)
    assert gpu_h == pytest.approx(764.4, rel=1e-3)
    replica_h = gpu_h / 8
    # Four hours, less 10 min of start-up, at 80% busy; two days likewise.
    assert v(d, "replicas_fast") == math.ceil(replica_h / ((4 - 10 / 60) * 0.8)) == 32
    assert v(d, "gpus_fast") == 256
    assert v(d, "replicas_slow") == math.ceil(replica_h / ((48 - 10 / 60) * 0.8)) == 3
    assert v(d, "gpus_slow") == 24
    # One checkpoint a day needs ceil(95.5 / (24 x 0.8)) = 5 replicas: the two-day fleet cannot keep up.
    assert v(d, "replicas_for_cadence") == math.ceil(replica_h / (24 * 0.8)) == 5
    assert v(d, "slow_fleet_keeps_up") == "no"
    assert v(d, "backlog_checkpoints_per_day") == pytest.approx(1 - 3 * 24 * 0.8 / replica_h)


def test_seed_sharding_by_hand():
    d = solve(Params())
    replica_s = v(d, "replica_hours_per_checkpoint") * 3600
    mean_eval = replica_s / 2000
    largest = 100 * mean_eval
    avg_load = replica_s / 32
    assert v(d, "largest_eval_replica_s") == pytest.approx(largest)
    assert v(d, "makespan_by_eval_s") == pytest.approx(600 + max(avg_load, largest))
    assert v(d, "makespan_by_eval_s") > 4 * 3600  # one eval per unit misses the four hours
    shard_s = 1e6 / (1250 / v(d, "replica_s_per_prompt"))
    assert v(d, "shard_replica_s") == pytest.approx(shard_s)
    assert v(d, "makespan_by_tokens_s") == pytest.approx(600 + avg_load + shard_s)
    assert v(d, "makespan_by_tokens_s") < 4 * 3600
    assert v(d, "shard_count") == 12_500  # 1.25e10 / 1e6
    assert v(d, "idle_gpu_hours_by_eval") == pytest.approx((32 * largest - replica_s) * 8 / 3600)
    assert v(d, "cache_bytes_per_checkpoint") == pytest.approx(10_000_000 * (250 * 4 + 256))


def test_seed_statistics_by_hand():
    d = solve(Params())
    se = math.sqrt(0.5 * 0.5 / 5000)  # 0.00707
    assert v(d, "pass_rate_se") == pytest.approx(100 * se)
    assert v(d, "pass_rate_se") == pytest.approx(0.7071, rel=1e-4)
    assert v(d, "ci95_half_width") == pytest.approx(1.959964 * 100 * se, rel=1e-6)
    assert v(d, "difference_se") == pytest.approx(1.0, rel=1e-9)  # sqrt(2) x 0.7071
    assert v(d, "significant_drop") == pytest.approx(1.96, rel=1e-3)
    assert v(d, "min_detectable_regression") == pytest.approx(1.96 + 0.8416, rel=1e-3)  # 2.80 points
    assert v(d, "prompts_needed") == math.ceil(2 * (1.959964 + 0.841621) ** 2 * 0.25 / 0.01 ** 2)  # 39,245
    assert v(d, "false_alarms_per_comparison") == pytest.approx(100)  # 2,000 x 5%
    assert v(d, "bonferroni_z") == pytest.approx(4.2153, rel=1e-3)  # Phi^-1(1 - 1.25e-5)


# --- variants worked by hand ------------------------------------------------------------------


def test_variant_8b_on_single_gpus():
    # Llama-3-8B (32 layers, 32 heads, 8 KV heads, 128 head dim) on one H100: HBM binds the batch at 341
    # and the decode step turns memory-bound.
    batch, step, prefill_s, per_prompt_s = _replica_by_hand(8.03e9, 8.03e9, 32, 32, 8, 128, 1, 3.35e12, 989e12,
                                                            1000, 0.3, 250)
    assert batch == 341
    assert step == pytest.approx(16.06e9 / 2.345e12 + 341 * 131072 * 1125 / 2.345e12, rel=1e-9)
    d = solve(Params(model="Llama-3-8B", gpus_per_replica=1))
    assert v(d, "decode_batch") == 341
    assert v(d, "decode_step_s") == pytest.approx(step, rel=1e-9)
    assert v(d, "tokens_per_s_per_gpu") == pytest.approx(1250 / per_prompt_s, rel=1e-9)
    gpu_h = 1.25e10 / (1250 / per_prompt_s) / 3600
    assert gpu_h == pytest.approx(122.1, rel=1e-3)
    assert v(d, "gpus_fast") == math.ceil(gpu_h / ((4 - 10 / 60) * 0.8)) == 40
    assert v(d, "gpus_slow") == math.ceil(gpu_h / ((48 - 10 / 60) * 0.8)) == 4


def test_variant_small_suite_and_statistics():
    # 500 evals x 1,000 prompts at a 90% pass rate, a 12-hour fast turnaround, 30 min start-up.
    p = Params(evals=500, prompts_per_eval=1000, pass_rate=0.9, fast_turnaround_h=12, replica_startup_min=30,
               regression_to_detect=0.02)
    d = solve(p)
    assert v(d, "prompts_per_checkpoint") == 500_000
    assert v(d, "tokens_per_checkpoint") == 500_000 * 1250
    replica_h = 500_000 * v(d, "replica_s_per_prompt") / 3600  # same replica as the seed: 34.4 ms a prompt
    assert replica_h == pytest.approx(4.778, rel=1e-3)
    assert v(d, "replicas_fast") == math.ceil(replica_h / (11.5 * 0.8)) == 1
    se = 100 * math.sqrt(0.9 * 0.1 / 1000)  # 0.949 points
    assert v(d, "pass_rate_se") == pytest.approx(se)
    assert v(d, "min_detectable_regression") == pytest.approx((1.959964 + 0.841621) * math.sqrt(2) * se, rel=1e-6)
    assert v(d, "prompts_needed") == math.ceil(2 * (1.959964 + 0.841621) ** 2 * 0.09 / 0.02 ** 2)  # 3,533
    assert v(d, "false_alarms_per_comparison") == pytest.approx(25)


def test_cache_hit_scales_the_work_not_the_rate():
    a, b = solve(Params()), solve(Params(result_cache_hit=0.9))
    assert v(b, "tokens_per_s_per_gpu") == v(a, "tokens_per_s_per_gpu")
    assert v(b, "gpu_hours_per_checkpoint") == pytest.approx(0.1 * v(a, "gpu_hours_per_checkpoint"))
    assert v(b, "prompts_per_checkpoint") == v(a, "prompts_per_checkpoint")  # the prompts are still all scored


# --- moves the right way ----------------------------------------------------------------------

scenarios = st.fixed_dictionaries({
    "evals": st.integers(10, 20_000),
    "prompts_per_eval": st.integers(100, 100_000),
    "prompt_tokens": st.integers(50, 8000),
    "output_tokens": st.integers(1, 4000),
    "prefix_cache_hit": st.floats(0, 0.95),
    "fast_turnaround_h": st.floats(1.5, 48),
    "slow_turnaround_h": st.floats(48, 336),
    "replica_startup_min": st.floats(1, 60),
    "largest_eval_x_mean": st.floats(1, 1000),
    "shard_tokens": st.integers(10_000, 1_000_000_000),
    "pass_rate": st.floats(0.01, 0.99),
    "checkpoints_per_day": st.floats(0.1, 24),
})


def _params(values):
    try:
        return Params(**values)
    except ValidationError:
        assume(False)


@settings(max_examples=120, deadline=None)
@given(values=scenarios, factor=st.floats(1.01, 10))
def test_more_prompts_cost_more(values, factor):
    p = _params(values)
    more = _params({**values, "prompts_per_eval": min(100_000, math.ceil(p.prompts_per_eval * factor))})
    a, b = solve(p), solve(more)
    for key in ("prompts_per_checkpoint", "tokens_per_checkpoint", "gpu_hours_per_checkpoint", "gpus_fast",
                "gpus_slow"):
        assert v(b, key) >= v(a, key) * (1 - 1e-12), key
    assert v(b, "tokens_per_s_per_gpu") == pytest.approx(v(a, "tokens_per_s_per_gpu"))
    assert v(b, "pass_rate_se") <= v(a, "pass_rate_se")  # more prompts, less noise


@settings(max_examples=120, deadline=None)
@given(values=scenarios, extra_h=st.floats(0.5, 40))
def test_longer_turnaround_never_needs_more_gpus(values, extra_h):
    p = _params(values)
    longer = _params({**values, "fast_turnaround_h": min(48, p.fast_turnaround_h + extra_h)})
    assert v(solve(longer), "gpus_fast") <= v(solve(p), "gpus_fast")


@settings(max_examples=150, deadline=None)
@given(values=scenarios)
def test_orderings_that_always_hold(values):
    p = _params(values)
    d = solve(p)
    assert v(d, "gpus_fast") >= v(d, "gpus_slow")  # fast <= 48 h <= slow
    assert v(d, "makespan_by_tokens_s") <= v(d, "makespan_by_eval_s") + v(d, "shard_replica_s") * (1 + 1e-9)
    assert v(d, "makespan_by_eval_s") >= p.replica_startup_min * 60 + v(d, "largest_eval_replica_s") - 1e-6
    assert v(d, "significant_drop") < v(d, "min_detectable_regression") < 100
    assert v(d, "significant_drop_all_evals") >= v(d, "significant_drop") * (1 - 1e-12)
    assert 0 < v(d, "prefill_share") <= 100
    assert v(d, "gpu_hours_per_checkpoint") == pytest.approx(
        v(d, "tokens_to_run") / v(d, "tokens_per_s_per_gpu") / 3600)


@settings(max_examples=100, deadline=None)
@given(values=scenarios, bigger=st.floats(1.01, 20))
def test_a_bigger_largest_eval_never_finishes_sooner_by_eval(values, bigger):
    p = _params(values)
    q = _params({**values, "largest_eval_x_mean": min(1000, p.largest_eval_x_mean * bigger)})
    a, b = solve(p), solve(q)
    assert v(b, "makespan_by_eval_s") >= v(a, "makespan_by_eval_s") * (1 - 1e-12)
    assert v(b, "makespan_by_tokens_s") == pytest.approx(v(a, "makespan_by_tokens_s"))  # tokens do not care


def test_solve_is_fast():
    p = Params()
    solve(p)
    times = []
    for _ in range(200):
        t0 = time.process_time()
        solve(p)
        times.append(time.process_time() - t0)
    median = statistics.median(times)
    print(f"\nsolve median {median * 1e6:.0f} µs")
    assert median < 1e-3


# --- contract -----------------------------------------------------------------------------------


def test_issue_figures_are_steps_with_their_units():
    d = solve(Params())
    expected = {
        "prompts_per_checkpoint": "1", "tokens_per_checkpoint": "1", "tokens_per_s_per_gpu": "1/s",
        "gpu_hours_per_checkpoint": "h", "replicas_fast": "1", "replicas_slow": "1", "gpus_fast": "1",
        "gpus_slow": "1",
    }
    for key, unit in expected.items():
        assert key in d, key
        assert d[key].unit == unit, key
        parse_unit(unit)


def test_every_step_has_a_parsable_unit_and_a_formula():
    d = solve(Params())
    for s in d:
        parse_unit(s.unit)
        assert s.worked()
        if s.is_numeric:
            assert math.isfinite(float(s.value)), s.key


def test_params_defaults_and_knobs():
    p = Params()
    assert (p.evals, p.prompts_per_eval, p.fast_turnaround_h, p.slow_turnaround_h) == (2000, 5000, 4, 48)
    for name, knob in knobs_of(Params).items():
        value = getattr(p, name)
        if get_origin(Params.model_fields[name].annotation) is Literal:
            continue  # a choice (select box), drawn from its options
        if isinstance(value, (int, float)):
            assert knob.help and knob.draw, name
            assert knob.min <= knob.draw[0] <= knob.draw[1] <= knob.max, name


def test_impossible_scenarios_are_refused_in_plain_words():
    with pytest.raises(ValidationError, match="start-up"):
        Params(fast_turnaround_h=0.5, replica_startup_min=40)
    with pytest.raises(ValidationError, match="Evals per checkpoint"):
        Params(evals=5)
    with pytest.raises(ValidationError, match="usable"):
        Params(model="Llama-3.1-405B", gpus_per_replica=8)  # 810 GB of weights on 576 GB


# --- content ----------------------------------------------------------------------------------


def test_content_references_resolve():
    c = load_content(CONTENT)
    d = solve(Params())
    names = set(d.keys()) | set(Params.model_fields)
    unknown = c.placeholders() - names
    assert not unknown, sorted(unknown)
    for text in [c.hook, *(dr.prompt for dr in c.drills)]:
        for m in PLACEHOLDER.finditer(text):
            assert m.group(1) in names, m.group(1)
    for drill in c.drills:
        assert drill.key in d, drill.key
    for key, _label in c.metrics:
        assert key in d, key
    assert set(c.directives()) == DIRECTIVES


def test_content_shape():
    c = load_content(CONTENT)
    assert [s.title for s in c.sections] == ["Numbers", "Shape", "Arithmetic", "Depth", "Failure modes", "Takeaways"]
    assert 4 <= len(c.metrics) <= 6
    assert len(c.drills) >= 6
    assert {dr.phase for dr in c.drills} == {"numbers", "shape", "arithmetic", "depth", "failure_modes"}
    assert 2 <= len(c.presets) <= 3
    words = sum(len(s.body.split()) for s in c.sections)
    assert 900 <= words <= 1600, words
    # Every key figure the issue names is in the prose.
    for key in ("prompts_per_checkpoint", "tokens_per_checkpoint", "tokens_per_s_per_gpu",
                "gpu_hours_per_checkpoint", "replicas_fast", "replicas_slow", "gpus_fast", "gpus_slow"):
        assert key in c.placeholders(), key


def test_presets_are_valid_and_teach_something():
    c = load_content(CONTENT)
    seed = solve(Params())
    for preset in c.presets:
        d = solve(Params(**{**Params().model_dump(), **preset.values}))
        assert v(d, "gpus_fast") != v(seed, "gpus_fast") or v(d, "backlog_checkpoints_per_day") != v(
            seed, "backlog_checkpoints_per_day"), preset.name


# --- the page -------------------------------------------------------------------------------------


def test_page_knob_moves_metric_and_prose(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("WALKTHROUGHS_DB", str(tmp_path / "apptest.duckdb"))
    at = AppTest.from_file(str(ROOT / "pages" / "training" / "eval_pipeline.py"), default_timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    text = "\n".join(m.value for m in at.markdown)
    assert "**10,000,000 prompts**" in text and "**256 GPUs**" in text
    assert len(at.get("plotly_chart")) >= 4  # the diagram and three charts
    at.select_slider(key="eval-pipeline.prompts_per_eval").set_value(10000).run()
    assert not at.exception
    text = "\n".join(m.value for m in at.markdown)
    # Twice the prompts: 191.1 replica-hours / (3.833 h x 0.8) -> 63 replicas of 8 GPUs.
    assert "**20,000,000 prompts**" in text and "**504 GPUs**" in text
