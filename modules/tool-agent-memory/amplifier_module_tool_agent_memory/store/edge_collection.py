"""One collection of the embedded store: a Qdrant Edge shard behind the shared write and read path.

:class:`EdgeCollection` supplies the engine primitives :class:`~.contract.BaseCollection` asks for,
checkpoints the journal every few writes, and schedules the purge of the engine's freed pages after a
forget (Edge's vacuum, see :mod:`.purge`).
"""

from __future__ import annotations

import logging
import subprocess
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import AgentMemoryError, StoreDamagedError
from . import child_build
from .contract import DENSE, BaseCollection, NamedPoint, StoredPoint
from .edge_query import to_filter, to_query_request, to_scroll_request
from .edge_settings import vacuums
from .journal import CHECKPOINT_EVERY, Entry, Journal
from .purge import DebouncedJob, PurgePolicy
from .query import Fields, Filter, Scroll, Search, fields
from .space import DiskGate, allocated_bytes

if TYPE_CHECKING:
    import qdrant_edge

logger = logging.getLogger(__name__)


def stored_point(point: Any) -> StoredPoint:
    """An Edge point or record as every store answers it."""
    return StoredPoint(
        id=point.id,
        payload=point.payload,
        score=float(getattr(point, "score", 0.0) or 0.0),
        vector=point.vector,
        order_value=point.order_value,
    )


def vectors_of(point: Any) -> dict[str, list[float]]:
    """A read point's vectors by name (a plain vector is the ``dense`` one)."""
    vectors = point.vector if isinstance(point.vector, dict) else {DENSE: point.vector}
    return {str(k): [float(x) for x in v] for k, v in vectors.items() if v is not None}


# Unindexed points past this many times a build's threshold are indexed in the call that finds them: a stream
# of writes with no idle pause would otherwise leave every search scanning more and more points one by one.
INDEX_IN_CALL_FACTOR = 4


def _is_panic(exc: BaseException) -> bool:
    # pyo3 turns a Rust panic into pyo3_runtime.PanicException, a BaseException.
    return type(exc).__name__ == "PanicException"


class EdgeCollection(BaseCollection):
    """One Qdrant Edge shard, journaled (see :mod:`.journal`) and gated by free space (see :mod:`.space`)."""

    def __init__(
        self,
        name: str,
        shard: qdrant_edge.EdgeShard,
        vector_count: int = 1,
        *,
        path: Path | None = None,
        gate: DiskGate | None = None,
        journal: Journal | None = None,
        repair_hint: str = "run `agent-memory repair`",
        purge: PurgePolicy | None = None,
        replay: Callable[[BaseCollection, Iterable[Entry]], int] | None = None,
    ) -> None:
        """``replay`` applies journal entries to the engine (:func:`.rebuild.replay_into`): given, scheduled
        index builds run in a child process and are swapped in (:mod:`.child_build`); without it, in-process."""
        super().__init__(name, vector_count, gate)
        self.shard = shard
        self._replay = replay
        # Held around every engine read and around a child build's swap (which closes and reloads the shard),
        # so no read meets a closed shard. Reads are serialised by the engine's hold on the GIL anyway.
        self._shard_gate = threading.RLock()
        self._child: subprocess.Popen[bytes] | None = None
        self._closing = False
        # What the last child build's swap spent, step by step (ms; benchmarks/build_wait.py prints it).
        self.last_swap_ms: dict[str, float] = {}
        self.path = path
        self.journal = journal
        self.repair_hint = repair_hint
        self._since_checkpoint = 0
        # Writes between two checkpoints; a bulk import raises it (memory/importing.py): each flush of a
        # growing shard costs more, and a crash then replays at most this many journal records.
        self.checkpoint_every = CHECKPOINT_EVERY
        self.purge_policy = purge or PurgePolicy()
        policy = self.purge_policy
        self._engine_purge = DebouncedJob(
            name,
            self.purge_engine,
            policy.quiet_s,
            policy.max_wait_s,
            policy.idle_s,
            clock=policy.clock,
            background=policy.background,
        )
        # Index builds wait for the collection to be idle like the large purges: Edge's optimize() holds the
        # GIL for the whole build (measured: a Python thread made no progress during a 26 s build), so a
        # build run by a background thread still stalls every call of the process while it runs. Off the
        # calls, it lands in a pause between them instead of inside the write that crossed the threshold.
        self._index_min = 0
        self._index_job = DebouncedJob(
            f"{name}-index",
            self._scheduled_build,
            policy.quiet_s,
            policy.max_wait_s,
            policy.idle_s,
            clock=policy.clock,
            background=policy.background,
        )
        # A shard created before the vacuum setting would only build indexes early: it is purged by repair.
        self.vacuums = path is not None and vacuums(path)

    def _engine_failure(self, exc: BaseException) -> BaseException:
        if isinstance(exc, AgentMemoryError | KeyboardInterrupt | SystemExit):
            return exc
        if _is_panic(exc) or "Failed to decode" in str(exc) or "Service runtime error" in str(exc):
            return StoreDamagedError(
                f"the storage engine failed reading collection {self.name!r} ({str(exc)[:200]}); {self.repair_hint}"
            )
        return exc

    def _engine_upsert(self, points: list[NamedPoint]) -> None:
        import qdrant_edge as qe

        self.shard.update(
            qe.UpdateOperation.upsert_points([qe.Point(pid, dict(vecs), payload) for pid, vecs, payload in points])
        )

    def _engine_replace(self, points: list[NamedPoint], replaced: list[str]) -> None:
        import qdrant_edge as qe

        if replaced:
            # Rewritten in place, a point's old payload pages are freed but not counted as deleted, so no
            # vacuum would ever rewrite them: deleting it first makes its segment due for one.
            self.shard.update(qe.UpdateOperation.delete_points(list[Any](replaced)))
        self._engine_upsert(points)

    def _engine_overwrite_payload(self, point_id: str, payload: dict[str, Any]) -> None:
        import qdrant_edge as qe

        self.shard.update(qe.UpdateOperation.overwrite_payload([point_id], payload))

    def _engine_rewrite_point(self, point_id: str, payload: dict[str, Any]) -> None:
        # Overwritten in place, the old payload's pages are freed but never counted as deleted: a neighbour
        # whose context quoted a forgotten text, in another segment than it, would keep that text. Written
        # again after a delete, its old copy makes its own segment due for the vacuum.
        found = self.shard.retrieve([point_id], with_payload=False, with_vector=True)
        if not found:
            self._engine_overwrite_payload(point_id, payload)
            return
        self._engine_replace([(point_id, vectors_of(found[0]), payload)], [point_id])

    def _engine_update_vector(self, point_id: str, name: str, vector: list[float]) -> None:
        import qdrant_edge as qe

        self.shard.update(qe.UpdateOperation.update_vectors([qe.PointVectors(point_id, {name: vector})]))

    def _engine_delete(self, point_ids: list[str]) -> None:
        import qdrant_edge as qe

        self.shard.update(qe.UpdateOperation.delete_points(list[Any](point_ids)))

    def _engine_retrieve(self, point_ids: list[str], with_vector: Fields) -> list[StoredPoint]:
        return [
            stored_point(p)
            for p in self.shard.retrieve(list[Any](point_ids), with_payload=True, with_vector=fields(with_vector))
        ]

    def _engine_query(self, search: Search) -> list[StoredPoint]:
        self._index_job.touch()  # a build waits for searches to pause too: it would stall them
        return [stored_point(p) for p in self.shard.query(to_query_request(search))]

    def _engine_scroll(self, scroll: Scroll) -> tuple[list[StoredPoint], Any]:
        self._index_job.touch()
        records, next_offset = self.shard.scroll(to_scroll_request(scroll))
        return [stored_point(p) for p in records], next_offset

    def count(self, flt: Filter | None = None) -> int:
        """Exact number of points (matching ``flt``)."""
        import qdrant_edge as qe

        request = qe.CountRequest(filter=to_filter(flt), exact=True)
        return int(self._read(lambda: self.shard.count(request)))

    def unindexed_count(self) -> int:
        """Points whose vectors are not in the HNSW index yet (searched by brute force)."""
        with self._shard_gate:
            info = self.shard.info()
        return max(0, int(info.points_count) - int(info.indexed_vectors_count) // max(1, self.vector_count))

    def _read(self, call: Callable[[], Any]) -> Any:
        with self._shard_gate:
            return super()._read(call)

    def payload_indexed(self, field: str) -> bool:
        """Whether the shard holds a payload index on ``field``."""
        with self._shard_gate:
            return field in self.shard.info().payload_schema

    def drop_payload_index(self, field: str) -> None:
        """Drop the payload index on ``field`` (a no-op when there is none) and flush it."""
        import qdrant_edge as qe

        with self.lock:
            if self.payload_indexed(field):
                self.shard.update(qe.UpdateOperation.delete_field_index(field))
                self.persist()

    def optimize(self) -> None:
        """Index every unindexed vector now (blocking: Edge runs no optimizer in the background)."""
        with self.lock:
            self.shard.optimize()
            self.persist()

    def index_soon(self, min_unindexed: int) -> None:
        """Build the index once the collection is idle (no write, search or scroll for the purge policy's
        ``idle_s``) when at least ``min_unindexed`` points are unindexed; meanwhile searches scan those points
        exactly. Past :data:`INDEX_IN_CALL_FACTOR` times that many (writes that never pause), it builds without
        waiting for a pause: in a child process when the collection has one (:meth:`build_in_child`, the calls go
        on meanwhile), else now, in the call."""
        unindexed = self.unindexed_count()
        if unindexed < min_unindexed:
            return
        self._index_min = min_unindexed
        if unindexed >= INDEX_IN_CALL_FACTOR * min_unindexed:
            if self._child_builds:
                self._index_job.request(idle=False)
            else:
                self.index_if_needed(min_unindexed)
            return
        self._index_job.request(idle=True)

    @property
    def _child_builds(self) -> bool:
        return self._replay is not None and self.journal is not None and not self.journal.read_only

    @property
    def index_build_waits_for_idle(self) -> bool:
        """Whether a waiting index build runs only once the collection is idle (tests and ``inspect``)."""
        return self._index_job.waits_for_idle

    def _scheduled_build(self) -> None:
        if self._child_builds and self.path is not None:
            self.build_in_child(self._index_min)
        else:
            self.index_if_needed(self._index_min)

    def build_in_child(self, min_unindexed: int) -> float | None:
        """Build the index of the unindexed segments in a child process and swap them in (see
        :mod:`.child_build`); the seconds the calls could wait (the swap), or None when nothing was built."""
        if self.path is None or self.journal is None or not self._build_due(min_unindexed):
            return None
        started = time.perf_counter()
        with self.lock:
            if self._closing:
                return None
            self.persist()  # the engine's files hold every change up to the journal's checkpoint
            copied_at = self.journal.engine_seq
            names = child_build.plain_segments(self.path)
            if not names:
                return None
            folder = child_build.copy_for_build(self.path, names)
            self._child = child_build.start_child(folder)
        child = self._child
        _, err = child.communicate()  # the build holds the child's GIL; this thread waits without ours
        with self.lock:
            self._child = None
            built = child_build.built_segments(folder, names) if child.returncode == 0 else []
            if self._closing or not built:
                if not self._closing:
                    reason = err.decode(errors="replace")[-500:]
                    logger.warning("index build failed", extra={"collection": self.name, "stderr": reason})
                child_build.discard(folder)
                return None
            waited = self._swap_in(folder, built, names, copied_at)
        child_build.discard(folder)  # the replaced segments, deleted outside the pause and the lock
        seconds = round(time.perf_counter() - started, 2)
        logger.info(
            "index built in a child process",
            extra={"collection": self.name, "seconds": seconds, "swap_ms": round(waited * 1000, 1)},
        )
        return waited

    def _swap_in(self, folder: Path, built: list[str], replaced: list[str], copied_at: int) -> float:
        # Under the lock (no write) and the gate (no read): the shard is closed, its segments changed, reloaded.
        assert self.path is not None and self.journal is not None and self._replay is not None
        import qdrant_edge as qe

        with self._shard_gate:
            marks = [time.perf_counter()]
            # From here until the replay below, the engine's segments may lack what changed after the copy: the
            # checkpoint goes back to the copy first, so a crash meanwhile is completed by the next open's replay.
            self.journal.checkpoint(copied_at)
            marks.append(time.perf_counter())
            self.shard.close()  # flushes every write made since the copy (the replay writes them again)
            marks.append(time.perf_counter())
            child_build.swap_segments(self.path, folder, built, replaced)
            marks.append(time.perf_counter())
            self.shard = qe.EdgeShard.load(str(self.path))
            marks.append(time.perf_counter())
            replayed = self._replay(self, self.journal.entries(after_seq=copied_at))
            marks.append(time.perf_counter())
        # The checkpoint moves on with the next writes (a crash before that replays these again: no harm).
        self._since_checkpoint += replayed
        steps = ("checkpoint", "close", "move", "load", "replay")
        self.last_swap_ms = {k: round((b - a) * 1000, 1) for k, a, b in zip(steps, marks[:-1], marks[1:], strict=True)}
        return marks[-1] - marks[0]

    @property
    def index_builds(self) -> int:
        """How many scheduled index builds have run (tests and ``inspect``)."""
        return self._index_job.runs

    @property
    def index_build_pending(self) -> bool:
        """Whether an index build waits for the collection to be idle."""
        return self._index_job.pending

    def run_index_build_if_due(self) -> bool:
        """Run a waiting index build now if the collection was idle long enough by the purge clock; whether it
        ran (for a policy with ``background=False``: tests with a manual clock)."""
        return self._index_job.run_if_due()

    def _build_need(self) -> int:
        # Measured: an index build of 10k memories took the segments from 43 to 86 MB.
        return 2 * allocated_bytes(self.path / "segments") if self.path is not None else 0

    def _after_write(self, changes: int) -> None:
        # A purge or index build waiting for the collection to be idle waits idle_s from this write on.
        self._engine_purge.touch()
        self._index_job.touch()
        self._since_checkpoint += changes
        if self._since_checkpoint >= self.checkpoint_every:
            self.persist()

    def persist(self) -> None:
        """Purge superseded journal records, flush the engine and advance the journal's checkpoint."""
        with self.lock:
            if self.journal is not None and not self.journal.read_only:
                self._purge_pending(compact_all=True)
            self.shard.flush()
            if self.journal is not None and not self.journal.read_only:
                self.journal.checkpoint()
                # A purge rewrote segments since the index was written: write it again (else the next open reads all).
                self.journal.write_index()
            self._since_checkpoint = 0

    @property
    def engine_purges(self) -> int:
        """How many background purges of the engine's freed pages have run (tests and ``inspect``)."""
        return self._engine_purge.runs

    @property
    def engine_purge_waits_for_idle(self) -> bool:
        """Whether a purge is due but waits for the collection to be idle (too large to purge promptly)."""
        return self._engine_purge.waits_for_idle

    def run_engine_purge_if_due(self) -> bool:
        """Run a waiting engine purge now if it is due by the purge clock; whether it ran (for a policy with
        ``background=False``, whose owner decides when time has passed: tests with a manual clock)."""
        return self._engine_purge.run_if_due()

    def _engine_freed_text(self) -> None:
        if self.vacuums and self.journal is not None and not self.journal.read_only:
            # The vacuum rewrites whole segments: its cost follows the points in them (see PurgePolicy).
            points = int(self.shard.info().points_count)
            self._engine_purge.request(idle=self.purge_policy.waits_for_idle(points))

    def purge_due(self) -> dict[str, Any]:
        """Run the engine purge now (``agent-memory gc``): a waiting one, or Edge's vacuum of any segment that
        still holds deleted points (a session that ended without close); what it did."""
        if not self.vacuums or self.journal is None or self.journal.read_only:
            return {"collection": self.name, "purged": False, "reason": "shard without the vacuum setting"}
        segments = self.path / "segments" if self.path is not None else None
        before = _segment_names(segments)
        started = time.perf_counter()
        if not self._engine_purge.flush():
            self.purge_engine()
        seconds = round(time.perf_counter() - started, 3)
        return {"collection": self.name, "purged": _segment_names(segments) != before, "seconds": seconds}

    def purge_engine(self) -> None:
        """Rewrite the segments that hold deleted points (Edge's vacuum), so no freed page keeps a forgotten text.

        Run by a background thread a moment after the last forget (see :mod:`.purge`), under the collection
        lock (writes and index builds wait; searches go on), and by :meth:`close` when one is still due.
        """
        with self.lock:
            started = time.perf_counter()
            self._read(self.shard.optimize)
            self.persist()
            logger.info(
                "engine purged",
                extra={"collection": self.name, "ms": round((time.perf_counter() - started) * 1000, 1)},
            )

    def close(self) -> None:
        """Purge what a forget left in the engine, then flush and close the shard and its journal."""
        self._engine_purge.stop()
        # A build still waiting is dropped, not run: closing is often the end of a short command, and the next
        # process that writes schedules it again (searches stay exact meanwhile). A child build running is
        # ended (its copy is discarded, the shard was never touched).
        with self.lock:
            self._closing = True
            if self._child is not None:
                self._child.kill()
        self._index_job.stop()
        with self.lock:
            try:
                if not (self.journal is not None and self.journal.read_only):
                    self._engine_purge.flush()
                    self.persist()
            finally:
                try:
                    self.shard.close()
                finally:
                    if self.journal is not None:
                        self.journal.close()


def _segment_names(folder: Path | None) -> frozenset[str]:
    # A vacuum writes the segments it rewrote under new names: a changed set means it rewrote some.
    if folder is None or not folder.is_dir():
        return frozenset()
    return frozenset(p.name for p in folder.iterdir())
