"""A write-ahead log left beside a DuckDB file: replay it if it holds answers, else set it aside.

DuckDB deletes a WAL it cannot replay when it opens the file, without a word. A WAL left by a crash
holds committed answers that are not yet in the file, so it must be replayed, never dropped; one
that is garbage must not vanish either (the README promises a damaged file is left untouched). So
before opening, the WAL is tried on copies: the file with the WAL and the file without are read in
full; if the WAL changes nothing it is garbage (a crash's WAL always holds a committed change),
and it is moved aside under a name the banner gives.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from datetime import datetime, timezone
from pathlib import Path

import duckdb


def fingerprint(path: Path) -> str:
    """A digest of every row of every table (raises duckdb.Error if the file cannot be read)."""
    conn = duckdb.connect(str(path))
    try:
        digest = hashlib.sha256()
        tables = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' ORDER BY 1").fetchall()
        for (table,) in tables:
            rows = conn.execute(f'SELECT * FROM "{table}"').fetchall()
            digest.update(table.encode())
            for row in sorted(map(repr, rows)):
                digest.update(row.encode())
        return digest.hexdigest()
    finally:
        conn.close()


def set_aside_unreplayable(file: Path) -> Path | None:
    """Move `file`'s WAL aside if replaying it changes nothing; return where it went, or None."""
    wal = file.with_name(file.name + ".wal")
    if not wal.is_file() or not file.is_file():
        return None
    with tempfile.TemporaryDirectory() as tmp:
        with_wal, without = Path(tmp, "with.duckdb"), Path(tmp, "without.duckdb")
        shutil.copyfile(file, with_wal)
        shutil.copyfile(wal, Path(tmp, "with.duckdb.wal"))
        shutil.copyfile(file, without)
        try:
            base = fingerprint(without)
        except duckdb.Error:
            return None  # the file itself is unreadable: the open that follows says so
        try:
            replayed = fingerprint(with_wal)
        except duckdb.Error:
            replayed = base  # DuckDB refused the WAL outright: garbage as well
    if replayed != base:
        return None  # it holds answers: let DuckDB replay it
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    aside = wal.with_name(f"{wal.name}.unreadable-{stamp}")
    wal.rename(aside)
    return aside
