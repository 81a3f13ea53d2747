"""Cold start: from spawning `python -m ui.launch` (what `make run` runs, from a warm venv) to the
home page's title heading visible in Chromium, and separately to /_stcore/health answering OK.

    .venv/bin/python -m bench.coldstart [--runs 5] [--json out.json]

Chromium is started once, before any run (a person's browser is already open); each run spawns
a new server on a free port with the same database file, polls /_stcore/health every 20 ms, then
opens the home page in a new browser context and waits for the heading "AI Infrastructure Design
Walkthroughs" to be visible. One untimed run per variant first warms the OS file cache;
the variants' runs are interleaved.

Two variants: the environment as it is, and with a bytecode cache. This machine sets
PYTHONDONTWRITEBYTECODE=1, so the app's own modules (ui/, models/, pages/) are compiled from
source on every start; the second variant points PYTHONPYCACHEPREFIX at a temporary folder (no
file is written in the repository) to show what a normal install, which writes __pycache__,
gets. Target: under 5 s to the first page.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from bench._common import CHROMIUM, CHROMIUM_ARGS, ROOT, VIEWPORT, dump_json, loadavg, md_table, median

TITLE = "AI Infrastructure Design Walkthroughs"
TARGET_S = 5.0


def _free_port() -> int:
    from tests.e2e.conftest import _free_port as free

    port = free()
    assert port != 8501
    return port


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def one_start(browser, db: Path, log: Path, env_extra: dict[str, str | None]) -> tuple[float, float]:
    """(s to health OK, s to the heading visible), both from just before the spawn."""
    port = _free_port()
    env = {**os.environ, "WALKTHROUGHS_DB": str(db), "PYTHONUNBUFFERED": "1"}
    for k, v in env_extra.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    url = f"http://127.0.0.1:{port}"
    with open(log, "a") as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "ui.launch", "--server.port", str(port), "--server.headless", "true",
             "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = t0 + 120
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"server exited early; see {log}")
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=1) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.perf_counter() > deadline:
                raise RuntimeError(f"server not healthy after 120 s; see {log}")
            time.sleep(0.02)  # polling an HTTP endpoint that is not up yet: nothing to wait on
        t_health = time.perf_counter() - t0
        context = browser.new_context(viewport=VIEWPORT)
        page = context.new_page()
        page.goto(url, timeout=120_000)
        page.get_by_role("heading", name=TITLE).first.wait_for(state="visible", timeout=120_000)
        t_page = time.perf_counter() - t0
        context.close()
    finally:
        _stop(proc)
    return t_health, t_page


def run(runs: int) -> dict:
    from playwright.sync_api import sync_playwright

    tmp = Path(tempfile.mkdtemp(prefix="bench-coldstart-"))
    db, log = tmp / "bench.duckdb", tmp / "server.log"
    variants = {
        "as configured": {},
        "with a bytecode cache": {"PYTHONDONTWRITEBYTECODE": None, "PYTHONPYCACHEPREFIX": str(tmp / "pycache")},
    }
    out = {"load_before": loadavg(), "runs": runs, "target_s": TARGET_S,
           "PYTHONDONTWRITEBYTECODE": os.environ.get("PYTHONDONTWRITEBYTECODE"), "variants": {}}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for name, extra in variants.items():
            one_start(browser, db, log, extra)  # untimed: file cache (and bytecode cache) warm
            out["variants"][name] = {"health_s": [], "first_page_s": []}
        for _ in range(runs):  # interleaved, so a burst of load on the machine hits both variants
            for name, extra in variants.items():
                h, f = one_start(browser, db, log, extra)
                out["variants"][name]["health_s"].append(h)
                out["variants"][name]["first_page_s"].append(f)
        browser.close()
    out["load_after"] = loadavg()
    return out


def table(res: dict) -> str:
    rows = []
    for name, v in res["variants"].items():
        fp = v["first_page_s"]
        rows.append((name, f"{median(v['health_s']):.2f}", f"{max(v['health_s']):.2f}", f"{median(fp):.2f}",
                     f"{max(fp):.2f}",
                     "yes" if median(fp) < res["target_s"] else f"no (+{median(fp) - res['target_s']:.2f} s)"))
    headers = ("variant", "to /_stcore/health OK, median s", "worst s", "to home heading visible, median s",
               "worst s", f"median < {res['target_s']:.0f} s")
    return md_table(headers, rows, "lrrrrl")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json")
    args = ap.parse_args()
    res = run(args.runs)
    print(f"Cold start, {args.runs} runs per variant after one untimed run "
          f"(PYTHONDONTWRITEBYTECODE={res['PYTHONDONTWRITEBYTECODE']!s} in this environment).")
    print(f"Load average before: {res['load_before']}; after: {res['load_after']}\n")
    print(table(res))
    dump_json(args.json, res)


if __name__ == "__main__":
    main()
