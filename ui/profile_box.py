"""A light profile: a name keys attempts, so people on a shared machine keep apart (no passwords).

The name lives in session state (`profile`, read by ui.session_store.profile()) and in the URL
(`?profile=ann`, so a reload or a bookmark keeps it). It is not a widget's state: the box that
edits it sits on the pages where it matters (home, the mock, progress, and each question's
scenario panel), and a widget's state would be dropped on a page without the box.
"""

from __future__ import annotations

import re

import streamlit as st

PROFILE_OK = re.compile(r"^[\w .@-]{1,40}$")
PARAM = "profile"
STATE = "profile"
_INPUT = "profile.input"
_REFUSED = "profile.refused"
DEFAULT = "me"
RULE = "A profile name is 1-40 letters, digits, spaces or . @ - _; using “{name}”."


def ensure_profile() -> None:
    """Every run: take the name from the URL on a session's first run; keep the URL in step."""
    if STATE not in st.session_state:
        raw = st.query_params.get(PARAM)
        if raw is not None and not PROFILE_OK.match(raw.strip()):
            st.session_state[_REFUSED] = True
            raw = None
        st.session_state[STATE] = raw.strip() if raw else DEFAULT
    name = st.session_state[STATE]
    if not isinstance(name, str) or not PROFILE_OK.match(name.strip()):  # set by a test or an old session
        st.session_state[STATE] = name = DEFAULT
    if name != DEFAULT and st.query_params.get(PARAM) != name:
        st.query_params[PARAM] = name
    elif name == DEFAULT and PARAM in st.query_params:
        del st.query_params[PARAM]
    if st.session_state.pop(_REFUSED, False):
        st.warning(RULE.format(name=name), icon=":material/person:")


def _changed() -> None:
    typed = str(st.session_state.get(_INPUT, "")).strip()
    if PROFILE_OK.match(typed):
        st.session_state[STATE] = typed
    else:
        st.session_state[_REFUSED] = True
        st.session_state[_INPUT] = st.session_state.get(STATE, DEFAULT)


def profile_box(container=None) -> None:
    """The box that edits the name, in `container` (the current one by default)."""
    target = container if container is not None else st.container()
    st.session_state[_INPUT] = st.session_state.get(STATE, DEFAULT)
    target.text_input("Profile", key=_INPUT, max_chars=40, on_change=_changed,
                      help="Your answers and progress are kept under this name (no password).")
