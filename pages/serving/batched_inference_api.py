from ui.charts import layout_dict
from ui.figures import figure, vline
from ui.question_page import QuestionPage
from ui.declared_panel import Card

page = QuestionPage("batched-inference-api")

page.sweep("gpus_vs_fill", "batch_fill_fraction",
           {"gpus_at_fill": "GPUs at 100% busy", "gpus_floor": "Floor (full batches)"},
           title="GPUs needed against average batch fill", y_title="GPUs", x_scale=100, line_shape="hv", n=81, lo=0.2)

page.sweep("gpus_vs_timeout", "flush_timeout_ms",
           {"gpus_with_timeout_flush": "GPUs at 100% busy", "gpus_recommended": "GPUs with headroom"},
           title="GPUs needed against the flush timeout (log scale)", y_title="GPUs", line_shape="hv", n=120,
           log_y=True)

page.sweep("latency_vs_timeout", "flush_timeout_ms", {
    "worst_latency_s": "scenario traffic: {{arrival_rps}}",
    "quiet_worst_latency_s": "quiet hours (1/40): {{quiet_arrival_rps}}",
}, title="Worst latency (batching wait + call) against the flush timeout", y_title="ms", y_unit="ms", from_unit="s",
    n=120)


def _ccdf_figure(ctx, r, steps):
    """The runs' share of batches waiting past t against the page's M/D/c curve; a log axis has no 0,
    so a share no batch reached is left out of the line."""
    ms = [t * 1000 for t in r.grid_s]
    traces = [dict(type="scatter", x=ms, y=[y if y > 0 else None for y in r.simulated_ccdf],
                   name="simulated (mean of the runs)", line=dict(color="#2563eb", width=2.5)),
              dict(type="scatter", x=ms, y=[y if y > 1e-6 else None for y in r.exact_ccdf],
                   name="M/D/c, the page's figures", line=dict(color="#64748b", width=2, dash="dash"))]
    layout = layout_dict("Batches waiting longer than t for a GPU", "Wait t (ms)", "P(wait > t), log scale",
                         log_y=True)
    layout["shapes"] = [vline(steps[key].value * 1000, color=color, dash="dot", width=1.5)
                        for key, color in (("queue_wait_p95_s", "#94a3b8"), ("queue_wait_p99_s", "#dc2626"))
                        if steps[key].value < float("inf")]
    return figure(traces, layout)


page.simulation(
    "gpu_queue", title="Simulated: sealed batches queueing for the recommended GPUs",
    message="Simulating the GPU queue…", chart=_ccdf_figure,
    cards=tuple(Card(f"simulated_{key}", against=key) for key in (
        "queue_wait_p95_s", "queue_wait_p99_s", "queue_wait_probability", "queue_wait_mean_s")),
    caption="{{simulated_runs}} of {{simulated_batches_per_run}} each, arriving as a Poisson stream of "
            "{{batch_rate_per_s}} on {{gpus_recommended}}, every call exactly {{call_time_s}}, first come first "
            "served; the first 5% of each run, which starts empty, is dropped. {{simulated_queue_settles}} Lowest to "
            "highest run: p95 {{simulated_queue_wait_p95_lowest_s}} to {{simulated_queue_wait_p95_highest_s}}, p99 "
            "{{simulated_queue_wait_p99_lowest_s}} to {{simulated_queue_wait_p99_highest_s}}, batches that wait "
            "{{simulated_queue_wait_probability_lowest}} to {{simulated_queue_wait_probability_highest}}, mean wait "
            "{{simulated_queue_wait_mean_lowest_s}} to {{simulated_queue_wait_mean_highest_s}}. Dotted lines: the "
            "page's p95 and p99. Change the seed to see other runs.")

page.render()
