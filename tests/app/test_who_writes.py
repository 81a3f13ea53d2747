"""Who may write where: a round's id is its secret (the CSV never shows it, a wrong one is refused
without saying whether the round exists), a study attempt is not a round, share links carry no
profile, a claimed profile opens only with its passphrase, and a NUL is refused at the box."""

from __future__ import annotations

import csv
import io
from datetime import datetime, timedelta, timezone

from streamlit.testing.v1 import AppTest

from models.registry import QUESTIONS, ROOT

SLUG = "batched-inference-api"


def _mock(profile: str, attempt: str | None = None, **state) -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages" / "mock.py"), default_timeout=30)
    at.session_state["profile"] = profile
    for k, v in state.items():
        at.session_state[k] = v
    if attempt:
        at.query_params["attempt"] = attempt
    return at.run()


def _round(store, profile="ann") -> str:
    params = QUESTIONS[SLUG].Params().model_dump(mode="json")
    return store.start_attempt(profile, SLUG, "mock", params, deadline=datetime.now(timezone.utc) + timedelta(minutes=45))


def _warnings(at) -> str:
    return " ".join(w.value for w in at.warning)


def test_another_profiles_round_a_made_up_id_and_a_study_attempt_get_one_refusal(store):
    theirs = _round(store)
    study = store.study_attempt("bob", SLUG, {})
    said = []
    for attempt in (theirs, "f" * 32, study):
        at = _mock("bob", attempt)
        assert not at.exception
        said.append(_warnings(at))
    assert said[0] == said[1] == said[2] and "no open round at this link" in said[0]
    assert store.latest_answers(theirs) == {}


def test_the_csv_numbers_attempts_and_never_shows_their_ids(store):
    a = _round(store)
    store.record_answer(a, "gpus_floor", "8", 8, "1", 8, "1", 1.0)
    from ui.progress_page import _csv

    rows = list(csv.reader(io.StringIO(_csv(store.profile_answers("ann")))))
    assert rows[0][2] == "attempt" and rows[1][2] == "1"
    assert a not in _csv(store.profile_answers("ann"))


def _link_with_a_profile_in_the_url():
    import streamlit as st

    from models.registry import QUESTIONS
    from ui.share import share_link

    st.query_params["profile"] = "instructor"  # the presenter's own tab carries it
    st.query_params["present"] = "1"
    q = QUESTIONS["batched-inference-api"]
    st.code(share_link(q.slug, q.Params(target_utilization=0.4)))


def test_a_share_link_never_carries_the_profile():
    at = AppTest.from_function(_link_with_a_profile_in_the_url, default_timeout=30).run()
    assert not at.exception
    link = at.code[0].value
    assert "present=1" in link and "target_utilization=40" in link
    assert "profile" not in link


def test_a_claimed_profile_opens_only_with_its_passphrase(store):
    a = _round(store)
    store.record_answer(a, "gpus_floor", "8", 8, "1", 8, "1", 1.0)
    store.claim_profile("ann", "correct horse battery")
    # someone else types "ann": Progress and the round stay shut, and nothing is written
    prog = AppTest.from_file(str(ROOT / "pages" / "progress.py"), default_timeout=30)
    prog.session_state["profile"] = "ann"
    prog.run()
    assert not prog.exception
    assert "is claimed" in _warnings(prog) and not [m for m in prog.metric if m.label == "Answers"]
    at = _mock("ann", a)
    assert "is claimed" in _warnings(at)
    # a wrong passphrase is refused; the right one opens the profile for this session
    prog.text_input(key="profile.passphrase.ann").input("guess guess").run()
    assert "does not open this profile" in _warnings(prog)
    prog.text_input(key="profile.passphrase.ann").input("correct horse battery").run()
    assert not prog.exception
    assert [m.value for m in prog.metric if m.label == "Answers"] == ["1"]


def test_claiming_a_profile_from_the_box(store):
    prog = AppTest.from_file(str(ROOT / "pages" / "progress.py"), default_timeout=30)
    prog.session_state["profile"] = "cleo"
    prog.run()
    prog.text_input(key="profile.passphrase.cleo").input("short")
    prog.text_input(key="profile.passphrase.cleo.again").input("short")
    prog.button(key="profile.passphrase.cleo.claim").click().run()
    assert "8 to 200 characters" in _warnings(prog) and not store.profile_claimed("cleo")
    prog.text_input(key="profile.passphrase.cleo").input("a long enough one")
    prog.text_input(key="profile.passphrase.cleo.again").input("a long enough one")
    prog.button(key="profile.passphrase.cleo.claim").click().run()
    assert not prog.exception and store.profile_claimed("cleo")
    assert store.passphrase_opens("cleo", "a long enough one")
    assert not store.passphrase_opens("cleo", "a long enough on")


def test_a_nul_in_a_mock_answer_or_note_is_refused_at_the_box(store):
    t0 = datetime.now(timezone.utc).replace(microsecond=0)
    at = AppTest.from_file(str(ROOT / "pages" / "mock.py"), default_timeout=30)
    at.session_state["_clock_now"] = t0
    at.run()
    at.selectbox(key="mock.question").select("An LLM inference API that batches requests across GPUs")
    at.radio(key="mock.scenario").set_value("The seed scenario")
    at.button(key="FormSubmitter:mock.start-Start the clock").click().run()
    attempt = at.query_params["attempt"]
    attempt = attempt[0] if isinstance(attempt, list) else attempt
    at.text_input(key=f"mock.{attempt}.per_gpu_rps_full.typed").input("250\x00 req/s")
    at.button(key=f"FormSubmitter:mock.{attempt}.per_gpu_rps_full.form-Save").click().run()
    assert not at.exception
    assert "NUL character" in _warnings(at)
    assert store.latest_answers(attempt) == {}
    at.text_area(key=f"mock.{attempt}.document").input("8 GPUs\x00").run()
    assert not at.exception and "NUL character" in _warnings(at)
    assert at.text_area(key=f"mock.{attempt}.document").value == "8 GPUs\x00"  # nothing lost
