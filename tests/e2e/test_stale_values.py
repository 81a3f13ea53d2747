"""No stale number after a knob move (#22): the page body is one fragment, the metric cards go out
before the charts, and a burst of key presses can cancel runs half way; whatever the page shows
once it settles must be the scenario the slider shows, solved afresh.

Per page: three quick presses on a slider (no wait between them, as a learner holding an arrow
key does), then every metric card, every live number of the prose (in order) and the current-value
marker of every sweep chart are held against `solve` of the scenario read back from the slider.
"""

from __future__ import annotations

import math
import re

import pytest
from playwright.sync_api import Page

from bench.browser import choose
from models.content import DIRECTIVE, PLACEHOLDER
from models.registry import QUESTIONS
from tests.e2e.conftest import wait_idle
from ui.knobs import _from_widget, specs
from ui.prose import value_text

pytestmark = pytest.mark.e2e

# Two with deferred simulation panels, one with four charts, one with a log knob chart.
PAGES = ["serving-platform", "continuous-batching", "checkpoint-distribution", "kv-cache-tiers"]

CARDS = """() => [...document.querySelectorAll("[data-testid='stMetric']")].map(m => [
  m.querySelector("[data-testid='stMetricLabel']").innerText.trim(),
  m.querySelector("[data-testid='stMetricValue']").innerText.trim()])"""
# Bold runs of the page's Markdown, in page order: the prose renders every live value in bold.
BOLD = """() => [...document.querySelectorAll("[data-testid='stMarkdownContainer'] strong")]
  .map(s => s.textContent.replace(/\\s+/g, " ").trim())"""
# Each chart's x-axis title and its current-value markers: (x, y) of the one-point marker traces.
MARKERS = """() => [...document.querySelectorAll(".js-plotly-plot")].map(gd => [
  ((gd.layout || {}).xaxis || {}).title ? String(gd.layout.xaxis.title.text || "") : "",
  (gd.data || []).filter(t => t.mode === "markers" && t.showlegend === false && t.x && t.x.length === 1)
    .map(t => [t.x[0], t.y[0]])])"""


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("\\$", "$")).strip()


def _prose_values(question, derivation, params) -> list[str]:
    """Every placeholder of the rendered prose, in page order, as the page must show it now."""
    c = question.content
    texts = [c.hook, c.intro] + [s.body for s in c.sections]
    out = []
    for text in texts:
        for line in (text or "").splitlines():
            if DIRECTIVE.match(line.strip()):
                continue
            out += [_norm(value_text(m.group(1), m.group(2), derivation, params)) for m in PLACEHOLDER.finditer(line)]
    return out


def _is_subsequence(wanted: list[str], shown: list[str]) -> tuple[bool, str]:
    it = iter(shown)
    for i, w in enumerate(wanted):
        if not any(w == s for s in it):
            return False, f"prose value #{i} {w!r} not shown after the values before it"
    return True, ""


@pytest.mark.parametrize("slug", PAGES)
def test_after_a_burst_of_moves_every_number_is_the_fresh_solve(page: Page, app_url: str, slug: str):
    q = QUESTIONS[slug]
    choice = choose(slug, 0)
    spec = next(s for s in specs(q.Params) if s.field == choice.field)
    page.goto(f"{app_url}/{slug}")
    wait_idle(page)
    slider = page.locator(f".st-key-{slug}-{choice.field} input[type='range']")
    before = slider.input_value()
    slider.focus()
    for _ in range(3):
        page.keyboard.press(choice.first_key)
    page.wait_for_function("([sel, v]) => document.querySelector(sel).value !== v",
                           arg=[f".st-key-{slug}-{choice.field} input[type='range']", before])
    # The last press's run must be the one that settles: wait for idle, then for the URL (written
    # by that run) to carry the slider's value.
    wait_idle(page)
    page.wait_for_function("() => !document.querySelector('[data-stale=\"true\"]')")
    wait_idle(page)
    widget = float(slider.input_value())
    value = _from_widget(spec, int(widget) if spec.kind == "int" else widget)
    params = q.Params(**{spec.field: value})
    assert getattr(params, spec.field) != spec.default, "the presses did not move the knob"
    d = q.solve(params)

    shown_cards = dict(page.evaluate(CARDS))
    for key, short in q.content.metrics:
        label = short or d[key].label
        assert _norm(shown_cards[label]) == _norm(d[key].display(hint=False)), (slug, label)

    ok, why = _is_subsequence(_prose_values(q, d, params), [_norm(s) for s in page.evaluate(BOLD)])
    assert ok, f"{slug}: {why}"

    # A chart that sweeps the moved knob marks the slider's value; serving-platform's replicas
    # charts mark the fresh replica count (the one chart held to the solve itself).
    charts = page.evaluate(MARKERS)
    scale = 100 if spec.knob.percent else 1
    own = [marks for title, marks in charts if title.startswith(spec.knob.label) and marks]
    for marks in own:
        assert all(math.isclose(x, getattr(params, spec.field) * scale, rel_tol=1e-9) for x, _ in marks), \
            f"{slug}: a chart of {spec.field} marks {marks}, not {getattr(params, spec.field) * scale}"
    if slug == "serving-platform":
        assert own, "serving-platform: no chart sweeps the moved knob"
        replicas = float(d.value("replicas"))
        ys = [y for _, marks in charts for _, y in marks]
        assert sum(math.isclose(y, replicas, rel_tol=1e-9) for y in ys) >= 3, (replicas, charts)
