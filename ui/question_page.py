"""One question page: knobs -> solve -> metrics, live prose, charts, drills, derivation.

A page script stays thin:

    page = QuestionPage("checkpoint-distribution")

    page.sweep("times_vs_hosts", "hosts", {"tree_s": "Tree"}, title=..., y_title="s")

    @page.chart("gantt")  # a figure sweep_figure cannot draw: a function of the page context
    def _(ctx): return figure(...)

    page.render()

A diagram is data in the content file (`[[diagrams]]`, see models/content.py): the page
registers nothing for it.

`::chart name` / `::sim name` / `::diagram name` lines in the content file decide where each
registered renderer appears, so the prose and its figures are laid out in one place.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

import streamlit as st

from models.content import DIRECTIVE
from models.core import PHASE_TITLES, Derivation
from models.registry import QUESTIONS, TRACK_TITLES, Question
from ui.charts import stack_figure, sweep_figure
from ui.figures import sendable
from ui.derivation_view import derivation_view, metric_row
from ui.diagram import content_diagram
from ui.drills import answered, applicable, drill_box, hidden_line
from ui.feasibility import feasibility_banner
from ui.gc_tuning import freeze_once
from ui.knobs import knob_panel, params_from_state
from ui.clock import now
from ui.mock_common import note_opened_page
from models.content import SEED_PRESET
from ui.compare import compare_toggle, compare_view, is_comparing
from ui.knobs import specs, unknown_params
from ui.presenter import CHART_HEIGHT_PX, apply_style, is_presenting, presenter_toggle
from ui.profile_box import profile_box
from ui.share import share_button
from ui.prose import cite, numbered_sources
from ui.prose import render as render_prose
from ui.reveal import reveal_panel
from ui.safe import code_span, escape_markdown
from ui.session_store import get_store, profile
from ui.declared_panel import simulation_panel
from ui.sim_panel import live_panel
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

FOCUS_PARAM = "drill"
FLUSH_PAUSE_S = 0.004

# The last page run in this process: when the metric cards had been drawn (what a slider move
# waits for on screen), when everything but the simulation panels had, and when the run ended.
RUN_TIMES: dict[str, float] = {}


class QuestionPage:
    def __init__(self, slug: str) -> None:
        self.question = QUESTIONS[slug]
        self.presenting = False
        self._renderers: dict[tuple[str, str], Renderer] = {
            ("diagram", spec.name): (lambda ctx, spec=spec: content_diagram(spec, ctx.derivation, ctx.params))
            for spec in self.question.content.diagrams
        }
        self._deferred: list[tuple[Any, Renderer]] = []
        self.simulations: dict[str, dict] = {}

    def _register(self, kind: str, name: str) -> Callable[[Renderer], Renderer]:
        def deco(fn: Renderer) -> Renderer:
            self._renderers[(kind, name)] = fn
            return fn

        return deco

    def chart(self, name: str) -> Callable[[Renderer], Renderer]:
        """Register a function returning a plotly figure."""
        return self._register("chart", name)

    def diagram(self, name: str) -> Callable[[Renderer], Renderer]:
        """Register a function returning a diagram; one declared in the content file's
        `[[diagrams]]` needs none (see __init__)."""
        return self._register("diagram", name)

    def sweep(self, name: str, field: str, lines: dict[str, str], **opts: Any) -> None:
        """A chart declared, not written: `lines` (step key -> legend name) against the knob
        `field`, drawn by ui.charts.sweep_figure with `opts` (title, y_title, n, log_y, ...)."""
        self._renderers[("chart", name)] = lambda ctx: sweep_figure(ctx.slug, ctx.params, field, lines, **opts)

    def stack(self, name: str, parts: dict[str, str], **opts: Any) -> None:
        """One bar cut into steps (a latency budget), drawn by ui.charts.stack_figure with `opts`."""
        self._renderers[("chart", name)] = lambda ctx: stack_figure(ctx.slug, ctx.params, parts, **opts)

    def simulation(self, name: str, **spec: Any) -> None:
        """A live panel declared, not written: ui.declared_panel.simulation_panel with `spec` (title,
        message, cards, chart, caption). The question's model supplies simulate and simulation_steps."""
        self.simulations[name] = spec  # read by tests/test_simulation_steps.py
        self._renderers[("sim", name)] = lambda ctx: simulation_panel(ctx, name, **spec)

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
            if self.presenting and kind == "chart":
                fig.update_layout(height=CHART_HEIGHT_PX, font=dict(size=18))
            st.plotly_chart(sendable(fig), key=f"{ctx.slug}.{kind}.{name}", config={"displaylogo": False})
        else:
            # A simulation takes 25-170 ms per run (some panels run three scenarios): its panel is
            # drawn last, into the place kept for it here, so the rest of the page (the prose,
            # metrics and charts below it) reaches the browser first; its run goes to the worker
            # (ui/sim_runs.py) and the panel, a fragment, shows it when it lands.
            self._deferred.append((st.container(), fn))

    def _body(self, text: str, ctx: PageContext) -> None:
        """Prose between directives goes out as one Markdown block each."""
        buf: list[str] = []

        def flush() -> None:
            chunk = "\n".join(buf).strip()
            if chunk:
                st.markdown(cite(render_prose(chunk, ctx.derivation, ctx.params), self.question.content))
            buf.clear()

        for line in text.splitlines():
            m = DIRECTIVE.match(line.strip())
            if m:
                flush()
                self._directive(m.group(1), m.group(2), ctx)
            else:
                buf.append(line)
        flush()

    def presets(self) -> dict[str, dict]:
        """Seed scenario, the content's presets, then this profile's saved ones (starred).

        The saved ones are read from the store once per page visit (render() drops the copy on
        every full run of the page), not on every knob move: a move reruns the body fragment alone,
        and a preset is saved on another page (the mock's review), so a visit always sees it."""
        q = self.question
        cache_key = f"{q.slug}.saved-presets"
        saved = st.session_state.get(cache_key)
        if saved is None or saved[0] != profile():
            try:
                rows = [(f"★ {row['name']}", row["params"]) for row in get_store().presets(profile(), q.slug)]
            except Exception:  # saved presets are a convenience; the page must render without them
                rows = []
            saved = st.session_state[cache_key] = (profile(), rows)
        out: dict[str, dict] = {SEED_PRESET: {}}
        out.update({p.name: p.values for p in q.content.presets})
        for name, values in saved[1]:
            out.setdefault(name, values)
        return out

    def preset_about(self, name: str) -> str:
        """What a content preset teaches, its {{placeholders}} read at that preset's own scenario."""
        preset = next((p for p in self.question.content.presets if p.name == name), None)
        if preset is None or not preset.about:
            return ""
        try:
            params = self.question.Params(**preset.values)
        except Exception:  # a preset the model no longer accepts is the contract test's to catch
            return preset.about
        return render_prose(preset.about, solve(self.question.slug, params), params)

    def _focus_drill(self, notices: Any):
        """The drill `?drill=<key>` names (Progress links to it), or None; a wrong key is announced."""
        key = st.query_params.get(FOCUS_PARAM)
        if not key:
            return None
        drill = next((d for d in self.question.content.drills if d.key == key), None)
        if drill is None:
            notices.info(f"Ignored {code_span(f'{FOCUS_PARAM}={key}', 60)}: this page has no drill by that name.",
                         icon=":material/link:")
        return None if self.presenting else drill

    def render(self) -> None:
        """The page body is one fragment: its knobs are drawn in it, so a knob move reruns the body
        alone, not app.py (page config, 43 navigation pages, profile, style sheet): the metric cards
        go out 13 ms after the move instead of 17, the run ends at 33 ms instead of 49 (serving-platform,
        traced; see #22 in bench/browser.py's history)."""
        st.session_state.pop(f"{self.question.slug}.saved-presets", None)
        # A round open in this session: the review says this page (its answers) was opened.
        note_opened_page(self.question.slug, now())
        st.fragment(self._render)()

    def _render(self) -> None:
        started = time.perf_counter()
        q = self.question
        content = q.content
        get_store(announce=True)  # open it now, so a locked or broken store is announced before any answer
        self.presenting = is_presenting()
        apply_style()
        # The layout, top to bottom; the scenario's widgets are drawn first (the figures need
        # them) into the place kept for them under the metric cards (see ui/layout.py).
        notices = st.container()
        head = st.container()
        focus_slot = st.container()  # a drill a link asked for (?drill=<key>), above the knobs on a phone
        with st.container(key="scenario-zone"):
            metrics = st.container(key="metrics", horizontal=True)
            panel = st.container(key="scenario-inline" if self.presenting else "scenario")
        comparison = st.container()
        with metrics:
            card_slots = [st.empty() for _ in content.metrics]

        # On a knob move the new scenario is already in the widgets' state: its cards go out first,
        # before the knob panel's widgets (what the browser shows the moved number after; see
        # ui.knobs.params_from_state). Not while a drill link may withhold a card.
        early = None if FOCUS_PARAM in st.query_params else params_from_state(q)
        if early is not None:
            metric_row(solve(q.slug, early), content.metrics, solve(q.slug, q.Params()), slots=card_slots)
            metrics_drawn_s = time.perf_counter()
            time.sleep(FLUSH_PAUSE_S)

        presets = self.presets()
        comparing = is_comparing()
        params = knob_panel(q, container=panel, presets=presets, notices=notices,
                            title="Scenario A" if comparing else "Scenario", knobs_folded=self.presenting,
                            about=self.preset_about)
        params_b = None
        if comparing:
            with comparison:
                st.header("A against B", divider="gray")
                b_knobs = st.expander("Scenario B: its knobs", expanded=not self.presenting)
            params_b = knob_panel(q, container=b_knobs, variant="B", presets=presets, notices=notices,
                                  title="Scenario B")
        with panel:
            if self.presenting:  # one row under the preset's, so the teaching starts right below
                cols = st.columns(3, vertical_alignment="center")
                presenter_toggle(cols[0])
                compare_toggle(cols[1])
                share_button(q.slug, params, params_b, cols[2])
            else:
                st.markdown("##### View")
                presenter_toggle()
                compare_toggle()
                share_button(q.slug, params, params_b)
                profile_box()
        known = {spec.key(q.slug, v) for spec in specs(q.Params) for v in ("", "B")}
        for notice in unknown_params(known, (f"{q.slug}.sim", f"{q.slug}.replay")):
            notices.info(notice, icon=":material/link:")
        derivation = solve(q.slug, params)
        seed_derivation = solve(q.slug, q.Params())
        ctx = PageContext(q, params, derivation, seed_derivation)
        focus = self._focus_drill(notices)
        # Only the drills this scenario can ask, as a mock round would: no "how long until the stream
        # is cut" while the policy blocks, no answer box for a number that is unbounded.
        asked, hidden = applicable(q, params, derivation)

        if focus is not None:
            with focus_slot.container(border=True, key="focus-drill"):
                st.markdown(f"**The drill you came for** · {PHASE_TITLES[focus.phase]}")
                if focus.key in hidden:  # a drill answered at another scenario (Progress links to it)
                    at_seed = focus.key not in applicable(q, q.Params(), seed_derivation)[1]
                    st.caption(escape_markdown(f"It does not apply to this scenario: {hidden[focus.key]}."
                                               + (f" The preset “{SEED_PRESET}” asks it." if at_seed else "")))
                    focus = None
                else:
                    drill_box(q.slug, focus, derivation, params)
        # After the drill has read a Check or a Reveal: its answer stays hidden until then.
        withheld = frozenset({focus.key}) - answered(q.slug) if focus is not None else frozenset()
        with head:
            st.caption(
                f"{TRACK_TITLES[q.track]} track"
                + (f" · asked at {', '.join(q.asked_at)}" if q.asked_at else "")
                + f" · {len(asked)} drills"
            )
            st.title(q.title)
            if content.hook:
                st.markdown(f"*{render_prose(content.hook, derivation, params, withheld)}*")
            feasibility_banner(derivation)  # before any number is read as an answer
            if content.answer:
                with st.container(border=True, key="short-answer"):
                    st.markdown("**The answer in five minutes**")
                    st.markdown(cite(render_prose(content.answer, derivation, params, withheld), content))
            if hidden and not self.presenting:
                st.caption(escape_markdown(hidden_line(hidden)))
        if early is None or early != params or withheld:
            metric_row(derivation, content.metrics, seed_derivation, withheld=withheld, slots=card_slots)
            metrics_drawn_s = time.perf_counter()
            # Hand the GIL to the event loop for a moment so the cards (and the knobs before them)
            # reach the browser on their own: otherwise they arrive in one burst with the charts, and
            # the browser shows the moved number only after redrawing every plotly figure.
            time.sleep(FLUSH_PAUSE_S)
        if params_b is not None:
            with comparison:
                feasibility_banner(solve(q.slug, params_b))
                compare_view(q.slug, params, params_b, derivation, solve(q.slug, params_b),
                             [k for k, _ in content.metrics])
        if content.intro:
            self._body(content.intro, ctx)

        drills_by_phase: dict[str, list] = {}
        for drill in asked:
            drills_by_phase.setdefault(drill.phase, []).append(drill)

        for section in content.sections:
            st.header(section.title, anchor=section.title.lower().replace(" ", "-"), divider="gray")
            phase_drills = drills_by_phase.pop(section.phase, []) if section.phase else []
            phase_drills = [d for d in phase_drills if d is not focus]  # drawn once: at the top
            if not self.presenting:  # a projector shows the teaching, not the quiz
                for drill in phase_drills:
                    drill_box(q.slug, drill, derivation, params)
            self._body(section.body, ctx)
            if section.phase == "arithmetic":
                if self.presenting or "reveal" in st.query_params:
                    reveal_panel(derivation, f"{q.slug}.reveal")
                else:
                    derivation_view(derivation, carrying=content.carrying, key=f"{q.slug}.derivation")
        leftover = [d for ds in drills_by_phase.values() for d in ds if d is not focus]
        if leftover and not self.presenting:
            st.header("More drills")
            for drill in leftover:
                st.caption(PHASE_TITLES[drill.phase])
                drill_box(q.slug, drill, derivation, params)
        sources = numbered_sources(content)
        if sources:
            st.header("Sources", anchor="sources", divider="gray")
            st.markdown("\n".join(f"{n}. [{escape_markdown(title)}]({url})" for n, title, url in sources))
        content_drawn_s = time.perf_counter()
        for slot, fn in self._deferred:
            with slot:
                live_panel(fn, ctx)
        self._deferred.clear()
        RUN_TIMES.update(metrics_ms=(metrics_drawn_s - started) * 1000,
                         content_ms=(content_drawn_s - started) * 1000,
                         total_ms=(time.perf_counter() - started) * 1000)
        freeze_once()  # here too, for a page run on its own (AppTest, bench) without app.py
