"""A step's formula, evaluated: the template with each placeholder's value and unit put in.

A formula such as "{weight_bytes} B / {replica_hbm_Bps} B/s" is read as arithmetic on quantities:
each `{name}` becomes the param's or the earlier step's value in its own unit, a unit written right
after a placeholder only says what that placeholder is (it must agree, it does not multiply), a
number may carry a unit ("2 B", "6 µs"), and × · − are the operators they look like. The result,
converted to the step's unit, must equal the step's value: so a formula is the computation that
produced the number, not a second copy of it that may drift.

    evaluate(step) -> float in the step's unit, or raises FormulaError saying what it cannot read

Steps whose value is not arithmetic (a lookup, a verdict, an integer search) say so with
`kind=` on the step, and are not evaluated.
"""

from __future__ import annotations

import ast
import math
import operator
import re
from functools import lru_cache
from typing import Any, Mapping

from models.units import parse_unit, ureg

from models.core import STEP_KINDS

NON_ARITHMETIC = tuple(k for k in STEP_KINDS if k)


class FormulaError(ValueError):
    """The formula is not an expression this evaluator reads (words, a notation it lacks)."""


_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
# A unit right after a placeholder: letters, µ, %, / and ^ digits, e.g. "GB/s", "FLOP/s", "µs", "%".
# Several words are one noun ("8 KV heads", "{n} GPUs per node"); a unit may have a per-part ("GB/s").
_UNIT_AFTER = re.compile(
    r"\s*((?:[A-Za-zµ%][A-Za-zµ%-]*(?:\*\*\d+)?)(?: (?:[A-Za-z][A-Za-z-]*))*(?:\s*/\s*[A-Za-zµ]+(?:\*\*\d+)?)*)"
    r"(?![A-Za-z0-9_(])")
# "(K and V)", "(given)": words in brackets are a comment, not arithmetic.
_COMMENT = re.compile(r"\s*\((?:[A-Za-z][A-Za-z ,.'-]*)\)")
# 1,000 and 2,592,000 (thousands separators), 0.5, 1e-6; "0, x" is a zero and a comma.
_NUMBER = re.compile(r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?")
_SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")
_FUNCTIONS = {"min": min, "max": max}
def _whole(x: float) -> int | None:
    """The whole number x is, give or take float round-off: the code rounds with the same slack
    (floor(x + 1e-9), ceil(x − 1e-9)), so 630.0000000001 replicas is 630, in code and formula."""
    n = round(x)
    return n if abs(x - n) <= 1e-9 * max(1.0, abs(x)) else None


def _floor(x: float) -> int:
    n = _whole(x)
    return math.floor(x) if n is None else n


def _ceil(x: float) -> int:
    n = _whole(x)
    return math.ceil(x) if n is None else n


_MAGNITUDE_FUNCTIONS = {"floor": _floor, "ceil": _ceil, "round": round, "sqrt": math.sqrt, "log": math.log,
                        "ln": math.log, "log2": math.log2, "log10": math.log10, "exp": math.exp}
_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.Pow: operator.pow}


_MULTIPLIERS = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}


def formula_unit(unit: str) -> str:
    """A step's or knob's unit as the evaluator reads it: what pint knows, with a count's noun read
    as a plain number ("tokens" -> "1", "req/s" -> "1/s", "GPU-h" stays an error: write "h")."""
    unit = (unit or "1").strip()
    if _is_unit(unit):
        return unit
    parts = re.split(r"(/|\*|·)", unit)
    return "".join(p if p in "/*·" or _is_unit(p.strip()) else "1" for p in parts).replace("·", "*")


def _unit_of(name: str, units: Mapping[str, str]) -> str:
    return formula_unit(units.get(name, "1"))


@lru_cache(maxsize=2048)
def _is_unit(text: str) -> bool:
    try:
        parse_unit(text)
    except Exception:  # noqa: BLE001 - pint raises several kinds for a non-unit
        return False
    return True


def _to_python(template: str, units: Mapping[str, str]) -> tuple[str, dict[str, str]]:
    """The template as a Python expression over names, and the units the placeholders carry.

    "{a} GB / {b} GB/s × 2 B" -> "(_v_a) / (_v_b) * (2 * _u_0)", with `_u_0` the byte."""
    out: list[str] = []
    literal_units: dict[str, str] = {}
    i = 0
    text = (template.replace("×", "*").replace("·", "*").replace("−", "-").replace("^", "**").replace("÷", "/")
            .replace("⌈", "ceil(").replace("⌉", ")").replace("⌊", "floor(").replace("⌋", ")").replace("$", ""))
    text = re.sub(r"[⁰¹²³⁴⁵⁶⁷⁸⁹⁻]+", lambda m: "**" + m.group(0).translate(_SUPERSCRIPTS), text)
    text = _COMMENT.sub("", text)
    while i < len(text):
        m = _PLACEHOLDER.match(text, i)
        if m:
            name = m.group(1)
            out.append(f"_v_{name}")
            i = m.end()
            after = _UNIT_AFTER.match(text, i)
            if after and after.group(1) in _MULTIPLIERS:  # "{params_b} billion" is one number
                out[-1] = f"({out[-1]} * {_MULTIPLIERS[after.group(1)]!r})"
                i = after.end()
            elif after and not _is_function(after.group(1), text, after.end()):
                said, have = parse_unit(formula_unit(after.group(1))), parse_unit(_unit_of(name, units))
                if said.dimensionality != have.dimensionality:
                    raise FormulaError(f"{{{name}}} is in {units.get(name, '1')}, the formula calls it {after.group(1)}")
                i = after.end()
            continue
        number = _NUMBER.match(text, i)
        if number and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            out.append(number.group(0).replace(",", ""))
            i = number.end()
            after = _UNIT_AFTER.match(text, i)
            if after and after.group(1) in _MULTIPLIERS:  # "x / 1 million" is x / 1e6
                out[-1] = f"({out[-1]} * {_MULTIPLIERS[after.group(1)]!r})"
                i = after.end()
            elif after and not _is_function(after.group(1), text, after.end()):
                # "2 FLOP" binds tighter than the operators around it: "x / 2 FLOP" is x / (2 FLOP)
                key = f"_u_{len(literal_units)}"
                literal_units[key] = formula_unit(after.group(1))
                out[-1] = f"({out[-1]} * {key})"
                i = after.end()
            continue
        out.append(text[i])
        i += 1
    return "".join(out), literal_units


def _is_function(word: str, text: str = "", end: int = 0) -> bool:
    """A function name, when a bracket follows it ("min(" is a function, "5 min" a unit)."""
    return (word in _FUNCTIONS or word in _MAGNITUDE_FUNCTIONS) and text[end:].lstrip().startswith("(")


def _eval(node: ast.AST, env: Mapping[str, Any]) -> Any:
    if isinstance(node, ast.Expression):
        return _eval(node.body, env)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in env:
            raise FormulaError(f"'{node.id}' is a word, not a quantity")
        return env[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _BINARY[type(node.op)](_eval(node.left, env), _eval(node.right, env))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _eval(node.operand, env)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        args = [_eval(a, env) for a in node.args]
        if node.func.id in _FUNCTIONS:
            # a bare 0 beside quantities is zero of their unit: max(0, x − y) for a time is a time
            unit = next((a.units for a in args if hasattr(a, "units")), None)
            if unit is not None:
                args = [a * unit if not hasattr(a, "units") and a == 0 else a for a in args]
            return _FUNCTIONS[node.func.id](*args)
        if node.func.id == "sqrt" and len(args) == 1:
            return args[0] ** 0.5  # a quantity's root keeps its units (the square root of s² is s)
        if node.func.id in _MAGNITUDE_FUNCTIONS and len(args) == 1:
            x = args[0]
            if hasattr(x, "to"):
                x = x.to("dimensionless").magnitude
            return _MAGNITUDE_FUNCTIONS[node.func.id](x)
    raise FormulaError(f"cannot evaluate {ast.dump(node)[:60]}")


def evaluate(template: str, bindings: Mapping[str, Any], units: Mapping[str, str], unit: str) -> float:
    """The template's value in `unit`, each placeholder taking its binding in its unit."""
    expression, literal_units = _to_python(template, units)
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as e:
        raise FormulaError(f"not an expression: {expression.strip()[:80]}") from e
    reg = ureg()
    env: dict[str, Any] = {k: reg.Quantity(1, parse_unit(u)) for k, u in literal_units.items()}
    for name in _PLACEHOLDER.findall(template):
        value = bindings[name]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise FormulaError(f"{{{name}}} is not a number ({value!r})")
        env[f"_v_{name}"] = reg.Quantity(value, parse_unit(_unit_of(name, units)))
    try:
        result = _eval(tree, env)
    except FormulaError:
        raise
    except (ArithmeticError, TypeError, ValueError) as e:  # pint's unit clashes are ValueErrors
        raise FormulaError(f"{type(e).__name__}: {e}") from e
    if not hasattr(result, "to"):
        result = reg.Quantity(result, "dimensionless")
    try:
        return float(result.to(parse_unit(unit or "1")).magnitude)
    except Exception as e:  # noqa: BLE001 - pint's DimensionalityError and friends
        raise FormulaError(f"the formula gives {result.units:~}, the step is in {unit}") from e
