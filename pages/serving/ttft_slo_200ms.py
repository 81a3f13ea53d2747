from ui.charts import INK, PALETTE, layout_dict
from ui.figures import figure, hline, vline
from ui.question_page import QuestionPage
from ui.declared_panel import Card

page = QuestionPage("ttft-slo-200ms")

page.sweep("tokens_vs_network", "network_ms", {
    "max_prompt_tokens_linear": "Weights only (linear)", "max_prompt_tokens_with_attention": "With attention",
    "max_prompt_tokens": "With attention and all-reduces",
    "max_admissible_prompt_tokens": "Admission cap (after one chunk)",
}, title="Longest prompt the budget covers, against the client's round trip", y_title="Prompt tokens",
    n=100, lo=0, hi="network_s_at_zero_prefill")

page.sweep("chunk_vs_long_prompt", "long_prompt_tokens", {
    "long_prompt_prefill_s": "Long prompt in one piece", "chunk_time_s": "Its last chunk of {{chunk_tokens}}",
}, title="A short request's wait behind a long prompt (log-log)", y_title="ms", y_unit="ms", from_unit="s",
    log_y=True, n=80, hlines=(("slo_s", "whole SLO"), ("prefill_budget_s", "prefill budget")))

page.sweep("utilization_vs_queue_budget", "queue_budget_ms", {
    "max_utilization_pooled": "One pooled queue (M/M/c)", "max_utilization_mm1": "A queue per replica (M/M/1)",
}, title="How busy prefill may run, against the queue allowance", y_title="Utilization (%)",
    n=100, lo=1, hi="queue_budget_s_at_zero_prefill", log_x=True, line_shape="hv")


def _ccdf_figure(ctx, r, steps):
    """Each queue's simulated wait tail against its closed form (plain dicts, ui/figures.py)."""
    traces = []
    for i, q in enumerate((r.separate, r.pooled, r.separate_at_pooled_util)):
        t_ms = [t * 1000 for t in q.ccdf_t]
        traces.append(dict(type="scatter", x=t_ms, y=q.ccdf_sim, name=f"{q.label}, simulated",
                           line=dict(color=PALETTE[i], width=2.5)))
        traces.append(dict(type="scatter", x=t_ms, y=q.ccdf_analytic, name="closed form",
                           line=dict(color=PALETTE[i], width=1.5, dash="dash"), showlegend=i == 0))
    layout = layout_dict("Share of requests waiting longer than t (log scale)", "Wait t (ms)", "P(wait > t)",
                         log_y=True)
    layout["yaxis"]["range"] = [-4, 0.05]
    layout.update(height=420, shapes=[vline(ctx.params.queue_budget_ms, color="#64748b", dash="dot", width=1),
                                      hline(steps["tail_probability"].value, color=INK, dash="dot", width=1)],
                  annotations=[dict(x=ctx.params.queue_budget_ms, y=1, yref="paper", text="queue allowance",
                                    showarrow=False, xanchor="left", xshift=3, yanchor="top", font=dict(size=11))])
    return figure(traces, layout)


page.simulation(
    "queue_check", title="Live: the FIFO queue engine against Erlang C", message="Simulating the queues…",
    cards=tuple(Card(f"{q}_wait_s", against=f"{q}_wait_closed_form_s", also=((f"{q}_busy", "busy"),))
                for q in ("own_at_limit", "pool", "own_at_pool_load")),
    chart=_ccdf_figure,
    caption="{{simulated_requests}} per queue, Poisson arrivals, exponential prefills of mean {{service_time_s}}, "
            "the first 5% dropped as warm-up. Share past the allowance: own queue at its limit "
            "{{own_at_limit_past_allowance}} simulated, {{own_at_limit_past_allowance_closed_form}} closed form; "
            "the pool {{pool_past_allowance}} simulated, {{pool_past_allowance_closed_form}} closed form; own queue "
            "at the pool's load {{own_at_pool_load_past_allowance}} simulated, "
            "{{own_at_pool_load_past_allowance_closed_form}} closed form. One run is one sample; the tests check "
            "agreement over twenty independent replications.")

page.render()
