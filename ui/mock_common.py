"""What the start, round and review views of the mock interview share."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import streamlit as st
from pydantic import ValidationError

from models.core import Derivation, Drill
from models.mock import givens
from models.registry import QUESTIONS, Question
from models.units import format_number
from ui.solve_cache import solve

ATTEMPT_ID = re.compile(r"^[0-9a-f]{32}$")


@dataclass
class Attempt:
    row: dict
    question: Question
    params: Any
    derivation: Derivation

    @property
    def id(self) -> str:
        return self.row["id"]

    @property
    def drills(self) -> tuple[Drill, ...]:
        return self.question.drills

    @property
    def round_min(self) -> float:
        return float(self.row["settings"].get("round_min", 45))

    @property
    def instant_feedback(self) -> bool:
        return bool(self.row["settings"].get("instant_feedback", False))


def no_round(profile_name: str) -> str:
    """One refusal for a round that does not exist, is another profile's, or is not a round at all:
    the attempt id is the round's secret, so the answer must not tell an outsider which it was."""
    return (f"There is no open round at this link for the profile “{profile_name}”. A round opens only under "
            "the profile that started it, and a link made on another machine opens nothing here.")


def load_attempt(store, attempt_id: str, profile_name: str | None = None) -> tuple[Attempt | None, str | None]:
    """The attempt named in the URL, or a sentence saying why it cannot be opened. With
    `profile_name`, a mock round of that profile only."""
    if not ATTEMPT_ID.match(attempt_id or ""):
        return None, "That attempt link is not valid (an attempt id is 32 hexadecimal characters)."
    row = store.get_attempt(attempt_id)
    if profile_name is not None and (row is None or row["profile"] != profile_name or row["mode"] != "mock"):
        return None, no_round(profile_name)
    if row is None:
        return None, "There is no attempt with that id in this app's store. It may have been made on another machine."
    question = QUESTIONS.get(row["question"])
    if question is None or not question.written:
        return None, f"That attempt is for a question this version of the app does not have ({row['question']})."
    try:
        params = question.Params(**row["params"])
    except (ValidationError, TypeError) as e:
        return None, f"That attempt's scenario no longer fits the question's model ({e.__class__.__name__})."
    return Attempt(row, question, params, solve(question.slug, params)), None


def given_lines(params: Any) -> list[tuple[str, str]]:
    out = []
    for label, value, unit, percent in givens(params):
        if isinstance(value, bool):
            text = "yes" if value else "no"
        elif isinstance(value, (int, float)):
            text = f"{format_number(value * 100)}%" if percent else f"{format_number(value)} {unit}".strip()
        else:
            text = str(value)
        out.append((label, text))
    return out


def show_givens(params: Any) -> None:
    lines = given_lines(params)
    st.markdown("\n".join(f"- **{label}:** {text}".replace("$", "\\$") for label, text in lines))


def mmss(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    return f"{seconds // 60:02d}:{seconds % 60:02d}"
