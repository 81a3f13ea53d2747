"""LLM-serving page figures built as plain dicts (ui/figures.py) send Streamlit the JSON the old
validated builds sent. The pattern of tests/app/test_page_figures_plain.py, whose helpers this file
uses (what st.plotly_chart sends, the page's globals, a chart's ctx, the one normalisation): each
OLD_* function below is a page's former builder, kept verbatim (go.Figure, add_trace,
add_vline/add_hline/add_annotation, make_subplots, base_layout); figures a simulation panel drew
inline are wrapped in a function of what they read, without the st.plotly_chart call, and the
page's constants are bound locally. Each test builds the figure both ways, at the page's default
scenario and at one other, and compares what st.plotly_chart would send."""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go
import pytest
from plotly.subplots import make_subplots

from models.registry import QUESTIONS
from tests.app.test_page_figures_plain import _assert_same, _chart, _ctx, _page, _sent, _sim
from ui.charts import INK, MAX_SWEEP_POINTS, PALETTE, base_layout, legend_line, sweep, sweep_figure, sweep_values

# --- rag-10k-qps ----------------------------------------------------------------------------------

RAG = "rag-10k-qps"


STAGES = ("latency_budget_ms_network", "latency_budget_ms_embed", "latency_budget_ms_retrieve",
          "latency_budget_ms_rerank", "latency_budget_ms_llm_queue", "latency_budget_ms_prefill")


@pytest.mark.parametrize("changes", [{}, {"ttft_slo_ms": 800.0, "passages_in_prompt": 10, "weight_precision": "bf16"}],
                         ids=["default", "other"])
def test_rag_charts_are_declared_over_the_steps(changes):
    """The budget bar is the six stage steps end to end with the target at the knob; the prompt chart
    is the page's sweep of passages pasted in, each point at that scenario's prompt tokens."""
    ctx = _ctx(RAG, **changes)
    d, p = ctx.derivation, ctx.params
    sent = _sent(_chart(RAG, "latency_budget")(ctx))
    bars = [t for t in sent["data"] if t["type"] == "bar"]
    assert [t["x"][0] for t in bars] == [pytest.approx(d.value(k)) for k in STAGES]
    assert sum(t["x"][0] for t in bars) == pytest.approx(d.value("latency_budget_ms"))
    assert [t["text"][0] for t in bars] == [d[k].display(hint=False) for k in STAGES]
    assert sent["layout"]["barmode"] == "stack" and sent["layout"]["legend"]["traceorder"] == "normal"
    assert sent["layout"]["shapes"][0]["x0"] == pytest.approx(p.ttft_slo_ms)
    assert sent["data"][-1]["name"] == f"target {p.ttft_slo_ms:g} ms"
    assert d["latency_budget_ms"].display() in sent["layout"]["title"]["text"]

    sent = _sent(_chart(RAG, "llm_vs_prompt")(ctx))
    lines = [t for t in sent["data"] if t["mode"] == "lines"]
    assert [t["name"] for t in lines] == ["No cache, all fp8", "No cache, all bf16",
                                          f"With the cache ({p.weight_precision} weights)"]
    for n_passages in (1, 7, 40):  # each point is a solve with that many passages pasted in
        at = QUESTIONS[RAG].solve(p.model_copy(update={"passages_in_prompt": n_passages}))
        i = lines[0]["x"].index(pytest.approx(at.value("prompt_tokens")))
        assert lines[2]["y"][i] == pytest.approx(at.value("llm_nodes_with_cache"))
    marker = sent["data"][1]
    assert marker["x"] == [pytest.approx(d.value("prompt_tokens"))] and marker["y"] == [pytest.approx(d.value("llm_nodes_no_cache_fp8"))]
    assert sent["layout"]["shapes"][0]["x0"] == pytest.approx(d.value("prompt_tokens"))
    assert sent["layout"]["yaxis"]["title"]["text"] == f"Nodes of {p.tp_degree} GPUs"


# --- continuous-batching --------------------------------------------------------------------------

CB = "continuous-batching"


def OLD_cb_timeline(r, t_mark: float) -> go.Figure:
    """Time series: sequences in the batch, KV in use (% of budget), queue length."""
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    fig.add_trace(go.Scatter(x=r.t_s, y=r.batch, name="Sequences in the step", line=dict(color=PALETTE[0], width=1.5),
                             line_shape="hv"), secondary_y=False)
    fig.add_trace(go.Scatter(x=r.t_s, y=r.queue_len, name="Queued", line=dict(color=PALETTE[1], width=1.5),
                             line_shape="hv"), secondary_y=False)
    if r.kv_budget_tokens:
        fig.add_trace(go.Scatter(x=r.t_s, y=100 * r.kv_tokens / r.kv_budget_tokens, name="KV in use (%)",
                                 line=dict(color=PALETTE[2], width=1), opacity=0.7, line_shape="hv"),
                      secondary_y=True)
    fig.add_vline(x=t_mark, line=dict(color=INK, dash="dot", width=1))
    base_layout(fig, "The replica over time", "Seconds", "Sequences / requests")
    fig.update_yaxes(title_text="KV in use (%)", range=[0, 105], tickvals=[0, 25, 50, 75, 100], secondary_y=True,
                     showgrid=False)
    return fig


def OLD_cb_gantt(r, t_mark: float, max_rows: int = 80) -> go.Figure:
    """One line per request, drawn up to the replay time: queued, prefilling, streaming.
    Rows are the last `max_rows` requests to arrive by then, so playing the run grows the bars."""
    from models.sim.batching import CUT

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
    fig = go.Figure()
    colors = {"queued": PALETTE[1], "prefill": PALETTE[4], "streaming": PALETTE[0]}
    for name, (x, y) in segs.items():
        fig.add_trace(go.Scatter(x=x, y=y, name=name, mode="lines", line=dict(color=colors[name], width=4)))
    cut = [row for row, i in enumerate(idx) if r.status[i] == CUT and leave[i] <= t]
    if cut:
        fig.add_trace(go.Scatter(x=[leave[idx[row]] for row in cut], y=cut, mode="markers", name="cut (slow client)",
                                 marker=dict(symbol="x", color=INK, size=9)))
    fig.add_vline(x=t, line=dict(color=INK, dash="dot", width=1))
    base_layout(fig, "The last requests to arrive, one row each", "Seconds", "Request")
    fig.update_yaxes(autorange="reversed", showticklabels=False)
    fig.update_xaxes(range=[r.arrival_s[idx[0]] - 0.5 if idx.size else 0, t + 0.5])
    fig.update_layout(height=420, hovermode="closest")
    return fig


def OLD_cb_distributions(r, gap_s: float) -> go.Figure:
    # Short subplot titles: each has half the width, which on a phone is ~170 px.
    fig = make_subplots(rows=1, cols=2, subplot_titles=("TTFT (ms)", "Token gap (ms)"))
    ttft = r.ttft_s[np.isfinite(r.ttft_s)] * 1000
    gaps = r.token_gaps_s * 1000
    if ttft.size:
        fig.add_trace(go.Histogram(x=ttft, nbinsx=40, marker_color=PALETTE[4], name="TTFT"), row=1, col=1)
    if gaps.size:
        fig.add_trace(go.Histogram(x=gaps, nbinsx=60, marker_color=PALETTE[0], name="token gap"), row=1, col=2)
        fig.add_vline(x=gap_s * 1000, line=dict(color=PALETTE[1], dash="dash"), row=1, col=2)
    fig.update_layout(height=300, showlegend=False, margin=dict(l=10, r=10, t=40, b=10))
    return fig


@pytest.mark.parametrize("changes", [{}, {"prompt_tokens": 3000, "max_context_tokens": 16384, "tpot_target_ms": 90.0}],
                         ids=["default", "other"])
def test_cb_sweeps_are_declared_over_the_steps(changes):
    """The three charts, once the page's own sweep code, are declared sweeps: every point is a fresh
    solve with the swept knob moved (and, over the context, a prompt kept under half of it and, for
    the step at the KV cap, a TPOT target out of the way); the capacity is on the right axis."""
    ctx = _ctx(CB, **changes)
    p = ctx.params
    solved = lambda **u: QUESTIONS[CB].solve(QUESTIONS[CB].Params.model_validate({**p.model_dump(), **u}))  # noqa: E731
    sent = _sent(_chart(CB, "caps_vs_context")(ctx))
    lines = [tr for tr in sent["data"] if tr.get("showlegend") is not False]
    assert [tr["line"]["shape"] for tr in lines] == ["hv", "hv", "linear"]
    for tr, key in zip(lines, ("batch_cap_kv", "batch_cap_tpot", "ridge_batch")):
        for x, y in list(zip(tr["x"], tr["y"]))[::6]:
            if y is not None:
                assert y == pytest.approx(solved(max_context_tokens=x, prompt_tokens=min(p.prompt_tokens, x // 2)).value(key))
    sent = _sent(_chart(CB, "step_sides_vs_context")(ctx))
    memory = next(tr for tr in sent["data"] if tr.get("name", "").startswith("Bytes side"))
    for x, y in [pt for pt in zip(memory["x"], memory["y"]) if pt[1] is not None][::6]:
        at = solved(max_context_tokens=x, prompt_tokens=min(p.prompt_tokens, x // 2), tpot_target_ms=500.0)
        assert y == pytest.approx(1000 * at.value("kv_capped_step_memory_s"))  # drawn in ms
    cross = ctx.derivation.value("bandwidth_bound_above_tokens")
    marked = [sh["x0"] for sh in sent["layout"]["shapes"][1:]]
    assert (cross in marked) == (math.isfinite(cross) and memory["x"][0] <= cross <= memory["x"][-1])
    sent = _sent(_chart(CB, "tpot_vs_chunk")(ctx))
    tpot, capacity = (next(tr for tr in sent["data"] if tr.get("name", "").startswith(w)) for w in ("Worst-step", "Replica"))
    assert capacity["yaxis"] == "y2" and "yaxis" not in tpot and sent["layout"]["yaxis2"]["side"] == "right"
    assert sum(y is not None for y in tpot["y"]) >= 10
    for x, y_ms, rps in [pt for pt in zip(tpot["x"], tpot["y"], capacity["y"]) if pt[1] is not None][::4]:
        assert y_ms == pytest.approx(1000 * solved(chunk_tokens=x).value("tpot_bound_s"))
        assert rps == pytest.approx(solved(chunk_tokens=x).value("replica_capacity_rps"))
    target = [sh for sh in sent["layout"]["shapes"] if sh.get("yref") == "y" and sh["y0"] == sh["y1"]]
    assert [sh["y0"] for sh in target] == [p.tpot_target_ms]  # the target line, in the left axis' ms


# The default, and a static scheduler with slow clients: streams are cut (the gantt's cut markers).
CB_RUNS = [(0, {}), (4, {"policy": "static", "slow_client_fraction": 0.3, "stream_buffer_tokens": 32})]


@pytest.mark.parametrize("seed, changes", CB_RUNS, ids=["default", "other"])
def test_cb_simulation_figures(monkeypatch, seed, changes):
    from ui.declared_panel import Steps
    from ui.sim_figures import batching

    ctx = _ctx(CB, **changes)
    r = _sim(CB, seed, **changes)
    steps = Steps(QUESTIONS[CB].module.simulation_steps(ctx.params, r), ctx.derivation)
    marks = (0.0, 3.0, r.horizon_s / 2, r.horizon_s + 1.0)  # the replay's first step, one early, mid-run, past the end
    cuts = 0
    for t in marks:
        sent = _assert_same(monkeypatch, lambda: OLD_cb_timeline(r, t), lambda: batching.timeline(ctx, r, steps, t))
        assert sent["layout"]["yaxis2"]["overlaying"] == "y" and sent["data"][-1]["yaxis"] == "y2"
        sent = _assert_same(monkeypatch, lambda: OLD_cb_gantt(r, t), lambda: batching.gantt(ctx, r, steps, t))
        cuts += any(tr["name"] == "cut (slow client)" for tr in sent["data"])
    assert cuts or not changes  # the other run cuts streams: the cut markers' trace is compared too
    # The dashed gap is the scheduler's closed form: the worst step when chunked, the batch's step when static.
    gap_key = {"chunked": "tpot_bound_s", "static": "tpot_at_load_s"}[ctx.params.policy]
    sent = _assert_same(monkeypatch, lambda: OLD_cb_distributions(r, ctx.derivation.value(gap_key)),
                        lambda: batching.distributions(ctx, r, steps))
    assert len(sent["data"]) == 2 and sent["layout"]["shapes"][0]["xref"] == "x2"
    assert [a["text"] for a in sent["layout"]["annotations"]] == ["TTFT (ms)", "Token gap (ms)"]


# --- kv-cache-tiers -------------------------------------------------------------------------------

KV = "kv-cache-tiers"


def OLD_kv_occupancy(r, minutes, caps, t_mark):
    """The occupancy figure the replay's draw(step) built inline (st.plotly_chart dropped)."""
    from models.sim.kv_tiers import DRAM, HBM, SSD, TIER_NAMES
    from ui.sim_figures.kv_tiers import TIER_COLORS

    fig = go.Figure()
    for tier, o in enumerate((HBM, DRAM, SSD)):
        fig.add_trace(go.Scatter(x=minutes, y=r.occupancy_bytes[tier] / 1e9, name=f"{TIER_NAMES[tier]} in use",
                                 line=dict(color=TIER_COLORS[o], width=2.5)))
        fig.add_trace(go.Scatter(x=[minutes[0], minutes[-1]], y=[caps[tier] / 1e9] * 2, mode="lines",
                                 name=f"{TIER_NAMES[tier]} capacity", showlegend=False,
                                 line=dict(color=TIER_COLORS[o], width=1, dash="dash")))
    fig.add_vline(x=t_mark, line=dict(color=INK, dash="dot", width=1))
    base_layout(fig, "KV parked per tier (GB, log scale; dashed: capacity)", "Minutes", "GB", log_y=True)
    return fig


def OLD_kv_hits(centers, share, t_mark):
    """The hit-share figure the replay's draw(step) built inline (st.plotly_chart dropped)."""
    from models.sim.kv_tiers import DRAM, HBM, MISS, OUTCOMES, SSD
    from ui.sim_figures.kv_tiers import TIER_COLORS

    fig = go.Figure()
    for row, o in enumerate((HBM, DRAM, SSD, MISS)):
        fig.add_trace(go.Bar(x=centers, y=share[row] * 100, name=OUTCOMES[o], marker_color=TIER_COLORS[o]))
    fig.add_vline(x=t_mark, line=dict(color=INK, dash="dot", width=1))
    base_layout(fig, "Where returning turns found their KV, over time", "Minutes", "% of returning turns")
    fig.update_layout(barmode="stack", bargap=0.05)
    return fig


def OLD_kv_ttft(r, p):
    """The TTFT-against-prefix figure the panel built inline (st.plotly_chart dropped)."""
    from models.serving import kv_cache_tiers as model
    from models.sim.kv_tiers import DRAM, HBM, MISS, OUTCOMES, SSD
    from ui.sim_figures.kv_tiers import TIER_COLORS

    fig = go.Figure()
    grid = np.linspace(max(1.0, float(r.prefix_tokens[r.returning].min(initial=1))),
                       float(r.prefix_tokens.max(initial=2)), 40).tolist()
    floor = model.ttft_floor_s(p, grid)
    for o in (HBM, DRAM, SSD, MISS):
        m = r.outcome == o
        if not m.any():
            continue
        idx = np.flatnonzero(m)[:: max(1, int(m.sum()) // 1500)]  # keep the chart light
        fig.add_trace(go.Scatter(x=r.prefix_tokens[idx], y=r.ttft_s[idx], mode="markers", name=OUTCOMES[o],
                                 marker=dict(color=TIER_COLORS[o], size=5, opacity=0.45)))
        fig.add_trace(go.Scatter(x=grid, y=floor[o], mode="lines", showlegend=False,
                                 line=dict(color=TIER_COLORS[o], width=2), hoverinfo="skip"))
    base_layout(fig, "TTFT of returning turns against their prefix (lines: the model with no queueing)",
                "Prefix restored (tokens)", "TTFT (s, log)", log_y=True)
    fig.update_layout(hovermode="closest")
    return fig


@pytest.mark.parametrize("seed, changes", [(0, {}), (2, {"hbm_cache_gb": 10.0, "think_median_s": 300.0,
                                                         "sim_minutes": 60})], ids=["default", "other"])
def test_kv_simulation_figures(monkeypatch, seed, changes):
    from ui.declared_panel import Steps
    from ui.sim_figures import kv_tiers

    ctx = _ctx(KV, **changes)
    r, d = _sim(KV, seed, **changes), ctx.derivation
    steps = Steps(QUESTIONS[KV].module.simulation_steps(ctx.params, r), d)
    # What the panel read before it was declared (kv_cache_tiers.tiers_panel).
    minutes = r.grid_s / 60
    caps = (d.value("hbm_cache_bytes"), d.value("dram_cache_bytes"), d.value("ssd_cache_bytes"))
    share = r.hit_share_over_time()
    centers = (r.bin_edges_s[:-1] + r.bin_edges_s[1:]) / 2 / 60
    for t_mark in (0.0, 12.5, float(minutes[-1])):
        sent = _assert_same(monkeypatch, lambda: OLD_kv_occupancy(r, minutes, caps, t_mark),
                            lambda: kv_tiers.occupancy(ctx, r, steps, t_mark * 60))
        assert len(sent["data"]) == 6 and sent["layout"]["yaxis"]["type"] == "log"
        sent = _assert_same(monkeypatch, lambda: OLD_kv_hits(centers, share, t_mark),
                            lambda: kv_tiers.hits(ctx, r, steps, t_mark * 60))
        assert len(sent["data"]) == 4 and sent["layout"]["barmode"] == "stack"
    sent = _assert_same(monkeypatch, lambda: OLD_kv_ttft(r, ctx.params), lambda: kv_tiers.ttft_by_prefix(ctx, r, steps))
    assert len(sent["data"]) >= 4 and sent["layout"]["hovermode"] == "closest"


@pytest.mark.parametrize("changes", [{}, {"ssd_drives_per_node": 1, "think_median_s": 300.0}], ids=["default", "other"])
def test_kv_sweeps_are_declared_over_the_steps(changes):
    """The reload chart's points are fresh solves over the prefix, each break-even a dashed line where
    it lies on the chart; the shares chart stacks the four estimates to 100%."""
    ctx = _ctx(KV, **changes)
    p = ctx.params
    solved = lambda **u: QUESTIONS[KV].solve(QUESTIONS[KV].Params.model_validate({**p.model_dump(), **u}))  # noqa: E731
    sent = _sent(_chart(KV, "reload_vs_recompute")(ctx))
    lines = [tr for tr in sent["data"] if tr.get("showlegend") is not False]
    for tr, key in zip(lines, ("recompute_s", "reload_s_ssd", "reload_s_dram")):
        for x, y in [pt for pt in zip(tr["x"], tr["y"]) if pt[1] is not None][::8]:
            assert y == pytest.approx(solved(conversation_tokens=x).value(key))
    xs = lines[0]["x"]
    marked = {sh["x0"] for sh in sent["layout"]["shapes"][1:]}
    for key in ("break_even_prefix_tokens_ssd", "break_even_prefix_tokens_dram"):
        n = ctx.derivation.value(key)
        on_chart = isinstance(n, float) and math.isfinite(n) and xs[0] <= n <= xs[-1]
        assert (n in marked) == on_chart, key
    sent = _sent(_chart(KV, "shares_vs_think")(ctx))
    areas = [tr for tr in sent["data"] if tr.get("stackgroup")]
    assert len(areas) == 4
    for i in range(0, len(areas[0]["x"]), 9):
        assert sum(a["y"][i] for a in areas) == pytest.approx(100)  # every returning turn lands somewhere


# --- moe-1t-serving -------------------------------------------------------------------------------

MOE = "moe-1t-serving"


# The default (no compute-bound batch inside the KV's sweep) and one where the FLOP take over.
MOE_SCENARIOS = [{}, {"context_tokens": 500, "output_tokens": 200, "batch_per_gpu": 256, "imbalance": 2.0}]


@pytest.mark.parametrize("changes", MOE_SCENARIOS, ids=["default", "other"])
def test_moe_charts(changes):
    """Every batch chart sweeps from 1 to the KV's cap (at least the scenario's batch), each point a solve;
    the step's parts are stacked bytes under the FLOP, all-to-all and step lines, in ms; the compute-bound
    batch is marked where it falls inside the sweep."""
    ctx = _ctx(MOE, **changes)
    d, p, q = ctx.derivation, ctx.params, QUESTIONS[MOE]
    hi = max(2, int(d.value("max_batch_per_gpu")), p.batch_per_gpu)
    b = d.value("compute_bound_batch_per_gpu")
    marked = math.isfinite(b) and 1 <= b <= hi
    assert marked == bool(changes)  # both branches of the mark are drawn
    step = _sent(_chart(MOE, "step_breakdown_vs_batch")(ctx))
    keys = ["weight_read_s", "kv_read_s", "compute_s", "all_to_all_s", "decode_step_s"]
    lines = step["data"][:5]
    assert [t["name"] for t in lines] == ["weight read", "KV read (stacked on weights)", "FLOP, hottest GPU",
                                          "two all-to-alls × MoE layers", "decode step"]
    assert [t.get("stackgroup") for t in lines] == ["bytes", "bytes", None, None, None]
    assert lines[0]["x"][0] == 1 and lines[0]["x"][-1] == hi and p.batch_per_gpu in lines[0]["x"]
    for i in (0, 20, -1):
        try:
            at = q.solve(q.Params.model_validate({**p.model_dump(), "batch_per_gpu": lines[0]["x"][i]}))
        except ValueError:  # a batch the model refuses is a gap
            assert [t["y"][i] for t in lines] == [None] * 5
            continue
        assert [t["y"][i] for t in lines] == [pytest.approx(1000 * at.value(k)) for k in keys]
    assert step["data"][5]["x"] == [p.batch_per_gpu] and step["data"][5]["y"] == [pytest.approx(1000 * d.value("decode_step_s"))]
    assert step["layout"]["xaxis"]["type"] == "log"
    for name, keys in (("tokens_per_user_vs_batch", ["tokens_per_s_per_user", "tokens_per_s_per_user_balanced"]),
                       ("rack_tokens_vs_batch", ["tokens_per_s"]), ("imbalance_loss_vs_batch", ["imbalance_throughput_loss"])):
        sent = _sent(_chart(MOE, name)(ctx))
        lines = [t for t in sent["data"] if t["mode"] == "lines"]
        assert lines[0]["x"][0] == 1 and lines[0]["x"][-1] == hi, name
        at = q.solve(p.model_copy(update={"batch_per_gpu": lines[0]["x"][10]}))
        scale = 100 if name == "imbalance_loss_vs_batch" else 1  # a share is drawn in %
        assert [t["y"][10] for t in lines] == [pytest.approx(scale * at.value(k)) for k in keys], name
    sent = _sent(_chart(MOE, "tokens_per_user_vs_batch")(ctx))
    assert sent["data"][0]["name"] == f"with imbalance {p.imbalance:g} ×"
    for sent in (step, _sent(_chart(MOE, "imbalance_loss_vs_batch")(ctx))):
        shapes, notes = sent["layout"]["shapes"], sent["layout"].get("annotations", [])
        assert len(shapes) == 1 + marked and len(notes) == marked
        if marked:
            assert shapes[-1]["x0"] == pytest.approx(b) and notes[0]["x"] == pytest.approx(math.log10(b))
            assert notes[0]["text"] == f"compute-bound from {d['compute_bound_batch_per_gpu'].display(hint=False)}"


def test_moe_rack_diagram_reads_the_steps():
    import re

    ctx = _ctx(MOE)
    d = ctx.derivation
    sent = _sent(_page(MOE)["page"]._renderers[("diagram", "rack")](ctx))
    # the boxes' texts, their line breaks and bold undone
    text = " ".join(" ".join(re.sub(r"<[^>]+>", " ", a["text"]).split()) for a in sent["layout"]["annotations"])
    title = sent["layout"]["title"]
    assert (title["text"], title["subtitle"]["text"]) == ("GB200 NVL72: 72 GPUs, one NVLink domain",
                                                          "the memory plan and the step")
    for key in ("global_batch", "always_on_bytes_per_gpu", "kv_bytes_per_gpu", "decode_step_s", "tokens_per_s"):
        assert d[key].display(hint=False) in text, key
    other = _ctx(MOE, gpu="B200", tp_degree=8)
    assert _sent(_page(MOE)["page"]._renderers[("diagram", "rack")](other))["layout"]["title"]["text"].startswith("8 × B200")


# --- multi-lora -----------------------------------------------------------------------------------


@pytest.mark.parametrize("changes", [{}, {"lora_rank": 64, "targets": "all seven", "heavy_rank": 128}],
                         ids=["default", "other"])
def test_lora_adapter_bytes_is_a_family_of_sweeps_over_the_targets(changes):
    """One line per target set, each the page's solve with that set and the rank moved, in MB; the
    scenario's own set drawn bold and marked at its rank; the heavy adapter a diamond."""
    slug = "multi-lora"
    ctx = _ctx(slug, **changes)
    d, p = ctx.derivation, ctx.params
    sent = _sent(_chart(slug, "adapter_bytes")(ctx))
    lines = [t for t in sent["data"] if t["mode"] == "lines"]
    assert [t["name"] for t in lines] == [f"LoRA on {t}" + (" (now)" if t == p.targets else "")
                                          for t in ("q,v", "q,k,v,o", "all seven")]
    for t in lines:
        targets = t["name"].removeprefix("LoRA on ").removesuffix(" (now)")
        assert t["line"]["width"] == (3.5 if targets == p.targets else 2)
        for i in (0, len(t["x"]) // 2, -1):
            at = QUESTIONS[slug].solve(p.model_copy(update={"targets": targets, "lora_rank": t["x"][i]}))
            assert t["y"][i] == pytest.approx(at.value("adapter_bytes") / 1e6)
    markers = [t for t in sent["data"] if t["mode"] == "markers"]
    assert [(m["x"], m["y"]) for m in markers] == [
        ([p.lora_rank], [pytest.approx(d.value("adapter_bytes") / 1e6)]),
        ([p.heavy_rank], [pytest.approx(d.value("heavy_adapter_bytes") / 1e6)])]
    assert markers[1]["marker"]["symbol"] == "diamond"
    assert sent["layout"]["xaxis"]["type"] == sent["layout"]["yaxis"]["type"] == "log"


# --- speculative-decoding -------------------------------------------------------------------------

SPEC = "speculative-decoding"


def OLD_spec_speedup_vs_batch(ctx):
    d, p = ctx.derivation, ctx.params
    # Batches past the KV cap are refused, so the sweep ends at the cap.
    cap = int(d.value("batch_memory_cap"))
    # The point count follows the sweep cap (#18: 80 points, then 40), as the page's does.
    xs = sorted({int(round(x)) for x in np.geomspace(1, max(2, cap), MAX_SWEEP_POINTS)} | {int(d.value("decode_batch"))})
    lines = {"speedup_at_operating_batch": "The engine's full step (KV, all-reduces, fixed cost)",
             "speedup_at_operating_batch_weights_only": "Weights only (the ridge argument)"}
    ys = sweep(ctx.slug, p, "given_batch", list(lines), xs)
    fig = go.Figure()
    for i, (key, name) in enumerate(lines.items()):
        fig.add_trace(go.Scatter(x=xs, y=ys[key], name=name, mode="lines", line=dict(color=PALETTE[i], width=2.5)))
        fig.add_trace(go.Scatter(x=[d.value("decode_batch")], y=[d.value(key)], mode="markers", showlegend=False,
                                 marker=dict(color=PALETTE[i], size=11, line=dict(color="white", width=2)),
                                 hovertemplate=f"{name} now: %{{y:.3g}}×<extra></extra>"))
    fig.add_hline(y=1, line=dict(color="#dc2626", width=1.5))
    marks = (("break_even_batch_weights_only", "break-even, weights only", PALETTE[1]),
             ("break_even_batch_with_kv", "break-even, full step", PALETTE[0]),
             ("batch_memory_cap", "KV cap", INK))
    for key, label, color in marks:
        x = float(d.value(key))
        if math.isfinite(x) and 1 <= x <= max(2, cap):
            fig.add_vline(x=x, line=dict(color=color, dash="dash", width=1.5))
            fig.add_trace(legend_line(f"{label}: {x:,.0f}", color=color, dash="dash", width=1.5))
    return base_layout(fig, "Speedup against batch size, up to the KV cap (log x); below the red line speculation "
                            "costs throughput", "Decode batch (sequences)", "speedup (×)", log_x=True)


@pytest.mark.parametrize("changes", [{}, {"acceptance_rate": 0.65, "draft_tokens": 7, "draft_cost": 0.15,
                                          "prompt_tokens": 6000, "given_batch": 16}], ids=["default", "other"])
def test_spec_charts(monkeypatch, changes):
    ctx = _ctx(SPEC, **changes)
    d, p = ctx.derivation, ctx.params
    q = QUESTIONS[SPEC]
    # speedup against k: a line per acceptance rate (the scenario's own among 60-90%), k from 1 to 16
    sent = _sent(_chart(SPEC, "speedup_vs_k")(ctx))
    lines = [t for t in sent["data"] if t["mode"] == "lines+markers"]
    rates = sorted({0.6, 0.7, 0.8, 0.9, p.acceptance_rate})
    assert [t["name"] for t in lines] == [f"a = {100 * a:g}%" + (" (now)" if a == p.acceptance_rate else "")
                                          for a in rates]
    for t, a in zip(lines, rates):
        assert t["x"] == list(range(1, 17))
        at = q.solve(p.model_copy(update={"acceptance_rate": a, "draft_tokens": 5}))
        assert t["y"][4] == pytest.approx(at.value("speedup_small_batch"))
    title = sent["layout"]["title"]
    assert f"c = {100 * p.draft_cost:g}%" in title["text"] + title.get("subtitle", {}).get("text", "")
    assert [sh["y0"] for sh in sent["layout"]["shapes"] if sh["yref"] == "y"] == [1]  # the 1x line
    sent = _assert_same(monkeypatch, lambda: OLD_spec_speedup_vs_batch(ctx),
                        lambda: _chart(SPEC, "speedup_vs_batch")(ctx))
    assert len(sent["layout"]["shapes"]) == 1 + len(sent["data"]) - 4 >= 2  # the 1x line, a vline per legend row
    # the break-even against the prompt, the batch left to the engine; "never" is a gap
    sent = _sent(_chart(SPEC, "break_even_vs_context")(ctx))
    lines = [t for t in sent["data"] if t["mode"] == "lines+markers"]
    assert [t["name"] for t in lines] == ["Break-even, weights only", "Break-even, full step (missing = never)", "KV cap"]
    for i, prompt in enumerate(lines[0]["x"]):
        at = q.solve(p.model_copy(update={"given_batch": 0, "prompt_tokens": prompt}))
        for t, key in zip(lines, ("break_even_batch_weights_only", "break_even_batch_with_kv", "batch_memory_cap")):
            v = at.value(key)
            assert t["y"][i] == (pytest.approx(v) if math.isfinite(v) and v > 0 else None)
    assert lines[2]["line"]["dash"] == "dash" and 250 in lines[0]["x"] and 64000 in lines[0]["x"]


# --- disaggregated-prefill-decode -----------------------------------------------------------------

DPD = "disaggregated-prefill-decode"


def OLD_dpd_ai_vs_ridge(ctx):
    d = ctx.derivation
    names = ["Prefill (one prompt)", "Decode, batch 1", "Decode, operating batch", "Decode, any batch (ceiling)"]
    keys = ["prefill_arithmetic_intensity", "decode_ai_batch_1", "decode_arithmetic_intensity", "decode_ai_ceiling"]
    values = [float(d.value(k)) for k in keys]
    ridge = float(d.value("ridge_flops_per_byte"))
    colors = [PALETTE[1] if v > ridge else PALETTE[0] for v in values]
    fig = go.Figure(go.Bar(x=names, y=values, marker_color=colors, text=[f"{v:,.0f}" for v in values],
                           textposition="outside", hovertemplate="%{x}: %{y:,.0f} FLOP/B<extra></extra>",
                           showlegend=False))
    fig.add_hline(y=ridge, line=dict(color=INK, dash="dash", width=1.5))
    # In the legend: on the plot the label sat on the bars' own value labels.
    fig.add_trace(legend_line(f"ridge {ridge:,.0f} FLOP/B ({ctx.params.gpu}, {ctx.params.compute_precision} compute)",
                              color=INK, dash="dash", width=1.5))
    base_layout(fig, "Arithmetic intensity against the ridge (log scale): red is compute-bound", "", "FLOP per byte",
                log_y=True)
    top = max(values + [ridge])
    fig.update_yaxes(range=[math.log10(min(values + [ridge]) / 3), math.log10(top * 4)])
    fig.update_layout(hovermode="closest")
    return fig


def OLD_dpd_crossover_vs_interference(ctx):
    p = ctx.params
    xs = sweep_values(p, "interference", 60)
    ys = sweep(ctx.slug, p, "interference", ["crossover_load"], xs)["crossover_load"]
    fig = go.Figure(go.Scatter(x=[x * 100 for x in xs], y=[y if math.isfinite(y) else None for y in ys],
                               mode="lines", name="crossover load", line=dict(color=PALETTE[0], width=2.5)))
    cur = float(ctx.derivation.value("crossover_load"))
    if math.isfinite(cur):
        fig.add_trace(go.Scatter(x=[p.interference * 100], y=[cur], mode="markers", showlegend=False,
                                 marker=dict(color=PALETTE[0], size=11, line=dict(color="white", width=2))))
    fig.add_hline(y=p.request_rate, line=dict(color=PALETTE[1], dash="dot", width=1.5))
    fig.add_trace(legend_line(f"scenario load {p.request_rate:,.0f} req/s: the split pays where the curve is below it",
                              color=PALETTE[1], dash="dot", width=1.5))
    fig.add_vline(x=p.interference * 100, line=dict(color="#64748b", dash="dot", width=1))
    return base_layout(fig, "Where the crossover load moves with the interference assumption (log scale)",
                       "Prefill interference on decode (%)", "requests/s", log_y=True)


def OLD_dpd_nodes_vs_load(ctx):
    fig = sweep_figure(
        ctx.slug, ctx.params, "request_rate",
        {"nodes_saved": "monolith nodes − split nodes (above zero: the split is smaller)"},
        title="Nodes the split saves against load; the dashed line is the crossover", y_title="nodes saved",
        line_shape="hv", n=200, lo=1, hi=max(2000.0, ctx.params.request_rate),
    )
    fig.add_hline(y=0, line=dict(color="#94a3b8", width=1))
    cross = float(ctx.derivation.value("crossover_load"))
    if math.isfinite(cross) and cross <= 10_000:
        fig.add_vline(x=cross, line=dict(color=INK, dash="dash", width=1.5))
        fig.add_annotation(x=math.log10(cross), y=1, yref="paper", xanchor="right", yanchor="top", showarrow=False,
                           xshift=-4, text=f"crossover {cross:,.0f} req/s")
    return fig


# The default, and a scenario with no crossover at all (long answers at a loose TPOT, no interference:
# the split never saves a node).
@pytest.mark.parametrize("changes", [{}, {"interference": 0.0, "output_tokens": 4000, "tpot_target_ms": 200.0,
                                          "request_rate": 3000.0, "compute_precision": "fp8"}],
                         ids=["default", "other"])
def test_dpd_charts(monkeypatch, changes):
    ctx = _ctx(DPD, **changes)
    sent = _assert_same(monkeypatch, lambda: OLD_dpd_ai_vs_ridge(ctx), lambda: _chart(DPD, "ai_vs_ridge")(ctx))
    assert len(sent["data"]) == 2 and sent["layout"]["yaxis"]["range"][0] < sent["layout"]["yaxis"]["range"][1]
    sent = _assert_same(monkeypatch, lambda: OLD_dpd_crossover_vs_interference(ctx),
                        lambda: _chart(DPD, "crossover_vs_interference")(ctx))
    assert len(sent["layout"]["shapes"]) == 2 and sent["data"][-1]["name"].startswith("scenario load")
    crossed = math.isfinite(float(ctx.derivation.value("crossover_load")))
    assert len(sent["data"]) == (3 if crossed else 2)
    sent = _assert_same(monkeypatch, lambda: OLD_dpd_nodes_vs_load(ctx), lambda: _chart(DPD, "nodes_vs_load")(ctx))
    # The current value and the zero line, then the crossover and its label.
    assert len(sent["layout"]["shapes"]) == (3 if crossed else 2)
    assert len(sent["layout"].get("annotations", [])) == (1 if crossed else 0)
    assert crossed == (not changes)  # both branches are compared


# --- serverless-gpu -------------------------------------------------------------------------------

SLS = "serverless-gpu"


def OLD_sls_cold_start_waterfall(ctx):
    COLD_STAGES, SNAPSHOT_STAGES = _page(SLS)["COLD_STAGES"], _page(SLS)["SNAPSHOT_STAGES"]
    import plotly.graph_objects as go

    d = ctx.derivation
    fig = go.Figure()
    for stages, total_key, total_label, name, color in (
        (COLD_STAGES, "cold_start_s", "Cold start", "Cold chain", "#dc2626"),
        (SNAPSHOT_STAGES, "snapshot_start_s", "Snapshot start", "Snapshot restore", "#16a34a"),
    ):
        prefix = "" if total_key == "cold_start_s" else "Snapshot: "
        xs = [prefix + label for _, label in stages] + [total_label]
        ys = [float(d.value(k)) for k, _ in stages] + [float(d.value(total_key))]
        fig.add_trace(go.Waterfall(
            x=xs, y=ys, measure=["relative"] * len(stages) + ["total"], name=name,
            text=[d[k].display(hint=False) for k, _ in stages] + [d[total_key].display(hint=False)],
            # Upright and never shrunk: plotly shrinks a label to its bar's width, and a phone's
            # bars are 20 px wide; an upright label is narrower than that.
            textposition="outside", textangle=-90, constraintext="none", cliponaxis=False,
            connector=dict(line=dict(color="#94a3b8", width=1)),
            increasing=dict(marker=dict(color=color)), totals=dict(marker=dict(color=INK)),
        ))
    base_layout(fig, "Where the seconds go: the cold chain and the snapshot restore", "", "seconds")
    fig.update_layout(hovermode="closest", height=420, waterfallgap=0.3)
    # Head room for the upright labels over the tallest bars (their length in pixels is fixed).
    fig.update_yaxes(range=[0, 1.35 * max(float(d.value("cold_start_s")), float(d.value("snapshot_start_s")))])
    return fig


def OLD_sls_margin_vs_lifetime(ctx):
    fig = sweep_figure(
        ctx.slug, ctx.params, "instance_billed_s",
        {"gross_margin": "Gross margin, cold refills", "gross_margin_with_snapshot": "Gross margin, snapshot refills",
         "billed_fraction": "Billed fraction, cold boot", "billed_fraction_with_snapshot": "Billed fraction, snapshot"},
        title="Margin and billed fraction against an instance's billed life", y_title="%", n=80,
        lo=30,
    )
    # Very short lives drive the margin far below zero; the interesting band is around break-even.
    fig.update_yaxes(range=[-100, 100])
    fig.add_hline(y=0, line=dict(color="#64748b", width=1))
    return fig


@pytest.mark.parametrize("changes", [{}, {"compile_s": 120.0, "image_gb": 20.0, "instance_billed_s": 60.0,
                                          "model": "Llama-3-70B", "tp_degree": 8}], ids=["default", "other"])
def test_sls_charts(monkeypatch, changes):
    ctx = _ctx(SLS, **changes)
    sent = _assert_same(monkeypatch, lambda: OLD_sls_cold_start_waterfall(ctx),
                        lambda: _chart(SLS, "cold_start_waterfall")(ctx))
    assert [t["type"] for t in sent["data"]] == ["waterfall"] * 2 and sent["layout"]["waterfallgap"] == 0.3
    sent = _assert_same(monkeypatch, lambda: OLD_sls_margin_vs_lifetime(ctx),
                        lambda: _chart(SLS, "margin_vs_lifetime")(ctx))
    assert sent["layout"]["yaxis"]["range"] == [-100, 100] and len(sent["layout"]["shapes"]) == 2


# --- ttft-slo-200ms -------------------------------------------------------------------------------

TTFT = "ttft-slo-200ms"


def OLD_ttft_chunk_vs_long_prompt(ctx):
    p, d = ctx.params, ctx.derivation
    fig = sweep_figure(
        ctx.slug, p, "long_prompt_tokens",
        {"long_prompt_prefill_s": "Long prompt in one piece", "chunk_time_s": f"Its last chunk of {p.chunk_tokens:,} tokens"},
        title="A short request's wait behind a long prompt (log-log)", y_title="ms",
        y_unit="ms", from_unit="s", log_y=True, n=80,
    )
    for key, name, color in (("slo_s", "whole SLO", INK), ("prefill_budget_s", "prefill budget", "#d97706")):
        y = d.value(key) * 1000
        fig.add_hline(y=y, line=dict(color=color, dash="dash", width=1))
        # On a log axis an annotation's y is given in log10 units (shapes take data units).
        fig.add_annotation(x=0, xref="paper", xanchor="left", y=math.log10(y), text=name, showarrow=False,
                           yanchor="bottom",
                           font=dict(size=11, color=color))
    return fig


def OLD_ttft_ccdf(r, p, d):
    """The figure the queue_check panel drew inline (st.plotly_chart dropped)."""
    checks = (r.separate, r.pooled, r.separate_at_pooled_util)
    fig = go.Figure()
    for i, q in enumerate(checks):
        color = PALETTE[i]
        fig.add_trace(go.Scatter(x=[t * 1000 for t in q.ccdf_t], y=q.ccdf_sim, name=f"{q.label}, simulated",
                                 line=dict(color=color, width=2.5)))
        fig.add_trace(go.Scatter(x=[t * 1000 for t in q.ccdf_t], y=q.ccdf_analytic, name="closed form",
                                 line=dict(color=color, width=1.5, dash="dash"), showlegend=i == 0))
    fig.add_vline(x=p.queue_budget_ms, line=dict(color="#64748b", dash="dot", width=1))
    fig.add_annotation(x=p.queue_budget_ms, y=1, yref="paper", text="queue allowance", showarrow=False,
                       xanchor="left", xshift=3, yanchor="top", font=dict(size=11))
    fig.add_hline(y=d.value("tail_probability"), line=dict(color=INK, dash="dot", width=1))
    base_layout(fig, "Share of requests waiting longer than t (log scale)", "Wait t (ms)", "P(wait > t)", log_y=True)
    fig.update_layout(height=420)
    fig.update_yaxes(range=[-4, 0.05])
    return fig


@pytest.mark.parametrize("seed, changes", [(0, {}), (6, {"queue_budget_ms": 20.0, "arrival_rps": 40.0,
                                                         "long_prompt_tokens": 8000, "chunk_tokens": 1024})],
                         ids=["default", "other"])
def test_ttft_figures(monkeypatch, seed, changes):
    ctx = _ctx(TTFT, **changes)
    sent = _assert_same(monkeypatch, lambda: OLD_ttft_chunk_vs_long_prompt(ctx),
                        lambda: _chart(TTFT, "chunk_vs_long_prompt")(ctx))
    assert len(sent["layout"]["shapes"]) == 3 and len(sent["layout"]["annotations"]) == 2
    r, p, d = _sim(TTFT, seed, **changes), ctx.params, ctx.derivation
    sent = _assert_same(monkeypatch, lambda: OLD_ttft_ccdf(r, p, d),
                        lambda: _page(TTFT)["_ccdf_figure"](ctx, r, d))
    assert len(sent["data"]) == 6 and len(sent["layout"]["shapes"]) == 2 and len(sent["layout"]["annotations"]) == 1


# --- inference-observability ----------------------------------------------------------------------

OBS = "inference-observability"


def OLD_obs_trace_waterfall(ctx):
    from models.units import format_quantity

    model = _page(OBS)["model"]
    spans = model.waterfall(ctx.params)
    total = max(end for _, _, end, _ in spans) or 1.0
    min_w = total * 0.006  # a 5 ms span on a 10 s request must stay visible
    fig = go.Figure()
    names = [s[0] for s in spans]
    for i, (name, start, end, records) in enumerate(spans):
        dur = end - start
        fig.add_trace(go.Bar(
            y=[name], x=[max(dur, min_w)], base=[start], orientation="h", showlegend=False,
            marker=dict(color="#94a3b8" if name == "request" else PALETTE[i % len(PALETTE)]),
            text=[format_quantity(dur, "s") if dur > 0 else "event"], textposition="outside",
            cliponaxis=False,
            hovertemplate=f"<b>{name}</b><br>{format_quantity(start, 's')} → {format_quantity(end, 's')}"
                          f"<br>{records}<extra></extra>",
        ))
    ttft = ctx.derivation.value("ttft_s")
    fig.add_vline(x=ttft, line=dict(color="#dc2626", dash="dot", width=1.5),
                  annotation_text=f"first token {format_quantity(ttft, 's')}", annotation_position="bottom right")
    base_layout(fig, "One request's trace: one decode span, not one per token", "Seconds since the request arrived", "")
    fig.update_layout(height=330, hovermode="closest",
                      yaxis=dict(categoryorder="array", categoryarray=list(reversed(names))),
                      xaxis=dict(range=[0, total * 1.15]))
    return fig


def _obs_series(p, chosen) -> tuple[list, list]:
    """The cardinality panel's bars for the labels ticked, by hand: the running product of their sizes."""
    names = {"replica": "replica", "route": "route", "status": "status", "bucket": "histogram bucket",
             "tenant": "tenant"}
    sizes = {"replica": p.replicas, "route": p.routes, "status": p.status_codes, "bucket": p.histogram_buckets,
             "tenant": p.tenants}
    running, xs, ys = 1, [], []
    for name in chosen:
        running *= sizes[name]
        xs.append(f"× {names[name]}")
        ys.append(running)
    return xs, ys


@pytest.mark.parametrize("changes", [{}, {"tokens_per_s_replica": 600.0, "given_batch": 8,
                                          "span_price_per_million_usd": 0.2, "series_budget": 50_000.0,
                                          "tenants": 20}], ids=["default", "other"])
def test_obs_charts(monkeypatch, changes):
    ctx = _ctx(OBS, **changes)
    d, p, q = ctx.derivation, ctx.params, QUESTIONS[OBS]
    sent = _assert_same(monkeypatch, lambda: OLD_obs_trace_waterfall(ctx), lambda: _chart(OBS, "trace_waterfall")(ctx))
    assert len(sent["layout"]["shapes"]) == len(sent["layout"]["annotations"]) == 1
    assert sent["layout"]["annotations"][0]["text"].startswith("first token")
    # the utilizations against throughput: solves, from a fiftieth of the roofline to a tenth past it
    sent = _sent(_chart(OBS, "utilization_vs_throughput")(ctx))
    lines = [t for t in sent["data"] if t["mode"] == "lines"]
    roofline = d.value("decode_batch") * d.value("peak_Bps") / d.value("step_bytes")
    assert lines[0]["x"][0] == pytest.approx(max(10, roofline / 50))
    assert lines[0]["x"][-1] == pytest.approx(min(50_000, max(1.1 * roofline, 1.1 * p.tokens_per_s_replica)))
    for i in (0, 30, -1):
        at = q.solve(p.model_copy(update={"tokens_per_s_replica": lines[0]["x"][i]}))
        assert [t["y"][i] for t in lines] == [pytest.approx(100 * at.value(k)) for k in ("gpu_util_counter_share", "mbu", "mfu")]
    assert [sh["y0"] for sh in sent["layout"]["shapes"] if sh["yref"] == "y"] == [100]
    # a span per token over each cost, against the span price, the 1x level named
    sent = _sent(_chart(OBS, "span_ratio_vs_price")(ctx))
    lines = [t for t in sent["data"] if t["mode"] == "lines"]
    for i in (0, -1):
        at = q.solve(p.model_copy(update={"span_price_per_million_usd": lines[0]["x"][i]}))
        assert lines[0]["y"][i] == pytest.approx(at.value("span_cost_to_gpu_cost_ratio"))
        assert lines[1]["y"][i] == pytest.approx(at.value("span_cost_to_list_price_ratio"))
    assert [sh["y0"] for sh in sent["layout"]["shapes"] if sh["yref"] == "y"] == [1]
    assert sent["layout"]["annotations"][0]["text"] == "costs as much as the token"
    # the cardinality bars: the running product of the labels ticked, each bar's text its step
    labels = list(_page(OBS)["model"].LABELS)
    for chosen in (labels, labels[:2], []):  # every label, two, none (the "no labels" bar)
        xs, ys = _obs_series(p, chosen)
        steps = _page(OBS)["model"].cardinality_steps(p, set(chosen))
        sent = _sent(_page(OBS)["_cardinality_figure"](ctx, steps, chosen))
        bars = sent["data"][0]
        assert bars["x"] == (xs or ["no labels"]) and bars["y"] == (ys or [1])
        assert bars["text"] == [f"{y:,} series" for y in (ys or [1])]
        assert sent["layout"]["yaxis"]["type"] == "log"
        assert sent["layout"]["shapes"][0]["y0"] == p.series_budget
        assert sent["layout"]["annotations"][0]["text"] == f"budget {p.series_budget:,.0f} series"
