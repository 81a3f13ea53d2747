from ui.question_page import QuestionPage

page = QuestionPage("rag-10k-qps")

page.stack("latency_budget", {
    "latency_budget_ms_network": "Network, hops, cache lookup",
    "latency_budget_ms_embed": "Embed",
    "latency_budget_ms_retrieve": "Retrieve (slowest shard)",
    "latency_budget_ms_rerank": "Rerank",
    "latency_budget_ms_llm_queue": "LLM queue allowance",
    "latency_budget_ms_prefill": "Prefill + first decode step",
}, title="Budget to the first token: {{latency_budget_ms}}", x_title="ms", bar="First token",
    target="ttft_slo_ms", target_name="target {{ttft_slo_ms}}")

page.sweep("llm_vs_hit_rate", "cache_hit_rate", {
    "llm_nodes_no_cache": "No cache ({{weight_precision}} weights)",
    "llm_nodes_with_cache": "With the cache ({{weight_precision}} weights)",
    "llm_nodes_with_cache_bf16": "With the cache, all bf16",
}, title="LLM nodes against the answer-cache hit rate", y_title="Nodes of {{tp_degree}}", x_scale=100,
    line_shape="hv", n=100)

page.sweep("llm_vs_prompt", "passages_in_prompt", {
    "llm_nodes_no_cache_fp8": "No cache, all fp8",
    "llm_nodes_no_cache_bf16": "No cache, all bf16",
    "llm_nodes_with_cache": "With the cache ({{weight_precision}} weights)",
}, title="LLM nodes against prompt length (1 to 40 passages pasted in)", x_title="Prompt tokens",
    y_title="Nodes of {{tp_degree}}", x_step="prompt_tokens", n=40)

page.render()
