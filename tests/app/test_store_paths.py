"""What the store holds or does cannot crash a page: answers to questions or drills this version no
longer asks are left out with a word, and a store that fails mid-session is a sentence."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from streamlit.testing.v1 import AppTest

from models.registry import QUESTIONS, ROOT


def test_progress_leaves_out_what_this_version_no_longer_asks(store):
    now = datetime.now(timezone.utc)
    live = store.study_attempt("ann", "batched-inference-api", {})
    store.record_answer(live, "gpus_floor", "8", 8, "1", 8, "1", 1.0)
    store.record_answer(live, "a_retired_drill", "3", 3, "1", 4, "1", 0.0)
    gone = store.start_attempt("ann", "retired-question", "mock", {}, deadline=now + timedelta(minutes=45))
    store.record_answer(gone, "x", "1", 1, "1", 1, "1", 1.0)
    store.finish_attempt(gone, 1.0)
    prog = AppTest.from_file(str(ROOT / "pages" / "progress.py"), default_timeout=30)
    prog.session_state["profile"] = "ann"
    prog.run()
    assert not prog.exception
    assert [m.value for m in prog.metric if m.label == "Answers"] == ["3"]
    assert any("2 drills you answered are no longer asked" in c.value for c in prog.caption)


def _page_whose_store_fails():
    from store import StoreError
    from ui.store_guard import run_page

    class Nav:  # stands for st.navigation's page: its script reads the store, which fails
        def run(self):
            raise StoreError("The answer store could not be read: disk I/O error.", kind="other", path="x")

    run_page(Nav())


def test_a_store_that_fails_mid_session_is_a_sentence():
    at = AppTest.from_function(_page_whose_store_fails, default_timeout=30).run()
    assert not at.exception
    assert any("The answer store failed" in e.value and "disk I/O error" in e.value for e in at.error)


def test_the_app_runs_every_page_through_the_guard():
    assert "run_page(nav)" in (ROOT / "app.py").read_text()
