"""Embedded storage: one private Qdrant Edge store per agent identity.

Layout of ``storage_root/<identity>/``::

    store.json      embedding model id and dimension the store was written with
    .lock           held (flock) by the one process that has the store open
    memories/       Qdrant Edge shard of long-term memories
    cache/          Qdrant Edge shard of working-memory items and blocks
    plans/          Qdrant Edge shard of cached plans

Each collection is its own shard so that its payload indexes and BM25 statistics
describe only its own records. Within a process there is one open handle per store,
shared by every session and thread (:func:`acquire_store` / :func:`release_store`);
another process that tries to open it gets :class:`StoreInUseError`.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import AgentMemoryError, ModelMismatchError, ReadOnlyStoreError, StoreDamagedError, StoreInUseError
from ..identity import validate_identity
from .contract import (
    COMPACT_LAYOUT,
    DENSE,
    PAYLOAD_SUM,
    SCHEMA_VERSION,
    BaseCollection,
    Collection,
    CollectionSpec,
    IndexSpec,
    MemoryTier,
    NamedPoint,
    StorageLayout,
    StoredPoint,
    iso,
    open_with_other_model,
    payload_sum,
    sealed,
    utc_now,
)
from .files import check_shard, open_no_follow, refuse_links, remove_interrupted_builds, sparse_copy_tree
from .journal import CHECKPOINT_EVERY, Change, Entry, Journal
from .memtrim import release_heap, release_mapped_pages
from .purge import DebouncedJob, PurgePolicy
from .space import DiskGate, allocated_bytes, is_read_only, open_need

# The contract's names are re-exported: callers that know only the embedded store import them from here.
__all__ = [
    "COMPACT_LAYOUT",
    "DENSE",
    "LOCK_FILE",
    "SCHEMA_VERSION",
    "STORE_META",
    "Collection",
    "CollectionSpec",
    "EdgeCollection",
    "IdentityStore",
    "IndexSpec",
    "StorageLayout",
    "StoredPoint",
    "acquire_store",
    "iso",
    "open_store_count",
    "release_store",
    "remove_store_files",
    "utc_now",
]

if TYPE_CHECKING:
    import qdrant_edge

logger = logging.getLogger(__name__)

STORE_META = "store.json"
LOCK_FILE = ".lock"
JOURNAL_DIR = "journal"


def _tier(tier: MemoryTier | None) -> qdrant_edge.Memory | None:
    import qdrant_edge as qe

    if tier is None:
        return None
    return {"pinned": qe.Memory.Pinned, "cached": qe.Memory.Cached, "cold": qe.Memory.Cold}[tier]


def _index_schema(spec: IndexSpec, tier: MemoryTier | None = None) -> Any:
    import qdrant_edge as qe

    memory = _tier(tier)
    if spec.kind == "text":
        return qe.TextIndexParams(
            tokenizer=qe.TokenizerType.Word,
            lowercase=True,
            stopwords=qe.Language.English,
            stemmer=qe.SnowballParams(qe.SnowballLanguage.English),
            scoring=True,
            memory=memory,
            enable_hnsw=spec.hnsw,
        )
    params: dict[str, Any] = {
        "keyword": qe.KeywordIndexParams,
        "datetime": qe.DatetimeIndexParams,
        "float": qe.FloatIndexParams,
        "integer": qe.IntegerIndexParams,
        "bool": qe.BoolIndexParams,
    }
    return params[spec.kind](memory=memory, enable_hnsw=spec.hnsw)


def _edge_config(spec: CollectionSpec, dim: int) -> qdrant_edge.EdgeConfig:
    import qdrant_edge as qe

    layout = spec.layout
    quantization: qdrant_edge.ScalarQuantizationConfig | qdrant_edge.TurboQuantQuantizationConfig | None = None
    if layout.quantization == "int8":
        quantization = qe.ScalarQuantizationConfig(
            type=qe.ScalarType.Int8, quantile=0.99, memory=_tier(layout.quantized)
        )
    elif layout.quantization is not None:
        bits = {"turbo4": qe.TurboQuantBitSize.Bits4, "turbo2": qe.TurboQuantBitSize.Bits2}[layout.quantization]
        quantization = qe.TurboQuantQuantizationConfig(bits=bits, memory=_tier(layout.quantized))
    hnsw = None
    if layout.hnsw is not None:
        # Qdrant's defaults for m, ef_construct and full_scan_threshold (KB); only the tier changes.
        hnsw = qe.HnswIndexConfig(m=16, ef_construct=100, full_scan_threshold=10_000, memory=_tier(layout.hnsw))
    vectors = {
        name: qe.EdgeVectorParams(
            size=dim,
            distance=qe.Distance.Cosine,
            memory=_tier(layout.vectors),
            quantization_config=quantization,
            hnsw_config=hnsw,
        )
        for name in spec.vectors
    }
    # Edge's vacuum rewrites a segment without its deleted points as soon as it holds one (see
    # EdgeCollection.purge_engine): a forgotten payload's freed pages keep its text until then.
    optimizers = qe.EdgeOptimizersConfig(deleted_threshold=VACUUM_DELETED_SHARE, vacuum_min_vector_number=1)
    # No Edge WAL: the journal is the log (and keeps no copy of a forgotten point's text).
    return qe.EdgeConfig(
        vectors=vectors, payload_memory=_tier(layout.payload), wal_enabled=False, optimizers=optimizers
    )


# Any deleted point makes its segment due for a vacuum (Qdrant's default waits for 20%).
VACUUM_DELETED_SHARE = 1e-9


def _vacuums(path: Path) -> bool:
    """Whether the shard was created with the vacuum setting (older shards get it from ``agent-memory repair``)."""
    try:
        optimizers = json.loads((path / "edge_config.json").read_text()).get("optimizers") or {}
        threshold = optimizers.get("deleted_threshold")
    except (OSError, ValueError, AttributeError):
        return False
    return isinstance(threshold, int | float) and threshold <= VACUUM_DELETED_SHARE


def _stored(point: Any) -> StoredPoint:
    return StoredPoint(
        id=point.id,
        payload=point.payload,
        score=float(getattr(point, "score", 0.0) or 0.0),
        vector=point.vector,
        order_value=point.order_value,
    )


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
    ) -> None:
        super().__init__(name, vector_count, gate)
        self.shard = shard
        self.path = path
        self.journal = journal
        self.repair_hint = repair_hint
        self._since_checkpoint = 0
        self.purge_policy = purge or PurgePolicy()
        policy = self.purge_policy
        self._engine_purge = DebouncedJob(name, self.purge_engine, policy.quiet_s, policy.max_wait_s, policy.idle_s)
        # A shard created before the vacuum setting would only build indexes early: it is purged by repair.
        self.vacuums = path is not None and _vacuums(path)

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
        self._engine_replace([(point_id, _vectors_of(found[0]), payload)], [point_id])

    def _engine_update_vector(self, point_id: str, name: str, vector: list[float]) -> None:
        import qdrant_edge as qe

        self.shard.update(qe.UpdateOperation.update_vectors([qe.PointVectors(point_id, {name: vector})]))

    def _engine_delete(self, point_ids: list[str]) -> None:
        import qdrant_edge as qe

        self.shard.update(qe.UpdateOperation.delete_points(list[Any](point_ids)))

    def _engine_retrieve(self, point_ids: list[str], with_vector: bool) -> list[StoredPoint]:
        return [
            _stored(p) for p in self.shard.retrieve(list[Any](point_ids), with_payload=True, with_vector=with_vector)
        ]

    def _engine_query(self, request: qdrant_edge.QueryRequest) -> list[StoredPoint]:
        return [_stored(p) for p in self.shard.query(request)]

    def _engine_scroll(self, request: qdrant_edge.ScrollRequest) -> tuple[list[StoredPoint], Any]:
        records, next_offset = self.shard.scroll(request)
        return [_stored(p) for p in records], next_offset

    def count(self, flt: qdrant_edge.Filter | None = None) -> int:
        """Exact number of points (matching ``flt``)."""
        import qdrant_edge as qe

        return int(self._read(lambda: self.shard.count(qe.CountRequest(filter=flt, exact=True))))

    def unindexed_count(self) -> int:
        """Points whose vectors are not in the HNSW index yet (searched by brute force)."""
        info = self.shard.info()
        return max(0, int(info.points_count) - int(info.indexed_vectors_count) // max(1, self.vector_count))

    def optimize(self) -> None:
        """Index every unindexed vector now (blocking: Edge runs no optimizer in the background)."""
        with self.lock:
            self.shard.optimize()
            self.persist()

    def _build_need(self) -> int:
        # Measured: an index build of 10k memories took the segments from 43 to 86 MB.
        return 2 * allocated_bytes(self.path / "segments") if self.path is not None else 0

    def _after_write(self, changes: int) -> None:
        # A purge waiting for the collection to be idle waits idle_s from this write on.
        self._engine_purge.touch()
        self._since_checkpoint += changes
        if self._since_checkpoint >= CHECKPOINT_EVERY:
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


def _repair_hint(identity: str) -> str:
    return f"run `agent-memory repair --identity {identity}` to rebuild it from its journal"


def _load_shard(path: Path, spec: CollectionSpec, dim: int, hint: str) -> qdrant_edge.EdgeShard:
    """Load (or create, without Edge's own WAL: the journal is the log) a shard; damage is an error, never a crash."""
    import qdrant_edge as qe

    try:
        if (path / "edge_config.json").exists():
            check_shard(path, hint)
            return qe.EdgeShard.load(str(path))
        return qe.EdgeShard.create(str(path), _edge_config(spec, dim))
    except AgentMemoryError:
        raise
    except BaseException as exc:
        if "WouldBlock" in str(exc):
            raise StoreInUseError(_in_use_message(path.parent)) from exc
        if isinstance(exc, KeyboardInterrupt | SystemExit | MemoryError):
            raise
        raise StoreDamagedError(f"the store files under {path} cannot be opened ({str(exc)[:300]}); {hint}") from exc


def _replay(coll: EdgeCollection, journal: Journal) -> int:
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


def _vectors_of(point: Any) -> dict[str, list[float]]:
    vectors = point.vector if isinstance(point.vector, dict) else {DENSE: point.vector}
    return {str(k): [float(x) for x in v] for k, v in vectors.items() if v is not None}


def _journal_from_engine(coll: EdgeCollection, journal: Journal) -> int:
    """Write the engine's points the journal lacks into it (a store from before journals, or a damaged journal).

    A payload whose checksum fails is not copied (it is damaged; the journal must not learn it).
    """
    import qdrant_edge as qe

    written = 0
    offset = None
    while True:
        page, offset = coll.shard.scroll(
            qe.ScrollRequest(offset=offset, limit=256, with_payload=True, with_vector=True)
        )
        changes = []
        for p in page:
            payload = dict(p.payload or {})
            if journal.has(str(p.id)) or (PAYLOAD_SUM in payload and payload_sum(payload) != payload[PAYLOAD_SUM]):
                continue
            changes.append(Change("upsert", (str(p.id),), sealed(payload), _vectors_of(p)))
        if changes:
            journal.append(changes)
            written += len(changes)
        if offset is None or not page:
            break
    journal.checkpoint()
    if written:
        logger.warning("journal completed from the engine's points", extra={"collection": coll.name, "points": written})
    return written


def _open_collection(store: IdentityStore, spec: CollectionSpec) -> EdgeCollection:
    import qdrant_edge as qe

    path = store.data_path / spec.name
    hint = _repair_hint(store.identity)
    refuse_links(path, store.data_path)
    refuse_links(store.data_path / JOURNAL_DIR / spec.name, store.data_path)
    gate = store.gate
    if not gate.read_only:
        remove_interrupted_builds(path)
        gate.check_open(open_need(path))
    shard = _load_shard(path, spec, store.dim, hint)
    journal = Journal(store.data_path / JOURNAL_DIR / spec.name, read_only=gate.read_only)
    coll = EdgeCollection(
        spec.name, shard, len(spec.vectors), path=path, gate=gate, journal=journal, repair_hint=hint, purge=store.purge
    )
    try:
        journal.open()
        if not gate.read_only:
            _replay(coll, journal)
            if coll.count() > journal.live_count:
                _journal_from_engine(coll, journal)
            existing = shard.info().payload_schema
            for index in spec.indexes:
                if index.field not in existing:
                    shard.update(
                        qe.UpdateOperation.create_field_index(
                            index.field, _index_schema(index, spec.layout.payload_indexes)
                        )
                    )
        engine = coll.count()
        if engine < journal.live_count:
            raise StoreDamagedError(
                f"collection {spec.name!r} of identity {store.identity!r} lost points: the engine holds {engine}, "
                f"its journal {journal.live_count} (last change #{journal.last_seq}); {hint}. "
                "Until then `agent-memory export` reads the journal"
            )
    except BaseException:
        try:
            shard.close()
        finally:
            journal.close()
        raise
    # Opening reads the appendable segment's 32 MB index pages: ~130 MB of file pages and ~55 MB of
    # freed heap per shard that serving never reads again.
    release_mapped_pages(path)
    release_heap()
    _warm_page_cache(path)
    return coll


_READAHEAD_STEP = 8 * 1024 * 1024


def _warm_page_cache(path: Path) -> None:
    """Ask the OS to read what searches touch into its page cache, without mapping it here.

    Cold tiers read on first touch: the first 50 searches of a fresh 100k process took 22 ms each
    (3,786 major faults) against 1 ms once read. Read ahead by the kernel, those pages cost no RSS
    until a search maps them. Skipped: the WAL, the float vectors searches never read (quantized
    copies are read instead), and sparse preallocated files.
    """
    if not hasattr(os, "posix_fadvise"):
        return
    for file in path.rglob("*"):
        parts = file.relative_to(path).parts
        if parts[0] == "wal" or not file.is_file():
            continue
        if any(p.startswith("vector_storage") for p in parts) and not file.name.startswith("quantized"):
            continue
        try:
            st = file.stat()
            if st.st_blocks * 512 < st.st_size // 2:
                continue
            fd = os.open(file, os.O_RDONLY)
        except OSError:
            continue
        try:
            # The kernel reads ahead at most 8 MiB per call.
            for offset in range(0, st.st_size, _READAHEAD_STEP):
                os.posix_fadvise(fd, offset, _READAHEAD_STEP, os.POSIX_FADV_WILLNEED)
        except OSError:
            pass
        finally:
            os.close(fd)


def _in_use_message(path: Path) -> str:
    return (
        f"the memory store {path} is in use by another process. An embedded store is private to "
        "one process; to share one identity's memory between processes, run a Qdrant server "
        "and point every process at it (config `storage: {backend: server, url: http://localhost:6333}`), "
        "or give each process its own agent_identity"
    )


@dataclass
class IdentityStore:
    """An identity's open store: its lock, its model record, its write gate and its collections.

    On read-only media the store is opened from a private copy (``data_path``, sparse files kept
    sparse) because Qdrant Edge cannot open files it may not write; every write answers ``read_only``.
    """

    identity: str
    path: Path
    model_id: str
    dim: int
    # Export reads records and embeds nothing: it takes the store's recorded model as its own, so a
    # store written by a model no longer configured (or installed) can still be exported.
    adopt_recorded_model: bool = False
    root: Path | None = None
    read_only: bool = False
    # When the engine purge after a forget runs (promptly, or once the collection is idle: see PurgePolicy).
    purge: PurgePolicy = field(default_factory=PurgePolicy)
    data_path: Path = field(default=Path())
    gate: DiskGate = field(default_factory=lambda: DiskGate(Path()))
    _lock_fd: int = -1
    _scratch: Path | None = None
    _collections: dict[str, EdgeCollection] = field(default_factory=dict)
    _guard: threading.Lock = field(default_factory=threading.Lock)

    def open(self) -> None:
        """Refuse links, take the process lock and check (or record) the embedding model."""
        root = self.root or self.path.parent
        refuse_links(self.path, root)
        if not self.path.exists():
            anchor = next(p for p in (self.path, *self.path.parents) if p.exists())
            if is_read_only(anchor):
                raise ReadOnlyStoreError(f"there is no memory store at {self.path} and {anchor} cannot be written")
            DiskGate(anchor).check_open(0)
            self.path.mkdir(parents=True, exist_ok=True)
        if not self.path.is_dir():
            raise StoreDamagedError(f"{self.path} is not a folder; an identity's store is a folder under {root}")
        self.read_only = self.read_only or is_read_only(self.path)
        self.data_path = self.path
        self.gate = DiskGate(self.path, read_only=self.read_only)
        if self.read_only:
            self._open_copy()
        else:
            self._lock()
        try:
            self._check_model()
        except BaseException:
            self._release()
            raise

    def _lock(self) -> None:
        lock = self.path / LOCK_FILE
        if lock.exists() and not lock.is_file():
            raise StoreDamagedError(f"{lock} is not a regular file; remove it (no process holds a store through it)")
        fd = open_no_follow(lock, os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            os.close(fd)
            raise StoreInUseError(_in_use_message(self.path)) from exc
        self._lock_fd = fd

    def _open_copy(self) -> None:
        import tempfile

        started = time.perf_counter()
        self._scratch = Path(tempfile.mkdtemp(prefix="agent-memory-ro-"))
        self.data_path = self._scratch / self.path.name
        copied = sparse_copy_tree(self.path, self.data_path, skip=frozenset({LOCK_FILE}))
        logger.info(
            "read-only store opened from a copy",
            extra={"path": str(self.path), "bytes": copied, "ms": round((time.perf_counter() - started) * 1000, 1)},
        )

    def _check_model(self) -> None:
        meta_path = self.data_path / STORE_META
        if meta_path.exists() or meta_path.is_symlink():
            meta = self._read_meta(meta_path)
            if self.adopt_recorded_model and "model_id" in meta:
                self.model_id, self.dim = str(meta["model_id"]), int(meta.get("dim", -1))
                return
            if meta.get("model_id") != self.model_id or int(meta.get("dim", -1)) != self.dim:
                raise ModelMismatchError(
                    f"the store of identity {self.identity!r} ({self.path}) was written with embedding "
                    f"model {meta.get('model_id')!r} (dim {meta.get('dim')}), but this session uses "
                    f"{self.model_id!r} (dim {self.dim}). Configure the store's model again, or re-embed the "
                    f"store with the new one: `agent-memory reindex --identity {self.identity} --config FILE` "
                    "(FILE names the new model; or by hand: `agent-memory export`, move the folder aside, "
                    "`agent-memory import` with the new model)"
                )
            return
        if self.read_only:
            return
        meta = {"model_id": self.model_id, "dim": self.dim, "schema": SCHEMA_VERSION, "created_at": iso(utc_now())}
        write_meta(self.path, meta)

    def _read_meta(self, meta_path: Path) -> dict[str, Any]:
        fd = open_no_follow(meta_path, os.O_RDONLY)
        try:
            with os.fdopen(fd, "rb") as fh:
                raw = fh.read(1 << 20)
            meta = json.loads(raw)
            if not isinstance(meta, dict):
                raise ValueError("not a JSON object")
        except (ValueError, UnicodeDecodeError) as exc:
            raise StoreDamagedError(
                f"{meta_path} is damaged ({exc}); it records the embedding model the store was written with. "
                f'Write it again as {{"model_id": "<model>", "dim": <dim>, "schema": {SCHEMA_VERSION}}} '
                "with the model the store was written with"
            ) from exc
        return meta

    def collection(self, spec: CollectionSpec) -> EdgeCollection:
        """The collection, opened (or created with its indexes) on first use."""
        with self._guard:
            coll = self._collections.get(spec.name)
            if coll is None:
                coll = _open_collection(self, spec)
                self._collections[spec.name] = coll
            return coll

    def journal_only(self, spec: CollectionSpec) -> Journal:
        """The collection's journal opened for reading, without the engine (export when the engine fails)."""
        journal = Journal(self.data_path / JOURNAL_DIR / spec.name, read_only=True)
        journal.open()
        return journal

    def journal_status(self) -> dict[str, dict[str, int]]:
        """Per open collection: points and last change of its journal, damaged records, bytes on disk."""
        with self._guard:
            colls = list(self._collections.values())
        out: dict[str, dict[str, int]] = {}
        for coll in colls:
            journal = coll.journal
            if journal is not None:
                out[coll.name] = {
                    "points": journal.live_count,
                    "last_change": journal.last_seq,
                    "damaged_records": journal.report.damaged,
                    "bytes": journal.bytes_on_disk(),
                }
        return out

    def disk_bytes(self) -> int:
        """Bytes on disk under the store's folder (allocated blocks, not apparent size)."""
        # Qdrant preallocates sparse files: their apparent size is ~300 MiB for an empty store.
        return allocated_bytes(self.path)

    def close(self) -> None:
        """Flush and close every collection, then release the process lock."""
        with self._guard:
            for coll in self._collections.values():
                try:
                    coll.close()
                except Exception:
                    logger.exception("closing collection failed", extra={"collection": coll.name})
            self._collections.clear()
            self._release()

    def _release(self) -> None:
        if self._lock_fd >= 0:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._lock_fd = -1
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None


def write_meta(path: Path, meta: dict[str, Any]) -> None:
    """Write ``store.json`` atomically (never through a link)."""
    meta_path = path / STORE_META
    tmp = meta_path.with_suffix(".tmp")
    fd = open_no_follow(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    with os.fdopen(fd, "w") as fh:
        fh.write(json.dumps(meta, indent=2))
    os.replace(tmp, meta_path)


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

    def _point(self, point_id: str, with_vector: bool) -> StoredPoint | None:
        assert self.journal is not None
        latest = self.journal.latest(point_id)
        if latest is None or latest[0] is None:
            return None
        return StoredPoint(id=point_id, payload=latest[0], vector=latest[1] if with_vector else None)

    def _engine_retrieve(self, point_ids: list[str], with_vector: bool) -> list[StoredPoint]:
        return [p for p in (self._point(pid, with_vector) for pid in point_ids) if p is not None]

    def _engine_query(self, request: qdrant_edge.QueryRequest) -> list[StoredPoint]:
        raise StoreDamagedError(f"collection {self.name!r} can only be exported while its engine is damaged")

    def _engine_scroll(self, request: qdrant_edge.ScrollRequest) -> tuple[list[StoredPoint], Any]:
        if request.filter is not None or request.order_by is not None:
            raise StoreDamagedError(f"collection {self.name!r} can only be exported while its engine is damaged")
        start = int(request.offset or 0)
        limit = int(request.limit or 10)
        page = self._engine_retrieve(self._ids[start : start + limit], bool(request.with_vector))
        nxt = start + limit if start + limit < len(self._ids) else None
        return page, nxt

    def count(self, flt: qdrant_edge.Filter | None = None) -> int:
        """Points the journal holds (no filter)."""
        return len(self._ids)

    def unindexed_count(self) -> int:
        """Nothing to index."""
        return 0

    def optimize(self) -> None:
        """Nothing to index."""

    def close(self) -> None:
        """Nothing to release (the journal was opened read-only)."""


def rebuild_collection(
    store: IdentityStore,
    spec: CollectionSpec,
    progress: Callable[[int], None] | None = None,
    on_total: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Rebuild a collection's engine files from its journal (``agent-memory repair``); what was done.

    The damaged shard is moved aside first and deleted once the rebuilt one holds every point the
    journal has. The rebuilt shard has no Edge WAL (an old-format shard is migrated this way).
    """
    import qdrant_edge as qe

    with store._guard:
        open_coll = store._collections.pop(spec.name, None)
    if open_coll is not None:
        open_coll.close()
    path = store.path / spec.name
    refuse_links(path, store.path)
    journal = Journal(store.path / JOURNAL_DIR / spec.name)
    # Repair reads and checks every segment, whatever the persisted index says.
    report = journal.open(full_scan=True)
    result: dict[str, Any] = {"collection": spec.name, "journal_points": journal.live_count}
    if report.records == 0:
        journal.close()
        return {**result, "rebuilt": False, "reason": "no journal"}
    if on_total is not None:
        on_total(report.records)
    store.gate.check_write(allocated_bytes(path) if path.exists() else 0)
    aside = store.path / f".{spec.name}.damaged"
    if aside.exists():
        shutil.rmtree(aside)
    if path.exists():
        path.rename(aside)
    started = time.perf_counter()
    shard = qe.EdgeShard.create(str(path), _edge_config(spec, store.dim))
    coll = EdgeCollection(spec.name, shard, len(spec.vectors), path=path, gate=store.gate)
    try:
        for index in spec.indexes:
            shard.update(
                qe.UpdateOperation.create_field_index(index.field, _index_schema(index, spec.layout.payload_indexes))
            )
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


@dataclass
class _Entry:
    store: IdentityStore
    refs: int = 0


_registry: dict[Path, _Entry] = {}
_registry_lock = threading.Lock()


def acquire_store(
    root: Path,
    identity: str,
    model_id: str,
    dim: int,
    *,
    adopt_recorded_model: bool = False,
    purge: PurgePolicy | None = None,
) -> IdentityStore:
    """The process's shared handle of ``root/identity``, opened on first acquire.

    ``adopt_recorded_model``: open the store whatever model wrote it (for export, which embeds nothing).
    ``purge``: when engine purges run (the first acquire's policy holds for the process).
    """
    # The identity becomes a folder name: refuse (never normalise) anything that could leave the root.
    # The root itself may be a link; nothing below it may be (see files.refuse_links).
    root = root.resolve()
    path = root / validate_identity(identity)
    with _registry_lock:
        entry = _registry.get(path)
        if entry is None:
            store = IdentityStore(
                identity=identity,
                path=path,
                model_id=model_id,
                dim=dim,
                adopt_recorded_model=adopt_recorded_model,
                root=root,
                purge=purge or PurgePolicy(),
            )
            store.open()
            entry = _Entry(store)
            _registry[path] = entry
        elif not adopt_recorded_model and (entry.store.model_id != model_id or entry.store.dim != dim):
            raise open_with_other_model(identity, entry.store.model_id, entry.store.dim, model_id, dim)
        entry.refs += 1
        return entry.store


def release_store(store: IdentityStore) -> None:
    """Drop one reference; the last one closes the store."""
    with _registry_lock:
        entry = _registry.get(store.path)
        if entry is None or entry.store is not store:
            return
        entry.refs -= 1
        if entry.refs <= 0:
            del _registry[store.path]
            store.close()


def open_store_count() -> int:
    """How many stores this process has open (for tests and ``inspect``)."""
    with _registry_lock:
        return len(_registry)


def remove_store_files(root: Path, identity: str) -> None:
    """Delete an identity's store folder (used by tests and ``agent-memory`` maintenance)."""
    shutil.rmtree(root / validate_identity(identity), ignore_errors=True)
