import math

from ui.charts import sweep_figure
from ui.figures import hline, vline
from ui.question_page import QuestionPage

page = QuestionPage("video-generation")


def _wait_line(wait_s) -> tuple[dict, dict]:
    # Plotly places annotations on a log axis in log10 units (shapes it converts itself).
    return (hline(wait_s, color="#16a34a", dash="dash", width=1.5),
            dict(x=0, xref="paper", y=math.log10(wait_s), text=f"acceptable wait {wait_s:g} s", showarrow=False,
                 xanchor="left", yanchor="bottom", font=dict(size=11, color="#16a34a")))


@page.chart("wall_vs_height")
def wall_vs_height(ctx):
    wait, wait_note = _wait_line(ctx.params.wait_target_s)
    heights = (480, 720)
    return sweep_figure(
        ctx.slug, ctx.params, "height_px",
        {"wall_time_s": "Wall time per video", "gpu_seconds_per_request": "GPU-seconds per video"},
        title="Time per video against resolution (height in pixels, log y)", y_title="seconds", n=120, log_y=True,
        hi=1088,
        shapes=[wait, *(vline(h, color="#94a3b8", dash="dot", width=1) for h in heights)],
        annotations=[wait_note, *(dict(x=h, y=0, yref="paper", text=f"{h}p", showarrow=False, xanchor="left",
                                       xshift=3, yanchor="bottom", font=dict(size=11, color="#64748b"))
                                  for h in heights)],
    )


page.sweep("flops_split_vs_height", "height_px",
    {"linear_flops_per_pass": "Matmuls through the weights (∝ tokens)",
     "attention_flops_per_pass": "Full attention (∝ tokens²)"},
    title="FLOP per pass, split, against resolution (log y)", y_title="FLOP per pass", n=120, log_y=True, hi=1088)


@page.chart("wall_vs_frames")
def wall_vs_frames(ctx):
    wait, wait_note = _wait_line(ctx.params.wait_target_s)
    return sweep_figure(
        ctx.slug, ctx.params, "frames",
        {"wall_time_s": "Wall time per video", "wall_time_720p_s": "Same clip at 720p"},
        title="Wall time against clip length (frames, log y)", y_title="seconds", n=60, hi=241, log_y=True,
        shapes=[wait], annotations=[wait_note],
    )


page.render()
