"""Benchmark: per question, median `solve` time and median full-page rerun time (AppTest).

    make bench          # or: .venv/bin/python -m bench [--reruns 15]

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
    # Alternate a knob between two values so every rerun is a real change, as a slider move is.
    from ui.knobs import specs

    spec = next(s for s in specs(q.Params) if s.kind in ("int", "float") and not s.knob.log)
    field, knob = spec.field, spec.knob
    key = f"{q.slug}.{field}"
    widget = at.slider(key=key)
    scale = 100 if knob.percent else 1
    step = (knob.step or 1) * scale
    lo, hi = widget.value, widget.value + step
    if hi > knob.max * scale:
        lo, hi = widget.value - step, widget.value
    samples = []
    for i in range(reruns):
        widget = at.slider(key=key).set_value(hi if i % 2 == 0 else lo)
        t = time.perf_counter()
        at.run()
        samples.append((time.perf_counter() - t) * 1000)
        assert not at.exception, [e.value for e in at.exception]
    samples.sort()
    return statistics.median(samples), samples[int(0.95 * (len(samples) - 1))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reruns", type=int, default=15)
    args = ap.parse_args()
    os.environ.setdefault("WALKTHROUGHS_DB", os.path.join(tempfile.mkdtemp(), "bench.duckdb"))
    rows = []
    for q in written():
        solve_ms = _solve_ms(q)
        med, p95 = _rerun_ms(q, args.reruns)
        rows.append((q.slug, solve_ms, med, p95))
    print(f"{'question':32s} {'solve median (ms)':>18s} {'rerun median (ms)':>18s} {'rerun p95 (ms)':>15s}")
    for slug, s, m, p in rows:
        print(f"{slug:32s} {s:18.3f} {m:18.1f} {p:15.1f}")


if __name__ == "__main__":
    main()
