"""Typed answers: free text -> a number in the drill's unit, and a score against a Step.

People type answers the way they write on a whiteboard: `320`, `5.3 min`, `~75 minutes`,
`1,280`, `1.2k req/s`, `3e5`, `2.5×10^4`, `14 MW`, `10 Gbps`, `$1.2M`, `60%`. A small front end
turns that into something our pint registry (`models.units.ureg`) reads, then pint converts it
into the drill's unit. Pint never sees raw user text: every unit string handed to it is built
here from an alias table, so its defaults (Gb = gilbert, Gbps = gigabaud, ...) cannot leak in.

Reading rules (the ambiguous cases are decided here, once):

Numbers
  * A bare number (optionally with a magnitude word) is in the unit the prompt asks for (the
    drill's `unit`, "ms" in "How long is one decode step? (ms)"): `19.8` asked in ms for a step
    kept in seconds is 0.0198 s. Without an asked unit it is in the expected (step's) unit.
  * `1,280` and `1 280` (space or thin space) and `1_280` are thousands separators: a comma or
    space followed by exactly three digits, first group 1-3 digits not starting with 0, the same
    separator throughout. So `1,280` is always 1280.
  * A European decimal comma is accepted only where it cannot be a thousands separator:
    `1,5` = 1.5, `12,75` = 12.75, `0,125` = 0.125, `3,14159` = 3.14159.
  * Scientific forms: `3e5`, `1.2E3`, `2.5x10^4`, `2.5×10^4`, `2.5·10⁴`, `10^9`, `2^30`.
  * Hedges are ignored: leading `=`, `~`, `≈`, `about`, `approx(.)`, `approximately`, `around`,
    `roughly`, `circa`, `ca.`; trailing `ish`, `-ish`, `or so`, a final `.`, `?` or `!`.
  * One number only: `300-350 s` asks for a single number. NaN and infinities are refused.

Magnitude words right after the number multiply it: `k`/`K`/`thousand` = 1e3, `M`/`million`/`mn`
= 1e6, `bn`/`billion` = 1e9, `T`/`trillion` = 1e12. They always multiply the number, whatever
the expected unit: `500M` with expected GB is 5e8 GB (write `500 MB` for megabytes).
  * `B` (and `b`) is billion only when the expected unit has no data in it; when a data size or a
    data rate is expected, `3B` is 3 bytes (`3b` 3 bits). `bn` is always billion.
  * Lower-case `m` alone is million (`$1.2m`, `5m users`), except when a time is expected: there
    `5 m` could be minutes or milliseconds, so the parser asks for `min` or `ms`. `m` is never
    read as minutes.

Units
  * Bits versus bytes: `B` is a byte. A prefix in exact upper case with a lower-case `b` is bits
    (`Gb`, `Mb`, `Tb`, `Kb` = kilobit); an all-lower-case size is bytes, because that is how
    people type lazily (`gb`, `mb`, `tb`, `kb` = bytes). `KB` and `kB` are 1000 B; binary sizes
    are `KiB`, `MiB`, `GiB`, `TiB` (`gib` = GiB too). `bit`/`bits` are bits, `byte(s)` bytes.
  * Rates: `GB/s`, `GBps` = bytes per second; `Gb/s`, `Gbps`, `Gbit/s`, and lower-case `gbps`
    (networking convention) = bits per second; `gb/s` follows the size rule (bytes).
  * For watts, watt-hours, FLOP and byte sizes the prefix `m` means mega (`mw` = MW, `mb` = MB):
    milli-anything except milliseconds never comes up in a design round.
  * Compute: `FLOP`, `FLOPs` (lower-case s: a plural) are amounts; `FLOPS`, `TFLOPS` (capital S)
    are per second, strictly: FLOPs versus FLOPS is a classic probe, so `2 PFLOPS` is refused
    when an amount is expected. All-lower-case `flops`, `tflops`, `teraflops` are per second,
    but when an amount of FLOP is expected they read as the plural, because that is what
    someone typing `1.92e11 flops` for an amount means.
  * Lower-case `w` alone is watts or weeks, whichever the expected unit is.
  * `req/s`, `rps`, `qps`, `tps`, `Hz`, `/s`, `per second` are per second; `rpm` per minute.
  * Count nouns are dimensionless and dropped (`8 GPUs`, `14k GPUs`, `250 requests/s`,
    `1.7M tok/s`, `31x`, `80 GB/GPU`, `$2/GPU-hour`). A number with only a count noun is a plain
    number, so `8 GPUs` is refused when a time is expected.
  * `%`, `percent`, `pct` are hundredths: `60%` = 0.6 when a plain number is expected.
  * Money: `$500`, `$1.2M`, `1.2M USD`, `500 dollars`. Months are not a unit we know.

The parser never raises: every failure is a `Parsed(ok=False, message=...)` in plain words.
"""

from __future__ import annotations

import itertools
import math
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from models.core import Step
from models.units import dimension_name, format_count, format_number, format_quantity, parse_unit

MAX_CHARS = 200
_INTERNAL = "Could not read that answer (an internal error); please report it."


@dataclass(frozen=True)
class Parsed:
    ok: bool
    value: float | None  # magnitude in `unit` (the expected unit) when ok
    unit: str  # the expected unit
    typed_unit: str  # the unit as understood ("min", "Gb/s", "%"); "" for a bare number
    message: str  # why it failed (when not ok), or how it was read (when ok)


@dataclass(frozen=True)
class Score:
    fraction: float  # 1.0, 0.5 or 0.0
    parsed: Parsed
    reference: float  # the step's value; nan for a text-valued step (show step.display())
    reference_unit: str
    relative_error: float | None  # |a - r| / |r|; None when unparsed, r == 0, or text-valued
    message: str


class _Fail(Exception):
    """A parse failure carrying the sentence to show; caught inside this module only."""


# ---------------------------------------------------------------------------------------------
# Normalisation and hedges

# Superscripts must be rewritten before NFKC, which would turn "10⁴" into "104".
_SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺", "0123456789-+")
_SUPERSCRIPT_RUN = re.compile("[⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺]+")
# Characters NFKC leaves alone but people use for minus, division and multiplication.
_CHARS = str.maketrans({"\u2212": "-", "\u2215": "/", "\u2044": "/", "\u22c5": "·", "\u2219": "·"})

_LEAD_HEDGE = re.compile(
    r"^(?:=|:|~=?|≈|≃|≅|approx(?:imately|\.)?|about|around|roughly|circa|ca\.|ca(?=\s)|"
    r"nearly|almost|maybe|estimated|est\.)\s*",
    re.IGNORECASE,
)
_TRAIL_HEDGE = re.compile(r"(?:\s*-?ish|\s+approx\.?|\s+or so|\s+roughly|\s*[.?!])$", re.IGNORECASE)
_INNER_ISH = re.compile(r"(?<=[0-9%])-?ish(?![A-Za-z])", re.IGNORECASE)


def _normalize(raw: str) -> str:
    text = _SUPERSCRIPT_RUN.sub(lambda m: "^" + m.group(0).translate(_SUPERSCRIPTS), raw)
    text = unicodedata.normalize("NFKC", text).translate(_CHARS)
    return re.sub(r"\s+", " ", text).strip()


def _strip_hedges(text: str) -> str:
    for _ in range(8):  # a handful of passes covers "~ about 75ish minutes."; bounded on purpose
        before = text
        text = _LEAD_HEDGE.sub("", text).strip()
        text = _TRAIL_HEDGE.sub("", text).strip()
        text = _INNER_ISH.sub("", text).strip()
        if text == before:
            break
    return text


# ---------------------------------------------------------------------------------------------
# The number

_LEAD = re.compile(r"^(?P<s1>[+-]?)\s*(?P<cur>\$|US\$|USD(?=[\s\d+-]))?\s*(?P<s2>[+-]?)\s*", re.I)
_NUMBER = re.compile(
    r"""
    (?:
        (?P<pow_base>[0-9]+)\s*(?:\^|\*\*)\s*(?P<pow_exp>[+-]?[0-9]+)             # 10^9, 2^30
      | (?P<mant>
            [1-9][0-9]{0,2}(?P<sep>[,_ ])[0-9]{3}(?:(?P=sep)[0-9]{3})*(?![0-9])   # 1,280  1 280
            (?:\.[0-9]*)?
          | (?P<dc_int>[0-9]+),(?P<dc_frac>[0-9]{1,2}|[0-9]{4,})(?![0-9.,])        # 1,5 (decimal)
          | (?P<dc0_int>0),(?P<dc0_frac>[0-9]+)(?![0-9.,])                         # 0,125
          | [0-9]+(?:\.[0-9]*)? | \.[0-9]+                                         # 320  5.3  .5
        )
        (?:
            [eE](?P<exp>[+-]?[0-9]+)                                               # 3e5
          | \s*[x×*·]\s*10\s*(?:\^|\*\*)\s*(?P<exp10>[+-]?[0-9]+)                  # 2.5×10^4
        )?
    )
    """,
    re.VERBOSE,
)
_RANGE = re.compile(r"^(?:-|–|—|to\b|\.\.)\s*[$]?[0-9]", re.IGNORECASE)
_NONFINITE = re.compile(r"^[+-]?\$?\s*(?:nan|inf|infinity|∞)$", re.IGNORECASE)


def _read_number(text: str) -> tuple[float, str, bool]:
    """(value, rest of the text, whether a leading currency sign was seen)."""
    if _NONFINITE.match(text):
        raise _Fail(f"'{text}' is not a finite number.")
    lead = _LEAD.match(text)
    assert lead is not None  # every part of _LEAD is optional
    if lead.group("s1") and lead.group("s2"):
        raise _Fail(f"Could not read a number in '{text}'.")
    negative = (lead.group("s1") or lead.group("s2")) == "-"
    m = _NUMBER.match(text, lead.end())
    if m is None:
        raise _Fail(f"Could not read a number in '{text}'.")
    if m.group("pow_base") is not None:
        try:
            value = math.pow(float(m.group("pow_base")), float(m.group("pow_exp")))
        except (OverflowError, ValueError):
            value = math.inf
    else:
        if m.group("dc_int") is not None:
            mant = f"{m.group('dc_int')}.{m.group('dc_frac')}"
        elif m.group("dc0_int") is not None:
            mant = f"0.{m.group('dc0_frac')}"
        else:
            sep = m.group("sep")
            mant = m.group("mant").replace(sep, "") if sep else m.group("mant")
        exp = m.group("exp") or m.group("exp10") or "0"
        value = float(f"{mant}e{exp}")  # float() saturates to inf instead of raising
    if not math.isfinite(value):
        raise _Fail(f"'{text}' is too large to be a finite number.")
    rest = text[m.end():].strip()
    if re.match(r"^[,.][0-9]", rest):
        raise _Fail(f"Could not read the number in '{text}' (check the commas and dots).")
    if _RANGE.match(rest):
        raise _Fail(f"Give one number, not a range: '{text}'.")
    return (-value if negative else value), rest, lead.group("cur") is not None


# ---------------------------------------------------------------------------------------------
# Magnitude words, count nouns and unit tokens

_MAGNITUDE_WORDS = {
    "hundred": 1e2, "thousand": 1e3, "million": 1e6, "mn": 1e6, "mil": 1e6, "mio": 1e6,
    "billion": 1e9, "bn": 1e9, "trillion": 1e12, "tn": 1e12,
}  # case-insensitive
_MAGNITUDE_LETTERS = {"k": 1e3, "K": 1e3, "M": 1e6, "T": 1e12}  # case-sensitive
_BILLION_LETTERS = ("B", "b")  # billion unless a data size/rate is expected (then byte/bit)

_NOUNS = {
    "1", "x", "×", "gpu", "node", "host", "replica", "server", "rack", "switch", "level", "shard",
    "partition", "request", "req", "token", "tok", "user", "sequence", "seq", "job", "copy",
    "chunk", "pod", "expert", "machine", "instance", "worker", "query", "item", "event",
    "message", "msg", "op", "accelerator", "chip", "device", "card", "layer", "step", "batch",
    "sample", "image", "record", "row", "file", "object", "key", "link", "port", "connection",
    "client", "customer", "region", "zone", "datacenter", "dc", "cluster", "core", "times",
    "each", "total", "write", "read", "transaction", "txn", "call", "hop", "stage", "round",
    "stream", "account", "reply", "replies", "generation", "session", "conversation", "team",
    "tenant", "adapter", "variant", "prompt", "eval", "checkpoint", "vector", "pair", "input",
    "output", "series", "span", "heartbeat", "drill", "attempt", "sandbox", "route", "entry", "slot",
    "debit", "interruption", "diff", "broker", "run", "micro", "parameter", "param", "block",
    "page", "expert", "shard", "trace", "log", "alert", "rack", "flow", "commit",
}


def _is_noun(token: str) -> bool:
    t = token.lower()
    if t in _NOUNS:
        return True
    # Plurals: gpus, switches, copies, queries.
    return (
        (t.endswith("s") and t[:-1] in _NOUNS)
        or (t.endswith("es") and t[:-2] in _NOUNS)
        or (t.endswith("ies") and t[:-3] + "y" in _NOUNS)
    )


_ALIASES = {  # lower-case token -> registry expression
    **dict.fromkeys(["s", "sec", "secs", "second", "seconds"], "s"),
    **dict.fromkeys(["ms", "msec", "msecs", "millisecond", "milliseconds"], "ms"),
    **dict.fromkeys(["us", "µs", "μs", "usec", "usecs", "microsecond", "microseconds"], "us"),
    **dict.fromkeys(["ns", "nsec", "nsecs", "nanosecond", "nanoseconds"], "ns"),
    **dict.fromkeys(["min", "mins", "minute", "minutes"], "min"),
    **dict.fromkeys(["h", "hr", "hrs", "hour", "hours"], "h"),
    **dict.fromkeys(["d", "day", "days"], "d"),
    **dict.fromkeys(["wk", "wks", "week", "weeks"], "week"),
    **dict.fromkeys(["y", "yr", "yrs", "year", "years"], "yr"),
    **dict.fromkeys(["hz", "rps", "qps", "tps"], "1/s"),
    **dict.fromkeys(["rpm", "qpm"], "1/min"),
    **dict.fromkeys(["%", "percent", "pct"], "percent"),
    **dict.fromkeys(["$", "usd", "us$", "dollar", "dollars"], "USD"),
}

_PREFIXED = re.compile(
    r"(?P<p>kilo|mega|giga|tera|peta|exa|kibi|mebi|gibi|tebi|pebi|[kmgtpe]i?)?"
    r"(?P<base>bytes?|bits?|bps|b|flops?|watts?|wh|w)",
    re.IGNORECASE,
)
_PREFIX_SYMBOL = {
    "": "", "k": "k", "kilo": "k", "m": "M", "mega": "M", "g": "G", "giga": "G", "t": "T",
    "tera": "T", "p": "P", "peta": "P", "e": "E", "exa": "E", "ki": "Ki", "kibi": "Ki",
    "mi": "Mi", "mebi": "Mi", "gi": "Gi", "gibi": "Gi", "ti": "Ti", "tebi": "Ti", "pi": "Pi",
    "pebi": "Pi",
}
_AMBIGUOUS_M = "'m' is ambiguous here: write 'min' for minutes, 'ms' for milliseconds or 'M' for million."


def _prefixed(token: str) -> list[str] | None:
    """Sizes, rates, power, energy and compute with an optional prefix: alternatives, best first."""
    m = _PREFIXED.fullmatch(token)
    if m is None:
        return None
    p, base = m.group("p") or "", m.group("base")
    if p.lower() == "ei":  # "eib": no exbi- in our registry
        return None
    prefix = _PREFIX_SYMBOL[p.lower()]
    low = base.lower()
    if low in ("byte", "bytes"):
        return [prefix + "B"]
    if low in ("bit", "bits"):
        return [prefix + "b"]
    if low == "b":
        if base == "B":
            return [prefix + "B"]
        # Lower-case b: bits after an upper-case prefix (Gb) or alone (b); bytes when the whole
        # token is lower case (gb, mb, kb), which is how people type GB in a hurry.
        lazy = p != "" and p == p.lower()
        return [prefix + ("B" if lazy else "b")]
    if low == "bps":
        return [prefix + ("B/s" if base[0] == "B" else "b/s")]
    if low in ("w", "watt", "watts"):
        return [prefix + "W"]
    if low == "wh":
        return [prefix + "Wh"]
    # flop / flops. "FLOPs" (upper-case stem, small s) is a plural and "FLOPS" (capital S) is per
    # second: that distinction is a classic interview probe, so it is enforced. All-lower-case
    # "flops" is per second too, but falls back to the plural when an amount is expected.
    if low == "flop":
        return [prefix + "FLOP"]
    if base[-1] == "S":
        return [prefix + "FLOP/s"]
    if base[:-1] != base[:-1].lower():
        return [prefix + "FLOP"]
    return [prefix + "FLOP/s", prefix + "FLOP"]


def _unit_alternatives(token: str) -> list[str]:
    if token == "m":
        raise _Fail(_AMBIGUOUS_M)
    if token.lower() in _ALIASES:
        return [_ALIASES[token.lower()]]
    if token == "w":  # watts or weeks: let the expected unit decide
        return ["W", "week"]
    found = _prefixed(token)
    if found is None:
        raise _Fail(f"Could not understand the unit '{token}'")
    return found


_TOKEN = re.compile(r"[%$]|[^\s%$*·\-]+")


def _tokens(part: str) -> list[str]:
    return _TOKEN.findall(part)


# ---------------------------------------------------------------------------------------------
# Expected units and conversion


@dataclass(frozen=True)
class _Expected:
    unit: str
    name: str  # "a time"
    has_information: bool
    is_time: bool


@lru_cache(maxsize=256)
def _expected(unit: str) -> _Expected | None:
    try:
        u = parse_unit(unit)
        dims = dict(u.dimensionality)
        return _Expected(
            unit=unit,
            name=dimension_name(u),
            has_information="[information]" in dims,
            is_time=dims == {"[time]": 1},
        )
    except Exception:  # pint raises a zoo of types for unparsable units
        return None


@lru_cache(maxsize=1024)
def _factor(expr: str, expected: str) -> float | None:
    """How many `expected` one `expr` is, or None if the dimensions differ."""
    u, v = parse_unit(expr), parse_unit(expected)
    if u.dimensionality != v.dimensionality:
        return None
    return float((1.0 * u).to(v).magnitude)


_EXAMPLES = {
    "a plain number": "'8' or '60%'",
    "a time": "'320 s' or '5.3 min'",
    "a data size": "'400 GB' or '9.8 GiB'",
    "a data rate": "'1.25 GB/s' or '10 Gb/s'",
    "a rate per second": "'250 /s' or '1.2k req/s'",
    "a power": "'700 W' or '14 MW'",
    "an amount of compute (FLOP)": "'1.92e11 FLOP'",
    "a compute rate (FLOP/s)": "'989 TFLOP/s'",
    "an amount of money": "'$500' or '1.2M USD'",
    "money per unit of time": "'$2/h'",
    "an energy": "'1.2 MWh'",
}


def _label(expr: str) -> str:
    """The typed unit as shown back: "%" for percent, "" for a count ("8 GPUs")."""
    return {"percent": "%", "1": ""}.get(expr, expr)


# ---------------------------------------------------------------------------------------------
# parse_answer


def parse_answer(text: str, expected_unit: str, asked_unit: str | None = None) -> Parsed:
    """Read a typed answer as a number in `expected_unit`. Never raises.

    `asked_unit` is the unit the prompt asks for ("ms", "GB", "sequences"): a bare number is
    read in it. It is itself read by this parser ("1 ms"), so it can be anything an answer
    could carry; one that cannot be read against `expected_unit` is a message, not a guess."""
    unit = expected_unit if isinstance(expected_unit, str) else ""
    try:
        return _parse(text, unit, asked_unit)
    except _Fail as fail:
        return Parsed(False, None, unit, "", str(fail))
    except Exception:  # the contract is "never raise"; the tests assert this branch is never hit
        return Parsed(False, None, unit, "", _INTERNAL)


def _parse(text: object, unit: str, asked_unit: str | None = None) -> Parsed:
    expected = _expected(unit)
    if expected is None:
        raise _Fail(f"This drill's unit '{unit}' is not one the app knows.")
    bare_factor = 1.0 if asked_unit is None else _asked_factor(asked_unit, unit)
    if not isinstance(text, str):
        raise _Fail(f"Expected the answer as text, got {type(text).__name__}.")
    raw = text.strip()
    if not raw:
        raise _Fail("Type a number (a unit is optional).")
    if len(raw) > MAX_CHARS:
        raise _Fail("That answer is too long to be a number with a unit.")
    s = _strip_hedges(_normalize(raw))
    if len(s) > 2 * MAX_CHARS:  # NFKC can expand a few characters a lot
        raise _Fail("That answer is too long to be a number with a unit.")
    if not s:
        raise _Fail(f"Could not read a number in '{raw}'.")

    number, rest, currency = _read_number(s)

    # "per cent" before "per" becomes "/".
    rest = re.sub(r"\bper\s*cent\b", "percent", rest, flags=re.IGNORECASE)
    rest = re.sub(r"\s*\bper\b\s*", "/", rest, flags=re.IGNORECASE)
    parts = rest.split("/")
    numerator = _tokens(parts[0])
    denominators = [_tokens(p) for p in parts[1:]]
    if any(not d for d in denominators):
        raise _Fail(f"Could not understand the unit in '{raw}'.")
    if len(numerator) + sum(map(len, denominators)) > 8:
        raise _Fail(f"Could not understand the unit in '{raw}': too many words.")
    for token in itertools.chain(numerator, *denominators):
        if any(c.isdigit() for c in token) and token != "1":
            raise _Fail(f"Could not understand '{token}' in '{raw}': give one number and a unit.")

    # Readings: (multiplier, numerator tokens left for units). The magnitude word may only be the
    # first token; `B` is billion or byte depending on what is expected (see module docstring).
    readings: list[tuple[float, list[str]]] = []
    first = numerator[0] if numerator else None
    if first is not None and first.lower() in _MAGNITUDE_WORDS:
        readings.append((_MAGNITUDE_WORDS[first.lower()], numerator[1:]))
    elif first in _MAGNITUDE_LETTERS:
        readings.append((_MAGNITUDE_LETTERS[first], numerator[1:]))
    elif first in _BILLION_LETTERS and not expected.has_information:
        readings += [(1e9, numerator[1:]), (1.0, numerator)]
    elif first == "m":
        if expected.is_time:
            raise _Fail(_AMBIGUOUS_M)
        readings.append((1e6, numerator[1:]))
    else:
        readings.append((1.0, numerator))

    candidates: list[tuple[float, str | None]] = []  # (multiplier, registry expression or None=bare)
    first_error: _Fail | None = None
    for multiplier, num_tokens in readings:
        try:
            candidates += _expressions(multiplier, num_tokens, denominators, currency)
        except _Fail as fail:
            first_error = first_error or fail
    if not candidates:
        assert first_error is not None
        message = str(first_error)
        if message.startswith("Could not understand the unit '"):
            message += f" in '{raw}'. Try something like {_examples(expected)}."
        raise _Fail(message)

    for multiplier, expr in candidates:
        if expr is None:  # bare number: it is in the unit the prompt asks for
            return _ok(number * multiplier * bare_factor, unit, "", raw, asked_unit)
        try:
            factor = _factor(expr, unit)
        except Exception:  # an expression our registry cannot read: treat as not understood
            raise _Fail(f"Could not understand the unit in '{raw}'.") from None
        if factor is not None:
            return _ok(number * multiplier * factor, unit, _label(expr), raw, asked_unit)
    _, expr = candidates[0]
    assert expr is not None
    raise _Fail(
        f"Expected {expected.name} (like {_examples(expected)}); '{raw}' is {dimension_name(expr)}."
    )


def _expressions(
    multiplier: float, numerator: list[str], denominators: list[list[str]], currency: bool
) -> list[tuple[float, str | None]]:
    """Every registry expression one reading can mean, best first (usually exactly one)."""
    if not numerator and not denominators and not currency:
        return [(multiplier, None)]
    num_alts = [_unit_alternatives(t) for t in numerator if not _is_noun(t)]
    if currency:
        num_alts.append(["USD"])
    den_alts = [_unit_alternatives(t) for part in denominators for t in part if not _is_noun(t)]
    out: list[tuple[float, str | None]] = []
    for combo in itertools.product(*num_alts, *den_alts):
        nums, dens = combo[: len(num_alts)], combo[len(num_alts):]
        num = "*".join(f"({n})" if "/" in n and len(nums) > 1 else n for n in nums) or "1"
        if dens:
            num = f"({num})" if "/" in num else num
            den = "*".join(dens)
            num = f"{num}/({den})" if len(dens) > 1 or "/" in den else f"{num}/{den}"
        out.append((multiplier, num))
    return out


def _examples(expected: _Expected) -> str:
    return _EXAMPLES.get(expected.name, f"'1.5 {expected.unit}'")


def _ok(value: float, unit: str, typed_unit: str, raw: str, asked_unit: str | None = None) -> Parsed:
    if not math.isfinite(value):
        raise _Fail(f"'{raw}' is too large to be a finite number.")
    try:
        shown = asked(asked_unit, unit).text(value) if asked_unit is not None else format_quantity(value, unit)
    except Exception:
        shown = f"{format_number(value)} {unit}"
    return Parsed(True, value, unit, typed_unit, f"Read as {shown}.")


# ---------------------------------------------------------------------------------------------
# The unit a prompt asks for


class AskedUnitError(ValueError):
    """A drill's declared unit that cannot be read, or is not the step's kind of quantity."""


@lru_cache(maxsize=1024)
def _asked_factor(asked_unit: str, unit: str) -> float:
    """How many `unit` one `asked_unit` is: the asked unit read as an answer, "1 <asked>"."""
    label = asked_unit.strip()
    return float(_parse(f"1 {label}" if label else "1", unit).value)  # a bare 1 is one step unit


@dataclass(frozen=True)
class AskedUnit:
    """The unit a drill asks in, and how a value of its step reads in it."""

    label: str  # as the prompt says it: "ms", "GB", "sequences", "%", "×", "" (a plain number)
    step_unit: str
    per_asked: float  # step units in one asked unit (1e-3 for ms against s)

    def value(self, step_value: float) -> float:
        return step_value / self.per_asked

    def bare(self, step_value: float) -> str:
        """The value as a learner would type it, without a unit: "19.8", "146.8", "2,949,120"."""
        return format_number(self.value(step_value))

    def text(self, step_value: float) -> str:
        """The value in the asked unit, for people: "19.8 ms", "54 sequences", "25%", "$5,262"."""
        v = self.value(step_value)
        label = self.label
        number = format_count(v) if self.step_unit in ("1", "") else format_number(v)
        if label == "":
            return number
        if label == "%":
            return f"{format_number(v)}%"
        if label in ("×", "x"):
            return f"{number}×"
        if label.upper() == "USD" or label == "$":
            return format_quantity(v, "USD")
        return f"{number} {label}"


@lru_cache(maxsize=1024)
def asked(asked_unit: str | None, step_unit: str) -> AskedUnit:
    """The AskedUnit for a drill; `None` asks in the step's own unit. Raises AskedUnitError."""
    if asked_unit is None:
        return AskedUnit(step_unit, step_unit, 1.0)
    try:
        factor = _asked_factor(asked_unit, step_unit)
    except _Fail as fail:
        raise AskedUnitError(f"the unit '{asked_unit}' cannot be read as {dimension_name(step_unit)}: {fail}") from None
    if not (factor > 0 and math.isfinite(factor)):
        raise AskedUnitError(f"the unit '{asked_unit}' is not a positive amount of '{step_unit}'")
    return AskedUnit(asked_unit.strip(), step_unit, factor)


# ---------------------------------------------------------------------------------------------
# score_answer


def _pct(x: float) -> str:
    return f"{format_number(100 * x, 3)}%"


def score_answer(text: str, step: Step, tol: float, asked_unit: str | None = None) -> Score:
    """Full marks within `tol` (relative), half within 3 x tol, else none. Never raises.

    `asked_unit` is the unit the prompt asks for: a bare number is read in it (see parse_answer).

    A tol that is not a number in [0, 1) falls back to the Drill default 0.05. A zero reference
    compares |answer| with tol directly. Text-valued steps (a hash, a name) need an exact match
    after strip/lower-case; a hex prefix of at least 8 characters of a hex reference counts.
    """
    unit = getattr(step, "unit", "") if isinstance(getattr(step, "unit", ""), str) else ""
    try:
        return _score(text, step, tol, asked_unit)
    except Exception:  # the contract is "never raise"; the tests assert this branch is never hit
        parsed = Parsed(False, None, unit, "", _INTERNAL)
        return Score(0.0, parsed, math.nan, unit, None, _INTERNAL)


_HEX = re.compile(r"[0-9a-f]+")


def _score(text: object, step: Step, tol: object, asked_unit: str | None = None) -> Score:
    unit = step.unit if isinstance(step.unit, str) else ""
    if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not (0 <= tol < 1):
        tol = 0.05
    tol = float(tol)

    if isinstance(step.value, str):
        return _score_text(text, step.value, unit)

    parsed = parse_answer(text, unit, asked_unit)  # type: ignore[arg-type]
    try:
        reference = float(step.value)
    except (TypeError, ValueError, OverflowError):
        reference = math.nan
    if not math.isfinite(reference):
        return Score(0.0, parsed, reference, unit, None, "This drill has no numeric reference.")
    if not parsed.ok or parsed.value is None:
        return Score(0.0, parsed, reference, unit, None, parsed.message)

    answer = parsed.value
    slack = 1e-9  # float round-off: 105 vs 100 at tol 0.05 is "within 5%"
    if reference == 0:
        error = abs(answer)
        relative = None
        full, half = error <= tol + slack * tol, error <= 3 * tol * (1 + slack)
        within = f"within {format_number(tol)} of zero"
        close = f"within {format_number(3 * tol)} of zero"
        off = f"Off by {format_number(error)} (the answer is 0)."
    else:
        error = abs(answer - reference) / abs(reference)
        relative = error
        full, half = error <= tol * (1 + slack), error <= 3 * tol * (1 + slack)
        within, close = f"within {_pct(tol)}", f"within {_pct(3 * tol)}"
        off = _off_message(answer, reference, error)
        if not (0.5 < answer / reference < 2):  # a slip of units or of magnitude, not of arithmetic
            off += _did_you_mean(parsed, unit, asked_unit, reference, tol)
    if full:
        return Score(1.0, parsed, reference, unit, relative, f"Correct ({within}).")
    if half:
        return Score(0.5, parsed, reference, unit, relative, f"Close: {close}, half credit.")
    return Score(0.0, parsed, reference, unit, relative, off)


def _factor_text(factor: float) -> str:
    """1000 -> "1,000", 1e9 -> "1e9": a power of ten past a million reads best as one."""
    exponent = math.log10(factor)
    if factor >= 1e6 and abs(exponent - round(exponent)) < 1e-3:
        return f"1e{round(exponent)}"
    return format_number(factor, 3)


def _off_message(answer: float, reference: float, error: float) -> str:
    direction = "too high" if answer > reference else "too low"
    ratio = answer / reference
    if ratio <= 0:
        return f"Off by {_pct(error)}: the sign is wrong." if answer != 0 else "Off by 100%."
    factor = max(ratio, 1 / ratio)
    if factor < 2:  # "off by 40%"; past a factor of two, "off by 99.9%" hides a factor of 1,000
        return f"Off by {_pct(error)} ({direction})."
    return f"Off by a factor of {_factor_text(factor)} ({direction})."


# Units a slip is made between, by the kind of quantity: the answer is retried in each.
_NEIGHBOURS = {
    "a time": ("ns", "us", "ms", "s", "min", "h", "d"),
    "a data size": ("B", "kB", "MB", "GB", "TB", "PB", "Gb", "Tb", "KiB", "MiB", "GiB", "TiB"),
    "a data rate": ("B/s", "kB/s", "MB/s", "GB/s", "TB/s", "Mb/s", "Gb/s", "Tb/s"),
    "a power": ("W", "kW", "MW", "GW"),
    "an energy": ("Wh", "kWh", "MWh", "GWh"),
    "an amount of compute (FLOP)": ("FLOP", "GFLOP", "TFLOP", "PFLOP", "EFLOP"),
    "a compute rate (FLOP/s)": ("FLOP/s", "GFLOP/s", "TFLOP/s", "PFLOP/s", "EFLOP/s"),
    "a rate per second": ("/s", "/min", "/h", "/d"),
    "a rate": ("/s", "/min", "/h", "/d"),
}
_SHOWN = {"us": "µs", "/s": "per second", "/min": "per minute", "/h": "per hour", "/d": "per day"}
# A plain number (or money) slips by a magnitude word or a percent sign instead of a unit.
_MAGNITUDES = (("k", 1e3), ("M", 1e6), ("B", 1e9))


def _did_you_mean(parsed: Parsed, unit: str, asked_unit: str | None, reference: float, tol: float) -> str:
    """" Did you mean 19.8 ms?" when the typed number is right in a neighbouring unit, else ""."""
    if parsed.value is None:
        return ""
    expected = _expected(unit)
    if expected is None:
        return ""
    bare = parsed.typed_unit == ""
    try:
        if bare:
            typed_in = asked(asked_unit, unit)
            n, typed_label = typed_in.value(parsed.value), typed_in.label
        else:
            expr = "percent" if parsed.typed_unit == "%" else parsed.typed_unit
            factor = _factor(expr, unit)
            if not factor:
                return ""
            n, typed_label = parsed.value / factor, parsed.typed_unit
    except Exception:  # a suggestion is a courtesy: never let it cost the score
        return ""

    def close(value: float) -> bool:
        return abs(value - reference) <= tol * abs(reference) * (1 + 1e-9)

    where = f" This drill reads a bare number in {typed_label}." if bare and typed_label else ""
    for alt in _NEIGHBOURS.get(expected.name, ()):
        if alt == typed_label:
            continue
        try:
            factor = _factor(alt if not alt.startswith("/") else "1" + alt, unit)
        except Exception:
            continue
        if factor and close(n * factor):
            return f" Did you mean {format_number(n)} {_SHOWN.get(alt, alt)}?{where}"
    if expected.name in ("a plain number", "an amount of money") and n:
        scale = parsed.value / n  # step units in one typed unit (0.01 for "%")
        if expected.name == "a plain number":
            if typed_label == "%" and close(n * scale * 100):
                return f" Did you give a fraction? {format_number(n)} is {format_number(n * 100)}%."
            if typed_label != "%" and close(n * scale / 100):
                return f" Did you mean {format_number(n)}% ({format_number(n / 100)} as a fraction)?"
        money = "$" if expected.name == "an amount of money" else ""
        for word, size in _MAGNITUDES:
            if close(n * scale * size):
                return f" Did you mean {money}{format_number(n)}{word} ({money}{format_number(n * size)})?{where}"
    return ""


def score_drill(text: str, drill, step: Step) -> Score:
    """Score a typed answer to `drill`, a bare number read in the unit its prompt asks for.
    The one entry point the study page and the mock interview both use. Never raises."""
    return score_answer(text, step, getattr(drill, "tol", 0.05), getattr(drill, "unit", None))


def drill_reference(drill, step: Step) -> str:
    """The step's value in the unit the drill asks for: "19.8 ms", "54 sequences"."""
    if not step.is_numeric:
        return step.display()
    try:
        return asked(getattr(drill, "unit", None), step.unit).text(float(step.value))
    except AskedUnitError:
        return step.display()


def _score_text(text: object, reference: str, unit: str) -> Score:
    ref = reference.strip().lower()
    typed = text.strip().lower() if isinstance(text, str) else ""
    if not typed:
        message = "Type an answer."
        parsed = Parsed(False, None, unit, "", message)
        return Score(0.0, parsed, math.nan, unit, None, message)
    parsed = Parsed(True, None, unit, "", "")
    if typed == ref:
        return Score(1.0, parsed, math.nan, unit, None, "Correct.")
    if len(typed) >= 8 and _HEX.fullmatch(typed) and _HEX.fullmatch(ref) and ref.startswith(typed):
        return Score(1.0, parsed, math.nan, unit, None, "Correct (the prefix matches).")
    return Score(0.0, parsed, math.nan, unit, None, "Does not match the reference.")
