"""Whether a newer cache item merges into, replaces, or stands beside the live item it is nearest to.

A pack holds one value of each fact: a newer item that changes an older one's value must
replace it, and two items about different things must both stay. The comparison (compare/)
says what differs between two texts, and ``compare.subject`` where each text's subject is (what
it is about, before its verb; the rest is the predicate, which ends with the value it states:
English puts the new information last). On top of ``is_one_change`` (a decided change of one
fact, not of its subject), the cache acts on two more shapes:

- The same subject and another ending ("My gym is FitLab on Elm Street." / "My gym is Pulse
  Fitness downtown."): the value of one fact changed, even when the comparison names several
  differences or cannot decide, unless it decided the texts are different. A loose rewording of
  a new value is still the newest statement of that fact, and a pack holding both would show two
  values of one fact.
- Another subject and the same predicate ("EU customer data is stored in Frankfurt." / "EU
  customer data backups are stored in Frankfurt."): two facts, never merged even when the
  comparison calls them a restatement (a merge keeps one text and would drop the other fact).

Only closed classes of English are listed here (determiners, auxiliaries); what a subject is
comes from ``compare.subject``.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Literal

from ..compare import Comparison, Verdict, announces_change, subject_positions
from ..compare.extract import read, stem
from ..compare.lexicon import FUNCTION_WORDS
from ..compare.subject import dating_word
from ..memory.service import is_one_change

__all__ = ["judge", "one_statement", "same_predicate_other_subject", "same_subject_new_value"]

DETERMINERS = frozenset(
    ["a", "an", "the", "this", "that", "these", "those", "my", "your", "his", "her", "its", "our", "their"]
)
"""They pick a thing out, they do not name it: "my steak" and "their steak" say the same of a steak."""

AUXILIARIES: dict[str, str] = {
    **dict.fromkeys(("is", "are", "was", "were", "be", "been", "being", "am", "'s", "'re", "'m"), "be"),
    **dict.fromkeys(("has", "have", "had", "having", "'ve"), "have"),
    **dict.fromkeys(("do", "does", "did"), "do"),
}
"""Forms of the primary auxiliaries by lemma, so that "data is stored" and "backups are stored" agree."""


def _key(token: str) -> str:
    if token.startswith("<"):
        return token  # a value slot (number, date, version...) compares by its key
    return AUXILIARIES.get(token) or stem(token)


def _content(token: str) -> bool:
    return token not in FUNCTION_WORDS and token not in AUXILIARIES


@lru_cache(maxsize=4096)
def _parts(text: str) -> tuple[frozenset[str], tuple[str, ...], tuple[str, ...]] | None:
    """(the subject's content keys, predicate keys, predicate content keys) of ``text``, determiners left out;
    None when ``compare.subject`` finds no subject (an imperative, a fragment). A subject is a set of words:
    "the tenant export limit" and "the export limit for a tenant" name the same thing; a word dating it
    ("our new office") is left out of that set, as ``compare.subject`` leaves it out of what names a thing."""
    subject = subject_positions(text)
    if not subject:
        return None
    tokens = read(text).tokens
    kept = [(i, t) for i, t in enumerate(tokens) if t not in DETERMINERS]
    predicate = [t for i, t in kept if i not in subject]
    return (
        frozenset(_key(t) for i, t in kept if i in subject and _content(t) and not dating_word(t)),
        tuple(_key(t) for t in predicate),
        tuple(_key(t) for t in predicate if _content(t)),
    )


def same_predicate_other_subject(older: str, newer: str) -> bool:
    """The texts say the same predicate of different subjects: two facts, whatever the comparison called them."""
    a, b = _parts(older), _parts(newer)
    return a is not None and b is not None and a[0] != b[0] and a[1] == b[1]


_SENTENCE_END = re.compile(r"[.!?]+[\"')\]]*\s+\S")


def one_statement(text: str) -> bool:
    """``text`` is one sentence: a subject and an ending are those of the whole text, not of one of its
    sentences (a chat excerpt of several remarks states no single fact). An abbreviation's full stop
    ("Dr. Patel") reads as a sentence end, which only keeps such a text out of the replacement rule."""
    return _SENTENCE_END.search(text.strip()) is None


def same_subject_new_value(older: str, newer: str) -> bool:
    """Both texts are one statement, with the same subject and different last words: another value of the
    same thing."""
    if not (one_statement(older) and one_statement(newer)):
        return False
    a, b = _parts(older), _parts(newer)
    if a is None or b is None or a[0] != b[0] or not a[2] or not b[2]:
        return False
    return a[2][-1] != b[2][-1]


def judge(comparison: Comparison, older: str, newer: str, merge_cosine: float) -> Literal["same", "changed"] | None:
    """What ``newer``, written after the live item ``older`` in one scope, does to it (``comparison``: older
    vs newer): "same" merges into it, "changed" replaces it, None keeps both.

    A decided restatement merges from ``merge_cosine`` on, unless it says the same of another subject; a
    decided change of one fact replaces (``is_one_change``), and so does any other change or undecided pair
    that keeps the subject and changes the ending, unless the comparison decided they are different.
    """
    if comparison.same:
        if comparison.similarity < merge_cosine or same_predicate_other_subject(older, newer):
            return None
        return "same"
    if is_one_change(comparison, older, newer):
        return "changed"
    if comparison.decided and comparison.verdict is Verdict.DIFFERENT:
        return None
    return "changed" if same_subject_new_value(older, newer) or announces_change(older, newer) else None
