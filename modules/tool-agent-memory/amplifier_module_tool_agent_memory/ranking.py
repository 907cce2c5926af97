"""Hybrid retrieval for long-term memory: dense + BM25 fused with RRF inside Qdrant,
then a small recency and importance boost in Python.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from .storage import DENSE, Collection

if TYPE_CHECKING:
    import qdrant_edge


@dataclass(frozen=True)
class RetrievalParams:
    """Defaults measured on the LoCoMo dev split (``benchmarks/locomo.py``)."""

    # RRF's k: a small k lets the top few ranks of each list dominate, which suits
    # short conversational memories where the right turn is usually near the top of one list.
    rrf_k: int = 10
    # Each list is read this deep before fusion; deeper reads help multi-hop questions.
    prefetch: int = 60
    # Boosts are multiplicative and small so that they reorder near-ties only.
    importance_weight: float = 0.1
    recency_weight: float = 0.05
    recency_half_life_days: float = 30.0


@dataclass(frozen=True)
class Hit:
    """One ranked memory."""

    id: str
    score: float
    payload: dict[str, Any]


def boost(score: float, payload: dict[str, Any], now: datetime, params: RetrievalParams) -> float:
    """Apply the importance and recency boost to a fused score."""
    importance = float(payload.get("importance", 0.5))
    factor = 1.0 + params.importance_weight * (importance - 0.5)
    stamp = payload.get("updated_at") or payload.get("created_at")
    if stamp and params.recency_weight:
        try:
            ts = datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
            age_days = max(0.0, (now - ts).total_seconds() / 86400.0)
            factor += params.recency_weight * math.exp(-math.log(2) * age_days / params.recency_half_life_days)
        except ValueError:
            pass
    return score * factor


def hybrid_search(
    coll: Collection,
    query_text: str,
    query_vec: list[float],
    limit: int,
    flt: qdrant_edge.Filter | None,
    now: datetime,
    params: RetrievalParams = RetrievalParams(),
) -> list[Hit]:
    """Dense and BM25 prefetches fused by RRF in one Qdrant query, then boosted and cut to ``limit``."""
    import qdrant_edge as qe

    depth = max(params.prefetch, limit)
    request = qe.QueryRequest(
        limit=max(limit * 3, limit),
        prefetches=[
            qe.Prefetch(limit=depth, query=qe.Query.Nearest(query_vec, using=DENSE), filter=flt),
            qe.Prefetch(limit=depth, query=qe.TextQuery("content", query_text), filter=flt),
        ],
        query=qe.Fusion.Rrf(k=params.rrf_k),
        filter=flt,
        with_payload=True,
    )
    points = coll.query(request)
    hits = [Hit(str(p.id), boost(float(p.score), dict(p.payload or {}), now, params), dict(p.payload or {})) for p in points]
    hits.sort(key=lambda h: h.score, reverse=True)
    return hits[:limit]
