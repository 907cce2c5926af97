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
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ModelMismatchError, StoreInUseError
from ..identity import validate_identity
from .contract import (
    COMPACT_LAYOUT,
    DENSE,
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
    utc_now,
)
from .memtrim import release_heap, release_mapped_pages

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
    return qe.EdgeConfig(vectors=vectors, payload_memory=_tier(layout.payload))


def _stored(point: Any) -> StoredPoint:
    return StoredPoint(
        id=point.id,
        payload=point.payload,
        score=float(getattr(point, "score", 0.0) or 0.0),
        vector=point.vector,
        order_value=point.order_value,
    )


class EdgeCollection(BaseCollection):
    """One Qdrant Edge shard."""

    def __init__(self, name: str, shard: qdrant_edge.EdgeShard, vector_count: int = 1) -> None:
        super().__init__(name, vector_count)
        self.shard = shard

    def _update(self, operation: qdrant_edge.UpdateOperation) -> None:
        self.shard.update(operation)

    def _engine_upsert(self, points: list[NamedPoint]) -> None:
        import qdrant_edge as qe

        self._update(
            qe.UpdateOperation.upsert_points([qe.Point(pid, dict(vecs), payload) for pid, vecs, payload in points])
        )

    def _engine_set_payload(self, point_id: str, payload: dict[str, Any]) -> None:
        import qdrant_edge as qe

        self._update(qe.UpdateOperation.set_payload([point_id], payload))

    def _engine_delete_payload(self, point_id: str, keys: list[str]) -> None:
        import qdrant_edge as qe

        self._update(qe.UpdateOperation.delete_payload([point_id], keys))

    def _engine_update_vector(self, point_id: str, name: str, vector: list[float]) -> None:
        import qdrant_edge as qe

        self._update(qe.UpdateOperation.update_vectors([qe.PointVectors(point_id, {name: vector})]))

    def _engine_delete(self, point_ids: list[str]) -> None:
        import qdrant_edge as qe

        self._update(qe.UpdateOperation.delete_points(list[Any](point_ids)))

    def _engine_delete_by_filter(self, flt: qdrant_edge.Filter) -> None:
        import qdrant_edge as qe

        self._update(qe.UpdateOperation.delete_points_by_filter(flt))

    def _engine_retrieve(self, point_ids: list[str], with_vector: bool) -> list[StoredPoint]:
        return [_stored(p) for p in self.shard.retrieve(list[Any](point_ids), with_payload=True, with_vector=with_vector)]

    def query(self, request: qdrant_edge.QueryRequest) -> list[StoredPoint]:
        """A scored search."""
        return [_stored(p) for p in self.shard.query(request)]

    def scroll(self, request: qdrant_edge.ScrollRequest) -> tuple[list[StoredPoint], Any]:
        """One page of points and the offset of the next page (None at the end)."""
        records, next_offset = self.shard.scroll(request)
        return [_stored(p) for p in records], next_offset

    def count(self, flt: qdrant_edge.Filter | None = None) -> int:
        """Exact number of points (matching ``flt``)."""
        import qdrant_edge as qe

        return int(self.shard.count(qe.CountRequest(filter=flt, exact=True)))

    def unindexed_count(self) -> int:
        """Points whose vectors are not in the HNSW index yet (searched by brute force)."""
        info = self.shard.info()
        return max(0, int(info.points_count) - int(info.indexed_vectors_count) // max(1, self.vector_count))

    def optimize(self) -> None:
        """Index every unindexed vector now (blocking: Edge runs no optimizer in the background)."""
        self.shard.optimize()

    def close(self) -> None:
        """Flush and close the shard."""
        with self.lock:
            try:
                self.shard.flush()
            finally:
                self.shard.close()


def _open_shard(path: Path, spec: CollectionSpec, dim: int) -> qdrant_edge.EdgeShard:
    import qdrant_edge as qe

    try:
        if (path / "edge_config.json").exists():
            shard = qe.EdgeShard.load(str(path))
        else:
            shard = qe.EdgeShard.create(str(path), _edge_config(spec, dim))
    except Exception as exc:
        if "WouldBlock" in str(exc):
            raise StoreInUseError(_in_use_message(path.parent)) from exc
        raise
    existing = shard.info().payload_schema
    for index in spec.indexes:
        if index.field not in existing:
            shard.update(
                qe.UpdateOperation.create_field_index(index.field, _index_schema(index, spec.layout.payload_indexes))
            )
    # Opening replays the WAL and reads the appendable segment's 32 MB index pages: ~130 MB of
    # file pages and ~55 MB of freed heap per shard that serving never reads again.
    release_mapped_pages(path)
    release_heap()
    _warm_page_cache(path)
    return shard


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
    """An identity's open store: its lock, its model record and its collections."""

    identity: str
    path: Path
    model_id: str
    dim: int
    # Export reads records and embeds nothing: it takes the store's recorded model as its own, so a
    # store written by a model no longer configured (or installed) can still be exported.
    adopt_recorded_model: bool = False
    _lock_fd: int = -1
    _collections: dict[str, EdgeCollection] = field(default_factory=dict)
    _guard: threading.Lock = field(default_factory=threading.Lock)

    def open(self) -> None:
        """Take the process lock and check (or record) the embedding model."""
        self.path.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            os.close(fd)
            raise StoreInUseError(_in_use_message(self.path)) from exc
        self._lock_fd = fd
        try:
            self._check_model()
        except Exception:
            self._unlock()
            raise

    def _check_model(self) -> None:
        meta_path = self.path / STORE_META
        if meta_path.exists():
            meta = json.loads(meta_path.read_text())
            if self.adopt_recorded_model and "model_id" in meta:
                self.model_id, self.dim = str(meta["model_id"]), int(meta.get("dim", -1))
                return
            if meta.get("model_id") != self.model_id or int(meta.get("dim", -1)) != self.dim:
                raise ModelMismatchError(
                    f"the store of identity {self.identity!r} ({self.path}) was written with embedding "
                    f"model {meta.get('model_id')!r} (dim {meta.get('dim')}), but this session uses "
                    f"{self.model_id!r} (dim {self.dim}). Configure the store's model again, or reindex: "
                    f"`agent-memory export --identity {self.identity} > memories.jsonl`, move {self.path} "
                    "aside, then `agent-memory import memories.jsonl` with the new model"
                )
            return
        meta = {"model_id": self.model_id, "dim": self.dim, "schema": SCHEMA_VERSION, "created_at": iso(utc_now())}
        tmp = meta_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(meta, indent=2))
        tmp.replace(meta_path)

    def collection(self, spec: CollectionSpec) -> EdgeCollection:
        """The collection, opened (or created with its indexes) on first use."""
        with self._guard:
            coll = self._collections.get(spec.name)
            if coll is None:
                shard = _open_shard(self.path / spec.name, spec, self.dim)
                coll = EdgeCollection(spec.name, shard, len(spec.vectors))
                self._collections[spec.name] = coll
            return coll

    def disk_bytes(self) -> int:
        """Bytes on disk under the store's folder (allocated blocks, not apparent size)."""
        total = 0
        for root, _dirs, files in os.walk(self.path):
            for name in files:
                try:
                    # Qdrant preallocates sparse files: their apparent size is ~300 MiB for an empty store.
                    total += os.stat(os.path.join(root, name)).st_blocks * 512
                except OSError:
                    continue
        return total

    def close(self) -> None:
        """Flush and close every collection, then release the process lock."""
        with self._guard:
            for coll in self._collections.values():
                try:
                    coll.close()
                except Exception:
                    logger.exception("closing collection failed", extra={"collection": coll.name})
            self._collections.clear()
            self._unlock()

    def _unlock(self) -> None:
        if self._lock_fd >= 0:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._lock_fd = -1


@dataclass
class _Entry:
    store: IdentityStore
    refs: int = 0


_registry: dict[Path, _Entry] = {}
_registry_lock = threading.Lock()


def acquire_store(
    root: Path, identity: str, model_id: str, dim: int, *, adopt_recorded_model: bool = False
) -> IdentityStore:
    """The process's shared handle of ``root/identity``, opened on first acquire.

    ``adopt_recorded_model``: open the store whatever model wrote it (for export, which embeds nothing).
    """
    # The identity becomes a folder name: refuse (never normalise) anything that could leave the root.
    path = (root / validate_identity(identity)).resolve()
    with _registry_lock:
        entry = _registry.get(path)
        if entry is None:
            store = IdentityStore(
                identity=identity, path=path, model_id=model_id, dim=dim, adopt_recorded_model=adopt_recorded_model
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
