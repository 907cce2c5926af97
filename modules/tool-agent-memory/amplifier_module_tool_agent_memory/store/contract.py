"""The collection contract both stores implement, and the logic they share.

A *collection* is one named set of points (id, named dense vectors, JSON payload) with payload
indexes: ``memories``, ``cache`` and ``plans`` of one identity. The services see nothing else
of a store: :class:`Collection` is the whole surface they use, and :class:`Store` is what the
runtime opens per identity. Two engines implement it:

- :mod:`.edge`: embedded Qdrant Edge shards under ``storage_root/<identity>/``;
- :mod:`.server`: collections on a Qdrant server, shared by many processes.

:class:`BaseCollection` holds what both do the same way: the write path (a plain vector is the
``dense`` one, every write first asks the store's :class:`WriteGate` whether writing is allowed,
then reaches the engine under ``lock``), results read back as :class:`StoredPoint`, and the index
build policy. An engine only supplies the ``_engine_*`` primitives.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from .journal import Change, Journal
from .query import DENSE as DENSE
from .query import Fields, Filter, Scroll, Search, Value
from .query import NamedPoint as NamedPoint
from .query import PointInput as PointInput
from .query import StoredPoint as StoredPoint

logger = logging.getLogger(__name__)

SCHEMA_VERSION = 1

IndexKind = Literal["keyword", "datetime", "float", "integer", "bool", "text"]
MemoryTier = Literal["pinned", "cached", "cold"]
Quantization = Literal["int8", "turbo4", "turbo2"]


@dataclass(frozen=True)
class IndexSpec:
    """One payload index. ``text`` is a full-text index with BM25 scoring and English stemming.

    ``hnsw``: also build payload-aware HNSW links for this field's values, which keep a vector
    search filtered on it accurate (at 100k, dense recall@10 under a 30-day ``created_at`` filter
    is 0.72 without them, 0.96 with). Only fields that filter vector searches need them: Qdrant
    builds extra graph links for every value (every frequent word of a text field, every range
    block of a number) that covers enough points, so an index build of 100k memories spent
    minutes on fields that only ever filter scrolls and counts.

    ``server_only``: kept by the server backend only. The embedded store answers the same question another way
    (the context vectors' marker: :mod:`.claims`), and an index it does not need costs every engine purge, which
    rewrites each payload index of the segments it vacuums.
    """

    field: str
    kind: IndexKind
    hnsw: bool = False
    server_only: bool = False

    @property
    def embedded(self) -> bool:
        """Whether the embedded store (Qdrant Edge) builds this index."""
        return not self.server_only


@dataclass(frozen=True)
class StorageLayout:
    """Where a new shard keeps each of its structures; ``None`` leaves Qdrant's default.

    Tiers (Qdrant's ``Memory``): ``pinned`` on the heap, ``cached`` memory-mapped and read into
    the page cache when the shard opens, ``cold`` memory-mapped and read on first touch.
    Applied when a shard is created: an existing shard keeps the layout it was created with.
    Only the embedded store reads it (a server applies its own).
    """

    vectors: MemoryTier | None = None
    quantization: Quantization | None = None
    quantized: MemoryTier | None = None
    hnsw: MemoryTier | None = None
    payload: MemoryTier | None = None
    payload_indexes: MemoryTier | None = None
    # Points per indexed segment at most (``None``: Qdrant's default, which grows a segment to hundreds of
    # thousands of points). An index build then rewrites at most about this many points, whatever the
    # collection's size: its time and the store pages it maps stay bounded.
    segment_points: int | None = None
    # HNSW construction (Qdrant's defaults: m 16, ef_construct 100, payload_m = m, threads 0 = one per core).
    # benchmarks/build_cost.py measures what each costs a build and its recall against exact search.
    hnsw_m: int = 16
    hnsw_ef_construct: int = 100
    payload_m: int | None = None
    indexing_threads: int = 0

    @property
    def quantized_search(self) -> bool:
        """Whether searches read quantized vectors first (and must rescore with the originals)."""
        return self.quantization is not None


# For collections that grow large (memories: two 384-d vectors a point, up to 100k+ points).
# Everything memory-mapped and read on first touch (the OS reads it ahead at open: see
# edge._warm_page_cache); searches read 4-bit TurboQuant copies of the vectors, never the floats.
# Measured on 2 cores (RSS of a process with only the shard open, pages touched by opening
# released): 10k memories, Qdrant defaults 67 MB after open / 157 MB after 200 hybrid searches,
# this layout 66 / 128 MB. 100k memories (int8 copies pinned, the rest as here): 137 MB after open,
# 283 after 200 searches, of which HNSW links 47 MB, int8 copies 77 MB, payload 25 MB; the defaults
# map the 300 MB of float vectors at open. 4-bit copies halve the int8 ones (19 MB per 100k vectors).
# Quality: dense R@10 against exact search at 10k 0.998 (floats) / 0.988 (int8) / 0.976 (4-bit);
# LoCoMo R@10 with the index built 0.741 (int8) / 0.746 (4-bit), 0.741 before.
# Searches do not rescore with the float vectors (Qdrant's default here): at 10k rescoring left
# dense R@10 unchanged, added 29 MB of touched pages and ~4 ms a search.
# An index build maps the pages of the segments it reads and writes: ~16 KB a memory (at 100k memories in one
# segment the import's build peaked at 1.97 GB RSS, 1.6 GB of it mapped store files). Segments of at most 25k
# memories bound what one build maps and how long it runs, whatever the collection's size (at 1M: 40 segments).
SEGMENT_POINTS = 25_000
COMPACT_LAYOUT = StorageLayout(
    vectors="cold",
    quantization="turbo4",
    quantized="cold",
    hnsw="cold",
    payload="cold",
    payload_indexes="cold",
    segment_points=SEGMENT_POINTS,
)


@dataclass(frozen=True)
class CollectionSpec:
    """A collection's name (its folder), its named dense vectors and the payload indexes every filtered field needs."""

    name: str
    indexes: tuple[IndexSpec, ...] = ()
    vectors: tuple[str, ...] = (DENSE,)
    layout: StorageLayout = StorageLayout()


def utc_now() -> datetime:
    """The current time, timezone-aware UTC (one place, so tests can reason about it)."""
    return datetime.now(UTC)


def iso(ts: datetime) -> str:
    """RFC 3339 UTC with a ``Z``: what Qdrant's datetime index parses."""
    # Not strftime: its %Y drops the leading zeros of years before 1000 on glibc, which no parser accepts.
    return ts.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


_MISSING = object()


def _differs(held: Any, expected: Value) -> bool:
    """Whether a payload value is not ``expected``: a missing key, another value, or the same value of another type
    (JSON and Python take ``True == 1``; a marker written ``True`` must not match a count of 1)."""
    return held is _MISSING or type(held) is not type(expected) or held != expected


@runtime_checkable
class IndexDropping(Protocol):
    """A collection that can tell whether it holds a payload index and drop it: an embedded store opened by its
    owner, which drops an index a newer spec no longer builds there (once what it was for is done)."""

    def payload_indexed(self, field: str) -> bool: ...

    def drop_payload_index(self, field: str) -> None: ...


class Collection(Protocol):
    """What the services use of a collection. ``lock`` serialises writes and read-modify-write sequences."""

    name: str
    vector_count: int
    lock: Any
    # Told how many points each accepted write changed (progress of long imports), or None.
    observer: Callable[[int], None] | None

    @property
    def local_reads(self) -> bool:
        """Whether a read is answered in this process, no round trip: a caller then reads first what could spare it
        work, rather than starting the work and overlapping the read with it."""
        ...

    def upsert(self, points: Sequence[PointInput]) -> None:
        """Insert or replace points; a plain vector is the ``dense`` one, a dict names each vector."""

    def upsert_unless(self, points: Sequence[PointInput], unless: Filter) -> str | None:
        """Under ``lock``: the id of a point ``unless`` matches (nothing written), or write ``points`` (None)."""
        ...

    def set_payload(self, point_id: str, payload: dict[str, Any]) -> None:
        """Set (merge) payload keys of one point."""

    def delete_payload(self, point_id: str, keys: Sequence[str]) -> None:
        """Remove payload keys of one point."""

    def update_vector(self, point_id: str, name: str, vector: Sequence[float]) -> None:
        """Replace one named vector of one point."""

    def update_if(
        self, point_id: str, vectors: Mapping[str, Sequence[float]], drop: Sequence[str], expect: Mapping[str, Value]
    ) -> bool:
        """Under ``lock``: if the point exists and its payload holds exactly ``expect``, replace ``vectors`` and
        remove the payload keys ``drop`` (True); otherwise write nothing (False)."""
        ...

    def delete(self, point_ids: Sequence[str]) -> None:
        """Delete points by id (unknown ids are ignored)."""

    def delete_by_filter(self, flt: Filter) -> None:
        """Delete every point the filter matches."""

    def retrieve(self, point_ids: Sequence[str], with_vector: Fields = False) -> list[StoredPoint]:
        """The points of these ids that exist, in the order asked, with their payloads (and ``with_vector``: all
        their vectors, or those named)."""
        ...

    def query(self, search: Search) -> list[StoredPoint]:
        """A scored search, best first."""
        ...

    def query_unless(self, search: Search, unless: Filter) -> tuple[str | None, list[StoredPoint]]:
        """(the id of a point ``unless`` matches, []), or (None, the search's points): one read, no lock."""
        ...

    def scroll(self, scroll: Scroll) -> tuple[list[StoredPoint], Any]:
        """One page of points and the offset of the next page (None at the end)."""
        ...

    def count(self, flt: Filter | None = None) -> int:
        """Exact number of points (matching ``flt``)."""
        ...

    def unindexed_count(self) -> int:
        """Points whose vectors are not in the HNSW index yet (searched by brute force)."""
        ...

    def optimize(self) -> None:
        """Index every unindexed vector now (blocking where the engine has no background optimizer)."""

    def index_if_needed(self, min_unindexed: int) -> float | None:
        """Build the index when at least ``min_unindexed`` points are unindexed; the seconds spent, or None."""
        ...

    def index_soon(self, min_unindexed: int) -> None:
        """Have the index built once at least ``min_unindexed`` points are unindexed, outside the caller's call
        where the engine allows it (the embedded store: once the collection is idle)."""

    def close(self) -> None:
        """Persist and release the collection."""


class Store(Protocol):
    """An identity's open store: its model record and its collections."""

    identity: str
    model_id: str
    dim: int

    @property
    def path(self) -> Path | str:
        """Where the store lives, for logs and ``inspect``."""
        ...

    def collection(self, spec: CollectionSpec) -> Collection:
        """The collection, opened (or created with its indexes) on first use."""
        ...

    def disk_bytes(self) -> int:
        """Bytes the store occupies on this machine's disks (0 when not ours to measure)."""
        ...

    def close(self) -> None:
        """Persist and release every collection."""


class WriteGate(Protocol):
    """Decides, before each write, whether the store may be written (free space, read-only media)."""

    def check_write(self, need_bytes: int = 0) -> None:
        """Raise an :class:`~..errors.AgentMemoryError` when this write must be refused."""

    def refusal(self, exc: OSError) -> Exception:
        """The error to answer for an OS error met while writing (no space, read-only filesystem)."""
        ...


class OpenGate:
    """The gate of a store that can always be written (a server decides for itself)."""

    def check_write(self, need_bytes: int = 0) -> None:
        """Allow every write."""

    def refusal(self, exc: OSError) -> Exception:
        """The OS error itself."""
        return exc


# The payload key holding a checksum of the rest of the payload: bytes changed on disk are detected
# when read back instead of being returned altered. Never shown to the services.
PAYLOAD_SUM = "_sum"


def payload_sum(payload: dict[str, Any]) -> str:
    """A checksum (BLAKE2b, 64 bits) of a payload's canonical JSON, without its own checksum key."""
    return _sum_of_body({k: v for k, v in payload.items() if k != PAYLOAD_SUM})


def _sum_of_body(body: dict[str, Any]) -> str:
    # payload_sum of a payload already without its checksum key (the read path has that copy at hand).
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=True)
    return hashlib.blake2b(canonical.encode(), digest_size=8).hexdigest()


def sealed(payload: dict[str, Any]) -> dict[str, Any]:
    """The payload as stored: the caller's keys and their checksum."""
    body = {k: v for k, v in payload.items() if k != PAYLOAD_SUM}
    body[PAYLOAD_SUM] = payload_sum(body)
    return body


def named_vectors(vec: Sequence[float] | dict[str, list[float]]) -> dict[str, list[float]]:
    """A point's vectors by name: a plain vector is the ``dense`` one."""
    return {k: list(v) for k, v in vec.items()} if isinstance(vec, dict) else {DENSE: list(vec)}


class _CollectionLock:
    """A re-entrant lock that runs the collection's pending journal purge when its outermost holder leaves.

    A service forgets inside one ``with coll.lock:`` (delete, then repair the neighbours that quoted
    the forgotten text): purging once at the end removes the deleted point's records and the
    neighbours' superseded ones together.
    """

    def __init__(self, on_release: Callable[[], None]) -> None:
        self._lock = threading.RLock()
        self._depth = 0
        self._on_release = on_release

    def __enter__(self) -> _CollectionLock:
        self._lock.acquire()
        self._depth += 1
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if self._depth == 1:
                self._on_release()
        finally:
            self._depth -= 1
            self._lock.release()


class BaseCollection(ABC):
    """The write path, the read checks and the index policy, once for every engine.

    A write: the gate allows it, the change is appended to the journal (when the store keeps one),
    then applied to the engine; an engine that refuses it has the journal record cut back. A read:
    every payload's checksum is checked; a payload that fails it is restored from the journal (and
    rewritten in the engine) or, with no journal copy, answered with ``store_damaged``.
    """

    journal: Journal | None = None
    # Payloads written whole with their checksum (read, merged, rewritten under ``lock``). A server
    # shared by several processes merges payload keys itself instead: a read-merge-write from here
    # could drop another process's keys, so there payloads carry no checksum.
    whole_payloads: bool = True
    # The embedded engine answers in this process (a server or another process's store overrides it).
    local_reads: bool = True

    def __init__(self, name: str, vector_count: int = 1, gate: WriteGate | None = None) -> None:
        self.name = name
        # Dense vectors per point: engines count indexed *vectors*, not points.
        self.vector_count = vector_count
        self.lock = _CollectionLock(self._leave_lock)
        # A delete happened in the current locked call: a payload rewritten in it (the neighbour whose context
        # quoted the forgotten text) must free its old copy as a deleted point, so the engine purge removes it.
        self._freed_in_call = False
        self.gate: WriteGate = gate or OpenGate()
        # Deleted points whose journal records are still to be purged, and live points whose payload was
        # replaced (their older records hold text they no longer have): purged when the lock is left.
        self._pending_purge: list[str] = []
        self._superseded: set[str] = set()
        self._purge_now = False
        self.repair_hint = "run `agent-memory repair`"
        # Told how many points each accepted write changed (the CLI draws import progress with it).
        self.observer: Callable[[int], None] | None = None

    # Engine primitives: one engine request each, no policy.

    @abstractmethod
    def _engine_upsert(self, points: list[NamedPoint]) -> None: ...

    def _engine_replace(self, points: list[NamedPoint], replaced: list[str]) -> None:
        """Write points of which ``replaced`` exist already (engines that must free the old copies say so)."""
        self._engine_upsert(points)

    @abstractmethod
    def _engine_overwrite_payload(self, point_id: str, payload: dict[str, Any]) -> None: ...

    def _engine_set_payload(self, point_id: str, payload: dict[str, Any]) -> None:
        """Merge payload keys in the engine (engines whose payloads are not written whole)."""
        raise NotImplementedError

    def _engine_delete_payload(self, point_id: str, keys: list[str]) -> None:
        """Remove payload keys in the engine (engines whose payloads are not written whole)."""
        raise NotImplementedError

    @abstractmethod
    def _engine_update_vector(self, point_id: str, name: str, vector: list[float]) -> None: ...

    @abstractmethod
    def _engine_delete(self, point_ids: list[str]) -> None: ...

    @abstractmethod
    def _engine_retrieve(self, point_ids: list[str], with_vector: Fields) -> list[StoredPoint]: ...

    @abstractmethod
    def _engine_query(self, search: Search) -> list[StoredPoint]: ...

    @abstractmethod
    def _engine_scroll(self, scroll: Scroll) -> tuple[list[StoredPoint], Any]: ...

    @abstractmethod
    def count(self, flt: Filter | None = None) -> int:
        """Exact number of points (matching ``flt``)."""

    @abstractmethod
    def unindexed_count(self) -> int:
        """Points whose vectors are not in the HNSW index yet (searched by brute force)."""

    @abstractmethod
    def optimize(self) -> None:
        """Index every unindexed vector now."""

    @abstractmethod
    def close(self) -> None:
        """Persist and release the collection."""

    def _after_write(self, changes: int) -> None:  # noqa: B027 - a hook with nothing to do by default
        """Called after each accepted write (the embedded store checkpoints its journal here)."""

    def _build_need(self) -> int:
        """Free bytes an index build needs beyond the gate's margin (0: not ours to measure)."""
        return 0

    def _engine_rewrite_point(self, point_id: str, payload: dict[str, Any]) -> None:
        """Replace a payload so that its old copy counts as deleted (engines whose purge needs that say so)."""
        self._engine_overwrite_payload(point_id, payload)

    def _engine_freed_text(self) -> None:  # noqa: B027 - a hook with nothing to do by default
        """Called when a write freed a payload (a delete, a point written again): the embedded store schedules
        the purge of the engine's freed pages."""

    def _engine_failure(self, exc: BaseException) -> BaseException:
        """The error to answer for an engine failure (the embedded store names damaged files)."""
        return exc

    # The write path.

    def _write(self, changes: list[Change], apply: Callable[[], None]) -> None:
        with self.lock:
            self.gate.check_write()
            mark = None
            if self.journal is not None:
                try:
                    mark = self.journal.append(changes)
                except OSError as exc:
                    raise self.gate.refusal(exc) from exc
            try:
                apply()
            except BaseException as exc:
                if mark is not None and self.journal is not None:
                    self.journal.rollback(mark, len(changes), changes)
                failure = self._engine_failure(exc)
                if failure is exc:
                    raise
                raise failure from exc
            self._after_write(len(changes))
        if self.observer is not None:
            self.observer(len(changes))

    def upsert(self, points: Sequence[PointInput]) -> None:
        """Insert or replace points; a plain vector is the ``dense`` one, a dict names each vector."""
        if not points:
            return
        seal = sealed if self.whole_payloads else dict
        batch = [(pid, named_vectors(vec), seal(payload)) for pid, vec, payload in points]
        changes = [Change("upsert", (pid,), payload, vecs) for pid, vecs, payload in batch]
        with self.lock:
            # A point written again (a plan overwritten, an item replaced): its older records go when the lock is left.
            journal = self.journal
            replaced = [pid for pid, _, _ in batch if journal is not None and journal.has(pid)]
            self._write(changes, lambda: self._engine_replace(batch, replaced))
            if replaced:
                self._superseded.update(replaced)
                self._purge_now = True
                self._engine_freed_text()

    def upsert_unless(self, points: Sequence[PointInput], unless: Filter) -> str | None:
        """Under ``lock``: the id of a point ``unless`` matches (nothing written), or write ``points`` (None).

        A check-then-write as one call: a process sharing the store sends it as one request, so the identity's
        lock is held only while the owner runs it, never across a round trip.
        """
        with self.lock:
            found, _ = self.scroll(Scroll(limit=1, filter=unless, with_payload=False))
            if found:
                return str(found[0].id)
            self.upsert(points)
            return None

    def update_if(
        self, point_id: str, vectors: Mapping[str, Sequence[float]], drop: Sequence[str], expect: Mapping[str, Value]
    ) -> bool:
        """Under ``lock``: if the point exists and its payload holds exactly ``expect``, replace ``vectors`` and
        remove the payload keys ``drop`` (True); otherwise write nothing (False).

        A check-then-write as one call, like :meth:`upsert_unless`: a derived vector written after the fact (a
        context vector's completion) is one request for a process sharing the store, run under the owner's lock,
        instead of a lock held across two round trips. The values compare with their types (``True`` is not ``1``).
        """
        with self.lock:
            found = self.retrieve([point_id])
            if not found:
                return False
            payload = found[0].payload or {}
            if any(_differs(payload.get(key, _MISSING), value) for key, value in expect.items()):
                return False
            for name, vector in vectors.items():
                self.update_vector(point_id, name, vector)
            if drop:
                self.delete_payload(point_id, drop)
            return True

    def query_unless(self, search: Search, unless: Filter) -> tuple[str | None, list[StoredPoint]]:
        """(the id of a point ``unless`` matches, []), or (None, the search's points).

        A store's early duplicate check and its nearest memories as one call: a process sharing the store sends
        them as one request (one round trip it waits for instead of two). No lock: both are reads, and the
        write checks ``unless`` again under the lock (:meth:`upsert_unless`).
        """
        found, _ = self.scroll(Scroll(limit=1, filter=unless, with_payload=False))
        if found:
            return str(found[0].id), []
        return None, self.query(search)

    def _rewrite_payload(self, point_id: str, edit: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        with self.lock:
            current = self.retrieve([point_id])
            if not current:
                # The engine answers for a missing point as it always has.
                self._engine_overwrite_payload(point_id, sealed(edit({})))
                return
            payload = sealed(edit(dict(current[0].payload or {})))
            freeing = self._freed_in_call
            apply = self._engine_rewrite_point if freeing else self._engine_overwrite_payload
            self._write([Change("payload", (point_id,), payload)], lambda: apply(point_id, payload))
            self._superseded.add(point_id)
            if freeing:
                self._engine_freed_text()

    def set_payload(self, point_id: str, payload: dict[str, Any]) -> None:
        """Set (merge) payload keys of one point."""
        if not self.whole_payloads:
            with self.lock:
                self.gate.check_write()
                self._engine_set_payload(point_id, payload)
            return
        self._rewrite_payload(point_id, lambda current: {**current, **payload})

    def delete_payload(self, point_id: str, keys: Sequence[str]) -> None:
        """Remove payload keys of one point."""
        if not self.whole_payloads:
            with self.lock:
                self.gate.check_write()
                self._engine_delete_payload(point_id, list(keys))
            return
        drop = set(keys)
        self._rewrite_payload(point_id, lambda current: {k: v for k, v in current.items() if k not in drop})

    def update_vector(self, point_id: str, name: str, vector: Sequence[float]) -> None:
        """Replace one named vector of one point."""
        vec = list(vector)
        self._write(
            [Change("vector", (point_id,), None, {name: vec})], lambda: self._engine_update_vector(point_id, name, vec)
        )

    def delete(self, point_ids: Sequence[str]) -> None:
        """Delete points by id (unknown ids are ignored); the journal keeps no copy of their records."""
        if not point_ids:
            return
        ids = [str(pid) for pid in point_ids]
        with self.lock:
            self._write([Change("delete", tuple(ids))], lambda: self._engine_delete(ids))
            if self.journal is not None:
                self._pending_purge.extend(ids)
            self._freed_in_call = True
            self._engine_freed_text()

    def _leave_lock(self) -> None:
        self._freed_in_call = False
        self._purge_pending()

    def _purge_pending(self, compact_all: bool = False) -> None:
        """Purge the journal records of deleted points, with the superseded records of points changed since."""
        due = self._pending_purge or self._purge_now or compact_all
        if self.journal is None or not due or not (self._pending_purge or self._superseded):
            return
        started = time.perf_counter()
        gone, compact = self._pending_purge, sorted(self._superseded)
        self._pending_purge, self._superseded, self._purge_now = [], set(), False
        try:
            removed = self.journal.purge(gone, compact)
        except OSError:
            logger.exception("journal purge failed", extra={"collection": self.name})
            return
        logger.debug(
            "journal purged",
            extra={"collection": self.name, "bytes": removed, "ms": (time.perf_counter() - started) * 1000},
        )

    def delete_by_filter(self, flt: Filter) -> None:
        """Delete every point the filter matches."""
        with self.lock:
            ids: list[str] = []
            offset = None
            while True:
                page, offset = self._engine_scroll(Scroll(offset=offset, limit=1024, filter=flt, with_payload=False))
                ids.extend(str(p.id) for p in page)
                if offset is None or not page:
                    break
            self.delete(ids)

    # The read path.

    def _checked(self, points: list[StoredPoint]) -> list[StoredPoint]:
        out = []
        for point in points:
            payload = point.payload
            if not payload or PAYLOAD_SUM not in payload:
                # A partial payload (with_payload=[...]) or one written before checksums.
                out.append(point)
                continue
            body = {k: v for k, v in payload.items() if k != PAYLOAD_SUM}
            if _sum_of_body(body) != payload[PAYLOAD_SUM]:
                restored = self._restore_payload(str(point.id))
                if restored is None:
                    continue  # deleted by a concurrent writer after it was read
                body = restored
            # Built directly: dataclasses.replace cost 12 us a point (recall checks 10 on every prompt).
            out.append(StoredPoint(point.id, body, point.score, point.vector, point.order_value))
        return out

    def _restore_payload(self, point_id: str) -> dict[str, Any] | None:
        """The intact payload of a point whose read failed its checksum; ``None`` when it is gone meanwhile."""
        from ..errors import StoreDamagedError

        # Reads take no lock, and the engine may show a reader a payload half overwritten by a
        # concurrent writer. Under the lock no write is in flight: a payload that passes its checksum
        # there was only read mid-write. Restoring outside the lock could also put back a copy older
        # than a write that landed meanwhile, losing that write.
        with self.lock:
            again = self._read(lambda: self._engine_retrieve([point_id], False))
            if not again:
                return None
            payload = dict(again[0].payload or {})
            if PAYLOAD_SUM not in payload or payload_sum(payload) == payload[PAYLOAD_SUM]:
                return {k: v for k, v in payload.items() if k != PAYLOAD_SUM}
            logger.error("payload failed its checksum", extra={"collection": self.name, "point": point_id})
            copy = self.journal.latest(point_id) if self.journal is not None else None
            if copy is None or copy[0] is None or payload_sum(copy[0]) != copy[0].get(PAYLOAD_SUM):
                raise StoreDamagedError(
                    f"the stored payload of {point_id} in collection {self.name!r} is damaged (its checksum does "
                    f"not match) and no intact copy exists; {self.repair_hint}"
                )
            payload = copy[0]
            try:
                self._engine_overwrite_payload(point_id, payload)
            except Exception:
                logger.exception("could not rewrite a restored payload", extra={"point": point_id})
        return {k: v for k, v in payload.items() if k != PAYLOAD_SUM}

    def _read(self, call: Callable[[], Any]) -> Any:
        try:
            return call()
        except BaseException as exc:
            failure = self._engine_failure(exc)
            if failure is exc:
                raise
            raise failure from exc

    def retrieve(self, point_ids: Sequence[str], with_vector: Fields = False) -> list[StoredPoint]:
        """The points of these ids that exist, in the order asked, with their payloads (and ``with_vector``: all
        their vectors, or those named)."""
        if not point_ids:
            return []
        ids = list(point_ids)
        found = self._checked(self._read(lambda: self._engine_retrieve(ids, with_vector)))
        if len({str(p.id) for p in found}) < len(set(ids)):
            # A point being written again (deleted, then inserted, under the lock: a plan overwritten, a payload
            # rewritten) is missing from a read taken meanwhile; a point is only reported missing once a read
            # under the lock, where no write is in flight, misses it too ("no plan with id ..." for a plan that
            # a concurrent plan_store was rewriting).
            with self.lock:
                found = self._checked(self._read(lambda: self._engine_retrieve(ids, with_vector)))
        return found

    def query(self, search: Search) -> list[StoredPoint]:
        """A scored search, best first."""
        return self._checked(self._read(lambda: self._engine_query(search)))

    def scroll(self, scroll: Scroll) -> tuple[list[StoredPoint], Any]:
        """One page of points and the offset of the next page (None at the end)."""
        records, offset = self._read(lambda: self._engine_scroll(scroll))
        return self._checked(records), offset

    def index_if_needed(self, min_unindexed: int) -> float | None:
        """Build the HNSW index when at least ``min_unindexed`` points are searched by brute force.

        Qdrant Edge has no background optimizer, and ``optimize()`` holds the process while it runs
        (seconds per 10k points), so callers invoke this at natural pauses: after a bulk import,
        or every few hundred single writes. Returns the seconds spent, or None when nothing was due
        (or the disk has no room for the build: searches stay exact, by brute force, until it has).
        """
        if not self._build_due(min_unindexed):
            return None
        started = time.perf_counter()
        with self.lock:
            self.optimize()
        spent = time.perf_counter() - started
        logger.info("index built", extra={"collection": self.name, "seconds": round(spent, 2)})
        return spent

    def _build_due(self, min_unindexed: int) -> bool:
        """Whether an index build is due: enough unindexed points, and room on the disk for the build (when
        there is none, the build is postponed with a warning and searches stay exact, by brute force)."""
        from ..errors import AgentMemoryError

        if self.unindexed_count() < min_unindexed:
            return False
        try:
            self.gate.check_write(self._build_need())
        except AgentMemoryError as exc:
            logger.warning("index build postponed", extra={"collection": self.name, "reason": str(exc)})
            return False
        return True

    def index_soon(self, min_unindexed: int) -> None:
        """Have the index built once at least ``min_unindexed`` points are unindexed (here: now, in the call;
        the embedded store overrides it to build once the collection is idle)."""
        self.index_if_needed(min_unindexed)


def open_with_other_model(identity: str, open_model: str, open_dim: int, model_id: str, dim: int) -> Exception:
    """The error for a second session that asks an already open store for another embedding model."""
    from ..errors import ModelMismatchError

    return ModelMismatchError(
        f"the store of identity {identity!r} is open in this process with model "
        f"{open_model!r} (dim {open_dim}); this session asks for {model_id!r} (dim {dim})"
    )
