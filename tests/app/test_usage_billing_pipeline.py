"""AppTest for the usage-billing-pipeline page: every fault and guard is a checkbox, and the totals
follow the pure `bill` function."""

from __future__ import annotations

import pytest

from models.platform import usage_billing_pipeline as model
from tests.helpers import app_page, metric

SLUG = "usage-billing-pipeline"


@pytest.fixture(autouse=True)
def _db(tmp_path, monkeypatch):
    monkeypatch.setenv("WALKTHROUGHS_DB", str(tmp_path / "apptest.duckdb"))


def test_all_faults_all_guards_bill_what_is_owed():
    at = app_page(SLUG).run()
    assert not at.exception, [e.value for e in at.exception]
    owed = sum(model.truth(model.FAULTS).values())
    assert metric(at, "What the tenants owe") == f"${owed:,.3f}"
    assert metric(at, "Billed with these guards") == f"${owed:,.3f}"
    unguarded = model.bill(model.FAULTS, set()).total
    assert metric(at, "Billed with no guard") == f"${unguarded:,.3f}"
    assert any("matches what it owes" in s.value for s in at.success)


def test_turning_off_dedup_overbills_and_reconciliation_shows_the_cell():
    at = app_page(SLUG).run()
    at.checkbox(key=f"{SLUG}.sim_guard_dedup").uncheck().run()
    assert not at.exception
    want = model.bill(model.FAULTS, set(model.GUARDS) - {"dedup"}).total
    assert metric(at, "Billed with these guards") == f"${want:,.3f}"
    assert any("Wrong bills" in e.value for e in at.error)
    cells = next(df for df in at.dataframe if "Gap" in df.value.columns).value
    assert (cells["Gap"] > 0).any()


def test_price_fault_alone_is_invisible_to_reconciliation():
    at = app_page(SLUG).run()
    for f in model.FAULTS:
        if f != "mis-priced":
            at.checkbox(key=f"{SLUG}.sim_fault_{f}").uncheck()
    at.checkbox(key=f"{SLUG}.sim_guard_price_at_event_time").uncheck().run()
    assert not at.exception
    assert any("counts cannot see a wrong price" in c.value for c in at.caption)
