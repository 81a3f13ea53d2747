"""Real processes: a second server on a locked store, and kill -9 during a mock interview."""

from __future__ import annotations

import re
import signal

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import save_mock_answer, start_mock_round, start_server, stop_server, wait_idle

pytestmark = pytest.mark.e2e


def test_second_server_on_a_locked_store_says_so_and_keeps_working(page: Page, tmp_path):
    db = tmp_path / "shared.duckdb"
    first, url_a = start_server(db, tmp_path / "a.log")
    second, url_b = start_server(db, tmp_path / "b.log")
    try:
        page.goto(f"{url_a}/batched-inference-api")  # the first server opens (and locks) the file
        wait_idle(page)
        expect(page.get_by_text("locked by another process")).to_have_count(0)
        page.goto(f"{url_b}/batched-inference-api")
        wait_idle(page)
        expect(page.get_by_text(re.compile("locked by another process"))).to_be_visible()
        box = page.locator(".st-key-drillbox-batched-inference-api-gpus_floor")
        box.locator("input[type='text']").fill("8")
        box.get_by_role("button", name="Check").click()
        wait_idle(page)
        expect(box.get_by_text(re.compile(r"^You said .*Full marks"))).to_be_visible()
    finally:
        stop_server(second)
        stop_server(first)


def test_kill_9_loses_no_confirmed_answer(page: Page, tmp_path):
    db = tmp_path / "durable.duckdb"
    proc, url = start_server(db, tmp_path / "a.log")
    try:
        start_mock_round(page, url)
        attempt_url = page.url
        save_mock_answer(page, "per_gpu_rps_full", "250 req/s")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    proc, url = start_server(db, tmp_path / "b.log")
    try:
        page.goto(attempt_url.replace(attempt_url.split("/mock")[0], url))
        wait_idle(page)
        box = page.locator(".st-key-mockdrill-per_gpu_rps_full")
        expect(box.locator("input[type='text']")).to_have_value("250 req/s")
        expect(box.get_by_text(re.compile(r"Saved at .*250 req/s"))).to_be_visible()
    finally:
        stop_server(proc)
