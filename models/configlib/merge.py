"""Merging layers, and the dotted-path helpers the rest of the library walks configs with.

A config is JSON-shaped data: nested dicts of scalars and lists. A path names a leaf as its keys
joined by dots (`optim.lr`); lists are leaves, because they merge as one value."""

from __future__ import annotations

from typing import Any, Mapping, Sequence


def clone(obj: Any) -> Any:
    """A deep copy of JSON-shaped data (dicts, lists, scalars), much cheaper than copy.deepcopy."""
    if isinstance(obj, dict):
        return {k: clone(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [clone(v) for v in obj]
    return obj


def deep_merge(base: Mapping, over: Mapping) -> dict:
    """A new dict: maps merge key by key, recursively; anything else in `over` replaces whole.

    Lists are replaced, never appended: a list is one value (a data mix, Adam's betas), and an
    append would make the result depend on how many layers mentioned it. Neither input is
    modified, and the result shares nothing with them."""
    out = {k: clone(v) for k, v in base.items()}
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = deep_merge(out[k], v)
        else:
            out[k] = clone(v)
    return out


def flatten(obj: Mapping, prefix: str = "") -> dict[str, Any]:
    """Leaf path -> value; lists are leaves (they are replaced whole), empty maps have no leaves."""
    out: dict[str, Any] = {}
    for k, v in obj.items():
        path = f"{prefix}.{k}" if prefix else str(k)
        if isinstance(v, dict):
            out.update(flatten(v, path))
        else:
            out[path] = v
    return out


def get_path(config: Mapping, path: str) -> Any:
    """The value at a dotted path, or None when any key on the way is absent."""
    node: Any = config
    for k in path.split("."):
        if not isinstance(node, dict) or k not in node:
            return None
        node = node[k]
    return node


def set_path(obj: dict, path: str, value: Any) -> dict:
    """Set a dotted path in a nested dict (creating maps on the way); returns obj."""
    keys = path.split(".")
    node = obj
    for k in keys[:-1]:
        nxt = node.get(k)
        if not isinstance(nxt, dict):
            nxt = {}
            node[k] = nxt
        node = nxt
    node[keys[-1]] = value
    return obj


def drop_paths(obj: Mapping, paths: Sequence[str]) -> dict:
    """A copy without the given dotted paths (a path may name a whole section)."""
    out = clone(dict(obj))
    for path in paths:
        keys = path.split(".")
        node = out
        for k in keys[:-1]:
            node = node.get(k) if isinstance(node, dict) else None
            if not isinstance(node, dict):
                break
        else:
            if isinstance(node, dict):
                node.pop(keys[-1], None)
    return out


def related(a: str, b: str) -> bool:
    """One path is the other or lies under it."""
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


def provenance(layers: Sequence[tuple[str, Mapping]], merged: Mapping) -> dict[str, str]:
    """Leaf of the merged config -> the layer its value came from.

    That is the last layer holding exactly that leaf: a later layer that replaced an ancestor
    with a scalar, or the leaf with a map, would have removed the leaf from the result."""
    flats = [(name, flatten(layer)) for name, layer in layers]
    prov = {}
    for path in flatten(merged):
        for name, flat in reversed(flats):
            if path in flat:
                prov[path] = name
                break
    return prov
