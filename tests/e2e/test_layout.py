"""Every question page, as a learner's screen: at 1440x900 the first knob is on the first screen;
at 390 px (a phone), 1280 px and 1440 px, and in the presenter view, no metric value or label is
cut; on a phone a slider and the metric cards are on screen together.

Before this layout (Streamlit's sidebar held the 38 page links above the knobs) the first slider
started 2,028-2,536 px down at 1440x900 on every page, 17 pages cut a metric at 1280 px and 5 at
1440 px (`python -m bench.layout` measures both the same way).
"""

from __future__ import annotations

import time

import pytest
from playwright.sync_api import Page, expect

from models.registry import written
from tests.e2e.conftest import wait_idle
from tests.e2e.layout_checks import CUT_TEXT, FIRST_KNOB, KNOB_AND_METRIC_TOGETHER

pytestmark = pytest.mark.e2e
SLUGS = [q.slug for q in written()]


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


@pytest.mark.parametrize("slug", SLUGS)
def test_the_scenario_is_in_view_and_no_figure_is_cut(page: Page, app_url: str, slug: str):
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(f"{app_url}/{slug}")
    wait_idle(page)
    _settle(page, 1440, 900)
    knob = _eventually(page, FIRST_KNOB, lambda k: k is not None and 0 <= k["top"] and k["bottom"] <= 900)
    assert knob is not None, "no knob in the scenario panel"
    assert 0 <= knob["top"] and knob["bottom"] <= 900, f"first knob {knob['label']!r} at {knob['top']:.0f} px"
    problems = {}
    for width, height in ((1440, 900), (1280, 800), (390, 844)):
        _settle(page, width, height)
        cut = _eventually(page, CUT_TEXT, lambda c: not c)
        if cut:
            problems[width] = cut
    together = _eventually(page, KNOB_AND_METRIC_TOGETHER,
                           lambda t: t and t["slider_visible"] and t["metric_visible"] and not t["overlap"])
    assert together and together["slider_visible"] and together["metric_visible"], together
    assert not together["overlap"], "the stuck metric cards cover the slider"
    assert not problems, f"cut metric text by width: {problems}"


@pytest.mark.parametrize("slug", SLUGS)
def test_the_presenter_view_cuts_no_figure(page: Page, app_url: str, slug: str):
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(f"{app_url}/{slug}?present=1")
    wait_idle(page)
    _settle(page, 1440, 900)
    assert _eventually(page, CUT_TEXT, lambda c: not c) == []
    assert page.locator("[data-testid='stSidebar']").count() == 0
    # the preset and the knobs' pop-over are in the main column, under the metric cards
    expect(page.locator(".st-key-scenario-inline [data-testid='stSelectbox']").first).to_be_visible()
