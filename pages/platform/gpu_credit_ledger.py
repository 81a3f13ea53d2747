import hashlib
import math

import plotly.graph_objects as go
import streamlit as st

from models.platform import gpu_credit_ledger as model
from models.units import format_number
from ui.charts import MUTED, PALETTE, layout_dict, sweep_figure
from ui.figures import figure
from ui.question_page import QuestionPage

page = QuestionPage("gpu-credit-ledger")


page.sweep("credits_vs_spend", "expected_spend_fraction",
    {"credits_to_issue_gpu_hours": "Credits to issue", "capacity_gpu_hours": "Capacity"},
    title="Credits to issue against the share of grants teams actually spend", y_title="GPU-hours",
    x_scale=100)

page.sweep("debits_vs_interval", "meter_interval_s",
    {"ledger_debits_per_s": "Debits per second (per job per interval)",
     "per_gpu_second_debits_per_s": "Per GPU-second metering"},
    title="Ledger write rate against the metering interval (log-log)", y_title="Debits per second", log_y=True)


@page.chart("allocation_vs_demand")
def allocation_vs_demand(ctx):
    p = ctx.params
    return sweep_figure(
        ctx.slug, p, "demand_pretraining_gpus",
        {"contention_allocation_gpus": "Pretraining", "alloc_posttraining_gpus": "Post-training",
         "alloc_research_gpus": "Research", "alloc_evals_gpus": "Evals"},
        title="Water-filled allocations as Pretraining asks for more", y_title="GPUs", n=97,
        lo=0, hi=max(2 * p.gpus, p.demand_pretraining_gpus),
    )


# ---------------------------------------------------------------------------------------------


def _fmt(x: float) -> str:
    return format_number(x) if abs(x) > 1e-9 else "0"


@page.sim("ledger")
def ledger_panel(ctx):
    p, d = ctx.params, ctx.derivation
    grant = float(d.value("grant_research_gpu_hours"))
    hold = float(d.value("hold_gpu_hours"))
    st.markdown("##### Live ledger: one Research job, posting by posting")
    choices = {
        f"Research's grant ({format_number(grant)} GPU-h)": grant,
        f"Exactly one hold ({format_number(hold)} GPU-h)": hold,
        f"Less than one hold ({format_number(hold / 2)} GPU-h)": hold / 2,
    }
    pick = st.radio("Available balance before the job", list(choices), key=f"{ctx.slug}.sim_balance",
                    horizontal=True)
    balance = choices.get(pick, grant)
    led = model.job_ledger("research", balance, p.gpus_per_job, p.max_runtime_h, p.job_run_h,
                           p.meter_interval_s / 3600)
    running: dict[str, float] = {}
    by_txn: dict[int, list] = {}
    for post in led.postings:
        by_txn.setdefault(post.txn, []).append(post)
    rows = []
    for txn, posts in by_txn.items():
        for post in posts:
            running[post.account] = running.get(post.account, 0.0) + post.amount
        # A team with no grant posts zero amounts: no side is negative, so fall back to the first leg.
        src = next((x for x in posts if x.amount < 0), posts[0])
        dst = next((x for x in posts if x.amount > 0), posts[-1])
        rows.append({
            "Txn": str(txn), "Kind": posts[0].kind, "Idempotency key": posts[0].key,
            "From (−)": src.account, "To (+)": dst.account, "GPU-h": _fmt(dst.amount),
            "Σ postings": _fmt(sum(x.amount for x in posts)),
            "available": _fmt(running.get("research:available", 0.0)),
            "held": _fmt(running.get("research:held", 0.0)),
            "consumed": _fmt(running.get("cluster:consumed", 0.0)),
        })
    debit_rows = [i for i, r in enumerate(rows) if r["Kind"] == "debit"]
    if len(debit_rows) > 6:  # keep the first three and the last two debits on screen
        hidden = debit_rows[3:-2]
        gap = {k: "" for k in rows[0]}
        gap.update({"Kind": f"… {len(hidden)} more debits", "GPU-h": _fmt(float(d.value("debit_per_interval_gpu_hours"))),
                    "Σ postings": "0 each"})
        rows = rows[:hidden[0]] + [gap] + rows[hidden[-1] + 1:]
    # A phone scrolls the table sideways: the transaction number stays.
    st.dataframe(rows, hide_index=True, width="stretch", column_config={"Txn": st.column_config.Column(pinned=True)})
    sums = led.transaction_sums()
    bal = led.balances()
    ok = all(abs(v) < 1e-9 for v in sums.values())
    if led.admitted:
        st.caption(
            f"{len(sums)} transactions, {len(led.postings)} postings; every transaction sums to "
            f"{'zero' if ok else 'NOT zero'}. Held ends at {_fmt(bal.get('research:held', 0.0))}; "
            f"consumed {_fmt(led.spent_gpu_hours)} GPU-h in {led.debits} debits ({led.note}); released "
            f"{_fmt(led.released_gpu_hours)} GPU-h. The issuance account sits at {_fmt(bal['org:issuance'])}: "
            "every credit in the system came from a grant."
        )
    else:
        st.warning(f"Admission refused the job: {led.note}. No GPU was touched and nothing was debited; the team "
                   "runs only as a weight-0 scavenger until a new grant arrives.")


def _water_fill_figure(teams: list[str], weights: list[float], demands: list[float], cap: float, trace,
                       alloc: list[int]) -> go.Figure:
    """Each team's demand and allocation, and the final water level times its weight; as plain
    dicts, not validated (ui/figures.py)."""
    traces = [
        dict(type="bar", x=teams, y=demands, name="Demand", marker=dict(color=MUTED)),
        dict(type="bar", x=teams, y=alloc, name="Allocation", marker=dict(color=PALETTE[0]),
             text=[f"{a:,}" for a in alloc], textposition="outside"),
    ]
    if math.isfinite(trace.level):
        traces.append(dict(type="scatter", x=teams, y=[trace.level * w for w in weights], mode="markers",
                           name="Final level × weight", marker=dict(symbol="line-ew-open", size=28,
                                                                    color=PALETTE[1], line=dict(width=3))))
    layout = layout_dict(f"{sum(alloc):,} of {int(cap):,} GPUs allocated; demand {format_number(sum(demands))}",
                         "Team", "GPUs")
    layout.update(barmode="overlay", hovermode="closest")
    return figure(traces, layout)


@page.sim("water_fill")
def water_fill_panel(ctx):
    p = ctx.params
    st.markdown("##### Live: water-filling the cluster (edit the table; add or delete teams)")
    base = [{"Team": t, "Weight": float(w), "Demand (GPUs)": int(dm)}
            for t, w, dm in zip(model.TEAMS, p.weights(), p.demands())]
    tag = hashlib.sha1(repr((base, p.gpus)).encode()).hexdigest()[:8]  # a new scenario resets the table
    cap = st.number_input("GPUs to share", min_value=0, max_value=1_000_000, value=int(p.gpus), step=8,
                          key=f"{ctx.slug}.sim_capacity.{tag}")
    edited = st.data_editor(
        base, num_rows="dynamic", hide_index=True, width="stretch", key=f"{ctx.slug}.sim_teams.{tag}",
        column_config={
            "Weight": st.column_config.NumberColumn(min_value=0.0, max_value=1000.0, step=0.5,
                                                    help="0 = scavenger: only what weighted teams leave"),
            "Demand (GPUs)": st.column_config.NumberColumn(min_value=0, max_value=1_000_000, step=8),
        },
    )
    teams, weights, demands = [], [], []
    for i, row in enumerate(edited):
        w, dm = row.get("Weight"), row.get("Demand (GPUs)")
        if w is None or dm is None or (isinstance(w, float) and math.isnan(w)):
            continue
        teams.append(str(row.get("Team") or f"Team {i + 1}"))
        weights.append(max(0.0, float(w)))
        demands.append(max(0.0, float(dm)))
    if not teams:
        st.info("Add a team with a weight and a demand.")
        return
    trace = model.water_fill_trace(float(cap), demands, weights)
    alloc = model.whole_units(trace.allocation, demands, int(cap))
    st.plotly_chart(_water_fill_figure(teams, weights, demands, cap, trace, alloc),
                    key=f"{ctx.slug}.sim.water_fill.chart")
    lines = []
    for n, r in enumerate(trace.rounds, start=1):
        who = ", ".join(teams[i] for i in r.satisfied) or "nobody"
        where = " (scavengers, equal shares)" if r.scavenger else ""
        verdict = (f"{who} fit under it and get their whole demand" if r.satisfied
                   else "nobody fits, so the rest is split by weight at this level")
        lines.append(f"{n}. Level {format_number(r.level)} GPUs per unit of weight{where}: {verdict}.")
    st.markdown("\n".join(lines) if lines else "Nothing to share.")
    st.caption("Checks: the allocation never exceeds the GPUs to share, never exceeds a demand, and uses every GPU "
               "when demand exceeds supply. Fractions are rounded to whole GPUs by largest remainder.")


page.render()
