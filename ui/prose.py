"""Live prose: `{{step_key}}` and `{{param}}` become the current value with its unit."""

from __future__ import annotations

from typing import Any

from models.content import CITATION, PLACEHOLDER, Content
from models.core import Derivation, knobs_of
from models.units import format_number, format_quantity, singular


def _escape(text: str) -> str:
    # Streamlit Markdown treats $...$ as LaTeX; money must stay money.
    return text.replace("$", "\\$")


def value_text(name: str, unit: str | None, derivation: Derivation, params: Any) -> str:
    if name in derivation:
        return derivation[name].display(unit)
    knobs = knobs_of(type(params))
    if name in knobs:
        knob = knobs[name]
        value = getattr(params, name)
        if isinstance(value, str):
            return value
        if knob.percent:
            return f"{format_number(value * 100)}%"
        if unit:
            return format_quantity(float(value), knob.unit, target_unit=unit)
        if not knob.unit:
            return format_number(value)
        # A unit that is a counted noun ("GPUs", "checkpoints") reads "1 GPU" at one; "1 req/s" stays.
        noun = knob.unit.replace(" ", "").isalpha()
        try:  # a knob in a prefixed unit reads scaled, as a step does: 2,500 MB/s is 2.5 GB/s
            text = format_quantity(float(value), knob.unit)
        except Exception:  # a unit the registry does not know ("req/s"): as declared
            text = f"{format_number(value)} {knob.unit}"
        if value == 1 and noun and text == f"1 {knob.unit}":
            return f"1 {singular(knob.unit)}"
        return text
    raise KeyError(f"'{{{{{name}}}}}' names neither a step nor a knob")


def render(text: str, derivation: Derivation, params: Any, withheld: frozenset[str] = frozenset()) -> str:
    """Markdown with every placeholder replaced by a bold live value (a `withheld` one by "?")."""

    def sub(m):
        if m.group(1) in withheld:
            return "**?**"
        shown = value_text(m.group(1), m.group(2), derivation, params)
        return f"**{_escape(shown)}**"

    return PLACEHOLDER.sub(sub, _escape(text))


def numbered_sources(content: Content) -> list[tuple[int, str, str]]:
    """(number, title, url) of each cited source, numbered in the order the page first cites it."""
    by_id = {src.id: src for src in content.sources}
    return [(i, by_id[sid].title, by_id[sid].url) for i, sid in enumerate(content.cited(), 1) if sid in by_id]


def cite(markdown: str, content: Content) -> str:
    """`[src:id]` as a numbered link to the source, "[3]"; an id the page does not declare stays as
    written, so it shows (and the contract test names it)."""
    numbers = {sid: i for i, sid in enumerate(content.cited(), 1)}
    urls = {src.id: src.url for src in content.sources}

    def sub(m):
        sid = m.group(1)
        if sid not in urls:
            return m.group(0)
        return f"[[{numbers[sid]}]]({urls[sid]})"

    return CITATION.sub(sub, markdown)
