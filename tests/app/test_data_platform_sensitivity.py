"""AppTest for the data-platform-sensitivity page: picking a role changes which rows and columns of
the sample table come back, and the page never shows a column above the role's clearance in clear."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from models.product import data_platform_sensitivity as model
from tests.helpers import app_page, metric

SLUG = "data-platform-sensitivity"
ROLE = f"{SLUG}.sim_role"


@pytest.fixture(autouse=True)
def _db(tmp_path, monkeypatch):
    monkeypatch.setenv("WALKTHROUGHS_DB", str(tmp_path / "apptest.duckdb"))


def _rows_table(at: AppTest):
    return next(df.value for df in at.dataframe if "order_date" in df.value.columns)


def test_default_role_is_the_analyst():
    at = app_page(SLUG).run()
    assert not at.exception, [e.value for e in at.exception]
    table = _rows_table(at)
    assert "customer_email" not in table.columns and "card_last4" not in table.columns
    assert all(str(x).startswith("tok_") for x in table["customer_id"])
    assert metric(at, "Rows returned") == "5 of 6"


@pytest.mark.parametrize("role", list(model.ROLES))
def test_each_role_sees_exactly_what_the_policy_returns(role):
    at = app_page(SLUG).run()
    at.get("button_group")[0].set_value(role).run()
    assert not at.exception, [e.value for e in at.exception]
    result = model.apply_policy(role)
    table = _rows_table(at)
    expected = [c.name for c, how in result.columns if how != "dropped"]
    assert list(table.columns) == expected
    assert len(table) == len(result.rows)
    assert metric(at, "Clearance") == model.ROLES[role].clearance
    if role == "privacy officer":
        assert "card_last4" in table.columns
    else:
        assert "card_last4" not in table.columns
