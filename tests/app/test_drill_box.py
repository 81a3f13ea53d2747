"""AppTest: the drill boxes read a bare number in the asked unit, and a typo never gives the answer away.

continuous-batching's seed scenario, worked by hand: 4 H100s x 80 GB x 90% usable = 288 GB;
Llama-3-70B's 70.55 B parameters (its matrices: 80 x (2 x 8192² + 2 x 8192 x 1024 + 3 x 8192 x 28672)
+ 2 x 128256 x 8192) x 2 B = 141.1 GB of weights; 288 - 141.1 = 146.9 GB for KV.
"""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from streamlit.testing.v1 import AppTest

from models.registry import QUESTIONS, ROOT
from tests.helpers import app_page, markdown

SLUG = "continuous-batching"
BOX = f"{SLUG}.drill.kv_budget_bytes"
CHECK = f"FormSubmitter:{BOX}.form-Check"
REVEAL = f"FormSubmitter:{BOX}.form-Reveal"
KV_BUDGET_GB = 4 * 80 * 0.9 - 2 * (80 * (2 * 8192**2 + 2 * 8192 * 1024 + 3 * 8192 * 28672) + 2 * 128256 * 8192) / 1e9  # 146.9


def _check(at, typed):
    at.text_input(key=f"{BOX}.typed").input(typed)
    at.button(key=CHECK).click().run()
    assert not at.exception, [e.value for e in at.exception]


def test_the_box_names_the_unit_and_reads_a_bare_number_in_it():
    at = app_page(SLUG).run()
    assert at.text_input(key=f"{BOX}.typed").label == "Your answer, in GB"
    assert "How much is left for KV? (GB)" in markdown(at)
    _check(at, f"{KV_BUDGET_GB:.1f}")
    assert any("Full marks" in s.value for s in at.success)
    assert "Answer: **146.9 GB**" in markdown(at)


def test_the_same_number_with_its_unit_also_scores():
    at = app_page(SLUG).run()
    _check(at, "146,800 MB")
    assert any("Full marks" in s.value for s in at.success)


@pytest.mark.parametrize(("typed", "says"), [("lots", "Could not read a number"), ("320 ms", "a time")])
def test_an_unreadable_answer_is_a_message_and_another_try(typed, says):
    at = app_page(SLUG).run()
    _check(at, typed)
    assert any(says in w.value for w in at.warning), [w.value for w in at.warning]
    assert "Answer: **" not in markdown(at), "a typo gave the answer away"
    assert not at.success and not at.error
    # the next, readable try is scored as usual
    _check(at, "146.8")
    assert any("Full marks" in s.value for s in at.success)


def test_reveal_shows_the_answer_in_the_asked_unit():
    at = app_page(SLUG).run()
    at.button(key=REVEAL).click().run()
    assert "Answer: **146.9 GB**" in markdown(at)


def test_a_unit_slip_is_named_in_the_learners_words():
    at = app_page(SLUG).run()
    _check(at, "146.89 MB")
    (error,) = [e.value.replace("\\", "") for e in at.error]  # the message is Markdown-escaped
    assert "a factor of 1,000" in error and "Did you mean 146.9 GB?" in error


def test_the_mock_reads_the_bare_number_and_reviews_in_the_asked_unit():
    at = AppTest.from_file(str(ROOT / "pages" / "mock.py"), default_timeout=30)
    at.session_state["_clock_now"] = datetime.now(timezone.utc).replace(microsecond=0)
    at.run()
    at.selectbox(key="mock.question").select(QUESTIONS[SLUG].title)
    at.radio(key="mock.scenario").set_value("The seed scenario")
    at.button(key="FormSubmitter:mock.start-Start the clock").click().run()
    attempt_id = at.query_params["attempt"]
    attempt_id = attempt_id[0] if isinstance(attempt_id, list) else attempt_id
    box = f"mock.{attempt_id}.kv_budget_bytes"
    assert at.text_input(key=f"{box}.typed").label == "Your answer, in GB"
    at.text_input(key=f"{box}.typed").input("oops")
    at.button(key=f"FormSubmitter:{box}.form-Save").click().run()
    assert any("Could not read" in w.value for w in at.warning)
    at.text_input(key=f"{box}.typed").input("146.8")
    at.button(key=f"FormSubmitter:{box}.form-Save").click().run()
    at.button(key="mock.finish").click().run()
    at.button(key="mock.finish_confirm").click().run()
    assert not at.exception, [e.value for e in at.exception]
    review = markdown(at)
    assert "Your answer: `146.8` · reference **146.9 GB** · score **1**" in review


def test_a_link_to_a_drill_opens_it_at_the_top_and_only_there():
    at = AppTest.from_file(str(QUESTIONS[SLUG].page_path), default_timeout=30)
    at.query_params["drill"] = "kv_budget_bytes"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    texts = [m.value for m in at.markdown]
    came_for = texts.index("**The drill you came for** · Numbers")
    intro = next(i for i, t in enumerate(texts) if t.startswith("The question: design the batching system"))
    assert came_for < intro, "the drill opens above the page's prose"
    assert sum("How much is left for KV? (GB)" in t for t in texts) == 1, "the drill is drawn once, at the top"
    _check(at, "146.8")
    assert any("Full marks" in s.value for s in at.success)


def test_a_link_to_an_unknown_drill_is_announced():
    at = AppTest.from_file(str(QUESTIONS[SLUG].page_path), default_timeout=30)
    at.query_params["drill"] = "no_such_drill"
    at.run()
    assert not at.exception
    assert any("drill=no_such_drill" in i.value and "no drill by that name" in i.value for i in at.info)


def test_the_focused_drills_answer_card_waits_for_the_drill():
    at = AppTest.from_file(str(QUESTIONS[SLUG].page_path), default_timeout=30)
    at.query_params["drill"] = "kv_budget_bytes"
    at.run()
    card = next(m for m in at.metric if m.label == "KV budget per replica")
    assert card.value == "?"
    hook = next(m.value for m in at.markdown if m.value.startswith("*") and "KV room" in m.value)
    assert "**?** of KV room" in hook and "146.9" not in hook
    _check(at, "146.8")
    card = next(m for m in at.metric if m.label == "KV budget per replica")
    assert card.value == "146.9 GB"
