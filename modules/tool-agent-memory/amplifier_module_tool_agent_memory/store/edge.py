"""Embedded storage: one private Qdrant Edge store per agent identity, opened and locked.

Layout of ``storage_root/<identity>/``::

    store.json      embedding model id and dimension the store was written with
    .lock           held (store/filelock.py) by the one process that has the store open, its owner
    owner.json      how the other processes reach the owner (socket address, token; see :mod:`.sharing`)
    .sock           the owner's AF_UNIX socket (where the platform has one)
    memories/       Qdrant Edge shard of long-term memories
    cache/          Qdrant Edge shard of working-memory items and blocks
    plans/          Qdrant Edge shard of cached plans
    journal/        one journal per collection (see :mod:`.journal`)

Each collection is its own shard so that its payload indexes and BM25 statistics
describe only its own records. Within a process there is one open handle per store,
shared by every session and thread (:func:`acquire_store` / :func:`release_store`, kept in
:mod:`.registry`); another process that tries to open it gets :class:`StoreInUseError`, and
reaches it instead through the owner (:mod:`.sharing`).

The other jobs of the embedded store live beside this one: shard settings in
:mod:`.edge_settings`, the collection in :mod:`.edge_collection`, journal replay and rebuild
in :mod:`.rebuild`.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import AgentMemoryError, ModelMismatchError, ReadOnlyStoreError, StoreDamagedError, StoreInUseError
from ..identity import validate_identity
from .contract import (
    SCHEMA_VERSION,
    CollectionSpec,
    iso,
    open_with_other_model,
    utc_now,
)
from .edge_collection import EdgeCollection
from .edge_settings import apply_search_threads, create_index_operation, edge_config, search_threads
from .filelock import try_lock, unlock
from .files import check_shard, open_no_follow, refuse_links, remove_interrupted_builds, sparse_copy_tree
from .journal import Journal
from .memtrim import release_heap, release_mapped_pages
from .purge import PurgePolicy
from .rebuild import journal_from_engine, rebuild_shard, replay_into, replay_journal
from .registry import STORES
from .space import DiskGate, allocated_bytes, is_read_only, open_need

if TYPE_CHECKING:
    import qdrant_edge

logger = logging.getLogger(__name__)

STORE_META = "store.json"
LOCK_FILE = ".lock"
JOURNAL_DIR = "journal"


def _repair_hint(identity: str) -> str:
    return f"run `agent-memory repair --identity {identity}` to rebuild it from its journal"


def _load_shard(
    path: Path, spec: CollectionSpec, dim: int, hint: str, threads: int | None
) -> qdrant_edge.EdgeShard:
    """Load (or create, without Edge's own WAL: the journal is the log) a shard with a search pool of ``threads``
    (``None``: Edge's own size); damage is an error, never a crash."""
    import qdrant_edge as qe

    try:
        if (path / "edge_config.json").exists():
            check_shard(path, hint)
            apply_search_threads(path, threads)
            return qe.EdgeShard.load(str(path))
        return qe.EdgeShard.create(str(path), edge_config(spec, dim, threads))
    except AgentMemoryError:
        raise
    except BaseException as exc:
        if "WouldBlock" in str(exc):
            raise StoreInUseError(_in_use_message(path.parent)) from exc
        if isinstance(exc, KeyboardInterrupt | SystemExit | MemoryError):
            raise
        raise StoreDamagedError(f"the store files under {path} cannot be opened ({str(exc)[:300]}); {hint}") from exc


def _open_collection(store: IdentityStore, spec: CollectionSpec) -> EdgeCollection:
    path = store.data_path / spec.name
    hint = _repair_hint(store.identity)
    refuse_links(path, store.data_path)
    refuse_links(store.data_path / JOURNAL_DIR / spec.name, store.data_path)
    gate = store.gate
    if not gate.read_only:
        remove_interrupted_builds(path)
        gate.check_open(open_need(path))
    shard = _load_shard(path, spec, store.dim, hint, search_threads(store.search_threads))
    journal = Journal(store.data_path / JOURNAL_DIR / spec.name, read_only=gate.read_only)
    coll = EdgeCollection(
        spec.name,
        shard,
        len(spec.vectors),
        path=path,
        gate=gate,
        journal=journal,
        repair_hint=hint,
        purge=store.purge,
        replay=replay_into,
    )
    try:
        journal.open()
        if not gate.read_only:
            replay_journal(coll, journal)
            if coll.count() > journal.live_count:
                journal_from_engine(coll, journal)
            existing = shard.info().payload_schema
            # An index the spec keeps for the server only is not built; one an older version built stays until
            # its owner drops it (memory/context_vectors.py: used once to repair, then dropped).
            for index in spec.indexes:
                if index.embedded and index.field not in existing:
                    shard.update(create_index_operation(spec, index))
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
        f"the memory store {path} is in use by another process. Sessions, CLI commands and MCP servers "
        "share it (the first one serves the others), but `agent-memory repair` and `reindex` need it alone: "
        "stop the other processes of this identity first. Across machines, point every process at a Qdrant "
        "server (config `storage: {backend: server, url: http://localhost:6333}`)"
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
    # Each shard's search pool size (None: edge_settings.SEARCH_THREADS; 0: Qdrant Edge's own).
    search_threads: int | None = None
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
        if not try_lock(fd):
            os.close(fd)
            raise StoreInUseError(_in_use_message(self.path))
        self._lock_fd = fd

    def _open_copy(self) -> None:
        import tempfile

        started = time.perf_counter()
        self._scratch = Path(tempfile.mkdtemp(prefix="agent-memory-ro-"))
        self.data_path = self._scratch / self.path.name
        copied = sparse_copy_tree(self.path, self.data_path, skip=frozenset({LOCK_FILE, "owner.json"}))
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
            unlock(self._lock_fd)
            os.close(self._lock_fd)
            self._lock_fd = -1
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None

    def detach(self, name: str) -> None:
        """Close one open collection and forget it (repair rebuilds its files; the next use opens it again)."""
        with self._guard:
            coll = self._collections.pop(name, None)
        if coll is not None:
            coll.close()


def write_meta(path: Path, meta: dict[str, Any]) -> None:
    """Write ``store.json`` atomically (never through a link)."""
    meta_path = path / STORE_META
    tmp = meta_path.with_suffix(".tmp")
    fd = open_no_follow(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    with os.fdopen(fd, "w") as fh:
        fh.write(json.dumps(meta, indent=2))
    os.replace(tmp, meta_path)


def rebuild_collection(
    store: IdentityStore,
    spec: CollectionSpec,
    progress: Callable[[int], None] | None = None,
    on_total: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Rebuild a collection's engine files from its journal (``agent-memory repair``); what was done."""
    store.detach(spec.name)
    path = store.path / spec.name
    refuse_links(path, store.path)
    return rebuild_shard(path, store.path / JOURNAL_DIR / spec.name, spec, store.dim, store.gate, progress, on_total)


def acquire_store(
    root: Path,
    identity: str,
    model_id: str,
    dim: int,
    *,
    adopt_recorded_model: bool = False,
    purge: PurgePolicy | None = None,
    search_threads: int | None = None,
) -> IdentityStore:
    """The process's shared handle of ``root/identity``, opened on first acquire.

    ``adopt_recorded_model``: open the store whatever model wrote it (for export, which embeds nothing).
    ``purge``: when engine purges run (the first acquire's policy holds for the process).
    ``search_threads``: each shard's search pool size (see :func:`.edge_settings.search_threads`; the first
    acquire's holds).
    """
    # The identity becomes a folder name: refuse (never normalise) anything that could leave the root.
    # The root itself may be a link; nothing below it may be (see files.refuse_links).
    root = root.resolve()
    path = root / validate_identity(identity)

    def open_store() -> IdentityStore:
        store = IdentityStore(
            identity=identity,
            path=path,
            model_id=model_id,
            dim=dim,
            adopt_recorded_model=adopt_recorded_model,
            root=root,
            purge=purge or PurgePolicy(),
            search_threads=search_threads,
        )
        store.open()
        return store

    def reuse(store: IdentityStore) -> None:
        if not adopt_recorded_model and (store.model_id != model_id or store.dim != dim):
            raise open_with_other_model(identity, store.model_id, store.dim, model_id, dim)

    return STORES.acquire(("edge", path), open_store, IdentityStore.close, reuse)


def release_store(store: IdentityStore) -> None:
    """Drop one reference; the last one closes the store."""
    STORES.release(store)


def open_store_count() -> int:
    """How many embedded stores this process has open (for tests and ``inspect``)."""
    return STORES.count("edge")


def delete_store(root: Path, identity: str) -> int:
    """Delete an identity's embedded store for good, holding its lock; the bytes it occupied (0: none there).

    Refused (:class:`StoreInUseError`) while any process, this one included, has the store open.
    """
    root = root.resolve()
    path = root / validate_identity(identity)
    if not path.exists():
        return 0
    refuse_links(path, root)
    if STORES.is_open(("edge", path)):
        raise StoreInUseError(f"the memory store {path} is open in this process; end its sessions first")
    fd = open_no_follow(path / LOCK_FILE, os.O_RDWR | os.O_CREAT)
    try:
        if not try_lock(fd):
            raise StoreInUseError(_in_use_message(path))
        size = allocated_bytes(path)
        # Moved aside first (one rename): a crash mid-delete leaves no half store under the identity's name.
        aside = root / f".{path.name}.deleting"
        shutil.rmtree(aside, ignore_errors=True)
        path.rename(aside)
        shutil.rmtree(aside)
    finally:
        os.close(fd)
    logger.info("store deleted", extra={"identity": identity, "bytes": size})
    return size


def remove_store_files(root: Path, identity: str) -> None:
    """Delete an identity's store folder (used by tests and ``agent-memory`` maintenance)."""
    shutil.rmtree(root / validate_identity(identity), ignore_errors=True)
