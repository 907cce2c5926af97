"""Hybrid retrieval for long-term memory, measured on the LoCoMo dev split.

Every memory is stored with two dense vectors and two BM25-indexed text fields: ``dense``
and ``content`` hold the memory itself; ``ctx`` and ``ctx_text`` hold the previous memory
of the same thread followed by this one. A *thread* is what one writer (one session)
stores in sequence, numbered by ``seq``: a general rule, since a remark usually makes
sense together with the one written just before it.

A search is one Qdrant query: four prefetches (dense, ctx, BM25 content, BM25 ctx_text;
stemmed, English stopwords) fused by RRF inside Qdrant. Python then adds a share of each
candidate's best thread neighbour's fused score (the answer often sits next to the turn
that matched), applies a small recency and importance boost, and cuts to ``limit``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from ..store.contract import DENSE, Collection
from ..store.query import Bm25, Candidates, Fields, Filter, Fused, Nearest, Search
from .record import SUPERSEDED_BY, MemoryFields

CTX = "ctx"
CONTENT = "content"
CTX_TEXT = "ctx_text"
MEMORY_VECTORS: tuple[str, ...] = (DENSE, CTX)
# What the ranking (neighbour propagation, recency and importance boost) and the chains read of a candidate.
RANK_FIELDS = ("thread", "seq", "created_at", "updated_at", "importance", SUPERSEDED_BY)


@dataclass(frozen=True)
class RetrievalParams:
    """Defaults measured on LoCoMo dev (760 questions, 5 conversations; one setting for all).

    R@10 by variant: RRF k=10 over dense+BM25 0.655; + the ctx vector and ctx_text BM25
    0.728; + BM25 b=0.3 0.735; + neighbour propagation 0.747.
    """

    # RRF's k: with ~50 candidates a list, a small k lets the top of each list dominate
    # (k=10 beats the textbook 60 by ~0.06 R@10; 5 and 20 are within noise).
    rrf_k: int = 10
    # Candidates read from each of the four lists; 25/50/100 measured equal, 50 leaves room for filters.
    prefetch_limit: int = 50
    # Fused candidates kept for neighbour propagation (at least the limit asked for).
    candidates: int = 50
    # BM25: low length normalisation, so short chat lines are not rewarded for being short
    # (b=0.75 0.727, b=0.3 0.735, b=1.0 0.718).
    bm25_k: float = 1.2
    bm25_b: float = 0.3
    # score += alpha * best fused score of the seq-1 / seq+1 neighbour in the same thread
    # (alpha 0.1/0.2/0.3/0.4 -> 0.736/0.747/0.743/0.736).
    neighbour_alpha: float = 0.2
    # final = score * (1 + recency_weight * 2^(-age/half_life) + importance_weight * (importance - 0.5)):
    # small on purpose, it reorders near-ties only (R@10 moved <= 0.003 with real session dates).
    recency_weight: float = 0.03
    recency_half_life_days: float = 30.0
    importance_weight: float = 0.1


@dataclass(frozen=True)
class Hit:
    """One ranked memory."""

    id: str
    score: float
    payload: dict[str, Any]

    @property
    def stored(self) -> MemoryFields:
        """Typed reads of the hit's payload (whole, or the fields the search asked for)."""
        return MemoryFields(self.payload)


def context_text(content: str, prev_content: str | None) -> str:
    """What ``ctx`` embeds and ``ctx_text`` indexes: the thread's previous memory, then this one.

    Only the previous memory is used so that nothing is rewritten when later memories arrive
    (a previous+next window measured no better).
    """
    return f"{prev_content}\n{content}" if prev_content else content


def _age_days(stamp: Any, now: datetime) -> float | None:
    if not isinstance(stamp, str):
        return None
    try:
        ts = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=UTC)
    return max(0.0, (now - ts).total_seconds() / 86400.0)


def boost_factor(payload: dict[str, Any], now: datetime, params: RetrievalParams) -> float:
    """The recency and importance boost (1.0 when both are neutral or absent)."""
    return _boost(MemoryFields(payload), now, params)


def _boost(stored: MemoryFields, now: datetime, params: RetrievalParams) -> float:
    factor = 1.0
    age = _age_days(stored.updated_at or stored.created_at, now)
    if age is not None and params.recency_half_life_days > 0:
        factor += params.recency_weight * math.pow(2.0, -age / params.recency_half_life_days)
    importance = stored.importance
    if isinstance(importance, int | float):
        factor += params.importance_weight * (float(importance) - 0.5)
    return factor


def build_request(query_text: str, query_vec: list[float], flt: Filter | None, params: RetrievalParams) -> Search:
    """The single store search: four candidate stages fused by RRF."""
    depth = params.prefetch_limit
    stages = (
        Candidates(Nearest(query_vec, using=DENSE), depth, flt),
        Candidates(Nearest(query_vec, using=CTX), depth, flt),
        Candidates(Bm25(CONTENT, query_text, params.bm25_k, params.bm25_b), depth, flt),
        Candidates(Bm25(CTX_TEXT, query_text, params.bm25_k, params.bm25_b), depth, flt),
    )
    return Search(Fused(stages, k=params.rrf_k), limit=params.candidates, filter=flt)


def rerank(points: Sequence[Any], limit: int, now: datetime, params: RetrievalParams) -> list[Hit]:
    """Neighbour propagation, then the boost; best ``limit`` first."""
    # This runs on all 50 candidates of every search and recall: each payload is read once, through one MemoryFields
    # (reading each three times made it ~40% slower), and only the ``limit`` kept become hits (fewer objects: the
    # interpreter's young collection fell here in 19 of 20 recalls).
    read = [MemoryFields(p.payload or {}) for p in points]
    places = [(stored.thread, stored.seq) for stored in read]
    fused = {place: float(p.score) for p, stored, place in zip(points, read, places, strict=True) if stored.in_thread}
    scores: list[float] = []
    for p, stored, (thread, seq) in zip(points, read, places, strict=True):
        score = float(p.score)
        if params.neighbour_alpha and thread is not None and isinstance(seq, int):
            neighbour = max(fused.get((thread, seq - 1), 0.0), fused.get((thread, seq + 1), 0.0))
            score += params.neighbour_alpha * neighbour
        scores.append(score * _boost(stored, now, params))
    # A stable sort, as sorting the hits was: equal scores keep the engine's order.
    best = sorted(range(len(scores)), key=scores.__getitem__, reverse=True)[:limit]
    return [Hit(str(points[i].id), scores[i], dict(points[i].payload or {})) for i in best]


def hybrid_search(
    coll: Collection,
    query_text: str,
    query_vec: list[float],
    limit: int,
    flt: Filter | None,
    now: datetime,
    params: RetrievalParams = RetrievalParams(),
    fields: Fields = True,
) -> list[Hit]:
    """Search memories: one fused Qdrant query, then cheap Python post-processing.

    ``fields``: what to read of each candidate's payload (all of it by default; a partial payload is not
    checksummed, so a caller that reads only the ranking's fields reads the hits it keeps again in whole).
    """
    if params.candidates < limit:
        params = replace(params, candidates=limit)
    request = replace(build_request(query_text, query_vec, flt, params), with_payload=fields)
    return rerank(coll.query(request), limit, now, params)
