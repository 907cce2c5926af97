"""Reading one short text into typed values (slots), content words and polarity.

A *slot* is a value whose exact form matters: a number with its unit, a duration, a date,
a time, a version, a URL (and its scheme), a path, an identifier, a colour, a quoted
string. Everything else is a *word*: lower-cased, stemmed (Snowball), marked when it is
capitalised inside the sentence (a name). Function words are dropped from the words but
kept in the token stream, where they mark polarity (negators).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from decimal import Decimal
from functools import lru_cache
from typing import Any

from .lexicon import (
    COLOURS,
    FRACTIONS,
    FUNCTION_WORDS,
    MONTHS,
    MULTIPLIERS,
    NEGATORS,
    NUMBER_WORDS,
    ORDINALS,
    TIME_UNITS,
    WEEKDAYS,
)

__all__ = ["Item", "Reading", "Slot", "read", "stem"]


@dataclass(frozen=True)
class Slot:
    """A value: ``key`` is its comparable form, ``text`` how the text wrote it."""

    kind: str
    key: str
    text: str
    pos: int
    unit: str | None = None
    """For numbers: the counted noun right after it (stemmed), e.g. ``request`` in "20 requests"."""
    rate: str | None = None
    """For numbers: the per-unit of a rate, e.g. ``60`` (seconds) in "20 per minute"."""


@dataclass(frozen=True)
class Item:
    """A content word (or an identifier, matched by its parts)."""

    kind: str  # "word" | "identifier"
    text: str  # as written (identifiers keep their case)
    stem: str
    pos: int
    name: bool = False
    parts: tuple[str, ...] = ()
    """Stems of an identifier's parts (``playerHealth`` -> player, health)."""


@dataclass(frozen=True)
class Reading:
    """Everything the comparison needs from one text."""

    text: str
    slots: tuple[Slot, ...]
    items: tuple[Item, ...]
    tokens: tuple[str, ...]
    """The lower-cased token stream (slots appear as their key), for negation and acronyms."""
    negations: int
    negated: frozenset[str] = frozenset()
    """Keys (stems, or slot tokens) of the items a negator applies to ("not enabled" -> enabl)."""


# -------------------------------------------------------------------------------- stemming


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    from py_rust_stemmers import SnowballStemmer  # type: ignore[import-untyped]

    return SnowballStemmer("english")


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """Snowball (Porter 2) stem of a lower-case word."""
    return str(_stemmer().stem_word(word))


# -------------------------------------------------------------------------------- patterns

_URL = r"(?P<url>\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\"<>)\]]+[^\s'\"<>)\].,;:!?])"
_EMAIL = r"(?P<email>\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+)"
_QUOTED = (
    r"(?P<quoted>(?<![\w])'([^'\n]{1,80})'(?![\w])|\"([^\"\n]{1,80})\"|`([^`\n]{1,80})`"
    r"|\u201c([^\u201d\n]{1,80})\u201d|\u2018([^\u2019\n]{1,80})\u2019)"
)
_HEX = r"(?P<hex>#[0-9a-fA-F]{6}\b|#[0-9a-fA-F]{3}\b)"
_DATEFMT = r"(?P<datefmt>(?i:\b(?:dd|mm|yyyy|yy)(?:[/.-](?:dd|mm|yyyy|yy)){1,2}\b))"
_DATE = (
    r"(?P<date>\b\d{4}-\d{1,2}-\d{1,2}\b|\b\d{1,2}[/.]\d{1,2}[/.]\d{2,4}\b"
    r"|(?i:\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\s+\d{1,2}(?:st|nd|rd|th)?"
    r"(?:,?\s+\d{4})?\b)"
    r"|(?i:\b\d{1,2}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*"
    r"(?:,?\s+\d{4})?\b))"
)
_TIME = (
    r"(?P<time>\b\d{1,2}:\d{2}(?::\d{2})?(?:\s*(?i:am|pm|a\.m\.|p\.m\.))?(?!\w)"
    r"|\b\d{1,2}\s*(?:(?i:am|pm)\b|(?i:a\.m\.|p\.m\.)))"
)
_PATH = (
    r"(?P<path>(?<![\w/])(?:~|\.{1,2})?/[A-Za-z_:.{<\[][\w.:@%+{}<>\[\]-]*(?:/[\w.:@%+{}<>\[\]-]+)*/?"
    r"|\b[\w.-]+(?:/[\w.-]+)+\.[A-Za-z][A-Za-z0-9]{0,5}\b"
    r"|\b(?![A-Za-z]\.[A-Za-z]\b)[A-Za-z0-9_-]*[A-Za-z_-][A-Za-z0-9_-]*\.(?:[a-z][a-z0-9]{0,3}|[A-Z][A-Z0-9]{0,3})\b"
    r"(?!\.\w))"
)
_VERSION = r"(?P<version>\b[vV]\d+(?:\.\d+)*\b|\b\d+\.\d+\.\d+(?:[.-][\w]+)*\b)"
_RATIO = r"(?P<ratio>\b\d+(?:\.\d+)?/\d+(?:\.\d+)?\b(?!/))"
_NUMBER = (
    r"(?P<number>(?:(?<![\w.])[-+]?\d(?:[\d,]*\d)?(?:\.\d+)?(?:[eE][-+]?\d+)?|(?<=\.\.)\d+(?:\.\d+)?)"
    r"(?P<suffix>%|[A-Za-z]{1,3}\b)?(?:/(?P<per>[A-Za-z]{1,8})\b)?)"
)
_IDENT = (
    r"(?P<ident>\b[A-Za-z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)*-(?:[A-Za-z]|\d+)\b(?![-.]\w)"
    r"|\b[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+\b"
    r"|\b[a-z]{2,}[0-9]*(?:[A-Z][a-z0-9]*)+\b"
    r"|\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+\b"
    r"|\b[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+\b)"
)
_AMP = r"(?P<amp>\b[A-Za-z]&[A-Za-z]\b)"
_ARROW = r"(?P<arrow>->|=>|\u2192)"
_WORD = r"(?P<word>[A-Za-z][A-Za-z0-9]*(?:'[a-z]+)?)"
_SCANNER = re.compile(
    "|".join((_URL, _EMAIL, _QUOTED, _HEX, _DATEFMT, _DATE, _TIME, _PATH, _VERSION, _RATIO, _NUMBER, _IDENT,
              _AMP, _ARROW, _WORD))
)
_IDENT_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;\n(\"]\s*)$")


def _number_key(raw: str) -> str | None:
    """Canonical decimal string of a number (3e-4 and 0.0003 are one key; 3.10 keeps its digits)."""
    text = raw.replace(",", "")
    try:
        value = Decimal(text)
        if "e" in text.lower():
            # "1e7014479" inside a hex id is no number anyone writes (and would overflow the context).
            if abs(value.adjusted()) > _MAX_EXPONENT:
                return None
            return format(value.normalize(), "f")
    except ArithmeticError:  # InvalidOperation, Overflow
        return None
    text = text.lstrip("+")
    if text.isdigit():
        return text.lstrip("0") or "0"  # "section 02" is section 2; a decimal keeps its digits ("3.10")
    return text


_MAX_EXPONENT = 30
"""Largest power of ten read as scientific notation ("3e-4", "6.02e23"); beyond it the digits are an id."""


def _minutes(text: str) -> str:
    m = re.match(r"(\d{1,2})(?::(\d{2}))?", text)
    if not m:
        return text
    hour, minute = int(m.group(1)), int(m.group(2) or 0)
    low = text.lower().replace(".", "")
    if low.endswith("pm") and hour < 12:
        hour += 12
    if low.endswith("am") and hour == 12:
        hour = 0
    return f"{hour:02d}:{minute:02d}"


def _date_key(text: str) -> str:
    low = text.lower()
    if re.fullmatch(r"\d{4}-\d{1,2}-\d{1,2}", low):
        y, mo, d = (int(x) for x in low.split("-"))
        return f"{y:04d}-{mo:02d}-{d:02d}"
    month = next((n for name, n in MONTHS.items() if re.search(rf"\b{name}", low)), None)
    if month is not None:
        nums = [int(x) for x in re.findall(r"\d+", low)]
        day = next((n for n in nums if n <= 31), 0)
        year = next((n for n in nums if n > 31), 0)
        return f"{year:04d}-{month:02d}-{day:02d}" if year else f"{month:02d}-{day:02d}"
    return re.sub(r"[/.]", "/", low)


def _is_sentence_start(text: str, start: int) -> bool:
    return bool(_SENTENCE_START.search(text[:start]))


def _split_identifier(ident: str) -> tuple[str, ...]:
    parts: list[str] = []
    for piece in re.split(r"[._]", ident):
        parts.extend(p.lower() for p in _IDENT_PART.findall(piece))
    return tuple(stem(p) for p in parts if p)


@lru_cache(maxsize=8192)
def read(text: str) -> Reading:
    """Read ``text`` into slots, content items, tokens and negations (cached per text)."""
    slots: list[Slot] = []
    items: list[Item] = []
    tokens: list[str] = []

    def add_slot(kind: str, key: str, raw: str, unit: str | None = None, rate: str | None = None) -> None:
        slots.append(Slot(kind, key, raw, len(tokens), unit, rate))
        tokens.append(f"<{kind}:{key}>")

    def add_number(num: _Number, raw: str) -> None:
        add_slot("number", num.key, raw, num.unit, num.rate)
        if num.noun and num.noun not in FUNCTION_WORDS:
            items.append(Item("word", num.noun, stem(num.noun), len(tokens) - 1))

    matches = list(_SCANNER.finditer(text))
    i = 0
    while i < len(matches):
        m = matches[i]
        kind = m.lastgroup
        raw = m.group(0)
        if kind == "url":
            add_slot("url", raw.lower().rstrip("/"), raw)
        elif kind == "email":
            add_slot("identifier", raw.lower(), raw)
        elif kind == "quoted":
            inner = next(g for g in m.groups()[1:6] if g is not None) if m.group("quoted") else raw
            add_slot("quoted", " ".join(inner.lower().split()), inner)
            # The quoted words also count as words: "'Pocket Budget'" restates "Pocket Budget".
            for w in re.findall(r"[A-Za-z][A-Za-z0-9]*", inner):
                low = w.lower()
                if low not in FUNCTION_WORDS:
                    items.append(Item("word", w, stem(low), len(tokens), name=w[:1].isupper()))
        elif kind == "hex":
            add_slot("colour", raw.lower(), raw)
        elif kind == "datefmt":
            add_slot("date", raw.upper().replace(".", "/").replace("-", "/"), raw)
        elif kind == "date":
            add_slot("date", _date_key(raw), raw)
        elif kind == "time":
            add_slot("time", _minutes(raw), raw)
        elif kind == "path":
            raw = raw.rstrip(".") or raw  # a full stop after a path ends the sentence ("... /api/projects/{id}.")
            add_slot("path", raw.lower().rstrip("/") or "/", raw)
        elif kind == "version":
            add_slot("version", raw.lower().lstrip("v"), raw)
        elif kind == "ratio" and (day_month := _day_month(raw)) is not None:
            add_slot("date", day_month, raw)  # "ends 31/5": a day past 12 before a month is a date
        elif kind == "ratio":
            add_slot("number", raw, raw)
        elif kind == "number" and (day_time := _time_of_day(matches, i)) is not None:
            add_slot("time", day_time[0], text[m.start() : matches[day_time[1]].end()])  # "2 in the morning"
            i = day_time[1]
        elif kind == "number" and (clock := _oclock(matches, i)) is not None:
            add_slot("time", clock, text[m.start() : matches[i + 1].end()])  # "9 o'clock"
            i += 1
        elif kind == "number" and (shared := _range_start(matches, i)) is not None:
            add_slot(shared[0], shared[1], raw)  # "1-3pm", "from 7 to 14 days": the end's unit is the start's too
        elif kind == "number":
            num = _read_number(m, matches, i)
            if num is not None:
                add_number(num, text[m.start() : matches[num.end].end()])
                i = num.end
            else:
                add_slot("identifier", raw.lower(), raw)  # digits that are no number ("1e7014479" of an id)
        elif kind == "ident":
            parts = _split_identifier(raw)
            items.append(Item("identifier", raw, "".join(parts), len(tokens), parts=parts))
            tokens.append(raw.lower())
        elif kind == "amp":
            tokens.append(raw.lower().replace("&", ""))
            items.append(Item("word", raw, raw.lower().replace("&", ""), len(tokens) - 1))
        elif kind == "arrow":
            tokens.append("->")
        elif kind == "word":
            low = raw.lower()
            if low == "not" and text[: m.start()].rstrip().endswith(","):
                # "a 404, not a 500": a contrast naming the old side, not a negation of the request.
                tokens.extend(("rather", "than"))
            elif low == "and" and (more := _and_a_half(matches, i, slots, tokens)) is not None:
                # "a minute and a half", "2 and a half hours": one duration
                slots[-1] = replace(
                    slots[-1], key=more[0], text=f"{slots[-1].text} {text[m.start() : matches[more[1]].end()]}"
                )
                tokens[-1] = f"<number:{more[0]}>"
                i = more[1]
            elif low == "no" and text[m.end() : m.end() + 1] == "." and _next_is_number(matches, i):
                pass  # "no. 17": the number sign, not a negation
            elif low in ("no", "not") and _comparative_than(matches, i):
                tokens.append("no")  # "no / not more than 6": a bound, not a negation
            elif low.endswith("n't") or low in NEGATORS:
                tokens.append("not")
            elif low == "longer" and i > 0 and matches[i - 1].group(0).lower() == "no":
                pass  # "no longer optional": the negation applies to what follows
            elif low in ("half", "quarter") and (clock_time := _past_or_to(matches, i)) is not None:
                add_slot("time", clock_time[0], text[m.start() : matches[clock_time[1]].end()])  # "half past three"
                i = clock_time[1]
            elif low in FRACTIONS and (span := _fraction_of_unit(matches, i)) is not None:
                # "a quarter of an hour", "half a day": a duration
                add_slot("number", _seconds(str(FRACTIONS[low]), span[1]), text[m.start() : matches[span[0]].end()])
                i = span[0]
            elif low == "other" and i > 0 and matches[i - 1].group(0).lower() == "every":
                add_slot("number", "#2", raw)  # "every other Friday" is every second one
            elif low in ("a", "an") and _next_word(matches, i) in TIME_UNITS and len(_next_word(matches, i)) > 1:
                unit = _next_word(matches, i)
                add_slot("number", _seconds("1", TIME_UNITS[unit]), text[m.start() : matches[i + 1].end()])
                i += 1
            elif low in NUMBER_WORDS and (day_time := _time_of_day(matches, i)) is not None:
                add_slot("time", day_time[0], text[m.start() : matches[day_time[1]].end()])  # "ten in the morning"
                i = day_time[1]
            elif low in NUMBER_WORDS and (clock := _oclock(matches, i)) is not None:
                add_slot("time", clock, text[m.start() : matches[i + 1].end()])  # "nine o'clock"
                i += 1
            elif low in NUMBER_WORDS and not _is_determiner_one(low, matches, i):
                num = _read_number_words(matches, i)
                add_number(num, text[m.start() : matches[num.end].end()])
                i = num.end
            elif low in MULTIPLIERS:
                add_slot("number", f"x{MULTIPLIERS[low]}", raw)
            elif low in ORDINALS and not (low == "second" and _after_number(tokens)) and _ordinal_modifies(matches, i):
                add_slot("number", f"#{ORDINALS[low]}", raw)
            elif low in COLOURS:
                add_slot("colour", low, raw)
            elif low in ("noon", "midday", "midnight"):
                add_slot("time", "00:00" if low == "midnight" else "12:00", raw)  # "at noon" is 12:00
            elif (day := low.removesuffix("'s")) in WEEKDAYS:
                add_slot("date", f"weekday-{WEEKDAYS[day]}", raw)  # "Saturday's matinee" names Saturday
            elif low in MONTHS and len(low) > 3:
                add_slot("date", f"month-{MONTHS[low]:02d}", raw)
            else:
                base = low.removesuffix("'s")
                head, _, clitic = low.partition("'")
                if clitic in ("d", "m", "ve", "re", "ll") and head in FUNCTION_WORDS:
                    base = head  # "I'd", "we're": a pronoun and an auxiliary
                tokens.append(base)
                # One letter is a word only when written as a capital (a key: "when P is pressed").
                if base not in FUNCTION_WORDS and (len(base) > 1 or raw.isupper()):
                    name = (raw[:1].isupper() and not _is_sentence_start(text, m.start())) or (
                        raw.isupper() and len(raw) > 1
                    )
                    items.append(Item("word", raw, stem(base), len(tokens) - 1, name=bool(name)))
        i += 1

    return Reading(
        text=text,
        slots=tuple(slots),
        items=tuple(items),
        tokens=tuple(tokens),
        negations=_negation_count(tokens),
        negated=_negated(tokens, {item.pos: item.stem for item in items if item.kind == "identifier"}),
    )


def _next_word(matches: list[re.Match[str]], i: int) -> str:
    nxt = matches[i + 1] if i + 1 < len(matches) else None
    return nxt.group(0).lower() if nxt is not None and nxt.lastgroup == "word" else ""


_PARTS_OF_DAY = {"morning": 0, "afternoon": 12, "evening": 12}


def _time_of_day(matches: list[re.Match[str]], i: int) -> tuple[str, int] | None:
    """An hour (digits or a number word) followed by "in the morning / afternoon / evening": (its time key, index
    of the last word)."""
    words = [matches[j].group(0).lower() for j in range(i + 1, min(len(matches), i + 4))]
    if len(words) < 3 or words[:2] != ["in", "the"] or words[2] not in _PARTS_OF_DAY:
        return None
    hour = _hour(matches[i])  # "2 in the morning", "ten in the morning"
    if hour is None:
        return None
    return f"{hour % 12 + _PARTS_OF_DAY[words[2]]:02d}:00", i + 3


def _hour(match: re.Match[str]) -> int | None:
    """An hour of a clock (1-12) written as digits or as a number word, or None."""
    raw = match.group(0).lower()
    if match.lastgroup == "number" and raw.isdigit():
        value = int(raw)
    elif match.lastgroup == "word" and raw in NUMBER_WORDS and NUMBER_WORDS[raw] == int(NUMBER_WORDS[raw]):
        value = int(NUMBER_WORDS[raw])
    else:
        return None
    return value if 1 <= value <= 12 else None


def _oclock(matches: list[re.Match[str]], i: int) -> str | None:
    """ "9 o'clock", "nine o'clock": the hour as a time (without am/pm, like "9:00")."""
    if i + 1 >= len(matches) or matches[i + 1].group(0).lower() != "o'clock":
        return None
    hour = _hour(matches[i])
    return f"{hour:02d}:00" if hour is not None else None


def _past_or_to(matches: list[re.Match[str]], i: int) -> tuple[str, int] | None:
    """ "half past three", "quarter to nine": (the time, index of the hour)."""
    if i + 2 >= len(matches) or matches[i + 1].group(0).lower() not in ("past", "to"):
        return None
    hour = _hour(matches[i + 2])
    if hour is None:
        return None
    minutes = 30 if matches[i].group(0).lower() == "half" else 15
    if matches[i + 1].group(0).lower() == "to":
        if minutes == 30:
            return None  # "half to" is no English time
        hour, minutes = (hour - 1) or 12, 60 - minutes
    return f"{hour:02d}:{minutes:02d}", i + 2


def _comparative_than(matches: list[re.Match[str]], i: int) -> bool:
    """ "no more than", "not less than": "no" / "not" before a comparative and "than"."""
    words = [matches[j].group(0).lower() for j in range(i + 1, min(len(matches), i + 3))]
    return len(words) == 2 and words[1] == "than" and words[0] in ("more", "less", "fewer", "greater", "later",
                                                                      "earlier", "longer", "shorter")


_RANGE_BETWEEN = re.compile(r"\s*(?:-|\u2013|to|and|or)\s*")


def _range_start(matches: list[re.Match[str]], i: int) -> tuple[str, str] | None:
    """A bare number that starts a range whose end carries the unit: (slot kind, key) with that unit ("1-3pm":
    13:00; "from 7 to 14 days": 7 days; "between 10 and 20%": 10%); None when the number has its own unit."""
    m = matches[i]
    if not m.group(0).isdigit() or _next_word(matches, i) not in ("", "to", "and", "or"):
        return None
    j = i + 1 if i + 1 < len(matches) and matches[i + 1].lastgroup != "word" else i + 2
    if j >= len(matches) or not _RANGE_BETWEEN.fullmatch(m.string[m.end() : matches[j].start()]):
        return None
    end = matches[j]
    if end.lastgroup == "date" and 1 <= int(m.group(0)) <= 31 and re.match(r"\d{1,2}(?:st|nd|rd|th)?\s", end.group(0)):
        # "20-22 June": the start is a day of the end's month
        return "date", _date_key(f"{int(m.group(0))} {end.group(0).split(maxsplit=1)[1]}")
    if end.lastgroup in ("number", "word") and (day_time := _time_of_day(matches, j)) is not None:
        hour = _hour(m)  # "1 to 4 in the afternoon": the start is in the afternoon too
        if hour is None:
            return None
        return "time", f"{hour % 12 + (12 if day_time[0] >= '12:00' else 0):02d}:00"
    if end.lastgroup == "time":
        meridiem = re.search(r"(?i)[ap]\.?m\.?$", end.group(0))
        if meridiem is None or _hour(m) is None:
            return None
        return "time", _minutes(m.group(0) + meridiem.group(0))
    if end.lastgroup != "number":
        return None
    unit = end.group("suffix") or _next_word(matches, j)
    unit = unit.lower() if unit else ""
    if unit in TIME_UNITS and len(unit) > 1:
        return "number", _seconds(m.group(0), TIME_UNITS[unit])
    if unit in ("%", "percent", "pct"):
        return "number", _percent(m.group(0))
    return None


def _day_month(raw: str) -> str | None:
    """ "31/5": a day past 12 before a month, read as the date ("05-31"); None for a ratio ("80/20", "3/4")."""
    first, _, second = raw.partition("/")
    if not (first.isdigit() and second.isdigit()) or raw == "24/7":
        return None  # "24/7" is English for "all the time", not the 24th of July
    day, month = int(first), int(second)
    return f"{month:02d}-{day:02d}" if 12 < day <= 31 and 1 <= month <= 12 else None


def _and_a_half(
    matches: list[re.Match[str]], i: int, slots: list[Slot], tokens: list[str]
) -> tuple[str, int] | None:
    """At "and" after a value: "and a half" adding half a unit to the duration before it ("a minute and a half":
    90 s), or "and a half <unit>" after a bare count ("2 and a half hours": 9000 s). (The key, index of the last
    word.)"""
    if not slots or not tokens or not tokens[-1].startswith("<number:"):
        return None
    words = [matches[j].group(0).lower() for j in range(i + 1, min(len(matches), i + 4))]
    if words[:2] != ["a", "half"]:
        return None
    last = slots[-1]
    for unit, seconds in TIME_UNITS.items():
        if len(unit) > 1 and last.key == _seconds("1", seconds):
            return _seconds("1.5", seconds), i + 2  # "a minute and a half"
    if len(words) == 3 and words[2] in TIME_UNITS and len(words[2]) > 1 and last.key.replace(".", "").isdigit():
        return _seconds(str(Decimal(last.key) + Decimal("0.5")), TIME_UNITS[words[2]]), i + 3
    return None


def _next_is_number(matches: list[re.Match[str]], i: int) -> bool:
    return i + 1 < len(matches) and matches[i + 1].lastgroup == "number"


def _fraction_of_unit(matches: list[re.Match[str]], i: int) -> tuple[int, float] | None:
    """For a fraction word at ``i`` followed by [of] [a|an] and a time unit: (index of the unit, its seconds)."""
    j = i + 1
    for optional in ("of", "a|an"):
        if j < len(matches) and matches[j].group(0).lower() in optional.split("|"):
            j += 1
    if j < len(matches) and (j > i + 1 or matches[i].group(0).lower() == "half") and matches[j].lastgroup == "word":
        word = matches[j].group(0).lower()
        if word in TIME_UNITS and len(word) > 1:
            return j, TIME_UNITS[word]
    return None


def _is_determiner_one(low: str, matches: list[re.Match[str]], i: int) -> bool:
    """ "one" used as a pronoun or article ("the one", "one of") is not a count."""
    if low != "one":
        return False
    nxt = matches[i + 1].group(0).lower() if i + 1 < len(matches) else ""
    return nxt in ("of", "") or nxt in _PRONOUNS


_PRONOUNS = frozenset(["i", "you", "he", "she", "we", "they", "it", "that", "which", "who"])
"""Words that start a clause after a pronoun "one" ("pick one I can walk to", "the one that failed")."""


def _ordinal_modifies(matches: list[re.Match[str]], i: int) -> bool:
    """An ordinal word counts ("the first of the month", "every second Friday", "on first launch") when a word or
    value follows it in the same phrase; alone or before punctuation it is an adverb ("confirm in a dialog first")."""
    if i + 1 >= len(matches) or matches[i].string[matches[i].end() : matches[i + 1].start()].strip():
        return False
    nxt = matches[i + 1]
    if nxt.lastgroup in ("number", "time") or nxt.group(0).lower() in NUMBER_WORDS:
        return False  # "the first 12 seconds", "the first ten": which ones, not a count of its own
    return nxt.lastgroup != "word" or nxt.group(0).lower() == "of" or nxt.group(0).lower() not in FUNCTION_WORDS


def _after_number(tokens: list[str]) -> bool:
    return bool(tokens) and tokens[-1].startswith("<number:")


def _unit_after(matches: list[re.Match[str]], j: int) -> tuple[str | None, float | None, str | None, int]:
    """The unit after a number whose next match is ``j``: (counted noun, seconds, per-unit, matches consumed)."""
    used = 0
    noun: str | None = None
    word = matches[j].group(0).lower() if j < len(matches) and matches[j].lastgroup == "word" else ""
    if word and matches[j].string[matches[j - 1].end() : matches[j].start()].strip() not in ("", "-"):
        word = ""  # "max 10, target": punctuation between, so not the number's unit ("30-minute" is one)
    if word in TIME_UNITS:
        return None, TIME_UNITS[word], None, 1
    if word in ("percent", "pct"):
        return None, None, "%", 1
    if word == "per" and j + 1 < len(matches) and matches[j + 1].group(0).lower() == "cent":
        return None, None, "%", 2
    if word and word not in FUNCTION_WORDS and word not in NUMBER_WORDS and len(word) > 1:
        noun = word
        used = 1
    nxt = matches[j + used].group(0).lower() if j + used < len(matches) else ""
    after = matches[j + used + 1].group(0).lower() if j + used + 1 < len(matches) else ""
    rate: str | None = None
    slash = (
        used
        and j + used < len(matches)
        and matches[j + used].string[matches[j + used - 1].end() : matches[j + used].start()] == "/"
    )
    if nxt in ("per", "a", "an", "each", "every") and after in TIME_UNITS:
        rate = f"/{TIME_UNITS[after]:g}s"
        used += 2
    elif slash and nxt in TIME_UNITS:
        rate = f"/{TIME_UNITS[nxt]:g}s"
        used += 1
    return noun, None, rate, used


@dataclass(frozen=True)
class _Number:
    key: str
    unit: str | None
    rate: str | None
    end: int
    """Index of the last match the number consumed."""
    noun: str | None = None
    """The counted noun as written (it stays a content word too)."""


def _finish(key: str, matches: list[re.Match[str]], last: int, rate: str | None = None) -> _Number:
    noun, seconds, unit_rate, used = _unit_after(matches, last + 1)
    if seconds is not None:
        return _Number(_seconds(key, seconds), None, rate, last + used)
    if unit_rate == "%":
        return _Number(_percent(key), None, None, last + used)
    return _Number(key, stem(noun) if noun else None, rate or unit_rate, last + used, noun)


def _read_number(m: re.Match[str], matches: list[re.Match[str]], i: int) -> _Number | None:
    raw = m.group(0)
    suffix = m.group("suffix") or ""
    per = m.group("per")
    body = raw[: len(raw) - len(suffix) - (len(per) + 1 if per else 0)] if (suffix or per) else raw
    key = _number_key(body)
    if key is None:
        return None
    rate = None
    if per:
        rate = f"/{TIME_UNITS[per.lower()]:g}s" if per.lower() in TIME_UNITS else f"/{stem(per.lower())}"
    sfx = suffix.lower()
    if sfx == "%":
        return _Number(_percent(key), None, rate, i)
    if sfx in ("st", "nd", "rd", "th"):
        return _Number(f"#{key}", None, None, i)
    if sfx == "x":
        return _Number(f"x{key}", None, None, i)
    if sfx == "k":  # "485k", "150k km": thousands
        return _finish(format((Decimal(key) * 1000).normalize(), "f"), matches, i, rate)
    if sfx in TIME_UNITS:
        return _Number(_seconds(key, TIME_UNITS[sfx]), None, rate, i)
    if sfx:
        return _Number(key, sfx, rate, i)
    scale = _next_word(matches, i)
    if scale in _SCALES:  # "485 thousand dollars", "2 million"
        return _finish(format((Decimal(key) * _SCALES[scale]).normalize(), "f"), matches, i + 1, rate)
    return _finish(key, matches, i, rate)


_SCALES = {"hundred": 100, "thousand": 1000, "million": 1_000_000, "billion": 1_000_000_000}


def _percent(key: str) -> str:
    return format((Decimal(key) / 100).normalize(), "f")


def _seconds(key: str, factor: float) -> str:
    value = Decimal(key) * Decimal(str(factor))
    return format(value.normalize(), "f") + "s"


def _read_number_words(matches: list[re.Match[str]], i: int) -> _Number:
    """ "twenty five", "five hundred", "a dozen": summed into one number, then read like digits."""
    total = 0.0
    current = 0.0
    j = i
    while j < len(matches) and matches[j].lastgroup == "word" and matches[j].group(0).lower() in NUMBER_WORDS:
        value = NUMBER_WORDS[matches[j].group(0).lower()]
        if value >= 100:
            current = max(current, 1.0) * value
            if value >= 1000:
                total += current
                current = 0.0
        else:
            current += value
        j += 1
    total += current
    key = format(Decimal(str(total)).normalize(), "f")
    return _finish(key, matches, j - 1)


# -------------------------------------------------------------------------------- negation


def _key(token: str) -> str:
    return token if token.startswith("<") else stem(token)


def _is_content(token: str) -> bool:
    return token.startswith("<") or (
        token not in FUNCTION_WORDS and token not in ("->", "not") and len(token) > 1
    )


def _negation_count(tokens: list[str]) -> int:
    """Negators: their parity is the text's polarity."""
    return sum(1 for t in tokens if t == "not")


def _negated(tokens: list[str], identifiers: dict[int, str]) -> frozenset[str]:
    """The item each negator applies to: the next content token within three tokens ("not be enabled"), keyed
    like the items (an identifier by its joined parts: ``identifiers`` maps its position to that key)."""
    out: set[str] = set()
    for k, t in enumerate(tokens):
        if t != "not":
            continue
        for j in range(k + 1, min(len(tokens), k + 4)):
            if _is_content(tokens[j]):
                out.add(identifiers.get(j) or _key(tokens[j]))
                break
    return frozenset(out)


