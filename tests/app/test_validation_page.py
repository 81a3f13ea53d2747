"""AppTest: the validation and reference pages run, show the measurements, and the knobs move predictions.

The validation page is content over steps (content/validation.md over models.validation_steps): its
static tables are Markdown, read back here cell by cell; the table your knobs drive is a dataframe."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from models.catalog import GPUS, MODELS
from models.registry import ROOT
from models.validation import ENGINE_DEFAULTS, METRIC_LABELS, SETUP_BY_KEY, Knobs, fit_per_model, predict_s

TIMEOUT = 30
MEASURED_MS = {22.0, 63.17, 13.5, 45.45, 7.56, 160.6, 2.85, 46.2}


@pytest.fixture(autouse=True)
def _db(tmp_path, monkeypatch):
    monkeypatch.setenv("WALKTHROUGHS_DB", str(tmp_path / "apptest.duckdb"))


def _page(name: str) -> AppTest:
    return AppTest.from_file(str(ROOT / "pages" / f"{name}.py"), default_timeout=TIMEOUT)


def _frame(at: AppTest, column: str):
    for df in at.dataframe:
        if column in df.value.columns:
            return df.value
    raise AssertionError(f"no table with a column {column!r}")


def _mine(at: AppTest, setup_label: str, quantity_start: str) -> float:
    df = _frame(at, "Your prediction (ms)")
    row = df[(df["Setup"] == setup_label) & (df["Quantity"].str.startswith(quantity_start))]
    assert len(row) == 1
    return float(row["Your prediction (ms)"].iloc[0])


def _md_table(at: AppTest, column: str) -> list[dict[str, str]]:
    """The rendered Markdown table with a column `column`: one dict per row, cells without the bold."""
    for m in at.markdown:
        lines = [ln for ln in m.value.splitlines() if ln.startswith("|")]
        if not lines:
            continue
        cells = [[c.strip().replace("**", "") for c in ln.strip("|").split("|")] for ln in lines]
        if column in cells[0]:
            return [dict(zip(cells[0], row)) for row in cells[2:]]
    raise AssertionError(f"no Markdown table with a column {column!r}")


def _ms(cell: str) -> float:
    value, unit = cell.split()
    return float(value.replace(",", "")) * {"ms": 1.0, "s": 1000.0}[unit]


def _pct(cell: str) -> float:
    return float(cell.removesuffix("%"))


def test_validation_page_runs_clean_and_shows_the_measurements():
    at = _page("validation").run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error
    fitted = _md_table(at, "Fitted prediction")
    assert {round(_ms(r["Measured"]), 2) for r in fitted} == MEASURED_MS
    # 13B on one A100: (2 x 12.84e9 + 819,200 x 517) B / 1.555 TB/s; 70B on 8 H200 with the all-reduces' bytes
    assert {round(_ms(r["Roofline at 100%"]), 2) for r in fitted} >= {16.79, 3.72}
    # the figures shown are the model's: each fitted cell is its row of models.validation, as a step displays it
    rows = {(r.setup.label, METRIC_LABELS[r.metric]): r for f in fit_per_model() for r in f.rows}
    assert len(fitted) == len(rows) == 8
    for cell in fitted:
        r = rows[(cell["Setup"], cell["Quantity"])]
        assert _ms(cell["Fitted prediction"]) == pytest.approx(r.predicted_s * 1000, rel=1e-3)
        assert _pct(cell["Error"]) == pytest.approx(r.error * 100, abs=0.01)
    setups = _md_table(at, "Decode per token")
    assert {_ms(r["Decode per token"]) for r in setups} | {_ms(r["Prefill"]) for r in setups} == MEASURED_MS
    assert len(at.get("plotly_chart")) == 1
    text = "\n".join(m.value for m in at.markdown)
    plain = text.replace("**", "")
    assert "exact and therefore uninformative" in text
    assert "misses the 15% target" in plain
    # Fit (c): the GEMMs of both layouts, and every measurement within the target under the validation's model.
    gemms = _md_table(at, "TP 2 efficiency")
    assert [g["GEMM (each layer)"] for g in gemms] == ["QKV projection", "Attention output", "MLP up", "MLP down"]
    assert all(_pct(g["TP 2 efficiency"]) < _pct(g["TP 1 efficiency"]) for g in gemms)
    parts = _md_table(at, "Fixed part, fitted")
    assert {round(_ms(p["Measured"]), 2) for p in parts} == {63.17, 45.45}
    assert all(abs(_pct(p["Error"])) < 15 for p in parts)
    assert "all 8 measurements are within ±15%" in plain
    assert "The short answer." in plain and "every measurement within ±15%" in plain
    # no placeholder is left unfilled
    assert "{{" not in text


def test_moving_an_efficiency_slider_changes_a_prediction():
    at = _page("validation").run()
    label = SETUP_BY_KEY["70b-h200-tp8"].label
    before = _mine(at, label, "Decode")
    at.slider(key="validation.Llama-3-70B.bw").set_value(50.0).run()
    assert not at.exception
    after = _mine(at, label, "Decode")
    assert after > before
    knob = lambda suffix: at.slider(key=f"validation.Llama-3-70B.{suffix}").value  # noqa: E731
    expected = predict_s(SETUP_BY_KEY["70b-h200-tp8"], "decode", Knobs(
        0.5, knob("flop") / 100, knob("dec") / 1000, knob("pre") / 1000, knob("ar") / 1e6, ENGINE_DEFAULTS.decode_mfu))
    assert after == pytest.approx(expected * 1000, rel=1e-9)
    # The other models did not move.
    assert _mine(at, SETUP_BY_KEY["8b-h200-tp8"].label, "Decode") == pytest.approx(
        _mine(_page("validation").run(), SETUP_BY_KEY["8b-h200-tp8"].label, "Decode"))


def test_overhead_slider_adds_to_every_decode_step():
    at = _page("validation").run()
    label = SETUP_BY_KEY["8b-h200-tp8"].label
    before = _mine(at, label, "Decode")
    start = at.slider(key="validation.Llama-3-8B.dec").value
    assert start == pytest.approx(ENGINE_DEFAULTS.step_overhead_s * 1000)  # the sliders start at the engine's
    at.slider(key="validation.Llama-3-8B.dec").set_value(2.0).run()
    assert _mine(at, label, "Decode") == pytest.approx(before + 2.0 - start, abs=1e-6)


def test_allreduce_latency_slider_moves_only_tensor_parallel_steps():
    at = _page("validation").run()
    tp1, tp2 = SETUP_BY_KEY["13b-a100-tp1"].label, SETUP_BY_KEY["13b-a100-tp2"].label
    before1, before2 = _mine(at, tp1, "Decode"), _mine(at, tp2, "Decode")
    start_us = at.slider(key="validation.GPT-13B.ar").value
    at.slider(key="validation.GPT-13B.ar").set_value(16.0).run()
    assert not at.exception
    assert _mine(at, tp1, "Decode") == pytest.approx(before1, abs=1e-9)  # one GPU: no all-reduce
    # 40 layers x 2 all-reduces, each (16 - 6) us slower
    assert _mine(at, tp2, "Decode") == pytest.approx(before2 + 80 * (16.0 - start_us) / 1000, abs=1e-6)


def test_fit_b_preset_reproduces_the_h200_measurements():
    at = _page("validation").run()
    next(b for b in at.button if b.label.startswith("Fit (b)")).click().run()
    assert not at.exception
    for key in ("70b-h200-tp8", "8b-h200-tp8"):
        s = SETUP_BY_KEY[key]
        assert _mine(at, s.label, "Decode") == pytest.approx(s.decode_ms, rel=0.01)
        assert _mine(at, s.label, "Prefill") == pytest.approx(s.prefill_ms, rel=0.01)


def test_reference_page_lists_the_catalog_with_sources():
    at = _page("reference").run()
    assert not at.exception, [e.value for e in at.exception]
    gpus = _frame(at, "HBM bandwidth (TB/s)")
    assert list(gpus["GPU"]) == list(GPUS)
    assert float(gpus.loc[gpus["GPU"] == "H200", "HBM bandwidth (TB/s)"].iloc[0]) == 4.8
    assert gpus["Link"].str.startswith("http").all()
    a100 = gpus.loc[gpus["GPU"] == "A100 80GB"].iloc[0]
    assert a100["Dense FP8 (TFLOP/s)"] == "none: no FP8 tensor cores"  # Ampere has no FP8 tensor cores
    assert str(gpus.loc[gpus["GPU"] == "H100 SXM", "Dense FP8 (TFLOP/s)"].iloc[0]) == "1,979"  # 2x its BF16 989
    for frame in (gpus, _frame(at, "Per direction (GB/s)"), _frame(at, "KV per token, bf16 (kB)")):
        assert not frame.isna().any().any() and "None" not in frame.astype(str).values, "a missing value reads None"
    models = _frame(at, "KV per token, bf16 (kB)")
    assert list(models["Model"]) == list(MODELS)
    conventions = at.table[0].value
    text = conventions.to_string()
    assert "16 bytes per parameter" in text and "14 bytes per parameter" in text
    assert "6 FLOP per parameter" in text and "2 FLOP per parameter" in text
    assert "419 in 54 days" in text
    sources = "\n".join(m.value for m in at.markdown)
    for g in GPUS.values():
        assert g.source in sources


def test_both_pages_are_in_the_navigation_and_link_to_each_other():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT).run()
    at.switch_page("pages/validation.py").run()
    assert not at.exception, [e.value for e in at.exception]
    links = [pl.proto.page for pl in at.get("page_link")]
    assert "reference" in links, links
    at.switch_page("pages/reference.py").run()
    assert not at.exception, [e.value for e in at.exception]
    links = [pl.proto.page for pl in at.get("page_link")]
    assert "validation" in links, links
