"""ml-config-system: the relaunch arithmetic, hand-worked scenarios, the scenario's layers,
hashes, sweep and resolver examples, "moves the right way" properties, the page's directives,
and the page. The config library itself (parse, merge, validate, migrate, resolve, hash, sweep)
is tested in tests/models/test_configlib_*.py.

Seed 001 names the parts of the answer (schemas, inheritance and overrides, validation, resolve
and hash the full config, pin environment and data) but gives no numbers, so the seed scenario
is this page's own; every figure below is recomputed by hand from that scenario's knobs and
layers, never read back from the model.
"""

from __future__ import annotations

import hashlib
import json
import math
import tomllib
import typing

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.configlib import Resolution, deep_merge, drop_paths, expand_sweep, parse_layer, sha256_hex
from models.core import knobs_of
from models.product import ml_config_system as m
from models.product.ml_config_system import Params, solve
from models.registry import QUESTIONS, ROOT

SLUG = "ml-config-system"


def v(d, key):
    return d.value(key)


def H(obj) -> str:
    """The issue's hash, written out here independently of the model."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, separators=(",", ":")).encode("utf-8")).hexdigest()


def layers_of(p: Params):
    return [("base", m.BASE), ("experiment", m.EXPERIMENT), ("command line", m.cli_layer(p))]


# --- the two key figures that are words -------------------------------------------------------


def test_the_verdict_is_yes_or_no_and_the_hash_is_a_sha256_hex_digest():
    d = solve(Params())
    assert d["config_valid"].value in ("yes", "no")
    sha = v(d, "config_sha256")
    assert isinstance(sha, str) and len(sha) == 64 and all(c in "0123456789abcdef" for c in sha)


# --- the seed scenario, by hand ---------------------------------------------------------------


def test_seed_scenario_batch_arithmetic():
    d = solve(Params())
    assert v(d, "gpus") == 32 * 4 * 2 == 256
    assert v(d, "model_parallel") == 4 * 2 == 8
    assert v(d, "sequences_per_microstep") == 4 * 32 == 128
    assert v(d, "batch_divisibility_remainder") == 1024 % 128 == 0
    assert v(d, "grad_accum_steps") == pytest.approx(1024 / 128) == 8
    assert v(d, "tokens_per_step") == 1024 * 4096 == 4_194_304
    # 10^12 / 4,194,304 = 238,418.58: the last step is partial, so 238,419 steps
    assert v(d, "total_steps") == 238_419
    assert 238_418 * 4_194_304 < 10**12 <= 238_419 * 4_194_304
    assert v(d, "validation_errors") == 0
    assert v(d, "config_valid") == "yes"


def test_seed_scenario_sweep_and_costs():
    d = solve(Params())
    assert v(d, "sweep_runs") == 4 * 3 * 3 == 36
    assert v(d, "sweep_gpu_hours") == pytest.approx(36 * 8 * 6) == 1728
    assert v(d, "sweep_distinct_runs_with_typo") == 3 * 3 == 9
    assert v(d, "sweep_typo_wasted_gpu_hours") == pytest.approx(1728 * 3 / 4) == 1296
    assert v(d, "typo_cost_gpu_hours") == pytest.approx(256 * 36) == 9216
    assert v(d, "typo_cost_usd") == pytest.approx(9216 * 2.5) == 23_040
    assert v(d, "configs_per_year") == 200 * 365 == 73_000


def test_seed_scenario_relaunch_on_192_gpus():
    d = solve(Params())
    assert v(d, "relaunch_max_dp") == 192 // 8 == 24
    assert v(d, "relaunch_remainder") == 1024 % (4 * 24) == 64
    assert v(d, "relaunch_accum_if_floored") == 1024 // 96 == 10
    assert v(d, "relaunch_effective_batch_if_floored") == 10 * 96 == 960
    assert v(d, "relaunch_silent_batch_change_fraction") == pytest.approx((960 - 1024) / 1024) == -0.0625
    # 1,024 / 4 = 256 = 2^8: the replica count must divide 256; the largest divisor <= 24 is 16
    assert v(d, "relaunch_dp") == 16
    assert v(d, "relaunch_usable_gpus") == 16 * 8 == 128
    assert v(d, "relaunch_idle_gpus") == 192 - 128 == 64
    assert v(d, "relaunch_grad_accum_steps") == pytest.approx(1024 / (4 * 16)) == 16
    # 64 left over: every replica of the 192-GPU machine is a layout the schema rejects
    assert d["relaunch_full_layout_verdict"].value == "rejects"


def test_relaunch_on_512_gpus_is_accepted_whole():
    # 512 / 8 = 64 replicas x 4 = 256 per micro-step; 1,024 mod 256 = 0: the schema accepts it
    d = solve(Params(relaunch_gpus=512))
    assert v(d, "relaunch_remainder") == 1024 % 256 == 0
    assert d["relaunch_full_layout_verdict"].value == "accepts"


def test_seed_resolved_config_written_out_by_hand():
    """The four layers merged by hand, then hashed with hashlib: the model must agree."""
    expected = {
        "model": {"name": "dense-7b", "layers": 32, "hidden": 4096, "heads": 32, "vocab": 128256, "seq_len": 4096},
        "optim": {"name": "adamw", "lr": 1.5e-4, "betas": [0.9, 0.95], "weight_decay": 0.1, "warmup_steps": 1000,
                  "schedule": "cosine"},
        "batch": {"global_batch": 1024, "micro_batch": 4},
        "layout": {"data_parallel": 32, "tensor_parallel": 4, "pipeline_parallel": 2},
        "data": {"snapshot": "web-code-2025-06-02",
                 "manifest_sha256": "22f39156a0021099ca93acabe840dfdbb83bb249f80fdc4e876b605ccc595914",
                 "sources": ["web", "code"], "weights": [0.85, 0.15]},
        "train": {"tokens": 1_000_000_000_000, "seed": 17},
        "env": {"image": "registry.internal/train@sha256:"
                         "7b5193becf34e25f4e3056c1a0a6cfb33013ffe04a38b58ebf19fc4a2e4dc1c6",
                "code_commit": "7d28d5a14600f66d5eb7325e3d016511ccd63be5"},
        "derived": {"gpus": 256, "grad_accum_steps": 8, "tokens_per_step": 4_194_304, "total_steps": 238_419},
    }
    res = m.resolve_scenario(Params())
    assert res.config == expected
    d = solve(Params())
    assert v(d, "config_sha256") == H(expected)
    assert v(d, "resolved_config_bytes") == len(json.dumps(expected, sort_keys=True, separators=(",", ":")))
    assert v(d, "config_store_bytes") == 73_000 * v(d, "resolved_config_bytes")
    no_layout = {k: val for k, val in expected.items() if k != "layout"}
    no_layout["batch"] = {"global_batch": 1024}
    no_layout["derived"] = {"tokens_per_step": 4_194_304, "total_steps": 238_419}
    assert v(d, "experiment_sha256") == H(no_layout)
    # leaves: model 6, optim 6, batch 2, layout 3, data 4, train 2, env 2, derived 4
    assert v(d, "resolved_keys") == 6 + 6 + 2 + 3 + 4 + 2 + 2 + 4 == 29
    assert v(d, "experiment_layer_keys") == 5  # lr, warmup_steps, sources, weights, seed
    assert v(d, "command_line_keys") == 7
    assert v(d, "pinned_keys") == 4


# --- hand-worked variants ---------------------------------------------------------------------


def test_variant_batch_1536_on_tp8_relaunch_400():
    p = Params(global_batch=1536, micro_batch=4, data_parallel=24, tensor_parallel=8, pipeline_parallel=1,
               seq_len=8192, train_tokens=2e12, relaunch_gpus=400, sweep_lr_values=6, sweep_warmup_values=2,
               sweep_seeds=5, sweep_gpus_per_run=16, sweep_run_hours=3, hours_to_notice_typo=10, gpu_hour_usd=3,
               runs_per_day=50)
    d = solve(p)
    assert v(d, "gpus") == 24 * 8 * 1 == 192
    assert v(d, "sequences_per_microstep") == 96
    assert v(d, "batch_divisibility_remainder") == 1536 % 96 == 0
    assert v(d, "grad_accum_steps") == 16
    assert v(d, "tokens_per_step") == 1536 * 8192 == 12_582_912
    assert v(d, "total_steps") == math.ceil(2e12 / 12_582_912) == 158_946
    assert v(d, "config_valid") == "yes"
    # relaunch: 400 // 8 = 50 replicas; 1,536 mod 200 = 136
    assert v(d, "relaunch_max_dp") == 50
    assert v(d, "relaunch_remainder") == 136
    assert v(d, "relaunch_accum_if_floored") == 7  # 1,536 // 200
    assert v(d, "relaunch_effective_batch_if_floored") == 1400
    assert v(d, "relaunch_silent_batch_change_fraction") == pytest.approx((1400 - 1536) / 1536)  # -8.85%
    # 1,536 / 4 = 384 = 2^7 x 3: divisors <= 50 -> 48
    assert v(d, "relaunch_dp") == 48
    assert v(d, "relaunch_usable_gpus") == 384
    assert v(d, "relaunch_idle_gpus") == 16
    assert v(d, "relaunch_grad_accum_steps") == pytest.approx(1536 / 192) == 8
    assert v(d, "sweep_runs") == 6 * 2 * 5 == 60
    assert v(d, "sweep_gpu_hours") == pytest.approx(60 * 16 * 3) == 2880
    assert v(d, "sweep_typo_wasted_gpu_hours") == pytest.approx(2880 * 5 / 6) == 2400
    assert v(d, "typo_cost_gpu_hours") == 1920
    assert v(d, "typo_cost_usd") == pytest.approx(5760)
    assert v(d, "configs_per_year") == 18_250


def test_variant_main_run_on_24_replicas_is_rejected():
    d = solve(Params(data_parallel=24))
    assert v(d, "gpus") == 192
    assert v(d, "sequences_per_microstep") == 96
    assert v(d, "batch_divisibility_remainder") == 64
    assert v(d, "grad_accum_steps") == pytest.approx(1024 / 96)  # 10.67: not a whole number
    assert v(d, "validation_errors") == 1
    assert v(d, "config_valid") == "no"
    res = m.resolve_scenario(Params(data_parallel=24))
    (issue,) = res.issues
    assert issue.path == "batch.global_batch" and issue.kind == "cross"
    assert "remainder 64" in issue.message
    assert "960 sequences" in issue.silently and "-6.25%" in issue.silently
    assert "derived" not in res.config  # an invalid config gets no derived fields


def test_relaunch_fitting_no_replica_reports_zero():
    # micro 16, batch 256: 256 / 16 = 16 -> any d dividing 16 works, so d = 1 always exists.
    d = solve(Params(global_batch=256, micro_batch=16, data_parallel=1, relaunch_gpus=64))
    assert v(d, "relaunch_dp") == 8  # 64 // 8 = 8 replicas; 16 % 8 == 0
    # more replicas than the batch allows: the floored accumulation is clamped to 1 and inflates
    d = solve(Params(global_batch=256, micro_batch=16, data_parallel=1, tensor_parallel=1, pipeline_parallel=1,
                     relaunch_gpus=64))
    assert v(d, "relaunch_max_dp") == 64
    assert v(d, "relaunch_remainder") == 256 % (16 * 64) == 256
    assert v(d, "relaunch_accum_if_floored") == 1
    assert v(d, "relaunch_effective_batch_if_floored") == 1024
    assert v(d, "relaunch_silent_batch_change_fraction") == pytest.approx(3)
    assert v(d, "relaunch_dp") == 16


# --- the scenario's layers: pins and provenance ------------------------------------------------


def test_pins_win_over_the_scenario_command_line():
    cli = deep_merge(m.cli_layer(Params()), {"data": {"snapshot": "latest"}})
    res = m.resolve([("base", m.BASE), ("experiment", m.EXPERIMENT), ("command line", cli)], m.PINS)
    assert res.config["data"]["snapshot"] == "web-code-2025-06-02"
    assert res.valid
    assert any(o.path == "data.snapshot" and o.layer == "command line" for o in res.pinned_over)
    assert res.sha256 == solve(Params()).value("config_sha256")  # the override changed nothing


def test_provenance_of_the_seed_layers():
    prov = m.resolve_scenario(Params()).provenance
    assert prov["optim.lr"] == "experiment"
    assert prov["optim.betas"] == "base"
    assert prov["data.sources"] == "experiment"  # replaced whole, not appended
    assert prov["batch.global_batch"] == "command line"
    assert prov["data.snapshot"] == "pins"
    assert "derived.gpus" not in prov


# --- the scenario's hashes -------------------------------------------------------------------


def test_relaunch_changes_the_config_hash_and_keeps_the_experiment_hash():
    d0 = solve(Params())
    exact = solve(Params(data_parallel=16))  # the exact relaunch on 128 of the 192 GPUs
    assert v(exact, "config_valid") == "yes"
    assert v(exact, "config_sha256") != v(d0, "config_sha256")
    assert v(exact, "experiment_sha256") == v(d0, "experiment_sha256")
    # a new global batch is a new experiment
    other = solve(Params(global_batch=2048))
    assert v(other, "experiment_sha256") != v(d0, "experiment_sha256")


def test_pins_are_part_of_the_hash():
    without = m.resolve(layers_of(Params()), None)
    with_pins = m.resolve_scenario(Params())
    assert without.sha256 != with_pins.sha256
    assert any(i.kind == "pin" for i in without.issues)  # "latest" is not a pin
    assert any(i.path == "env.image" for i in without.issues)  # a tag, not a digest
    assert any(i.path == "env.code_commit" for i in without.issues)


# --- the scenario's text layers --------------------------------------------------------------


def test_cli_text_parses_back_to_the_cli_layer():
    p = Params(global_batch=3072, micro_batch=2, data_parallel=96, train_tokens=3.5e12)
    assert parse_layer("cli", m.cli_toml(p)).data == m.cli_layer(p)


def test_the_scenario_text_layers_parse():
    for text in (m.BASE_TOML, m.EXPERIMENT_TOML, m.PINS_TOML):
        assert parse_layer("x", text).data == tomllib.loads(text)


# --- the scenario's sweep ---------------------------------------------------------------------


def test_sweep_is_the_product_of_its_axes():
    p = Params()
    axes = m.sweep_axes(p)
    # 1.5e-4 x 2^(i - 1.5) for i = 0..3, to 3 significant figures: /2.83, /1.41, x1.41, x2.83
    assert axes == {"optim.lr": [5.3e-5, 1.06e-4, 2.12e-4, 4.24e-4], "optim.warmup_steps": [500, 1000, 1500],
                    "train.seed": [0, 1, 2]}
    runs = expand_sweep(axes)
    assert len(runs) == solve(p).value("sweep_runs") == 36
    assert len({sha256_hex(r) for r in runs}) == 36
    assert runs[0] == {"optim": {"lr": axes["optim.lr"][0], "warmup_steps": 500}, "train": {"seed": 0}}


def test_a_misspelt_sweep_axis_collapses_to_duplicates_under_new_hashes():
    p = Params()
    axes = m.sweep_axes(p)
    typo = {"optim.lerning_rate" if k == "optim.lr" else k: vals for k, vals in axes.items()}
    configs, hashes = [], []
    for override in expand_sweep(typo):
        res = m.resolve(layers_of(p) + [("sweep", override)], m.PINS, strict=False)
        configs.append(json.dumps(drop_paths(res.config, ["optim.lerning_rate"]), sort_keys=True))
        hashes.append(res.sha256)
        assert any(i.path == "optim.lerning_rate" for i in res.issues)
    assert len(set(configs)) == solve(p).value("sweep_distinct_runs_with_typo") == 9
    assert len(set(hashes)) == 36  # the dead key is hashed: no duplicate is detected


# --- the live resolver's starting points -----------------------------------------------------------


def _resolve_example(ex: m.Example, strict: bool = True) -> Resolution:
    parsed = {n: parse_layer(n, t).data for n, t in ex.layers.items()}
    return m.resolve([(n, parsed[n]) for n in m.LAYER_NAMES[:3]], parsed["pins"], strict=strict)


def test_resolver_examples_say_what_they_claim():
    p = Params()
    d = solve(p)
    ex = m.resolver_examples(p)
    assert list(ex)[0] == "As written"
    assert _resolve_example(ex["As written"]).sha256 == v(d, "config_sha256")
    assert _resolve_example(ex["Same experiment in JSON"]).sha256 == v(d, "config_sha256")
    assert _resolve_example(ex["1000.0 instead of 1000"]).sha256 == v(d, "config_sha256")
    assert _resolve_example(ex["1000.0 instead of 1000"], strict=False).sha256 != _resolve_example(
        ex["As written"], strict=False).sha256
    old = _resolve_example(ex["Old key name"])
    assert [i.path for i in old.issues] == ["optim.learning_rate"]
    pin = _resolve_example(ex["Pin overridden"])
    assert pin.valid and any(o.layer == "command line" for o in pin.pinned_over)
    relaunch = _resolve_example(ex["Relaunch on the other machine"])
    assert [i.path for i in relaunch.issues] == ["batch.global_batch"]
    assert "16" in ex["Relaunch on the other machine"].look


# --- moves the right way ----------------------------------------------------------------------------

CHOICES = {name: list(typing.get_args(info.annotation))
           for name, info in Params.model_fields.items() if typing.get_origin(info.annotation) is typing.Literal}

scenarios = st.builds(
    Params,
    global_batch=st.sampled_from(CHOICES["global_batch"]),
    micro_batch=st.sampled_from(CHOICES["micro_batch"]),
    data_parallel=st.sampled_from(CHOICES["data_parallel"]),
    tensor_parallel=st.sampled_from(CHOICES["tensor_parallel"]),
    pipeline_parallel=st.sampled_from(CHOICES["pipeline_parallel"]),
    seq_len=st.sampled_from(CHOICES["seq_len"]),
    train_tokens=st.floats(1e9, 1e14),
    relaunch_gpus=st.integers(64, 16384),
    sweep_lr_values=st.integers(1, 12),
    sweep_warmup_values=st.integers(1, 8),
    sweep_seeds=st.integers(1, 10),
    hours_to_notice_typo=st.floats(1, 336),
)


@settings(max_examples=200, deadline=None)
@given(p=scenarios)
def test_valid_iff_the_batch_divides(p):
    d = solve(p)
    divides = p.global_batch % (p.micro_batch * p.data_parallel) == 0
    assert (v(d, "batch_divisibility_remainder") == 0) == divides
    assert float(v(d, "grad_accum_steps")).is_integer() == divides
    assert (v(d, "config_valid") == "yes") == divides  # TP and PP choices always divide 32
    assert v(d, "validation_errors") == (0 if divides else 1)


@settings(max_examples=200, deadline=None)
@given(p=scenarios)
def test_the_exact_relaunch_is_exact_and_fits(p):
    d = solve(p)
    mp = p.tensor_parallel * p.pipeline_parallel
    rdp = v(d, "relaunch_dp")
    assert 1 <= rdp <= v(d, "relaunch_max_dp")
    assert p.global_batch % (p.micro_batch * rdp) == 0
    assert v(d, "relaunch_usable_gpus") % mp == 0
    assert 0 <= v(d, "relaunch_idle_gpus") < p.relaunch_gpus
    # no larger replica count would have divided the batch
    for bigger in range(rdp + 1, v(d, "relaunch_max_dp") + 1):
        assert p.global_batch % (p.micro_batch * bigger) != 0
    if p.micro_batch * v(d, "relaunch_max_dp") <= p.global_batch:
        assert v(d, "relaunch_silent_batch_change_fraction") <= 0
    assert (v(d, "relaunch_remainder") == 0) == (v(d, "relaunch_idle_gpus") == p.relaunch_gpus % mp)


@settings(max_examples=150, deadline=None)
@given(p=scenarios, extra=st.integers(8, 4096))
def test_more_relaunch_gpus_never_fit_fewer_replicas(p, extra):
    a = solve(p)
    b = solve(p.model_copy(update={"relaunch_gpus": min(16384, p.relaunch_gpus + extra)}))
    assert v(b, "relaunch_max_dp") >= v(a, "relaunch_max_dp")
    assert v(b, "relaunch_dp") >= v(a, "relaunch_dp")
    assert v(b, "relaunch_usable_gpus") >= v(a, "relaunch_usable_gpus")


@settings(max_examples=60, deadline=None)
@given(p=scenarios, axis=st.sampled_from(["sweep_lr_values", "sweep_warmup_values", "sweep_seeds"]))
def test_sweep_grows_with_every_axis_and_a_typo_wastes_all_but_one_value(p, axis):
    hi = knobs_of(Params)[axis].max
    more = p.model_copy(update={axis: min(int(hi), getattr(p, axis) + 1)})
    a, b = solve(p), solve(more)
    assert v(b, "sweep_runs") >= v(a, "sweep_runs")
    assert v(b, "sweep_gpu_hours") >= v(a, "sweep_gpu_hours")
    assert 0 <= v(a, "sweep_typo_wasted_gpu_hours") < v(a, "sweep_gpu_hours")
    assert (v(a, "sweep_typo_wasted_gpu_hours") == 0) == (p.sweep_lr_values == 1)
    assert v(a, "sweep_runs") == math.prod([p.sweep_lr_values, p.sweep_warmup_values, p.sweep_seeds])


@settings(max_examples=100, deadline=None)
@given(p=scenarios, factor=st.floats(1.01, 10))
def test_a_typo_noticed_later_costs_more(p, factor):
    later = p.model_copy(update={"hours_to_notice_typo": min(336.0, p.hours_to_notice_typo * factor)})
    assert v(solve(later), "typo_cost_gpu_hours") >= v(solve(p), "typo_cost_gpu_hours")


@settings(max_examples=100, deadline=None)
@given(p=scenarios)
def test_the_hash_is_deterministic_and_follows_the_command_line(p):
    a, b = solve(p), solve(Params(**p.model_dump()))
    assert v(a, "config_sha256") == v(b, "config_sha256")
    for field in ("global_batch", "micro_batch", "seq_len"):
        choices = [c for c in CHOICES[field] if c != getattr(p, field)]
        other = solve(p.model_copy(update={field: choices[0]}))
        assert v(other, "config_sha256") != v(a, "config_sha256"), field
        assert v(other, "experiment_sha256") != v(a, "experiment_sha256") or field == "micro_batch"
    # knobs outside the config never move the hash
    other = solve(p.model_copy(update={"relaunch_gpus": 64 if p.relaunch_gpus != 64 else 128,
                                       "sweep_seeds": 1 if p.sweep_seeds != 1 else 2}))
    assert v(other, "config_sha256") == v(a, "config_sha256")


@settings(max_examples=100, deadline=None)
@given(p=scenarios, dp=st.sampled_from(CHOICES["data_parallel"]))
def test_layout_changes_keep_the_experiment_hash_when_both_are_valid(p, dp):
    q = p.model_copy(update={"data_parallel": dp})
    a, b = solve(p), solve(q)
    if v(a, "config_valid") == "yes" and v(b, "config_valid") == "yes":
        assert v(a, "experiment_sha256") == v(b, "experiment_sha256")
        assert (v(a, "config_sha256") == v(b, "config_sha256")) == (dp == p.data_parallel)


# --- content (the generic contract is tests/test_contract.py) ----------------------------------------


def test_the_prose_draws_the_resolver_sim_the_config_flow_and_two_charts():
    assert {("sim", "resolver"), ("diagram", "config_flow"), ("chart", "relaunch_vs_gpus"),
            ("chart", "silent_batch_vs_gpus")} <= set(QUESTIONS[SLUG].content.directives())


def test_presets_teach_what_they_say():
    presets = {pr.name: pr.values for pr in QUESTIONS[SLUG].content.presets}
    d = solve(Params(**presets["Relaunch on 512 GPUs"]))
    assert v(d, "relaunch_usable_gpus") == 512 and v(d, "relaunch_grad_accum_steps") == 4  # 1,024 / (4 x 64)
    d = solve(Params(**presets["Main run on 24 replicas"]))
    assert v(d, "config_valid") == "no" and v(d, "batch_divisibility_remainder") == 64
    d = solve(Params(**presets["A batch with a factor of 3"]))
    assert v(d, "config_valid") == "yes" and v(d, "relaunch_idle_gpus") == 0  # 1,536 mod 96 = 0


# --- the page, through AppTest ------------------------------------------------------------------------


@pytest.fixture
def app(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("WALKTHROUGHS_DB", str(tmp_path / "apptest.duckdb"))
    return AppTest.from_file(str(ROOT / "pages" / "product" / "ml_config_system.py"), default_timeout=30)


def _metrics(at):
    return {x.label: x.value for x in at.metric}


def _area(at, label_start):
    return next(t for t in at.text_area if t.label.startswith(label_start))


def test_page_resolves_and_reports(app):
    at = app.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    metrics = _metrics(at)
    assert metrics["Verdict"] == "valid"
    assert metrics["SHA-256 (first 12)"] == solve(Params()).value("config_sha256")[:12]
    assert len(at.get("plotly_chart")) >= 3
    assert len(at.text_area) == 4


def test_page_old_key_then_flexible_mode(app):
    at = app.run()
    at.selectbox(key=f"{SLUG}.sim_example").set_value("Old key name").run()
    assert not at.exception
    assert _metrics(at)["Verdict"] == "rejected"
    assert any("renamed to `optim.lr`" in e.value for e in at.error)
    at.radio(key=f"{SLUG}.sim_mode").set_value("Flexible: anything that parses launches").run()
    assert _metrics(at)["Verdict"] == "launches"
    assert any("Launches anyway" in w.value and "0.0003" in w.value for w in at.warning)


def test_page_edit_changes_hash_and_broken_text_is_a_plain_message(app):
    at = app.run()
    before = _metrics(at)["SHA-256 (first 12)"]
    area = _area(at, "2. experiment")
    area.set_value(area.value.replace("seed = 17", "seed = 18")).run()
    assert not at.exception
    metrics = _metrics(at)
    assert metrics["SHA-256 (first 12)"] != before
    assert metrics["Hex digits changed"].endswith("of 64") and metrics["Hex digits changed"] != "0 of 64"
    _area(at, "2. experiment").set_value("[optim]\nlr = \n").run()
    assert not at.exception
    errors = [e.value for e in at.error]
    assert any(e.startswith("Experiment layer (TOML), line 2") for e in errors), errors
    assert not any("Traceback" in e for e in errors)


def test_page_knob_moves_the_verdict(app):
    at = app.run()
    at.selectbox(key=f"{SLUG}.data_parallel").set_value(24).run()
    assert not at.exception
    assert _metrics(at)["Verdict"] == "rejected"
    assert any("remainder 64" in e.value for e in at.error)


def test_relaunch_hash_effect_follows_the_layout():
    d = solve(Params())  # 32 replicas of 8 GPUs; the 192-GPU relaunch fits 16 of them: a new layout
    assert v(d, "relaunch_dp") == 16 != Params().data_parallel
    assert v(d, "relaunch_hash_effect") == "changes the first and keeps the second"
    same = solve(Params(relaunch_gpus=256))  # 256 / 8 = 32 replicas: the original layout
    assert v(same, "relaunch_dp") == 32
    assert v(same, "relaunch_hash_effect") == "runs the original layout, so it keeps both"
