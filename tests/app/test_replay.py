"""The replay control: scrub, play from the start, advance at the chosen speed, stop at the end."""

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
    # each tick moves speed x 0.5 s of simulated time: 1 x 0.5 / 0.1 = 5 steps
    assert _state(at) == 35
    at.run()
    assert _state(at) == 40
    at.slider(key="demo.replay").set_value(99).run()
    at.run()
    assert _state(at) == 100
    assert not at.session_state["demo.replay.playing"], "playback stops at the end"
