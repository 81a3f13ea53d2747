"""The review that teaches: every drill with the reason for its score, the document and what was
asked, what the document states against the reference, what the reference design has, then the
score and time by phase, the full derivation, the export, retry and preset.

Everything shown is built once into plain strings (models/mock_review.py), and the page and the
Markdown export read the same strings, so they cannot disagree.
"""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from models.content import PLACEHOLDER
from models.core import PHASE_TITLES, PHASES
from models.mock import score_attempt
from models.mock_document import read_document
from models.mock_review import (
    DrillRow, FindingLine, ProbeLine, ReviewExtras, asked_seconds, bold_leads,
    drill_rows, key_figures, numbers_end_s, prefixed_notes, review_markdown, time_per_phase_s,
    without_directives,
)
from models.mock_script import clarifiers as clarifiers_of
from models.mock_script import clarify_review, depth_areas
from models.mock_script import failure_modes as failure_modes_of
from models.mock_script import probes as probes_of
from models.registry import QUESTIONS
from ui.charts import base_layout
from ui.derivation_view import derivation_view
from ui.mock_common import ASKED_PREFIX, DEPTH_NOTE, DOCUMENT_NOTE, OPENED_PREFIX, Attempt, given_lines, mmss
from ui.mock_start import start_attempt
from ui.prose import render as render_prose
from ui.safe import NUL_PROBLEM, code_span, escape_markdown, has_nul
from ui.session_store import profile

MODE_WORDS = {"full": "full round", "numbers": "numbers only", "depth": "one depth area"}
STATUS_ICON = {"right": ":material/check_circle:", "wrong": ":material/cancel:", "missing": ":material/remove:"}


def _prose(template: str, attempt: Attempt) -> str:
    """A template at the attempt's scenario. A placeholder this scenario does not compute (a page
    edited since the round) shows as "?" rather than failing the whole review."""
    unknown = frozenset(m.group(1) for m in PLACEHOLDER.finditer(template)
                        if m.group(1) not in attempt.derivation and not hasattr(attempt.params, m.group(1)))
    return render_prose(template, attempt.derivation, attempt.params, withheld=unknown)


def _dollars(text: str) -> str:
    """A formatted value in Markdown: money stays money, not the start of LaTeX."""
    return text.replace("$", "\\$")


def _end(attempt: Attempt):
    return attempt.row["finished_at"] or attempt.row["deadline"]


def build_extras(store, attempt: Attempt, mode: str, drills) -> ReviewExtras:
    """Everything beyond the drills, rendered at the attempt's scenario."""
    question, derivation = attempt.question, attempt.derivation
    notes = store.latest_notes(attempt.id)
    started, end = attempt.row["started_at"], _end(attempt)
    document = notes.get(DOCUMENT_NOTE, {}).get("text")
    # Attempts from before the shared document kept one note per phase; they are the candidate's
    # writing all the same, and the document reader reads them when there is no document.
    phase_notes = [(PHASE_TITLES[p], notes[p]["text"]) for p in PHASES if p in notes and notes[p]["text"].strip()]
    written = document if document and document.strip() else "\n\n".join(t for _, t in phase_notes)

    clarifiers = clarifiers_of(question)
    by_key = {c.key: c for c in clarifiers}
    asked_notes = prefixed_notes(notes, ASKED_PREFIX)
    asked_s = asked_seconds(notes, ASKED_PREFIX, started)
    asked = []
    for key, at in sorted(asked_s.items(), key=lambda kv: kv[1]):
        c = by_key.get(key)
        ask = (asked_notes[key]["text"] or "").strip() or (c.ask if c else key)
        asked.append((ask, _prose(c.answer, attempt) if c else "", at))
    never, late = [], []
    if mode != "depth":  # a depth practice has no numbers phase to ask in
        never_c, late_c = clarify_review(clarifiers, asked_s, numbers_end_s(store.phase_marks(attempt.id), started, end))
        never, late = [c.ask for c in never_c], [c.ask for c in late_c]

    depth_choice = (notes.get(DEPTH_NOTE, {}).get("text") or "").strip() or None
    areas = depth_areas(question)
    opened = [QUESTIONS[s].title if s in QUESTIONS else s for s in prefixed_notes(notes, OPENED_PREFIX)]

    findings, figure_values = [], []
    if mode != "depth":
        figures = key_figures(question.content.metrics if mode == "full" else (), drills, derivation)
        findings = [FindingLine(f.label, f.reference, f.status, f.said, f.off)
                    for f in read_document(written or "", derivation, figures, {d.key: d.tol for d in drills})]
    if mode == "full":
        figure_values = [(label or derivation[key].label, derivation[key].display())
                         for key, label in question.content.metrics if key in derivation]

    shape, boxes, failure_modes = "", [], []
    if mode == "full":
        section = question.content.section("Shape")
        if section:
            shape = _prose(without_directives(section.body), attempt)
            boxes = [_prose(b, attempt).replace("**", "") for b in bold_leads(section.body)]
        failure_modes = [_prose(title, attempt).replace("**", "") for title, _ in failure_modes_of(question)]
    probe_lines = []
    # the probes of the area chosen; an area the page no longer has reads as none chosen
    for phase, probes in probes_of(question, depth_choice if depth_choice in areas else None).items():
        if phase not in attempt.phases:
            continue
        probe_lines += [ProbeLine(phase, _prose(p.text, attempt), _prose(p.answer, attempt))
                        for p in probes if p.kind == "words"]
    return ReviewExtras(mode=mode, document=document, phase_notes=phase_notes, asked=asked,
                        depth_choice=depth_choice, opened=opened, findings=findings, never_asked=never,
                        asked_late=late, key_figures=figure_values, shape_boxes=boxes, shape=shape,
                        failure_modes=failure_modes, probes=probe_lines)


def _show_drills(rows: list[DrillRow]) -> None:
    st.subheader("Every drill", divider="gray")
    for r in rows:
        icon = ":material/check_circle:" if r.score >= 1 else (":material/adjust:" if r.score > 0 else ":material/cancel:")
        with st.container(border=True, key=f"review-{r.key}"):
            st.markdown(f"{icon} **{PHASE_TITLES[r.phase]}.** {r.prompt}")
            typed = code_span(r.typed) if r.typed is not None else "*(no answer)*"
            st.markdown(f"Your answer: {typed} · reference **{_dollars(r.reference)}** · score **{r.score:g}**")
            st.markdown(f"**Why:** {escape_markdown(r.reason)}")
            if r.score < 1:
                st.code(r.worked, language=None)


def _show_document(x: ReviewExtras) -> None:
    st.subheader("Your document", divider="gray")
    if x.document and x.document.strip():
        st.code(x.document, language="markdown", wrap_lines=True)
    elif not x.phase_notes:
        st.caption("Nothing was written in the document.")
    for title, text in x.phase_notes:
        st.markdown(f"**Notes: {title}**")
        st.code(text, language="markdown", wrap_lines=True)
    lines = []
    if x.asked:
        asked = "\n".join(f"- {mmss(at)} · {escape_markdown(ask)} → {answer}" for ask, answer, at in x.asked)
        lines.append(f"**Clarifying questions asked** (minutes into the round):\n\n{asked}")
    elif x.mode != "depth":
        lines.append("**No clarifying question was asked.**")
    if x.depth_choice:
        lines.append(f"**Depth area chosen:** {escape_markdown(x.depth_choice)}")
    if x.opened:
        lines.append("**Opened during the round:** " + ", ".join(escape_markdown(t) for t in x.opened)
                     + " (the pages that hold the answers).")
    if lines:
        with st.container(key="review-asked"):
            st.markdown("\n\n".join(lines))


def _show_findings(x: ReviewExtras) -> None:
    if not x.findings and not x.never_asked and not x.asked_late:
        return
    st.subheader("What the document states", divider="gray")
    if x.findings:
        right = sum(f.status == "right" for f in x.findings)
        st.caption(f"The numbers in your document, read as the drills read answers and matched to the "
                   f"question's key figures: {right} of {len(x.findings)} stated right.")
        table = ["| | Figure | Reference | Your document |", "|---|---|---|---|"]
        for f in x.findings:
            # a pipe in what was typed would end the table cell, even inside a code span
            said = code_span(f.said).replace("|", "\\|") if f.said else "—"
            if f.status == "wrong" and f.off:
                said += f" · {escape_markdown(f.off)}"
            elif f.status == "missing":
                said = "*not stated*"
            table.append(f"| {STATUS_ICON.get(f.status, '')} | {escape_markdown(f.label)} | "
                         f"{_dollars(f.reference)} | {said} |")
        with st.container(key="review-findings"):
            st.markdown("\n".join(table))
    if x.never_asked or x.asked_late:
        items = [f"- **Never asked:** {escape_markdown(a)}" for a in x.never_asked]
        items += [f"- **Asked after the numbers phase:** {escape_markdown(a)}" for a in x.asked_late]
        with st.container(key="review-clarify"):
            st.markdown("**Clarifying questions to ask next time** (givens a key figure depends on):\n\n"
                        + "\n".join(items))


def _show_reference(x: ReviewExtras) -> None:
    if not (x.key_figures or x.shape or x.failure_modes or x.probes):
        return
    st.subheader("What the reference design has", divider="gray")
    if x.key_figures:
        status = {f.label: f.status for f in x.findings}
        items = [f"{STATUS_ICON.get(status.get(label, ''), '')} {escape_markdown(label)}: **{_dollars(value)}**"
                 for label, value in x.key_figures]
        st.markdown("**Key figures** (:material/check_circle: stated right in your document, :material/cancel: stated "
                    "wrong, :material/remove: not stated)\n\n" + "\n".join(f"- {i}" for i in items))
    if x.shape_boxes or x.shape:
        boxes = " · ".join(x.shape_boxes)
        st.markdown(f"**The shape:** {boxes}" if boxes else "**The shape**")
        if x.shape:
            with st.expander("The reference shape, as the page writes it"):
                st.markdown(x.shape)
    if x.failure_modes:
        st.markdown("**Failure modes the page names:** " + " · ".join(x.failure_modes))
    if x.probes:
        st.markdown("**The interviewer's probes in words**, each with the page's own answer:")
        for i, p in enumerate(x.probes):
            with st.expander(f"{PHASE_TITLES[p.phase]} · {p.text.replace('**', '')}", key=f"review-probe-{i}"):
                st.markdown(p.answer)


def _show_phases(attempt: Attempt, phases, spent: dict[str, float]) -> None:
    st.subheader("Score and time by phase", divider="gray")
    covered = attempt.phases
    plan = dict(attempt.plan)
    st.markdown(
        "| Phase | Score | Time spent | Planned |\n|---|---|---|---|\n"
        + "\n".join(
            f"| {p.title} | {p.earned:g} of {p.possible} | {mmss(spent[p.phase])} | {plan.get(p.phase, 0):g} min |"
            for p in phases
        )
    )
    fig = go.Figure()
    names = [PHASE_TITLES[p] for p in covered]
    fig.add_trace(go.Bar(x=names, y=[plan.get(p, 0) for p in covered], name="Planned (min)", marker_color="#cbd5e1"))
    fig.add_trace(go.Bar(x=names, y=[spent[p] / 60 for p in covered], name="Spent (min)", marker_color="#2563eb"))
    st.plotly_chart(base_layout(fig, "Minutes per phase against the plan", "", "minutes"), key="mock.review.time")


def render_review(store, attempt: Attempt) -> None:
    mode = attempt.mode
    drills = attempt.drills
    latest = store.latest_answers(attempt.id)
    scores = {k: (r["score"] or 0.0) for k, r in latest.items()}
    total, phases = score_attempt(drills, scores)
    answered = sum(d.key in latest for d in drills)
    st.caption(f"Mock interview review · {MODE_WORDS[mode]} · attempt `{attempt.id[:8]}`")
    st.title(attempt.question.title)
    cols = st.columns(3)
    cols[0].metric("Score", f"{total * 100:.0f}%", border=True)
    cols[1].metric("Drills answered", f"{answered} of {len(drills)}", border=True)
    spent = time_per_phase_s(store.phase_marks(attempt.id), _end(attempt))
    cols[2].metric("Time used", mmss(sum(spent.values())), border=True)

    rows = drill_rows(drills, attempt.derivation, latest, lambda d: _prose(d.question, attempt))
    _show_drills(rows)
    extras = build_extras(store, attempt, mode, drills)
    _show_document(extras)
    _show_findings(extras)
    _show_reference(extras)
    _show_phases(attempt, phases, spent)

    derivation_view(attempt.derivation, title="The scenario’s full derivation", key="review.derivation")
    md = review_markdown(attempt.question.title, given_lines(attempt.params), total, phases, rows,
                         [s.worked() for s in attempt.derivation], extras)
    cols = st.columns(3)
    cols[0].download_button("Export the review (Markdown)", md, file_name=f"review-{attempt.id[:8]}.md",
                            mime="text/markdown", key="mock.export", icon=":material/download:")
    if cols[1].button("Retry this scenario", key="mock.retry"):
        new_id = start_attempt(store, attempt.question, attempt.row["seed"], attempt.params,
                               instant_feedback=attempt.instant_feedback, round_min=int(attempt.round_min),
                               mode=mode)
        st.query_params["attempt"] = new_id
        st.rerun()
    if cols[2].button("New scenario", key="mock.new"):
        del st.query_params["attempt"]
        st.rerun()
    with st.form("mock.save_preset", border=True):
        st.markdown("**Keep this scenario as a preset** for the question page (instructors: replay a draw in class).")
        c = st.columns([3, 1], vertical_alignment="bottom")
        name = c[0].text_input("Preset name", max_chars=80, key="mock.preset_name",
                               placeholder="e.g. Four thousand requests a second")
        if c[1].form_submit_button("Save preset"):
            if not name.strip():
                st.warning("Give the preset a name first.")
            elif has_nul(name):
                st.warning(NUL_PROBLEM)
            else:
                store.save_preset(profile(), attempt.question.slug, name.strip(), attempt.params.model_dump(mode="json"))
                st.success(f"Saved. On the question page it is listed as ★ {escape_markdown(name.strip())}.")
