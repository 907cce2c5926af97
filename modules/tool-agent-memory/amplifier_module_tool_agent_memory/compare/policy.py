"""When the module acts alone: the one policy memory, the cache and plans follow (certify or ask).

:func:`assess` answers, for a stored text near a new one:

* ``ACT``: :func:`.certify.certify` says they are the same (or the optional judge settled it, see
  :class:`Judge`): the module may act without the agent (replay a plan on ``hit``, merge a cache item);
* ``ASK``: not certified, but the whole-text cosine reaches ``floor``: the agent is shown the stored text
  with what differs named (:func:`.describe.describe`) and decides (a plan ``candidate``, a
  ``possible_updates`` entry);
* ``NONE``: under the floor: not shown at all (noise the agent would pay tokens for).

A wrong automatic action is the worst outcome and an extra line for the agent is cheap, so nothing
but a certificate (or an explicit judge) ever answers ``ACT``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache
from typing import Protocol

from .announce import announced_update, announces_change
from .certify import certify
from .describe import describe
from .lexicon import FUNCTION_WORDS, NUMBER_WORDS
from .read import Item, Reading, Slot, read, stem
from .reworded import reworded
from .statement import same_attribute_new_value
from .subject import another_subject, same_values_of_another_thing, subject_positions
from .types import Comparison, Difference, Verdict
from .wordnet import Relation, default_wordnet

__all__ = [
    "ANNOUNCED_CANDIDATES",
    "MAX_CHANGE_DIFFERENCES",
    "Action",
    "Assessment",
    "Judge",
    "UpdateVerdict",
    "acts_as_update",
    "assess",
    "compared",
    "cosine",
    "is_one_change",
    "left_open",
    "may_update",
    "merges",
    "replaces",
    "restates",
    "two_facts",
]


class Action(StrEnum):
    """What the module does with a stored text near a new one."""

    ACT = "act"
    ASK = "ask"
    NONE = "none"


class UpdateVerdict(StrEnum):
    """What a judge says a newer memory is to a near older one."""

    UPDATE = "update"
    SAME = "same"
    DIFFERENT = "different"


class Judge(Protocol):
    """Settles a pair the comparison could not decide (``judge: provider``); None when it could not tell
    (failure, timeout, an unclear answer): the agent is asked then."""

    name: str

    def same(self, stored: str, asked: str, differences: Sequence[Difference]) -> bool | None:
        """Whether ``asked`` is the same request as ``stored`` (plans)."""
        ...

    def update(self, older: str, newer: str, differences: Sequence[Difference]) -> UpdateVerdict | None:
        """Whether the memory ``newer`` updates ``older``, says the same, or states another fact (memory)."""
        ...


@dataclass(frozen=True)
class Assessment:
    """The policy's answer for one stored text (see the module doc)."""

    action: Action
    cosine: float
    differences: tuple[Difference, ...] = ()
    decided_by: str = "certify"
    """``certify`` (the comparison), ``floor`` (under it), ``agent`` (left to the agent) or a judge's name."""
    reason: str = ""

    @property
    def certified(self) -> bool:
        """The comparison (not a judge) certified the pair."""
        return self.action is Action.ACT and self.decided_by == "certify"


def assess(stored: str, asked: str, cosine: float, *, floor: float, judge: Judge | None = None) -> Assessment:
    """ACT, ASK or NONE for ``stored`` (the earlier text) against ``asked`` (the new one) at ``cosine``."""
    certificate = certify(stored, asked)
    if certificate.same:
        return Assessment(Action.ACT, cosine, (), "certify", certificate.reason)
    if cosine < floor:
        return Assessment(Action.NONE, cosine, (), "floor", f"cosine {cosine:.2f} under the floor {floor:.2f}")
    differences = describe(stored, asked)
    if judge is not None:
        verdict = judge.same(stored, asked, differences)
        if verdict is True:
            return Assessment(Action.ACT, cosine, differences, judge.name, f"{judge.name} judged it the same")
        if verdict is False:
            return Assessment(Action.ASK, cosine, differences, judge.name, f"{judge.name} judged it different")
    return Assessment(Action.ASK, cosine, differences, "agent", certificate.reason)


# Updates: when a newer statement replaces an older one (long-term memory links it, the working-memory
# cache replaces it, memory search ranks it above). A link and a replacement are shown (``superseded``)
# and undone (``memory_unlink``; the replaced cache item is kept until it expires), so they stay
# automatic where the comparison decides (issue 16); a pair it cannot decide is put to the agent
# (``possible_updates``), and a cache merge, which keeps one text and drops the other, needs a
# certificate.

MAX_CHANGE_DIFFERENCES = 3
"""Most differences a decided change may name to be acted on as an update of one fact. Decided changes of
half A of the updates dev file name 1-3; two remarks of a conversation the comparison calls "changed" (a
number here, a dozen other words there) name 11-27, and replacing one with the other would hide a true item."""

ANNOUNCED_CANDIDATES = 3
"""A statement with a marker of change ("now", "switched", "from now on") is compared with this many nearest
stored statements of its kind, whatever their cosine, and acts only on one it announces a change of."""


def is_one_change(comparison: Comparison, older: str | None = None, newer: str | None = None) -> bool:
    """A decided change of one fact: what the memory and cache act on (link, replace, reorder).

    Given the two texts, a change that substitutes, adds or removes a word in the subject of either
    (another thing, whatever else differs: "My dentist is Dr. Patel." / "My dermatologist is Dr.
    Patel.") is two facts, not one (``subject.another_subject``); so is the same value said of another
    thing anywhere in the statement (``subject.same_values_of_another_thing``).
    """
    return (
        comparison.decided
        and comparison.verdict is Verdict.CHANGED
        and len(comparison.differences) <= MAX_CHANGE_DIFFERENCES
        and not (
            older is not None
            and newer is not None
            and (another_subject(older, newer, comparison) or same_values_of_another_thing(older, newer, comparison))
        )
    )


def left_open(comparison: Comparison) -> bool:
    """The comparison called the pair neither a restatement nor something different: a change, or undecided."""
    return not comparison.same and not (comparison.decided and comparison.verdict is Verdict.DIFFERENT)


def acts_as_update(comparison: Comparison, older: str, newer: str) -> bool:
    """``newer`` updates the fact ``older`` states: a decided change of one fact (``is_one_change``), or a
    statement that announces its change of the same thing in other words ("My dentist is Dr. Okafor." /
    "I switched dentists and now see Dr. Lindqvist.": ``announce.announces_change``) that the comparison
    did not call a restatement or something different. A change told with its reasons may look like
    something else to the comparison: it is still an update when it names what it changes
    (``announce.announced_update``), never when the comparison called it a restatement."""
    if is_one_change(comparison, older, newer):
        return True
    if left_open(comparison):
        return announces_change(older, newer)
    return not comparison.same and announced_update(older, newer)


def two_facts(comparison: Comparison, older: str, newer: str) -> bool:
    """The comparison found the pair about different things: decided DIFFERENT, or another subject or the same
    values said of another thing (``compare.subject``): nothing to ask the agent about."""
    return (comparison.decided and comparison.verdict is Verdict.DIFFERENT) or (
        another_subject(older, newer, comparison) or same_values_of_another_thing(older, newer, comparison)
    )


def may_update(comparison: Comparison, older: str, newer: str) -> bool:
    """``newer`` may update ``older`` but the comparison cannot say so: neither a restatement, nor an update it
    acts on (``acts_as_update``), nor two facts (``two_facts``). The agent is asked (``possible_updates``)."""
    return (
        not comparison.same and not acts_as_update(comparison, older, newer) and not two_facts(comparison, older, newer)
    )


def replaces(comparison: Comparison, older: str, newer: str) -> bool:
    """The working-memory cache's rule: ``newer`` (written after the live item ``older``) replaces it.

    A pack holds one value of each fact, so on top of ``acts_as_update`` a pair the comparison left open
    that keeps the subject and its predicate head and changes the ending ("My gym is FitLab on Elm
    Street." / "My gym is Pulse Fitness downtown.": ``statement.same_attribute_new_value``) replaces too:
    a pack showing both would show two values of one fact.
    """
    if acts_as_update(comparison, older, newer):
        return True
    return left_open(comparison) and same_attribute_new_value(older, newer)


def merges(older: str, newer: str) -> bool:
    """The working-memory cache merges ``newer`` into ``older`` (keeping one text, dropping the other) only when
    they are certified the same (``certify``): a merge is an action the agent neither sees nor undoes."""
    return certify(older, newer).same


def restates(comparison: Comparison, older: str, newer: str) -> bool:
    """Long-term memory merges ``newer`` into ``older`` though the comparison did not decide a restatement: the
    words moved without a value, polarity or name changing (``reworded``). A memory merge is shown and undone
    (``memory_unmerge``), so a rewording the word-by-word comparison misses may merge; the cache's may not."""
    return not comparison.same and reworded(older, newer)


# The statement comparison long-term memory and the cache act on (session 8: it replaced the 702-line
# ``Comparator``). It reads both texts (``read``), takes a certificate as the same (``certify``), and judges
# the rest on what differs, found as ``describe`` finds it but word by word in any order: a statement
# restated moves its words, so a word counts as said when the other text has it anywhere.

SAME_COSINE = 0.8
"""Whole-text cosine from which a pair whose only differences are synonyms or a loose rewording (not aligned,
no name on one side) is a restatement (the Comparator's ``same_cosine`` / ``rewording_cosine``, unchanged)."""
DIFFERENT_COSINE = 0.45
"""Under this cosine, texts that are not aligned are about different things."""
ALIGNED_SHARE = 0.6
"""Share of each text's words the other accounts for from which their left-over words are a localised change."""
LOCAL_WORDS = 2
"""At most this many left-over words per side, amid two or more shared words or values, is a localised change."""


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """The cosine of two sentence vectors (0 for a zero vector)."""
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norms = sum(x * x for x in a) ** 0.5 * sum(y * y for y in b) ** 0.5
    return dot / norms if norms else 0.0


def _shortens(short: str, long_: str) -> bool:
    """``short`` is a shortening of ``long_``: a prefix of 3+ letters ("config" / "configuration")."""
    return 3 <= len(short) < len(long_) and long_.startswith(short)


@dataclass(frozen=True)
class _Words:
    """What :func:`_left_over` needs of the text that says the other's words, built once per text (a stored
    memory or cache item meets many new ones)."""

    stems: frozenset[str]
    by_initial: dict[str, tuple[str, ...]]
    """Its stems and alphabetic tokens by first letter (shortenings are looked up among them)."""
    names: frozenset[str]
    budget: Counter[str]
    acronyms: dict[str, frozenset[int]]
    """Each acronym 2-5 neighbouring content tokens spell, with the positions spelling it."""
    short: frozenset[str]
    """Its short alphabetic content tokens (2-5 letters): what an acronym of the other text may spell."""


@lru_cache(maxsize=4096)
def _words(text: str) -> _Words:
    reading = read(text)
    stems = {it.stem for it in reading.items} | {p for it in reading.items for p in it.parts}
    stems |= {stem(t) for t in reading.tokens if not t.startswith("<")}
    by_initial: dict[str, list[str]] = {}
    for w in stems | {t for t in reading.tokens if t.isalpha()}:
        by_initial.setdefault(w[:1], []).append(w)
    content = [(k, t) for k, t in enumerate(reading.tokens) if not t.startswith("<") and t not in FUNCTION_WORDS]
    acronyms = {
        "".join(t[:1] for _, t in content[i : i + n]): frozenset(k for k, _ in content[i : i + n])
        for n in range(2, 6)
        for i in range(len(content) - n + 1)
    }
    return _Words(
        stems=frozenset(stems),
        by_initial={k: tuple(v) for k, v in by_initial.items()},
        names=frozenset(it.text.lower() for it in reading.items),
        budget=Counter(it.stem for it in reading.items),
        acronyms=acronyms,
        short=frozenset(t for _, t in content if 2 <= len(t) <= 5 and t.isalpha()),
    )


def _left_over(reading: Reading, other: Reading) -> list[Item]:
    """The words of ``reading`` that ``other`` does not say: not the same stem (a word said more often than
    ``other`` says it is left over: "code reviews" / "reviewers ... code reviews"), not all of a code name's
    parts, not a shortening of a word only ``other`` has or shortened by one (a code name only by a short form
    keeping two thirds of it: "PostgreSQL" / "Postgres", not "FitLab" / "Fitness"), not an acronym either way
    ("PM" / "product manager")."""
    words, mine = _words(other.text), _words(reading.text)
    own = {it.stem for it in reading.items} | set(reading.tokens)
    spelled = {k for acronym, places in mine.acronyms.items() if acronym in words.short for k in places}
    seen: Counter[str] = Counter()
    out: list[Item] = []
    for item in reading.items:
        seen[item.stem] += 1
        if item.stem in words.stems and not (words.budget[item.stem] and seen[item.stem] > words.budget[item.stem]):
            continue
        if (item.parts and set(item.parts) <= words.stems) or item.pos in spelled:
            continue
        word = item.text.lower().removesuffix("'s")
        if 2 <= len(word) <= 5 and word.isalpha() and word in words.acronyms:
            continue
        novel = [w for w in words.by_initial.get(word[:1], ()) if w not in own]
        if item.kind == "word" and any(_shortens(w, word) or _shortens(word, w) for w in novel):
            continue
        if item.kind != "word" and any(
            _shortens(w, word) and 3 * len(w) >= 2 * len(word) for w in words.names - own
        ):
            continue
        out.append(item)
    return out


def _frames(reading: Reading, words: list[Item]) -> bool:
    """One word only this text has frames what both say rather than restricting it: it heads a phrase both
    have ("7 years *old*", "my work-from-home *days*"), is no name, no negated word, no word of the subject, and
    modifies no word after it ("fly *premium* economy")."""
    wordnet = default_wordnet()
    if wordnet is None or len(words) != 1:
        return False
    item = words[0]
    before = reading.tokens[item.pos - 1] if item.pos > 0 else ""
    return (
        item.kind == "word"
        and not item.name
        and item.stem not in reading.negated
        and all(other.pos != item.pos + 1 for other in reading.items)
        and item.pos not in subject_positions(reading.text, wordnet)
        and wordnet.main_pos(item.text.lower()) in ("n", "a")
        and (before.startswith("<") or (bool(before) and before not in FUNCTION_WORDS and before != "not"))
    )


def _same_value(x: Slot, y: Slot) -> bool:
    """The same value (a rate must agree: "20 per minute" / "20 per hour"; a unit is a word like any other), or a
    bare count that is a duration's ("Leo is seven" / "7 years old")."""
    if x.kind != y.kind or x.rate != y.rate:
        return False
    if x.key == y.key:
        return True
    bare, counted = (x, y) if y.key.endswith("s") else (y, x)
    first = counted.text.split()[0].lower() if counted.text.split() else ""
    return bare.kind == "number" and counted.key.endswith("s") and NUMBER_WORDS.get(first, first) == bare.key


def _value_differences(ra: Reading, rb: Reading) -> list[Difference]:
    """Values of one text the other lacks (:func:`_same_value`): paired by kind when both have one (a changed
    value), else added or dropped."""
    left_a = [x for x in ra.slots if not any(_same_value(x, y) for y in rb.slots)]
    left_b = [y for y in rb.slots if not any(_same_value(x, y) for x in ra.slots)]
    out: list[Difference] = []
    for sa in list(left_a):
        sb = next((t for t in left_b if t.kind == sa.kind), None)
        if sb is not None:
            left_a.remove(sa)
            left_b.remove(sb)
            order = sa.kind == "number" and sa.key != sb.key and sorted(sa.key.split("/")) == sorted(sb.key.split("/"))
            out.append(Difference("order" if order else sa.kind, sa.text, sb.text))
    return out + [Difference(s.kind, s.text, None) for s in left_a] + [Difference(s.kind, None, s.text) for s in left_b]


def _word_pairs(
    left_a: list[Item], left_b: list[Item], ra: Reading, rb: Reading
) -> tuple[set[int], set[int], list[Difference]]:
    """Left-over words paired one to one by WordNet: a synonym or the same action (a verb's direct hypernym or
    troponym) is the same word (softly); an antonym is a polarity difference. One of the two negated turns
    opposites into the same ("no longer optional" / "required") and synonyms into opposites ("likes" / "no
    longer wants")."""
    wordnet = default_wordnet()
    soft_a: set[int] = set()
    soft_b: set[int] = set()
    out: list[Difference] = []
    if wordnet is None:
        return soft_a, soft_b, out
    surface = [x.text.lower().removesuffix("'s") if x.kind == "word" else "" for x in left_b]
    # Only a word sharing a synset with a word of the other side, or whose antonyms or verb links reach one, can
    # be a synonym, antonym or the same action: the rows of other words are skipped.
    synsets_b = {s for w in surface if w for s in wordnet.profile(w).synsets}
    reach_b = {s for w in surface if w for p in [wordnet.profile(w)] for s in p.opposite | p.verb_links}
    for ka, x in enumerate(left_a):
        xa = x.text.lower().removesuffix("'s")
        pa = wordnet.profile(xa) if x.kind == "word" else None
        if pa is None or not (pa.synsets & (synsets_b | reach_b) or (pa.opposite | pa.verb_links) & synsets_b):
            continue
        for kb, y in enumerate(left_b):
            if kb in soft_b or not surface[kb]:
                continue
            relation = wordnet.relation(xa, surface[kb])
            if relation in (Relation.SYNONYM, Relation.ACTION, Relation.ANTONYM):
                soft_a.add(ka)
                soft_b.add(kb)
                if (relation is Relation.ANTONYM) != ((x.stem in ra.negated) != (y.stem in rb.negated)):
                    out.append(Difference("polarity", x.text, y.text))
                break
    return soft_a, soft_b, out


def _negation_differences(ra: Reading, rb: Reading) -> list[Difference]:
    """A word both texts have (or a shortening of it: "signed" / "without a signature"), negated in one only
    (with a different count of negations)."""
    if ra.negations % 2 == rb.negations % 2:
        return []
    sa, sb = {it.stem for it in ra.items}, {it.stem for it in rb.items}
    both = (sa & sb) | {w for w in sa ^ sb if any(_shortens(w, o) or _shortens(o, w) for o in sa | sb)}
    return [
        Difference("polarity", f"not {w}" if w in ra.negated else w, f"not {w}" if w in rb.negated else w)
        for w in sorted((ra.negated ^ rb.negated) & both)
    ]


def _word_differences(left_a: list[Item], left_b: list[Item]) -> list[Difference]:
    """Left-over words paired in order within their sort (code names, names, other words); the rest qualifiers."""
    out: list[Difference] = []
    for sort in ("identifier", "name", "content"):
        xs = [it for it in left_a if _sort(it) == sort]
        ys = [it for it in left_b if _sort(it) == sort]
        pairs = zip(xs, ys, strict=False)
        out += [Difference("term" if _other_thing(x, y) else sort, x.text, y.text) for x, y in pairs]
        out += [Difference("qualifier", x.text, None) for x in xs[len(ys) :]]
        out += [Difference("qualifier", None, y.text) for y in ys[len(xs) :]]
    return out


def _other_thing(x: Item, y: Item) -> bool:
    """Two nouns WordNet knows that name different things (unrelated, or a broader or narrower kind): "bills" /
    "birthdays". Not a request's first word, its verb whatever else it can be ("Sort" / "Order" the list)."""
    wordnet = default_wordnet()
    if wordnet is None or x.pos == 0 or y.pos == 0 or x.kind != "word" or y.kind != "word" or x.name or y.name:
        return False
    a, b = x.text.lower(), y.text.lower()
    nouns = wordnet.main_pos(a) == wordnet.main_pos(b) == "n"
    return nouns and wordnet.relation(a, b) in (Relation.UNRELATED, Relation.KIND)


def _sort(item: Item) -> str:
    return "identifier" if item.kind == "identifier" else "name" if item.name else "content"


def compared(older: str, newer: str, similarity: float) -> Comparison:
    """What ``newer`` is to ``older`` at whole-text cosine ``similarity``: SAME (a restatement), CHANGED (naming
    what differs) or DIFFERENT, decided or not (see the comment above :data:`SAME_COSINE`)."""

    def verdict(kind: Verdict, differences: list[Difference], reason: str, decided: bool = True) -> Comparison:
        return Comparison(kind, tuple(differences), similarity, decided, f"{reason} (cosine {similarity:.2f})")

    if certify(older, newer).same:
        return verdict(Verdict.SAME, [], "certified: same words and values")
    ra, rb = read(older), read(newer)
    left_a, left_b = _left_over(ra, rb), _left_over(rb, ra)
    soft_a, soft_b, opposites = _word_pairs(left_a, left_b, ra, rb)
    stated = _value_differences(ra, rb) + opposites + _negation_differences(ra, rb)
    left_a = [it for k, it in enumerate(left_a) if k not in soft_a]
    left_b = [it for k, it in enumerate(left_b) if k not in soft_b]
    words = _word_differences(left_a, left_b)
    said_a, said_b = len(ra.items) - len(left_a), len(rb.items) - len(left_b)
    share = min(said_a / len(ra.items) if ra.items else 1.0, said_b / len(rb.items) if rb.items else 1.0)
    anchors = len({s.key for s in ra.slots} & {s.key for s in rb.slots})
    aligned = share >= ALIGNED_SHARE or (
        max(len(left_a), len(left_b)) <= LOCAL_WORDS and min(said_a, said_b) + anchors >= 2
    )
    sure = similarity >= SAME_COSINE
    if not aligned and similarity < DIFFERENT_COSINE:
        return verdict(Verdict.DIFFERENT, stated + words, "about something else")
    if not stated and sure and ((not left_b and _frames(ra, left_a)) or (not left_a and _frames(rb, left_b))):
        return verdict(Verdict.SAME, [], "same values; one word frames what both say")
    if stated or (words and aligned):
        return verdict(Verdict.CHANGED, stated + words, "; ".join(d.describe() for d in (stated + words)[:3]))
    if words:
        # Not aligned: the sentence model judges, when shared values or words anchor what both are about and no
        # name or code name is on one side only (a name is a value, whatever the model says).
        anchored = bool(ra.slots) or min(said_a, said_b) >= 3
        if sure and anchored and not any(d.kind in ("name", "identifier") for d in words):
            return verdict(Verdict.SAME, [], "same values, loose rewording")
        return verdict(Verdict.CHANGED, words, "loose rewording, unsure", decided=False)
    return verdict(Verdict.SAME, [], "same values", decided=sure or not (soft_a or soft_b))
