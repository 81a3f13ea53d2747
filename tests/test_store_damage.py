"""A damaged answer-store file is found at open, not at a learner's first read: a banner and a
memory store, the file left untouched; a WAL that cannot be replayed is moved aside by name,
while one a crash left with answers in it is replayed."""

import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from store.db import MEMORY, Store, open_store

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def good_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("good") / "answers.duckdb"
    with Store.open(path) as s:
        for i in range(300):  # about 1.3 MB: enough blocks that the middle of the file holds rows
            a = s.start_attempt("alice", "serving-platform", "mock", {"note": "y" * 200, "i": i}, seed=i)
            s.record_answer(a, "decode_step_s", "36 ms", 0.036, "s", 0.0363, "s", 1.0)
    return path


def _copy(good: Path, tmp_path: Path) -> Path:
    out = tmp_path / "answers.duckdb"
    shutil.copyfile(good, out)
    return out


def _fell_back(path: Path) -> str:
    before = path.read_bytes()
    store, warning = open_store(path)
    assert store.path == MEMORY and warning and "damaged" in warning
    assert store.attempts("alice") == []  # a working store, empty
    store.start_attempt("bob", "serving-platform", "mock", {}, seed=1)
    assert path.read_bytes() == before  # left untouched
    return warning


def test_a_file_truncated_to_half_falls_back_with_a_banner(good_file, tmp_path):
    path = _copy(good_file, tmp_path)
    with open(path, "r+b") as f:
        f.truncate(path.stat().st_size // 2)
    assert "part of it cannot be read" in _fell_back(path)  # DuckDB opens it; the first full read fails


def test_random_bytes_over_rows_fall_back_with_a_banner(good_file, tmp_path):
    path = _copy(good_file, tmp_path)
    with open(path, "r+b") as f:
        f.seek(path.stat().st_size // 10)
        f.write(random.Random(1).randbytes(16 * 1024))
    _fell_back(path)


def test_a_schema_version_holding_text_is_a_damaged_file(good_file, tmp_path):
    path = _copy(good_file, tmp_path)
    conn = duckdb.connect(str(path))
    conn.execute("ALTER TABLE schema_version ALTER version TYPE VARCHAR")
    conn.execute("UPDATE schema_version SET version = 'abc'")
    conn.close()
    assert "schema version is 'abc'" in _fell_back(path)


def test_a_garbage_wal_is_moved_aside_by_name_and_the_answers_stay(good_file, tmp_path):
    path = _copy(good_file, tmp_path)
    garbage = random.Random(2).randbytes(5000)
    Path(f"{path}.wal").write_bytes(garbage)
    store, warning = open_store(path)
    assert warning is None and store.path == str(path)
    assert len(store.attempts("alice")) == 300
    aside = [p for p in tmp_path.iterdir() if ".wal.unreadable-" in p.name]
    assert len(aside) == 1 and aside[0].read_bytes() == garbage
    assert str(aside[0]) in store.notice
    store.close()


def test_a_wal_a_crash_left_is_replayed_not_moved(tmp_path):
    path = tmp_path / "answers.duckdb"
    Store.open(path).close()
    # a process that writes one answer and dies without closing: the answer is only in the WAL
    script = (f"import os, sys; sys.path.insert(0, {str(ROOT)!r}); from store.db import Store; "
              f"s = Store.open({str(path)!r}); "
              "a = s.start_attempt('alice', 'serving-platform', 'mock', {}, seed=1); "
              "s.record_answer(a, 'k', '1 ms', 0.001, 's', 0.001, 's', 1.0); os._exit(0)")
    subprocess.run([sys.executable, "-c", script], check=True)
    assert Path(f"{path}.wal").is_file()
    store, warning = open_store(path)
    assert warning is None and store.notice is None
    assert len(store.profile_answers("alice")) == 1
    assert not any(".wal.unreadable-" in p.name for p in tmp_path.iterdir())
    store.close()
