"""Schema of the answer store, as an ordered list of forward migrations.

MIGRATIONS[i] takes a database from schema version i to i + 1; the runner in db.py executes
each one inside a transaction and then records the new version in `schema_version`.
Version 0 is a DuckDB file or a PostgreSQL schema with no `schema_version` table (new, or never
touched by the app). Never edit a migration that has shipped: append a new one and bump
SCHEMA_VERSION.

The same list runs on DuckDB and on PostgreSQL, so the SQL is the part both speak: VARCHAR,
BIGINT, DOUBLE PRECISION, TIMESTAMPTZ, sequences with nextval() defaults. Where the two must
differ, a statement is a dict {"duckdb": ..., "postgresql": ...}: one version number, one
variant per engine (`statements()` picks).
"""

from __future__ import annotations

SCHEMA_VERSION_TABLE = "schema_version"
# Every table the migrations create, read in full at open to find a damaged file.
TABLES = ("schema_version", "attempts", "answers", "notes", "phase_marks", "presets", "profile_claims")

Statement = str | dict[str, str]

MIGRATIONS: list[list[Statement]] = [
    # 0 -> 1. Written for DuckDB with DOUBLE; spelled DOUBLE PRECISION since the PostgreSQL
    # store, which DuckDB reads as the very same DOUBLE type: a file made by either spelling
    # has an identical schema (tests/test_store.py checks the column types).
    [
        "CREATE TABLE schema_version (version INTEGER NOT NULL)",
        "INSERT INTO schema_version (version) VALUES (0)",
        """
        CREATE TABLE attempts (
            id          VARCHAR PRIMARY KEY,
            profile     VARCHAR NOT NULL,
            question    VARCHAR NOT NULL,
            mode        VARCHAR NOT NULL,  -- 'study' or 'mock'
            seed        BIGINT,
            params_json VARCHAR NOT NULL,
            started_at  TIMESTAMPTZ NOT NULL,
            deadline    TIMESTAMPTZ,
            finished_at TIMESTAMPTZ,
            score       DOUBLE PRECISION
        )
        """,
        # seq breaks ties between answers stamped in the same microsecond (or a clock that
        # stepped back), so "latest answer per drill" is always the one recorded last.
        "CREATE SEQUENCE answers_seq START 1",
        """
        CREATE TABLE answers (
            id              VARCHAR PRIMARY KEY,
            attempt_id      VARCHAR NOT NULL,
            drill_key       VARCHAR NOT NULL,
            typed           VARCHAR NOT NULL,
            parsed_value    DOUBLE PRECISION,
            parsed_unit     VARCHAR,
            reference_value DOUBLE PRECISION,
            reference_unit  VARCHAR,
            score           DOUBLE PRECISION,
            answered_at     TIMESTAMPTZ NOT NULL,
            seq             BIGINT NOT NULL DEFAULT nextval('answers_seq')
        )
        """,
    ],
]

MIGRATIONS.append(
    # 1 -> 2: the timed mock interview. Notes and phase moves are append-only rows like
    # answers, so concurrent reruns never update the same row; "latest" is a query.
    [
        "ALTER TABLE attempts ADD COLUMN settings_json VARCHAR DEFAULT '{}'",
        "CREATE SEQUENCE notes_seq START 1",
        """
        CREATE TABLE notes (
            attempt_id VARCHAR NOT NULL,
            phase      VARCHAR NOT NULL,
            text       VARCHAR NOT NULL,
            saved_at   TIMESTAMPTZ NOT NULL,
            seq        BIGINT NOT NULL DEFAULT nextval('notes_seq')
        )
        """,
        "CREATE SEQUENCE phase_marks_seq START 1",
        """
        CREATE TABLE phase_marks (
            attempt_id VARCHAR NOT NULL,
            phase      VARCHAR NOT NULL,
            marked_at  TIMESTAMPTZ NOT NULL,
            seq        BIGINT NOT NULL DEFAULT nextval('phase_marks_seq')
        )
        """,
    ]
)

MIGRATIONS.append(
    # 2 -> 3: scenarios saved as presets (from a mock interview's draw, or by an instructor).
    [
        """
        CREATE TABLE presets (
            id          VARCHAR PRIMARY KEY,
            profile     VARCHAR NOT NULL,
            question    VARCHAR NOT NULL,
            name        VARCHAR NOT NULL,
            params_json VARCHAR NOT NULL,
            created_at  TIMESTAMPTZ NOT NULL
        )
        """,
    ]
)

MIGRATIONS.append(
    # 3 -> 4: a profile claimed with a passphrase (a salted scrypt key, never the passphrase).
    [
        """
        CREATE TABLE profile_claims (
            profile    VARCHAR PRIMARY KEY,
            salt_hex   VARCHAR NOT NULL,
            key_hex    VARCHAR NOT NULL,
            scrypt_n   BIGINT NOT NULL,
            claimed_at TIMESTAMPTZ NOT NULL
        )
        """,
    ]
)

SCHEMA_VERSION: int = len(MIGRATIONS)


def statements(migration: list[Statement], dialect: str) -> list[str]:
    """The migration's SQL for one engine ("duckdb" or "postgresql")."""
    out = []
    for stmt in migration:
        if isinstance(stmt, dict):
            if dialect not in stmt:
                raise KeyError(f"a migration statement has no {dialect} variant: {stmt}")
            out.append(stmt[dialect])
        else:
            out.append(stmt)
    return out
