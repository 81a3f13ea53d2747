from ui.charts import INK, PALETTE, layout_dict, legend_line, sweep, sweep_figure, sweep_values
from ui.diagram import Arrow, Box, box_diagram
from ui.figures import figure, vline
from ui.question_page import QuestionPage

page = QuestionPage("rag-10k-qps")

STAGES = {
    "latency_budget_ms_network": "Network, hops, cache lookup",
    "latency_budget_ms_embed": "Embed",
    "latency_budget_ms_retrieve": "Retrieve (slowest shard)",
    "latency_budget_ms_rerank": "Rerank",
    "latency_budget_ms_llm_queue": "LLM queue allowance",
    "latency_budget_ms_prefill": "Prefill + first decode step",
}


@page.diagram("rag_path")
def rag_path(ctx):
    d, p = ctx.derivation, ctx.params
    show = lambda key: d[key].display(hint=False)  # noqa: E731
    boxes = [
        Box("client", "Client", f"first token in {show('latency_budget_ms')}", 0, 0, "muted"),
        Box("embed", "Embedder", f"{show('embedder_gpus')} · {show('embed_tokens_per_s')}", 1, 0),
        Box("index", "Vector index", f"{show('index_shards')} × {show('replicas_per_shard')}"
            f" · {show('index_bytes')} in RAM", 2, 0),
        Box("rerank", "Reranker", f"{show('reranker_gpus')} · {show('rerank_pairs_per_s')}", 3, 0),
        Box("cache", "Answer cache", f"key: question + passage versions · {p.cache_hit_rate:.0%} hits"
            f" stream at once", 3, 1, "accent"),
        Box("llm", f"{p.model} answer model", f"{show('llm_nodes_with_cache')} × {p.tp_degree} {p.gpu}"
            f" · {p.weight_precision} weights · {show('llm_nodes_no_cache')} without the cache", 2, 1, "danger"),
        Box("stream", "Token stream", f"TPOT {show('held_batch_step_s')} · done at {show('answer_complete_s')}",
            1, 1, "muted"),
    ]
    arrows = [
        Arrow("client", "embed", show("latency_budget_ms_network")),
        Arrow("embed", "index", f"scatter · {show('latency_budget_ms_retrieve')}"),
        Arrow("index", "rerank", f"{p.rerank_candidates} candidates"),
        Arrow("rerank", "cache", f"top {p.passages_in_prompt}"),
        Arrow("cache", "llm", f"misses · {show('llm_query_rate')}"),
        Arrow("llm", "stream", f"{p.output_tokens} tokens out"),
        Arrow("stream", "client", ""),
    ]
    return box_diagram(boxes, arrows, title="The request path, with this scenario's fleets")


@page.chart("latency_budget")
def latency_budget(ctx):
    d, p = ctx.derivation, ctx.params
    # Plain dicts, not validated (ui/figures.py): the JSON plotly's add_trace/add_vline wrote.
    traces = [dict(type="bar", y=["First token"], x=[d.value(key)], name=name, orientation="h",
                   marker=dict(color=PALETTE[i % len(PALETTE)]),
                   text=[d[key].display()], textposition="inside", insidetextanchor="middle",
                   hovertemplate=f"{name}: %{{x:,.1f}} ms<extra></extra>")
              for i, (key, name) in enumerate(STAGES.items())]
    target = dict(color=INK, dash="dash", width=1.5)
    # In the legend: above the line, the label landed among the legend's rows on a phone.
    traces.append(legend_line(f"target {p.ttft_slo_ms:g} ms", **target))
    layout = layout_dict(f"Budget to the first token: {d['latency_budget_ms'].display()}", "ms", "")
    # 320 px: on a phone the legend takes seven rows of it.
    layout.update(barmode="stack", height=320, hovermode="closest", shapes=[vline(p.ttft_slo_ms, **target)])
    layout["legend"]["traceorder"] = "normal"
    return figure(traces, layout)


@page.chart("llm_vs_hit_rate")
def llm_vs_hit_rate(ctx):
    return sweep_figure(
        ctx.slug, ctx.params, "cache_hit_rate",
        {
            "llm_nodes_no_cache": f"No cache ({ctx.params.weight_precision} weights)",
            "llm_nodes_with_cache": f"With the cache ({ctx.params.weight_precision} weights)",
            "llm_nodes_with_cache_bf16": "With the cache, all bf16",
        },
        title="LLM nodes against the answer-cache hit rate", y_title=f"{ctx.params.tp_degree}-GPU nodes",
        x_scale=100,
        line_shape="hv", n=100,
    )


@page.chart("llm_vs_prompt")
def llm_vs_prompt(ctx):
    p = ctx.params
    keys = ["prompt_tokens", "llm_nodes_no_cache_fp8", "llm_nodes_no_cache_bf16", "llm_nodes_with_cache"]
    xs = sweep_values(p, "passages_in_prompt", 40)
    ys = sweep(ctx.slug, p, "passages_in_prompt", keys, xs)
    cur = ctx.derivation
    names = {
        "llm_nodes_no_cache_fp8": "No cache, all fp8",
        "llm_nodes_no_cache_bf16": "No cache, all bf16",
        "llm_nodes_with_cache": f"With the cache ({p.weight_precision} weights)",
    }
    traces = []
    for i, key in enumerate(names):
        color = PALETTE[i % len(PALETTE)]
        traces.append(dict(type="scatter", x=ys["prompt_tokens"], y=ys[key], name=names[key], mode="lines",
                           line=dict(color=color, width=2.5)))
        traces.append(dict(type="scatter", x=[cur.value("prompt_tokens")], y=[cur.value(key)], mode="markers",
                           showlegend=False, marker=dict(color=color, size=11, line=dict(color="white", width=2)),
                           hovertemplate=f"{names[key]} now: %{{y:,.0f}}<extra></extra>"))
    layout = layout_dict("LLM nodes against prompt length (1 to 40 passages pasted in)",
                         "Prompt tokens", f"{p.tp_degree}-GPU nodes")
    layout["shapes"] = [vline(cur.value("prompt_tokens"), color="#64748b", dash="dot", width=1)]
    return figure(traces, layout)


page.render()
