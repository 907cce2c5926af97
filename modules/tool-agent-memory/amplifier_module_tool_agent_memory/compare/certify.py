"""Certify that two short texts say the same thing: strict, short and easy to audit.

Two texts are *certified* the same only when, after leaving out what never changes a request
(articles, politeness, case, punctuation: see :func:`words_in_place`), they have the same
values in the same places (numbers with their units and rates, dates, times, versions, paths,
URLs, identifiers, quoted strings, colours: read by :func:`.read.read`) and every word
stands in the same place as a word of the same stem ("deploys" / "deploy") or of a relation
measured safe on held-apart near-misses (:data:`SAFE_SYNONYMS`). A word on one side only, a
word moved, a negation, a value or a function word of another kind ("put" / "delete", "if" /
"unless", "to" / "from") is never certified. Anything else goes to :func:`.describe.describe`,
which names what differs for the agent, who decides.

Everything the module does alone (replaying a plan on ``hit``, merging two cache items) rests on
this function, so it stays small: a rule is added here only with a near-miss it would wrongly
certify without it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from .read import read, stem

__all__ = ["Certificate", "Unit", "certify", "words_in_place"]

_ARTICLES = frozenset(["a", "an", "the"])
"""Articles never change a request ("Deploy the app" / "Deploy app")."""

_POLITE_OPENINGS: tuple[tuple[str, ...], ...] = tuple(
    tuple(p.split())
    for p in (
        "please", "pls", "plz", "kindly", "hey", "hi", "ok", "okay", "go ahead and", "can you", "could you",
        "would you", "will you", "can we", "could we", "i want you to", "i need you to", "i'd like you to",
        "i would like you to", "would you mind", "let's",
    )
)
"""Request framing before the request's verb: politeness and asking forms (stripped, repeatedly, at the start)."""

_POLITE_CLOSINGS: tuple[tuple[str, ...], ...] = tuple(
    tuple(p.split()) for p in ("please", "thanks", "thank you", "thx", "for me please")
)
"""Politeness after the request (stripped at the end)."""

SAFE_SYNONYMS: frozenset[frozenset[str]] = frozenset()
"""Word pairs (stems) certified as the same word in place. Empty: every WordNet relation tried (a shared
synset, a shared first sense, a verb hypernym) certified some held-apart near-miss or was too loose to
audit (stop / check, clear / pass and block / stop share a sense), so only stems certify; a synonym
in place is a candidate the agent confirms (benchmarks/plans.py reports the effect)."""


@dataclass(frozen=True)
class Unit:
    """One word or value of a text as certification sees it."""

    key: str
    """A word's stem, or ``<kind:key|unit|rate>`` for a value."""
    text: str
    """As written (a value with its unit)."""
    value: str | None = None
    """The value's kind (number, date, path, ...); None for a word."""


@dataclass(frozen=True)
class Certificate:
    """The answer of :func:`certify`: ``same`` only when every unit stands in place; ``reason`` says why not."""

    same: bool
    reason: str


def _strip(tokens: list[str], phrases: tuple[tuple[str, ...], ...], at_start: bool) -> list[str]:
    changed = True
    while changed and tokens:
        changed = False
        for phrase in phrases:
            n = len(phrase)
            part = tokens[:n] if at_start else tokens[-n:]
            if len(tokens) > n and tuple(part) == phrase:
                tokens = tokens[n:] if at_start else tokens[:-n]
                changed = True
    return tokens


@lru_cache(maxsize=8192)
def words_in_place(text: str) -> tuple[Unit, ...]:
    """The words and values of ``text`` in order, without articles and politeness (the units certified)."""
    reading = read(text.lower())  # case never changes a request (and "PLAYER'S" is read as "player's")
    slots = {slot.pos: slot for slot in reading.slots}
    tokens = list(reading.tokens)
    # "Do not deploy" says what "Don't deploy" says: the auxiliary before a negation carries nothing.
    raw = [(k, t) for k, t in enumerate(tokens)
           if not (t in ("do", "does", "did") and k + 1 < len(tokens) and tokens[k + 1] == "not")]
    kept = [t for _, t in raw]
    positions = [k for k, _ in raw]
    start = _strip(kept, _POLITE_OPENINGS, at_start=True)
    positions = positions[len(kept) - len(start) :]
    end = _strip(start, _POLITE_CLOSINGS, at_start=False)
    positions = positions[: len(end)]
    units: list[Unit] = []
    for k, token in zip(positions, end, strict=True):
        slot = slots.get(k)
        if slot is not None:
            key = f"<{slot.kind}:{slot.key}|{slot.unit or ''}|{slot.rate or ''}>"
            units.append(Unit(key, slot.text, slot.kind))
        elif token not in _ARTICLES:
            units.append(Unit(token if token.startswith("<") else stem(token), token))
    return tuple(units)


def _same(x: Unit, y: Unit) -> bool:
    if x.key == y.key:
        return True
    return x.value is None and y.value is None and frozenset((x.key, y.key)) in SAFE_SYNONYMS


def certify(a: str, b: str) -> Certificate:
    """Whether ``b`` is certainly the same request (or statement) as ``a`` (symmetric; see the module doc)."""
    ua, ub = words_in_place(a), words_in_place(b)
    for x, y in zip(ua, ub, strict=False):
        if not _same(x, y):
            return Certificate(False, f"{x.text!r} stands where the other has {y.text!r}")
    if len(ua) != len(ub):
        extra = (ua if len(ua) > len(ub) else ub)[min(len(ua), len(ub))]
        return Certificate(False, f"{extra.text!r} is on one side only")
    return Certificate(True, "same words and values in the same places")
