"""Load: N concurrent browser sessions, each answering drills in its own mock interview.

    .venv/bin/python -m bench.load [--sessions 20] [--answers 10]

Attempts are created in the store before the server starts (the server then owns the file),
every phase is opened so all drills show, and each session saves its answers one after another
while the others do the same. Reported: answers stored (none lost, none duplicated) and the
save-to-confirmation time a person waits (click Save until "Saved at ... <answer>" shows).
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from playwright.async_api import async_playwright

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from models.core import PHASES  # noqa: E402
from models.registry import QUESTIONS  # noqa: E402
from store import Store  # noqa: E402

SLUG = "batched-inference-api"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']"


def prepare(db: Path, sessions: int) -> list[str]:
    q = QUESTIONS[SLUG]
    now = datetime.now(timezone.utc)
    ids = []
    with Store.open(db) as store:
        for _ in range(sessions):
            a = store.start_attempt("me", SLUG, "mock", q.Params().model_dump(mode="json"), seed=0,
                                    deadline=now + timedelta(minutes=45), settings={"round_min": 45}, now=now)
            for phase in PHASES:  # open every phase so every drill is on the page
                store.mark_phase(a, phase, now=now)
            ids.append(a)
    return ids


def plan_answers(n: int) -> list[tuple[str, str]]:
    """(drill key, typed) pairs: every drill once, then the first ones again (a re-answer)."""
    keys = [d.key for d in QUESTIONS[SLUG].drills]
    return [(keys[i % len(keys)], f"{100 + i}") for i in range(n)]


async def one_session(browser, url: str, attempt_id: str, answers: list[tuple[str, str]], waits: list[float],
                      delay_s: float = 0.0):
    await asyncio.sleep(delay_s)  # sessions arrive over a few seconds, as a class does
    context = await browser.new_context(viewport={"width": 1200, "height": 900})
    context.set_default_timeout(180_000)
    page = await context.new_page()
    await page.goto(f"{url}/mock?attempt={attempt_id}", timeout=120_000)
    await page.wait_for_selector(IDLE, timeout=180_000)
    for key, typed in answers:
        box = page.locator(f".st-key-mockdrill-{key}")
        await box.locator("input[type='text']").fill(typed)
        started = time.perf_counter()
        await box.get_by_role("button", name="Save").click()
        await box.get_by_text(re.compile(r"Saved at .*" + re.escape(typed))).wait_for(timeout=120_000)
        waits.append(time.perf_counter() - started)
    await context.close()


async def drive(url: str, ids: list[str], answers: list[tuple[str, str]], chromium: str) -> list[float]:
    waits: list[float] = []
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        await asyncio.gather(*(one_session(browser, url, a, answers, waits, i * 0.5) for i, a in enumerate(ids)))
        await browser.close()
    return waits


def check(db: Path, ids: list[str], answers: list[tuple[str, str]]) -> dict:
    with Store.open(db) as store:
        rows = {a: store.answers(a) for a in ids}
    total = sum(len(r) for r in rows.values())
    ids_seen = [r["id"] for rs in rows.values() for r in rs]
    wrong = [a for a, rs in rows.items() if [(r["drill_key"], r["typed"]) for r in rs] != answers]
    return {"stored": total, "expected": len(ids) * len(answers), "duplicates": len(ids_seen) - len(set(ids_seen)),
            "sessions_with_wrong_rows": len(wrong)}


def summarize(waits: list[float]) -> dict:
    w = sorted(waits)
    return {"saves": len(w), "median_ms": statistics.median(w) * 1000, "p95_ms": w[int(0.95 * (len(w) - 1))] * 1000,
            "max_ms": w[-1] * 1000}


def main() -> None:
    from tests.e2e.conftest import CHROMIUM, start_server, stop_server

    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=20)
    ap.add_argument("--answers", type=int, default=10)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp())
    db = tmp / "load.duckdb"
    ids = prepare(db, args.sessions)
    answers = plan_answers(args.answers)
    proc, url = start_server(db, tmp / "server.log")
    try:
        t = time.perf_counter()
        waits = asyncio.run(drive(url, ids, answers, CHROMIUM))
        elapsed = time.perf_counter() - t
    finally:
        stop_server(proc)
    print(f"{args.sessions} sessions x {args.answers} answers in {elapsed:.1f} s")
    print(check(db, ids, answers))
    print({k: round(v, 1) if isinstance(v, float) else v for k, v in summarize(waits).items()})


if __name__ == "__main__":
    main()
