"""st.navigation from the registry: Home, practice pages, then the written questions by track."""

from __future__ import annotations

import re

import streamlit as st

from models.registry import ROOT, TRACK_TITLES, by_track

PROFILE_OK = re.compile(r"^[\w .@-]{1,40}$")


def question_page(q) -> st.Page:
    return st.Page(str(q.page_path.relative_to(ROOT)), title=q.title, url_path=q.slug)


def profile_box() -> None:
    """A light profile: a name keys attempts so a shared machine keeps people apart (no passwords)."""
    if "profile" not in st.session_state:
        st.session_state["profile"] = "me"
    name = st.sidebar.text_input("Profile", key="profile", bind="query-params", max_chars=40,
                                 help="Your attempts and progress are kept under this name.")
    if not PROFILE_OK.match(name.strip()):
        st.sidebar.warning("A profile name is 1-40 letters, digits, spaces or . @ - _; using “me”.")


def build_navigation():
    sections: dict[str, list] = {
        "": [
            st.Page("pages/home.py", title="Home", icon=":material/home:", default=True),
            st.Page("pages/mock.py", title="Mock interview", icon=":material/timer:", url_path="mock"),
            st.Page("pages/progress.py", title="Progress", icon=":material/monitoring:", url_path="progress"),
            st.Page("pages/validation.py", title="How accurate are these models?", icon=":material/fact_check:",
                    url_path="validation"),
            st.Page("pages/reference.py", title="Reference", icon=":material/menu_book:", url_path="reference"),
        ],
    }
    for track, questions in by_track().items():
        pages = [question_page(q) for q in questions if q.written]
        if pages:
            sections[TRACK_TITLES[track]] = pages
    return st.navigation(sections, position="sidebar", expanded=True)
