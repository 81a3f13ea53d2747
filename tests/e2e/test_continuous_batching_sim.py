"""Playwright: the continuous-batching page's live simulation reacts to the seed and to a knob."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import wait_idle
from tests.helpers import metric_value

pytestmark = pytest.mark.e2e

SLUG = "continuous-batching"


def test_seed_and_knob_change_the_simulation(page: Page, app_url: str):
    page.goto(f"{app_url}/{SLUG}")
    wait_idle(page)
    title = "Continuous batching: from admission queue to streamed token"
    expect(page.get_by_role("heading", name=title)).to_be_visible()
    # The analytic key figure and the simulated one sit on the same page.
    expect(metric_value(page, "KV cap (full context)")).to_have_text("54 sequences")
    tokens = metric_value(page, "Simulated tokens/s")
    tokens.scroll_into_view_if_needed()
    expect(tokens).to_have_text(re.compile(r"^[\d,]+ tokens/s$"))
    first = tokens.inner_text()
    caption = page.get_by_text(re.compile(r"requests over [\d.]+ s \([\d,]+ engine steps\)"))
    first_caption = caption.inner_text()

    # Another seed: another run of the same scenario.
    seed = page.locator(f".st-key-{SLUG}-sim_seed input")
    seed.fill("7")
    seed.press("Enter")
    expect(seed).to_have_value("7")
    wait_idle(page)
    expect(tokens).not_to_have_text(first)
    expect(caption).not_to_have_text(first_caption)
    after_seed = tokens.inner_text()

    # A knob: a wider spread of lengths changes the requests, so the summary and the chart's caption move.
    slider = page.locator(f".st-key-{SLUG}-length_spread input[type='range']")
    slider.focus()
    slider.press("ArrowRight")
    expect(slider).to_have_value("0.9")
    wait_idle(page)
    expect(page.get_by_text(re.compile(r"spread 0\.9 σ"))).to_be_visible()
    expect(tokens).not_to_have_text(after_seed)
    expect(page).to_have_url(re.compile(r"length_spread=0\.9"))
    # The analytic figures do not depend on the spread: the KV cap stays where the arithmetic put it.
    expect(metric_value(page, "KV cap (full context)")).to_have_text("54 sequences")
