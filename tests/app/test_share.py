"""Share this screen: the link names only what differs from the seed, and a local address is named.

batched-inference-api's preset "Short timeout at peak" moves three knobs; before, the shared link
carried every bound parameter (470 characters after one preset)."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

import pytest
from streamlit.testing.v1 import AppTest

from models.content import SEED_PRESET
from models.registry import QUESTIONS

SLUG = "batched-inference-api"


def _link_app(preset, present):
    import streamlit as st

    from models.registry import QUESTIONS
    from ui.share import share_link

    q = QUESTIONS["batched-inference-api"]
    values = next((p.values for p in q.content.presets if p.name == preset), {})
    if present:
        st.query_params["present"] = present
    st.code(share_link(q.slug, q.Params(**values)))


def _run(preset: str, present: str) -> AppTest:
    return AppTest.from_function(_link_app, args=(preset, present), default_timeout=30).run()


def _query(link: str) -> dict[str, str]:
    return dict(parse_qsl(urlsplit(link).query))


def test_the_seed_scenario_shares_a_bare_address():
    at = _run(SEED_PRESET, "")
    assert _query(at.code[0].value) == {}


@pytest.mark.parametrize("preset", [p.name for p in QUESTIONS[SLUG].content.presets])
def test_a_preset_shares_only_the_knobs_it_moves(preset):
    values = next(p.values for p in QUESTIONS[SLUG].content.presets if p.name == preset)
    at = _run(preset, "1")
    query = _query(at.code[0].value)
    moved = {f"{SLUG}.{k}" for k, v in values.items() if v != QUESTIONS[SLUG].Params.model_fields[k].default}
    assert set(query) == moved | {"present"}
    assert len(at.code[0].value) < 200


def test_a_percent_knob_shares_its_slider_number():
    def app():
        import streamlit as st

        from models.registry import QUESTIONS
        from ui.share import share_link

        st.code(share_link("batched-inference-api", QUESTIONS["batched-inference-api"].Params(target_utilization=0.3)))

    at = AppTest.from_function(app, default_timeout=30).run()
    # the slider reads 30 (%), so the link says 30, as the page's own URL does
    assert _query(at.code[0].value) == {f"{SLUG}.target_utilization": "30"}


@pytest.mark.parametrize(("link", "local"), [
    ("http://localhost:8501/x", True), ("http://127.0.0.1:8501/x?a=1", True), ("http://[::1]:8501/", True),
    ("http://0.0.0.0:8501/", True), ("http://class.example.org/x", False), ("http://192.168.1.20:8501/", False)])
def test_a_local_address_is_recognised(link, local):
    from ui.share import is_local

    assert is_local(link) is local


def test_a_link_too_long_for_a_qr_code_is_refused_by_segno_and_caught():
    import segno.encoder

    from ui.share import qr_png

    with pytest.raises(segno.encoder.DataOverflowError):
        qr_png("http://x/?" + "a" * 3000)  # what the dialog catches and explains
    assert qr_png("http://x/?a=1")[:8] == b"\x89PNG\r\n\x1a\n"
