"""What the start, round and review views of the mock interview share."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import streamlit as st
from pydantic import ValidationError

from models.core import PHASE_TITLES, PHASES, Derivation, Drill
from models.mock import PHASE_PLAN_MIN, ROUND_MIN, drills_for, givens, phase_plan
from models.registry import QUESTIONS, Question
from models.units import format_number
from store import AttemptClosedError, StoreError
from ui.solve_cache import solve

ATTEMPT_ID = re.compile(r"^[0-9a-f]{32}$")

# A round's free text lives in the notes table, keyed by what it is (no migration: a note's
# "phase" is any text, and the latest note per key is its current value).
DOCUMENT_NOTE = "document"  # the shared document of the whole round, Markdown
DEPTH_NOTE = "depth_choice"  # the depth area the candidate chose to lead with
ASKED_PREFIX = "asked:"  # + a given's knob name: the clarifying question that revealed it, when
OPENED_PREFIX = "opened:"  # + a page slug: a study page opened while the round ran

# The open round of this browser session, for the question pages to note that one was opened
# (a session is one tab: a page opened in another tab is not seen, which the round's warning
# does not promise either).
OPEN_ATTEMPT = "mock.open_attempt"

# Practice modes: the full round, or one phase of it on that phase's own minutes of the plan.
MODES = {"full": "The full round", "numbers": "Numbers only", "depth": "One depth area"}
MODE_PHASES = {"full": PHASES, "numbers": ("numbers",), "depth": ("depth",)}


def mode_minutes(mode: str, round_min: float = ROUND_MIN) -> float:
    """The clock of a mode: a phase practised alone gets its minutes in the 45-minute plan."""
    if mode == "full":
        return round_min
    return dict(PHASE_PLAN_MIN)[MODE_PHASES[mode][0]]


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
    def mode(self) -> str:
        mode = self.row["settings"].get("mode", "full")  # attempts made before the modes were full rounds
        return mode if mode in MODES else "full"

    @property
    def phases(self) -> tuple[str, ...]:
        return MODE_PHASES[self.mode]

    @cached_property
    def drills(self) -> tuple[Drill, ...]:
        """The drills this round asks and scores: those the drawn scenario can answer, of the
        phases the mode practises."""
        kept = drills_for(self.question, self.params, self.derivation)
        return tuple(d for d in kept if d.phase in self.phases)

    @property
    def round_min(self) -> float:
        return float(self.row["settings"].get("round_min", 45))

    @property
    def plan(self) -> list[tuple[str, float]]:
        """(phase, minutes) the clock panel shows: the scaled 5/7/10/16/5 plan, or the one phase."""
        if self.mode == "full":
            return phase_plan(self.round_min)
        return [(p, self.round_min) for p in self.phases]

    def planned_phase(self, elapsed_s: float) -> tuple[str, float]:
        """The phase the plan says the candidate should be in, and the seconds left in it."""
        t = 0.0
        for name, minutes in self.plan:
            t += minutes * 60
            if elapsed_s < t:
                return name, t - elapsed_s
        return self.plan[-1][0], 0.0

    def phase_overrun_s(self, phase: str, in_phase_s: float) -> float:
        planned = dict(self.plan).get(phase, 0) * 60
        return max(0.0, in_phase_s - planned)

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


def mmss(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    return f"{seconds // 60:02d}:{seconds % 60:02d}"


def document_template(attempt: Attempt) -> str:
    """The document a round opens with: one heading per phase the mode practises."""
    return "\n\n".join(f"## {PHASE_TITLES[p]}\n" for p in attempt.phases)


def note_opened_page(slug: str, now) -> None:
    """On a question page: if this session has a round open, note that the page was opened
    (once per page per round). Cheap: no store read unless a round is open in this session."""
    open_round = st.session_state.get(OPEN_ATTEMPT)
    if not open_round:
        return
    from ui.session_store import get_store, profile

    if open_round["profile"] != profile() or (open_round["deadline"] is not None and now >= open_round["deadline"]):
        st.session_state.pop(OPEN_ATTEMPT, None)
        return
    if slug in open_round["noted"]:
        return
    try:
        get_store().save_note(open_round["id"], OPENED_PREFIX + slug, slug, now=now)
    except (AttemptClosedError, StoreError, ValueError):  # a finished round, a store that went away: stop watching
        st.session_state.pop(OPEN_ATTEMPT, None)
        return
    open_round["noted"].add(slug)
