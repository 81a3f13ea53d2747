"""The learner's screen on every question page, counted: cut metric text per width, where the
first knob sits at 1440x900, and whether a knob and a metric share the screen on a phone.

    .venv/bin/python -m bench.layout [--url http://127.0.0.1:8501] [--pages slug,...] [--json out.json]

Without --url it starts its own `python -m ui.launch` on a free port. Point --url at another
checkout's server to measure it the same way (the before and after of a layout change).
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from bench._common import CHROMIUM, CHROMIUM_ARGS, IDLE, ROOT, dump_json, md_table
from tests.e2e.layout_checks import CUT_TEXT, KNOB_AND_METRIC_TOGETHER

WIDTHS = ((390, 844), (1280, 800), (1440, 900))

FIRST_SLIDER_TOP = """
() => { const s = document.querySelector("[data-testid='stSlider'], [data-testid='stSelectSlider']");
        return s ? s.getBoundingClientRect().top : null; }
"""


def _server() -> tuple[subprocess.Popen, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    db = Path(tempfile.mkdtemp()) / "layout.duckdb"
    proc = subprocess.Popen([sys.executable, "-m", "ui.launch", "--server.port", str(port), "--server.headless",
                             "true"], cwd=ROOT, env={**__import__("os").environ, "WALKTHROUGHS_DB": str(db)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            urllib.request.urlopen(f"{url}/_stcore/health", timeout=1)
            return proc, url
        except OSError:
            time.sleep(0.2)
    raise SystemExit("the app did not start")


def survey(url: str, slugs: list[str]) -> list[dict]:
    from playwright.sync_api import sync_playwright

    rows = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        for slug in slugs:
            row = {"slug": slug}
            page.set_viewport_size({"width": 1440, "height": 900})
            page.goto(f"{url}/{slug}")
            page.wait_for_selector(IDLE, timeout=90_000)
            page.wait_for_timeout(300)
            row["first_slider_top_px"] = page.evaluate(FIRST_SLIDER_TOP)
            for w, h in WIDTHS:
                page.set_viewport_size({"width": w, "height": h})
                page.wait_for_timeout(250)
                row[f"cut_{w}"] = page.evaluate(CUT_TEXT)
            page.set_viewport_size({"width": 390, "height": 844})
            page.wait_for_timeout(250)
            row["phone_together"] = page.evaluate(KNOB_AND_METRIC_TOGETHER)
            page.set_viewport_size({"width": 1440, "height": 900})
            page.goto(f"{url}/{slug}?present=1")
            page.wait_for_selector(IDLE, timeout=90_000)
            page.wait_for_timeout(300)
            row["cut_present"] = page.evaluate(CUT_TEXT)
            rows.append(row)
            print(slug, {k: v for k, v in row.items() if k != "slug"}, flush=True)
        browser.close()
    return rows


def report(rows: list[dict]) -> str:
    def pages_cut(key: str) -> int:
        return sum(1 for r in rows if r[key])

    together = sum(1 for r in rows if r["phone_together"] and r["phone_together"]["slider_visible"]
                   and r["phone_together"]["metric_visible"])
    tops = [r["first_slider_top_px"] for r in rows if r["first_slider_top_px"] is not None]
    in_view = sum(1 for t in tops if t < 900)
    return md_table(
        ["measure", "pages"],
        [["metric text cut at 390 px", pages_cut("cut_390")], ["metric text cut at 1280 px", pages_cut("cut_1280")],
         ["metric text cut at 1440 px", pages_cut("cut_1440")], ["metric text cut, presenter view", pages_cut("cut_present")],
         ["first slider inside the first 1440x900 screen", in_view],
         ["a slider and a metric card on a 390x844 screen together", together],
         ["pages measured", len(rows)]])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--url")
    ap.add_argument("--pages")
    ap.add_argument("--json")
    args = ap.parse_args()
    from models.registry import written

    slugs = args.pages.split(",") if args.pages else [q.slug for q in written()]
    proc = None
    url = args.url
    if not url:
        proc, url = _server()
    try:
        rows = survey(url, slugs)
    finally:
        if proc:
            proc.terminate()
    print(report(rows))
    dump_json(args.json, {"rows": rows})


if __name__ == "__main__":
    main()
