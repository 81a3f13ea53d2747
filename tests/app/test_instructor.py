"""AppTest: presets set every knob, the reveal goes one step at a time, compare shows deltas."""

from __future__ import annotations


from models.registry import QUESTIONS
from tests.helpers import app_page, metric

Q = QUESTIONS["batched-inference-api"]
S = Q.slug


def test_choosing_a_preset_sets_every_knob():
    at = app_page(Q).run()
    at.slider(key=f"{S}.max_batch_inputs").set_value(100).run()  # a knob the preset does not name
    at.selectbox(key="preset").select("Short timeout at peak").run()
    assert not at.exception
    assert at.select_slider(key=f"{S}.flush_timeout_ms").value == 10
    assert at.slider(key=f"{S}.max_batch_inputs").value == 50, "a preset resets the knobs it does not name"
    # 1 + 2,000 x 0.01 = 21 inputs; 21 / 0.2 s = 105 req/s; 2,000 / (105 x 0.8) = 23.8 -> 24 GPUs
    assert metric(at, "Provision (timeout + headroom)") == "24 GPUs"
    at.selectbox(key="preset").select("Seed scenario").run()
    assert metric(at, "Provision (timeout + headroom)") == "10 GPUs"


def test_a_link_naming_a_preset_opens_it():
    at = app_page(Q)
    at.query_params["preset"] = "Quiet hours"
    at.run()
    assert not at.exception
    # 100 req/s over 250 req/s per GPU: one GPU
    assert metric(at, "Floor (100% busy)") == "1 GPU"
    bad = app_page(Q)
    bad.query_params["preset"] = "No such preset"
    bad.run()
    assert any("no preset by that name" in i.value for i in bad.info)


def _steps_shown(at) -> list[str]:
    return [c.value for c in at.main.get("code")]


def test_reveal_goes_one_step_at_a_time_in_order():
    at = app_page(Q)
    at.query_params["present"] = "1"
    at.run()
    assert not at.exception
    assert not any("Try first" in m.value for m in at.markdown), "drills are hidden when presenting"
    steps = list(Q.solve(Q.Params()))
    for n in (1, 2, 3):
        at.button(key=f"{S}.reveal.next").click().run()
        shown = _steps_shown(at)
        assert shown == [s.worked() for s in steps[:n]], shown
        assert at.query_params["reveal"] in (str(n), [str(n)])
    at.button(key=f"{S}.reveal.back").click().run()
    assert _steps_shown(at) == [s.worked() for s in steps[:2]]


def test_compare_shows_every_figure_with_delta_and_ratio():
    at = app_page(Q)
    at.query_params["compare"] = "1"
    at.query_params[f"{S}.B.arrival_rps"] = "4000"
    at.run()
    assert not at.exception
    changed, unchanged = [m.value for m in at.markdown if m.value.startswith("| Figure |")]
    # floor: 2,000 / 250 = 8 GPUs against 4,000 / 250 = 16: +8, twice
    row = next(line for line in changed.splitlines() if "the floor" in line)
    assert "| 8 GPUs | 16 GPUs | +8 GPUs | 2× |" in row
    # what does not differ is one click away, not in the first table
    assert not any(line.startswith("| One GPU, every call full") for line in changed.splitlines())
    same = next(line for line in unchanged.splitlines() if line.startswith("| One GPU, every call full"))
    assert "| 0 |" in same and "1×" in same
    assert any(e.label.startswith("The ") and "figures that are the same" in e.label for e in at.expander)
