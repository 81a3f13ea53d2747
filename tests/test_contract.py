"""The question contract, checked for every registered question that is written."""

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from models.content import PLACEHOLDER
from models.core import knobs_of
from models.registry import QUESTIONS, ROOT, written
from models.units import parse_unit

WRITTEN = written()
IDS = [q.slug for q in WRITTEN]

# The key figures each issue names, with their units: the exact names are part of the contract.
REQUIRED_STEPS = {
    "batched-inference-api": {
        "per_gpu_rps_full": "1/s", "gpus_floor": "1", "per_gpu_rps_at_fill": "1/s", "gpus_at_fill": "1",
        "gpus_at_target_util": "1", "batch_fill_time_s": "s", "expected_batch_at_flush": "1",
        "gpus_with_timeout_flush": "1", "worst_batching_wait_s": "s",
    },
    "checkpoint-distribution": {
        "link_GBps": "GB/s", "lower_bound_s": "s", "naive_pull_s": "s", "tree_levels": "1",
        "tree_per_level_s": "s", "tree_s": "s", "pipeline_s": "s",
    },
}


def test_the_two_foundation_pages_are_written():
    assert {"batched-inference-api", "checkpoint-distribution"} <= set(IDS)


def test_registry_follows_the_catalog_order_and_titles():
    shared = ROOT.parent / "shared" / "catalog.toml"
    ours = tomllib.loads((ROOT / "content" / "catalog.toml").read_text())["question"]
    assert [q["slug"] for q in ours] == list(QUESTIONS)
    assert [q["title"] for q in ours] == [q.title for q in QUESTIONS.values()]
    if shared.exists():  # the repo carries a copy; it must not drift from the source of truth
        assert tomllib.loads(shared.read_text()) == tomllib.loads((ROOT / "content" / "catalog.toml").read_text())


@pytest.mark.parametrize("q", WRITTEN, ids=IDS)
def test_defaults_valid_and_units_parse(q):
    d = q.solve(q.Params())
    assert len(d) > 0
    for step in d:
        parse_unit(step.unit)  # raises on an unknown unit
        step.worked()  # the formula renders
        assert step.label


@pytest.mark.parametrize("q", WRITTEN, ids=IDS)
def test_required_key_figures(q):
    d = q.solve(q.Params())
    for key, unit in REQUIRED_STEPS.get(q.slug, {}).items():
        assert key in d, f"{q.slug} lacks step {key}"
        assert d[key].unit == unit, (key, d[key].unit)


@pytest.mark.parametrize("q", WRITTEN, ids=IDS)
def test_drills_and_placeholders_resolve(q):
    d = q.solve(q.Params())
    names = set(d.keys()) | set(knobs_of(q.Params))
    content = q.content
    assert len(content.drills) >= 6, "at least six drills"
    assert {dr.phase for dr in content.drills} >= {"numbers", "arithmetic", "depth", "failure_modes"}
    for drill in content.drills:
        assert drill.key in d, f"drill names unknown step {drill.key}"
        for m in PLACEHOLDER.finditer(drill.prompt):
            assert m.group(1) in names, f"drill prompt placeholder {m.group(1)}"
    for text in [content.hook, content.intro, *(s.body for s in content.sections)]:
        for m in PLACEHOLDER.finditer(text):
            assert m.group(1) in names, f"unknown placeholder {{{{{m.group(1)}}}}}"
    for key, _label in content.metrics:
        assert key in d, f"metric names unknown step {key}"
    titles = [s.title for s in content.sections]
    assert titles == ["Numbers", "Shape", "Arithmetic", "Depth", "Failure modes", "Takeaways"]


@pytest.mark.parametrize("q", WRITTEN, ids=IDS)
def test_every_knob_has_a_range_and_a_draw_range_inside_it(q):
    for name, knob in knobs_of(q.Params).items():
        default = getattr(q.Params(), name)
        if isinstance(default, (int, float)) and not isinstance(default, bool):
            assert knob.min is not None and knob.max is not None, name
            assert knob.min <= default <= knob.max, name
            if knob.draw:
                assert knob.min <= knob.draw[0] <= knob.draw[1] <= knob.max, name


FORBIDDEN = {"streamlit", "plotly", "duckdb"}


def test_models_import_no_ui_or_storage_library():
    offenders = []
    for path in (ROOT / "models").rglob("*.py"):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            offenders += [f"{path.relative_to(ROOT)}: {n}" for n in names if n.split(".")[0] in FORBIDDEN]
    assert not offenders, offenders


def test_importing_every_model_pulls_in_no_ui_library():
    code = (
        "import sys\n"
        "from models.registry import written\n"
        "for q in written():\n"
        "    q.solve(q.Params())\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in {'streamlit', 'plotly', 'duckdb'})\n"
        "print(bad)\n"
        "sys.exit(1 if bad else 0)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("q", WRITTEN, ids=IDS)
def test_presets_are_valid_scenarios(q):
    fields = set(q.Params.model_fields)
    names = [p.name for p in q.content.presets]
    assert len(names) == len(set(names)), "preset names must be unique"
    for preset in q.content.presets:
        assert set(preset.values) <= fields, f"{preset.name} sets unknown knobs {set(preset.values) - fields}"
        assert preset.about, f"{preset.name} needs a line saying what it teaches"
        p = q.Params(**{**q.Params().model_dump(), **preset.values})
        assert p != q.Params(), f"{preset.name} is the seed scenario again"
        # the line is shown under the chooser, its figures read at the preset's own scenario
        from ui.prose import render

        assert "{{" not in render(preset.about, q.solve(p), p), f"{preset.name}: an unknown placeholder"


@pytest.mark.parametrize("q", WRITTEN, ids=IDS)
def test_every_page_has_two_teaching_presets(q):
    """Besides the implicit seed scenario, at least two named scenarios for a class."""
    assert len(q.content.presets) >= 2


# Every key figure each issue names, by exact step key (units are checked in each page's tests).
KEY_FIGURES: dict[str, tuple[str, ...]] = {
    "agent-sessions": ("expected_loss_per_failure_s", "gpu_duty_cycle", "kv_bytes_final", "kv_bytes_mean", "recompute_multiplier", "recompute_per_step_s", "reload_per_step_s", "replicas_to_hold_kv", "session_duration_s",),
    "autoscaling-warm-pool": ("backlog_without_pool", "in_flight_base", "in_flight_peak", "scale_down_hold_s", "scale_up_cooldown_s", "warm_pool_replicas", "warm_replicas_per_second_of_cold_start",),
    "batched-inference-api": ("batch_fill_time_s", "expected_batch_at_flush", "gpus_at_fill", "gpus_at_target_util", "gpus_floor", "gpus_with_timeout_flush", "per_gpu_rps_at_fill", "per_gpu_rps_full", "worst_batching_wait_s",),
    "chat-one-to-one": ("heartbeats_per_s", "kafka_partitions", "peak_messages_per_s", "presence_shards", "storage_per_day_TB",),
    "checkpoint-distribution": ("link_GBps", "lower_bound_s", "naive_pull_s", "pipeline_s", "tree_levels", "tree_per_level_s", "tree_s",),
    "checkpoint-storage": ("aggregate_write_GBps", "min_drain_GBps", "peak_to_average", "per_gpu_write_GBps", "reshard_bytes_per_rank_GB", "reshard_max_source_shards_per_rank", "retained_TB", "volume_per_day_TB",),
    "cluster-10k-gpus": ("checkpoint_write_GBps", "core_switches", "facility_power_MW", "interruptions_per_day", "it_load_MW", "leaf_switches", "mean_nodes_in_repair", "nodes_built", "nodes_needed", "spare_nodes_p99", "spine_switches", "total_switches",),
    "continuous-batching": ("batch_cap_kv", "batch_cap_tpot", "kv_budget_bytes", "kv_bytes_per_token", "p95_tpot_s", "ridge_batch", "step_time_s", "tokens_per_s_per_replica",),
    "data-platform-sensitivity": ("backfill_hours", "raw_per_day_TB", "storage_cost_per_month_usd", "stored_TB",),
    "design-doc-review": ("gpus_needed_at_peak", "per_gpu_full_batch_rps", "risk_expected_annual_cost_usd", "risk_ranking", "shortfall_at_peak_gpus",),
    "disaggregated-prefill-decode": ("crossover_load", "decode_arithmetic_intensity", "disaggregated_capacity_per_node", "kv_egress_per_prefill_node_Bps", "kv_transfer_bytes_per_request", "monolith_capacity_per_node", "prefill_arithmetic_intensity", "prefill_to_decode_node_ratio",),
    "eval-pipeline": ("gpu_hours_per_checkpoint", "gpus_fast", "gpus_slow", "prompts_per_checkpoint", "replicas_fast", "replicas_slow", "tokens_per_checkpoint", "tokens_per_s_per_gpu",),
    "gpu-cloud-control-plane": ("api_qps", "failure_detection_s", "heartbeat_writes_per_s", "meter_buffer_per_node_KB", "p_allocation_has_bad_node", "p_allocation_has_bad_node_gated",),
    "gpu-credit-ledger": ("capacity_gpu_hours", "contention_allocation_gpus", "credits_to_issue_gpu_hours", "hours_to_exhaust_at_burst", "ledger_debits_per_s",),
    "inference-observability": ("mbu", "metric_series_full_labels", "metric_series_without_tenant", "per_token_span_cost_per_day_usd", "span_cost_to_gpu_cost_ratio", "tenant_cost_usd",),
    "interview-minute-plan": ("checkpoint_end_of_arithmetic", "checkpoint_end_of_depth", "checkpoint_end_of_failure_modes", "checkpoint_end_of_numbers", "checkpoint_end_of_shape", "gpus", "planned_minutes", "replicas", "request_rate", "slack_minutes", "uncached_prompt_tokens",),
    "job-scheduler-100k": ("best_victim_cost_gpu_hours", "heap_ops_per_decision", "lost_work_with_checkpoint_on_signal_gpu_hours", "lost_work_without_signal_gpu_hours", "mean_wait_h", "naive_scan_s_per_tick",),
    "kv-cache-tiers": ("break_even_bandwidth_Bps", "break_even_prefix_tokens_ssd", "conversation_kv_bytes", "kv_bytes_per_token", "recompute_s", "reload_s_dram", "reload_s_ssd",),
    "llm-gateway": ("audit_bytes_per_month", "average_team_budget_usd", "cache_savings_per_month_usd", "keys_per_team", "spend_per_month_usd", "team_provider_routes", "unavailability_with_fallback",),
    "ml-config-system": ("batch_divisibility_remainder", "config_sha256", "config_valid", "grad_accum_steps", "sweep_runs",),
    "model-artifact-distribution": ("chunk_count", "chunked_relay_rollout_s", "docker_time_per_node_s", "naive_registry_rollout_s", "per_node_lower_bound_s", "registry_egress_TB",),
    "moe-1t-serving": ("all_to_all_s", "decode_step_s", "imbalance_throughput_loss", "kv_bytes_per_token", "kv_read_s", "min_gpus_for_weights", "tokens_per_s", "tokens_per_s_per_user", "weight_bytes_per_gpu", "weight_read_s",),
    "moe-1t-training": ("a2a_egress_per_gpu_GBps", "checkpoint_TB", "compute_ratio_if_active", "gpu_hours", "state_TB", "state_per_gpu_GB", "step_slowdown_from_imbalance", "train_flops_per_token",),
    "multi-lora": ("adapter_bytes", "dedicated_gpus", "dedicated_weight_bytes", "mixed_batch_overhead_fraction", "multi_lora_gpus", "multi_lora_replica_weight_bytes",),
    "multi-region-failover": ("backlog_after_window", "in_flight_lost", "n_minus_1_max_utilization", "required_capacity_per_region", "retry_rate_per_s", "survivor_utilization_after_loss",),
    "playground-abuse": ("concurrent_streams", "egress_Bps", "free_tier_tokens_per_day", "gateway_memory_bytes", "kv_to_text_ratio", "per_user_daily_quota_tokens", "reprefill_on_resume_s",),
    "pretraining-data-pipeline": ("clean_text_TB", "implied_training_gpus", "raw_PB", "shards_TB", "trainer_read_MBps", "training_duration_days",),
    "prompt-playground-product": ("full_copies_KB", "revocation_staleness_bound_s", "snapshot_plus_diff_KB", "storage_saving_ratio", "worst_case_diffs_applied",),
    "rag-10k-qps": ("embedder_gpus", "index_shards", "latency_budget_ms", "llm_node_seconds_per_query", "llm_nodes_no_cache", "llm_nodes_with_cache", "replicas_per_shard", "reranker_gpus",),
    "research-cluster-fair-share": ("allocation_gpus", "borrowed_gpus", "decayed_usage_gpu_hours", "fair_share_factor", "lost_gpu_hours_with_checkpoint_on_signal", "lost_gpu_hours_without_warning", "preempted_gpus",),
    "serverless-gpu": ("billed_fraction", "cold_start_s", "fleet_billed_utilization", "snapshot_start_s", "warm_pool_slots",),
    "serving-platform": ("decode_busy_fraction", "gpus", "prefill_replica_equivalents", "replicas", "request_rate", "requests_in_flight",),
    "speculative-decoding": ("break_even_batch_weights_only", "break_even_batch_with_kv", "expected_tokens_per_pass", "optimal_draft_tokens", "ridge_batch", "speedup_at_operating_batch", "speedup_small_batch",),
    "token-rate-limiter": ("admits_per_min_reserving", "admits_per_min_settled", "cost_ratio_large_to_small", "counter_ops_per_s", "counter_shards", "input_refill_per_s", "output_refill_per_s", "over_reservation_factor", "oversubscription_ratio",),
    "training-disaster-recovery": ("expected_interruptions", "fraction_lost", "gpu_hours_lost", "job_mtbf_h", "rpo_mean_min", "rpo_worst_min", "rto_min", "run_gpu_hours", "young_optimal_interval_min",),
    "ttft-slo-200ms": ("chunk_time_s", "max_admissible_prompt_tokens", "max_prompt_tokens_linear", "max_prompt_tokens_with_attention", "max_utilization_mm1", "max_utilization_pooled", "prefill_budget_s", "replicas_pooled", "replicas_separate",),
    "usage-billing-pipeline": ("dedup_index_GB", "events_per_month", "kafka_partitions", "revenue_lost_to_drops_per_month_usd", "rollup_rows_per_month",),
    "video-generation": ("arithmetic_intensity_batch1", "flops_per_pass", "flops_per_request", "gpu_seconds_per_request", "gpus_for_load", "jobs_in_service", "tokens_per_pass", "wall_time_s",),
}


@pytest.mark.parametrize("q", WRITTEN, ids=IDS)
def test_every_key_figure_the_issue_names_is_a_step(q):
    d = q.solve(q.Params())
    missing = [k for k in KEY_FIGURES.get(q.slug, ()) if k not in d]
    assert not missing, f"{q.slug} lacks {missing}"


def test_key_figures_cover_every_question_in_the_catalog():
    assert set(KEY_FIGURES) == set(QUESTIONS)


def test_every_question_in_the_catalog_is_written_with_six_drills():
    """Coverage is strict now that every content issue has landed."""
    missing = [q.slug for q in QUESTIONS.values() if not (q.module_path.exists() and q.content_path.exists()
                                                           and q.page_path.exists())]
    assert not missing, f"not written: {missing}"
    thin = [q.slug for q in QUESTIONS.values() if len(q.drills) < 6]
    assert not thin, f"fewer than six drills: {thin}"
