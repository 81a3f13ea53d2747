"""A profile sees only its own attempts and answers; nothing renders raw HTML."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

from streamlit.testing.v1 import AppTest

from models.registry import QUESTIONS, ROOT


def test_another_profiles_attempt_is_not_shown(store):
    now = datetime.now(timezone.utc)
    params = QUESTIONS["batched-inference-api"].Params().model_dump(mode="json")
    theirs = store.start_attempt("ann", "batched-inference-api", "mock", params, deadline=now + timedelta(minutes=45))
    store.record_answer(theirs, "gpus_floor", "anns secret answer", 8, "1", 8, "1", 1.0)
    at = AppTest.from_file(str(ROOT / "pages" / "mock.py"), default_timeout=30)
    at.session_state["profile"] = "bob"
    at.query_params["attempt"] = theirs
    at.run()
    assert not at.exception
    assert any("no open round at this link" in w.value for w in at.warning)  # never "it is ann's"
    assert "anns secret answer" not in " ".join(str(e.proto) for e in at.main)

    prog = AppTest.from_file(str(ROOT / "pages" / "progress.py"), default_timeout=30)
    prog.session_state["profile"] = "bob"
    prog.run()
    assert any("No answers yet" in i.value for i in prog.info)
    prog = AppTest.from_file(str(ROOT / "pages" / "progress.py"), default_timeout=30)
    prog.session_state["profile"] = "ann"
    prog.run()
    assert [m.value for m in prog.metric if m.label == "Answers"] == ["1"]


def test_raw_html_only_for_the_constant_presenter_style_sheet():
    """The one unsafe_allow_html call renders a module constant: nothing anyone typed."""
    import ast

    offenders = []
    for p in ROOT.rglob("*.py"):
        if ".venv" in p.parts or p.name == Path(__file__).name:
            continue
        text = p.read_text()
        if "st.html(" in text:
            offenders.append(f"{p}: st.html")
        if "st.iframe(" in text and p.relative_to(ROOT).as_posix() != "ui/countdown.py":
            offenders.append(f"{p}: st.iframe")
        if "unsafe_allow_html" not in text:
            continue
        tree = ast.parse(text)
        constants = {
            t.id: node.value for node in tree.body if isinstance(node, ast.Assign)
            for t in node.targets if isinstance(t, ast.Name)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and any(k.arg == "unsafe_allow_html" for k in node.keywords):
                arg = node.args[0] if node.args else None
                names = [arg.body, arg.orelse] if isinstance(arg, ast.IfExp) else [arg]
                ok = all(isinstance(a, ast.Name) and isinstance(constants.get(a.id), ast.Constant)
                         and isinstance(constants[a.id].value, str) for a in names)
                if not ok:
                    offenders.append(f"{p.relative_to(ROOT)}:{node.lineno}")
    assert not offenders, offenders


def test_the_countdown_page_takes_a_number_and_nothing_else():
    """ui/countdown.py is the one st.iframe: a constant page with an integer put into it."""
    from ui.countdown import COUNTDOWN_HTML, countdown_html

    for seconds, ms in ((2700, "2700000"), (0.0014, "1"), (-5, "0")):
        assert countdown_html(seconds) == COUNTDOWN_HTML.replace("__REMAINING_MS__", ms)
