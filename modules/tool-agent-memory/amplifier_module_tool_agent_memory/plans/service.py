"""The plan cache: remember tool sequences that solved a request, replay them only for the same request.

Plain synchronous service over one identity's ``plans`` collection; the tool adapters
and the auto-capture hooks run it off the event loop.

* A plan's id is derived from its normalised prompt, so storing the same prompt again
  overwrites the plan in place (and revives it if it was stale).
* A lookup asks Qdrant for the ``top_k`` nearest non-stale plans and follows the one policy of
  certify or ask (:func:`..compare.assess`): a stored prompt *certified* the same request (the same
  words and values in the same places, see :func:`..compare.certify`) is a ``hit``, replayed;
  the others at cosine ``candidate_floor`` or more are ``candidate`` answers, nearest first, each
  with its actions (trimmed when long), use counts and what differs (:func:`..compare.describe`):
  the agent replays, adapts (and stores the adapted plan ``derived_from`` it) or plans afresh;
  under the floor the answer is a ``miss`` with no candidates.
* Every read-modify-write (store, reward, the use counter of a hit) holds the
  collection's lock, so concurrent threads and sessions of one process never lose an update.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..compare import Action, Assessment, Judge, assess, certify
from ..config import PlanConfig
from ..embeddings.providers import Embedder
from ..errors import NotFound
from ..redaction import redact_text
from ..store.contract import DENSE, Collection, CollectionSpec, IndexSpec, utc_now
from ..store.query import Nearest, Scroll, Search, where
from .models import (
    FRESH,
    STALE,
    PlanExportRecord,
    PlanFields,
    PlanListInput,
    PlanLookupInput,
    PlanRecord,
    PlanRewardInput,
    PlanStoreInput,
    redact_plan,
    reward_payload,
    use_payload,
)

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
# A store that leaves this many vectors unindexed has the index built once the collection is idle.
INDEX_AFTER_UNINDEXED = 5_000
INDEX_CHECK_EVERY = 500
HIT_NEXT = (
    "The stored request is certified the same as yours (same words and values in the same places): replay "
    "these actions, then report the outcome with plan_reward(plan_id, success)."
)
CANDIDATE_NEXT = (
    "No stored plan is certified the same request. Read each candidate's prompt and differences (nearest "
    "first): if one asks for exactly what you were asked, replay its actions; if a difference is only a "
    "parameter (a value, a name, a path, an HTTP method), adapt its steps and plan_store the adapted plan "
    "with derived_from set to that candidate's plan_id; otherwise plan afresh. Then plan_reward the plan "
    "you used (a candidate you replayed unchanged counts as a use of it)."
)
MISS_NEXT = "No stored plan is near this request: plan afresh (a successful turn is stored as a plan)."
MAX_CANDIDATE_STEPS = 8
"""A candidate shows at most this many steps (plan_get gives the whole plan)."""
MAX_ARG_CHARS = 200
"""A candidate's argument longer than this (as text) is cut, saying so."""


def trim_actions(actions: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], bool]:
    """The actions a candidate shows: at most :data:`MAX_CANDIDATE_STEPS` steps, long arguments cut (and
    whether anything was trimmed). A candidate is advice to read, not a plan to replay blind."""
    trimmed = len(actions) > MAX_CANDIDATE_STEPS
    out = []
    for action in actions[:MAX_CANDIDATE_STEPS]:
        raw = action.get("args")
        args: dict[str, Any] = raw if isinstance(raw, dict) else {}
        shown: dict[str, Any] = {}
        for key, value in args.items():
            text = value if isinstance(value, str) else json.dumps(value, default=str)
            if len(text) > MAX_ARG_CHARS:
                shown[key] = text[:MAX_ARG_CHARS] + f"... [{len(text) - MAX_ARG_CHARS} more chars]"
                trimmed = True
            else:
                shown[key] = value
        out.append({"tool": action.get("tool"), "args": shown})
    return out, trimmed


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
    """One of the nearest plans and the policy's assessment of it."""

    plan_id: str
    prompt: str
    assessment: Assessment
    score: float
    cosine: float
    actions: list[dict[str, Any]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    """uses, rewards, successes, failures."""
    derived_from: str | None = None

    @property
    def hit(self) -> bool:
        """Certified (or settled by the judge): replayed without asking."""
        return self.assessment.action is Action.ACT

    @property
    def offered(self) -> bool:
        """Not a hit, but at the candidate floor or above: shown to the agent."""
        return self.assessment.action is Action.ASK

    def as_output(self) -> dict[str, Any]:
        actions, trimmed = trim_actions(self.actions)
        out: dict[str, Any] = {
            "plan_id": self.plan_id,
            "prompt": self.prompt,
            "similarity": round(self.cosine, 4),
            "differences": [d.describe() for d in self.assessment.differences],
            "actions": actions,
            "steps": len(self.actions),
            "score": round(self.score, 4),
            **self.counts,
        }
        if trimmed:
            out["trimmed"] = f"long actions were cut; plan_get('{self.plan_id}') gives the whole plan"
        if self.assessment.decided_by not in ("agent", "certify"):
            out["judged_by"] = self.assessment.decided_by
        if self.derived_from:
            out["derived_from"] = self.derived_from
        return out


@dataclass(frozen=True)
class LookupOutcome:
    """A hit (the plan to replay), candidates (near plans with what differs) or a miss (none near).

    ``hit`` stays the boolean it always was; ``answer`` ("hit", "candidate", "miss") adds the other cases.
    """

    hit: dict[str, Any] | None
    candidates: list[Candidate]

    @property
    def answer(self) -> str:
        if self.hit is not None:
            return "hit"
        return "candidate" if self.candidates else "miss"

    @property
    def event(self) -> str:
        return f"plan:{self.answer}"

    def as_output(self) -> dict[str, Any]:
        if self.hit is not None:
            return {"hit": True, "answer": "hit", **self.hit, "next": HIT_NEXT}
        if self.candidates:
            return {"hit": False, "answer": "candidate", "candidates": [c.as_output() for c in self.candidates],
                    "next": CANDIDATE_NEXT}
        return {"hit": False, "answer": "miss", "candidates": [], "next": MISS_NEXT}

    def event_fields(self) -> dict[str, Any]:
        if self.hit is not None:
            return {"plan_id": self.hit["plan_id"], "similarity": self.hit["similarity"], "count": 1}
        best = self.candidates[0] if self.candidates else None
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
        judge: Judge | None = None,
    ) -> None:
        """``judge``: settles a near plan the comparison cannot certify (``judge: provider``); None: the agent."""
        self.coll = coll
        self.embedder = embedder
        self.config = config
        self.clock = clock
        self.judge = judge
        self._stores_since_check = 0
        self._offered: dict[str, None] = {}
        """Plans recently offered as candidates (oldest first): rewarding one by id counts a use of it."""

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
        self.coll.index_soon(INDEX_AFTER_UNINDEXED)

    def _record(self, plan_id: str) -> PlanFields | None:
        records = self.coll.retrieve([plan_id])
        return PlanFields(records[0].payload or {}) if records else None

    def store(self, inp: PlanStoreInput) -> StoreOutcome:
        """Write (or overwrite) the plan of ``inp.prompt``: score 1.0, not stale. Secrets are redacted first."""
        inp, redacted = redact_plan(inp)
        norm = normalise_prompt(inp.prompt)
        plan_id = plan_id_for(inp.prompt)
        if inp.derived_from is not None and self._record(inp.derived_from) is None:
            raise NotFound(f"derived_from: no plan with id {inp.derived_from} for this identity")
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
                created_at=old.created_at if old else now,
                updated_at=now,
                # Counters are history, not state: an overwrite keeps them (and so never drops a reward count).
                **(old.counts if old else {}),
                last_used_at=old.last_used_at if old else None,
                rewarded_at=old.rewarded_at if old else None,
                derived_from=inp.derived_from if inp.derived_from != plan_id else None,
            )
            self.coll.upsert([(plan_id, vec, record.to_payload())])
        self._maybe_index()
        return StoreOutcome(plan_id, created=old is None, revived=bool(old and old.stale), steps=len(actions),
                            redacted=redacted)

    def _nearest(self, vec: list[float], limit: int, only_fresh: bool) -> list[Any]:
        flt = where(status=FRESH) if only_fresh else None
        return self.coll.query(Search(Nearest(vec, using=DENSE), limit=limit, filter=flt))

    def _assess(self, query: str, points: list[Any], floor: float, judge: Judge | None) -> list[Candidate]:
        out = []
        for p in points:
            plan = PlanFields(p.payload or {})
            prompt = plan.prompt
            cosine = float(p.score)
            assessment = assess(prompt, query, cosine, floor=floor, judge=judge)
            out.append(Candidate(str(p.id), prompt, assessment, plan.score, cosine, plan.actions, plan.counts,
                                 plan.derived_from))
        return out

    def lookup(self, inp: PlanLookupInput) -> LookupOutcome:
        """The plan certified the same request (hit), the near plans with what differs (candidate), or a miss."""
        top_k = inp.top_k or self.config.top_k
        # Stored prompts are redacted: the request is too, so the same request still matches (and is not echoed).
        prompt = redact_text(inp.prompt)
        vec = self.embedder.embed_query(prompt)
        points = self._nearest(vec, top_k, only_fresh=True)
        # Certification first, for every nearest plan: a judge is asked only when none is certified.
        candidates = self._assess(prompt, points, self.config.candidate_floor, None)
        if self.judge is not None and not any(c.hit for c in candidates):
            candidates = self._assess(prompt, points, self.config.candidate_floor, self.judge)
        hits = sorted((c for c in candidates if c.hit), key=lambda c: (not c.assessment.certified, -c.cosine))
        # A plan a concurrent reward made stale (or a forget deleted) after the search is neither a hit nor a
        # candidate: offering it would let a later plan_reward count a use of a plan that was never replayed.
        gone: set[str] = set()
        for cand in hits:
            hit = self._take(cand)
            if hit is not None:
                return LookupOutcome(hit, [])
            gone.add(cand.plan_id)
        offered = sorted(
            (c for c in candidates if (c.offered or c.hit) and c.plan_id not in gone),
            key=lambda c: (-c.cosine, -c.score),
        )
        for cand in offered:
            self._offered[cand.plan_id] = None
        while len(self._offered) > 256:
            del self._offered[next(iter(self._offered))]
        return LookupOutcome(None, offered)

    def _take(self, cand: Candidate) -> dict[str, Any] | None:
        """Count a use of the plan and return it, unless a concurrent reward made it stale meanwhile."""
        with self.coll.lock:
            plan = self._record(cand.plan_id)
            if plan is None or plan.stale:
                return None
            uses = plan.uses + 1
            self.coll.set_payload(cand.plan_id, use_payload(uses, self.clock()))
        return {
            "plan_id": cand.plan_id,
            "actions": plan.actions,
            "similarity": round(cand.cosine, 4),
            "cosine": round(cand.cosine, 4),
            "reason": cand.assessment.reason,
            "decided_by": cand.assessment.decided_by,
            "score": round(plan.score, 6),
            "prompt": plan.prompt,
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
        # Stale plans count here: the agent rewards the plan it just replayed, stale or not. Only a plan certified
        # the same request is rewarded by prompt (a candidate is rewarded by its plan_id).
        vec = self.embedder.embed_query(prompt)
        points = self._nearest(vec, self.config.top_k, only_fresh=False)
        hits = [p for p in points if certify(PlanFields(p.payload or {}).prompt, prompt).same]
        if not hits:
            raise NotFound("no cached plan is certified the same request for this identity: reward it by plan_id")
        best = max(hits, key=lambda p: float(p.score))
        return str(best.id), float(best.score)

    def reward(self, inp: PlanRewardInput) -> RewardOutcome:
        """score = a * success + (1 - a) * score; a tool failure or a score below the floor makes it stale."""
        plan_id, similarity = self.resolve(inp)
        alpha = self.config.ema_alpha
        with self.coll.lock:
            plan = self._record(plan_id)
            if plan is None:
                raise NotFound(f"the plan {plan_id} was deleted")
            previous = plan.score
            score = alpha * (1.0 if inp.success else 0.0) + (1.0 - alpha) * previous
            was_stale = plan.stale
            reason = plan.stale_reason
            if not was_stale:
                if inp.tool_failure:
                    reason = "a tool call of the plan failed"
                elif score < self.config.stale_score:
                    reason = f"score {score:.3f} fell below {self.config.stale_score}"
            stale = was_stale or reason is not None
            # A candidate the agent replayed and now rewards: its use (a hit counted its use at lookup).
            used = inp.plan_id is not None and plan_id in self._offered
            if used:
                del self._offered[plan_id]
            self.coll.set_payload(plan_id, reward_payload(
                plan, success=inp.success, score=score, stale=stale, stale_reason=reason, at=self.clock(), used=used
            ))
        if stale and not was_stale:
            logger.info("plan went stale", extra={"plan_id": plan_id, "reason": reason})
        return RewardOutcome(plan_id, previous, score, stale, stale and not was_stale, reason, similarity)

    def get(self, plan_id: str) -> dict[str, Any]:
        """A plan's stored record (without the matcher's internals)."""
        plan = self._record(plan_id)
        if plan is None:
            raise NotFound(f"no plan with id {plan_id} for this identity")
        return plan.shown(plan_id)

    def use(self, plan_id: str) -> int:
        """Count a use of a plan replayed unchanged from a candidate (auto-capture); returns the new count."""
        with self.coll.lock:
            plan = self._record(plan_id)
            if plan is None:
                raise NotFound(f"no plan with id {plan_id} for this identity")
            uses = plan.uses + 1
            self.coll.set_payload(plan_id, use_payload(uses, self.clock()))
        self._offered.pop(plan_id, None)
        return uses

    def _all(self) -> list[tuple[str, PlanFields]]:
        return [(plan_id, PlanFields(payload)) for plan_id, payload in stored_plans(self.coll)]

    def list_plans(self, inp: PlanListInput) -> dict[str, Any]:
        """Stored plans, most recently updated first: id, prompt, steps, score, counts, stale (actions: plan_get)."""
        records = self._all()
        if inp.stale is not None:
            records = [(i, p) for i, p in records if p.stale == inp.stale]
        if inp.contains:
            needle = inp.contains.lower()
            records = [(i, p) for i, p in records if needle in p.prompt.lower()]
        records.sort(key=lambda r: str(r[1].updated_at or ""), reverse=True)
        plans = [
            {
                "plan_id": i,
                "prompt": p.prompt,
                "steps": len(p.actions),
                "score": round(p.score, 4),
                "stale": p.stale,
                **p.counts,
                "updated_at": p.updated_at,
                **({"derived_from": p.derived_from} if p.derived_from else {}),
            }
            for i, p in records[inp.offset : inp.offset + inp.limit]
        ]
        return {"plans": plans, "total": len(records), "offset": inp.offset}

    def forget(self, plan_id: str) -> dict[str, Any]:
        """Delete a plan (a bad one the agent or the user found); NotFound when there is none."""
        with self.coll.lock:
            plan = self._record(plan_id)
            if plan is None:
                raise NotFound(f"no plan with id {plan_id} for this identity")
            self.coll.delete([plan_id])
        self._offered.pop(plan_id, None)
        return {"plan_id": plan_id, "forgotten": True, "prompt": plan.prompt}

    def export(self) -> Iterator[PlanExportRecord]:
        """Every plan as an export record, oldest first."""
        rows = sorted(self._all(), key=lambda r: str(r[1].created_at or ""))
        for plan_id, plan in rows:
            yield plan.exported(plan_id)

    def import_records(self, records: list[PlanExportRecord], batch: int = 64) -> int:
        """Write exported plans (embedding their prompts); a plan's id follows its prompt, so an import twice, or of
        a plan already here, overwrites it in place. Returns how many were written."""
        for start in range(0, len(records), batch):
            chunk = records[start : start + batch]
            vecs = self.embedder.embed_documents([r.prompt for r in chunk])
            points = []
            for record, vec in zip(chunk, vecs, strict=True):
                plan = PlanRecord.model_validate(record.model_dump(exclude={"record", "plan_id"}))
                points.append((plan_id_for(record.prompt), vec, plan.to_payload()))
            with self.coll.lock:
                self.coll.upsert(points)
        self._maybe_index()
        return len(records)

    def count(self, stale: bool | None = None) -> int:
        """How many plans (all, or only the stale / fresh ones)."""
        if stale is None:
            return self.coll.count()
        return self.coll.count(where(status=STALE if stale else FRESH))

    def restore_plans(
        self, plans: Sequence[tuple[str, dict[str, Any]]], observer: Callable[[int], None] | None = None
    ) -> None:
        """Write plans read from another store as they were, each embedded from its prompt as :meth:`store` does."""
        records = [(pid, PlanRecord.from_payload(payload)) for pid, payload in plans]
        vectors = self.embedder.embed_documents([record.prompt for _, record in records])
        self.coll.observer = observer
        try:
            self.coll.upsert(
                [(pid, vec, record.to_payload()) for (pid, record), vec in zip(records, vectors, strict=True)]
            )
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
