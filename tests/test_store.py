"""The answer store: round trips, ordering, injection, file failures, migrations, threads."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path

import duckdb
import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # pyproject sets no pytest pythonpath yet
    sys.path.insert(0, str(ROOT))

import store.paths  # noqa: E402
from store import schema  # noqa: E402
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


@pytest.fixture
def db(tmp_path, clock):
    s = Store.open(tmp_path / "w.duckdb", clock=clock)
    yield s
    s.close()


def _version(path: Path) -> int:
    conn = duckdb.connect(str(path))
    try:
        return conn.execute("SELECT version FROM schema_version").fetchone()[0]
    finally:
        conn.close()


def _make_v1(path: Path) -> None:
    """A database as version 1 of the app left it, built by hand with one attempt in it."""
    conn = duckdb.connect(str(path))
    for sql in schema.MIGRATIONS[0]:
        conn.execute(sql)
    conn.execute("UPDATE schema_version SET version = 1")
    conn.execute(
        "INSERT INTO attempts VALUES ('old', 'ann', 'kv-cache', 'study', 7, '{\"b\": 2}', "
        "TIMESTAMPTZ '2024-01-01 00:00:00+00', NULL, NULL, NULL)"
    )
    conn.close()


# --- round trips ----------------------------------------------------------------------------


def test_attempt_round_trip_and_reopen(tmp_path, clock):
    path = tmp_path / "w.duckdb"
    params = {"model": "llama-70b", "batch": 32, "ratio": 0.25, "flags": [True, None], "nest": {"a": [1, 2.5]}}
    deadline = datetime(2025, 3, 14, 11, 15, tzinfo=timezone(timedelta(hours=1)))
    with Store.open(path, clock=clock) as s:
        assert s.path == str(path) and s.in_memory is False
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
    ]
    for call in bad_calls:
        with pytest.raises(ValueError):
            call()
    assert db.answer_count() == 0
    assert len(db.attempts("ann")) == 1


def test_closed_store_raises_store_error(tmp_path):
    s = Store.open(tmp_path / "w.duckdb")
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


def _assert_fallback(path: Path, kind: str) -> str:
    with pytest.raises(StoreError) as info:
        Store.open(path)
    err = info.value
    assert err.kind == kind, str(err)
    assert str(path) in str(err) and "WALKTHROUGHS_DB" in str(err)
    assert "Traceback" not in str(err) and "\n" not in str(err)
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
    assert _version(path) == schema.SCHEMA_VERSION


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


def test_version_0_database_is_migrated(tmp_path):
    path = tmp_path / "v0.duckdb"
    conn = duckdb.connect(str(path))
    conn.execute("CREATE TABLE unrelated (x INTEGER)")
    conn.execute("INSERT INTO unrelated VALUES (42)")
    conn.close()
    Store.open(path).close()
    assert _version(path) == schema.SCHEMA_VERSION
    conn = duckdb.connect(str(path))
    assert conn.execute("SELECT x FROM unrelated").fetchall() == [(42,)]
    conn.close()


def test_handmade_v1_opens_and_keeps_data(tmp_path):
    path = tmp_path / "v1.duckdb"
    _make_v1(path)
    with Store.open(path) as s:
        old = s.get_attempt("old")
    assert old["params"] == {"b": 2} and old["seed"] == 7
    assert old["started_at"] == datetime(2024, 1, 1, tzinfo=timezone.utc)
    assert _version(path) == schema.SCHEMA_VERSION


def test_forward_migration_to_newer_schema(tmp_path, monkeypatch):
    path = tmp_path / "v1.duckdb"
    _make_v1(path)
    shipped = schema.SCHEMA_VERSION
    nxt = ["CREATE TABLE extra (attempt_id VARCHAR NOT NULL, phase VARCHAR NOT NULL, text VARCHAR NOT NULL)"]
    after = ["ALTER TABLE extra ADD COLUMN updated_at TIMESTAMPTZ"]
    monkeypatch.setattr(schema, "MIGRATIONS", [*schema.MIGRATIONS, nxt, after])
    monkeypatch.setattr(schema, "SCHEMA_VERSION", len(schema.MIGRATIONS))
    with Store.open(path) as s:
        assert s.get_attempt("old")["params"] == {"b": 2}
        assert s.get_attempt("old")["settings"] == {}  # a column added by a later migration
    assert _version(path) == shipped + 2
    conn = duckdb.connect(str(path))
    cols = [r[0] for r in conn.execute("DESCRIBE extra").fetchall()]
    conn.close()
    assert cols == ["attempt_id", "phase", "text", "updated_at"]


def test_failed_migration_rolls_back(tmp_path, monkeypatch):
    path = tmp_path / "v1.duckdb"
    _make_v1(path)
    shipped = schema.SCHEMA_VERSION
    bad = ["CREATE TABLE half_done (x INTEGER)", "ALTER TABLE no_such_table ADD COLUMN y INTEGER"]
    monkeypatch.setattr(schema, "MIGRATIONS", [*schema.MIGRATIONS, bad])
    monkeypatch.setattr(schema, "SCHEMA_VERSION", len(schema.MIGRATIONS))
    with pytest.raises(StoreError, match=f"from schema version {shipped} to {shipped + 1}") as info:
        Store.open(path)
    assert info.value.kind == "schema"
    assert _version(path) == shipped  # the good migrations before it stay applied
    conn = duckdb.connect(str(path))
    tables = {r[0] for r in conn.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    conn.close()
    assert "half_done" not in tables


def test_future_schema_version_refused(tmp_path):
    path = tmp_path / "future.duckdb"
    Store.open(path).close()
    conn = duckdb.connect(str(path))
    conn.execute("UPDATE schema_version SET version = ?", [schema.SCHEMA_VERSION + 1])
    conn.close()
    msg = _assert_fallback(path, "schema")
    assert "newer version of this app" in msg and f"schema version {schema.SCHEMA_VERSION + 1}" in msg
    assert _version(path) == schema.SCHEMA_VERSION + 1  # untouched


def test_damaged_schema_version_table(tmp_path):
    path = tmp_path / "twice.duckdb"
    Store.open(path).close()
    conn = duckdb.connect(str(path))
    conn.execute("INSERT INTO schema_version VALUES (1)")
    conn.close()
    _assert_fallback(path, "corrupt")


# --- threads --------------------------------------------------------------------------------


def test_concurrent_answers_from_threads(tmp_path):
    n_threads, per_thread = 8, 25
    with Store.open(tmp_path / "threads.duckdb") as s:
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


def test_concurrent_study_attempt_creates_one(tmp_path):
    with Store.open(tmp_path / "study.duckdb") as s:
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

def test_mock_attempt_refuses_answers_after_its_deadline(tmp_path):
    from datetime import datetime, timedelta, timezone

    from store import AttemptClosedError

    t0 = datetime(2026, 1, 1, 12, 0, tzinfo=timezone.utc)
    with Store.open(tmp_path / "m.duckdb") as s:
        a = s.start_attempt("me", "q", "mock", {"x": 1}, seed=7, deadline=t0 + timedelta(minutes=45),
                            settings={"instant_feedback": False}, now=t0)
        s.record_answer(a, "k", "8", 8, "1", 8, "1", 1.0, now=t0 + timedelta(minutes=44, seconds=59))
        with pytest.raises(AttemptClosedError, match="Time is up"):
            s.record_answer(a, "k", "9", 9, "1", 8, "1", 0.0, now=t0 + timedelta(minutes=45, seconds=1))
        with pytest.raises(AttemptClosedError):
            s.save_note(a, "numbers", "late", now=t0 + timedelta(minutes=46))
        assert [r["typed"] for r in s.answers(a)] == ["8"]
        assert s.get_attempt(a)["settings"] == {"instant_feedback": False}


def test_finished_mock_attempt_refuses_answers(tmp_path):
    from store import AttemptClosedError

    with Store.open(tmp_path / "m.duckdb") as s:
        a = s.start_attempt("me", "q", "mock", {})
        s.finish_attempt(a, 0.5)
        with pytest.raises(AttemptClosedError, match="finished"):
            s.record_answer(a, "k", "1", 1, "1", 1, "1", 1.0)


def test_notes_latest_per_phase_and_phase_marks(tmp_path):
    from datetime import datetime, timedelta, timezone

    t0 = datetime(2026, 1, 1, 12, 0, tzinfo=timezone.utc)
    with Store.open(tmp_path / "m.duckdb") as s:
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


def test_profile_answers_joins_question_and_mode(tmp_path):
    with Store.open(tmp_path / "m.duckdb") as s:
        a = s.study_attempt("ann", "q1", {})
        b = s.start_attempt("bob", "q2", "mock", {})
        s.record_answer(a, "k1", "1", 1, "1", 1, "1", 1.0)
        s.record_answer(b, "k2", "2", 2, "1", 1, "1", 0.0)
        rows = s.profile_answers("ann")
        assert [(r["question"], r["mode"], r["drill_key"]) for r in rows] == [("q1", "study", "k1")]


def test_presets_round_trip_per_profile(tmp_path):
    with Store.open(tmp_path / "p.duckdb") as s:
        s.save_preset("ann", "q", "Twice the traffic", {"arrival_rps": 4000})
        s.save_preset("bob", "q", "Mine", {"arrival_rps": 1})
        got = s.presets("ann", "q")
        assert [(p["name"], p["params"]) for p in got] == [("Twice the traffic", {"arrival_rps": 4000})]
        with pytest.raises(ValueError):
            s.save_preset("ann", "q", "x" * 81, {})
