"""Recall without being asked (issue 18): which long-term memories bear on a prompt, and the briefing.

A prompt is embedded once and searched with the same hybrid retrieval as ``memory_search`` (one fused
Qdrant query); the relevance gate then decides from general signals whether anything at all is
relevant, and only then the best memories are kept within the token budget:

* the prompt's *content words*: its words other than function words and names (a capitalised
  word inside a sentence). Names alone prove nothing: every memory of a conversation names its
  people, so a question about someone's unrelated doings matches them by name only;
* *coverage*: the share of those content words (by stem) that a recalled memory, read with the remark
  stored before it, contains;
* *cosine*: the dense similarity of the prompt and that memory.

Something is relevant when one memory matches both ways: its coverage + ``cosine_weight`` * cosine
reaches ``min_relevance``. One memory must carry both signals: a prompt whose words are found in one
memory and whose meaning is near another's is most often about something else (tuning half, 400-token
blocks: evidence injected 0.688 with 0.759 of foreign prompts getting nothing; coverage >= 0.35 and
cosine >= 0.40 of one memory 0.674 at 0.758; the best single signal 0.593 at 0.866).

The bars were calibrated with ``benchmarks/recall.py`` on half of the LoCoMo dev conversations (the
other conversations' questions, speakers renamed to this conversation's, as the prompts that must get
nothing) and are reported on the other half; see docs/recall.md.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from ..compare.lexicon import FUNCTION_WORDS
from ..compare.read import stem
from ..config import RecallConfig, RecallGateConfig
from ..store.contract import DENSE, StoredPoint
from ..store.query import AnyOf, IsEmpty, Order, Scroll, all_of
from ..tokens import chars_for, count_tokens
from .chains import SUPERSEDED_BY, current_first
from .ranking import RANK_FIELDS, Hit, RetrievalParams, build_request, rerank
from .record import MemoryFields

if TYPE_CHECKING:
    from .service import MemoryService

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9'\u2019-]*|\d+")
_SENTENCE_END = frozenset(".!?:;\n")
_WORD_OR_END = re.compile(f"({_WORD.pattern})|[{re.escape(''.join(sorted(_SENTENCE_END)))}]")
_POSSESSIVE_ENDS = ("'s", "\u2019s")
_POSSESSIVE = re.compile(r"['\u2019]s\b")
# Question and request words that carry no topic (beyond the function words the comparison knows).
_FRAMING_WORDS = (
    "tell say says said know knows think thinks remember recall remind ask asked like likes would kind sort "
    "type thing things lot lots people person time times day days way ways"
)
_FRAMING = frozenset(_FRAMING_WORDS.split())
# Words that carry no topic: the one set content_words and topic_words both filter by (one lookup a word, not two:
# both lists of a 60-word prompt 83.7 -> 81.6 and 99.0 -> 97.3 us in two lane runs; docs/recall.md, session 15).
_NOT_TOPICAL = FUNCTION_WORDS | _FRAMING
BRIEFING_KINDS = ("preference", "decision")
# Fused candidates read for the gate and the block (the block keeps at most ``max_memories`` of them).
CANDIDATES = 10
# Recall's candidate depth: what each of the fused query's four stages reads and how many fused candidates are ranked
# (memory_search keeps RetrievalParams' 50, so its R@10 is unchanged). Recall keeps only 10, and the fused query's
# payload reads, their conversion and rerank grow with the depth: recall's work after the embedding at 10k memories,
# thread CPU p50 / p95, depth 50 -> 10: 5.99 / 7.67 -> 4.38 / 5.82 ms (<= 15 words), 6.65 / 8.34 -> 5.26 / 6.54 (60
# words) (benchmarks/recall_engine.py --depths, one run). Through loop-basic (benchmarks/recall.py), evidence injected /
# foreign-nothing: TUNE 0.672 / 0.751 -> 0.679 / 0.757, HELD 0.700 / 0.764 -> 0.688 / 0.761 (depths 40-15 within
# the same noise). Chosen on TUNE as the smallest depth within noise; see docs/recall.md. A shallow query leaves more
# to the engine's order of tied candidates, which changes from one query to the next: between two processes the
# injected block differed for 73 of 1,950 prompts at 10 (gate decisions 3), 26 at 20 (0), 2 at 50 (0).
_DEPTH = 10
# What recall's two keyword (BM25) stages search: the prompt's first 16 words as written (memory_search keeps the whole
# query). A question is shorter, so its recall is unchanged; a long prompt's keyword stages grew with it (the embedding
# reads 6 topic words whatever the length). Recall's work after the embedding at 10k memories, 60-word prompts, wall
# p50 / p95, whole -> first 16: 2.79 / 3.80 -> 2.41 / 3.45 ms (<= 15 words 2.12 / 3.65 -> 2.04 / 3.90: the same text);
# in the turn, 60 words, added p50 / p95 against 855468f in two lane runs (both orders): 6.5 / 8.5 -> 5.6 / 7.5 and
# 6.2 / 8.5 -> 5.8 / 7.8 ms;
# evidence injected / foreign-nothing, TUNE 0.681 / 0.757 -> 0.684 / 0.756, HELD 0.685 / 0.761 -> 0.691 / 0.761 (the
# engine's tie noise); 60-word prompts, the question first: TUNE 0.249 -> 0.293, HELD 0.191 -> 0.212 evidence. Chosen
# on TUNE over the first 24 / 12 words and the first 8 distinct topic words (HELD 0.670); see docs/recall.md.
_KEYWORD_WORDS = 16
# Most tokens of one memory's line (id, kind, date and about 180 characters of text): a longer memory is cut,
# so one long memory cannot fill the block. On the tuning half of LoCoMo dev, at a 400-token budget, lines of
# at most 60 tokens cited an evidence memory for 0.69 of questions, at most 200 tokens for 0.64.
LINE_TOKENS = 60
HOW_TO_MORE = "memory_get <id> reads one in full; memory_search finds more."


@dataclass(frozen=True)
class Signals:
    """What the gate reads of one prompt's recall: its content words and the most relevant memory's match."""

    content_words: int
    relevance: float = 0.0
    coverage: float = 0.0
    cosine: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "content_words": self.content_words,
            "relevance": round(self.relevance, 3),
            "coverage": round(self.coverage, 3),
            "cosine": round(self.cosine, 3),
        }


@dataclass(frozen=True)
class Recalled:
    """The outcome of recall for one prompt: the memories to show (best first), or why none."""

    memories: list[dict[str, Any]] = field(default_factory=list)
    reason: str = "recalled"
    signals: Signals | None = None


def _name_like(word: str) -> bool:
    """Written as a name is: a capital, then lower case only ("Caroline", "Okafor"). An acronym ("LGBTQ",
    "CI") or an identifier ("BillingService") is a term the prompt is about."""
    # Words are ASCII letters, digits, apostrophes and hyphens (_WORD): lower-casing changes only the capitals.
    rest = word[1:]
    return bool(rest) and word[0].isupper() and rest == rest.lower()


def content_words(prompt: str) -> list[str]:
    """Stems of the prompt's words other than function words, framing words and names, in order, once each.

    A name is a word written as one (a capital, then lower case) that does not start a sentence, and its
    possessive; a word that starts a sentence counts as a name when the prompt writes it so elsewhere too.
    """
    tokens: list[tuple[str, bool]] = []  # (word, starts a sentence)
    start = True
    # One pass over words and sentence ends (never part of a word): no slice and scan between each two words.
    for match in _WORD_OR_END.finditer(prompt):
        word = match.group(1)
        if word is None:
            start = True
            continue
        tokens.append((word, start))
        start = False
    capitalised_inside = {w.lower() for w, first in tokens if not first and _name_like(w)}
    seen: set[str] = set()
    found: list[str] = []
    for word, first in tokens:
        bare = word[:-2] if word.endswith(_POSSESSIVE_ENDS) else word
        lower = bare.lower()
        if _name_like(bare) and (not first or lower in capitalised_inside):
            continue  # a name
        if len(lower) < 2 or lower in _NOT_TOPICAL:
            continue
        stemmed = stem(lower)
        if stemmed not in seen:
            seen.add(stemmed)
            found.append(stemmed)
    return found


# A memory's stems by its text: recall stems its 10 candidates on every prompt, and the prompts of one conversation keep
# finding the same memories. Keyed by the text itself, an edited memory is stemmed anew; 1,024 texts (~100 recalls'
# candidates) are a few MB. lru_cache is thread-safe.
STEMS_CACHED = 1024


@lru_cache(maxsize=STEMS_CACHED)
def _stems(text: str) -> frozenset[str]:
    # Each distinct word is stemmed once: a candidate's text repeats most of its words.
    return frozenset(stem(word) for word in set(_WORD.findall(_POSSESSIVE.sub("", text).lower())))


def topic_words(prompt: str) -> list[str]:
    """The prompt's words as written, in order, without function words and framing words (names kept)."""
    found: list[str] = []
    for match in _WORD.finditer(prompt):
        bare = _POSSESSIVE.sub("", match.group())
        if len(bare) > 1 and bare.lower() not in _NOT_TOPICAL:
            found.append(bare)
    return found


def keyword_text(prompt: str) -> str:
    """What recall's keyword stages search of ``prompt``: its first ``_KEYWORD_WORDS`` words as written."""
    return " ".join(prompt.split()[:_KEYWORD_WORDS])


def embedding_text(prompt: str, words: int) -> str:
    """What recall's query embedding reads of ``prompt``: its first ``words`` topic words (:func:`topic_words`),
    or the prompt as written when it has none or ``words`` is 0.

    The model's run grows with its tokens (~2 ms fixed, ~0.25 ms a token on this machine, one thread), and a
    question's function and framing words are half its tokens (LoCoMo questions: 13 tokens p50 whole, 7 of
    topic words). Measured on LoCoMo dev at the default gate (docs/recall.md, session 12): the first 16 words
    0.693 / 0.759 evidence / foreign nothing on TUNE (HELD 0.715 / 0.770); the first 6 topic words 0.674 /
    0.751 (HELD 0.700 / 0.764), chosen on TUNE over 8 or all topic words (0.674 / 0.750) as the cheapest of
    the ties; the first 8 or 10 words as written 0.649-0.665. Bounded, a long prompt's recall costs what a
    question's does. The gate still reads the whole prompt (keyword search its first 16 words: :func:`keyword_text`).
    """
    if words <= 0:
        return prompt
    kept = topic_words(prompt)
    return " ".join(kept[:words]) if kept else " ".join(prompt.split()[:words])


def _with_remark(stored: MemoryFields) -> str:
    """A memory with the remark stored before it: its ctx_text (that remark, the memory and wordings merged into
    it: ranking.py), the content only added when ctx_text lacks it, so no text is stemmed twice."""
    content = stored.content
    ctx = str(stored.ctx_text or "")
    return ctx if content in ctx else f"{ctx}\n{content}"


def coverage(words: Sequence[str], text: str) -> float:
    """The share of ``words`` (stems) that ``text`` contains."""
    if not words:
        return 0.0
    have = _stems(text)
    return sum(1 for w in words if w in have) / len(words)


def passes(signals: Signals, gate: RecallGateConfig) -> bool:
    """Whether the signals clear the gate: enough content words, and one memory relevant enough."""
    return signals.content_words >= gate.min_content_words and signals.relevance >= gate.min_relevance


def _date(stored: MemoryFields) -> str:
    return str(stored.created_at or "")[:10]


def memory_line(memory: dict[str, Any], max_chars: int) -> str:
    """One memory as the block shows it: full id, kind, date, superseded mark, content (shortened to fit)."""
    mark = f", superseded by {memory['superseded_by']}" if memory.get("superseded_by") else ""
    head = f"- [{memory['id']}] ({memory['kind']}, {memory['date']}{mark}) "
    content = " ".join(str(memory["content"]).split())
    room = max(0, max_chars - len(head))
    if len(content) > room:
        content = content[: max(0, room - 1)].rstrip() + "\u2026"
    return head + content


def memory_view(hit_id: str, payload: dict[str, Any]) -> dict[str, Any]:
    """What the block shows of one memory: id, kind, date (YYYY-MM-DD), content, and its replacement if any."""
    stored = MemoryFields(payload)
    view = {"id": hit_id, "kind": stored.kind, "date": _date(stored), "content": stored.content}
    if stored.superseded_by:
        view["superseded_by"] = stored.superseded_by
    return view


def render_block(tag: str, intro: str, memories: Sequence[dict[str, Any]], budget_tokens: int) -> tuple[str, list[str]]:
    """``memories`` as one tagged block of at most ``budget_tokens``; (text, ids shown). Empty when none fit."""
    opening, closing = f"<{tag}>\n{intro}\n", f"</{tag}>"
    room = chars_for(budget_tokens) - len(opening) - len(closing)
    per_item = chars_for(min(LINE_TOKENS, budget_tokens))
    lines: list[str] = []
    ids: list[str] = []
    for memory in memories:
        line = memory_line(memory, per_item) + "\n"
        if len(line) > room:
            continue
        lines.append(line)
        ids.append(str(memory["id"]))
        room -= len(line)
    if not lines:
        return "", []
    return opening + "".join(lines) + closing, ids


@lru_cache(maxsize=8)
def _recall_params(params: RetrievalParams, depth: int) -> RetrievalParams:
    """``params`` with recall's candidate depth (cached: a Recaller is made per prompt, the params rarely change)."""
    return replace(params, prefetch_limit=depth, candidates=max(depth, CANDIDATES))


class Recaller:
    """Recall and briefing over one identity's long-term memory (synchronous; the hook runs it off the loop)."""

    def __init__(self, memory: MemoryService, config: RecallConfig) -> None:
        self.memory = memory
        self.config = config

    def candidates(self, prompt: str) -> tuple[list[Hit], list[tuple[float, float]], int]:
        """The fused candidates for ``prompt`` (chains resolved: newest first, superseded marked), each one's
        (coverage, cosine), and the prompt's number of content words.

        One fused query ranks as memory_search does, but ``_DEPTH`` deep instead of 50. At a depth of ``CANDIDATES``
        it brings its candidates' whole (checksummed) payloads and dense vectors, for the cosines; deeper, it reads only
        the fields the ranking needs, and one read of the best 10 brings the rest (reading and checking whole payloads
        of 50 cost more than the query).
        """
        words = content_words(prompt)
        if not words:
            return [], [], 0
        svc = self.memory
        vec = svc.embedder.embed_query(embedding_text(prompt, self.config.query_words))
        svc.caught_up()
        params = _recall_params(svc.params, _DEPTH)
        # When recall keeps every candidate its query ranks (depth 10 = CANDIDATES), the query itself brings their whole
        # (checksummed) payloads and dense vectors: no second read (4.40 -> 3.87 ms CPU p50 of the work after the
        # embedding, <= 15 words; the same hits, payloads and signals from one engine answer, 1,950 prompts).
        whole = params.candidates <= CANDIDATES
        request = replace(
            build_request(keyword_text(prompt), vec, None, params),
            with_payload=True if whole else RANK_FIELDS,
            with_vector=(DENSE,) if whole else False,
        )
        points = svc.coll.query(request)
        ranked = current_first(svc.coll, rerank(points, CANDIDATES, svc.clock(), params), True)
        hits, cosines = self._read(vec, ranked[:CANDIDATES], {str(p.id): p for p in points} if whole else {})
        texts = [_with_remark(h.stored) for h in hits]
        matches = [(coverage(words, text), cosines.get(h.id, 0.0)) for h, text in zip(hits, texts, strict=True)]
        return hits, matches, len(words)

    def measure(self, prompt: str) -> tuple[list[Hit], Signals]:
        """The candidates and the signals of the one most relevant to ``prompt`` (coverage + cosine_weight * cosine)."""
        hits, matches, words = self.candidates(prompt)
        weight = self.config.gate.cosine_weight
        best = Signals(words)
        for cov, cos in matches:
            if cov + weight * cos > best.relevance:
                best = Signals(words, cov + weight * cos, cov, cos)
        return hits, best

    def _read(
        self, vec: Sequence[float], ranked: Sequence[Hit], read: dict[str, StoredPoint]
    ) -> tuple[list[Hit], dict[str, float]]:
        """``ranked`` with their whole payloads (one gone meanwhile is left out), and the dense cosine of the prompt
        and each (the stored vectors are normalised). ``read``: points already read whole with their dense vector."""
        import numpy as np

        if not ranked:
            return [], {}
        records = dict(read)
        missing = [h.id for h in ranked if h.id not in records]
        if missing:
            # Only the dense vector: reading the ctx vector too doubled the floats converted (1.6 vs 0.8 ms a recall).
            records.update({str(r.id): r for r in self.memory.coll.retrieve(missing, with_vector=(DENSE,))})
        hits: list[Hit] = []
        vectors: list[Any] = []
        for hit in ranked:
            record = records.get(hit.id)
            if record is None:
                continue
            hits.append(Hit(hit.id, hit.score, dict(record.payload or {})))
            vectors.append(record.vector.get(DENSE) if isinstance(record.vector, dict) else None)
        with_vector = [(h.id, v) for h, v in zip(hits, vectors, strict=True) if v]
        if not with_vector:
            return hits, {}
        # One matrix product: converting the vectors one by one costs more than the product.
        scores = np.asarray([v for _, v in with_vector], dtype=np.float32) @ np.asarray(vec, dtype=np.float32)
        cosines = {hit_id: float(score) for (hit_id, _), score in zip(with_vector, scores, strict=True)}
        return hits, cosines

    def recall(self, prompt: str) -> Recalled:
        """The memories to show for ``prompt`` (at most ``max_memories``), or why there are none."""
        hits, signals = self.measure(prompt)
        if signals.content_words == 0:
            return Recalled(reason="no_content_words", signals=signals)
        if not hits:
            return Recalled(reason="no_memories", signals=signals)
        if not passes(signals, self.config.gate):
            return Recalled(reason="below_gate", signals=signals)
        shown = [memory_view(h.id, h.payload) for h in hits[: self.config.max_memories]]
        return Recalled(shown, "recalled", signals)

    def briefing(self) -> list[dict[str, Any]]:
        """The identity's current preferences and decisions, newest first (superseded ones left out)."""
        flt = all_of(AnyOf("kind", list(BRIEFING_KINDS)), IsEmpty(SUPERSEDED_BY))
        # Enough to fill the briefing's budget with short statements; the renderer stops at the budget.
        limit = max(4, self.config.briefing_tokens // 10)
        records, _ = self.memory.coll.scroll(
            Scroll(limit=limit, filter=flt, order=Order("created_at", descending=True))
        )
        return [memory_view(str(r.id), dict(r.payload or {})) for r in records]


def block_tokens(text: str) -> int:
    """Tokens of an injected block, by the module's one counter."""
    return count_tokens(text)
