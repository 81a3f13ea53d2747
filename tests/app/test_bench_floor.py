"""bench/browser.py --floor measures each question page beside a page of its size where only the
card changes: that yardstick must be the size it claims, and only its card may move."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qsl

from streamlit.testing.v1 import AppTest

from bench.browser import floor_query

YARDSTICK = Path(__file__).resolve().parents[2] / "bench" / "trivial_page.py"


def _sized(query: str) -> AppTest:
    at = AppTest.from_file(str(YARDSTICK), default_timeout=60)
    for k, v in parse_qsl(query.lstrip("?")):
        at.query_params[k] = v
    return at.run()


def test_the_floor_page_has_the_question_page_s_size():
    query = floor_query("batched-inference-api")
    size = {k: int(v) for k, v in parse_qsl(query.lstrip("?"))}
    assert size["forms"] > 0 and size["charts"] > 0 and size["widgets"] > 0
    at = _sized(query)
    assert not at.exception
    assert len(at.get("form")) == size["forms"]
    assert len(at.get("plotly_chart")) == size["charts"]
    assert len(at.slider) == size["widgets"] + 1  # its knobs and the moved slider
    prose = [m.value for m in at.markdown if not m.value.startswith("**Try first.**")]
    assert len(prose) == size["markdown"]
    # cut to whole blocks, and Markdown drops a block's trailing space: up to two characters a block
    assert abs(sum(len(t) for t in prose) - size["chars"]) <= 2 * size["markdown"]


def test_only_the_card_moves_on_the_floor_page():
    at = _sized("?widgets=3&forms=2&markdown=4&chars=2000&charts=2")
    before = [(m.value, c.proto.spec) for m, c in zip(at.markdown, at.get("plotly_chart"))]
    assert at.metric[0].value == "100"
    at.slider(key="trivial-value").set_value(51).run()
    assert at.metric[0].value == "102"
    assert [(m.value, c.proto.spec) for m, c in zip(at.markdown, at.get("plotly_chart"))] == before
    assert len(at.metric) == 1


def test_with_no_size_it_is_the_trivial_page():
    at = _sized("")
    assert len(at.slider) == 1 and len(at.metric) == 1
    assert not at.markdown and not at.get("plotly_chart") and not at.get("form")
