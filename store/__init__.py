"""Persistence: attempts and answers in DuckDB (one process) or PostgreSQL (several replicas).

No streamlit here; the UI caches the Store.
"""

from store.db import MEMORY, NOT_KEPT, AttemptClosedError, ProfileClaimedError, Store, StoreError, open_store
from store.paths import ENV_VAR, default_db_path
from store.schema import SCHEMA_VERSION

__all__ = [
    "AttemptClosedError",
    "ENV_VAR",
    "MEMORY",
    "NOT_KEPT",
    "ProfileClaimedError",
    "SCHEMA_VERSION",
    "Store",
    "StoreError",
    "default_db_path",
    "open_store",
]
