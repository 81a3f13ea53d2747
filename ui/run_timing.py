"""Server-side run times, for bench/load.py: how long a page run or a fragment run took on the
server, under whatever else the process was doing (other sessions hold the GIL too).

Off unless WALKTHROUGHS_RUN_LOG names a file; then each timed run appends "<what>\t<ms>".
A browser's save-to-confirmation time adds the network and its own rendering; on one machine
shared with 20 browsers the rendering dominates, so the two are reported side by side.
"""

from __future__ import annotations

import os
import time
from contextlib import contextmanager
from typing import Iterator


def fragment_run() -> bool:
    """Is this run a fragment rerunning on its own (not part of a full page run)?"""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    return bool(ctx and ctx.fragment_ids_this_run)


@contextmanager
def timed(what: str | None) -> Iterator[None]:
    """Time the block as `what`; None times nothing (a fragment drawn inside a full run)."""
    path = os.environ.get("WALKTHROUGHS_RUN_LOG")
    if not path or what is None:
        yield
        return
    started = time.perf_counter()
    try:
        yield
    finally:  # st.rerun() and st.stop() end a run by raising: still a run
        with open(path, "a") as log:
            log.write(f"{what}\t{(time.perf_counter() - started) * 1000:.1f}\n")
