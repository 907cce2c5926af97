"""A statement that announces it changes an older one: "I switched dentists and now see Dr. Lindqvist."

People rarely restate a fact word for word when it changes; they say that it changed, with an adverb
or phrase of time ("now", "instead", "these days", "no longer", "starting in April": a closed class of
English, ``lexicon.CHANGE_ADVERBS``) or a verb of change (one whose main sense WordNet files under
``verb.change``: "switched", "changed", "raise", "replaced"). Such a statement updates an older one
about the same thing: one whose subject words all appear in it ("My dentist is Dr. Okafor." / "I
switched dentists ..."; "The rent for the apartment is ..." / "... the apartment rent goes up ...").
Neither alone is enough: a marker without the older subject is news about something else, and the
older subject without a marker may be a second fact about it.
"""

from __future__ import annotations

from functools import lru_cache

from .lexicon import CHANGE_ADVERBS, FUNCTION_WORDS
from .read import read, stem
from .statement import one_statement, predicate_heads
from .subject import dating_word, subject_positions
from .wordnet import WordNet, default_wordnet

__all__ = ["announced_update", "announces_change", "change_marker", "says_a_change"]


def _phrases(tokens: tuple[str, ...]) -> set[tuple[str, ...]]:
    return {tuple(tokens[i : i + n]) for n in (1, 2, 3) for i in range(len(tokens) - n + 1)}


_PUNCTUATION = ".,;:!?()[]\"'"


def _words(text: str) -> list[str]:
    """The lower-case words of ``text`` as written (the reader turns "no" into "not" and drops "longer")."""
    return [t for t in (w.strip(_PUNCTUATION) for w in text.lower().split()) if t]


@lru_cache(maxsize=4096)
def change_marker(older: str, newer: str, wordnet: WordNet | None = None) -> str:
    """The adverb or verb of change ``newer`` has and ``older`` lacks ("" when none)."""
    wordnet = wordnet if wordnet is not None else default_wordnet()
    said_before = _phrases(tuple(_words(older)))
    for phrase in sorted(_phrases(tuple(_words(newer))) & set(CHANGE_ADVERBS) - said_before):
        return " ".join(phrase)
    since = _from_on(_words(newer))
    if since and since not in " ".join(_words(older)):
        return since
    if wordnet is None:
        return ""
    before = {stem(t) for t in read(older).tokens}
    # A capitalised word past the first is a name ("written in Rust"), not a verb.
    names = {w.strip(_PUNCTUATION).lower() for w in newer.split()[1:] if w[:1].isupper()}
    for token in read(newer).tokens:
        # Light verbs are function words of a request but may still say a change ("the doctor *changed* ...").
        if token.startswith("<") or not token.isalpha() or stem(token) in before or token in names:
            continue
        # The present of the third person tells what happens as a rule ("school *starts* at 8:15"), not a change.
        if wordnet.change_verb(token) and not _third_person(token, wordnet):
            return token
    return ""


def _from_on(words: list[str]) -> str:
    """ "from this quarter on", "from next week on", "from Monday on": a point in time from which something holds,
    as "from now on" says (at most three words between "from" and "on"); "" when none."""
    for i, word in enumerate(words):
        if word == "from":
            for j in range(i + 2, min(len(words), i + 5)):
                if words[j] == "on":
                    return " ".join(words[i : j + 1])
                if words[j] in ("to", "until", "till"):
                    break  # "from 9 to 5": a span, not a start
    return ""


def _third_person(token: str, wordnet: WordNet) -> bool:
    """``token`` is a verb's present third person singular ("starts", "finishes"): an -s form of another lemma."""
    return token.endswith("s") and any(lemma != token for lemma in wordnet.lemmas(token, "v"))


_PERSONAL = frozenset(["i", "we", "you", "he", "she", "they"])
"""Personal pronouns: as a subject they name who the statement is about ("I prefer ...")."""


def _subject_words(text: str, wordnet: WordNet | None) -> frozenset[str] | None:
    """The stems of the content words and personal pronouns naming what ``text`` is about (dating words left
    out: "our new office"); None without a subject (an imperative, a fragment)."""
    subject = subject_positions(text, wordnet)
    if not subject:
        return None
    tokens = read(text).tokens
    words = {
        stem(tokens[k])
        for k in subject
        if not tokens[k].startswith("<")
        and (tokens[k] in _PERSONAL or tokens[k] not in FUNCTION_WORDS)
        and not dating_word(tokens[k], wordnet)
    }
    return frozenset(words)


def announces_change(older: str, newer: str, wordnet: WordNet | None = None) -> bool:
    """``newer`` says it changed what ``older`` stated: both are one statement, ``newer`` has a marker of change
    ``older`` lacks, and every word of ``older``'s subject (a pronoun included) is in it."""
    # A chat excerpt of several remarks states no single fact: its "now" or "I" says nothing of the older one.
    if not (one_statement(older) and one_statement(newer)):
        return False
    wordnet = wordnet if wordnet is not None else default_wordnet()
    if not change_marker(older, newer, wordnet):
        return False
    subject = _subject_words(older, wordnet)
    if not subject:
        return False
    newer_words = {stem(t) for t in read(newer).tokens if not t.startswith("<")}
    # A name says who or what a statement is about by itself: "My sister Hannah lives in Leeds." / "Hannah
    # finally made the big move: she is living in Bristol now" (the role beside it may go unsaid).
    names = {item.stem for item in read(older).items if item.name} & subject
    return subject <= newer_words or bool(names & newer_words)


def says_a_change(text: str, wordnet: WordNet | None = None) -> bool:
    """``text`` has a marker of change at all (what an older text could lack): worth looking further for what it
    changes than the nearest memory."""
    return one_statement(text) and bool(change_marker("", text, wordnet))


def announced_update(older: str, newer: str, wordnet: WordNet | None = None) -> bool:
    """``newer`` announces a change of what ``older`` states, however far apart the sentence model puts them: a
    change told with its reasons shares few words with the statement it replaces ("I prefer aisle seats when
    booking flights." / "Actually, after that last red-eye I've changed my mind: book me window seats from now
    on so I can sleep."). ``announces_change`` holds, and when ``older``'s subject is only a personal pronoun
    (an "I ... now ..." statement may be about anything the speaker does) ``newer`` also has a word heading a
    phrase of ``older``'s predicate ("aisle *seats*"; not a word that only qualifies another, "the *car*
    insurance", which a statement about something else may mention)."""
    wordnet = wordnet if wordnet is not None else default_wordnet()
    if not announces_change(older, newer, wordnet):
        return False
    subject = _subject_words(older, wordnet) or frozenset()
    if subject - _PERSONAL:
        return True
    newer_words = {stem(t) for t in read(newer).tokens if not t.startswith("<")}
    return bool(predicate_heads(older) & newer_words)
