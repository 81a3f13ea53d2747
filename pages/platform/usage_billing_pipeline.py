import streamlit as st

from models.platform import usage_billing_pipeline as model
from ui.question_page import QuestionPage

SLUG = "usage-billing-pipeline"
page = QuestionPage(SLUG)
GUARD_LABELS = {
    "replay": "Reconcile + replay from the engine's spool",
    "dedup": "Dedup by idempotency key",
    "watermark": "Watermark + late-event window",
    "price_at_event_time": "Price version at event time",
    "tenant_at_event_time": "Tenant of the API key at event time",
}


page.sweep("dedup_vs_window", "dedup_window_h",
    {"dedup_index_GB": "Exact index (keys × bytes per key)", "bloom_prefilter_GB": "1% Bloom pre-filter"},
    title="Dedup state against the window it covers (log-log)", y_title="GB", log_x=True, log_y=True, n=100)

page.sweep("drops_cost", "drop_rate",
    {"revenue_lost_to_drops_per_month_usd": "Revenue lost to drops"},
    title="Revenue lost per month against the drop rate (log-log)", y_title="USD per month", x_scale=100,
    x_title="Events dropped in transit (%)", log_y=True, n=60)

page.sweep("partitions_vs_traffic", "requests_per_s", {"kafka_partitions": "Partitions"},
    title="Usage-topic partitions against average traffic (log-log)", y_title="Partitions", log_y=True,
    line_shape="hv", n=80)


def _usd(x: float) -> str:
    return f"${x:,.3f}"


def _delta(x: float) -> str | None:
    """For st.metric: an ASCII sign so the arrow points the right way; no delta when exact."""
    return None if abs(x) < 5e-10 else f"{'+' if x > 0 else '-'}${abs(x):,.3f}"


def _signed(x: float) -> str:
    return "±$0.000" if abs(x) < 5e-10 else f"{'+' if x > 0 else '−'}${abs(x):,.3f}"


@page.sim("six_faults")
def six_faults(ctx):
    st.markdown("##### Twelve usage events, six faults, five guards")
    left, right = st.columns(2)
    with left:
        st.markdown("**Faults injected**")
        faults = {f for f in model.FAULTS
                  if st.checkbox(f, value=True, key=f"{SLUG}.sim_fault_{f}", help=model.FAULT_TEXT[f])}
    with right:
        st.markdown("**Guards on**")
        guards = {g for g in model.GUARDS
                  if st.checkbox(GUARD_LABELS[g], value=True, key=f"{SLUG}.sim_guard_{g}", help=model.GUARD_TEXT[g])}
    c = model.compare(faults, guards)
    truth_total = sum(c.truth.values())
    m = st.columns(3)
    m[0].metric("What the tenants owe", _usd(truth_total), border=True)
    m[1].metric("Billed with these guards", _usd(c.guarded.total), delta=_delta(c.guarded.total - truth_total),
                delta_color="off", border=True)
    m[2].metric("Billed with no guard", _usd(c.unguarded.total), delta=_delta(c.unguarded.total - truth_total),
                delta_color="off", border=True)
    rows = c.rows()
    # A phone scrolls each table sideways; its first column stays in view.
    st.dataframe(
        {"Tenant": [r[0] for r in rows], "Month": [r[1] for r in rows], "Owes": [_usd(r[2]) for r in rows],
         "Billed, these guards": [_usd(r[3]) for r in rows], "Diff": [_signed(r[3] - r[2]) for r in rows],
         "Billed, no guard": [_usd(r[4]) for r in rows], "Diff, no guard": [_signed(r[4] - r[2]) for r in rows]},
        hide_index=True, width="stretch", key=f"{SLUG}.sim.totals",
        column_config={"Tenant": st.column_config.Column(pinned=True)},
    )
    wrong = [(t, mth) for t, mth, owe, got, _ in rows if abs(got - owe) > 1e-9]
    if not wrong:
        st.success("Every tenant's month matches what it owes.", icon=":material/check_circle:")
    else:
        st.error("Wrong bills: " + ", ".join(f"{t} {mth}" for t, mth in wrong) + ".", icon=":material/error:")
    if c.guarded.cells:
        cells = c.guarded.cells
        st.markdown("**Reconciliation: engine-hours where the ledger disagrees with the engine's own tally**")
        st.dataframe(
            {"Engine": [x.engine for x in cells], "Hour": [x.hour.strftime("%b %d %H:00") for x in cells],
             "Engine counted (tokens)": [x.engine_tokens for x in cells],
             "Ledger holds (tokens)": [x.ledger_tokens for x in cells], "Gap": [x.gap for x in cells]},
            hide_index=True, width="stretch", key=f"{SLUG}.sim.cells",
            column_config={"Engine": st.column_config.Column(pinned=True)},
        )
    else:
        st.caption("Reconciliation: every engine-hour in the ledger matches the engines' token tallies"
                   + (", yet a bill is wrong: counts cannot see a wrong price or a wrong tenant." if wrong else "."))
    lines = c.guarded.lines
    with st.expander("The consumer's log with these guards, in arrival order", expanded=bool(faults)):
        st.dataframe(
            {"Event": [ln.key for ln in lines],
             "Event time": [model.BY_KEY[ln.key].t.strftime("%b %d %H:%M:%S") for ln in lines],
             "Arrived": [ln.arrival.strftime("%b %d %H:%M:%S") for ln in lines], "How": [ln.how for ln in lines],
             "Outcome": [ln.outcome for ln in lines], "Tenant": [ln.tenant for ln in lines],
             "Month": [ln.month for ln in lines], "Price": [ln.price_version for ln in lines],
             "USD": [_usd(ln.usd) for ln in lines]},
            hide_index=True, width="stretch", key=f"{SLUG}.sim.lines",
            column_config={"Event": st.column_config.Column(pinned=True)},
        )
    alone = []
    for f in model.FAULTS:
        owe, got = model.with_fault(f)
        guard = GUARD_LABELS[model.GUARD_FOR[f]]
        if f == "drop":
            guard += ", admitted by the late-event window and deduplicated"
        alone.append((f, model.FAULT_TEXT[f], guard, _signed(got - owe)))
    with st.expander("Each fault alone, with no guard, and the guard that answers it"):
        st.dataframe(
            {"Fault": [a[0] for a in alone], "What happens": [a[1] for a in alone], "Guard": [a[2] for a in alone],
             "Bill error, unguarded": [a[3] for a in alone]},
            hide_index=True, width="stretch", key=f"{SLUG}.sim.alone",
            column_config={"Fault": st.column_config.Column(pinned=True)},
        )
    v1, v2 = model.PRICE_V1, model.PRICE_V2
    st.caption(
        f"Prices per million tokens, in / out: large \\${v1['large'][0]:g} / \\${v1['large'][1]:g}, or "
        f"\\${v2['large'][0]:g} / \\${v2['large'][1]:g} from {model.PRICE_CHANGE:%b %d} when the price change is on; "
        f"small \\${v1['small'][0]:g} / \\${v1['small'][1]:g}. The replay arrives "
        f"{model.REPLAY_DELAY.seconds // 3600} hours after its hour ends, so it needs the late-event window to be "
        "admitted and dedup to keep its cell-mates from being billed twice."
    )


page.render()
