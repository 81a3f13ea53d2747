"""A live panel's timer tick that lands on a pending page change (ui/rerun_guard.py)."""

from streamlit.runtime.scriptrunner_utils.script_requests import RerunData, ScriptRequests

NAVIGATION = RerunData(query_string="kv.think_median_s=5", page_script_hash="next-page", page_name="next")
TICK = RerunData(query_string="", page_script_hash="previous-page", fragment_id="panel-1", is_auto_rerun=True)


def _pending(*requests: RerunData) -> RerunData:
    queue = ScriptRequests()
    for data in requests:
        assert queue.request_rerun(data)
    return queue._rerun_data


def test_streamlit_alone_lets_the_tick_take_the_page_and_address(monkeypatch):
    from ui import rerun_guard

    monkeypatch.setattr(ScriptRequests, "_request_rerun_locked", rerun_guard._original)
    pending = _pending(NAVIGATION, TICK)
    assert (pending.page_script_hash, pending.query_string) == ("previous-page", "")  # why the guard exists


def test_the_guard_keeps_the_page_change_and_its_knobs(monkeypatch):
    from ui import rerun_guard

    monkeypatch.setattr(ScriptRequests, "_request_rerun_locked", rerun_guard._request_rerun_locked)
    pending = _pending(NAVIGATION, TICK)
    assert (pending.page_script_hash, pending.query_string) == ("next-page", "kv.think_median_s=5")
    assert not pending.fragment_id_queue  # still a full run: it redraws the panel too
    # a tick first, then the page change: the page change wins, as in Streamlit
    pending = _pending(TICK, NAVIGATION)
    assert (pending.page_script_hash, pending.query_string) == ("next-page", "kv.think_median_s=5")
    # a person's own fragment interaction (not a timer) still folds in as Streamlit folds it
    click = RerunData(query_string="", page_script_hash="next-page", fragment_id="panel-1")
    assert _pending(NAVIGATION, click).page_script_hash == "next-page"
