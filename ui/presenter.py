"""Presenter view for a projector: large type, drills hidden, charts enlarged.

`?present=1` turns it on (and a toggle in the scenario panel). The preset, the knobs (folded),
Scenario B and the step-by-step reveal all sit in the main column, so nothing needs a side
panel in front of a class. The styling is one constant style
sheet: it is the only Markdown this app renders with HTML allowed, and it contains nothing
anyone typed.
"""

from __future__ import annotations

import streamlit as st

from ui.safe import code_span

PARAM = "present"
CHART_HEIGHT_PX = 540

# Larger type everywhere, thicker lines, higher contrast. Colours come from Streamlit's own
# theme variables, so the sheet works on the light and the dark theme alike.
_PRESENTER_CSS = """
<style>
[data-testid="stMain"] .stMarkdown p, [data-testid="stMain"] .stMarkdown li { font-size: 1.55rem !important; line-height: 1.5 !important; }
[data-testid="stMain"] h1 { font-size: 3.4rem !important; }
[data-testid="stMain"] h2 { font-size: 2.5rem !important; }
[data-testid="stMain"] h3 { font-size: 2rem !important; }
[data-testid="stMetricValue"] { font-size: 2.9rem !important; font-weight: 700 !important; }
.st-key-metrics { grid-template-columns: repeat(auto-fill, minmax(26rem, 1fr)) !important; }
[data-testid="stMetricLabel"] p { font-size: 1.25rem !important; }
[data-testid="stMain"] code { font-size: 1.35rem !important; }
[data-testid="stMain"] strong { font-weight: 800 !important; }
[data-testid="stMainBlockContainer"] { max-width: 96vw !important; padding-top: 2rem !important; }
</style>
"""

# High contrast on top of the large type: pure black on white, or white on black, by theme.
_CONTRAST_LIGHT = """
<style>
[data-testid="stMain"] .stMarkdown, [data-testid="stMain"] h1, [data-testid="stMain"] h2,
[data-testid="stMain"] h3, [data-testid="stMetricValue"] { color: #000000 !important; }
[data-testid="stAppViewContainer"], [data-testid="stMain"] { background: #ffffff !important; }
</style>
"""
_CONTRAST_DARK = """
<style>
[data-testid="stMain"] .stMarkdown, [data-testid="stMain"] h1, [data-testid="stMain"] h2,
[data-testid="stMain"] h3, [data-testid="stMetricValue"] { color: #ffffff !important; }
[data-testid="stAppViewContainer"], [data-testid="stMain"] { background: #000000 !important; }
</style>
"""
VALID = {"1", "true", "yes", "0", "false", "no", ""}


def is_presenting() -> bool:
    return str(st.query_params.get(PARAM, "")).lower() in ("1", "true", "yes")


def _dark() -> bool:
    try:
        return st.context.theme.type == "dark"
    except Exception:  # no browser theme known (tests, first paint): assume light
        return False


def apply_style() -> None:
    raw = str(st.query_params.get(PARAM, "")).lower()
    if raw not in VALID:
        st.info(f"Ignored {code_span(f'present={raw}', 40)}: use present=1 for the presenter view.", icon=":material/link:")
    if is_presenting():
        st.markdown(_PRESENTER_CSS, unsafe_allow_html=True)  # constant: see the module docstring
        st.markdown(_CONTRAST_DARK if _dark() else _CONTRAST_LIGHT, unsafe_allow_html=True)  # constants


def _toggle() -> None:
    if st.session_state.get("presenter.toggle"):
        st.query_params[PARAM] = "1"
    elif PARAM in st.query_params:
        del st.query_params[PARAM]


def presenter_toggle(container=None) -> None:
    target = container if container is not None else st.container()
    st.session_state["presenter.toggle"] = is_presenting()
    target.toggle("Presenter view", key="presenter.toggle", on_change=_toggle,
                  help="Large type for a projector: drills hidden, charts enlarged. Same as ?present=1.")
