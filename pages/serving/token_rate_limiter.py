import plotly.graph_objects as go

from ui.charts import INK, MUTED, PALETTE, layout_dict
from ui.figures import figure, hline
from ui.question_page import QuestionPage
from ui.declared_panel import Card

page = QuestionPage("token-rate-limiter")


page.sweep("admits_vs_max_tokens", "max_tokens",
    {
        "admits_per_min_settled": "Reserve, then settle at actual",
        "admits_per_min_reserving": "Reserve only",
    },
    title="Admits per minute for one tenant against max_tokens (log-log)",
    y_title="Requests per minute", log_y=True, n=80, lo=100, hi=64_000)

page.sweep("ramp_vs_max_tokens", "max_tokens",
    {"settle_ramp_s": "Least warm-up to the settled rate (s)"},
    title="Warm-up before settling pays off, against max_tokens",
    y_title="Seconds", n=80, lo=100, hi=64_000)


page.sweep("utilization_vs_peak_use", "peak_use_fraction",
           {"fleet_utilization_at_peak": "Fleet busy at the peak minute (%)"},
           title="Fleet utilization against the share of summed limits in use",
           y_title="Fleet busy (%)", x_scale=100, n=100, hlines=(100,))


def _levels_figure(ctx, result, steps) -> go.Figure:
    """Each tenant's output bucket over the run, under the settle policy (plain dicts: ui/figures.py)."""
    settle = result.settle
    traces = [dict(type="scatter", x=settle.t, y=settle.output_level[i], name=t.name,
                   line=dict(color=PALETTE[i], width=1.8)) for i, t in enumerate(result.workload.tenants)]
    layout = layout_dict("Output bucket level per tenant, reserve then settle", "Seconds", "Tokens in the bucket")
    layout["height"] = 400
    max_tokens = ctx.params.max_tokens
    layout["shapes"] = [hline(max_tokens, color=INK, dash="dash", width=1)]
    layout["annotations"] = [dict(x=1, xref="paper", xanchor="right", y=max_tokens,
                                  text="one reservation (max_tokens)", showarrow=False, yanchor="bottom",
                                  font=dict(size=11))]
    return figure(traces, layout)


def _admitted_figure(ctx, result, steps) -> go.Figure:
    """Requests admitted per tenant under each policy, against those requested."""
    names = [t.name for t in result.workload.tenants]
    settle, reserve = result.settle, result.reserve
    traces = [dict(type="bar", x=names, y=run.admitted, name=f"admitted, {mode}", marker=dict(color=colour))
              for mode, run, colour in (("reserve only", reserve, "#94a3b8"), ("reserve + settle", settle, PALETTE[0]))]
    traces.append(dict(type="bar", x=names, y=settle.requested, name="requested", marker=dict(color=MUTED)))
    layout = layout_dict("Requests admitted over the run", "", "Requests")
    layout["barmode"] = "group"
    return figure(traces, layout)


page.simulation(
    "token_trace", title="Live: three tenants against their own buckets", message="Simulating the buckets…",
    cards=tuple(Card(f"{t}_admitted", also=((f"{t}_requested", "sent"), (f"{t}_admitted_reserve_only", "reserve-only")))
                for t in ("steady", "bursty", "over")),
    chart=(_levels_figure, _admitted_figure),
    caption="{{simulated_s}} in {{simulated_step_s}} steps; each bucket starts full. Every request is either "
            "admitted or rejected ({{simulated_requested}} sent = {{simulated_admitted}} + {{simulated_rejected}} "
            "with settle, {{simulated_unaccounted}} unaccounted). After the first minute the tenant at twice its "
            "limit is admitted {{over_admits_per_min_settled_sim}} with settle and "
            "{{over_admits_per_min_reserving_sim}} reserve-only, against {{admits_per_min_settled}} and "
            "{{admits_per_min_reserving}} from the arithmetic. Prompt and output sizes are log-normal around the "
            "scenario's means; change the seed for another run.")


page.render()
