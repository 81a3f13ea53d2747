"""Sweeps solve with values only (models.core.values_only); every value must be the full solve's."""

import math

import pytest

from models.core import Derivation, solve_values, values_only
from models.mock import draw_scenario
from models.registry import written

QUESTIONS = written()


@pytest.mark.parametrize("q", QUESTIONS, ids=[q.slug for q in QUESTIONS])
def test_a_values_only_solve_has_the_full_solves_values(q):
    for p in (q.Params(), draw_scenario(q.Params, 1)):
        full = {s.key: s.value for s in q.solve(p)}
        with values_only():
            light = q.solve(p)
        assert type(light).__name__ == "_ValuesOnly"
        assert light.keys() == list(full)
        for key, value in full.items():
            got = light.value(key)
            assert got == value or (isinstance(value, float) and math.isnan(value) and math.isnan(got)), key


def _same(got, want) -> bool:
    return got == want or (isinstance(want, float) and math.isnan(want) and math.isnan(got))


@pytest.mark.parametrize("q", QUESTIONS, ids=[q.slug for q in QUESTIONS])
def test_a_solve_stopped_at_its_keys_has_the_full_solves_values(q):
    """solve_values stops a point's solve once the keys a sweep reads are recorded: each key alone,
    and the last two recorded together, read what the whole solve gives, on every question (those
    whose solve builds another derivation inside it included)."""
    for p in (q.Params(), draw_scenario(q.Params, 1)):
        full = {s.key: s.value for s in q.solve(p)}
        keys = list(full)
        for key in keys:
            assert _same(solve_values(q.solve, p, [key]).value(key), full[key]), key
        pair = keys[-2:]
        stopped = solve_values(q.solve, p, pair)
        assert all(_same(stopped.value(k), full[k]) for k in pair)


def _toy_solve(p):
    d = Derivation(p)
    inner = Derivation(p)  # a derivation built inside the solve (another model's, say) stays whole
    inner.step("a", "inner a", 100.0)
    inner.step("b", "inner b", 200.0)
    d.step("a", "a", 1.0)
    d.step("b", "b", d.value("a") + 1)
    TOY_TAIL.append(p)  # reached only when the solve runs past "b"
    d.step("c", "c", 3.0)
    return d


TOY_TAIL: list = []


def test_the_solve_stops_after_the_last_key_it_asks_for():
    TOY_TAIL.clear()
    p = object()
    d = solve_values(_toy_solve, p, ["a", "b"])
    assert (d.value("a"), d.value("b")) == (1.0, 2.0) and "c" not in d and TOY_TAIL == []
    # a key the solve never records: it runs to its end, and every value is there
    d = solve_values(_toy_solve, p, ["a", "nowhere"])
    assert d.value("c") == 3.0 and TOY_TAIL == [p]
    # a derivation for another params object (a nested model's, a converted scenario) never stops it
    d = solve_values(lambda p: _toy_solve(object()), p, ["a"])
    assert d.value("c") == 3.0 and len(TOY_TAIL) == 2


def test_a_broad_except_in_a_model_cannot_swallow_the_stop():
    def guarded(p):
        try:
            return _toy_solve(p)
        except Exception:  # noqa: BLE001 - what the stop must pass through
            raise AssertionError("the stop was caught as an Exception") from None

    assert solve_values(guarded, object(), ["a"]).value("a") == 1.0
