"""Shared helpers for the browser, cold-start and memory benchmarks: the load average, Markdown
tables, percentiles, the Chromium we drive and a `--json` dump that bench/report.py reads."""

from __future__ import annotations

import json
import os
import statistics
import sys
from pathlib import Path
from typing import Any, Sequence

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
# Idle: no run going, and no simulation panel waiting for its run on the worker (ui/sim_panel.py).
IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']:not(:has([class*='st-key-sim-pending']))"
VIEWPORT = {"width": 1400, "height": 1000}


def loadavg() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} / {five:.2f} / {fifteen:.2f} (1 / 5 / 15 min, {os.cpu_count()} cores)"


def median(xs: Sequence[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def p95(xs: Sequence[float]) -> float:
    """Nearest rank, the same rule as bench/__main__.py: sorted[int(0.95 * (n - 1))]."""
    if not xs:
        return float("nan")
    s = sorted(xs)
    return s[int(0.95 * (len(s) - 1))]


def md_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], align: str | None = None) -> str:
    """A GitHub Markdown table; `align` is one letter per column (l or r), default l then r."""
    align = align or "l" + "r" * (len(headers) - 1)
    sep = ["---:" if a == "r" else ":---" for a in align]
    lines = ["| " + " | ".join(headers) + " |", "| " + " | ".join(sep) + " |"]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def verdict(value: float, target: float) -> str:
    """'yes', or by how much it misses: '+40 ms over (1.13x)'-style text is built by the caller."""
    return "yes" if value < target else f"no (x{value / target:.2f})"


def dump_json(path: str | None, payload: dict) -> None:
    if path:
        Path(path).write_text(json.dumps(payload, indent=2, default=float))


def rss_kb(pid: int) -> int:
    """VmRSS of one process, in kB (from /proc/<pid>/status)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid}")
