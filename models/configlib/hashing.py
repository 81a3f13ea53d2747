"""Canonical bytes and their SHA-256: the same config always hashes the same, whatever its
source format, key order or whitespace."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_json(obj: Any) -> str:
    """Sorted keys, no whitespace: the same config always serializes to the same bytes."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def sha256_hex(obj: Any) -> str:
    return hashlib.sha256(canonical_json(obj).encode("utf-8")).hexdigest()
