"""The replay control: scrub, play from the start, advance at the chosen speed, stop at the end."""

import math

import pytest
from streamlit.testing.v1 import AppTest


def _app():
    import streamlit as st

    from ui.replay import replay

    replay("demo.replay", n_steps=101, dt_s=0.1, draw=lambda i: st.markdown(f"state at step {i}"))


def _state(at) -> int:
    return int(next(m.value for m in at.markdown if m.value.startswith("state at step")).split()[-1])


def test_scrub_play_and_stop():
    at = AppTest.from_function(_app, default_timeout=30).run()
    assert not at.exception
    assert _state(at) == 100  # opens on the last instant: the outcome
    at.slider(key="demo.replay").set_value(30).run()
    assert _state(at) == 30
    assert at.query_params["demo.replay"] in ("30", ["30"])
    at.selectbox(key="demo.replay.speed").select("1×").run()
    at.button(key="demo.replay.play").click().run()
    # each tick moves speed x 0.4 s of simulated time: 1 x 0.4 / 0.1 = 4 steps
    assert _state(at) == 34
    at.run()
    assert _state(at) == 38
    at.slider(key="demo.replay").set_value(99).run()
    at.run()
    assert _state(at) == 100
    assert not at.session_state["demo.replay.playing"], "playback stops at the end"


def test_the_default_speed_plays_a_run_slowly_enough_to_follow():
    from ui.replay import PLAY_S, TICK_S, default_speed, speeds, steps_per_tick

    # the failover page: 46.5 s of simulated time, a position every 0.1 s
    run_s, dt_s = 46.5, 0.1
    label = default_speed(run_s)
    multiple = speeds(run_s)[label]
    assert label == "2×"  # 46.5 s / 2 = 23 s of playing: the offer nearest 20 s (1x: 46 s, 5x: 9 s)
    frames = math.ceil(465 / steps_per_tick(multiple, dt_s))  # 2 x 0.4 s / 0.1 s = 8 positions a frame
    assert frames == 59 and frames * TICK_S == pytest.approx(23.6)
    assert abs(run_s / multiple - PLAY_S) < abs(run_s / 1 - PLAY_S)


def test_speeds_offered_fit_the_run():
    from ui.replay import default_speed, speeds

    month_s = 30 * 86400  # the fair-share page runs a month in hourly ticks
    offered = speeds(month_s)
    assert all(3 <= month_s / m <= 300 for m in offered.values())
    assert default_speed(month_s) == "100,000×"  # 2,592,000 s / 100,000 = 26 s; 200,000x: 13 s
    assert list(speeds(1.0)) == ["1×"]  # a run shorter than 3 s still plays, in real time


def test_the_run_length_reads_in_its_unit():
    from ui.replay import _clock

    assert (_clock(46.5), _clock(750), _clock(30 * 3600), _clock(3.5 * 86400)) == ("46.5 s", "12.5 min", "30.0 h", "3.5 days")


def _app_of_changing_length():
    import streamlit as st

    from ui.replay import replay

    # Another seed: another run, a step longer; the slider's max changes with it.
    n = 101 + st.session_state.get("extra_steps", 0)
    replay("demo.replay", n_steps=n, dt_s=0.1, draw=lambda i: st.markdown(f"state at step {i}"))


@pytest.mark.parametrize("extra", [1, -1, 0])
def test_the_position_survives_a_run_of_another_length(extra):
    at = AppTest.from_function(_app_of_changing_length, default_timeout=30).run()
    at.slider(key="demo.replay").set_value(25).run()
    assert _state(at) == 25
    at.session_state["extra_steps"] = extra
    at.run()
    assert _state(at) == 25  # not the slider's min (0): a new max made it a new widget
    at.run()
    assert _state(at) == 25
