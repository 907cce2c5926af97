"""Long-term semantic memory: store, search, get, forget, list, import and export.

Plain synchronous service over one identity's ``memories`` collection; the tool
adapters run it off the event loop.
"""

from __future__ import annotations

import hashlib
import re
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..config import MemorySearchConfig
from ..embeddings.providers import Embedder
from ..errors import InvalidInput, NotFound
from ..redaction import redact_fields
from ..store.edge import COMPACT_LAYOUT, DENSE, Collection, CollectionSpec, IndexSpec, iso, utc_now
from .models import MemoryListInput, MemoryRecord, MemorySearchInput, MemoryStoreInput
from .ranking import CTX, MEMORY_VECTORS, RetrievalParams, context_text, hybrid_search

if TYPE_CHECKING:
    import qdrant_edge

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
    ),
    vectors=MEMORY_VECTORS,
    layout=COMPACT_LAYOUT,
)

_WS = re.compile(r"\s+")
# Brute force over 10k unindexed memories (two vectors each) costs a few ms a search; past that
# the HNSW index is built, checked every INDEX_CHECK_EVERY writes and after every import.
INDEX_AFTER_UNINDEXED = 10_000
INDEX_CHECK_EVERY = 500


def normalise_content(text: str) -> str:
    """The form two memories must share to be exact duplicates: case- and whitespace-folded."""
    return _WS.sub(" ", text).strip().casefold()


def content_hash(text: str) -> str:
    """sha256 of the normalised content."""
    return hashlib.sha256(normalise_content(text).encode("utf-8")).hexdigest()


def public_view(point_id: str, payload: dict[str, Any], score: float | None = None) -> dict[str, Any]:
    """The compact shape tools return for one memory."""
    view: dict[str, Any] = {
        "id": point_id,
        "content": payload.get("content", ""),
        "kind": payload.get("kind", "note"),
        "tags": payload.get("tags", []),
        "created_at": payload.get("created_at"),
    }
    if score is not None:
        view["score"] = round(score, 4)
    return view


@dataclass(frozen=True)
class StoreOutcome:
    """What memory_store did."""

    id: str
    created: bool
    duplicate: bool = False
    near_duplicate: bool = False
    similarity: float | None = None
    redacted: dict[str, list[str]] | None = None

    def as_output(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "created": self.created, "duplicate": self.duplicate}
        if self.near_duplicate:
            out["near_duplicate"] = True
            out["similarity"] = round(self.similarity or 0.0, 4)
            out["note"] = "a near-identical memory of this kind existed: its updated_at and importance were refreshed"
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
    ) -> None:
        self.coll = coll
        self.embedder = embedder
        self.config = config
        self.thread = thread
        self.clock = clock
        self.params = params or RetrievalParams()
        # (seq, content) of this thread's last memory: the next one's context window.
        self._tail: tuple[int, str] | None = None
        self._tail_loaded = False
        self._tail_lock = threading.Lock()
        self._writes_since_check = 0

    def _thread_tail(self) -> tuple[int, str] | None:
        """This thread's last memory, read from the store once (a reopened session continues its thread)."""
        import qdrant_edge as qe

        if not self._tail_loaded:
            flt = qe.Filter(must=[qe.FieldCondition("thread", match=qe.MatchValue(self.thread))])
            records, _ = self.coll.scroll(
                qe.ScrollRequest(
                    limit=1,
                    filter=flt,
                    with_payload=["seq", "content"],
                    order_by=qe.OrderBy("seq", direction=qe.Direction.Desc),
                )
            )
            if records:
                payload = dict(records[0].payload or {})
                self._tail = (int(payload["seq"]), str(payload["content"]))
            self._tail_loaded = True
        return self._tail

    def _vectors(self, content: str, ctx: str) -> dict[str, list[float]]:
        # Two calls, not one batch of two: a batch pads the memory to the length of its context
        # window (previous memory + this one); embedding dominates a store (p50 107 -> 82 ms under load).
        dense = self.embedder.embed_documents([content])[0]
        ctx_vec = dense if ctx == content else self.embedder.embed_documents([ctx])[0]
        return {DENSE: dense, CTX: ctx_vec}

    def _find_by_hash(self, digest: str) -> str | None:
        import qdrant_edge as qe

        flt = qe.Filter(must=[qe.FieldCondition("content_hash", match=qe.MatchValue(digest))])
        records, _ = self.coll.scroll(qe.ScrollRequest(limit=1, filter=flt, with_payload=False))
        return str(records[0].id) if records else None

    def _nearest_same_kind(self, vec: list[float], kind: str) -> tuple[str, float, dict[str, Any]] | None:
        import qdrant_edge as qe

        flt = qe.Filter(must=[qe.FieldCondition("kind", match=qe.MatchValue(kind))])
        points = self.coll.query(
            qe.QueryRequest(limit=1, query=qe.Query.Nearest(vec, using=DENSE), filter=flt, with_payload=True)
        )
        if not points:
            return None
        p = points[0]
        return str(p.id), float(p.score), dict(p.payload or {})

    def store(self, inp: MemoryStoreInput) -> StoreOutcome:
        """Redact, deduplicate (exact, then near), embed and write one memory."""
        fields, report = redact_fields({"content": inp.content, "tags": inp.tags, "files": inp.files})
        content = str(fields["content"])
        tags = list(dict.fromkeys(fields["tags"]))
        files = list(dict.fromkeys(fields["files"]))
        digest = content_hash(content)
        with self.coll.lock:
            existing = self._find_by_hash(digest)
            if existing is not None:
                return StoreOutcome(existing, created=False, duplicate=True, redacted=report or None)
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
        vectors = self._vectors(content, context_text(content, tail[1] if tail else None))
        with self.coll.lock:
            # Checked again under the lock: another session may have stored it meanwhile.
            existing = self._find_by_hash(digest)
            if existing is not None:
                return StoreOutcome(existing, created=False, duplicate=True, redacted=report or None)
            near = self._nearest_same_kind(vectors[DENSE], inp.kind)
            now = iso(self.clock())
            if near is not None and near[1] >= self.config.near_duplicate_threshold:
                near_id, similarity, payload = near
                importance = max(float(payload.get("importance", 0.5)), inp.importance)
                self.coll.set_payload(near_id, {"updated_at": now, "importance": importance})
                return StoreOutcome(
                    near_id, created=False, near_duplicate=True, similarity=similarity, redacted=report or None
                )
            memory_id = str(uuid.uuid4())
            seq = tail[0] + 1 if tail else 0
            payload = {
                "content": content,
                "ctx_text": context_text(content, tail[1] if tail else None),
                "content_hash": digest,
                "kind": inp.kind,
                "tags": tags,
                "importance": inp.importance,
                "files": files,
                "created_at": now,
                "updated_at": now,
                "thread": self.thread,
                "seq": seq,
            }
            self.coll.upsert([(memory_id, vectors, payload)])
            self._tail = (seq, content)
        self._writes_since_check += 1
        if self._writes_since_check >= INDEX_CHECK_EVERY:
            self._writes_since_check = 0
            self.coll.index_if_needed(INDEX_AFTER_UNINDEXED)
        return StoreOutcome(memory_id, created=True, redacted=report or None)

    def _filter(self, inp: MemorySearchInput) -> qdrant_edge.Filter | None:
        import qdrant_edge as qe

        must: list[Any] = []
        if inp.kind:
            must.append(qe.FieldCondition("kind", match=qe.MatchValue(inp.kind)))
        if inp.tags:
            must.append(qe.FieldCondition("tags", match=qe.MatchAny(list(inp.tags))))
        if inp.files:
            must.append(qe.FieldCondition("files", match=qe.MatchAny(list(inp.files))))
        if inp.since or inp.until:
            must.append(
                qe.FieldCondition(
                    "created_at",
                    range=qe.RangeDateTime(
                        gte=iso(inp.since) if inp.since else None, lte=iso(inp.until) if inp.until else None
                    ),
                )
            )
        return qe.Filter(must=must) if must else None

    def search(self, inp: MemorySearchInput) -> list[dict[str, Any]]:
        """Hybrid search; compact results, best first."""
        if inp.since and inp.until and inp.since > inp.until:
            raise InvalidInput("field 'since' must not be later than field 'until'")
        limit = inp.limit or self.config.default_limit
        vec = self.embedder.embed_query(inp.query)
        hits = hybrid_search(self.coll, inp.query, vec, limit, self._filter(inp), self.clock(), self.params)
        return [public_view(h.id, h.payload, h.score) for h in hits]

    def get(self, memory_id: str) -> dict[str, Any]:
        """The full memory (every stored field but internals)."""
        records = self.coll.retrieve([memory_id])
        if not records:
            raise NotFound(f"no memory with id {memory_id} for this identity")
        return self._full(str(records[0].id), dict(records[0].payload or {}))

    @staticmethod
    def _full(point_id: str, payload: dict[str, Any]) -> dict[str, Any]:
        view = public_view(point_id, payload)
        view.update(
            importance=payload.get("importance", 0.5),
            files=payload.get("files", []),
            updated_at=payload.get("updated_at"),
        )
        return view

    def forget(self, memory_id: str) -> dict[str, Any]:
        """Delete one memory; return what was deleted.

        The next memory of its thread carries the deleted text in its context window, so
        that window is rebuilt without it: a forgotten memory leaves no trace in search.
        """
        import qdrant_edge as qe

        with self.coll.lock:
            records = self.coll.retrieve([memory_id])
            if not records:
                raise NotFound(f"no memory with id {memory_id} for this identity")
            payload = dict(records[0].payload or {})
            deleted = self._full(memory_id, payload)
            self.coll.delete([memory_id])
            thread, seq = payload.get("thread"), payload.get("seq")
            if thread is None or not isinstance(seq, int):
                return deleted
            flt = qe.Filter(
                must=[
                    qe.FieldCondition("thread", match=qe.MatchValue(thread)),
                    qe.FieldCondition("seq", match=qe.MatchValue(seq + 1)),
                ]
            )
            successors, _ = self.coll.scroll(qe.ScrollRequest(limit=1, filter=flt, with_payload=True))
            for record in successors:
                after = dict(record.payload or {})
                content = str(after.get("content", ""))
                vector = self.embedder.embed_documents([content])[0]
                self.coll.update_vector(str(record.id), CTX, vector)
                self.coll.set_payload(str(record.id), {"ctx_text": content})
            if self._tail is not None and self._tail[0] == seq and thread == self.thread:
                self._tail = (seq, "")
        return deleted

    def list(self, inp: MemoryListInput) -> dict[str, Any]:
        """Newest first; ``next_before`` pages on."""
        import qdrant_edge as qe

        must: list[Any] = []
        if inp.kind:
            must.append(qe.FieldCondition("kind", match=qe.MatchValue(inp.kind)))
        if inp.before:
            must.append(qe.FieldCondition("created_at", range=qe.RangeDateTime(lt=iso(inp.before))))
        records, _ = self.coll.scroll(
            qe.ScrollRequest(
                limit=inp.limit,
                filter=qe.Filter(must=must) if must else None,
                with_payload=True,
                order_by=qe.OrderBy("created_at", direction=qe.Direction.Desc),
            )
        )
        items = [self._full(str(r.id), dict(r.payload or {})) for r in records]
        next_before = items[-1]["created_at"] if len(items) == inp.limit else None
        if next_before is not None:
            # The next page starts strictly before next_before, so a page must not end inside a group
            # of memories created at the same instant (an import, a fixed clock): take the whole group.
            ties = [*must, qe.FieldCondition("created_at", range=qe.RangeDateTime(gte=next_before, lte=next_before))]
            group: list[Any] = []
            offset: Any = None
            while True:
                batch, offset = self.coll.scroll(
                    qe.ScrollRequest(offset=offset, limit=256, filter=qe.Filter(must=ties), with_payload=True)
                )
                group.extend(batch)
                if offset is None:
                    break
            group.sort(key=lambda r: int((r.payload or {}).get("seq", 0)), reverse=True)
            items = [m for m in items if m["created_at"] != next_before]
            items += [self._full(str(r.id), dict(r.payload or {})) for r in group]
        return {"memories": items, "count": len(items), "next_before": next_before}

    def export(self, batch: int = 256) -> Iterator[MemoryRecord]:
        """Every memory as a :class:`MemoryRecord`, oldest first."""
        import qdrant_edge as qe

        offset: Any = None
        while True:
            records, offset = self.coll.scroll(qe.ScrollRequest(offset=offset, limit=batch, with_payload=True))
            for r in records:
                p = dict(r.payload or {})
                yield MemoryRecord(
                    id=str(r.id),
                    content=p["content"],
                    kind=p.get("kind", "note"),
                    tags=p.get("tags", []),
                    importance=p.get("importance", 0.5),
                    files=p.get("files", []),
                    created_at=p["created_at"],
                    updated_at=p.get("updated_at"),
                )
            if offset is None:
                return

    def import_records(self, records: Sequence[MemoryRecord], batch: int = 256) -> dict[str, Any]:
        """Write validated records, embedding in batches. Idempotent on id; secrets redacted."""
        written = 0
        thread = f"import-{uuid.uuid4()}"
        prev: str | None = None
        for start in range(0, len(records), batch):
            chunk = records[start : start + batch]
            payloads = []
            for offset, rec in enumerate(chunk):
                fields, _ = redact_fields({"content": rec.content, "tags": rec.tags, "files": rec.files})
                created = iso(rec.created_at)
                content = str(fields["content"])
                payloads.append(
                    {
                        "content": content,
                        "ctx_text": context_text(content, prev),
                        "content_hash": content_hash(content),
                        "kind": rec.kind,
                        "tags": list(fields["tags"]),
                        "importance": rec.importance,
                        "files": list(fields["files"]),
                        "created_at": created,
                        "updated_at": iso(rec.updated_at) if rec.updated_at else created,
                        "thread": thread,
                        "seq": start + offset,
                    }
                )
                prev = content
            texts = [str(p["content"]) for p in payloads] + [str(p["ctx_text"]) for p in payloads]
            vectors = self.embedder.embed_documents(texts)
            n = len(payloads)
            self.coll.upsert(
                [
                    (rec.id, {DENSE: vectors[i], CTX: vectors[n + i]}, p)
                    for i, (rec, p) in enumerate(zip(chunk, payloads, strict=True))
                ]
            )
            written += len(chunk)
        indexed_s = self.coll.index_if_needed(INDEX_AFTER_UNINDEXED)
        out: dict[str, Any] = {"imported": written}
        if indexed_s is not None:
            out["index_seconds"] = round(indexed_s, 1)
        return out

    def counts_by_kind(self) -> dict[str, int]:
        """How many memories of each kind."""
        import qdrant_edge as qe

        from .models import MEMORY_KINDS

        return {
            kind: self.coll.count(qe.Filter(must=[qe.FieldCondition("kind", match=qe.MatchValue(kind))]))
            for kind in MEMORY_KINDS
        }
