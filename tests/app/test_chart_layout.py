"""Charts and diagrams that read on a 390 px phone, at 1440 px, and in the dark theme as in the
light one: what the figures must hold for that, checked without a browser (tests/e2e/
test_charts_narrow.py measures the drawn result at 390 px).

The expectations come from how plotly and Streamlit draw, not from the code's own output:
plotly keeps text at its pixel size however narrow the figure, wraps no title, misplaces a title
with a <br> once title.automargin is on, and labels the ticks between two decades of a log axis
with bare digits unless the axis has a tickformat; st.plotly_chart's theme colours the text and
the backgrounds of any figure that does not set its own.
"""

from __future__ import annotations

import base64
import json
import math
import re

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import ui.figures
from models.registry import written
from ui.charts import INK, LEGEND, MUTED, PALETTE, layout_dict, sweep_figure
from ui.diagram import ARROW, COL_PX, FILL, LINE, Arrow, Box, box_diagram, wrap
from ui.figures import BREAKS, SUBTITLE_CHARS, TITLE_CHARS, figure, log_ticks, split_title

WHITE, DARK = "#ffffff", "#0e1117"  # the light theme's background and Streamlit's dark one
DARK_TEXT = {"#0f172a", "#1e293b", "#334155", "#475569"}  # near-black: unreadable on the dark theme


def _luminance(colour: str) -> float:
    r, g, b = _rgb(colour)
    lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in (r / 255, g / 255, b / 255)]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def _rgb(colour: str) -> tuple[int, int, int]:
    if colour.startswith("#"):
        return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)
    r, g, b = (int(float(v)) for v in re.findall(r"[\d.]+", colour)[:3])
    return r, g, b


def _contrast(a: str, b: str) -> float:
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def _alpha(colour: str) -> float:
    m = re.match(r"rgba\(([^)]*)\)", colour.replace(" ", ""))
    return float(m.group(1).split(",")[3]) if m else 1.0


# --- every figure the 38 pages draw, once -------------------------------------------------------


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> tuple[dict[str, list[dict]], list[str]]:
    """Every figure the 38 pages send at their seed scenario, and every title as a page wrote it."""
    asked: list[str] = []

    def recording(text: str) -> tuple[str, str]:
        asked.append(text)
        return split(text)

    split = ui.figures.split_title
    out = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("WALKTHROUGHS_DB", str(tmp_path_factory.mktemp("db") / "apptest.duckdb"))
        mp.setattr(ui.figures, "split_title", recording)
        for q in written():
            at = AppTest.from_file(str(q.page_path), default_timeout=30).run()
            assert not at.exception, (q.slug, [e.value for e in at.exception])
            out[q.slug] = [json.loads(el.proto.spec) for el in at.get("plotly_chart")]
    return out, asked


@pytest.fixture(scope="module")
def page_figures(pages) -> dict[str, list[dict]]:
    return pages[0]


def _is_diagram(fig: dict) -> bool:
    return not fig.get("data") and any(s.get("type") == "rect" for s in fig["layout"].get("shapes", []))


def _numbers(array) -> list[float]:
    """A trace's x or y as sent: a list, or plotly's base64 encoding of a numpy array."""
    if isinstance(array, dict) and "bdata" in array:
        return np.frombuffer(base64.b64decode(array["bdata"]), dtype=array["dtype"]).ravel().tolist()
    return [v for v in array or [] if isinstance(v, (int, float))]


def _titles(fig: dict) -> tuple[str, str]:
    t = fig["layout"].get("title") or {}
    return t.get("text") or "", (t.get("subtitle") or {}).get("text") or ""


# --- the shared layout --------------------------------------------------------------------------


def test_the_legend_sits_under_the_title_on_rows_of_its_own():
    """Title in the container's top margin with automargin, legend anchored to the plot's top:
    plotly reserves the title's height above everything the plot pushes into the margin, so a
    legend that wraps onto three rows on a phone moves the plot down, never onto the title. (The
    old layout put a one-row legend at y=1 right-aligned under a left-aligned title: on a phone
    it wrapped leftwards over the title.)"""
    layout = layout_dict("Time to reach every host (log-log)", "Hosts", "Seconds")
    t, legend = layout["title"], layout["legend"]
    assert (t["yref"], t["y"], t["yanchor"], t["automargin"]) == ("container", 1, "top", True)
    assert legend == LEGEND
    assert legend.get("yref", "paper") == "paper" and legend["y"] == 1 and legend["yanchor"] == "bottom"
    assert legend["orientation"] == "h" and legend["x"] == 0 and legend["xanchor"] == "left"
    assert layout["margin"]["t"] <= 20, "a fixed top margin would leave a gap on wide screens: automargin sizes it"


def test_a_long_title_becomes_a_title_and_a_subtitle_that_each_fit_a_phone():
    text = "Chance an allocation holds at least one bad node, against its size (log x)"
    layout = layout_dict(text, "", "")
    assert layout["title"]["text"] == "Chance an allocation holds at least one bad node"
    assert layout["title"]["subtitle"]["text"] == "against its size (log x)"
    assert "<br>" not in layout["title"]["text"]
    assert split_title("Short title") == ("Short title", "")
    # never inside parentheses
    assert split_title("KV parked per tier (GB, log scale; dashed: capacity)") == \
        ("KV parked per tier", "(GB, log scale; dashed: capacity)")


def test_every_page_title_fits_a_phone_and_is_cut_at_a_natural_break(pages):
    """48 bold characters at 15 px and 58 at 12 px fit the 366 px a phone gives a chart; a title
    cut at a plain space ("... and the preemption / path, with ...") reads badly: shorten it."""
    figures, asked = pages
    assert len(asked) > 150  # every chart and diagram the pages draw has a title
    bad = []
    for text in set(asked):
        head, rest = split_title(text)
        after = text[len(head):]
        natural = not rest or head.endswith("?") or any(after.startswith(sep) for sep in BREAKS)
        if "<br>" in text or len(head) > TITLE_CHARS or len(rest) > SUBTITLE_CHARS or not natural:
            bad.append((head, rest))
    assert not bad, bad
    for figs in figures.values():
        for fig in figs:
            head, rest = _titles(fig)
            assert len(head) <= TITLE_CHARS and len(rest) <= SUBTITLE_CHARS, (head, rest)


def test_every_log_axis_prints_readable_ticks(page_figures):
    """Without a tickformat plotly labels 2x and 5x a decade with bare digits: "10k 5 2 1000 5 2 100".
    SI suffixes read well from 1 up; below 1 they print 0.5 as "500m", so those axes use decimals."""
    seen = 0
    for slug, figs in page_figures.items():
        for fig in figs:
            for name, axis in fig["layout"].items():
                if not (name[:5] in ("xaxis", "yaxis") and axis.get("type") == "log"):
                    continue
                seen += 1
                fmt = axis.get("tickformat") or ""
                decades_only = axis.get("dtick") == 1
                assert fmt or decades_only, (slug, name, _titles(fig))
                assert axis.get("dtick") != "D1", (slug, name)  # nine labels a decade
                if fmt == "~s":
                    ref = name[0] + name[5:]
                    values = [v for t in fig["data"] if (t.get(name[0] + "axis") or name[0]) == ref
                              for v in _numbers(t.get(name[0])) if v > 0]  # a log axis draws no zero
                    assert min(values, default=1) >= 1, (slug, name, "SI ticks on data below 1")
    assert seen > 80  # the pages draw some hundred log axes


def test_log_ticks_follow_the_data():
    assert log_ticks([1, 20, 5_000])["tickformat"] == "~s"
    assert log_ticks([0.004, 20])["tickformat"] != "~s"
    # Given a tickformat plotly labels every tick it draws, up to nine a decade: the spacing is set too.
    assert log_ticks([1, 15]).get("dtick") == "D2" and log_ticks([2, 200]).get("dtick") == "D2"
    assert log_ticks([1, 1e6])["dtick"] == 1  # decades: 1-2-5 would be 18 labels
    assert "dtick" not in log_ticks([20, 80])  # less than a decade: plotly's own linear steps
    sweep = sweep_figure("checkpoint-distribution", _params("checkpoint-distribution"), "hosts",
                         {"naive_pull_s": "naive"}, title="t", y_title="s", log_y=True)
    assert sweep.layout.xaxis.type == "log" and sweep.layout.xaxis.tickformat == "~s"  # the knob is a log knob
    assert sweep.layout.yaxis.type == "log" and sweep.layout.yaxis.tickformat
    fig = figure([dict(type="scatter", x=[1, 2], y=[0.001, 1], yaxis="y2")],
                 {"yaxis2": {"type": "log", "overlaying": "y"}, "xaxis": {"type": "log"}})
    assert fig.layout.yaxis2.tickformat == ",~g" and fig.layout.xaxis.tickformat == "~s"


def _params(slug):
    from models.registry import QUESTIONS

    return QUESTIONS[slug].Params()


def test_no_figure_paints_its_own_background_or_dark_text(page_figures):
    """The theme gives every figure its background and text colour; a figure that sets its own
    is a white slab or dark text on the dark theme. Lines and marks must read on both."""
    bad = []
    for slug, figs in page_figures.items():
        for fig in figs:
            layout = fig["layout"]
            for key in ("paper_bgcolor", "plot_bgcolor"):
                if key in layout and _alpha(layout[key]) > 0.2:
                    bad.append((slug, key, layout[key]))
            template = json.dumps(layout.get("template", {}))
            if '"paper_bgcolor": "white"' in template:
                bad.append((slug, "a plotly_white template"))
            text = json.dumps(fig).lower()
            for colour in DARK_TEXT:
                if colour in text:
                    bad.append((slug, _titles(fig)[0], colour))
            for note in layout.get("annotations", []):
                if "bgcolor" in note and _alpha(note["bgcolor"]) > 0.2:
                    bad.append((slug, "an opaque label background", note.get("text")))
    assert not bad, bad


def test_the_shared_colours_read_on_both_themes():
    for colour in (*PALETTE, INK, ARROW, *LINE.values()):
        assert _contrast(colour, WHITE) >= 3 and _contrast(colour, DARK) >= 3, colour
    assert _alpha(MUTED) < 0.5


def test_every_chart_legend_is_the_shared_one(page_figures):
    """A legend moved below the plot (y < 0) lands on the x-axis title at some widths."""
    bad = []
    for slug, figs in page_figures.items():
        for fig in figs:
            legend = fig["layout"].get("legend")
            if fig.get("data") and legend and any(legend.get(k) != v for k, v in LEGEND.items() if k in legend):
                bad.append((slug, _titles(fig)[0], legend))
    assert not bad, bad


# --- diagrams -----------------------------------------------------------------------------------

BOXES = [Box("a", "Clients", "SSE / HTTP2 streams", 0, 0, "muted"),
         Box("b", "Scheduler (every step)", "admit ≤ 54 sequences · chunk 256 prompt tokens", 1, 0),
         Box("c", "KV block manager", "27,999 blocks of 16 tokens · 54 sequences at full context", 1, 1, "accent"),
         Box("d", "Stream buffers", "full: cut the stream", 0, 1, "danger")]
ARROWS = [Arrow("a", "b", "50.5 tokens/s each"), Arrow("b", "c", "blocks"), Arrow("c", "d", "", dashed=True),
          Arrow("d", "a", "tokens")]


def test_a_diagram_sets_no_background_and_no_text_colour():
    layout = box_diagram(BOXES, ARROWS, title="Admission queue to streamed token").to_plotly_json()["layout"]
    assert "paper_bgcolor" not in layout and "plot_bgcolor" not in layout
    for note in layout["annotations"]:
        assert "color" not in note.get("font", {}), note  # the theme's text colour, light or dark
        assert "bgcolor" not in note
    for shape in layout["shapes"]:
        if shape["type"] == "rect":
            assert _alpha(shape["fillcolor"]) <= 0.2, shape["fillcolor"]  # a tint over either background
    assert set(FILL) == set(LINE)


def test_a_diagram_keeps_its_scale_and_pans_sideways_when_the_screen_is_narrow():
    """Plotly widens the x range it is given to keep the x:y pixel ratio (scaleanchor), from the
    left edge, up to maxallowed: with a 1-unit range, a column of the drawing is COL_PX wide on
    any screen narrower than the drawing, and a reader drags the rest into view."""
    fig = box_diagram(BOXES, ARROWS, title="Admission queue to streamed token").to_plotly_json()["layout"]
    x, y = fig["xaxis"], fig["yaxis"]
    assert x["scaleanchor"] == "y" and x["constrain"] == "range" and x["constraintoward"] == "left"
    assert x["range"][1] - x["range"][0] <= 1.0 and x["range"][0] == x["minallowed"]
    plot_h = fig["height"] - fig["margin"]["t"] - fig["margin"]["b"]
    y_px_per_row = plot_h / (y["range"][1] - y["range"][0])
    assert math.isclose(x["scaleratio"] * y_px_per_row, COL_PX, rel_tol=0.02)
    for shape in fig["shapes"]:
        if shape["type"] == "rect":
            assert x["minallowed"] <= shape["x0"] and shape["x1"] <= x["maxallowed"]
            assert y["range"][0] <= shape["y0"] and shape["y1"] <= y["range"][1]
    assert fig["dragmode"] == "pan" and y["fixedrange"] is True


def test_box_text_is_wrapped_to_the_box():
    fig = box_diagram(BOXES, ARROWS).to_plotly_json()["layout"]
    rect = next(s for s in fig["shapes"] if s["type"] == "rect")
    box_px = (rect["x1"] - rect["x0"]) * COL_PX
    for note in fig["annotations"]:
        for line in re.sub(r"<[^>]+>", "\n", note.get("text", "")).split("\n"):
            # at 0.5 em a character, 12 px: what the widest of Streamlit's letters average
            assert len(line) * 0.5 * 12 <= box_px, line
    assert wrap("Scheduler (every step)", 110, 12) == ["Scheduler", "(every step)"]


def test_a_dashed_arrow_is_drawn_dashed():
    layout = box_diagram(BOXES, ARROWS).to_plotly_json()["layout"]
    assert [s["line"].get("dash") for s in layout["shapes"] if s["type"] == "line"] == ["dash"]


def test_every_page_diagram_follows_the_theme_and_keeps_its_scale(page_figures):
    diagrams = [(slug, fig) for slug, figs in page_figures.items() for fig in figs if _is_diagram(fig)]
    assert len(diagrams) >= 38
    for slug, fig in diagrams:
        layout = fig["layout"]
        assert "paper_bgcolor" not in layout and "plot_bgcolor" not in layout, slug
        assert layout["xaxis"].get("scaleanchor") == "y" and layout["dragmode"] == "pan", slug
        assert all("color" not in n.get("font", {}) for n in layout["annotations"]), slug
