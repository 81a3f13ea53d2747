"""The round states the givens its answers depend on, and only those."""

from models.core import knobs_of
from models.mock import givens
from models.registry import QUESTIONS


def test_simulation_only_knobs_and_hidden_custom_numbers_are_not_givens():
    q = QUESTIONS["continuous-batching"]
    labels = [g[0] for g in givens(q.Params())]
    knobs = knobs_of(q.Params)
    assert "Arrival rate" in labels  # it sets the held batch and the p95 TPOT
    assert knobs["policy"].label not in labels and knobs["length_spread"].label not in labels
    assert not [label for label in labels if label.startswith(("Custom part", "Custom model"))]
    assert len(labels) == sum(1 for k in knobs.values() if not k.simulation and not k.only_if)


def test_a_custom_part_states_its_numbers():
    q = QUESTIONS["serving-platform"]
    labels = [g[0] for g in givens(q.Params(gpu="Custom"))]
    assert "Custom part: HBM" in labels and "Custom model: layers" not in labels
