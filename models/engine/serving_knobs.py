"""The request, SLO and batch knobs of a serving question, declared once, and `served(p)`.

    class Params(ServingKnobs, _UserKnobs):     # bases last-first: the page's own knobs lead, then the
                                                # request, SLO and batch, then the engine

    class _UserKnobs(StrictModel):
        concurrent_users: Annotated[int, Knob(...)] = 2000

`ServingKnobs` refuses a scenario that cannot serve one sequence (the engine's `problem`, then
the request's: weights plus one sequence's KV, one step within the TPOT target, a given batch
that fits), so every page that composes it says why in the same words.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import model_validator

from models.core import Knob, StrictModel
from models.engine.knobs import EngineKnobs, replica
from models.engine.serving import Served, served_problem


class RequestKnobs(StrictModel):
    prompt_tokens: Annotated[int, Knob(
        "Prompt tokens", "tokens", 1, 1_000_000, 1, log=True,
        help="Every token the model reads before it answers: system prompt, history, documents, the question.",
        draw=(500, 8000))] = 2000
    prefix_cache_hit: Annotated[float, Knob(
        "Prefix-cache hit", "", 0, 0.99, 0.01, percent=True,
        help="Share of prompt tokens whose KV is already on the replica (a shared system prompt, earlier "
             "turns): prefill skips them, decode still reads them.", draw=(0, 0.8))] = 0.5
    output_tokens: Annotated[int, Knob(
        "Output tokens", "tokens", 1, 100_000, 1, log=True, help="Tokens generated per request.",
        draw=(100, 1000))] = 400


class SloKnobs(StrictModel):
    tpot_target_ms: Annotated[float, Knob(
        "TPOT target", "ms", 1, 1000, log=True,
        help="Time per output token the engine must not exceed; 50 ms is 20 tokens/s, faster than reading.",
        draw=(30, 80))] = 50
    target_utilization: Annotated[float, Knob(
        "Target utilization", "", 0.1, 1.0, 0.01, percent=True,
        help="Busy share each replica may reach at peak; the rest absorbs bursts and a lost replica.",
        draw=(0.6, 0.8))] = 0.7


class BatchKnobs(StrictModel):
    given_batch: Annotated[int, Knob(
        "Decode batch (0: derived)", "sequences", 0, 16384, 1,
        help="0 lets the TPOT target and the KV room set the batch; a number fixes it, as a worked "
             "problem that states its batch does. The derived caps stay shown beside it.",
        draw=(0, 0))] = 0  # a mock draws the derived batch


class ServingKnobs(EngineKnobs, BatchKnobs, SloKnobs, RequestKnobs):
    @model_validator(mode="after")
    def _servable(self) -> "ServingKnobs":
        why = served_problem(served(self))
        if why:
            raise ValueError(why)
        return self


# The engines of the scenario solved last: one solve asks for the same one up to three times (its
# own, and each "what if" that shares its prefix-cache hit), and a sweep solves hundreds of
# scenarios per slider move. Keyed by the Params object itself, which the entry keeps alive.
_recent_served: tuple[tuple[Any, float, Served], ...] = ()


def served(p: Any, prefix_cache_hit: float | None = None) -> Served:
    global _recent_served
    hit = p.prefix_cache_hit if prefix_cache_hit is None else prefix_cache_hit
    for last_p, last_hit, s in _recent_served:
        if last_p is p and last_hit == hit:
            return s
    # A page whose batch is observed (given) may leave the TPOT target out: it then sets no cap.
    tpot_ms = getattr(p, "tpot_target_ms", SloKnobs.model_fields["tpot_target_ms"].default)
    s = Served(replica(p), p.prompt_tokens, p.output_tokens, hit, tpot_ms / 1000, p.given_batch)
    kept = tuple(entry for entry in _recent_served if entry[0] is p)[-3:]
    _recent_served = (*kept, (p, hit, s))
    return s
