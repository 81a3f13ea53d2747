"""The worked derivation: every step as arithmetic, in the order the model computed it."""

from __future__ import annotations

import re

import streamlit as st

from models.core import Derivation, Step


def _line(step: Step) -> str:
    """Label and key, then the formula in names (as a textbook states it), then with the numbers in.
    A formula that restates one figure (another unit, another name) names it, then gives the value."""
    kind = f" *({KIND_WORDS[step.kind]})*" if step.kind in KIND_WORDS else ""
    head = f"**{step.label}** · `{step.key}`{kind}"
    if not step.formula:
        return f"{head}  \n`{step.display()}`"
    names = f"  \n`{step.key} = {step.symbolic()}`"
    worked = step.worked()
    if _single_name(step.formula):
        worked = step.display()
    return f"{head}{names}  \n`{worked}`"


KIND_WORDS = {"lookup": "looked up", "verdict": "a verdict", "search": "found by a search", "given": "given",
              "variant": "the same derivation with one knob changed"}


def _single_name(formula: str) -> bool:
    return bool(re.fullmatch(r"\s*\{[A-Za-z_][A-Za-z0-9_]*\}\s*", formula))


def _items(steps) -> str:
    # One Markdown block for the whole list, not two elements a step: a page's derivation runs to a
    # hundred steps, and each element is a delta Streamlit sends and the browser lays out on every
    # slider move, open or closed.
    items = []
    for i, step in enumerate(steps, 1):
        item = f"{i}. " + _line(step).replace("  \n", "  \n   ")
        if step.note:
            item += f"  \n   :gray[{step.note}]"
        items.append(item.replace("$", "\\$"))
    return "\n".join(items)


def derivation_view(derivation: Derivation, *, expanded: bool = False, title: str = "Worked derivation: every step",
                    carrying: tuple[str, ...] = (), key: str = "derivation") -> None:
    """The steps that carry the answer (the content's `carrying`, in the model's order) in view, and
    every step behind an expander: a derivation of 60-80 steps is too much for one reading.

    The expander is lazy (`on_change="rerun"`): its 60-80 steps are sent only while it is open. A
    closed expander's Markdown is still parsed and laid out by the browser on every slider move,
    which cost 35-55 ms a move for 80 steps (bench: a page with only a slider, a metric and that
    expander, against the same page with an empty one)."""
    carried = [step for step in derivation if step.key in set(carrying)]
    if carried:
        with st.container(key="carrying-steps"):
            st.markdown(f"**The arithmetic that carries the answer** ({len(carried)} of {len(derivation)} steps)")
            st.markdown(_items(carried))
        title = f"Worked derivation: all {len(derivation)} steps"
    box = st.expander(title, expanded=expanded, key=key, on_change="rerun")
    if box.open:
        with box:
            st.markdown(_items(derivation))


def metric_row(derivation: Derivation, metrics: tuple[tuple[str, str], ...], seed: Derivation | None = None,
               withheld: frozenset[str] = frozenset(), slots: list | None = None) -> None:
    """Key figures as cards. Drawn into a container keyed `metrics`, they form a grid whose cells
    wrap a long value onto a second line rather than cut it (ui/layout.py). A `withheld` figure is
    the answer to the drill the learner is trying: its card waits for that drill. `slots` (one
    st.empty a card) lets a page draw the row twice in a run, the second drawing replacing the first."""
    for i, (key, short) in enumerate(metrics):
        step = derivation[key]
        card = slots[i] if slots is not None else st
        if key in withheld:
            card.metric(short or step.label, "?", help="The answer to the drill above: answer or reveal it first.",
                      border=True)
            continue
        help_text = f"{step.label}.  \n`{step.worked()}`"
        if step.display(hint=False) != step.display():
            help_text += f"  \n{step.display()}"
        if seed is not None and key in seed and seed[key].value != step.value:
            help_text += f"  \nSeed scenario: {seed[key].display()}"
        card.metric(short or step.label, step.display(hint=False).replace("$", "\\$"),
                  help=help_text.replace("$", "\\$"), border=True)
