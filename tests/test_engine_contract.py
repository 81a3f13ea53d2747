"""One engine under every LLM page: each engine, request and SLO knob declared once (a page may
change its starting value, never its label, range or help), no page keeps a private name for an
engine knob, and no model outside the engine reads a GPU's datasheet or re-derives the roofline."""

import ast
import dataclasses
from pathlib import Path

import pytest

from models.core import knobs_of
from models.engine.serving_knobs import ServingKnobs
from models.registry import QUESTIONS

ROOT = Path(__file__).resolve().parents[1]

# The pages that run an LLM (or a DiT) on accelerators, as the engine issue lists them.
ENGINE_PAGES = (
    "serving-platform", "interview-minute-plan", "continuous-batching", "rag-10k-qps", "multi-lora",
    "kv-cache-tiers", "ttft-slo-200ms", "agent-sessions", "speculative-decoding", "disaggregated-prefill-decode",
    "moe-1t-serving", "serverless-gpu", "playground-abuse", "video-generation", "eval-pipeline",
    "inference-observability", "cluster-10k-gpus", "moe-1t-training", "checkpoint-storage",
    "model-artifact-distribution",
)
GROUP_KNOBS = knobs_of(ServingKnobs)
# Names the pages used for engine knobs before there was one engine; each now has one name.
RETIRED_NAMES = {"gpus_per_replica", "mfu", "precision", "hbm_eff", "decode_hbm_efficiency", "kv_bytes_per_elem",
                 "gpu_name", "replica_gpus"}
ENGINE_LABELS = {k.label for k in GROUP_KNOBS.values()}


@pytest.mark.parametrize("slug", ENGINE_PAGES)
def test_engine_knobs_are_the_groups_own(slug):
    params = QUESTIONS[slug].Params
    knobs = knobs_of(params)
    assert {"gpu", "model"} & set(knobs), f"{slug} names neither an accelerator nor a model from the groups"
    for name, knob in knobs.items():
        assert name not in RETIRED_NAMES, f"{slug}.{name}: a private name for an engine knob"
        if name in GROUP_KNOBS:
            # a page may draw its own mock scenarios from the knob (models.engine.knobs.with_draws)
            group = GROUP_KNOBS[name]
            same = dataclasses.replace(knob, draw=group.draw, draw_choices=group.draw_choices)
            assert same == group, f"{slug}.{name} is declared again, not taken from the group"
            assert params.model_fields[name].annotation == ServingKnobs.model_fields[name].annotation, name
        else:
            assert knob.label not in ENGINE_LABELS, f"{slug}.{name} copies the engine knob '{knob.label}'"


@pytest.mark.parametrize("slug", [q for q in QUESTIONS if QUESTIONS[q].written])
def test_no_page_declares_an_engine_knob_of_its_own(slug):
    for name, knob in knobs_of(QUESTIONS[slug].Params).items():
        if name in GROUP_KNOBS:
            # a page may draw its own mock scenarios from the knob (models.engine.knobs.with_draws)
            group = GROUP_KNOBS[name]
            same = dataclasses.replace(knob, draw=group.draw, draw_choices=group.draw_choices)
            assert same == group, f"{slug}.{name} is declared again, not taken from the group"


def _names_read(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            out |= {f"{node.module}.{a.name}" for a in node.names}
            out.add(node.module)
        elif isinstance(node, ast.Attribute):
            out.add(node.attr)
    return out


def test_one_roofline():
    assert not (ROOT / "models/serving/llm_arith.py").exists(), "the old serving arithmetic is gone"
    for slug in ENGINE_PAGES:
        read = _names_read(QUESTIONS[slug].module_path)
        assert "models.serving.llm_arith" not in read, slug
        # a page reads a part's numbers through the engine's Hardware, never the raw catalog entry
        assert "models.catalog.gpu" not in read and "dense_bf16_flops" not in read, slug
