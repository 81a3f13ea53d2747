"""The review: score, time per phase against the plan, every drill with its worked step."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from models.answers import drill_reference
from models.core import PHASE_TITLES, PHASES
from models.mock import phase_plan, review_markdown, score_attempt
from ui.charts import base_layout
from ui.derivation_view import derivation_view
from ui.mock_common import Attempt, given_lines, mmss
from ui.mock_start import start_attempt
from ui.prose import render as render_prose
from ui.safe import NUL_PROBLEM, code_span, escape_markdown, has_nul
from ui.session_store import profile


def time_per_phase_s(store, attempt: Attempt) -> dict[str, float]:
    marks = store.phase_marks(attempt.id)
    end = attempt.row["finished_at"] or attempt.row["deadline"]
    out = {p: 0.0 for p in PHASES}
    for i, (phase, at) in enumerate(marks):
        until = marks[i + 1][1] if i + 1 < len(marks) else end
        out[phase] += max(0.0, (until - at).total_seconds())
    return out


def render_review(store, attempt: Attempt) -> None:
    latest = store.latest_answers(attempt.id)
    scores = {k: (r["score"] or 0.0) for k, r in latest.items()}
    total, phases = score_attempt(attempt.drills, scores)
    st.caption(f"Mock interview review · attempt `{attempt.id[:8]}`")
    st.title(attempt.question.title)
    cols = st.columns(3)
    cols[0].metric("Score", f"{total * 100:.0f}%", border=True)
    cols[1].metric("Drills answered", f"{len(latest)} of {len(attempt.drills)}", border=True)
    spent = time_per_phase_s(store, attempt)
    cols[2].metric("Time used", mmss(sum(spent.values())), border=True)

    st.subheader("Score and time by phase", divider="gray")
    plan = dict(phase_plan(attempt.round_min))
    st.markdown(
        "| Phase | Score | Time spent | Planned |\n|---|---|---|---|\n"
        + "\n".join(
            f"| {p.title} | {p.earned:g} of {p.possible} | {mmss(spent[p.phase])} | {plan[p.phase]:g} min |"
            for p in phases
        )
    )
    fig = go.Figure()
    names = [PHASE_TITLES[p] for p in PHASES]
    fig.add_trace(go.Bar(x=names, y=[plan[p] for p in PHASES], name="Planned (min)", marker_color="#cbd5e1"))
    fig.add_trace(go.Bar(x=names, y=[spent[p] / 60 for p in PHASES], name="Spent (min)", marker_color="#2563eb"))
    st.plotly_chart(base_layout(fig, "Minutes per phase against the plan", "", "minutes"), key="mock.review.time")

    st.subheader("Every drill", divider="gray")
    rows = []
    for drill in attempt.drills:
        step = attempt.derivation[drill.key]
        row = latest.get(drill.key)
        score = scores.get(drill.key, 0.0)
        prompt = render_prose(drill.question, attempt.derivation, attempt.params)
        reference = drill_reference(drill, step)
        rows.append({"prompt": prompt.replace("**", ""), "typed": row["typed"] if row else "",
                     "reference": reference, "score": score, "worked": step.worked()})
        icon = ":material/check_circle:" if score >= 1 else (":material/adjust:" if score > 0 else ":material/cancel:")
        with st.container(border=True, key=f"review-{drill.key}"):
            st.markdown(f"{icon} **{PHASE_TITLES[drill.phase]}.** {prompt}")
            typed = code_span(row["typed"]) if row else "*(no answer)*"
            shown = reference.replace("$", "\\$")
            st.markdown(f"Your answer: {typed} · reference **{shown}** · score **{score:g}**")
            if score < 1:
                st.code(step.worked(), language=None)

    derivation_view(attempt.derivation, title="The scenario's full derivation")
    md = review_markdown(attempt.question.title, given_lines(attempt.params), total, phases, rows,
                         [s.worked() for s in attempt.derivation])
    cols = st.columns(3)
    cols[0].download_button("Export the review (Markdown)", md, file_name=f"review-{attempt.id[:8]}.md",
                            mime="text/markdown", key="mock.export", icon=":material/download:")
    if cols[1].button("Retry this scenario", key="mock.retry"):
        new_id = start_attempt(store, attempt.question, attempt.row["seed"], attempt.params,
                               instant_feedback=attempt.instant_feedback, round_min=int(attempt.round_min))
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
