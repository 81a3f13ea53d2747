"""The answer store the app pages open, on a fresh file per test."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _own_database(tmp_path, monkeypatch):
    """Every app test opens a database file of its own, never the default one beside the code."""
    monkeypatch.setenv("WALKTHROUGHS_DB", str(tmp_path / "apptest.duckdb"))


@pytest.fixture
def store(tmp_path, monkeypatch):
    """The store the pages will use (ui.session_store's cached one), on a file of this test's own."""
    from ui.session_store import _opened

    monkeypatch.setenv("WALKTHROUGHS_DB", str(tmp_path / "answers.duckdb"))
    _opened.clear()
    yield _opened()[0]
    _opened.clear()
