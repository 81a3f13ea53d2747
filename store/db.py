"""The answer store: attempts and their append-only answers, in DuckDB or PostgreSQL.

One Store per process; the UI keeps it in st.cache_resource. `Store.open(location)` picks the
engine: a file path (or ":memory:") is an embedded DuckDB database, the default for one person
on a laptop; a `postgresql://` URL is a server shared by several app replicas (a class). Both run
the same queries (`?` placeholders only, converted for psycopg in store/backends.py), the same
migrations and the same tests. Every method takes its own cursor (DuckDB) or pooled connection
(PostgreSQL), so Streamlit's session threads never share one. Writes are committed before a
method returns.

Failures of the file or the server (locked by another process, not a DuckDB file, read-only
folder; server unreachable, login refused, database missing) become a StoreError with a message
fit to show the learner; bad arguments are programmer errors and raise ValueError.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import os
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import duckdb

from store import schema
from store.backends import (
    LOCK_MIGRATIONS,
    LOCK_STUDY,
    DuckDBBackend,
    PostgresBackend,
    StoreError,
    explain_duckdb,
    is_server_url,
)
from store.paths import ENV_VAR, default_db_path
from store.wal import set_aside_unreplayable

MEMORY = ":memory:"
MODES = frozenset({"study", "mock"})
NOT_KEPT = "Answers will not be kept after you close the app."

__all__ = ["MEMORY", "NOT_KEPT", "AttemptClosedError", "ProfileClaimedError", "Store", "StoreError", "open_store"]


SCRYPT_N = 2**14  # scrypt cost: about 20 ms per check here, 16 MiB of memory (r = 8)
PASSPHRASE_MIN, PASSPHRASE_MAX = 8, 200


def check_passphrase(passphrase: Any) -> str:
    """The rule a passphrase meets, as a ValueError a page can show."""
    if not isinstance(passphrase, str) or not PASSPHRASE_MIN <= len(passphrase) <= PASSPHRASE_MAX:
        raise ValueError(f"A passphrase is {PASSPHRASE_MIN} to {PASSPHRASE_MAX} characters.")
    if "\x00" in passphrase:
        raise ValueError("A passphrase cannot hold a NUL character.")
    return passphrase


def _scrypt(passphrase: str, salt: bytes, n: int) -> bytes:
    return hashlib.scrypt(passphrase.encode(), salt=salt, n=n, r=8, p=1, maxmem=64 * 1024 * 1024, dklen=32)


class ProfileClaimedError(ValueError):
    """A claim on a profile someone has claimed already."""


class AttemptClosedError(ValueError):
    """A write to a mock attempt whose clock ran out or that was finished: refused."""

_BIGINT_MIN, _BIGINT_MAX = -(2**63), 2**63 - 1

_ATTEMPT_COLUMNS = (
    "id, profile, question, mode, seed, params_json, started_at, deadline, finished_at, score, "
    "settings_json"
)
_ANSWER_COLUMNS = (
    "id, attempt_id, drill_key, typed, parsed_value, parsed_unit, "
    "reference_value, reference_unit, score, answered_at, seq"
)


def _utcnow() -> datetime:
    return datetime.now(timezone.utc)


# DuckDB / OS failures -> sentences: store/backends.py (kept under this name for callers).
_explain = explain_duckdb


# --- argument checks (programmer errors -> ValueError) --------------------------------------


def _check_text(name: str, value: Any, *, allow_empty: bool = False) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a str, got {type(value).__name__}")
    if not allow_empty and not value.strip():
        raise ValueError(f"{name} must not be empty")
    if "\x00" in value:  # PostgreSQL text cannot hold NUL; refused on both engines alike
        raise ValueError(f"{name} must not contain NUL characters")
    return value


def _check_optional_text(name: str, value: Any) -> str | None:
    if value is None:
        return None
    return _check_text(name, value, allow_empty=True)


def _check_number(name: str, value: Any) -> float | None:
    """None, or a real number; infinity is allowed (e.g. the wait of an overloaded queue)."""
    if value is None:
        return None
    if not isinstance(value, (int, float)):
        tolist = getattr(value, "tolist", None)  # numpy scalars (np.int64 is not an int)
        value = tolist() if callable(tolist) else value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} must be a number or None, got {type(value).__name__}")
    out = float(value)
    if math.isnan(out):
        raise ValueError(f"{name} must not be NaN")
    return out


def _check_score(name: str, value: Any) -> float | None:
    out = _check_number(name, value)
    if out is not None and not 0.0 <= out <= 1.0:
        raise ValueError(f"{name} must be None or between 0 and 1, got {value!r}")
    return out


def _check_aware(name: str, value: Any) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, datetime):
        raise ValueError(f"{name} must be a datetime or None, got {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"{name} must be timezone-aware (use datetime.now(timezone.utc))")
    return value.astimezone(timezone.utc)


def _json_default(obj: Any) -> Any:
    tolist = getattr(obj, "tolist", None)  # numpy scalars and arrays -> plain Python
    if callable(tolist):
        return tolist()
    raise TypeError(f"{type(obj).__name__} is not JSON serializable")


def _encode_params(params: Any) -> str:
    if not isinstance(params, dict):
        raise ValueError(f"params must be a dict, got {type(params).__name__}")
    try:
        return json.dumps(params, sort_keys=True, allow_nan=False, default=_json_default)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"params must be JSON-serializable (finite numbers only): {exc}") from exc


def _as_utc(value: datetime | None) -> datetime | None:
    # duckdb and psycopg hand TIMESTAMPTZ back in the session's zone; callers get UTC.
    return None if value is None else value.astimezone(timezone.utc)


# --- the store ------------------------------------------------------------------------------


class Store:
    """Attempts and answers. Build with Store.open(); safe to share across threads."""

    def __init__(
        self,
        backend: DuckDBBackend | PostgresBackend | duckdb.DuckDBPyConnection,
        path: str,
        *,
        clock: Callable[[], datetime] | None = None,
    ):
        if isinstance(backend, duckdb.DuckDBPyConnection):
            backend = DuckDBBackend(backend, path)
        self._backend: DuckDBBackend | PostgresBackend | None = backend
        self.backend = backend.name  # "duckdb" or "postgresql"
        self.path = path  # the file, ":memory:", or the server URL with its password hidden
        self.in_memory = path == MEMORY
        self._clock = clock or _utcnow
        self.notice: str | None = None  # something worth a word at open that did not stop it
        # study_attempt is find-or-create; the lock keeps two reruns of this process from
        # creating two (the backend's advisory lock does the same across replicas).
        self._study_lock = threading.Lock()

    # -- opening and closing ----------------------------------------------------------------

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        clock: Callable[[], datetime] | None = None,
    ) -> Store:
        """Open (creating and migrating as needed) the store at `path`.

        None means default_db_path(); ":memory:" gives a store that lives only in this process;
        "postgresql://user:password@host:port/database" a store on a PostgreSQL server.
        Raises StoreError if the file or the server can't be used.
        """
        if path is None:
            path = default_db_path()
        if is_server_url(path):
            backend = PostgresBackend(str(path))  # raises StoreError with the server's reason
            return cls._opened(backend, backend.shown, clock)
        path_str = os.fspath(path)
        if path_str == MEMORY:
            return cls._opened(DuckDBBackend(duckdb.connect(MEMORY), MEMORY), MEMORY, clock, probe=False)

        file = Path(path_str).expanduser().absolute()
        shown = str(file)
        try:
            file.parent.mkdir(parents=True, exist_ok=True)
            if file.is_file() and file.stat().st_size == 0:
                # A zero-byte file (e.g. `touch`ed) holds nothing; duckdb would call it invalid.
                file.unlink()
        except OSError as exc:
            raise _explain(exc, shown) from exc
        try:
            wal_aside = set_aside_unreplayable(file)
        except OSError as exc:
            raise _explain(exc, shown) from exc
        try:
            conn = duckdb.connect(shown)
        except (duckdb.Error, OSError) as exc:
            raise _explain(exc, shown) from exc
        store = cls._opened(DuckDBBackend(conn, shown), shown, clock, check_rows=True)
        if wal_aside is not None:
            store.notice = (f"The answer store's write-ahead log could not be replayed and held no answers; "
                            f"it was moved aside to {wal_aside}. The answers in {shown} are intact.")
        return store

    @classmethod
    def _opened(cls, backend: DuckDBBackend | PostgresBackend, shown: str,
                clock: Callable[[], datetime] | None, *, probe: bool = True, check_rows: bool = False) -> Store:
        store = cls(backend, shown, clock=clock)
        try:
            store._migrate()
            if check_rows:
                store._read_every_row()
            if probe:
                store._probe_write()
        except BaseException:
            backend.close()
            raise
        return store

    def close(self) -> None:
        """Close the connection (or the pool); safe to call twice."""
        backend, self._backend = self._backend, None
        if backend is not None:
            backend.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._backend is None else "open"
        return f"Store({self.path!r}, {state})"

    # -- plumbing ---------------------------------------------------------------------------

    def _live(self) -> DuckDBBackend | PostgresBackend:
        backend = self._backend
        if backend is None:
            raise StoreError("The answer store is closed.", kind="closed", path=self.path)
        return backend

    @contextmanager
    def _cursor(self, doing: str = "read") -> Iterator[Any]:
        """A cursor outside any transaction (autocommit): for reads."""
        backend = self._live()
        try:
            with backend.cursor() as cur:
                yield cur
        except backend.errors as exc:
            raise backend.explain(exc, doing=doing) from exc

    @contextmanager
    def _transaction(self, doing: str = "write to") -> Iterator[Any]:
        """A cursor inside one transaction, committed when the block ends, rolled back on error."""
        backend = self._live()
        try:
            with backend.transaction() as cur:
                yield cur
        except backend.errors as exc:
            raise backend.explain(exc, doing=doing) from exc

    def _write(self, statements: list[tuple[str, list[Any]]]) -> None:
        """Run statements in one transaction, committed before returning."""
        with self._transaction() as cur:
            for sql, args in statements:
                cur.execute(sql, args)

    def _migrate(self) -> None:
        """Apply the missing migrations, one transaction each.

        Several replicas may open a new PostgreSQL database at once: each step takes the
        migration lock and re-reads the version inside its transaction, so a step runs once and
        the others find it done.
        """
        migrations, target = schema.MIGRATIONS, schema.SCHEMA_VERSION
        assert target == len(migrations), "SCHEMA_VERSION must equal len(MIGRATIONS)"
        backend = self._live()
        noun = backend.noun
        while True:
            version, migrating = 0, False
            try:
                with self._transaction("open") as cur:
                    backend.lock(cur, LOCK_MIGRATIONS, "schema")
                    version = self._schema_version(cur, noun)
                    if version > target:
                        raise StoreError(
                            f"The answer store {self.path} was written by a newer version of this app "
                            f"(schema version {version}; this version understands up to {target}). "
                            f"Update the app, or set {ENV_VAR} to a different {noun}.",
                            kind="schema",
                            path=self.path,
                        )
                    if version == target:
                        return
                    migrating = True
                    for sql in schema.statements(migrations[version], backend.name):
                        cur.execute(sql)
                    cur.execute("UPDATE schema_version SET version = ?", [version + 1])
            except StoreError as err:
                if not migrating or err.kind != "other":
                    raise
                cause = err.__cause__ or err
                raise StoreError(
                    f"Could not upgrade the answer store {self.path} from schema "
                    f"version {version} to {version + 1}: {str(cause).strip().splitlines()[0]}",
                    kind="schema",
                    path=self.path,
                ) from cause

    def _schema_version(self, cur: Any, noun: str) -> int:
        """0 for a database the app never touched; StoreError if the version table is damaged."""
        if not self._live().has_table(cur, schema.SCHEMA_VERSION_TABLE):
            return 0
        rows = cur.execute("SELECT version FROM schema_version").fetchall()
        if len(rows) != 1:
            raise StoreError(
                f"The answer store {self.path} is damaged: its schema_version table "
                f"has {len(rows)} rows instead of 1. Move it aside, or set {ENV_VAR} "
                f"to a different {noun}.",
                kind="corrupt",
                path=self.path,
            )
        try:
            return int(rows[0][0])
        except (TypeError, ValueError):
            raise StoreError(
                f"The answer store {self.path} is damaged: its schema version is {rows[0][0]!r}, not a "
                f"number. It was left untouched; move it aside, or set {ENV_VAR} to a different {noun}.",
                kind="corrupt", path=self.path) from None

    def _read_every_row(self) -> None:
        """Read each table in full: DuckDB opens a damaged file (truncated, overwritten in the
        middle) and fails only at the first read of a damaged block, which would be a learner's
        Progress or their Start the clock. Files hold one learner's or one class's answers, so this
        is milliseconds."""
        try:
            with self._cursor("read") as cur:
                for table in schema.TABLES:
                    cur.execute(f"SELECT * FROM {table}").fetchall()
        except StoreError as err:
            raise StoreError(
                f"The answer store {self.path} is damaged: part of it cannot be read. It was left "
                f"untouched; move it aside, or set {ENV_VAR} to a different file.",
                kind="corrupt", path=self.path) from err

    def _probe_write(self) -> None:
        backend = self._live()
        try:
            backend.probe_write()
        except backend.errors as exc:
            raise backend.explain(exc, doing="write to") from exc

    # -- attempts ---------------------------------------------------------------------------

    def start_attempt(
        self,
        profile: str,
        question: str,
        mode: str,
        params: dict,
        seed: int | None = None,
        deadline: datetime | None = None,
        settings: dict | None = None,
        now: datetime | None = None,
    ) -> str:
        """Record a new attempt and return its id (uuid4 hex)."""
        _check_text("profile", profile)
        _check_text("question", question)
        if mode not in MODES:
            raise ValueError(f"mode must be one of {sorted(MODES)}, got {mode!r}")
        params_json = _encode_params(params)
        if seed is not None:
            if isinstance(seed, bool) or not isinstance(seed, int):
                raise ValueError(f"seed must be an int or None, got {type(seed).__name__}")
            if not _BIGINT_MIN <= seed <= _BIGINT_MAX:
                raise ValueError("seed must fit in a signed 64-bit integer")
        deadline = _check_aware("deadline", deadline)
        settings_json = _encode_params(settings or {})
        started = _check_aware("now", now) or self._clock()
        attempt_id = uuid.uuid4().hex
        self._write([_insert_attempt(attempt_id, profile, question, mode, seed, params_json, started,
                                     deadline, settings_json)])
        return attempt_id

    def get_attempt(self, attempt_id: str) -> dict | None:
        """The attempt as a dict (params decoded), or None if there is no such id."""
        _check_text("attempt_id", attempt_id)
        with self._cursor() as cur:
            row = cur.execute(
                f"SELECT {_ATTEMPT_COLUMNS} FROM attempts WHERE id = ?", [attempt_id]
            ).fetchone()
        return None if row is None else _attempt_dict(row)

    def finish_attempt(self, attempt_id: str, score: float | None, now: datetime | None = None) -> None:
        """Mark the attempt finished with `score` (0..1 or None).

        Finishing twice keeps the first finished_at and takes the latest score.
        """
        _check_text("attempt_id", attempt_id)
        score = _check_score("score", score)
        if self.get_attempt(attempt_id) is None:
            raise ValueError(f"no attempt with id {attempt_id!r}")
        self._write(
            [
                (
                    "UPDATE attempts SET finished_at = coalesce(finished_at, ?), score = ? "
                    "WHERE id = ?",
                    [_check_aware("now", now) or self._clock(), score, attempt_id],
                )
            ]
        )

    def attempts(self, profile: str, question: str | None = None) -> list[dict]:
        """The profile's attempts (optionally for one question), newest first."""
        _check_text("profile", profile)
        sql = f"SELECT {_ATTEMPT_COLUMNS} FROM attempts WHERE profile = ?"
        args: list[Any] = [profile]
        if question is not None:
            _check_text("question", question)
            sql += " AND question = ?"
            args.append(question)
        sql += " ORDER BY started_at DESC, id DESC"
        with self._cursor() as cur:
            rows = cur.execute(sql, args).fetchall()
        return [_attempt_dict(r) for r in rows]

    def study_attempt(self, profile: str, question: str, params: dict) -> str:
        """Id of today's open study attempt for profile + question, creating it if needed.

        "Today" is the UTC day. `params` is stored only when a new attempt is created.
        """
        _check_text("profile", profile)
        _check_text("question", question)
        params_json = _encode_params(params)  # fail early even when an attempt already exists
        now = self._clock()
        day_start = now.astimezone(timezone.utc).replace(hour=0, minute=0, second=0,
                                                        microsecond=0)
        # Find and create in one transaction under a lock on (profile, question): in this
        # process the thread lock, across replicas on PostgreSQL an advisory lock, so two
        # reruns racing on two servers still make one attempt.
        with self._study_lock, self._transaction() as cur:
            self._live().lock(cur, LOCK_STUDY, f"{profile}\x1f{question}")
            row = cur.execute(
                "SELECT id FROM attempts WHERE profile = ? AND question = ? "
                "AND mode = 'study' AND finished_at IS NULL "
                "AND started_at >= ? AND started_at < ? "
                "ORDER BY started_at DESC, id DESC LIMIT 1",
                [profile, question, day_start, day_start + timedelta(days=1)],
            ).fetchone()
            if row is not None:
                return row[0]
            attempt_id = uuid.uuid4().hex
            cur.execute(*_insert_attempt(attempt_id, profile, question, "study", None, params_json,
                                         now, None, "{}"))
            return attempt_id

    # -- answers ----------------------------------------------------------------------------

    def record_answer(
        self,
        attempt_id: str,
        drill_key: str,
        typed: str,
        parsed_value: float | None,
        parsed_unit: str | None,
        reference_value: float | None,
        reference_unit: str | None,
        score: float | None,
        now: datetime | None = None,
    ) -> str:
        """Append an answer (a re-answer is a new row) and return its id (uuid4 hex).

        A mock attempt that is finished or past its deadline refuses (AttemptClosedError): the
        server, not the page, decides that time is up.
        """
        _check_text("attempt_id", attempt_id)
        _check_text("drill_key", drill_key)
        _check_text("typed", typed, allow_empty=True)
        parsed_value = _check_number("parsed_value", parsed_value)
        parsed_unit = _check_optional_text("parsed_unit", parsed_unit)
        reference_value = _check_number("reference_value", reference_value)
        reference_unit = _check_optional_text("reference_unit", reference_unit)
        score = _check_score("score", score)
        now = _check_aware("now", now) or self._clock()
        self._open_attempt(attempt_id, now)
        answer_id = uuid.uuid4().hex
        self._write(
            [
                (
                    "INSERT INTO answers (id, attempt_id, drill_key, typed, parsed_value, "
                    "parsed_unit, reference_value, reference_unit, score, answered_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [answer_id, attempt_id, drill_key, typed, parsed_value, parsed_unit,
                     reference_value, reference_unit, score, now],
                )
            ]
        )
        return answer_id

    def answers(self, attempt_id: str) -> list[dict]:
        """Every answer of the attempt, oldest first."""
        _check_text("attempt_id", attempt_id)
        with self._cursor() as cur:
            rows = cur.execute(
                f"SELECT {_ANSWER_COLUMNS} FROM answers WHERE attempt_id = ? "
                "ORDER BY answered_at, seq",
                [attempt_id],
            ).fetchall()
        return [_answer_dict(r) for r in rows]

    def latest_answers(self, attempt_id: str) -> dict[str, dict]:
        """drill_key -> that drill's most recent answer in the attempt."""
        _check_text("attempt_id", attempt_id)
        with self._cursor() as cur:
            rows = cur.execute(
                f"SELECT {_ANSWER_COLUMNS} FROM (SELECT {_ANSWER_COLUMNS}, row_number() OVER "
                "(PARTITION BY drill_key ORDER BY answered_at DESC, seq DESC) AS newest "
                "FROM answers WHERE attempt_id = ?) AS ranked WHERE newest = 1 "
                "ORDER BY answered_at, seq",
                [attempt_id],
            ).fetchall()
        return {r[2]: _answer_dict(r) for r in rows}

    def _open_attempt(self, attempt_id: str, now: datetime) -> dict:
        attempt = self.get_attempt(attempt_id)
        if attempt is None:
            raise ValueError(f"no attempt with id {attempt_id!r}")
        if attempt["mode"] == "mock":
            if attempt["finished_at"] is not None:
                raise AttemptClosedError("This round is finished; it no longer takes answers.")
            if attempt["deadline"] is not None and now > attempt["deadline"]:
                raise AttemptClosedError("Time is up: the round closed at its deadline, so this was not saved.")
        return attempt

    # -- the mock interview: notes per phase and phase moves --------------------------------

    def save_note(self, attempt_id: str, phase: str, text: str, now: datetime | None = None) -> None:
        """Append the phase's notes (the latest row is the current text)."""
        _check_text("attempt_id", attempt_id)
        _check_text("phase", phase)
        _check_text("text", text, allow_empty=True)
        now = _check_aware("now", now) or self._clock()
        self._open_attempt(attempt_id, now)
        self._write([("INSERT INTO notes (attempt_id, phase, text, saved_at) VALUES (?, ?, ?, ?)",
                      [attempt_id, phase, text, now])])

    def latest_notes(self, attempt_id: str) -> dict[str, dict]:
        """phase -> {"text", "saved_at"} of the most recent save."""
        _check_text("attempt_id", attempt_id)
        with self._cursor() as cur:
            rows = cur.execute(
                "SELECT phase, text, saved_at FROM (SELECT phase, text, saved_at, row_number() OVER "
                "(PARTITION BY phase ORDER BY saved_at DESC, seq DESC) AS newest "
                "FROM notes WHERE attempt_id = ?) AS ranked WHERE newest = 1",
                [attempt_id],
            ).fetchall()
        return {phase: {"text": text, "saved_at": _as_utc(at)} for phase, text, at in rows}

    def mark_phase(self, attempt_id: str, phase: str, now: datetime | None = None) -> None:
        """Record that the candidate moved to `phase` (for time spent per phase in the review)."""
        _check_text("attempt_id", attempt_id)
        _check_text("phase", phase)
        now = _check_aware("now", now) or self._clock()
        self._open_attempt(attempt_id, now)
        self._write([("INSERT INTO phase_marks (attempt_id, phase, marked_at) VALUES (?, ?, ?)",
                      [attempt_id, phase, now])])

    def phase_marks(self, attempt_id: str) -> list[tuple[str, datetime]]:
        _check_text("attempt_id", attempt_id)
        with self._cursor() as cur:
            rows = cur.execute(
                "SELECT phase, marked_at FROM phase_marks WHERE attempt_id = ? ORDER BY marked_at, seq", [attempt_id]
            ).fetchall()
        return [(phase, _as_utc(at)) for phase, at in rows]

    def profile_answers(self, profile: str) -> list[dict]:
        """Every answer of a profile with its attempt's question and mode, oldest first."""
        _check_text("profile", profile)
        with self._cursor() as cur:
            rows = cur.execute(
                "SELECT a.question, a.mode, a.id, n.drill_key, n.typed, n.score, n.answered_at "
                "FROM answers n JOIN attempts a ON a.id = n.attempt_id "
                "WHERE a.profile = ? ORDER BY n.answered_at, n.seq",
                [profile],
            ).fetchall()
        keys = ("question", "mode", "attempt_id", "drill_key", "typed", "score", "answered_at")
        out = [dict(zip(keys, r, strict=True)) for r in rows]
        for row in out:
            row["answered_at"] = _as_utc(row["answered_at"])
        return out

    # -- presets ----------------------------------------------------------------------------

    def save_preset(self, profile: str, question: str, name: str, params: dict) -> str:
        _check_text("profile", profile)
        _check_text("question", question)
        _check_text("name", name)
        if len(name) > 80:
            raise ValueError("a preset name is at most 80 characters")
        preset_id = uuid.uuid4().hex
        self._write([("INSERT INTO presets (id, profile, question, name, params_json, created_at) "
                      "VALUES (?, ?, ?, ?, ?, ?)",
                      [preset_id, profile, question, name, _encode_params(params), self._clock()])])
        return preset_id

    def presets(self, profile: str, question: str) -> list[dict]:
        """The profile's saved presets for a question, newest first (names may repeat)."""
        _check_text("profile", profile)
        _check_text("question", question)
        with self._cursor() as cur:
            rows = cur.execute(
                "SELECT id, name, params_json, created_at FROM presets WHERE profile = ? AND question = ? "
                "ORDER BY created_at DESC, id", [profile, question]).fetchall()
        return [{"id": i, "name": n, "params": json.loads(p), "created_at": _as_utc(c)} for i, n, p, c in rows]

    # -- claimed profiles -------------------------------------------------------------------

    def claim_profile(self, profile: str, passphrase: str, now: datetime | None = None) -> None:
        """Claim `profile` with `passphrase` (stored as a salted scrypt key). ProfileClaimedError if
        it is claimed already: a claim is never overwritten, so the first claimant keeps it."""
        _check_text("profile", profile)
        check_passphrase(passphrase)
        salt = os.urandom(16)
        key = _scrypt(passphrase, salt, SCRYPT_N)
        try:
            self._write([("INSERT INTO profile_claims (profile, salt_hex, key_hex, scrypt_n, claimed_at) "
                          "VALUES (?, ?, ?, ?, ?)", [profile, salt.hex(), key.hex(), SCRYPT_N,
                                                     _check_aware("now", now) or self._clock()])])
        except StoreError:
            if self.profile_claimed(profile):  # another session claimed it first
                raise ProfileClaimedError(f"The profile {profile!r} is already claimed.") from None
            raise

    def profile_claimed(self, profile: str) -> bool:
        with self._cursor() as cur:
            return cur.execute("SELECT 1 FROM profile_claims WHERE profile = ?", [profile]).fetchone() is not None

    def passphrase_opens(self, profile: str, passphrase: str) -> bool:
        """True if `profile` is claimed and `passphrase` is its passphrase (compared in constant time)."""
        if not isinstance(passphrase, str) or "\x00" in passphrase:
            return False
        with self._cursor() as cur:
            row = cur.execute("SELECT salt_hex, key_hex, scrypt_n FROM profile_claims WHERE profile = ?",
                              [profile]).fetchone()
        if row is None:
            return False
        salt_hex, key_hex, n = row
        return hmac.compare_digest(_scrypt(passphrase, bytes.fromhex(salt_hex), int(n)), bytes.fromhex(key_hex))

    def answer_count(self) -> int:
        """Number of answer rows in the whole store."""
        with self._cursor() as cur:
            return int(cur.execute("SELECT count(*) FROM answers").fetchone()[0])


def _insert_attempt(attempt_id: str, profile: str, question: str, mode: str, seed: int | None,
                    params_json: str, started: datetime, deadline: datetime | None,
                    settings_json: str) -> tuple[str, list[Any]]:
    return (
        f"INSERT INTO attempts ({_ATTEMPT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, ?)",
        [attempt_id, profile, question, mode, seed, params_json, started, deadline, settings_json],
    )


def _attempt_dict(row: tuple) -> dict:
    (id_, profile, question, mode, seed, params_json, started_at, deadline, finished_at,
     score, settings_json) = row
    return {
        "id": id_,
        "profile": profile,
        "question": question,
        "mode": mode,
        "seed": seed,
        "params": json.loads(params_json),
        "started_at": _as_utc(started_at),
        "deadline": _as_utc(deadline),
        "finished_at": _as_utc(finished_at),
        "score": score,
        "settings": json.loads(settings_json or "{}"),
    }


def _answer_dict(row: tuple) -> dict:
    keys = ("id", "attempt_id", "drill_key", "typed", "parsed_value", "parsed_unit",
            "reference_value", "reference_unit", "score", "answered_at", "seq")
    out = dict(zip(keys, row, strict=True))
    out["answered_at"] = _as_utc(out["answered_at"])
    return out


def open_store(
    path: str | os.PathLike[str] | None = None,
) -> tuple[Store, str | None]:
    """Open the store at `path` (default_db_path() if None); never raises StoreError.

    If the file can't be used, returns an in-memory store and a warning to show in a banner.
    """
    try:
        return Store.open(path), None
    except StoreError as err:
        return Store.open(MEMORY), f"{err} {NOT_KEPT}"
