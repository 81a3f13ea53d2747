"""A second learner on the same server: opens one page and nudges one slider back and forth, a press
every PACE_S (or when the previous run ends, if later), until it is terminated. bench/browser.py --sessions 2 runs
one beside each measured page (and beside the trivial page it is compared with).

    .venv/bin/python -m bench.companion URL SLIDER_KEY_CLASS
"""

from __future__ import annotations

import signal
import sys
import time

from bench._common import CHROMIUM, CHROMIUM_ARGS, IDLE, VIEWPORT

PACE_S = 0.5  # a person nudging a slider while reading the numbers, not a key held down


def main() -> None:
    from playwright.sync_api import sync_playwright

    url, key_class = sys.argv[1], sys.argv[2]
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport=VIEWPORT)
        page.goto(url, timeout=120_000)
        page.wait_for_selector(IDLE, timeout=120_000)
        slider = page.locator(f".st-key-{key_class} input[type='range']")
        slider.wait_for(state="attached", timeout=120_000)
        print("ready", flush=True)
        keys = ("ArrowRight", "ArrowLeft")
        i = 0
        while not stop:
            pressed = time.monotonic()
            slider.focus()
            page.keyboard.press(keys[i % 2])
            i += 1
            page.wait_for_timeout(30)  # let the rerun start before waiting for its end
            page.wait_for_selector(IDLE, timeout=60_000)
            page.wait_for_timeout(max(0.0, PACE_S - (time.monotonic() - pressed)) * 1000)
        browser.close()


if __name__ == "__main__":
    main()
