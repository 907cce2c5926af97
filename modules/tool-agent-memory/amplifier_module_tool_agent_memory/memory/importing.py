"""Writing imported memories batch by batch, as one thread: what ``import`` and ``reindex`` write.

An import is one thread of its own: each memory's context window is the previous record of the
import (oldest first), whichever batch it came in. Vectors carried by the records (an export
``--with-vectors`` of a store of the same model) are written as they are; the others are embedded.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from ..redaction import redact_fields
from ..store.contract import DENSE, iso
from .models import MemoryRecord
from .payload import content_hash, meta_payload
from .ranking import CTX, context_text
from .record import StoredMemory
from .restated import searchable_context

if TYPE_CHECKING:
    from ..embeddings.providers import Embedder
    from ..store.contract import Collection

Vector = list[float]
# Writes between two engine checkpoints during an import (instead of the store's 200): a crash replays at
# most this many journal records on the next open (~0.2 s). A flush costs about the same wall time whatever
# it flushes (engine_write_floor.py at 25k: 355 us a memory flushing every 2,000, 108 every 10,000: fsyncs).
BULK_CHECKPOINT_EVERY = 10_000
# Every this many memories an import unmaps the store files' pages it wrote (they stay in the OS page cache)
# and trims the heap: an engine's vector files are memory-mapped, so a process writing 1M memories would
# otherwise count 3 GB of them in its RSS.
RELEASE_EVERY = 10_000
# A record's own vectors: (dense, ctx), or None to embed it.
RecordVectors = tuple[Vector, ...] | None
# A memory as written: its id, its two vectors by name, its payload.
ImportedPoint = tuple[str, dict[str, Vector], dict[str, Any]]
# A batch waiting to be written: records, the memory each is stored as, their vectors, which are being
# embedded, and that embedding.
_Pending = tuple[
    list[MemoryRecord],
    list[StoredMemory],
    list[RecordVectors],
    list[int],
    Future[list[Vector]] | None,
]


class MemoryImporter:
    """Writes records into a memory collection in the order given, batch after batch."""

    def __init__(
        self, coll: Collection, embedder: Embedder, index_after: int, build_every: int | None = None
    ) -> None:
        """``index_after``: build the search index at the end when this many memories are unindexed.
        ``build_every``: also build it each time this many memories were written (the collection's segment
        size: each build then indexes one new segment and maps only its pages, whatever the import's size)."""
        self.coll = coll
        self.embedder = embedder
        self.index_after = index_after
        self.build_every = build_every
        self._since_build = 0
        self.index_seconds = 0.0
        self._checkpoint_every = getattr(coll, "checkpoint_every", None)
        if self._checkpoint_every is not None:
            coll.checkpoint_every = max(self._checkpoint_every, BULK_CHECKPOINT_EVERY)  # type: ignore[attr-defined]
        self.thread = f"import-{uuid.uuid4()}"
        self.written = 0
        self.embedded = 0
        self._prev: str | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._pending: _Pending | None = None
        self._unreleased = 0

    def _memory(self, rec: MemoryRecord) -> StoredMemory:
        """The record as it is stored: secrets redacted, one step further along the import's thread."""
        fields, _ = redact_fields({"content": rec.content, "tags": rec.tags, "files": rec.files})
        created = iso(rec.created_at)
        content = str(fields["content"])
        restated = [str(redact_fields({"content": t})[0]["content"]) for t in rec.restated]
        memory = StoredMemory(
            content=content,
            # The window alone here: BM25 also indexes the restated wordings, added once the window is embedded.
            ctx_text=context_text(content, self._prev),
            content_hash=content_hash(content),
            restated=restated,
            restated_meta=[meta_payload(m) for m in rec.restated_meta[: len(restated)]],
            kind=rec.kind,
            tags=list(fields["tags"]),
            importance=rec.importance,
            files=list(fields["files"]),
            created_at=created,
            updated_at=iso(rec.updated_at) if rec.updated_at else created,
            thread=self.thread,
            seq=self.written,
            # Links travel with the records: an export and its import keep every chain.
            supersedes=rec.supersedes,
            superseded_by=rec.superseded_by,
        )
        self._prev = content
        self.written += 1
        return memory

    def write(self, records: Sequence[MemoryRecord], vectors: Sequence[RecordVectors] | None = None) -> None:
        """Write one batch (secrets redacted); ``vectors[i]`` are record i's own, or None to embed it.

        The batch's embedding starts in the background and the batch is written with the next call (or
        :meth:`finish`): reading, redacting and writing one batch overlap the embedding of the next, and
        at most two batches are held.
        """
        own: list[RecordVectors] = list(vectors) if vectors is not None else [None] * len(records)
        built = [self._memory(rec) for rec in records]
        # Content and context windows of the records without vectors, in one embedding call.
        todo = [i for i, v in enumerate(own) if v is None]
        embedding: Future[list[Vector]] | None = None
        if todo:
            texts = [built[i].content for i in todo] + [built[i].ctx_text for i in todo]
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agent-memory-import")
            embedding = self._pool.submit(self.embedder.embed_documents, texts)
        self._flush()
        self._pending = (list(records), built, own, todo, embedding)

    def _flush(self) -> None:
        """Write the batch waiting for its embedding."""
        if self._pending is None:
            return
        records, built, own, todo, embedding = self._pending
        self._pending = None
        if embedding is not None:
            embedded = embedding.result()
            for k, i in enumerate(todo):
                own[i] = (embedded[k], embedded[len(todo) + k])
            self.embedded += len(todo)
        self._store([self._point(rec, memory, pair) for rec, memory, pair in zip(records, built, own, strict=True)])

    @staticmethod
    def _point(rec: MemoryRecord, memory: StoredMemory, pair: RecordVectors) -> ImportedPoint:
        assert pair is not None and len(pair) == 2
        # The context vector embeds the window alone; BM25 also indexes the restated wordings.
        if memory.restated:
            memory = memory.updated(ctx_text=searchable_context(memory.ctx_text, memory.restated))
        return (rec.id, {DENSE: pair[0], CTX: pair[1]}, memory.to_payload())

    def points(self, records: Sequence[MemoryRecord], vectors: Sequence[RecordVectors]) -> list[ImportedPoint]:
        """Records that carry their vectors, as the points they are stored as (secrets redacted, one step
        further along the import's thread each), written by :meth:`write_points`. A child process of an
        import builds them (maintenance/import_pipeline.py) while this one writes the batch before."""
        return [self._point(rec, self._memory(rec), pair) for rec, pair in zip(records, vectors, strict=True)]

    def write_points(self, points: list[ImportedPoint]) -> None:
        """Write points built by :meth:`points` (here or in a child process with this import's ``thread``)."""
        self._flush()
        self.written += len(points)
        self._store(points)

    def _store(self, points: list[ImportedPoint]) -> None:
        self.coll.upsert(points)
        self._unreleased += len(points)
        self._since_build += len(points)
        if self.build_every is not None and self._since_build >= self.build_every:
            self._build(self.build_every)
        elif self._unreleased >= RELEASE_EVERY:
            self._release()

    def _build(self, min_unindexed: int) -> None:
        """Index what this import left unindexed (at least ``min_unindexed``), then unmap the pages it read."""
        self._since_build = 0
        spent = self.coll.index_if_needed(min_unindexed)
        if spent is not None:
            self.index_seconds += spent
        self._release()  # the build read every vector of its segment

    def _release(self) -> None:
        from ..store.memtrim import release_heap, release_mapped_pages

        self._unreleased = 0
        path = getattr(self.coll, "path", None)
        if path is not None:
            release_mapped_pages(path)
        release_heap()

    def close(self) -> None:
        """Stop the background embedding and restore the store's checkpoints (after a failure: the pending
        batch is dropped)."""
        self._pending = None
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        if self._checkpoint_every is not None:
            self.coll.checkpoint_every = self._checkpoint_every  # type: ignore[attr-defined]

    def finish(self) -> dict[str, Any]:
        """Write the last batch, build the search index when the import left enough memories unindexed; the summary."""
        try:
            self._flush()
        finally:
            self.close()
        self._build(self.index_after)
        out: dict[str, Any] = {"imported": self.written, "embedded": self.embedded}
        if self.index_seconds:
            out["index_seconds"] = round(self.index_seconds, 1)
        return out
