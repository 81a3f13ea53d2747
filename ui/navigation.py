"""st.navigation from the registry: Home, practice pages, then the written questions by track.

The menu sits in the top bar (each track a drop-down), so the left of the screen is free for a
question's scenario panel (ui/layout.py). On a phone Streamlit folds the top bar into its menu
button.
"""

from __future__ import annotations

import streamlit as st

from models.registry import TRACK_TITLES, by_track


def question_page(q) -> st.Page:
    return st.Page(q.page_path, title=q.title, url_path=q.slug)  # absolute: resolves from any page


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
    return st.navigation(sections, position="top")
