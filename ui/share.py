"""Share this screen: a short link that reopens the scenario, and a QR code a room can scan.

The link carries only what differs from the seed scenario (each knob that moved, the views that
are on, the reveal position), not every parameter the page has bound: after one preset the full
URL ran to 470 characters, and a QR of that is 85 modules wide, unreadable from a seat. The QR
opens full width in a dialog. An address only this computer can open (localhost) is named as
such, with what to do instead.
"""

from __future__ import annotations

import io
from typing import Any
from urllib.parse import urlencode, urlsplit

import streamlit as st

from ui.knobs import KnobSpec, plain, specs

LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1", "0.0.0.0", "[::1]"}
VIEW_PARAMS = ("present", "compare", "reveal")
QR_PX = 460


def _differs(spec: KnobSpec, value: Any) -> bool:
    if spec.kind in ("int", "float"):
        return float(value) != float(spec.default)
    return value != spec.default


def _url_value(spec: KnobSpec, value: Any) -> str:
    if spec.kind == "bool":
        return "true" if value else "false"
    if spec.kind == "choice":
        return str(value)
    shown = value * 100 if spec.knob.percent else value  # a percent knob's URL is its slider's number
    return plain(round(shown, 6))


def share_query(slug: str, params_a: Any, params_b: Any = None) -> list[tuple[str, str]]:
    """The query that reopens this screen: moved knobs of A (and B), then the view parameters."""
    out = []
    for variant, params in (("", params_a), ("B", params_b)):
        if params is None:
            continue
        for spec in specs(type(params)):
            value = getattr(params, spec.field)
            if _differs(spec, value):
                out.append((spec.key(slug, variant), _url_value(spec, value)))
    for name in VIEW_PARAMS:
        raw = st.query_params.get(name)
        if raw not in (None, "", "0", "false", "no"):
            out.append((name, str(raw)))
    return out


def page_address() -> str:
    """This page's address without its query, as the browser has it."""
    try:
        base = st.context.url or ""
    except Exception:  # no browser behind the run (AppTest)
        base = ""
    parts = urlsplit(base)
    return f"{parts.scheme}://{parts.netloc}{parts.path}" if parts.netloc else base


def share_link(slug: str, params_a: Any, params_b: Any = None) -> str:
    query = urlencode(share_query(slug, params_a, params_b))
    root = page_address()
    return f"{root}?{query}" if query else root


def is_local(link: str) -> bool:
    host = (urlsplit(link).hostname or "").lower()
    return host in LOCAL_HOSTS or host.endswith(".localhost")


def qr_png(text: str) -> bytes:
    import segno

    buf = io.BytesIO()
    segno.make(text, error="m").save(buf, kind="png", scale=12, border=3, dark="#000000", light="#ffffff")
    return buf.getvalue()


@st.dialog("Share this screen", width="large")
def _share_dialog(link: str) -> None:
    st.caption("The link reopens this scenario, view and reveal position. It names only what differs "
               "from the seed scenario.")
    st.code(link, language=None, wrap_lines=True)
    if is_local(link):
        st.warning("This address opens only on this computer. For a room to scan it, start the app with "
                   "`--server.address 0.0.0.0` and open it by this machine's network name or IP address, "
                   "then share again.", icon=":material/wifi_off:")
    if link:
        try:
            png = qr_png(link)
        except Exception:  # segno's DataOverflowError: past ~2.9 kB no QR version holds the link
            st.info("This link is too long for a QR code; copy it instead.", icon=":material/qr_code_2:")
            return
        # Large, yet the whole dialog fits a 900 px screen (the image shrinks to a narrower one).
        st.image(png, caption="Scan to open on a phone", width=QR_PX)


def share_button(slug: str, params_a: Any, params_b: Any = None, container: Any = None) -> None:
    target = container if container is not None else st.container()
    if target.button("Share this screen", key=f"{slug}.share", icon=":material/qr_code_2:", width="stretch"):
        _share_dialog(share_link(slug, params_a, params_b))
