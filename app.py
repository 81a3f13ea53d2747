"""Entry point: navigation built from the registry. Home is the default page (served at /)."""

import streamlit as st

from ui.navigation import build_navigation, profile_box

st.set_page_config(page_title="AI Infrastructure Design Walkthroughs", page_icon="🧮", layout="wide")
nav = build_navigation()
profile_box()
nav.run()
