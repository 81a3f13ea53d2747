"""Every benchmark, one Markdown table per section, ready for the README's Performance section.

    .venv/bin/python -m bench.report [--only solve,sims,browser,coldstart,memory] [--reruns 15]

Each section runs in its own process, one after another (never two at once: they would measure
each other): `python -m bench` (solve and AppTest rerun), `python -m bench.sims`,
`python -m bench.browser`, `python -m bench.coldstart` and `python -m bench.memory`. The load
average before and after each section is printed with it; on a shared 2-core machine it says how
much to trust the numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench._common import ROOT, loadavg, md_table

SECTIONS = ("solve", "sims", "browser", "coldstart", "memory")


def _run(args: list[str]) -> tuple[int, str, str, float]:
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True)
    return proc.returncode, proc.stdout, proc.stderr, time.perf_counter() - t


def _failed(name: str, rc: int, out: str, err: str) -> str:
    tail = "\n".join((out + "\n" + err).strip().splitlines()[-30:])
    return f"`{name}` failed (exit {rc}):\n\n```\n{tail}\n```"


def _mark(ok: bool, value: float, target: float, unit: str) -> str:
    return "yes" if ok else f"no (+{value - target:.{1 if unit == 'ms' else 2}f} {unit})"


def section_solve(reruns: int) -> str:
    rc, out, err, _ = _run(["bench", "--reruns", str(reruns)])
    if rc:
        return _failed("python -m bench", rc, out, err)
    rows, missed = [], []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) != 6 or parts[0] == "question":
            continue
        try:
            slug, solve, med, p, cmed, cp = parts[0], *map(float, parts[1:])
        except ValueError:
            continue
        # The target is on what a slider move waits for: the page up to its simulation panels,
        # which are drawn last (the whole run, on pages without one).
        ok = solve < 1.0 and cp < 100.0
        if not ok:
            missed.append(slug)
        sims = f"{p:.1f}" if abs(p - cp) > 0.05 else "-"
        rows.append((slug, f"{solve:.3f}", f"{cmed:.1f}", f"{cp:.1f}", sims,
                     "yes" if ok else " ".join(x for x in (
                         f"solve +{solve - 1:.3f} ms" if solve >= 1 else "",
                         f"p95 +{cp - 100:.1f} ms" if cp >= 100 else "") if x)))
    if not rows:  # the table changed shape: show it as printed
        return f"```\n{out.strip()}\n```"
    table = md_table(("question", "solve median (ms)", "rerun median (ms)", "rerun p95 (ms)",
                      "p95 with simulations (ms)", "solve < 1 ms and p95 < 100 ms"), rows, "lrrrrl")
    worst = sorted((r for r in rows if r[0] in missed), key=lambda r: -float(r[3]))[:3]
    summary = (f"\n\n{len(rows) - len(missed)} of {len(rows)} pages meet both targets"
               + (f"; worst rerun p95: {', '.join(f'{r[0]} {r[3]} ms' for r in worst)}." if missed else ".")
               + " A rerun is a knob moved to a value not seen before (nothing cached), in AppTest. On the"
               " pages with a live simulation the panel is drawn after the rest of the page; the run"
               " including it is in the 'with simulations' column.")
    return table + summary


def section_sims() -> str:
    rc, out, err, _ = _run(["bench.sims"])
    if rc:
        return _failed("python -m bench.sims", rc, out, err)
    rows, notes = [], []
    for line in out.splitlines():
        m = re.match(r"^(.*?)\s+(-?[\d.]+|nan|inf)\s+(-?[\d.]+|nan|inf)\s*$", line)
        if line.startswith("simulation") or not line.strip():
            continue
        if not m:
            notes.append(line.strip())
            continue
        left = m.group(1)
        name, scenario = left[:44].strip(), left[44:].strip()
        med, worst = float(m.group(2)), float(m.group(3))
        if name.startswith("queue engine"):
            target, tgt = "< 300 ms", 300.0
        elif scenario.startswith("default"):
            target, tgt = "< 200 ms", 200.0
        else:
            target, tgt = "report", None
        met = "-" if tgt is None else _mark(med < tgt, med, tgt, "ms")
        rows.append((name, scenario, f"{med:.1f}", f"{worst:.1f}", target, met))
    if not rows:
        return f"```\n{out.strip()}\n```"
    table = md_table(("simulation", "scenario", "median ms", "worst ms", "target", "met"), rows, "llrrll")
    return table + ("\n\n" + "\n".join(notes) if notes else "")


def _json_section(module: str, extra: list[str]) -> tuple[dict | None, str]:
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        path = f.name
    rc, out, err, _ = _run([f"bench.{module}", "--json", path, *extra])
    if rc:
        return None, _failed(f"python -m bench.{module}", rc, out, err)
    return json.loads(Path(path).read_text()), ""


def section_browser() -> str:
    from bench import browser

    res, fail = _json_section("browser", [])
    if res is None:
        return fail
    dropped = sum(r["dropped_keys"] for r in res["pages"])
    return (browser.table(res)
            + f"\n\nSlider-to-card: from the key press to the metric card's new text; \"run done\": to the end "
              f"of the rerun. {res['warmup']} warm-up + {res['moves']} timed moves per page, alternating "
              f"ArrowRight/ArrowLeft (both scenarios cached after the warm-up); \"new values\" keeps going one way "
              "(nothing cached)." + (f" {dropped} dropped key presses were pressed again." if dropped else ""))


def section_coldstart() -> str:
    from bench import coldstart

    res, fail = _json_section("coldstart", [])
    if res is None:
        return fail
    return (coldstart.table(res)
            + f"\n\n{res['runs']} runs per variant, from spawning `python -m ui.launch` "
              f"(PYTHONDONTWRITEBYTECODE={res['PYTHONDONTWRITEBYTECODE']} here; the second variant keeps bytecode "
              "in a temporary PYTHONPYCACHEPREFIX).")


def section_memory() -> str:
    from bench import memory

    res, fail = _json_section("memory", [])
    if res is None:
        return fail
    return memory.table(res) + "\n\nVmRSS of the server process once every session is idle."


TITLES = {
    "solve": "`solve` and full-page rerun after a knob change (AppTest)",
    "sims": "Simulations",
    "browser": "Slider to screen in Chromium",
    "coldstart": "Cold start",
    "memory": "Server memory",
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=",".join(SECTIONS), help="comma-separated: " + ",".join(SECTIONS))
    ap.add_argument("--reruns", type=int, default=15)
    args = ap.parse_args()
    wanted = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = set(wanted) - set(SECTIONS)
    if unknown:
        ap.error(f"unknown sections: {', '.join(sorted(unknown))}")
    runners = {"solve": lambda: section_solve(args.reruns), "sims": section_sims, "browser": section_browser,
               "coldstart": section_coldstart, "memory": section_memory}
    print(f"Measured {time.strftime('%Y-%m-%d %H:%M')} on {os.cpu_count()} cores, Python "
          f"{sys.version.split()[0]}; medians. Load averages are 1 / 5 / 15 min.\n", flush=True)
    for name in wanted:
        before = loadavg()
        t = time.perf_counter()
        body = runners[name]()
        took = time.perf_counter() - t
        after = loadavg()
        block = (f"### {TITLES[name]}\n\nLoad average before {before.split(' (')[0]}, after {after.split(' (')[0]} "
                 f"({took:.0f} s).\n\n{body}\n")
        print(block, flush=True)


if __name__ == "__main__":
    main()
