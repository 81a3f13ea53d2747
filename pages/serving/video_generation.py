import math

from ui.charts import sweep_figure
from ui.diagram import Arrow, Box, box_diagram
from ui.question_page import QuestionPage

page = QuestionPage("video-generation")


def _wait_line(fig, wait_s):
    # Plotly places annotations on a log axis in log10 units (shapes it converts itself).
    fig.add_hline(y=wait_s, line=dict(color="#16a34a", dash="dash", width=1.5))
    fig.add_annotation(x=0, xref="paper", y=math.log10(wait_s), text=f"acceptable wait {wait_s:g} s",
                       showarrow=False, xanchor="left", yanchor="bottom", font=dict(size=11, color="#16a34a"))


@page.diagram("job_path")
def job_path(ctx):
    d, p = ctx.derivation, ctx.params
    show = lambda key: d[key].display(hint=False)  # noqa: E731
    boxes = [
        Box("client", "Client", "POST → 202 + job id · polls or listens for progress", 0, 1, "muted"),
        Box("api", "Job API", "auth · tier · idempotency key · prompt filter", 1, 0),
        Box("queue", "Durable job queue", f"{show('jobs_in_service')} in service · {show('queue_wait_probability')} wait",
            2, 0, "accent"),
        Box("sched", "Scheduler", f"whole job to one group · {show('gpu_groups')} × {p.sp_degree} GPUs", 3, 0),
        Box("dit", "DiT worker group",
            f"{show('passes_per_request')} over {show('tokens_per_pass')} · {show('wall_time_s')}", 3, 1),
        Box("vae", "VAE decode + encode", "latent → frames → MP4 · output filter", 2, 1),
        Box("store", "Object store / CDN", "signed URL to the finished video", 1, 1, "muted"),
        Box("progress", "Progress store", f"step i / {p.denoising_steps} · {show('progress_events_per_s')} · "
            f"latent checkpoint {show('latent_bytes')}", 2, 2, "accent"),
    ]
    arrows = [
        Arrow("client", "api", f"{p.arrival_rate:g} jobs/s"),
        Arrow("api", "queue", "job"),
        Arrow("queue", "sched"),
        Arrow("sched", "dit", "lease"),
        Arrow("dit", "vae", "latent"),
        Arrow("vae", "store", "video"),
        Arrow("dit", "progress", f"every {show('step_time_s')}", dashed=True),
        Arrow("progress", "client", "SSE / poll", dashed=True),
        Arrow("store", "client", "URL"),
    ]
    return box_diagram(boxes, arrows, title="A video job from request to URL, with this scenario's numbers")


@page.chart("wall_vs_height")
def wall_vs_height(ctx):
    fig = sweep_figure(
        ctx.slug, ctx.params, "height_px",
        {"wall_time_s": "Wall time per video", "gpu_seconds_per_request": "GPU-seconds per video"},
        title="Time per video against resolution (height in pixels, log y)", y_title="seconds", n=120, log_y=True,
        hi=1088,
    )
    _wait_line(fig, ctx.params.wait_target_s)
    for h in (480, 720):
        fig.add_vline(x=h, line=dict(color="#94a3b8", dash="dot", width=1))
        fig.add_annotation(x=h, y=0, yref="paper", text=f"{h}p", showarrow=False, xanchor="left", xshift=3,
                           yanchor="bottom",
                           font=dict(size=11, color="#64748b"))
    return fig


@page.chart("flops_split_vs_height")
def flops_split_vs_height(ctx):
    return sweep_figure(
        ctx.slug, ctx.params, "height_px",
        {"linear_flops_per_pass": "Matmuls through the weights (∝ tokens)",
         "attention_flops_per_pass": "Full attention (∝ tokens²)"},
        title="FLOP per pass, split, against resolution (log y)", y_title="FLOP per pass", n=120, log_y=True, hi=1088,
    )


@page.chart("wall_vs_frames")
def wall_vs_frames(ctx):
    fig = sweep_figure(
        ctx.slug, ctx.params, "frames",
        {"wall_time_s": "Wall time per video", "wall_time_720p_s": "Same clip at 720p"},
        title="Wall time against clip length (frames, log y)", y_title="seconds", n=60, hi=241, log_y=True,
    )
    _wait_line(fig, ctx.params.wait_target_s)
    return fig


page.render()
