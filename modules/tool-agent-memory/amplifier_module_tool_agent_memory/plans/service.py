"""The plan cache: remember tool sequences that solved a request, replay them only for the same request.

Plain synchronous service over one identity's ``plans`` collection; the tool adapters
and the auto-capture hooks run it off the event loop.

* A plan's id is derived from its normalised prompt, so storing the same prompt again
  overwrites the plan in place (and revives it if it was stale).
* A lookup asks Qdrant for the ``top_k`` nearest non-stale plans and lets the comparison
  (:mod:`..compare`) judge each stored prompt against the request: only a decided
  restatement (same values, roles, polarity and qualifiers in other words) is a *hit*; a
  plan that looks alike (cosine at least ``similarity_threshold``) but that the comparison
  cannot decide, or that differs only by substituted words, is a *candidate* the agent must
  confirm before replaying; anything that
  differs in a value, role order, polarity or qualifier is a *miss* whatever its cosine.
* Every read-modify-write (store, reward, the use counter of a hit) holds the
  collection's lock, so concurrent threads and sessions of one process never lose an update.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..compare import Comparator, CompareSettings, Comparison
from ..config import PlanConfig
from ..embeddings.providers import Embedder
from ..errors import NotFound
from ..redaction import redact_text
from ..store.contract import DENSE, Collection, CollectionSpec, IndexSpec, iso, utc_now
from ..store.query import Nearest, Scroll, Search, where
from .models import FRESH, STALE, PlanLookupInput, PlanRecord, PlanRewardInput, PlanStoreInput, redact_plan

logger = logging.getLogger(__name__)

PLANS = CollectionSpec(
    "plans",
    (
        # qdrant-edge 0.9.0's MatchValue(False) matches no bool payload (the binding passes bools as ints),
        # so filters use this keyword mirror of ``stale``: "fresh" or "stale".
        IndexSpec("status", "keyword", hnsw=True),
        IndexSpec("prompt_norm", "keyword"),
        IndexSpec("updated_at", "datetime"),
        IndexSpec("score", "float"),
    ),
)
# Plan ids are uuid5(namespace, normalised prompt): equal prompts address the same point.
_PLAN_NAMESPACE = uuid.UUID("6f1d9c7e-3b8a-5c1e-9f42-0a7d5e2b8c31")
# Qdrant Edge searches a plain segment by brute force (~1 ms per 10k plans, more under load) and runs
# no optimizer in the background: the HNSW index is built by an explicit, blocking optimize().
# A store that leaves this many vectors unindexed builds the index before it returns.
INDEX_AFTER_UNINDEXED = 5_000
INDEX_CHECK_EVERY = 500
CONFIRM = (
    "A cached plan looks alike, but the comparison cannot tell whether it is the same request. "
    "Check the stored prompt and what differs; replay the actions only if they do what was asked "
    "(then report it with plan_reward), otherwise plan from scratch."
)

PLAN_COMPARISON = CompareSettings(subset_cosine=0.6)
"""The comparison as plan lookup uses it: a request may leave out context its stored prompt spelled
out ("prod config: postgres pool size = 20" for "Set the Postgres connection pool size to 20 in the
production config"), so a request that only omits words is the same request from cosine 0.6."""


def to_confirm(comparison: Comparison, cosine: float, threshold: float) -> bool:
    """Whether a stored plan is a ``candidate`` the agent confirms: it looks alike (cosine >= ``threshold``)
    and the comparison either cannot decide or names only substituted words.

    A substituted word WordNet cannot settle (a request verb "Add" / "Show", a word it does not know)
    may be a synonym or another thing: the agent tells. A noun WordNet says names another thing
    (``term``: "invoices" / "receipts"), values, names, identifiers, role order, polarity and added
    qualifiers are never left to confirm: those are misses.
    """
    if comparison.same or cosine < threshold:
        return False
    if not comparison.decided:
        return True
    return bool(comparison.differences) and all(d.kind == "content" for d in comparison.differences)


_WS = re.compile(r"\s+")
_TRAILING_PUNCT = re.compile(r"[\s.!?,;:\u2026]+$")


def normalise_prompt(text: str) -> str:
    """Normal form deciding "same prompt text": lowercase, collapsed spaces, no trailing punctuation."""
    text = _WS.sub(" ", text.strip().lower())
    return _TRAILING_PUNCT.sub("", text)


def plan_id_for(prompt: str) -> str:
    """The id a plan for ``prompt`` has (or would have)."""
    return str(uuid.uuid5(_PLAN_NAMESPACE, normalise_prompt(prompt)))


@dataclass(frozen=True)
class Candidate:
    """One of the nearest plans and the comparison's verdict on it."""

    plan_id: str
    prompt: str
    comparison: Comparison
    score: float
    cosine: float
    actions: list[dict[str, Any]] = field(default_factory=list)

    @property
    def hit(self) -> bool:
        """A decided restatement of the request."""
        return self.comparison.same

    def as_output(self) -> dict[str, Any]:
        return {
            "plan_id": self.plan_id,
            "prompt": self.prompt,
            "similarity": round(self.cosine, 4),
            "cosine": round(self.cosine, 4),
            "verdict": self.comparison.verdict.value,
            "decided": self.comparison.decided,
            "differences": [d.describe() for d in self.comparison.differences],
            "reason": self.comparison.reason,
        }


@dataclass(frozen=True)
class LookupOutcome:
    """A hit (the plan to replay), a candidate (to confirm before replaying) or a miss.

    ``hit`` stays the boolean it always was; ``answer`` ("hit", "candidate", "miss") adds the third case.
    """

    hit: dict[str, Any] | None
    candidates: list[Candidate]
    candidate: Candidate | None = None

    @property
    def answer(self) -> str:
        if self.hit is not None:
            return "hit"
        return "candidate" if self.candidate is not None else "miss"

    @property
    def event(self) -> str:
        return f"plan:{self.answer}"

    def as_output(self) -> dict[str, Any]:
        if self.hit is not None:
            return {"hit": True, "answer": "hit", **self.hit}
        out: dict[str, Any] = {"hit": False, "answer": self.answer}
        if self.candidate is not None:
            out["candidate"] = {**self.candidate.as_output(), "actions": self.candidate.actions}
            out["confirm"] = CONFIRM
        out["candidates"] = [c.as_output() for c in self.candidates]
        return out

    def event_fields(self) -> dict[str, Any]:
        if self.hit is not None:
            return {"plan_id": self.hit["plan_id"], "similarity": self.hit["similarity"], "count": 1}
        best = self.candidate or (self.candidates[0] if self.candidates else None)
        return {
            "plan_id": best.plan_id if best else None,
            "similarity": round(best.cosine, 4) if best else None,
            "count": 0,
            "candidates": len(self.candidates),
        }


@dataclass(frozen=True)
class StoreOutcome:
    """What plan_store did."""

    plan_id: str
    created: bool
    revived: bool
    steps: int
    redacted: dict[str, list[str]] = field(default_factory=dict)

    def as_output(self) -> dict[str, Any]:
        out = {"plan_id": self.plan_id, "created": self.created, "overwritten": not self.created,
               "revived": self.revived, "steps": self.steps, "score": 1.0}
        if self.redacted:
            out["redacted"] = self.redacted
        return out

    def event_fields(self) -> dict[str, Any]:
        return {"plan_id": self.plan_id, "similarity": None, "count": 1, "created": self.created,
                "revived": self.revived, "steps": self.steps}


@dataclass(frozen=True)
class RewardOutcome:
    """What plan_reward did; ``became_stale`` is true only for the reward that made the plan stale."""

    plan_id: str
    previous_score: float
    score: float
    stale: bool
    became_stale: bool
    stale_reason: str | None
    similarity: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def as_output(self) -> dict[str, Any]:
        out: dict[str, Any] = {"plan_id": self.plan_id, "previous_score": round(self.previous_score, 6),
                               "score": round(self.score, 6), "stale": self.stale}
        if self.stale:
            out["stale_reason"] = self.stale_reason
        return out

    def event_fields(self) -> dict[str, Any]:
        return {"plan_id": self.plan_id, "similarity": self.similarity, "count": 1,
                "score": round(self.score, 6), "stale": self.stale, "became_stale": self.became_stale}


class PlanService:
    """One identity's plan cache."""

    def __init__(
        self,
        coll: Collection,
        embedder: Embedder,
        config: PlanConfig,
        clock: Callable[[], datetime] = utc_now,
        comparator: Comparator | None = None,
    ) -> None:
        self.coll = coll
        self.embedder = embedder
        self.config = config
        self.clock = clock
        self.comparator = comparator if comparator is not None else Comparator(embedder, settings=PLAN_COMPARISON)
        self._stores_since_check = 0

    def unindexed(self) -> int:
        """Plans whose vectors are not in the HNSW index yet (searched by brute force)."""
        return self.coll.unindexed_count()

    def build_index(self) -> float:
        """Index every unindexed vector (blocking: seconds per 10k plans); returns the seconds spent."""
        return self.coll.index_if_needed(1) or 0.0

    def _maybe_index(self) -> None:
        self._stores_since_check += 1
        if self._stores_since_check < INDEX_CHECK_EVERY:
            return
        self._stores_since_check = 0
        self.coll.index_if_needed(INDEX_AFTER_UNINDEXED)

    def _record(self, plan_id: str) -> dict[str, Any] | None:
        records = self.coll.retrieve([plan_id])
        return dict(records[0].payload or {}) if records else None

    def store(self, inp: PlanStoreInput) -> StoreOutcome:
        """Write (or overwrite) the plan of ``inp.prompt``: score 1.0, not stale. Secrets are redacted first."""
        inp, redacted = redact_plan(inp)
        norm = normalise_prompt(inp.prompt)
        plan_id = plan_id_for(inp.prompt)
        vec = self.embedder.embed_documents([inp.prompt])[0]
        actions = [a.model_dump() for a in inp.actions]
        with self.coll.lock:
            old = self._record(plan_id)
            now = self.clock()
            record = PlanRecord(
                prompt=inp.prompt,
                prompt_norm=norm,
                actions=actions,
                score=1.0,
                stale=False,
                stale_reason=None,
                created_at=old["created_at"] if old else now,
                updated_at=now,
                # Counters are history, not state: an overwrite keeps them (and so never drops a reward count).
                uses=int(old.get("uses", 0)) if old else 0,
                rewards=int(old.get("rewards", 0)) if old else 0,
                successes=int(old.get("successes", 0)) if old else 0,
                failures=int(old.get("failures", 0)) if old else 0,
                last_used_at=old.get("last_used_at") if old else None,
                rewarded_at=old.get("rewarded_at") if old else None,
            )
            payload = self._payload(record)
            self.coll.upsert([(plan_id, vec, payload)])
        self._maybe_index()
        return StoreOutcome(plan_id, created=old is None, revived=bool(old and old.get("stale")), steps=len(actions),
                            redacted=redacted)

    @staticmethod
    def _payload(record: PlanRecord) -> dict[str, Any]:
        return record.to_payload()

    def _nearest(self, vec: list[float], limit: int, only_fresh: bool) -> list[Any]:
        flt = where(status=FRESH) if only_fresh else None
        return self.coll.query(Search(Nearest(vec, using=DENSE), limit=limit, filter=flt))

    def _judge(self, query: str, points: list[Any]) -> list[Candidate]:
        out = []
        for p in points:
            payload = dict(p.payload or {})
            prompt = str(payload.get("prompt", ""))
            cosine = float(p.score)
            comparison = self.comparator.judge(prompt, query, cosine)
            out.append(Candidate(str(p.id), prompt, comparison, float(payload.get("score", 0.0)), cosine,
                                 list(payload.get("actions", []))))
        return out

    def lookup(self, inp: PlanLookupInput) -> LookupOutcome:
        """The plan of the same request (hit), one to confirm (candidate), or the nearest plans and why not (miss)."""
        top_k = inp.top_k or self.config.top_k
        # Stored prompts are redacted: the request is too, so the same request still matches (and is not echoed).
        prompt = redact_text(inp.prompt)
        vec = self.embedder.embed_query(prompt)
        candidates = self._judge(prompt, self._nearest(vec, top_k, only_fresh=True))
        hits = sorted((c for c in candidates if c.hit), key=lambda c: (-c.cosine, -c.score))
        for cand in hits:
            hit = self._take(cand)
            if hit is not None:
                return LookupOutcome(hit, candidates)
        unsure = [c for c in candidates if to_confirm(c.comparison, c.cosine, self.config.similarity_threshold)]
        best = max(unsure, key=lambda c: (c.cosine, c.score), default=None)
        return LookupOutcome(None, candidates, best)

    def _take(self, cand: Candidate) -> dict[str, Any] | None:
        """Count a use of the plan and return it, unless a concurrent reward made it stale meanwhile."""
        with self.coll.lock:
            payload = self._record(cand.plan_id)
            if payload is None or payload.get("stale"):
                return None
            uses = int(payload.get("uses", 0)) + 1
            self.coll.set_payload(cand.plan_id, {"uses": uses, "last_used_at": iso(self.clock())})
        return {
            "plan_id": cand.plan_id,
            "actions": payload.get("actions", []),
            "similarity": round(cand.cosine, 4),
            "cosine": round(cand.cosine, 4),
            "reason": cand.comparison.reason,
            "score": round(float(payload.get("score", 0.0)), 6),
            "prompt": payload.get("prompt", cand.prompt),
            "uses": uses,
        }

    def resolve(self, inp: PlanRewardInput) -> tuple[str, float | None]:
        """The plan a reward is for: by id; or by prompt (its own plan, else the same-request plan)."""
        if inp.plan_id is not None:
            if self._record(inp.plan_id) is None:
                raise NotFound(f"no plan with id {inp.plan_id} for this identity")
            return inp.plan_id, None
        assert inp.prompt is not None
        prompt = redact_text(inp.prompt)
        own = plan_id_for(prompt)
        if self._record(own) is not None:
            return own, 1.0
        # Stale plans count here: the agent rewards the plan it just replayed, stale or not.
        vec = self.embedder.embed_query(prompt)
        candidates = self._judge(prompt, self._nearest(vec, self.config.top_k, only_fresh=False))
        hits = [c for c in candidates if c.hit]
        if not hits:
            raise NotFound("no cached plan answers this prompt for this identity")
        best = max(hits, key=lambda c: c.cosine)
        return best.plan_id, best.cosine

    def reward(self, inp: PlanRewardInput) -> RewardOutcome:
        """score = a * success + (1 - a) * score; a tool failure or a score below the floor makes it stale."""
        plan_id, similarity = self.resolve(inp)
        alpha = self.config.ema_alpha
        with self.coll.lock:
            payload = self._record(plan_id)
            if payload is None:
                raise NotFound(f"the plan {plan_id} was deleted")
            previous = float(payload.get("score", 1.0))
            score = alpha * (1.0 if inp.success else 0.0) + (1.0 - alpha) * previous
            was_stale = bool(payload.get("stale"))
            reason = payload.get("stale_reason")
            if not was_stale:
                if inp.tool_failure:
                    reason = "a tool call of the plan failed"
                elif score < self.config.stale_score:
                    reason = f"score {score:.3f} fell below {self.config.stale_score}"
            stale = was_stale or reason is not None
            update: dict[str, Any] = {
                "score": score,
                "stale": stale,
                "status": STALE if stale else FRESH,
                "stale_reason": reason if stale else None,
                "rewards": int(payload.get("rewards", 0)) + 1,
                "successes": int(payload.get("successes", 0)) + (1 if inp.success else 0),
                "failures": int(payload.get("failures", 0)) + (0 if inp.success else 1),
                "rewarded_at": iso(self.clock()),
            }
            self.coll.set_payload(plan_id, update)
        if stale and not was_stale:
            logger.info("plan went stale", extra={"plan_id": plan_id, "reason": reason})
        return RewardOutcome(plan_id, previous, score, stale, stale and not was_stale, reason, similarity)

    def get(self, plan_id: str) -> dict[str, Any]:
        """A plan's stored record (without the matcher's internals)."""
        payload = self._record(plan_id)
        if payload is None:
            raise NotFound(f"no plan with id {plan_id} for this identity")
        # Plans stored before the comparison kept the old matcher's signature: never shown.
        payload.pop("sig", None)
        payload.pop("sig_rule", None)
        payload.pop("status", None)
        return {"plan_id": plan_id, **payload}

    def count(self, stale: bool | None = None) -> int:
        """How many plans (all, or only the stale / fresh ones)."""
        if stale is None:
            return self.coll.count()
        return self.coll.count(where(status=STALE if stale else FRESH))

    def restore_plans(
        self, plans: Sequence[tuple[str, dict[str, Any]]], observer: Callable[[int], None] | None = None
    ) -> None:
        """Write plans read from another store as they were, each embedded from its prompt as :meth:`store` does."""
        vectors = self.embedder.embed_documents([str(payload.get("prompt", "")) for _, payload in plans])
        self.coll.observer = observer
        try:
            self.coll.upsert([(pid, vec, payload) for (pid, payload), vec in zip(plans, vectors, strict=True)])
        finally:
            self.coll.observer = None


def stored_plans(coll: Collection, batch: int = 256) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every plan of a plan collection as stored: (id, payload), for moving plans to another store (``reindex``)."""
    offset: Any = None
    while True:
        page, offset = coll.scroll(Scroll(offset=offset, limit=batch))
        yield from ((str(p.id), dict(p.payload or {})) for p in page)
        if offset is None:
            return
