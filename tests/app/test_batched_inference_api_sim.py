"""AppTest for batched-inference-api's simulation panel: the M/D/c hand-off queue through the queue
engine, its p95/p99 beside the page's exact steps, seeded."""

from __future__ import annotations


from models.serving import batched_inference_api as model
from models.units import format_quantity
from tests.helpers import app_page

SLUG = "batched-inference-api"


def _runs(seed: int):
    return model.simulate_gpu_queue(model.Params(), seed, model.PANEL_BATCHES, model.PANEL_REPLICATIONS)


def _card(at, title: str) -> tuple[str, str]:
    """(simulated, exact) on the panel's card for one figure: its value and its "closed form" line."""
    card = next((m for m in at.metric if m.label == f"{title}, simulated"), None)
    assert card is not None, [m.label for m in at.metric]
    assert card.delta.startswith("closed form "), card.delta
    return card.value, card.delta.removeprefix("closed form ")


def test_the_panel_shows_the_simulated_tail_beside_the_exact_one_and_follows_its_seed():
    at = app_page(SLUG, timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    d = model.solve(model.Params())
    runs = _runs(0)
    for title, attr, key in (("p95 wait", "wait_p95_s", "queue_wait_p95_s"),
                             ("p99 wait", "wait_p99_s", "queue_wait_p99_s"),
                             ("Mean wait", "mean_wait_s", "queue_wait_mean_s")):
        sim, exact = _card(at, title)
        assert exact == d[key].display(hint=False)  # the page's own step, not a second computation
        assert sim == format_quantity(sum(getattr(r, attr) for r in runs) / len(runs), "s", hint=False)
    sim, exact = _card(at, "Batches that wait")
    assert exact == d["queue_wait_probability"].display(hint=False)
    assert sim == format_quantity(100 * sum(r.wait_share for r in runs) / len(runs), "%")  # a share, in percent
    caption = next(c.value for c in at.caption if c.value.startswith(f"{model.PANEL_REPLICATIONS} runs of "
                                                                      f"{model.PANEL_BATCHES:,} batches"))
    lo, hi = (format_quantity(f(r.wait_p99_s for r in runs), "s", hint=False) for f in (min, max))
    assert f"p99 {lo} to {hi}" in caption  # the spread of the runs, once the cards' tooltips
    # another seed, other runs (and the exact figure stays)
    before = _card(at, "p99 wait")
    at.number_input(key=f"{SLUG}.sim_seed").set_value(5).run()
    assert not at.exception
    after = _card(at, "p99 wait")
    assert after[1] == before[1] and after[0] != before[0]
    runs5 = _runs(5)
    assert after[0] == format_quantity(sum(r.wait_p99_s for r in runs5) / len(runs5), "s", hint=False)


def test_the_prose_places_the_panel_and_says_what_to_look_at():
    from models.registry import QUESTIONS

    c = QUESTIONS[SLUG].content
    assert ("sim", "gpu_queue") in c.directives()
    body = c.section("Arithmetic").body
    assert "::sim gpu_queue" in body and "p99" in body.split("::sim gpu_queue")[0].rsplit("**The tail", 1)[1]
