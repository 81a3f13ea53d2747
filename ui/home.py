"""Home: every question by track with a one-line hook, a search box and a company filter."""

from __future__ import annotations

import streamlit as st

from models.registry import QUESTIONS, ROOT, TRACK_TITLES, by_track
from ui.prose import render as render_prose
from ui.profile_box import profile_box
from ui.session_store import get_store, profile
from ui.solve_cache import solve


def _matches(q, text: str, companies: list[str]) -> bool:
    if companies and not set(companies) & set(q.asked_at):
        return False
    if not text:
        return True
    hay = " ".join([q.title, q.slug, q.track, q.hook, *q.figures]).lower()
    return all(word in hay for word in text.lower().split())


def _hook(q) -> str:
    if not q.written:
        return q.hook.replace("$", "\\$")
    params = q.Params()
    return render_prose(q.hook, solve(q.slug, params), params)


def _mastery() -> dict[str, tuple[float, int]]:
    """question -> (mean of the latest score per drill, drills tried) for this profile."""
    try:
        rows = get_store().profile_answers(profile())
    except Exception:  # the home page must render even if the store cannot be read
        return {}
    latest: dict[tuple[str, str], float] = {}
    for r in rows:
        latest[(r["question"], r["drill_key"])] = r["score"] or 0.0
    out: dict[str, list[float]] = {}
    for (question, _), score in latest.items():
        out.setdefault(question, []).append(score)
    return {q: (sum(v) / len(v), len(v)) for q, v in out.items()}


def render() -> None:
    st.title("AI Infrastructure Design Walkthroughs")
    written = sum(q.written for q in QUESTIONS.values())
    count = (f"**All {written} questions are here**, by track." if written == len(QUESTIONS)
             else f"**{written} of {len(QUESTIONS)} questions are written**; the rest are listed as coming.")
    st.markdown(
        "Each page is one system-design question from the AI-infrastructure round: the numbers to "
        "open with, the shape to draw, the arithmetic to defend, the depth an interviewer probes and "
        "the failure modes. Every figure comes from a model you can move with the scenario's knobs; "
        f"every “Try first” box scores a typed answer. {count}"
    )
    cols = st.columns([3, 2, 1.3])
    text = cols[0].text_input("Search questions", key="home.search", placeholder="e.g. KV cache, checkpoint, failover")
    companies = sorted({c for q in QUESTIONS.values() for c in q.asked_at})
    picked = cols[1].multiselect("Asked at", companies, key="home.companies")
    profile_box(cols[2])

    get_store(announce=True)
    mastery = _mastery()
    shown = 0
    for track, questions in by_track().items():
        hits = [q for q in questions if _matches(q, text, picked)]
        if not hits:
            continue
        done = sum(q.written for q in hits)
        st.subheader(f"{TRACK_TITLES[track]} · {len(hits)} questions" if done == len(hits)
                     else f"{TRACK_TITLES[track]} · {done} written of {len(hits)}")
        for q in hits:
            shown += 1
            with st.container(border=True, key=f"home-{q.slug}"):
                if q.written:
                    st.page_link(str(q.page_path.relative_to(ROOT)), label=f"**{q.title}**", icon=":material/arrow_forward:")
                    if q.slug in mastery:
                        mean, tried = mastery[q.slug]
                        color = "green" if mean >= 0.8 else ("orange" if mean >= 0.5 else "red")
                        st.markdown(f":{color}-badge[mastery {mean * 100:.0f}% over {tried} of {len(q.drills)} drills]")
                else:
                    st.markdown(f"**{q.title}** · :gray-badge[coming]")
                st.caption(_hook(q))
    if shown == 0:
        st.info("No question matches that search. Try a shorter word, or clear the company filter.")
