"""AppTest: the round as the real round (issue 23): the opening line, clarifying questions that
reveal the givens, one shared document, probes phase by phase, the depth choice, a confirmed
finish, the pages opened during the round, and the practice modes. The clock is injected."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

import pytest
from streamlit.testing.v1 import AppTest

from models.mock_script import clarifiers, depth_areas, opening, probes
from models.registry import QUESTIONS, ROOT
from ui.mock_common import ASKED_PREFIX, DEPTH_NOTE, DOCUMENT_NOTE, OPEN_ATTEMPT, OPENED_PREFIX

TITLE = "An LLM inference API that batches requests across GPUs"
SLUG = "batched-inference-api"
Q = QUESTIONS[SLUG]


def _texts(at) -> str:
    return "\n".join([m.value for m in at.markdown] + [c.value for c in at.caption] + [i.value for i in at.info])


def _ok(at) -> None:
    assert not at.exception, [e.value for e in at.exception]


def _start(store, t0, mode: str = "full", slug_title: str = TITLE) -> tuple[AppTest, str]:
    at = AppTest.from_file(str(ROOT / "pages" / "mock.py"), default_timeout=30)
    at.session_state["_clock_now"] = t0
    at.run()
    _ok(at)
    at.selectbox(key="mock.question").select(slug_title)
    at.radio(key="mock.scenario").set_value("The seed scenario")
    at.radio(key="mock.mode").set_value(mode)
    at.button(key="FormSubmitter:mock.start-Start the clock").click().run()
    _ok(at)
    attempt_id = at.query_params["attempt"]
    return at, attempt_id[0] if isinstance(attempt_id, list) else attempt_id


def _reopen(attempt_id: str, t) -> AppTest:
    """The same round in a fresh session: what a refresh of the tab shows."""
    at = AppTest.from_file(str(ROOT / "pages" / "mock.py"), default_timeout=30)
    at.session_state["_clock_now"] = t
    at.query_params["attempt"] = attempt_id
    at.run()
    _ok(at)
    return at


def _time_left_ms(at) -> int:
    frames = [e.proto.srcdoc for e in at.get("iframe") if "Time left" in e.proto.srcdoc]
    assert len(frames) == 1, "one countdown on the page"
    return int(re.search(r"Date\.now\(\) \+ (\d+);", frames[0]).group(1))


def _drill_keys(at) -> set[str]:
    """The drills on screen, by their answer boxes (mock.<attempt>.<drill>.typed)."""
    return {w.key.split(".")[-2] for w in at.text_input
            if w.key and w.key.endswith(".typed") and ".clarify." not in w.key}


T0 = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)


def test_the_round_opens_with_the_question_and_no_givens(store):
    at, attempt_id = _start(store, T0)
    text = _texts(at)
    assert opening(Q).split()[0] in text
    assert "The interviewer:" in text
    # the seed's arrival rate (2,000 req/s) is a given: nothing states it until it is asked
    assert "2,000" not in text
    asks = [b for b in at.button if b.key and b.key.startswith(f"mock.{attempt_id}.clarify.ask.")]
    assert len(asks) == len(clarifiers(Q)) == 7  # seven givens on this page, none a simulation knob
    assert "noted in the review" in text


def test_simulation_knobs_are_not_clarifying_questions(store):
    at, attempt_id = _start(store, T0, slug_title=QUESTIONS["continuous-batching"].title)
    asks = {b.key.rsplit(".", 1)[-1] for b in at.button if b.key and ".clarify.ask." in b.key}
    # continuous-batching's simulation knobs, read off its Params by hand
    assert asks and not asks & {"stream_policy", "policy", "length_spread", "on_fraction", "slow_client_fraction"}
    assert "(simulation)" not in "\n".join(b.label for b in at.button)


def test_a_question_asked_reveals_its_given_and_a_refresh_keeps_it(store):
    at, attempt_id = _start(store, T0)
    by_key = {c.key: c for c in clarifiers(Q)}
    at.session_state["_clock_now"] = T0 + timedelta(minutes=1)
    at.button(key=f"mock.{attempt_id}.clarify.ask.arrival_rps").click().run()
    _ok(at)
    assert "2,000" in _texts(at)  # the seed scenario's arrival rate, 2000 req/s
    assert not any(b.key == f"mock.{attempt_id}.clarify.ask.arrival_rps" for b in at.button)
    notes = store.latest_notes(attempt_id)
    assert notes[ASKED_PREFIX + "arrival_rps"]["saved_at"] == T0 + timedelta(minutes=1)
    assert notes[ASKED_PREFIX + "arrival_rps"]["text"] == by_key["arrival_rps"].ask

    # typed in the candidate's words: the call time (200 ms at the seed)
    at.session_state["_clock_now"] = T0 + timedelta(minutes=2)
    at.text_input(key=f"mock.{attempt_id}.clarify.typed").input("Roughly what call time should I assume?")
    at.button(key=f"FormSubmitter:mock.{attempt_id}.clarify.form-Ask").click().run()
    _ok(at)
    notes = store.latest_notes(attempt_id)
    assert notes[ASKED_PREFIX + "call_time_ms"]["text"] == "Roughly what call time should I assume?"
    assert notes[ASKED_PREFIX + "call_time_ms"]["saved_at"] == T0 + timedelta(minutes=2)
    assert "200 ms" in _texts(at)

    # a question with no given: one line says so, nothing is revealed
    asked_before = {k for k in notes if k.startswith(ASKED_PREFIX)}
    at.text_input(key=f"mock.{attempt_id}.clarify.typed").input("What is your favourite colour?")
    at.button(key=f"FormSubmitter:mock.{attempt_id}.clarify.form-Ask").click().run()
    _ok(at)
    assert "no number for that" in _texts(at)
    assert {k for k in store.latest_notes(attempt_id) if k.startswith(ASKED_PREFIX)} == asked_before

    again = _reopen(attempt_id, T0 + timedelta(minutes=3))
    text = _texts(again)
    assert "2,000" in text and "200 ms" in text
    left = {b.key.rsplit(".", 1)[-1] for b in again.button if b.key and ".clarify.ask." in b.key}
    assert left == set(by_key) - {"arrival_rps", "call_time_ms"}


def test_the_document_has_the_phase_headings_saves_and_comes_back(store):
    at, attempt_id = _start(store, T0)
    box = at.text_area(key=f"mock.{attempt_id}.document")
    headings = re.findall(r"^## (.+)$", box.value, flags=re.M)
    assert headings == ["Numbers", "Shape", "Arithmetic", "Depth", "Failure modes"]
    assert not [w for w in at.text_area if w.key and ".notes." in w.key], "the per-phase notes boxes are gone"

    at.session_state["_clock_now"] = T0 + timedelta(minutes=4)
    doc = "## Numbers\nOne GPU: 50 inputs / 0.2 s = 250 req/s\n\n## Shape\ngateway, queue, batcher"
    box.input(doc).run()
    _ok(at)
    saved = store.latest_notes(attempt_id)[DOCUMENT_NOTE]
    assert saved["text"] == doc and saved["saved_at"] == T0 + timedelta(minutes=4)
    assert "Saved at 09:04:00 UTC" in _texts(at)

    at.text_area(key=f"mock.{attempt_id}.document").input(doc + "\x00").run()
    _ok(at)
    assert any("NUL" in w.value or "null" in w.value.lower() for w in at.warning)
    assert store.latest_notes(attempt_id)[DOCUMENT_NOTE]["text"] == doc

    again = _reopen(attempt_id, T0 + timedelta(minutes=5))
    assert again.text_area(key=f"mock.{attempt_id}.document").value == doc

    locked = _reopen(attempt_id, T0 + timedelta(minutes=44, seconds=59))
    assert not locked.text_area(key=f"mock.{attempt_id}.document").disabled


def test_probes_arrive_phase_by_phase_and_depth_follows_the_choice(store):
    at, attempt_id = _start(store, T0)
    areas = depth_areas(Q)
    assert len(areas) >= 2, "the page's Depth section has several bold-led areas"
    # the numbers phase asks its one drill (per_gpu_rps_full), nothing from later phases
    assert _drill_keys(at) == {"per_gpu_rps_full"}
    assert not at.get("expander") or all("Earlier" not in e.proto.label for e in at.get("expander"))

    at.selectbox(key=f"mock.{attempt_id}.depth").select(areas[0]).run()
    at.selectbox(key=f"mock.{attempt_id}.depth").select(areas[1]).run()  # changed its mind: free until depth
    _ok(at)
    assert store.latest_notes(attempt_id)[DEPTH_NOTE]["text"] == areas[1]
    at.run()
    assert at.selectbox(key=f"mock.{attempt_id}.depth").value == areas[1], "the box keeps the choice"

    at.button(key="mock.next_phase").click().run()  # -> shape
    assert _drill_keys(at) == {"per_gpu_rps_full", "batch_fill_time_s"}
    at.button(key="mock.next_phase").click().run()  # -> arithmetic
    assert {"gpus_floor", "gpus_at_fill", "gpus_at_target_util"} <= _drill_keys(at)
    assert "expected_batch_at_flush" not in _drill_keys(at)
    at.button(key="mock.next_phase").click().run()  # -> depth
    _ok(at)
    assert {"expected_batch_at_flush", "worst_batching_wait_s"} <= _drill_keys(at)
    chosen = {p.key for p in probes(Q, areas[1])["depth"] if p.kind == "words"}
    other = {p.key for p in probes(Q, areas[0])["depth"] if p.kind == "words"}
    assert chosen and chosen != other
    assert (chosen | other) & _probe_keys(at) == chosen
    # in the depth phase the choice is fixed, its probes asked: stated, no longer offered
    assert not [s for s in at.selectbox if s.key == f"mock.{attempt_id}.depth"]
    assert f"**Depth area:** {areas[1]}" in _texts(at).replace("\\", "")  # Markdown escapes out

    at.button(key="mock.next_phase").click().run()  # -> failure modes
    _ok(at)
    words = {p.key for p in probes(Q, areas[1])["failure_modes"] if p.kind == "words"}
    assert words and words <= _probe_keys(at)
    assert not any(b.key == "mock.next_phase" for b in at.button), "no phase after failure modes"


def _probe_keys(at) -> set[str]:
    """The words probes on screen, by their containers' keys (mockprobe-<key>)."""
    out = set()

    def walk(node):
        key = getattr(getattr(node, "proto", None), "id", "") or ""
        m = re.search(r"mockprobe-(.+)$", key)
        if m:
            out.add(m.group(1))
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(at._tree)
    return out


def test_finish_asks_for_confirmation(store):
    at, attempt_id = _start(store, T0)
    at.session_state["_clock_now"] = T0 + timedelta(minutes=10)
    at.button(key="mock.finish").click().run()
    _ok(at)
    assert store.get_attempt(attempt_id)["finished_at"] is None, "one click must not end the round"
    assert "Finish now?" in _texts(at) and "35 min is still on the clock" in _texts(at)
    at.button(key="mock.finish_cancel").click().run()
    assert "Finish now?" not in _texts(at)
    assert store.get_attempt(attempt_id)["finished_at"] is None
    at.button(key="mock.finish").click().run()
    at.button(key="mock.finish_confirm").click().run()
    _ok(at)
    assert store.get_attempt(attempt_id)["finished_at"] == T0 + timedelta(minutes=10)
    assert any(m.label == "Score" for m in at.metric)
    assert OPEN_ATTEMPT not in at.session_state


def test_a_study_page_opened_during_the_round_is_noted(store):
    at, attempt_id = _start(store, T0)
    open_round = at.session_state[OPEN_ATTEMPT]
    assert open_round["id"] == attempt_id and open_round["profile"] == "me"
    page_path = str(ROOT / "pages" / "serving" / "batched_inference_api.py")

    page = AppTest.from_file(page_path, default_timeout=30)
    page.session_state["_clock_now"] = T0 + timedelta(minutes=7)
    page.session_state[OPEN_ATTEMPT] = {**open_round, "noted": set()}
    page.run()
    _ok(page)
    note = store.latest_notes(attempt_id)[OPENED_PREFIX + SLUG]
    assert note["saved_at"] == T0 + timedelta(minutes=7)

    # after the deadline the page notes nothing and stops watching
    late = AppTest.from_file(page_path, default_timeout=30)
    late.session_state["_clock_now"] = T0 + timedelta(minutes=46)
    late.session_state[OPEN_ATTEMPT] = {**open_round, "noted": set()}
    late.run()
    _ok(late)
    assert store.latest_notes(attempt_id)[OPENED_PREFIX + SLUG]["saved_at"] == T0 + timedelta(minutes=7)
    assert OPEN_ATTEMPT not in late.session_state

    # no round open in the session: the page writes nothing
    calm = AppTest.from_file(page_path, default_timeout=30)
    calm.run()
    _ok(calm)
    assert len([k for k in store.latest_notes(attempt_id) if k.startswith(OPENED_PREFIX)]) == 1


def test_numbers_only_practice(store):
    at, attempt_id = _start(store, T0, mode="numbers")
    row = store.get_attempt(attempt_id)
    assert row["settings"]["mode"] == "numbers"
    assert row["deadline"] == T0 + timedelta(minutes=5)  # the numbers phase's 5 minutes of the plan
    assert _time_left_ms(at) == 5 * 60 * 1000
    assert _drill_keys(at) == {"per_gpu_rps_full"}
    assert not any(b.key == "mock.next_phase" for b in at.button)
    assert re.findall(r"^## (.+)$", at.text_area(key=f"mock.{attempt_id}.document").value, flags=re.M) == ["Numbers"]
    assert any(b.key and ".clarify.ask." in b.key for b in at.button)
    # 50 inputs every 0.2 s = 250 req/s: the one drill right is the whole score
    at.text_input(key=f"mock.{attempt_id}.per_gpu_rps_full.typed").input("250 req/s")
    at.button(key=f"FormSubmitter:mock.{attempt_id}.per_gpu_rps_full.form-Save").click().run()
    at.button(key="mock.finish").click().run()
    at.button(key="mock.finish_confirm").click().run()
    _ok(at)
    assert store.get_attempt(attempt_id)["score"] == pytest.approx(1.0)


def test_one_depth_area_practice(store):
    at, attempt_id = _start(store, T0, mode="depth")
    row = store.get_attempt(attempt_id)
    assert row["settings"]["mode"] == "depth"
    assert row["deadline"] == T0 + timedelta(minutes=16)
    assert "Pick the depth area" in _texts(at)
    assert _drill_keys(at) == set(), "no probe before the area is chosen"
    area = depth_areas(Q)[0]
    at.selectbox(key=f"mock.{attempt_id}.depth").select(area).run()
    _ok(at)
    assert _drill_keys(at) == {"expected_batch_at_flush", "worst_batching_wait_s"}  # the page's depth drills
    assert f"**Depth area:** {area}" in _texts(at).replace("\\", "")
    assert re.findall(r"^## (.+)$", at.text_area(key=f"mock.{attempt_id}.document").value, flags=re.M) == ["Depth"]


def test_an_attempt_without_a_mode_is_a_full_round(store):
    from models.mock import ROUND_MIN

    t0 = datetime.now(timezone.utc).replace(microsecond=0)
    attempt_id = store.start_attempt("me", SLUG, "mock", Q.Params().model_dump(mode="json"), seed=1,
                                     deadline=t0 + timedelta(minutes=ROUND_MIN),
                                     settings={"instant_feedback": False, "round_min": 45}, now=t0)
    at = _reopen(attempt_id, t0 + timedelta(seconds=30))
    assert at.button(key="mock.next_phase").label == "Move on to Shape"
    assert _time_left_ms(at) == (45 * 60 - 30) * 1000


@pytest.mark.parametrize("policy, asked", [("cut", True), ("block", False)])
def test_the_round_asks_only_drills_the_draw_can_answer(store, policy, asked):
    """continuous-batching's "how long until it is cut?" presumes the buffer policy "cut": with
    "block" no client is ever cut, so the round must not ask it (nor score it)."""
    cb = QUESTIONS["continuous-batching"]
    t0 = datetime.now(timezone.utc).replace(microsecond=0)
    params = cb.Params(stream_policy=policy).model_dump(mode="json")
    attempt_id = store.start_attempt("me", cb.slug, "mock", params, seed=1, deadline=t0 + timedelta(minutes=45),
                                     settings={"mode": "full", "round_min": 45}, now=t0)
    store.mark_phase(attempt_id, "failure_modes", now=t0)
    at = _reopen(attempt_id, t0 + timedelta(seconds=5))
    assert ("slow_client_grace_s" in _drill_keys(at)) is asked
    assert "blocked_tpot_s" in _drill_keys(at)  # the other failure-mode drill stays either way
    # the round scores what it asks: the page has 10 drills, one of them presumes "cut"
    from ui.mock_common import load_attempt

    attempt, _ = load_attempt(store, attempt_id)
    assert len(attempt.drills) == (10 if asked else 9)
