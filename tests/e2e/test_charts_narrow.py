"""Every page's charts and diagrams on a 390x844 phone, as Chromium draws them: no two pieces of a
diagram's text overlap, and no chart's title or subtitle runs into its legend.

Before the fix, at this width every one of the 39 diagrams piled text on text (continuous-
batching's "Admission queue" ran into "Scheduler") and most titles sat on their legends.
tests/app/test_chart_layout.py checks the figures these drawings come from; this checks the
drawing. The browser loads the app once and moves between the 38 pages the way its own links
do (a reload per page parses plotly's 4.7 MB bundle again: 190 s instead of about 70); each page
is drawn once and all its charts are measured in one evaluate.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Page

from models.registry import written
from tests.e2e.conftest import wait_idle

pytestmark = pytest.mark.e2e
QUESTIONS = written()

# Client-side navigation, as st.navigation's links do it: the URL changes and Streamlit runs the
# page it names.
GO = "(slug) => { history.pushState({}, '', '/' + slug); dispatchEvent(new PopStateEvent('popstate')); }"
# The page whose title is `title` has finished its run and every visible chart is drawn.
READY = """
(title) => {
  const app = document.querySelector("[data-testid='stApp']");
  const h1 = document.querySelector("[data-testid='stMain'] h1");
  return app.dataset.testScriptState === 'notRunning' && h1 && h1.textContent.trim() === title
    && !document.querySelector("[class*='st-key-sim-pending']")
    && [...document.querySelectorAll("[data-testid='stPlotlyChart']")]
         .every(el => el.getBoundingClientRect().width === 0
                      || (el.querySelector('.js-plotly-plot') || {})._fullLayout && el.querySelector('.main-svg'))
    && document.querySelectorAll("[data-testid='stPlotlyChart']").length > 0;
}
"""
# Each drawn chart: whether it is a diagram (no traces), the boxes of its annotation texts (an
# arrow's empty text left out), of its title and subtitle, and of its legend.
MEASURE = """
() => [...document.querySelectorAll("[data-testid='stPlotlyChart']")].map(el => {
  const gd = el.querySelector('.js-plotly-plot');
  const box = e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
  if (!gd || !gd._fullLayout || el.getBoundingClientRect().width === 0) return null;
  const texts = [...el.querySelectorAll('.annotation-text')].filter(t => t.textContent.trim() && box(t)[2] > box(t)[0]);
  const legend = el.querySelector('.legend .bg');
  return {
    diagram: gd.data.length === 0,
    title: [...el.querySelectorAll('.gtitle, .gtitle-subtitle')].map(t => [t.textContent, box(t)]),
    legend: legend ? box(legend) : null,
    texts: texts.map(t => [t.textContent, box(t)]),
  };
})
"""


def _overlap(a: list[float], b: list[float], slack: float = 1.0) -> bool:
    """Boxes that share more than `slack` px both ways (the boxes of touching lines share a pixel)."""
    return min(a[2], b[2]) - max(a[0], b[0]) > slack and min(a[3], b[3]) - max(a[1], b[1]) > slack


def _problems(charts: list[dict | None]) -> list[tuple]:
    found = []
    for i, c in enumerate(x for x in charts if x):
        if c["diagram"]:
            texts = c["texts"]
            found += [(i, a[0], b[0]) for n, a in enumerate(texts) for b in texts[n + 1:] if _overlap(a[1], b[1])]
        if c["legend"]:
            found += [(i, t[0], "legend") for t in c["title"] if _overlap(t[1], c["legend"])]
    return found


def test_no_diagram_text_overlaps_and_no_title_meets_its_legend_on_a_phone(page: Page, app_url: str):
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{app_url}/{QUESTIONS[0].slug}")
    wait_idle(page)
    problems, diagrams = {}, 0
    for n, q in enumerate(QUESTIONS):
        if n:
            page.evaluate(GO, q.slug)
        page.wait_for_function(READY, arg=q.title)
        wait_idle(page)
        charts = page.evaluate(MEASURE)
        assert any(charts), f"{q.slug}: no chart drawn"
        diagrams += sum(1 for c in charts if c and c["diagram"])
        if found := _problems(charts):
            problems[q.slug] = found
    assert diagrams == 39, diagrams  # 37 pages draw one or two; every one was measured
    assert not problems, problems
