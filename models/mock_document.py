"""The mock interview's shared document, read for numbers: which key figures it states right,
states wrong, or leaves out (issue 23).

`quantities(document)` finds every number a person meant as a quantity and reads it with the
drills' answer reader (`models.answers.parse_answer`), so `~320 KB/token`, `2.7k tok/s`, `8 GPUs`,
`14 MW`, `$1.2M` and `60%` mean here exactly what they mean in a drill box.
`read_document(document, derivation, figures)` matches those quantities to the reference steps.

Finding the quantities
  * A number is read together with the words after it that the answer reader accepts as its
    unit (longest first, at most five words, never across another number or an operator such as
    `=`, `/ 43.5`, the `×` of `46 × 13.5`): in "6 replicas at 64% busy" the quantities are
    `6 replicas` and `64%`; `81,920 ×` (nothing after the sign) is a factor.
    A `~`, `≈`, `$`, `US$` or minus sign right before it belongs to it (`~320`, not `≈ 46`).
  * Not quantities: numbers inside names (a run of letters, digits, `-`, `_`, `.` that starts
    with a letter, or a number right after a letter: `H100`, `Llama-3-70B`, `fp8`, `bf16`, `v5e`,
    `p99`, the H100 of `8xH100`, which is read as 8); ordinals and other digits
    glued to words the reader does not know (`3rd`, `2FA`); version strings (`1.2.3`); dates
    (`2026-12-02`, `12/02/2026`, `Dec 2`, `2 December 2026`, "in 2026." ending a clause after
    in/since/until/year/Q3/H2); clock times (`14:30`, `3 pm`); ranges (`300-350 s`, the reader
    wants one number; so does `1,5`, read as 1 and 5 in a document of lists); URLs;
    list markers (`1. `, `2) ` at the start of a line); a heading's leading number (`## 1. Numbers`);
    and every number in a phase heading (`## Numbers (5 min)`, `## 2. Shape`).
  * `value` is in the base unit of the quantity's dimension (`unit`: "1", "s", "B", "B/s", "1/s",
    "W", "Wh", "FLOP", "FLOP/s", "USD", "USD/h", "FLOP/B"): `320 KB` is 320,000 B, `10 Gbps`
    1.25e9 B/s, `60%` 0.6 in "1". `typed_unit` keeps the unit as typed ("kB", "Gb/s", "%").
    A `B` the reader takes for a billion (`70B params`, `327,680 B`) also keeps its reading in
    bytes (`also`), and the figure's dimension picks one.
  * Plain digits are turned into a float here and only the unit part ("1 KB/token") goes to the
    reader, once per spelling: a 5,000-character document reads in a few milliseconds.
  * `context` is the sentence holding the quantity (its line, cut at `.`/`!`/`?`), lower-case;
    `near` is the quantity's own words plus up to four content words before it and three after,
    in that sentence: what a person writes as "KV per token ~320 KB" or "620 requests in flight".

Matching a quantity to a figure (a step of the derivation)
  * Dimension first: a quantity can mean a figure only if its dimension is the step's (bytes,
    bytes/s, seconds, count, money, power, ...). A bare number or a count-noun number (`8 GPUs`)
    is dimensionless and meets only dimensionless steps. Percent is a number: `60%` (0.6) meets
    a step of 0.6 in "1"; a bare `64` also meets a share (a step with percent=True) of 0.64.
  * A count says what it counts: when the step has a noun ("GPUs", "requests"), a quantity with
    a noun of its own must share a word with the figure's ("103.4 requests" is not 104 GPUs;
    "48 accelerators" is, a few synonyms are known; "1.6 tokens" is not a 1.6x speed-up), and a
    percent is not a count (it may be a factor: 80% of capacity). A share takes only numbers
    without a noun ("60 replicas" is not a busy share of 60%).
  * A count or money kept per period (a step in "1" with the noun "per day", a "USD" step whose
    key says `per_hour`/`per_day`/`per_week`/`per_year`/`annual`) also meets a rate: "0.2/h" is
    4.8 a day, "$2,352 per day" is $98 an hour.
  * Words: the figure's words are its step key (split at `_`) and its label, lower-cased, stop
    words and unit words out, lightly stemmed ("replicas"~"replica", "decoding"~"decode",
    "req"~"request", "tok"~"token"). A quantity's *coverage* of a figure is the share of the
    figure's words found around it, a word counting 1 in `near` (the quantity's own words and its
    neighbours) and 0.5 elsewhere in its sentence; the better of the key's share and the label's
    is kept. The document *names* a figure at a quantity when that coverage is at least
    NAMED_COVERAGE (0.5: half the words near it, or all of them in its sentence): "prefill 2.5"
    names "Prefill work" (prefill, work: 1 of 2); "Replicas: 7" does not (replica is 1 of prefill,
    replica, equivalent, and 0 of prefill, work).
  * "right": a quantity of the figure's dimension within the tolerance (relative; `tolerance`
    per step key, else 0.05; a zero reference takes it as absolute). A plain number (a count, a
    ratio, a percent) must also say what it is: its own noun is one of the figure's words
    ("48 GPUs"; "18.26 ×" for a factor), or one of the figure's words stands in its sentence.
    A document holds a hundred plain numbers and one of them often falls within 5% of a count
    by chance: without this, "| GPUs | 40 |" read as right because "46 * 13.5" sat elsewhere.
    When several could be the figure, the best coverage wins, then the closest value, then the
    first.
  * "wrong": no quantity is within tolerance, but one of the figure's dimension names it; `said`
    is the best-named such quantity (then the closest value). `off` says by how much in words and
    names a slip when the ratio is one: a unit prefix (1000x: "MB for kB?"), a binary prefix
    (1024x, or 1.024^k: "GiB vs GB?"), bits for bytes (8x), a percent for a fraction (100x),
    minutes or hours for seconds (60x, 3600x), a magnitude word ("k for M?").
  * "missing": neither. A quantity is used for at most one figure: rights are assigned first, as
    a maximum matching (so two figures of the same value both find their number when the document
    states it twice), then wrongs among the quantities left.
  * A text-valued step (a verdict such as "memory") is "right" when its word appears in a
    sentence that names the figure, else "missing": a word is not read as a wrong number.
"""

from __future__ import annotations

import bisect
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Mapping, Sequence

from models.answers import parse_answer
from models.core import Derivation, PHASE_TITLES, Step
from models.units import format_number, format_quantity, parse_unit

NAMED_COVERAGE = 0.5  # share of a figure's words around a quantity for the document to name it
DEFAULT_TOLERANCE = 0.05
NEAR_WEIGHT, SENTENCE_WEIGHT = 1.0, 0.5
NEAR_BEFORE, NEAR_AFTER = 4, 3  # content words either side that count as "near"
MAX_UNIT_WORDS = 5


@dataclass(frozen=True)
class Quantity:
    text: str  # as typed, e.g. "~320 KB/token", "2.7k tok/s", "8 GPUs", "14 MW"
    start: int
    end: int  # span in the document: document[start:end] == text
    value: float  # magnitude in `unit`
    unit: str  # the base unit of its dimension, in our registry's spelling ("B", "1/s", "1", ...)
    context: str  # the sentence around it, lower-case
    typed_unit: str = ""  # the unit as the answer reader understood it ("kB", "Gb/s", "%"); "" bare/count
    near: str = ""  # its own words and the few content words either side, lower-case
    bare: bool = False  # a number with nothing after it (no unit, no noun, no %)
    also: tuple[tuple[float, str, str], ...] = ()  # other readings (value, unit, typed unit): "3 B" is 3e9 or 3 bytes


@dataclass(frozen=True)
class FigureFinding:
    key: str  # step key
    label: str  # the figure's label (given, or the step's label)
    status: str  # "right" | "wrong" | "missing"
    said: str | None  # the quantity's text the document used for it (right or wrong)
    reference: str  # the reference value formatted with its unit
    off: str | None = None  # for "wrong": in words, "2.0x the reference", "about 1,000x ...: MB for kB?"


# ---------------------------------------------------------------------------------------------
# Dimensions and base units

# Every quantity is kept in one unit per dimension; the first of these the reader accepts wins.
BASE_UNITS = ("s", "B", "B/s", "1/s", "W", "Wh", "FLOP", "FLOP/s", "USD", "USD/h", "FLOP/B")


@lru_cache(maxsize=256)
def _dims(unit: str) -> tuple | None:
    try:
        return tuple(sorted(dict(parse_unit(unit).dimensionality).items()))
    except Exception:  # noqa: BLE001 - pint raises many types for a unit it cannot read
        return None


@lru_cache(maxsize=256)
def _base_of(unit: str) -> str | None:
    """The base unit sharing `unit`'s dimension ("GB" -> "B", "%" -> "1"), or None."""
    dims = _dims(unit)
    if dims is None:
        return None
    if dims == ():
        return "1"
    for base in BASE_UNITS:
        if _dims(base) == dims:
            return base
    return None


@lru_cache(maxsize=256)
def _to_base(unit: str) -> float:
    """How many base units one `unit` is (1e9 for GB, 0.01 for %)."""
    base = _base_of(unit)
    u = parse_unit(unit)
    return float((1.0 * u).to(parse_unit(base)).magnitude)


# ---------------------------------------------------------------------------------------------
# Reading one candidate string


@dataclass(frozen=True)
class _Read:
    ok: bool
    value: float = 0.0
    unit: str = ""
    typed_unit: str = ""
    unknown: str = ""  # when not ok: the word the reader could not understand, if it said
    also: tuple[tuple[float, str, str], ...] = ()  # other readings: (value, unit, typed unit)


_UNKNOWN = re.compile(r"Could not understand (?:the unit )?'([^']*)'")


@lru_cache(maxsize=8192)
def _read(text: str) -> _Read:
    """The answer reader on one string: as a plain number if it is one, else in the base unit of
    whatever dimension it has."""
    parsed = parse_answer(text, "1")
    if parsed.ok and parsed.value is not None:
        return _Read(True, float(parsed.value), "1", parsed.typed_unit)
    m = _UNKNOWN.match(parsed.message)
    if m:
        return _Read(False, unknown=m.group(1))
    if not parsed.message.startswith("Expected "):  # unreadable for another reason (range, ...)
        return _Read(False)
    for base in BASE_UNITS:
        p = parse_answer(text, base)
        if p.ok and p.value is not None:
            return _Read(True, float(p.value), base, p.typed_unit)
    return _Read(False)


_PLAIN = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?")


@lru_cache(maxsize=8192)
def _number(core: str) -> float | None:
    """The number alone. Plain digits are read here (the reader would give the same float, at a
    hundred times the cost, and a document has hundreds); other forms go to the reader."""
    if _PLAIN.fullmatch(core):
        return float(core.replace(",", ""))
    r = _read(core)
    return r.value if r.ok and r.unit == "1" else None


def _read_parts(currency: str, core: str, tail: str, negative: bool) -> _Read:
    """A quantity read as its number times one of its unit: "$1.2M" is 1.2 x "$1M", "2.7k tok/s"
    is 2.7 x "1k tok/s". The unit part is read once per distinct spelling, which a document repeats."""
    unit = _read(f"{currency}1{tail}")
    if not unit.ok:
        return unit
    number = _number(core)
    if number is None:
        return _Read(False)
    sign = -number if negative else number
    also = tuple((sign * v, u, t) for v, u, t in _bytes_reading(f"{currency}1{tail}", unit))
    return _Read(True, sign * unit.value, unit.unit, unit.typed_unit, also=also)


_BILLION_OR_BYTES = re.compile(r"^\$?1\s*[Bb](?![A-Za-z])")


@lru_cache(maxsize=1024)
def _bytes_reading(probe: str, read: _Read) -> tuple[tuple[float, str, str], ...]:
    """`B` after a number is a billion to the reader unless bytes are expected; a document does
    not say what it expects, so "327,680 B per token" and "70B params" keep both readings."""
    if read.unit != "1" or not _BILLION_OR_BYTES.match(probe):
        return ()
    out = []
    for base in ("B", "B/s"):
        p = parse_answer(probe, base)
        if p.ok and p.value is not None:
            out.append((float(p.value), base, p.typed_unit))
    return tuple(out)


# ---------------------------------------------------------------------------------------------
# Where the numbers are

_CORE = re.compile(
    r"""
    \d+\s*\^\s*[+-]?\d+                                           # 10^9, 2^30
  | (?:\d{1,3}(?:,\d{3})+(?![\d])|\d+)(?:\.\d+)?                  # 1,280  5.3  320
    (?:[eE][+-]?\d+(?![A-Za-z])                                   # 3e5
     | \s*[x×*·]\s*10\s*(?:\^\s*[+-]?\d+|[⁰¹²³⁴⁵⁶⁷⁸⁹⁻]+))?        # 2.5×10^4, 2.5 × 10⁴
    """,
    re.VERBOSE,
)
_RUN_CHARS = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_MONTHS = (r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|"
           r"Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?")
# Spans whose digits are not quantities. Several small patterns, each anchored on a digit or a
# literal, scan a document far faster than one alternation tried at every character.
_SKIP_PATTERNS = (
    re.compile(r"https?://\S+|www\.\S+|[\w.+-]+@[\w-]+\.[\w.]+"),                  # URLs, e-mail
    re.compile(
        r"(?<![\d.,])(?:\d{4}-\d{1,2}-\d{1,2}(?:[T ]\d{1,2}:\d{2}(?::\d{2})?)?"           # 2026-12-02
        r"|\d{1,2}/\d{1,2}/\d{2,4}|\d{1,2}\.\d{1,2}\.\d{4}"                              # 12/02/2026
        r"|\d{1,2}:\d{2}(?::\d{2})?(?:\s*[aApP]\.?[mM]\b\.?)?"                            # 14:30, 9:05 am
        r"|\d{1,2}\s*[aApP]\.?[mM]\.?(?![A-Za-z])"                                        # 3 pm, 10am
        rf"|\d{{1,2}}(?:st|nd|rd|th)?\s+{_MONTHS}(?:,?\s+\d{{4}})?)(?![\d])"              # 2 December 2026
    ),
    re.compile(rf"\b{_MONTHS}(?:\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+\d{{4}})?|\s+\d{{4}})(?![\d])"),  # Dec 2, 2026
    re.compile(r"\b(?:[Ii]n|[Ss]ince|[Uu]ntil|[Yy]ear|Q[1-4]|H[12])\s+(?:19|20)\d{2}(?=\s*(?:[.,;:!?)]|$))",
               re.MULTILINE),                                                               # in 2026.
)
_HEADING = re.compile(r"^[ \t]{0,3}(#{1,6})[ \t]+(.*)$", re.MULTILINE)
_HEADING_NUMBER = re.compile(r"^(?:(?:phase|step|part|section)\s+)?\d+(?:\.\d+)*[.):]?(?=\s|$)", re.IGNORECASE)
_LIST_MARKER = re.compile(r"^[ \t]*(?:[-*+][ \t]+)?\(?\d+(?:\.\d+)*[.)](?=[ \t])", re.MULTILINE)
_PHASE_WORDS = tuple(t.lower() for t in PHASE_TITLES.values()) + ("clarifying", "clarifications", "takeaways")
_GLUE_CUT = re.compile(r"[×*=+→≈~()\[\]{}<>|,;!?\"]|/(?=\d)|-(?=\d)|:(?=\s|$)")
_TRAIL = ".,;:!?)]}*_`'\""
_OPERATORS = {"×", "x", "*", "/", "=", "+", "-", "–", "—", "→", "->", "≈", "~", "÷", "|", "<", ">"}
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)")
_WORD = re.compile(r"[A-Za-z][A-Za-z']*")
_MARKDOWN = re.compile(r"[*_`]")
_VERSION_AFTER = re.compile(r"\.\d")
_RANGE_AFTER = re.compile(r"\s*[-–—]\s*\$?\d")
_NEXT_WORD = re.compile(r"[ \t]+(\S+)")
# Words that end a quantity without asking the reader ("6 replicas at 64%", "620 requests in flight").
_NOT_UNITS = frozenset("""a an the of in on at to for by with and or is are was were be so as from
into than then that this which we it if but not i you our their its""".split())
_RANGE_BEFORE = re.compile(r"\d\s*[-–—]\s*\$?$")


def _skipped_spans(document: str) -> list[tuple[int, int]]:
    spans = [m.span() for pattern in _SKIP_PATTERNS for m in pattern.finditer(document)]
    for m in _HEADING.finditer(document):
        title_start = m.start(2)
        title = m.group(2)
        number = _HEADING_NUMBER.match(title)
        rest = title[number.end():] if number else title
        if rest.strip().lower().lstrip("#:.) ").startswith(_PHASE_WORDS):
            spans.append((m.start(), m.end()))  # a phase heading: its numbers are the round's, not figures
        elif number:
            spans.append((title_start, title_start + number.end()))
    spans += [m.span() for m in _LIST_MARKER.finditer(document)]
    merged: list[tuple[int, int]] = []
    for s, e in sorted(spans):
        if merged and s <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], e))
        else:
            merged.append((s, e))
    return merged


def _inside(spans: list[tuple[int, int]], starts: list[int], start: int, end: int) -> bool:
    """Whether [start, end) overlaps one of the sorted, disjoint `spans` (`starts` their starts)."""
    i = bisect.bisect_left(starts, end) - 1
    return i >= 0 and spans[i][1] > start


def _in_name(document: str, start: int) -> bool:
    """Whether the number at `start` is part of a name: its run of word characters starts with a
    letter (`H100`, `Llama-3-70B`, `fp8`), or a letter stands right before it (`8xH100`), or it
    continues a version string (`1.2.3`)."""
    i = start
    while i > 0 and document[i - 1] in _RUN_CHARS:
        i -= 1
    run = document[i:start]
    return bool(run) and (run[0].isalpha() or run[-1].isalpha() or bool(re.search(r"\d\.$", run)))


def _prefix_start(document: str, start: int) -> int:
    """Extend the span left over a hedge, a currency sign or a minus sign: "~$1.2M", "-5%"."""
    i = start
    if i > 0 and document[i - 1] == "-" and (i == 1 or document[i - 2] in " \t\n(=:*_`"):
        i -= 1
    while True:
        if i >= 3 and document[i - 3:i] == "US$":
            i -= 3
        elif i > 0 and document[i - 1] in "$~≈":
            i -= 1
        else:
            return i


def _tail_ends(document: str, end: int, line_end: int) -> list[int]:
    """Candidate ends of a quantity whose number ends at `end`: after its glued unit ("KB/token",
    possibly empty), then after each of up to MAX_UNIT_WORDS following words, longest last. A
    comma, a full stop, an operator, a digit or a plain English word ends the run."""
    i = end
    while i < line_end and not document[i].isspace():
        i += 1
    glued = document[end:i]
    cut = _GLUE_CUT.search(glued)
    if cut:
        glued = glued[:cut.start()]
    stripped = glued.rstrip(_TRAIL)
    stop = cut is not None or len(stripped) < len(glued)  # a comma or a full stop ends the phrase
    ends = [end + len(stripped)]
    if stop or len(stripped) != i - end:
        return ends
    pos = i
    for _ in range(MAX_UNIT_WORDS):
        m = _NEXT_WORD.match(document, pos, line_end)
        if not m:
            break
        word = m.group(1)
        if word.rstrip(_TRAIL) in ("×", "x"):
            # "81,920 ×" is a factor; "46 × 13.5" a product, whose "×" ends the quantity
            after = _NEXT_WORD.match(document, m.end(), line_end)
            if after is None or not after.group(1)[:1].isdigit():
                ends.append(m.start(1) + 1)
            break
        cut = _GLUE_CUT.search(word)
        clean = word[:cut.start()] if cut else word
        clean_stripped = clean.rstrip(_TRAIL)
        if (not clean_stripped or word in _OPERATORS or clean_stripped.lower() in _NOT_UNITS
                or any(c.isdigit() for c in clean_stripped) or (cut is not None and cut.start() == 0)):
            break
        ends.append(m.start(1) + len(clean_stripped))
        if cut is not None or len(clean_stripped) < len(word):
            break
        pos = m.end()
    return ends


@lru_cache(maxsize=32)
def _quantities(document: str) -> tuple[Quantity, ...]:
    skipped = _skipped_spans(document)
    skipped_starts = [s for s, _ in skipped]
    found: list[Quantity] = []
    taken_until = 0
    skip_next_number = False
    sentences: dict[tuple[int, int], list[tuple[int, str]]] = {}
    for m in _CORE.finditer(document):
        start, end = m.span()
        if start < taken_until:
            continue
        if skip_next_number:  # the second half of a range
            skip_next_number = False
            continue
        if _inside(skipped, skipped_starts, start, end) or _in_name(document, start):
            continue
        if _VERSION_AFTER.match(document, end):  # 1.2.3
            continue
        if _RANGE_AFTER.match(document, end):
            skip_next_number = True
            continue
        if _RANGE_BEFORE.search(document, max(0, start - 4), start):
            continue
        line_start = document.rfind("\n", 0, start) + 1
        line_end = document.find("\n", end)
        line_end = len(document) if line_end < 0 else line_end
        first = _prefix_start(document, start)
        lead = document[first:start]
        currency = "US$" if "US$" in lead else "$" if "$" in lead else ""
        negative = "-" in lead
        core = m.group(0)
        ends = _tail_ends(document, end, line_end)
        read, stop = None, None
        k = len(ends) - 1
        while k >= 0:
            r = _read_parts(currency, core, _MARKDOWN.sub("", document[end:ends[k]]).rstrip(), negative)
            if r.ok:
                read, stop = r, ends[k]
                break
            # Jump back past the word the reader did not know, when it named one.
            if r.unknown:
                where = document.find(r.unknown, end, ends[k])
                if where >= 0:
                    k = min(k - 1, sum(1 for e in ends if e <= where) - 1)
                    continue
            k -= 1
        glued = ends[0] > end
        if read is None and glued:
            g = document[end:ends[0]]
            if g[0] in "x×" or re.match(r"-[A-Za-z]", g):  # "8xH100", "8-way": eight of something
                r = _read_parts(currency, core, "", negative)
                if r.ok:
                    read, stop = r, end
        if read is None or stop is None:
            continue  # "3rd", "2FA", "4o": a number glued to a word is a name, not a quantity
        text = document[first:stop]
        bounds = _sentence_bounds(document, line_start, line_end, first, stop)
        if bounds not in sentences:
            sentences[bounds] = _positioned_words(document, *bounds)
        context = document[bounds[0]:bounds[1]].strip().lower()
        near = _near_words(sentences[bounds], first, stop)
        bare = read.unit == "1" and read.typed_unit == "" and stop == end
        found.append(Quantity(text, first, stop, read.value, read.unit, context, read.typed_unit, near, bare,
                              read.also))
        taken_until = stop
    return tuple(found)


def quantities(document: str) -> list[Quantity]:
    """Every number in `document` a person meant as a quantity, in order (see the module docstring)."""
    if not isinstance(document, str) or not document.strip():
        return []
    return list(_quantities(document))


def _sentence_bounds(document: str, line_start: int, line_end: int, start: int, end: int) -> tuple[int, int]:
    s = line_start
    for m in _SENTENCE_END.finditer(document, line_start, start):
        s = m.end()
    m = _SENTENCE_END.search(document, end, line_end)
    return s, (m.start() if m else line_end)


def _content_words(text: str) -> list[str]:
    return [w for w in (_stem(t) for t in _WORD.findall(text)) if w]


@lru_cache(maxsize=4096)
def _word_set(text: str) -> frozenset[str]:
    return frozenset(_content_words(text))


def _positioned_words(document: str, s: int, e: int) -> list[tuple[int, str]]:
    """(where, stem) of every content word of document[s:e]."""
    out = []
    for m in _WORD.finditer(document, s, e):
        w = _stem(m.group(0))
        if w:
            out.append((m.start(), w))
    return out


def _near_words(words: list[tuple[int, str]], start: int, end: int) -> str:
    before = [w for at, w in words if at < start][-NEAR_BEFORE:]
    own = [w for at, w in words if start <= at < end]
    after = [w for at, w in words if at >= end][:NEAR_AFTER]
    return " ".join(before + own + after)


# ---------------------------------------------------------------------------------------------
# Words

_STOP = frozenset("""
a an the of per in on at to for by with and or is are be been was were it its this that these those
each one all we i you so as from into than then what how many much our if not no do does can will
would should need needs about around roughly approx approximately ~ total number value get gives
given which when where there here us s ms ns min mins h hr hrs d b byte bytes bit bits bps kb mb gb
tb pb kib mib gib tib kbps mbps gbps w kw mw gw wh kwh mwh usd dollar dollars pct percent flop flops
tflops pflops x k m bn million billion thousand sec secs second seconds minute minutes hour hours
day days
""".split())
_SYNONYMS = {
    "req": "request", "reqs": "request", "rps": "request", "qps": "query", "tok": "token",
    "toks": "token", "seq": "sequence", "seqs": "sequence", "util": "utilization",
    "utilisation": "utilization", "utilised": "utilization", "utilized": "utilization",
    "utilize": "utilization", "utilise": "utilization", "mem": "memory", "bw": "bandwidth",
    "params": "parameter", "param": "parameter", "conc": "concurrent", "gpus": "gpu",
    "accelerator": "gpu", "accelerators": "gpu", "chip": "gpu", "chips": "gpu", "card": "gpu",
    "cards": "gpu", "conversation": "sequence", "conversations": "sequence", "query": "request",
    "queries": "request", "call": "request", "calls": "request",
}


@lru_cache(maxsize=4096)
def _stem(word: str) -> str:
    """Lower-case, stop words out, plural and -ing/-ed/-e endings off: replicas~replica, decoding~decode."""
    w = word.lower().strip("'")
    if w.endswith("'s"):
        w = w[:-2]
    w = _SYNONYMS.get(w, w)
    if w in _STOP or len(w) < 2:
        return ""
    if len(w) > 4 and w.endswith("ies"):
        w = w[:-3] + "y"
    elif w.endswith("sses"):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")) and len(w) > 3:
        w = w[:-1]
    for suffix in ("ing", "ed"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 4:
            w = w[: -len(suffix)]
            break
    if w.endswith("e") and len(w) > 4:
        w = w[:-1]
    return w


@lru_cache(maxsize=1024)
def _figure_words(key: str, label: str) -> tuple[frozenset[str], frozenset[str]]:
    key_words = frozenset(w for w in (_stem(t) for t in re.split(r"[_\W]+", key) if t) if w)
    label_words = frozenset(_content_words(label))
    return key_words, label_words


def _around(q: Quantity) -> dict[str, float]:
    """Each word around a quantity with its weight: 1 near it, 0.5 elsewhere in its sentence."""
    weights = dict.fromkeys(_word_set(q.context), SENTENCE_WEIGHT)
    weights.update(dict.fromkeys(q.near.split(), NEAR_WEIGHT))
    return weights


def _coverage(words: tuple[frozenset[str], frozenset[str]], around: dict[str, float]) -> float:
    best = 0.0
    for ws in words:
        if ws:
            best = max(best, sum(around.get(w, 0.0) for w in ws) / len(ws))
    return best


# ---------------------------------------------------------------------------------------------
# Matching


@dataclass
class _Figure:
    key: str
    label: str
    step: Step
    base: str | None
    reference: float  # in base units
    percent_step: bool
    tol: float
    words: tuple[frozenset[str], frozenset[str]]
    counted: str = ""  # "count" for a noun such as "GPUs", "factor" for "×", "" for none
    per_s: float = 0.0  # a count or money kept per period ("per day", `_usd_per_hour`): the period in s
    accepted: frozenset[str] = frozenset()  # words a quantity's own noun may be: key, label and noun words


def _noun_agrees(fig: _Figure, q: Quantity) -> bool:
    """A count says what it counts: "103.4 requests" is not a number of GPUs, "60 replicas" is not
    a busy share, and "100%" is not a number of GPUs. A quantity without a noun agrees with any."""
    own = _word_set(q.text)
    if fig.percent_step:
        return not own
    if not fig.counted:
        return True
    if fig.counted == "count" and q.typed_unit == "%":
        return False
    return not own or not own.isdisjoint(fig.accepted)


def _counts_it(fig: _Figure, q: Quantity) -> bool:
    """Whether the quantity says itself what it is: its own noun is one of the figure's words
    ("48 GPUs" for GPUs), or it is written as a factor ("18.26 ×", "31x") for a factor."""
    if fig.counted == "factor" and _FACTOR_TEXT.search(q.text):
        return True
    return not _word_set(q.text).isdisjoint(fig.accepted)


_FACTOR_TEXT = re.compile(r"\d\s*[×x]$")


def _readings(fig: _Figure, q: Quantity) -> list[tuple[float, str]]:
    """(value, typed unit) for each reading `q` has as this figure: its value, a bare number as
    percent points for a share, and bytes for a `B` the reader took for a billion."""
    if not _noun_agrees(fig, q):
        return []
    out = [(q.value, q.typed_unit)] if q.unit == fig.base else []
    if fig.per_s and q.unit == _RATE_OF.get(fig.base or ""):
        # "4.85 per day" read as 5.6e-5 /s, for a step of 4.85 kept in "1" with the noun "per day"
        out.append((q.value * fig.per_s / (3600.0 if q.unit == "USD/h" else 1.0), q.typed_unit))
    if fig.percent_step and q.bare:
        out.append((q.value / 100, ""))
    out += [(v, typed) for v, unit, typed in q.also if unit == fig.base]
    return out


def _candidates(by_unit: Mapping[str, list[int]], fig: _Figure) -> list[int]:
    """The quantities that could have the figure's dimension, in document order."""
    found = list(by_unit.get(fig.base or "", ()))
    if fig.per_s:
        found = sorted(set(found) | set(by_unit.get(_RATE_OF.get(fig.base or "", ""), ())))
    return found


def _within(value: float, reference: float, tol: float) -> bool:
    slack = 1e-9
    if reference == 0:
        return abs(value) <= tol * (1 + slack)
    return abs(value - reference) <= tol * abs(reference) * (1 + slack)


def _closeness(value: float, reference: float) -> float:
    """How far a value is from the reference, by ratio (0 is equal); signs apart is far."""
    if reference == 0:
        return abs(value)
    if value == 0 or (value > 0) != (reference > 0):
        return math.inf
    return abs(math.log(value / reference))


def _match(prefs: dict[int, list[int]], order: list[int]) -> dict[int, int]:
    """A maximum matching of figures to quantities (Kuhn's augmenting paths), each figure trying
    its quantities in preference order and figures taken in `order`: figure -> quantity."""
    owner: dict[int, int] = {}  # quantity -> figure

    def place(f: int, seen: set[int]) -> bool:
        for q in prefs[f]:
            if q in seen:
                continue
            seen.add(q)
            if q not in owner or place(owner[q], seen):
                owner[q] = f
                return True
        return False

    for f in order:
        place(f, set())
    return {f: q for q, f in owner.items()}


def _tolerance_for(tolerance: Mapping[str, float] | float, key: str) -> float:
    if isinstance(tolerance, Mapping):
        tol = tolerance.get(key, DEFAULT_TOLERANCE)
    else:
        tol = tolerance
    if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not (0 <= tol < 1):
        return DEFAULT_TOLERANCE
    return float(tol)


def _figure(derivation: Derivation, key: str, label: str, tolerance) -> _Figure:
    if key not in derivation:
        raise KeyError(f"figure '{key}' is not a step of this derivation")
    step = derivation[key]
    label = label or step.label
    base, reference = None, math.nan
    if step.is_numeric:
        base = _base_of(step.unit or "1")
        if base is not None:
            try:
                reference = float(step.value) * _to_base(step.unit or "1")
            except (TypeError, ValueError, OverflowError):
                base = None
    if base is not None and not math.isfinite(reference):
        base = None
    words = _figure_words(key, label)
    noun = (step.noun or "").strip()
    counted = "" if not noun else "factor" if noun[:1] in ("×", "x") else "count"
    period = _PER_NOUN.search(noun) if base == "1" else _PER_KEY.search(key) if base == "USD" else None
    per_s = _PERIOD_S[next(g for g in period.groups() if g).lower()] if period else 0.0
    if per_s and counted == "count" and not _word_set(noun):
        counted = ""  # "per day" says how often, not what is counted
    return _Figure(key, label, step, base, reference, step.percent or (step.unit or "").strip() == "%",
                   _tolerance_for(tolerance, key), words, counted=counted, per_s=per_s,
                   accepted=_word_set(noun) | words[0] | words[1])


_PERIOD_S = {"second": 1.0, "minute": 60.0, "hour": 3600.0, "day": 86400.0, "week": 7 * 86400.0,
             "year": 365 * 86400.0, "annual": 365 * 86400.0}
_PER_NOUN = re.compile(r"\bper\s+(?:\w+-)?(second|minute|hour|day|week|year)\b", re.IGNORECASE)
_PER_KEY = re.compile(r"(?:^|_)(?:per_)(hour|day|week|year)(?:_|$)|(?:^|_)(annual)(?:_|$)")
_RATE_OF = {"1": "1/s", "USD": "USD/h"}


def _reference_text(step: Step) -> str:
    if not step.is_numeric:
        return str(step.value)
    try:
        return step.display()
    except Exception:  # noqa: BLE001 - a unit the formatter does not know: the number and the unit
        return f"{format_number(step.value)} {step.unit}"


def read_document(document: str, derivation: Derivation, figures: Sequence[tuple[str, str]],
                  tolerance: Mapping[str, float] | float = DEFAULT_TOLERANCE) -> list[FigureFinding]:
    """For each (step key, label) of `figures`, whether `document` states it right, wrong or not
    at all (rules in the module docstring). Findings come in the order of `figures`."""
    qs = quantities(document if isinstance(document, str) else "")
    figs = [_figure(derivation, key, label, tolerance) for key, label in figures]
    coverage: dict[tuple[int, int], float] = {}
    arounds = [_around(q) for q in qs]

    def cov(f: int, q: int) -> float:
        if (f, q) not in coverage:
            coverage[(f, q)] = _coverage(figs[f].words, arounds[q])
        return coverage[(f, q)]

    numeric = [i for i, f in enumerate(figs) if f.base is not None]
    by_unit: dict[str, list[int]] = {}
    for q, quantity in enumerate(qs):
        for unit in dict.fromkeys([quantity.unit, *(u for _, u, _ in quantity.also)]):
            by_unit.setdefault(unit, []).append(q)

    # Rights: quantities within tolerance, best named first, then closest, then first.
    right_prefs: dict[int, list[int]] = {}
    for f in numeric:
        fig = figs[f]
        scored = []
        for q in _candidates(by_unit, fig):
            readings = _readings(fig, qs[q])
            hits = [v for v, _ in readings if _within(v, fig.reference, fig.tol)]
            if hits and (qs[q].unit != "1" or _counts_it(fig, qs[q]) or cov(f, q) > 0):
                closest = min(_closeness(v, fig.reference) for v in hits)
                scored.append((-cov(f, q), closest, q))
        right_prefs[f] = [q for *_, q in sorted(scored)]
    by_strength = sorted(right_prefs, key=lambda f: (-(cov(f, right_prefs[f][0]) if right_prefs[f] else 0), f))
    rights = _match(right_prefs, by_strength)
    used = set(rights.values())

    # Wrongs: for figures still open, free quantities of their dimension that name them.
    wrong_prefs: dict[int, list[int]] = {}
    for f in numeric:
        if f in rights:
            continue
        fig = figs[f]
        scored = []
        words = fig.words[0] | fig.words[1]
        for q in _candidates(by_unit, fig):
            if q in used or words.isdisjoint(arounds[q]) or _operand(document, qs[q]):
                continue
            readings = _readings(fig, qs[q])
            c = cov(f, q) if readings else 0.0
            if c >= NAMED_COVERAGE * (1 - 1e-9):
                closest = min(_closeness(v, fig.reference) for v, _ in readings)
                scored.append((-c, closest, q))
        wrong_prefs[f] = [q for *_, q in sorted(scored)]
    by_strength = sorted(wrong_prefs, key=lambda f: (-(cov(f, wrong_prefs[f][0]) if wrong_prefs[f] else 0), f))
    wrongs = _match(wrong_prefs, by_strength)

    findings: list[FigureFinding] = []
    for f, fig in enumerate(figs):
        reference = _reference_text(fig.step)
        if f in rights:
            findings.append(FigureFinding(fig.key, fig.label, "right", qs[rights[f]].text, reference))
        elif f in wrongs:
            q = qs[wrongs[f]]
            value, typed = min(_readings(fig, q), key=lambda r: _closeness(r[0], fig.reference))
            findings.append(FigureFinding(fig.key, fig.label, "wrong", q.text, reference, _off(q, value, typed, fig)))
        elif not fig.step.is_numeric:
            said = _said_word(document, fig)
            findings.append(FigureFinding(fig.key, fig.label, "right" if said else "missing", said, reference))
        else:
            findings.append(FigureFinding(fig.key, fig.label, "missing", None, reference))
    return findings


_OPERATOR_AFTER = re.compile(r"\s*(?:[/×*+−]|x\s|-\s)")
_OPERATOR_BEFORE = re.compile(r"(?:[/×*+−]|\sx|\s-)\s*$")


def _operand(document: str, q: Quantity) -> bool:
    """A number inside working ("2,000 / 250 = 8 GPUs"): an operand states an input of the sum,
    not a figure, so it is never taken as a wrong attempt at one (the result after "=" may be)."""
    return bool(_OPERATOR_AFTER.match(document, q.end) or _OPERATOR_BEFORE.search(document[max(0, q.start - 3):q.start]))


def _said_word(document: str, fig: _Figure) -> str | None:
    """A text-valued step is right when its word stands in a sentence that names the figure."""
    word = str(fig.step.value).strip()
    if not word or not isinstance(document, str):
        return None
    for m in re.finditer(rf"(?<![A-Za-z]){re.escape(word)}(?![A-Za-z])", document, re.IGNORECASE):
        line_start = document.rfind("\n", 0, m.start()) + 1
        line_end = document.find("\n", m.end())
        line_end = len(document) if line_end < 0 else line_end
        s, e = _sentence_bounds(document, line_start, line_end, m.start(), m.end())
        probe = Quantity(m.group(0), m.start(), m.end(), 0.0, "", document[s:e].lower(),
                         near=_near_words(_positioned_words(document, s, e), m.start(), m.end()))
        if _coverage(fig.words, _around(probe)) >= NAMED_COVERAGE * (1 - 1e-9):
            return m.group(0)
    return None


# ---------------------------------------------------------------------------------------------
# Saying how a wrong figure is off

# Units a slip is made between, by dimension: a wrong figure whose number is right in one of them
# is named as that slip. Counts and money slip by a magnitude word instead (see _magnitude_slip).
_NEIGHBOURS = {
    "B": ("B", "kB", "MB", "GB", "TB", "PB", "KiB", "MiB", "GiB", "TiB", "b", "kb", "Mb", "Gb", "Tb"),
    "B/s": ("B/s", "kB/s", "MB/s", "GB/s", "TB/s", "KiB/s", "MiB/s", "GiB/s", "b/s", "kb/s", "Mb/s",
            "Gb/s", "Tb/s"),
    "s": ("ns", "us", "ms", "s", "min", "h", "d", "week", "yr"),
    "W": ("W", "kW", "MW", "GW"),
    "Wh": ("Wh", "kWh", "MWh", "GWh", "TWh"),
    "FLOP": ("FLOP", "GFLOP", "TFLOP", "PFLOP", "EFLOP"),
    "FLOP/s": ("FLOP/s", "GFLOP/s", "TFLOP/s", "PFLOP/s", "EFLOP/s"),
    "1/s": ("1/s", "1/min", "1/h", "1/d"),
}
_SHOWN = {"1/s": "/s", "1/min": "/min", "1/h": "/h", "1/d": "/d", "us": "µs"}
_PREFIXED_UNIT = re.compile(r"^(?P<p>Ki|Mi|Gi|Ti|Pi|[kKMGTPEmunµ]?)(?P<b>B|b|Wh|W|FLOP|s)(?P<rest>/s)?$")
_MAGNITUDE = re.compile(r"\d\s*(?P<w>k|K|M|B|T|bn|mn|thousand|million|billion|trillion)(?![A-Za-z])")
_MAGNITUDE_SIZE = {"k": 1e3, "K": 1e3, "thousand": 1e3, "M": 1e6, "mn": 1e6, "million": 1e6,
                   "B": 1e9, "bn": 1e9, "billion": 1e9, "T": 1e12, "trillion": 1e12}
_MAGNITUDE_WORD = {1.0: "", 1e3: "k", 1e6: "M", 1e9: "B", 1e12: "T"}


def _ratio_text(ratio: float) -> str:
    if ratio >= 10:
        return format_number(ratio, 2)
    return f"{ratio:.3g}"  # 1.25x, not 1.2x beside "25% too high"


def _slip_kind(typed: str, meant: str) -> str:
    """"unit prefix", "KiB vs KB", "bits vs bytes" (or two of them) for a slip between two
    prefixed units ("MB" for "kB", "ms" for "s"); "" for others ("min" for "s")."""
    a, b = _PREFIXED_UNIT.match(typed), _PREFIXED_UNIT.match(meant)
    if not (a and b) or a.group("rest") != b.group("rest"):
        return ""
    kinds = []
    if a.group("b") != b.group("b"):
        if {a.group("b"), b.group("b")} != {"B", "b"}:
            return ""
        kinds.append("bits vs bytes")
    if ("i" in a.group("p")) != ("i" in b.group("p")):
        kinds.append("KiB vs KB")

    def prefix(m: re.Match) -> str:
        return {"K": "k", "µ": "u"}.get(m.group("p").replace("i", ""), m.group("p").replace("i", ""))

    if prefix(a) != prefix(b):
        kinds.append("unit prefix")
    return ", ".join(kinds)


def _unit_slip(typed: str, base: str, ratio: float, tol: float) -> tuple[float, str] | None:
    """(factor, "MB for kB? (unit prefix)") when the typed number is right in a neighbouring unit."""
    if not typed or base not in _NEIGHBOURS:
        return None
    try:
        typed_size = _to_base(typed)
    except Exception:  # noqa: BLE001 - a typed unit outside our registry: no suggestion
        return None
    best = None
    for meant in _NEIGHBOURS[base]:
        if meant == typed:
            continue
        factor = typed_size / _to_base(meant)
        if abs(ratio / factor - 1) <= tol:
            distance = abs(math.log(ratio / factor))
            if best is None or distance < best[0]:
                best = (distance, factor, meant)
    if best is None:
        return None
    _, factor, meant = best
    kind = _slip_kind(typed, meant)
    shown_typed, shown_meant = _SHOWN.get(typed, typed), _SHOWN.get(meant, meant)
    return factor, f"{shown_typed} for {shown_meant}?" + (f" ({kind})" if kind else "")


def _magnitude_slip(q: Quantity, base: str, ratio: float, tol: float) -> tuple[float, str] | None:
    """A count, a rate or money off by a magnitude word ("k for M?") or a percent sign."""
    if base not in ("1", "USD", "1/s", "USD/h"):
        return None
    if base == "1":
        if q.typed_unit == "%" and abs(ratio / 0.01 - 1) <= tol:
            return 0.01, "a fraction written as a percent?"
        if q.typed_unit != "%" and abs(ratio / 100 - 1) <= tol:
            return 100.0, "a percentage without its % sign?"
    m = _MAGNITUDE.search(q.text)
    typed = _MAGNITUDE_SIZE[m.group("w")] if m else 1.0
    for meant, word in _MAGNITUDE_WORD.items():
        factor = typed / meant
        if meant != typed and abs(ratio / factor - 1) <= tol:
            if m is None:
                return factor, "a magnitude slip?"
            return factor, f"{m.group('w')} for {word}?" if word else f"{m.group('w')} where none belongs?"
    return None


def _factor_words(factor: float) -> str:
    if factor >= 1:
        return f"about {format_number(factor, 4)}x the reference"
    return f"about 1/{format_number(1 / factor, 4)} of the reference"


def _off(q: Quantity, value: float, typed: str, fig: _Figure) -> str:
    """How a wrong figure is off, in words: the ratio, and the slip it looks like if any."""
    reference = fig.reference
    if reference == 0:
        return f"{format_number(value)} where the reference is 0"
    ratio = value / reference
    if ratio <= 0:
        return "the sign is wrong" if ratio < 0 else "0 where the reference is not"
    tol = max(fig.tol, 0.02)  # a slip is named at the figure's tolerance, and never tighter than 2%
    slip = _unit_slip(typed, fig.base or "", ratio, tol) or _magnitude_slip(q, fig.base or "", ratio, tol)
    if slip is None:
        if 0.5 < ratio < 2:
            share = format_number(abs(ratio - 1) * 100, 2)
            return f"{_ratio_text(ratio)}x the reference ({share}% too {'high' if ratio > 1 else 'low'})"
        return f"{_ratio_text(ratio)}x the reference"
    factor, why = slip
    if 0.9 < factor < 1.12:  # KiB for kB and the like: the ratio itself says it
        return f"{_ratio_text(ratio)}x the reference: {why}"
    return f"{_factor_words(factor)}: {why}"
