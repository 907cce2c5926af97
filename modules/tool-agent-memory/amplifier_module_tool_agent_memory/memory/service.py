"""Long-term semantic memory: store, search, get, forget, list, import and export.

Plain synchronous service over one identity's ``memories`` collection; the tool
adapters run it off the event loop.
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..compare import Comparison, Judge, UpdateVerdict, Verdict, announced_update, describe, says_a_change
from ..compare.policy import ANNOUNCED_CANDIDATES, acts_as_update, compared, cosine, left_open, may_update, restates
from ..compare.statement import one_statement, same_subject_new_value
from ..config import MemorySearchConfig
from ..embeddings.providers import Embedder, Vector
from ..errors import InvalidInput, NotFound
from ..redaction import redact_fields
from ..store.contract import COMPACT_LAYOUT, DENSE, Collection, CollectionSpec, IndexSpec, iso, utc_now
from ..store.query import AnyOf, Condition, Filter, IsEmpty, Match, Nearest, Order, Range, Scroll, Search, all_of, where
from ..validation import parse_timestamp
from .chains import (
    SUPERSEDED_BY,
    Member,
    chain_of,
    current_first,
    link,
    newest_of,
    repair_after_forget,
    unlink,
)
from .context_vectors import CLOSE_WAIT_S, ContextVectors
from .importing import MemoryImporter
from .models import MemoryListInput, MemoryRecord, MemorySearchInput, MemoryStoreInput
from .payload import content_hash
from .ranking import CTX, MEMORY_VECTORS, RANK_FIELDS, Hit, RetrievalParams, context_text, hybrid_search
from .record import CTX_PENDING, MemoryFields, StoredMemory, export_record, full_view, link_payload, public_view
from .restated import (
    add_wording,
    context_window,
    searchable_context,
    take_wording,
)

if TYPE_CHECKING:
    from pathlib import Path

    import numpy as np

MEMORIES = CollectionSpec(
    "memories",
    (
        IndexSpec("content", "text"),
        IndexSpec("ctx_text", "text"),
        IndexSpec("kind", "keyword", hnsw=True),
        IndexSpec("tags", "keyword", hnsw=True),
        IndexSpec("files", "keyword", hnsw=True),
        IndexSpec("created_at", "datetime", hnsw=True),
        IndexSpec("content_hash", "keyword"),
        IndexSpec("thread", "keyword"),
        IndexSpec("seq", "integer"),
        # The memories still waiting for their context vector, found at open without a scan: on the server
        # backend only. The embedded store knows from its claim files whether anything can be marked
        # (memory/context_vectors.py): this index cost ~6% of every engine purge there.
        IndexSpec(CTX_PENDING, "bool", server_only=True),
    ),
    vectors=MEMORY_VECTORS,
    layout=COMPACT_LAYOUT,
)

# Brute force over 10k unindexed memories (two vectors each) costs a few ms a search; past that
# the HNSW index is built, checked every INDEX_CHECK_EVERY writes (the build then waits for the
# collection to be idle: store/edge_collection.py index_soon) and after every import.
INDEX_AFTER_UNINDEXED = 10_000
INDEX_CHECK_EVERY = 500
# Kinds that state the current value of something: a changed one supersedes the older.
# Notes are remarks (a conversation's turns differ without replacing each other) and events
# happened: both merge restatements but are never linked as updates by the comparison.
UPDATABLE_KINDS = frozenset({"fact", "decision", "preference"})
# Stored memories of the same kind compared with a new one. One: on half A of the updates dev
# file one, two and three candidates gave the same figures, and each comparison costs a store
# ~3 ms (median; p95 ~14 ms on 2 loaded cores with long memories).
COMPARE_CANDIDATES = 1
# A note is a remark made at one point of a conversation: its place in the thread (its
# neighbours, its context window) is part of what it says, so a restated remark is kept unless
# it is also nearly word for word the same (the near-duplicate cosine used before issue 9).
# Merging every restatement of a note cost LoCoMo R@10 0.745 -> 0.733.
NOTE_MERGE_COSINE = 0.95
# A merge keeps the older memory and adds the new wording to its ``restated`` texts (see
# memory/restated.py), shown with it, found by BM25 through its ctx_text, and taken out again by
# memory_unmerge: a restatement the comparison wrongly calls the same loses no text, so a decided
# restatement of a fact, decision, preference or event merges at any cosine the gate lets through.
# Pairs of search results whose comparison is remembered (a few hundred bytes each).
CHANGES_REMEMBERED = 4096
# Near memories a possible_updates answer lists at most (the memories compared with the new one).
MAX_POSSIBLE_UPDATES = ANNOUNCED_CANDIDATES


# A stored memory near a new one: (the memory, its cosine to the new one, its dense vector).
Nearby = tuple[Member, float, list[float]]

_BACKGROUND: ThreadPoolExecutor | None = None
_BACKGROUND_LOCK = threading.Lock()


def _background() -> ThreadPoolExecutor:
    """The process's small pool for a store's context-window embedding (started on first use)."""
    global _BACKGROUND
    with _BACKGROUND_LOCK:
        if _BACKGROUND is None:
            _BACKGROUND = ThreadPoolExecutor(max_workers=2, thread_name_prefix="agent-memory-embed")
        return _BACKGROUND


def _brief(member: Member) -> dict[str, Any]:
    return {
        "id": member.id,
        "content": member.stored.content,
        "created_at": member.stored.created_at,
    }


def _said_with(inp: MemoryStoreInput, tags: list[str], files: list[str], now: str) -> dict[str, Any]:
    """What a wording merged into another memory was stored with: it gets it back if the merge is undone."""
    return {"tags": tags, "importance": inp.importance, "files": files, "created_at": now}


@dataclass(frozen=True)
class Possible:
    """A near memory the new one may update: the comparison could not decide (see ``may_update``)."""

    member: Member
    similarity: float
    text: str

    def as_output(self) -> dict[str, Any]:
        return {
            **_brief(self.member),
            "kind": self.member.stored.kind,
            "similarity": round(self.similarity, 4),
            "differences": [d.describe() for d in describe(self.member.stored.content, self.text)],
        }


@dataclass(frozen=True)
class Judgement:
    """What the comparison made of a new memory: merge into an existing one, supersede one, or neither (and then
    the near memories it may update, nearest first)."""

    merge_into: Member | None = None
    supersede: Member | None = None
    comparison: Comparison | None = None
    possible: tuple[Possible, ...] = ()
    judged_by: str | None = None
    """The judge that settled it (``judge: provider``), when the comparison could not."""


@dataclass(frozen=True)
class StoreOutcome:
    """What memory_store did."""

    id: str
    created: bool
    duplicate: bool = False
    near_duplicate: bool = False
    similarity: float | None = None
    redacted: dict[str, list[str]] | None = None
    # The memory this one replaced (id, content, created_at, differences).
    superseded: dict[str, Any] | None = None
    # The memory this wording was merged into (id, content, the wording kept), when it was.
    merged: dict[str, Any] | None = None
    # Near memories this one may update (the comparison could not decide), nearest first.
    possible_updates: tuple[dict[str, Any], ...] = ()

    def as_output(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "created": self.created, "duplicate": self.duplicate}
        if self.near_duplicate:
            out["near_duplicate"] = True
            out["similarity"] = round(self.similarity or 0.0, 4)
        if self.merged:
            out["merged"] = self.merged
            out["note"] = (
                f"memory {self.id} of this kind says the same in other words: this was merged into it (its "
                "updated_at and importance refreshed, this wording kept in its restated field); if it does not "
                "say the same, call "
                f"memory_unmerge(id={self.id}, wording=<this content>) to give it a memory of its own"
            )
        if self.superseded:
            out["superseded"] = self.superseded
            out["note"] = (
                "this replaces an older memory, kept and marked superseded_by (it ranks below this one); "
                "if they are not the same thing, undo the link with memory_unlink"
            )
        if self.possible_updates:
            out["possible_updates"] = list(self.possible_updates)
            out["note"] = (
                "stored; near memories listed in possible_updates (nearest first, with what differs) may be older "
                f"values of this one: if this replaces one, call memory_link(id={self.id}, supersedes=<its id>); "
                f"if it says the same as one, memory_forget({self.id}); if they are different things, do nothing"
            )
        if self.redacted:
            out["redacted"] = self.redacted
        return out


class MemoryService:
    """One identity's long-term memory."""

    def __init__(
        self,
        coll: Collection,
        embedder: Embedder,
        config: MemorySearchConfig,
        thread: str,
        clock: Callable[[], datetime] = utc_now,
        params: RetrievalParams | None = None,
        judge: Judge | None = None,
        claims: Path | None = None,
    ) -> None:
        """``claims``: the identity's claim folder on the embedded store (store/claims.py), where this service
        says it may leave memories waiting for their context vector; ``None`` on the server backend (and for
        services that write no marker)."""
        self.coll = coll
        self.judge = judge
        self.embedder = embedder
        self.config = config
        self.thread = thread
        self.clock = clock
        self.params = params or RetrievalParams()
        self._changes_seen: OrderedDict[tuple[str, str, str, str], bool] = OrderedDict()
        self._changes_lock = threading.Lock()
        # (seq, content) of this thread's last memory: the next one's context window.
        self._tail: tuple[int, str] | None = None
        self._tail_loaded = False
        self._tail_lock = threading.Lock()
        # The first write of a service checks at once: a session that starts on a store left with many
        # unindexed memories has their build scheduled without waiting INDEX_CHECK_EVERY writes.
        self._writes_since_check = INDEX_CHECK_EVERY - 1
        # Context vectors written after the answer (memory/context_vectors.py).
        self._ctx = ContextVectors(coll, embedder, claims)

    def repair_soon(self, takeover: bool = False) -> None:
        """At open (and at a sharing takeover: ``takeover``): memories still waiting for their context vector (a
        process ended before writing it) get it, in the background. Nothing is read when no claim says a writer
        ended (embedded store); one indexed read on the server backend."""
        self._ctx.repair_soon(takeover)

    @property
    def repairs_started(self) -> int:
        """How many repairs (scans for memories waiting for their context vector) this service started."""
        return self._ctx.repairs

    def caught_up(self) -> None:
        """Before a ranked read: wait (bounded) for the context vectors of this service's own stores, so a memory
        it just stored ranks with its real vector whatever the timing (another process's are not waited for)."""
        self._ctx.caught_up()

    def settle(self, timeout: float | None = None) -> int:
        """Wait until every context vector this service owes is written (up to ``timeout`` seconds); the number
        still running (the repair at open included; a ranked read waits only for this service's stores:
        ``caught_up``); what must measure settled stores (benchmarks) calls this."""
        return self._ctx.settle(timeout)

    def close(self, timeout: float = CLOSE_WAIT_S) -> int:
        """Before the store is released: wait (bounded) for the context vectors in flight; the number left, which
        keep their marker and are written at the next open."""
        return self._ctx.close(timeout)

    def _thread_tail(self) -> tuple[int, str] | None:
        """This thread's last memory, read from the store once (a reopened session continues its thread)."""
        if not self._tail_loaded:
            records, _ = self.coll.scroll(
                Scroll(
                    limit=1,
                    filter=where(thread=self.thread),
                    with_payload=("seq", "content"),
                    order=Order("seq", descending=True),
                )
            )
            if records:
                tail = MemoryFields(records[0].payload or {})
                # The filter and the order are on seq: the memory read has one.
                if tail.seq is not None:
                    self._tail = (tail.seq, tail.content)
            self._tail_loaded = True
        return self._tail

    def _find_by_hash(self, digest: str) -> str | None:
        records, _ = self.coll.scroll(Scroll(limit=1, filter=where(content_hash=digest), with_payload=False))
        return str(records[0].id) if records else None

    def _nearest_unless_stored(
        self, digest: str, vec: list[float], content: str, kind: str
    ) -> tuple[str | None, list[Nearby]]:
        """(the id of a stored memory with this content hash, []), or (None, the stored memories of ``kind``
        nearest to ``vec``, nearest first): the early duplicate check and the judgement's candidates in one store
        call (one round trip for a process sharing the store). A statement that says it changes something is
        compared with a few more (``compare.announced_update``)."""
        limit = ANNOUNCED_CANDIDATES if self._announcing(content, kind) else COMPARE_CANDIDATES
        search = Search(Nearest(vec, using=DENSE), limit=limit, filter=where(kind=kind), with_vector=(DENSE,))
        existing, points = self.coll.query_unless(search, where(content_hash=digest))
        found = []
        for p in points:
            vector = (p.vector or {}).get(DENSE) if isinstance(p.vector, dict) else None
            found.append((Member(str(p.id), dict(p.payload or {})), float(p.score), list(vector or [])))
        return existing, found

    @staticmethod
    def _announcing(content: str, kind: str) -> bool:
        """A statement of an updatable kind that says it changes something: told with its reasons, it may be
        neither the nearest nor near, so it is compared with more candidates."""
        return kind in UPDATABLE_KINDS and says_a_change(content)

    def _with_stored_vector(self, memory_id: str, vec: list[float]) -> tuple[list[float], list[float]] | None:
        """(the stored dense vector of ``memory_id``, ``vec``): the comparison then embeds nothing."""
        records = self.coll.retrieve([memory_id], with_vector=True)
        vector = records[0].vector if records else None
        stored = vector.get(DENSE) if isinstance(vector, dict) else None
        return (list(stored), vec) if stored else None

    def _compare(self, older: Member, content: str, vectors: tuple[list[float], list[float]] | None) -> Comparison:
        """``compare.policy.compared`` of ``older`` and ``content`` (embedding both only when a vector is missing)."""
        text = older.stored.content
        a, b = vectors if vectors is not None else self.embedder.embed_documents([text, content])
        return compared(text, content, cosine(a, b))

    def _judge(self, content: str, vec: list[float], kind: str, nearest: list[Nearby]) -> Judgement:
        """Compare a new memory with the nearest stored ones of its kind: restatement, change, or neither.

        Memories at least ``near_duplicate_threshold`` similar are compared, nearest first, and
        the first decided restatement or change answers (the comparison decides; the cosine
        only bounds the work). A memory that was already replaced stands for its chain: the
        new one is compared with the newest of that chain, so a restatement of the current
        value merges into it, and a value changed back (100 -> 200 -> 100) is a change.
        """
        # ``nearest`` (:meth:`_nearest_unless_stored`): an announcing statement brings a few more, however far.
        announcing = self._announcing(content, kind)
        possible: dict[str, Possible] = {}
        for rank, (member, similarity, stored_vec) in enumerate(nearest):
            # A far memory (past the nearest, or under the cosine) is only ever replaced, never merged into.
            far = rank >= COMPARE_CANDIDATES or similarity < self.config.near_duplicate_threshold
            if far and not (announcing and announced_update(member.stored.content, content)):
                continue
            if kind == "note" and similarity < NOTE_MERGE_COSINE and not member.stored.superseded_by:
                continue  # a note only merges, from NOTE_MERGE_COSINE: the comparison could change nothing
            comparison = self._compare(member, content, (stored_vec, vec) if stored_vec else None)
            restates = not far and self._restates(comparison, member, content, kind)
            asks = kind in UPDATABLE_KINDS and may_update(comparison, member.stored.content, content)
            if not (restates or asks or self._may_act(comparison, member, content, kind)):
                continue
            newest = newest_of(self.coll, member.id, member.payload) if member.stored.superseded_by else member
            if newest.id != member.id:
                comparison = self._compare(newest, content, self._with_stored_vector(newest.id, vec))
                restates = self._restates(comparison, newest, content, kind)
                asks = kind in UPDATABLE_KINDS and may_update(
                    comparison, newest.stored.content, content
                )
            if restates:
                return Judgement(merge_into=newest, comparison=comparison)
            if asks:
                possible.setdefault(newest.id, Possible(newest, comparison.similarity, content))
                continue
            if not self._may_act(comparison, newest, content, kind):
                continue
            if comparison.same:
                if far or (kind == "note" and comparison.similarity < NOTE_MERGE_COSINE):
                    continue
                return Judgement(merge_into=newest, comparison=comparison)
            if kind in UPDATABLE_KINDS and acts_as_update(comparison, newest.stored.content, content):
                return Judgement(supersede=newest, comparison=comparison)
        return self._settle(content, tuple(possible.values())[:MAX_POSSIBLE_UPDATES])

    def _settle(self, content: str, possible: tuple[Possible, ...]) -> Judgement:
        """The near memories the comparison could not decide: the agent's to settle (``possible_updates``), or,
        with ``judge: provider``, the judge's, nearest first. UPDATE links, SAME merges (both shown and undone as
        the comparison's), DIFFERENT drops it from the list; a failure or timeout leaves it for the agent."""
        if self.judge is None or not possible:
            return Judgement(possible=possible)
        left: list[Possible] = []
        for p in possible:
            older = p.member.stored.content
            verdict = self.judge.update(older, content, describe(older, content))
            if verdict is UpdateVerdict.UPDATE:
                return Judgement(supersede=p.member, judged_by=self.judge.name)
            if verdict is UpdateVerdict.SAME:
                return Judgement(merge_into=p.member, judged_by=self.judge.name)
            if verdict is None:
                left.append(p)
        return Judgement(possible=tuple(left))

    @staticmethod
    def _restates(comparison: Comparison, older: Member, content: str, kind: str) -> bool:
        """A memory of an updatable kind said again in other words (``compare.policy.restates``)."""
        return kind in UPDATABLE_KINDS and restates(comparison, older.stored.content, content)

    @staticmethod
    def _may_act(comparison: Comparison, older: Member, content: str, kind: str) -> bool:
        """The comparison decided a restatement or a change, or (an updatable kind) the new text announces
        that it changes the older one: worth acting on (merge, link); anything else leaves both alone."""
        if comparison.decided and comparison.verdict is not Verdict.DIFFERENT:
            return True
        return kind in UPDATABLE_KINDS and acts_as_update(comparison, older.stored.content, content)

    def _declared(self, older_id: str, kind: str) -> Member:
        """The memory a declared update replaces: the newest of ``older_id``'s chain."""
        records = self.coll.retrieve([older_id])
        if not records:
            raise NotFound(f"field 'supersedes': no memory with id {older_id} for this identity")
        older = Member(str(records[0].id), dict(records[0].payload or {}))
        if "event" in (kind, older.stored.kind):
            raise InvalidInput(
                "field 'supersedes': events happened and are never superseded, nor supersede anything "
                f"(memory {older_id} is a {older.stored.kind}, this one a {kind})"
            )
        return newest_of(self.coll, older.id, older.payload)

    def store(self, inp: MemoryStoreInput) -> StoreOutcome:
        """Redact, deduplicate (exact, then by comparison), embed and write one memory; link it to what it replaces."""
        fields, report = redact_fields({"content": inp.content, "tags": inp.tags, "files": inp.files})
        content = str(fields["content"])
        tags = list(dict.fromkeys(fields["tags"]))
        files = list(dict.fromkeys(fields["files"]))
        digest = content_hash(content)
        with self._tail_lock:
            return self._store_new(inp, content, tags, files, digest, report)

    def _store_new(
        self,
        inp: MemoryStoreInput,
        content: str,
        tags: list[str],
        files: list[str],
        digest: str,
        report: dict[str, list[str]],
    ) -> StoreOutcome:
        tail = self._thread_tail()
        ctx = context_text(content, tail[1] if tail else None)
        # Two runs, not one batch of two: a batch pads the memory to the length of its context window (previous
        # memory + this one); each text has its own run, so the vectors are the same.
        # The store does not wait for the context window's run: the memory is written with its own vector in the
        # ctx slot (what a thread's first memory holds) and the marker ctx_pending, the tool answers, and the real
        # vector is written when the run ends (memory/context_vectors.py): the run was ~25 of a store's CPU-ms,
        # beside ~12-15 for everything else.
        # The run starts at the write (_follow), not beside the memory's embedding: there it only took a core from
        # the answer (three processes on two cores, same run: store p95 alone 74 -> 45 ms, three sharing one
        # identity 110 -> 69, the next search no slower; docs/sharing.md), and an early answer (a duplicate, a bad
        # declared target, a merge) starts none at all.
        embeds_ctx = ctx != content
        # No lock: each is one read, and both are checked again at the write. A declared update checks its
        # target before embedding the memory.
        existing = self._find_by_hash(digest) if inp.supersedes is not None or self.coll.local_reads else None
        if existing is None and inp.supersedes is not None:
            self._declared(inp.supersedes, inp.kind)
        if existing is None and embeds_ctx:
            # A store beyond the bound waits for the oldest completion before its embedding; an exact duplicate
            # found above writes nothing and starts no completion, so it answers without waiting behind them.
            self._ctx.room()
        nearest: list[Nearby] = []
        if existing is None:
            dense = self.embedder.embed_documents([content])[0]
            if inp.supersedes is None:
                # The duplicate check goes with the near-match query, after the memory's embedding: a process
                # sharing the store waits for one round trip there instead of two (a duplicate stored by
                # another process costs its embedding now; one this process stored is in the embedding cache).
                existing, nearest = self._nearest_unless_stored(digest, dense, content, inp.kind)
        if existing is not None:
            return StoreOutcome(existing, created=False, duplicate=True, redacted=report or None)
        # Judged outside the store lock; what it points at is checked again under the lock.
        judgement = Judgement() if inp.supersedes is not None else self._judge(content, dense, inp.kind, nearest)
        # A marker is written only under this service's claim (taken durably the first time): without one (the
        # folder cannot be written) the context vector is computed now and written with the memory.
        pending = embeds_ctx and self._ctx.claim()
        ctx_vector = dense if pending or not embeds_ctx else self.embedder.embed_documents([ctx])[0]
        vectors = {DENSE: dense, CTX: ctx_vector}
        if judgement.merge_into is None and judgement.supersede is None and inp.supersedes is None:
            # Nothing to merge into or link: the exact-duplicate check and the write are one call under the
            # collection lock (one request for a process sharing the store: the lock never waits on a round trip).
            memory_id = str(uuid.uuid4())
            memory = self._new_memory(inp, content, tags, files, digest, tail, None, ctx_pending=pending)
            existing = self.coll.upsert_unless([(memory_id, vectors, memory.to_payload())], where(content_hash=digest))
            if existing is not None:
                return StoreOutcome(existing, created=False, duplicate=True, redacted=report or None)
            self._stored(memory.seq or 0, content)
            self._follow(memory_id, ctx, pending)
            return StoreOutcome(
                memory_id,
                created=True,
                redacted=report or None,
                possible_updates=tuple(p.as_output() for p in judgement.possible),
            )
        with self.coll.lock:
            # Checked again under the lock: another session may have stored it meanwhile.
            existing = self._find_by_hash(digest)
            if existing is not None:
                return StoreOutcome(existing, created=False, duplicate=True, redacted=report or None)
            now = iso(self.clock())
            target = judgement.merge_into
            current = self.coll.retrieve([target.id]) if target is not None else []
            kept = (
                add_wording(dict(current[0].payload or {}), content, _said_with(inp, tags, files, now))
                if target is not None and current
                else None
            )
            # A merge happens only when the wording is kept (memory_unmerge gives it back): a memory holding
            # MAX_RESTATED other wordings takes no more, and the new one is stored on its own.
            if target is not None and current and kept is not None:
                target_memory = StoredMemory.from_payload(dict(current[0].payload or {}))
                merged = target_memory.updated(
                    updated_at=now, importance=max(target_memory.importance, inp.importance), **kept
                )
                self.coll.set_payload(target.id, merged.payload_of("updated_at", "importance", *kept))
                similarity = judgement.comparison.similarity if judgement.comparison else None
                return StoreOutcome(
                    target.id,
                    created=False,
                    duplicate=True,
                    near_duplicate=True,
                    similarity=similarity,
                    redacted=report or None,
                    merged={
                        "id": target.id,
                        "content": target_memory.content,
                        "wording": content,
                        **({"judged_by": judgement.judged_by} if judgement.judged_by else {}),
                    },
                )
            older: Member | None = None
            if inp.supersedes is not None:
                older = self._declared(inp.supersedes, inp.kind)
            elif judgement.supersede is not None:
                stored = self.coll.retrieve([judgement.supersede.id])
                if stored:
                    older = newest_of(self.coll, judgement.supersede.id, dict(stored[0].payload or {}))
            memory_id = str(uuid.uuid4())
            memory = self._new_memory(inp, content, tags, files, digest, tail, older, now, ctx_pending=pending)
            self.coll.upsert([(memory_id, vectors, memory.to_payload())])
            if older is not None:
                self.coll.set_payload(older.id, link_payload(SUPERSEDED_BY, memory_id))
        self._stored(memory.seq or 0, content)
        self._follow(memory_id, ctx, pending)
        superseded = None
        if older is not None:
            superseded = _brief(older)
            if inp.supersedes is not None:
                superseded["declared"] = True
            elif judgement.judged_by is not None:
                older_text = older.stored.content
                superseded["differences"] = [d.describe() for d in describe(older_text, content)]
                superseded["judged_by"] = judgement.judged_by
            elif judgement.comparison is not None:
                superseded["differences"] = [d.describe() for d in judgement.comparison.differences]
        possible = () if older is not None else tuple(p.as_output() for p in judgement.possible)
        return StoreOutcome(
            memory_id, created=True, redacted=report or None, superseded=superseded, possible_updates=possible
        )

    def _embed_ctx(self, ctx: str) -> Future[list[Vector]]:
        """The context window's embedding, started on the background pool (once this service has fewer than
        ``context_vectors.MAX_PENDING`` in flight: a bulk loop of stores waits for the oldest)."""
        self._ctx.room()
        return _background().submit(self.embedder.embed_documents, [ctx])

    def _follow(self, memory_id: str, ctx: str, pending: bool) -> None:
        """A memory written with the ctx placeholder (its own vector) and the marker (``pending``; not a thread's
        first memory, whose context is itself): its context window's run starts, its vector written when it ends."""
        if pending:
            self._ctx.follow(memory_id, ctx, self._embed_ctx(ctx))

    def _new_memory(
        self,
        inp: MemoryStoreInput,
        content: str,
        tags: list[str],
        files: list[str],
        digest: str,
        tail: tuple[int, str] | None,
        older: Member | None,
        now: str | None = None,
        ctx_pending: bool = False,
    ) -> StoredMemory:
        """The memory to write: next in this session's thread, its context window quoting the one before."""
        now = now or iso(self.clock())
        return StoredMemory(
            content=content,
            ctx_text=context_text(content, tail[1] if tail else None),
            content_hash=digest,
            kind=inp.kind,
            tags=tags,
            importance=inp.importance,
            files=files,
            created_at=now,
            updated_at=now,
            thread=self.thread,
            seq=tail[0] + 1 if tail else 0,
            supersedes=older.id if older is not None else None,
            ctx_pending=ctx_pending,
        )

    def _stored(self, seq: int, content: str) -> None:
        """After a write: the thread's new tail, and now and then an index build scheduled."""
        self._tail = (seq, content)
        self._writes_since_check += 1
        if self._writes_since_check >= INDEX_CHECK_EVERY:
            self._writes_since_check = 0
            self.coll.index_soon(INDEX_AFTER_UNINDEXED)

    def _filter(self, inp: MemorySearchInput) -> Filter | None:
        must: list[Condition] = []
        if inp.kind:
            must.append(Match("kind", inp.kind))
        if inp.tags:
            must.append(AnyOf("tags", inp.tags))
        if inp.files:
            must.append(AnyOf("files", inp.files))
        if inp.since or inp.until:
            must.append(Range("created_at", gte=inp.since, lte=inp.until))
        return all_of(*must)

    def search(self, inp: MemorySearchInput) -> list[dict[str, Any]]:
        """Hybrid search; compact results, best first."""
        if inp.since and inp.until and inp.since > inp.until:
            raise InvalidInput("field 'since' must not be later than field 'until'")
        limit = inp.limit or self.config.default_limit
        vec = self.embedder.embed_query(inp.query)
        self.caught_up()
        # Twice the limit is read so that dropping superseded memories (include_superseded=false)
        # still fills the page; the first `limit` of the longer list are the same memories.
        flt = self._filter(inp)
        # The candidates bring only the ranking's fields: reading and checking ~50 whole payloads cost more than
        # the query itself at 100k (27.9 against 10.4 ms p50, loaded machine). The hits kept are read whole below.
        hits = hybrid_search(self.coll, inp.query, vec, 2 * limit, flt, self.clock(), self.params, fields=RANK_FIELDS)
        hits = current_first(self.coll, hits, inp.include_superseded, add_newest=flt is None)[:limit]
        hits = self._newer_first(self._whole(hits))
        return [public_view(h.id, h.payload, h.score) for h in hits]

    def _whole(self, hits: list[Hit]) -> list[Hit]:
        """``hits`` with their whole (checksummed) payloads, in order; one deleted meanwhile is left out."""
        if not hits:
            return hits
        payloads = {str(r.id): r.payload for r in self.coll.retrieve([h.id for h in hits]) if r.payload is not None}
        return [Hit(h.id, h.score, dict(payloads[h.id])) for h in hits if h.id in payloads]

    def _newer_first(self, hits: list[Hit]) -> list[Hit]:
        """Among the results, a newer memory that changes an older one (no link made) ranks above it.

        Store time links only decided changes; here a pair the comparison merely leans to call a
        change is reordered too, since a wrong guess only swaps two neighbours and hides nothing.
        Only one-sentence statements of one updatable kind at least ``near_duplicate_threshold`` similar
        (or a change announced of the older, ``compare.announced_update``) are compared.
        """
        import numpy as np

        # Only statements of one sentence: a chat excerpt of several remarks states no single fact that a newer one
        # could change (as for the cache and announced changes), and comparing every pair of them made a search
        # of chat turns pay several comparisons.
        single = [one_statement(h.stored.content) for h in hits]
        pairs = [
            (i, j)
            for i in range(len(hits))
            for j in range(i + 1, len(hits))
            if single[i]
            and single[j]
            and hits[i].stored.kind == hits[j].stored.kind in UPDATABLE_KINDS
            and (hits[j].stored.created_at or "") > (hits[i].stored.created_at or "")
        ]
        if not pairs:
            return hits
        ids = sorted({hits[k].id for pair in pairs for k in pair})
        stored = {str(r.id): r.vector for r in self.coll.retrieve(ids, with_vector=True)}
        vectors = {
            pid: np.asarray(v[DENSE], dtype=np.float32)
            for pid, v in stored.items()
            if isinstance(v, dict) and v.get(DENSE)
        }
        order = list(hits)
        for i, j in pairs:
            older, newer = hits[i], hits[j]
            if order.index(newer) < order.index(older):
                continue  # already moved above it: the comparison could change nothing
            a, b = vectors.get(older.id), vectors.get(newer.id)
            if a is None or b is None:
                continue
            if float(a @ b) < self.config.near_duplicate_threshold and not announced_update(
                older.stored.content, newer.stored.content
            ):
                continue
            if newer.stored.supersedes == older.id or older.stored.supersedes == newer.id:
                continue
            if self._changes(older, newer, a, b):
                order.remove(newer)
                order.insert(order.index(older), newer)
        return order

    def _changes(self, older: Hit, newer: Hit, a: np.ndarray, b: np.ndarray) -> bool:
        """The comparison decides ``newer`` is a change of one fact of ``older`` (remembered per pair of texts:
        the same memories come back search after search, and a comparison is a pure function of the two texts
        and their vectors)."""
        older_text, newer_text = older.stored.content, newer.stored.content
        key = (older.id, newer.id, older_text, newer_text)
        with self._changes_lock:
            known = self._changes_seen.get(key)
        if known is not None:
            return known
        comparison = self._compare(Member(older.id, older.payload), newer_text, (a.tolist(), b.tolist()))
        # A swap of two neighbours hides nothing: besides an update, a newer statement of the same subject with
        # another ending (a loose rewording of a new value, "My sister Ana packed up and moved to Vancouver")
        # ranks above the older unless the comparison called them a restatement or different.
        changed = acts_as_update(comparison, older_text, newer_text) or (
            left_open(comparison) and same_subject_new_value(older_text, newer_text)
        )
        with self._changes_lock:
            self._changes_seen[key] = changed
            if len(self._changes_seen) > CHANGES_REMEMBERED:
                self._changes_seen.popitem(last=False)
        return changed

    def get(self, memory_id: str) -> dict[str, Any]:
        """The full memory (every stored field but internals)."""
        records = self.coll.retrieve([memory_id])
        if not records:
            raise NotFound(f"no memory with id {memory_id} for this identity")
        point_id, payload = str(records[0].id), dict(records[0].payload or {})
        view = self._full(point_id, payload)
        stored = MemoryFields(payload)
        if stored.supersedes or stored.superseded_by:
            view["chain"] = [_brief(m) for m in chain_of(self.coll, point_id, payload)]
        return view

    def unlink(self, memory_id: str) -> dict[str, Any]:
        """Undo a link: ``memory_id`` no longer supersedes anything; the memory it replaced is current again."""
        with self.coll.lock:
            records = self.coll.retrieve([memory_id])
            if not records:
                raise NotFound(f"no memory with id {memory_id} for this identity")
            stored = MemoryFields(records[0].payload or {})
            older = stored.supersedes
            if not older:
                successor = stored.superseded_by
                hint = f"; to detach it from its replacement, unlink {successor}" if successor else ""
                raise InvalidInput(f"field 'id': memory {memory_id} supersedes nothing{hint}")
            unlink(self.coll, memory_id, str(older))
        return {"unlinked": {"id": memory_id, "supersedes": str(older)}}

    def link(self, memory_id: str, supersedes: str) -> dict[str, Any]:
        """Declare that ``memory_id`` updates ``supersedes``, with the rules of a declared ``supersedes`` in
        memory_store: the newest of ``supersedes``'s chain is the one replaced, events are never linked, and an
        update replaces an older memory (the one it supersedes was stored first). Linking again is a no-op."""
        if memory_id == supersedes:
            raise InvalidInput("field 'supersedes': a memory cannot supersede itself")
        with self.coll.lock:
            records = self.coll.retrieve([memory_id])
            if not records:
                raise NotFound(f"field 'id': no memory with id {memory_id} for this identity")
            newer = Member(memory_id, dict(records[0].payload or {}))
            linked = newer.stored.supersedes
            if linked:
                chain = [m.id for m in chain_of(self.coll, memory_id, newer.payload)]
                if supersedes in chain[: chain.index(memory_id)]:
                    return {"linked": {"id": memory_id, "supersedes": str(linked)}, "unchanged": True}
                raise InvalidInput(
                    f"field 'id': memory {memory_id} already supersedes {linked}; a memory replaces one other: "
                    f"memory_unlink({memory_id}) first"
                )
            older = self._declared(supersedes, newer.stored.kind)
            if any(m.id == memory_id for m in chain_of(self.coll, older.id, older.payload)):
                raise InvalidInput(f"field 'supersedes': memories {memory_id} and {supersedes} are already one chain")
            if (older.stored.created_at or "") > (newer.stored.created_at or ""):
                which = "" if older.id == supersedes else f" (the newest of {supersedes}'s chain)"
                raise InvalidInput(
                    f"field 'supersedes': memory {older.id}{which} was stored after {memory_id}, and an update "
                    f"replaces an older memory; if {older.id} is the newer value, call "
                    f"memory_link(id={older.id}, supersedes={memory_id})"
                )
            link(self.coll, older.id, memory_id)
        out: dict[str, Any] = {"linked": {"id": memory_id, "supersedes": older.id}, "superseded": _brief(older)}
        if older.id != supersedes:
            out["note"] = f"{supersedes} was already replaced: the newest of its chain, {older.id}, is superseded"
        return out

    def unmerge(self, memory_id: str, wording: str) -> dict[str, Any]:
        """Undo a merge: take ``wording`` out of memory ``memory_id``'s restated wordings and store it as a memory of
        its own, with its own vectors and what it was stored with (tags, importance, files, time)."""
        text = str(redact_fields({"content": wording})[0]["content"])
        with self.coll.lock:
            records = self.coll.retrieve([memory_id])
            if not records:
                raise NotFound(f"field 'id': no memory with id {memory_id} for this identity")
            payload = dict(records[0].payload or {})
            taken = take_wording(payload, text)
            if taken is None:
                count = len(MemoryFields(payload).restated)
                raise InvalidInput(
                    f"field 'wording': memory {memory_id} holds no such restated wording (it has {count}; "
                    "memory_get shows them: pass one exactly as shown)"
                )
            restated, meta, fields = taken
            vector = self.embedder.embed_documents([restated])[0]
            now = iso(self.clock())
            digest = content_hash(restated)
            holder = StoredMemory.from_payload(payload)
            self.coll.set_payload(memory_id, holder.updated(**fields).payload_of(*fields))
            existing = self._find_by_hash(digest)
            if existing is not None:
                # Stored again on its own since the merge: that memory is the wording's own.
                own = dict(self.coll.retrieve([existing])[0].payload or {})
                return {
                    "unmerged": {"id": memory_id, "wording": restated},
                    "memory": self._full(existing, own),
                    "created": False,
                }
            new_id = str(uuid.uuid4())
            new_payload = StoredMemory(
                content=restated,
                ctx_text=restated,
                content_hash=digest,
                kind=holder.kind,
                tags=list(meta.get("tags", holder.tags)),
                importance=float(meta.get("importance", holder.importance)),
                files=list(meta.get("files", holder.files)),
                created_at=str(meta.get("created_at") or now),
                updated_at=now,
                # A thread of its own: its place in the conversation it was said in was not kept.
                thread=f"unmerged-{new_id}",
                seq=0,
            ).to_payload()
            self.coll.upsert([(new_id, {DENSE: vector, CTX: vector}, new_payload)])
        return {
            "unmerged": {"id": memory_id, "wording": restated},
            "memory": self._full(new_id, new_payload),
            "created": True,
            "note": f"if it updates memory {memory_id}, call memory_link(id={new_id}, supersedes={memory_id})",
        }

    @staticmethod
    def _full(point_id: str, payload: dict[str, Any]) -> dict[str, Any]:
        return full_view(point_id, payload)

    def forget(self, memory_id: str) -> dict[str, Any]:
        """Delete one memory; return what was deleted.

        The next memory of its thread carries the deleted text in its context window, so
        that window is rebuilt without it: a forgotten memory leaves no trace in search.
        """
        with self.coll.lock:
            records = self.coll.retrieve([memory_id])
            if not records:
                raise NotFound(f"no memory with id {memory_id} for this identity")
            payload = dict(records[0].payload or {})
            deleted = self._full(memory_id, payload)
            self.coll.delete([memory_id])
            repair_after_forget(self.coll, payload)
            stored = MemoryFields(payload)
            thread, seq = stored.thread, stored.seq
            if thread is None or seq is None:
                return deleted
            successors, _ = self.coll.scroll(Scroll(limit=1, filter=where(thread=thread, seq=seq + 1)))
            for record in successors:
                after = StoredMemory.from_payload(dict(record.payload or {}))
                vector = self.embedder.embed_documents([after.content])[0]
                self.coll.update_vector(str(record.id), CTX, vector)
                rebuilt = after.updated(ctx_text=searchable_context(after.content, after.restated))
                self.coll.set_payload(str(record.id), rebuilt.payload_of("ctx_text"))
                if after.ctx_pending:
                    # Its pending vector quoted the forgotten text: the one just written stands.
                    self.coll.delete_payload(str(record.id), [CTX_PENDING])
            if self._tail is not None and self._tail[0] == seq and thread == self.thread:
                self._tail = (seq, "")
        return deleted

    def list(self, inp: MemoryListInput) -> dict[str, Any]:
        """Newest first; ``next_before`` pages on."""
        must: list[Condition] = []
        if inp.kind:
            must.append(Match("kind", inp.kind))
        if inp.tags:
            must.append(AnyOf("tags", inp.tags))
        if inp.files:
            must.append(AnyOf("files", inp.files))
        if inp.before or inp.since or inp.until:
            must.append(Range("created_at", lt=inp.before, gte=inp.since, lte=inp.until))
        if not inp.include_superseded:
            must.append(IsEmpty(SUPERSEDED_BY))
        records, _ = self.coll.scroll(
            Scroll(limit=inp.limit, filter=all_of(*must), order=Order("created_at", descending=True))
        )
        items = [self._full(str(r.id), dict(r.payload or {})) for r in records]
        next_before = items[-1]["created_at"] if len(items) == inp.limit else None
        if next_before is not None:
            # The next page starts strictly before next_before, so a page must not end inside a group
            # of memories created at the same instant (an import, a fixed clock): take the whole group.
            at = parse_timestamp(next_before)
            ties = all_of(*must, Range("created_at", gte=at, lte=at))
            group: list[Any] = []
            offset: Any = None
            while True:
                batch, offset = self.coll.scroll(Scroll(offset=offset, limit=256, filter=ties))
                group.extend(batch)
                if offset is None:
                    break
            group.sort(key=lambda r: MemoryFields(r.payload or {}).seq or 0, reverse=True)
            items = [m for m in items if m["created_at"] != next_before]
            items += [self._full(str(r.id), dict(r.payload or {})) for r in group]
        return {"memories": items, "count": len(items), "next_before": next_before}

    def export(self, batch: int = 256) -> Iterator[MemoryRecord]:
        """Every memory as a :class:`MemoryRecord`, in the collection's order."""
        return (record for record, _ in self.export_points(batch))

    def export_points(
        self, batch: int = 256, with_vectors: bool = False
    ) -> Iterator[tuple[MemoryRecord, dict[str, Vector] | None]]:
        """Every memory and, with ``with_vectors``, its stored vectors by name (else None).

        A memory whose context vector is still the placeholder (``ctx_pending``) exports the real one, computed
        here: the line carries no marker, so an import would otherwise keep the placeholder for good.
        """
        offset: Any = None
        while True:
            records, offset = self.coll.scroll(Scroll(offset=offset, limit=batch, with_vector=with_vectors))
            for r in records:
                payload = dict(r.payload or {})
                record = export_record(str(r.id), payload)
                vectors = dict(r.vector) if with_vectors and r.vector else None
                if vectors is not None and MemoryFields(payload).ctx_pending:
                    vectors[CTX] = self.embedder.embed_documents([context_window(payload)])[0]
                yield record, vectors
            if offset is None:
                return

    def import_records(self, records: Sequence[MemoryRecord], batch: int = 256) -> dict[str, Any]:
        """Write validated records in this order, embedding in batches. Idempotent on id; secrets redacted."""
        importer = MemoryImporter(self.coll, self.embedder, INDEX_AFTER_UNINDEXED, MEMORIES.layout.segment_points)
        try:
            for start in range(0, len(records), batch):
                importer.write(records[start : start + batch])
        except BaseException:
            importer.close()
            raise
        return importer.finish()

    def counts_by_kind(self) -> dict[str, int]:
        """How many memories of each kind."""
        from .models import MEMORY_KINDS

        return {kind: self.coll.count(where(kind=kind)) for kind in MEMORY_KINDS}
