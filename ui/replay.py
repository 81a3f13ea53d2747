"""Replay a simulation over time: play, pause, scrub, at a chosen speed.

    replay("multi-region-failover.replay", n_steps=len(t), dt_s=0.1, draw=lambda i: ...)

`draw(i)` renders the state at step i. While playing, only this panel reruns (a fragment on a
timer), so the rest of the page stays put. The position is kept in the URL (`<key>=<step>`) so a
link reopens the same instant.

The default speed plays the whole run in about PLAY_S seconds, a frame every TICK_S: slow enough
to follow an event as it happens. (A fixed 20x played the failover page's 46.5 s run in 2.5 s and
five frames.) Runs last from seconds (a failover) to days (a fair-share month), so the speeds on
offer are the multiples of real time that play this run in 3 s to 5 min.
"""

from __future__ import annotations

import math
from typing import Callable

import streamlit as st

TICK_S = 0.4
PLAY_S = 20.0
MULTIPLES = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 200_000)
SHORTEST_S, LONGEST_S = 3.0, 300.0


def _label(multiple: float) -> str:
    return f"{multiple:,g}×"


def speeds(run_s: float) -> dict[str, float]:
    """Speed label -> multiple of real time, for a run of `run_s` simulated seconds."""
    fitting = [m for m in MULTIPLES if SHORTEST_S <= run_s / m <= LONGEST_S]
    if not fitting:  # a run shorter than 3 s or longer than 5 min at every multiple: the nearest ends
        fitting = [MULTIPLES[0]] if run_s / MULTIPLES[0] < SHORTEST_S else [MULTIPLES[-1]]
    return {_label(m): float(m) for m in fitting}


def default_speed(run_s: float) -> str:
    """The speed whose playing time is nearest PLAY_S (by ratio)."""
    options = speeds(run_s)
    return min(options, key=lambda k: abs(math.log(max(run_s / options[k], 1e-9) / PLAY_S)))


def steps_per_tick(multiple: float, dt_s: float) -> int:
    return max(1, round(multiple * TICK_S / dt_s))


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
    run_s = (n_steps - 1) * dt_s
    options = speeds(run_s)
    speed_key = f"{key}.speed"
    if st.session_state.get(speed_key) not in options:
        st.session_state[speed_key] = default_speed(run_s)
    playing = st.session_state.get(f"{key}.playing", False)

    @st.fragment(run_every=TICK_S if playing else None)
    def panel() -> None:
        if st.session_state.get(f"{key}.playing"):
            step = steps_per_tick(options[st.session_state[speed_key]], dt_s)
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
        cols[1].selectbox("Speed", list(options), key=speed_key,
                          format_func=lambda s: f"{s} · {_duration(run_s / options[s])}",
                          help="Multiples of real time; each one says how long the whole run takes to play.")
        # A slider's identity includes its max, so a new run a step longer or shorter makes it a new
        # widget, which opens at its min (the position jumped to 0 after a seed change). Naming the
        # position as set by the app, each run, carries it over to the new widget.
        st.session_state[pos_key] = min(st.session_state[pos_key], n_steps - 1)
        cols[2].slider(label, 0, n_steps - 1, key=pos_key, format=" ", help="Drag to scrub through the run.")
        i = st.session_state[pos_key]
        st.caption(f"t = {_clock(i * dt_s)} of {_clock(run_s)}")
        # The address carries a position someone chose, not the opening one: a first draw often
        # comes from a panel's poll as its run lands, and a write from that run can reach the
        # browser after it has moved to another page, replacing that page's address (and knobs).
        if str(i) != st.query_params.get(pos_key) and (pos_key in st.query_params or i != opening):
            st.query_params[pos_key] = str(i)
        draw(i)

    panel()


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min"


def _clock(seconds: float) -> str:
    """Simulated time in the unit a person reads: 46.5 s, 12.5 min, 30.2 h, 3.5 days."""
    if seconds < 120:
        return f"{seconds:,.1f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:,.1f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:,.1f} h"
    return f"{seconds / 86400:,.1f} days"
