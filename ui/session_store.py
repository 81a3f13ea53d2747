"""The process-wide store, opened once; a banner when it had to fall back to memory."""

from __future__ import annotations

import streamlit as st

from store.db import Store, open_store


@st.cache_resource(show_spinner=False)
def _opened() -> tuple[Store, str | None]:
    return open_store(None)


def get_store(announce: bool = False) -> Store:
    """The store; `announce=True` (once, at the top of a page) shows the fallback banner."""
    store, warning = _opened()
    if warning and announce:
        st.warning(
            f"{warning} Study mode still works; answers are kept in memory until the app stops.",
            icon="⚠️",
        )
    return store


def profile() -> str:
    from ui.navigation import PROFILE_OK

    name = str(st.session_state.get("profile", "me") or "me").strip()
    return name if PROFILE_OK.match(name) else "me"
