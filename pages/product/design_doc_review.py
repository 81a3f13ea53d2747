import streamlit as st

from models.product import design_doc_review as model
from models.units import format_number, format_quantity
from ui.charts import PALETTE, layout_dict, sweep_figure
from ui.diagram import Arrow, Box, box_diagram
from ui.figures import figure
from ui.question_page import QuestionPage

SLUG = "design-doc-review"
page = QuestionPage(SLUG)
RANK_KEY = f"{SLUG}.sim_rank"
ALT_KEY = f"{SLUG}.sim_alternative"
SCORED_KEY = f"{SLUG}.sim_scored"


def _check_key(item: str) -> str:
    return f"{SLUG}.sim_missing_{item.replace(' ', '_')}"


@page.diagram("doc_architecture")
def doc_architecture(ctx):
    d = ctx.derivation
    show = lambda key: d[key].display(hint=False)  # noqa: E731
    short = d.value("shortfall_at_peak_gpus") > 0
    boxes = [
        Box("clients", "Clients", "v1 API · blind retries", 0, 0, "muted"),
        Box("disp", "One dispatcher", f"seal at {ctx.params.max_batch_inputs} inputs or {show('doc_timeout_s')} · "
            f"calls leave with {show('inputs_per_call_at_peak')}", 1, 0, "accent"),
        Box("fifo", "Sealed-batch FIFO", f"unbounded · grows {show('excess_rps_at_peak')} at peak", 2, 0,
            "danger" if short else "default"),
        Box("gpus", "GPU pool", f"provisioned {show('doc_fleet_gpus')} · serves {show('doc_capacity_rps')} · "
            f"needs {show('gpus_needed_at_peak')} at 100% busy · {show('gpus_needed_with_headroom')} with headroom",
            3, 0, "danger" if short else "default"),
        Box("adm", "Admission, shedding", "missing", 0.5, 1, "muted"),
        Box("obs", "Queue and fill metrics", "missing", 1.5, 1, "muted"),
        Box("standby", "Second dispatcher", "missing", 2.5, 1, "muted"),
    ]
    arrows = [
        Arrow("clients", "disp", f"{format_number(ctx.params.peak_rps)} req/s at peak"),
        Arrow("disp", "fifo", "sealed"),
        Arrow("fifo", "gpus", ""),
    ]
    return box_diagram(boxes, arrows, title="The document's design, with this scenario's numbers (grey: what it leaves out)",
                       height=400)


@page.chart("gpus_vs_timer")
def gpus_vs_timer(ctx):
    return sweep_figure(
        ctx.slug, ctx.params, "flush_timeout_ms",
        {"gpus_needed_at_peak": "Needed at 100% busy", "gpus_needed_with_headroom": "Needed with headroom",
         "doc_fleet_gpus": "The document provisions"},
        title="GPUs the peak needs against the flush timer (log x; dotted: the document's timer)",
        y_title="GPUs", line_shape="hv", n=100, lo=3, hi=200,
    )


@page.chart("risk_costs")
def risk_costs(ctx):
    d = ctx.derivation
    p = ctx.params
    costs = model.costs_of(d)
    order = model.reference_order(costs)[::-1]  # plotly draws the first bar at the bottom
    labels, texts = [], []
    for key in order:
        labels.append(model.RISK_BY_KEY[key].name)
        if key == "capacity":
            texts.append(f"{p.p_capacity:.0%} × {d['capacity_impact_usd'].display()}")
        else:
            texts.append(f"{getattr(p, f'p_{key}'):.0%} × {format_quantity(getattr(p, f'{key}_impact_usd'), 'USD')}")
    bars = dict(  # a plain dict, not validated (ui/figures.py)
        type="bar", y=labels, x=[costs[k] for k in order], orientation="h", text=texts, textposition="auto",
        marker=dict(color=[PALETTE[1] if k == order[-1] else PALETTE[0] for k in order]),
        hovertemplate="%{y}: $%{x:,.0f} a year<extra></extra>",
    )
    layout = layout_dict("Expected annual cost of each risk (probability × impact), worst on top", "USD per year", "")
    layout.update(hovermode="closest", height=340)
    return figure([bars], layout)


def _score():
    st.session_state[SCORED_KEY] = True


@page.sim("review")
def review(ctx):
    d = ctx.derivation
    st.markdown("##### Your review: rank the risks, name what is missing, propose an alternative")
    st.caption("Six findings a reviewer could raise, in no particular order:")
    st.markdown("\n".join(f"- **{model.RISK_BY_KEY[k].name}.** {model.RISK_BY_KEY[k].finding}"
                          for k in model.DISPLAY_ORDER))
    order = st.multiselect(
        "Rank them, worst first (pick in order; any you leave out tie for last)",
        options=list(model.DISPLAY_ORDER), format_func=lambda k: model.RISK_BY_KEY[k].name, key=RANK_KEY,
    )
    st.markdown("**Which checklist items does the document leave out?**")
    cols = st.columns(2)
    named = [item for i, item in enumerate(model.CHECKLIST)
             if cols[i % 2].checkbox(item.capitalize(), key=_check_key(item))]
    alternative = st.text_area(
        "Your alternative, inside the pinned contract, with its trade-off",
        key=ALT_KEY, height=90,
        placeholder="e.g. what you would change, what it buys in GPUs or latency, and what it costs",
    )
    st.button("Score my review", key=f"{SLUG}.sim_score", on_click=_score, type="primary")
    if not st.session_state.get(SCORED_KEY):
        return

    costs = model.costs_of(d)
    ranking = model.score_ranking(order, costs)
    checklist = model.score_checklist(named)
    alt = model.check_alternative(alternative or "")
    m = st.columns(4)
    m[0].metric("Spearman's rho", "-" if ranking.spearman is None else f"{ranking.spearman:.2f}", border=True,
                help="1 = the reference order; 0 = unrelated; -1 = reversed.")
    m[1].metric("Kendall's tau-b", "-" if ranking.kendall is None else f"{ranking.kendall:.2f}", border=True)
    m[2].metric("Led with the worst", "yes" if ranking.top_match else "no", border=True)
    right = round(checklist.coverage * len(model.CHECKLIST))
    m[3].metric("Checklist coverage", f"{checklist.coverage:.0%}", delta=f"{right} of {len(model.CHECKLIST)} right",
                delta_color="off", border=True, help="Items judged right, missing or present.")
    if ranking.spearman is None:
        st.warning("Rank at least one risk: with none ranked every risk ties and no correlation exists.",
                   icon=":material/format_list_numbered:")
    user_rank = dict(zip(model.RISK_KEYS, model.ranks_from_order(order, list(model.RISK_KEYS))))
    st.dataframe(
        {
            "Reference rank": list(range(1, len(ranking.reference) + 1)),
            "Risk": [model.RISK_BY_KEY[k].name for k in ranking.reference],
            "Expected per year": [d[f"risk_expected_annual_cost_usd_{k}"].display() for k in ranking.reference],
            "Your rank": [format_number(user_rank[k]) for k in ranking.reference],
            "Checklist item": [model.RISK_BY_KEY[k].checklist for k in ranking.reference],
        },
        hide_index=True, width="stretch", key=f"{SLUG}.sim_reference",
    )
    lines = []
    if checklist.found:
        lines.append(f"Found: {', '.join(checklist.found)}.")
    if checklist.overlooked:
        lines.append(f"Overlooked: {', '.join(checklist.overlooked)}.")
    if checklist.false_alarms:
        lines.append(f"False alarms (the document has them): {', '.join(checklist.false_alarms)}.")
    st.markdown("**Checklist.** " + " ".join(lines))
    marks = [("names a number", alt.has_number), ("names a trade-off", alt.names_a_tradeoff),
             ("works inside the contract (timer, batching, queue, shedding)", alt.works_inside_the_contract)]
    st.markdown("**Your alternative** " + " · ".join(
        f"{':material/check:' if ok else ':material/close:'} {label}" for label, ok in marks))
    st.info(
        f"Reference alternative: stretch the timer to {d['alt_timeout_s'].display()} so calls leave with "
        f"{d['alt_inputs_per_call'].display()} at peak; provision {d['alt_gpus_with_headroom'].display()} "
        f"({d['fix_by_timer_cost_per_year_usd'].display()} a year more, against "
        f"{d['fix_by_buying_cost_per_year_usd'].display()} for buying GPUs at the document's timer), "
        f"for up to {d['alt_added_wait_s'].display()} of extra batching wait.",
        icon=":material/lightbulb:",
    )


page.render()
