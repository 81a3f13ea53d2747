"""An instructor's flow: a presenter link with a preset, three steps revealed with the keyboard,
compare switched on, and a reload that shows the same screen."""

from __future__ import annotations

import re
from urllib.parse import quote

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import wait_idle

pytestmark = pytest.mark.e2e
S = "batched-inference-api"


def _steps(page: Page):
    return page.locator(f"[class*='st-key-{S}-reveal-step-']")


def test_presenter_link_reveal_compare_and_reload(page: Page, app_url: str):
    page.set_viewport_size({"width": 1920, "height": 1080})
    page.goto(f"{app_url}/{S}?present=1&preset={quote('Short timeout at peak')}")
    wait_idle(page)
    # the preset set the knobs: a 10 ms timeout needs 24 GPUs with headroom
    expect(page.locator("[data-testid='stMetric']").filter(has_text="Provision").locator(
        "[data-testid='stMetricValue']")).to_have_text("24 GPUs")
    expect(page.get_by_text("Try first.")).to_have_count(0)  # drills hidden on a projector
    # nothing needs a side panel in front of a class: no sidebar, the preset and views in the page
    expect(page.get_by_test_id("stSidebar")).to_have_count(0)
    expect(page.locator(".st-key-scenario-inline").get_by_text("Compare two scenarios")).to_be_visible()

    page.get_by_text("Step by step").scroll_into_view_if_needed()
    for n in (1, 2, 3):
        page.locator("body").press("ArrowRight")
        wait_idle(page)
        expect(_steps(page)).to_have_count(n)
    expect(page).to_have_url(re.compile(r"reveal=3"))
    expect(_steps(page).nth(2)).to_contain_text("=")

    # switch compare on, from the main column
    page.get_by_text("Compare two scenarios").click()
    wait_idle(page)
    expect(page).to_have_url(re.compile(r"compare=1"))
    expect(page.get_by_role("heading", name="A against B")).to_be_visible()
    url = page.url

    page.reload()
    wait_idle(page)
    assert page.url == url
    expect(page.get_by_role("heading", name="A against B")).to_be_visible()
    expect(_steps(page)).to_have_count(3)
    expect(page.locator("[data-testid='stMetric']").filter(has_text="Provision").first.locator(
        "[data-testid='stMetricValue']")).to_have_text("24 GPUs")
    expect(page.get_by_text("Try first.")).to_have_count(0)
