"""Benchmark: per question, median `solve` time and median full-page rerun time (AppTest), and how
long a simulation panel takes to show the new scenario's run.

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


def _rerun_ms(q, reruns: int) -> tuple[float, ...]:
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

    walls, runs, content, cards, landed = [], [], [], [], []
    _until_landed(at)
    for value in values:
        at.slider(key=key).set_value(value)
        t = time.perf_counter()
        at.run()
        walls.append((time.perf_counter() - t) * 1000)
        assert not at.exception, [e.value for e in at.exception]
        # The page's own run, as the server runs it (ui/question_page.py times it): at.run() also
        # waits for AppTest to turn every message into its element tree, which a server never does
        # (10-25 ms on a page with a simulation panel's charts and tables).
        runs.append(RUN_TIMES["total_ms"])
        # Simulation panels are drawn last: what precedes them is the page a slider move shows.
        content.append(RUN_TIMES["content_ms"])
        cards.append(RUN_TIMES["metrics_ms"])  # from the page body's start to the metric cards drawn
        if _under_way(at):
            _until_landed(at)
            landed.append((time.perf_counter() - t) * 1000)
    return (tuple(x for series in (runs, content, walls) for x in _median_p95(series)) + (statistics.median(cards),)
            + (_median_p95(landed) if landed else (float("nan"), float("nan"))))


def _under_way(at) -> bool:
    """Whether a simulation panel on the page is waiting for its run (ui/sim_panel.py's line)."""
    return any(c.value.startswith(":material/hourglass_top:") for c in at.caption)


def _until_landed(at) -> None:
    """Wait for the worker, then run the page again, until no panel is waiting: what the panel's own
    polls do in a browser, with a full run standing in for each poll (AppTest cannot run a fragment
    alone), so the time it gives is an upper bound."""
    from ui.sim_runs import RUNS

    while _under_way(at):
        RUNS.wait_all()
        at.run()


def _median_p95(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[int(0.95 * (len(ordered) - 1))]


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
    return _median_p95(samples)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reruns", type=int, default=20)
    ap.add_argument("--only", nargs="*", help="these question slugs only")
    args = ap.parse_args()
    os.environ.setdefault("WALKTHROUGHS_DB", os.path.join(tempfile.mkdtemp(), "bench.duckdb"))
    rows = []
    from ui.sim_runs import RUNS

    RUNS.warm()  # as ui/launch.py does for `make run`: the worker up, its models loaded
    trivial = _trivial_rerun_ms(args.reruns)
    for q in written():
        if args.only and q.slug not in args.only:
            continue
        solve_ms = _solve_ms(q)
        rows.append((q.slug, solve_ms, *_rerun_ms(q, args.reruns)))
    print("Rerun: a knob moved to a new value, ms. 'Page run': the page's own run, as the server runs it;")
    print("'before sims': that run up to the simulation panels, which are drawn last (the whole run on")
    print("pages without one); 'AppTest': at.run() around it, which also builds AppTest's element tree.")
    print("'Sims landed': from the knob move until every simulation panel shows the new scenario's run")
    print("(its runs go to a worker process, ui/sim_runs.py; an upper bound, see _until_landed).")
    print(f"{'question':30s} {'solve':>6s} | {'page run':>8s} {'p95':>6s} | {'before sims':>11s} {'p95':>6s} | "
          f"{'AppTest':>7s} {'p95':>6s} | {'to cards':>8s} | {'sims landed':>11s} {'p95':>6s}")
    print(f"{'(trivial page: 1 slider, 1 metric)':30s} {'-':>6s} | {'':>8s} {'':>6s} | {'':>11s} {'':>6s} | "
          f"{trivial[0]:7.1f} {trivial[1]:6.1f} |")
    for slug, s, rm, rp, cm, cp, wm, wp, cards, lm, lp in rows:
        sims = f"{lm:11.1f} {lp:6.1f}" if lm == lm else f"{'-':>11s} {'':>6s}"
        print(f"{slug:30s} {s:6.3f} | {rm:8.1f} {rp:6.1f} | {cm:11.1f} {cp:6.1f} | {wm:7.1f} {wp:6.1f} | {cards:8.1f} | {sims}")
    over = [row[0] for row in rows if row[3] >= 100]
    print(f"page run p95 under 100 ms: {len(rows) - len(over)} of {len(rows)} pages"
          + (f"; over: {', '.join(over)}" if over else ""))

if __name__ == "__main__":
    main()
