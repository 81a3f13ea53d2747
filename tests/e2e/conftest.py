"""A real `streamlit run` per test module and Debian's headless Chromium driven by Playwright."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from playwright.sync_api import expect

# Two cores shared with the rest of the suite: a first run can take seconds. Assertions retry
# until this timeout, so a fast machine loses nothing.
expect.set_options(timeout=20_000)

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    if not Path(CHROMIUM).exists():
        pytest.fail("Debian's chromium is not installed; `make test` installs it (apt-get install chromium).")
    return {
        **browser_type_launch_args,
        "executable_path": CHROMIUM,
        "args": [
            "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
        ],
    }


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):
    return {**browser_context_args, "viewport": {"width": 1400, "height": 1000}}


def start_server(db: Path | str, log: Path, env: dict[str, str] | None = None,
                 port: int | None = None) -> tuple[subprocess.Popen, str]:
    """`python -m ui.launch` on a free port with its own database; returns once healthy.

    `db` is a DuckDB file or a postgresql:// URL (several servers may share one); `env`
    overrides or adds environment variables for this server only.
    """
    port = port or _free_port()
    env = {**os.environ, "WALKTHROUGHS_DB": str(db), "PYTHONUNBUFFERED": "1", **(env or {})}
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "ui.launch", "--server.port", str(port),
             "--server.headless", "true", "--browser.gatherUsageStats", "false",
             "--server.fileWatcherType", "none"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"streamlit exited early:\n{log.read_text()}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=1) as r:
                if r.status == 200:
                    return proc, url
        except OSError:
            time.sleep(0.2)
    proc.kill()
    pytest.fail(f"streamlit did not become healthy:\n{log.read_text()}")


def stop_server(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="module")
def app_url(tmp_path_factory):
    proc, url = start_server(tmp_path_factory.mktemp("db") / "e2e.duckdb",
                             tmp_path_factory.mktemp("log") / "streamlit.log")
    yield url
    stop_server(proc)


# Idle: no run going and no simulation panel waiting for its run (ui/sim_panel.py marks those).
_IDLE = """
() => {
  const app = document.querySelector("[data-testid='stApp']");
  return app && app.dataset.testScriptState === 'notRunning'
    && !document.querySelector("[class*='st-key-sim-pending']");
}
"""


def wait_idle(page, timeout: float = 90_000) -> None:
    """Wait until the app has finished its current run and every simulation on the page has landed
    (never a sleep)."""
    page.wait_for_function(_IDLE, timeout=timeout)


BATCHED_TITLE = "An LLM inference API that batches requests across GPUs"


def start_mock_round(page, app_url: str, title: str = BATCHED_TITLE, mode: str | None = None) -> None:
    """Open the mock page, pick the question and its seed scenario (and a practice `mode`), start
    the clock, and wait for the round's URL."""
    page.goto(f"{app_url}/mock")
    wait_idle(page)
    form = page.locator("[data-testid='stForm']")
    form.locator("[data-testid='stSelectbox']").first.click()
    page.get_by_role("option", name=title).click()
    form.get_by_text("The seed scenario").click()
    if mode:
        form.get_by_text(mode).click()
    form.get_by_role("button", name="Start the clock").click()
    wait_idle(page)
    expect(page).to_have_url(re.compile(r"attempt=[0-9a-f]{32}"))


def save_mock_answer(page, key: str, text: str) -> None:
    """Type an answer into a round's drill box, save it, and wait for the saved line that quotes it."""
    box = page.locator(f".st-key-mockdrill-{key}")
    # Until a run has replaced them, the last run's elements stay in place: a box can briefly hold
    # the previous phase's input beside its own. Wait for the run to finish drawing it.
    wait_idle(page)
    expect(box.locator("input[type='text']")).to_have_count(1)
    box.locator("input[type='text']").fill(text)
    box.get_by_role("button", name="Save").click()
    wait_idle(page)
    expect(box.get_by_text(re.compile(r"Saved at .*" + re.escape(text)))).to_be_visible()


def move_on(page, phase: str) -> None:
    """Press "Move on to `phase`" and wait until the new phase is drawn: its heading is shown and the
    button that was pressed is gone (a run that has not started yet looks idle, so idle alone is not
    enough)."""
    button = page.get_by_role("button", name=f"Move on to {phase}")
    button.click()
    expect(page.get_by_role("heading", name=f"The interviewer asks: {phase}")).to_be_visible()
    expect(button).to_have_count(0)
    wait_idle(page)


# Client-side navigation, as st.navigation's links do it: the URL changes and Streamlit runs the
# page it names, with the URL's parameters. A page load instead parses plotly's 4.7 MB bundle
# again: about three times the time per page.
_NAVIGATE = "(path) => { history.pushState({}, '', path); dispatchEvent(new PopStateEvent('popstate')); }"
# The page titled `title` has finished its run. (A run's "running" state cannot be waited for: a
# fast run can start and end inside one render, and the attribute never shows it.)
_SHOWN = """
(title) => {
  const app = document.querySelector("[data-testid='stApp']");
  const h1 = document.querySelector("[data-testid='stMain'] h1");
  return app && app.dataset.testScriptState === 'notRunning' && h1 && h1.textContent.trim() === title
    && !document.querySelector("[class*='st-key-sim-pending']");
}
"""


def visit(page, app_url: str, path: str, title: str, timeout: float = 90_000) -> None:
    """Open `path` ("/serving-platform?present=1"), the page titled `title`, and wait for its run
    to end: the first time with a page load, then as the app's own links do. A test that loops
    over pages uses one page (a session) and opens each page once, so the title tells the new
    page from the one before."""
    if page.url.startswith(app_url):
        page.evaluate(_NAVIGATE, path)
    else:
        page.goto(app_url + path)
    page.wait_for_function(_SHOWN, arg=title, timeout=timeout)


@pytest.fixture(autouse=True)
def _patient_actions(request):
    """Playwright actions wait 30 s by default; a first render on a busy 2-core machine can take
    longer. Give actions the same patience as assertions (only for tests that use a page)."""
    if "page" in request.fixturenames:
        request.getfixturevalue("page").set_default_timeout(90_000)
    yield
