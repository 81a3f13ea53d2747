"""Units: one small pint registry, decimal prefixes, and number formatting for people.

Pint's default registry reads several of this field's everyday units wrongly: `Gb` is a gilbert,
`b` a barn, `Gbps` a gigabaud, and bytes are dimensionless (so "5 GB" would score against
"8 GPUs"). We therefore build a registry from scratch with the handful of dimensions a design
round uses: time, information (bit, byte = 8 bit), power, compute (FLOP) and currency. Decimal
prefixes are SI (GB = 1e9 B); binary ones are spelled Ki/Mi/Gi/Ti (KiB = 1024 B).
"""

from __future__ import annotations

import math
import re
from functools import lru_cache

import pint

_DEFINITIONS = """
kilo- = 1e3 = k-
mega- = 1e6 = M-
giga- = 1e9 = G-
tera- = 1e12 = T-
peta- = 1e15 = P-
exa- = 1e18 = E-
milli- = 1e-3 = m-
micro- = 1e-6 = u- = µ-
nano- = 1e-9 = n-
kibi- = 2**10 = Ki-
mebi- = 2**20 = Mi-
gibi- = 2**30 = Gi-
tebi- = 2**40 = Ti-
pebi- = 2**50 = Pi-
second = [time] = s = sec
minute = 60 * second = min
hour = 60 * minute = h = hr
day = 24 * hour = d
week = 7 * day
year = 365 * day = yr
bit = [information] = b
byte = 8 * bit = B
bps = bit / second
Bps = byte / second
watt = [power] = W
watt_hour = watt * hour = Wh
flop = [compute] = FLOP
dollar = [currency] = USD = usd
percent = 0.01 = %
"""


@lru_cache(maxsize=1)
def ureg() -> pint.UnitRegistry:
    """The registry (built once, ~5 ms). Shared read-only by every session."""
    reg = pint.UnitRegistry(None)
    for line in _DEFINITIONS.strip().splitlines():
        reg.define(line)
    return reg


@lru_cache(maxsize=512)
def parse_unit(unit: str) -> pint.Unit:
    """A Step's unit string -> pint unit. "1" (or "") is a pure number."""
    text = unit.strip()
    if text in ("", "1"):
        return ureg().dimensionless
    return ureg().parse_units(text)


DIMENSION_NAMES = {
    "": "a plain number",
    "[time]": "a time",
    "[information]": "a data size",
    "[information]/[time]": "a data rate",
    "1/[time]": "a rate per second",
    "[power]": "a power",
    "[compute]": "an amount of compute (FLOP)",
    "[compute]/[time]": "a compute rate (FLOP/s)",
    "[currency]": "an amount of money",
    "[currency]/[time]": "money per unit of time",
    "[power]*[time]": "an energy",
}


def dimension_name(unit: pint.Unit | str) -> str:
    u = parse_unit(unit) if isinstance(unit, str) else unit
    dims = dict(u.dimensionality)

    def term(name: str, power: float) -> str:
        p = abs(power)
        return name if p == 1 else f"{name}^{p:g}"

    num = "*".join(term(k, v) for k, v in sorted(dims.items()) if v > 0)
    den = "*".join(term(k, v) for k, v in sorted(dims.items()) if v < 0)
    key = num if not den else f"{num or '1'}/{den}"
    name = DIMENSION_NAMES.get(key, f"a quantity in {u:~}")
    if key == "1/[time]" and u != parse_unit("1/s"):
        name = "a rate"
    return name


# ---------------------------------------------------------------------------------------------
# Formatting numbers for people: "64,000", "335.9", "1.25", "0.0125", "1.92e11".


_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def _scientific(x: float, sig: int) -> str:
    """"7.06 × 10¹⁰": how a person writes a power of ten (the answer reader reads it back)."""
    mantissa, exponent = f"{x:.{sig - 1}e}".split("e")
    mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa} × 10{str(int(exponent)).translate(_SUPERSCRIPT)}"


def format_number(x: float | int | None, sig: int = 4) -> str:
    if x is None:
        return "-"
    if isinstance(x, bool):
        return "yes" if x else "no"
    x = float(x)
    if math.isnan(x):
        return "n/a"
    if math.isinf(x):
        return "∞" if x > 0 else "-∞"
    ax = abs(x)
    if ax == 0:
        return "0"
    if ax >= 1e9:
        return _scientific(x, sig)
    if ax >= 1000:
        return f"{round(x):,}"
    if ax < 1e-4:
        return _scientific(x, sig)
    decimals = max(0, sig - 1 - int(math.floor(math.log10(ax))))
    text = f"{x:.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


# Large counts read with a magnitude word, as people say them: "70.6 B parameters", "1.2 T tokens".
_COUNT_WORDS = [(1e12, "T"), (1e9, "B")]


def format_count(x: float, sig: int = 4) -> str:
    ax = abs(x)
    for factor, word in _COUNT_WORDS:
        if factor <= ax < 1e15:
            return f"{format_number(x / factor, sig)} {word}"
    return format_number(x, sig)


_SCALABLE = re.compile(r"^(?P<base>B|bit|b|FLOP|W|Wh|USD|B/s|bit/s|b/s|FLOP/s)$")
# A step kept in a prefixed unit reads like one kept in the base: 80,000 kB is shown as 80 MB.
_PREFIXED_UNIT = re.compile(r"^(?P<prefix>k|M|G|T|P|E)(?P<base>B|FLOP|W|Wh|B/s|b/s|FLOP/s)$")
_PREFIX_FACTOR = {"k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}
_PREFIXES = [(1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")]


_MONEY = [(1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")]


def _money(value: float) -> str:
    """"$5,262", "$0.42", "$1.25M": whole dollars with separators up to a million, then a word."""
    sign = "-" if value < 0 else ""
    ax = abs(value)
    for factor, suffix in _MONEY:
        if ax >= factor and factor >= 1e6:
            return f"{sign}${format_number(ax / factor)}{suffix}"
    return f"{sign}${format_number(ax)}"


def _scaled(value: float, base: str) -> str:
    if base == "USD":
        return _money(value)
    ax = abs(value)
    if ax >= 1e21:  # past exa the prefix is noise: 3.6 × 10²⁵ FLOP, not 36,450,000 EFLOP
        return f"{format_number(value)} {base}"
    # Bytes stay exact below a megabyte: 327,680 B per token is a number people quote.
    floor = 1e6 if base[0] in "Bb" else 1e3
    for factor, prefix in _PREFIXES:
        if ax >= factor and ax >= floor:
            return f"{format_number(value / factor)} {prefix}{base}"
    return f"{format_number(value)} {base}"


def _time_hint(seconds: float) -> str:
    a = abs(seconds)
    if not math.isfinite(a):
        return ""
    if a >= 2 * 86400:
        return f"≈ {format_number(seconds / 86400, 3)} days"
    if a >= 2 * 3600:
        return f"≈ {format_number(seconds / 3600, 3)} h"
    if a >= 120:
        return f"≈ {format_number(seconds / 60, 3)} min"
    return ""


# Nouns whose singular is not the plural less its last letter (or that have none).
_SINGULAR = {"copies": "copy", "replicas": "replica", "bytes": "byte", "series": "series", "people": "person",
             "FLOPs": "FLOP", "data": "data", "days": "day"}


def singular(noun: str) -> str:
    """"1 GPU", "1 copy", "1 stage": a count of one takes the singular of its noun."""
    if not noun:
        return noun
    head, _, rest = noun.partition(" ")  # "sequences in flight": the first word carries the number
    if head in _SINGULAR:
        one = _SINGULAR[head]
    elif head.endswith("ies") and len(head) > 4:
        one = head[:-3] + "y"
    elif head.endswith(("tches", "rches", "shes", "xes", "sses")):  # batches, searches, flushes, boxes: not "batche"
        one = head[:-2]
    elif head.endswith("s") and not head.endswith("ss") and len(head) > 2:
        one = head[:-1]
    else:
        one = head
    return f"{one} {rest}".rstrip() if rest else one


def format_quantity(
    value: float, unit: str, noun: str = "", target_unit: str | None = None, hint: bool = True
) -> str:
    """A value in `unit` written for a person; `target_unit` forces a conversion ("min").

    `hint=False` drops the "(≈ 17.8 h)" gloss on long times, for places with little room.

    An infinite time (a wait past 100% busy, a break-even that never comes) reads "unbounded": a
    magnitude, so it fits a card and a sentence ("the p99 wait is unbounded"), with no unit to
    scale nor hint to gloss ("∞ s (≈ ∞ days)"). Other infinite quantities keep "∞" and their unit."""
    if math.isinf(value):
        infinite = _infinite(value, unit, noun, target_unit)
        if infinite:
            return infinite
    if target_unit:
        converted = (value * parse_unit(unit)).to(parse_unit(target_unit)).magnitude
        return f"{format_number(converted)}{'' if target_unit == '%' else ' '}{target_unit}"  # "96.67%"
    if unit == "%":
        return f"{format_number(value)}%"
    if unit == "d":
        return f"{format_number(value)} days"
    if unit == "h" and noun:  # GPU-hours: "2,949,120 GPU-h", not "2,949,120 h GPU"
        return f"{format_number(value)} {noun}-h"
    if unit in ("1", ""):
        return f"{format_count(value)} {singular(noun) if value == 1 else noun}".rstrip()
    if unit == "1/min":
        return f"{format_number(value)} {noun or 'per'}/min" if noun else f"{format_number(value)} /min"
    if unit == "1/s":
        return f"{format_number(value)} {noun or 'per'}/s" if noun else f"{format_number(value)} /s"
    if unit == "s":
        if 0 < abs(value) < 1:
            return f"{format_number(value * 1000)} ms"
        gloss = _time_hint(value) if hint else ""
        return f"{format_number(value)} s" + (f" ({gloss})" if gloss else "")
    if _SCALABLE.match(unit):
        return _scaled(value, unit)
    prefixed = _PREFIXED_UNIT.match(unit)
    if prefixed:
        return _scaled(value * _PREFIX_FACTOR[prefixed.group("prefix")], prefixed.group("base"))
    if unit == "ms":
        return format_quantity(value / 1000, "s", noun, hint=hint)
    if unit == "USD":
        return _scaled(value, "USD")
    return f"{format_number(value)} {unit}" + (f" {noun}" if noun else "")


def _is_time(unit: str) -> bool:
    try:
        return parse_unit(unit).dimensionality == parse_unit("s").dimensionality
    except Exception:  # noqa: BLE001 - a noun the registry does not know ("tokens"): not a time
        return False


def _infinite(value: float, unit: str, noun: str, target_unit: str | None) -> str:
    """How an infinite value reads, or "" where the general path already writes it plainly."""
    if unit == "h" and noun and not target_unit:  # GPU-hours: "∞ GPU-h", an amount, not a time
        return ""
    if value > 0 and _is_time(target_unit or unit):
        return "unbounded"
    if target_unit:
        return ""
    if unit == "USD":  # not "$∞T"
        return ("-" if value < 0 else "") + "$∞"
    if _SCALABLE.match(unit) or _PREFIXED_UNIT.match(unit):  # no prefix to pick: "∞ GB", not "∞ B"
        return f"{format_number(value)} {unit}"
    return ""


@lru_cache(maxsize=512)
def conversion_factor(from_unit: str, to_unit: str) -> float:
    """How many `to_unit` one `from_unit` is. Every unit here is a multiple of SI (no offsets), so a
    conversion is this factor: a chart converts hundreds of points per slider move, and pint's
    arithmetic on each was ~20 µs."""
    return (1.0 * parse_unit(from_unit)).to(parse_unit(to_unit)).magnitude


def convert(value: float, from_unit: str, to_unit: str) -> float:
    return value * conversion_factor(from_unit, to_unit)
