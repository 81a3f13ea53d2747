from ui.charts import PALETTE, layout_dict
from ui.figures import figure, vline
from ui.question_page import QuestionPage
from ui.declared_panel import Card

page = QuestionPage("autoscaling-warm-pool")

page.sweep("warm_pool_vs_cold_start", "cold_start_s",
           {"warm_pool_replicas": "Warm pool (leading signal)", "burst_replicas": "The whole burst"},
           title="Warm pool against the cold start: flat until reaction time drops inside the ramp",
           y_title="Replicas", line_shape="hv", n=120, lo=5, hi=300, log_x=True)


def _burst_figure(ctx, r, steps):
    """Requests queued (left axis) and replicas ready (right), with the warm pool and without it."""
    t, cold_s = [x - r.burst_start_s for x in r.with_pool.t], r.first_cold_replica_at_s - r.burst_start_s
    runs = ((r.without_pool, "no pool", PALETTE[1]), (r.with_pool, "warm pool", PALETTE[0]))
    traces = [dict(type="scatter", x=t, y=run.queue, name=f"Queued, {name}", line=dict(color=c, width=2.5))
              for run, name, c in runs] + [dict(type="scatter", x=t, y=run.ready, name=f"Ready replicas, {name}",
                                                yaxis="y2", line=dict(color=c, width=1.5, dash="dot", shape="hv"))
                                           for run, name, c in runs]
    top = max(float(run.ready.max()) for run, _, _ in runs)
    layout = layout_dict("Requests waiting for a slot, and replicas ready", "Seconds since the burst began",
                         "Requests queued")
    layout.update(height=420, yaxis2=dict(title=dict(text="Ready replicas"), overlaying="y", side="right",
                                          showgrid=False, range=[0, top * 1.15], tickmode="auto", nticks=6,
                                          tickformat=",d"),
                  shapes=[vline(cold_s, color="#64748b", dash="dash", width=1)],
                  annotations=[dict(x=cold_s, y=1, yref="paper", text="first cold replica", showarrow=False,
                                    xanchor="left", xshift=3, yanchor="top", font=dict(size=11))])
    return figure(traces, layout)


page.simulation(
    "burst", title="Live: the same burst with the warm pool and without it", message="Simulating the burst…",
    cards=(Card("simulated_backlog_without_pool", against="backlog_without_pool"),
           Card("simulated_max_wait_without_pool_s"), Card("simulated_max_wait_with_pool_s"),
           Card("simulated_replica_hours_with_pool", also=(("simulated_replica_hours_without_pool", "with no pool"),))),
    chart=_burst_figure,
    caption="{{simulated_steps}} of {{simulated_step_s}}; Poisson arrivals, exponential request lengths of mean "
            "{{request_duration_s}}; the autoscaler reads the arrival rate {{signal_delay_s}} late, counts booting "
            "replicas as supply and holds surplus {{scale_down_hold_s}} before releasing it. Every request is "
            "finished, in service or queued (largest imbalance {{simulated_conservation_error}}). The simulated "
            "backlog sits a little under the closed form because in-flight requests lag the ramp by about "
            "{{littles_law_lag_requests}}. Change the seed for another run.")

page.render()
