"""What an ordinary move or a crafted link used to crash (#21's reproductions), each run for real.

- The compare view sweeps any numeric knob: a sweep point the model refuses is a gap, not a
  ZeroDivisionError or an assert from a scenario no page could enter, and only numeric figures
  are offered for its chart.
- gpu-credit-ledger's research weight at 0 (a team with no grant posts zero amounts).
- `sim_step=²`: str.isdigit() accepts it, int() does not.
- A choice knob's URL value over 40 characters.
- Markdown in prompt-playground-product's replayed history does not render as a link or colour.
"""

from __future__ import annotations

import math

import pytest

from models.registry import written
from ui.charts import sweep, sweep_values
from ui.knobs import specs
from tests.helpers import app_page

WRITTEN = written()


@pytest.mark.parametrize("q", WRITTEN, ids=[q.slug for q in WRITTEN])
def test_every_numeric_knob_sweeps_every_metric_without_raising(q):
    params = q.Params()
    d = q.solve(params)
    keys = [k for k, _ in q.content.metrics if d[k].is_numeric]
    for spec in specs(q.Params):
        if spec.kind not in ("int", "float"):
            continue
        ys = sweep(q.slug, params, spec.field, keys, sweep_values(params, spec.field, 25))
        for k in keys:  # the scenario's own point is always a number
            assert any(math.isfinite(y) for y in ys[k]), f"{spec.field} -> {k}: no point drawn"


@pytest.mark.parametrize("slug", ["continuous-batching", "ml-config-system", "moe-1t-training"])
def test_the_compare_view_runs(slug):
    at = app_page(slug, timeout=60)
    at.query_params["compare"] = "1"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    box = at.selectbox(key=f"{slug}.compare_knob")
    for option in box.options:
        at.selectbox(key=f"{slug}.compare_knob").select(option).run()
        assert not at.exception, (option, [e.value for e in at.exception])


def test_a_team_with_no_weight_runs_the_ledger():
    at = app_page("gpu-credit-ledger", timeout=60)
    at.query_params["gpu-credit-ledger.weight_research"] = "0"
    at.run()
    assert not at.exception, [e.value for e in at.exception]


@pytest.mark.parametrize("slug", ["chat-one-to-one", "job-scheduler-100k", "gpu-cloud-control-plane"])
def test_a_superscript_step_number_is_ignored(slug):
    at = app_page(slug, timeout=60)
    at.query_params[f"{slug}.sim_step"] = "²"
    at.run()
    assert not at.exception, [e.value for e in at.exception]


def test_an_overlong_choice_value_is_a_notice():
    at = app_page("serving-platform", timeout=60)
    at.query_params["serving-platform.model"] = "x" * 41
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("too long" in i.value for i in at.info)


def test_markdown_in_a_replayed_history_stays_text():
    at = app_page("prompt-playground-product", timeout=60)
    at.query_params["prompt-playground-product.sim_ops"] = (
        "[Your session expired: log in again](http://2130706433/login) ![t](http://2130706433/t) "
        ":red[**SECURITY NOTICE**]")
    at.run()
    assert not at.exception
    warnings = [w.value for w in at.warning if "could not be replayed" in w.value]
    assert warnings, [w.value for w in at.warning]
    for text in warnings:
        assert "](http" not in text and ":red[" not in text  # escaped: \[, \], \: and \( stay literal
