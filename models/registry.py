"""slug -> Question, in the order and with the titles of content/catalog.toml.

A question is *written* when its model module (`models/<track>/<slug_with_underscores>.py`) and
its content file (`content/<track>/<slug>.md`) both exist; the rest are listed as "coming".
Importable without Streamlit; model modules are imported lazily so the home page does not pay
for every solver.
"""

from __future__ import annotations

import importlib
import tomllib
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Callable

from models.content import Content, load_content
from models.core import Derivation, Drill

ROOT = Path(__file__).resolve().parent.parent
CATALOG_PATH = ROOT / "content" / "catalog.toml"
TRACKS = ("serving", "training", "platform", "product")
TRACK_TITLES = {"serving": "Serving", "training": "Training", "platform": "Platform", "product": "Product"}


def module_name(track: str, slug: str) -> str:
    return f"models.{track}.{slug.replace('-', '_')}"


@dataclass(frozen=True, eq=False)
class Question:
    slug: str
    title: str
    track: str
    seeds: tuple[str, ...]
    asked_at: tuple[str, ...]
    figures: tuple[str, ...]
    sim: str | None

    @property
    def module_path(self) -> Path:
        return ROOT / "models" / self.track / f"{self.slug.replace('-', '_')}.py"

    @property
    def content_path(self) -> Path:
        return ROOT / "content" / self.track / f"{self.slug}.md"

    @property
    def page_path(self) -> Path:
        return ROOT / "pages" / self.track / f"{self.slug.replace('-', '_')}.py"

    @property
    def written(self) -> bool:
        return self.module_path.exists() and self.content_path.exists() and self.page_path.exists()

    @cached_property
    def module(self) -> Any:
        return importlib.import_module(module_name(self.track, self.slug))

    @property
    def Params(self) -> type:
        return self.module.Params

    @property
    def solve(self) -> Callable[[Any], Derivation]:
        return self.module.solve

    @property
    def simulate(self) -> Callable[..., Any] | None:
        return getattr(self.module, "simulate", None)

    @property
    def content(self) -> Content:
        return load_content(self.content_path)

    @property
    def drills(self) -> tuple[Drill, ...]:
        return self.content.drills

    @property
    def hook(self) -> str:
        if self.content_path.exists():
            return self.content.hook or self.figures[0]
        return "; ".join(self.figures[:2])

    def default_derivation(self) -> Derivation:
        return self.solve(self.Params())


def _load() -> dict[str, Question]:
    data = tomllib.loads(CATALOG_PATH.read_text(encoding="utf-8"))
    out: dict[str, Question] = {}
    for q in data["question"]:
        out[q["slug"]] = Question(
            slug=q["slug"],
            title=q["title"],
            track=q["track"],
            seeds=tuple(q.get("seeds", ())),
            asked_at=tuple(q.get("asked_at", ())),
            figures=tuple(q.get("figures", ())),
            sim=q.get("sim"),
        )
    return out


QUESTIONS: dict[str, Question] = _load()


def written() -> list[Question]:
    return [q for q in QUESTIONS.values() if q.written]


def by_track() -> dict[str, list[Question]]:
    out: dict[str, list[Question]] = {t: [] for t in TRACKS}
    for q in QUESTIONS.values():
        out[q.track].append(q)
    return out
