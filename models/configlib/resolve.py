"""Resolving: layers merged in order, pins on top, validated, derived and hashed, with the
layer every leaf came from."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from models.configlib.hashing import canonical_json, sha256_hex
from models.configlib.merge import deep_merge, drop_paths, flatten, provenance, related
from models.configlib.schema import Issue, Schema
from models.configlib.validate import validate


@dataclass(frozen=True)
class PinOverride:
    path: str
    layer: str  # the layer whose value the pin replaced
    was: Any
    pinned: Any


@dataclass(frozen=True)
class Resolution:
    config: dict
    provenance: dict[str, str]
    pinned_over: tuple[PinOverride, ...]
    issues: tuple[Issue, ...]
    strict: bool
    sha256: str
    experiment_sha256: str
    canonical_bytes: int

    @property
    def valid(self) -> bool:
        """Launchable under the strict schema. A flexible loader launches anything that parses."""
        return not self.issues


def resolve(layers: Sequence[tuple[str, Mapping]], pins: Mapping | None = None, *, schema: Schema,
            strict: bool = True, pins_name: str = "pins") -> Resolution:
    """Merge `layers` in order (later wins), then `pins` on top of everything (pins always win).

    Strict: validate against the schema, normalize types losslessly, add the derived fields when
    the config is valid, and hash that. Flexible: hash the merged text as written; the issues are
    still reported, as what the run will silently do. `experiment_sha256` hashes the same config
    without the schema's layout paths."""
    pins = pins or {}
    merged: dict = {}
    for _, layer in layers:
        merged = deep_merge(merged, layer)
    before = flatten(merged)
    flat_layers = [(name, flatten(layer)) for name, layer in layers]
    merged = deep_merge(merged, pins)
    prov = provenance([*layers, (pins_name, pins)], merged)
    over = []
    for path, value in flatten(pins).items():
        for old_path in [p for p in before if related(p, path)]:
            if before[old_path] != value:
                layer = next((n for n, flat in reversed(flat_layers) if old_path in flat), "?")
                over.append(PinOverride(old_path, layer, before[old_path], value))
    normalized, issues = validate(merged, schema)
    if strict:
        config = normalized
        if not issues and schema.derive and schema.computed:
            config = {**config, schema.computed: schema.derive(config)}
    else:
        config = merged
    text = canonical_json(config).encode("utf-8")
    return Resolution(
        config=config,
        provenance=prov,
        pinned_over=tuple(over),
        issues=tuple(issues),
        strict=strict,
        sha256=hashlib.sha256(text).hexdigest(),
        experiment_sha256=sha256_hex(drop_paths(config, schema.layout_paths)),
        canonical_bytes=len(text),
    )
