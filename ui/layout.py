"""Where a question page puts its scenario: beside the page on a wide screen, in it on a phone.

One widget tree, two layouts, chosen by CSS width alone (the server does not know the screen):

- From 1024 px wide, the scenario panel (`st-key-scenario`: preset, knobs, view controls) is a
  fixed column at the left, under the top navigation bar, scrolling on its own. The first knob
  sits about 200 px from the top, beside the metric cards it moves, and stays in view while the
  page's live prose scrolls past. (Streamlit's own sidebar held the 38 page links above the
  knobs: the first slider started 2,300 px down a 4,000 px sidebar.)
- Below 1024 px the panel stays where it is in the page, under the metric cards, and the cards
  stick to the top of the screen while the panel is in view (compact, two to a row), so a thumb
  on a slider and the number it moves are on screen together. Streamlit's sidebar would cover
  the page on a phone; this panel never does. Past the panel, the cards scroll away with it.

Metric cards wrap a long value or label onto a second line instead of cutting it with an
ellipsis, at every width. Diagram labels take the page's text colour.

The sheet is a constant: the only HTML this app writes besides the presenter's (see
ui/presenter.py); nothing anyone typed goes into it. Colours are translucent greys over the
theme's own background, so the light and the dark theme both read.
"""

from __future__ import annotations

import streamlit as st

WIDE_PX = 1024  # below this the panel is in the page and the metric cards stick

_LAYOUT_CSS = """
<style>
/* Metric cards: a grid of equal cells; a long value or label wraps, it is never cut. */
.st-key-metrics { display: grid !important; grid-template-columns: repeat(auto-fill, minmax(15rem, 1fr));
  gap: 0.75rem; }
[data-testid="stMainBlockContainer"]:has(.st-key-metrics) { padding-top: 4.5rem !important; }
.st-key-metrics > div { width: auto !important; min-width: 0 !important; }
[data-testid="stMetricValue"] .stMarkdownEllipsis, [data-testid="stMetricValue"] p,
[data-testid="stMetricLabel"] .stMarkdownEllipsis, [data-testid="stMetricLabel"] p {
  white-space: normal !important; overflow: visible !important; text-overflow: clip !important;
  overflow-wrap: anywhere; }
[data-testid="stMetricValue"] { font-size: clamp(1.35rem, 2.1vw, 2.1rem) !important; line-height: 1.2 !important; }
/* Diagram text in the page's own text colour (plotly's theme grey is too faint for box labels),
   so it reads at full contrast on the light and the dark theme alike. */
[class*="-diagram-"] .annotation-text { fill: currentColor !important; }
/* A link that names a drill by its question is a sentence: it wraps. */
[data-testid="stPageLink"] p, [data-testid="stPageLink"] span { white-space: normal !important;
  overflow: visible !important; text-overflow: clip !important; }

@media (min-width: 1024px) {
  .st-key-scenario { position: fixed !important; left: 0; top: 3.75rem; bottom: 0; width: 21rem !important;
    overflow-y: auto; overscroll-behavior: contain; padding: 1.25rem 1.25rem 3rem 1.5rem;
    background: rgba(128, 128, 128, 0.07); border-right: 1px solid rgba(128, 128, 128, 0.22); z-index: 99; }
  [data-testid="stMainBlockContainer"]:has(.st-key-scenario) { padding-left: 24rem !important;
    padding-right: 3rem !important; }
}

@media (max-width: 1023.98px) {
  /* The cards need an opaque background to stick over the page: the theme's own, inherited down. */
  [data-testid="stApp"] :has(.st-key-metrics) { background-color: inherit; }
  [data-testid="stLayoutWrapper"]:has(> .st-key-metrics) { position: sticky; top: 3.75rem; z-index: 90;
    background-color: inherit; padding: 0.25rem 0 0.5rem 0; }
  .st-key-scenario { border: 1px solid rgba(128, 128, 128, 0.3); border-radius: 0.5rem; padding: 0.75rem 1rem; }
}

@media (max-width: 640px) {
  .st-key-metrics { grid-template-columns: repeat(2, minmax(0, 1fr)); gap: 0.35rem; }
  .st-key-metrics [data-testid="stMetric"] { padding: 0 !important; }
  .st-key-metrics [data-testid="stMetric"] > div { padding: 0.3rem 0.5rem !important; }
  [data-testid="stMain"] h1 { font-size: 1.75rem !important; }
  .st-key-metrics [data-testid="stMetricValue"] { font-size: 1.05rem !important; }
  .st-key-metrics [data-testid="stMetricLabel"] p { font-size: 0.75rem !important; }
  [data-testid="stMainBlockContainer"] { padding-left: 0.75rem !important; padding-right: 0.75rem !important; }
}
</style>
"""


def apply_layout() -> None:
    """The app's style sheet, once per run from app.py (a constant: see the module docstring).
    Its question-page rules select the scenario's keyed containers, so other pages are untouched."""
    st.markdown(_LAYOUT_CSS, unsafe_allow_html=True)
