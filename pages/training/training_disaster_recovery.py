from ui.charts import INK, sweep_figure
from ui.diagram import Arrow, Box, box_diagram
from ui.question_page import QuestionPage

page = QuestionPage("training-disaster-recovery")


@page.diagram("dr_shape")
def dr_shape(ctx):
    d = ctx.derivation
    p = ctx.params
    show = lambda key: d[key].display(hint=False)  # noqa: E731
    boxes = [
        Box("job", "Primary: the run", f"{p.gpus:,} GPUs · MTBF {show('job_mtbf_h')}", 0, 0),
        Box("burst", "Primary burst tier", f"save {show('checkpoint_TB')} in {show('checkpoint_write_s')} · every {p.interval_min:g} min", 1, 0),
        Box("replica", "Second-site replica", "write-once · last K + milestones · training data", 2, 0, "accent"),
        Box("standby", "Second cluster (warm)", f"{show('second_site_gpus')} · launch {p.launch_min:g} min · load {show('load_from_second_site_s')}", 3, 0),
        Box("control", "Detect → decide", f"{p.detect_min:g} min + {p.decide_min:g} min · fence the primary first", 2, 1, "muted"),
        Box("drill", "Restore drill", f"every {p.drill_every_days:g} days · {p.drill_gpus:,} GPUs · {p.drill_hours:g} h", 1, 1, "muted"),
        Box("rto", "Recovered", f"RPO ≤ {show('rpo_worst_min')} · RTO {show('rto_min')}", 3, 1, "danger"),
    ]
    arrows = [
        Arrow("job", "burst", "snapshot"),
        Arrow("burst", "replica", f"{p.replication_gbps:g} Gb/s · {show('replication_s')}"),
        Arrow("replica", "standby", "load"),
        Arrow("control", "standby", "declare", dashed=True),
        Arrow("drill", "replica", "prove it loads", dashed=True),
        Arrow("standby", "rto", ""),
    ]
    return box_diagram(boxes, arrows, title="Two sites: replication sets the RPO, the warm second cluster sets the RTO")


@page.chart("overhead_vs_interval")
def overhead_vs_interval(ctx):
    fig = sweep_figure(
        ctx.slug, ctx.params, "interval_min",
        {
            "total_overhead_fraction": "Total",
            "fraction_lost": "Lost to interruptions",
            "checkpoint_overhead_fraction": "Paused for saves",
        },
        title="Share of the run lost against the checkpoint interval (Young's optimum dashed)",
        y_title="% of the run", y_unit="%", from_unit="1", n=120, lo=5, hi=120,
    )
    young = ctx.derivation.value("young_optimal_interval_min")
    fig.add_vline(x=young, line=dict(color=INK, dash="dash", width=1.5))
    fig.add_annotation(x=young, y=1, yref="paper", text="Young", showarrow=False, xanchor="left", xshift=3,
                       yanchor="top")
    return fig


@page.chart("rpo_vs_link")
def rpo_vs_link(ctx):
    return sweep_figure(
        ctx.slug, ctx.params, "replication_gbps",
        {"rpo_worst_min": "Worst-case RPO", "rpo_mean_min": "Mean RPO"},
        title="Site-loss RPO against the link between the sites (log-log)",
        y_title="Minutes", log_y=True, n=120,
    )


page.render()
