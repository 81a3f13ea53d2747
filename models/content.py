"""Content files: TOML front matter between `+++` lines, then Markdown sections.

    +++
    hook = "One line for the home page."
    metrics = ["lower_bound_s", "tree_s"]
    [[drills]]
    key = "lower_bound_s"
    prompt = "No design beats what time?"
    unit = "s"            # the unit the answer is asked in, said once: shown as "(s)" after the prompt
    phase = "arithmetic"
    tol = 0.05
    when = "tree_fanout > 1"  # optional: asked only where every condition holds
    +++
    ## Numbers
    ...

Prose uses `{{step_key}}` (or `{{param_name}}`) for every number a model computes, optionally
with a target unit: `{{tree_s:min}}`. `::chart name` on its own line places a chart the page
script registers; `::sim name` a simulation panel. Pure Python: no Streamlit here.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from pydantic import ValidationError

from models.core import Drill

SECTION_ORDER = ("Numbers", "Shape", "Arithmetic", "Depth", "Failure modes", "Takeaways")
SECTION_PHASE = {
    "Numbers": "numbers",
    "Shape": "shape",
    "Arithmetic": "arithmetic",
    "Depth": "depth",
    "Failure modes": "failure_modes",
}

PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?::\s*([^}\s][^}]*?))?\s*\}\}")
DIRECTIVE = re.compile(r"^::(chart|sim|diagram)\s+([A-Za-z0-9_\-]+)\s*$")


class ContentError(ValueError):
    pass


@dataclass(frozen=True)
class Section:
    title: str
    body: str

    @property
    def phase(self) -> str | None:
        return SECTION_PHASE.get(self.title)


@dataclass(frozen=True)
class Preset:
    """A named scenario from the front matter: knob values over the seed scenario's defaults."""

    name: str
    about: str
    values: dict = field(default_factory=dict)


SEED_PRESET = "Seed scenario"


@dataclass(frozen=True)
class Content:
    path: Path
    hook: str
    intro: str
    sections: tuple[Section, ...]
    drills: tuple[Drill, ...]
    metrics: tuple[tuple[str, str], ...]  # (step key, short label or "")
    presets: tuple[Preset, ...] = ()
    front: dict = field(default_factory=dict, repr=False)

    def placeholders(self) -> set[str]:
        text = self.intro + "".join(s.body for s in self.sections)
        return {m.group(1) for m in PLACEHOLDER.finditer(text)}

    def directives(self) -> list[tuple[str, str]]:
        """(kind, name) of every `::chart`/`::sim`/`::diagram` line, the intro's first (the page
        draws it there too, above the first section)."""
        out = []
        for text in (self.intro, *(s.body for s in self.sections)):
            for line in text.splitlines():
                m = DIRECTIVE.match(line.strip())
                if m:
                    out.append((m.group(1), m.group(2)))
        return out

    def section(self, title: str) -> Section | None:
        return next((s for s in self.sections if s.title == title), None)


def parse_content(text: str, path: Path = Path("<string>")) -> Content:
    if not text.startswith("+++"):
        raise ContentError(f"{path}: content must start with TOML front matter between +++ lines")
    try:
        _, front_text, body = text.split("+++", 2)
    except ValueError:
        raise ContentError(f"{path}: front matter is not closed with +++") from None
    try:
        front = tomllib.loads(front_text)
    except tomllib.TOMLDecodeError as e:
        raise ContentError(f"{path}: front matter is not valid TOML: {e}") from None
    drills = tuple(_drill_entry(d, path) for d in front.get("drills", []))
    chunks = re.split(r"^## +(.+?)\s*$", body, flags=re.M)
    intro = chunks[0].strip()
    sections = tuple(Section(chunks[i].strip(), chunks[i + 1].strip("\n")) for i in range(1, len(chunks), 2))
    return Content(
        path=path,
        hook=front.get("hook", ""),
        intro=intro,
        sections=sections,
        drills=drills,
        metrics=tuple(_metric_entry(m, path) for m in front.get("metrics", [])),
        presets=tuple(_preset_entry(p, path) for p in front.get("presets", [])),
        front=front,
    )


def _drill_entry(entry, path: Path) -> Drill:
    """`[[drills]] key, prompt, phase, unit, tol`, and `when`: one condition or a list of them
    (`when = "stream_policy == 'cut'"`), each "name op value"; the drill is asked only where all hold."""
    if not isinstance(entry, dict):
        raise ContentError(f"{path}: a drill is a table of key, prompt, phase and unit, not {entry!r}")
    entry = dict(entry)
    when = entry.get("when", ())
    if isinstance(when, str):
        when = (when,)
    if not isinstance(when, (list, tuple)) or not all(isinstance(c, str) for c in when):
        raise ContentError(f"{path}: drill '{entry.get('key')}': when is a condition or a list of them, "
                           f"each a string like \"stream_policy == 'cut'\", not {when!r}")
    entry["when"] = tuple(when)
    try:
        return Drill(**entry)
    except ValidationError as e:
        where = f"drill '{entry.get('key')}': "
        problems = "; ".join(err["msg"].removeprefix("Value error, ").removeprefix(where)
                             + (f" ({'.'.join(map(str, err['loc']))})" if err["loc"] else "") for err in e.errors())
        raise ContentError(f"{path}: {where}{problems}") from None


def _metric_entry(entry, path: Path) -> tuple[str, str]:
    """`"key"` or `{ key = "...", label = "short label" }`."""
    if isinstance(entry, str):
        return entry, ""
    if isinstance(entry, dict) and "key" in entry:
        return entry["key"], entry.get("label", "")
    raise ContentError(f"{path}: a metric is a step key or {{ key = ..., label = ... }}, not {entry!r}")


def _preset_entry(entry, path: Path) -> Preset:
    """`[[presets]] name = "...", about = "...", values = { knob = value, ... }`."""
    if not isinstance(entry, dict) or not entry.get("name") or not isinstance(entry.get("values", {}), dict):
        raise ContentError(f"{path}: a preset needs a name and a values table, not {entry!r}")
    if entry["name"] == SEED_PRESET:
        raise ContentError(f"{path}: '{SEED_PRESET}' is implicit; do not declare it")
    return Preset(entry["name"], entry.get("about", ""), dict(entry.get("values", {})))


@lru_cache(maxsize=128)
def load_content(path: Path) -> Content:
    return parse_content(path.read_text(encoding="utf-8"), path)
