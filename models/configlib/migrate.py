"""Migrating a config written against an older schema version: renamed keys move."""

from __future__ import annotations

from typing import Mapping

from models.configlib.merge import clone, drop_paths, get_path, set_path
from models.configlib.schema import Schema


def _prune_empty(config: dict, path: str) -> None:
    """Drop the tables on `path` that the move left empty, innermost first: an empty `old`
    table would itself be an unknown table to the new schema."""
    keys = path.split(".")[:-1]
    for depth in range(len(keys), 0, -1):
        parent = get_path(config, ".".join(keys[:depth - 1])) if depth > 1 else config
        if isinstance(parent, dict) and parent.get(keys[depth - 1]) == {}:
            del parent[keys[depth - 1]]


def migrate(config: Mapping, schema: Schema) -> tuple[dict, list[str]]:
    """Old version -> `schema.version`: move every renamed key to its new name. A file that
    sets both keeps the new value and says so; running it twice changes nothing."""
    out = clone(dict(config))
    notes = []
    for old, new in schema.renamed.items():
        value = get_path(out, old)
        if value is None:
            continue
        out = drop_paths(out, [old])
        if get_path(out, new) is None:
            set_path(out, new, value)
            notes.append(f"moved `{old}` to `{new}`")
        else:
            notes.append(f"dropped `{old}`: `{new}` is already set")
        _prune_empty(out, old)
    return out, notes
