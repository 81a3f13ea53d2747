"""A corrupt or unwritable answer store: a clear banner, and study mode keeps working."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from models.registry import QUESTIONS


@pytest.fixture
def fresh_store_cache():
    from ui.session_store import _opened

    _opened.clear()
    yield
    _opened.clear()  # later tests open their own store again


def _drill(at):
    box = "batched-inference-api.drill.gpus_floor"
    at.text_input(key=f"{box}.typed").input("8")
    at.button(key=f"FormSubmitter:{box}.form-Check").click().run()


@pytest.mark.parametrize("kind", ["corrupt", "under-a-file"])
def test_broken_store_gives_a_banner_and_study_still_scores(tmp_path, monkeypatch, fresh_store_cache, kind):
    if kind == "corrupt":
        path = tmp_path / "broken.duckdb"
        path.write_bytes(b"this is not a database" * 100)
    else:
        (tmp_path / "afile").write_text("x")
        path = tmp_path / "afile" / "db.duckdb"
    monkeypatch.setenv("WALKTHROUGHS_DB", str(path))
    at = AppTest.from_file(str(QUESTIONS["batched-inference-api"].page_path), default_timeout=30).run()
    assert not at.exception
    _drill(at)
    assert not at.exception
    banners = " ".join(w.value for w in at.warning)
    assert "kept in memory" in banners and str(path) in banners
    assert any("Full marks" in s.value for s in at.success)
    if kind == "corrupt":
        assert path.read_bytes().startswith(b"this is not a database"), "the broken file must be left alone"
