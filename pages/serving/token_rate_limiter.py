import plotly.graph_objects as go
import streamlit as st

from models.serving import token_rate_limiter as model
from ui.charts import INK, MUTED, PALETTE, layout_dict, sweep_figure
from ui.figures import figure, hline
from ui.question_page import QuestionPage
from ui.sim_panel import cached_simulation, seed_input

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


@page.chart("utilization_vs_peak_use")
def utilization_vs_peak_use(ctx):
    fig = sweep_figure(
        ctx.slug, ctx.params, "peak_use_fraction",
        {"fleet_utilization_at_peak": "Fleet busy at the peak minute (%)"},
        title="Fleet utilization against the share of summed limits in use",
        y_title="Fleet busy (%)", x_scale=100, n=100,
    )
    # The 100% line as a dict (ui/figures.py): add_hline validates the figure's shapes.
    fig.layout.shapes = (*fig.layout.shapes, hline(100, color="#dc2626", dash="dash", width=1))
    return fig


def _run(params_json: str, seed: int):
    return model.simulate(model.Params.model_validate_json(params_json), seed=seed)


def _levels_figure(result, max_tokens: float) -> go.Figure:
    """Each tenant's output bucket over the run, under the settle policy (plain dicts: ui/figures.py)."""
    settle = result.settle
    traces = [dict(type="scatter", x=settle.t, y=settle.output_level[i], name=t.name,
                   line=dict(color=PALETTE[i], width=1.8)) for i, t in enumerate(result.workload.tenants)]
    layout = layout_dict("Output bucket level per tenant, reserve then settle", "Seconds", "Tokens in the bucket")
    layout["height"] = 400
    layout["shapes"] = [hline(max_tokens, color=INK, dash="dash", width=1)]
    layout["annotations"] = [dict(x=1, xref="paper", xanchor="right", y=max_tokens,
                                  text="one reservation (max_tokens)", showarrow=False, yanchor="bottom",
                                  font=dict(size=11))]
    return figure(traces, layout)


def _admitted_figure(result) -> go.Figure:
    """Requests admitted per tenant under each policy, against those requested."""
    names = [t.name for t in result.workload.tenants]
    settle, reserve = result.settle, result.reserve
    traces = [dict(type="bar", x=names, y=run.admitted, name=f"admitted, {mode}", marker=dict(color=colour))
              for mode, run, colour in (("reserve only", reserve, "#94a3b8"), ("reserve + settle", settle, PALETTE[0]))]
    traces.append(dict(type="bar", x=names, y=settle.requested, name="requested", marker=dict(color=MUTED)))
    layout = layout_dict("Requests admitted over the run", "", "Requests")
    layout["barmode"] = "group"
    return figure(traces, layout)


@page.sim("token_trace")
def token_trace(ctx):
    p = ctx.params
    st.markdown("##### Live: three tenants against their own buckets")
    seed = seed_input(ctx.slug)
    result = cached_simulation(ctx.slug, _run, p, seed, "Simulating the buckets…")
    names = [t.name for t in result.workload.tenants]
    settle, reserve = result.settle, result.reserve
    cols = st.columns(3)
    for i, name in enumerate(names):
        cols[i].metric(
            name.capitalize(),
            f"{settle.admitted[i]:,} / {settle.requested[i]:,} admitted",
            delta=f"{reserve.admitted[i]:,} reserve-only", delta_color="off", border=True,
        )
    st.plotly_chart(_levels_figure(result, p.max_tokens), key=f"{ctx.slug}.sim.token_trace.levels")
    st.plotly_chart(_admitted_figure(result), key=f"{ctx.slug}.sim.token_trace.bars")
    late = result.workload.steps * result.workload.dt > 120
    over = len(names) - 1
    st.caption(
        f"{result.workload.steps * result.workload.dt:.0f} s in {result.workload.dt * 1000:.0f} ms steps; "
        f"each bucket starts full. Every request is either admitted or rejected "
        f"({int(settle.requested.sum()):,} requested = {int(settle.admitted.sum()):,} + "
        f"{int(settle.rejected.sum()):,} with settle). "
        + (f"After the first minute the tenant at twice its limit is admitted "
           f"{settle.admits_per_min(over, 60):,.0f}/min with settle and {reserve.admits_per_min(over, 60):,.0f}/min "
           f"reserve-only, against {ctx.derivation['admits_per_min_settled'].display()} and "
           f"{ctx.derivation['admits_per_min_reserving'].display()} from the arithmetic. " if late else "")
        + "Prompt and output sizes are log-normal around the scenario's means; change the seed for another run."
    )


page.render()
