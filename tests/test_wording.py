"""Live prose reads as written at every scenario: no noun said twice ("8 GPUs GPUs", "4 tokens
tokens": a placeholder that carries its noun, followed by the noun again) and no "every 1" (a
sentence about one in every N, read at N = 1). Rendered at the defaults and five drawn scenarios."""

from __future__ import annotations

import re

import pytest

from models.mock import draw_scenario
from models.registry import written
from ui.prose import render

QUESTIONS = written()
DOUBLED = re.compile(r"\*\*[^*]*?\b([A-Za-z]{3,})\*\*\s+\1\b")
EVERY_ONE = re.compile(r"\bevery \*\*1\*\*(?![.,\d])|\bevery 1\b")


def _texts(q) -> list[str]:
    c = q.content
    return [c.hook, c.intro, *(s.body for s in c.sections), *(d.prompt for d in c.drills)]


@pytest.mark.parametrize("q", QUESTIONS, ids=[q.slug for q in QUESTIONS])
def test_the_prose_says_each_noun_once_and_never_every_one(q):
    found = set()
    for p in [q.Params()] + [draw_scenario(q.Params, seed) for seed in range(5)]:
        d = q.solve(p)
        for text in _texts(q):
            out = render(text, d, p)
            for m in (*DOUBLED.finditer(out), *EVERY_ONE.finditer(out)):
                found.add(out[max(0, m.start() - 40):m.end() + 20].replace("\n", " "))
    assert not found, f"{q.slug}:\n" + "\n".join(sorted(found))


# "pass that at unbounded into the ramp": a value shown as "unbounded" where the sentence wants a
# moment, a limit or an amount. Such a sentence is chosen by the model (a text step) instead.
UNBOUNDED_AS_NUMBER = re.compile(r"\b(?:at|below|in|of) (?:\*\*)?unbounded\b")
DRAWS = 40  # autoscaling-warm-pool's base fleet covers the peak at seed 25, fair-share preempts nobody at 27


@pytest.mark.parametrize("q", QUESTIONS, ids=[q.slug for q in QUESTIONS])
def test_no_sentence_reads_unbounded_as_a_number(q):
    scenarios = [q.Params(), *(q.Params(**p.values) for p in q.content.presets),
                 *(draw_scenario(q.Params, seed) for seed in range(DRAWS))]
    found = set()
    for p in scenarios:
        d = q.solve(p)
        for text in _texts(q):
            out = render(text, d, p)
            for m in UNBOUNDED_AS_NUMBER.finditer(out):
                found.add(out[max(0, m.start() - 60):m.end() + 30].replace("\n", " "))
    assert not found, f"{q.slug}:\n" + "\n".join(sorted(found))


def test_a_knob_counted_in_a_noun_reads_singular_at_one():
    """A knob whose unit is a count reads "1 checkpoint" at one and "3 checkpoints" at three."""
    from models.training.checkpoint_storage import Params
    from ui.prose import value_text

    one, three = Params(keep_last=1), Params(keep_last=3)
    assert value_text("keep_last", None, {}, one) == "1 checkpoint"
    assert value_text("keep_last", None, {}, three) == "3 checkpoints"
