import json

import plotly.graph_objects as go
import streamlit as st

from ui.safe import escape_markdown

from models.product import prompt_playground_product as model
from ui.charts import INK, LEGEND, PALETTE, layout_dict, sweep, sweep_figure, sweep_values
from ui.figures import figure, vline
from ui.question_page import QuestionPage

SLUG = "prompt-playground-product"
page = QuestionPage(SLUG)
OPS_KEY = f"{SLUG}.sim_ops"
SEL_KEY = f"{SLUG}.sim_selected"
DEMO_OPS = "e0.e1.e2.e1.u3"  # a short history with one branch and one undo, so the tree has a shape
KIND_COLOR = {"root": "#64748b", "edit": PALETTE[0], "undo": PALETTE[4]}


@page.chart("storage_vs_snapshot")
def storage_vs_snapshot(ctx):
    fig = sweep_figure(
        ctx.slug, ctx.params, "snapshot_every",
        {"full_copies_KB": "Every version a full copy", "snapshot_plus_diff_KB": "Snapshots + diffs",
         "diff_only_KB": "One snapshot, then diffs", "worst_case_read_KB": "Read to render the worst version"},
        title="Storage for one prompt's history, and the worst render's read, against the snapshot interval",
        y_title="kB (log)", log_y=True, n=80, hi=min(1000, max(ctx.params.versions, 2)), line_shape="linear",
    )
    return fig


@page.chart("saving_vs_edit")
def saving_vs_edit(ctx):
    hi = min(1000.0, max(ctx.params.prompt_size_kB, 0.02))
    return sweep_figure(
        ctx.slug, ctx.params, "edit_size_kB", {"storage_saving_ratio": "Full copies / (snapshots + diffs)"},
        title="The saving against the size of each edit (log x, up to the whole prompt)",
        y_title="× smaller", n=80, hi=hi,
    )


@page.chart("staleness_vs_ttl")
def staleness_vs_ttl(ctx):
    xs = sweep_values(ctx.params, "permission_cache_ttl_s", 80)
    keys = ["revocation_staleness_bound_s", "body_link_staleness_bound_s", "authz_reads_per_s"]
    ys = sweep(ctx.slug, ctx.params, "permission_cache_ttl_s", keys, xs)
    # Plain dicts, not validated (ui/figures.py): the JSON plotly's add_trace/add_vline wrote.
    traces = [
        dict(type="scatter", x=xs, y=ys["revocation_staleness_bound_s"], name="Revocation bound (s)",
             line=dict(color=PALETTE[0], width=2.5)),
        dict(type="scatter", x=xs, y=ys["body_link_staleness_bound_s"], name="Body URL bound (s)",
             line=dict(color=PALETTE[1], width=2, dash="dash")),
        dict(type="scatter", x=xs, y=ys["authz_reads_per_s"], name="Permission reads/s (right)", yaxis="y2",
             line=dict(color=PALETTE[2], width=2)),
    ]
    d = ctx.derivation
    x = ctx.params.permission_cache_ttl_s
    for key, color, axis in (("revocation_staleness_bound_s", PALETTE[0], "y"), ("authz_reads_per_s", PALETTE[2], "y2")):
        traces.append(dict(type="scatter", x=[x], y=[d.value(key)], mode="markers", yaxis=axis, showlegend=False,
                           marker=dict(color=color, size=11, line=dict(color="white", width=2)),
                           hovertemplate=f"{d[key].label}: {d[key].display()}<extra></extra>"))
    layout = layout_dict("Staleness after a revocation against database reads, by cache TTL (log-log)",
                         "Permission cache TTL (s)", "Seconds", log_x=True, log_y=True)
    layout["shapes"] = [vline(x, color="#64748b", dash="dot", width=1)]
    # The right axis keeps its own ticks (decades, digits in full), not the SI labels of the others.
    return figure(traces, layout, own_ticks={"yaxis2": dict(
        title=dict(text="Reads/s"), overlaying="y", side="right", type="log", showgrid=False, dtick=1,
        exponentformat="none", separatethousands=True)})


# --- the version tree ---------------------------------------------------------------------------------


def _ops() -> str:
    if OPS_KEY not in st.session_state:
        st.session_state[OPS_KEY] = st.query_params.get(OPS_KEY, DEMO_OPS)
    return st.session_state[OPS_KEY]


def _apply(op: str, vid: int) -> None:
    ops = st.session_state.get(OPS_KEY, DEMO_OPS)
    new = f"{ops}.{op}{vid}" if ops else f"{op}{vid}"
    tree = model.replay(new)  # raises on a bad op; the buttons only offer valid ones
    st.session_state[OPS_KEY] = new
    st.session_state[SEL_KEY] = len(tree) - 1


def _reset(ops: str) -> None:
    st.session_state[OPS_KEY] = ops
    st.session_state[SEL_KEY] = len(model.replay(ops)) - 1


def _tree_figure(tree: model.VersionTree, selected: int, every: int) -> go.Figure:
    pos = model.layout(tree)
    traces, arrows = [], []  # plain dicts, not validated (ui/figures.py)
    for v in tree.versions:
        if v.parent is not None:
            (x0, y0), (x1, y1) = pos[v.parent], pos[v.id]
            arrows.append(dict(x=x1, y=-y1, ax=x0, ay=-y0, xref="x", yref="y", axref="x", ayref="y", text="",
                               showarrow=True, arrowhead=2, arrowsize=1.1, arrowwidth=1.6, arrowcolor=INK,
                               standoff=14, startstandoff=14))
        if v.restores is not None:
            (x0, y0), (x1, y1) = pos[v.id], pos[v.restores]
            traces.append(dict(type="scatter", x=[x0, (x0 + x1) / 2, x1], y=[-y0, -y0 - 0.45, -y1], mode="lines",
                               line=dict(color=KIND_COLOR["undo"], width=1.5, dash="dot", shape="spline"),
                               hoverinfo="skip", showlegend=False))
    tips = set(tree.tips())
    for kind in ("root", "edit", "undo"):
        vs = [v for v in tree.versions if v.kind == kind]
        if not vs:
            continue
        traces.append(dict(
            type="scatter", x=[pos[v.id][0] for v in vs], y=[-pos[v.id][1] for v in vs], mode="markers+text",
            name={"root": "first save", "edit": "edit / branch", "undo": "undo (dotted: the body it restores)"}[kind],
            text=[f"v{v.id}" for v in vs], textposition="top center",
            marker=dict(size=[30 if v.id == selected else 22 for v in vs], color=KIND_COLOR[kind],
                        symbol=["square" if v.depth % every == 0 else "circle" for v in vs],
                        line=dict(color=[INK if v.id == selected else "white" for v in vs],
                                  width=[3 if v.id == selected else 1 for v in vs])),
            customdata=[[v.note, "tip" if v.id in tips else "", v.depth % every] for v in vs],
            hovertemplate="v%{text}: %{customdata[0]}<br>%{customdata[1]} diffs to render: %{customdata[2]}<extra></extra>"
            .replace("v%{text}", "%{text}"),
        ))
    lanes = max(p[1] for p in pos.values())
    depth = max(p[0] for p in pos.values())
    layout = dict(
        xaxis=dict(title=dict(text="Depth from the first save (squares: stored as snapshots)"),
                   range=[-0.6, depth + 0.6], dtick=1, zeroline=False),
        yaxis=dict(visible=False, range=[-lanes - 0.9, 0.7]),
        height=max(220, 110 + 80 * (lanes + 1)), margin=dict(l=10, r=10, t=10, b=10), legend=dict(LEGEND),
        dragmode=False, **({"annotations": arrows} if arrows else {}),
    )
    return figure(traces, layout)


@page.sim("version_tree")
def version_tree(ctx):
    p = ctx.params
    st.markdown("##### A version tree you can edit: every button adds a version, none changes one")
    raw = _ops()
    try:
        tree = model.replay(raw)
    except ValueError as err:
        st.warning(f"The version history in the link could not be replayed ({escape_markdown(str(err))}); "
                   "showing the demo history.",
                   icon=":material/link_off:")
        raw = DEMO_OPS
        st.session_state[OPS_KEY] = raw
        tree = model.replay(raw)
    ids = [v.id for v in tree.versions]
    if st.session_state.get(SEL_KEY) not in ids:
        st.session_state[SEL_KEY] = ids[-1]
    selected = st.selectbox("Selected version", ids, key=SEL_KEY,
                            format_func=lambda i: f"v{i}: {tree.get(i).note}")
    sel = tree.get(selected)
    full = len(tree) >= model.MAX_VERSIONS
    branching = bool(tree.children(selected))
    cols = st.columns(3)
    cols[0].button(f"{'Branch from' if branching else 'New version on'} v{selected}", key=f"{SLUG}.sim_edit",
                   icon=":material/call_split:" if branching else ":material/add:", on_click=_apply,
                   args=("e", selected), disabled=full, width="stretch")
    cols[1].button(f"Undo v{selected}", key=f"{SLUG}.sim_undo", icon=":material/undo:", on_click=_apply,
                   args=("u", selected), disabled=full or sel.parent is None, width="stretch",
                   help="Adds a version whose body is the parent's; the undone version stays.")
    cols[2].button("Reset to one version", key=f"{SLUG}.sim_reset", on_click=_reset, args=("",), width="stretch")
    if st.query_params.get(OPS_KEY) != raw:
        st.query_params[OPS_KEY] = raw
    st.plotly_chart(_tree_figure(tree, selected, p.snapshot_every), key=f"{SLUG}.sim.tree",
                    config={"displaylogo": False})
    history = " → ".join(f"v{i}" for i in tree.history(selected))
    st.caption(
        f"{len(tree)} versions, {len(tree.tips())} tips (branches). History of v{selected} by parent pointers: "
        f"{history}. Rendering it applies {model.diffs_to_render(tree, selected, p.snapshot_every)} diffs "
        f"after the snapshot at depth {sel.depth - sel.depth % p.snapshot_every} (a snapshot every "
        f"{p.snapshot_every} along each chain)."
    )
    st.dataframe(
        {"Version": [f"v{v.id}" for v in tree.versions],
         "Parent": ["-" if v.parent is None else f"v{v.parent}" for v in tree.versions],
         "Kind": [v.kind for v in tree.versions],
         "What happened": [v.note for v in tree.versions],
         "Lines": [len(v.lines) for v in tree.versions],
         "Diffs to render": [model.diffs_to_render(tree, v.id, p.snapshot_every) for v in tree.versions]},
        hide_index=True, width="stretch", key=f"{SLUG}.sim.table",
    )
    body = model.export_request(sel.lines)
    big = ctx.derivation.value("body_home") != "the database row"
    with st.expander(f"Export v{selected} as a real API call", expanded=False):
        st.caption("The version pins the model, the system prompt, the sampling settings and the user-turn "
                   "template; export fills them into a Messages API request.")
        st.code(json.dumps(body, indent=2, ensure_ascii=False), language="json")
        st.code(model.export_curl(body, f"prompt-v{selected}.json" if big else None), language="bash")
        if big:
            st.caption(f"At {ctx.derivation['prompt_tokens'].display()} the body goes in a file the command reads.")


page.render()
