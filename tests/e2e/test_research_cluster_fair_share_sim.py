"""Playwright: the fair-share page's simulation answers a new seed, a knob and the replay control."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from models.platform.research_cluster_fair_share import Params, simulate, solve
from tests.e2e.conftest import wait_idle
from tests.helpers import metric_value

pytestmark = pytest.mark.e2e

SLUG = "research-cluster-fair-share"


def test_seed_knob_and_replay_move_the_simulation(page: Page, app_url: str):
    page.goto(f"{app_url}/{SLUG}")
    wait_idle(page)
    preemptions = metric_value(page, "Preemptions over the run")
    target = metric_value(page, "Pretraining's target, first tick (sim)")
    expect(preemptions).to_have_text(f"{simulate(Params(), seed=0).preemptions} jobs")
    # the hand water-filling: weights 0.5 x 2^-1.6 = 0.1649 and 0.25 x 2^-((32/480)/0.25) = 0.2078,
    # so 256 + 64 x 0.1649 / (0.1649 + 0.2078) = 284.3
    expect(target).to_have_text("284.3 GPUs")
    expect(page.locator(f".st-key-{SLUG}-sim-fair_share-chart")).to_be_visible()

    # A new seed is a new run: other arrivals, another count of preemptions; the first tick is the same.
    seed = page.locator(f".st-key-{SLUG}-sim_seed input")
    seed.fill("1")
    seed.press("Enter")
    expect(seed).to_have_value("1")
    wait_idle(page)
    expect(preemptions).to_have_text(f"{simulate(Params(), seed=1).preemptions} jobs")
    expect(target).to_have_text("284.3 GPUs")

    # Evals holds 5% less: more idle GPUs to lend this morning, and the simulation follows the arithmetic.
    slider = page.locator(f".st-key-{SLUG}-evals_hold_fraction input[type='range']")
    slider.focus()
    slider.press("ArrowLeft")
    # A keystroke right after a run can be dropped: assert on the widget before the output.
    expect(slider).to_have_value(re.compile(r"^95(\.0)?$"))
    wait_idle(page)
    moved = solve(Params(evals_hold_fraction=0.95))
    expect(target).to_have_text(f"{simulate(Params(evals_hold_fraction=0.95), seed=1).target[0, 0]:,.1f} GPUs")
    expect(metric_value(page, "Running on borrowed GPUs")).to_have_text(moved["borrowed_gpus"].display(hint=False))
    expect(page).to_have_url(re.compile(r"evals_hold_fraction=95"))

    # The replay starts at the owner's return and steps one tick at a time.
    replay = page.locator(f".st-key-{SLUG}-replay_t input[type='range']")
    replay.scroll_into_view_if_needed()
    expect(page.get_by_text("The cluster at hour 24.00")).to_be_visible()
    expect(page.get_by_text(re.compile(r"Preempted for Interpretability: \d+ jobs")).first).to_be_visible()
    replay.focus()
    replay.press("ArrowRight")
    wait_idle(page)
    expect(page.get_by_text("The cluster at hour 24.08")).to_be_visible()

    # A knob move sends the new scenario to the simulation worker; the panel redraws while it runs
    # and when it lands, and loses neither the replay's position nor the seed.
    slider.focus()
    slider.press("ArrowRight")
    expect(slider).to_have_value(re.compile(r"^100(\.0)?$"))
    wait_idle(page)
    expect(target).to_have_text(f"{simulate(Params(), seed=1).target[0, 0]:,.1f} GPUs")
    expect(page.get_by_text("The cluster at hour 24.08")).to_be_visible()
    expect(seed).to_have_value("1")
