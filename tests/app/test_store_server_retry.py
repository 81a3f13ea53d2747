"""A replica that could not reach its PostgreSQL server at startup tries it again later."""

from __future__ import annotations

import pytest

from tests.conftest_pg import free_port


@pytest.fixture
def fresh_store_cache():
    from ui.session_store import _opened

    _opened.clear()
    yield
    # Close what the test opened: a PostgreSQL pool left to the garbage collector is collected on
    # one of its own worker threads, which cannot join itself (a warning in a later test).
    _opened()[0].close()
    _opened.clear()


def test_fallback_store_is_replaced_once_the_server_answers(pg_cluster, monkeypatch, fresh_store_cache):
    import ui.session_store as session_store

    monkeypatch.setenv("WALKTHROUGHS_DB", f"postgresql://ann:pw@127.0.0.1:{free_port()}/walkthroughs")
    first = session_store.get_store()
    assert first.in_memory  # the server is not there: in memory, with a banner
    assert session_store.get_store() is first  # not retried on every rerun

    url = pg_cluster.create_schema()
    monkeypatch.setenv("WALKTHROUGHS_DB", url)  # the server is up now (same URL in real life)
    monkeypatch.setattr(session_store, "SERVER_RETRY_S", 0.0)
    again = session_store.get_store()
    assert again is not first and again.backend == "postgresql" and not again.in_memory
    assert session_store.get_store() is again  # a working store is kept


def test_a_broken_duckdb_file_is_not_retried(tmp_path, monkeypatch, fresh_store_cache):
    import ui.session_store as session_store

    (tmp_path / "afile").write_text("x")
    monkeypatch.setenv("WALKTHROUGHS_DB", str(tmp_path / "afile" / "db.duckdb"))
    monkeypatch.setattr(session_store, "SERVER_RETRY_S", 0.0)
    first = session_store.get_store()
    assert first.in_memory and session_store.get_store() is first
