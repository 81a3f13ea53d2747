"""Jobs for tests/test_sim_runs.py: module-level functions, so the worker process can be sent them."""

from __future__ import annotations

import multiprocessing
import os
import time


def logged_square(log_path: str, n: int, sleep_s: float = 0.0) -> int:
    """n squared, after `sleep_s`, with a line in `log_path` for every run really done."""
    time.sleep(sleep_s)
    with open(log_path, "a") as f:
        f.write(f"{n}\n")
    return n * n


def die_in_worker(n: int) -> int:
    """Kills the worker process it runs in (a worker lost to the OOM killer); run here, returns -n."""
    if multiprocessing.parent_process() is not None:
        os._exit(1)
    return -n


def zeros_by_name(n: int) -> dict:
    """A result with arrays in it, as a simulation's are."""
    import numpy as np

    return {"waits": np.zeros(n), "per_step": [np.ones(n)]}
