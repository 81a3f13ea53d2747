"""Step-by-step reveal of a derivation, for a class calling out the next number.

The position lives in the URL (`?reveal=N`) so a link reopens the same point. "Next step" also
answers the right-arrow key and "Back" the left-arrow key.
"""

from __future__ import annotations

import streamlit as st

from models.core import Derivation

PARAM = "reveal"


def position(total: int) -> int:
    raw = str(st.query_params.get(PARAM, "0"))
    try:
        n = int(raw)
    except ValueError:
        st.info(f"Ignored the reveal position in the link: it is not a whole number. Starting at step 0.")
        return 0
    return max(0, min(n, total))


def _set(n: int) -> None:
    if n <= 0:
        if PARAM in st.query_params:
            del st.query_params[PARAM]
    else:
        st.query_params[PARAM] = str(n)


def reveal_panel(derivation: Derivation, key: str) -> None:
    steps = list(derivation)
    n = position(len(steps))
    st.markdown(f"**Step by step** · {n} of {len(steps)} revealed")
    cols = st.columns([1, 1, 1, 3])
    cols[0].button("Back", key=f"{key}.back", icon=":material/arrow_back:", shortcut="left",
                   disabled=n == 0, on_click=_set, args=(n - 1,))
    cols[1].button("Next step", key=f"{key}.next", icon=":material/arrow_forward:", shortcut="right",
                   type="primary", disabled=n >= len(steps), on_click=_set, args=(n + 1,))
    cols[2].button("All", key=f"{key}.all", disabled=n >= len(steps), on_click=_set, args=(len(steps),))
    for i, step in enumerate(steps[:n], 1):
        with st.container(border=True, key=f"{key}-step-{i}"):
            st.markdown(f"**{i}. {step.label}**".replace("$", "\\$"))
            st.code(step.worked(), language=None)
    if n < len(steps):
        st.caption(f"Next: **{steps[n].label}**. What is it? Press → to reveal.".replace("$", "\\$"))
