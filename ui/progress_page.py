"""Progress: attempts over time, a mastery grid, the weakest drills, what to study next, CSV."""

from __future__ import annotations

import csv
import io

import plotly.graph_objects as go
import streamlit as st

from models.progress import drill_states, study_next
from models.registry import QUESTIONS, TRACK_TITLES
from ui.charts import PALETTE, base_layout
from ui.clock import now
from ui.safe import code_span
from ui.profile_box import profile_box
from ui.session_store import get_store, profile


def _csv(rows: list[dict]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(["question", "mode", "attempt_id", "drill_key", "typed", "score", "answered_at"])
    for r in rows:
        writer.writerow([r["question"], r["mode"], r["attempt_id"], r["drill_key"], r["typed"], r["score"],
                         r["answered_at"].isoformat()])
    return buf.getvalue()


def render() -> None:
    store = get_store(announce=True)
    who = profile()
    st.title("Progress")
    profile_box(st.columns([1, 2])[0])
    rows = store.profile_answers(who)
    attempts = [a for a in store.attempts(who) if a["mode"] == "mock" and a["finished_at"] is not None]
    if not rows:
        st.info("No answers yet. Try a drill on any question page, or start a mock interview: every answer lands here.")
        return
    states = drill_states(rows)
    cols = st.columns(3)
    cols[0].metric("Answers", f"{len(rows):,}", border=True)
    cols[1].metric("Drills practised", f"{len(states)}", border=True)
    cols[2].metric("Mock interviews finished", f"{len(attempts)}", border=True)

    if attempts:
        st.subheader("Mock interview scores over time", divider="gray")
        fig = go.Figure()
        tracks = sorted({QUESTIONS[a["question"]].track for a in attempts if a["question"] in QUESTIONS})
        for i, track in enumerate(tracks):
            mine = sorted((a for a in attempts if QUESTIONS.get(a["question"]) and QUESTIONS[a["question"]].track == track),
                          key=lambda a: a["started_at"])
            fig.add_trace(go.Scatter(
                x=[a["started_at"] for a in mine], y=[(a["score"] or 0) * 100 for a in mine], mode="lines+markers",
                name=TRACK_TITLES[track], line=dict(color=PALETTE[i % len(PALETTE)]),
                text=[QUESTIONS[a["question"]].title for a in mine], hovertemplate="%{text}: %{y:.0f}%<extra></extra>",
            ))
        base_layout(fig, "Score per attempt, by track", "", "score (%)")
        fig.update_yaxes(range=[0, 105])
        st.plotly_chart(fig, key="progress.attempts")

    st.subheader("Mastery: latest score per drill", divider="gray")
    questions = sorted({s.question for s in states}, key=list(QUESTIONS).index)
    keys = sorted({s.drill_key for s in states})
    by = {(s.question, s.drill_key): s for s in states}
    z = [[by[(q, k)].latest_score * 100 if (q, k) in by else None for k in keys] for q in questions]
    heat = go.Figure(go.Heatmap(z=z, x=keys, y=[QUESTIONS[q].title[:40] for q in questions], zmin=0, zmax=100,
                                colorscale=[[0, "#dc2626"], [0.5, "#facc15"], [1, "#16a34a"]],
                                colorbar=dict(title="%"), hovertemplate="%{y}<br>%{x}: %{z:.0f}%<extra></extra>"))
    base_layout(heat, "", "drill", "")
    heat.update_layout(height=max(220, 60 * len(questions) + 120), hovermode="closest")
    st.plotly_chart(heat, key="progress.mastery")

    left, right = st.columns(2)
    with left:
        st.subheader("Weakest drills", divider="gray")
        weakest = sorted(states, key=lambda s: (s.mean_score, -s.answers))[:8]
        st.markdown("\n".join(
            f"- **{QUESTIONS[s.question].title}** · `{s.drill_key}`: mean {s.mean_score * 100:.0f}% over {s.answers}"
            for s in weakest if s.question in QUESTIONS))
    with right:
        st.subheader("Study next", divider="gray")
        t = now()
        for s in study_next(states, t):
            when = "due now" if s.due <= t else f"due {s.due.strftime('%d %b %H:%M')} UTC"
            st.markdown(f"- **{QUESTIONS[s.question].title}** · `{s.drill_key}` ({when}; last {s.latest_score * 100:.0f}%)")
    st.download_button("Export my answers (CSV)", _csv(rows), file_name=f"answers-{who}.csv", mime="text/csv",
                       key="progress.csv", icon=":material/download:")
