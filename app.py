"""Entry point: navigation built from the registry. Home is the default page (served at /)."""

import streamlit as st

from ui.navigation import build_navigation

st.set_page_config(page_title="AI Infrastructure Design Walkthroughs", page_icon="🧮", layout="wide")
build_navigation().run()
