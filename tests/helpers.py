"""Readers the UI tests share: a page under AppTest, its metric cards and prose, and a metric card in a
real browser. One copy each, so a change to how Streamlit draws a card is one edit."""

from __future__ import annotations

from typing import TYPE_CHECKING

from models.registry import QUESTIONS, Question

if TYPE_CHECKING:  # the AppTest tests run without Playwright installed
    from playwright.sync_api import Locator, Page
    from streamlit.testing.v1 import AppTest


def app_page(question: Question | str, timeout: float = 30) -> AppTest:
    """A question's page under AppTest, not yet run: `app_page(slug).run()`."""
    from streamlit.testing.v1 import AppTest

    q = QUESTIONS[question] if isinstance(question, str) else question
    return AppTest.from_file(str(q.page_path), default_timeout=timeout)


def metrics(at: AppTest) -> dict[str, str]:
    """Every metric card on the page, label -> shown value."""
    return {m.label: m.value for m in at.metric}


def metric(at: AppTest, label: str, *, prefix: bool = False) -> str:
    """The shown value of the metric card with this label (or, with prefix=True, the first whose label
    starts with it). A missing card fails with the labels that are there, not a StopIteration."""
    for m in at.metric:
        if m.label == label or (prefix and m.label.startswith(label)):
            return m.value
    raise AssertionError(f"no metric card {label!r}{' ...' if prefix else ''}; the page shows {[m.label for m in at.metric]}")


def markdown(at: AppTest) -> str:
    """All the page's markdown, one block a line: the prose as the learner reads it."""
    return "\n".join(m.value for m in at.markdown)


def metric_value(page: Page, label: str) -> Locator:
    """In a browser: the value of the metric card whose text contains the label, as a locator to
    `expect(...)` on (it waits for the rerun that changes it)."""
    return page.locator("[data-testid='stMetric']").filter(has_text=label).locator("[data-testid='stMetricValue']")


def metric_delta(page: Page, label: str) -> Locator:
    """In a browser: the line under a metric card's value (a live panel's closed form, say)."""
    return page.locator("[data-testid='stMetric']").filter(has_text=label).locator("[data-testid='stMetricDelta']")
