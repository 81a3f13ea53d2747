"""The two engines under the Store: an embedded DuckDB file, or a PostgreSQL server.

Everything that differs between them lives here, so store/db.py writes one SQL text per query:
- placeholders: the store writes `?`; psycopg wants `%s` (to_pyformat converts, in one place);
- connections: DuckDB has one connection per process and a cursor per call; PostgreSQL has a
  small psycopg_pool pool shared by the process's session threads;
- transactions: DuckDB writes are serialized by a process lock (one process owns the file);
  PostgreSQL writes run concurrently from every replica, and the two find-or-create paths
  (migrations, today's study attempt) take a transaction-scoped advisory lock instead;
- catalog lookups, the write probe, and turning driver errors into plain StoreErrors.
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import duckdb

from store.paths import ENV_VAR


class StoreError(Exception):
    """The answer store can't be used; str(err) is a plain sentence for the learner.

    `kind` is one of: 'locked', 'corrupt', 'permission', 'path', 'schema', 'closed', 'other',
    and for a PostgreSQL store also 'unreachable' (no server at that address, or it went away),
    'auth' (login refused) and 'missing' (no such database on the server).
    """

    def __init__(self, message: str, *, kind: str = "other", path: str | None = None):
        super().__init__(message)
        self.message = message
        self.kind = kind
        self.path = path


SERVER_SCHEMES = ("postgresql://", "postgres://")

# pg_advisory_xact_lock(namespace, hashtext(key)): "WALK" and "WALL" in ASCII, far from
# small integers another application sharing the database might use.
LOCK_MIGRATIONS = 0x57414C4B
LOCK_STUDY = 0x57414C4C


def is_server_url(location: object) -> bool:
    return isinstance(location, str) and location.strip().lower().startswith(SERVER_SCHEMES)


def redact_url(url: str) -> str:
    """The URL with any password replaced by ***: safe for a banner, a log or an exception."""
    parts = urlsplit(url.strip())
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        if ":" in userinfo:
            userinfo = userinfo.split(":", 1)[0] + ":***"
        netloc = f"{userinfo}@{host}"
    query = parts.query
    if query:
        pairs = [(k, "***" if k.lower() == "password" else v) for k, v in parse_qsl(query, keep_blank_values=True)]
        query = urlencode(pairs, safe="*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


_QUOTED = re.compile(r"('(?:[^']|'')*'|\"(?:[^\"]|\"\")*\")")


@functools.lru_cache(maxsize=256)
def to_pyformat(sql: str) -> str:
    """`?` placeholders -> psycopg's `%s`; a literal `%` -> `%%`; quoted text keeps its `?`."""
    pieces = _QUOTED.split(sql)
    for i in range(0, len(pieces), 2):  # even pieces are outside quotes
        pieces[i] = pieces[i].replace("%", "%%").replace("?", "%s")
    for i in range(1, len(pieces), 2):
        pieces[i] = pieces[i].replace("%", "%%")
    return "".join(pieces)


def _first_line(exc: BaseException) -> str:
    raw = str(exc).strip()
    return raw.splitlines()[0].strip() if raw else type(exc).__name__


# --- DuckDB ---------------------------------------------------------------------------------


def explain_duckdb(exc: BaseException, path: str, *, doing: str = "open") -> StoreError:
    """Map a duckdb or OS error raised while using the file at `path` to a StoreError."""
    raw = str(exc)
    low = raw.lower()
    change = f"set {ENV_VAR} to a different file"
    if "lock" in low and ("could not set lock" in low or "conflicting lock" in low):
        pid = re.search(r"\(PID (\d+)\)", raw)
        holder = f" (process {pid.group(1)})" if pid else ""
        return StoreError(
            f"The answer store {path} is locked by another process{holder}: another copy of "
            f"the app is probably running. Close it, or {change}.",
            kind="locked",
            path=path,
        )
    if (
        "not a valid duckdb database" in low
        or "corrupt" in low
        or "checksum" in low
        or "could not read enough bytes" in low
        or isinstance(exc, duckdb.SerializationException)
    ):
        return StoreError(
            f"The file {path} is not an answer store this app can read (it is not a DuckDB "
            f"database, or it is damaged). Move it aside, or {change}.",
            kind="corrupt",
            path=path,
        )
    if (
        isinstance(exc, PermissionError)
        or "permission denied" in low
        or "read-only file system" in low
        or "operation not permitted" in low
    ):
        return StoreError(
            f"Cannot write the answer store {path}: permission denied (the folder or the file "
            f"is read-only). Make it writable, or {change} in a folder you can write to.",
            kind="permission",
            path=path,
        )
    if (
        isinstance(exc, (NotADirectoryError, FileExistsError, FileNotFoundError, IsADirectoryError))
        or "not a directory" in low
        or "no such file or directory" in low
        or "is a directory" in low
    ):
        return StoreError(
            f"Cannot use {path} for the answer store: part of that path is not a folder, or "
            f"the path is a folder rather than a file. {change[0].upper() + change[1:]}.",
            kind="path",
            path=path,
        )
    return StoreError(
        f"Could not {doing} the answer store {path}: {_first_line(exc)}",
        kind="other",
        path=path,
    )


class DuckDBBackend:
    """One duckdb connection per process; a cursor per call so session threads never share one."""

    name = "duckdb"
    noun = "file"
    errors: tuple[type[BaseException], ...] = (duckdb.Error,)

    def __init__(self, conn: duckdb.DuckDBPyConnection, shown: str):
        self._conn = conn
        self.shown = shown
        # DuckDB aborts one of two concurrent transactions that update the same row ("Conflict
        # on update"), e.g. two reruns finishing one attempt. Only this process owns the file
        # and each write takes about a millisecond, so one writer at a time costs nothing worth
        # having; reads stay concurrent. The lock also makes find-or-create atomic here.
        self._write_lock = threading.Lock()

    @contextmanager
    def cursor(self) -> Iterator[Any]:
        with self._conn.cursor() as cur:
            yield cur

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        with self._write_lock, self._conn.cursor() as cur:
            cur.execute("BEGIN TRANSACTION")
            try:
                yield cur
                cur.execute("COMMIT")
            except BaseException:
                try:
                    cur.execute("ROLLBACK")
                except duckdb.Error:
                    pass  # a failed COMMIT has already ended the transaction
                raise

    def lock(self, cur: Any, namespace: int, key: str) -> None:
        """Nothing to do: transaction() already holds the process's only write lock."""

    def has_table(self, cur: Any, name: str) -> bool:
        return bool(cur.execute(
            "SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database() "
            "AND schema_name = 'main' AND table_name = ?", [name]).fetchone()[0])

    def probe_write(self) -> None:
        # An existing file in a read-only folder opens fine and fails at the first commit
        # (duckdb can't create the .wal); find out now, not when the learner's answer is lost.
        with self.transaction() as cur:
            cur.execute("CREATE TABLE _walkthroughs_write_probe (x INTEGER)")
            cur.execute("DROP TABLE _walkthroughs_write_probe")

    def explain(self, exc: BaseException, doing: str = "open") -> StoreError:
        return explain_duckdb(exc, self.shown, doing=doing)

    def close(self) -> None:
        self._conn.close()


# --- PostgreSQL -----------------------------------------------------------------------------

POOL_MAX = 8          # per replica: session threads hold a connection for a millisecond or two
POOL_TIMEOUT_S = 10   # waiting longer than this for a connection means the server is gone
CONNECT_TIMEOUT_S = 10


def _pg_modules():
    try:
        import psycopg
        import psycopg_pool
    except ImportError as exc:  # a main dependency; only a broken install gets here
        raise StoreError(
            f"{ENV_VAR} names a PostgreSQL server, but the psycopg driver is not installed "
            f"({exc}). Install the app's dependencies (pip install -e .).",
            kind="other",
        ) from exc
    return psycopg, psycopg_pool


def explain_postgres(exc: BaseException, shown: str, *, doing: str = "open",
                     user: str = "", dbname: str = "") -> StoreError:
    """Map a psycopg (or pool) error for the server at `shown` (a redacted URL) to a StoreError."""
    raw = str(exc)
    low = raw.lower()
    sqlstate = getattr(exc, "sqlstate", None) or ""
    where = f"the PostgreSQL answer store {shown}"
    if (
        sqlstate == "3D000"
        or re.search(r'database ".*" does not exist', low)
    ):
        return StoreError(
            f"The database {dbname or '(unnamed)'} does not exist on the server of {where}. Create it "
            f"(createdb {dbname or 'walkthroughs'}), or fix the database name in {ENV_VAR}.",
            kind="missing",
            path=shown,
        )
    if (
        sqlstate in ("28P01", "28000")
        or "password authentication failed" in low
        or "authentication failed" in low
        or "no password supplied" in low
        or "no pg_hba.conf entry" in low
        or re.search(r'role ".*" does not exist', low)
    ):
        return StoreError(
            f"The server refused the login of user {user or '(default)'} to {where} "
            f"(authentication failed). Check the user name and password in {ENV_VAR}.",
            kind="auth",
            path=shown,
        )
    if sqlstate in ("42501", "25006") or "permission denied" in low or "read-only transaction" in low:
        return StoreError(
            f"User {user or '(default)'} may not write {where} ({_first_line(exc)}). Grant it "
            f"INSERT and UPDATE on the app's tables, or set {ENV_VAR} to a database it can write.",
            kind="permission",
            path=shown,
        )
    pool_timeout = type(exc).__name__ == "PoolTimeout"
    if (
        pool_timeout
        or "connection refused" in low
        or "could not connect" in low
        or "connection failed" in low
        or "failed to resolve host" in low
        or "could not translate host name" in low
        or "timeout expired" in low
        or "server closed the connection" in low
        or "terminating connection" in low
        or "the connection is closed" in low
        or "consuming input failed" in low
        or "the database system is" in low  # starting up / shutting down / in recovery mode
        or sqlstate.startswith("08")
        or sqlstate in ("57P01", "57P02", "57P03")
    ):
        cause = ("no connection became free or could be made in time" if pool_timeout
                 else _cause(raw))
        return StoreError(
            f"Cannot reach the PostgreSQL server of {where} ({cause}). Check that the server "
            f"is running and that {ENV_VAR} names the right host and port.",
            kind="unreachable",
            path=shown,
        )
    return StoreError(f"Could not {doing} {where}: {_first_line(exc)}", kind="other", path=shown)


def _cause(raw: str) -> str:
    """The informative tail of a libpq message, on one line, without the address repeated."""
    text = " ".join(raw.split())
    text = re.sub(r"^connection failed: ", "", text)
    text = re.sub(r'^connection to server at "[^"]*"(?: \([^)]*\))?, port \d+ failed: ', "", text)
    text = re.sub(r"\s*Is the server running.*$", "", text)
    text = text.strip().rstrip(".")
    return text or "no answer"


class _PgCursor:
    """A psycopg cursor that speaks the store's `?` placeholders."""

    __slots__ = ("_cur",)

    def __init__(self, cur: Any):
        self._cur = cur

    def execute(self, sql: str, args: list[Any] | tuple[Any, ...] | None = None) -> Any:
        if args:
            return self._cur.execute(to_pyformat(sql), args)
        return self._cur.execute(sql)


class PostgresBackend:
    """A psycopg_pool pool (autocommit connections); transaction() wraps BEGIN/COMMIT."""

    name = "postgresql"
    noun = "database"

    def __init__(self, url: str):
        psycopg, psycopg_pool = _pg_modules()
        self.errors: tuple[type[BaseException], ...] = (psycopg.Error, psycopg_pool.PoolTimeout)
        self.url = url.strip()
        self.shown = redact_url(self.url)
        try:
            info = psycopg.conninfo.conninfo_to_dict(self.url)
        except psycopg.Error as exc:
            raise StoreError(
                f"{ENV_VAR} is not a PostgreSQL URL this app can read ({_first_line(exc)}). "
                "Use postgresql://user:password@host:port/database.",
                kind="path",
                path=self.shown,
            ) from exc
        self.user = str(info.get("user", ""))
        self.dbname = str(info.get("dbname", ""))
        kwargs: dict[str, Any] = {"autocommit": True}
        if "connect_timeout" not in info:
            kwargs["connect_timeout"] = CONNECT_TIMEOUT_S
        if "application_name" not in info:
            kwargs["application_name"] = "walkthroughs"
        # A first plain connection: its failure carries the server's reason (a pool that fails
        # to connect only says it timed out). It also runs the migrations, then leaves.
        try:
            first = psycopg.connect(self.url, **kwargs)
        except psycopg.Error as exc:
            raise self.explain(exc) from exc
        self._first: Any = first
        self._pool = psycopg_pool.ConnectionPool(
            self.url,
            min_size=1,
            max_size=POOL_MAX,
            kwargs=kwargs,
            timeout=POOL_TIMEOUT_S,
            # Check a connection as it leaves the pool: a server restart or a dropped
            # connection costs a reconnect, not a learner's answer.
            check=psycopg_pool.ConnectionPool.check_connection,
            name="walkthroughs",
            open=False,
        )

    def _opened_pool(self) -> Any:
        first, self._first = self._first, None
        if first is not None:
            first.close()
            self._pool.open(wait=False)
        return self._pool

    @contextmanager
    def _connection(self) -> Iterator[Any]:
        if self._first is not None:  # still opening: use the first connection (one thread)
            yield self._first
            return
        with self._pool.connection() as conn:
            yield conn

    @contextmanager
    def cursor(self) -> Iterator[_PgCursor]:
        with self._connection() as conn, conn.cursor() as cur:
            yield _PgCursor(cur)

    @contextmanager
    def transaction(self) -> Iterator[_PgCursor]:
        with self._connection() as conn, conn.transaction(), conn.cursor() as cur:
            yield _PgCursor(cur)

    def lock(self, cur: _PgCursor, namespace: int, key: str) -> None:
        """Serialize find-or-create across every replica: held until the transaction ends."""
        cur.execute(f"SELECT pg_advisory_xact_lock({int(namespace)}, hashtext(?))", [key])

    def has_table(self, cur: _PgCursor, name: str) -> bool:
        return bool(cur.execute(
            "SELECT count(*) FROM information_schema.tables "
            "WHERE table_schema = current_schema() AND table_name = ?", [name]).fetchone()[0])

    def probe_write(self) -> None:
        # The tables exist (migrations ran, maybe by another replica or an admin): check that
        # this login may add rows, and that the server is not a read-only standby.
        with self.cursor() as cur:
            read_only = cur.execute("SHOW transaction_read_only").fetchone()[0]
            missing = cur.execute(
                "SELECT string_agg(t || ' ' || p, ', ') FROM (VALUES "
                "('attempts', 'INSERT'), ('attempts', 'UPDATE'), ('answers', 'INSERT'), "
                "('notes', 'INSERT'), ('phase_marks', 'INSERT'), ('presets', 'INSERT')) AS need(t, p) "
                "WHERE NOT has_table_privilege(t, p)").fetchone()[0]
        if read_only == "on":
            raise StoreError(
                f"The PostgreSQL answer store {self.shown} is read-only (a standby, or "
                f"default_transaction_read_only is on). Point {ENV_VAR} at the primary.",
                kind="permission", path=self.shown)
        if missing:
            raise StoreError(
                f"User {self.user or '(default)'} may not write the PostgreSQL answer store "
                f"{self.shown} (no privilege: {missing}). Grant them, or set {ENV_VAR} to a "
                "database it can write.",
                kind="permission", path=self.shown)
        self._opened_pool()

    def explain(self, exc: BaseException, doing: str = "open") -> StoreError:
        return explain_postgres(exc, self.shown, doing=doing, user=self.user, dbname=self.dbname)

    def close(self) -> None:
        first, self._first = self._first, None
        if first is not None:
            first.close()
        self._pool.close()
