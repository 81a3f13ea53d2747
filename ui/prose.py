"""Live prose: `{{step_key}}` and `{{param}}` become the current value with its unit."""

from __future__ import annotations

from typing import Any

from models.content import PLACEHOLDER
from models.core import Derivation, knobs_of
from models.units import format_number, format_quantity


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
        try:  # a knob in a prefixed unit reads scaled, as a step does: 2,500 MB/s is 2.5 GB/s
            return format_quantity(float(value), knob.unit)
        except Exception:  # a unit the registry does not know ("GPUs", "req/s"): as declared
            return f"{format_number(value)} {knob.unit}"
    raise KeyError(f"'{{{{{name}}}}}' names neither a step nor a knob")


def render(text: str, derivation: Derivation, params: Any, withheld: frozenset[str] = frozenset()) -> str:
    """Markdown with every placeholder replaced by a bold live value (a `withheld` one by "?")."""

    def sub(m):
        if m.group(1) in withheld:
            return "**?**"
        shown = value_text(m.group(1), m.group(2), derivation, params)
        return f"**{_escape(shown)}**"

    return PLACEHOLDER.sub(sub, _escape(text))
