"""Fixtures shared by every test folder: the throwaway PostgreSQL cluster (tests/conftest_pg.py)."""

from tests.conftest_pg import pg_cluster  # noqa: F401  (a fixture, found by name)

from hypothesis import settings

# Two cores shared by two test workers, browsers and servers: a property example can take
# longer than hypothesis's 200 ms deadline for reasons that have nothing to do with the code.
# Correctness is what these tests check; bench/ measures speed.
settings.register_profile("walkthroughs", deadline=None)
settings.load_profile("walkthroughs")

import os

# Every figure a test draws goes through plotly's validation, which the app skips for speed
# (ui/figures.py): a misspelt property fails here. Servers the browser tests start inherit it.
os.environ["WALKTHROUGHS_VALIDATE_FIGURES"] = "1"

from ui.sim_runs import RUNS

# A test reads a page's figures from one run, so its simulations run in that run (ui/sim_runs.py):
# tests/app/test_sim_worker.py turns the worker back on to test it. Servers the browser tests
# start are separate processes and use the worker, as `make run` does.
RUNS.always_inline = True
