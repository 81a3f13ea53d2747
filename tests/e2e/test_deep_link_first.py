"""The first session of a fresh server, opened by a deep link, must not claim "Page not found"."""

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import wait_idle

pytestmark = pytest.mark.e2e


def test_first_visit_is_a_deep_link(page: Page, app_url: str):
    # This module's server is fresh: this is its first session.
    page.goto(f"{app_url}/checkpoint-distribution?checkpoint-distribution.hosts=1000")
    wait_idle(page)
    expect(page.get_by_role("heading", name="Distribute a 400 GB checkpoint to 200 hosts")).to_be_visible()
    expect(page.get_by_text("Page not found")).to_have_count(0)
    expect(page.locator(".st-key-checkpoint-distribution-hosts input[type='range']")).to_have_count(1)
