"""configlib.merge: layers merge map by map, lists and scalars replace whole, and the dotted-path
helpers. Every expected dict is written out by hand."""

from __future__ import annotations

from models.configlib import clone, deep_merge, drop_paths, flatten, get_path, provenance, set_path
from models.configlib.merge import related


def test_nested_maps_merge_lists_and_scalars_replace():
    base = {"a": {"x": 1, "y": [1, 2, 3], "z": {"deep": 1, "keep": 2}}, "s": "base"}
    over = {"a": {"y": [9], "z": {"deep": 5}}, "s": "over"}
    assert deep_merge(base, over) == {"a": {"x": 1, "y": [9], "z": {"deep": 5, "keep": 2}}, "s": "over"}


def test_map_replaces_scalar_and_scalar_replaces_map():
    assert deep_merge({"a": 1}, {"a": {"b": 2}}) == {"a": {"b": 2}}
    assert deep_merge({"a": {"b": 2, "c": 3}}, {"a": 7}) == {"a": 7}
    assert deep_merge({"a": {"b": 2}}, {"a": {}}) == {"a": {"b": 2}}  # an empty map changes nothing


def test_three_layers_later_wins_key_by_key():
    base = {"optim": {"lr": 3e-4, "warmup_steps": 2000, "schedule": "cosine"}, "seed": 0}
    experiment = {"optim": {"lr": 1.5e-4, "warmup_steps": 1000}, "seed": 17}
    cli = {"optim": {"warmup_steps": 500}}
    merged = deep_merge(deep_merge(base, experiment), cli)
    assert merged == {"optim": {"lr": 1.5e-4, "warmup_steps": 500, "schedule": "cosine"}, "seed": 17}


def test_merge_is_pure():
    base = {"a": {"l": [1, 2]}}
    over = {"a": {"m": [3]}}
    out = deep_merge(base, over)
    out["a"]["l"].append(99)
    out["a"]["m"].append(99)
    assert base == {"a": {"l": [1, 2]}} and over == {"a": {"m": [3]}}


def test_clone_shares_nothing():
    src = {"a": [{"b": 1}], "c": {"d": [1]}}
    out = clone(src)
    out["a"][0]["b"] = 2
    out["c"]["d"].append(2)
    assert src == {"a": [{"b": 1}], "c": {"d": [1]}}


def test_flatten_lists_are_leaves_and_empty_maps_vanish():
    cfg = {"model": {"layers": 32, "shape": {"heads": 8}}, "data": {"sources": ["web", "code"]}, "empty": {}}
    assert flatten(cfg) == {"model.layers": 32, "model.shape.heads": 8, "data.sources": ["web", "code"]}


def test_get_path():
    cfg = {"a": {"b": {"c": 3}}, "s": 1}
    assert get_path(cfg, "a.b.c") == 3
    assert get_path(cfg, "a.b") == {"c": 3}
    assert get_path(cfg, "a.x") is None
    assert get_path(cfg, "s.t") is None  # through a scalar


def test_set_path_creates_maps_and_replaces_a_scalar_on_the_way():
    assert set_path({}, "a.b.c", 1) == {"a": {"b": {"c": 1}}}
    assert set_path({"a": 5, "k": 0}, "a.b", 2) == {"a": {"b": 2}, "k": 0}
    assert set_path({"a": {"x": 1}}, "a.y", 2) == {"a": {"x": 1, "y": 2}}


def test_drop_paths_leaves_and_sections_without_touching_the_input():
    cfg = {"layout": {"dp": 8, "tp": 2}, "batch": {"global": 512, "micro": 4}, "seed": 1}
    out = drop_paths(cfg, ["layout", "batch.micro", "missing.path", "seed.deeper"])
    assert out == {"batch": {"global": 512}, "seed": 1}
    assert cfg == {"layout": {"dp": 8, "tp": 2}, "batch": {"global": 512, "micro": 4}, "seed": 1}


def test_related_paths():
    assert related("a.b", "a.b") and related("a", "a.b.c") and related("a.b.c", "a")
    assert not related("a.b", "a.bc")  # a shared prefix is not an ancestor
    assert not related("a.b", "a.c")


def test_provenance_is_the_last_layer_holding_the_leaf():
    layers = [("base", {"a": {"b": 1, "c": 2}, "l": [1]}), ("exp", {"a": {"b": 3}}), ("cli", {"l": [2]})]
    merged = {"a": {"b": 3, "c": 2}, "l": [2]}
    assert provenance(layers, merged) == {"a.b": "exp", "a.c": "base", "l": "cli"}


def test_provenance_after_a_subtree_is_replaced():
    layers = [("base", {"a": {"b": 1, "c": 2}}), ("exp", {"a": 5}), ("cli", {"a": {"d": 1}})]
    merged = deep_merge(deep_merge(layers[0][1], layers[1][1]), layers[2][1])
    assert merged == {"a": {"d": 1}}
    assert provenance(layers, merged) == {"a.d": "cli"}
