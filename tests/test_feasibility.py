"""Every scenario a page shows or a mock draws is physically possible, or says it is not (issue #20).

A model declares its conditions with `Derivation.require`; a page whose scenario breaks one shows
the message at the top (ui/feasibility.py), and `draw_scenario(..., solve=...)` never returns one.
Here: the API itself, every question's defaults, the mock's draws for every question, how often an
unfiltered draw breaks a condition (printed, per question), and one scenario worked by hand for
each condition a model declares (the four pages the issue names keep theirs beside their other
hand-worked figures, in tests/models/).
"""

from __future__ import annotations


from typing import Annotated

import pytest

from models.core import Derivation, Knob, StrictModel, values_only
from models.mock import draw_scenario, feasible
from models.registry import QUESTIONS
from ui import feasibility as banner

ALL = list(QUESTIONS.values())
IDS = [q.slug for q in ALL]
MOCK_SEEDS = 40  # per question, filtered: every one must come back feasible
COUNT_DRAWS = 250  # per question, unfiltered: the rate is reported per 1,000

# Unfiltered infeasible draws per 1,000 (seeds 0-999), measured with every condition declared but
# before the draw ranges were narrowed (2026-12-02). Printed beside today's rate; not asserted.
BEFORE_PER_1000 = {
    "continuous-batching": 158, "kv-cache-tiers": 82, "token-rate-limiter": 431,
    "eval-pipeline": 108, "inference-observability": 296, "gpu-cloud-control-plane": 315,
    "research-cluster-fair-share": 193, "disaggregated-prefill-decode": 1, "serverless-gpu": 5,
    "ttft-slo-200ms": 105, "rag-10k-qps": 111,  # declared later on 2026-12-02, draw ranges as they were
}

# One scenario per declared condition that breaks it, each worked by hand in a test below or in the
# page's own test file. A new condition without a row here fails
# test_every_declared_condition_has_a_scenario_that_breaks_it.
BREAKS = {
    ("inference-observability", "replica_busy_share"): dict(prefix_cache_hit=0.0),
    ("inference-observability", "mbu"): dict(tokens_per_s_replica=12_000),
    ("eval-pipeline", "fast_fleet_keeps_up"): dict(checkpoints_per_day=12),
    ("research-cluster-fair-share", "guarantee_holds_a_gang"): dict(job_gpus=128),
    ("continuous-batching", "replica_load"): dict(arrival_rps=6),
    ("gpu-cloud-control-plane", "reconciler_keeps_up"): dict(reconciler_workers=10),
    ("kv-cache-tiers", "ssd_link_utilization"): dict(conversations_per_min=60),
    # worked by hand in tests/models/test_kv_cache_tiers.py: 144 GB usable - 141.1 GB of weights < 9.83 GB
    ("kv-cache-tiers", "hbm_room_conversations"): dict(tp_degree=2),
    ("token-rate-limiter", "fleet_utilization_at_peak"): dict(peak_use_fraction=0.5),
    ("token-rate-limiter", "hot_shard_load"): dict(tenants=30_000, fleet_replicas=10_000, largest_tenant_share=0.8),
    
    ("serving-platform", "weight_read_floor_busy"): dict(tpot_target_ms=5, given_batch=64),
    ("interview-minute-plan", "weight_read_floor_busy"): dict(tpot_target_ms=2, given_batch=16),
    ("disaggregated-prefill-decode", "kv_egress_link_utilization"): dict(kv_link="100GbE", kv_nics_per_node=1,
                                                                         compute_precision="fp8", prefill_mfu=0.9),
    ("serverless-gpu", "tenant_fits_its_gpus"): dict(kv_reserve_gb=100),
    ("research-cluster-fair-share", "checkpoint_overhead_share"): dict(save_minutes=10, checkpoint_minutes=5),
    # 65,536-token microbatches: 8 a step for 32 stages (tests/models/test_moe_1t_training.py)
    ("moe-1t-training", "pipeline_fills"): dict(microbatch_tokens=65_536),
    # a 64-port switch's 32 twin-port modules draw 32 x 17 W = 544 W, more than 500 W for the whole switch
    ("cluster-10k-gpus", "switch_power_covers_optics"): dict(switch_W=500),
    # worked by hand in tests/models/test_rag_10k_qps.py: 3.29 ms weight read + 1.9 ms fixed > 4 ms
    ("rag-10k-qps", "stream_gap_s"): dict(tpot_target_ms=4, given_batch=16),
    ("inference-observability", "tenant_step_share"): dict(given_batch=1, tokens_per_s_replica=20,
                                                           tenant_context_tokens=128_000),
    # worked by hand in tests/models/test_ttft_slo_200ms.py and tests/models/test_rag_10k_qps.py
    ("ttft-slo-200ms", "max_admissible_prompt_tokens"): dict(network_ms=100),
    ("rag-10k-qps", "weight_read_floor_busy"): dict(tpot_target_ms=3, given_batch=16),
    ("rag-10k-qps", "latency_slack_ms"): dict(ttft_slo_ms=200),
}


# --- the API ---------------------------------------------------------------------------------------


def test_require_records_conditions_beside_the_steps():
    d = Derivation()
    d.step("busy_share", "Busy", 1.47, percent=True)
    formatted = []

    def message() -> str:
        formatted.append(1)
        return "This replica cannot do it: prefill and decode need 147% of its time."

    assert d.require("busy_share", d.value("busy_share") <= 1, message) is False
    assert d.require("fits", True, lambda: formatted.append(2) or "never read") is True
    assert d.conditions == ["busy_share", "fits"]
    assert not d.feasible
    assert d.violations == [("busy_share", "This replica cannot do it: prefill and decode need 147% of its time.")]
    assert formatted == [1]  # a met condition's message is never formatted
    assert d.keys() == ["busy_share"]  # conditions are not steps
    with pytest.raises(ValueError, match="declared twice"):
        d.require("fits", True, "again")


def test_a_plain_string_message_and_a_feasible_derivation():
    d = Derivation()
    d.require("ok", True, "unused")
    assert d.feasible and d.violations == []
    d.require("broken", False, "Plain words.")
    assert d.violations == [("broken", "Plain words.")]


class _Toy(StrictModel):
    load: Annotated[float, Knob("Load", "", 0, 10, 0.1, draw=(0, 10))] = 1.0


def _toy_solve(p: _Toy) -> Derivation:
    d = Derivation(p)
    util = d.step("util_share", "Utilization", 0.2 * p.load, percent=True, formula="0.2 × {load}")
    d.require("util_share", util <= 1, lambda: f"{100 * util:g}% is more than all of it.")
    return d


def test_the_values_only_path_keeps_the_conditions():
    p = _Toy(load=7.5)
    full = _toy_solve(p)
    with values_only():
        light = _toy_solve(p)
    assert type(light).__name__ == "_ValuesOnly"
    assert light.violations == full.violations == [("util_share", "150% is more than all of it.")]
    assert light.conditions == full.conditions == ["util_share"]


def test_draw_scenario_redraws_until_the_solve_is_feasible():
    # Draws of 0-10 with util = 20 x load: half break the 100% ceiling.
    unfiltered = [draw_scenario(_Toy, s).load for s in range(200)]
    assert sum(x > 5 for x in unfiltered) > 50
    filtered = [draw_scenario(_Toy, s, solve=_toy_solve) for s in range(200)]
    assert all(p.load <= 5 for p in filtered)
    assert len({p.load for p in filtered}) >= 5  # still a spread of scenarios (drawn to whole numbers)
    assert [draw_scenario(_Toy, s, solve=_toy_solve) for s in range(20)] == filtered[:20]  # same seed, same draw
    assert all(feasible(_toy_solve, p) for p in filtered)


def test_draw_scenario_gives_the_seed_scenario_when_nothing_drawn_is_feasible():
    def never(p):
        d = Derivation(p)
        d.require("impossible", False, "Never.")
        return d

    assert draw_scenario(_Toy, 3, tries=5, solve=never) == _Toy()


def test_the_banner_says_nothing_for_a_feasible_scenario_and_every_message_otherwise(monkeypatch):
    shown = []
    monkeypatch.setattr(banner.st, "warning", lambda text, **kw: shown.append(text))
    ok = Derivation()
    ok.require("fine", True, "unused")
    banner.feasibility_banner(ok)
    assert shown == [] and banner.feasibility_text(ok) == ""

    one = _toy_solve(_Toy(load=7.5))
    banner.feasibility_banner(one)
    assert len(shown) == 1
    assert shown[0].startswith("**This scenario cannot happen as stated.** 150% is more than all of it")

    two = Derivation()
    two.require("a", False, "Costs $5 a day.")
    two.require("b", False, "Needs 147% of it.")
    text = banner.feasibility_text(two)
    assert text.count("\n- ") == 2
    assert r"\$5" in text  # no stray LaTeX from a dollar sign


# --- every question --------------------------------------------------------------------------------


@pytest.mark.parametrize("q", ALL, ids=IDS)
def test_the_defaults_are_feasible(q):
    assert q.solve(q.Params()).violations == []


@pytest.mark.parametrize("q", ALL, ids=IDS)
def test_a_mock_never_draws_an_impossible_scenario(q):
    for seed in range(MOCK_SEEDS):
        p = draw_scenario(q.Params, seed, solve=q.solve)
        assert q.solve(p).violations == [], (seed, p)


def test_infeasible_draws_per_thousand(capsys):
    """How often an unfiltered draw breaks a condition: what the mock's redraw loop absorbs."""
    rows, worst = [], 0
    for q in ALL:
        bad = sum(not feasible(q.solve, draw_scenario(q.Params, seed)) for seed in range(COUNT_DRAWS))
        per_1000 = round(1000 * bad / COUNT_DRAWS)
        worst = max(worst, per_1000)
        rows.append((q.slug, BEFORE_PER_1000.get(q.slug, 0), per_1000))
    with capsys.disabled():
        print(f"\ninfeasible draws per 1,000, unfiltered (before: 1,000 draws; now: {COUNT_DRAWS} draws)")
        for slug, before, now in rows:
            if before or now:
                print(f"  {slug:32s} before {before:4d}  now {now:4d}")
        print(f"  all {len(rows)} questions: before {sum(r[1] for r in rows) / len(rows):.0f}, "
              f"now {sum(r[2] for r in rows) / len(rows):.0f} per 1,000")
    # Well under half, so the mock's 200 redraws never run out (the chance is below 0.5^200).
    assert worst < 500


def test_every_declared_condition_has_a_scenario_that_breaks_it():
    declared = {(q.slug, key) for q in ALL for key in q.solve(q.Params()).conditions}
    assert declared == set(BREAKS)


@pytest.mark.parametrize("slug,key", sorted(BREAKS), ids=[f"{s}:{k}" for s, k in sorted(BREAKS)])
def test_each_condition_breaks_where_worked(slug, key):
    q = QUESTIONS[slug]
    d = q.solve(q.Params(**BREAKS[(slug, key)]))
    messages = dict(d.violations)
    assert key in messages
    text = messages[key]
    assert text[0].isupper() and text.endswith(".") and "\n" not in text
    assert any(ch.isdigit() for ch in text), "a message carries its numbers"


# --- the conditions of the other models, worked by hand ---------------------------------------------


def test_reconcilers_that_cannot_keep_up():
    # 4,000 nodes every 30 s is 133.3 reconciles/s; 5 calls of 20 ms is 100 ms each: 13.33 worker-seconds
    # per second. Twenty workers are 66.7% busy; ten would need 133.3% of their time.
    q = QUESTIONS["gpu-cloud-control-plane"]
    need = 4000 / 30 * 5 * 0.020
    assert 100 * need / 20 == pytest.approx(66.67, abs=0.01)
    assert q.solve(q.Params()).violations == []
    d = q.solve(q.Params(reconciler_workers=10))
    assert d.value("reconciler_busy_share") == pytest.approx(need / 10)
    (key, message), = d.violations
    assert message.startswith("The reconciler cannot keep up: visiting 4,000 nodes every 30 s needs 133.3% "
                              "of 10 workers' time")
    assert q.solve(q.Params(reconciler_workers=14)).violations == []  # 95.2%


def test_a_fleet_that_cannot_serve_the_peak_and_a_key_one_shard_cannot_hold():
    q = QUESTIONS["token-rate-limiter"]
    # 10,000 tenants x 80,000 tokens/min / 60 = 13.33 M tokens/s of limits; half in use at the peak is
    # 6.667 M against 2,000 replicas x 2,500 = 5 M tokens/s: 133%. At 30% in use, 4 M: 80%.
    d = q.solve(q.Params(peak_use_fraction=0.5))
    demand, fleet = 10_000 * 80_000 / 60 * 0.5, 2000 * 2500
    assert d.value("fleet_utilization_at_peak") == pytest.approx(demand / fleet) == pytest.approx(1.333, abs=0.001)
    assert [k for k, _ in d.violations] == ["fleet_utilization_at_peak"]
    assert "6,666,667 tokens/s" in dict(d.violations)["fleet_utilization_at_peak"]
    # 30,000 tenants on 10,000 replicas: 30,000 x 1,333.3 x 0.3 = 12 M tokens/s of 25 M (48%). At 400
    # tokens a request that is 30,000 admits/s, 37,500 arrivals with 20% rejected: an admit is one
    # script and one settle, 2 x 30,000 + 7,500 = 67,500 counter ops/s, 80% of them on one key:
    # 54,000 against a shard's 50,000.
    d = q.solve(q.Params(tenants=30_000, fleet_replicas=10_000, largest_tenant_share=0.8))
    ops = 2 * 30_000 + (30_000 / 0.8 - 30_000)
    assert d.value("counter_ops_per_s") == pytest.approx(ops) == pytest.approx(67_500)
    assert d.value("hot_tenant_ops_per_s") == pytest.approx(0.8 * ops)
    assert d.value("fleet_utilization_at_peak") == pytest.approx(0.48)
    (key, message), = d.violations
    assert key == "hot_shard_load" and "54,000 ops/s" in message and "50,000 ops/s" in message
    # 40% on that key: 27,000 ops/s, which a shard can do.
    assert q.solve(q.Params(tenants=30_000, fleet_replicas=10_000, largest_tenant_share=0.4)).violations == []


def test_an_ssd_link_busier_than_all_of_its_time():
    # One drive at 14 GB/s, half of it for reloads, for one replica: 7 GB/s. At 60 new conversations a
    # minute, 1/s, the SSD tier serves the share its step says, each reload the returning 33.26 GB.
    q = QUESTIONS["kv-cache-tiers"]
    d = q.solve(q.Params(conversations_per_min=60))
    assert d.value("ssd_reload_Bps") == pytest.approx(14e9 * 0.5)
    ret = 101_500 * 327_680  # tokens returning x Llama-3-70B's KV per token in bf16
    assert d.value("returning_kv_bytes") == pytest.approx(ret)
    util = 1.0 * d.value("predicted_hit_share_ssd") * ret / 7e9  # 1 conversation/s x hit share x bytes / link
    assert d.value("ssd_link_utilization") == pytest.approx(util)
    assert util > 1
    (key, message), = d.violations
    assert key == "ssd_link_utilization" and f"{100 * util:.1f}%" in message
    # Six a minute (the page's default): 0.1/s x 6.07% x 33.26 GB / 7 GB/s = 2.9%.
    assert q.solve(q.Params()).violations == []


# Llama-3-70B counted from its config (80 layers, d 8,192, 8 KV heads of 128, SwiGLU 28,672, 128,256
# untied embeddings) and Llama-3-8B (32 layers, d 4,096, 8 KV heads, SwiGLU 14,336), both in bf16.
P70 = 80 * (2 * 8192 * 8192 + 2 * 8192 * 1024 + 3 * 8192 * 28672) + 2 * 128256 * 8192
P8 = 32 * (2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336) + 2 * 128256 * 4096
KV70 = 2 * 80 * 8 * 128 * 2


def test_a_tpot_target_shorter_than_one_weight_read():
    # 141.1 GB of Llama-3-70B over 8 H100s at 3.35 TB/s and 80% MBU: 6.58 ms, over a 5 ms target. With
    # no batch given the page refuses the target outright; an observed batch of 64 slips past that check.
    read = 2 * P70 / (8 * 3.35e12 * 0.8)
    assert read == pytest.approx(6.581e-3, rel=1e-3)
    q = QUESTIONS["serving-platform"]
    d = q.solve(q.Params(tpot_target_ms=5, given_batch=64))
    assert d.value("weight_read_s") == pytest.approx(read)
    (key, message), = d.violations
    assert key == "weight_read_floor_busy" and "6.581 ms" in message and "5 ms" in message
    # Llama-3-8B on one H100: 16.06 GB / 2.68 TB/s = 5.99 ms, three times a 2 ms target.
    q = QUESTIONS["interview-minute-plan"]
    d = q.solve(q.Params(tpot_target_ms=2, given_batch=16))
    assert d.value("weight_read_floor_busy") == pytest.approx(2 * P8 / (3.35e12 * 0.8) / 2e-3)
    assert [k for k, _ in d.violations] == ["weight_read_floor_busy"]


def test_a_kv_hand_off_faster_than_its_nic():
    # A 2,000-token prompt of Llama-3-70B is 2,000 x 327,680 B = 655.4 MB of KV. One 100GbE NIC moves
    # 12.5 GB/s, so a prefill node that finishes a prompt in under 52.4 ms outruns it.
    q = QUESTIONS["disaggregated-prefill-decode"]
    d = q.solve(q.Params(**BREAKS[("disaggregated-prefill-decode", "kv_egress_link_utilization")]))
    kv = 2000 * KV70
    assert d.value("kv_transfer_bytes_per_request") == pytest.approx(kv)
    assert d.value("kv_node_link_Bps") == pytest.approx(12.5e9)
    assert d.value("prefill_s_per_request") < kv / 12.5e9 == pytest.approx(0.05243, rel=1e-3)
    assert [k for k, _ in d.violations] == ["kv_egress_link_utilization"]
    assert q.solve(q.Params()).violations == []  # 8 NDR NICs: 400 GB/s against 8 GB/s


def test_a_tenant_larger_than_its_gpu():
    # Llama-3-8B in bf16 is 16.06 GB; with a 100 GB KV reserve a tenant needs 116.1 GB of the 72 GB
    # an 80 GB H100 leaves usable at 90%.
    q = QUESTIONS["serverless-gpu"]
    d = q.solve(q.Params(kv_reserve_gb=100))
    assert d.value("tenant_bytes") == pytest.approx(2 * P8 + 100e9)
    (key, message), = d.violations
    assert key == "tenant_fits_its_gpus" and "116.1 GB" in message and "72 GB" in message


def test_a_save_longer_than_the_interval_and_a_tenant_bigger_than_its_batch():
    q = QUESTIONS["research-cluster-fair-share"]
    (key, message), = q.solve(q.Params(save_minutes=10, checkpoint_minutes=5)).violations
    assert key == "checkpoint_overhead_share" and "10 min" in message and "5 min" in message
    assert q.solve(q.Params(save_minutes=4.9, checkpoint_minutes=5)).violations == []
    # One sequence of 2,000 tokens reads 655 MB of KV a step; a tenant said to be in that batch with
    # 128,000 tokens of context reads 128,000 x 327,680 B = 41.9 GB: it cannot be that sequence.
    q = QUESTIONS["inference-observability"]
    d = q.solve(q.Params(given_batch=1, tokens_per_s_replica=20, tenant_context_tokens=128_000))
    assert d.value("tenant_kv_bytes_per_seq") == pytest.approx(128_000 * KV70)
    assert d.value("step_bytes") == pytest.approx(2 * P70 + 2000 * KV70)
    (key, message), = d.violations
    assert key == "tenant_step_share" and "41.94 GB" in message and "655.4 MB" in message


def test_the_issue_pages_name_their_conditions():
    """The four pages issue #20 names: hand-worked in tests/models/; here, that each is declared."""
    for slug, key in [("inference-observability", "replica_busy_share"), ("eval-pipeline", "fast_fleet_keeps_up"),
                      ("research-cluster-fair-share", "guarantee_holds_a_gang"),
                      ("continuous-batching", "replica_load")]:
        assert key in QUESTIONS[slug].solve(QUESTIONS[slug].Params()).conditions


def test_feasible_reads_the_values_only_solve():
    calls = []

    def spy(p):
        calls.append(type(Derivation(p)).__name__)
        return _toy_solve(p)

    assert feasible(spy, _Toy(load=2)) and calls == ["_ValuesOnly"]
    assert not feasible(spy, _Toy(load=9.0))


# Presets that show a design failing on purpose: the banner is what they teach.
FAILING_ON_PURPOSE = {
    
    ("token-rate-limiter", "A busy peak minute"),
    ("gpu-cloud-control-plane", "Twenty thousand nodes, polled every 10 s"),
    ("ttft-slo-200ms", "Users on another continent"),
}


@pytest.mark.parametrize("q", ALL, ids=IDS)
def test_a_preset_breaks_a_condition_only_when_that_is_its_point(q):
    for preset in q.content.presets:
        broken = q.solve(q.Params(**preset.values)).violations
        assert bool(broken) == ((q.slug, preset.name) in FAILING_ON_PURPOSE), (preset.name, broken)
