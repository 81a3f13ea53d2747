import math

import plotly.graph_objects as go
import streamlit as st

from models.platform import job_scheduler_100k as model
from ui.charts import INK, MUTED, PALETTE, layout_dict, legend_line, sweep_figure
from ui.figures import figure, hline, vline
from ui.event_stepper import event_stepper
from ui.question_page import QuestionPage

page = QuestionPage("job-scheduler-100k")
BUG_KEY = "job-scheduler-100k.sim_bug"
JOB_COLORS = {"A": PALETTE[0], "B": PALETTE[2], "C": PALETTE[5], "D": PALETTE[3], model.URGENT: PALETTE[4]}


@page.chart("scan_vs_jobs")
def scan_vs_jobs(ctx):
    fig = sweep_figure(
        ctx.slug, ctx.params, "jobs",
        {"naive_scan_s_per_tick": "Naive tick: check every job", "indexed_tick_s": "Indexed tick: heaps"},
        title="Scheduler time per tick against the queue length (log-log)", y_title="Seconds per tick",
        log_y=True, n=50,
    )
    budget = ctx.params.tick_s * ctx.params.scan_budget_fraction
    marks = ((ctx.params.tick_s, f"the tick ({ctx.params.tick_s:g} s)", "dash"), (budget, "placement budget", "dot"))
    # Added as dicts (ui/figures.py): add_hline and add_annotation validate the figure's shapes and notes.
    fig.layout.shapes = (*fig.layout.shapes, *(
        hline(y, color=INK if style == "dash" else "#94a3b8", dash=style, width=1.5) for y, _, style in marks))
    # On log axes an annotation's coordinate is given in log10 units (shapes take data units).
    fig.layout.annotations = (*fig.layout.annotations, *(
        dict(x=0, xref="paper", y=math.log10(y), text=text, showarrow=False, xanchor="left", yanchor="bottom",
             font=dict(size=11)) for y, text, _ in marks))
    return fig


@page.chart("loss_vs_write")
def loss_vs_write(ctx):
    fig = sweep_figure(
        ctx.slug, ctx.params, "checkpoint_write_min",
        {"lost_work_without_signal_gpu_hours": "Killed outright: work since last checkpoint",
         "lost_work_with_checkpoint_on_signal_gpu_hours": "Checkpoint on the signal"},
        title="GPU-hours the preemption loses against the checkpoint write time", y_title="GPU-hours",
        n=80, line_shape="linear",
    )
    grace = dict(color="#dc2626", dash="dash", width=1.5)
    fig.layout.shapes = (*fig.layout.shapes, vline(ctx.params.grace_min, **grace))  # a dict: see scan_vs_jobs
    # In the legend: beside the line, the label sat on the signal curve, which climbs there. (A trace
    # added to a built figure is validated: plotly has no unvalidated add_trace.)
    fig.add_trace(legend_line(f"grace period ({ctx.params.grace_min:g} min)", **grace))
    return fig


def _ledger_figure(frame: model.Frame) -> go.Figure:
    """One bar of the ledger (what the scheduler believes) and one of the devices (what is really on them)."""
    c = frame.cluster
    rows = ("Ledger", "On the GPUs")
    traces = []  # plain dicts, not validated (ui/figures.py)
    for job in c.jobs:
        ledger = job.gpus if job.holds else 0
        real = job.gpus if job.state in model.HOLDING else 0
        traces.append(dict(
            type="bar", y=rows, x=[ledger, real], orientation="h", name=f"{job.name} ({job.gpus})",
            marker=dict(color=JOB_COLORS.get(job.name, PALETTE[1]),
                        pattern=dict(shape="/" if job.state == "PREEMPTING" else "")),
            text=[job.name if ledger else "", job.name if real else ""], textposition="inside",
            hovertemplate=f"{job.name}: {job.state}<extra></extra>",
        ))
    traces.append(dict(type="bar", y=rows, x=[c.free, max(0, c.capacity - c.occupied)], orientation="h", name="free",
                       marker=dict(color=MUTED), hovertemplate="free: %{x}<extra></extra>"))
    capacity = dict(color="#dc2626" if frame.overcommitted else INK, width=2, dash="dash")
    traces.append(legend_line(f"capacity {c.capacity}", **capacity))  # beside the line it ran off a phone's screen
    layout = layout_dict("The GPU ledger against the devices (hatched: PREEMPTING, still writing)", "GPUs", "")
    layout.update(barmode="stack", height=300, hovermode="closest", shapes=[vline(c.capacity, **capacity)])
    layout["yaxis"].update(categoryorder="array", categoryarray=list(reversed(rows)))
    layout["xaxis"].update(range=[0, max(c.capacity, c.occupied) * 1.08])
    return figure(traces, layout)


@page.sim("lifecycle")
def lifecycle(ctx):
    p = ctx.params
    st.markdown("##### Step through a preemption, one event at a time")
    bug = st.toggle("Free a victim's GPUs on the signal (the common bug)", key=BUG_KEY,
                    help="The ledger releases GPUs on SIGTERM instead of on exit with a committed checkpoint.")
    frames = model.scenario(p, release_on_signal=bug)
    n = len(frames)
    i = event_stepper(ctx.slug, n)

    frame = frames[i]
    c = frame.cluster
    header = f"**{frame.job}: `{frame.event}`.** " if frame.job else ""
    text = header + frame.message + (f" {frame.note}" if frame.note else "")
    if frame.overcommitted:
        st.error(text + f" **{frame.overcommitted} GPUs are double-booked.**", icon=":material/error:")
    elif not frame.accepted:
        st.warning(text, icon=":material/hourglass_top:")
    else:
        st.info(text, icon=":material/swap_horiz:")
    m = st.columns(4)
    m[0].metric("Ledger: taken", f"{c.allocated} of {c.capacity}", border=True)
    m[1].metric("Really on GPUs", f"{c.occupied}", delta=f"+{frame.overcommitted} over" if frame.overcommitted else None,
                delta_color="inverse", border=True)
    m[2].metric("Ledger: free", f"{c.free}", border=True)
    m[3].metric("Work lost so far (GPU-h)", f"{frame.lost_gpu_hours:,.2f}", border=True)
    st.plotly_chart(_ledger_figure(frame), key=f"{ctx.slug}.sim.ledger", config={"displaylogo": False})
    # A phone scrolls each table sideways; its first column stays in view.
    st.dataframe(
        {"Job": [j.name for j in c.jobs], "GPUs": [j.gpus for j in c.jobs], "State": [j.state for j in c.jobs],
         "Ledger holds its GPUs": ["yes" if j.holds else "no" for j in c.jobs],
         "Processes on its GPUs": ["yes" if j.state in model.HOLDING else "no" for j in c.jobs]},
        hide_index=True, width="stretch", key=f"{ctx.slug}.sim.jobs",
        column_config={"Job": st.column_config.Column(pinned=True)},
    )
    final = frames[-1].lost_gpu_hours
    st.caption(
        f"This run ends with {final:,.2f} GPU-hours of work lost "
        + ("(the victims were killed before their checkpoints committed). " if bug else "(the checkpoint writes). ")
        + "Restarts are not counted here; they cost the same in both versions."
    )
    with st.expander("The transition table (pure data in models/platform/job_scheduler_100k.py)"):
        table = model.BUGGY_TABLE if bug else model.TABLE
        st.dataframe(
            {"From": [t.src for t in table.values()], "Event": [t.event for t in table.values()],
             "To": [t.dst for t in table.values()], "GPUs": [t.gpus for t in table.values()],
             "Why": [t.why for t in table.values()]},
            hide_index=True, width="stretch", key=f"{ctx.slug}.sim.table",
            column_config={"From": st.column_config.Column(pinned=True)},
        )


page.render()
