"""The process-wide store, opened once; a banner when it had to fall back to memory."""

from __future__ import annotations

import time

import streamlit as st

from store.backends import is_server_url
from store.db import Store, open_store
from store.paths import default_db_path
from ui.safe import escape_markdown

# A replica that started before its PostgreSQL server (or lost it at startup) must not keep
# the in-memory fallback for the rest of the class: try the server again this often.
SERVER_RETRY_S = 30.0


@st.cache_resource(show_spinner=False)
def _opened() -> tuple[Store, str | None, float]:
    store, warning = open_store(None)
    return store, warning, time.monotonic()


def get_store(announce: bool = False) -> Store:
    """The store; `announce=True` (once, at the top of a page) shows the fallback banner."""
    store, warning, opened_at = _opened()
    if warning and time.monotonic() - opened_at > SERVER_RETRY_S and is_server_url(default_db_path()):
        _opened.clear()
        store, warning, opened_at = _opened()
    if warning and announce:
        st.warning(
            f"{warning} Study mode still works; answers are kept in memory until the app stops.",
            icon="⚠️",
        )
    if store.notice and announce:
        st.info(escape_markdown(store.notice), icon=":material/healing:")
    return store


def profile() -> str:
    from ui.profile_box import DEFAULT, PROFILE_OK, STATE

    name = str(st.session_state.get(STATE, DEFAULT) or DEFAULT).strip()
    return name if PROFILE_OK.match(name) else DEFAULT
