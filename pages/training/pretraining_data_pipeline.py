from models.training import pretraining_data_pipeline as model
from ui.charts import PALETTE, layout_dict, sweep_figure
from ui.figures import figure
from ui.question_page import QuestionPage

page = QuestionPage("pretraining-data-pipeline")


@page.chart("core_hours_by_stage")
def core_hours_by_stage(ctx):
    d = ctx.derivation
    names = [model.STAGE_NAMES[s] for s in model.STAGES]
    hours = [d.value(f"{s}_core_hours") for s in model.STAGES]
    bars = dict(  # a plain dict, not validated (ui/figures.py)
        type="bar", x=names, y=hours,
        marker=dict(color=[PALETTE[1] if h >= sorted(hours)[-2] else PALETTE[0] for h in hours]),
        # Short labels ("417k"): plotly shrinks a label to its bar's width, and "416,667 core-hours"
        # over a phone's 50 px bar came out a few pixels high. The axis says core-hours.
        texttemplate="%{y:.3~s}", textposition="outside",
    )
    layout = layout_dict("Where the time goes: core-hours per stage (log scale)", "Stage", "Core-hours", log_y=True)
    layout.update(hovermode="closest", showlegend=False)
    return figure([bars], layout)


@page.chart("cores_vs_keep")
def cores_vs_keep(ctx):
    p = ctx.params
    return sweep_figure(
        ctx.slug, p, "keep_end_to_end",
        {"extract_cores": "Extraction cores", "dedup_cores": "Dedup cores"},
        title="Cores to finish each stage in the window against the end-to-end keep rate (log-log)",
        y_title="Cores", x_scale=100, log_y=True, n=80, hi=min(p.filter_keep * p.dedup_keep, 0.2),
    )


page.render()
