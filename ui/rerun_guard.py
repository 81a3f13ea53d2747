"""A timer's fragment rerun never overrides a page change waiting to run.

A live panel polls for its run with a browser timer (ui/sim_panel.py). One tick can still fire
just after the user (or a link) has asked for another page, before the browser has cleared the
timer on the page change. Streamlit 1.67 folds the two requests into one and keeps the newer
one's page and query string: the tick's, so the new page opened with none of the knobs its
address carried (tests/e2e/test_knob_roundtrip.py lost all 25 of a page's knobs, 1 run in
about 3, always on the page opened right after a simulation page). A full-app run reruns every
fragment anyway, so the tick adds nothing: it is dropped.
"""

from __future__ import annotations

from streamlit.runtime.scriptrunner_utils import script_requests
from streamlit.runtime.scriptrunner_utils.script_requests import RerunData, ScriptRequests, ScriptRequestType

_original = ScriptRequests._request_rerun_locked


def _is_timer_tick(data: RerunData) -> bool:
    return bool(data.is_auto_rerun and (data.fragment_id or data.fragment_id_queue))


def _request_rerun_locked(self: ScriptRequests, new_data: RerunData) -> bool:
    if (self._state == ScriptRequestType.RERUN and _is_timer_tick(new_data)
            and script_requests._is_full_app_rerun(self._rerun_data)):
        return True  # the pending full run redraws the fragment too, with its own page and address
    return _original(self, new_data)


def install() -> None:
    ScriptRequests._request_rerun_locked = _request_rerun_locked
