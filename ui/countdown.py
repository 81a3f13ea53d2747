"""The mock interview's seconds, counted in the browser.

A server-side clock ticking once a second costs every open interview a page run a second, and a
Save clicked while a tick is running was sometimes dropped (2 of 100 saves with 10 sessions on
one machine; none with the tick at 10 s). The browser counts the seconds from the time left when
the page was drawn, so a skewed client clock does not matter; the server still owns the deadline
(answers after it are refused) and reruns to lock the page when it passes.

The page is a constant: the only thing put into it is an integer number of milliseconds.
"""

from __future__ import annotations

import streamlit as st

COUNTDOWN_HTML = """<!doctype html>
<div style="font-family: 'Source Sans Pro', 'Source Sans 3', sans-serif; line-height: 1.25">
  <div style="font-size: 14px; color: #64748b">Time left</div>
  <div id="left" data-testid="countdown" style="font-size: 36px; font-weight: 600; color: #2563eb;
       font-variant-numeric: tabular-nums">--:--</div>
</div>
<script>
  const end = Date.now() + __REMAINING_MS__;
  const pad = (n) => String(n).padStart(2, "0");
  function tick() {
    const s = Math.max(0, Math.round((end - Date.now()) / 1000));
    document.getElementById("left").textContent = pad(Math.floor(s / 60)) + ":" + pad(s % 60);
    if (s === 0) clearInterval(timer);
  }
  const timer = setInterval(tick, 250);
  tick();
</script>
"""


def countdown_html(remaining_s: float) -> str:
    return COUNTDOWN_HTML.replace("__REMAINING_MS__", str(max(0, int(remaining_s * 1000))))


def countdown(remaining_s: float) -> None:
    st.iframe(countdown_html(remaining_s), height=80, alt="Time left in the mock interview")
