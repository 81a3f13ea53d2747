"""The yardstick for bench/browser.py: one slider, one metric. Streamlit's own floor for a
slider move on this machine; a question page's times are reported as a ratio to it."""

import streamlit as st

value = st.slider("Value", 0, 100, 50, key="trivial-value")
st.metric("Double", value * 2)
