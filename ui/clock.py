"""The one place the UI reads the time, so tests can inject a clock instead of waiting.

Tests set `st.session_state["_clock_now"]` (a timezone-aware datetime) before a run; no
widget writes that key, so a user cannot move the clock.
"""

from __future__ import annotations

from datetime import datetime, timezone

import streamlit as st


def now() -> datetime:
    injected = st.session_state.get("_clock_now")
    if isinstance(injected, datetime) and injected.tzinfo is not None:
        return injected
    return datetime.now(timezone.utc)
