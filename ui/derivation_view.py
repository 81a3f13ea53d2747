"""The worked derivation: every step as arithmetic, in the order the model computed it."""

from __future__ import annotations

import streamlit as st

from models.core import Derivation, Step


def _line(step: Step) -> str:
    return f"**{step.label}** · `{step.key}`  \n`{step.worked()}`"


def derivation_view(derivation: Derivation, *, expanded: bool = False, title: str = "Worked derivation: every step") -> None:
    with st.expander(title, expanded=expanded):
        for i, step in enumerate(derivation, 1):
            st.markdown(f"{i}. " + _line(step).replace("$", "\\$"))
            if step.note:
                st.caption(step.note)


def metric_row(derivation: Derivation, metrics: tuple[tuple[str, str], ...], seed: Derivation | None = None,
               per_row: int = 3) -> None:
    """Key figures as cards, at most `per_row` to a row so values are never cut off."""
    for start in range(0, len(metrics), per_row):
        row = metrics[start:start + per_row]
        cols = st.columns(per_row)
        for col, (key, short) in zip(cols, row):
            step = derivation[key]
            help_text = f"{step.label}.  \n`{step.worked()}`"
            if step.display(hint=False) != step.display():
                help_text += f"  \n{step.display()}"
            if seed is not None and key in seed and seed[key].value != step.value:
                help_text += f"  \nSeed scenario: {seed[key].display()}"
            with col:
                st.metric(short or step.label, step.display(hint=False).replace("$", "\\$"),
                          help=help_text.replace("$", "\\$"), border=True)
