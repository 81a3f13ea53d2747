"""Every question page, as a learner's screen: at 1440x900 the first knob is on the first screen;
at 390 px (a phone), 1280 px and 1440 px, and in the presenter view, no metric value or label is
cut; on a phone a slider and the metric cards are on screen together.

Before this layout (Streamlit's sidebar held the 38 page links above the knobs) the first slider
started 2,028-2,536 px down at 1440x900 on every page, 17 pages cut a metric at 1280 px and 5 at
1440 px (`python -m bench.layout` measures both the same way).

One browser session walks the 38 pages the way the app's links do (tests/e2e/conftest.visit), and
the failures of every page are reported together.
"""

from __future__ import annotations

import time

import pytest
from playwright.sync_api import Page

from models.registry import written
from tests.e2e.conftest import visit
from tests.e2e.layout_checks import CUT_TEXT, FIRST_KNOB, KNOB_AND_METRIC_TOGETHER

pytestmark = pytest.mark.e2e
QUESTIONS = written()
VISIBLE = """() => {
  const el = document.querySelector(".st-key-scenario-inline [data-testid='stSelectbox']");
  return !!el && el.getBoundingClientRect().width > 0;
}"""


def _settle(page: Page, width: int, height: int) -> None:
    page.set_viewport_size({"width": width, "height": height})
    page.wait_for_function("() => document.querySelector('[data-testid=stMetricValue]') !== null")
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")


def _eventually(page: Page, script: str, ok, timeout_s: float = 15.0):
    """The check's result once `ok(result)` holds, or its last result when the time is up. On a
    loaded machine a page keeps laying out after its run ends (fonts, charts drawing in): what is
    checked is the settled screen, not a frame in between."""
    deadline = time.monotonic() + timeout_s
    while True:
        result = page.evaluate(script)
        if ok(result) or time.monotonic() > deadline:
            return result
        page.wait_for_timeout(250)


def _screen_problems(page: Page) -> list[str]:
    problems = []
    _settle(page, 1440, 900)
    knob = _eventually(page, FIRST_KNOB, lambda k: k is not None and 0 <= k["top"] and k["bottom"] <= 900)
    if knob is None:
        problems.append("no knob in the scenario panel")
    elif not (0 <= knob["top"] and knob["bottom"] <= 900):
        problems.append(f"first knob {knob['label']!r} at {knob['top']:.0f} px")
    for width, height in ((1440, 900), (1280, 800), (390, 844)):
        _settle(page, width, height)
        if cut := _eventually(page, CUT_TEXT, lambda c: not c):
            problems.append(f"cut metric text at {width} px: {cut}")
    together = _eventually(page, KNOB_AND_METRIC_TOGETHER,
                           lambda t: t and t["slider_visible"] and t["metric_visible"] and not t["overlap"])
    if not (together and together["slider_visible"] and together["metric_visible"]):
        problems.append(f"on a phone the slider and the metric cards are not on screen together: {together}")
    elif together["overlap"]:
        problems.append("the stuck metric cards cover the slider")
    return problems


def test_on_every_page_the_scenario_is_in_view_and_no_figure_is_cut(page: Page, app_url: str):
    found = {}
    for q in QUESTIONS:
        slug = q.slug
        page.set_viewport_size({"width": 1440, "height": 900})
        visit(page, app_url, f"/{slug}", q.title)
        if problems := _screen_problems(page):
            found[slug] = problems
    assert not found, found


def test_no_presenter_view_cuts_a_figure(page: Page, app_url: str):
    found = {}
    for q in QUESTIONS:
        slug = q.slug
        page.set_viewport_size({"width": 1440, "height": 900})
        visit(page, app_url, f"/{slug}?present=1", q.title)
        _settle(page, 1440, 900)
        problems = []
        if cut := _eventually(page, CUT_TEXT, lambda c: not c):
            problems.append(f"cut metric text: {cut}")
        if page.locator("[data-testid='stSidebar']").count():
            problems.append("the sidebar is shown")
        # the preset and the knobs' pop-over are in the main column, under the metric cards
        if not _eventually(page, VISIBLE, bool):
            problems.append("no preset chooser in the main column")
        if problems:
            found[slug] = problems
    assert not found, found
