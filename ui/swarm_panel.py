"""The live swarm panel two pages share (checkpoint-distribution's hosts, model-artifact-distribution's
nodes): a seeded rarest-first swarm run, its finish against the link bound, and peers done over time.
A page says what its peers are called, which step is the bound, and its fourth card and caption."""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Any, Callable

import plotly.graph_objects as go
import streamlit as st

from ui.charts import INK, PALETTE, layout_dict, legend_line
from ui.figures import figure, vline
from ui.sim_panel import run_simulation, seed_input


@dataclass(frozen=True)
class SwarmWords:
    headline: str  # the panel's heading
    peers: str  # what a peer is, capitalised and plural: "Hosts", "Nodes"
    bound_key: str  # the step that bounds the finish
    bound_name: str  # that bound on its metric card, capitalised: "Lower bound"


def swarm_figure(result, step_s: float, bound_s: float, bound_label: str, words: SwarmWords) -> go.Figure:
    """Peers done and uplinks busy at each step of the swarm, against the bound; plain dicts, not
    validated (ui/figures.py)."""
    t = [(i + 1) * step_s for i in range(len(result.completed_per_step))]
    bound = dict(color=INK, dash="dash")
    traces = [
        dict(type="scatter", x=t, y=result.completed_per_step, name=f"{words.peers} holding every chunk",
             line=dict(color=PALETTE[0], width=2.5)),
        dict(type="scatter", x=t, y=[u * 100 for u in result.uplink_utilization], yaxis="y2",
             name="Uplinks busy (%)", line=dict(color=PALETTE[2], width=1.5), opacity=0.7),
        # In the legend: beside the line, the label sat on the busy-uplinks line along the top.
        legend_line(f"{words.bound_name.lower()} {bound_label}", **bound),
    ]
    layout = layout_dict(f"{words.peers} finished over time", "Seconds since the rollout started", words.peers)
    layout["yaxis2"] = dict(title=dict(text="Uplinks busy (%)"), overlaying="y", side="right", range=[0, 105],
                            tickvals=[0, 25, 50, 75, 100], showgrid=False)
    layout["shapes"] = [vline(bound_s, **bound)]
    return figure(traces, layout)


def render_swarm_panel(ctx, model: ModuleType, words: SwarmWords, fourth_card: Callable[[Any], tuple[str, str]],
                       caption: Callable[[Any, int], str]) -> None:
    """The panel: heading, seed, four cards (finish, bound, overhead, the page's own), the chart and the
    page's caption, given the run and the number of chunks simulated."""
    p = ctx.params
    d = ctx.derivation
    st.markdown(words.headline)
    seed = seed_input(ctx.slug)
    result = run_simulation(ctx.slug, p, seed, "Simulating the swarm…")
    step_s = model.sim_step_s(p)
    finish_s = result.finish_steps * step_s
    bound_s = d.value(words.bound_key)
    bound_label = d[words.bound_key].display(hint=False)
    cols = st.columns(4)
    cols[0].metric("Simulated finish", f"{finish_s:,.1f} s" if result.finished else "did not finish", border=True)
    cols[1].metric(words.bound_name, bound_label, border=True)
    cols[2].metric("Overhead", f"{(finish_s / bound_s - 1) * 100:,.1f}%" if result.finished else "-", border=True)
    cols[3].metric(*fourth_card(result), border=True)
    st.plotly_chart(swarm_figure(result, step_s, bound_s, bound_label, words), key=f"{ctx.slug}.sim.swarm.chart")
    st.caption(caption(result, model.sim_chunks(p)))
