"""The question contract, checked for every registered question that is written.

Every generic check lives here, once, over all questions; a question's own test file
(tests/models/test_<slug>.py) holds only that question's domain checks."""

import ast
import math
import statistics
import subprocess
import sys
import time
import tomllib
import typing

import pytest
from pydantic import ValidationError

from models.content import CITATION, PLACEHOLDER, parse_content
from models.core import PHASES, knobs_of
from models.mock import draw_scenario
from models.registry import QUESTIONS, ROOT, written
from models.units import parse_unit

WRITTEN = written()
IDS = [q.slug for q in WRITTEN]

def test_the_two_foundation_pages_are_written():
    assert {"batched-inference-api", "checkpoint-distribution"} <= set(IDS)


def test_registry_follows_the_catalog_order_and_titles():
    shared = ROOT.parent / "shared" / "catalog.toml"
    ours = tomllib.loads((ROOT / "content" / "catalog.toml").read_text())["question"]
    assert [q["slug"] for q in ours] == list(QUESTIONS)
    assert [q["title"] for q in ours] == [q.title for q in QUESTIONS.values()]
    if shared.exists():  # the repo carries a copy; it must not drift from the source of truth
        assert tomllib.loads(shared.read_text()) == tomllib.loads((ROOT / "content" / "catalog.toml").read_text())


# The figures an engine reads from its catalog (a part's datasheet, a model's shape) rather than
# computes: a step without a formula must be one of these, a lookup, or a figure its page lists below.
CATALOG_FIGURES = {
    "model_params", "active_params", "gpu_peak_flops", "gpu_memory_bytes", "bytes_per_param",
    "bytes_per_kv_element", "gpu_hbm_Bps", "attention_flops_per_position", "link_Bps_per_direction",
}
# Steps a page states without a formula today (a given restated, a table entry, a chosen set). A new
# formula-less step fails until it gets a formula, a kind=, or a line here.
STEPS_WITHOUT_A_FORMULA: dict[str, set[str]] = {
    "batched-inference-api": {"call_time_s", "flush_timeout_s"},
    "design-doc-review": {"call_time_s", "doc_timeout_s"},
    "disaggregated-prefill-decode": {"kv_link_Bps"},
    "inference-observability": {"gateway_s"},
    "interview-minute-plan": {"allreduce_fixed_s", "allreduce_per_sequence_s", "decode_step_allreduce_s",
                              "prefill_allreduce_s", "prefill_allreduce_without_prefix_cache_s",
                              "allreduce_at_memory_batch_s"},
    "job-scheduler-100k": {"gpus_a", "gpus_b", "gpus_c", "gpus_d", "best_victim_set", "naive_victim",
                           "best_victim_set_on_signal"},
    "kv-cache-tiers": {"pcie_link_Bps", "ssd_drive_Bps"},
    "llm-gateway": {"keys_per_provider_in_gateway", "days_per_month"},
    "moe-1t-serving": {"routed_experts", "experts_per_token", "hidden_size", "layers", "head_dim", "a2a_link_Bps",
                       "nic_Bps"},
    "moe-1t-training": {"total_params", "weight_bytes_per_param", "grad_bytes_per_param", "optimizer_bytes_per_param",
                        "dsv3_active_params", "dsv3_pretrain_tokens", "dsv3_pretrain_gpu_hours", "dsv3_gpu_peak_flops",
                        "hbm_GB", "routed_experts", "experts_per_token", "gpus_per_node", "pp_size_bf16_grads",
                        "hidden_size", "nvlink_GBps", "nic_GBps", "wide_ep_size"},
    "multi-lora": {"base_params", "decode_attention_flops_per_position", "pcie_Bps", "nvme_Bps"},
    "prompt-playground-product": {"upload_path"},
    "rag-10k-qps": {"encoder_peak_flops"},
    "serverless-gpu": {"container_start_s", "cuda_init_s", "source_link_Bps", "host_link_Bps", "compile_s",
                       "warmup_s", "first_prefill_allreduce_s", "snapshot_overhead_s", "decode_step_allreduce_s"},
}


@pytest.mark.parametrize("q", WRITTEN, ids=IDS)
def test_every_step_has_a_label_a_unit_a_finite_value_and_says_how_it_was_computed(q):
    """At the seed, at every preset and at a few mock draws: a branch a scenario takes (a retry
    policy, another part) must not produce a step that cannot be shown."""
    allowed = CATALOG_FIGURES | STEPS_WITHOUT_A_FORMULA.get(q.slug, set())
    for where, p in _scenarios(q):
        at_seed = where == "the seed"
        d = q.solve(p)
        assert len(d) > 0
        for step in d:
            parse_unit(step.unit)  # raises on an unknown unit
            # one percent convention, the knobs' one: a share is its fraction, shown as a percent
            assert step.unit != "%", f"{q.slug}.{step.key}: record the fraction with percent=True, not x 100 in '%'"
            assert not step.percent or step.unit in ("1", ""), f"{q.slug}.{step.key}: a percent step is a fraction"
            assert step.label, step.key
            assert step.worked(), step.key  # the formula renders
            if step.is_numeric:
                # inf is a value a step may mean ("never fits"), NaN never is; the seed has neither
                value = float(step.value)
                assert math.isfinite(value) if at_seed else not math.isnan(value), \
                    f"{q.slug}.{step.key} = {value} at {where}"
            if at_seed:
                assert step.formula or step.kind == "lookup" or step.key in allowed, \
                    f"{q.slug}.{step.key} has no formula: give it one, a kind=, or list it in STEPS_WITHOUT_A_FORMULA"


def test_the_formula_exemptions_name_real_steps():
    """An exemption for a step that has gone (or has gained a formula) is dead weight: drop it."""
    for slug, keys in STEPS_WITHOUT_A_FORMULA.items():
        q = QUESTIONS[slug]
        d = q.solve(q.Params())
        stale = sorted(k for k in keys if k not in d or d[k].formula)
        assert not stale, f"{slug}: {stale} no longer need an exemption"


SECTION_TITLES = ["Numbers", "Shape", "Arithmetic", "Depth", "Failure modes", "Takeaways"]
# Every page drills all five phases, except these, which leave the named phases out today.
DRILL_PHASES_LEFT_OUT = {"prompt-playground-product": {"shape"}}
MIN_DRILLS = {"checkpoint-distribution": 8}  # else six
# Words of the six sections. A page over the budget today has its own ceiling, and a foundation page
# keeps a tighter one.
WORDS = (900, 1600)
WORD_BUDGETS = {"disaggregated-prefill-decode": (900, 1700), "checkpoint-distribution": (900, 1500)}


def _scenarios(q) -> list[tuple[str, object]]:
    """(where, params): the seed, every preset and three mock draws, the scenarios a learner or a mock meets."""
    seed = q.Params()
    return [("the seed", seed),
            *((f"preset {pr.name!r}", q.Params(**{**seed.model_dump(), **pr.values})) for pr in q.content.presets),
            *((f"mock draw {s}", draw_scenario(q.Params, s, solve=q.solve)) for s in range(3))]


@pytest.mark.parametrize("q", WRITTEN, ids=IDS)
def test_content_has_its_shape(q):
    content = q.content
    assert content.hook, "a page opens with a hook"
    assert [s.title for s in content.sections] == SECTION_TITLES
    assert len(content.drills) >= MIN_DRILLS.get(q.slug, 6), f"{len(content.drills)} drills"
    want = set(PHASES) - DRILL_PHASES_LEFT_OUT.get(q.slug, set())
    assert {dr.phase for dr in content.drills} == want, f"drills cover {sorted({dr.phase for dr in content.drills})}"
    for drill in content.drills:
        assert "{{" + drill.key + "}}" not in drill.prompt, f"drill {drill.key}: the prompt gives its answer away"
    assert 4 <= len(content.metrics) <= 6, f"{len(content.metrics)} metric cards"
    words = sum(len(s.body.split()) for s in content.sections)
    low, high = WORD_BUDGETS.get(q.slug, WORDS)
    assert low <= words <= high, f"{words} words of prose, the budget is {low}-{high}"


@pytest.mark.parametrize("q", WRITTEN, ids=IDS)
def test_drills_and_placeholders_resolve(q):
    """In every scenario: a step a branch leaves out must not be one the prose or a drill names."""
    content = q.content
    for where, p in _scenarios(q):
        d = q.solve(p)
        names = set(d.keys()) | set(knobs_of(q.Params))
        for drill in content.drills:
            assert drill.key in d, f"drill names unknown step {drill.key} at {where}"
            assert d[drill.key].is_numeric, f"drill {drill.key} has no number to answer at {where}"
            for m in PLACEHOLDER.finditer(drill.prompt):
                assert m.group(1) in names, f"drill prompt placeholder {m.group(1)} at {where}"
        for text in [content.hook, content.answer, content.intro, *(s.body for s in content.sections)]:
            for m in PLACEHOLDER.finditer(text):
                assert m.group(1) in names, f"unknown placeholder {{{{{m.group(1)}}}}} at {where}"
        for key in content.carrying:
            assert key in d, f"carrying names unknown step {key} at {where}"
        for key, _label in content.metrics:
            assert key in d, f"metric names unknown step {key} at {where}"
        for diagram in content.diagrams:  # raises a ContentError naming the first unknown one
            diagram.check_placeholders(names, f"{q.slug} at {where}")


# Pages not yet given the answer on one screen (issues 24 and 25): this set only shrinks.
WITHOUT_A_SHORT_ANSWER: set[str] = set()


@pytest.mark.parametrize("q", WRITTEN, ids=IDS)
def test_the_answer_fits_one_screen_and_the_derivation_leads_with_its_carrying_steps(q):
    """What a candidate says in the first five minutes, with live figures: 6-8 lines (at most about
    900 characters of source), at least four figures; and 10-15 steps that carry it."""
    c = q.content
    if q.slug in WITHOUT_A_SHORT_ANSWER:
        assert not c.answer, f"{q.slug} has its short answer now: take it out of WITHOUT_A_SHORT_ANSWER"
        return
    assert 250 <= len(c.answer) <= 900, f"{q.slug}: the short answer is {len(c.answer)} characters"
    figures = {m.group(1) for m in PLACEHOLDER.finditer(c.answer)}
    assert len(figures) >= 4, f"{q.slug}: the short answer shows {len(figures)} live figures"
    assert 10 <= len(c.carrying) <= 15, f"{q.slug}: {len(c.carrying)} carrying steps"
    assert {k for k, _ in c.metrics} <= set(c.carrying) | set(knobs_of(q.Params)), \
        f"{q.slug}: a metric card's figure is not among the carrying steps"


@pytest.mark.parametrize("q", WRITTEN, ids=IDS)
def test_every_citation_names_a_declared_source_and_every_source_is_cited(q):
    c = q.content
    cited, declared = c.cited(), [src.id for src in c.sources]
    assert not set(cited) - set(declared), f"{q.slug} cites undeclared sources {sorted(set(cited) - set(declared))}"
    assert not set(declared) - set(cited), f"{q.slug} declares sources it never cites {sorted(set(declared) - set(cited))}"
    hook_and_drills = [c.hook, *(dr.prompt for dr in c.drills), *(pr.about for pr in c.presets)]
    assert not any(CITATION.search(t) for t in hook_and_drills), f"{q.slug}: cite in the answer or the prose"


@pytest.mark.parametrize("q", WRITTEN, ids=IDS)
def test_every_directive_in_the_prose_is_drawn_by_the_page(q):
    """Read off the page object the script builds (its render stubbed): a chart declared with
    page.sweep or page.stack counts as one written with @page.chart, a [[diagrams]] table as a
    @page.diagram."""
    import runpy
    from unittest import mock

    from ui.question_page import QuestionPage

    with mock.patch.object(QuestionPage, "render", lambda self: None):
        page = runpy.run_path(str(q.page_path), run_name="page_under_test")["page"]
    missing = [f"::{kind} {name}" for kind, name in q.content.directives() if (kind, name) not in page._renderers]
    assert not missing, f"{q.slug}: the prose asks for {missing}, the page registers no renderer for it"


def test_directives_are_read_from_the_intro_as_well_as_the_sections():
    """The directive check above reads `Content.directives()`; a `::sim` above the first section
    (design-doc-review puts its review simulation there) must be in it, or a page could drop its
    renderer and the check would not notice."""
    c = parse_content("+++\nhook = 'h'\n+++\nIntro line.\n\n::sim review\n\n## Numbers\n::chart a\n"
                      "not ::chart b\n## Shape\n  ::diagram c  \n")
    assert c.directives() == [("sim", "review"), ("chart", "a"), ("diagram", "c")]
    assert ("sim", "review") in QUESTIONS["design-doc-review"].content.directives()
    assert ("diagram", "minute_plan") in QUESTIONS["interview-minute-plan"].content.directives()


@pytest.mark.parametrize("q", WRITTEN, ids=IDS)
def test_an_infinite_value_reads_without_a_hint_and_an_infinite_time_reads_unbounded(q):
    """"∞ s (≈ ∞ days)" was how an infinite wait read: a time that never ends is "unbounded", and no
    infinite figure carries a unit hint, on a card (hint=False) or in the prose."""
    wrong = []
    for where, p in _scenarios(q):
        for step in q.solve(p):
            if not step.is_numeric or not math.isinf(float(step.value)):
                continue
            shown = {step.display(), step.display(hint=False)}
            if any("≈" in text for text in shown):
                wrong.append(f"{step.key} at {where}: {shown}")
            if step.value > 0 and parse_unit(step.unit or "1").dimensionality == parse_unit("s").dimensionality \
                    and not (step.unit == "h" and step.noun) and shown != {"unbounded"}:
                wrong.append(f"{step.key} at {where}: {shown}, not 'unbounded'")
    assert not wrong, f"{q.slug}:\n" + "\n".join(wrong)


# Pages whose prose shows every step the model computes, but for the steps listed (the engine's
# catalog figures behind a step the prose does show).
EVERY_STEP_IN_THE_PROSE: dict[str, set[str]] = {
    slug: set() for slug in (
        "chat-one-to-one", "checkpoint-distribution", "checkpoint-storage", "gpu-cloud-control-plane",
        "job-scheduler-100k", "llm-gateway", "ml-config-system", "token-rate-limiter",
        "training-disaster-recovery", "usage-billing-pipeline",
    )
} | {
    "serverless-gpu": {
        "model_params", "bytes_per_param", "host_link_Bps", "gpu_peak_flops", "gpu_memory_bytes", "gpu_hbm_Bps",
        "usable_hbm_fraction", "cpu_snapshot_bytes", "gpu_extra_snapshot_bytes", "snapshot_restore_Bps",
        "usable_hbm_bytes", "active_params", "bytes_per_kv_element", "kv_bytes_per_token", "uncached_prompt_tokens",
        "cached_prompt_tokens", "attention_flops_per_position", "first_prefill_allreduce_s", "replica_hbm_Bps",
        "decode_step_compute_s", "decode_step_allreduce_s",
    },
}


@pytest.mark.parametrize("slug", sorted(EVERY_STEP_IN_THE_PROSE))
def test_the_prose_shows_every_step(slug):
    q = QUESTIONS[slug]
    c = q.content
    prose = {m.group(1) for t in [c.hook, c.intro, *(s.body for s in c.sections)] for m in PLACEHOLDER.finditer(t)}
    missing = [k for k in q.solve(q.Params()).keys() if k not in prose and k not in EVERY_STEP_IN_THE_PROSE[slug]]
    assert not missing, f"{slug}: steps the prose never shows: {missing}"


def _is_number_knob(params, name) -> bool:
    value = getattr(params(), name)
    choice = typing.get_origin(params.model_fields[name].annotation) is typing.Literal
    return isinstance(value, (int, float)) and not isinstance(value, bool) and not choice


@pytest.mark.parametrize("q", WRITTEN, ids=IDS)
def test_every_knob_has_help_a_range_and_a_draw_range_inside_it(q):
    for name, knob in knobs_of(q.Params).items():
        assert knob.label and knob.help, f"{q.slug}.{name} needs a label and a help line"
        if not _is_number_knob(q.Params, name):
            continue
        default = getattr(q.Params(), name)
        assert knob.min is not None and knob.max is not None, name
        assert knob.min <= default <= knob.max, name
        if knob.only_if:  # a custom part's or shape's number: shown only for Custom, never drawn
            assert knob.draw is None or knob.min <= knob.draw[0] <= knob.draw[1] <= knob.max, name
            continue
        assert knob.draw, f"{q.slug}.{name}: the mock interview needs a draw range"
        assert knob.min <= knob.draw[0] <= knob.draw[1] <= knob.max, name


def _outside(knob, default, side):
    bound = knob.max if side == "above" else knob.min
    step = max(1, abs(bound))
    value = bound + step if side == "above" else bound - step
    return int(value) if isinstance(default, int) else float(value)


@pytest.mark.parametrize("q", WRITTEN, ids=IDS)
def test_an_out_of_range_knob_is_refused_naming_its_label(q):
    with pytest.raises(ValidationError):
        q.Params(no_such_knob=1)  # a misspelt knob is refused, never ignored
    seed = q.Params().model_dump()
    for name, knob in knobs_of(q.Params).items():
        if not _is_number_knob(q.Params, name):
            continue
        for side in ("above", "below"):
            value = _outside(knob, seed[name], side)
            with pytest.raises(ValidationError) as err:
                q.Params(**{**seed, name: value})
            assert knob.label in str(err.value), f"{q.slug}.{name} = {value}: the message does not name the knob"


@pytest.mark.parametrize("q", WRITTEN, ids=IDS)
def test_solve_is_fast(q):
    """A page re-solves on every slider move, and sweeps call solve hundreds of times: under a
    millisecond of CPU time (wall time is noise on a shared machine) for the seed scenario."""
    p = q.Params()
    q.solve(p)
    times = []
    for _ in range(200):
        t0 = time.process_time()
        q.solve(p)
        times.append(time.process_time() - t0)
    median, mean = statistics.median(times), statistics.fmean(times)
    assert median < 1e-3 and mean < 1e-3, f"{q.slug}: median {median * 1e3:.2f} ms, mean {mean * 1e3:.2f} ms"


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
def test_every_page_has_two_to_four_teaching_presets(q):
    """Besides the implicit seed scenario, two to four named scenarios for a class: more crowd the chooser."""
    assert 2 <= len(q.content.presets) <= 4


# Every key figure each issue names, by exact step key, with its unit: the names and units are part
# of the contract, and the prose shows every one.
KEY_FIGURES: dict[str, dict[str, str]] = {
    "agent-sessions": {
        "session_duration_s": "s", "gpu_duty_cycle": "%", "kv_bytes_mean": "B", "kv_bytes_final": "B",
        "replicas_to_hold_kv": "1", "reload_per_step_s": "s", "recompute_per_step_s": "s",
        "recompute_multiplier": "1", "expected_loss_per_failure_s": "s",
        "expected_loss_per_failure_with_checkpoints_s": "s",
    },
    "autoscaling-warm-pool": {
        "in_flight_base": "1", "in_flight_peak": "1", "warm_pool_replicas": "1",
        "warm_replicas_per_second_of_cold_start": "1/s", "backlog_without_pool": "1",
        "scale_up_cooldown_s": "s", "scale_down_hold_s": "s",
    },
    "batched-inference-api": {
        "per_gpu_rps_full": "1/s", "gpus_floor": "1", "per_gpu_rps_at_fill": "1/s", "gpus_at_fill": "1",
        "gpus_at_target_util": "1", "batch_fill_time_s": "s", "expected_batch_at_flush": "1",
        "gpus_with_timeout_flush": "1", "worst_batching_wait_s": "s",
    },
    "chat-one-to-one": {
        "peak_messages_per_s": "1/s", "heartbeats_per_s": "1/s", "presence_shards": "1",
        "kafka_partitions": "1", "storage_per_day_TB": "TB",
    },
    "checkpoint-distribution": {
        "link_GBps": "GB/s", "lower_bound_s": "s", "naive_pull_s": "s", "tree_levels": "1",
        "tree_per_level_s": "s", "tree_s": "s", "chunk_count": "1", "chunk_time_s": "s", "pipeline_s": "s",
        "pipeline_overhead_s": "s", "chunked_tree_s": "s", "manifest_bytes": "B",
        "chain_with_one_slow_peer_s": "s", "swarm_estimate_s": "s",
    },
    "checkpoint-storage": {
        "aggregate_write_GBps": "GB/s", "per_gpu_write_GBps": "GB/s", "peak_to_average": "1",
        "min_drain_GBps": "GB/s", "volume_per_day_TB": "TB", "retained_TB": "TB",
        "reshard_bytes_per_rank_GB": "GB", "reshard_max_source_shards_per_rank": "1",
    },
    "cluster-10k-gpus": {
        "nodes_needed": "1", "nodes_built": "1", "pods": "1", "leaf_switches": "1", "spine_switches": "1",
        "core_switches": "1", "total_switches": "1", "checkpoint_write_GBps": "GB/s", "it_load_MW": "MW",
        "facility_power_MW": "MW", "interruptions_per_day": "1", "mean_nodes_in_repair": "1",
        "spare_nodes_p99": "1",
    },
    "continuous-batching": {
        "kv_bytes_per_token": "B", "kv_budget_bytes": "B", "batch_cap_kv": "1", "batch_cap_tpot": "1",
        "step_time_s": "s", "tokens_per_s_per_replica": "1/s", "tpot_bound_s": "s", "ridge_batch": "1",
        "p95_tpot_s": "s",
    },
    "data-platform-sensitivity": {
        "raw_per_day_TB": "TB", "stored_TB": "TB", "storage_cost_per_month_usd": "USD", "backfill_hours": "h",
    },
    "design-doc-review": {
        "per_gpu_full_batch_rps": "1/s", "gpus_needed_at_peak": "1", "shortfall_at_peak_gpus": "1",
        "risk_expected_annual_cost_usd": "USD", "risk_ranking": "1",
    },
    "disaggregated-prefill-decode": {
        "prefill_arithmetic_intensity": "FLOP/B", "decode_arithmetic_intensity": "FLOP/B",
        "prefill_to_decode_node_ratio": "1", "kv_transfer_bytes_per_request": "B",
        "kv_egress_per_prefill_node_Bps": "B/s", "monolith_capacity_per_node": "1/s",
        "disaggregated_capacity_per_node": "1/s", "crossover_load": "1/s",
    },
    "eval-pipeline": {
        "prompts_per_checkpoint": "1", "tokens_per_checkpoint": "1", "tokens_per_s_per_gpu": "1/s",
        "gpu_hours_per_checkpoint": "h", "replicas_fast": "1", "replicas_slow": "1", "gpus_fast": "1",
        "gpus_slow": "1",
    },
    "gpu-cloud-control-plane": {
        "api_qps": "1/s", "heartbeat_writes_per_s": "1/s", "failure_detection_s": "s",
        "p_allocation_has_bad_node": "%", "p_allocation_has_bad_node_gated": "%",
        "meter_buffer_per_node_KB": "kB",
    },
    "gpu-credit-ledger": {
        "capacity_gpu_hours": "h", "credits_to_issue_gpu_hours": "h", "ledger_debits_per_s": "1/s",
        "hours_to_exhaust_at_burst": "h", "contention_allocation_gpus": "1",
    },
    "inference-observability": {
        "mbu": "%", "per_token_span_cost_per_day_usd": "USD", "span_cost_to_gpu_cost_ratio": "1",
        "metric_series_full_labels": "1", "metric_series_without_tenant": "1", "tenant_cost_usd": "USD",
    },
    "interview-minute-plan": {
        "planned_minutes": "min", "slack_minutes": "min", "request_rate": "1/s", "uncached_prompt_tokens": "1",
        "replicas": "1", "gpus": "1", "checkpoint_end_of_numbers": "min", "checkpoint_end_of_shape": "min",
        "checkpoint_end_of_arithmetic": "min", "checkpoint_end_of_depth": "min",
        "checkpoint_end_of_failure_modes": "min",
    },
    "job-scheduler-100k": {
        "naive_scan_s_per_tick": "s", "heap_ops_per_decision": "1", "mean_wait_h": "h",
        "best_victim_cost_gpu_hours": "h", "lost_work_without_signal_gpu_hours": "h",
        "lost_work_with_checkpoint_on_signal_gpu_hours": "h",
    },
    "kv-cache-tiers": {
        "kv_bytes_per_token": "B", "conversation_kv_bytes": "B", "reload_s_dram": "s", "reload_s_ssd": "s",
        "recompute_s": "s", "break_even_bandwidth_Bps": "B/s", "break_even_prefix_tokens_ssd": "1",
    },
    "llm-gateway": {
        "keys_per_team": "1", "team_provider_routes": "1", "spend_per_month_usd": "USD",
        "cache_savings_per_month_usd": "USD", "unavailability_with_fallback": "%",
        "average_team_budget_usd": "USD", "audit_bytes_per_month": "B",
    },
    "ml-config-system": {
        "config_valid": "1", "batch_divisibility_remainder": "1", "grad_accum_steps": "1", "sweep_runs": "1",
        "config_sha256": "1",
    },
    "model-artifact-distribution": {
        "docker_time_per_node_s": "s", "naive_registry_rollout_s": "s", "per_node_lower_bound_s": "s",
        "chunk_count": "1", "chunked_relay_rollout_s": "s", "registry_egress_TB": "TB",
    },
    "moe-1t-serving": {
        "weight_bytes_per_gpu": "B", "min_gpus_for_weights": "1", "kv_bytes_per_token": "B",
        "weight_read_s": "s", "kv_read_s": "s", "all_to_all_s": "s", "decode_step_s": "s",
        "tokens_per_s": "1/s", "tokens_per_s_per_user": "1/s", "imbalance_throughput_loss": "%",
    },
    "moe-1t-training": {
        "state_TB": "TB", "checkpoint_TB": "TB", "train_flops_per_token": "FLOP",
        "compute_ratio_if_active": "1", "gpu_hours": "h", "state_per_gpu_GB": "GB",
        "a2a_egress_per_gpu_GBps": "GB/s", "step_slowdown_from_imbalance": "1",
    },
    "multi-lora": {
        "dedicated_gpus": "1", "dedicated_weight_bytes": "B", "adapter_bytes": "B",
        "multi_lora_replica_weight_bytes": "B", "mixed_batch_overhead_fraction": "%", "multi_lora_gpus": "1",
    },
    "multi-region-failover": {
        "survivor_utilization_after_loss": "1", "n_minus_1_max_utilization": "1",
        "required_capacity_per_region": "1", "backlog_after_window": "1", "in_flight_lost": "1",
        "retry_rate_per_s": "1/s",
    },
    "playground-abuse": {
        "concurrent_streams": "1", "gateway_memory_bytes": "B", "egress_Bps": "B/s", "kv_to_text_ratio": "1",
        "reprefill_on_resume_s": "s", "free_tier_tokens_per_day": "1", "per_user_daily_quota_tokens": "1",
    },
    "pretraining-data-pipeline": {
        "shards_TB": "TB", "clean_text_TB": "TB", "raw_PB": "PB", "extract_input_GBps": "GB/s",
        "filter_input_GBps": "GB/s", "dedup_input_GBps": "GB/s", "tokenize_input_GBps": "GB/s",
        "shard_input_GBps": "GB/s", "training_duration_days": "d", "trainer_read_MBps": "MB/s",
        "implied_training_gpus": "1",
    },
    "prompt-playground-product": {
        "full_copies_KB": "kB", "snapshot_plus_diff_KB": "kB", "storage_saving_ratio": "1",
        "worst_case_diffs_applied": "1", "revocation_staleness_bound_s": "s",
    },
    "rag-10k-qps": {
        "embedder_gpus": "1", "reranker_gpus": "1", "index_shards": "1", "replicas_per_shard": "1",
        "llm_node_seconds_per_query": "s", "llm_nodes_no_cache": "1", "llm_nodes_with_cache": "1",
        "latency_budget_ms": "ms", "latency_budget_ms_network": "ms", "latency_budget_ms_embed": "ms",
        "latency_budget_ms_retrieve": "ms", "latency_budget_ms_rerank": "ms",
        "latency_budget_ms_llm_queue": "ms", "latency_budget_ms_prefill": "ms",
    },
    "research-cluster-fair-share": {
        "decayed_usage_gpu_hours": "h", "fair_share_factor": "1", "allocation_gpus": "1", "borrowed_gpus": "1",
        "preempted_gpus": "1", "lost_gpu_hours_without_warning": "h",
        "lost_gpu_hours_with_checkpoint_on_signal": "h",
    },
    "serverless-gpu": {
        "cold_start_s": "s", "snapshot_start_s": "s", "warm_pool_slots": "1",
        "warm_pool_slots_with_snapshot": "1", "billed_fraction": "%", "fleet_billed_utilization": "%",
        "gross_margin": "%",
    },
    "serving-platform": {
        "request_rate": "1/s", "requests_in_flight": "1", "prefill_replica_equivalents": "1",
        "decode_busy_fraction": "%", "replicas": "1", "gpus": "1",
    },
    "speculative-decoding": {
        "expected_tokens_per_pass": "1", "speedup_small_batch": "1", "optimal_draft_tokens": "1",
        "ridge_batch": "1", "break_even_batch_weights_only": "1", "break_even_batch_with_kv": "1",
        "speedup_at_operating_batch": "1",
    },
    "token-rate-limiter": {
        "cost_ratio_large_to_small": "1", "input_refill_per_s": "1/s", "output_refill_per_s": "1/s",
        "over_reservation_factor": "1", "admits_per_min_reserving": "1/min", "admits_per_min_settled": "1/min",
        "counter_ops_per_s": "1/s", "counter_shards": "1", "oversubscription_ratio": "1",
    },
    "training-disaster-recovery": {
        "run_gpu_hours": "h", "rpo_worst_min": "min", "rpo_mean_min": "min", "rto_min": "min",
        "expected_interruptions": "1", "job_mtbf_h": "h", "gpu_hours_lost": "h", "fraction_lost": "%",
        "young_optimal_interval_min": "min",
    },
    "ttft-slo-200ms": {
        "prefill_budget_s": "s", "max_prompt_tokens_linear": "1", "max_prompt_tokens_with_attention": "1",
        "max_prompt_tokens": "1", "chunk_time_s": "s", "max_admissible_prompt_tokens": "1",
        "max_utilization_mm1": "%", "max_utilization_pooled": "%", "replicas_pooled": "1",
        "replicas_separate": "1",
    },
    "usage-billing-pipeline": {
        "events_per_month": "1", "kafka_partitions": "1", "dedup_index_GB": "GB",
        "revenue_lost_to_drops_per_month_usd": "USD", "rollup_rows_per_month": "1",
    },
    "video-generation": {
        "tokens_per_pass": "1", "flops_per_pass": "FLOP", "flops_per_request": "FLOP",
        "gpu_seconds_per_request": "s", "wall_time_s": "s", "arithmetic_intensity_batch1": "FLOP/B",
        "gpus_for_load": "1", "jobs_in_service": "1",
    },
}


# Key figures that are a word, not a number: a verdict, a ranking, a hash.
TEXT_KEY_FIGURES = {"design-doc-review": {"risk_ranking"}, "ml-config-system": {"config_valid", "config_sha256"}}


@pytest.mark.parametrize("q", WRITTEN, ids=IDS)
def test_every_key_figure_the_issue_names_is_a_step_with_its_unit_in_the_prose(q):
    d = q.solve(q.Params())
    c = q.content
    prose = {m.group(1) for t in [c.hook, c.intro, *(s.body for s in c.sections)] for m in PLACEHOLDER.finditer(t)}
    for key, unit in KEY_FIGURES[q.slug].items():
        assert key in d, f"{q.slug} lacks step {key}"
        shown = "%" if d[key].percent else d[key].unit  # a share is its fraction, shown in percent
        assert shown == unit, f"{q.slug}.{key} is in {shown}, the issue's figure is in {unit}"
        parse_unit(unit)
        assert key in prose, f"{q.slug}: the prose never shows the key figure {{{{{key}}}}}"
        assert d[key].is_numeric or key in TEXT_KEY_FIGURES.get(q.slug, ()), f"{q.slug}.{key} is not a number"


def test_key_figures_cover_every_question_in_the_catalog():
    assert set(KEY_FIGURES) == set(QUESTIONS)
    assert all(KEY_FIGURES.values()), "every issue names its key figures"


def test_every_question_in_the_catalog_is_written_with_six_drills():
    """Coverage is strict now that every content issue has landed."""
    missing = [q.slug for q in QUESTIONS.values() if not (q.module_path.exists() and q.content_path.exists()
                                                           and q.page_path.exists())]
    assert not missing, f"not written: {missing}"
    thin = [q.slug for q in QUESTIONS.values() if len(q.drills) < 6]
    assert not thin, f"fewer than six drills: {thin}"
