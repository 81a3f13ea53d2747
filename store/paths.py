"""Where the answer store lives: a file on disk, or a PostgreSQL server named by URL."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

ENV_VAR = "WALKTHROUGHS_DB"
APP_NAME = "walkthroughs"
DB_FILENAME = "walkthroughs.duckdb"


def default_db_path() -> str:
    """`$WALKTHROUGHS_DB` if set (and non-empty), else `<user data dir>/walkthroughs.duckdb`.

    `$WALKTHROUGHS_DB=:memory:` is passed through, giving an in-memory store, and so is a
    `postgresql://user:password@host:port/database` URL: a store shared by several replicas.
    """
    env = os.environ.get(ENV_VAR, "").strip()
    if env:
        if env == ":memory:" or env.lower().startswith(("postgresql://", "postgres://")):
            return env
        return os.path.expanduser(env)
    # appauthor=False: on Windows, don't nest the folder under a vendor name.
    data_dir = Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
    except OSError:
        # Store.open() retries the mkdir and turns the failure into a plain StoreError.
        pass
    return str(data_dir / DB_FILENAME)
