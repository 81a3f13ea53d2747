"""The timed mock interview, without any UI: scenario draws, the phase clock, and scoring.

A scenario is drawn from each knob's realistic `draw` range and rounded to numbers a person can
do arithmetic with (2,000 not 1,873.4). The seed is kept, so an attempt replays exactly.
"""

from __future__ import annotations

import math
import numbers
import typing
from dataclasses import dataclass
from typing import Any, Callable, Literal, Sequence

import numpy as np
from pydantic import ValidationError

from models.core import PHASES, PHASE_TITLES, Derivation, Drill, knobs_of, values_only
from models.serving import interview_minute_plan as minute_plan

# The plan lives once, on the page that teaches it (interview-minute-plan): 5/7/10/16/5 minutes
# in a 45-minute round, 43 planned and 2 of slack; a longer round scales each phase.
PHASE_PLAN_MIN: tuple[tuple[str, float], ...] = tuple(minute_plan.PHASE_MINUTES_45.items())
ROUND_MIN = minute_plan.BASE_ROUND_MINUTES


def phase_plan(round_min: float = ROUND_MIN) -> list[tuple[str, float]]:
    """Whole minutes per phase for a round of `round_min` minutes."""
    return list(minute_plan.phase_plan(round_min).items())


# ---------------------------------------------------------------------------------------------
# Drawing a scenario


def nice_round(x: float, sig: int = 2) -> float:
    """Round to `sig` significant figures, snapping the mantissa to 1, 1.2, 1.5, 2, 2.5, 3, 4, 5,
    6, 7.5, 8 when sig <= 2, so results look like numbers people quote (1,500 not 1,487)."""
    if x == 0 or not math.isfinite(x):
        return x
    exp = math.floor(math.log10(abs(x)))
    mantissa = abs(x) / 10**exp
    if sig <= 2:
        stops = (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 7.5, 8, 10)
        m = min(stops, key=lambda s: abs(math.log(s) - math.log(mantissa)))
    else:
        m = round(mantissa, sig - 1)
    return math.copysign(float(f"{m * 10**exp:.10g}"), x)


def _round_to_step(x: float, step: float, lo: float, hi: float) -> float:
    v = round(round(x / step) * step, 10)
    return min(max(v, lo), hi)


def draw_value(knob, annotation, default: Any, rng: np.random.Generator) -> Any:
    if knob.only_if is not None:  # a custom part's number: a drawn scenario names a catalog part
        return default
    literal = typing.get_origin(annotation) is Literal
    if literal or knob.draw_choices:
        # A count a deployment picks from a few values (GPUs per node: 4 or 8, never 5 or 6) is an
        # int knob with draw_choices; a Literal knob draws from its options or its draw_choices.
        choices = knob.draw_choices or typing.get_args(annotation)
        if knob.draw and all(isinstance(c, (int, float)) and not isinstance(c, bool) for c in choices):
            inside = [c for c in choices if knob.draw[0] <= c <= knob.draw[1]]
            choices = tuple(inside) or choices
        return choices[int(rng.integers(len(choices)))]
    if annotation is bool:
        return bool(rng.integers(2))
    lo, hi = knob.draw if knob.draw else (knob.min, knob.max)
    if lo == hi:
        return default
    raw = math.exp(rng.uniform(math.log(lo), math.log(hi))) if knob.log and lo > 0 else rng.uniform(lo, hi)
    return round_drawn(knob, annotation, raw)


def round_drawn(knob, annotation, raw: Any, within_draw: bool = True) -> Any:
    """A raw draw rounded as the knob's scenarios are said out loud, inside the knob's draw range
    (or, `within_draw=False`, its whole range); for a choice knob, the nearest of its options."""
    if typing.get_origin(annotation) is Literal or knob.draw_choices:
        options = typing.get_args(annotation) if typing.get_origin(annotation) is Literal else knob.draw_choices
        if raw in options or not all(isinstance(c, (int, float)) and c > 0 for c in options):
            return raw
        return min(options, key=lambda c: abs(math.log(c / raw)))
    lo, hi = knob.draw if knob.draw and within_draw else (knob.min, knob.max)
    if knob.log and lo > 0:
        value = nice_round(raw)
    elif knob.percent:
        value = _round_to_step(raw, 0.05, lo, hi)
    elif knob.step:
        # Coarser than the slider's step: a drawn scenario should be easy to say out loud.
        coarse = knob.step * max(1, 10 ** math.floor(math.log10(max((hi - lo) / knob.step, 1)) - 1))
        value = _round_to_step(raw, coarse, lo, hi)
    else:
        value = nice_round(raw)
    value = min(max(value, knob.min if knob.min is not None else value), knob.max if knob.max is not None else value)
    if annotation is int:
        return int(round(value))
    return float(value)


def _draw_values(params_cls: type, knobs: dict, rng: np.random.Generator) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for name, info in params_cls.model_fields.items():
        if name in knobs:
            values[name] = draw_value(knobs[name], info.annotation, info.default, rng)
    # Knobs that only make sense together (a fleet sized for the demand its tenants bring) are
    # drawn by the model: `Params.draw_together(values, rng)` returns raw values for some knobs,
    # rounded here like any draw. Drawn independently, 431 of 1,000 token-rate-limiter scenarios
    # had tenants asking for more than the fleet could serve.
    together = getattr(params_cls, "draw_together", None)
    if together is not None:
        for name, raw in together(dict(values), rng).items():
            values[name] = round_drawn(knobs[name], params_cls.model_fields[name].annotation, raw, within_draw=False)
    return values


def draw_solved(params_cls: type, seed: int, tries: int = 200,
                solve: Callable[[Any], Derivation] | None = None) -> tuple[Any, Derivation | None] | None:
    """The draw of `draw_scenario` with the values-only derivation that accepted it (None without
    a solve), or None after `tries` rejections: a caller that checks the drawn scenario's steps
    (`drills_for`) need not solve it again."""
    rng = np.random.default_rng(seed)
    knobs = knobs_of(params_cls)
    for _ in range(tries):
        try:
            params = params_cls(**_draw_values(params_cls, knobs, rng))
        except ValidationError:
            continue
        if solve is None:
            return params, None
        with values_only():
            d = solve(params)
        if d.feasible:
            return params, d
    return None


def draw_scenario_or_none(params_cls: type, seed: int, tries: int = 200,
                          solve: Callable[[Any], Derivation] | None = None) -> Any | None:
    """As `draw_scenario`, but None where it would fall back to the seed scenario: a caller (or a
    test) can tell a drawn scenario from the fallback even when the defaults were drawn."""
    drawn = draw_solved(params_cls, seed, tries, solve)
    return None if drawn is None else drawn[0]


def draw_scenario(params_cls: type, seed: int, tries: int = 200,
                  solve: Callable[[Any], Derivation] | None = None) -> Any:
    """A Params instance drawn from the knobs' realistic ranges; same seed, same scenario.

    Some combinations are infeasible (a model too big for the GPUs drawn); a Params validator
    rejects them and we draw again from the same generator, so the result stays a function of
    the seed. Given the question's `solve`, a scenario whose solve declares a broken condition
    (`Derivation.violations`: a replica asked for more than all of its time, say) is redrawn the
    same way, so a mock never states an impossible scenario. After `tries` rejections the seed
    scenario is used (`draw_scenario_or_none` says so instead).
    """
    drawn = draw_solved(params_cls, seed, tries, solve)
    return params_cls() if drawn is None else drawn[0]


def drills_for(question: Any, params: Any, derivation: Derivation) -> tuple[Drill, ...]:
    """The question's drills that this scenario can ask, in their order: each one's `when`
    conditions hold (read from the derivation's steps, then the params' knobs), and its step is a
    finite number, so it has an answer to type. `question` is a registry Question (or anything
    with `.drills`); `derivation` is `question.solve(params)`, full or values-only."""

    def lookup(name: str) -> Any:
        if name in derivation:
            return derivation.value(name)
        if name in type(params).model_fields:
            return getattr(params, name)
        raise KeyError(f"a drill's condition names '{name}', which is neither a knob nor a step of "
                       f"{getattr(question, 'slug', 'this question')}")

    kept = []
    for drill in question.drills:
        if drill.key not in derivation:
            continue
        value = derivation.value(drill.key)
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
            continue
        if drill.applies(lookup):
            kept.append(drill)
    return tuple(kept)


def feasible(solve: Callable[[Any], Derivation], params: Any) -> bool:
    """Does the scenario meet every condition its solve declares? Solved values-only: a draw
    reads no label or formula, and the conditions are kept on that path too."""
    with values_only():
        return solve(params).feasible


# ---------------------------------------------------------------------------------------------
# The clock


@dataclass(frozen=True)
class ClockState:
    elapsed_s: float
    remaining_s: float
    planned_phase: str  # the phase the plan says you should be in now
    planned_phase_left_s: float
    over: bool  # the round is over: inputs lock


def clock_state(elapsed_s: float, round_min: float = ROUND_MIN) -> ClockState:
    total_s = round_min * 60
    remaining = max(0.0, total_s - elapsed_s)
    t = 0.0
    phase, left = PHASES[-1], 0.0
    for name, minutes in phase_plan(round_min):
        end = t + minutes * 60
        if elapsed_s < end:
            phase, left = name, end - elapsed_s
            break
        t = end
    return ClockState(elapsed_s, remaining, phase, left, remaining <= 0)


def phase_overrun_s(phase: str, time_in_phase_s: float, round_min: float = ROUND_MIN) -> float:
    """Seconds spent in `phase` beyond its planned share (0 if within plan)."""
    planned = dict(phase_plan(round_min))[phase] * 60
    return max(0.0, time_in_phase_s - planned)


# ---------------------------------------------------------------------------------------------
# Scoring


@dataclass(frozen=True)
class PhaseScore:
    phase: str
    title: str
    earned: float
    possible: int


def score_attempt(drills: Sequence[Drill], scores_by_key: dict[str, float]) -> tuple[float, list[PhaseScore]]:
    """Total (0..1) and per-phase scores; an unanswered drill scores zero."""
    per_phase = []
    for phase in PHASES:
        ds = [d for d in drills if d.phase == phase]
        if ds:
            earned = sum(scores_by_key.get(d.key, 0.0) for d in ds)
            per_phase.append(PhaseScore(phase, PHASE_TITLES[phase], earned, len(ds)))
    possible = sum(p.possible for p in per_phase)
    total = sum(p.earned for p in per_phase) / possible if possible else 0.0
    return total, per_phase


def drills_by_phase(drills: Sequence[Drill]) -> dict[str, list[Drill]]:
    out: dict[str, list[Drill]] = {p: [] for p in PHASES}
    for d in drills:
        out[d.phase].append(d)
    return out


def givens(params: Any) -> list[tuple[str, Any, str, bool]]:
    """(label, value, unit, percent) for every knob the round's answers depend on: the scenario as
    the prompt states it. A knob that only drives the page's live simulation is not a given of the
    round, nor is a custom part's or shape's number while the catalog one is picked."""
    out = []
    for name, knob in knobs_of(type(params)).items():
        if knob.simulation:
            continue
        if knob.only_if and getattr(params, knob.only_if[0]) != knob.only_if[1]:
            continue
        out.append((knob.label, getattr(params, name), knob.unit, knob.percent))
    return out


def reference_scores(derivation: Derivation, drills: Sequence[Drill]) -> dict[str, float]:
    """Every drill answered with the reference value: the ceiling a test can check against."""
    return {d.key: 1.0 for d in drills if d.key in derivation}
