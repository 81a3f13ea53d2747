from models.serving.serverless_gpu import COLD_STAGES, SNAPSHOT_STAGES
from ui.charts import INK, layout_dict, sweep_figure
from ui.figures import figure, hline
from ui.question_page import QuestionPage

page = QuestionPage("serverless-gpu")


@page.chart("cold_start_waterfall")
def cold_start_waterfall(ctx):
    d = ctx.derivation
    # Plain dicts, not validated (ui/figures.py): the JSON plotly's add_trace wrote.
    traces = []
    for stages, total_key, total_label, name, color in (
        (COLD_STAGES, "cold_start_s", "Cold start", "Cold chain", "#dc2626"),
        (SNAPSHOT_STAGES, "snapshot_start_s", "Snapshot start", "Snapshot restore", "#16a34a"),
    ):
        prefix = "" if total_key == "cold_start_s" else "Snapshot: "
        xs = [prefix + label for _, label in stages] + [total_label]
        ys = [float(d.value(k)) for k, _ in stages] + [float(d.value(total_key))]
        traces.append(dict(
            type="waterfall", x=xs, y=ys, measure=["relative"] * len(stages) + ["total"], name=name,
            text=[d[k].display(hint=False) for k, _ in stages] + [d[total_key].display(hint=False)],
            # Upright and never shrunk: plotly shrinks a label to its bar's width, and a phone's
            # bars are 20 px wide; an upright label is narrower than that.
            textposition="outside", textangle=-90, constraintext="none", cliponaxis=False,
            connector=dict(line=dict(color="#94a3b8", width=1)),
            increasing=dict(marker=dict(color=color)), totals=dict(marker=dict(color=INK)),
        ))
    layout = layout_dict("Where the seconds go: the cold chain and the snapshot restore", "", "seconds")
    layout.update(hovermode="closest", height=420, waterfallgap=0.3)
    # Head room for the upright labels over the tallest bars (their length in pixels is fixed).
    layout["yaxis"]["range"] = [0, 1.35 * max(float(d.value("cold_start_s")), float(d.value("snapshot_start_s")))]
    return figure(traces, layout)


page.sweep("pool_vs_scaleups", "scale_ups_per_min",
    {"warm_pool_slots": "Booted pool, cold refills", "warm_pool_slots_with_snapshot": "Idle slots with snapshots"},
    title="Idle slots against the scale-up rate (log-log)", y_title="slots", log_y=True, n=80,
    line_shape="hv")

page.sweep("tail_pools_vs_catalog", "catalog_models",
    {"tail_own_pool_slots": "A pool per tail model", "tail_shared_pool_slots": "One shared pool of empty GPUs"},
    title="Idle slots for the long tail against the models deployed (log-log)", y_title="slots", log_y=True,
    n=80, line_shape="hv")


@page.chart("margin_vs_lifetime")
def margin_vs_lifetime(ctx):
    return sweep_figure(
        ctx.slug, ctx.params, "instance_billed_s",
        {"gross_margin": "Gross margin, cold refills", "gross_margin_with_snapshot": "Gross margin, snapshot refills",
         "billed_fraction": "Billed fraction, cold boot", "billed_fraction_with_snapshot": "Billed fraction, snapshot"},
        title="Margin and billed fraction against an instance's billed life", y_title="%", n=80,
        lo=30, shapes=[hline(0, color="#64748b", width=1)],
        # Very short lives drive the margin far below zero; the interesting band is around break-even.
        layout={"yaxis": {"range": [-100, 100]}},
    )


page.render()
