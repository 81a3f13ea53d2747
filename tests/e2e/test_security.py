"""Script and Markdown-injection payloads typed into answers, notes and the profile stay text."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import wait_idle

pytestmark = pytest.mark.e2e

PAYLOADS = [
    "<script>window.__pwned=1</script>",
    "<img src=x onerror=\"window.__pwned=2\">",
    "` [click me](javascript:window.__pwned=3) `",
]


def test_payloads_in_answers_notes_and_profile_render_inert(page: Page, app_url: str):
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(f"{app_url}/mock")
    wait_idle(page)
    page.locator("[data-testid='stForm']").get_by_role("button", name="Start the clock").click()
    wait_idle(page)
    boxes = page.locator("[class*='st-key-mockdrill-']")
    expect(boxes.first).to_be_visible()
    box = boxes.first
    for payload in PAYLOADS:
        box.locator("input[type='text']").fill(payload)
        box.get_by_role("button", name="Save").click()
        wait_idle(page)
        # not a number: it is not saved, and the message quotes it as literal text
        expect(box.get_by_role("alert")).to_contain_text(" ".join(payload.split()))
        expect(box.get_by_text("Saved at")).to_have_count(0)
    # a readable answer (in the unit the box names) is saved and shown back as typed
    unit = box.get_by_text(re.compile(r"^Your answer, in ")).inner_text().removeprefix("Your answer, in ")
    box.locator("input[type='text']").fill(f"~2 {unit}")
    box.get_by_role("button", name="Save").click()
    wait_idle(page)
    saved = box.locator("[data-testid='stCaptionContainer']").filter(has_text="Saved at").locator("code")
    expect(saved).to_have_text(f"~2 {unit}")
    notes = page.locator("textarea").first
    notes.fill(PAYLOADS[1] + " **bold?** [link](javascript:alert(1))")
    notes.blur()
    wait_idle(page)
    expect(page.get_by_text(re.compile(r"Saved at \d\d:\d\d:\d\d UTC; saves whenever"))).to_be_visible()
    page.reload()
    wait_idle(page)
    expect(page.locator("textarea").first).to_have_value(re.compile(re.escape(PAYLOADS[1])))
    assert page.evaluate("window.__pwned") is None
    assert not page.locator("a[href^='javascript']").count()
    assert not page.locator("[data-testid='stMain'] img[src='x']").count()

    # a profile name with a payload is refused and replaced, not rendered
    page.goto(f"{app_url}/progress?profile=%3Cscript%3Ewindow.__pwned%3D4%3C%2Fscript%3E")
    wait_idle(page)
    expect(page.get_by_text(re.compile("A profile name is 1-40"))).to_be_visible()
    assert page.evaluate("window.__pwned") is None
    assert not dialogs
