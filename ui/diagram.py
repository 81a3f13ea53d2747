"""Box-and-arrow diagrams drawn with plotly shapes: the "shape" of a design at a glance.

    box_diagram(
        [Box("gw", "Gateway", "auth, tier, idempotency key", 0, 0), Box("q", "Queue", "", 1, 0)],
        [Arrow("gw", "q", "2,000 req/s")],
        title="Request path",
    )

Coordinates are grid cells (column, row); row 0 is the top. Labels may carry live numbers:
pass strings rendered from the derivation, never typed constants.

Text in a plotly figure keeps its size in pixels while the figure narrows, and Streamlit draws
every chart exactly as wide as its column: a four-column diagram squeezed onto a 390 px phone
piled its boxes' text into each other. Plotly can neither reflow a drawing nor scale its text,
so a diagram has a minimum scale instead: a column is never narrower than COL_PX. A wide screen
spreads the diagram over its width; a narrow one shows its left part, which is where its flow
starts, and the rest is dragged into view sideways (only the x axis pans; as on every plotly
chart that drags, a finger on the drawing does not scroll the page). Text is wrapped to fit a
box at the minimum scale, so it fits at every width. (A drawing wider than the screen in a
container that scrolls would need the page's style sheet; plotly's own range does it here.)

Colours read on the light and on the dark theme: translucent fills, mid-tone lines, and text in
the theme's own colour (st.plotly_chart's theme supplies it and the backgrounds).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import plotly.graph_objects as go

from models.content import PLACEHOLDER, ContentError
from ui.figures import figure, split_title, title as title_dict
from ui.prose import value_text

COL_PX = 200  # a grid column at the minimum scale: five columns still fit a 1440 px screen
BOX_W = 0.72  # of a column; the rest is the gap an arrow's label sits in
ROW_GAP_PX = 64  # between two rows of boxes, for a label beside a vertical arrow
INSET_PX = 8  # text to box edge
TITLE_PX, TEXT_PX = 12, 11  # a box's title and its other lines, arrow labels
LINE_EM = 1.3  # plotly's line height
EM_PER_CHAR = 0.52  # Streamlit's font averages ~0.44 em a character: the estimate errs wide
PAD_PX = 8  # around the drawing, inside margins of 0: two columns fit a 390 px phone

TONES = {"default": (37, 99, 235), "accent": (217, 119, 6), "muted": (100, 116, 139), "danger": (220, 38, 38)}
LINE = {tone: f"rgb{rgb}" for tone, rgb in TONES.items()}
FILL = {tone: f"rgba{(*rgb, 0.13)}" for tone, rgb in TONES.items()}
ARROW = "#7c8798"  # 3.6:1 on white, 5.2:1 on the dark theme


@dataclass(frozen=True)
class Box:
    id: str
    title: str
    detail: str
    col: float
    row: float
    tone: str = "default"


@dataclass(frozen=True)
class Arrow:
    src: str
    dst: str
    label: str = ""
    dashed: bool = False
    offset: float = 0.0  # columns to the side, for two arrows joining the same boxes both ways


def wrap(text: str, width_px: float, size: int) -> list[str]:
    """Word wrap to `width_px`, each part between <br>s on as few lines as it needs and those lines
    of even length ("Scheduler / (every step)", not "Scheduler (every / step)")."""
    most = max(6, int(width_px / (EM_PER_CHAR * size)))
    lines: list[str] = []
    for part in text.split("<br>"):
        words = part.split()
        n = len(_fill(words, most))
        longest = min(max(map(len, words), default=1), most)
        per_line = next(w for w in range(longest, most + 1) if len(_fill(words, w)) == n)
        lines += _fill(words, per_line)
    return lines


def _fill(words: list[str], per_line: int) -> list[str]:
    """Greedy: as many words on each line as fit; a word longer than a line has a line to itself."""
    lines = [""]
    for word in words:
        if lines[-1] and len(lines[-1]) + 1 + len(word) > per_line:
            lines.append(word)
        else:
            lines[-1] = f"{lines[-1]} {word}" if lines[-1] else word
    return lines


def _box_lines(b: Box) -> tuple[list[str], list[str]]:
    inner = BOX_W * COL_PX - 2 * INSET_PX
    facts = b.detail.replace(" · ", "<br>").replace("; ", "<br>") if b.detail else ""
    return wrap(b.title, inner / 1.08, TITLE_PX), wrap(facts, inner, TEXT_PX) if facts else []  # bold is wider


def _edge_point(box: Box, toward: Box, half_w: float, half_h: float) -> tuple[float, float]:
    """Where the segment from box's centre toward another box leaves box's rectangle."""
    dx, dy = toward.col - box.col, -(toward.row - box.row)
    if dx == 0 and dy == 0:
        return box.col, -box.row
    sx = half_w / abs(dx) if dx else float("inf")
    sy = half_h / abs(dy) if dy else float("inf")
    s = min(sx, sy)
    return box.col + dx * s, -box.row + dy * s


def box_diagram(boxes: list[Box], arrows: list[Arrow], *, title: str = "", height: int | None = None) -> go.Figure:
    """`height` (px) is a minimum: rows move apart to fill it, boxes keep the height their text needs."""
    # Shapes and annotations are collected first and handed to plotly once: adding them one at a
    # time re-validates (and copies) the whole list on every call, which made a diagram cost
    # ~70 ms per rerun.
    by_id = {b.id: b for b in boxes}
    lines = {b.id: _box_lines(b) for b in boxes}
    text_px = max(len(t) * TITLE_PX + len(d) * TEXT_PX for t, d in lines.values()) * LINE_EM
    box_px = max(64.0, text_px + 2 * INSET_PX)
    labels = {a: wrap(a.label, _label_width(a, by_id), TEXT_PX) if a.label else [] for a in arrows}
    label_px = max((len(v) * TEXT_PX * LINE_EM for a, v in labels.items() if by_id[a.src].row != by_id[a.dst].row),
                   default=0)
    cols, rows = [b.col for b in boxes], [b.row for b in boxes]
    margin_t = (58 if split_title(title)[1] else 34) if title else 10  # title (+ subtitle) lines; automargin backs it
    fixed_px = box_px + 2 * PAD_PX + margin_t + 10  # the height besides the steps between rows
    row_px = max(box_px + max(ROW_GAP_PX, label_px + 24),
                 ((height or 0) - fixed_px) / max(max(rows) - min(rows), 1))
    span = max(rows) - min(rows) + (box_px + 2 * PAD_PX) / row_px  # the drawing's height, in rows
    half_w, half_h = BOX_W / 2, box_px / row_px / 2

    shapes: list[dict] = []
    notes: list[dict] = []
    for b in boxes:
        shapes.append(dict(type="rect", x0=b.col - half_w, x1=b.col + half_w, y0=-b.row - half_h,
                           y1=-b.row + half_h, line=dict(color=LINE[b.tone], width=2),
                           fillcolor=FILL[b.tone], layer="below"))
        head, facts = lines[b.id]
        text = "<br>".join(f"<b>{t}</b>" for t in head)
        if facts:
            text += f"<br><span style='font-size:{TEXT_PX}px'>" + "<br>".join(facts) + "</span>"
        notes.append(dict(x=b.col, y=-b.row, text=text, showarrow=False, font=dict(size=TITLE_PX), align="center"))
    right = max(cols) + half_w
    for a in arrows:
        src, dst = by_id[a.src], by_id[a.dst]
        x0, y0 = _edge_point(src, dst, half_w, half_h)
        x1, y1 = _edge_point(dst, src, half_w, half_h)
        x0, x1 = x0 + a.offset, x1 + a.offset
        tail_x, tail_y = x0, y0
        if a.dashed:  # plotly's arrows cannot be dashed: a dashed shaft, and the head on the last 14 px
            shapes.append(dict(type="line", x0=x0, y0=y0, x1=x1, y1=y1, line=dict(color=ARROW, width=1.8, dash="dash")))
            head = min(0.5, 14 / max(1.0, math.hypot((x1 - x0) * COL_PX, (y1 - y0) * row_px)))
            tail_x, tail_y = x1 - (x1 - x0) * head, y1 - (y1 - y0) * head
        notes.append(dict(x=x1, y=y1, ax=tail_x, ay=tail_y, xref="x", yref="y", axref="x", ayref="y",
                          showarrow=True, arrowhead=3, arrowsize=1.2, arrowwidth=1.8, arrowcolor=ARROW, text=""))
        if labels[a]:
            note, reach = _label(a, labels[a], (x0 + x1) / 2, (y0 + y1) / 2, y1 - y0, x1 - x0)
            notes.append(note)
            right = max(right, reach)
    x_lo, x_hi = min(cols) - half_w - PAD_PX / COL_PX, right + PAD_PX / COL_PX
    y_hi = -min(rows) + half_h + PAD_PX / row_px
    layout = dict(
        shapes=shapes, annotations=notes,
        # The x range given is narrower than any screen: plotly widens it to keep COL_PX pixels a
        # column (scaleanchor), from the left edge (constraintoward), up to the whole drawing
        # (maxallowed), past which it stretches the drawing to the width instead.
        xaxis=dict(visible=False, range=[x_lo, x_lo + 1], minallowed=x_lo, maxallowed=x_hi,
                   scaleanchor="y", scaleratio=COL_PX / row_px, constrain="range", constraintoward="left"),
        yaxis=dict(visible=False, range=[y_hi - span, y_hi], fixedrange=True),
        **({"title": title_dict(title)} if title else {}),
        height=int(round(span * row_px)) + margin_t + 10,
        margin=dict(l=0, r=0, t=margin_t, b=10),
        showlegend=False, dragmode="pan",
    )
    return figure([], layout)


def _label_width(a: Arrow, by_id: dict[str, Box]) -> float:
    """A label beside a vertical or slanted arrow may use most of a column; one over a horizontal
    arrow stays inside the gap between the boxes, wrapped to as many lines as it needs."""
    src, dst = by_id[a.src], by_id[a.dst]
    if src.row == dst.row:
        return (abs(dst.col - src.col) - BOX_W) * COL_PX - 8
    return COL_PX * 0.9


def _label(a: Arrow, text: list[str], x: float, y: float, rise: float, run: float) -> tuple[dict, float]:
    """The label's annotation, beside its arrow and never across it, and how far right it reaches."""
    width = max(len(t) for t in text) * EM_PER_CHAR * TEXT_PX / COL_PX  # in columns
    base = dict(x=x, y=y, text="<br>".join(text), showarrow=False, font=dict(size=TEXT_PX))
    if abs(rise) < 1e-9:  # horizontal: above the shaft
        return dict(base, yanchor="bottom", yshift=3), x + width / 2
    on_right = a.offset >= 0  # of the two arrows of a pair, each label on its outer side
    # Beside the middle of the shaft: below it where the shaft climbs toward the label, above it
    # where it falls, so a slanted arrow does not cross its own label.
    toward = run if on_right else -run
    yanchor = "middle" if abs(run) < 1e-9 else ("top" if (rise > 0) == (toward > 0) else "bottom")
    note = dict(base, xanchor="left" if on_right else "right", xshift=6 if on_right else -6, yanchor=yanchor)
    return note, x + width + 6 / COL_PX if on_right else x


def fill(template: str, derivation, params, where: str = "") -> str:
    """A diagram's text with every placeholder read live, plain (no Markdown bold: a plotly
    annotation would print the asterisks), a step shown as its card shows it (no "≈" hint)."""
    def sub(m):
        name, unit = m.group(1), m.group(2)
        if name in derivation:
            return derivation[name].display(unit, hint=False)
        try:
            return value_text(name, unit, derivation, params)
        except KeyError:
            raise ContentError(f"{where}: unknown placeholder {{{{{name}}}}} (neither a step nor a knob)") from None

    return PLACEHOLDER.sub(sub, template)


def content_diagram(spec, derivation, params) -> go.Figure:
    """A `[[diagrams]]` table of a content file (models/content.py), drawn at this scenario."""
    where = f"diagram '{spec.name}'"
    boxes = [Box(b.id, fill(b.title, derivation, params, where), fill(b.detail, derivation, params, where),
                 b.col, b.row, b.tone) for b in spec.boxes]
    arrows = [Arrow(a.src, a.dst, fill(a.label, derivation, params, where), a.dashed, a.offset) for a in spec.arrows]
    return box_diagram(boxes, arrows, title=fill(spec.title, derivation, params, where), height=spec.height)
