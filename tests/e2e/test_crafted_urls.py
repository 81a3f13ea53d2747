"""Crafted URLs: garbage, out-of-range, wrong-type and over-long values never show a traceback;
what is ignored or clamped is said on the page."""

from __future__ import annotations

import re
from urllib.parse import quote

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import wait_idle

pytestmark = pytest.mark.e2e

B = "batched-inference-api"
C = "checkpoint-distribution"
LONG = "9" * 5000

CASES = [
    # (path, text that must appear: the notice naming what was ignored or clamped)
    (f"/{B}?{B}.arrival_rps=lots", "not a number"),
    (f"/{B}?{B}.arrival_rps=-5", "outside the range"),
    (f"/{B}?{B}.arrival_rps=1e308", "outside the range"),
    (f"/{B}?{B}.arrival_rps=NaN", "not a number"),
    (f"/{B}?{B}.arrival_rps=inf", "not a number"),
    (f"/{B}?{B}.arrival_rps=2345", "between the slider's stops"),
    (f"/{B}?{B}.max_batch_inputs=5000", "outside the range"),
    (f"/{B}?{B}.max_batch_inputs=3.7", "max_batch_inputs=3.7"),
    (f"/{B}?{B}.batch_fill_fraction=250", "outside the range"),
    (f"/{B}?{B}.dispatchers={LONG}", "too long"),
    (f"/{B}?{B}.dispatchers=%00%01", "not a number"),
    (f"/{B}?{quote('<script>alert(1)</script>')}=1", "no setting by that name"),
    (f"/{B}?{B}.arrival_rps={quote('<img src=x onerror=alert(1)>')}", "not a number"),
    (f"/{B}?{B}.arrival_rps={quote('`]) [x](javascript:alert(1))')}", "not a number"),
    (f"/{C}?{C}.hosts=0", "outside the range"),
    (f"/{C}?{C}.hosts=twenty", "not a number"),
    (f"/{C}?{C}.chunk_mb=1e-9", "outside the range"),
    (f"/{C}?{C}.checkpoint_gb=400&{C}.checkpoint_gb=800", None),
    (f"/{C}?preset=nope", None),
    (f"/{C}?present=banana", None),
    ("/mock?attempt=nope", "not valid"),
    (f"/mock?attempt={'a' * 32}", "no open round"),
    (f"/mock?attempt={quote('<script>')}", "not valid"),
    (f"/mock?attempt={LONG}", "not valid"),
    (f"/progress?profile={quote('<script>alert(1)</script>')}", None),
    (f"/nonexistent-page?x=1", None),
    ("/mock/extra/deeper", "Page not found"),  # was a blank page with a 200
    ("/mock/", "Start the clock"),
]


@pytest.mark.parametrize("path,notice", CASES, ids=[f"url{i}" for i in range(len(CASES))])
def test_crafted_url(page: Page, app_url: str, path: str, notice: str | None):
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(app_url + path)
    wait_idle(page)
    expect(page.locator("[data-testid='stMain']")).to_be_visible()
    if notice:
        expect(page.get_by_text(re.compile(re.escape(notice))).first).to_be_visible()
    expect(page.locator("[data-testid='stException']")).to_have_count(0)
    expect(page.get_by_text("Traceback")).to_have_count(0)
    assert not dialogs, f"a script ran: {dialogs}"
