"""Playwright: the failover page's simulation answers a knob and a new seed."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import wait_idle
from tests.helpers import metric_value

pytestmark = pytest.mark.e2e

SLUG = "multi-region-failover"


def test_detection_delay_moves_the_simulated_recovery(page: Page, app_url: str):
    page.goto(f"{app_url}/{SLUG}")
    wait_idle(page)
    recover = metric_value(page, "Time to recover (sim)")
    peak = metric_value(page, "Peak survivor load (sim)")
    # Seed 0, the seed scenario: detection 15 s + cold start 70 s.
    expect(recover).to_have_text("85.0 s")
    expect(page.locator(f".st-key-{SLUG}-sim-load")).to_be_visible()
    before_peak = peak.inner_text()

    slider = page.locator(f".st-key-{SLUG}-detection_s input[type='range']")
    slider.focus()
    slider.press("ArrowRight")
    # A keystroke right after a run can be dropped: assert on the widget before the output.
    expect(slider).to_have_value(re.compile(r"^16(\.0)?$"))
    wait_idle(page)
    # One second later detection, one second later recovery: 16 s + 70 s.
    expect(recover).to_have_text("86.0 s")
    expect(peak).not_to_have_text(before_peak)
    expect(page).to_have_url(re.compile(r"detection_s=16"))
    # The analytic column moved with it.
    expect(page.get_by_role("cell", name="86 s").first).to_be_visible()


def test_a_new_seed_is_a_new_run(page: Page, app_url: str):
    page.goto(f"{app_url}/{SLUG}")
    wait_idle(page)
    peak = metric_value(page, "Peak survivor load (sim)")
    expect(peak).to_have_text(re.compile(r"^\d+\.\d\d×$"))
    before = peak.inner_text()
    seed = page.locator(f".st-key-{SLUG}-sim_seed input")
    seed.fill("1")
    seed.press("Enter")
    expect(seed).to_have_value("1")
    wait_idle(page)
    expect(peak).not_to_have_text(before)
    expect(metric_value(page, "Time to recover (sim)")).to_have_text("85.0 s")  # the same physics, other noise
