"""The journal and the engine: replaying the journal into a shard, completing the journal from one,
reading a collection from its journal alone, and rebuilding a shard from its journal (``repair``).

See :mod:`.journal` for the journal itself; this module is where its changes meet the engine.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ..errors import AgentMemoryError, ReadOnlyStoreError, StoreDamagedError
from .contract import PAYLOAD_SUM, BaseCollection, CollectionSpec, NamedPoint, StoredPoint, payload_sum, sealed
from .edge_collection import EdgeCollection, vectors_of
from .edge_settings import create_index_operation, edge_config
from .journal import Change, Entry, Journal
from .query import Fields, Filter, Scroll, Search, vectors_asked
from .space import DiskGate, allocated_bytes

logger = logging.getLogger(__name__)


def replay_journal(coll: EdgeCollection, journal: Journal) -> int:
    """Apply the journal's changes the engine may not hold (after its checkpoint); returns how many."""
    applied = replay_into(coll, journal.entries(after_seq=journal.engine_seq))
    if applied:
        coll.persist()
        logger.warning("journal replayed", extra={"collection": coll.name, "changes": applied})
    return applied


_REPLAY_BATCH = 256


def replay_into(coll: BaseCollection, entries: Iterable[Entry], progress: Callable[[int], None] | None = None) -> int:
    """Apply journal entries to the engine only, in order (consecutive upserts in one request); how many."""
    applied = 0
    pending: list[NamedPoint] = []

    def flush_upserts() -> None:
        if pending:
            coll._engine_upsert(list(pending))
            if progress is not None:
                progress(len(pending))
            pending.clear()

    for entry in entries:
        change = entry.change
        applied += 1
        if change.op == "upsert" and change.payload is not None:
            pending.append((change.ids[0], dict(change.vectors or {}), change.payload))
            if len(pending) >= _REPLAY_BATCH:
                flush_upserts()
            continue
        flush_upserts()
        apply_change(coll, change)
        if progress is not None:
            progress(1)
    flush_upserts()
    return applied


def apply_change(coll: BaseCollection, change: Change) -> None:
    """Apply one journal change to the engine only (replay and repair)."""
    pid = change.ids[0] if change.ids else ""
    if change.op == "upsert" and change.payload is not None:
        coll._engine_upsert([(pid, dict(change.vectors or {}), change.payload)])
    elif change.op == "payload" and change.payload is not None:
        try:
            coll._engine_overwrite_payload(pid, change.payload)
        except Exception:
            # The point was deleted later in the journal; its delete follows.
            logger.debug("replayed payload of a missing point", extra={"point": pid})
    elif change.op == "vector":
        for name, vec in (change.vectors or {}).items():
            try:
                coll._engine_update_vector(pid, name, vec)
            except Exception:
                logger.debug("replayed vector of a missing point", extra={"point": pid})
    elif change.op == "delete":
        coll._engine_delete(list(change.ids))


def journal_from_engine(coll: EdgeCollection, journal: Journal) -> int:
    """Write the engine's points the journal lacks into it (a store from before journals, or a damaged journal).

    A payload whose checksum fails is not copied (it is damaged; the journal must not learn it).
    """
    written = 0
    offset = None
    while True:
        page, offset = coll._engine_scroll(Scroll(offset=offset, limit=256, with_payload=True, with_vector=True))
        changes = []
        for p in page:
            payload = dict(p.payload or {})
            if journal.has(str(p.id)) or (PAYLOAD_SUM in payload and payload_sum(payload) != payload[PAYLOAD_SUM]):
                continue
            changes.append(Change("upsert", (str(p.id),), sealed(payload), vectors_of(p)))
        if changes:
            journal.append(changes)
            written += len(changes)
        if offset is None or not page:
            break
    journal.checkpoint()
    if written:
        logger.warning("journal completed from the engine's points", extra={"collection": coll.name, "points": written})
    return written


class JournalView(BaseCollection):
    """A collection read from its journal alone (the engine cannot be read): export's fallback.

    Answers scrolls without a filter, retrieve and count; writes answer ``read_only``.
    """

    def __init__(self, name: str, journal: Journal) -> None:
        super().__init__(name)
        self.journal = journal
        self._ids = journal.live_ids()

    def _refuse(self) -> AgentMemoryError:
        return ReadOnlyStoreError(f"collection {self.name!r} is being read from its journal: writes are refused")

    def _engine_upsert(self, points: list[NamedPoint]) -> None:
        raise self._refuse()

    def _engine_overwrite_payload(self, point_id: str, payload: dict[str, Any]) -> None:
        raise self._refuse()

    def _engine_update_vector(self, point_id: str, name: str, vector: list[float]) -> None:
        raise self._refuse()

    def _engine_delete(self, point_ids: list[str]) -> None:
        raise self._refuse()

    def _point(self, point_id: str, with_vector: Fields) -> StoredPoint | None:
        assert self.journal is not None
        latest = self.journal.latest(point_id)
        if latest is None or latest[0] is None:
            return None
        return StoredPoint(id=point_id, payload=latest[0], vector=vectors_asked(latest[1], with_vector))

    def _engine_retrieve(self, point_ids: list[str], with_vector: Fields) -> list[StoredPoint]:
        return [p for p in (self._point(pid, with_vector) for pid in point_ids) if p is not None]

    def _engine_query(self, search: Search) -> list[StoredPoint]:
        raise StoreDamagedError(f"collection {self.name!r} can only be exported while its engine is damaged")

    def _engine_scroll(self, scroll: Scroll) -> tuple[list[StoredPoint], Any]:
        if scroll.filter is not None or scroll.order is not None:
            raise StoreDamagedError(f"collection {self.name!r} can only be exported while its engine is damaged")
        start = int(scroll.offset or 0)
        limit = scroll.limit
        page = self._engine_retrieve(self._ids[start : start + limit], scroll.with_vector)
        nxt = start + limit if start + limit < len(self._ids) else None
        return page, nxt

    def count(self, flt: Filter | None = None) -> int:
        """Points the journal holds (no filter)."""
        return len(self._ids)

    def unindexed_count(self) -> int:
        """Nothing to index."""
        return 0

    def optimize(self) -> None:
        """Nothing to index."""

    def close(self) -> None:
        """Nothing to release (the journal was opened read-only)."""


def rebuild_shard(
    path: Path,
    journal_dir: Path,
    spec: CollectionSpec,
    dim: int,
    gate: DiskGate,
    progress: Callable[[int], None] | None = None,
    on_total: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Rebuild a (closed) collection's engine files at ``path`` from its journal; what was done.

    The damaged shard is moved aside first and deleted once the rebuilt one holds every point the
    journal has. The rebuilt shard has no Edge WAL (an old-format shard is migrated this way).
    """
    import qdrant_edge as qe

    journal = Journal(journal_dir)
    # Repair reads and checks every segment, whatever the persisted index says.
    report = journal.open(full_scan=True)
    result: dict[str, Any] = {"collection": spec.name, "journal_points": journal.live_count}
    if report.records == 0:
        journal.close()
        return {**result, "rebuilt": False, "reason": "no journal"}
    if on_total is not None:
        on_total(report.records)
    gate.check_write(allocated_bytes(path) if path.exists() else 0)
    aside = path.parent / f".{spec.name}.damaged"
    if aside.exists():
        shutil.rmtree(aside)
    if path.exists():
        path.rename(aside)
    started = time.perf_counter()
    shard = qe.EdgeShard.create(str(path), edge_config(spec, dim))
    coll = EdgeCollection(spec.name, shard, len(spec.vectors), path=path, gate=gate)
    try:
        for index in (i for i in spec.indexes if i.embedded):
            shard.update(create_index_operation(spec, index))
        changes = replay_into(coll, journal.entries(), progress)
        shard.optimize()
        shard.flush()
        points = coll.count()
    finally:
        shard.close()
    journal.checkpoint(journal.last_seq)
    journal.close()
    shutil.rmtree(aside, ignore_errors=True)
    return {
        **result,
        "rebuilt": True,
        "changes_replayed": changes,
        "points": points,
        "damaged_journal_records": report.damaged,
        "seconds": round(time.perf_counter() - started, 2),
    }
