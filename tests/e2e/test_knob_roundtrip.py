"""Every knob of every page at its extremes survives a reload: each numeric knob at its minimum
and at its maximum, each choice at its first and its last option, each toggle both ways.

Streamlit drops a URL-bound value equal to the widget's default, and the app once set defaults
through session state, so a knob at its minimum vanished from the URL: a reload, a share link or
the presenter's QR reopened the seed value (575 of 575 minimums, 36 of 36 first options). One
page load carries every knob of the page at once (the scenario may be refused as a whole, and is
then shown as the seed with a notice; the URL must still hold what was asked for).
"""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlsplit

import pytest
from playwright.sync_api import Page

from models.registry import QUESTIONS
from tests.e2e.conftest import visit
from ui.knobs import _widget_range, plain, specs
from ui.share import _url_value

WRITTEN = [q for q in QUESTIONS.values() if q.written]


def _extreme(spec, end: int) -> str:
    """`end` 0: the minimum / first option / off; 1: the maximum / last option / on."""
    if spec.kind == "bool":
        return "true" if end else "false"
    if spec.kind == "choice":
        return str(spec.choices[-1] if end else spec.choices[0])
    lo, hi = _widget_range(spec)
    value = hi if end else lo
    return plain(int(value) if spec.kind == "int" else round(float(value), 6))


def _asked(q, end: int) -> dict[str, tuple[str, str]]:
    """URL key -> (the extreme asked for, the seed value in URL form)."""
    return {spec.key(q.slug): (_extreme(spec, end), _url_value(spec, spec.default))
            for spec in specs(q.Params) if spec.knob.only_if is None}


def _same(asked: str, got: str | None, seed: str) -> bool:
    if got is None:  # the seed value itself is left out of the URL (links carry what differs)
        got = seed
    try:
        return float(asked) == float(got)
    except ValueError:
        return asked.lower() == got.lower()


@pytest.mark.parametrize("end", [0, 1], ids=["min-first-off", "max-last-on"])
def test_every_knob_at_its_extreme_survives_in_the_address(page: Page, app_url: str, end: int):
    """One session per end walks every page (conftest.visit), so each page is opened once with
    nothing of it in the session yet, as a link opens it."""
    failures = {}
    for q in WRITTEN:
        asked = _asked(q, end)
        visit(page, app_url, f"/{q.slug}?{urlencode({k: v for k, (v, _) in asked.items()})}", q.title)
        got = dict(parse_qsl(urlsplit(page.url).query))
        lost = {k: (v, got.get(k)) for k, (v, seed) in asked.items() if not _same(v, got.get(k), seed)}
        if lost:
            failures[q.slug] = f"{len(lost)} of {len(asked)} knobs did not survive (asked, got): {lost}"
    assert not failures, failures
