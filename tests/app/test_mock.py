"""AppTest: a whole mock attempt with an injected clock (no waiting 45 minutes)."""

from __future__ import annotations

import re

from datetime import datetime, timedelta, timezone

import pytest
from streamlit.testing.v1 import AppTest

from models.registry import ROOT

QUESTION = "An LLM inference API that batches requests across GPUs"


def _texts(at) -> str:
    return "\n".join(m.value for m in at.markdown) + "\n".join(c.value for c in at.caption)


def _start(t0) -> tuple[AppTest, str]:
    at = AppTest.from_file(str(ROOT / "pages" / "mock.py"), default_timeout=30)
    at.session_state["_clock_now"] = t0
    at.run()
    assert not at.exception
    at.selectbox(key="mock.question").select(QUESTION)
    at.radio(key="mock.scenario").set_value("The seed scenario")
    at.button(key="FormSubmitter:mock.start-Start the clock").click().run()
    assert not at.exception, [e.value for e in at.exception]
    attempt_id = at.query_params["attempt"]
    attempt_id = attempt_id[0] if isinstance(attempt_id, list) else attempt_id
    return at, attempt_id


def _time_left_ms(at) -> int:
    """The browser counts down from the milliseconds the server put into the countdown page."""
    frames = [e.proto.srcdoc for e in at.get("iframe") if "Time left" in e.proto.srcdoc]
    assert len(frames) == 1, "one countdown on the page"
    return int(re.search(r"Date\.now\(\) \+ (\d+);", frames[0]).group(1))


def _answer(at, attempt_id, key, text):
    at.text_input(key=f"mock.{attempt_id}.{key}.typed").input(text)
    at.button(key=f"FormSubmitter:mock.{attempt_id}.{key}.form-Save").click().run()
    assert not at.exception, [e.value for e in at.exception]


def test_full_attempt_phases_lock_and_late_answer_refused():
    from ui.session_store import _opened

    t0 = datetime.now(timezone.utc).replace(microsecond=0)
    at, attempt_id = _start(t0)
    store = _opened()[0]
    text = _texts(at)
    assert _time_left_ms(at) == 45 * 60 * 1000
    assert "▶ Numbers" in text

    # numbers phase: one drill
    _answer(at, attempt_id, "per_gpu_rps_full", "250 req/s")
    assert "Saved at" in _texts(at)

    # six minutes in, the plan has moved to Shape and the candidate is overrunning Numbers
    at.session_state["_clock_now"] = t0 + timedelta(minutes=6)
    at.run()
    assert "▶ Shape" in _texts(at)
    assert any("over its plan" in w.value for w in at.warning)
    at.button(key="mock.next_phase").click().run()  # -> shape
    at.button(key="mock.next_phase").click().run()  # -> arithmetic
    assert not at.exception
    _answer(at, attempt_id, "gpus_floor", "8 GPUs")
    _answer(at, attempt_id, "gpus_at_fill", "~20")  # 16 is right: 25% off, no marks

    # one second before the deadline the inputs are still open
    at.session_state["_clock_now"] = t0 + timedelta(minutes=44, seconds=59)
    at.run()
    assert _time_left_ms(at) == 1000
    assert not at.text_input(key=f"mock.{attempt_id}.gpus_at_target_util.typed").disabled

    # a late answer: typed in the open page, submitted after the deadline
    at.session_state["_clock_now"] = t0 + timedelta(minutes=45, seconds=2)
    at.text_input(key=f"mock.{attempt_id}.gpus_at_target_util.typed").input("10")
    at.button(key=f"FormSubmitter:mock.{attempt_id}.gpus_at_target_util.form-Save").click().run()
    assert not at.exception
    latest = store.latest_answers(attempt_id)
    assert "gpus_at_target_util" not in latest, "an answer after the deadline was saved"
    assert set(latest) == {"per_gpu_rps_full", "gpus_floor", "gpus_at_fill"}

    # the page is now the review: score = (1 + 1 + 0) / 9 drills
    row = store.get_attempt(attempt_id)
    assert row["finished_at"] is not None
    assert row["score"] == pytest.approx(2 / 9)
    assert at.metric[0].value == "22%"
    review = _texts(at)
    assert "ceil(2,000 req/s / 125 requests/s) = 16 GPUs" in "\n".join(c.value for c in at.code)  # worked step of the miss
    assert "`~20`" in review
    # the server refuses a late answer even without the page
    from store import AttemptClosedError

    with pytest.raises(AttemptClosedError):
        store.record_answer(attempt_id, "gpus_at_target_util", "10", 10, "1", 10, "1", 1.0,
                            now=t0 + timedelta(minutes=46))


def test_bad_attempt_link_is_a_message_not_a_traceback():
    at = AppTest.from_file(str(ROOT / "pages" / "mock.py"), default_timeout=30)
    at.query_params["attempt"] = "<script>alert(1)</script>"
    at.run()
    assert not at.exception
    assert any("not valid" in w.value for w in at.warning)
    at = AppTest.from_file(str(ROOT / "pages" / "mock.py"), default_timeout=30)
    at.query_params["attempt"] = "0" * 32
    at.run()
    assert any("no open round at this link" in w.value for w in at.warning)


def test_progress_page_shows_study_and_mock_answers():
    t0 = datetime.now(timezone.utc)
    at, attempt_id = _start(t0)
    _answer(at, attempt_id, "per_gpu_rps_full", "100")
    prog = AppTest.from_file(str(ROOT / "pages" / "progress.py"), default_timeout=30).run()
    assert not prog.exception, [e.value for e in prog.exception]
    assert any(m.label == "Answers" for m in prog.metric)
    links = [pl.proto for pl in prog.get("page_link")]
    # the drill is named as its page asks it, and its link opens that drill on its page
    # the seed scenario's numbers in the question: 50 inputs a call, 200 ms a call
    drill = next(l for l in links if l.label.startswith("One call takes up to 50 inputs and always lasts 200 ms."))
    assert "per_gpu_rps_full" not in drill.label and drill.label.endswith("(requests/s)")
    assert drill.page == "batched-inference-api" and "drill=per_gpu_rps_full" in drill.query_string


def test_a_drawn_scenario_can_be_saved_as_a_preset_and_opened_on_the_page():
    from ui.session_store import _opened

    t0 = datetime.now(timezone.utc)
    at, attempt_id = _start(t0)
    at.button(key="mock.finish").click().run()
    at.button(key="mock.finish_confirm").click().run()  # finishing asks for a second click
    at.text_input(key="mock.preset_name").input("From my mock")
    at.button(key="FormSubmitter:mock.save_preset-Save preset").click().run()
    assert not at.exception
    assert any("★ From my mock" in s.value for s in at.success)
    page = AppTest.from_file(str(ROOT / "pages" / "serving" / "batched_inference_api.py"), default_timeout=30).run()
    assert "★ From my mock" in page.selectbox(key="preset").options
    store = _opened()[0]
    assert store.presets("me", "batched-inference-api")[0]["params"] == store.get_attempt(attempt_id)["params"]
