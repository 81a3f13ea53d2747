"""The question contract: Params (knobs) -> solve -> Derivation (ordered, named steps).

Every number a page shows comes from a Step. A Step knows its unit and how it was computed, so
the same object feeds the prose (`{{key}}`), the metric cards, the worked derivation, the sweep
charts and the drill references. Nothing here imports Streamlit.
"""

from __future__ import annotations

import contextlib
import contextvars
import re
from functools import lru_cache
import typing
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Literal, Mapping

from pydantic import BaseModel, ConfigDict, model_validator

from models.units import format_number, format_quantity, parse_unit

Phase = Literal["numbers", "shape", "arithmetic", "depth", "failure_modes"]
PHASES: tuple[Phase, ...] = typing.get_args(Phase)
PHASE_TITLES: dict[str, str] = {
    "numbers": "Numbers",
    "shape": "Shape",
    "arithmetic": "Arithmetic",
    "depth": "Depth",
    "failure_modes": "Failure modes",
}


@dataclass(frozen=True)
class Knob:
    """Widget metadata for one Params field: `Annotated[float, Knob(...)]`.

    `min`/`max` are enforced by StrictModel's validator (so a URL or a test cannot build an
    out-of-range scenario), `draw` is the narrower realistic range the mock interview samples
    from (a point, lo == hi, means a mock keeps the page's starting value), and `log` asks the UI for a slider whose positions are spaced by ratio, because a
    range that spans decades is unusable on a linear track.
    """

    label: str
    unit: str = ""
    min: float | None = None
    max: float | None = None
    step: float | None = None
    log: bool = False
    help: str = ""
    draw: tuple[float, float] | None = None
    percent: bool = False  # a fraction shown to people as 0-100 %
    # Shown only while another knob has this value: ("gpu", "Custom") for a custom part's numbers.
    # Hidden, the knob keeps its default; a mock draw leaves it there and never draws the value.
    only_if: tuple[str, Any] | None = None
    draw_choices: tuple[Any, ...] | None = None  # for a choice knob: the options a mock draw takes
    # Drawn inside a folded section of this title, after the page's own knobs: the engine's
    # efficiencies and fixed costs, which a learner rarely moves first.
    fold: str = ""
    # Read only by the page's live simulation (a scheduler policy, a run length): no step moves with
    # it. tests/test_knobs_move.py lets such a knob move no step, and holds every other one to it.
    simulation: bool = False

    def in_range(self, value: float) -> bool:
        return (self.min is None or value >= self.min) and (self.max is None or value <= self.max)


class StrictModel(BaseModel):
    """Frozen, no unknown fields, and knob bounds checked with messages in domain language."""

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True)

    @model_validator(mode="after")
    def _check_knob_bounds(self) -> "StrictModel":
        values = vars(self)  # every sweep point is validated: read the fields without getattr's detour
        for name, low, high, knob in _bounded_knobs(type(self)):
            value = values[name]
            if value.__class__ is bool or not isinstance(value, (int, float)):
                continue
            if not low <= value <= high:  # NaN fails too
                unit = f" {knob.unit}" if knob.unit else ""
                raise ValueError(
                    f"{knob.label} must be between {format_number(knob.min)} and "
                    f"{format_number(knob.max)}{unit}; got {format_number(value)}{unit}."
                )
        return self


@lru_cache(maxsize=None)
def knobs_of(params_cls: type[BaseModel]) -> dict[str, Knob]:
    """Field name -> Knob for every field that carries one, in declaration order. Cached per class
    (every validation reads it); callers must not change the dict."""
    out: dict[str, Knob] = {}
    for name, info in params_cls.model_fields.items():
        for meta in info.metadata:
            if isinstance(meta, Knob):
                out[name] = meta
                break
    return out


@lru_cache(maxsize=None)
def _bounded_knobs(params_cls: type[BaseModel]) -> tuple[tuple[str, float, float, Knob], ...]:
    """(field, min, max, knob) of every knob with a bound; a missing bound is infinite."""
    inf = float("inf")
    return tuple((name, -inf if k.min is None else k.min, inf if k.max is None else k.max, k)
                 for name, k in knobs_of(params_cls).items() if k.min is not None or k.max is not None)


STEP_KINDS = ("", "lookup", "verdict", "search", "given", "variant", "simulated")  # see Step.kind


@dataclass(slots=True)  # not frozen: a frozen dataclass sets each field through object.__setattr__,
class Step:              # and sweeps build tens of thousands of steps per rerun
    """One named figure of a derivation.

    `unit` is a pint-parsable string understood by `models.units.parse_unit` ("s", "GB/s",
    "1" for counts and ratios); `noun` is what a count is of ("GPUs"), for display only.
    `formula` is a template over params and earlier steps, e.g. "{checkpoint_gb} GB / {link_GBps} GB/s".
    """

    key: str
    label: str
    value: float | str
    unit: str = "1"
    noun: str = ""
    formula: str = ""
    note: str = ""
    # "" (arithmetic: the formula, evaluated with units, is the value; tests/test_formulas.py holds it
    # to that) or what else the value is: "lookup" (a catalog or table entry), "verdict" (a word chosen
    # by comparing figures the formula names), "search" (the least or largest whole number meeting a
    # condition the formula states), "given" (a knob's value restated), "variant" (another step of
    # this derivation re-solved with a knob changed, which the formula names), "simulated" (read off a
    # seeded simulation run: a page's live panel, beside the closed form it checks).
    kind: str = ""
    bindings: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)
    units: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)  # of the bindings
    # A fraction (unit "1") shown to people as a percent: 0.47 reads "47%". The one convention for
    # shares, as for knobs (Knob.percent): the value a model computes with and a formula evaluates to
    # is always the fraction, never the fraction x 100.
    percent: bool = False

    @property
    def is_numeric(self) -> bool:
        return not isinstance(self.value, str)

    def display(self, unit: str | None = None, hint: bool = True) -> str:
        """The value with its unit, scaled to a readable prefix ("9.83 GB", "64,000 s (17.8 h)")."""
        if not self.is_numeric:
            return str(self.value)
        if self.percent and unit in (None, "%"):
            return format_quantity(100 * float(self.value), "%")
        return format_quantity(float(self.value), self.unit, noun=self.noun, target_unit=unit, hint=hint)

    def worked(self) -> str:
        """The step as worked arithmetic: `400 GB / 1.25 GB/s = 320 s`."""
        result = self.display()
        if not self.formula:
            return result
        return f"{render_formula(self.formula, self.bindings, self.units)} = {result}"

    def symbolic(self) -> str:
        """The formula in the names it is made of, as a textbook states it before the numbers go in:
        `checkpoint_bytes / link_Bps`."""
        return symbolic_formula(self.formula, self.units)


_FORMULA_FIELD = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


@lru_cache(maxsize=None)
def _formula_names(template: str) -> tuple[str, ...]:
    return tuple(_FORMULA_FIELD.findall(template))


_WORD_AFTER = re.compile(r"\s*([A-Za-zµ%][A-Za-zµ%0-9]*(?:/[A-Za-zµ]+)?)")


@lru_cache(maxsize=4096)
def _annotation_end(template: str, end: int, unit: str) -> int:
    """Where the unit written after the placeholder ending at `end` stops ("{x} GB/s", "{rate}
    req/s", "{n} copies"), or `end` if none follows: a worked formula shows the placeholder as a
    quantity in its own unit, so the written one is dropped."""
    m = _WORD_AFTER.match(template, end)
    if not m:
        return end
    word = m.group(1)
    if word == unit or "/" in word:
        return m.end()
    try:
        parse_unit(word)
    except Exception:  # noqa: BLE001 - not a unit: a word of the sentence
        return end
    return m.end()


def _pieces(template: str, units: Mapping[str, str]):
    """(text, name) pieces of a template: text runs and placeholders, written units dropped."""
    i = 0
    for m in _FORMULA_FIELD.finditer(template):
        if m.start() < i:
            continue
        yield template[i:m.start()], None
        name = m.group(1)
        yield "", name
        i = _annotation_end(template, m.end(), units.get(name, ""))
    yield template[i:], None


def render_formula(template: str, bindings: Mapping[str, Any], units: Mapping[str, str] | None = None) -> str:
    """The template with each placeholder's value in its unit ("1.9 ms", "141.1 GB")."""
    units = units or {}
    out = []
    for text, name in _pieces(template, units):
        out.append(text)
        if name is None:
            continue
        if name not in bindings:
            raise KeyError(f"formula names '{name}', which is neither a param nor an earlier step")
        value = bindings[name]
        if isinstance(value, bool):
            out.append("yes" if value else "no")
        elif isinstance(value, (int, float)):
            unit = units.get(name, "")
            if unit in ("×", "x"):  # a factor: "1.5×", not "1.5 × ×" beside a multiplication
                out.append(f"{format_number(value)}×")
            elif unit and unit != "1":
                try:
                    out.append(format_quantity(float(value), unit, hint=False))
                except Exception:  # noqa: BLE001 - a noun the registry does not know ("tokens")
                    out.append(f"{format_number(value)} {unit}")
            else:
                out.append(format_number(value))
        else:
            out.append(str(value))
    return "".join(out)


def symbolic_formula(template: str, units: Mapping[str, str] | None = None) -> str:
    """The template in its names, written units dropped: `weight_bytes / replica_hbm_Bps`."""
    return "".join(text if name is None else name for text, name in _pieces(template, units or {}))


@lru_cache(maxsize=None)
def _param_units(params_cls: type) -> tuple[tuple[str, str], ...]:
    """Each knob's unit as a formula reads it: a fraction shown as a percent is a plain number."""
    return tuple((name, "" if knob.percent else knob.unit) for name, knob in knobs_of(params_cls).items())


class Derivation:
    """Ordered steps of one solve, looked up by key.

    `step(...)` returns the value, so a solver reads as the arithmetic it performs:
        link = d.step("link_GBps", "Link in bytes", p.link_gbps / 8, "GB/s", formula="{link_gbps} Gb/s / 8")
    Formula placeholders resolve against the params and the steps recorded so far; an unknown
    name fails at solve time, which the contract test turns into a failing test.
    """

    def __new__(cls, params: BaseModel | None = None):
        if cls is Derivation and _VALUES_ONLY.get():
            return super().__new__(_ValuesOnly)
        return super().__new__(cls)

    def __init__(self, params: BaseModel | None = None) -> None:
        self.params = params
        # Each step is kept as its row of fields and made a Step only when someone reads more than
        # its value: a sweep solves a page hundreds of times per slider move and reads a few values
        # of each solve, and building every Step was a third of an LLM page's solve.
        self._rows: dict[str, tuple] = {}
        self._steps: dict[str, Step] = {}
        # The params' own fields (pydantic keeps them in __dict__; model_dump would copy them again).
        self._scope: dict[str, Any] = dict(params.__dict__) if params is not None else {}
        self._units: dict[str, str] = dict(_param_units(type(params))) if params is not None else {}
        self._checks: dict[str, tuple[bool, str | Callable[[], str]]] = {}

    def step(
        self,
        key: str,
        label: str,
        value: float | str,
        unit: str = "1",
        *,
        noun: str = "",
        formula: str = "",
        note: str = "",
        kind: str = "",
        percent: bool = False,
    ) -> Any:
        if key in self._rows:
            raise ValueError(f"step '{key}' recorded twice")
        if unit == "%":
            raise ValueError(f"step '{key}': a share is recorded as its fraction, with unit '1' and percent=True "
                             "(0.47, shown as 47%), never as the fraction x 100 in '%'")
        if percent and unit not in ("1", ""):
            raise ValueError(f"step '{key}': percent=True marks a fraction, so its unit is '1', not {unit!r}")
        if kind and kind not in STEP_KINDS:
            raise ValueError(f"step '{key}': kind must be one of {STEP_KINDS}, not {kind!r}")
        scope = self._scope
        if formula:  # fail now, not when someone opens the derivation
            for name in _formula_names(formula):
                if name not in scope:
                    raise KeyError(f"formula names '{name}', which is neither a param nor an earlier step")
        # Steps share one scope instead of each copying it (sweeps solve thousands of times per
        # rerun, and copying made solve quadratic in its steps). A formula only reads names that
        # existed when its step was recorded, and those never change, unless a step takes a
        # param's name: then the scope is copied first, so earlier steps keep the param's value.
        if key in scope:
            scope = self._scope = dict(scope)
        self._rows[key] = (label, value, unit, noun, formula, note, kind, scope, self._units, percent)
        scope[key] = value
        # what a worked formula shows beside this value: its unit, with the noun of a count or rate
        # ("552 sequences", "125 requests/s")
        self._units[key] = (noun if unit in ("1", "") else unit.replace("1/", f"{noun}/", 1)) if noun else unit
        return value

    def __getitem__(self, key: str) -> Step:
        made = self._steps.get(key)
        if made is not None:
            return made
        try:
            row = self._rows[key]
        except KeyError:
            raise KeyError(f"no step '{key}'; steps are: {', '.join(self._rows)}") from None
        made = self._steps[key] = Step(key, *row)
        return made

    def __contains__(self, key: object) -> bool:
        return key in self._rows

    def __iter__(self):
        return (self[key] for key in list(self._rows))

    def __len__(self) -> int:
        return len(self._rows)

    def keys(self) -> list[str]:
        return list(self._rows)

    def value(self, key: str) -> Any:
        row = self._rows.get(key)
        return self[key].value if row is None else row[1]

    # --- feasibility ---------------------------------------------------------------------------
    # A scenario every knob allows can still be physically impossible (prefill and decode needing
    # more than all of a replica's time, a gang split across a fraction of a GPU). `require`
    # declares such a condition; the page says so at the top and the mock never draws one. The
    # checks sit beside the steps, not among them, so the Step contract and every step key stay
    # as they were.

    def require(self, key: str, ok: bool, message: str | Callable[[], str]) -> bool:
        """Declare that `ok` must hold for the scenario to be possible. `message` says, in plain
        words with the numbers, what breaks when it does not ("This replica cannot do it: prefill
        and decode need 147% of its time."); a callable is formatted only when the check fails, so
        sweeps do not pay for sentences nobody reads. Returns `ok`."""
        if key in self._checks:
            raise ValueError(f"condition '{key}' declared twice")
        self._checks[key] = (bool(ok), message)
        return bool(ok)

    @property
    def conditions(self) -> list[str]:
        """Keys of every condition this solve declared, met or not."""
        return list(self._checks)

    @property
    def violations(self) -> list[tuple[str, str]]:
        """(key, message) for every declared condition the scenario breaks, in declaration order."""
        return [(key, message() if callable(message) else message)
                for key, (ok, message) in self._checks.items() if not ok]

    @property
    def feasible(self) -> bool:
        return all(ok for ok, _ in self._checks.values())


class _ValuesOnly(Derivation):
    """A derivation that keeps only each step's value: what a sweep reads. Charts solve a page
    hundreds of times per slider move for a few values each; labels, formulas and units of those
    solves are never read, and recording them was a third of the time. The page's own solve, the
    tests and the contract checks always record in full."""

    def __init__(self, params: BaseModel | None = None) -> None:
        self.params = params
        self._rows = {}
        self._steps = {}
        self._values: dict[str, Any] = {}
        self._checks = {}  # conditions are kept: a mock draw filters on them through the fast path
        self._wanted: set[str] | None = None
        wanted = _WANTED.get()
        if wanted is not None and wanted.owner is None and params is wanted.params and wanted.keys:
            wanted.owner = self  # the point's own derivation: one a solve builds inside it stays whole
            self._wanted = set(wanted.keys)

    def step(self, key: str, label: str, value: Any, unit: str = "1", **_: Any) -> Any:
        self._values[key] = value
        wanted = self._wanted
        if wanted is not None:
            wanted.discard(key)
            if not wanted:
                raise _Enough(self)
        return value

    def value(self, key: str) -> Any:
        try:
            return self._values[key]
        except KeyError:
            raise KeyError(f"no step '{key}'") from None

    def __getitem__(self, key: str) -> Step:
        return Step(key, key, self.value(key))

    def __contains__(self, key: object) -> bool:
        return key in self._values

    def __iter__(self):
        return (self[key] for key in list(self._values))

    def __len__(self) -> int:
        return len(self._values)

    def keys(self) -> list[str]:
        return list(self._values)


_VALUES_ONLY: contextvars.ContextVar[bool] = contextvars.ContextVar("values_only", default=False)


class _Enough(BaseException):  # not an Exception: no `except Exception` in a model may swallow it
    """Raised by a point's values-only derivation once it holds every value its sweep reads."""

    def __init__(self, derivation: "_ValuesOnly") -> None:
        self.derivation = derivation


@dataclass
class _Wanted:
    params: Any
    keys: frozenset[str]
    owner: Any = None


_WANTED: contextvars.ContextVar[_Wanted | None] = contextvars.ContextVar("wanted", default=None)


def solve_values(solve: Callable[[Any], Derivation], params: Any, keys: Iterable[str]) -> Derivation:
    """`solve(params)`, values only, stopped once every one of `keys` is recorded: a sweep reads a
    few steps of each point, often from the first half of the solve, and a step's value never
    changes after it is recorded (a key is recorded once). Only the derivation made for `params`
    itself stops; a solve that builds another one inside it gets that one whole. A key the solve
    never records leaves it to run to its end, as before."""
    token_values = _VALUES_ONLY.set(True)
    token = _WANTED.set(_Wanted(params, frozenset(keys)))
    try:
        return solve(params)
    except _Enough as enough:
        return enough.derivation
    finally:
        _WANTED.reset(token)
        _VALUES_ONLY.reset(token_values)


@contextlib.contextmanager
def values_only(on: bool = True):
    """Inside this block every Derivation a solve makes keeps values only (see _ValuesOnly).
    `values_only(False)` undoes it for a block: a derivation that is cached and read elsewhere (the
    accuracy page's, which a sweep's solve may be the first to ask for) must keep its labels and units."""
    token = _VALUES_ONLY.set(on)
    try:
        yield
    finally:
        _VALUES_ONLY.reset(token)


class Drill(StrictModel):
    """A "try first" question whose reference answer is a step of the solve.

    `unit` is the unit the answer is asked in, as the learner reads it ("ms", "GB", "sequences",
    "%", "×"; "" for a plain number). It is said once: the prompt does not repeat it, `question`
    appends it, a bare typed number is read in it, and the reference is shown in it."""

    key: str
    prompt: str
    phase: Phase
    unit: str
    tol: float = 0.05  # relative; full marks within tol, half within 3 x tol
    # Conditions the scenario must meet for the prompt to make sense, all of them: "name op value",
    # name a knob or a step, op one of == != < <= > >=, value a number, 'text', true/false or another
    # name ("stream_policy == 'cut'", "shortfall_at_peak_gpus > 0"). A round asks the drill only when
    # they hold (models.mock.drills_for), so it never asks how long until a stream is cut when the
    # drawn policy blocks, nor for a shortfall that is zero.
    when: tuple[str, ...] = ()

    @property
    def question(self) -> str:
        """The prompt as shown: "How long is one decode step? (ms)"."""
        return f"{self.prompt} ({self.unit})" if self.unit else self.prompt

    @model_validator(mode="after")
    def _tol_positive(self) -> "Drill":
        if not (0 < self.tol < 1):
            raise ValueError(f"drill '{self.key}': tol must be a fraction between 0 and 1")
        for condition in self.when:
            parse_condition(condition, f"drill '{self.key}'")
        return self

    def applies(self, lookup: Callable[[str], Any]) -> bool:
        """Do the `when` conditions hold, reading each name through `lookup` (a knob or a step)?"""
        return all(_holds(parse_condition(c), lookup) for c in self.when)


_CONDITION = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(==|!=|<=|>=|<|>)\s*(.+?)\s*$")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "==": lambda a, b: a == b, "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
}


@dataclass(frozen=True)
class Condition:
    name: str
    op: str
    value: Any  # a number, a string or a bool; or a _Ref to another name
    text: str


@dataclass(frozen=True)
class _Ref:
    name: str


@lru_cache(maxsize=None)
def parse_condition(text: str, where: str = "a condition") -> Condition:
    """`"name op value"` as a Condition; a ValueError in plain words for anything else."""
    m = _CONDITION.match(text) if isinstance(text, str) else None
    if not m:
        raise ValueError(f"{where}: the condition {text!r} is not 'name op value' with op one of "
                         "== != < <= > >= (e.g. \"stream_policy == 'cut'\" or \"shortfall_gpus > 0\")")
    name, op, raw = m.groups()
    value: Any
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
        value = raw[1:-1]
    elif raw in ("true", "false"):
        value = raw == "true"
    elif _NAME.match(raw):
        value = _Ref(raw)
    else:
        try:
            value = float(raw.replace("_", ""))
        except ValueError:
            raise ValueError(f"{where}: in {text!r}, {raw!r} is neither a number, a 'quoted text', "
                             "true/false nor a name") from None
    if isinstance(value, (str, bool)) and op not in ("==", "!="):
        raise ValueError(f"{where}: in {text!r}, text and true/false compare only with == or !=")
    return Condition(name, op, value, text)


def _holds(c: Condition, lookup: Callable[[str], Any]) -> bool:
    left = lookup(c.name)
    right = lookup(c.value.name) if isinstance(c.value, _Ref) else c.value
    if isinstance(left, str) != isinstance(right, str):
        return c.op == "!="  # a word against a number: never equal
    try:
        return bool(_COMPARE[c.op](left, right))
    except TypeError:
        return False


Solver = Callable[[Any], Derivation]
