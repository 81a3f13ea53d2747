"""The page says at the top when its scenario cannot happen (#20), and says nothing at a feasible one."""

from __future__ import annotations


from models.registry import QUESTIONS
from tests.helpers import app_page

BANNER = "This scenario cannot happen as stated."


def _warnings(at) -> list[str]:
    return [w.value for w in at.warning]


def test_a_feasible_default_shows_no_banner():
    at = app_page(QUESTIONS["continuous-batching"], 30).run()
    assert not at.exception
    assert not any(BANNER in w for w in _warnings(at))


def test_an_overloaded_replica_is_named_at_the_top_with_its_numbers():
    q = QUESTIONS["continuous-batching"]
    at = app_page(q, 30)
    # 20 requests/s on one replica: the default serves about 5 (the model's replica_capacity_rps).
    at.query_params[f"{q.slug}.arrival_rps"] = "20"
    at.run()
    assert not at.exception
    banner = [w for w in _warnings(at) if BANNER in w]
    assert banner, _warnings(at)
    cap = q.solve(q.Params(arrival_rps=20)).value("replica_capacity_rps")
    assert cap < 20
    assert "cannot keep up" in banner[0] and "20 requests/s" in banner[0]
