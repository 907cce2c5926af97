"""Long-term memory's and the cache's comparison of two statements: same (a restatement), changed (and
what), or different. Plans no longer use it (they certify, ``certify.py``); the rules written for plan
requests alone (roles "from X to Y" and "by N", value bounds, a second coordinated action, a restricting
qualifier, particles "on" / "off", names trading values, counted nouns moved, calendar spans) were deleted in
session 7: switched off, none changed any decision on the updates dev file (120 cases and 86 same-kind
pairs of two cases), and the memory and cache figures stayed the same.

How it decides, in order:

1. **Values** (see :mod:`.read`): numbers with their units and rates, durations, dates,
   times, versions, URLs (a changed scheme is named as such), paths, identifiers, colours
   and quoted strings must agree. A value on one side only is a difference too (an added
   "and set weight decay to 0.05").
2. **Polarity**: a negator ("not", "n't") applies to the item after it; a word negated in one text and affirmed in the
   other, with a different count of negations, is a polarity change; so is a word that is
   another word of the other text with a negating prefix (enable / disable), a WordNet
   antonym of it (increase / decrease, shut / open).
   A negated opposite is the same ("no longer optional" / "required"); a negated synonym is not.
3. **Words**: every content word of each text must be accounted for by the other text:
   the same Snowball stem, an abbreviation or acronym, a compound, or,
   one to one among the words left over, WordNet 3.0 (:mod:`.wordnet`): a shared synset, or
   a verb that is the direct hypernym or troponym of the other (``settings.action_same``).
   A word accounted for by none is a difference: a *name* when capitalised, an *identifier*
   for code names, a *term* when WordNet says the substituted nouns name other things
   (unrelated, or a broader or narrower kind), else *content* (a substitution it cannot
   settle: a request verb, an unknown word); on one side only, a *qualifier*.

Any difference of kinds 1-2 is a decided CHANGED. A single word one text adds that only frames
what both say (``settings.framing_words``, see ``_framing``) is a restatement from
``settings.same_cosine``. Word differences are decided when the two texts are aligned (most
words shared, or the difference confined to a couple of words amid shared words and values);
when they are not (a loose rewording), the pair is SAME from the whole-text cosine
``settings.rewording_cosine`` and undecided below it. Without any difference the texts are SAME
(with synonyms, from ``settings.same_cosine``). Texts that are not aligned and whose cosine is
under ``settings.different_cosine`` are DIFFERENT.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal

from ..embeddings import Embedder
from .lexicon import DETERMINERS, FUNCTION_WORDS, NUMBER_WORDS, PREPOSITIONS
from .read import Item, Reading, Slot, read, stem
from .subject import subject_positions
from .types import Comparison, Difference, Verdict
from .wordnet import Relation, Synset, WordNet, default_wordnet

__all__ = ["Comparator", "CompareSettings"]

_NEGATING_PREFIXES = ("un", "dis", "in", "im", "il", "ir", "non", "de", "anti")
"""English negating/reversing prefixes (morphology): "disable" is "enable" negated."""


@dataclass(frozen=True)
class CompareSettings:
    """The comparison's parameters (the benchmark tunes them leave-one-domain-out)."""

    action_same: bool = True
    """A verb that is the direct hypernym or troponym of the other text's verb (send / forward) does the same
    action; False leaves such a substitution for the agent to judge."""
    aligned: float = 0.6
    """Share of each text's words accounted for (the smaller of the two) from which the texts count as aligned:
    their differing words are then a localised substitution or qualifier, decided as a change."""
    same_cosine: float = 0.8
    """Whole-text cosine a difference-free pair with soft (synonym) matches needs to be decided SAME."""
    different_cosine: float = 0.45
    """Under this whole-text cosine, texts sharing under half their words are about different things."""
    local_words: int = 2
    """At most this many left-over words per side, amid two or more shared ones, is a localised difference."""
    loose_anchor_words: int = 3
    """A loose rewording without any value is judged by the cosine only when it shares this many words."""
    rewording_cosine: float = 0.8
    """Whole-text cosine from which a loose rewording (not aligned) with the same values is decided SAME."""
    framing_words: int = 1
    """Up to this many words one text adds that frame rather than restrict what both say are accounted for
    softly (see ``Comparator._settle_framing``); 0 counts every added word as a difference."""


@dataclass
class _Side:
    reading: Reading
    matched: set[int] = field(default_factory=set)
    """Indexes of items accounted for by the other text."""
    soft: set[int] = field(default_factory=set)
    """Of those, the ones matched only by word similarity."""


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    na = sum(x * x for x in a) ** 0.5
    nb = sum(y * y for y in b) ** 0.5
    return dot / (na * nb) if na and nb else 0.0


@lru_cache(maxsize=65536)
def _abbreviation(short: str, long_: str) -> bool:
    """``short`` abbreviates ``long_``: a prefix of 3+ letters, or its first letter plus later letters in order."""
    if len(short) >= len(long_) or len(short) < 2 or short[0] != long_[0]:
        return False
    if len(short) >= 3 and long_.startswith(short):
        return True
    if len(short) > 4 or len(long_) < 5:
        return False
    pos = 1
    for ch in short[1:]:
        pos = long_.find(ch, pos) + 1
        if pos == 0:
            return False
    return True


def _surface(item: Item) -> str:
    """The word as WordNet and the spelling checks see it: lower case, without a possessive ("mother's")."""
    return item.text.lower().removesuffix("'s")


class Comparator:
    """Compare two short texts: :meth:`compare` answers same, changed (naming each difference) or different."""

    def __init__(
        self,
        embedder: Embedder,
        settings: CompareSettings | None = None,
        lexicon: WordNet | Literal[False] | None = None,
    ) -> None:
        """``lexicon``: the WordNet reader (None: the installed one; False: none, substitutions stay undecided)."""
        self.embedder = embedder
        self.settings = settings or CompareSettings()
        self._lexicon = lexicon
        self._lexicon_ready = lexicon is not None

    @property
    def lexicon(self) -> WordNet | None:
        """The WordNet reader, found on the first comparison (never at mount); None without one."""
        if not self._lexicon_ready:
            self._lexicon = default_wordnet() or False
            self._lexicon_ready = True
        return self._lexicon or None

    # ------------------------------------------------------------------ public

    def compare(
        self, a: str, b: str, *, vectors: tuple[Sequence[float], Sequence[float]] | None = None
    ) -> Comparison:
        """Compare ``a`` (the earlier / stored text) with ``b`` (the newer / asked one).

        ``vectors`` are the two texts' sentence vectors when the caller has them (no re-embedding).
        """
        pair: tuple[Sequence[float], Sequence[float]]
        if vectors is None:
            va, vb = self.embedder.embed_documents([a, b])
            pair = (va, vb)
        else:
            pair = vectors
        cosine = _cosine(*pair)
        return self.judge(a, b, cosine)

    def judge(self, a: str, b: str, cosine: float) -> Comparison:
        """The comparison given the whole-text cosine already known."""
        if " ".join(a.lower().split()) == " ".join(b.lower().split()):
            return Comparison(Verdict.SAME, (), cosine, True, "same text")
        ra, rb = read(a), read(b)
        diffs: list[Difference] = []
        diffs += self._slot_differences(ra, rb)
        side_a, side_b = _Side(ra), _Side(rb)
        self._match_words(side_a, rb)
        self._match_words(side_b, ra)
        opposites = self._match_soft(side_a, side_b)
        diffs += opposites
        diffs += self._polarity(ra, rb, side_a, side_b)
        s = self.settings
        # Aligned: most words shared, or the difference is confined to a few words amid shared words and values.
        anchors = len({sl.key for sl in ra.slots} & {sl.key for sl in rb.slots})
        aligned = self._aligned(len(ra.items), len(rb.items), side_a.matched, side_b.matched, anchors)
        word_diffs = self._word_differences(side_a, side_b)
        share = self._share(side_a, side_b)
        if not aligned and cosine < s.different_cosine:
            return Comparison(Verdict.DIFFERENT, tuple(diffs + word_diffs), cosine, True,
                              f"cosine {cosine:.2f} and {share:.0%} of words shared: about something else")
        if diffs:
            return Comparison(Verdict.CHANGED, tuple(diffs + word_diffs), cosine, True,
                              "; ".join(d.describe() for d in diffs[:3]))
        if word_diffs and s.framing_words and cosine >= s.same_cosine:
            framed = self._framed(side_a, side_b)
            if framed:
                return Comparison(Verdict.SAME, (), cosine, True,
                                  f"same values; {framed} frames what both say (cosine {cosine:.2f})")
        if word_diffs:
            detail = "; ".join(d.describe() for d in word_diffs[:3])
            if aligned:
                return Comparison(Verdict.CHANGED, tuple(word_diffs), cosine, True, detail)
            anchored = bool(ra.slots) or min(len(side_a.matched), len(side_b.matched)) >= s.loose_anchor_words
            # A name or code name one text has and the other lacks is a value, whatever the sentence model says
            # ("My dentist is Dr. Alvarez ..." / "... Dr. Alvarez retired, so ... my dentist is now Dr. Okafor").
            named = any(d.kind in ("name", "identifier") for d in word_diffs)
            if cosine >= s.rewording_cosine and anchored and not named:
                # The differing words cannot be localised to a substitution: the sentence model judges, when
                # shared values (or enough shared words) anchor what both texts are about.
                return Comparison(Verdict.SAME, (), cosine, True,
                                  f"same values, loose rewording ({share:.0%} of words shared, cosine {cosine:.2f})")
            return Comparison(Verdict.CHANGED, tuple(word_diffs), cosine, False,
                              f"loose rewording ({share:.0%} of words shared), unsure: {detail}")
        soft = bool(side_a.soft or side_b.soft)
        if not soft or cosine >= s.same_cosine:
            how = "synonyms" if soft else "same words"
            return Comparison(Verdict.SAME, (), cosine, True, f"same values, {how} (cosine {cosine:.2f})")
        return Comparison(Verdict.SAME, (), cosine, False,
                          f"same values in other words, but cosine {cosine:.2f} < {s.same_cosine:.2f}: unsure")

    def _aligned(self, na: int, nb: int, matched_a: set[int], matched_b: set[int], anchors: int) -> bool:
        """Most words of both texts accounted for, or what is left over is a couple of words amid shared words
        and values (``anchors``: values both texts have)."""
        share = 1.0 if na == 0 and nb == 0 else min(len(matched_a) / na if na else 0.0,
                                                    len(matched_b) / nb if nb else 0.0)
        left_over = max(na - len(matched_a), nb - len(matched_b))
        return share >= self.settings.aligned or (
            left_over <= self.settings.local_words and min(len(matched_a), len(matched_b)) + anchors >= 2
        )

    # ------------------------------------------------------------------ values

    def _slot_differences(self, ra: Reading, rb: Reading) -> list[Difference]:
        out: list[Difference] = []
        left_a = list(ra.slots)
        left_b = list(rb.slots)
        # Exact values first (numbers also need compatible units).
        for sa in list(left_a):
            for sb in left_b:
                if sa.kind == sb.kind and (
                    sa.key == sb.key or _less_specific(sa, sb) or _less_specific(sb, sa)
                ):
                    unit_diff = self._unit_difference(sa, sb)
                    if unit_diff is not None:
                        out.append(unit_diff)
                    left_a.remove(sa)
                    left_b.remove(sb)
                    break
        for sa in list(left_a):
            other = next((x for x in left_b if _comparable(sa, x)), None)
            if other is None:
                continue
            left_a.remove(sa)
            left_b.remove(other)
            out.append(_value_difference(sa, other))
        for sa in left_a:
            if sa.kind != "quoted":
                out.append(Difference(sa.kind, _show(sa), None))
        for sb in left_b:
            if sb.kind != "quoted":
                out.append(Difference(sb.kind, None, _show(sb)))
        return out

    def _unit_difference(self, sa: Slot, sb: Slot) -> Difference | None:
        if sa.rate and sb.rate and sa.rate != sb.rate:
            return Difference("number", _show(sa), _show(sb))
        # A unit of measure ("48dp" / "48px") must agree; a counted noun ("5 replicas" / "5 pods") is a word
        # like the others and is compared as one.
        if (sa.measure or sb.measure) and sa.unit and sb.unit and not self._same_word(sa.unit, sb.unit):
            return Difference("number", _show(sa), _show(sb))
        return None

    # ------------------------------------------------------------------ words

    def _same_word(self, a: str, b: str) -> bool:
        if a == b or stem(a) == stem(b):
            return True
        short, long_ = sorted((a, b), key=len)
        if _abbreviation(short, long_):
            return True
        return self.lexicon is not None and self.lexicon.relation(a, b) is Relation.SYNONYM

    def _match_words(self, side: _Side, other: Reading) -> None:
        """Mark which of ``side``'s items ``other`` accounts for (lexically, then by similarity)."""
        words = _words_of(other.text)  # other is read(other.text): the only maker of a Reading
        other_stems, units, budget = words.stems, words.units, words.budget
        novel_by_initial = _by_initial(other_stems - {it.stem for it in side.reading.items})
        spelled = _spelled_out(side.reading.tokens, other.tokens)
        seen: Counter[str] = Counter()
        for k, item in enumerate(side.reading.items):
            seen[item.stem] += 1
            if item.kind == "word" and budget[item.stem] and seen[item.stem] > budget[item.stem]:
                continue  # a word said more often than the other text says it is not accounted for by it
            if item.pos in spelled or any(
                item.stem == u or _surface(item).startswith(u) or _abbreviation(u, _surface(item))
                or _abbreviation(u, item.stem)
                for u in units
            ) or self._lexical(
                item, other_stems, words.surfaces, words.compounds, words.acronyms, novel_by_initial,
            ):
                side.matched.add(k)

    def _shortening(self, short: str, long_: str) -> bool:
        """An abbreviation by letters taken out of the longer word ("cfg" / "config") is a shortening only when it
        is no English word of its own ("grid" is not "gyroid", nor "pool" "protocol"), or one WordNet derives
        the longer from ("high" / "height"). A prefix ("info", "repo") and a two-letter form ("mc") stay
        shortenings."""
        if long_.startswith(short) or len(short) < 3 or self.lexicon is None:
            return True
        return not self.lexicon.known(short) or self.lexicon.derived(short, long_)

    def _relation(self, x: Item, y: Item) -> Relation:
        """How two content words relate in WordNet (UNKNOWN for code names, or without the lexicon)."""
        if self.lexicon is None or x.kind != "word" or y.kind != "word":
            return Relation.UNKNOWN
        return self.lexicon.relation(_surface(x), _surface(y))

    def _other_thing(self, x: Item, y: Item) -> bool:
        """Two nouns WordNet knows that name different things: unrelated, or one a broader kind of the other.

        Only nouns: a request's verb varies freely ("Add" / "Show" a spinner) where a changed object never
        does, so an unrelated verb or adjective stays a substitution for the agent to judge."""
        if self.lexicon is None or x.pos == 0 or y.pos == 0:
            return False  # the first word of a request is its verb ("Sort" / "Order" the list), whatever else it is
        if self._relation(x, y) not in (Relation.UNRELATED, Relation.KIND):
            return False
        return self.lexicon.main_pos(_surface(x)) == "n" and self.lexicon.main_pos(_surface(y)) == "n"

    def _match_soft(self, side_a: _Side, side_b: _Side) -> list[Difference]:
        """Pair the words neither text accounts for lexically, one to one, by WordNet: synonyms (and verbs naming
        the same action more or less specifically) are the same word; antonyms a polarity change (returned)."""
        # Only words have WordNet relations (``_relation`` is UNKNOWN for anything else): the others are left out
        # of the all-pairs loop, and each word's surface is taken once.
        if self.lexicon is None:
            return []
        relation_of = self.lexicon.relation
        left_a = [(k, _surface(it)) for k, it in enumerate(side_a.reading.items)
                  if k not in side_a.matched and it.kind == "word"]
        left_b = [(k, _surface(it)) for k, it in enumerate(side_b.reading.items)
                  if k not in side_b.matched and it.kind == "word"]
        synonyms: list[tuple[int, int]] = []
        opposite: list[tuple[int, int]] = []
        actions: list[tuple[int, int]] = []
        profile = self.lexicon.profile
        # Only a word sharing a synset with a word of the other side, or whose antonyms or verb links reach one
        # (or is reached by one), can be a synonym, antonym or the same action: the rows of other words are skipped.
        synsets_b: set[Synset] = set()
        reach_b: set[Synset] = set()
        for _kb, xb in left_b:
            pb = profile(xb)
            synsets_b |= pb.synsets
            reach_b |= pb.opposite | pb.verb_links
        for ka, xa in left_a:
            pa = profile(xa)
            if not (pa.synsets & reach_b or synsets_b & (pa.synsets | pa.opposite | pa.verb_links)):
                continue
            for kb, xb in left_b:
                relation = relation_of(xa, xb)
                if relation not in (Relation.ANTONYM, Relation.SYNONYM, Relation.ACTION) or (
                    relation is Relation.ACTION and not self.settings.action_same
                ):
                    continue
                # One of the two negated turns opposites into the same ("no longer optional" / "required") and
                # synonyms into opposites ("likes" / "no longer wants").
                negated = (side_a.reading.items[ka].stem in side_a.reading.negated) != (
                    side_b.reading.items[kb].stem in side_b.reading.negated
                )
                if (relation is Relation.ANTONYM) != negated:
                    opposite.append((ka, kb))
                else:
                    (actions if relation is Relation.ACTION else synonyms).append((ka, kb))
        used_a: set[int] = set()
        used_b: set[int] = set()
        out: list[Difference] = []
        # A word that has its synonym in the other text is accounted for by it, and is not also the opposite of
        # another of its words ("Fix the broken link" / "the link is dead, please repair it": fix = repair).
        for pairs, polarity in ((synonyms, False), (opposite, True), (actions, False)):
            for ka, kb in pairs:
                if ka in used_a or kb in used_b:
                    continue
                used_a.add(ka)
                used_b.add(kb)
                side_a.matched.add(ka)
                side_b.matched.add(kb)
                if polarity:
                    out.append(Difference("polarity", side_a.reading.items[ka].text, side_b.reading.items[kb].text))
                else:
                    side_a.soft.add(ka)
                    side_b.soft.add(kb)
        return out

    def _lexical(
        self,
        item: Item,
        other_stems: frozenset[str],
        other_surfaces: Sequence[str],
        compounds: frozenset[str],
        acronyms: frozenset[str],
        novel_by_initial: dict[str, list[str]],
    ) -> bool:
        if item.stem in other_stems:
            return True
        # A function word among a code name's parts is no label ("sign-in-2"), unless it is a letter
        # ("greenhouse-a" / "greenhouse-b") or written in capitals ("US-2" / "EU-2": a code, not "us").
        capitals = {w.lower() for w in re.findall(r"[A-Z]{2,}", item.text)}
        if item.kind == "identifier" and item.parts and all(
            p in other_stems
            or (p in FUNCTION_WORDS and len(p) > 1 and p not in capitals)
            or any(_abbreviation(p, o) or _abbreviation(o, p) for o in other_stems)
            for p in item.parts
        ):
            return True
        surface = _surface(item).replace("_", "")
        if item.kind == "identifier":
            # A code name is accounted for by itself, by all its parts, or by a short form that keeps most of
            # it ("Postgres" / "PostgreSQL"), never by a mere prefix ("fetch" / "fetchUser").
            return any(len(o) >= 4 and 3 * len(o) >= 2 * len(surface) and surface.startswith(o) for o in other_surfaces)
        # A word both texts have ("table") already has its counterpart: it abbreviates nothing else ("tablets").
        initials = {item.stem[:1], surface[:1]}
        for o in (o for initial in initials for o in novel_by_initial.get(initial, ())):
            if any(
                _abbreviation(short, long_) and self._shortening(short, long_)
                for short, long_ in ((item.stem, o), (surface, o), (o, item.stem))
            ):
                return True
        # Compounds: "dataloader" = "data" + "loader"; acronyms: "pm" = "product manager".
        return surface in compounds or (2 <= len(surface) <= 5 and surface.isalpha() and surface in acronyms)

    # ------------------------------------------------------------------ polarity and roles

    def _polarity(self, ra: Reading, rb: Reading, side_a: _Side, side_b: _Side) -> list[Difference]:
        out: list[Difference] = []
        keys_a = {it.stem for it in ra.items} | {t for t in ra.tokens if t.startswith("<")}
        keys_b = {it.stem for it in rb.items} | {t for t in rb.tokens if t.startswith("<")}
        surfaces = {it.stem: it.text for it in (*ra.items, *rb.items)}
        # "Hide the sidebar" and "the sidebar shouldn't be visible" negate different words but once each.
        conflicts = []
        if ra.negations % 2 != rb.negations % 2:
            conflicts = sorted((ra.negated ^ rb.negated) & keys_a & keys_b)
            if not conflicts:
                # The negated word may stand in the other text in another form ("certified" / "without
                # certification"): the same word by stem or abbreviation.
                conflicts = sorted(
                    key
                    for key in ra.negated ^ rb.negated
                    if not key.startswith("<")
                    and any(
                        not other.startswith("<") and self._same_word(key, other)
                        for other in (keys_b if key in ra.negated else keys_a)
                    )
                )
        for key in conflicts:
            shown = key[1:-1].split(":", 1)[1] if key.startswith("<") else surfaces.get(key, key)
            out.append(Difference("polarity", f"not {shown}" if key in ra.negated else shown,
                                  f"not {shown}" if key in rb.negated else shown))
        # One of two words negating each other starts with a negating prefix: a word without one is only tried
        # against the other text's words that have one.
        surfaces_b = [(j, _surface(other), other) for j, other in enumerate(rb.items)]
        prefixed_b = [entry for entry in surfaces_b if entry[1].startswith(_NEGATING_PREFIXES)]
        for k, item in enumerate(ra.items):
            if k in side_a.matched and k not in side_a.soft:
                continue
            x = _surface(item)
            for j, y, other in surfaces_b if x.startswith(_NEGATING_PREFIXES) else prefixed_b:
                if j in side_b.matched and j not in side_b.soft:
                    continue
                if _negates(x, y) or _negates(y, x):
                    out.append(Difference("polarity", item.text, other.text))
                    side_a.matched.discard(k)
                    side_b.matched.discard(j)
                    side_a.matched.add(k)
                    side_b.matched.add(j)
        return out

    def _word_differences(self, side_a: _Side, side_b: _Side) -> list[Difference]:
        only_a = [it for k, it in enumerate(side_a.reading.items) if k not in side_a.matched]
        only_b = [it for k, it in enumerate(side_b.reading.items) if k not in side_b.matched]
        out: list[Difference] = []
        # Left-over words are paired in order within their sort (code names, names, other words): a request verb
        # left over on one side and a name on the other are not one substituted name.
        for sort in ("identifier", "name", "word"):
            xs = [it for it in only_a if _sort(it) == sort]
            ys = [it for it in only_b if _sort(it) == sort]
            for x, y in zip(xs, ys, strict=False):
                kind = _word_kind(x, y)
                if kind == "content" and self._other_thing(x, y):
                    kind = "term"
                out.append(Difference(kind, x.text, y.text))
            out += [Difference("qualifier", x.text, None) for x in xs[len(ys) :]]
            out += [Difference("qualifier", None, y.text) for y in ys[len(xs) :]]
        return out

    def _framed(self, side_a: _Side, side_b: _Side) -> str:
        """The words one text adds that only frame what both texts say (see ``_framing``), when they are all
        that differs ("" otherwise)."""
        for side, other in ((side_a, side_b), (side_b, side_a)):
            if all(k in other.matched for k in range(len(other.reading.items))):
                words = self._framing(side)
                if words:
                    return ", ".join(words)
        return ""

    def _framing(self, side: _Side) -> list[str]:
        """The words only ``side`` has (the other text has none left over) when they frame rather than restrict
        what both say: a verb ("how fast the player *walks*"), a noun or adjective heading a phrase both texts
        have ("my work-from-home *days*", "7 years *old*"); [] when any of them restricts. The caller also requires the
        whole-text cosine to reach ``same_cosine``. A word that restricts stays a difference: an adverb ("only",
        "locally"), a modifier right before a content word ("*hover* background", "*eval* batch size"), a negated
        word ("without a *reply*"), a name, a word WordNet does not know (a specific term: "k8s", "int8"), the
        object of a preposition ("*in the sidebar*", "*for tablets*"), a word of a statement's subject."""
        if self.lexicon is None:
            return []
        reading = side.reading
        starts = {item.pos for item in reading.items}
        left = [reading.items[k] for k in range(len(reading.items)) if k not in side.matched]
        if not left or len(left) > self.settings.framing_words:
            return []
        subject = subject_positions(reading.text, self.lexicon)
        for item in left:
            if item.kind != "word" or item.name or item.stem in reading.negated or item.pos + 1 in starts:
                return []
            if _after_preposition(reading.tokens, item.pos):
                return []  # "Add the login button *in the sidebar*": a phrase that restricts
            if item.pos > 0 and reading.tokens[item.pos - 1] in _COORDINATORS:
                return []  # "Add the login button, then *deploy*": another action or thing
            # A word of a statement's subject says what the statement is about ("EU customer data *backups* are
            # stored in Frankfurt"): never a framing word.
            pos = self.lexicon.main_pos(_surface(item))
            if item.pos in subject or pos in (None, "r"):
                return []
            # A noun or adjective frames only as the head of a phrase both texts have ("sprinkler *system*", "CSV
            # *file*", "7 years *old*"); on its own it brings in another participant ("... that *admins* use").
            opening = item is reading.items[0]  # a request's verb, whatever else the word can be ("Schedule")
            if pos in ("n", "a") and not opening and not (item.pos > 0 and _is_content(reading.tokens[item.pos - 1])):
                return []
        return [item.text for item in left]

    @staticmethod
    def _share(side_a: _Side, side_b: _Side) -> float:
        na, nb = len(side_a.reading.items), len(side_b.reading.items)
        if na == 0 and nb == 0:
            return 1.0
        sa = len(side_a.matched) / na if na else 0.0
        sb = len(side_b.matched) / nb if nb else 0.0
        return min(sa, sb)


def _by_initial(words: Iterable[str]) -> dict[str, list[str]]:
    """``words`` grouped by their first letter."""
    out: dict[str, list[str]] = {}
    for w in words:
        out.setdefault(w[:1], []).append(w)
    return out


def _joined(seq: Sequence[str]) -> tuple[set[str], set[str]]:
    """The words two or three neighbouring tokens of ``seq`` make (compounds) and the initials of every 2-5
    neighbouring tokens (acronyms)."""
    compounds: set[str] = set()
    for i in range(len(seq) - 1):
        compounds.add(seq[i] + seq[i + 1])
        if i + 2 < len(seq):
            compounds.add(seq[i] + seq[i + 1] + seq[i + 2])
    initials = [t[:1] for t in seq]
    acronyms = {"".join(initials[i : i + n]) for n in range(2, 6) for i in range(len(seq) - n + 1)}
    return compounds, acronyms


def _spelled_out(tokens: Sequence[str], other_tokens: Sequence[str]) -> set[int]:
    """Positions of ``tokens`` whose initials spell an acronym of the other text ("learning rate" / "lr")."""
    out: set[int] = set()
    acronyms = {t for t in other_tokens if 2 <= len(t) <= 5 and t.isalpha() and t not in FUNCTION_WORDS}
    if not acronyms:
        return out
    # Spans of 2-5 tokens without a value whose initials are an acronym: one pass over the text per length.
    initials = [t[:1] for t in tokens]
    next_value = [len(tokens)] * (len(tokens) + 1)  # the first value token at or after each position
    for i in range(len(tokens) - 1, -1, -1):
        next_value[i] = i if tokens[i].startswith("<") else next_value[i + 1]
    for n in {len(acr) for acr in acronyms}:
        for i in range(len(tokens) - n + 1):
            if next_value[i] >= i + n and "".join(initials[i : i + n]) in acronyms:
                out.update(range(i, i + n))
    return out


@lru_cache(maxsize=65536)
def _negates(x: str, y: str) -> bool:
    """``y`` is ``x`` with a negating prefix (enable / disable, lock / unlock)."""
    return len(x) >= 3 and any(
        y.startswith(p) and (y == p + x or stem(y[len(p) :]) == stem(x)) for p in _NEGATING_PREFIXES
    )


_COORDINATORS = frozenset(["and", "or", "but", "then", "also", "plus", "nor"])
"""Coordinating conjunctions (and "then", "also"): a word after one adds an action or a thing."""


def _is_content(token: str) -> bool:
    return token.startswith("<") or (token not in FUNCTION_WORDS and token not in ("->", "not"))


def _after_preposition(tokens: Sequence[str], pos: int) -> bool:
    """The token at ``pos`` is the object of a preposition (determiners between them skipped)."""
    k = pos - 1
    while k >= 0 and tokens[k] in DETERMINERS:
        k -= 1
    return k >= 0 and tokens[k] in PREPOSITIONS


def _sort(item: Item) -> str:
    return "identifier" if item.kind == "identifier" else "name" if item.name else "word"


def _word_kind(x: Item, y: Item) -> str:
    if x.kind == "identifier" or y.kind == "identifier":
        return "identifier"
    if x.name or y.name:
        return "name"
    return "content"


def _show(slot: Slot) -> str:
    text = slot.text
    if slot.unit and slot.unit not in text.lower():
        text = f"{text} {slot.unit}"
    if slot.rate and "/" not in text and "per" not in text.lower():
        text = f"{text}{slot.rate}"
    return text


_AM_PM = re.compile(r"(?i)[ap]\.?m\.?")
_LEADING_COUNT = re.compile(r"\s*([\d.]+|[a-z]+)")


def _less_specific(vague: Slot, precise: Slot) -> bool:
    """``vague`` says ``precise`` with less detail: a time without am/pm ("6:30" / "6:30 pm"), or a bare count
    that is a duration's ("Leo is seven" / "7 years old"; "it's 15 right now" / "15 minutes")."""
    if vague.kind == "time":
        if _AM_PM.search(vague.text) or not _AM_PM.search(precise.text):
            return False
        hour, minute = (int(x) for x in vague.key.split(":"))
        return f"{(hour + 12) % 24:02d}:{minute:02d}" == precise.key or vague.key == precise.key
    if vague.kind != "number" or vague.measure or vague.rate or not precise.key.endswith("s"):
        return False
    m = _LEADING_COUNT.match(precise.text.lower())
    if m is None:
        return False
    count = m.group(1)
    value = str(int(NUMBER_WORDS[count])) if count in NUMBER_WORDS else count
    return value == vague.key


def _comparable(sa: Slot, sb: Slot) -> bool:
    if sa.kind == sb.kind:
        return True
    return {sa.kind, sb.kind} <= {"number", "version"} or {sa.kind, sb.kind} <= {"path", "url"}


def _value_difference(sa: Slot, sb: Slot) -> Difference:
    if sa.kind == "url" and sb.kind == "url":
        sch_a, _, rest_a = sa.key.partition("://")
        sch_b, _, rest_b = sb.key.partition("://")
        if rest_a == rest_b and sch_a != sch_b:
            return Difference("scheme", sch_a, sch_b)
    if sa.kind == "number" and sb.kind == "number" and sorted(sa.key.split("/")) == sorted(sb.key.split("/")):
        return Difference("order", sa.text, sb.text)
    kind = sa.kind if sa.kind == sb.kind else "version" if "version" in (sa.kind, sb.kind) else sa.kind
    return Difference(kind, _show(sa), _show(sb))


@dataclass(frozen=True)
class _Words:
    """What ``_match_words`` needs of the text that accounts for the other's words (read-only once built)."""

    stems: frozenset[str]
    surfaces: tuple[str, ...]
    compounds: frozenset[str]
    acronyms: frozenset[str]
    units: frozenset[str]
    budget: Counter[str]


@lru_cache(maxsize=4096)
def _words_of(text: str) -> _Words:
    """The :class:`_Words` of ``text``, built once per text: a stored memory meets many others (each search
    compares pairs of its results, each store its nearest memory), and building them was a third of a pair."""
    reading = read(text)
    stems = {it.stem for it in reading.items}
    stems |= {p for it in reading.items for p in it.parts}
    stems |= {stem(t) for t in reading.tokens if not t.startswith("<") and t not in FUNCTION_WORDS}
    surfaces = tuple(_surface(it) for it in reading.items)
    tokens = [t for t in reading.tokens if not t.startswith("<")]
    # Compounds and acronyms once per text (not once per word: a pair of long texts was quadratic in string joins).
    compounds, acronyms = _joined(tokens)
    content_compounds, content_acronyms = _joined([t for t in tokens if t not in FUNCTION_WORDS])
    words = _Words(
        stems=frozenset(stems),
        surfaces=surfaces,
        compounds=frozenset(compounds | content_compounds),
        acronyms=frozenset(acronyms | content_acronyms),
        units=frozenset(s.unit for s in reading.slots if s.unit),
        # A word repeated more often than the other text says it is not accounted for by it
        # ("the icon size of the tab bar icons" does not restate "the tap target size of the tab bar icons").
        budget=Counter(it.stem for it in reading.items),
    )
    return words
