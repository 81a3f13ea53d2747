"""configlib.resolve against a small schema written here: precedence, pins, provenance, strict
normalization versus flexible text, derived fields, and both hashes, each hash recomputed with
hashlib over a config written out by hand."""

from __future__ import annotations

import hashlib
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from models.configlib import Field, Issue, Schema, flatten, resolve


def H(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, separators=(",", ":")).encode("utf-8")).hexdigest()


def _divides(v):
    g, m, dp = v.get("batch.global"), v.get("batch.micro"), v.get("layout.dp")
    if g and m and dp and g % (m * dp):
        return [Issue("batch.global", "cross", f"{g} is not a multiple of {m * dp}.", "")]
    return []


SCHEMA = Schema(
    {"batch.global": Field("int", lo=1), "batch.micro": Field("int", lo=1), "layout.dp": Field("int", lo=1),
     "env.image": Field("str")},
    cross_checks=_divides,
    derive=lambda c: {"accum": c["batch"]["global"] // (c["batch"]["micro"] * c["layout"]["dp"])},
    layout_paths=("layout", "batch.micro", "derived.accum"),
)
BASE = {"batch": {"global": 512, "micro": 2}, "layout": {"dp": 8}, "env": {"image": "img:latest"}}
PINS = {"env": {"image": "img@sha256:abc"}}


def test_later_layer_wins_and_pins_always_win():
    layers = [("base", BASE), ("experiment", {"batch": {"micro": 4}}), ("command line", {"batch": {"micro": 8},
                                                                                          "env": {"image": "mine"}})]
    res = resolve(layers, PINS, schema=SCHEMA)
    assert res.config == {"batch": {"global": 512, "micro": 8}, "layout": {"dp": 8}, "env": {"image": "img@sha256:abc"},
                          "derived": {"accum": 8}}  # 512 / (8 x 8)
    assert res.provenance == {"batch.global": "base", "batch.micro": "command line", "layout.dp": "base",
                              "env.image": "pins"}
    (o,) = res.pinned_over
    assert (o.path, o.layer, o.was, o.pinned) == ("env.image", "command line", "mine", "img@sha256:abc")


def test_a_pin_equal_to_the_layers_value_overrides_nothing_and_pins_name_is_the_provenance():
    res = resolve([("base", {**BASE, "env": {"image": "img@sha256:abc"}})], PINS, schema=SCHEMA, pins_name="launcher")
    assert res.pinned_over == ()
    assert res.provenance["env.image"] == "launcher"


def test_a_pin_over_a_whole_table_reports_each_leaf_it_replaced():
    layers = [("base", {**BASE, "env": {"image": "a", "tag": "b"}})]
    res = resolve(layers, {"env": "pinned"}, schema=SCHEMA, strict=False)
    assert res.config["env"] == "pinned"
    assert sorted((o.path, o.was) for o in res.pinned_over) == [("env.image", "a"), ("env.tag", "b")]


def test_strict_hashes_the_normalized_config_with_its_derived_fields():
    res = resolve([("base", BASE), ("experiment", {"batch": {"global": 512.0}})], PINS, schema=SCHEMA)
    expected = {"batch": {"global": 512, "micro": 2}, "layout": {"dp": 8}, "env": {"image": "img@sha256:abc"},
                "derived": {"accum": 32}}  # 512 / (2 x 8)
    assert res.valid and res.strict
    assert res.config == expected and type(res.config["batch"]["global"]) is int
    assert res.sha256 == H(expected)
    assert res.canonical_bytes == len(json.dumps(expected, sort_keys=True, separators=(",", ":")))
    assert res.experiment_sha256 == H({"batch": {"global": 512}, "env": {"image": "img@sha256:abc"}, "derived": {}})


def test_flexible_hashes_the_text_as_written_and_still_reports():
    layers = [("base", BASE), ("experiment", {"batch": {"global": 512.0}, "typo": 1})]
    flexible = resolve(layers, PINS, schema=SCHEMA, strict=False)
    written = {"batch": {"global": 512.0, "micro": 2}, "layout": {"dp": 8}, "env": {"image": "img@sha256:abc"},
               "typo": 1}
    assert flexible.config == written and flexible.sha256 == H(written)  # "512.0": other bytes, no derived
    assert [(i.path, i.kind) for i in flexible.issues] == [("typo", "unknown")]
    assert not flexible.valid


def test_an_invalid_strict_config_gets_no_derived_fields():
    res = resolve([("base", BASE), ("cli", {"layout": {"dp": 3}})], PINS, schema=SCHEMA)
    assert not res.valid and "derived" not in res.config
    assert [i.message for i in res.issues] == ["512 is not a multiple of 6."]


def test_a_layout_change_moves_the_config_hash_and_keeps_the_experiment_hash():
    a = resolve([("base", BASE)], PINS, schema=SCHEMA)
    b = resolve([("base", BASE), ("relaunch", {"layout": {"dp": 16}, "batch": {"micro": 4}})], PINS, schema=SCHEMA)
    assert a.valid and b.valid
    assert a.config["derived"] == {"accum": 32} and b.config["derived"] == {"accum": 8}  # 512/16, 512/64
    assert a.sha256 != b.sha256
    assert a.experiment_sha256 == b.experiment_sha256
    c = resolve([("base", BASE), ("exp", {"batch": {"global": 1024}})], PINS, schema=SCHEMA)
    assert c.experiment_sha256 != a.experiment_sha256  # the global batch is part of the experiment


def test_resolve_modifies_no_input():
    base = json.loads(json.dumps(BASE))
    pins = json.loads(json.dumps(PINS))
    res = resolve([("base", base)], pins, schema=SCHEMA)
    res.config["batch"]["global"] = 1
    assert base == BASE and pins == PINS


def test_no_pins_and_no_layers():
    res = resolve([], None, schema=SCHEMA, strict=False)
    assert res.config == {} and res.sha256 == H({}) and res.provenance == {}
    assert {i.kind for i in res.issues} == {"missing"} and len(res.issues) == 4


values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=False) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["batch", "global", "micro", "layout", "dp", "env", "image", "derived", "x"]), inner,
        max_size=3),
    max_leaves=10,
)
layer = st.dictionaries(st.sampled_from(["batch", "layout", "env", "derived", "junk"]), values, max_size=4)


@settings(max_examples=100, deadline=None)
@given(a=layer, b=layer, strict=st.booleans())
def test_resolve_never_raises_and_pins_always_win(a, b, strict):
    res = resolve([("base", BASE), ("a", a), ("b", b)], PINS, schema=SCHEMA, strict=strict)
    assert len(res.sha256) == 64 and len(res.experiment_sha256) == 64
    assert set(res.provenance) <= set(flatten(res.config))
    assert flatten(res.config)["env.image"] == "img@sha256:abc" and res.provenance["env.image"] == "pins"
