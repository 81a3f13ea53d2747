"""Memory: the server's RSS with 1 and with 20 open sessions, and the cost of each extra one.

    .venv/bin/python -m bench.memory [--sessions 20] [--page batched-inference-api] [--json out.json]

One `python -m ui.launch` server (its own database) and one headless Chromium; each session is
its own Playwright browser context that opens the question page and waits until it has drawn
its metric cards and its run is over. RSS is VmRSS of the server process from /proc/<pid>/status,
read only once every session is idle: the median of five reads half a second apart.

Measured: the server alone (no session yet), after the first session (which also pays for
importing the pages and filling the shared caches), and after the other sessions have opened
(all at once, as a class following a link does). Reported: (RSS at N - RSS at 1) / (N - 1).
Target: under 30 MB per extra session.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from bench._common import CHROMIUM, CHROMIUM_ARGS, IDLE, VIEWPORT, dump_json, loadavg, md_table, rss_kb

TARGET_MB = 30.0
PAGES = ["batched-inference-api", "continuous-batching"]


def _settled_rss_mb(pid: int, reads: int = 5, gap_s: float = 0.5) -> float:
    samples = []
    for i in range(reads):
        if i:
            time.sleep(gap_s)  # sampling a process's RSS over time: there is no event to wait on
        samples.append(rss_kb(pid) / 1024)
    return statistics.median(samples)


async def _open(browser, url: str, slug: str):
    context = await browser.new_context(viewport=VIEWPORT)
    context.set_default_timeout(300_000)
    page = await context.new_page()
    await page.goto(f"{url}/{slug}", timeout=300_000)
    await page.wait_for_selector("[data-testid='stMetric']", timeout=300_000)
    await page.wait_for_selector(IDLE, timeout=300_000)
    return context, page


async def _measure(url: str, pid: int, slug: str, sessions: int) -> dict:
    from playwright.async_api import async_playwright

    out = {"page": slug, "sessions": sessions, "rss_0_mb": _settled_rss_mb(pid)}
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        first = await _open(browser, url, slug)
        out["rss_1_mb"] = _settled_rss_mb(pid)
        t = time.perf_counter()
        rest = await asyncio.gather(*(_open(browser, url, slug) for _ in range(sessions - 1)))
        out["open_rest_s"] = time.perf_counter() - t
        # Every session idle (each waited for its own run to end); check again before reading.
        for _, page in [first, *rest]:
            await page.wait_for_selector(IDLE, timeout=300_000)
        out["rss_n_mb"] = _settled_rss_mb(pid)
        out["load_at_measure"] = loadavg()
        for context, _ in [first, *rest]:
            await context.close()
        await browser.close()
    out["per_extra_mb"] = (out["rss_n_mb"] - out["rss_1_mb"]) / (sessions - 1)
    return out


def run(pages: list[str], sessions: int) -> dict:
    from tests.e2e.conftest import start_server, stop_server

    res = {"load_before": loadavg(), "target_mb": TARGET_MB, "pages": []}
    for slug in pages:  # a fresh server per page, so one page's sessions do not count for the next
        tmp = Path(tempfile.mkdtemp(prefix="bench-memory-"))
        proc, url = start_server(tmp / "bench.duckdb", tmp / "server.log")
        try:
            res["pages"].append(asyncio.run(_measure(url, proc.pid, slug, sessions)))
        finally:
            stop_server(proc)
    res["load_after"] = loadavg()
    return res


def table(res: dict) -> str:
    rows = []
    for r in res["pages"]:
        n = r["sessions"]
        rows.append((r["page"], f"{r['rss_0_mb']:.0f}", f"{r['rss_1_mb']:.0f}", f"{r['rss_n_mb']:.0f}",
                     f"{r['per_extra_mb']:.1f}",
                     "yes" if r["per_extra_mb"] < res["target_mb"]
                     else f"no (+{r['per_extra_mb'] - res['target_mb']:.1f} MB)",
                     f"{r['open_rest_s']:.1f}", r["load_at_measure"].split(" (")[0]))
    n = res["pages"][0]["sessions"] if res["pages"] else 20
    headers = ("page", "RSS, server alone (MB)", "RSS, 1 session (MB)", f"RSS, {n} sessions (MB)",
               "MB per extra session", f"< {res['target_mb']:.0f} MB", f"{n - 1} sessions opened in (s)",
               "load at measure")
    return md_table(headers, rows, "lrrrrlrr")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=20)
    ap.add_argument("--pages", default=",".join(PAGES))
    ap.add_argument("--json")
    args = ap.parse_args()
    res = run(args.pages.split(","), args.sessions)
    print(f"Server RSS (VmRSS) with 1 and {args.sessions} open sessions (one browser context each).")
    print(f"Load average before: {res['load_before']}; after: {res['load_after']}\n")
    print(table(res))
    dump_json(args.json, res)


if __name__ == "__main__":
    main()
