"""Entry point: navigation built from the registry. Home is the default page (served at /)."""

import streamlit as st

from store import StoreError
from ui.safe import escape_markdown
from ui.gc_tuning import freeze_once
from ui.layout import apply_layout
from ui.navigation import build_navigation
from ui.profile_box import ensure_profile
from ui.run_timing import timed

st.set_page_config(page_title="AI Infrastructure Design Walkthroughs", page_icon="🧮", layout="wide",
                   initial_sidebar_state="collapsed")
try:
    with timed("page"):
        nav = build_navigation()
        ensure_profile()
        apply_layout()
        try:
            nav.run()
        except StoreError as err:  # the file or server failed mid-session: a sentence, not a traceback
            st.error(f"The answer store failed: {escape_markdown(str(err))} What you typed is still in this tab; try again in a "
                     "moment, or reload to open the store afresh.", icon=":material/database:")
finally:  # st.rerun() ends a run by raising: the modules are loaded all the same
    freeze_once()
