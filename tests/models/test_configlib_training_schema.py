"""configlib.training_schema: the schema of a training run. A complete, valid run is written out
below by hand; each test changes one thing in it and names what the schema must say."""

from __future__ import annotations

import hashlib
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.configlib import deep_merge, drop_paths, flatten, resolve, validate
from models.configlib.training_schema import TRAINING_SCHEMA, derive

IMAGE = "registry.internal/train@sha256:7b5193becf34e25f4e3056c1a0a6cfb33013ffe04a38b58ebf19fc4a2e4dc1c6"
COMMIT = "7d28d5a14600f66d5eb7325e3d016511ccd63be5"
MANIFEST = "22f39156a0021099ca93acabe840dfdbb83bb249f80fdc4e876b605ccc595914"
RUN = {
    "model": {"name": "dense-7b", "layers": 32, "hidden": 4096, "heads": 32, "vocab": 128256, "seq_len": 4096},
    "optim": {"name": "adamw", "lr": 3e-4, "betas": [0.9, 0.95], "weight_decay": 0.1, "warmup_steps": 2000,
              "schedule": "cosine"},
    "batch": {"global_batch": 1024, "micro_batch": 4},
    "layout": {"data_parallel": 32, "tensor_parallel": 4, "pipeline_parallel": 2},
    "data": {"snapshot": "web-code-2025-06-02", "manifest_sha256": MANIFEST, "sources": ["web", "code"],
             "weights": [0.85, 0.15]},
    "train": {"tokens": 1_000_000_000_000, "seed": 17},
    "env": {"image": IMAGE, "code_commit": COMMIT},
}
PINS = {"env": {"image": IMAGE, "code_commit": COMMIT}}


def H(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, separators=(",", ":")).encode("utf-8")).hexdigest()


def issues(experiment: dict, cli: dict | None = None):
    layers = [("base", RUN), ("experiment", experiment), ("command line", cli or {})]
    return resolve(layers, PINS, schema=TRAINING_SCHEMA).issues


def test_the_hand_written_run_is_valid_and_its_derived_fields_are_hand_arithmetic():
    assert validate(RUN, TRAINING_SCHEMA)[1] == []
    # 32 x 4 x 2 GPUs; 1,024 / (4 x 32) micro-steps; 1,024 x 4,096 tokens; ceil(10^12 / 4,194,304)
    expected = {"gpus": 256, "grad_accum_steps": 8, "tokens_per_step": 4_194_304, "total_steps": 238_419}
    assert derive(RUN) == expected
    assert 238_418 * 4_194_304 < 10**12 <= 238_419 * 4_194_304


def test_resolved_run_and_its_two_hashes():
    res = resolve([("base", RUN)], PINS, schema=TRAINING_SCHEMA)
    derived = {"gpus": 256, "grad_accum_steps": 8, "tokens_per_step": 4_194_304, "total_steps": 238_419}
    assert res.config == {**RUN, "derived": derived}
    assert res.sha256 == H({**RUN, "derived": derived})
    no_layout = {k: v for k, v in RUN.items() if k != "layout"}
    no_layout["batch"] = {"global_batch": 1024}
    no_layout["derived"] = {"tokens_per_step": 4_194_304, "total_steps": 238_419}
    assert res.experiment_sha256 == H(no_layout)


def test_sections():
    assert TRAINING_SCHEMA.sections == ("batch", "data", "env", "layout", "model", "optim", "train")


def test_typo_is_rejected_with_the_closest_key():
    (issue,) = issues({"optim": {"wramup_steps": 1000}})
    assert issue.kind == "unknown" and "optim.warmup_steps" in issue.message
    assert issue.silently == "ignored: the run uses `optim.warmup_steps` = 2000 from another layer"


def test_renamed_key_names_the_rename():
    (issue,) = issues({"optim": {"learning_rate": 1.5e-4}})
    assert issue.message == ("`optim.learning_rate` was renamed to `optim.lr` in schema v2; "
                             "migrate the file (`migrate`).")
    assert "0.0003" in issue.silently  # the base's rate, twice the one asked for


def test_unknown_table_and_derived_field():
    found = issues({"optm": {"lr": 1e-4}, "derived": {"grad_accum_steps": 3}})
    assert {i.path: i.kind for i in found} == {"optm": "unknown", "derived": "unknown"}
    assert any("Did you mean `optim`" in i.message for i in found)


def test_types_are_checked_and_only_lossless_conversions_pass():
    found = issues({"optim": {"lr": "1.5e-4", "warmup_steps": 1000.5}, "train": {"seed": True}})
    assert {i.path: i.kind for i in found} == {"optim.lr": "type", "optim.warmup_steps": "type", "train.seed": "type"}
    assert not issues({"train": {"seed": 17.0, "tokens": 1e12}})  # both integers, losslessly


def test_ranges_and_cross_field_rules():
    found = issues({"optim": {"lr": 0.0, "betas": [0.9]}, "data": {"weights": [0.5, 0.4]}})
    assert {i.path: i.kind for i in found} == {"optim.lr": "range", "optim.betas": "range", "data.weights": "cross"}
    assert next(i for i in found if i.path == "data.weights").message == "data.weights sum to 0.9, not 1."
    # 32 heads mod 3 = 2; 32 layers mod 5 = 2; 1,024 mod (4 x 12 = 48) = 1,024 - 21 x 48 = 16
    found = issues({}, {"layout": {"tensor_parallel": 3, "pipeline_parallel": 5, "data_parallel": 12}})
    assert [i.message for i in found] == [
        "tensor_parallel 3 does not divide model.heads 32 (remainder 2).",
        "pipeline_parallel 5 does not divide model.layers 32 (remainder 2).",
        "global_batch 1024 is not divisible by micro_batch × data_parallel = 4 × 12 = 48 (remainder 16).",
    ]
    mismatch = issues({"data": {"sources": ["web"], "weights": [0.5, 0.5]}})
    assert [i.message for i in mismatch] == ["data.weights has 2 entries for 1 sources."]


def test_the_floored_batch_says_what_a_trainer_would_run():
    # 4 x 24 = 96 per micro-step; 1,024 mod 96 = 64; floor(1,024 / 96) = 10 -> 960, (960 - 1,024) / 1,024 = -6.25%
    (issue,) = issues({}, {"layout": {"data_parallel": 24}})
    assert "(remainder 64)" in issue.message
    assert issue.silently == ("a trainer that floors accumulation runs 10 micro-steps: 960 sequences per step, "
                              "-6.25% against the 1024 written")


@pytest.mark.parametrize("snapshot", ["latest", " Latest ", "main", ""])
def test_a_moving_data_tag_is_not_a_pin(snapshot):
    (issue,) = issues({"data": {"snapshot": snapshot}})
    assert issue.kind == "pin" and issue.message == f"data.snapshot {snapshot!r} is a moving tag, not a version."


def test_image_commit_and_manifest_must_be_digests():
    exp = {"env": {"image": "registry.internal/train:latest", "code_commit": "7d28d5a"},
           "data": {"manifest_sha256": MANIFEST.upper()}}
    found = resolve([("base", RUN), ("exp", exp)], schema=TRAINING_SCHEMA).issues
    assert [i.message for i in found] == [
        "`data.manifest_sha256` must be the SHA-256 of the snapshot's file manifest; got '" + MANIFEST.upper() + "'.",
        "`env.image` must be an image reference by digest; got 'registry.internal/train:latest'.",
        "`env.code_commit` must be a full git commit id; got '7d28d5a'.",
    ]


def test_missing_key_is_reported():
    res = resolve([("base", drop_paths(RUN, ["optim.schedule"]))], PINS, schema=TRAINING_SCHEMA)
    assert [(i.path, i.kind) for i in res.issues] == [("optim.schedule", "missing")]
    assert res.issues[0].message == "`optim.schedule` is missing (a string)."


def test_strict_normalizes_types_before_hashing_and_flexible_does_not():
    e_int = {"optim": {"warmup_steps": 1000, "lr": 1}}
    e_float = {"optim": {"warmup_steps": 1000.0, "lr": 1.0}}
    strict = [resolve([("base", RUN), ("e", e)], PINS, schema=TRAINING_SCHEMA) for e in (e_int, e_float)]
    flexible = [resolve([("base", RUN), ("e", e)], PINS, schema=TRAINING_SCHEMA, strict=False)
                for e in (e_int, e_float)]
    assert strict[0].sha256 == strict[1].sha256
    assert strict[0].config["optim"]["lr"] == 1.0 and type(strict[0].config["optim"]["lr"]) is float
    assert strict[1].config["optim"]["warmup_steps"] == 1000 and type(strict[1].config["optim"]["warmup_steps"]) is int
    assert flexible[0].sha256 != flexible[1].sha256


def test_validate_never_raises_on_odd_shapes():
    for cfg in ({}, {"model": 3}, {"optim": {"betas": "x"}}, {"layout": {"data_parallel": 0}}, {"a": {"b": {}}}):
        normalized, found = validate(cfg, TRAINING_SCHEMA)
        assert found


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**13) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(
        ["model", "optim", "lr", "batch", "layout", "data", "global_batch", "micro_batch", "data_parallel",
         "weights", "sources", "x", "derived", "seed"]), inner, max_size=4),
    max_leaves=12,
)
layers_strategy = st.dictionaries(st.sampled_from(["model", "optim", "batch", "layout", "data", "train", "env",
                                                   "junk"]), json_values, max_size=5)


@settings(max_examples=60, deadline=None)
@given(a=layers_strategy, b=layers_strategy, strict=st.booleans())
def test_resolve_never_raises_on_arbitrary_layers(a, b, strict):
    pins = deep_merge(PINS, {"data": {"snapshot": "web-code-2025-06-02"}})
    res = resolve([("base", RUN), ("experiment", a), ("command line", b)], pins, schema=TRAINING_SCHEMA, strict=strict)
    assert len(res.sha256) == 64
    assert set(res.provenance) <= set(flatten(res.config))
    flat = flatten(res.config)
    for path, value in flatten(pins).items():  # pins always win, whatever the layers did
        assert flat[path] == value and res.provenance[path] == "pins"
