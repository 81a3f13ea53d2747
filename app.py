"""Entry point: navigation built from the registry. Home is the default page (served at /)."""

import streamlit as st

from ui.gc_tuning import freeze_once
from ui.navigation import build_navigation, profile_box
from ui.presenter import is_presenting
from ui.run_timing import timed

st.set_page_config(page_title="AI Infrastructure Design Walkthroughs", page_icon="🧮", layout="wide",
                   initial_sidebar_state="collapsed" if is_presenting() else "auto")
try:
    with timed("page"):
        nav = build_navigation()
        profile_box()
        nav.run()
finally:  # st.rerun() ends a run by raising: the modules are loaded all the same
    freeze_once()
