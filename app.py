"""Entry point: navigation built from the registry. Home is the default page (served at /)."""

import streamlit as st

from ui.gc_tuning import freeze_once
from ui.layout import apply_layout
from ui.navigation import build_navigation
from ui.profile_box import ensure_profile
from ui.run_timing import timed
from ui.store_guard import run_page

st.set_page_config(page_title="AI Infrastructure Design Walkthroughs", page_icon="🧮", layout="wide",
                   initial_sidebar_state="collapsed")
try:
    with timed("page"):
        nav = build_navigation()
        ensure_profile()
        apply_layout()
        run_page(nav)
finally:  # st.rerun() ends a run by raising: the modules are loaded all the same
    freeze_once()
