"""Validating a merged config against a Schema: unknown, missing, mistyped and out-of-range
keys, then the schema's cross-field rules. Each finding says what a flexible loader would
silently do instead."""

from __future__ import annotations

import difflib
import json
import math
import re
from typing import Any, Mapping

from models.configlib.merge import clone, get_path, set_path
from models.configlib.schema import Field, Issue, Schema


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def normalize(value: Any, f: Field) -> tuple[bool, Any]:
    """(ok, value as the schema's type), converting only when nothing is lost."""
    if f.kind == "int":
        if _is_number(value) and float(value).is_integer() and math.isfinite(value):
            return True, int(value)
        return False, value
    if f.kind == "float":
        if _is_number(value):
            return True, float(value)
        return False, value
    if f.kind == "str":
        return isinstance(value, str), value
    if not isinstance(value, list):
        return False, value
    if f.kind == "list[float]":
        if all(_is_number(x) for x in value):
            return True, [float(x) for x in value]
        return False, value
    return all(isinstance(x, str) for x in value), value


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "an integer-valued float" if value.is_integer() else "a fraction"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a table"
    return type(value).__name__


_WANT = {"int": "an integer", "float": "a number", "str": "a string", "list[float]": "a list of numbers",
         "list[str]": "a list of strings"}


def range_problem(value: Any, f: Field) -> str | None:
    """What is wrong with a well-typed value, as the end of a sentence, or None."""
    values = value if isinstance(value, list) else [value]
    if f.length is not None and isinstance(value, list) and len(value) != f.length:
        return f"needs exactly {f.length} values, got {len(value)}"
    if f.kind == "list[str]" and not value:
        return "needs at least one entry"
    for x in values:
        if not _is_number(x):
            continue
        if f.gt is not None and not x > f.gt:
            return f"must be above {f.gt:g}, got {x:g}"
        if f.lo is not None and x < f.lo:
            return f"must be at least {f.lo:g}, got {x:g}"
        if f.hi is not None and x > f.hi:
            return f"must be at most {f.hi:g}, got {x:g}"
    if f.choices and value not in f.choices:
        return f"must be one of {', '.join(f.choices)}; got {value!r}"
    if f.pattern and isinstance(value, str) and not re.fullmatch(f.pattern, value):
        return f"must be {f.help or 'in the expected format'}; got {value!r}"
    return None


def validate(config: Mapping, schema: Schema) -> tuple[dict, list[Issue]]:
    """The strict schema: (config normalized to the schema's types, issues). Pure, never raises.

    Checks, in order: unknown keys (with the closest known key), missing keys, types (converted
    only when lossless: 1 -> 1.0 for a float, 1e12 -> 1000000000000 for an integer), ranges, and
    the schema's cross-field rules over the leaves that passed their own checks."""
    fields, sections, computed = schema.fields, schema.sections, schema.computed
    issues: list[Issue] = []
    flat_seen: dict[str, Any] = {}
    normalized = clone(dict(config))
    known_leaves = sorted(fields)

    def walk(node: Mapping, prefix: str) -> None:
        for k, v in node.items():
            path = f"{prefix}.{k}" if prefix else str(k)
            if path in fields:
                flat_seen[path] = v
                continue
            if path in sections:
                if isinstance(v, dict):
                    walk(v, path)
                else:
                    issues.append(Issue(path, "type", f"`{path}` must be a table of settings, got {_type_name(v)}.",
                                        "every setting under it falls back to code defaults or crashes the loader"))
                continue
            if computed and (path == computed or path.startswith(computed + ".")):
                issues.append(Issue(path, "unknown", f"`{path}` is computed by the resolver; a layer may not set it.",
                                    "the trainer reads a value that disagrees with the one it computes"))
                continue
            if path in schema.renamed:
                target = schema.renamed[path]
                current = get_path(config, target)
                issues.append(Issue(path, "unknown", f"`{path}` was renamed to `{target}` in schema "
                                    f"v{schema.version}; migrate the file (`migrate`).",
                                    f"ignored: the run uses `{target}` = {json.dumps(current)} from another layer"))
                continue
            pool = sections if isinstance(v, dict) else known_leaves
            guess = difflib.get_close_matches(path, pool, n=1, cutoff=0.75)
            hint = f" Did you mean `{guess[0]}`?" if guess else ""
            current = get_path(config, guess[0]) if guess and not isinstance(v, dict) else None
            silently = (f"ignored: the run uses `{guess[0]}` = {json.dumps(current)} from another layer"
                        if current is not None else "ignored: nothing reads it")
            what = "table" if isinstance(v, dict) else "key"
            issues.append(Issue(path, "unknown", f"unknown {what} `{path}`.{hint}", silently))

    walk(config, "")
    for path, f in fields.items():
        if path not in flat_seen:
            issues.append(Issue(path, "missing", f"`{path}` is missing ({_WANT[f.kind]}).",
                                "the trainer's code default is used, and the config no longer says what ran"))
            continue
        value = flat_seen[path]
        ok, norm = normalize(value, f)
        if not ok:
            issues.append(Issue(path, "type", f"`{path}` must be {_WANT[f.kind]}, got {_type_name(value)} "
                                f"{json.dumps(value)}.",
                                "loads, then fails (or compares strings) hours later, inside the job"))
            continue
        set_path(normalized, path, norm)
        problem = range_problem(norm, f)
        if problem:
            issues.append(Issue(path, "range", f"`{path}` {problem}.", "launches with a value no one meant"))
            continue
        flat_seen[path] = norm

    if schema.cross_checks:
        good = {p: v for p, v in flat_seen.items() if not any(i.path == p for i in issues)}
        issues.extend(schema.cross_checks(good))
    return normalized, issues
