"""A page link that also renders when the page script runs on its own (AppTest, no st.navigation)."""

from __future__ import annotations

import streamlit as st
from streamlit.errors import StreamlitPageNotFoundError


def page_link(path: str, url_path: str, label: str, icon: str | None = None) -> None:
    """st.page_link to `path`; outside the app's navigation, a plain link to `/url_path`.

    Inside the app every page is registered, so the first branch always runs there; a script run
    alone (a test, `streamlit run pages/x.py`) has no navigation to resolve `path` against.
    """
    try:
        st.page_link(path, label=label, icon=icon)
    except StreamlitPageNotFoundError:
        st.markdown(f"[{label}](/{url_path})")
