"""A store that fails mid-session (a disk error, a server gone) is a sentence, not a traceback."""

from __future__ import annotations

from typing import Any

import streamlit as st

from store import StoreError
from ui.safe import escape_markdown


def run_page(nav: Any) -> None:
    """Run the navigation's page; a StoreError from any path that reads or writes is shown plainly.
    What the learner typed stays in the widgets' state, so a retry or a reload loses nothing."""
    try:
        nav.run()
    except StoreError as err:
        st.error(f"The answer store failed: {escape_markdown(str(err))} What you typed is still in this tab; "
                 "try again in a moment, or reload to open the store afresh.", icon=":material/database:")
