from models.serving import continuous_batching as model
from ui.declared_panel import Card, Compare, Replay, Table
from ui.question_page import QuestionPage
from ui.sim_figures import batching

page = QuestionPage("continuous-batching")
prompt_under_context = lambda x, p: {"prompt_tokens": min(p.prompt_tokens, x // 2)}  # noqa: E731

page.sweep("caps_vs_context", "max_context_tokens", {
    "batch_cap_kv": "KV cap (all at full context)", "batch_cap_tpot": "TPOT cap (worst step)",
    "ridge_batch": "Ridge batch (compute-bound above)"}, title="Batch caps against the max context (log-log)",
    y_title="Sequences", n=30, log_y=True, line_shape="hv", dashed=("ridge_batch",), linear=("ridge_batch",),
    also=prompt_under_context)

# The step at the KV cap depends on the context only: the prompt and the TPOT target stand aside so
# short and very long contexts stay valid scenarios.
page.sweep("step_sides_vs_context", "max_context_tokens", {
    "kv_capped_step_memory_s": "Bytes side: weights + every sequence's KV",
    "kv_capped_step_compute_s": "FLOP side: the same batch's math"},
    title="A decode step at the KV cap: bytes against FLOP", y_title="ms per step", y_unit="ms", from_unit="s",
    n=30, vlines=(("bandwidth_bound_above_tokens", "bandwidth-bound →"),),
    also=lambda x, p: {**prompt_under_context(x, p), "tpot_target_ms": 500.0})

page.sweep("tpot_vs_chunk", "chunk_tokens", {"tpot_bound_s": "Worst-step TPOT (a bound), ms"},
    right={"replica_capacity_rps": "Replica capacity, req/s"}, right_title="requests/s",
    title="Chunk size: token latency against request capacity", y_title="ms", y_unit="ms", from_unit="s", n=30,
    hlines=(("tpot_target_ms", "TPOT target"),))

page.simulation(
    "batching", title="Live: one replica, step by step ({{policy}} scheduler, {{arrival_rps}})",
    message="Simulating the replica…",
    cards=(Card("sim_tokens_per_s", against="expected_tokens_per_s"), Card("sim_sequences", against="live_sequences"),
           Card("sim_tpot_p95_s"), Card("sim_ttft_p50_s"), Card("sim_token_gap_p95_s", against="gap_closed_form_s"),
           Card("sim_done", label="Done", also=(("sim_arrived", "arrived"),)),
           Card("sim_cut", label="Cut", also=(("sim_preemptions", ""),)),
           Card("sim_queue_length", label="Queue length", also=(("sim_queue_length_little", "by λW"),))),
    table=Table(("Figure", "Simulated", "Closed form"), (
        ("Tokens per second (after warm-up)", "{{sim_tokens_per_s}}",
         "{{expected_tokens_per_s}} (ceiling {{tokens_per_s_ceiling}})"),
        ("Requests finished per second", "{{sim_requests_per_s}}", "{{served_rps}}"),
        ("Sequences in the engine", "{{sim_sequences}}", "{{live_sequences}} (Little's law)"),
        ("Mean TPOT", "{{sim_mean_tpot_s}}", "{{tpot_at_load_s}}"),
        ("Token gap p95", "{{sim_token_gap_p95_s}}", "{{gap_closed_form_s}}"),
        ("TTFT p50 / p95", "{{sim_ttft_p50_s}} / {{sim_ttft_p95_s}}", "at least {{ttft_floor_s}} (idle, mean prompt)"),
        ("TPOT p50 / p95", "{{sim_tpot_p50_s}} / {{sim_tpot_p95_s}}", "{{tpot_at_load_s}} typical"),
        ("Requests arrived", "{{sim_arrived}}", "{{sim_accounted}} done, cut, running or queued"))),
    replay=Replay(dt_s=0.25, steps_at=model.replay_steps, charts=(batching.timeline, batching.gantt),
                  caption="At {{replay_t_s}}: {{replay_batch}} in the step, {{replay_queued}} queued, "
                          "KV {{replay_kv_share}} in use, step {{replay_step_s}}."),
    chart=batching.distributions,
    caption="{{sim_arrived}} over {{sim_horizon_s}} ({{sim_iterations}}). Lengths are lognormal around the means "
            "(spread {{length_spread}}), clipped to the context; {{sim_slow_clients}}. The dashed line on the right "
            "histogram is the closed-form token gap. Change the seed for another run.",
    compare=Compare("policy", ("static", "continuous", "chunked"),
                    "Compare the three schedulers on these same requests", columns=(
                        ("Tokens/s", "sim_run_tokens_per_s"), ("Done", "sim_done"), ("Queued at end", "sim_queued"),
                        ("TTFT p50", "sim_ttft_p50_s"), ("TPOT p95", "sim_tpot_p95_s"),
                        ("Token gap p95", "sim_token_gap_p95_s"))))

page.render()
