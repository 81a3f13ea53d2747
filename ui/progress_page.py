"""Progress: attempts over time, a mastery grid, the weakest drills, what to study next, CSV.

A drill is named by its question as the page asks it (rendered for the seed scenario), not by its
step key, and every drill listed links to its page with `?drill=<key>`, which opens that drill at
the top of the page (ui/question_page.py).
"""

from __future__ import annotations

import csv
import io
import re
import textwrap

import plotly.graph_objects as go
import streamlit as st

from models.progress import DrillState, drill_states, study_next
from models.registry import QUESTIONS, TRACK_TITLES
from ui.charts import PALETTE, base_layout
from ui.clock import now
from ui.navigation import question_page
from ui.profile_box import profile_box, refuse_if_locked
from ui.prose import render as render_prose
from ui.session_store import get_store, profile
from ui.solve_cache import solve

DRILL_PARAM = "drill"
_MARKUP = re.compile(r"\*\*|\\(?=[$*_])")


def drill_text(question_slug: str, drill_key: str) -> str:
    """The drill as its page asks it, with the seed scenario's numbers, in plain text."""
    q = QUESTIONS.get(question_slug)
    drill = next((d for d in q.drills if d.key == drill_key), None) if q is not None else None
    if drill is None:  # an answer kept from a drill the content no longer has
        return drill_key
    params = q.Params()
    return _MARKUP.sub("", render_prose(drill.question, solve(q.slug, params), params))


def _still_asked(s: DrillState) -> bool:
    q = QUESTIONS.get(s.question)
    return q is not None and q.written and any(d.key == s.drill_key for d in q.drills)


def _csv(rows: list[dict]) -> str:
    """The profile's answers. Each attempt is numbered in the order it was first answered, never
    named by its id: a mock round's id is the secret that lets a browser write into it."""
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(["question", "mode", "attempt", "drill_key", "typed", "score", "answered_at"])
    number: dict[str, int] = {}
    for r in rows:
        n = number.setdefault(r["attempt_id"], len(number) + 1)
        writer.writerow([r["question"], r["mode"], n, r["drill_key"], r["typed"], r["score"],
                         r["answered_at"].isoformat()])
    return buf.getvalue()


def _drill_link(s: DrillState, detail: str, key: str) -> None:
    """One drill as a link that opens it on its page."""
    q = QUESTIONS[s.question]
    with st.container(border=True, key=key):
        # The page as the navigation declares it (an st.Page carries its own address).
        st.page_link(question_page(q), label=drill_text(s.question, s.drill_key).replace("$", "\\$"),
                     icon=":material/edit_note:", query_params={DRILL_PARAM: s.drill_key})
        st.caption(f"{q.title} · {detail}")


def _mastery_chart(states: list[DrillState]) -> go.Figure:
    """Questions down, their drills across (in page order): each cell the latest score."""
    questions = sorted({s.question for s in states}, key=list(QUESTIONS).index)
    by = {(s.question, s.drill_key): s for s in states}
    width = max(len(QUESTIONS[q].drills) for q in questions)
    z, hover = [], []
    for q in questions:
        drills = QUESTIONS[q].drills
        z.append([by[(q, d.key)].latest_score * 100 if (q, d.key) in by else None for d in drills]
                 + [None] * (width - len(drills)))
        hover.append([textwrap.fill(drill_text(q, d.key), 60).replace("\n", "<br>") for d in drills]
                     + [""] * (width - len(drills)))
    # Titles wrapped onto lines of 34 characters, whole: a cut title names no question.
    labels = [textwrap.fill(QUESTIONS[q].title, 34).replace("\n", "<br>") for q in questions]
    fig = go.Figure(go.Heatmap(
        z=z, x=list(range(1, width + 1)), y=labels, zmin=0, zmax=100, text=hover, xgap=2, ygap=2,
        colorscale=[[0, "#dc2626"], [0.5, "#facc15"], [1, "#16a34a"]], colorbar=dict(title="%"),
        hovertemplate="%{text}<br>latest: %{z:.0f}%<extra></extra>"))
    base_layout(fig, "", "drill, in the order the page asks them", "")
    fig.update_layout(height=max(240, 64 * len(questions) + 120), hovermode="closest")
    fig.update_yaxes(automargin=True, autorange="reversed")
    fig.update_xaxes(dtick=1)
    return fig


def render() -> None:
    store = get_store(announce=True)
    who = profile()
    st.title("Progress")
    profile_box(st.columns([1, 2])[0])
    if refuse_if_locked():
        return
    rows = store.profile_answers(who)
    attempts = [a for a in store.attempts(who) if a["mode"] == "mock" and a["finished_at"] is not None]
    if not rows:
        st.info("No answers yet. Try a drill on any question page, or start a mock interview: every answer lands here.")
        return
    all_states = drill_states(rows)
    states = [s for s in all_states if _still_asked(s)]
    cols = st.columns(3)
    cols[0].metric("Answers", f"{len(rows):,}", border=True)
    cols[1].metric("Drills practised", f"{len(states)}", border=True)
    cols[2].metric("Mock interviews finished", f"{len(attempts)}", border=True)

    retired = len(all_states) - len(states)
    if retired:
        st.caption(f"{retired} drill{'s' if retired != 1 else ''} you answered {'are' if retired != 1 else 'is'} no "
                   "longer asked by this version of the app (a question or drill was retired or renamed); "
                   "they are left out here and kept in the CSV.")
    attempts = [a for a in attempts if a["question"] in QUESTIONS]
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

    if states:
        st.subheader("Mastery: latest score per drill", divider="gray")
        st.plotly_chart(_mastery_chart(states), key="progress.mastery")

    left, right = st.columns(2)
    with left:
        st.subheader("Weakest drills", divider="gray")
        weak = sorted((s for s in states if s.mean_score < 1), key=lambda s: (s.mean_score, -s.answers))[:8]
        if not weak:
            st.caption("Every drill you have answered is at full marks.")
        for i, s in enumerate(weak):
            _drill_link(s, f"mean {s.mean_score * 100:.0f}% over {s.answers}", f"progress-weak-{i}")
    with right:
        st.subheader("Study next", divider="gray")
        t = now()
        for i, s in enumerate(study_next(states, t)):
            when = "due now" if s.due <= t else f"due {s.due.strftime('%d %b %H:%M')} UTC"
            _drill_link(s, f"{when}; last {s.latest_score * 100:.0f}%", f"progress-next-{i}")
    st.download_button("Export my answers (CSV)", _csv(rows), file_name=f"answers-{who}.csv", mime="text/csv",
                       key="progress.csv", icon=":material/download:")
