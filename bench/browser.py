"""Slider-to-screen in a real browser: press an arrow key on a slider, time until a metric card
shows its new value.

    .venv/bin/python -m bench.browser [--moves 15] [--warmup 2] [--loads 10] [--sessions 1|2]
                                      [--pages all|slug,...] [--json out.json]

A `python -m ui.launch` server with its own database and Debian's headless Chromium (Playwright).
Per page we focus a non-log numeric slider whose change moves a metric card (chosen from the
model: the knob and card whose value changes at every step), then press ArrowRight, ArrowLeft,
ArrowRight, ... (two warm-up moves, then `--moves` timed ones). Each sample runs from just before
the key press until the card's value text differs from what it showed (page.wait_for_function,
polled every animation frame; no sleeps). After each sample we wait for the run to finish (the
app idle) before the next press, so moves never overlap.

Alternating between two values is what a person nudging a slider does, and after the warm-up
both scenarios are in the caches (`solve` and the simulations are cached by parameters). A
second phase, "new values", keeps pressing in one direction so every move is a scenario the
server has not seen (no cache hit: solve, sweeps and simulations all run).

Right before each page, bench/trivial_page.py (one slider, one metric) is served by the same
Python and measured the same way; the table reports each page as a ratio to it (issue #22's goal:
card within 1.5x, run done within 3x), since absolute times drift between runs on this machine.

`--sessions 2`: a second learner (bench/companion.py, its own browser) nudges a slider of the same
page on the same server the whole time a page is measured, and likewise beside the trivial page.
"""

from __future__ import annotations

import argparse
import contextlib
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench._common import (CHROMIUM, CHROMIUM_ARGS, IDLE, VIEWPORT, dump_json, loadavg, md_table, median, p95)

# Five pages: two with a live simulation (checkpoint-distribution: the swarm;
# continuous-batching: the batching engine).
PAGES = ["batched-inference-api", "checkpoint-distribution", "serving-platform", "continuous-batching",
         "rag-10k-qps"]
SIM_PAGES = {"checkpoint-distribution": "swarm", "continuous-batching": "batching"}

READ_METRIC = """
([label]) => {
  for (const m of document.querySelectorAll("[data-testid='stMetric']")) {
    const l = m.querySelector("[data-testid='stMetricLabel']");
    if (l && l.innerText.trim() === label) {
      const v = m.querySelector("[data-testid='stMetricValue']");
      return v ? v.innerText : null;
    }
  }
  return null;
}
"""
METRIC_CHANGED = """
([label, before]) => {
  for (const m of document.querySelectorAll("[data-testid='stMetric']")) {
    const l = m.querySelector("[data-testid='stMetricLabel']");
    if (l && l.innerText.trim() === label) {
      const v = m.querySelector("[data-testid='stMetricValue']");
      const changed = v !== null && v.innerText !== before;
      if (changed && window.__bench) window.__bench.card = performance.now();
      return changed;
    }
  }
  return false;
}
"""
# Page-clock marks for a breakdown: the keydown, and the app switching to "running" (the server
# has started the rerun and told the browser). Observing costs nothing measurable.
MARKS = """
window.__bench = {keydown: 0, running: 0, card: 0};
document.addEventListener("keydown", () => {
  window.__bench = {keydown: performance.now(), running: 0, card: 0};
}, true);
new MutationObserver(() => {
  const app = document.querySelector("[data-testid='stApp']");
  if (window.__bench.keydown && !window.__bench.running && app &&
      app.getAttribute("data-test-script-state") === "running") window.__bench.running = performance.now();
}).observe(document, {attributes: true, subtree: true, attributeFilter: ["data-test-script-state"]});
"""


@dataclass
class Choice:
    slug: str
    field: str
    metric_key: str
    label: str
    first_key: str  # "ArrowRight" or "ArrowLeft": the direction with room to move
    fresh_moves: int  # how many one-direction moves after the alternating phase still change the card
    widget_step: float


def choose(slug: str, fresh_wanted: int) -> Choice:
    """The first non-log int/float knob (and metric card) that changes the card on every step in
    one direction, preferring the knob with the most such steps; a log knob (its slider steps
    through ratio-spaced stops) only where no linear one moves a card."""
    try:
        return _choose(slug, fresh_wanted, log=False)
    except LookupError:
        return _choose(slug, fresh_wanted, log=True)


def _choose(slug: str, fresh_wanted: int, log: bool) -> Choice:
    from pydantic import ValidationError

    from models.registry import QUESTIONS
    from ui.knobs import log_stops, specs

    q = QUESTIONS[slug]
    base = q.Params()
    d0 = q.solve(base)
    labels = {k: short or d0[k].label for k, short in q.content.metrics}
    best: tuple[int, Choice] | None = None
    # Alternating visits positions 0 and 1 and leaves the slider on 1 (bench_page makes sure);
    # new values are positions 2, 3, ...
    start = 1
    for spec in specs(q.Params):
        if spec.kind not in ("int", "float") or spec.knob.log != log:
            continue
        knob = spec.knob
        wstep = float(knob.step or 1) if spec.kind == "int" else float(knob.step or 0.01)
        if knob.percent:
            wstep *= 100
        w0 = float(spec.default) * (100 if knob.percent else 1)
        stops = log_stops(spec) if log else []
        for sign, key in ((1, "ArrowRight"), (-1, "ArrowLeft")):
            derivs = [d0]
            for i in range(1, start + fresh_wanted + 1):
                if log:
                    at = stops.index(float(spec.default)) + sign * i
                    if not 0 <= at < len(stops):
                        break
                    w = stops[at] * (100 if knob.percent else 1)
                else:
                    w = w0 + sign * i * wstep
                v = w / 100 if knob.percent else w
                v = int(round(v)) if spec.kind == "int" else round(v, 9)
                try:
                    derivs.append(q.solve(q.Params(**{**base.model_dump(), spec.field: v})))
                except ValidationError:
                    break
            if len(derivs) < 2:
                continue
            for mkey, _ in q.content.metrics:
                shown = [d[mkey].display(hint=False) for d in derivs]
                if shown[0] == shown[1]:
                    continue  # the first move must change this card
                fresh = 0
                for i in range(start + 1, len(shown)):
                    if shown[i] == shown[i - 1]:
                        break
                    fresh += 1
                score = fresh
                if best is None or score > best[0]:
                    best = (score, Choice(slug, spec.field, mkey, labels[mkey], key, fresh, wstep))
    if best is None:
        raise LookupError(f"{slug}: no {'log' if log else 'non-log'} numeric knob moves a metric card")
    return best[1]


def _other(key: str) -> str:
    return "ArrowLeft" if key == "ArrowRight" else "ArrowRight"


def _wait_rendered(page, label: str, timeout: float = 120_000) -> None:
    """The question page has drawn its metric cards and its run is over."""
    page.wait_for_function(READ_METRIC.replace("return v ? v.innerText : null;", "return v !== null;"),
                           arg=[label], timeout=timeout, polling="raf")
    page.wait_for_selector(IDLE, timeout=timeout)


def _move(page, slider, key: str, label: str, retries: int = 3) -> tuple[float, float, int, float]:
    """One key press: (ms to the card's new text, ms to the run's end, keystrokes dropped,
    ms from the keydown to the rerun starting, in the page's clock)."""
    dropped = 0
    for _ in range(retries + 1):
        page.wait_for_selector(IDLE, timeout=60_000)
        slider.focus()
        before_text = page.evaluate(READ_METRIC, [label])
        before_value = slider.input_value()
        t0 = time.perf_counter()
        page.keyboard.press(key)
        try:
            page.wait_for_function(METRIC_CHANGED, arg=[label, before_text], polling="raf", timeout=20_000)
        except Exception:
            if slider.input_value() == before_value:  # the keystroke was dropped: press again
                dropped += 1
                continue
            raise
        t_card = time.perf_counter()
        page.wait_for_selector(IDLE, timeout=60_000)
        t_idle = time.perf_counter()
        marks = page.evaluate("() => window.__bench")
        to_start = marks["running"] - marks["keydown"] if marks["running"] and marks["keydown"] else float("nan")
        return (t_card - t0) * 1000, (t_idle - t0) * 1000, dropped, to_start
    raise RuntimeError(f"{retries + 1} key presses dropped in a row")


def _open(browser, url: str, choice: Choice, query: str = ""):
    """A fresh tab on the choice's page, drawn and idle: (context, page, slider, load ms). `query`
    sizes the yardstick page (bench/trivial_page.py)."""
    context = browser.new_context(viewport=VIEWPORT)
    context.set_default_timeout(60_000)
    context.add_init_script(MARKS)
    page = context.new_page()
    t = time.perf_counter()
    trivial = choice is TRIVIAL
    page.goto(f"{url}/{query}" if trivial else f"{url}/{choice.slug}", timeout=120_000)
    _wait_rendered(page, choice.label)
    load_ms = (time.perf_counter() - t) * 1000
    key_class = choice.field if trivial else f"{choice.slug}-{choice.field}"
    slider = page.locator(f".st-key-{key_class} input[type='range']")
    slider.wait_for(state="attached")
    if not slider.is_visible():
        # An engine knob sits in a closed expander of the knob panel: open it, as a learner would
        # (a key press on a hidden slider does nothing, and was counted as dropped).
        slider.locator("xpath=ancestor::details[1]/summary").click()
        slider.wait_for(state="visible")
        page.wait_for_selector(IDLE, timeout=60_000)
    return context, page, slider, load_ms


def bench_page(browser, url: str, choice: Choice, moves: int, warmup: int, fresh: int, query: str = "") -> dict:
    context, page, slider, first_load_ms = _open(browser, url, choice, query)
    key = choice.first_key
    alt_card, alt_idle, alt_start, new_card, new_idle, dropped = [], [], [], [], [], 0
    for i in range(warmup + moves):
        card_ms, idle_ms, d, start_ms = _move(page, slider, key, choice.label)
        dropped += d
        if i >= warmup:
            alt_card.append(card_ms)
            alt_idle.append(idle_ms)
            alt_start.append(start_ms)
        key = _other(key)
    # New values: keep going in the first direction from position 1 (2, 3, ... were never seen).
    if (warmup + moves) % 2 == 0:
        _move(page, slider, choice.first_key, choice.label)
    for _ in range(min(fresh, choice.fresh_moves)):
        card_ms, idle_ms, d, _ = _move(page, slider, choice.first_key, choice.label)
        dropped += d
        new_card.append(card_ms)
        new_idle.append(idle_ms)
    context.close()
    return {
        "slug": choice.slug, "knob": choice.field, "metric": choice.label,
        "sim": SIM_PAGES.get(choice.slug, ""), "first_load_ms": first_load_ms,
        "alternating_ms": alt_card, "alternating_idle_ms": alt_idle, "alternating_to_run_start_ms": alt_start,
        "new_values_ms": new_card, "new_values_idle_ms": new_idle, "dropped_keys": dropped,
    }


def first_moves(browser, url: str, choice: Choice, loads: int) -> tuple[list[float], list[float]]:
    """The move a learner makes right after a page opens: a fresh tab each time, one key press."""
    cards, idles = [], []
    for _ in range(loads):
        context, page, slider, _ = _open(browser, url, choice)
        card_ms, idle_ms, _, _ = _move(page, slider, choice.first_key, choice.label)
        cards.append(card_ms)
        idles.append(idle_ms)
        context.close()
    return cards, idles


TRIVIAL = Choice("trivial", "trivial-value", "", "Double", "ArrowRight", 0, 1.0)

WIDGETS = ("slider", "select_slider", "selectbox", "toggle", "button", "checkbox", "radio", "number_input")


def floor_query(slug: str) -> str:
    """The yardstick page's size for one question page, counted on its first run (AppTest): knobs
    and buttons outside its drill forms, drill forms, Markdown blocks and characters, charts."""
    import os

    from models.registry import QUESTIONS
    from tests.helpers import app_page

    os.environ.setdefault("WALKTHROUGHS_DB", str(Path(tempfile.mkdtemp()) / "floor.duckdb"))
    at = app_page(QUESTIONS[slug], timeout=120).run()
    forms = len(at.get("form"))
    widgets = sum(len(at.get(kind)) for kind in WIDGETS) - 2 * forms  # a form's two buttons are its own
    blocks = at.markdown
    return (f"?widgets={max(0, widgets)}&forms={forms}&markdown={len(blocks)}"
            f"&chars={sum(len(m.value) for m in blocks)}&charts={len(at.get('plotly_chart'))}")


@contextlib.contextmanager
def companion(url: str, choice: Choice, sessions: int):
    """With sessions == 2, a second browser session moving the same page's slider meanwhile."""
    if sessions < 2:
        yield
        return
    import sys

    trivial = choice is TRIVIAL
    page_url = f"{url}/" if trivial else f"{url}/{choice.slug}"
    key_class = choice.field if trivial else f"{choice.slug}-{choice.field}"
    proc = subprocess.Popen([sys.executable, "-m", "bench.companion", page_url, key_class],
                            stdout=subprocess.PIPE, text=True)
    try:
        if proc.stdout.readline().strip() != "ready":
            raise SystemExit(f"the second session did not start on {page_url}")
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def start_trivial(log: Path) -> tuple[subprocess.Popen, str]:
    """bench/trivial_page.py under the same Python and Streamlit options as the app."""
    import socket
    import sys
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with open(log, "w") as out:  # the child keeps its own copy of the descriptor
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", str(Path(__file__).with_name("trivial_page.py")),
             "--server.port", str(port), "--server.headless", "true", "--browser.gatherUsageStats", "false",
             "--server.fileWatcherType", "none"], stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=1):
                return proc, url
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit(f"the trivial page did not start:\n{log.read_text()}")


def run(pages: list[str], moves: int, warmup: int, fresh: int, loads: int = 0, sessions: int = 1,
        floor: bool = False) -> dict:
    from playwright.sync_api import sync_playwright

    from tests.e2e.conftest import start_server, stop_server

    choices = [choose(slug, fresh) for slug in pages]
    floors = {slug: floor_query(slug) for slug in pages} if floor else {}
    tmp = Path(tempfile.mkdtemp(prefix="bench-browser-"))
    load_before = loadavg()
    proc, url = start_server(tmp / "bench.duckdb", tmp / "server.log")
    trivial_proc, trivial_url = start_trivial(tmp / "trivial.log")
    results = []
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            for c in choices:
                # The yardstick right before each page: an absolute time drifts from one run (and
                # one minute) to the next on this machine; the ratio in the same minute does not.
                with companion(trivial_url, TRIVIAL, sessions):
                    base = bench_page(browser, trivial_url, TRIVIAL, moves, warmup, 0)
                    if loads:
                        trivial_first, _ = first_moves(browser, trivial_url, TRIVIAL, loads)
                with companion(url, c, sessions):
                    r = bench_page(browser, url, c, moves, warmup, fresh)
                    if loads:
                        r["first_move_ms"], r["first_move_idle_ms"] = first_moves(browser, url, c, loads)
                if floor:
                    with companion(trivial_url, TRIVIAL, sessions):
                        bound = bench_page(browser, trivial_url, TRIVIAL, moves, warmup, 0, floors[c.slug])
                    r["floor_query"] = floors[c.slug]
                    r["floor_ms"] = bound["alternating_ms"]
                    r["floor_idle_ms"] = bound["alternating_idle_ms"]
                r["trivial_ms"] = base["alternating_ms"]
                r["trivial_idle_ms"] = base["alternating_idle_ms"]
                if loads:
                    r["trivial_first_ms"] = trivial_first
                results.append(r)
            browser.close()
    finally:
        stop_server(proc)
        stop_server(trivial_proc)
    return {"load_before": load_before, "load_after": loadavg(), "moves": moves, "warmup": warmup,
            "sessions": sessions, "pages": results}


def table(res: dict) -> str:
    rows = []
    for r in res["pages"]:
        a, n = r["alternating_ms"], r["new_values_ms"]
        rows.append((
            f"{r['slug']}" + (f" (sim: {r['sim']})" if r["sim"] else ""),
            f"`{r['knob']}` → {r['metric']}",
            f"{median(a):.0f}", f"{p95(a):.0f}", f"{_nanmedian(r['alternating_to_run_start_ms']):.0f}",
            f"{median(r['alternating_idle_ms']):.0f}",
            f"{median(r['trivial_ms']):.0f}", f"{median(a) / median(r['trivial_ms']):.1f}x",
            f"{median(r['alternating_idle_ms']) / median(r['trivial_idle_ms']):.1f}x",
            (f"{median(r['first_move_ms']):.0f} ({median(r['first_move_ms']) / median(r['trivial_first_ms']):.1f}x)"
             if r.get("first_move_ms") else "-"),
            f"{median(n):.0f} / {p95(n):.0f} (n={len(n)})" if n else "-",
            f"{r['first_load_ms']:.0f}",
            *((f"{median(r['floor_ms']) / median(r['trivial_ms']):.1f}x / "
               f"{median(r['floor_idle_ms']) / median(r['trivial_idle_ms']):.1f}x",
               f"{median(a) / median(r['floor_ms']):.1f}x / "
               f"{median(r['alternating_idle_ms']) / median(r['floor_idle_ms']):.1f}x") if "floor_ms" in r else ()),
        ))
    headers = ("page", "slider → card", "median ms", "p95 ms", "of which key → rerun starts", "run done, median ms",
               "trivial page, median ms", "card / trivial (goal 1.5x)", "run done / trivial (goal 3x)",
               "first move after a load, median ms (/ trivial)", "new values: median / p95 ms", "first load ms")
    if any("floor_ms" in r for r in res["pages"]):
        headers += ("a page its size that changes only the card: card / trivial, run done / trivial",
                    "this page against that floor: card, run done")
    return md_table(headers, rows, "ll" + "r" * (len(headers) - 2))


def _nanmedian(xs: list[float]) -> float:
    return median([x for x in xs if x == x])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--moves", type=int, default=15)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--fresh", type=int, default=15, help="one-direction moves to new values after (0: skip)")
    ap.add_argument("--pages", default=",".join(PAGES), help="comma-separated slugs, or 'all'")
    ap.add_argument("--loads", type=int, default=0, help="fresh page loads, one move each (the first-move column)")
    ap.add_argument("--sessions", type=int, default=1, choices=(1, 2),
                    help="2: a second browser session moves the same page's slider meanwhile")
    ap.add_argument("--floor", action="store_true",
                    help="also measure, beside each page, a page of its size where only the card changes "
                         "(bench/trivial_page.py with the page's element counts): Streamlit's bound for that size")
    ap.add_argument("--json", help="also write the samples here (bench/report.py uses it)")
    args = ap.parse_args()
    if args.pages == "all":
        from models.registry import QUESTIONS
        pages = [slug for slug, q in QUESTIONS.items() if q.written]
    else:
        pages = args.pages.split(",")
    res = run(pages, args.moves, args.warmup, args.fresh, args.loads, args.sessions, args.floor)
    print(f"Slider-to-screen in Chromium: {args.warmup} warm-up + {args.moves} timed moves per page "
          f"(ArrowRight/ArrowLeft alternating), then up to {args.fresh} moves to new values; "
          f"{args.sessions} browser session{'s' if args.sessions > 1 else ''} on the server.")
    print(f"Load average before: {res['load_before']}; after: {res['load_after']}\n")
    print(table(res))
    dropped = sum(r["dropped_keys"] for r in res["pages"])
    if dropped:
        print(f"\n{dropped} key presses were dropped by the page and pressed again (not timed).")
    dump_json(args.json, res)


if __name__ == "__main__":
    main()
