"""The mock review's pure parts: why each drill scored what it did, the round's timeline, the
reference design's named parts, and the review as Markdown. No Streamlit here: the view
(ui/mock_review.py) renders prose templates and passes plain strings in.

A drill's reason is the answer reader's own sentence (`models.answers.score_drill(...).message`:
off by how much, which unit was probably meant, unreadable), from re-reading the stored typed
text, so the review says what the study page says for the same answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Callable, Iterable, Mapping, Sequence

from models.answers import drill_reference, score_drill
from models.core import PHASES, Derivation, Drill
from models.mock import PhaseScore

NOT_ANSWERED = "Not answered."


@dataclass(frozen=True)
class DrillRow:
    key: str
    phase: str
    prompt: str  # as the round showed it, rendered Markdown
    typed: str | None  # None: never answered
    reference: str  # in the unit the drill asks for
    score: float
    reason: str  # in words, the reader's sentence
    worked: str


def drill_reason(typed: str | None, drill: Drill, step, stored_score: float | None = None) -> str:
    """Why the answer scored what it did. When today's reader scores the stored text differently
    from the score recorded at the time (the reader improved since), both are said, so the
    review never contradicts the recorded score silently."""
    if typed is None or not str(typed).strip():
        return NOT_ANSWERED
    result = score_drill(typed, drill, step)
    reason = result.message
    if stored_score is not None and result.fraction != stored_score:
        reason += f" (Recorded as {stored_score:g} when answered; read today it scores {result.fraction:g}.)"
    return reason


def drill_rows(drills: Iterable[Drill], derivation: Derivation, latest: Mapping[str, Mapping],
               prompt: Callable[[Drill], str]) -> list[DrillRow]:
    """One row per drill the attempt asked, from the store's latest answer per drill."""
    rows = []
    for drill in drills:
        step = derivation[drill.key]
        row = latest.get(drill.key)
        typed = row["typed"] if row else None
        score = float(row["score"] or 0.0) if row else 0.0
        rows.append(DrillRow(drill.key, drill.phase, prompt(drill), typed,
                             drill_reference(drill, step), score,
                             drill_reason(typed, drill, step, score if row else None), step.worked()))
    return rows


# ---------------------------------------------------------------------------------------------
# The timeline


def time_per_phase_s(marks: Sequence[tuple[str, datetime]], end: datetime) -> dict[str, float]:
    """Seconds in each phase: a mark opens a phase, the next mark (or `end`) closes it."""
    out = {p: 0.0 for p in PHASES}
    for i, (phase, at) in enumerate(marks):
        until = marks[i + 1][1] if i + 1 < len(marks) else end
        out[phase] = out.get(phase, 0.0) + max(0.0, (until - at).total_seconds())
    return out


def numbers_end_s(marks: Sequence[tuple[str, datetime]], started: datetime, end: datetime) -> float:
    """Seconds into the round when the numbers phase ended: the first move to another phase, or
    the end of the round if the candidate never moved on."""
    for phase, at in marks:
        if phase != "numbers":
            return max(0.0, (at - started).total_seconds())
    return max(0.0, (end - started).total_seconds())


def prefixed_notes(notes: Mapping[str, Mapping], prefix: str) -> dict[str, Mapping]:
    """The notes whose key starts with `prefix`, keyed by the rest ("asked:peak_rps" -> "peak_rps")."""
    return {k[len(prefix):]: v for k, v in notes.items() if k.startswith(prefix) and len(k) > len(prefix)}


def asked_seconds(notes: Mapping[str, Mapping], prefix: str, started: datetime) -> dict[str, float]:
    """Knob -> seconds into the round when its clarifying question was asked."""
    return {k: max(0.0, (v["saved_at"] - started).total_seconds()) for k, v in prefixed_notes(notes, prefix).items()}


# ---------------------------------------------------------------------------------------------
# The reference design's named parts

_DIRECTIVE_LINE = re.compile(r"^::(chart|sim|diagram)\s+\S+\s*$", re.M)
# A bold lead opens a list item or a paragraph: "1. **Gateway:** ...", "- **A leaf dies.** ...",
# "**SSD wear.** ...". Bold words inside a sentence, or at the start of a wrapped line inside a
# paragraph, are emphasis, not a part's name.
# A top-level item only: a nested one ("- **Timeout flush:**" under "3. **Dispatcher**") is a detail of
# its box, not a box of the shape.
_ITEM = re.compile(r"^(?:[-*+]|\d+[.)])[ \t]+\*\*(.+?)\*\*")
_PARAGRAPH = re.compile(r"^[ \t]*\*\*(.+?)\*\*")


def without_directives(markdown: str) -> str:
    """A section's prose without its `::chart` / `::diagram` lines (the review draws neither)."""
    return re.sub(r"\n{3,}", "\n\n", _DIRECTIVE_LINE.sub("", markdown)).strip()


def bold_leads(markdown: str) -> list[str]:
    """The bold leads of a section's items and paragraphs, trailing ':' or '.' dropped."""
    out: list[str] = []
    after_blank = True
    for line in markdown.splitlines():
        m = _ITEM.match(line) or (_PARAGRAPH.match(line) if after_blank else None)
        after_blank = not line.strip()
        if m:
            lead = m.group(1).strip().rstrip(":.").strip()
            if lead and lead not in out:
                out.append(lead)
    return out


def key_figures(metrics: Sequence[tuple[str, str]], drills: Iterable[Drill], derivation: Derivation
                ) -> list[tuple[str, str]]:
    """(step key, label): the page's key figures with their labels, then the drills' steps not
    already among them, labelled as their step is. A figure the scenario did not compute is left out."""
    out: dict[str, str] = {}
    for key, label in metrics:
        if key in derivation and key not in out:
            out[key] = label or derivation[key].label
    for drill in drills:
        if drill.key in derivation and drill.key not in out:
            out[drill.key] = derivation[drill.key].label
    return list(out.items())


# ---------------------------------------------------------------------------------------------
# The export


@dataclass(frozen=True)
class FindingLine:
    """One figure as the document states it: `status` "right" | "wrong" | "missing"."""

    label: str
    reference: str
    status: str
    said: str | None = None
    off: str | None = None


@dataclass(frozen=True)
class ProbeLine:
    phase: str
    text: str  # the interviewer's line, rendered
    answer: str  # the page's own answer, rendered


@dataclass(frozen=True)
class ReviewExtras:
    """What the review shows beyond drills and scores; every text already rendered."""

    mode: str = "full"
    document: str | None = None
    phase_notes: Sequence[tuple[str, str]] = ()  # (phase title, text): notes from before the document
    asked: Sequence[tuple[str, str, float]] = ()  # (question asked, the given it revealed, seconds in)
    depth_choice: str | None = None
    opened: Sequence[str] = ()  # titles of study pages opened during the round
    findings: Sequence[FindingLine] = ()
    never_asked: Sequence[str] = ()  # important givens never asked (their ask lines)
    asked_late: Sequence[str] = ()
    key_figures: Sequence[tuple[str, str]] = ()  # (label, value)
    shape_boxes: Sequence[str] = ()
    shape: str = ""  # the Shape section, rendered
    failure_modes: Sequence[str] = ()
    probes: Sequence[ProbeLine] = field(default_factory=tuple)


def _mmss(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    return f"{seconds // 60:02d}:{seconds % 60:02d}"


def _fence(text: str) -> list[str]:
    """`text` in a code fence it cannot close from inside."""
    longest = max((len(m) for m in re.findall(r"`{3,}", text)), default=2)
    fence = "`" * (longest + 1)
    return [fence + "markdown", text.rstrip("\n"), fence]


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def review_markdown(
    title: str,
    scenario: list[tuple[str, str]],
    total: float,
    phases: list[PhaseScore],
    rows: Sequence[DrillRow],
    derivation_lines: list[str],
    extras: ReviewExtras | None = None,
) -> str:
    """The review as Markdown, in the order the page shows it: drills, the document and what was
    asked, what the document states, what the reference design has, the full derivation."""
    x = extras or ReviewExtras()
    mode = {"numbers": " (numbers only)", "depth": " (one depth area)"}.get(x.mode, "")
    lines = [f"# Mock interview review: {title}", "", f"**Score{mode}: {total * 100:.0f}%**", "", "## Scenario", ""]
    lines += [f"- {label}: {value}" for label, value in scenario]
    lines += ["", "## Score by phase", "", "| Phase | Earned | Possible |", "|---|---|---|"]
    lines += [f"| {p.title} | {p.earned:g} | {p.possible} |" for p in phases]
    lines += ["", "## Drills", ""]
    for r in rows:
        lines += [
            f"### {r.prompt.replace('**', '')}",
            "",
            f"- Your answer: {r.typed if r.typed is not None else '(none)'}",
            f"- Reference: {r.reference}",
            f"- Score: {r.score:g}",
            f"- Why: {r.reason}",
            f"- Worked: `{r.worked}`",
            "",
        ]
    lines += ["## Your document", ""]
    if x.document is not None and x.document.strip():
        lines += _fence(x.document)
    else:
        lines += ["(nothing written in the document)"]
    lines.append("")
    for phase_title, text in x.phase_notes:
        lines += [f"### Notes: {phase_title}", "", *_fence(text), ""]
    if x.asked:
        lines += ["### Clarifying questions asked", ""]
        lines += [f"- {_mmss(at)} · {ask} → {answer}" for ask, answer, at in x.asked]
        lines.append("")
    if x.depth_choice:
        lines += [f"Depth area chosen: {x.depth_choice}", ""]
    if x.opened:
        lines += [f"Opened during the round: {', '.join(x.opened)}", ""]
    if x.findings:
        lines += ["## What the document states", "", "| Figure | Reference | The document | Verdict |",
                  "|---|---|---|---|"]
        for f in x.findings:
            verdict = {"right": "right", "wrong": f"wrong{': ' + f.off if f.off else ''}",
                       "missing": "missing"}.get(f.status, f.status)
            lines.append(f"| {_cell(f.label)} | {_cell(f.reference)} | {_cell(f.said or '—')} | {_cell(verdict)} |")
        lines.append("")
    if x.never_asked or x.asked_late:
        lines += ["### Clarifying questions to ask next time", ""]
        lines += [f"- Never asked: {ask}" for ask in x.never_asked]
        lines += [f"- Asked after the numbers phase: {ask}" for ask in x.asked_late]
        lines.append("")
    if x.key_figures or x.shape or x.failure_modes or x.probes:
        lines += ["## What the reference design has", ""]
    if x.key_figures:
        lines += ["### Key figures", ""] + [f"- {label}: {value}" for label, value in x.key_figures] + [""]
    if x.shape_boxes or x.shape:
        lines += ["### The shape", ""]
        if x.shape_boxes:
            lines += ["Boxes: " + " · ".join(x.shape_boxes), ""]
        if x.shape:
            lines += [x.shape, ""]
    if x.failure_modes:
        lines += ["### Failure modes the page names", ""] + [f"- {f}" for f in x.failure_modes] + [""]
    if x.probes:
        lines += ["### Probes in words, with the page's answer", ""]
        for p in x.probes:
            lines += [f"#### {p.text}", "", p.answer, ""]
    lines += ["## Full derivation", ""] + [f"{i}. `{line}`" for i, line in enumerate(derivation_lines, 1)]
    return "\n".join(lines) + "\n"
