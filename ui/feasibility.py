"""The banner a page shows when its scenario cannot happen (issue #20).

A model declares its feasibility conditions with `Derivation.require`; a scenario that breaks one
still solves (every number stays readable), but the page says at the top, in plain words, that
the scenario is impossible and why, before any number is read as an answer.
"""

from __future__ import annotations

import streamlit as st

from models.core import Derivation
from ui.safe import escape_markdown


def feasibility_text(derivation: Derivation) -> str:
    """The banner's Markdown, or "" when the scenario meets every condition."""
    messages = [message for _, message in derivation.violations]
    if not messages:
        return ""
    # Escaped: a message carries numbers and units ("USD", "$", "×") that Markdown or Streamlit's
    # LaTeX would otherwise act on.
    lines = [escape_markdown(m) for m in messages]
    head = "**This scenario cannot happen as stated.**"
    if len(lines) == 1:
        return f"{head} {lines[0]}"
    return head + "\n\n" + "\n".join(f"- {line}" for line in lines)


def feasibility_banner(derivation: Derivation) -> None:
    """An `st.warning` naming every broken condition of the scenario; nothing when it is feasible."""
    text = feasibility_text(derivation)
    if text:
        st.warning(text, icon=":material/block:")
