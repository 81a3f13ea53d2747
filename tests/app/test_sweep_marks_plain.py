"""Sweep charts whose extra marks (a reference line, its note, a legend row, an axis setting) are now
options of sweep_figure send Streamlit the JSON their former builders sent. Each OLD_* function is
the page's builder as it was, verbatim: sweep_figure, then plotly's add_vline/add_hline/
add_annotation/update_yaxes/update_traces on the returned figure, which built it as plotly
objects on every slider move (1-5 ms a chart). The pattern of tests/app/test_page_figures_plain.py."""

from __future__ import annotations

import math

import pytest

from tests.app.test_page_figures_plain import _assert_same, _chart, _ctx
from ui.charts import INK, PALETTE, sweep_figure
from ui.figures import vline

# --- agent-sessions -------------------------------------------------------------------------------


def OLD_agent_duration_vs_tool(ctx):
    fig = sweep_figure(
        ctx.slug, ctx.params, "tool_s", {"session_duration_h": "Session length"},
        title="Session length against tool time (log-log): where the seed's 'hour' holds", y_title="hours",
        n=100, log_y=True,
    )
    fig.add_hline(y=1, line=dict(color="#dc2626", dash="dash", width=1.5))
    fig.add_annotation(x=0, xref="paper", y=0, yref="y", text="one hour", showarrow=False,
                       xanchor="left", yanchor="bottom", font=dict(size=11, color="#dc2626"))
    return fig


@pytest.mark.parametrize("changes", [{}, {"tool_s": 5.0}], ids=["default", "other"])
def test_agent_duration_vs_tool(monkeypatch, changes):
    ctx = _ctx("agent-sessions", **changes)
    sent = _assert_same(monkeypatch, lambda: OLD_agent_duration_vs_tool(ctx),
                        lambda: _chart("agent-sessions", "duration_vs_tool")(ctx))
    assert [s["y0"] for s in sent["layout"]["shapes"] if s["yref"] == "y"] == [1]


# --- video-generation -----------------------------------------------------------------------------


def _OLD_wait_line(fig, wait_s):
    fig.add_hline(y=wait_s, line=dict(color="#16a34a", dash="dash", width=1.5))
    fig.add_annotation(x=0, xref="paper", y=math.log10(wait_s), text=f"acceptable wait {wait_s:g} s",
                       showarrow=False, xanchor="left", yanchor="bottom", font=dict(size=11, color="#16a34a"))


def OLD_video_wall_vs_height(ctx):
    fig = sweep_figure(
        ctx.slug, ctx.params, "height_px",
        {"wall_time_s": "Wall time per video", "gpu_seconds_per_request": "GPU-seconds per video"},
        title="Time per video against resolution (height in pixels, log y)", y_title="seconds", n=120, log_y=True,
        hi=1088,
    )
    _OLD_wait_line(fig, ctx.params.wait_target_s)
    for h in (480, 720):
        fig.add_vline(x=h, line=dict(color="#94a3b8", dash="dot", width=1))
        fig.add_annotation(x=h, y=0, yref="paper", text=f"{h}p", showarrow=False, xanchor="left", xshift=3,
                           yanchor="bottom",
                           font=dict(size=11, color="#64748b"))
    return fig


def OLD_video_wall_vs_frames(ctx):
    fig = sweep_figure(
        ctx.slug, ctx.params, "frames",
        {"wall_time_s": "Wall time per video", "wall_time_720p_s": "Same clip at 720p"},
        title="Wall time against clip length (frames, log y)", y_title="seconds", n=60, hi=241, log_y=True,
    )
    _OLD_wait_line(fig, ctx.params.wait_target_s)
    return fig


@pytest.mark.parametrize("changes", [{}, {"wait_target_s": 20.0, "frames": 121}], ids=["default", "other"])
def test_video_charts(monkeypatch, changes):
    ctx = _ctx("video-generation", **changes)
    for old, name in ((OLD_video_wall_vs_height, "wall_vs_height"), (OLD_video_wall_vs_frames, "wall_vs_frames")):
        sent = _assert_same(monkeypatch, lambda: old(ctx), lambda: _chart("video-generation", name)(ctx))
        assert ctx.params.wait_target_s in [s["y0"] for s in sent["layout"]["shapes"]]


# --- training-disaster-recovery -------------------------------------------------------------------


def OLD_tdr_overhead_vs_interval(ctx):
    fig = sweep_figure(
        ctx.slug, ctx.params, "interval_min",
        {
            "total_overhead_fraction": "Total",
            "fraction_lost": "Lost to interruptions",
            "checkpoint_overhead_fraction": "Paused for saves",
        },
        title="Share of the run lost against the checkpoint interval (Young's optimum dashed)",
        y_title="% of the run", n=120, lo=5, hi=120,
    )
    young = ctx.derivation.value("young_optimal_interval_min")
    fig.add_vline(x=young, line=dict(color=INK, dash="dash", width=1.5))
    fig.add_annotation(x=young, y=1, yref="paper", text="Young", showarrow=False, xanchor="left", xshift=3,
                       yanchor="top")
    return fig


@pytest.mark.parametrize("changes", [{}, {"interval_min": 90.0}], ids=["default", "other"])
def test_tdr_overhead_vs_interval(monkeypatch, changes):
    ctx = _ctx("training-disaster-recovery", **changes)
    sent = _assert_same(monkeypatch, lambda: OLD_tdr_overhead_vs_interval(ctx),
                        lambda: _chart("training-disaster-recovery", "overhead_vs_interval")(ctx))
    assert sent["layout"]["shapes"][-1]["x0"] == ctx.derivation.value("young_optimal_interval_min")


# --- llm-gateway ----------------------------------------------------------------------------------


def OLD_gateway_unavailability(ctx):
    fig = sweep_figure(
        ctx.slug, ctx.params, "common_cause_share",
        {"unavailability_correlated": "All providers down, common cause included",
         "unavailability_with_fallback": "All providers down, independent",
         "provider_unavailability": "One provider down"},
        title="Unavailability with fallback against the common-cause share (log scale)",
        y_title="% of the time", x_scale=100, n=81, log_y=True,
    )
    fig.update_yaxes(exponentformat="e")
    return fig


@pytest.mark.parametrize("changes", [{}, {"common_cause_share": 0.3}], ids=["default", "other"])
def test_gateway_unavailability(monkeypatch, changes):
    ctx = _ctx("llm-gateway", **changes)
    sent = _assert_same(monkeypatch, lambda: OLD_gateway_unavailability(ctx),
                        lambda: _chart("llm-gateway", "unavailability_vs_common_cause")(ctx))
    assert sent["layout"]["yaxis"]["exponentformat"] == "e" and sent["layout"]["yaxis"]["type"] == "log"


# --- checkpoint-storage ---------------------------------------------------------------------------


def OLD_ckpt_sources_vs_ranks(ctx):
    old = ctx.params.old_shards
    lo, hi = max(8, old // 4 // 8 * 8), min(4096, old * 2)
    fig = sweep_figure(
        ctx.slug, ctx.params, "new_ranks",
        {"reshard_max_source_shards_per_rank": "Most saved shards one rank reads"},
        title=f"Resuming {old:,} saved shards on other rank counts",
        y_title="Shards", x_title="Ranks resuming", n=(hi - lo) // 8 + 1, line_shape="hv", lo=lo, hi=hi,
    )
    fig.update_traces(mode="lines+markers", marker=dict(size=4), selector=dict(mode="lines"))
    return fig


@pytest.mark.parametrize("changes", [{}, {"old_shards": 1024, "new_ranks": 384}], ids=["default", "other"])
def test_ckpt_sources_vs_ranks(monkeypatch, changes):
    ctx = _ctx("checkpoint-storage", **changes)
    sent = _assert_same(monkeypatch, lambda: OLD_ckpt_sources_vs_ranks(ctx),
                        lambda: _chart("checkpoint-storage", "sources_vs_ranks")(ctx))
    line, marker = sent["data"]
    assert line["mode"] == "lines+markers" and line["marker"]["size"] == 4 and marker["mode"] == "markers"


# --- moe-1t-serving -------------------------------------------------------------------------------


def OLD_moe_imbalance_loss_vs_batch(ctx):
    d = ctx.derivation
    fig = sweep_figure(ctx.slug, ctx.params, "batch_per_gpu",
                       {"imbalance_throughput_loss": "throughput lost to the hottest GPU"}, n=60, lo=1,
                       hi=d.value("batch_chart_to"), **_chart_opts(ctx))
    b = float(d.value("compute_bound_batch_per_gpu"))
    if math.isfinite(b) and 1 <= b <= d.value("batch_chart_to"):
        shapes = [vline(b, color=PALETTE[1], dash="dash", width=1.5)]
        notes = [dict(x=math.log10(b), y=1, yref="paper", xanchor="right", xshift=-3, yanchor="top", showarrow=False,
                      text=f"compute-bound from {d['compute_bound_batch_per_gpu'].display(hint=False)}",
                      font=dict(color=PALETTE[1]))]
        fig.layout.shapes, fig.layout.annotations = (*fig.layout.shapes, *shapes), (*fig.layout.annotations, *notes)
    return fig


def _chart_opts(ctx) -> dict:
    """The page's own options for the chart (title, axes), read from its declaration."""
    from pathlib import Path
    import ast

    from models.registry import QUESTIONS

    tree = ast.parse(Path(QUESTIONS[ctx.slug].page_path).read_text())
    call = next(n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "batch_sweep"
                and isinstance(n.args[0], ast.Constant) and n.args[0].value == "imbalance_loss_vs_batch")
    return {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg != "mark"}


@pytest.mark.parametrize("changes", [{}, {"context_tokens": 500, "output_tokens": 200, "batch_per_gpu": 256, "imbalance": 2.0}],
                         ids=["no-mark", "marked"])
def test_moe_imbalance_loss_vs_batch(monkeypatch, changes):
    ctx = _ctx("moe-1t-serving", **changes)
    sent = _assert_same(monkeypatch, lambda: OLD_moe_imbalance_loss_vs_batch(ctx),
                        lambda: _chart("moe-1t-serving", "imbalance_loss_vs_batch")(ctx))
    marked = any(a.get("text", "").startswith("compute-bound") for a in sent["layout"].get("annotations", []))
    assert marked == bool(changes)
