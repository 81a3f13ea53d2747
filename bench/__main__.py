"""Benchmark: per question, median `solve` time and median full-page rerun time (AppTest).

    make bench          # or: .venv/bin/python -m bench [--reruns 20] [--only slug ...]

Not a timed test: it prints a table to paste into notes and the README.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

from models.registry import written


def _solve_ms(q, n: int = 300) -> float:
    p = q.Params()
    q.solve(p)
    samples = []
    for _ in range(n):
        t = time.perf_counter()
        q.solve(p)
        samples.append((time.perf_counter() - t) * 1000)
    return statistics.median(samples)


def _rerun_ms(q, reruns: int) -> tuple[float, float]:
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(q.page_path), default_timeout=60).run()
    # Every rerun moves a knob to a value not seen before, as a slider drag does: a figure or
    # solve cached by parameters cannot hide the work. Walk up from the default, then down.
    from ui.knobs import specs

    spec = next(s for s in specs(q.Params) if s.kind in ("int", "float") and not s.knob.log)
    field, knob = spec.field, spec.knob
    key = f"{q.slug}.{field}"
    scale = 100 if knob.percent else 1
    step = (knob.step or 1) * scale
    start = at.slider(key=key).value
    up = [start + i * step for i in range(1, reruns + 1) if start + i * step <= knob.max * scale + 1e-9]
    down = [start - i * step for i in range(1, reruns + 1) if start - i * step >= knob.min * scale - 1e-9]
    values = (up + down)[:reruns]
    if isinstance(start, int):
        values = [int(round(v)) for v in values]
    from ui.question_page import RUN_TIMES

    samples, content, cards = [], [], []
    for value in values:
        at.slider(key=key).set_value(value)
        t = time.perf_counter()
        at.run()
        total = (time.perf_counter() - t) * 1000
        samples.append(total)
        # Simulation panels are drawn last (ui/question_page.py); what precedes them is the
        # page a slider move shows: the run minus the simulation panels.
        content.append(total - (RUN_TIMES["total_ms"] - RUN_TIMES["content_ms"]))
        cards.append(RUN_TIMES["metrics_ms"])  # from the page body's start to the metric cards drawn
        assert not at.exception, [e.value for e in at.exception]
    content.sort()
    samples.sort()
    p95 = int(0.95 * (len(samples) - 1))
    return (statistics.median(samples), samples[p95], statistics.median(content), content[p95],
            statistics.median(cards))


def _trivial_page() -> None:
    import streamlit as st

    x = st.slider("x", 0, 1000, 500, key="x")
    st.metric("x squared", x * x)


def _trivial_rerun_ms(reruns: int) -> tuple[float, float]:
    """The same measurement on a page with one slider and one metric: what Streamlit itself costs
    on this machine, so the table can be read as a ratio (absolute times move with the load)."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_trivial_page, default_timeout=60).run()
    samples = []
    for i in range(1, reruns + 1):
        at.slider(key="x").set_value(500 + i)
        t = time.perf_counter()
        at.run()
        samples.append((time.perf_counter() - t) * 1000)
    samples.sort()
    return statistics.median(samples), samples[int(0.95 * (len(samples) - 1))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reruns", type=int, default=20)
    ap.add_argument("--only", nargs="*", help="these question slugs only")
    args = ap.parse_args()
    os.environ.setdefault("WALKTHROUGHS_DB", os.path.join(tempfile.mkdtemp(), "bench.duckdb"))
    rows = []
    trivial = _trivial_rerun_ms(args.reruns)
    for q in written():
        if args.only and q.slug not in args.only:
            continue
        solve_ms = _solve_ms(q)
        rows.append((q.slug, solve_ms, *_rerun_ms(q, args.reruns)))
    print("Rerun: a knob moved to a new value, AppTest, ms. 'Before sims': the run up to the simulation")
    print("panels, which are drawn last (equal to the rerun on pages without one).")
    print(f"{'question':32s} {'solve median':>12s} {'rerun median':>12s} {'rerun p95':>10s} "
          f"{'before sims median':>18s} {'p95':>6s} {'body to cards median':>20s}")
    print(f"{'(trivial page: 1 slider, 1 metric)':32s} {'-':>12s} {trivial[0]:12.1f} {trivial[1]:10.1f}")
    for slug, s, m, p, cm, cp, cards in rows:
        print(f"{slug:32s} {s:12.3f} {m:12.1f} {p:10.1f} {cm:18.1f} {cp:6.1f} {cards:20.1f}")


if __name__ == "__main__":
    main()
