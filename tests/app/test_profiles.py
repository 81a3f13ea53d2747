"""A profile sees only its own attempts and answers; nothing renders raw HTML."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from models.registry import QUESTIONS, ROOT


@pytest.fixture
def store(tmp_path, monkeypatch):
    from ui.session_store import _opened

    monkeypatch.setenv("WALKTHROUGHS_DB", str(tmp_path / "profiles.duckdb"))
    _opened.clear()
    yield _opened()[0]
    _opened.clear()


def test_another_profiles_attempt_is_not_shown(store):
    now = datetime.now(timezone.utc)
    params = QUESTIONS["batched-inference-api"].Params().model_dump(mode="json")
    theirs = store.start_attempt("ann", "batched-inference-api", "mock", params, deadline=now + timedelta(minutes=45))
    store.record_answer(theirs, "gpus_floor", "anns secret answer", 8, "1", 8, "1", 1.0)
    at = AppTest.from_file(str(ROOT / "pages" / "mock.py"), default_timeout=30)
    at.session_state["profile"] = "bob"
    at.query_params["attempt"] = theirs
    at.run()
    assert not at.exception
    assert any("another profile" in w.value for w in at.warning)
    assert "anns secret answer" not in " ".join(str(e.proto) for e in at.main)

    prog = AppTest.from_file(str(ROOT / "pages" / "progress.py"), default_timeout=30)
    prog.session_state["profile"] = "bob"
    prog.run()
    assert any("No answers yet" in i.value for i in prog.info)
    prog = AppTest.from_file(str(ROOT / "pages" / "progress.py"), default_timeout=30)
    prog.session_state["profile"] = "ann"
    prog.run()
    assert [m.value for m in prog.metric if m.label == "Answers"] == ["1"]


def test_no_code_asks_streamlit_to_render_raw_html():
    offenders = [
        str(p.relative_to(ROOT)) for p in ROOT.rglob("*.py")
        if ".venv" not in p.parts and p.name != Path(__file__).name
        and ("unsafe_allow_html" in p.read_text() or "st.html(" in p.read_text())
    ]
    assert not offenders, offenders
