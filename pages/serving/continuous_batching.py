import math
from functools import lru_cache

import numpy as np
import plotly.graph_objects as go
import streamlit as st
from pydantic import ValidationError

from models.core import solve_values, values_only
from models.serving import continuous_batching as model
from models.sim.batching import CUT
from ui.figures import figure, vline
from ui.charts import INK, PALETTE, layout_dict, sweep_values
from ui.question_page import QuestionPage
from ui.replay import replay
from ui.sim_panel import run_simulation, seed_input

page = QuestionPage("continuous-batching")
REPLAY_DT_S = 0.25  # replay positions: a quarter second of simulated time each


def _sweep(ctx, field, keys, n=60, lo=None, hi=None, also=None):
    """Solve the scenario with one knob moved; points where the scenario is not valid are skipped.
    `also(x)` may return other fields to move with it (ones the plotted steps do not depend on).
    The grid is solved once per setting of the other knobs (see `_points`); the scenario's own
    point, which moves with its knob, is solved on its own, as ui/charts.sweep does."""
    current = getattr(ctx.params, field)
    with_extra = lambda x: (x, tuple(sorted((also(x) if also else {}).items())))  # noqa: E731
    xs_all = sweep_values(ctx.params, field, n, lo, hi)
    grid = tuple(with_extra(x) for x in xs_all if x != current)
    rest = ctx.params.model_copy(update={field: None})
    solved = dict(zip((x for x, _ in grid), _points(rest, field, tuple(keys), grid)))
    if current in xs_all:
        solved[current] = _points(rest, field, tuple(keys), (with_extra(current),))[0]
    xs, ys = [], {k: [] for k in keys}
    for x in xs_all:
        values = solved[x]
        if values is not None:
            xs.append(x)
            for k, v in zip(keys, values):
                ys[k].append(v)
    return xs, ys


@lru_cache(maxsize=128)
def _points(rest, field, keys, points):
    """Each point's values of `keys` (None where the scenario is refused), solved uncached and
    values only (see ui/charts.py): keyed by every other knob, so moving this chart's own knob
    re-solves only its own point."""
    base = rest.model_dump()
    out = []
    with values_only():
        for x, extra in points:
            try:
                point = model.Params.model_validate({**base, field: x, **dict(extra)})
            except ValidationError:
                out.append(None)
                continue
            d = solve_values(model.solve, point, keys)
            out.append(tuple(float(d.value(k)) for k in keys))
    return tuple(out)


def _mark_dicts(x, label, log_x=True) -> tuple[dict, dict]:
    """The current value: a dotted line and its label, as dicts (ui/figures.py)."""
    return (vline(x, color="#64748b", dash="dot", width=1),
            dict(x=math.log10(x) if log_x else x, y=1, yref="paper", text=label, showarrow=False,
                 xanchor="left", xshift=4, yanchor="top", font=dict(size=11)))


@page.chart("caps_vs_context")
def caps_vs_context(ctx):
    keys = ["batch_cap_kv", "batch_cap_tpot", "ridge_batch"]
    xs, ys = _sweep(ctx, "max_context_tokens", keys, n=30,
                    also=lambda x: {"prompt_tokens": min(ctx.params.prompt_tokens, x // 2)})
    names = {"batch_cap_kv": "KV cap (all at full context)", "batch_cap_tpot": "TPOT cap (worst step)",
             "ridge_batch": "Ridge batch (compute-bound above)"}
    traces = [dict(type="scatter", x=xs, y=ys[k], name=names[k], mode="lines",
                   line=dict(color=PALETTE[i], width=2.5, dash="dash" if k == "ridge_batch" else "solid",
                             shape="hv" if k != "ridge_batch" else "linear"))
              for i, k in enumerate(keys)]
    layout = layout_dict("Batch caps against the max context (log-log)", "Max context (tokens)", "Sequences",
                         log_x=True, log_y=True)
    shape, note = _mark_dicts(ctx.params.max_context_tokens, f"{ctx.params.max_context_tokens:,} tokens")
    layout.update(shapes=[shape], annotations=[note])
    return figure(traces, layout)


@page.chart("step_sides_vs_context")
def step_sides_vs_context(ctx):
    keys = ["kv_capped_step_memory_s", "kv_capped_step_compute_s"]
    # The step at the KV cap depends on the context only: let the prompt and the TPOT target
    # stand aside so short and very long contexts stay valid scenarios.
    xs, ys = _sweep(ctx, "max_context_tokens", keys, n=30,
                    also=lambda x: {"prompt_tokens": min(ctx.params.prompt_tokens, x // 2), "tpot_target_ms": 500.0})
    traces = [dict(type="scatter", x=xs, y=[v * 1000 for v in ys[k]], name=name, mode="lines",
                   line=dict(color=PALETTE[i], width=2.5))
              for i, (k, name) in enumerate([(keys[0], "Bytes side: weights + every sequence's KV"),
                                             (keys[1], "FLOP side: the same batch's math")])]
    layout = layout_dict("A decode step at the KV cap: bytes against FLOP", "Max context (tokens)", "ms per step",
                         log_x=True)
    shape, note = _mark_dicts(ctx.params.max_context_tokens, f"{ctx.params.max_context_tokens:,} tokens")
    shapes, notes = [shape], [note]
    cross = ctx.derivation.value("bandwidth_bound_above_tokens")
    if math.isfinite(cross) and xs and xs[0] <= cross <= xs[-1]:
        shapes.append(vline(cross, color="#16a34a", dash="dash", width=1))
        notes.append(dict(x=math.log10(cross), y=0.5, yref="paper", text="bandwidth-bound →", showarrow=False,
                          xanchor="left", xshift=4, font=dict(size=11, color="#16a34a")))
    layout.update(shapes=shapes, annotations=notes)
    return figure(traces, layout)


@page.chart("tpot_vs_chunk")
def tpot_vs_chunk(ctx):
    keys = ["tpot_bound_s", "replica_capacity_rps"]
    xs, ys = _sweep(ctx, "chunk_tokens", keys, n=30)
    # Two y axes (the latency left, the capacity right), written out as make_subplots with
    # secondary_y and add_hline would write them (ui/figures.py).
    traces = [
        dict(type="scatter", x=xs, y=[v * 1000 for v in ys["tpot_bound_s"]], name="Worst-step TPOT (a bound), ms",
             line=dict(color=PALETTE[0], width=2.5), xaxis="x", yaxis="y"),
        dict(type="scatter", x=xs, y=ys["replica_capacity_rps"], name="Replica capacity, req/s",
             line=dict(color=PALETTE[2], width=2.5), xaxis="x", yaxis="y2"),
    ]
    layout = layout_dict("Chunk size: token latency against request capacity", "Prefill chunk (tokens)", "ms",
                         log_x=True)
    layout["xaxis"].update(anchor="y", domain=[0.0, 0.94])
    layout["yaxis"].update(anchor="x", domain=[0.0, 1.0], rangemode="tozero")
    layout["yaxis2"] = dict(anchor="x", overlaying="y", side="right", title=dict(text="requests/s"),
                            showgrid=False, rangemode="tozero")
    target = ctx.params.tpot_target_ms
    shape, note = _mark_dicts(ctx.params.chunk_tokens, f"{ctx.params.chunk_tokens:,} tokens")
    layout["shapes"] = [dict(type="line", x0=0, x1=1, xref="x domain", y0=target, y1=target, yref="y",
                             line=dict(color=PALETTE[1], dash="dash", width=1)), shape]
    layout["annotations"] = [dict(text="TPOT target", showarrow=False, x=0, xanchor="left", xref="x domain",
                                  y=target, yanchor="bottom", yref="y"), note]
    return figure(traces, layout)


# ---------------------------------------------------------------------------------------------
# The live simulation


def _ms(x: float) -> str:
    return "-" if not math.isfinite(x) else (f"{x * 1000:,.0f} ms" if x >= 0.1 else f"{x * 1000:,.1f} ms")


def _timeline(r, t_mark: float) -> go.Figure:
    """Time series: sequences in the batch, KV in use (% of budget), queue length."""
    # Redrawn at every replay step: plain dicts (ui/figures.py), with the two y axes written out as
    # make_subplots with secondary_y writes them (see tpot_vs_chunk).
    traces = [
        dict(type="scatter", x=r.t_s, y=r.batch, name="Sequences in the step",
             line=dict(color=PALETTE[0], width=1.5, shape="hv"), xaxis="x", yaxis="y"),
        dict(type="scatter", x=r.t_s, y=r.queue_len, name="Queued",
             line=dict(color=PALETTE[1], width=1.5, shape="hv"), xaxis="x", yaxis="y"),
    ]
    if r.kv_budget_tokens:
        traces.append(dict(type="scatter", x=r.t_s, y=100 * r.kv_tokens / r.kv_budget_tokens, name="KV in use (%)",
                           line=dict(color=PALETTE[2], width=1, shape="hv"), opacity=0.7, xaxis="x", yaxis="y2"))
    layout = layout_dict("The replica over time", "Seconds", "Sequences / requests")
    layout["xaxis"].update(anchor="y", domain=[0.0, 0.94])
    layout["yaxis"].update(anchor="x", domain=[0.0, 1.0])
    layout["yaxis2"] = dict(anchor="x", overlaying="y", side="right", title=dict(text="KV in use (%)"),
                            range=[0, 105], tickvals=[0, 25, 50, 75, 100], showgrid=False)
    layout["shapes"] = [vline(t_mark, color=INK, dash="dot", width=1)]
    return figure(traces, layout)


def _gantt(r, t_mark: float, max_rows: int = 80) -> go.Figure:
    """One line per request, drawn up to the replay time: queued, prefilling, streaming.
    Rows are the last `max_rows` requests to arrive by then, so playing the run grows the bars."""
    t = min(t_mark, r.horizon_s)
    k = int(np.searchsorted(r.arrival_s, t, side="right"))
    idx = np.arange(max(0, k - max_rows), k)
    admit = np.minimum(r.arrival_s + r.queue_wait_s, t)
    first_tok = np.where(np.isfinite(r.ttft_s), r.arrival_s + r.ttft_s, np.inf)
    leave = np.where(np.isfinite(r.exit_s), r.exit_s, np.inf)
    segs = {"queued": ([], []), "prefill": ([], []), "streaming": ([], [])}

    def add(name, x0, x1, row):
        if x1 > x0:
            segs[name][0].extend([x0, x1, None])
            segs[name][1].extend([row, row, None])

    for row, i in enumerate(idx):
        a, q, f, z = r.arrival_s[i], admit[i], first_tok[i], min(leave[i], t)
        add("queued", a, q, row)
        add("prefill", q, min(f, z), row)
        add("streaming", f, z, row)
    colors = {"queued": PALETTE[1], "prefill": PALETTE[4], "streaming": PALETTE[0]}
    traces = [dict(type="scatter", x=x, y=y, name=name, mode="lines", line=dict(color=colors[name], width=4))
              for name, (x, y) in segs.items()]
    cut = [row for row, i in enumerate(idx) if r.status[i] == CUT and leave[i] <= t]
    if cut:
        traces.append(dict(type="scatter", x=[leave[idx[row]] for row in cut], y=cut, mode="markers",
                           name="cut (slow client)", marker=dict(symbol="x", color=INK, size=9)))
    layout = layout_dict("The last requests to arrive, one row each", "Seconds", "Request")
    layout["yaxis"].update(autorange="reversed", showticklabels=False)
    layout["xaxis"]["range"] = [r.arrival_s[idx[0]] - 0.5 if idx.size else 0, t + 0.5]
    layout.update(height=420, hovermode="closest", shapes=[vline(t, color=INK, dash="dot", width=1)])
    return figure(traces, layout)


def _distributions(r, d) -> go.Figure:
    ttft = r.ttft_s[np.isfinite(r.ttft_s)] * 1000
    gaps = r.token_gaps_s * 1000
    # Two histograms side by side, written out as make_subplots(rows=1, cols=2, subplot_titles=...)
    # writes them (ui/figures.py): its default 0.2 / cols spacing between the two domains.
    traces, shapes = [], []
    if ttft.size:
        traces.append(dict(type="histogram", x=ttft, nbinsx=40, marker=dict(color=PALETTE[4]), name="TTFT",
                           xaxis="x", yaxis="y"))
    if gaps.size:
        traces.append(dict(type="histogram", x=gaps, nbinsx=60, marker=dict(color=PALETTE[0]), name="token gap",
                           xaxis="x2", yaxis="y2"))
        shapes.append(dict(vline(d.value("tpot_bound_s") * 1000, color=PALETTE[1], dash="dash"),
                           xref="x2", yref="y2 domain"))
    # Short subplot titles: each has half the width, which on a phone is ~170 px.
    titles = [dict(text=text, x=x, xanchor="center", xref="paper", y=1.0, yanchor="bottom", yref="paper",
                   showarrow=False, font=dict(size=16))
              for text, x in (("TTFT (ms)", 0.225), ("Token gap (ms)", 0.775))]
    layout = dict(
        xaxis=dict(anchor="y", domain=[0.0, 0.45]), yaxis=dict(anchor="x", domain=[0.0, 1.0]),
        xaxis2=dict(anchor="y2", domain=[0.55, 1.0]), yaxis2=dict(anchor="x2", domain=[0.0, 1.0]),
        annotations=titles, height=300, showlegend=False, margin=dict(l=10, r=10, t=40, b=10),
        **({"shapes": shapes} if shapes else {}),
    )
    return figure(traces, layout)


@page.sim("batching")
def batching_panel(ctx):
    p, d, slug = ctx.params, ctx.derivation, ctx.slug
    st.markdown(f"##### Live: one replica, step by step ({p.policy} scheduler, {p.arrival_rps:g} req/s)")
    seed = seed_input(slug)
    r = run_simulation(slug, p, seed, "Simulating the replica…")
    cols = st.columns(4)
    cols[0].metric("Simulated tokens/s", f"{r.steady_tokens_per_s:,.0f}", border=True,
                   help=f"After the first {r.warmup_s:,.0f} s (the replica filling up). Analytic at this load: "
                        f"{d['expected_tokens_per_s'].display()}; no schedule beats "
                        f"{d['tokens_per_s_ceiling'].display()}.")
    cols[1].metric("Sequences in the engine", f"{r.steady_batch:,.1f}", border=True,
                   help=f"Time-average after warm-up. Little's law predicts {d['live_sequences'].display()}.")
    cols[2].metric("TPOT p95", _ms(r.tpot(95)), border=True,
                   help="Per request: (last token − first token) / (tokens − 1); "
                        "the 95th percentile over requests.")
    cols[3].metric("TTFT p50", _ms(r.ttft(50)), border=True)
    cols = st.columns(4)
    cols[0].metric("Token gap p95", _ms(r.token_gap(95)), border=True,
                   help="Every gap between two tokens of one stream, across all streams.")
    cols[1].metric("Done / arrived", f"{r.done} / {r.arrived}", border=True,
                   help=f"Arrived = done + cut + running + queued: {r.arrived} = {r.done} + {r.cut} + {r.running} + "
                        f"{r.queued}, over {r.horizon_s:,.0f} s.")
    cols[2].metric("Cut / preempted", f"{r.cut} / {r.preemptions_total}", border=True,
                   help="Streams cut for a full buffer; sequences preempted when KV ran out.")
    cols[3].metric("Queue: avg / λW", f"{r.mean_queue_len:,.2f} / {r.arrival_rate * r.mean_queue_wait_s:,.2f}",
                   border=True, help="Little's law on the admission queue: time-average length against "
                                     "arrival rate × mean wait. The two must agree.")
    gap_ref = (f"≤ {d['tpot_bound_s'].display()} (worst step)" if p.policy == "chunked"
               else f"≈ {d['unchunked_gap_s'].display()} when a prompt runs alone" if p.policy == "continuous"
               else "static: no prompt joins a running batch")
    rows = [
        ("Tokens per second (after warm-up)", f"{r.steady_tokens_per_s:,.0f}",
         f"{d['expected_tokens_per_s'].display()} (ceiling {d['tokens_per_s_ceiling'].display()})"),
        ("Requests finished per second", f"{r.steady_requests_per_s:,.2f}", d["served_rps"].display()),
        ("Sequences in the engine", f"{r.steady_batch:,.1f}", d["live_sequences"].display()),
        ("Mean TPOT", _ms(float(np.nanmean(r.tpot_s)) if np.isfinite(r.tpot_s).any() else math.nan),
         d["tpot_at_load_s"].display()),
        ("Token gap p95", _ms(r.token_gap(95)), gap_ref),
        ("TTFT p50 / p95", f"{_ms(r.ttft(50))} / {_ms(r.ttft(95))}",
         f"≥ {d['ttft_idle_chunked_s' if p.policy == 'chunked' else 'prefill_time_s'].display()} "
         "(idle, mean prompt)"),
        ("TPOT p50 / p95", f"{_ms(r.tpot(50))} / {_ms(r.tpot(95))}", f"{d['tpot_at_load_s'].display()} typical"),
    ]
    # A static table wraps its cells, so on a phone the Analytic column is on screen (a dataframe
    # keeps each cell on one line and cut the column off at 390 px).
    st.table({"Figure": [x[0] for x in rows], "Simulated": [x[1] for x in rows], "Analytic": [x[2] for x in rows]},
             hide_index=True)
    dt = REPLAY_DT_S

    def draw(i: int) -> None:
        t = i * dt
        k = max(0, int(np.searchsorted(r.t_s, t, side="right")) - 1) if r.t_s.size else 0
        if r.t_s.size:
            kv_pct = 100 * r.kv_tokens[k] / r.kv_budget_tokens if r.kv_budget_tokens else 0.0
            seqs = f"{r.batch[k]} sequence{'s' if r.batch[k] != 1 else ''}"
            st.caption(f"At {t:,.1f} s: {seqs} in the step, {r.queue_len[k]} queued, "
                       f"KV {kv_pct:,.0f}% in use, step {r.step_s[k] * 1000:,.1f} ms.")
        st.plotly_chart(_timeline(r, t), key=f"{slug}.sim.batching.timeline")
        st.plotly_chart(_gantt(r, t), key=f"{slug}.sim.batching.gantt")

    n_steps = int(r.horizon_s // dt) + 1
    key = f"{slug}.replay_t"
    if st.session_state.get(key, 0) > n_steps - 1:  # a new scenario can make the run shorter
        st.session_state[key] = n_steps - 1
    replay(key, n_steps, dt, draw)
    st.plotly_chart(_distributions(r, d), key=f"{slug}.sim.batching.dist")
    st.caption(
        f"{r.arrived} requests over {r.horizon_s:,.0f} s ({r.iterations:,} engine steps). Lengths are lognormal "
        f"around the means (σ = {p.length_spread:g}), clipped to the context; {int(r.slow.sum())} slow clients. "
        "The dashed line on the right histogram is the analytic worst step. Change the seed for another run."
    )
    if st.toggle("Compare the three schedulers on these same requests", key=f"{slug}.sim_compare"):
        table = {"Scheduler": [], "Tokens/s": [], "Done": [], "Queued at end": [], "TTFT p50": [], "TPOT p95": [],
                 "Token gap p95": []}
        for pol in ("static", "continuous", "chunked"):
            q = p.model_copy(update={"policy": pol})
            rr = r if pol == p.policy else run_simulation(slug, q, seed, f"Simulating {pol}…")
            table["Scheduler"].append(pol)
            table["Tokens/s"].append(f"{rr.tokens_per_s:,.0f}")
            table["Done"].append(rr.done)
            table["Queued at end"].append(rr.queued)
            table["TTFT p50"].append(_ms(rr.ttft(50)))
            table["TPOT p95"].append(_ms(rr.tpot(95)))
            table["Token gap p95"].append(_ms(rr.token_gap(95)))
        st.dataframe(table, hide_index=True, width="stretch",
                     column_config={"Scheduler": st.column_config.Column(pinned=True)})  # stays as a phone scrolls


page.render()
