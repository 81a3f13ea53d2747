from models.training import pretraining_data_pipeline as model
from ui.charts import PALETTE, layout_dict, sweep_figure
from ui.diagram import Arrow, Box, box_diagram
from ui.figures import figure
from ui.question_page import QuestionPage

page = QuestionPage("pretraining-data-pipeline")


@page.diagram("stages")
def stages(ctx):
    d = ctx.derivation
    show = lambda key, unit=None: d[key].display(unit, hint=False) if unit else d[key].display(hint=False)  # noqa: E731
    boxes = [
        Box("raw", "Raw crawl", f"{show('raw_PB')} of WARC · keep {ctx.params.keep_end_to_end:.1%} end to end", 0, 0, "muted"),
        Box("extract", "Extract", f"{show('extract_input_GBps')} in · {show('extract_cores')}", 1, 0, "accent"),
        Box("filter", "Filter", f"{show('filter_input_GBps', 'MB/s')} in · keeps {ctx.params.filter_keep:.0%}", 2, 0),
        Box("dedup", "Dedup (global)", f"{show('dedup_input_GBps', 'MB/s')} in · {show('dedup_cores')}", 3, 0, "accent"),
        Box("tokenize", "Tokenize", f"{show('tokenize_input_GBps', 'MB/s')} in · {show('bytes_per_token')} per id", 3, 1),
        Box("shard", "Shuffle and shard", f"{show('shard_count')} of {ctx.params.shard_gb:g} GB", 2, 1),
        Box("trainer", "Trainer", f"{show('trainer_read_MBps')} · {show('implied_training_gpus')} · "
            f"{show('training_duration_days')} per pass", 1, 1, "default"),
    ]
    arrows = [
        Arrow("raw", "extract", "read once"),
        Arrow("extract", "filter", show("extracted_text_TB")),
        Arrow("filter", "dedup", show("filtered_text_TB")),
        Arrow("dedup", "tokenize", show("clean_text_TB")),
        Arrow("tokenize", "shard", show("shards_TB")),
        Arrow("shard", "trainer", show("shards_TB")),
    ]
    return box_diagram(boxes, arrows, title="Stages and the bytes at each boundary (each stage has the whole window)")


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
