from ui.charts import layout_dict, sweep, sweep_figure, sweep_values
from ui.diagram import Arrow, Box, box_diagram
from ui.figures import figure, vline
from ui.question_page import QuestionPage

page = QuestionPage("batched-inference-api")


@page.diagram("request_path")
def request_path(ctx):
    d = ctx.derivation
    show = lambda key: d[key].display(hint=False)  # noqa: E731
    boxes = [
        Box("clients", "Clients", "retry with an idempotency key", 0, 0, "muted"),
        Box("gw", "Gateway", "auth · tier · rate limits · input checks", 1, 0),
        Box("queue", "Admission queue", "one lane per tier; depth drives shedding", 2, 0, "accent"),
        Box("batcher", "Dispatcher", f"flush at {ctx.params.max_batch_inputs} inputs · or after {show('flush_timeout_s')}", 3, 0),
        Box("gpus", "GPU workers", f"{show('gpus_recommended')} · one {show('call_time_s')} call each", 3, 1),
        Box("demux", "Demultiplexer", "split outputs · output checks · store by key", 2, 1),
    ]
    arrows = [
        Arrow("clients", "gw", f"{d['per_dispatcher_rps'].display() if ctx.params.dispatchers == 1 else ''}"),
        Arrow("gw", "queue", "admitted"),
        Arrow("queue", "batcher", ""),
        Arrow("batcher", "gpus", f"batches of {show('expected_batch_at_flush')}"),
        Arrow("gpus", "demux", ""),
        Arrow("demux", "clients", "replies"),
    ]
    return box_diagram(boxes, arrows, title="The request path, with this scenario's numbers")


@page.chart("gpus_vs_fill")
def gpus_vs_fill(ctx):
    return sweep_figure(
        ctx.slug, ctx.params, "batch_fill_fraction",
        {"gpus_at_fill": "GPUs at 100% busy", "gpus_floor": "Floor (full batches)"},
        title="GPUs needed against average batch fill", y_title="GPUs", x_scale=100,
        line_shape="hv", n=81, lo=0.2,
    )


@page.chart("gpus_vs_timeout")
def gpus_vs_timeout(ctx):
    return sweep_figure(
        ctx.slug, ctx.params, "flush_timeout_ms",
        {"gpus_with_timeout_flush": "GPUs at 100% busy", "gpus_recommended": "GPUs with headroom"},
        title="GPUs needed against the flush timeout (log scale)", y_title="GPUs", line_shape="hv", n=120,
        log_y=True,
    )


@page.chart("latency_vs_timeout")
def latency_vs_timeout(ctx):
    xs = sweep_values(ctx.params, "flush_timeout_ms", 120)
    # A quiet-hours comparison: the same fleet at 1/40 of the scenario's traffic.
    quiet_rps = ctx.params.arrival_rps / 40
    traces = []
    for rate, name, color in ((ctx.params.arrival_rps, "scenario traffic", "#2563eb"),
                              (quiet_rps, "quiet hours (1/40)", "#dc2626")):
        p = ctx.params.model_copy(update={"arrival_rps": rate})
        ys = sweep(ctx.slug, p, "flush_timeout_ms", ["worst_latency_s"], xs)["worst_latency_s"]
        traces.append(dict(type="scatter", x=xs, y=[y * 1000 for y in ys], name=f"{name}: {rate:,.0f} req/s",
                           line=dict(color=color, width=2.5)))
    # Plain dicts, not validated (ui/figures.py): the JSON plotly's add_trace/add_vline wrote.
    layout = layout_dict("Worst latency (batching wait + call) against the flush timeout",
                         "Flush timeout (ms)", "ms", log_x=True)
    layout["shapes"] = [vline(ctx.params.flush_timeout_ms, color="#64748b", dash="dot", width=1)]
    return figure(traces, layout)


page.render()
