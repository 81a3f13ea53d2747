"""Back / Next / Restart through a scripted scenario's events, one frame at a time.

The step lives in session state under `<slug>.sim_step` and is mirrored to the URL, so an
instructor's link opens on the event they were showing (`?<slug>.sim_step=5`). A URL value that is
not a whole number is ignored (step 0); any step is clamped into the scenario.
"""

from __future__ import annotations

import streamlit as st


def step_key(slug: str) -> str:
    return f"{slug}.sim_step"


def _go(key: str, delta: int, n: int) -> None:
    st.session_state[key] = min(max(0, st.session_state.get(key, 0) + delta), n - 1)


def event_stepper(slug: str, n: int, next_label: str = "Next event") -> int:
    """Draw the controls for a scenario of `n` frames; return the frame to show."""
    key = step_key(slug)
    if key not in st.session_state:
        raw = st.query_params.get(key)
        # isdigit() accepts "²" and other digits int() refuses: only ASCII digits are a step number.
        st.session_state[key] = int(raw) if raw is not None and raw.isascii() and raw.isdigit() else 0
    st.session_state[key] = min(max(0, st.session_state[key]), n - 1)
    i = st.session_state[key]
    cols = st.columns([1, 1, 1, 3], vertical_alignment="center")
    cols[0].button("Back", key=f"{slug}.sim_back", icon=":material/arrow_back:", disabled=i == 0,
                   on_click=_go, args=(key, -1, n), width="stretch")
    cols[1].button(next_label, key=f"{slug}.sim_next", icon=":material/arrow_forward:", disabled=i >= n - 1,
                   on_click=_go, args=(key, 1, n), width="stretch")
    cols[2].button("Restart", key=f"{slug}.sim_restart", on_click=_go, args=(key, -n, n), width="stretch")
    cols[3].caption(f"Event {i} of {n - 1}")
    if st.query_params.get(key) != str(i):
        st.query_params[key] = str(i)
    return i
