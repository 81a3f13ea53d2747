from ui.question_page import QuestionPage

page = QuestionPage("serving-platform")


page.sweep("replicas_vs_think_time", "think_time_s",
    {"replicas": "Replicas at this think time",
     "replicas_without_think_time": "If users were requests (think time 0)"},
    title="Replicas against think time: concurrent users are not concurrent requests",
    y_title="Replicas", line_shape="hv", n=80, log_y=True)

page.sweep("replicas_vs_users", "concurrent_users",
    {"replicas": "Replicas (prefill and decode take turns)",
     "replicas_if_prefill_free": "Replicas if prefill hid inside decode"},
    title="Replicas against concurrent users (log-log)", y_title="Replicas", line_shape="hv", n=80, log_y=True)

page.sweep("replicas_vs_prefix_hit", "prefix_cache_hit",
    {"replicas": "Replicas", "prefill_replica_equivalents": "Prefill work (busy replicas)",
     "decode_replica_equivalents": "Decode work (busy replicas)"},
    title="What the prefix cache is worth", y_title="Replicas", x_scale=100, n=100)


page.render()
