"""What a schema is: typed fields by dotted path, renames between versions, cross-field rules,
and the fields the resolver computes. The one schema this app uses is `training_schema`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Mapping


@dataclass(frozen=True)
class Field:
    kind: Literal["int", "float", "str", "list[float]", "list[str]"]
    lo: float | None = None
    hi: float | None = None
    gt: float | None = None  # exclusive lower bound
    choices: tuple[str, ...] = ()
    pattern: str | None = None
    length: int | None = None
    help: str = ""


@dataclass(frozen=True)
class Issue:
    """One thing the strict schema rejects, with what a flexible loader would silently do instead."""

    path: str
    kind: Literal["unknown", "missing", "type", "range", "cross", "pin"]
    message: str
    silently: str


# eq=False: a schema holds callables and dicts, so it compares (and hashes) by identity.
@dataclass(frozen=True, eq=False)
class Schema:
    """`fields` maps every leaf path to its Field; a config must set each of them.

    `renamed` maps an old path to its new one as of `version`. `cross_checks` sees the leaves
    that passed their own checks (path -> normalized value) and returns what they break
    together. `derive` computes the `computed` section from a valid config; no layer may set
    that section. `layout_paths` are left out of the experiment hash: what a relaunch on other
    hardware may change without changing the experiment."""

    fields: Mapping[str, Field]
    version: int = 1
    renamed: Mapping[str, str] = field(default_factory=dict)
    cross_checks: Callable[[Mapping[str, Any]], list[Issue]] | None = None
    derive: Callable[[Mapping], dict] | None = None
    computed: str | None = "derived"
    layout_paths: tuple[str, ...] = ()
    sections: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        # Every table on the way to a field, so a walk can descend into `a` to reach `a.b.c`.
        parts = {".".join(p.split(".")[:i]) for p in self.fields for i in range(1, p.count(".") + 1)}
        object.__setattr__(self, "sections", tuple(sorted(parts)))
