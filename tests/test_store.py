"""The answer store: round trips, ordering, injection, file and server failures, migrations, threads.

Every test that is not about a DuckDB file runs twice, on DuckDB and on PostgreSQL (a throwaway
cluster from tests/conftest_pg.py, one fresh database per test): `store_backend` is the
parameter, `location` what Store.open is given, `raw` plain SQL on the same database behind
the store's back.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import duckdb
import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # pyproject sets no pytest pythonpath yet
    sys.path.insert(0, str(ROOT))

import store.paths  # noqa: E402
from store import schema  # noqa: E402
from store.backends import explain_postgres, redact_url, to_pyformat  # noqa: E402
from store.db import NOT_KEPT, Store, StoreError, _explain, open_store  # noqa: E402

INJECTIONS = ["'); DROP TABLE answers; --", "Robert'); --", "x' OR '1'='1", 'a"; DROP TABLE attempts; --']
T0 = datetime(2025, 3, 14, 9, 30, tzinfo=timezone.utc)


class FakeClock:
    def __init__(self, start: datetime = T0):
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **kw: float) -> None:
        self.now += timedelta(**kw)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(params=["duckdb", "postgres"])
def store_backend(request) -> str:
    return request.param


@pytest.fixture
def location(store_backend, tmp_path, request):
    """What Store.open is given: a DuckDB file path, or the URL of a new empty schema."""
    if store_backend == "duckdb":
        return tmp_path / "w.duckdb"
    return request.getfixturevalue("pg_cluster").create_schema()


def shown(location) -> str:
    """How the store names `location` in Store.path and in its messages."""
    return redact_url(location) if isinstance(location, str) else str(location)


class DuckRaw:
    dialect = "duckdb"

    def __init__(self, path: Path):
        self.path = path

    def run(self, *statements: str | tuple[str, list]) -> list[tuple]:
        conn = duckdb.connect(str(self.path))
        try:
            out: list[tuple] = []
            for stmt in statements:
                sql, args = stmt if isinstance(stmt, tuple) else (stmt, [])
                out = conn.execute(sql, args).fetchall() if args else conn.execute(sql).fetchall()
            return out
        finally:
            conn.close()

    def tables(self) -> set[str]:
        return {r[0] for r in self.run("SELECT table_name FROM duckdb_tables()")}

    def columns(self, table: str) -> list[str]:
        return [r[0] for r in self.run(f"DESCRIBE {table}")]


class PgRaw:
    dialect = "postgresql"

    def __init__(self, url: str):
        self.url = url

    def run(self, *statements: str | tuple[str, list]) -> list[tuple]:
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            out: list[tuple] = []
            for stmt in statements:
                sql, args = stmt if isinstance(stmt, tuple) else (stmt, [])
                cur = conn.execute(to_pyformat(sql), args) if args else conn.execute(sql)
                out = cur.fetchall() if cur.description else []
            return out

    def tables(self) -> set[str]:
        return {r[0] for r in self.run(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()")}

    def columns(self, table: str) -> list[str]:
        return [r[0] for r in self.run((
            "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() "
            "AND table_name = ? ORDER BY ordinal_position", [table]))]


@pytest.fixture
def raw(location):
    return PgRaw(location) if isinstance(location, str) else DuckRaw(location)


@pytest.fixture
def db(location, clock):
    s = Store.open(location, clock=clock)
    yield s
    s.close()


def _version(raw) -> int:
    return raw.run("SELECT version FROM schema_version")[0][0]


def _make_v1(raw) -> None:
    """A database as version 1 of the app left it, built by hand with one attempt in it."""
    raw.run(
        *schema.statements(schema.MIGRATIONS[0], raw.dialect),
        "UPDATE schema_version SET version = 1",
        "INSERT INTO attempts VALUES ('old', 'ann', 'kv-cache', 'study', 7, '{\"b\": 2}', "
        "TIMESTAMPTZ '2024-01-01 00:00:00+00', NULL, NULL, NULL)",
    )


# --- round trips ----------------------------------------------------------------------------


def test_attempt_round_trip_and_reopen(location, clock):
    path = location
    params = {"model": "llama-70b", "batch": 32, "ratio": 0.25, "flags": [True, None], "nest": {"a": [1, 2.5]}}
    deadline = datetime(2025, 3, 14, 11, 15, tzinfo=timezone(timedelta(hours=1)))
    with Store.open(path, clock=clock) as s:
        assert s.path == shown(path) and s.in_memory is False
        aid = s.start_attempt("ann", "kv-cache", "mock", params, seed=2**62, deadline=deadline)
        assert len(aid) == 32 and int(aid, 16) >= 0
        clock.advance(minutes=40)
        s.finish_attempt(aid, 0.75)

    with Store.open(path) as s:  # survives a restart
        got = s.get_attempt(aid)
    assert got["params"] == params
    assert got["profile"] == "ann" and got["question"] == "kv-cache" and got["mode"] == "mock"
    assert got["seed"] == 2**62
    assert got["started_at"] == T0 and got["started_at"].tzinfo == timezone.utc
    assert got["deadline"] == deadline and got["deadline"].utcoffset() == timedelta(0)
    assert got["finished_at"] == T0 + timedelta(minutes=40)
    assert got["score"] == 0.75


def test_get_attempt_unknown_is_none(db):
    assert db.get_attempt("nope") is None


def test_finish_twice_keeps_first_finish_time(db, clock):
    aid = db.start_attempt("ann", "q", "mock", {})
    db.finish_attempt(aid, 0.5)
    clock.advance(minutes=5)
    db.finish_attempt(aid, None)
    got = db.get_attempt(aid)
    assert got["finished_at"] == T0 and got["score"] is None


def test_attempts_newest_first_and_filtered(db, clock):
    ids = []
    for q in ["a", "b", "a"]:
        ids.append(db.start_attempt("ann", q, "study", {"q": q}))
        clock.advance(seconds=1)
    db.start_attempt("bob", "a", "mock", {})
    assert [a["id"] for a in db.attempts("ann")] == ids[::-1]
    assert [a["id"] for a in db.attempts("ann", "a")] == [ids[2], ids[0]]
    assert db.attempts("nobody") == []


def test_answers_round_trip_ordered_and_latest(db, clock):
    aid = db.start_attempt("ann", "kv-cache", "mock", {})
    other = db.start_attempt("ann", "kv-cache", "mock", {})
    rows = [
        ("kv_bytes", "40 GB", 40.0, "GB", 42.5, "GB", 0.9),
        ("tokens_s", "1e4", 1e4, None, 12000.0, "1/s", 0.4),
        ("kv_bytes", "42 GB", 42.0, "GB", 42.5, "GB", 1.0),
        ("latency", "fast", None, None, float("inf"), "ms", None),
    ]
    ids = []
    for r in rows:
        ids.append(db.record_answer(aid, *r))
        clock.advance(seconds=3)
    db.record_answer(other, "kv_bytes", "1 GB", 1.0, "GB", 42.5, "GB", 0.0)

    got = db.answers(aid)
    assert [a["id"] for a in got] == ids
    assert [a["answered_at"] for a in got] == [T0 + timedelta(seconds=3 * i) for i in range(4)]
    first = got[0]
    assert (first["drill_key"], first["typed"], first["parsed_value"], first["parsed_unit"],
            first["reference_value"], first["reference_unit"], first["score"]) == rows[0]
    assert got[3]["reference_value"] == float("inf") and got[3]["parsed_value"] is None

    latest = db.latest_answers(aid)
    assert set(latest) == {"kv_bytes", "tokens_s", "latency"}
    assert latest["kv_bytes"]["id"] == ids[2] and latest["kv_bytes"]["typed"] == "42 GB"
    assert db.answer_count() == 5
    assert db.answers("missing") == [] and db.latest_answers("missing") == {}


def test_same_instant_answers_keep_insertion_order(db):
    # The fake clock never moves: every answer has the same answered_at.
    aid = db.start_attempt("ann", "q", "study", {})
    ids = [db.record_answer(aid, "d", str(i), float(i), None, None, None, None) for i in range(6)]
    assert [a["id"] for a in db.answers(aid)] == ids
    assert db.latest_answers(aid)["d"]["id"] == ids[-1]


def test_params_json_preserved_numpy_scalars_accepted(db):
    np = pytest.importorskip("numpy")
    aid = db.start_attempt("ann", "q", "study", {"n": np.int64(3), "x": np.float64(0.5), "v": np.arange(3)})
    assert db.get_attempt(aid)["params"] == {"n": 3, "x": 0.5, "v": [0, 1, 2]}
    db.record_answer(aid, "d", "3", np.float64(3.0), None, np.int64(3), None, np.float32(1.0))
    assert db.answers(aid)[0]["reference_value"] == 3.0


# --- study attempts -------------------------------------------------------------------------


def test_study_attempt_reused_same_day_new_next_day(db, clock):
    a1 = db.study_attempt("ann", "kv-cache", {"b": 1})
    clock.advance(hours=3)
    assert db.study_attempt("ann", "kv-cache", {"b": 2}) == a1
    assert db.get_attempt(a1)["params"] == {"b": 1}  # params only stored on creation
    assert db.study_attempt("ann", "other-q", {}) != a1
    assert db.study_attempt("bob", "kv-cache", {}) != a1
    db.start_attempt("ann", "kv-cache", "mock", {})  # a mock attempt is never reused
    assert db.study_attempt("ann", "kv-cache", {}) == a1

    clock.advance(days=1)
    a2 = db.study_attempt("ann", "kv-cache", {})
    assert a2 != a1 and db.get_attempt(a2)["mode"] == "study"
    db.finish_attempt(a2, None)
    a3 = db.study_attempt("ann", "kv-cache", {})
    assert a3 not in (a1, a2)


# --- injection ------------------------------------------------------------------------------


@pytest.mark.parametrize("evil", INJECTIONS)
def test_injection_strings_stored_verbatim(db, evil):
    aid = db.start_attempt(evil, evil, "mock", {evil: evil})
    db.start_attempt("innocent", "q", "mock", {})
    db.record_answer(aid, evil, evil, 1.0, evil, 2.0, evil, 0.5)
    got = db.get_attempt(aid)
    assert (got["profile"], got["question"], got["params"]) == (evil, evil, {evil: evil})
    [ans] = db.answers(aid)
    assert (ans["drill_key"], ans["typed"], ans["parsed_unit"], ans["reference_unit"]) == (evil,) * 4
    assert list(db.latest_answers(aid)) == [evil]
    assert [a["id"] for a in db.attempts(evil, evil)] == [aid]  # not "OR 1=1" everything
    assert db.study_attempt(evil, evil, {}) != aid
    assert db.answer_count() == 1  # tables still there


# --- argument checks ------------------------------------------------------------------------


def test_programmer_errors_raise_value_error(db):
    aid = db.start_attempt("ann", "q", "mock", {})
    bad_calls = [
        lambda: db.start_attempt("ann", "q", "exam", {}),
        lambda: db.start_attempt("", "q", "mock", {}),
        lambda: db.start_attempt("ann", "q", "mock", "not a dict"),
        lambda: db.start_attempt("ann", "q", "mock", {"x": object()}),
        lambda: db.start_attempt("ann", "q", "mock", {"x": float("nan")}),
        lambda: db.start_attempt("ann", "q", "mock", {}, seed=1.5),
        lambda: db.start_attempt("ann", "q", "mock", {}, seed=2**64),
        lambda: db.start_attempt("ann", "q", "mock", {}, deadline=datetime(2025, 1, 1)),
        lambda: db.finish_attempt(aid, 1.01),
        lambda: db.finish_attempt(aid, -0.1),
        lambda: db.finish_attempt(aid, float("nan")),
        lambda: db.finish_attempt("missing", 0.5),
        lambda: db.record_answer(aid, "d", "1", 1.0, None, 1.0, None, 2.0),
        lambda: db.record_answer(aid, "d", "1", float("nan"), None, 1.0, None, 0.5),
        lambda: db.record_answer(aid, "d", "1", "1.0", None, 1.0, None, 0.5),
        lambda: db.record_answer(aid, "d", "1", True, None, 1.0, None, 0.5),
        lambda: db.record_answer(aid, "", "1", 1.0, None, 1.0, None, 0.5),
        lambda: db.record_answer("missing", "d", "1", 1.0, None, 1.0, None, 0.5),
        lambda: db.record_answer(aid, "d", "1\x00", 1.0, None, 1.0, None, 0.5),  # PostgreSQL text has no NUL
        lambda: db.save_note(aid, "numbers", "a\x00b"),
    ]
    for call in bad_calls:
        with pytest.raises(ValueError):
            call()
    assert db.answer_count() == 0
    assert len(db.attempts("ann")) == 1


def test_closed_store_raises_store_error(location):
    s = Store.open(location)
    s.close()
    s.close()  # idempotent
    with pytest.raises(StoreError, match="closed"):
        s.answer_count()


# --- paths and in-memory --------------------------------------------------------------------


def test_default_db_path_env_and_platformdirs(tmp_path, monkeypatch):
    monkeypatch.setenv("WALKTHROUGHS_DB", str(tmp_path / "env.duckdb"))
    assert store.paths.default_db_path() == str(tmp_path / "env.duckdb")
    with Store.open(None) as s:
        assert s.path == str(tmp_path / "env.duckdb")
    assert (tmp_path / "env.duckdb").exists()

    monkeypatch.delenv("WALKTHROUGHS_DB")
    data = tmp_path / "data" / "walkthroughs"
    monkeypatch.setattr(store.paths.platformdirs, "user_data_dir", lambda *a, **k: str(data))
    assert store.paths.default_db_path() == str(data / "walkthroughs.duckdb")
    assert data.is_dir()


def test_memory_store(monkeypatch):
    s, warning = open_store(":memory:")
    assert warning is None and s.in_memory and s.path == ":memory:"
    aid = s.start_attempt("ann", "q", "mock", {})
    s.record_answer(aid, "d", "1", 1.0, None, 1.0, None, 1.0)
    assert s.answer_count() == 1
    s.close()


def test_missing_parent_directories_are_created(tmp_path):
    with Store.open(tmp_path / "a" / "b" / "w.duckdb") as s:
        assert s.answer_count() == 0


# --- file failures --------------------------------------------------------------------------


def _assert_fallback(path, kind: str) -> str:
    with pytest.raises(StoreError) as info:
        Store.open(path)
    err = info.value
    assert err.kind == kind, str(err)
    assert shown(path) in str(err) and "WALKTHROUGHS_DB" in str(err)
    assert "Traceback" not in str(err) and "\n" not in str(err)
    if isinstance(path, str):  # a server URL: the password never reaches a banner
        password = path.split("@")[0].rsplit(":", 1)[1]
        assert password not in str(err) and err.path == shown(path)
    s, warning = open_store(path)
    try:
        assert s.in_memory and warning == f"{err} {NOT_KEPT}"
        assert "will not be kept after you close the app" in warning
        aid = s.start_attempt("ann", "q", "mock", {})  # the app keeps working
        s.record_answer(aid, "d", "1", 1.0, None, 1.0, None, 1.0)
    finally:
        s.close()
    return str(err)


def test_file_locked_by_another_process(tmp_path):
    path = tmp_path / "locked.duckdb"
    code = (
        "import sys, duckdb\n"
        f"conn = duckdb.connect({str(path)!r})\n"
        "print('ready', flush=True)\n"
        "sys.stdin.read()\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout.readline().strip() == "ready"
        msg = _assert_fallback(path, "locked")
        assert "locked" in msg and "another copy of the app is probably running" in msg
        assert f"process {proc.pid}" in msg
    finally:
        proc.kill()
        proc.wait(timeout=10)
        proc.stdout.close()
        proc.stdin.close()
    with Store.open(path) as s:  # usable again once the other process is gone
        assert s.answer_count() == 0


def test_random_bytes_file_is_corrupt_and_left_alone(tmp_path):
    path = tmp_path / "junk.duckdb"
    junk = os.urandom(16384)
    path.write_bytes(junk)
    msg = _assert_fallback(path, "corrupt")
    assert "not a DuckDB database, or it is damaged" in msg
    assert path.read_bytes() == junk  # never overwrite the learner's file


def test_truncated_database_is_corrupt(tmp_path):
    good = tmp_path / "good.duckdb"
    with Store.open(good) as s:
        s.start_attempt("ann", "q", "mock", {})
    bad = tmp_path / "bad.duckdb"
    bad.write_bytes(good.read_bytes()[: 3 * 4096])
    _assert_fallback(bad, "corrupt")


def test_zero_byte_file_opens_as_new_store(tmp_path):
    path = tmp_path / "touched.duckdb"
    path.touch()
    with Store.open(path) as s:
        assert s.answer_count() == 0
    assert _version(DuckRaw(path)) == schema.SCHEMA_VERSION


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_unwritable_location(tmp_path):
    if os.geteuid() == 0:
        # chmod does not stop root; a path under a regular file stops everyone.
        (tmp_path / "afile").write_text("not a folder")
        msg = _assert_fallback(tmp_path / "afile" / "db.duckdb", "path")
        assert "not a folder" in msg
        return
    ro = tmp_path / "ro"
    ro.mkdir()
    existing = ro / "existing.duckdb"
    Store.open(existing).close()
    ro.chmod(0o500)
    try:
        msg = _assert_fallback(ro / "new.duckdb", "permission")
        assert "permission denied" in msg
        # An existing file opens but can't create its .wal: caught at open, not at first answer.
        _assert_fallback(existing, "permission")
    finally:
        ro.chmod(0o700)


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        (duckdb.IOException('IO Error: Cannot open file "/x/w.duckdb": Permission denied'), "permission"),
        (duckdb.TransactionException('Failed to commit: Cannot open file "/x/w.duckdb.wal": Permission denied'), "permission"),
        (PermissionError(13, "Permission denied"), "permission"),
        (duckdb.IOException('IO Error: Cannot open file "/x/w.duckdb": Read-only file system'), "permission"),
        (duckdb.Error("Corrupt database file: computed checksum 1 does not match stored checksum 2 in block at location 9"), "corrupt"),
        (duckdb.IOException('IO Error: Could not read from file "/x": Is a directory'), "path"),
        (duckdb.IOException("IO Error: something new"), "other"),
    ],
)
def test_error_messages_are_plain(exc, kind):
    err = _explain(exc, "/x/w.duckdb")
    assert err.kind == kind and "/x/w.duckdb" in str(err)


def test_path_is_a_directory(tmp_path):
    (tmp_path / "dir.duckdb").mkdir()
    _assert_fallback(tmp_path / "dir.duckdb", "path")


# --- migrations -----------------------------------------------------------------------------


def test_version_0_database_is_migrated(location, raw):
    raw.run("CREATE TABLE unrelated (x INTEGER)", "INSERT INTO unrelated VALUES (42)")
    Store.open(location).close()
    assert _version(raw) == schema.SCHEMA_VERSION
    assert raw.run("SELECT x FROM unrelated") == [(42,)]


def test_handmade_v1_opens_and_keeps_data(location, raw):
    path = location
    _make_v1(raw)
    with Store.open(path) as s:
        old = s.get_attempt("old")
    assert old["params"] == {"b": 2} and old["seed"] == 7
    assert old["started_at"] == datetime(2024, 1, 1, tzinfo=timezone.utc)
    assert _version(raw) == schema.SCHEMA_VERSION


def test_forward_migration_to_newer_schema(location, raw, monkeypatch):
    path = location
    _make_v1(raw)
    shipped = schema.SCHEMA_VERSION
    nxt = ["CREATE TABLE extra (attempt_id VARCHAR NOT NULL, phase VARCHAR NOT NULL, text VARCHAR NOT NULL)"]
    after = ["ALTER TABLE extra ADD COLUMN updated_at TIMESTAMPTZ"]
    monkeypatch.setattr(schema, "MIGRATIONS", [*schema.MIGRATIONS, nxt, after])
    monkeypatch.setattr(schema, "SCHEMA_VERSION", len(schema.MIGRATIONS))
    with Store.open(path) as s:
        assert s.get_attempt("old")["params"] == {"b": 2}
        assert s.get_attempt("old")["settings"] == {}  # a column added by a later migration
    assert _version(raw) == shipped + 2
    assert raw.columns("extra") == ["attempt_id", "phase", "text", "updated_at"]


def test_failed_migration_rolls_back(location, raw, monkeypatch):
    path = location
    _make_v1(raw)
    shipped = schema.SCHEMA_VERSION
    bad = ["CREATE TABLE half_done (x INTEGER)", "ALTER TABLE no_such_table ADD COLUMN y INTEGER"]
    monkeypatch.setattr(schema, "MIGRATIONS", [*schema.MIGRATIONS, bad])
    monkeypatch.setattr(schema, "SCHEMA_VERSION", len(schema.MIGRATIONS))
    with pytest.raises(StoreError, match=f"from schema version {shipped} to {shipped + 1}") as info:
        Store.open(path)
    assert info.value.kind == "schema"
    assert _version(raw) == shipped  # the good migrations before it stay applied
    assert "half_done" not in raw.tables()


def test_future_schema_version_refused(location, raw):
    path = location
    Store.open(path).close()
    raw.run(("UPDATE schema_version SET version = ?", [schema.SCHEMA_VERSION + 1]))
    msg = _assert_fallback(path, "schema")
    assert "newer version of this app" in msg and f"schema version {schema.SCHEMA_VERSION + 1}" in msg
    assert _version(raw) == schema.SCHEMA_VERSION + 1  # untouched


def test_damaged_schema_version_table(location, raw):
    path = location
    Store.open(path).close()
    raw.run("INSERT INTO schema_version VALUES (1)")
    _assert_fallback(path, "corrupt")


# --- threads --------------------------------------------------------------------------------


def test_concurrent_answers_from_threads(location):
    n_threads, per_thread = 8, 25
    with Store.open(location) as s:
        # study mode: finishing does not close it, so answers and finishes can interleave
        attempt_ids = [s.start_attempt(f"user{i}", "q", "study", {"i": i}) for i in range(n_threads)]
        shared = s.start_attempt("everyone", "q", "study", {})
        barrier = threading.Barrier(n_threads)
        returned: list[list[str]] = [[] for _ in range(n_threads)]
        errors: list[BaseException] = []

        def work(i: int) -> None:
            try:
                barrier.wait()
                for j in range(per_thread):
                    target = shared if j % 5 == 0 else attempt_ids[i]
                    returned[i].append(
                        s.record_answer(target, f"d{j % 3}", f"{i}:{j}", float(j), "GB", 1.0, "GB", 0.5)
                    )
                    if j % 10 == 0:
                        s.latest_answers(target)
                        s.finish_attempt(shared, j / per_thread)  # same row from every thread
            except BaseException as exc:  # noqa: BLE001 - re-raised below
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(n_threads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
        assert not errors, errors
        assert s.answer_count() == n_threads * per_thread
        all_rows = [a for aid in [*attempt_ids, shared] for a in s.answers(aid)]
        assert len(all_rows) == n_threads * per_thread
        assert len({a["id"] for a in all_rows}) == len(all_rows)
        assert len({a["seq"] for a in all_rows}) == len(all_rows)
        assert sorted(a["typed"] for a in all_rows) == sorted(
            f"{i}:{j}" for i in range(n_threads) for j in range(per_thread)
        )
        assert {a["id"] for a in all_rows} == {x for ids in returned for x in ids}


def test_concurrent_study_attempt_creates_one(location):
    with Store.open(location) as s:
        barrier = threading.Barrier(8)
        got: list[str] = []

        def work() -> None:
            barrier.wait()
            got.append(s.study_attempt("ann", "q", {}))

        threads = [threading.Thread(target=work) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
        assert len(got) == 8 and len(set(got)) == 1
        assert len(s.attempts("ann")) == 1



# -- the mock interview ----------------------------------------------------------------------

def test_mock_attempt_refuses_answers_after_its_deadline(location):
    from datetime import datetime, timedelta, timezone

    from store import AttemptClosedError

    t0 = datetime(2026, 1, 1, 12, 0, tzinfo=timezone.utc)
    with Store.open(location) as s:
        a = s.start_attempt("me", "q", "mock", {"x": 1}, seed=7, deadline=t0 + timedelta(minutes=45),
                            settings={"instant_feedback": False}, now=t0)
        s.record_answer(a, "k", "8", 8, "1", 8, "1", 1.0, now=t0 + timedelta(minutes=44, seconds=59))
        with pytest.raises(AttemptClosedError, match="Time is up"):
            s.record_answer(a, "k", "9", 9, "1", 8, "1", 0.0, now=t0 + timedelta(minutes=45, seconds=1))
        with pytest.raises(AttemptClosedError):
            s.save_note(a, "numbers", "late", now=t0 + timedelta(minutes=46))
        assert [r["typed"] for r in s.answers(a)] == ["8"]
        assert s.get_attempt(a)["settings"] == {"instant_feedback": False}


def test_finished_mock_attempt_refuses_answers(location):
    from store import AttemptClosedError

    with Store.open(location) as s:
        a = s.start_attempt("me", "q", "mock", {})
        s.finish_attempt(a, 0.5)
        with pytest.raises(AttemptClosedError, match="finished"):
            s.record_answer(a, "k", "1", 1, "1", 1, "1", 1.0)


def test_notes_latest_per_phase_and_phase_marks(location):
    from datetime import datetime, timedelta, timezone

    t0 = datetime(2026, 1, 1, 12, 0, tzinfo=timezone.utc)
    with Store.open(location) as s:
        a = s.start_attempt("me", "q", "mock", {}, deadline=t0 + timedelta(hours=1), now=t0)
        s.save_note(a, "numbers", "first", now=t0 + timedelta(seconds=1))
        s.save_note(a, "numbers", "second <script>", now=t0 + timedelta(seconds=2))
        s.save_note(a, "shape", "boxes", now=t0 + timedelta(seconds=3))
        notes = s.latest_notes(a)
        assert notes["numbers"]["text"] == "second <script>"
        assert notes["shape"]["text"] == "boxes"
        s.mark_phase(a, "numbers", now=t0)
        s.mark_phase(a, "shape", now=t0 + timedelta(minutes=6))
        assert [p for p, _ in s.phase_marks(a)] == ["numbers", "shape"]
        assert s.phase_marks(a)[1][1] == t0 + timedelta(minutes=6)


def test_profile_answers_joins_question_and_mode(location):
    with Store.open(location) as s:
        a = s.study_attempt("ann", "q1", {})
        b = s.start_attempt("bob", "q2", "mock", {})
        s.record_answer(a, "k1", "1", 1, "1", 1, "1", 1.0)
        s.record_answer(b, "k2", "2", 2, "1", 1, "1", 0.0)
        rows = s.profile_answers("ann")
        assert [(r["question"], r["mode"], r["drill_key"]) for r in rows] == [("q1", "study", "k1")]


def test_presets_round_trip_per_profile(location):
    with Store.open(location) as s:
        s.save_preset("ann", "q", "Twice the traffic", {"arrival_rps": 4000})
        s.save_preset("bob", "q", "Mine", {"arrival_rps": 1})
        got = s.presets("ann", "q")
        assert [(p["name"], p["params"]) for p in got] == [("Twice the traffic", {"arrival_rps": 4000})]
        with pytest.raises(ValueError):
            s.save_preset("ann", "q", "x" * 81, {})


# --- one schema, two engines ----------------------------------------------------------------


def test_duckdb_column_types_unchanged_by_portable_spelling(tmp_path):
    # Migration 0 -> 1 now says DOUBLE PRECISION (PostgreSQL has no DOUBLE): DuckDB must build
    # exactly the schema the shipped DOUBLE text built.
    path = tmp_path / "types.duckdb"
    Store.open(path).close()
    raw = DuckRaw(path)
    types = {(t, c): ty for t, c, ty in raw.run(
        "SELECT table_name, column_name, data_type FROM duckdb_columns() "
        "WHERE table_name IN ('attempts', 'answers')")}
    assert types[("attempts", "score")] == "DOUBLE"
    assert types[("answers", "parsed_value")] == "DOUBLE"
    assert types[("answers", "reference_value")] == "DOUBLE"
    assert types[("answers", "answered_at")] == "TIMESTAMP WITH TIME ZONE"
    assert types[("answers", "seq")] == "BIGINT"


def test_to_pyformat_converts_placeholders_only_outside_quotes():
    assert to_pyformat("SELECT a FROM t WHERE b = ? AND c = ?") == "SELECT a FROM t WHERE b = %s AND c = %s"
    assert to_pyformat("SELECT '?', 'it''s ?', \"col?\" FROM t WHERE x = ?") == (
        "SELECT '?', 'it''s ?', \"col?\" FROM t WHERE x = %s")
    assert to_pyformat("SELECT 5 % 2, '100%' WHERE y = ?") == "SELECT 5 %% 2, '100%%' WHERE y = %s"


def test_redact_url_hides_every_password():
    assert redact_url("postgresql://ann:s3cr%40t@db:5432/w") == "postgresql://ann:***@db:5432/w"
    assert redact_url("postgresql://ann@db/w") == "postgresql://ann@db/w"
    assert redact_url("postgres://db/w?password=x&sslmode=require") == "postgres://db/w?password=***&sslmode=require"


@pytest.mark.parametrize(
    ("message", "sqlstate", "kind"),
    [
        ('connection failed: connection to server at "10.0.0.9", port 5432 failed: Connection refused\n'
         "\tIs the server running on that host and accepting TCP/IP connections?", None, "unreachable"),
        ("failed to resolve host 'db.example': [Errno -2] Name or service not known", None, "unreachable"),
        ("server closed the connection unexpectedly", None, "unreachable"),
        ("terminating connection due to administrator command", "57P01", "unreachable"),
        ('connection failed: FATAL:  password authentication failed for user "ann"', None, "auth"),
        ('connection failed: FATAL:  no pg_hba.conf entry for host "1.2.3.4", user "ann"', None, "auth"),
        ('connection failed: FATAL:  database "w" does not exist', None, "missing"),
        ("permission denied for table answers", "42501", "permission"),
        ("cannot execute INSERT in a read-only transaction", "25006", "permission"),
        ("syntax error at or near \"SELEC\"", "42601", "other"),
    ],
)
def test_postgres_error_messages_are_plain(message, sqlstate, kind):
    import psycopg

    exc = psycopg.OperationalError(message)
    if sqlstate:
        exc = type("E", (psycopg.Error,), {"sqlstate": sqlstate})(message)
    err = explain_postgres(exc, "postgresql://ann:***@db:5432/w", user="ann", dbname="w")
    assert err.kind == kind, str(err)
    assert "postgresql://ann:***@db:5432/w" in str(err) and "\n" not in str(err)
    if kind != "other":
        assert "WALKTHROUGHS_DB" in str(err)


# --- PostgreSQL: the server's own failures --------------------------------------------------


def test_postgres_url_from_the_environment(pg_cluster, monkeypatch):
    url = pg_cluster.create_database()
    monkeypatch.setenv("WALKTHROUGHS_DB", url)
    assert store.paths.default_db_path() == url
    with Store.open(None) as s:
        assert s.backend == "postgresql" and s.path == redact_url(url) and not s.in_memory
        assert pg_cluster.password not in repr(s)


def test_postgres_server_unreachable(pg_cluster):
    from tests.conftest_pg import free_port

    url = f"postgresql://ann:hunter2@127.0.0.1:{free_port()}/walkthroughs"
    started = time.monotonic()
    msg = _assert_fallback(url, "unreachable")
    assert "Cannot reach the PostgreSQL server" in msg and "Connection refused" in msg
    assert time.monotonic() - started < 5


def test_postgres_authentication_failed(pg_cluster):
    url = pg_cluster.url("postgres", password="wrong-password")
    msg = _assert_fallback(url, "auth")
    assert "authentication failed" in msg and "walkthroughs" in msg  # the user name


def test_postgres_database_missing(pg_cluster):
    msg = _assert_fallback(pg_cluster.url("no_such_db"), "missing")
    assert "The database no_such_db does not exist" in msg and "createdb no_such_db" in msg


def test_postgres_user_without_write_privilege(pg_cluster):
    url = pg_cluster.create_database()
    Store.open(url).close()  # the owner migrates it
    dbname = url.rsplit("/", 1)[1]
    pg_cluster.sql("DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'reader') "
                   "THEN CREATE ROLE reader LOGIN PASSWORD 'r3ader'; END IF; END $$")
    pg_cluster.sql("GRANT SELECT ON ALL TABLES IN SCHEMA public TO reader", dbname)
    msg = _assert_fallback(pg_cluster.url(dbname, user="reader", password="r3ader"), "permission")
    assert "answers INSERT" in msg and "reader" in msg


# --- PostgreSQL: several replicas on one database -------------------------------------------


def _race(n: int, work) -> list:
    barrier = threading.Barrier(n)
    got: list = []
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            barrier.wait()
            got.append(work(i))
        except BaseException as exc:  # noqa: BLE001 - re-raised below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors
    return got


def test_replicas_opening_a_new_database_at_once_migrate_it_once(pg_cluster):
    url = pg_cluster.create_database()
    stores = _race(6, lambda i: Store.open(url))  # six processes' worth of pools, at once
    try:
        assert PgRaw(url).run("SELECT version FROM schema_version") == [(schema.SCHEMA_VERSION,)]
        aid = stores[0].start_attempt("ann", "q", "study", {})
        assert all(s.get_attempt(aid)["id"] == aid for s in stores)
    finally:
        for s in stores:
            s.close()


def test_replicas_racing_on_study_attempt_create_one(pg_cluster):
    # Two reruns for the same learner on two servers (a reconnect landing elsewhere): one Store
    # per "replica", so only the database can keep them from creating two attempts.
    url = pg_cluster.create_database()
    replicas = [Store.open(url) for _ in range(4)]
    try:
        got = _race(12, lambda i: replicas[i % 4].study_attempt("ann", "q", {"i": i}))
        assert len(set(got)) == 1
        assert len(replicas[0].attempts("ann")) == 1
    finally:
        for s in replicas:
            s.close()


def test_answers_from_two_replicas_land_in_one_database(pg_cluster):
    url = pg_cluster.create_database()
    with Store.open(url) as a, Store.open(url) as b:
        aid = a.start_attempt("ann", "q", "mock", {}, deadline=datetime.now(timezone.utc) + timedelta(hours=1))
        a.record_answer(aid, "d1", "1", 1.0, None, 1.0, None, 1.0)
        b.record_answer(aid, "d2", "2", 2.0, None, 2.0, None, 0.5)  # the attempt resumed elsewhere
        b.record_answer(aid, "d1", "3", 3.0, None, 1.0, None, 0.0)
        assert [r["typed"] for r in a.answers(aid)] == ["1", "2", "3"]
        assert a.latest_answers(aid)["d1"]["typed"] == "3"
        b.finish_attempt(aid, 0.25)
        assert a.get_attempt(aid)["score"] == 0.25


def test_dropped_connections_are_replaced(pg_cluster):
    # A server restart or a proxy idle timeout kills pooled connections: the next call must
    # reconnect rather than hand the learner an error.
    url = pg_cluster.create_database()
    dbname = url.rsplit("/", 1)[1]
    with Store.open(url) as s:
        aid = s.start_attempt("ann", "q", "study", {})
        killed = pg_cluster.sql(
            f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{dbname}' "
            "AND pid <> pg_backend_pid()")
        assert killed
        s.record_answer(aid, "d", "1", 1.0, None, 1.0, None, 1.0)
        assert s.answer_count() == 1


def test_a_profile_is_claimed_once_and_opens_only_with_its_passphrase(db):
    from store.db import ProfileClaimedError

    assert not db.profile_claimed("alice")
    db.claim_profile("alice", "correct horse battery")
    assert db.profile_claimed("alice") and not db.profile_claimed("bob")
    assert db.passphrase_opens("alice", "correct horse battery")
    assert not db.passphrase_opens("alice", "correct horse batter")
    assert not db.passphrase_opens("bob", "correct horse battery")  # unclaimed: nothing to open
    with pytest.raises(ProfileClaimedError):
        db.claim_profile("alice", "a new passphrase")  # the first claimant keeps it
    assert db.passphrase_opens("alice", "correct horse battery")
    with pytest.raises(ValueError, match="8 to 200"):
        db.claim_profile("bob", "short")
    with db._cursor() as cur:  # the passphrase itself is never stored, only a salted key
        row = cur.execute("SELECT salt_hex, key_hex FROM profile_claims WHERE profile = 'alice'").fetchone()
    assert len(bytes.fromhex(row[0])) == 16 and len(bytes.fromhex(row[1])) == 32
    assert "correct horse".encode().hex() not in row[1]
