import plotly.graph_objects as go
import streamlit as st

from models.platform import job_scheduler_100k as model
from ui.charts import INK, MUTED, PALETTE, layout_dict, legend_line, sweep_figure
from ui.diagram import fill
from ui.event_stepper import event_stepper
from ui.figures import figure, vline
from ui.question_page import QuestionPage

page = QuestionPage("job-scheduler-100k")
BUG_KEY = "job-scheduler-100k.sim_bug"
JOB_COLORS = {"A": PALETTE[0], "B": PALETTE[2], "C": PALETTE[5], "D": PALETTE[3], model.URGENT: PALETTE[4]}

page.sweep("scan_vs_jobs", "jobs",
           {"naive_scan_s_per_tick": "Naive tick: check every job", "indexed_tick_s": "Indexed tick: heaps"},
           title="Scheduler time per tick against the queue length (log-log)", y_title="Seconds per tick",
           log_y=True, n=50, hlines=(("tick_s", "the tick ({{tick_s}})"), ("scan_budget_s", "placement budget")))


@page.chart("loss_vs_write")
def loss_vs_write(ctx):  # a sweep with a mark on its knob's axis: the grace period
    grace = dict(color="#dc2626", dash="dash", width=1.5)
    return sweep_figure(ctx.slug, ctx.params, "checkpoint_write_min", {
        "lost_work_without_signal_gpu_hours": "Killed outright: work since last checkpoint",
        "lost_work_with_checkpoint_on_signal_gpu_hours": "Checkpoint on the signal",
    }, title="GPU-hours the preemption loses against the checkpoint write time", y_title="GPU-hours", n=80,
        shapes=[vline(ctx.params.grace_min, **grace)],
        # In the legend: beside the line, the label sat on the signal curve, which climbs there.
        traces=[legend_line(fill("grace period ({{grace_min}})", ctx.derivation, ctx.params), **grace)])


def _ledger_figure(frame: model.Frame, s) -> go.Figure:
    """One bar of the ledger (what the scheduler believes) and one of the devices (what is really on them);
    `s` is the frame's steps (model.frame_steps)."""
    c = frame.cluster
    rows = ("Ledger", "On the GPUs")
    traces = []  # plain dicts, not validated (ui/figures.py)
    for job in c.jobs:
        ledger = job.gpus if job.holds else 0
        real = job.gpus if job.state in model.HOLDING else 0
        traces.append(dict(
            type="bar", y=rows, x=[ledger, real], orientation="h",
            name=f"{job.name} ({s[f'job_{job.name.lower()}_gpus'].display()})",
            marker=dict(color=JOB_COLORS.get(job.name, PALETTE[1]),
                        pattern=dict(shape="/" if job.state == "PREEMPTING" else "")),
            text=[job.name if ledger else "", job.name if real else ""], textposition="inside",
            hovertemplate=f"{job.name}: {job.state}<extra></extra>",
        ))
    traces.append(dict(type="bar", y=rows, x=[c.free, max(0, c.capacity - c.occupied)], orientation="h", name="free",
                       marker=dict(color=MUTED), hovertemplate="free: %{x}<extra></extra>"))
    capacity = dict(color="#dc2626" if frame.overcommitted else INK, width=2, dash="dash")
    # In the legend: beside the line it ran off a phone's screen.
    traces.append(legend_line(f"capacity {s['frame_capacity_gpus'].display()}", **capacity))
    layout = layout_dict("The GPU ledger against the devices (hatched: PREEMPTING, still writing)", "GPUs", "")
    layout.update(barmode="stack", height=300, hovermode="closest", shapes=[vline(c.capacity, **capacity)])
    layout["yaxis"].update(categoryorder="array", categoryarray=list(reversed(rows)))
    layout["xaxis"].update(range=[0, max(c.capacity, c.occupied) * 1.08])
    return figure(traces, layout)


@page.sim("lifecycle")
def lifecycle(ctx):  # a step-through of a scripted scenario, event by event: no declared panel does that
    st.markdown("##### Step through a preemption, one event at a time")
    bug = st.toggle("Free a victim's GPUs on the signal (the common bug)", key=BUG_KEY,
                    help="The ledger releases GPUs on SIGTERM instead of on exit with a committed checkpoint.")
    frames = model.scenario(ctx.params, release_on_signal=bug)
    frame = frames[event_stepper(ctx.slug, len(frames))]
    s = model.frame_steps(ctx.params, frame)
    text = ((f"**{frame.job}: `{frame.event}`.** " if frame.job else "") + frame.message
            + (f" {frame.note}" if frame.note else ""))
    if frame.overcommitted:
        st.error(f"{text} **{s['frame_overcommitted_gpus'].display()} are double-booked.**", icon=":material/error:")
    elif not frame.accepted:
        st.warning(text, icon=":material/hourglass_top:")
    else:
        st.info(text, icon=":material/swap_horiz:")
    over = f"+{s['frame_overcommitted_gpus'].display()} over" if frame.overcommitted else None
    cols = st.columns(4)
    cols[0].metric(f"Ledger: taken, of {s['frame_capacity_gpus'].display()}", s["frame_allocated_gpus"].display(),
                   border=True)
    cols[1].metric("Really on GPUs", s["frame_occupied_gpus"].display(), delta=over, delta_color="inverse", border=True)
    cols[2].metric("Ledger: free", s["frame_free_gpus"].display(), border=True)
    cols[3].metric("Work lost so far", s["frame_lost_gpu_hours"].display(), border=True)
    st.plotly_chart(_ledger_figure(frame, s), key=f"{ctx.slug}.sim.ledger", config={"displaylogo": False})
    pinned = lambda name: {name: st.column_config.Column(pinned=True)}  # noqa: E731  (a phone scrolls sideways)
    st.dataframe(model.job_rows(frame.cluster), hide_index=True, width="stretch", key=f"{ctx.slug}.sim.jobs",
                 column_config=pinned("Job"))
    final = model.frame_steps(ctx.params, frames[-1])["frame_lost_gpu_hours"].display()
    st.caption(f"This run ends with {final} of work lost "
               + ("(the victims were killed before their checkpoints committed). " if bug
                  else "(the checkpoint writes). ")
               + "Restarts are not counted here; they cost the same in both versions.")
    with st.expander("The transition table (pure data in models/platform/job_scheduler_100k.py)"):
        st.dataframe(model.transition_rows(bug), hide_index=True, width="stretch", key=f"{ctx.slug}.sim.table",
                     column_config=pinned("From"))


page.render()
