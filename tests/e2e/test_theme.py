"""The dark theme is Streamlit's own, chosen by the browser: a system set to dark gets a dark
page (it stayed white when one [theme] table pinned the light theme), and the presenter's
high-contrast sheet follows it."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser

from tests.e2e.conftest import wait_idle

pytestmark = pytest.mark.e2e

LUMINANCE = """
([sel, prop]) => {
  const c = getComputedStyle(document.querySelector(sel))[prop];
  const [r, g, b] = c.match(/\\d+/g).map(Number).map(v => v / 255);
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}
"""


@pytest.mark.parametrize(("scheme", "dark"), [("dark", True), ("light", False)])
def test_the_page_follows_the_browsers_colour_scheme(browser: Browser, app_url: str, scheme: str, dark: bool):
    context = browser.new_context(color_scheme=scheme, viewport={"width": 1440, "height": 900})
    page = context.new_page()
    page.goto(f"{app_url}/continuous-batching?present=1")
    wait_idle(page)
    background = page.evaluate(LUMINANCE, ["[data-testid='stApp']", "backgroundColor"])
    text = page.evaluate(LUMINANCE, ["[data-testid='stMain'] .stMarkdown p", "color"])
    context.close()
    assert (background < 0.2) is dark, background
    assert (text > 0.8) is dark, text  # the presenter sheet: white on black, or black on white
