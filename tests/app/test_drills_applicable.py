"""AppTest: a study page shows only the drills its scenario can ask (the ones a mock round would ask,
models.mock.drills_for) and says in one muted line how many it hides and why; a drill hidden here but
answered earlier still opens from Progress without an error.

continuous-batching's "how long until it is cut" drill has no answer while the policy blocks;
serving-platform's seed scenario asks every drill its content declares."""

from __future__ import annotations

import math
import re

from streamlit.testing.v1 import AppTest

from models.core import Derivation, Drill
from models.registry import QUESTIONS, ROOT
from tests.helpers import app_page
from ui.drills import hidden_line, why_hidden

SLUG = "continuous-batching"
CUT_DRILL = "slow_client_grace_s"
POLICY = f"{SLUG}.stream_policy"


def _boxes(at: AppTest, slug: str) -> set[str]:
    """Drill keys with an answer box on the page."""
    pattern = re.compile(rf"^{re.escape(slug)}\.drill\.(.+)\.typed$")
    return {m.group(1) for t in at.text_input if (m := pattern.match(t.key or ""))}


def _captions(at: AppTest) -> list[str]:
    return [c.value.replace("\\", "") for c in at.caption]  # Markdown-escaped on the page


def _declared(slug: str) -> set[str]:
    """The drill keys the content file declares, read from its front matter, not through the page."""
    text = QUESTIONS[slug].content_path.read_text()
    front = text.split("+++")[1]
    return set(re.findall(r'^key = "([^"]+)"\s*$', front.split("[[drills]]", 1)[1], flags=re.M))


def test_a_blocking_stream_hides_the_cut_drill_and_says_why():
    at = app_page(SLUG)
    at.query_params[POLICY] = "block"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    declared = _declared(SLUG)
    assert CUT_DRILL in declared
    assert _boxes(at, SLUG) == declared - {CUT_DRILL}
    lines = [c for c in _captions(at) if "not apply to this scenario" in c]
    assert lines == ["1 drill does not apply to this scenario: “When a client's buffer is full” is block, not cut."]
    assert any(c.endswith(f" · {len(declared) - 1} drills") for c in _captions(at))


def test_cutting_asks_it_again():
    at = app_page(SLUG).run()  # the seed cuts
    assert not at.exception
    assert _boxes(at, SLUG) == _declared(SLUG)
    assert not [c for c in _captions(at) if "not apply" in c]


def test_serving_platform_at_the_seed_hides_nothing():
    at = app_page("serving-platform").run()
    assert not at.exception, [e.value for e in at.exception]
    assert _boxes(at, "serving-platform") == _declared("serving-platform")
    assert not [c for c in _captions(at) if "not apply" in c]


def test_a_link_to_a_hidden_drill_says_it_does_not_apply_here():
    at = app_page(SLUG)
    at.query_params[POLICY] = "block"
    at.query_params["drill"] = CUT_DRILL
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert CUT_DRILL not in _boxes(at, SLUG)
    assert ("It does not apply to this scenario: “When a client's buffer is full” is block, not cut. "
            "The preset “Seed scenario” asks it.") in _captions(at)


def test_progress_keeps_a_drill_answered_where_it_applied(store):
    # Answered at the seed (cut), then the page was moved to block: Progress still lists and links it.
    attempt = store.study_attempt("ann", SLUG, {})
    store.record_answer(attempt, CUT_DRILL, "4", 4, "s", 5, "s", 0.0)
    prog = AppTest.from_file(str(ROOT / "pages" / "progress.py"), default_timeout=30)
    prog.session_state["profile"] = "ann"
    prog.run()
    assert not prog.exception, [e.value for e in prog.exception]
    assert [m.value for m in prog.metric if m.label == "Drills practised"] == ["1"]
    assert not [c for c in _captions(prog) if "no longer asked" in c]
    assert any("how long until it is cut" in link.label for link in prog.get("page_link"))


# --- the reasons, on hand-made drills ---------------------------------------------------------------


def _drill(key: str, *when: str) -> Drill:
    return Drill(key=key, prompt="?", phase="numbers", unit="s", when=tuple(when))


def test_each_reason_names_what_the_scenario_lacks():
    p = QUESTIONS[SLUG].Params(stream_policy="block")
    d = Derivation()
    d.step("grace_s", "Grace", 5.0, "s")
    d.step("never_s", "Never", math.inf, "s")
    d.step("short_gpus", "GPUs short at peak", 0, "1", noun="GPUs")
    d.step("room_gpus", "GPUs free", 3, "1", noun="GPUs")
    d.step("verdict", "Verdict", "yes", "1")
    cases = {
        _drill("never_s"): "its answer is unbounded here",
        _drill("verdict"): "its answer is not a number here",
        _drill("missing"): "its answer is not computed here",
        _drill("grace_s", "stream_policy == 'cut'"): "“When a client's buffer is full” is block, not cut",
        _drill("grace_s", "stream_policy != 'block'"): "“When a client's buffer is full” is block here",
        _drill("grace_s", "short_gpus > 0"): "“GPUs short at peak” is 0 GPUs here",
        _drill("grace_s", "grace_s > 1", "room_gpus < short_gpus"):
            "“GPUs free” is 3 GPUs, not below “GPUs short at peak” (0 GPUs)",
        _drill("grace_s", "short_gpus != short_gpus"): "“GPUs short at peak” is 0 GPUs, the same as “GPUs short at peak” (0 GPUs)",
    }
    for drill, reason in cases.items():
        assert why_hidden(drill, d, p) == reason, drill.when
    assert why_hidden(_drill("grace_s", "short_gpus >= 0"), d, p) is None


def test_the_line_counts_every_hidden_drill_and_says_each_reason_once():
    assert hidden_line({}) == ""
    assert hidden_line({"a": "x is 0 here", "b": "x is 0 here", "c": "its answer is unbounded here"}) == (
        "3 drills do not apply to this scenario: x is 0 here; its answer is unbounded here.")
