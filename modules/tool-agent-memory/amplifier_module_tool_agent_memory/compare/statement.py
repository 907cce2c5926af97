"""One statement's parts: its subject (what it is about) and its predicate, which ends with the value it states.

English puts the new information last, so two one-sentence statements with the same subject and
another last word state two values of one thing ("My gym is FitLab on Elm Street." / "My gym is
Pulse Fitness downtown."), and two with the same predicate and another subject are two facts ("EU
customer data is stored in Frankfurt." / "EU customer data backups are stored in Frankfurt.").
The cache acts on these shapes (``policy.replaces``), and memory search ranks the newer of the
first shape above the older. Only closed classes of English are listed here (determiners,
auxiliaries); what a subject is comes from ``compare.subject``.
"""

from __future__ import annotations

import re
from functools import lru_cache

from .lexicon import ABBREVIATIONS, FUNCTION_WORDS, NOUN_DETERMINERS
from .read import read, stem
from .subject import dating_word, subject_positions
from .wordnet import default_wordnet

__all__ = [
    "one_statement",
    "predicate_heads",
    "same_attribute_new_value",
    "same_subject_new_value",
]

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
def _parts(text: str) -> tuple[frozenset[str], tuple[str, ...], tuple[str, ...], tuple[str, ...]] | None:
    """(the subject's content keys, predicate keys, predicate content keys, predicate tokens) of ``text``,
    determiners left out;
    None when ``compare.subject`` finds no subject (an imperative, a fragment). A subject is a set of words:
    "the tenant export limit" and "the export limit for a tenant" name the same thing; a word dating it
    ("our new office") is left out of that set, as ``compare.subject`` leaves it out of what names a thing."""
    subject = subject_positions(text)
    if not subject:
        return None
    tokens = read(text).tokens
    kept = [(i, t) for i, t in enumerate(tokens) if t not in NOUN_DETERMINERS]
    predicate = [t for i, t in kept if i not in subject]
    return (
        frozenset(_key(t) for i, t in kept if i in subject and _content(t) and not dating_word(t)),
        tuple(_key(t) for t in predicate),
        tuple(_key(t) for t in predicate if _content(t)),
        tuple(predicate),
    )


def predicate_heads(text: str) -> frozenset[str]:
    """The stems of the content words that end a phrase of ``text``'s predicate: its verb when an object
    follows it ("*drive* a 2015 Honda Civic"), the head noun of a phrase ("aisle *seats* when ...", "the team
    *offsite* in Lisbon"), not a word qualifying the next one ("the *car* insurance", "the kids' savings");
    empty without a subject."""
    parts = _parts(text)
    if parts is None:
        return frozenset()
    tokens = parts[3]
    return frozenset(
        _key(t)
        for k, t in enumerate(tokens)
        if not t.startswith("<")
        and _content(t)
        and not (k + 1 < len(tokens) and not tokens[k + 1].startswith("<") and _content(tokens[k + 1]))
    )


_SENTENCE_END = re.compile(r"(\w*)([.!?]+)[\"')\]]*\s+\S")

def one_statement(text: str) -> bool:
    """``text`` is one sentence: a subject and an ending are those of the whole text, not of one of its
    sentences (a chat excerpt of several remarks states no single fact). A full stop after a title or
    another common abbreviation ("Dr. Patel", "Elm St. clinic") or a letter ("J. Smith", "5 p.m. sharp") ends
    nothing."""
    for m in _SENTENCE_END.finditer(text.strip()):
        word, marks = m.group(1), m.group(2)
        if marks == "." and (word.lower() in ABBREVIATIONS or len(word) == 1):
            continue
        return False
    return True


def same_subject_new_value(older: str, newer: str) -> bool:
    """Both texts are one statement, with the same subject and different last words: another value of the
    same thing."""
    if not (one_statement(older) and one_statement(newer)):
        return False
    a, b = _parts(older), _parts(newer)
    if a is None or b is None or a[0] != b[0] or not a[2] or not b[2]:
        return False
    return a[2][-1] != b[2][-1]


def _predicate_head(text: str) -> str | None:
    """What the predicate says of the subject: its first content word when WordNet mostly knows it as a verb
    ("was *serviced* in November", "*averages* 95 euros"), else its first word, a copula or auxiliary by its
    lemma ("*is* Pulse Fitness downtown", "*is* due on the 5th")."""
    parts = _parts(text)
    if parts is None or not parts[1]:
        return None
    wordnet = default_wordnet()
    for t in parts[3]:
        if not t.startswith("<") and _content(t):
            if wordnet is not None and wordnet.main_pos(t) == "v":
                return stem(t)
            break
    return parts[1][0]


def same_attribute_new_value(older: str, newer: str) -> bool:
    """Another value of the same attribute of one thing: the same subject, the same predicate head, and
    different last words ("My gym is FitLab on Elm Street." / "My gym is Pulse Fitness downtown."), not
    another attribute of it ("The boiler was serviced in November." / "The boiler is a Vaillant model.")."""
    return same_subject_new_value(older, newer) and _predicate_head(older) == _predicate_head(newer)
