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


FOUNDATION = {"batched-inference-api", "checkpoint-distribution"}


@pytest.mark.parametrize("q", [q for q in WRITTEN if q.slug in FOUNDATION], ids=sorted(FOUNDATION))
def test_foundation_pages_have_two_teaching_presets(q):
    assert len(q.content.presets) >= 2
