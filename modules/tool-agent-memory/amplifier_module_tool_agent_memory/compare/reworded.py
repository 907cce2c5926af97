"""A restatement the word-by-word comparison misses: the same statement said again with its words moved.

People restate a fact by turning it round ("Lena owns the release process." / "The release process is
owned by Lena."; "The mobile team uses Fastlane for release builds." / "Mobile release builds are done
with Fastlane."). The comparison aligns words in place, so such a pair reads as a change of several words,
or as another subject. An update or a second fact keeps the frame and swaps what it states, so it names
no moved word: of the updates dev file's 60 changes and 30 distinct pairs only two name an order at all
(a manager replaced by name, and "I like my steak" / "My partner likes their steak").

:func:`reworded` is that shape, checked on what :func:`.describe.describe` names: words moved (an order
difference), no value, polarity or name on one side only, and what one statement is about (its subject,
:func:`.subject.subject_positions`) found in the other, word for word or by a WordNet synonym or kind
("my mother's name" / "my mom's name"). A memory merge is shown and undone (``memory_unmerge``), so this
may act for memory; the cache, whose merge drops a wording, still needs a certificate.
"""

from __future__ import annotations

from functools import lru_cache

from .describe import describe
from .lexicon import FUNCTION_WORDS
from .read import read, stem
from .subject import subject_positions
from .wordnet import Relation, WordNet, default_wordnet

__all__ = ["reworded"]

_STATED = frozenset(
    {"number", "date", "time", "version", "identifier", "path", "url", "colour", "quoted", "name", "polarity"}
)
"""Differences that change what a statement says (a value, a negation, a name): never a rewording."""

_ARTICLES = frozenset({"the", "a", "an"})

_SHORTENING = 4
"""A word of at least this many letters that begins another stands for it ("retro" / "retrospective")."""


def _key(token: str) -> str:
    return token if token.startswith("<") else stem(token)


@lru_cache(maxsize=4096)
def _keys(text: str) -> frozenset[str]:
    return frozenset(_key(t) for t in read(text).tokens)


@lru_cache(maxsize=4096)
def _subject(text: str) -> frozenset[str]:
    tokens = read(text).tokens
    return frozenset(tokens[k] for k in subject_positions(text) if tokens[k] not in _ARTICLES)


def _names(text: str) -> frozenset[str]:
    return frozenset(item.stem for item in read(text).items if item.name)


def _found_in(subject: frozenset[str], text: str) -> bool:
    """Every word of ``subject`` is a word of ``text``, or a WordNet synonym or kind of one of its words."""
    if not subject:
        return False
    keys = _keys(text)
    wordnet = default_wordnet()
    words = [t for t in read(text).tokens if t.isalpha()]
    for token in subject:
        if _key(token) in keys:
            continue
        if wordnet is None or not token.isalpha():
            return False
        if not any(_stands_for(token, w, wordnet) for w in words):
            return False
    return True


def _stands_for(word: str, other: str, wordnet: WordNet) -> bool:
    """``word`` and ``other`` name one thing: WordNet synonyms (grandmother / grandma) or a shortening. A broader
    or sister kind does not (staging / production are both kinds of environment)."""
    short, long_ = sorted((word, other), key=len)
    if len(short) >= _SHORTENING and long_.startswith(short):
        return True
    return wordnet.relation(word, other) is Relation.SYNONYM


def _swapped_in_place(older: str, newer: str) -> bool:
    """A word of one text only stands where a word of the other only stands, between the same shared words
    ("the *nightly* build" / "the *weekly* build"), and the two do not name one thing (:func:`_stands_for`):
    something else is said of the same thing, not the same thing said otherwise."""
    shared = _keys(older) & _keys(newer)
    wordnet = default_wordnet()

    def places(text: str) -> dict[tuple[str, str], set[str]]:
        """Each word of this text only, by the shared words (keys) before and after it."""
        tokens = read(text).tokens
        keys = [_key(t) for t in tokens]
        out: dict[tuple[str, str], set[str]] = {}
        for k, t in enumerate(tokens):
            if keys[k] in shared or t in FUNCTION_WORDS:
                continue
            before = next((keys[j] for j in range(k - 1, -1, -1) if keys[j] in shared), "")
            after = next((keys[j] for j in range(k + 1, len(keys)) if keys[j] in shared), "")
            out.setdefault((before, after), set()).add(t)
        return out

    pa, pb = places(older), places(newer)
    return any(
        wordnet is None or not _stands_for(x, y, wordnet)
        for place in pa.keys() & pb.keys()
        for x in pa[place]
        for y in pb[place]
    )


def reworded(older: str, newer: str) -> bool:
    """``newer`` says what ``older`` says with its words moved (see the module doc)."""
    kinds = {d.kind for d in describe(older, newer)}
    if "order" not in kinds or kinds & _STATED:
        return False
    if (_names(older) - _keys(newer)) or (_names(newer) - _keys(older)):
        return False
    if _swapped_in_place(older, newer):
        return False
    return _found_in(_subject(older), newer) or _found_in(_subject(newer), older)
