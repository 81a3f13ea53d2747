import typing

from pydantic import ValidationError

from models.training import moe_1t_training as model
from ui.charts import INK, PALETTE, layout_dict, sweep_figure
from ui.figures import figure
from ui.question_page import QuestionPage
from ui.solve_cache import solve

page = QuestionPage("moe-1t-training")


def _ep_points(ctx):
    """Solve the scenario at every expert-parallel size the knob offers; skip layouts that do not fit."""
    out = []
    base = ctx.params.model_dump()
    for ep in typing.get_args(model.EPSize):
        try:
            params = model.Params(**{**base, "ep_size": ep})
        except ValidationError:
            continue
        out.append((ep, solve(ctx.slug, params)))
    return out


@page.chart("a2a_vs_ep")
def a2a_vs_ep(ctx):
    points = _ep_points(ctx)
    xs = [str(ep) for ep, _ in points]
    series = (("a2a_share_nvlink", "NVLink time / compute"), ("a2a_share_nic", "NIC time / compute"))
    # Plain dicts, not validated (ui/figures.py): the JSON plotly's add_trace wrote. The shares are
    # fractions; the axis reads in percent.
    traces = [dict(type="bar", x=xs, y=[100 * float(d.value(key)) for _, d in points], name=name,
                   marker=dict(color=PALETTE[i],
                               line=dict(width=[3 if ep == ctx.params.ep_size else 0 for ep, _ in points], color=INK)))
              for i, (key, name) in enumerate(series)]
    traces.append(dict(type="scatter", x=xs, y=[float(d.value("state_per_gpu_GB")) for _, d in points], yaxis="y2",
                       name="State per GPU (GB)", mode="lines+markers", line=dict(color=PALETTE[2], width=2)))
    layout = layout_dict(f"All-to-all against compute, by expert-parallel size (now {ctx.params.ep_size}, outlined)",
                         "Expert-parallel size (GPUs; 8 per node)", "% of compute time")
    layout.update(barmode="group", yaxis2=dict(title=dict(text="GB per GPU"), overlaying="y", side="right",
                                               showgrid=False, rangemode="tozero"))
    return figure(traces, layout)


@page.chart("node_limit")
def node_limit(ctx):
    return sweep_figure(
        ctx.slug, ctx.params, "max_nodes_per_token",
        {"wide_nic_share_naive": "A copy per expert", "wide_nic_share_dedup": "A copy per node",
         "wide_nic_share_limited": "A copy per node, node-limited"},
        title=f"EP over {ctx.derivation['wide_ep_size'].display()}: NIC all-to-all time over compute, by node limit",
        y_title="% of compute time", lo=1, hi=max(8, ctx.params.max_nodes_per_token), line_shape="hv",
    )


@page.chart("imbalance")
def imbalance(ctx):
    return sweep_figure(
        ctx.slug, ctx.params, "router_imbalance",
        {"step_slowdown_from_imbalance": "Step slowdown, nothing dropped",
         "step_slowdown_capped": f"With a capacity factor of {ctx.params.capacity_factor:g}"},
        title="Step time over the balanced step, against the hottest rank's load", y_title="× the balanced step",
        n=61,
    )


page.render()
