"""Box-and-arrow diagrams drawn with plotly shapes: the "shape" of a design at a glance.

    box_diagram(
        [Box("gw", "Gateway", "auth, tier, idempotency key", 0, 0), Box("q", "Queue", "", 1, 0)],
        [Arrow("gw", "q", "2,000 req/s")],
        title="Request path",
    )

Coordinates are grid cells (column, row); row 0 is the top. Labels may carry live numbers:
pass strings rendered from the derivation, never typed constants.
"""

from __future__ import annotations

from dataclasses import dataclass

import plotly.graph_objects as go

from ui.figures import figure

BOX_W, BOX_H = 0.74, 0.66
FILL = {"default": "#eff6ff", "accent": "#fef3c7", "muted": "#f1f5f9", "danger": "#fee2e2"}
LINE = {"default": "#2563eb", "accent": "#d97706", "muted": "#64748b", "danger": "#dc2626"}


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


def _edge_point(box: Box, toward: Box) -> tuple[float, float]:
    """Where the segment from box's centre toward another box leaves box's rectangle."""
    dx, dy = toward.col - box.col, -(toward.row - box.row)
    if dx == 0 and dy == 0:
        return box.col, -box.row
    sx = (BOX_W / 2) / abs(dx) if dx else float("inf")
    sy = (BOX_H / 2) / abs(dy) if dy else float("inf")
    s = min(sx, sy)
    return box.col + dx * s, -box.row + dy * s


def box_diagram(boxes: list[Box], arrows: list[Arrow], *, title: str = "", height: int | None = None) -> go.Figure:
    # Shapes and annotations are collected first and handed to plotly once: adding them one at a
    # time re-validates (and copies) the whole list on every call, which made a diagram cost
    # ~70 ms per rerun.
    by_id = {b.id: b for b in boxes}
    shapes: list[dict] = []
    notes: list[dict] = []
    for b in boxes:
        shapes.append(dict(type="rect", x0=b.col - BOX_W / 2, x1=b.col + BOX_W / 2, y0=-b.row - BOX_H / 2,
                           y1=-b.row + BOX_H / 2, line=dict(color=LINE[b.tone], width=2),
                           fillcolor=FILL[b.tone], layer="below"))
        # " · " separates facts; each gets its own line so the text stays inside the box.
        detail = b.detail.replace(" · ", "<br>").replace("; ", "<br>")
        text = f"<b>{b.title}</b>" + (f"<br><span style='font-size:11px'>{detail}</span>" if detail else "")
        notes.append(dict(x=b.col, y=-b.row, text=text, showarrow=False, font=dict(size=13, color="#0f172a"),
                          align="center"))
    for a in arrows:
        src, dst = by_id[a.src], by_id[a.dst]
        x0, y0 = _edge_point(src, dst)
        x1, y1 = _edge_point(dst, src)
        notes.append(dict(x=x1, y=y1, ax=x0, ay=y0, xref="x", yref="y", axref="x", ayref="y",
                          showarrow=True, arrowhead=3, arrowsize=1.2, arrowwidth=1.8,
                          arrowcolor="#94a3b8" if a.dashed else "#334155", text=""))
        if a.label:
            horizontal = abs(y1 - y0) < 1e-9
            notes.append(dict(x=(x0 + x1) / 2, y=(y0 + y1) / 2, text=a.label, showarrow=False,
                              yshift=12 if horizontal else 0, xshift=0 if horizontal else 8,
                              xanchor="center" if horizontal else "left",
                              font=dict(size=11, color="#334155"), bgcolor="rgba(255,255,255,0.85)"))
    cols = [b.col for b in boxes]
    rows = [b.row for b in boxes]
    layout = dict(
        shapes=shapes, annotations=notes,
        xaxis=dict(visible=False, range=[min(cols) - 0.6, max(cols) + 0.6]),
        yaxis=dict(visible=False, range=[-max(rows) - 0.6, -min(rows) + 0.6]),
        title=dict(text=title, x=0, xanchor="left", font=dict(size=15)) if title else None,
        height=height or int(160 * (max(rows) - min(rows) + 1) + (60 if title else 20)),
        margin=dict(l=10, r=10, t=50 if title else 10, b=10),
        plot_bgcolor="white", paper_bgcolor="white", showlegend=False, dragmode=False,
    )
    return figure([], layout)
