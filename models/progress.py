"""Progress from answer history: mastery per drill and a spaced-repetition schedule (FSRS).

The `fsrs` package implements the scheduler Anki uses; we only map a score to a rating:
full marks is Good, half marks is Hard, no marks is Again. A drill answered wrong therefore
comes back within minutes to a day; one answered right comes back days later.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Iterable

from fsrs import Card, Rating, Scheduler



def rating(score: float | None) -> Rating:
    if score is None:
        return Rating.Again
    if score >= 1.0:
        return Rating.Good
    if score > 0.0:
        return Rating.Hard
    return Rating.Again


@dataclass(frozen=True)
class DrillState:
    question: str
    drill_key: str
    answers: int
    latest_score: float
    mean_score: float
    last_answered: datetime
    due: datetime


def drill_states(rows: Iterable[dict]) -> list[DrillState]:
    """`rows`: dicts with question, drill_key, score, answered_at, oldest first."""
    scheduler = Scheduler(enable_fuzzing=False)
    history: dict[tuple[str, str], list[dict]] = {}
    for row in rows:
        history.setdefault((row["question"], row["drill_key"]), []).append(row)
    out = []
    for (question, key), answers in history.items():
        card = Card()
        for a in answers:
            card, _ = scheduler.review_card(card, rating(a["score"]), a["answered_at"])
        scores = [a["score"] or 0.0 for a in answers]
        out.append(DrillState(question, key, len(answers), scores[-1], sum(scores) / len(scores),
                              answers[-1]["answered_at"], card.due))
    return out


def study_next(states: list[DrillState], now: datetime, limit: int = 10) -> list[DrillState]:
    """Drills due by `now`, most overdue first; then the next ones coming due."""
    return sorted(states, key=lambda s: s.due)[:limit] if states else []
