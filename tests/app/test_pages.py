"""AppTest: every page runs without an exception; moving a knob changes the metric and the prose."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from models.registry import ROOT, written
from tests.helpers import app_page, markdown, metric

WRITTEN = written()
TIMEOUT = 30


def test_home_lists_every_question_and_says_all_are_written():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT).run()
    assert not at.exception
    text = markdown(at)
    assert len(WRITTEN) == 38 and "**All 38 questions are here**" in text
    assert "coming" not in text
    assert "Distribute a 400 GB checkpoint" in text or any(
        "Distribute a 400 GB checkpoint" in str(e.proto) for e in at.get("page_link"))
    # search narrows the list
    at.text_input(key="home.search").input("checkpoint").run()
    assert "Seven boxes" not in markdown(at)


@pytest.mark.parametrize("q", WRITTEN, ids=[q.slug for q in WRITTEN])
def test_page_runs_clean(q):
    at = app_page(q, TIMEOUT).run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert len(at.metric) >= 3
    assert len(at.get("plotly_chart")) >= 1
    assert "{{" not in markdown(at), "an unrendered placeholder reached the page"


def test_batched_page_knob_moves_metric_and_prose():
    q = next(q for q in WRITTEN if q.slug == "batched-inference-api")
    at = app_page(q, TIMEOUT).run()
    assert metric(at, "Per GPU, full batches", prefix=True) == "250 requests/s"
    assert "**250 requests/s**" in markdown(at)
    at.slider(key="batched-inference-api.max_batch_inputs").set_value(100).run()
    assert not at.exception
    # 100 inputs / 0.2 s = 500 req/s, and the floor halves: 2,000 / 500 = 4
    assert metric(at, "Per GPU, full batches", prefix=True) == "500 requests/s"
    assert "**500 requests/s**" in markdown(at)
    assert "**4 GPUs**" in markdown(at)


def test_checkpoint_page_knob_moves_metric_and_prose():
    q = next(q for q in WRITTEN if q.slug == "checkpoint-distribution")
    at = app_page(q, TIMEOUT).run()
    assert "320 s" in markdown(at)
    at.select_slider(key="checkpoint-distribution.checkpoint_gb").set_value(800.0).run()
    assert not at.exception
    # 800 GB / 1.25 GB/s = 640 s
    assert "**640 s" in markdown(at)


def test_url_garbage_is_announced_not_hidden():
    q = next(q for q in WRITTEN if q.slug == "batched-inference-api")
    at = app_page(q, TIMEOUT)
    at.query_params["batched-inference-api.arrival_rps"] = "lots"
    at.query_params["batched-inference-api.max_batch_inputs"] = "5000"
    at.run()
    assert not at.exception
    notices = " ".join(i.value for i in at.info)
    assert "arrival_rps=lots" in notices
    assert "max_batch_inputs=5000" in notices
    # clamped to the knob's maximum of 512 inputs: 512 / 0.2 s = 2,560 req/s
    assert metric(at, "Per GPU, full batches", prefix=True) == "2,560 requests/s"


def test_drill_right_and_wrong_scores_and_shows_the_worked_step():
    q = next(q for q in WRITTEN if q.slug == "batched-inference-api")
    at = app_page(q, TIMEOUT).run()
    box = "batched-inference-api.drill.gpus_floor"
    at.text_input(key=f"{box}.typed").input("8 GPUs")
    at.button(key=f"FormSubmitter:{box}.form-Check").click().run()
    assert any("Full marks" in s.value for s in at.success)
    assert "ceil(2,000 req/s / 250 requests/s) = 8 GPUs" in markdown(at)
    at.text_input(key=f"{box}.typed").input("3")
    at.button(key=f"FormSubmitter:{box}.form-Check").click().run()
    assert any("No marks" in e.value for e in at.error)


def test_study_answers_are_recorded_in_the_store():
    from ui.session_store import _opened

    q = next(q for q in WRITTEN if q.slug == "batched-inference-api")
    at = app_page(q, TIMEOUT).run()
    store = _opened()[0]  # the process-wide store the page used
    before = store.answer_count()
    box = "batched-inference-api.drill.per_gpu_rps_full"
    at.text_input(key=f"{box}.typed").input("250 req/s")
    at.button(key=f"FormSubmitter:{box}.form-Check").click().run()
    assert not at.exception
    assert store.answer_count() == before + 1
    attempt_id = at.session_state["batched-inference-api._study_attempt.me"]
    (row,) = [a for a in store.answers(attempt_id) if a["typed"] == "250 req/s"]
    assert row["drill_key"] == "per_gpu_rps_full"
    assert row["score"] == 1.0
    assert row["reference_value"] == 250
    assert store.get_attempt(attempt_id)["mode"] == "study"


def test_unknown_url_parameter_is_announced():
    q = next(q for q in WRITTEN if q.slug == "batched-inference-api")
    at = app_page(q, TIMEOUT)
    at.query_params["gpus"] = "9000"
    at.query_params["batched-inference-api.no_such_knob"] = "1"
    at.run()
    assert not at.exception
    notices = " ".join(i.value for i in at.info)
    assert "Ignored `gpus`" in notices and "no_such_knob" in notices


@pytest.mark.parametrize("q", WRITTEN, ids=[q.slug for q in WRITTEN])
def test_garbage_for_every_knob_is_announced(q):
    """Every knob given a value it cannot take: one notice each, no traceback, a page that works."""
    from ui.knobs import specs

    at = app_page(q, TIMEOUT)
    knobs = specs(q.Params)
    for spec in knobs:
        at.query_params[spec.key(q.slug)] = "not-a-value" if spec.kind != "bool" else "maybe"
    at.query_params["present"] = "banana"
    at.query_params["compare"] = "x"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    notices = " ".join(i.value for i in at.info)
    for spec in knobs:
        assert spec.key(q.slug) in notices, spec.key(q.slug)
    assert "present=banana" in notices and "compare=x" in notices
    assert len(at.metric) >= 3


MARKUP = ("[Your session expired: log in again](http://2130706433/login) ![t](http://2130706433/t) "
          ":red[**SECURITY NOTICE**] <b onmouseover=alert(1)>x</b>")


def _unescaped_markup(text: str) -> bool:
    """The payload as Markdown would act on it: a link, an image or a colour directive not preceded
    by a backslash (escaped text keeps its characters but backslashes every one Markdown reads)."""
    import re

    text = re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", text, flags=re.S)  # a code span shows its text literally
    return bool(re.search(r"(?<!\\)\[Your session expired|(?<!\\)!\[t\]|(?<!\\):red\[|(?<!\\)<b ", text))


@pytest.mark.parametrize("q", WRITTEN, ids=[q.slug for q in WRITTEN])
def test_markup_in_every_url_parameter_is_shown_as_text(q):
    """Markdown, HTML and Streamlit's :color[] directive in every knob, the preset, the views and the
    profile: no traceback, and wherever the page quotes the text it quotes it inert."""
    from ui.knobs import specs

    at = app_page(q, TIMEOUT)
    for spec in specs(q.Params):
        at.query_params[spec.key(q.slug)] = MARKUP
    for name in ("preset", "present", "compare", "reveal", "drill", "sim_step", "sim_ops", "profile"):
        at.query_params[name] = MARKUP
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    shown = [e.value for kind in ("markdown", "info", "warning", "error", "caption", "success")
             for e in getattr(at, kind)]
    quoted = [t for t in shown if "session expired" in t]
    assert quoted, "the page should say what it ignored"
    assert not [t for t in quoted if _unescaped_markup(t)]

