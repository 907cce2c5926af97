"""What a fact is about: its subject, and whether two statements are about different things.

A statement names WHAT it is about in its subject (the words before its main verb, copula or
auxiliary: "The staging database | is PostgreSQL 15", "My wife | likes aisle seats") and states
the value in its predicate. An update gives a new value of the same thing, so its subject names
the same thing: a word substituted, added or removed in the subject of either statement ("The
billing service | runs on Python 3.9" / "The notifications service | runs on Python 3.11") makes
the pair two facts, even when a value in the predicate differs too. A changed value, verb,
polarity or order in the predicate, with the same subject, is an update ("The API rate limit |
is 60 ...").

Two constructions turn this round. A bare proper name followed by a verb whose complement is a
definite description or an "as" role ("Priya | is the on-call lead", "Jonas | manages the mobile
team", "Marcus | has taken over as on-call lead") names the holder of a role, i.e. the value, and
the description is what the fact is about (the specificational reading of "X is the Y"). An
existential "there" ("There are | six worker nodes in the staging cluster") is no subject: what
the statement is about follows the verb. Imperatives ("Remind me ...") have no subject.

No tagger is needed: auxiliaries, pronouns and determiners are closed classes of English, and an
open-class word is taken for a verb from its WordNet forms (a verb lemma, an inflection of one) and
its place. When unsure, there is no subject, and the change stays an update (today's behaviour).
"""

from __future__ import annotations

import re
from functools import lru_cache

from .lexicon import NOUN_DETERMINERS
from .read import Reading, read
from .types import Comparison, Difference
from .wordnet import WordNet, default_wordnet

__all__ = ["AUXILIARIES", "another_subject", "dating_word", "same_values_of_another_thing", "subject_positions"]


def _closed(words: str) -> frozenset[str]:
    """A closed class of English words, written as one space-separated string."""
    return frozenset(words.split())


AUXILIARIES = _closed(
    "am is are was were be been being has have had do does did will would shall should can could may might must "
    "need needs ought not"
)
"""English auxiliaries and modals (closed class), and the negator a contracted auxiliary leaves ("isn't"
reads as "not"): the first of them after a subject ends it."""

_CONTRACTED_AUXILIARY = ("'m", "'re", "'ve", "'ll", "'d")
"""A pronoun written with its auxiliary ("I'm", "we're"): the subject ends with it."""

_NOMINATIVE = _closed("i we they he she")
"""Pronouns that are only ever subjects: the verb follows them."""

_OBJECT_STARTERS = _closed("me us him her them it you the a an my our your his their its this that these those")
"""What follows a verb at the start of an imperative ("Remind me", "Set the"), besides names and values."""

_DEFINITE = _closed("the my our your his her their its")
"""Determiners of a definite description ("the on-call lead", "my dentist")."""

_PREPOSITIONS = _closed(
    "of to in on at by for from with within without via into onto about per across around through toward "
    "towards upon over under"
)
"""Prepositions: the word after one is in a noun phrase, and a text opening with one opens with an adverbial."""

_ROLE_MARKER = "as"
"""The preposition that introduces a role after a verb ("has taken over as on-call lead", "serves as ...")."""

_THERE_IS = re.compile(r"\s*there['\u2019]s\b", re.IGNORECASE)
""""There's ...": the reader drops a contracted "'s", so the raw text tells that this "there" is existential."""

_IMPERATIVE_OPENERS = _closed("please pls plz kindly just always never not do also")
"""Words an imperative may start with before its verb ("Please remind me", "Don't schedule")."""

_SUBJECT_KINDS = frozenset({"content", "term", "qualifier", "name", "identifier", "polarity"})
"""Differences a word makes. Values (number, date, time, version, path, URL, scheme, colour, quoted) and
role order are what a fact states, never what it is about; a polarity difference counts only between two
words (daughter / son), not a negation ("not allowed")."""


def _is_word(token: str) -> bool:
    return bool(token) and token[0].isalpha()


def _verb_forms(wordnet: WordNet, token: str) -> tuple[bool, bool]:
    """(``token`` is a verb form at all, it is an inflected one: "runs", "maintained")."""
    lemmas = wordnet.lemmas(token, "v")
    return bool(lemmas), any(lemma != token for lemma in lemmas)


def _base_verb(wordnet: WordNet, token: str) -> bool:
    """``token`` is a verb in its base form and mostly used as a verb ("run", "want"; not "rust", "cache")."""
    return _is_word(token) and token in wordnet.lemmas(token, "v") and wordnet.main_pos(token) == "v"


def _is_imperative(tokens: tuple[str, ...], reading: Reading, wordnet: WordNet | None) -> bool:
    """The text starts with a verb in its base form followed by an object ("Remind me", "Book Marriott hotels")."""
    k = 0
    opened = False
    while k < len(tokens) and tokens[k] in _IMPERATIVE_OPENERS:
        opened = True
        k += 1
    if k >= len(tokens) or not _is_word(tokens[k]) or wordnet is None:
        return False
    if tokens[k] not in wordnet.lemmas(tokens[k], "v"):
        return False
    if opened:
        return True
    nxt = tokens[k + 1] if k + 1 < len(tokens) else ""
    named = any(item.pos == k + 1 and item.text[:1].isupper() for item in reading.items)
    return nxt in _OBJECT_STARTERS or nxt.startswith("<") or named


def _subject_end(tokens: tuple[str, ...], wordnet: WordNet | None) -> int | None:
    """The position of the main verb (or auxiliary) that ends the subject; None when none is found."""
    first_aux = next((k for k, t in enumerate(tokens) if k > 0 and t in AUXILIARIES), len(tokens))
    # An opening adverbial ("For work trips I prefer ...", "On Mondays we ...") runs to a subject pronoun.
    adverbial = bool(tokens) and tokens[0] in _PREPOSITIONS
    for k, t in enumerate(tokens[:first_aux]):
        if t.endswith(_CONTRACTED_AUXILIARY):
            return k + 1
        if t in _NOMINATIVE:
            return k + 1 if k + 1 < len(tokens) else None
        if not adverbial and wordnet is not None and k > 0 and _main_verb(tokens, k, wordnet):
            return k
    return first_aux if first_aux < len(tokens) else None


def _main_verb(tokens: tuple[str, ...], k: int, wordnet: WordNet) -> bool:
    """The open-class word at ``k`` (not the first) is the finite verb of a clause without an auxiliary before it."""
    t = tokens[k]
    if not _is_word(t) or t in NOUN_DETERMINERS or t in _PREPOSITIONS:
        return False
    prev = tokens[k - 1]
    nxt = tokens[k + 1] if k + 1 < len(tokens) else ""
    if prev in NOUN_DETERMINERS or prev in _PREPOSITIONS or nxt in AUXILIARIES:
        return False  # a word right after a determiner, or right before an auxiliary, heads a noun phrase
    verb, inflected = _verb_forms(wordnet, t)
    if not verb or t.endswith("ing"):
        return False  # a finite verb without an auxiliary is never a participle in -ing ("customer-facing")
    if inflected:
        # "My dad lives", "The repo uses" - unless a word mostly used as a verb follows in its base form:
        # then this is a plural noun ("Cron jobs run").
        return not (t.endswith("s") and _base_verb(wordnet, nxt))
    # A base form is a verb after a plural noun ("Releases go out") unless an inflected verb follows ("the
    # orders service runs").
    return prev.endswith("s") and _is_word(prev) and not _verb_forms(wordnet, nxt)[1]


def _bare_name(reading: Reading, end: int) -> bool:
    """Every word before ``end`` is a proper name as written ("Priya", "Kenji Mori"): no determiner or pronoun."""
    tokens = reading.tokens[:end]
    if any(t in NOUN_DETERMINERS or t in _NOMINATIVE or t.startswith("<") or t.endswith(_CONTRACTED_AUXILIARY)
           for t in tokens):
        return False
    words = [item for item in reading.items if item.pos < end]
    return bool(words) and all(item.text[:1].isupper() for item in words)


def _definite_complement(tokens: tuple[str, ...], end: int, wordnet: WordNet | None) -> int | None:
    """Where a definite description or an "as" role right after the verb starts ("is now the ...",
    "manages the ...", "has taken over as ...")."""
    k = end
    verb_seen = False
    while k < len(tokens) and k < end + 4:
        t = tokens[k]
        if verb_seen and t in _DEFINITE and t != "the":
            # "Dad likes *his* coffee black": after a verb other than a copula, a possessive points back at
            # the subject's own thing, not at a role ("Jonas manages *the* mobile team", "Dana is *my* manager").
            return None
        if t in _DEFINITE or t == _ROLE_MARKER:
            return k
        if t in AUXILIARIES:
            pass
        elif not verb_seen and _is_word(t) and wordnet is not None and wordnet.lemmas(t, "v"):
            verb_seen = True
        elif wordnet is None or not _is_word(t) or wordnet.main_pos(t) != "r":
            return None
        k += 1
    return None


def _existential_subject(text: str, tokens: tuple[str, ...]) -> frozenset[int] | None:
    """For "There are six nodes in the staging cluster": everything after "there" and its auxiliaries (what
    exists is what the statement is about; it has no other predicate). None for any other text."""
    if tokens[0] != "there" or not (_THERE_IS.match(text) or (len(tokens) > 1 and tokens[1] in AUXILIARIES)):
        return None
    k = 1
    while k < len(tokens) and tokens[k] in AUXILIARIES:
        k += 1
    return frozenset(range(k, len(tokens))) if k < len(tokens) else None


def _clause_subject(tokens: tuple[str, ...], end: int, wordnet: WordNet | None = None) -> frozenset[int] | None:
    """The subject of a clause a pronoun's verb takes as its object ("We decided [that] *the backend team*
    will use Go", "I think *the printer* is broken"): a noun phrase opened by a determiner and closed by an
    auxiliary; None when the subject is not a bare pronoun or no such clause follows its verb."""
    if not all(t in _NOMINATIVE for t in tokens[:end]) or end + 1 >= len(tokens):
        return None
    k = end + 1
    if tokens[k] == "that":
        k += 1
    if k >= len(tokens) or tokens[k] not in NOUN_DETERMINERS:
        return None
    for j in range(k + 1, min(len(tokens), k + 8)):
        # The clause's subject ends at its auxiliary or, without one, at its finite verb ("We agreed the
        # quarterly sales report *goes* out as a PDF").
        if tokens[j] in AUXILIARIES or (wordnet is not None and j > k + 1 and _main_verb(tokens, j, wordnet)):
            return frozenset(range(k, j)) if j > k + 1 else None
        if not _is_word(tokens[j]) or tokens[j] in _PREPOSITIONS:
            return None
    return None


def subject_positions(text: str, wordnet: WordNet | None = None) -> frozenset[int]:
    """Positions (in ``read(text).tokens``) of the words saying what ``text`` is about; empty when unknown.

    ``wordnet`` defaults to the installed reader; without one only auxiliaries and pronouns end a subject.
    """
    wordnet = wordnet if wordnet is not None else default_wordnet()
    reading = read(text)
    tokens = reading.tokens
    if not tokens or _is_imperative(tokens, reading, wordnet):
        return frozenset()
    existential = _existential_subject(text, tokens)
    if existential is not None:
        return existential
    end = _subject_end(tokens, wordnet)
    if end is None or end == 0:
        return frozenset()
    embedded = _clause_subject(tokens, end, wordnet)
    if embedded is not None:
        # "We decided the kitchen renovation budget is 20,000 euros": the fact is the clause's.
        return embedded
    if _bare_name(reading, end):
        start = _definite_complement(tokens, end, wordnet)
        if start is not None:
            # "Priya is the on-call lead": the name is the value, the role is what the fact is about.
            return frozenset(range(start, len(tokens)))
    return frozenset(range(end))


def _positions(reading: Reading, word: str) -> list[int]:
    return [item.pos for item in reading.items if item.text == word]


def _only_in_subject(side: tuple[Reading, frozenset[int]], word: str | None) -> bool:
    """``word`` is a word of the side's text found only in its subject (a word also in the predicate, or
    absent, is not)."""
    if word is None:
        return False
    reading, subject = side
    found = _positions(reading, word)
    return bool(found) and all(pos in subject for pos in found)


def _word_difference(d: Difference) -> bool:
    """A difference of words (not of a value, an order or a negation): only such a difference can name
    another thing."""
    if d.kind not in _SUBJECT_KINDS:
        return False
    return d.kind != "polarity" or not (
        d.old is None or d.new is None or d.old.startswith("not ") or d.new.startswith("not ")
    )


_TEMPORAL_ATTRIBUTES = ("temporal_property", "age")
"""WordNet nouns naming the attributes of time: an adjective graded along them dates a thing."""
_HYPERNYM_DEPTH = 12
"""Far above the depth of WordNet's noun hierarchy below its attribute synsets (a bound, not a setting)."""


@lru_cache(maxsize=8192)
def _dating(word: str, wordnet: WordNet) -> bool:
    """``word`` is an adjective that dates a thing ("new", "current", "former", "latest"): its WordNet
    attribute, or that of the cluster it is a satellite of, is a temporal property or age.

    An update announces the newer version of one thing with such a word ("My new phone number is ...");
    it says when, not which thing."""
    anchors = {s for name in _TEMPORAL_ATTRIBUTES for s in wordnet.synsets(name) if s[0] == "n"}
    adjectives = {s for s in wordnet.synsets(word.lower()) if s[0] == "a"}
    heads = adjectives | {t for s in adjectives for sym, t in wordnet.pointers(s) if sym == "&"}
    frontier = {t for s in heads for sym, t in wordnet.pointers(s) if sym == "="}
    seen = set(frontier)
    for _ in range(_HYPERNYM_DEPTH):
        if seen & anchors:
            return True
        frontier = {t for s in frontier for sym, t in wordnet.pointers(s) if sym in ("@", "@i")} - seen
        if not frontier:
            return False
        seen |= frontier
    return bool(seen & anchors)


def dating_word(word: str, wordnet: WordNet | None = None) -> bool:
    """``word`` only dates what it qualifies ("new", "current", "former"): it says which version of a thing,
    not which thing (``wordnet`` defaults to the installed reader; without one, no word dates)."""
    wordnet = wordnet if wordnet is not None else default_wordnet()
    return wordnet is not None and _is_word(word) and _dating(word, wordnet)


def _names_another_thing(d: Difference, wordnet: WordNet | None) -> bool:
    """A word difference that can name another thing: not one that only adds, drops or swaps words dating
    the thing ("My phone number" / "My new phone number"; "current" / "latest"). Opposites do ("the early
    shift" / "the late shift", a polarity difference: two things at once)."""
    if not _word_difference(d):
        return False
    if d.kind == "polarity" or wordnet is None:
        return True
    return not all(_dating(w, wordnet) for w in (d.old, d.new) if w is not None)


def another_subject(older: str, newer: str, comparison: Comparison, wordnet: WordNet | None = None) -> bool:
    """``newer`` is about another thing than ``older``: a difference the comparison names is a word
    substituted, added or removed in the subject of either text. Such a pair is two facts, not an
    update of one, whatever else differs ("My dentist is Dr. Patel." / "My dermatologist is Dr.
    Patel."; "The billing service runs on Python 3.9." / "The notifications service runs on Python
    3.11.").

    False when every difference is a value, a negation, an order, a word dating the thing ("new",
    "current": see ``_names_another_thing``) or a word of the predicates (a new value of the same
    thing), and when either text has no subject found (an imperative, no verb): nothing then says the
    texts are about different things.
    """
    if not comparison.differences:
        return False
    wordnet = wordnet if wordnet is not None else default_wordnet()
    sides: list[tuple[Reading, frozenset[int]]] = []
    for text in (older, newer):
        subject = subject_positions(text, wordnet)
        if not subject:
            return False
        sides.append((read(text), subject))
    return any(
        (_only_in_subject(sides[0], d.old) or _only_in_subject(sides[1], d.new)) and _names_another_thing(d, wordnet)
        for d in comparison.differences
    )


_WORD_KINDS = frozenset({"qualifier", "content", "term"})


def same_values_of_another_thing(older: str, newer: str, comparison: Comparison) -> bool:
    """Every value of ``older`` stands in ``newer`` and a noun is swapped for one WordNet says names another thing
    ("Remind me about bills 3 days in advance." / "... birthdays 3 days in advance."): the same value said of
    something else, two facts. An update changes a value; with none changed, the swapped noun is what the
    statement is about, wherever it stands (an imperative has no subject for ``another_subject`` to see)."""
    if not comparison.differences or not (read(older).slots and read(newer).slots):
        return False
    kinds = {d.kind for d in comparison.differences}
    return kinds <= _WORD_KINDS and "term" in kinds
