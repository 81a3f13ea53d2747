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
script registers; `::sim name` a simulation panel; `::diagram name` a page-script diagram or
one declared here, as data, its numbers placeholders like the prose's:

    [[diagrams]]
    name = "request_path"
    title = "Request path, with this scenario's numbers"
    boxes = [
      { id = "gw", title = "Gateway", detail = "{{request_rate}} · auth", col = 0, row = 0 },
      { id = "q", title = "Queue", col = 1, row = 0, tone = "accent" },
    ]
    arrows = [{ src = "gw", dst = "q", label = "{{admitted_rps}}" }]

The answer a candidate could give in the first five minutes, and the steps that carry it:

    answer = '''
    Six lines, every figure a placeholder: the shape, the sizing chain, the verdict.
    '''   (or a triple-quoted TOML string)
    carrying = ["request_rate", "requests_in_flight", "replicas"]  # 10-15 step keys

Claims about real systems cite their source: `[src:vllm-chunked]` in the prose, and

    [[sources]]
    id = "vllm-chunked"
    title = "vLLM docs: chunked prefill (max_num_batched_tokens)"
    url = "https://docs.vllm.ai/en/latest/configuration/optimization.html"

The page numbers the sources in the order they are first cited and lists them at its end.

The page shows `answer` under the hook, and the derivation lists the `carrying` steps first (in
the model's order) with every other step on demand.

Pure Python: no Streamlit here.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import MISSING, dataclass, field
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
CITATION = re.compile(r"\[src:([a-z0-9][a-z0-9_\-]*)\]")
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

# ui/diagram.py draws these (tests/app/test_declarative_pages.py holds the two lists equal).
DIAGRAM_TONES = ("default", "accent", "muted", "danger")


@dataclass(frozen=True)
class DiagramBox:
    id: str
    title: str
    detail: str = ""
    col: float = 0.0
    row: float = 0.0
    tone: str = "default"


@dataclass(frozen=True)
class DiagramArrow:
    src: str
    dst: str
    label: str = ""
    dashed: bool = False
    offset: float = 0.0


@dataclass(frozen=True)
class Diagram:
    """Boxes and arrows whose texts are templates: `{{step_key}}` / `{{param}}` read live."""

    name: str
    title: str
    boxes: tuple[DiagramBox, ...]
    arrows: tuple[DiagramArrow, ...]
    height: int | None = None

    def templates(self) -> list[tuple[str, str]]:
        """(where, text) of every text that may hold a placeholder."""
        out = [(f"diagram '{self.name}' title", self.title)]
        out += [(f"diagram '{self.name}' box '{b.id}'", t) for b in self.boxes for t in (b.title, b.detail)]
        out += [(f"diagram '{self.name}' arrow {a.src}->{a.dst}", a.label) for a in self.arrows]
        return [(where, text) for where, text in out if text]

    def placeholders(self) -> set[str]:
        return {m.group(1) for _, text in self.templates() for m in PLACEHOLDER.finditer(text)}

    def check_placeholders(self, names: set[str], path: Path | str = "<content>") -> None:
        """ContentError naming the first placeholder that is neither a step nor a knob."""
        for where, text in self.templates():
            for m in PLACEHOLDER.finditer(text):
                if m.group(1) not in names:
                    raise ContentError(f"{path}: {where}: unknown placeholder {{{{{m.group(1)}}}}} "
                                       "(neither a step nor a knob of this question)")


@dataclass(frozen=True)
class Source:
    id: str
    title: str
    url: str


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
    diagrams: tuple[Diagram, ...] = ()
    answer: str = ""  # the short answer, 6-8 lines of prose with placeholders
    carrying: tuple[str, ...] = ()  # step keys the derivation shows first
    sources: tuple[Source, ...] = ()

    def cited(self) -> list[str]:
        """Source ids in the order the page first cites them (answer, intro, then the sections)."""
        order: list[str] = []
        for text in (self.answer, self.intro, *(s.body for s in self.sections)):
            for m in CITATION.finditer(text):
                if m.group(1) not in order:
                    order.append(m.group(1))
        return order

    def diagram(self, name: str) -> Diagram | None:
        return next((dg for dg in self.diagrams if dg.name == name), None)

    def placeholders(self) -> set[str]:
        text = self.answer + self.intro + "".join(s.body for s in self.sections)
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
        diagrams=_diagrams(front.get("diagrams", []), path),
        answer=_text(front, "answer", path).strip(),
        carrying=_keys(front, "carrying", path),
        sources=_sources(front.get("sources", []), path),
    )


def _sources(entries, path: Path) -> tuple[Source, ...]:
    out = []
    for entry in entries:
        if not isinstance(entry, dict) or set(entry) != {"id", "title", "url"}:
            raise ContentError(f"{path}: a [[sources]] entry has exactly id, title and url")
        if not all(isinstance(v, str) and v.strip() for v in entry.values()):
            raise ContentError(f"{path}: source {entry.get('id')!r}: id, title and url are non-empty strings")
        if not CITATION.fullmatch(f"[src:{entry['id']}]"):
            raise ContentError(f"{path}: source id {entry['id']!r} is lower-case letters, digits, - and _")
        if not entry["url"].startswith("https://"):
            raise ContentError(f"{path}: source {entry['id']!r}: the url is an https:// address")
        out.append(Source(entry["id"], entry["title"], entry["url"]))
    ids = [s.id for s in out]
    if len(set(ids)) != len(ids):
        raise ContentError(f"{path}: a source id is declared twice")
    return tuple(out)


def _text(front: dict, name: str, path: Path) -> str:
    value = front.get(name, "")
    if not isinstance(value, str):
        raise ContentError(f"{path}: `{name}` must be a string")
    return value


def _keys(front: dict, name: str, path: Path) -> tuple[str, ...]:
    value = front.get(name, [])
    if not isinstance(value, list) or not all(isinstance(k, str) for k in value):
        raise ContentError(f"{path}: `{name}` must be a list of step keys")
    if len(set(value)) != len(value):
        raise ContentError(f"{path}: `{name}` names a step twice")
    return tuple(value)


def _fields(entry, cls, what: str, path: Path) -> dict:
    """An inline table's keys checked against a dataclass's fields, and their types against its defaults."""
    names = list(cls.__dataclass_fields__)
    required = [n for n, f in cls.__dataclass_fields__.items() if f.default is MISSING]
    if not isinstance(entry, dict):
        raise ContentError(f"{path}: {what} is a table of {', '.join(names)}, not {entry!r}")
    unknown = sorted(set(entry) - set(names))
    if unknown:
        raise ContentError(f"{path}: {what}: unknown field(s) {', '.join(unknown)}; allowed: {', '.join(names)}")
    missing = [n for n in required if n not in entry]
    if missing:
        raise ContentError(f"{path}: {what}: missing {', '.join(missing)}")
    for name, value in entry.items():
        kind = cls.__dataclass_fields__[name].type
        ok = (isinstance(value, (int, float)) and not isinstance(value, bool)) if kind == "float" else \
            isinstance(value, bool) if kind == "bool" else isinstance(value, str)
        if not ok:
            raise ContentError(f"{path}: {what}: {name} must be a {kind}, not {value!r}")
    return dict(entry)


def _diagrams(entries, path: Path) -> tuple[Diagram, ...]:
    if not isinstance(entries, list):
        raise ContentError(f"{path}: diagrams is a list of [[diagrams]] tables")
    out: list[Diagram] = []
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or not entry["name"]:
            raise ContentError(f"{path}: a diagram needs a name, not {entry!r}")
        name = entry["name"]
        unknown = sorted(set(entry) - {"name", "title", "boxes", "arrows", "height"})
        if unknown:
            raise ContentError(f"{path}: diagram '{name}': unknown field(s) {', '.join(unknown)}")
        if any(dg.name == name for dg in out):
            raise ContentError(f"{path}: two diagrams are called '{name}'")
        boxes = tuple(DiagramBox(**_fields(b, DiagramBox, f"diagram '{name}': a box", path))
                      for b in entry.get("boxes", []))
        if not boxes:
            raise ContentError(f"{path}: diagram '{name}' has no boxes")
        ids = [b.id for b in boxes]
        for b in boxes:
            if ids.count(b.id) > 1:
                raise ContentError(f"{path}: diagram '{name}': two boxes are called '{b.id}'")
            if b.tone not in DIAGRAM_TONES:
                raise ContentError(f"{path}: diagram '{name}' box '{b.id}': tone '{b.tone}' is not one of "
                                   f"{', '.join(DIAGRAM_TONES)}")
        arrows = tuple(DiagramArrow(**_fields(a, DiagramArrow, f"diagram '{name}': an arrow", path))
                       for a in entry.get("arrows", []))
        for a in arrows:
            for end in (a.src, a.dst):
                if end not in ids:
                    raise ContentError(f"{path}: diagram '{name}': an arrow {a.src} -> {a.dst} names no box "
                                       f"'{end}'; the boxes are {', '.join(ids)}")
        height = entry.get("height")
        if height is not None and (not isinstance(height, int) or isinstance(height, bool) or height <= 0):
            raise ContentError(f"{path}: diagram '{name}': height is a whole number of pixels, not {height!r}")
        title = entry.get("title", "")
        if not isinstance(title, str):
            raise ContentError(f"{path}: diagram '{name}': title is text, not {title!r}")
        out.append(Diagram(name, title, boxes, arrows, height))
    return tuple(out)


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
