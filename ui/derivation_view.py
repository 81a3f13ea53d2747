"""The worked derivation: every step as arithmetic, in the order the model computed it."""

from __future__ import annotations

import re

import streamlit as st

from models.core import Derivation, Step


def _line(step: Step) -> str:
    """Label and key, then the formula in names (as a textbook states it), then with the numbers in.
    A formula that only restates one figure in another unit goes straight to the numbers."""
    symbolic = step.symbolic()
    names = f"  \n`{step.key} = {symbolic}`" if step.formula and symbolic.strip() != step.formula.strip("{} ") \
        and not _single_name(step.formula) else ""
    kind = f" *({KIND_WORDS[step.kind]})*" if step.kind in KIND_WORDS else ""
    return f"**{step.label}** · `{step.key}`{kind}{names}  \n`{step.worked()}`"


KIND_WORDS = {"lookup": "looked up", "verdict": "a verdict", "search": "found by a search", "given": "given",
              "variant": "the same derivation with one knob changed"}


def _single_name(formula: str) -> bool:
    return bool(re.fullmatch(r"\s*\{[A-Za-z_][A-Za-z0-9_]*\}\s*", formula))


def derivation_view(derivation: Derivation, *, expanded: bool = False, title: str = "Worked derivation: every step") -> None:
    with st.expander(title, expanded=expanded):
        for i, step in enumerate(derivation, 1):
            st.markdown(f"{i}. " + _line(step).replace("$", "\\$"))
            if step.note:
                st.caption(step.note)


def metric_row(derivation: Derivation, metrics: tuple[tuple[str, str], ...], seed: Derivation | None = None,
               withheld: frozenset[str] = frozenset()) -> None:
    """Key figures as cards. Drawn into a container keyed `metrics`, they form a grid whose cells
    wrap a long value onto a second line rather than cut it (ui/layout.py). A `withheld` figure is
    the answer to the drill the learner is trying: its card waits for that drill."""
    for key, short in metrics:
        step = derivation[key]
        if key in withheld:
            st.metric(short or step.label, "?", help="The answer to the drill above: answer or reveal it first.",
                      border=True)
            continue
        help_text = f"{step.label}.  \n`{step.worked()}`"
        if step.display(hint=False) != step.display():
            help_text += f"  \n{step.display()}"
        if seed is not None and key in seed and seed[key].value != step.value:
            help_text += f"  \nSeed scenario: {seed[key].display()}"
        st.metric(short or step.label, step.display(hint=False).replace("$", "\\$"),
                  help=help_text.replace("$", "\\$"), border=True)
