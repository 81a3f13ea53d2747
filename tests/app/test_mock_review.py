"""AppTest: the review of a finished round, seeded straight into the store, read as the learner
reads it. Every expected value is worked by hand from batched-inference-api's seed scenario:
2,000 req/s, up to 50 inputs a call, 200 ms a call, calls half full, GPUs at most 80% busy.

  one GPU, full calls      50 / 0.2 s            = 250 req/s
  the floor                2,000 / 250           = 8 GPUs
  at the fill              2,000 / (25 / 0.2 s)  = 16 GPUs
  with 80% headroom        2,000 / (250 x 0.8)   = 10 GPUs
  one full batch arrives   50 / 2,000 req/s      = 25 ms
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

from streamlit.testing.v1 import AppTest

from models.registry import QUESTIONS, ROOT
from tests.helpers import markdown, metric
from ui.mock_common import ASKED_PREFIX, DEPTH_NOTE, DOCUMENT_NOTE, OPENED_PREFIX

Q = QUESTIONS["batched-inference-api"]
T0 = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(hours=1)

DOCUMENT = """## Numbers
One GPU at full batches serves 250 req/s.

## Shape
Gateway, queue, one dispatcher, GPU workers.

## Arithmetic
The floor is 8 GPUs.
Calls half full: at the batch fill we need 20 GPUs.
"""


def _plain(text: str) -> str:
    """Markdown source as read: escapes and emphasis out."""
    return re.sub(r"\\(.)", r"\1", text).replace("**", "")


def _seed(store, *, mode: str = "full", document: str | None = DOCUMENT, phase_notes: dict | None = None) -> str:
    at = lambda minutes: T0 + timedelta(minutes=minutes)  # noqa: E731
    round_min = {"full": 45, "numbers": 5, "depth": 16}[mode]
    attempt_id = store.start_attempt("me", Q.slug, "mock", Q.Params().model_dump(mode="json"), seed=7,
                                     deadline=at(round_min), now=at(0),
                                     settings={"instant_feedback": False, "round_min": round_min, "mode": mode})
    phases = {"full": ["numbers", "shape", "arithmetic", "depth", "failure_modes"], "numbers": ["numbers"],
              "depth": ["depth"]}[mode]
    for i, phase in enumerate(phases):  # numbers 0-4 min, shape 4-10, arithmetic 10-20, ...
        store.mark_phase(attempt_id, phase, now=at([0, 4, 10, 20, 36][i]))

    def answer(key, typed, score, minute):
        step = Q.solve(Q.Params())[key]
        store.record_answer(attempt_id, key, typed, None, None, float(step.value), step.unit, score, now=at(minute))

    if mode != "depth":
        answer("per_gpu_rps_full", "250 req/s", 1.0, 1)
    if mode == "full":
        answer("batch_fill_time_s", "25 s", 0.0, 5)   # 25 ms meant
        answer("gpus_floor", "8000", 0.0, 11)         # 8 meant
        answer("gpus_at_fill", "20", 0.0, 12)         # 16 is right
    if document is not None:
        store.save_note(attempt_id, DOCUMENT_NOTE, document, now=at(min(13, round_min - 1)))
    for phase, text in (phase_notes or {}).items():
        store.save_note(attempt_id, phase, text, now=at(2))
    if mode != "depth":
        store.save_note(attempt_id, ASKED_PREFIX + "arrival_rps", "Is that peak or average traffic?", now=at(0.5))
    if mode == "full":
        # asked at minute 12, after the numbers phase ended at minute 4
        store.save_note(attempt_id, ASKED_PREFIX + "call_time_ms", "How long is the call time?", now=at(12))
        store.save_note(attempt_id, OPENED_PREFIX + "batched-inference-api", "batched-inference-api", now=at(15))
    if mode in ("full", "depth"):
        store.save_note(attempt_id, DEPTH_NOTE, "A GPU fails mid-call", now=at(1 if mode == "depth" else 21))
    store.finish_attempt(attempt_id, None, now=at(40 if mode == "full" else round_min))
    return attempt_id


def _review(attempt_id: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages" / "mock.py"), default_timeout=60)
    at.query_params["attempt"] = attempt_id
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _findings(at) -> dict[str, tuple[str, str]]:
    """The 'what the document states' table: figure -> (icon, what the document said)."""
    table = next(m.value for m in at.markdown if m.value.startswith("| | Figure | Reference | Your document |"))
    out = {}
    for line in table.splitlines()[2:]:
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        out[_plain(cells[1])] = (cells[0], _plain(cells[3]).replace("`", "").strip("*"))
    return out


def test_every_drill_says_why_it_scored_what_it_did(store):
    at = _review(_seed(store))
    text = _plain(markdown(at))
    assert metric(at, "Score") == "11%"  # 1 of 9 drills
    assert metric(at, "Drills answered") == "4 of 9"
    # 8,000 for 8 GPUs is 1,000 times too many; 25 s for 25 ms is the right number in the wrong unit
    assert "Why: Off by a factor of 1,000 (too high)." in text
    assert "Off by a factor of 1,000 (too high). Did you mean 25 ms?" in text
    assert "Why: Off by 25% (too high)." in text  # 20 for 16
    assert "Why: Correct (within 2%)." in text
    assert text.count("Why: Not answered.") == 5  # 9 drills, 4 answered
    assert "reference 25 ms" in text and "reference 8 GPUs" in text
    codes = "\n".join(c.value for c in at.code)
    assert "ceil(2,000 req/s / 250 requests/s) = 8 GPUs" in codes  # the worked step of a miss


def test_the_document_what_was_asked_and_the_pages_opened(store):
    at = _review(_seed(store))
    assert DOCUMENT.rstrip("\n") in [c.value.rstrip("\n") for c in at.code]
    text = _plain(markdown(at))
    assert "00:30 · Is that peak or average traffic? → Arrival rate: 2,000 req/s." in text
    assert "12:00 · How long is the call time? → Call time: 200 ms." in text
    assert "Depth area chosen: A GPU fails mid-call" in text
    assert "Opened during the round: An LLM inference API that batches requests across GPUs" in text


def test_what_the_document_states_right_wrong_and_missing(store):
    at = _review(_seed(store))
    found = _findings(at)
    assert found["Per GPU, full batches"][0] == ":material/check_circle:"  # 250 req/s
    assert found["Floor (100% busy)"][0] == ":material/check_circle:"  # 8 GPUs
    icon, said = found["At the batch fill"]
    assert icon == ":material/cancel:" and said.startswith("20 GPUs"), said  # 16 is right
    assert found["Full batches + headroom"] == (":material/remove:", "not stated")  # 10 GPUs
    assert found["p99 latency, queueing included"][0] == ":material/remove:"


def test_important_givens_never_asked_and_asked_late(store):
    at = _review(_seed(store))
    text = _plain(markdown(at))
    # all seven givens feed a key figure; two were asked, one of them after minute 4
    never = re.findall(r"- Never asked: (.+)", text)
    assert len(never) == 5 and "What is the max batch per call?" in never
    assert not any("arrival rate" in n for n in never) and not any("call time" in n for n in never)
    assert re.findall(r"- Asked after the numbers phase: (.+)", text) == ["How long is the call time?"]


def test_the_reference_design_boxes_failure_modes_and_probe_answers(store):
    at = _review(_seed(store))
    text = _plain(markdown(at))
    assert "The shape: Gateway · Admission queue · Dispatcher (the batcher) · GPU workers · Demultiplexer" in text
    assert "Failure modes the page names: Sizing at the floor · A short timeout at high traffic · " in text
    assert text.count("Retry storms") >= 2  # named, and probed
    probes = [e.label for e in at.expander]
    # the depth probes follow the area chosen, the failure modes each get one
    assert any(label.startswith("Depth · A GPU fails mid-call") for label in probes), probes
    assert not any(label.startswith("Depth · Idempotency keys") for label in probes)
    assert any(label.startswith("Failure modes · Retry storms") for label in probes)
    # the key figures with their values at the scenario
    assert "Full batches + headroom: 10 GPUs" in text


def test_export_carries_the_same_review(store, monkeypatch):
    # the download's bytes sit behind a media URL in AppTest: catch the Markdown as it is made
    from ui import mock_review

    made = []
    real = mock_review.review_markdown
    monkeypatch.setattr(mock_review, "review_markdown", lambda *a, **k: made.append(real(*a, **k)) or made[-1])
    _review(_seed(store))
    md = made[-1]
    assert "- Your answer: 8000\n- Reference: 8 GPUs\n- Score: 0\n- Why: Off by a factor of 1,000 (too high).\n" in md
    assert "## Your document" in md and "The floor is 8 GPUs." in md
    assert "| At the batch fill | 16 GPUs | 20 GPUs" in md
    assert "- Never asked: What is the max batch per call?" in md
    assert "- 12:00 · How long is the call time? → Call time: **200 ms**." in md


def test_an_old_attempt_shows_its_phase_notes_and_reads_them(store):
    notes = {"numbers": "One GPU at full batches serves 250 req/s.", "arithmetic": "The floor is 8 GPUs."}
    at = _review(_seed(store, document=None, phase_notes=notes))
    text = _plain(markdown(at))
    assert "Notes: Numbers" in text and "Notes: Arithmetic" in text
    assert notes["arithmetic"] in [c.value.rstrip("\n") for c in at.code]
    found = _findings(at)
    assert found["Floor (100% busy)"][0] == ":material/check_circle:"


def test_a_numbers_only_attempt_shows_what_applies(store):
    at = _review(_seed(store, mode="numbers", document="## Numbers\nOne GPU at full batches serves 250 req/s.\n"))
    text = _plain(markdown(at))
    assert metric(at, "Score") == "100%" and metric(at, "Drills answered") == "1 of 1"
    assert "What the reference design has" not in [s.value for s in at.subheader]
    found = _findings(at)
    assert list(found) == ["One GPU, every call full"]  # the numbers drill only, labelled as its step
    assert "- Asked after the numbers phase" not in text  # the numbers phase is the whole attempt
    assert len(re.findall(r"- Never asked: ", text)) == 6


def test_a_depth_attempt_shows_the_chosen_area_probes(store):
    at = _review(_seed(store, mode="depth", document="## Depth\nRe-queue at the head.\n"))
    text = _plain(markdown(at))
    assert metric(at, "Drills answered") == "0 of 2"  # the depth drills
    assert "Never asked" not in text and "What the document states" not in [s.value for s in at.subheader]
    labels = [e.label for e in at.expander]
    assert any(label.startswith("Depth · A GPU fails mid-call") for label in labels)
    assert not any(label.startswith("Failure modes") for label in labels)


def test_retry_starts_the_same_scenario_in_the_same_mode(store):
    attempt_id = _seed(store, mode="numbers", document=None)
    at = _review(attempt_id)
    at.button(key="mock.retry").click().run()
    assert not at.exception, [e.value for e in at.exception]
    new_id = at.query_params["attempt"]
    new_id = new_id[0] if isinstance(new_id, list) else new_id
    old, new = store.get_attempt(attempt_id), store.get_attempt(new_id)
    assert new_id != attempt_id and new["finished_at"] is None
    assert new["params"] == old["params"] and new["settings"]["mode"] == "numbers"


def test_every_question_builds_its_review(store):
    """The review's parts come from each page's own sections: every written question, at its seed
    scenario and at a drawn one, builds a review and an export (no page's prose breaks it)."""
    from models.mock import draw_scenario
    from models.mock_review import drill_rows, review_markdown
    from models.mock_script import clarifiers
    from models.registry import written
    from ui.mock_common import load_attempt
    from ui.mock_review import build_extras
    from ui.prose import render

    problems = []
    for q in written():
        for params in (q.Params(), draw_scenario(q.Params, 3, solve=q.solve)):
            attempt_id = store.start_attempt("me", q.slug, "mock", params.model_dump(mode="json"), seed=3,
                                             deadline=T0 + timedelta(minutes=45), now=T0,
                                             settings={"round_min": 45, "mode": "full"})
            store.mark_phase(attempt_id, "numbers", now=T0)
            store.save_note(attempt_id, DOCUMENT_NOTE, "## Numbers\n8 GPUs, 2 ms, 14 MW\n", now=T0)
            store.finish_attempt(attempt_id, 0.0, now=T0 + timedelta(minutes=1))
            attempt, problem = load_attempt(store, attempt_id, "me")
            assert problem is None, problem
            x = build_extras(store, attempt, "full", attempt.drills)
            rows = drill_rows(attempt.drills, attempt.derivation, {},
                              lambda d: render(d.question, attempt.derivation, attempt.params))
            md = review_markdown(q.title, [], 0.0, [], rows, [], x)
            if not x.findings or not x.key_figures or not (x.shape or x.shape_boxes) or "{{" in md:
                problems.append(q.slug)
            # nothing was asked: every important given is listed as never asked
            if len(x.never_asked) != sum(c.important for c in clarifiers(q)):
                problems.append(f"{q.slug}: never asked")
    assert not problems, problems
