"""A live panel shows steps (issue 19): each question whose model has `simulation_steps` turns its run
into labelled, finite steps, every arithmetic one's formula evaluating to its value, and every card and
caption of the page's declared panel names one of them (or a step of the page's solve)."""

import math
import runpy
from unittest import mock

import pytest

from models.content import PLACEHOLDER
from models.core import knobs_of
from models.formula import evaluate
from models.registry import written
from models.units import parse_unit
from ui.question_page import QuestionPage

WITH_STEPS = [q for q in written() if hasattr(q.module, "simulation_steps")]


def test_some_questions_declare_their_panels():
    assert {q.slug for q in WITH_STEPS} >= {"ttft-slo-200ms", "token-rate-limiter"}


@pytest.mark.parametrize("q", WITH_STEPS, ids=lambda q: q.slug)
def test_the_runs_steps_are_shown_and_the_panel_names_only_them(q):
    p = q.Params()
    with mock.patch.object(QuestionPage, "render", lambda self: None):
        page = runpy.run_path(str(q.page_path), run_name="page_under_test")["page"]
    assert page.simulations, f"{q.slug} has simulation_steps but declares no page.simulation"
    counterpart = next(iter(page.simulations.values())).get("counterpart")
    others = () if counterpart is None else (q.module.simulate(p.model_copy(update=counterpart.update(p)), seed=0),)
    steps = q.module.simulation_steps(p, q.module.simulate(p, seed=0), *others)
    for step in steps:
        parse_unit(step.unit)
        assert step.label, step.key
        if step.is_numeric:
            assert math.isfinite(float(step.value)), f"{q.slug}.{step.key} = {step.value}"
        if step.formula and not step.kind:
            assert evaluate(step.formula, step.bindings, step.units, step.unit) == pytest.approx(step.value), step.key
        assert step.formula or step.kind, f"{q.slug}.{step.key}: a run's figure says it is simulated, given or looked up"
    names = set(steps.keys()) | set(q.solve(p).keys()) | set(knobs_of(q.Params))
    for name, spec in page.simulations.items():
        cards = spec.get("cards", ())
        for card in (c for row in cards for c in row) if cards and isinstance(cards[0], tuple) else cards:
            for key in (card.key, card.against, *(k for k, _ in card.also)):
                assert not key or key in names, f"{q.slug}/{name}: a card names unknown step {key}"
        texts = [spec.get("caption", ""), spec.get("title", "")]
        if spec.get("table") is not None:
            texts += [cell for row in spec["table"].rows for cell in row]
        for text in texts:
            for m in PLACEHOLDER.finditer(text):
                assert m.group(1) in names, f"{q.slug}/{name}: a caption or cell names unknown step {m.group(1)}"
        replay = spec.get("replay")
        if replay is not None and replay.steps_at is not None:
            result = q.module.simulate(p, seed=0)
            at = replay.steps_at(p, result, replay.span(result) / 2)
            for m in PLACEHOLDER.finditer(replay.caption):
                assert m.group(1) in names | set(at.keys()), f"{q.slug}/{name}: the replay names unknown {m.group(1)}"
