"""Playwright: the KV-cache-tiers page's live simulation answers a new seed and a capacity knob."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import wait_idle
from tests.helpers import metric_value

pytestmark = pytest.mark.e2e

SLUG = "kv-cache-tiers"


def test_seed_and_hbm_knob_change_the_simulation(page: Page, app_url: str):
    page.goto(f"{app_url}/{SLUG}")
    wait_idle(page)
    expect(page.get_by_role("heading", name="KV cache tiers for long conversations")).to_be_visible()
    # The analytic key figures: 30,000 x 327,680 B and 9.83e9 B / 1.447 s (prefill at 8 x 989 TFLOP/s x 0.6
    # plus its all-reduces).
    expect(metric_value(page, "One conversation")).to_have_text("9.83 GB")
    expect(metric_value(page, "Break-even bandwidth")).to_have_text("6.794 GB/s")

    avoided = metric_value(page, "Recompute avoided (GPU-h)")
    avoided.scroll_into_view_if_needed()
    expect(avoided).to_have_text(re.compile(r"^[\d,.]+$"))
    first_avoided = avoided.inner_text()
    hbm = metric_value(page, "HBM hits (sim · estimate)")
    # The estimate half is analytic: 14.4% of returning turns come back within the 12 s HBM residency.
    expect(hbm).to_have_text(re.compile(r"^[\d.]+% · 14\.4%$"))
    replay = page.get_by_text(re.compile(r"^At minute [\d.]+: HBM \d+ GB"))
    expect(replay).to_be_visible()

    # Another seed: other conversations, so other totals; the estimate does not move.
    seed = page.locator(f".st-key-{SLUG}-sim_seed input")
    seed.fill("3")
    seed.press("Enter")
    expect(seed).to_have_value("3")
    wait_idle(page)
    expect(avoided).not_to_have_text(first_avoided)
    expect(hbm).to_have_text(re.compile(r"· 14\.4%$"))
    after_seed = hbm.inner_text()
    replay_after_seed = replay.inner_text()

    # A knob: more HBM for idle conversations keeps them longer there, in the estimate and in the run.
    slider = page.locator(f".st-key-{SLUG}-hbm_cache_gb input[type='range']")
    slider.focus()
    slider.press("ArrowRight")
    expect(slider).to_have_value("55")
    wait_idle(page)
    expect(page).to_have_url(re.compile(r"hbm_cache_gb=55"))
    expect(hbm).not_to_have_text(after_seed)
    expect(hbm).not_to_have_text(re.compile(r"· 14\.4%$"))
    # The occupancy chart's replay line reads the new run: HBM now fills to 55 GB, not 50.
    expect(page.get_by_text(re.compile(r"^At minute [\d.]+: HBM"))).not_to_have_text(replay_after_seed)
