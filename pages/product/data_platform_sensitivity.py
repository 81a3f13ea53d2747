import json

import streamlit as st

from models.product import data_platform_sensitivity as model
from ui.question_page import QuestionPage

SLUG = "data-platform-sensitivity"
ROLE_KEY = f"{SLUG}.sim_role"

page = QuestionPage(SLUG)

TREATMENT_TEXT = {"clear": "clear", "masked": "masked", "dropped": "dropped"}


page.sweep("cost_vs_retention", "retention_days",
    {"storage_cost_per_month_usd": "Tiered (hot + cold)", "all_hot_cost_per_month_usd": "Everything hot"},
    title="Storage bill a month at steady state against retention (log-log)", y_title="USD a month",
    log_y=True, n=80)

page.sweep("backfill_vs_detection", "detection_delay_h",
    {"backfill_hours": "Backfill hours"},
    title="Backfill time against time to detect (log-log)", y_title="Hours", log_y=True, n=80)


def _cell(value) -> str:
    return f"{value:,.2f}" if isinstance(value, float) else str(value)


@page.sim("access")
def access(ctx):
    st.markdown("##### Pick a role: which rows and columns of `sales.customer_orders` survive")
    names = list(model.ROLES)
    role_name = st.segmented_control("Role", names, default=names[1], key=ROLE_KEY, required=True)
    role = model.ROLES[role_name or names[1]]
    result = model.apply_policy(role)
    m = st.columns(4)
    m[0].metric("Clearance", role.clearance, border=True)
    m[1].metric("Row filter", role.row_rule, border=True)
    m[2].metric("Rows returned", f"{len(result.rows)} of {len(model.SAMPLE_ROWS)}", border=True)
    shown = sum(1 for _, how in result.columns if how != "dropped")
    m[3].metric("Columns returned", f"{shown} of {len(model.COLUMNS)}", border=True)

    st.dataframe(
        {"Column": [c.name for c, _ in result.columns],
         "Label": [c.label for c, _ in result.columns],
         "For this role": [TREATMENT_TEXT[how] for _, how in result.columns],
         "Rule above clearance": [f"one level up: {model.MASK_TEXT[c.mask]}; higher: dropped" if c.mask
                                  else "dropped" for c, _ in result.columns]},
        hide_index=True, width="stretch", key=f"{SLUG}.sim.columns",
    )
    if result.rows:
        cols = [c.name for c, how in result.columns if how != "dropped"]
        st.dataframe({c: [_cell(r[c]) for r in result.rows] for c in cols}, hide_index=True, width="stretch",
                     key=f"{SLUG}.sim.rows")
    else:
        st.warning("No row survives this role's filter and clearance.", icon=":material/block:")
    st.caption(
        f"Withheld: {result.rows_by_filter} row(s) by the row filter, {result.rows_by_label} by their own label "
        f"(a customer under legal hold is labelled restricted). Dataset label: {model.dataset_label()}, "
        "the highest of its columns. A role never receives a column above its clearance in clear; "
        "one level above, only its masked form if one exists."
    )
    with st.expander("The audit record this read writes"):
        st.code(json.dumps(result.audit, indent=2), language="json")


page.render()
