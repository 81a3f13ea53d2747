"""configlib.sweep: one override per point of the cartesian product, last axis fastest."""

from __future__ import annotations

from models.configlib import expand_sweep


def test_product_in_axis_order_with_nested_paths():
    runs = expand_sweep({"a": [1, 2], "b.c": ["x", "y", "z"]})
    assert runs == [
        {"a": 1, "b": {"c": "x"}}, {"a": 1, "b": {"c": "y"}}, {"a": 1, "b": {"c": "z"}},
        {"a": 2, "b": {"c": "x"}}, {"a": 2, "b": {"c": "y"}}, {"a": 2, "b": {"c": "z"}},
    ]


def test_axes_under_one_table_share_it():
    runs = expand_sweep({"optim.lr": [1e-4], "optim.warmup_steps": [500, 1000]})
    assert runs == [{"optim": {"lr": 1e-4, "warmup_steps": 500}}, {"optim": {"lr": 1e-4, "warmup_steps": 1000}}]


def test_count_is_the_product_and_edge_cases():
    assert len(expand_sweep({"a": range(4), "b": range(3), "c": range(5)})) == 4 * 3 * 5
    assert expand_sweep({}) == [{}]  # no axis: one run, the base config
    assert expand_sweep({"a": [1, 2], "b": []}) == []  # an empty axis: nothing to run
