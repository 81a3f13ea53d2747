"""st.navigation from the registry: Home first, then the written questions grouped by track."""

from __future__ import annotations

import streamlit as st

from models.registry import ROOT, TRACK_TITLES, by_track


def question_page(q) -> st.Page:
    return st.Page(str(q.page_path.relative_to(ROOT)), title=q.title, url_path=q.slug)


def build_navigation():
    sections: dict[str, list] = {
        "": [st.Page("pages/home.py", title="Home", icon=":material/home:", default=True)],
    }
    for track, questions in by_track().items():
        pages = [question_page(q) for q in questions if q.written]
        if pages:
            sections[TRACK_TITLES[track]] = pages
    return st.navigation(sections, position="sidebar", expanded=True)
