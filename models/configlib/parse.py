"""Parsing one layer: TOML, or JSON when the text starts with `{`, into a plain dict."""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ParsedLayer:
    data: dict | None
    error: str | None = None


_TOML_AT = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")
_TOML_END = re.compile(r"\s*\(at end of document\)\s*$")


def _json_types(obj: Any, path: str = "") -> str | None:
    """The first value JSON cannot hold (a TOML date or time), by path."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            bad = _json_types(v, f"{path}.{k}" if path else str(k))
            if bad:
                return bad
        return None
    if isinstance(obj, list):
        for i, v in enumerate(obj):
            bad = _json_types(v, f"{path}[{i}]")
            if bad:
                return bad
        return None
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return None
    return path


def parse_layer(name: str, text: str) -> ParsedLayer:
    """TOML, or JSON when the text starts with `{`. Never raises: errors are one plain sentence."""
    stripped = text.strip()
    if not stripped:
        return ParsedLayer({})
    if stripped.startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            return ParsedLayer(None, f"{name} layer (JSON), line {e.lineno}, column {e.colno}: {e.msg}.")
        if not isinstance(data, dict):
            return ParsedLayer(None, f"{name} layer (JSON): the top level must be an object {{...}}.")
    else:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            msg = str(e)
            m = _TOML_AT.search(msg)
            if m:
                return ParsedLayer(None, f"{name} layer (TOML), line {m.group(1)}, column {m.group(2)}: "
                                         f"{_TOML_AT.sub('', msg)}.")
            if _TOML_END.search(msg):
                return ParsedLayer(None, f"{name} layer (TOML), at the end: {_TOML_END.sub('', msg)}.")
            return ParsedLayer(None, f"{name} layer (TOML): {msg}.")
    bad = _json_types(data)
    if bad:
        return ParsedLayer(None, f"{name} layer: `{bad}` is a TOML date or time; quote it as a string "
                                 "(the hash is computed over JSON).")
    return ParsedLayer(data)
