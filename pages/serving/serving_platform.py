from ui.charts import sweep_figure
from ui.diagram import Arrow, Box, box_diagram
from ui.question_page import QuestionPage

page = QuestionPage("serving-platform")


@page.diagram("seven_boxes")
def seven_boxes(ctx):
    d, p = ctx.derivation, ctx.params
    show = lambda key: d[key].display(hint=False)  # noqa: E731
    boxes = [
        Box("clients", "Clients", f"{p.concurrent_users:,} users · {show('requests_in_flight')}", 0, 0, "muted"),
        Box("gw", "1 Gateway + auth", "TLS, key, tenant · fails: key store slow", 1, 0),
        Box("rl", "2 Rate limiter", f"{show('prompt_tokens_per_s')} in · fails: store down", 2, 0),
        Box("router", "3 Router", f"prefix affinity · {p.prefix_cache_hit:.0%} hit · fails: hot prefix", 3, 0),
        Box("queue", "4 Admission queue", "admit on free KV · fails: unbounded wait", 3, 1, "accent"),
        Box("engine", "5 Engine",
            f"batch {show('decode_batch')} · step {show('decode_step_s')} · fails: KV preemption", 2, 1),
        Box("stream", "7 Streaming path", f"{show('output_tokens_per_s')} · fails: slow client", 1, 1),
        Box("cache", "6 Prefix / KV cache", f"{show('cached_prompt_tokens')} cached · fails: goes cold", 2, 2),
        Box("fleet", "Sizing chain",
            f"{show('request_rate')} · {show('requests_in_flight')} in flight · "
            f"{show('replicas')} · {show('gpus')}", 0.5, 2, "muted"),
    ]
    arrows = [
        Arrow("clients", "gw", "HTTPS"),
        Arrow("gw", "rl"),
        Arrow("rl", "router"),
        Arrow("router", "queue"),
        Arrow("queue", "engine"),
        Arrow("engine", "cache", "KV blocks"),
        Arrow("engine", "stream", "tokens"),
        Arrow("stream", "clients", "SSE"),
    ]
    return box_diagram(boxes, arrows, title="Seven boxes between an API call and a GPU, with this scenario's numbers")


@page.chart("replicas_vs_think_time")
def replicas_vs_think_time(ctx):
    return sweep_figure(
        ctx.slug, ctx.params, "think_time_s",
        {"replicas": "Replicas at this think time",
         "replicas_without_think_time": "If users were requests (think time 0)"},
        title="Replicas against think time: concurrent users are not concurrent requests",
        y_title="Replicas", line_shape="hv", n=80, log_y=True,
    )


@page.chart("replicas_vs_users")
def replicas_vs_users(ctx):
    return sweep_figure(
        ctx.slug, ctx.params, "concurrent_users",
        {"replicas": "Replicas (prefill and decode take turns)",
         "replicas_if_prefill_free": "Replicas if prefill hid inside decode"},
        title="Replicas against concurrent users (log-log)", y_title="Replicas", line_shape="hv", n=80, log_y=True,
    )


@page.chart("replicas_vs_prefix_hit")
def replicas_vs_prefix_hit(ctx):
    return sweep_figure(
        ctx.slug, ctx.params, "prefix_cache_hit",
        {"replicas": "Replicas", "prefill_replica_equivalents": "Prefill work (busy replicas)",
         "decode_replica_equivalents": "Decode work (busy replicas)"},
        title="What the prefix cache is worth", y_title="Replicas", x_scale=100, n=100,
    )


page.render()
