"""The knobs panel: one widget per Params field, bound to the URL so a link reopens the scenario.

Widget keys are `<slug>.<field>`; Streamlit uses the key as the query-parameter name. Streamlit
silently drops a bound parameter it cannot use, so we read the raw URL first and tell the user
what was ignored or clamped instead of hiding it.
"""

from __future__ import annotations

import math
import typing
from dataclasses import dataclass
from typing import Any, Literal

import streamlit as st
from pydantic import ValidationError

from models.core import Knob, knobs_of
from models.registry import Question
from models.units import format_number
from ui.safe import code_span

_MANTISSAS = (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8)


@dataclass(frozen=True)
class KnobSpec:
    field: str
    knob: Knob
    kind: Literal["int", "float", "bool", "choice"]
    default: Any
    choices: tuple[Any, ...] = ()

    def key(self, slug: str, variant: str = "") -> str:
        """`<slug>.<field>` for scenario A; `<slug>.B.<field>` for the compare view's B."""
        return f"{slug}.{variant + '.' if variant else ''}{self.field}"


def specs(params_cls: type) -> list[KnobSpec]:
    out = []
    knobs = knobs_of(params_cls)
    for name, info in params_cls.model_fields.items():
        if name not in knobs:
            continue
        ann = info.annotation
        if typing.get_origin(ann) is Literal:
            out.append(KnobSpec(name, knobs[name], "choice", info.default, typing.get_args(ann)))
        elif ann is bool:
            out.append(KnobSpec(name, knobs[name], "bool", info.default))
        elif ann is int:
            out.append(KnobSpec(name, knobs[name], "int", info.default))
        else:
            out.append(KnobSpec(name, knobs[name], "float", info.default))
    return out


def plain(v: float) -> str:
    """URL-friendly and readable: 2000, 0.25, 1e+06 (no thousands separators)."""
    return f"{v:g}"


def log_stops(spec: KnobSpec) -> list[float]:
    """Ratio-spaced slider positions (1-1.2-1.5-2-2.5-3-4-5-6-8 per decade) plus the default."""
    lo, hi = float(spec.knob.min), float(spec.knob.max)
    values = {lo, hi, float(spec.default)}
    for exp in range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1):
        for m in _MANTISSAS:
            v = float(f"{m * 10.0 ** exp:.6g}")
            if lo <= v <= hi:
                values.add(v)
    if spec.kind == "int":
        values = {float(round(v)) for v in values}
    return sorted(values)


def _to_widget(spec: KnobSpec, value: Any) -> Any:
    """Model value -> widget value (percent knobs show 0-100)."""
    if spec.kind == "float" and spec.knob.percent:
        return round(value * 100, 6)
    if spec.kind == "int":
        return int(value)
    if spec.kind == "float":
        return float(value)
    return value


def _from_widget(spec: KnobSpec, value: Any) -> Any:
    if spec.kind == "float" and spec.knob.percent:
        return value / 100
    if spec.kind == "int":
        return int(round(value))
    return value


def _nearest(stops: list[float], v: float) -> float:
    return min(stops, key=lambda s: abs(math.log(s) - math.log(v)) if s > 0 and v > 0 else abs(s - v))


def _widget_range(spec: KnobSpec) -> tuple[float, float]:
    lo, hi = spec.knob.min, spec.knob.max
    if spec.knob.percent:
        return lo * 100, hi * 100
    return lo, hi


# Parameters any page may carry (the profile, and those the instructor view adds).
GLOBAL_PARAMS = {"profile", "preset", "presetB", "present", "reveal", "compare", "drill"}


def unknown_params(known: set[str], allowed_prefixes: tuple[str, ...] = ()) -> list[str]:
    """A notice for every URL parameter this page does not understand."""
    notices = []
    for key in st.query_params.keys():
        if key in known or key in GLOBAL_PARAMS or key.startswith(allowed_prefixes or ("\0",)):
            continue
        notices.append(f"Ignored {code_span(key, 40)}: this page has no setting by that name.")
    return notices


def check_url(slug: str, spec_list: list[KnobSpec], variant: str = "") -> list[str]:
    """Validate raw URL values before the widgets see them; fix what can be fixed; say what."""
    notices = []
    qp = st.query_params
    for spec in spec_list:
        key = spec.key(slug, variant)
        if key not in qp:
            continue
        raw = qp.get(key, "")
        label = spec.knob.label
        if len(raw) > 40:
            default = spec.default if spec.kind in ("choice", "bool") else plain(_to_widget(spec, spec.default))
            notices.append(f"Ignored {code_span(key)}: the value is too long; using {label} = {code_span(str(default))}.")
            continue
        if spec.kind == "choice":
            if raw not in [str(c) for c in spec.choices]:
                notices.append(f"Ignored {code_span(f'{key}={raw}')}: {label} is one of {', '.join(map(str, spec.choices))}.")
            continue
        if spec.kind == "bool":
            if raw.lower() not in ("true", "false"):
                notices.append(f"Ignored {code_span(f'{key}={raw}')}: {label} is true or false.")
            continue
        try:
            v = float(raw)
            if not math.isfinite(v):
                raise ValueError
        except ValueError:
            notices.append(f"Ignored {code_span(f'{key}={raw}')}: not a number; using the default for {label}.")
            continue
        lo, hi = _widget_range(spec)
        fixed = min(max(v, lo), hi)
        if spec.knob.log:
            fixed = _nearest([_to_widget(spec, s) for s in log_stops(spec)], fixed)
        elif spec.kind == "int":
            fixed = round(fixed)
        if fixed != v:
            why = "outside" if not (lo <= v <= hi) else "between the slider's stops"
            notices.append(
                f"{code_span(f'{key}={raw}')} is {why} the range {plain(lo)}–{plain(hi)} {spec.knob.unit}; "
                f"using {plain(fixed)}."
            )
            st.session_state[key] = int(fixed) if spec.kind == "int" else float(fixed)
    return notices


def _widget(spec: KnobSpec, slug: str, variant: str = "") -> Any:
    """The knob's widget, its default the seed scenario's value.

    The default goes in as the widget's own `value`, not through session state: Streamlit drops
    a URL-bound value equal to the widget's default, so with the slider's minimum as its default
    a link (or a drag) to a knob's minimum silently reopened the seed value. Now only the seed
    value itself is left out of the URL, which keeps links short: they carry what differs."""
    knob = spec.knob
    key = spec.key(slug, variant)
    unit = "%" if knob.percent else knob.unit
    label = f"{knob.label} ({unit})" if unit else knob.label
    default = _to_widget(spec, spec.default)
    common = dict(key=key, help=knob.help or None, bind="query-params")
    if spec.kind == "bool":
        return st.toggle(label, value=bool(default), **common)
    if spec.kind == "choice":
        return st.selectbox(label, spec.choices, index=spec.choices.index(spec.default), **common)
    if knob.log:
        stops = [_to_widget(spec, s) for s in log_stops(spec)]
        if key in st.session_state and st.session_state[key] not in stops:
            st.session_state[key] = _nearest(stops, st.session_state[key])
        # The options are the shown text, and the address carries that text: a "%" on each stop would
        # put "0.2%" in a link (tests/e2e/test_knob_roundtrip.py). The label says "(%)".
        return st.select_slider(label, options=stops, value=_nearest(stops, default), format_func=plain, **common)
    lo, hi = _widget_range(spec)
    if spec.kind == "int":
        return st.slider(label, int(lo), int(hi), value=int(default), step=int(knob.step or 1), **common)
    step = knob.step * 100 if (knob.step and knob.percent) else knob.step
    fmt = "%.0f%%" if knob.percent else None
    return st.slider(label, float(lo), float(hi), value=float(default), step=float(step) if step else None,
                     format=fmt, **common)


def shown(spec: KnobSpec, values: dict[str, Any]) -> bool:
    """A knob with `only_if=(field, value)` is drawn only while that earlier knob has that value."""
    condition = spec.knob.only_if
    return condition is None or values.get(condition[0]) == condition[1]


def _apply_one(spec: KnobSpec, slug: str, variant: str, value: Any) -> None:
    widget_value = _to_widget(spec, value)
    if spec.knob.log and spec.kind in ("int", "float"):
        widget_value = _nearest([_to_widget(spec, v) for v in log_stops(spec)], widget_value)
    st.session_state[spec.key(slug, variant)] = widget_value


def _apply(slug: str, spec_list: list[KnobSpec], variant: str, values: dict) -> None:
    """Set every knob to `values` (the seed scenario's default where a value is missing).

    A callback: it runs before the script, the only moment a widget's state may be rewritten."""
    for spec in spec_list:
        _apply_one(spec, slug, variant, values.get(spec.field, spec.default))
    st.session_state.pop(f"{slug}.{variant}_url_notices", None)


def preset_key(variant: str) -> str:
    return "preset" + variant


def _on_preset(slug: str, spec_list: list[KnobSpec], variant: str, presets: dict[str, dict]) -> None:
    name = st.session_state.get(preset_key(variant))
    _apply(slug, spec_list, variant, presets.get(name, {}))


def params_from_state(question: Question, variant: str = "") -> Any:
    """The scenario the knobs will return this run, read from their widget state before they are
    drawn, or None where it cannot be known yet (a first run, a URL value still to be checked).

    On a knob move Streamlit has already put the new value in session state when the run starts,
    so the metric cards can be drawn before the knob panel: the browser shows the moved number
    after a handful of messages instead of after the panel's 20-40 widgets (bench/browser.py).
    knob_panel's result stays the truth; the page redraws the cards if the two differ."""
    state = st.session_state
    values: dict[str, Any] = {}
    for spec in specs(question.Params):
        key = spec.key(question.slug, variant)
        if not shown(spec, values):
            values[spec.field] = spec.default
            continue
        if key not in state:
            return None
        values[spec.field] = _from_widget(spec, state[key])
    try:
        return question.Params(**values)
    except (ValidationError, TypeError, ValueError):
        return None


def knob_panel(question: Question, container: Any = None, variant: str = "",
               presets: dict[str, dict] | None = None, title: str = "Scenario",
               notices: Any = None, knobs_folded: bool = False, about=None) -> Any:
    """Render the knobs for `question` into `container` and return a validated Params instance.

    `presets` maps a preset name to knob values ("Seed scenario" first, with no values);
    `notices` is where what the URL asked for but could not have is announced; `knobs_folded`
    keeps the preset in view and the knobs in a pop-over (the presenter's screen); `about(name)`
    gives the line that says what a preset teaches, shown under the chooser."""
    from models.content import SEED_PRESET

    container = container if container is not None else st.container()
    notices = notices if notices is not None else st.container()
    spec_list = specs(question.Params)
    slug = question.slug
    presets = presets or {SEED_PRESET: {}}
    notice_key = f"{slug}.{variant}_url_notices"
    fresh = check_url(slug, spec_list, variant)
    pkey = preset_key(variant)
    raw_preset = st.query_params.get(pkey)
    if raw_preset is not None and raw_preset not in presets:
        fresh.append(f"Ignored {code_span(f'{pkey}={raw_preset}')}: this page has no preset by that name.")
    if fresh:
        st.session_state[notice_key] = fresh
    applied_key = f"{slug}.{variant}_preset_from_url"
    if raw_preset in presets and not st.session_state.get(applied_key):
        # A link names a preset: it sets the knobs the link does not set itself, so the link's
        # own knob values (the exact screen) still win.
        for spec in spec_list:
            if spec.key(slug, variant) not in st.query_params and spec.field in presets[raw_preset]:
                _apply_one(spec, slug, variant, presets[raw_preset][spec.field])
    st.session_state[applied_key] = True
    values = {}
    with container:
        if knobs_folded:  # one row: the preset, and the knobs in a pop-over the presenter opens
            preset_col, knobs_col = st.columns([3, 1], vertical_alignment="bottom")
        else:
            st.markdown(f"#### {title}")
            preset_col = knobs_col = st.container()
        chosen_name = preset_col.selectbox(
            "Preset" if not knobs_folded else f"{title}: preset", list(presets), key=pkey, bind="query-params",
            on_change=_on_preset, args=(slug, spec_list, variant, presets),
            help="A named scenario sets every knob; move any knob afterwards as you like.")
        line = about(chosen_name) if about else ""
        if line:
            preset_col.caption(line)
        knob_box = knobs_col.popover("Knobs", icon=":material/tune:", width="stretch") if knobs_folded else knobs_col
        with knob_box:
            folds: dict[str, Any] = {}
            for spec in [s for s in spec_list if not s.knob.fold] + [s for s in spec_list if s.knob.fold]:
                if not shown(spec, values):
                    values[spec.field] = spec.default  # a custom part's number while a catalog part is picked
                    continue
                if spec.knob.fold:
                    if spec.knob.fold not in folds:
                        folds[spec.knob.fold] = st.expander(spec.knob.fold)
                    with folds[spec.knob.fold]:
                        values[spec.field] = _from_widget(spec, _widget(spec, slug, variant))
                    continue
                values[spec.field] = _from_widget(spec, _widget(spec, slug, variant))
            chosen = presets.get(chosen_name, {})
            expected = {spec.field: chosen.get(spec.field, spec.default) for spec in spec_list}
            if any(_differs(values[f], v) for f, v in expected.items()):
                st.caption("Knobs moved since the preset was chosen.")
            st.button("Reset to the seed scenario", key=f"{slug}.{variant}_reset", width="stretch",
                      on_click=_reset, args=(slug, spec_list, variant))
    for notice in st.session_state.get(notice_key, []):
        notices.info(notice, icon=":material/link:")
    try:
        return question.Params(**values)
    except ValidationError as e:
        msgs = "; ".join(err["msg"].removeprefix("Value error, ") for err in e.errors())
        notices.warning(f"That scenario is not valid ({msgs}). Showing the seed scenario instead.")
        return question.Params()


def _differs(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return not math.isclose(float(a), float(b), rel_tol=0.02, abs_tol=1e-9)  # log stops snap values
    return a != b


def _reset(slug: str, spec_list: list[KnobSpec], variant: str = "") -> None:
    from models.content import SEED_PRESET

    _apply(slug, spec_list, variant, {})
    st.session_state[preset_key(variant)] = SEED_PRESET
