"""Share this screen in a real browser: a link to a knob's minimum reopens it, and the share
dialog shows a short link, a large QR code and a warning that 127.0.0.1 opens only here."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import wait_idle
from tests.helpers import metric_value

pytestmark = pytest.mark.e2e
S = "batched-inference-api"


def test_a_link_to_a_knobs_minimum_reopens_it(page: Page, app_url: str):
    # 30% is the target utilization's minimum: ceil(2,000 req/s / (250 req/s x 0.3)) = 27 GPUs
    page.goto(f"{app_url}/{S}?{S}.target_utilization=30")
    wait_idle(page)
    expect(metric_value(page, "Full batches + headroom")).to_have_text("27 GPUs")
    expect(page).to_have_url(re.compile(rf"{re.escape(S)}\.target_utilization=30"))
    page.reload()
    wait_idle(page)
    expect(metric_value(page, "Full batches + headroom")).to_have_text("27 GPUs")


def test_the_share_dialog_has_a_short_link_and_a_large_qr(page: Page, app_url: str):
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(f"{app_url}/{S}?preset=Quiet%20hours")
    wait_idle(page)
    page.get_by_role("button", name="Share this screen").click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_be_visible()
    link = dialog.locator("[data-testid='stCode']").inner_text().strip()
    assert link.endswith(f"/{S}?{S}.arrival_rps=100"), link  # the one knob the preset moves
    expect(dialog.get_by_text(re.compile("opens only on this computer"))).to_be_visible()
    qr = dialog.locator("[data-testid='stImage'] img")
    expect(qr).to_be_visible()
    assert qr.bounding_box()["width"] >= 400
