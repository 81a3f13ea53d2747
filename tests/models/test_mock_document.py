"""The mock round's document reader: numbers found, and matched to key figures (issue 23).

Every expected value here is worked by hand in the test (the checkpoint arithmetic, the
Llama-3-70B shape, KV bytes per token), never read back from the model's own output."""

from __future__ import annotations

import math
import random
import time

import pytest

from models import mock_document
from models.core import Derivation
from models.mock_document import NAMED_COVERAGE, quantities, read_document
from models.registry import QUESTIONS


def _texts(document: str) -> list[str]:
    return [q.text for q in quantities(document)]


def _by_key(findings):
    return {f.key: f for f in findings}


# ---------------------------------------------------------------------------------------------
# Finding the quantities


def test_the_issues_examples_read_as_the_drills_read_them():
    doc = ("KV is ~320 KB/token; decode runs at 2.7k tok/s on 8 GPUs, the hall draws 14 MW, "
           "the build costs $1.2M, the links are 10 Gbps and the fleet is 60% busy.")
    qs = quantities(doc)
    got = [(q.text, q.value, q.unit) for q in qs]
    assert got == [
        ("~320 KB/token", 320 * 1000, "B"),
        ("2.7k tok/s", 2.7 * 1000, "1/s"),
        ("8 GPUs", 8, "1"),
        ("14 MW", 14 * 10**6, "W"),
        ("$1.2M", 1.2 * 10**6, "USD"),
        ("10 Gbps", 10 * 10**9 / 8, "B/s"),  # bits per second: 1.25 GB/s
        ("60%", 0.6, "1"),
    ]
    for q in qs:
        assert doc[q.start:q.end] == q.text
    assert [q.typed_unit for q in qs] == ["kB", "1/s", "", "MW", "USD", "Gb/s", "%"]


def test_numbers_inside_names_are_not_quantities():
    doc = ("Llama-3-70B on H100 SXM in fp8, KV in bf16; a TPU v5e, a p99 target, an A100-80GB, "
           "Qwen2.5-72B, gpt-4o, x86 hosts, and one 8xH100 box.")
    # only the eight of "8xH100" is a number someone meant as a quantity
    assert [(q.text, q.value) for q in quantities(doc)] == [("8", 8)]


def test_headings_list_markers_dates_clock_times_versions_ranges_and_urls_are_skipped():
    doc = "\n".join([
        "## 1. Numbers (5 min)",
        "## 2. Shape",
        "## Failure modes",
        "### 3. Sizing the fleet",
        "1. First the users",
        "2) then the replicas",
        "Written 2026-12-02 at 14:30, reviewed Dec 2 at 3 pm, on v1.2.3 of the tool.",
        "A guess of 300-350 s, see https://example.com:8080/v1 since 2026.",
        "- 6 replicas",
    ])
    assert _texts(doc) == ["6 replicas"]


def test_a_heading_that_is_not_a_phase_keeps_its_numbers_but_not_its_enumerator():
    assert _texts("## 4. Replicas: 6 at 64% busy") == ["6", "64%"]


def test_context_is_the_sentence_and_near_is_the_words_around():
    doc = "Weights are 141 GB. KV per token ~320 KB, and 620 requests in flight."
    weights, kv, flight = quantities(doc)
    assert weights.context == "weights are 141 gb"
    assert kv.context == flight.context == "kv per token ~320 kb, and 620 requests in flight"
    assert set(flight.near.split()) >= {"request", "flight"}
    assert "weight" not in kv.near.split()


def test_a_capital_b_is_a_billion_or_bytes_until_a_figure_decides():
    params, kv = quantities("A 70B params model; KV 327,680 B per token.")
    assert (params.value, params.unit) == (70 * 10**9, "1")
    assert (327680.0, "B", "B") in kv.also


def test_odd_text_never_raises_and_spans_hold():
    rnd = random.Random(7)
    pieces = list("0123456789.,-–~≈$%/×x*^ eEkKMBGTbms\n#()[]|:;!?") + [
        "GB", "ms", "tok/s", "GPUs", "US$", "10^", "⁴", "Llama-3-", "H100", " per ", "## ", "1. ", "**", "`"]
    d = _checkpoint()
    for _ in range(300):
        doc = "".join(rnd.choice(pieces) for _ in range(rnd.randint(1, 60)))
        for q in quantities(doc):
            assert doc[q.start:q.end] == q.text and math.isfinite(q.value)
        assert len(read_document(doc, d, _all(d))) == len(d)


def test_empty_and_non_text_documents_have_no_quantities():
    assert quantities("") == [] and quantities("   \n") == [] and quantities(None) == []  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# A small derivation whose figures are worked by hand


def _checkpoint() -> Derivation:
    d = Derivation()
    d.step("checkpoint_bytes", "Checkpoint size", 400e9, "B")
    d.step("link_Bps", "Link per node", 10e9 / 8, "B/s")  # a 10 Gb/s link
    d.step("transfer_s", "Transfer time", 400e9 / (10e9 / 8), "s")  # 320 s
    d.step("gpus", "GPUs", 8, "1", noun="GPUs")
    d.step("facility_power_W", "Facility power", 14e6, "W")
    d.step("utilization", "Busy share", 0.6, percent=True)
    d.step("hit_fraction", "Prefix cache hit rate", 0.6, "1")
    d.step("decode_tokens_per_s", "Decode tokens per second", 2.7e6, "1/s", noun="tokens")
    d.step("prefill_replica_equivalents", "Replicas busy with nothing but prefill", 1.92, "1", noun="replicas")
    d.step("decode_bound", "What bounds the decode step", "memory", "1", kind="verdict")
    return d


def _all(d: Derivation, *skip: str) -> list[tuple[str, str]]:
    return [(k, "") for k in d.keys() if k not in skip]


def test_right_wrong_and_missing_with_the_slip_named():
    doc = "\n".join([
        "## Numbers",
        "The checkpoint is 400 MB; link per node 10 GB/s. Transfer time is about 5.3 min.",
        "We run 8 GPUs, busy share 60%, and the prefix cache hit rate is 45%.",
        "Decode runs at 2.7k tok/s.",
    ])
    f = _by_key(read_document(doc, _checkpoint(), _all(_checkpoint(), "prefill_replica_equivalents", "decode_bound")))
    # 5.3 min = 318 s, within 5% of 400 GB / 1.25 GB/s = 320 s
    assert (f["transfer_s"].status, f["transfer_s"].said) == ("right", "5.3 min")
    assert (f["gpus"].status, f["gpus"].said) == ("right", "8 GPUs")
    assert (f["utilization"].status, f["utilization"].said) == ("right", "60%")
    # a x1000 prefix slip: 400 MB for 400 GB
    assert (f["checkpoint_bytes"].status, f["checkpoint_bytes"].said) == ("wrong", "400 MB")
    assert f["checkpoint_bytes"].off == "about 1/1,000 of the reference: MB for GB? (unit prefix)"
    # bytes for bits: 10 GB/s written for a 10 Gb/s link
    assert f["link_Bps"].status == "wrong"
    assert f["link_Bps"].off == "about 8x the reference: GB/s for Gb/s? (bits vs bytes)"
    # a plain wrong number with the figure's words around it: 0.45 / 0.6 = 0.75
    assert (f["hit_fraction"].status, f["hit_fraction"].said) == ("wrong", "45%")
    assert f["hit_fraction"].off == "0.75x the reference (25% too low)"
    # thousands for millions
    assert f["decode_tokens_per_s"].off == "about 1/1,000 of the reference: k for M?"
    assert (f["facility_power_W"].status, f["facility_power_W"].said) == ("missing", None)
    assert f["facility_power_W"].reference == "14 MW"
    assert f["checkpoint_bytes"].reference == "400 GB"


def test_findings_keep_the_figures_order_and_labels():
    figures = [("gpus", "GPUs in the fleet"), ("checkpoint_bytes", "")]
    out = read_document("", _checkpoint(), figures)
    assert [(x.key, x.label, x.status) for x in out] == [
        ("gpus", "GPUs in the fleet", "missing"), ("checkpoint_bytes", "Checkpoint size", "missing")]


def test_a_quantity_must_have_the_figures_dimension():
    d = _checkpoint()
    figures = [("transfer_s", ""), ("gpus", "")]
    # a bare 320 is not a time, and 8 GB are not 8 GPUs
    out = _by_key(read_document("Transfer time: 320. GPUs hold 8 GB each.", d, figures))
    assert out["transfer_s"].status == "missing"
    assert out["gpus"].status == "missing"
    out = _by_key(read_document("Transfer time: 320 s. We run 8 GPUs.", d, figures))
    assert out["transfer_s"].status == out["gpus"].status == "right"


def test_percent_meets_a_fraction_and_a_percent_step_but_one_quantity_one_figure():
    d = _checkpoint()
    figures = [("utilization", ""), ("hit_fraction", "")]
    both = _by_key(read_document("Busy share 60%. Prefix cache hit rate 60%.", d, figures))
    assert both["utilization"].status == both["hit_fraction"].status == "right"
    one = _by_key(read_document("The prefix cache hit rate is 60%.", d, figures))
    assert one["hit_fraction"].status == "right"
    assert one["utilization"].status == "missing"  # the one 60% went to the figure it names
    # a bare number meets a share in percent points
    assert _by_key(read_document("Busy share: 60", d, figures))["utilization"].status == "right"


def test_a_count_says_what_it_counts():
    d = Derivation()
    d.step("gpus", "GPUs", 104, "1", noun="GPUs")
    d.step("spare_gpus", "Spare GPUs", 1, "1", noun="GPUs")
    d.step("utilization", "Busy share", 0.6, percent=True)
    figures = [("gpus", ""), ("spare_gpus", ""), ("utilization", "")]
    # 103.4 is within 5% of 104, but of requests; 100% is 1, but not one GPU; 60 replicas are not 60%
    out = _by_key(read_document("103.4 requests in flight on the GPUs. Spares: 100%. Busy: 60 replicas.", d, figures))
    assert [out[k].status for k, _ in figures] == ["missing", "missing", "missing"]
    out = _by_key(read_document("104 accelerators, 1 spare GPU, 60% busy.", d, figures))
    assert [out[k].status for k, _ in figures] == ["right", "right", "right"]


def test_a_count_or_money_kept_per_period_meets_a_rate():
    d = Derivation()
    d.step("interruptions_per_day", "Interruptions a day", 4.85, "1", noun="per day")
    d.step("replica_usd_per_hour", "Replica cost", 98.0, "USD")
    figures = [("interruptions_per_day", ""), ("replica_usd_per_hour", "")]
    out = _by_key(read_document("Interruptions: 4.85 per day. A replica costs $98/h.", d, figures))
    assert (out["interruptions_per_day"].said, out["replica_usd_per_hour"].said) == ("4.85 per day", "$98/h")
    # 2,352 a day is 98 an hour; 0.2 an hour is 4.8 a day
    out = _by_key(read_document("Interruptions: 0.2/h. A replica costs $2,352 per day.", d, figures))
    assert [out[k].status for k, _ in figures] == ["right", "right"]
    out = _by_key(read_document("Interruptions: 4.85 per hour. A replica: $98 per day.", d, figures))
    assert [out[k].status for k, _ in figures] == ["wrong", "wrong"]


def test_a_plain_number_must_say_what_it_is_to_be_right():
    d = Derivation()
    d.step("gpus", "GPUs", 48, "1", noun="GPUs")
    d.step("speedup", "Speed-up", 18.26, "1", noun="×")
    figures = [("gpus", ""), ("speedup", "")]
    doc = "| GPUs | 40 |\n\n```\nflight = 46 * 13.5\n```\nSnapshots: 18.3 each."
    # 46 is within 5% of 48 and 18.3 within 1% of 18.26, but neither says it is a GPU count or a factor
    out = _by_key(read_document(doc, d, figures))
    assert (out["gpus"].status, out["gpus"].said) == ("wrong", "40")
    assert out["speedup"].status == "missing"
    out = _by_key(read_document("We need 46 of them, GPUs that is. It is 18.3 × smaller.", d, figures))
    assert (out["gpus"].said, out["speedup"].said) == ("46", "18.3 ×")
    assert _texts("46 × 13.5 s") == ["46", "13.5 s"]  # a product's sign is not a factor's


def test_among_several_right_numbers_the_named_one_then_the_closest_wins():
    d = _checkpoint()
    assert read_document("We have 8 racks. GPUs: 8.", d, [("gpus", "")])[0].said == "8"
    # both name the GPUs; 8.1 is closer to 8 than 8.3
    assert read_document("GPUs: 8.3. GPUs: 8.1.", d, [("gpus", "")])[0].said == "8.1"


def test_two_figures_of_one_value_each_find_their_number():
    d = Derivation()
    d.step("batch_memory_cap", "Sequences whose KV fits", 552, "1", noun="sequences")
    d.step("decode_batch", "Decode batch per replica", 552, "1", noun="sequences")
    doc = "Decode batch per replica: 552. KV fits 552 sequences."
    for figures in ([("batch_memory_cap", ""), ("decode_batch", "")], [("decode_batch", ""), ("batch_memory_cap", "")]):
        out = _by_key(read_document(doc, d, figures))
        assert out["decode_batch"].said == "552"
        assert out["batch_memory_cap"].said == "552 sequences"


def test_a_figure_gives_up_its_closest_number_when_another_figure_has_no_other():
    d = Derivation()
    d.step("gpus", "GPUs", 8, "1", noun="GPUs")
    d.step("nodes", "Nodes", 8, "1", noun="nodes")
    # 8.3 is within 5% of the GPUs' 8 but not within 1% of the nodes' 8; the GPUs name both numbers
    # and take the closer 8 first, then move to 8.3 so that the nodes have a number at all
    out = _by_key(read_document("GPUs and nodes: 8. GPUs: 8.3.", d, [("gpus", ""), ("nodes", "")], {"nodes": 0.01}))
    assert (out["gpus"].said, out["nodes"].said) == ("8.3", "8")


def test_a_wrong_figure_says_the_best_named_then_closest_number():
    out = read_document("GPUs: 12. We have 10 GPUs.", _checkpoint(), [("gpus", "")])[0]
    # ln(10/8) = 0.22 < ln(12/8) = 0.41
    assert (out.status, out.said, out.off) == ("wrong", "10 GPUs", "1.25x the reference (25% too high)")


def test_the_naming_threshold():
    d = _checkpoint()
    figures = [("prefill_replica_equivalents", "Prefill work")]
    # half of the label's words (prefill, work) near the number: named, so a wrong figure
    assert NAMED_COVERAGE == 0.5
    out = read_document("prefill 2.5", d, figures)[0]
    assert (out.status, out.said, out.off) == ("wrong", "2.5", "1.3x the reference (30% too high)")
    # "replica" is one of the key's three words (prefill, replica, equivalent) and none of the label's
    assert read_document("Replicas: 7", d, figures)[0].status == "missing"
    # both label words in the sentence but not near the number count half each: named
    far = "Prefill work, as I reckon it after a long and careful look at the whole pipeline, comes to 2.5"
    assert read_document(far, d, figures)[0].status == "wrong"
    # one of them, far: a quarter
    far_one = "Prefill, as I reckon it after a long and careful look at the whole pipeline, comes to 2.5"
    assert read_document(far_one, d, figures)[0].status == "missing"


@pytest.mark.parametrize("said, off", [
    ("Checkpoint: 400 GiB", "1.07x the reference: GiB for GB? (KiB vs KB)"),  # 2^30 / 10^9 = 1.074
    ("Checkpoint: 400 TiB", "about 1,100x the reference: TiB for GB? (KiB vs KB, unit prefix)"),  # 2^40 / 10^9
    ("Checkpoint: 400 Gb", "about 1/8 of the reference: Gb for GB? (bits vs bytes)"),  # 50 GB
    ("Checkpoint: 400 Tb", "about 125x the reference: Tb for GB? (bits vs bytes, unit prefix)"),  # 50 TB
    ("Checkpoint: 3,200 GB", "about 8x the reference: GB for Gb? (bits vs bytes)"),  # 3,200 Gb = 400 GB
])
def test_size_slips_are_named(said, off):
    out = read_document(said, _checkpoint(), [("checkpoint_bytes", "")])[0]
    assert (out.status, out.off) == ("wrong", off)


def test_other_slips_are_named():
    d = _checkpoint()
    assert read_document("Transfer time 320 min", d, [("transfer_s", "")])[0].off == \
        "about 60x the reference: min for s?"
    assert read_document("Prefix cache hit rate 0.6%", d, [("hit_fraction", "")])[0].off == \
        "about 1/100 of the reference: a fraction written as a percent?"
    assert read_document("Facility power 14 kW", d, [("facility_power_W", "")])[0].off == \
        "about 1/1,000 of the reference: kW for MW? (unit prefix)"
    assert read_document("GPUs: 80", d, [("gpus", "")])[0].off == "10x the reference"


def test_a_text_valued_figure_is_right_only_where_the_document_names_it():
    d = _checkpoint()
    figures = [("decode_bound", "What bounds decode")]
    assert read_document("Decode is memory-bound here.", d, figures)[0].status == "right"
    assert read_document("Memory is 80 GB per GPU.", d, figures)[0].status == "missing"


def test_tolerance_per_figure():
    d = _checkpoint()
    assert read_document("GPUs: 8.3", d, [("gpus", "")])[0].status == "right"  # 3.75% off
    assert read_document("GPUs: 8.3", d, [("gpus", "")], {"gpus": 0.01})[0].status == "wrong"
    assert read_document("GPUs: 8.3", d, [("gpus", "")], 0.01)[0].status == "wrong"


def test_a_figure_that_is_not_a_step_is_a_clear_error():
    with pytest.raises(KeyError, match="'nope' is not a step"):
        read_document("8 GPUs", _checkpoint(), [("nope", "")])


# ---------------------------------------------------------------------------------------------
# The serving-platform question, its figures worked from the Llama-3-70B shape


def _llama_70b_params() -> int:
    layers, d_model, kv_dim, ffn, vocab = 80, 8192, 8 * 128, 28672, 128256
    per_layer = 2 * d_model * d_model + 2 * d_model * kv_dim + 3 * d_model * ffn  # q, o; k, v; gate, up, down
    return layers * per_layer + 2 * vocab * d_model  # embeddings and the output head, untied


def test_a_serving_platform_document():
    d = QUESTIONS["serving-platform"].default_derivation()
    weights_B = 2 * _llama_70b_params()  # bf16: 141.1 GB
    kv_per_token_B = 2 * 80 * 8 * 128 * 2  # K and V, 80 layers, 8 KV heads of 128, 2 bytes: 327,680
    kv_per_sequence_B = kv_per_token_B * (2000 + 400)  # prompt + reply: 786.4 MB
    usable_B = 8 * 80e9 * 0.9  # 8 H100s, 90% usable: 576 GB
    kv_room_B = usable_B - weights_B
    batch = math.floor(kv_room_B / kv_per_sequence_B)  # 552
    assert (d.value("weight_bytes"), d.value("kv_bytes_per_token"), d.value("batch_memory_cap")) == \
        (weights_B, kv_per_token_B, batch)  # the scenario these figures were worked for

    doc = "\n".join([
        "## 1. Numbers",
        "Llama-3-70B in bf16 on 8 H100s (fp8 later): weights ≈ 141 GB; KV ~320 KB/token,",
        "so one sequence of 2,400 tokens holds 786 KB of KV. Usable HBM per replica: 640 GB.",
        "",
        "## 2. Shape",
        "Memory cap on the batch: 552 sequences.",
    ])
    values = [q.value for q in quantities(doc)]
    for name_number in (70, 3, 100, 8 * 10**9, 16, 1, 2):  # Llama-3-70B, H100, fp8, bf16, the headings
        assert name_number not in values
    figures = [("weight_bytes", ""), ("kv_bytes_per_token", ""), ("kv_bytes_per_sequence", ""),
               ("usable_hbm_bytes", ""), ("batch_memory_cap", ""), ("kv_room_bytes", "")]
    f = _by_key(read_document(doc, d, figures))
    assert [(k, f[k].status) for k, _ in figures] == [
        ("weight_bytes", "right"), ("kv_bytes_per_token", "right"), ("kv_bytes_per_sequence", "wrong"),
        ("usable_hbm_bytes", "wrong"), ("batch_memory_cap", "right"), ("kv_room_bytes", "missing")]
    assert f["weight_bytes"].said == "141 GB" and abs(141e9 / weights_B - 1) < 0.05
    assert f["kv_bytes_per_token"].said == "~320 KB/token" and abs(320e3 / kv_per_token_B - 1) < 0.05
    assert f["kv_bytes_per_sequence"].said == "786 KB"
    assert f["kv_bytes_per_sequence"].off == "about 1/1,000 of the reference: kB for MB? (unit prefix)"
    assert f["usable_hbm_bytes"].said == "640 GB"  # the 90% forgotten: 1/0.9 = 1.11
    assert f["usable_hbm_bytes"].off == "1.11x the reference (11% too high)"
    assert f["batch_memory_cap"].said == "552 sequences"


# ---------------------------------------------------------------------------------------------
# Speed: the review reads the document on every rerun


def _long_document(seed: int) -> str:
    rnd = random.Random(seed)
    lines = [
        "- Request rate = 2,000 users / 43.5 s ≈ {n} req/s, so about {m} requests in flight.",
        "- KV ~{n} KB/token on Llama-3-70B in bf16, weights 141 GB on 8 H100 GPUs.",
        "Replicas: {m} ({n} GPUs) at {p}% busy; decode {n}k tok/s and {m} sequences per replica.",
        "## 2. Shape",
        "The gateway sends {n} requests per second to the router; TPOT {m} ms target.",
        "Prefill takes {n} ms per request, {p} replica-equivalents at peak, cost ${m}M a year.",
    ]
    out: list[str] = []
    while sum(len(x) + 1 for x in out) < 5000:
        out.append(rnd.choice(lines).format(n=rnd.randint(1, 99999), m=rnd.randint(1, 999), p=rnd.randint(1, 99)))
    return "\n".join(out)[:5000]


def test_a_5000_character_document_against_20_figures_reads_in_under_50_ms():
    d = QUESTIONS["serving-platform"].default_derivation()
    figures = [(k, "") for k in d.keys() if d[k].is_numeric][:20]
    assert len(figures) == 20
    read_document(_long_document(0), d, figures)  # the registry and the regexes, built once per process
    best = math.inf
    for seed in (1, 2, 3):  # the best of three fresh documents
        doc = _long_document(seed)
        for cached in (mock_document._read, mock_document._number, mock_document._quantities,
                       mock_document._bytes_reading):
            cached.cache_clear()  # nothing read before: the answer reader runs on every unit spelling
        t = time.process_time()  # CPU time: other sessions share the machine's two cores
        findings = read_document(doc, d, figures)
        best = min(best, time.process_time() - t)
        assert len(doc) == 5000 and len(findings) == 20 and len(quantities(doc)) > 100
    assert best < 0.050, f"{best * 1000:.1f} ms"


def test_every_questions_own_page_reads_without_error():
    for question in (q for q in QUESTIONS.values() if q.written):
        d = question.default_derivation()
        figures = [(key, label) for key, label in question.content.metrics if key in d]
        text = "\n\n".join(section.body for section in question.content.sections)
        findings = read_document(text, d, figures)
        assert [f.key for f in findings] == [k for k, _ in figures]
        assert {f.status for f in findings} <= {"right", "wrong", "missing"}, question.slug
