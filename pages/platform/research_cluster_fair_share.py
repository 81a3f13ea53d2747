import numpy as np
import plotly.graph_objects as go
import streamlit as st

from models.platform import research_cluster_fair_share as model
from ui.replay import replay
from ui.charts import INK, PALETTE, layout_dict, sweep_figure
from ui.diagram import Arrow, Box, box_diagram
from ui.figures import figure, hline, vline
from ui.question_page import QuestionPage
from ui.sim_panel import run_simulation, seed_input

page = QuestionPage("research-cluster-fair-share")

GREY = "#64748b"
SHORT = ("Pretraining", "Post-training", "Interp.", "Evals")


@page.diagram("quota_tree")
def quota_tree(ctx):
    d, p = ctx.derivation, ctx.params
    show = lambda key: d[key].display(hint=False)  # noqa: E731
    models_g = d.value("guarantee_pretrain_gpus") + d.value("guarantee_posttrain_gpus")
    research_g = d.value("guarantee_interp_gpus") + d.value("guarantee_evals_gpus")
    boxes = [
        Box("org", "Org", f"{p.total_gpus:,} GPUs · pool {show('pool_gpus')}", 1.5, 0, "muted"),
        Box("models", "Models division", f"guarantees {models_g:,.0f} GPUs · borrows {show('borrowed_gpus')}", 0.5, 1),
        Box("research", "Research division", f"guarantees {research_g:,.0f} GPUs · lends {show('idle_gpus')}",
            2.5, 1, "muted"),
        Box("pre", "Pretraining", f"guarantee {show('guarantee_pretrain_gpus')} · F {d.value('fair_share_factor'):.3f} "
            f"· now {show('allocation_gpus')}", 0, 2),
        Box("post", "Post-training", f"guarantee {show('guarantee_posttrain_gpus')} · "
            f"F {d.value('fair_share_factor_posttrain'):.3f} · now {show('allocation_posttrain_gpus')}", 1, 2),
        Box("interp", "Interpretability", f"guarantee {show('guarantee_interp_gpus')} · away, F "
            f"{d.value('fair_share_factor_interp'):.3f} · returns: preempts {show('preempted_gpus')}", 2, 2, "muted"),
        Box("evals", "Evals", f"guarantee {show('guarantee_evals_gpus')} · runs {show('evals_use_gpus')} · "
            f"holds {show('evals_hold_gpus')}, F {d.value('fair_share_factor_evals'):.3f}", 3, 2,
            "danger" if d.value("hoard_gpus") > 0 else "default"),
    ]
    arrows = [
        Arrow("org", "models"), Arrow("org", "research"),
        Arrow("models", "pre"), Arrow("models", "post"),
        Arrow("research", "interp"), Arrow("research", "evals"),
        Arrow("research", "models", f"lends {show('idle_gpus')}", dashed=True),
    ]
    return box_diagram(boxes, arrows, title="The quota tree this morning, with this scenario's numbers")


@page.diagram("tick_loop")
def tick_loop(ctx):
    d, p = ctx.derivation, ctx.params
    show = lambda key: d[key].display(hint=False)  # noqa: E731
    charge = "by allocation (held GPUs)" if p.charge_by_allocation else "by use (running GPUs)"
    save = f"signal + {p.save_minutes:g} min save" if p.checkpoint_on_signal else "killed without warning"
    boxes = [
        Box("ledger", "Usage ledger", f"× {d.value('decay_per_tick'):.4f} per tick · half-life {p.half_life_hours:g} h",
            0, 0, "muted"),
        Box("factor", "1. Factors", f"F = 2^(−u/s) · Pretraining {d.value('fair_share_factor'):.3f}", 1, 0),
        Box("targets", "2. Targets", f"guarantees first · water-fill {show('idle_gpus')} · weight share × F", 2, 0,
            "accent"),
        Box("preempt", "3. Guarantees", f"preempt {show('preempted_gpus')} · {p.victim_policy} · {save}", 2, 1,
            "danger"),
        Box("admit", "4. Admit + backfill", "whole jobs up to the targets · then any queue head that fits", 1, 1),
        Box("charge", "5. Charge", charge, 0, 1, "muted"),
    ]
    arrows = [
        Arrow("ledger", "factor"), Arrow("factor", "targets"), Arrow("targets", "preempt"),
        Arrow("preempt", "admit"), Arrow("admit", "charge"), Arrow("charge", "ledger", f"every {p.tick_minutes:g} min"),
    ]
    return box_diagram(boxes, arrows, title="One scheduler tick, in order")


@page.chart("lost_vs_checkpoint")
def lost_vs_checkpoint(ctx):
    return sweep_figure(
        ctx.slug, ctx.params, "checkpoint_minutes",
        {
            "lost_gpu_hours_without_warning": "Killed without warning, random victims",
            "lost_gpu_hours_checkpoint_aware": "Killed without warning, least work lost",
            "lost_gpu_hours_with_checkpoint_on_signal": "Save on the signal",
        },
        title="GPU-hours lost when the owner returns, against the checkpoint interval (log-log)",
        y_title="GPU-hours lost", log_y=True, n=80,
    )


@page.chart("last_week_vs_half_life")
def last_week_vs_half_life(ctx):
    return sweep_figure(
        ctx.slug, ctx.params, "half_life_hours",
        {"weight_of_last_week": "Weight of a GPU-hour used a week ago"},
        title="What last week still costs, against the half-life", y_title="Weight (1 = counts in full)", n=80,
        shapes=[vline(model.HOURS_PER_WEEK, color=INK, dash="dash", width=1)],
        annotations=[dict(x=np.log10(model.HOURS_PER_WEEK), y=1, yref="paper", text="one week", showarrow=False,
                          xanchor="right", xshift=-3, yanchor="top", font=dict(size=11))],
    )


@page.chart("split_vs_guarantee")
def split_vs_guarantee(ctx):
    return sweep_figure(
        ctx.slug, ctx.params, "guaranteed_fraction",
        {
            "allocation_gpus": "Pretraining, weights share × F",
            "allocation_without_factor_gpus": "Pretraining, weights share only",
            "allocation_posttrain_gpus": "Post-training, weights share × F",
        },
        title="This morning's split against the guaranteed part of each share",
        y_title="GPUs allocated", x_scale=100, n=41,
    )


@page.chart("hoarding")
def hoarding(ctx):
    return sweep_figure(
        ctx.slug, ctx.params, "evals_hold_fraction",
        {
            "evals_factor_charged_by_allocation": "Evals' factor, charged by allocation",
            "evals_factor_charged_by_use": "Evals' factor, charged by use",
            "evals_factor_if_released": "Evals' factor if it releases the hoard",
        },
        title="Holding idle GPUs: what it does to the hoarder's fair-share factor", y_title="Fair-share factor F",
        x_scale=100, n=41, shapes=[hline(0.5, color=GREY, dash="dot", width=1)],
    )



# --- the live simulation ---------------------------------------------------------------------


def _mean_wait_min(w: np.ndarray) -> str:
    return f"{w.mean() * 60:,.1f} min" if w.size else "no jobs"


# The simulation's figures, as plain dicts (ui/figures.py): the JSON plotly's add_trace/add_hline wrote.


def _replay_figure(r, t: int) -> go.Figure:
    """Every team at one tick: running, saving and idle GPUs stacked, against guarantee and target."""
    names = list(r.team_names)
    idle = r.alloc[t] - r.busy[t] - r.saving[t]
    traces = [
        dict(type="bar", x=names, y=r.busy[t], name="Running jobs", marker=dict(color=PALETTE[0])),
        dict(type="bar", x=names, y=r.saving[t], name="Saving a checkpoint (preempted)", marker=dict(color=PALETTE[1])),
        dict(type="bar", x=names, y=idle, name="Held idle", marker=dict(color="#fbbf24")),
        dict(type="scatter", x=names, y=r.guarantee, mode="markers", name="Guarantee",
             marker=dict(symbol="line-ew", size=44, line=dict(width=3, color=INK))),
        dict(type="scatter", x=names, y=r.target[t], mode="markers", name="Water-filling target",
             marker=dict(symbol="diamond", size=11, color=PALETTE[2])),
    ]
    top = max(float(r.alloc[t].max()), float(r.guarantee.max()), float(r.target[t].max())) * 1.25
    layout = layout_dict(f"The cluster at hour {r.t_h[t]:,.2f}", "", "GPUs")
    layout.update(barmode="stack", height=380, hovermode="closest")
    layout["yaxis"]["range"] = [0, max(top, 1)]
    layout["annotations"] = [dict(x=name, y=max(r.alloc[t, i], r.guarantee[i]), text=f"{r.queued[t, i]:,.0f} queued",
                                  showarrow=False, yshift=16, font=dict(size=11, color=GREY))
                             for i, name in enumerate(names)]
    return figure(traces, layout)


def _alloc_figure(r, p, t_ret: int | None) -> go.Figure:
    """GPUs each team holds over the run, against its guarantee (dotted), and the preemptions."""
    traces, shapes, notes = [], [], []
    for i, name in enumerate(r.team_names):
        color = PALETTE[i % len(PALETTE)]
        traces.append(dict(type="scatter", x=r.t_h, y=r.alloc[:, i], name=name,
                           line=dict(color=color, width=2, shape="hv")))
        shapes.append(hline(r.guarantee[i], color=color, dash="dot", width=1))
    if r.ev_tick.size:
        ticks = np.unique(r.ev_tick)
        traces.append(dict(type="scatter", x=r.t_h[ticks], y=r.preempted[ticks].sum(axis=1), mode="markers",
                           name="GPUs preempted", marker=dict(symbol="x", size=9, color=INK)))
    if t_ret is not None:
        shapes.append(vline(p.return_hour, color=GREY, dash="dash", width=1))
        notes.append(dict(x=p.return_hour, y=1, yref="paper", text="Interpretability returns", showarrow=False,
                          xanchor="left", xshift=3, yanchor="top", font=dict(size=11)))
    layout = layout_dict("GPUs held per team (dotted: its guarantee)", "Hours", "GPUs")
    layout.update(height=400, shapes=shapes, **({"annotations": notes} if notes else {}))
    return figure(traces, layout)


def _factor_figure(r) -> go.Figure:
    traces = [dict(type="scatter", x=r.t_h, y=r.factor[:, i], name=name, line=dict(color=PALETTE[i], width=2))
              for i, name in enumerate(r.team_names)]
    layout = layout_dict("Fair-share factor per team (0.5 = usage at share)", "Hours", "F = 2^(−u/s)")
    layout["yaxis"]["range"] = [0, 1.05]
    layout["shapes"] = [hline(0.5, color=GREY, dash="dot", width=1)]
    return figure(traces, layout)


def _utilization_figure(r) -> go.Figure:
    traces = [
        dict(type="scatter", x=r.t_h, y=100 * np.minimum(r.demand.sum(axis=1) / r.total_gpus, 2),
             name="Demand (capped at 200%)", line=dict(color=GREY, width=1.5, dash="dot")),
        dict(type="scatter", x=r.t_h, y=100 * r.utilization, name="GPUs held", line=dict(color=PALETTE[0], width=2)),
        dict(type="scatter", x=r.t_h, y=100 * r.busy_utilization, name="GPUs running jobs",
             line=dict(color=PALETTE[2], width=2)),
    ]
    return figure(traces, layout_dict("Utilization: held versus running jobs (the gap is the hoard and the saves)",
                                      "Hours", "% of the cluster"))


def _waits_figure(r) -> go.Figure:
    traces = [dict(type="box", y=w, name=name, marker=dict(color=PALETTE[i]), boxmean=True)
              for i, (name, w) in enumerate(zip(r.team_names, r.waits_by_team())) if w.size]
    layout = layout_dict("Wait from submission to first start, per job", "", "Hours")
    layout.update(showlegend=False, hovermode="closest")
    return figure(traces, layout)


def _replay(ctx, r, t: int) -> None:
    names = list(r.team_names)
    st.plotly_chart(_replay_figure(r, t), key=f"{ctx.slug}.sim.replay")
    lines = []
    borrowed = [f"{names[i]} {r.borrowed[t, i]:,.0f}" for i in range(len(names)) if r.borrowed[t, i] > 0.5]
    lines.append("Borrowing: " + (", ".join(borrowed) + " GPUs above guarantee" if borrowed else "nobody") + ".")
    at = np.flatnonzero(r.ev_tick == t)
    if at.size:
        for owner in sorted(set(r.ev_owner[at].tolist())):
            ev = at[r.ev_owner[at] == owner]
            victims = [r.team_names[k] for e in ev for k in r.ev_victim_team[e]]
            from_ = ", ".join(f"{victims.count(n)} from {n}" for n in dict.fromkeys(victims))
            lines.append(
                f"Preempted for {r.team_names[owner]}: {int(r.ev_victims[ev].sum())} jobs ({from_}), "
                f"{r.ev_gpus[ev].sum():,.0f} GPUs; work since their last checkpoint "
                f"{r.ev_lost_checkpoint_gpu_h[ev].sum():,.2f} GPU-hours (random victims on the same state: "
                f"{np.nansum(r.ev_lost_random_gpu_h[ev]):,.2f}), save on the signal "
                f"{r.ev_lost_signal_gpu_h[ev].sum():,.2f}."
            )
    else:
        lines.append("No preemption at this tick.")
    factors = ", ".join(f"{n} {f:.3f}" for n, f in zip(names, r.factor[t]))
    lines.append(f"Fair-share factors: {factors}.")
    st.markdown("  \n".join(lines))


@page.sim("fair_share")
def fair_share_panel(ctx):
    p, d = ctx.params, ctx.derivation
    st.markdown(f"##### Live: {p.sim_days:g} days of the cluster, one {p.tick_minutes:g}-minute tick at a time")
    seed = seed_input(ctx.slug)
    r = run_simulation(ctx.slug, p, seed, "Simulating the cluster…")
    holding = p.evals_hold_fraction > 0
    other_p = p.model_copy(update={"evals_hold_fraction": 0.0 if holding else 1.0})
    other = run_simulation(ctx.slug, other_p, seed, "Simulating the other Evals policy…",
                           variant="free" if holding else "hold")
    hoard_run, free_run = (r, other) if holding else (other, r)

    t_ret = r.tick_at(p.return_hour) if p.return_hour < p.sim_days * 24 else None
    before = slice(0, t_ret if t_ret else r.ticks)
    at_ret = (r.ev_tick == t_ret) if t_ret is not None else np.zeros(r.ev_tick.shape, bool)

    def analytic(key: str) -> str:
        return f"analytic {d[key].display(hint=False)}"

    row1 = st.columns(4)
    row1[0].metric("Pretraining's target, first tick (sim)", f"{r.target[0, 0]:,.1f} GPUs",
                   delta=analytic("allocation_gpus"), delta_color="off", border=True,
                   help="The simulation starts from last week's ledger, so its first water-filling is the hand "
                        "arithmetic. Afterwards the factors move and whole jobs round the split.")
    row1[1].metric("Borrowed before the return (sim mean)", f"{r.borrowed[before].sum(axis=1).mean():,.1f} GPUs",
                   delta=analytic("borrowed_gpus"), delta_color="off", border=True)
    row1[2].metric("Preempted at the return (sim)",
                   f"{r.preempted[t_ret].sum():,.0f} GPUs" if t_ret is not None else "no return in the run",
                   delta=analytic("preempted_gpus"), delta_color="off", border=True,
                   help="Jobs that happen to end at the same tick give some GPUs back without a preemption.")
    row1[3].metric("GPU-hours lost at the return, no warning (sim)",
                   f"{r.ev_lost_checkpoint_gpu_h[at_ret].sum():,.1f} / {np.nansum(r.ev_lost_random_gpu_h[at_ret]):,.1f} h",
                   delta=f"analytic {d.value('lost_gpu_hours_checkpoint_aware'):,.1f} / "
                         f"{d.value('lost_gpu_hours_without_warning'):,.1f} h", delta_color="off", border=True,
                   help="Work since the last checkpoint of the victims, in GPU-hours: least-work-lost victims / "
                        "random victims drawn on the same state. One run; the analytic figures are means.")
    row2 = st.columns(4)
    row2[0].metric("Preemptions over the run", f"{r.preemptions:,} jobs",
                   delta=f"save on signal {r.lost_signal_total:,.1f} h · blind {r.lost_no_warning_total:,.1f} h",
                   delta_color="off", border=True,
                   help="GPU-hours the same victims lose with a save on the signal, and without warning.")
    row2[1].metric("Lowest utilization when oversubscribed", f"{100 * r.min_utilization_when_oversubscribed:,.1f}%"
                   if r.oversubscribed.any() else "never oversubscribed", border=True,
                   help="GPUs held over the cluster, at every tick where demand reached the cluster.")
    row2[2].metric("GPUs running jobs: Evals holds / releases",
                   f"{100 * hoard_run.busy_utilization.mean():,.1f}% / {100 * free_run.busy_utilization.mean():,.1f}%",
                   delta=f"cap {d['busy_utilization_cap_share'].display()} while holding", delta_color="off", border=True)
    row2[3].metric("Evals' mean start wait: holds / releases",
                   f"{_mean_wait_min(hoard_run.waits_by_team()[3])} / {_mean_wait_min(free_run.waits_by_team()[3])}",
                   delta=f"hoard buys at most {d['owner_wait_s'].display('min')}", delta_color="off", border=True)

    st.plotly_chart(_alloc_figure(r, p, t_ret), key=f"{ctx.slug}.sim.alloc")
    st.plotly_chart(_factor_figure(r), key=f"{ctx.slug}.sim.factor")
    st.plotly_chart(_utilization_figure(r), key=f"{ctx.slug}.sim.util")
    st.plotly_chart(_waits_figure(r), key=f"{ctx.slug}.sim.waits")

    key = f"{ctx.slug}.replay_t"
    st.markdown("**Replay** the run: press Play to watch the owner return and the borrowers get preempted.")
    replay(key, len(r.t_h), float(r.tick_h) * 3600, lambda i: _replay(ctx, r, i), label="Tick of the run",
           start=int(t_ret) if t_ret is not None else 0)
    jobs = int((r.job_state > 0).sum())
    st.caption(
        f"{jobs:,} jobs arrived over {p.sim_days:g} days ({int((r.job_state == 3).sum()):,} finished). "
        f"The run starts from last week's ledger and jobs, so its first tick repeats the hand arithmetic; then "
        f"the factors move towards the fixed point where each borrower's weight matches its usage, and whole "
        f"{p.job_gpus}-GPU jobs round the split. Pretraining and Post-training ask for more than the cluster, so "
        f"their waits grow with the run: a scheduler decides who waits, it cannot remove the wait. "
        f"Change the seed for another run."
    )


page.render()
