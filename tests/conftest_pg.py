"""A throwaway PostgreSQL cluster from Debian's binaries, for the store tests and the replica test.

initdb and pg_ctl come from /usr/lib/postgresql/<version>/bin (Debian's `postgresql` package, which
`make test` installs). initdb refuses to run as root, so as root the cluster belongs to the
`postgres` system user that package creates, in a temp dir outside pytest's root-only tmp folder.
The server listens on 127.0.0.1 only, on a free port, with password (scram) login over TCP.

`PostgresCluster` is plain Python so bench/load.py can start the same cluster; the `pg_cluster`
fixture starts one per test session (per xdist worker) and stops it at the end.
"""

from __future__ import annotations

import glob
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from urllib.parse import quote

import pytest

INSTALL_HINT = (
    "PostgreSQL server binaries (initdb, pg_ctl) were not found in /usr/lib/postgresql/*/bin or on "
    "PATH. The store tests run against a throwaway cluster: `make test` installs Debian's "
    "'postgresql' package when run as root; otherwise: sudo apt-get install postgresql"
)


def find_pg_bindir() -> Path | None:
    """The bin dir of the newest installed PostgreSQL server, or None."""
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0,
    )
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    if initdb and shutil.which("pg_ctl"):
        return Path(os.path.realpath(initdb)).parent
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresCluster:
    """initdb + pg_ctl start on 127.0.0.1:<free port>; `stop()` removes everything.

    durable=False turns fsync off (tests: nothing to survive a power cut); the load benchmark
    keeps PostgreSQL's defaults so its numbers are what a deployment would see.
    """

    SUPERUSER = "walkthroughs"

    def __init__(self, *, durable: bool = False):
        bindir = find_pg_bindir()
        if bindir is None:
            raise RuntimeError(INSTALL_HINT)
        self.bindir = bindir
        self.durable = durable
        self.password = secrets.token_hex(12)
        self.port = 0
        self._os_user: str | None = None
        if os.geteuid() == 0:
            self._os_user = self._ensure_os_user()
        # Not under pytest's tmp dir: that one is 0700 root, which the postgres user cannot enter.
        self.dir = Path(tempfile.mkdtemp(prefix="walkthroughs-pg-"))
        self.data = self.dir / "data"
        self.log = self.dir / "server.log"
        self._started = False
        self._tests_db = False
        if self._os_user:
            pw = pwd.getpwnam(self._os_user)
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)

    @staticmethod
    def _ensure_os_user() -> str:
        try:
            pwd.getpwnam("postgres")
        except KeyError:  # Debian's package creates it; a hand-built install may not have
            subprocess.run(["useradd", "--system", "--user-group", "--no-create-home",
                            "--shell", "/usr/sbin/nologin", "postgres"], check=True)
        return "postgres"

    def _run(self, args: list[str], **kw) -> subprocess.CompletedProcess:
        user = {"user": self._os_user, "group": pwd.getpwnam(self._os_user).pw_gid} if self._os_user else {}
        proc = subprocess.run(args, capture_output=True, text=True, cwd=self.dir, **user, **kw)
        if proc.returncode != 0:
            log = self.log.read_text(errors="replace")[-3000:] if self.log.exists() else ""
            raise RuntimeError(f"{' '.join(args[:2])} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}\n{log}")
        return proc

    def start(self) -> PostgresCluster:
        pwfile = self.dir / "pw"
        pwfile.write_text(self.password + "\n")
        if self._os_user:
            pw = pwd.getpwnam(self._os_user)
            os.chown(pwfile, pw.pw_uid, pw.pw_gid)
        self._run([str(self.bindir / "initdb"), "-D", str(self.data), "-U", self.SUPERUSER,
                   f"--pwfile={pwfile}", "--auth-host=scram-sha-256", "--auth-local=peer",
                   "--encoding=UTF8", "--locale=C", "--no-sync"])
        pwfile.unlink()
        settings = {
            "listen_addresses": "'127.0.0.1'",
            "unix_socket_directories": f"'{self.dir}'",
            "max_connections": "200",
            "shared_buffers": "64MB",
            "log_min_messages": "warning",
        }
        if not self.durable:
            settings |= {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}
        with open(self.data / "postgresql.conf", "a") as conf:
            conf.write("\n# walkthroughs test cluster\n")
            conf.writelines(f"{k} = {v}\n" for k, v in settings.items())
        for attempt in range(3):  # a free port can be taken between the probe and the bind
            self.port = free_port()
            try:
                self._run([str(self.bindir / "pg_ctl"), "start", "-w", "-t", "60", "-D", str(self.data),
                           "-l", str(self.log), "-o", f"-p {self.port}"])
                self._started = True
                return self
            except RuntimeError:
                if attempt == 2:
                    raise
        return self

    def url(self, dbname: str = "postgres", *, user: str | None = None, password: str | None = None) -> str:
        user = user or self.SUPERUSER
        password = self.password if password is None else password
        return f"postgresql://{quote(user)}:{quote(password)}@127.0.0.1:{self.port}/{dbname}"

    def sql(self, statement: str, dbname: str = "postgres") -> list[tuple]:
        """Run one statement as the superuser in autocommit (CREATE DATABASE needs that)."""
        import psycopg

        with psycopg.connect(self.url(dbname), autocommit=True) as conn:
            cur = conn.execute(statement)
            return cur.fetchall() if cur.description else []

    def create_database(self, prefix: str = "t") -> str:
        """A new empty database; returns its URL."""
        name = f"{prefix}_{uuid.uuid4().hex[:12]}"
        self.sql(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def create_schema(self, prefix: str = "t") -> str:
        """A new empty schema in the shared `tests` database; returns a URL whose search_path is it.

        Thirty times faster than a database (CREATE DATABASE copies a template: about 0.6 s on
        a busy two-core machine), and a real layout too: one database, a schema per class.
        """
        if not self._tests_db:
            self.sql('CREATE DATABASE "tests"')
            self._tests_db = True
        name = f"{prefix}_{uuid.uuid4().hex[:12]}"
        self.sql(f'CREATE SCHEMA "{name}"', "tests")
        return self.url("tests") + "?options=" + quote(f"-c search_path={name}", safe="")

    def stop(self) -> None:
        if self._started:
            try:
                self._run([str(self.bindir / "pg_ctl"), "stop", "-m", "immediate", "-w", "-D", str(self.data)])
            except RuntimeError:
                pass
            self._started = False
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> PostgresCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@pytest.fixture(scope="session")
def pg_cluster():
    """One throwaway cluster per test session (per xdist worker); fails, never skips, without it."""
    try:
        cluster = PostgresCluster()
    except RuntimeError as exc:
        pytest.fail(str(exc), pytrace=False)
    started = time.monotonic()
    try:
        cluster.start()
    except (RuntimeError, OSError) as exc:
        cluster.stop()
        pytest.fail(f"Could not start a throwaway PostgreSQL cluster: {exc}", pytrace=False)
    cluster.startup_s = time.monotonic() - started
    yield cluster
    cluster.stop()
