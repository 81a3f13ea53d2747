"""The interviewer's script (models/mock_script.py): opening, clarifying questions, probes.

Expected values come from the content files read here with simpler rules than the module's, from
formulas read off the pages by hand, and from hand-made timelines; none is copied from output.
"""

from __future__ import annotations

import re
from types import SimpleNamespace
from typing import Annotated, Literal

import pytest

from models import mock_script as ms
from models.content import PLACEHOLDER
from models.core import PHASES, Derivation, Knob, StrictModel
from models.mock import draw_scenario, givens
from models.registry import QUESTIONS, written

QUESTIONS_38 = written()
SLUGS = [q.slug for q in QUESTIONS_38]


def test_all_38_questions_are_covered():
    assert len(QUESTIONS_38) == 38


def _reads(line: str) -> list[str]:
    """What is wrong with a line as a spoken sentence (empty when it reads)."""
    problems = []
    if "{{" in line or "}}" in line:
        problems.append("placeholder")
    if re.search(r"\d", line):
        problems.append("digit")
    if "  " in line:
        problems.append("double space")
    if re.search(r"\b(a|an|the|of|with|at|to|for|and|in)\s*[,.:;?!]", line, re.I):
        problems.append("dangling word before punctuation")
    if re.search(r"\(\s*\)|\s[,.:;?]", line):
        problems.append("empty bracket or space before punctuation")
    if not line[:1].isupper() or not line.endswith((".", "?")):
        problems.append("not a sentence")
    if len(line.split()) < 5:
        problems.append("too short")
    return problems


# ---------------------------------------------------------------------------------------------
# Opening


@pytest.mark.parametrize("slug", SLUGS)
def test_opening_reads_as_a_spoken_line_without_numbers(slug):
    line = ms.opening(QUESTIONS[slug])
    assert _reads(line) == [], f"{slug}: {line!r}: {_reads(line)}"


@pytest.mark.parametrize("slug", SLUGS)
def test_the_rule_alone_never_leaves_a_number_or_placeholder(slug):
    q = QUESTIONS[slug]
    line = ms._opening_by_rule(q.hook, q.title)
    assert "{{" not in line and not re.search(r"\d", line), line


def test_a_question_without_an_override_gets_the_rule():
    hook = "{{users}} at peak, each sending {{rate}}: size the fleet; then keep the gateway alive when a region drops."
    q = SimpleNamespace(slug="not-in-the-table", hook=hook, title="Unused")
    # the clause with numbers goes whole; the two without are kept, joined
    assert ms.opening(q) == "Size the fleet; then keep the gateway alive when a region drops."
    q2 = SimpleNamespace(slug="not-in-the-table", hook="{{x}} in {{y}}", title="A cache for 10,000 users")
    assert ms.opening(q2) == "Here is the problem. Walk me through your design."


# ---------------------------------------------------------------------------------------------
# Clarifying questions


def _placeholders(text: str) -> set[str]:
    return {m.group(1) for m in PLACEHOLDER.finditer(text)}


@pytest.mark.parametrize("slug", SLUGS)
def test_one_clarifier_per_given_with_a_question_and_an_answer(slug):
    q = QUESTIONS[slug]
    params = q.Params()
    cl = ms.clarifiers(q)
    labels = [g[0] for g in givens(params)]
    assert len(cl) == len(labels), "one clarifier per given of models.mock.givens"
    assert len({c.key for c in cl}) == len(cl)
    by_key = {c.key: c for c in cl}
    for name, label in zip(ms.given_names(params), labels):
        c = by_key[name]
        assert c.ask.endswith("?") and "{{" not in c.ask and c.ask[:1].isupper(), c.ask
        assert _placeholders(c.answer) == {name}, c.answer
        # the answer names the given as the page's knob does (bracketed asides dropped)
        assert re.sub(r"\s*\([^)]*\)", "", label).strip() in c.answer
    flags = [c.important for c in cl]
    assert flags == sorted(flags, reverse=True), "important givens come first"


def test_simulation_only_knobs_are_not_clarifiers():
    q = QUESTIONS["research-cluster-fair-share"]
    from models.core import knobs_of
    sim = {n for n, k in knobs_of(q.Params).items() if k.simulation}
    assert sim, "this page has simulation-only knobs (a mean job runtime, a preemption policy)"
    assert not sim & {c.key for c in ms.clarifiers(q)}


def test_clarifiers_follow_a_drawn_scenario():
    q = QUESTIONS["serving-platform"]
    params = draw_scenario(q.Params, seed=7, solve=q.solve)
    cl = ms.clarifiers(q, params)
    assert [c.key for c in sorted(cl, key=lambda c: ms.given_names(params).index(c.key))] == ms.given_names(params)


def test_asks_from_the_rule_for_labels_of_each_shape():
    def ask(label, unit="", annotation=float, value=1.0, **kw):
        return ms.ask_by_rule("x", Knob(label, unit, **kw), annotation, value)

    assert ask("Concurrent users", "users", int, 2000) == "How many concurrent users?"
    assert ask("Checkpoint size", "GB") == "How big is the checkpoint?"
    assert ask("Cold start", "s") == "How long is the cold start?"
    assert ask("Inter-region link", "Gb/s") == "How fast is the inter-region link?"
    assert ask("Detect the site loss", "min") == "How long does it take to detect the site loss?"
    assert ask("Build whole pods", annotation=bool, value=True) == "Do we build whole pods?"
    assert ask("Sweep: GPUs per run", "GPUs", int, 8) == "Sweep: how many GPUs per run?"
    assert ask("Events dropped in transit", percent=True) == "What share of events dropped in transit?"
    assert ask("Snapshot every", "versions", int, 10) == "How often is a snapshot?"
    assert ask("Mean input tokens", "tokens", int, 500) == "How many input tokens, on average?"
    assert ask("Transport", annotation=Literal["SSE", "WebSocket"], value="SSE") == "Which transport?"


# ---------------------------------------------------------------------------------------------
# Important givens


# Read off each page's metric formulas by hand:
#   serving-platform: request rate = users / (think time + response time); the replica count reads
#     the GPU's HBM bandwidth, a catalog lookup with no formula (the lookup path).
#   checkpoint-distribution: lower bound = checkpoint_gb / link; naive pull = hosts x that.
#   batched-inference-api: per-GPU rate = max_batch_inputs / call time; floor = arrival_rps / that.
HAND_IMPORTANT = {
    "serving-platform": {"concurrent_users", "think_time_s", "prompt_tokens", "gpu", "model"},
    "checkpoint-distribution": {"checkpoint_gb", "link_gbps", "hosts"},
    "batched-inference-api": {"arrival_rps", "max_batch_inputs", "call_time_ms"},
}


@pytest.mark.parametrize("slug", SLUGS)
def test_important_givens_are_givens_and_not_empty(slug):
    q = QUESTIONS[slug]
    imp = ms.important_givens(q)
    assert imp, f"{slug}: no given feeds a key figure?"
    assert imp <= set(ms.given_names(q.Params()))


@pytest.mark.parametrize("slug", sorted(HAND_IMPORTANT))
def test_important_givens_contain_what_the_formulas_name(slug):
    assert HAND_IMPORTANT[slug] <= ms.important_givens(QUESTIONS[slug])


def test_engine_efficiencies_are_assumptions_unless_asked_for():
    q = QUESTIONS["serving-platform"]
    assert "hbm_efficiency" not in ms.important_givens(q)
    assert "hbm_efficiency" in ms.important_givens(q, include_folded=True)


class _Toy(StrictModel):
    a: Annotated[float, Knob("Alpha", "s", 0, 10)] = 2.0
    b: Annotated[Literal["small", "big"], Knob("Size")] = "small"
    c: Annotated[float, Knob("Beta", "s", 0, 10)] = 3.0
    d: Annotated[float, Knob("Run length", "s", 0, 10, simulation=True)] = 1.0
    e: Annotated[float, Knob("Gamma", "s", 0, 10)] = 4.0


def _toy_solve(p: _Toy) -> Derivation:
    d = Derivation(p)
    d.step("size_factor", "Size factor", 1.0 if p.b == "small" else 2.0, kind="lookup")  # no formula
    d.step("x_s", "x", p.a * 2, "s", formula="{a} s × 2")
    d.step("y_s", "y", d.value("x_s") * d.value("size_factor"), "s", formula="{x_s} s × {size_factor}")
    d.step("z_s", "z", p.c + p.e, "s", formula="{c} s + {e} s")
    return d


def _toy_question(metrics, drills=()):
    return SimpleNamespace(slug="toy", Params=_Toy, solve=_toy_solve,
                           content=SimpleNamespace(metrics=tuple((m, "") for m in metrics)),
                           drills=tuple(SimpleNamespace(key=k) for k in drills))


def test_important_givens_follow_formulas_transitively_and_lookups_by_moving_them():
    # y_s <- x_s <- a, and y_s <- size_factor (a lookup) <- b, found by moving b
    assert ms.important_givens(_toy_question(["y_s"])) == {"a", "b"}
    assert ms.important_givens(_toy_question(["x_s"])) == {"a"}
    assert ms.important_givens(_toy_question(["x_s"], drills=["z_s"])) == {"a", "c", "e"}


# ---------------------------------------------------------------------------------------------
# match_question


@pytest.fixture(scope="module")
def platform_clarifiers():
    return ms.clarifiers(QUESTIONS["serving-platform"])


@pytest.mark.parametrize("typed, expected_first, also", [
    ("How many users are there?", "concurrent_users", set()),
    ("How long do users think between messages?", "think_time_s", set()),
    ("Which GPU are we on?", "gpu", set()),
    ("What accelerator do we have?", "gpu", set()),
    ("How long are prompts and answers?", None, {"prompt_tokens", "output_tokens"}),
    ("What latency target?", "tpot_target_ms", set()),
    ("What model are we serving?", "model", set()),
    ("Is there a prefix cache?", "prefix_cache_hit", set()),
])
def test_typed_questions_find_their_givens(platform_clarifiers, typed, expected_first, also):
    found = [c.key for c in ms.match_question(typed, platform_clarifiers)]
    if expected_first:
        assert found[:1] == [expected_first], found
    assert also <= set(found), found


@pytest.mark.parametrize("typed", ["What are all the numbers?", "Tell me everything.", "What's the weather like?", ""])
def test_vague_or_unrelated_questions_reveal_nothing(platform_clarifiers, typed):
    assert ms.match_question(typed, platform_clarifiers) == []


def test_synonyms_and_other_pages():
    assert [c.key for c in ms.match_question("what's the qps?", ms.clarifiers(QUESTIONS["rag-10k-qps"]))] == ["qps"]
    hosts = ms.match_question("How many hosts?", ms.clarifiers(QUESTIONS["checkpoint-distribution"]))
    assert hosts[0].key == "hosts"  # "Hosts to reach", not "Link speed per host"


def test_a_question_never_reveals_more_than_the_limit(platform_clarifiers):
    typed = "users think prompt output model gpu precision cache latency"
    assert len(ms.match_question(typed, platform_clarifiers)) == 3
    assert len(ms.match_question(typed, platform_clarifiers, limit=5)) == 5


# ---------------------------------------------------------------------------------------------
# clarify_review


def test_clarify_review_on_a_hand_made_timeline():
    cl = [ms.Clarifier("peak_rps", "What is the peak traffic?", "{{peak_rps}}", True),
          ms.Clarifier("model", "Which model?", "{{model}}", True),
          ms.Clarifier("gpu", "Which GPU?", "{{gpu}}", True),
          ms.Clarifier("prompt_tokens", "How long are the prompts?", "{{prompt_tokens}}", True),
          ms.Clarifier("pue", "What is the PUE?", "{{pue}}", False)]
    # numbers end at 300 s: peak asked at 20 s, model at 310 s (late), gpu at exactly 300 s (in
    # time), prompt never, pue never (not important, so never reported)
    never, late = ms.clarify_review(cl, {"peak_rps": 20.0, "model": 310.0, "gpu": 300.0}, 300.0)
    assert [c.key for c in never] == ["prompt_tokens"]
    assert [c.key for c in late] == ["model"]
    assert ms.clarify_review(cl, {}, 300.0) == (cl[:4], [])


# ---------------------------------------------------------------------------------------------
# Probes

_BOLD_ITEM = re.compile(r"^(?:[-*] +)?\*\*(.+?)\*\*", re.M)


def _failure_bullets(q) -> list[str]:
    """Bold-led bullets and paragraphs of Failure modes, read with a plain line regex."""
    body = q.content.section("Failure modes").body
    return [m.group(1).strip().rstrip(".:") for m in _BOLD_ITEM.finditer(body)
            if (q.slug, m.group(1).strip().rstrip(".:")) not in ms.NOT_A_TOPIC]


def _scope(q) -> set[str]:
    return set(q.default_derivation().keys()) | set(type(q.Params()).model_fields)


@pytest.mark.parametrize("slug", SLUGS)
def test_every_failure_mode_gives_a_probe(slug):
    q = QUESTIONS[slug]
    bullets = _failure_bullets(q)
    assert bullets, f"{slug}: Failure modes names no bold-led failure"
    words = [p for p in ms.probes(q)["failure_modes"] if p.kind == "words"]
    assert len(words) == len(bullets)
    for p, title in zip(words, bullets):
        assert p.text.endswith("?") and "**" not in p.text, p.text
        assert f"**{title}" in p.answer


@pytest.mark.parametrize("slug", SLUGS)
def test_depth_areas_and_their_probes(slug):
    q = QUESTIONS[slug]
    areas = ms.depth_areas(q)
    assert areas, f"{slug}: no depth area"
    body = q.content.section("Depth").body
    for area in areas:
        assert f"**{area}" in body
        depth = ms.probes(q, area)["depth"]
        words = [p for p in depth if p.kind == "words"]
        assert words and all(p.area == area for p in words)
        assert f"**{area}" in words[0].answer
        for p in words:
            assert p.text.endswith("?") and "**" not in p.text and "::" not in p.answer, p.text
    assert [p.area for p in ms.probes(q)["depth"] if p.kind == "words"][0] == areas[0]


def test_serving_platform_depth_areas_by_hand():
    # the bold heads of content/serving/serving-platform.md's Depth, less its Adequate/Strong lines
    assert ms.depth_areas(QUESTIONS["serving-platform"]) == [
        "How many GPUs per replica", "Prefill and decode share a replica", "The prefix cache is a routing decision",
        "Slots versus busy time"]
    probes = [p for p in ms.probes(QUESTIONS["serving-platform"])["depth"] if p.kind == "words"]
    assert probes[0].text == "Can you explain how many GPUs per replica?"
    assert probes[0].answer.startswith("**How many GPUs per replica.** Take {{tp_degree}} against {{tp_alt}}")
    # a head that is a statement, not a question's topic, is asked as one
    prefill = [p for p in ms.probes(QUESTIONS["serving-platform"], "Prefill and decode share a replica")["depth"]
               if p.kind == "words"][0]
    assert prefill.text == "Prefill and decode share a replica: how does that change your design?"
    assert prefill.answer.startswith("**Prefill and decode share a replica.** The sizing adds their times")


def test_a_timing_note_is_not_a_depth_area():
    # interview-minute-plan opens its Depth with "**Clock:** ..." and lists the topics as bullets
    areas = ms.depth_areas(QUESTIONS["interview-minute-plan"])
    assert "Clock" not in areas and areas[0] == "Cache affinity"


def test_unknown_depth_choice_is_a_clear_error():
    with pytest.raises(ValueError, match="not a depth area.*Prefill and decode share a replica"):
        ms.probes(QUESTIONS["serving-platform"], "Quantum routing")


@pytest.mark.parametrize("slug", SLUGS)
def test_drills_arrive_in_their_phase_and_every_template_resolves(slug):
    q = QUESTIONS[slug]
    scope = _scope(q)
    for area in ms.depth_areas(q):
        by_phase = ms.probes(q, area)
        assert list(by_phase) == list(PHASES)
        keys = [p.key for ps in by_phase.values() for p in ps]
        assert len(keys) == len(set(keys)), "probe keys are unique"
        for phase in PHASES:
            drills = [p for p in by_phase[phase] if p.kind == "drill"]
            assert [p.drill_key for p in drills] == [d.key for d in q.drills if d.phase == phase]
            assert all(p.phase == phase for p in by_phase[phase])
            # drills first, then words
            kinds = [p.kind for p in by_phase[phase]]
            assert kinds == sorted(kinds)  # "drill" < "words"
            for p in by_phase[phase]:
                missing = (_placeholders(p.text) | _placeholders(p.answer)) - scope
                assert not missing, f"{p.key}: {missing}"
    for c in ms.clarifiers(q):
        assert _placeholders(c.answer) <= scope


def test_depth_drill_belongs_to_the_area_that_names_it():
    # serving-platform's Depth names {{replicas_without_prefix_cache}} in the prefix-cache paragraph
    drills = {p.drill_key: p.area for p in ms.probes(QUESTIONS["serving-platform"])["depth"] if p.kind == "drill"}
    assert drills["replicas_without_prefix_cache"] == "The prefix cache is a routing decision"


def test_a_plain_list_continues_the_paragraph_that_introduces_it():
    q = QUESTIONS["ml-config-system"]
    first = [p for p in ms.probes(q, "Reproducibility, concretely")["depth"] if p.kind == "words"]
    assert len(first) == 1 and "*Same numbers:*" in first[0].answer


def test_a_scenario_keeps_only_the_drills_it_can_ask():
    from models.core import Drill

    only_big = Drill(key="x_s", prompt="How long is x?", phase="arithmetic", unit="s", when=("a > 5",))
    always = Drill(key="z_s", prompt="How long is z?", phase="arithmetic", unit="s")
    q = SimpleNamespace(slug="toy", Params=_Toy, solve=_toy_solve, drills=(only_big, always),
                        content=SimpleNamespace(metrics=(), section=lambda title: None))
    # a = 2 by default: "a > 5" fails, so only z is asked; a = 6 asks both; no scenario: both
    assert [p.drill_key for p in ms.probes(q, params=_Toy())["arithmetic"]] == ["z_s"]
    assert [p.drill_key for p in ms.probes(q, params=_Toy(a=6.0))["arithmetic"]] == ["x_s", "z_s"]
    assert [p.drill_key for p in ms.probes(q)["arithmetic"]] == ["x_s", "z_s"]
