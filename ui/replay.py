"""Replay a simulation over time: play, pause, scrub, at a chosen speed.

    replay("multi-region-failover.replay", n_steps=len(t), dt_s=0.1, draw=lambda i: ...)

`draw(i)` renders the state at step i. While playing, only this panel reruns (a fragment on a
half-second timer), so the rest of the page stays put. The position is kept in the URL
(`<key>=<step>`) so a link reopens the same instant.
"""

from __future__ import annotations

from typing import Callable

import streamlit as st

TICK_S = 0.5
SPEEDS = {"1×": 1.0, "5×": 5.0, "20×": 20.0, "60×": 60.0}


def _toggle(key: str) -> None:
    st.session_state[f"{key}.playing"] = not st.session_state.get(f"{key}.playing", False)


def replay(key: str, n_steps: int, dt_s: float, draw: Callable[[int], None], label: str = "Time (s)",
           start: int | None = None) -> None:
    """`start` is where a fresh view opens (default: the last step, the outcome)."""
    if n_steps <= 1:
        draw(0)
        return
    pos_key = key
    opening = n_steps - 1 if start is None else min(max(0, start), n_steps - 1)
    if pos_key not in st.session_state:
        raw = st.query_params.get(pos_key)
        try:
            st.session_state[pos_key] = min(max(0, int(raw)), n_steps - 1) if raw is not None else opening
        except ValueError:
            st.session_state[pos_key] = opening
    elif st.session_state[pos_key] > n_steps - 1:
        st.session_state[pos_key] = n_steps - 1  # a new scenario ran shorter: show its end
    playing = st.session_state.get(f"{key}.playing", False)

    @st.fragment(run_every=TICK_S if playing else None)
    def panel() -> None:
        if st.session_state.get(f"{key}.playing"):
            speed = SPEEDS[st.session_state.get(f"{key}.speed", "20×")]
            step = max(1, round(speed * TICK_S / dt_s))
            nxt = min(n_steps - 1, st.session_state[pos_key] + step)
            st.session_state[pos_key] = nxt
            if nxt >= n_steps - 1:
                st.session_state[f"{key}.playing"] = False
                st.rerun(scope="app")  # stop the timer
        cols = st.columns([1, 1, 4], vertical_alignment="bottom")
        if cols[0].button("Pause" if st.session_state.get(f"{key}.playing") else "Play",
                          key=f"{key}.play", icon=":material/pause:" if playing else ":material/play_arrow:"):
            if not st.session_state.get(f"{key}.playing") and st.session_state[pos_key] >= n_steps - 1:
                st.session_state[pos_key] = 0  # play from the start after the end
            _toggle(key)
            st.rerun(scope="app")  # the timer's interval changes: rerun the page, not just the panel
        cols[1].selectbox("Speed", list(SPEEDS), index=2, key=f"{key}.speed")
        cols[2].slider(label, 0, n_steps - 1, key=pos_key, format=" ", help="Drag to scrub through the run.")
        i = st.session_state[pos_key]
        st.caption(f"t = {i * dt_s:,.1f} s of {(n_steps - 1) * dt_s:,.1f} s")
        if str(i) != st.query_params.get(pos_key):
            st.query_params[pos_key] = str(i)
        draw(i)

    panel()
