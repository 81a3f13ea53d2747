"""A mock interview in the browser: answers survive a reload, the clock keeps running, the
review shows scores and worked steps, and the Markdown export downloads."""

import re

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import move_on, save_mock_answer, start_mock_round, wait_idle

pytestmark = pytest.mark.e2e


def _seconds(mmss: str) -> int:
    m, s = mmss.split(":")
    return int(m) * 60 + int(s)


def test_mock_attempt_survives_a_reload_and_ends_in_a_review(page: Page, app_url: str, tmp_path):
    start_mock_round(page, app_url)
    clock = page.frame_locator("iframe[title='Time left in the mock interview']").locator("#left")
    expect(clock).to_have_text(re.compile(r"^4[45]:\d\d$"))

    save_mock_answer(page, "per_gpu_rps_full", "250 req/s")
    move_on(page, "Shape")
    move_on(page, "Arithmetic")
    save_mock_answer(page, "gpus_floor", "12")  # wrong: the floor is 8

    before = _seconds(clock.inner_text())
    page.reload()
    wait_idle(page)
    # both answers came back from the store, and the clock kept counting down from the deadline
    expect(page.locator(".st-key-mockdrill-per_gpu_rps_full input[type='text']")).to_have_value("250 req/s")
    expect(page.locator(".st-key-mockdrill-gpus_floor input[type='text']")).to_have_value("12")
    expect(clock).not_to_have_text(re.compile(r"^45:00$"))
    expect(clock).to_have_text(re.compile(r"^\d\d:\d\d$"))
    after = _seconds(clock.inner_text())
    assert after <= before

    page.get_by_role("button", name="Finish and see the review").click()
    wait_idle(page)
    page.get_by_role("button", name="Yes, finish").click()  # finishing asks for a second click
    wait_idle(page)
    expect(page.locator("[data-testid='stMetric']").filter(has_text="Score").locator(
        "[data-testid='stMetricValue']")).to_have_text("11%")  # 1 of 9 drills
    miss = page.locator(".st-key-review-gpus_floor")
    expect(miss.get_by_text("ceil(2,000 req/s / 250 requests/s) = 8 GPUs")).to_be_visible()
    with page.expect_download() as info:
        page.get_by_role("button", name="Export the review (Markdown)").click()
    path = tmp_path / "review.md"
    info.value.save_as(path)
    text = path.read_text()
    assert text.startswith("# Mock interview review: An LLM inference API")
    assert "- Your answer: 12" in text and "ceil(2,000 req/s / 250 requests/s) = 8 GPUs" in text
