"""Fixtures shared by every test folder: the throwaway PostgreSQL cluster (tests/conftest_pg.py)."""

from tests.conftest_pg import pg_cluster  # noqa: F401  (a fixture, found by name)
