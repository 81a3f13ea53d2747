"""A light profile: a name keys attempts, so people on a shared machine keep apart (no passwords).

The name lives in session state (`profile`, read by ui.session_store.profile()) and in the URL
(`?profile=ann`, so a reload or a bookmark keeps it). It is not a widget's state: the box that
edits it sits on the pages where it matters (home, the mock, progress, and each question's
scenario panel), and a widget's state would be dropped on a page without the box.
"""

from __future__ import annotations

import re
import secrets

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
            # Not the shared "me": a link with a mangled name must not pour this tab's answers into
            # everyone's default. A private name keeps them apart until the learner picks one.
            st.session_state[_REFUSED] = True
            raw = f"guest-{secrets.token_hex(3)}"
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
                      help="Your answers and progress are kept under this name (no password, unless you claim it).")
    _claim_controls(target)


# --- a profile claimed with a passphrase -----------------------------------------------------------
#
# Profiles are names, not accounts: on one laptop that is all they need. On a class server anyone can
# type "alice", so alice may claim her name with a passphrase; then her Progress, CSV and rounds open
# only in a session that has given it. Unclaimed profiles behave as before, and "me" (the shared
# default) cannot be claimed.

_UNLOCKED = "profile.unlocked"  # the claimed profiles this session has opened


def _claimed(name: str) -> bool:
    from ui.session_store import get_store

    return name != DEFAULT and get_store().profile_claimed(name)


def is_open(name: str | None = None) -> bool:
    """The profile may be read and written in this session: unclaimed, or unlocked here."""
    name = name if name is not None else st.session_state.get(STATE, DEFAULT)
    return name in st.session_state.get(_UNLOCKED, set()) or not _claimed(name)


def _unlock(name: str, key: str) -> None:
    from ui.session_store import get_store

    if get_store().passphrase_opens(name, st.session_state.get(key, "")):
        st.session_state[_UNLOCKED] = st.session_state.get(_UNLOCKED, set()) | {name}
        st.session_state[f"{key}.problem"] = None
    else:
        st.session_state[f"{key}.problem"] = "That passphrase does not open this profile."
    st.session_state[key] = ""


def _claim(name: str, key: str) -> None:
    from store.db import ProfileClaimedError
    from ui.session_store import get_store

    typed, again = st.session_state.get(key, ""), st.session_state.get(f"{key}.again", "")
    try:
        if typed != again:
            raise ValueError("The two passphrases differ.")
        get_store().claim_profile(name, typed)
    except (ValueError, ProfileClaimedError) as e:
        st.session_state[f"{key}.problem"] = str(e)
    else:
        st.session_state[_UNLOCKED] = st.session_state.get(_UNLOCKED, set()) | {name}
        st.session_state[f"{key}.problem"] = None
        st.session_state[f"{key}.done"] = True
    st.session_state[key] = st.session_state[f"{key}.again"] = ""


def _claim_controls(target) -> None:
    name = st.session_state.get(STATE, DEFAULT)
    if name == DEFAULT:
        return
    key = f"profile.passphrase.{name}"
    if not _claimed(name):
        with target.popover("Claim this profile", icon=":material/lock:"):
            st.caption(f"Give “{name}” a passphrase: its progress and rounds then open only with it. "
                       "It cannot be changed or recovered here, so keep it somewhere safe.")
            st.text_input("Passphrase (8 or more characters)", type="password", key=key, max_chars=200)
            st.text_input("The same again", type="password", key=f"{key}.again", max_chars=200)
            st.button("Claim", key=f"{key}.claim", on_click=_claim, args=(name, key))
    elif name not in st.session_state.get(_UNLOCKED, set()):
        target.text_input(f"Passphrase for “{name}”", type="password", key=key, max_chars=200,
                          on_change=_unlock, args=(name, key),
                          help="This profile is claimed: its progress and rounds open with its passphrase.")
    elif st.session_state.pop(f"{key}.done", False):
        target.success(f"“{name}” is claimed: its progress and rounds now open only with the passphrase.")
    problem = st.session_state.get(f"{key}.problem")
    if problem:
        target.warning(problem)


def refuse_if_locked() -> bool:
    """On a page that reads or writes the profile's record: True (and a sentence) if it is locked."""
    name = st.session_state.get(STATE, DEFAULT)
    if is_open(name):
        return False
    st.warning(f"The profile “{name}” is claimed. Give its passphrase in the profile box to open its "
               "progress and rounds.", icon=":material/lock:")
    return True
