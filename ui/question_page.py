"""One question page: knobs -> solve -> metrics, live prose, charts, drills, derivation.

A page script stays thin:

    page = QuestionPage("checkpoint-distribution")

    @page.chart("times_vs_hosts")
    def _(ctx): return sweep_figure(...)

    page.render()

`::chart name` / `::sim name` / `::diagram name` lines in the content file decide where each
registered renderer appears, so the prose and its figures are laid out in one place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import streamlit as st

from models.content import DIRECTIVE
from models.core import PHASE_TITLES, Derivation
from models.registry import QUESTIONS, TRACK_TITLES, Question
from ui.derivation_view import derivation_view, metric_row
from ui.drills import drill_box
from ui.knobs import knob_panel
from ui.prose import render as render_prose
from ui.session_store import get_store
from ui.solve_cache import solve


@dataclass
class PageContext:
    question: Question
    params: Any
    derivation: Derivation
    seed_derivation: Derivation

    @property
    def slug(self) -> str:
        return self.question.slug


Renderer = Callable[[PageContext], Any]


class QuestionPage:
    def __init__(self, slug: str) -> None:
        self.question = QUESTIONS[slug]
        self._renderers: dict[tuple[str, str], Renderer] = {}

    def _register(self, kind: str, name: str) -> Callable[[Renderer], Renderer]:
        def deco(fn: Renderer) -> Renderer:
            self._renderers[(kind, name)] = fn
            return fn

        return deco

    def chart(self, name: str) -> Callable[[Renderer], Renderer]:
        """Register a function returning a plotly figure."""
        return self._register("chart", name)

    def diagram(self, name: str) -> Callable[[Renderer], Renderer]:
        return self._register("diagram", name)

    def sim(self, name: str) -> Callable[[Renderer], Renderer]:
        """Register a function that draws its own Streamlit panel (controls, charts, summary)."""
        return self._register("sim", name)

    # -----------------------------------------------------------------------------------------

    def _directive(self, kind: str, name: str, ctx: PageContext) -> None:
        fn = self._renderers.get((kind, name))
        if fn is None:
            st.error(f"This page has no {kind} called '{name}'.")
            return
        if kind in ("chart", "diagram"):
            fig = fn(ctx)
            st.plotly_chart(fig, key=f"{ctx.slug}.{kind}.{name}", config={"displaylogo": False})
        else:
            fn(ctx)

    def _body(self, text: str, ctx: PageContext) -> None:
        """Prose between directives goes out as one Markdown block each."""
        buf: list[str] = []

        def flush() -> None:
            chunk = "\n".join(buf).strip()
            if chunk:
                st.markdown(render_prose(chunk, ctx.derivation, ctx.params))
            buf.clear()

        for line in text.splitlines():
            m = DIRECTIVE.match(line.strip())
            if m:
                flush()
                self._directive(m.group(1), m.group(2), ctx)
            else:
                buf.append(line)
        flush()

    def render(self) -> None:
        q = self.question
        content = q.content
        get_store()  # open it now, so a locked or broken store is announced before any answer
        params = knob_panel(q)
        derivation = solve(q.slug, params)
        seed_derivation = solve(q.slug, q.Params())
        ctx = PageContext(q, params, derivation, seed_derivation)

        st.caption(
            f"{TRACK_TITLES[q.track]} track"
            + (f" · asked at {', '.join(q.asked_at)}" if q.asked_at else "")
            + f" · {len(content.drills)} drills"
        )
        st.title(q.title)
        if content.hook:
            st.markdown(f"*{render_prose(content.hook, derivation, params)}*")
        metric_row(derivation, content.metrics, seed_derivation)
        if content.intro:
            self._body(content.intro, ctx)

        drills_by_phase: dict[str, list] = {}
        for drill in content.drills:
            drills_by_phase.setdefault(drill.phase, []).append(drill)

        for section in content.sections:
            st.header(section.title, anchor=section.title.lower().replace(" ", "-"), divider="gray")
            for drill in drills_by_phase.pop(section.phase, []) if section.phase else []:
                drill_box(q.slug, drill, derivation, params)
            self._body(section.body, ctx)
            if section.phase == "arithmetic":
                derivation_view(derivation)
        leftover = [d for ds in drills_by_phase.values() for d in ds]
        if leftover:
            st.header("More drills")
            for drill in leftover:
                st.caption(PHASE_TITLES[drill.phase])
                drill_box(q.slug, drill, derivation, params)
