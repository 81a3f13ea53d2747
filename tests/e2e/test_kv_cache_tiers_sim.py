"""Playwright: the KV-cache-tiers page's live simulation answers a new seed and a capacity knob."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import wait_idle
from tests.helpers import metric_delta, metric_value

pytestmark = pytest.mark.e2e

SLUG = "kv-cache-tiers"


def test_seed_and_hbm_knob_change_the_simulation(page: Page, app_url: str):
    # The replay opens at minute 12.5 (step 25 of 30 s), mid-run: the run's end can read alike in two
    # runs (every tier drained), an instant while the tiers fill cannot.
    page.goto(f"{app_url}/{SLUG}?{SLUG}.replay_t=25")
    wait_idle(page)
    expect(page.get_by_role("heading", name="KV cache tiers for long conversations")).to_be_visible()
    # The analytic key figures: 30,000 x 327,680 B and 9.83e9 B / 1.447 s (prefill at 8 x 989 TFLOP/s x 0.6
    # plus its all-reduces).
    expect(metric_value(page, "One conversation")).to_have_text("9.83 GB")
    expect(metric_value(page, "Break-even bandwidth")).to_have_text("6.794 GB/s")

    avoided = metric_value(page, "Recompute avoided")
    avoided.scroll_into_view_if_needed()
    expect(avoided).to_have_text(re.compile(r"^[\d,.]+ GPU-h$"))
    first_avoided = avoided.inner_text()
    hbm = metric_value(page, "HBM hits")
    estimate = metric_delta(page, "HBM hits")
    # The closed form is analytic: 14.37% of returning turns come back within the 12 s HBM residency.
    expect(hbm).to_have_text(re.compile(r"^[\d.]+%$"))
    expect(estimate).to_have_text("closed form 14.37%")
    replay = page.get_by_text(re.compile(r"^At 12\.5 min: HBM [\d.,]+ [kMGT]?B in "))
    expect(replay).to_be_visible()

    # Another seed: other conversations, so other totals; the estimate does not move.
    seed = page.locator(f".st-key-{SLUG}-sim_seed input")
    seed.fill("3")
    seed.press("Enter")
    expect(seed).to_have_value("3")
    wait_idle(page)
    expect(avoided).not_to_have_text(first_avoided)
    expect(estimate).to_have_text("closed form 14.37%")
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
    expect(estimate).not_to_have_text("closed form 14.37%")
    # The occupancy chart's replay line reads the new run: HBM now fills to 55 GB, not 50.
    expect(page.get_by_text(re.compile(r"^At [\d.]+ min: HBM"))).not_to_have_text(replay_after_seed)
