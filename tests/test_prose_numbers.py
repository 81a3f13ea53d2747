"""Numbers in the prose read as a person writes them, on every page, at the seed scenario and at
drawn ones: no computer notation (7.06e10), no "None" or "nan", no "$5.262k", no thousands of a
smaller unit where the larger one reads (80,000 kB is 80 MB)."""

import re

import pytest

from models.mock import draw_scenario
from models.registry import written
from ui.prose import render

WRITTEN = written()
CODE_OR_HASH = re.compile(r"`[^`]*`|\b[0-9a-f]{12,64}\b")
BAD = {
    "computer notation": re.compile(r"\d(?:\.\d+)?e[+-]?\d"),
    "a missing value": re.compile(r"\*\*(?:None|nan|n/a)\*\*"),
    "money with a k": re.compile(r"\$\d+(?:\.\d+)?k\b"),
    "thousands of kB or MB": re.compile(r"\b\d{1,3}(?:,\d{3})+ (?:kB|MB)\b"),
}


def _page_text(q, params) -> str:
    c = q.content
    text = "\n".join([c.hook, c.intro, *(s.body for s in c.sections), *(d.question for d in c.drills)])
    return CODE_OR_HASH.sub("", render(text, q.solve(params), params))


@pytest.mark.parametrize("q", WRITTEN, ids=[q.slug for q in WRITTEN])
def test_numbers_in_prose_read_as_written_by_hand(q):
    found = []
    for params in [q.Params()] + [draw_scenario(q.Params, seed) for seed in range(3)]:
        text = _page_text(q, params)
        for what, pattern in BAD.items():
            found += [f"{what}: …{text[max(0, m.start() - 40):m.end() + 20]}…" for m in pattern.finditer(text)]
    assert not found, "\n".join(sorted(set(found))[:10])


def test_the_check_sees_what_it_forbids():
    assert BAD["computer notation"].search("has **7.06e10 parameters**")
    assert BAD["money with a k"].search("**$5.262k** a month")
    assert BAD["thousands of kB or MB"].search("**80,000 kB** per request")
    assert not BAD["computer notation"].search("has **70.6 B parameters** (7.06 × 10¹⁰)")
