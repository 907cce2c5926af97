"""Several processes on one identity's embedded store: one owner, the others its clients, handover on exit.

Qdrant Edge opens a shard in one process only. The first process that needs an identity's store
takes its lock and opens it, as before, and becomes its *owner*: it also serves the other
processes of that identity (:mod:`.owner`). A process that finds the lock taken reads
``owner.json`` and sends its collection calls there (:class:`SharedCollection`). When the owner
exits, or dies (SIGKILL included: the OS drops its lock and closes its sockets), each client's
next call finds its connection gone; the first to take the lock opens the store, which replays the
journal of every write the old owner acknowledged, and publishes itself; the others connect to it
and repeat the call they were making. Every call a client can repeat is idempotent (an upsert
carries its id, a payload merge or delete gives the same result twice), and a client that held a
collection lock takes it again on the new owner first. Why this design and what it costs:
docs/sharing.md.

Only what is shared goes through the owner: each process embeds its own texts and keeps its own
sessions, so a session's state (its cache scopes' views, its memory thread) stays in its process.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ModelMismatchError, StoreInUseError
from ..identity import validate_identity
from . import query_wire, wire
from .contract import (
    BaseCollection,
    Collection,
    CollectionSpec,
    PointInput,
    StoredPoint,
    named_vectors,
    open_with_other_model,
)
from .edge import IdentityStore, acquire_store, release_store
from .owner import OwnerServer, connect, read_owner
from .purge import PurgePolicy
from .query import Fields, fields
from .registry import STORES
from .space import allocated_bytes

if TYPE_CHECKING:
    import socket

    from .query import Filter, Scroll, Search, Value

logger = logging.getLogger(__name__)

# How long a call waits for an owner: one that is opening the store (seconds at 100k memories), or the
# next one after the owner exited. Past it the lock's holder is taken not to share (an older version of
# this module, or `agent-memory repair`, which needs the store alone).
OWNER_WAIT_S = 30.0
_RETRY_S = 0.05


def _no_owner_message(path: Path, waited: float) -> str:
    return (
        f"the memory store {path} is in use by another process that does not share it (waited {waited:.1f} s): "
        "an agent-memory of another version (processes sharing one identity must run the same one), or a "
        "maintenance command "
        "(`agent-memory repair`, `reindex`) that needs the store alone. Let it finish or stop it; across "
        "machines, point every process at a Qdrant server (config `storage: {backend: server, url: ...}`)"
    )


@dataclass
class _Held:
    """A collection lock this thread holds: how deep, and in which role of the store (its generation)."""

    depth: int = 0
    generation: int = -1
    local: BaseCollection | None = None


@dataclass
class _Conn:
    sock: socket.socket
    generation: int
    opened: set[str] = field(default_factory=set)
    # Answers still to read of requests sent without waiting (an unlock): read before the next answer.
    unread: int = 0


# Writes that answer nothing: made under a collection lock this thread holds at the owner, they go with its next
# request (SharedStore._defer).
DEFERRED_WRITES = frozenset({"update_vector", "delete_payload", "set_payload"})

# A call waiting to go with the thread's next request: (its collection, the request).
_Op = tuple["SharedCollection | None", dict[str, Any]]


class SharedStore:
    """An identity's embedded store as one process sees it, whether it owns the store or another does."""

    def __init__(
        self,
        root: Path,
        identity: str,
        model_id: str,
        dim: int,
        *,
        adopt_recorded_model: bool = False,
        purge: PurgePolicy | None = None,
        wait_s: float = OWNER_WAIT_S,
        search_threads: int | None = None,
    ) -> None:
        self.root = root
        self.identity = identity
        self.model_id = model_id
        self.dim = dim
        self.adopt_recorded_model = adopt_recorded_model
        self.purge = purge or PurgePolicy()
        self.wait_s = wait_s
        self.search_threads = search_threads
        self._path = root / validate_identity(identity)
        self._local: IdentityStore | None = None
        self._server: OwnerServer | None = None
        self._owner: dict[str, Any] | None = None
        # Bumped each time this process (re)joins the store: a connection or a lock of an older one is void.
        self._generation = 0
        self._join_lock = threading.RLock()
        self._tls = threading.local()
        self._conns: list[_Conn] = []
        self._conns_lock = threading.Lock()
        self._colls: dict[str, SharedCollection] = {}
        self._closed = False
        self._joined = False
        # Called when this process takes the store over from an owner that ended, or a process it served leaves:
        # what the other process left half done (a context vector it had not written yet) is finished here.
        self._takeover_hooks: list[Callable[[], None]] = []
        self._hooks_lock = threading.Lock()
        self._hooks_due = False
        self._hooks_running = False

    def join(self) -> None:
        """Become the owner or a client of the store, once (may wait up to ``wait_s`` for an owner)."""
        with self._join_lock:
            if not self._joined:
                self._join(None)
                self._joined = True

    # The Store protocol

    @property
    def path(self) -> Path:
        """The identity's store folder."""
        return self._path

    @property
    def is_owner(self) -> bool:
        """Whether this process holds the store (and serves the others)."""
        return self._local is not None

    @property
    def local_store(self) -> IdentityStore | None:
        """The open store when this process owns it (maintenance commands use it directly)."""
        return self._local

    @property
    def read_only(self) -> bool:
        """Whether the store is on read-only media (then each process reads its own copy)."""
        return self._local is not None and self._local.read_only

    def collection(self, spec: CollectionSpec) -> Collection:
        """The collection, opened on first use (by the owner, wherever it runs).

        The owner's sessions get its own collection: a process owns its store until it closes it. A
        client's get a :class:`SharedCollection`, which runs locally once this process takes over.
        """
        local = self._local
        if local is not None:
            return local.collection(spec)
        with self._join_lock:
            coll = self._colls.get(spec.name)
            if coll is None:
                coll = SharedCollection(self, spec)
                self._colls[spec.name] = coll
        return coll

    def disk_bytes(self) -> int:
        """Bytes on disk under the store's folder (the same disk, whichever process owns it)."""
        return allocated_bytes(self._path)

    def journal_status(self) -> dict[str, dict[str, int]]:
        """The owner's journal status of its open collections."""
        local = self._local
        if local is not None:
            return local.journal_status()
        result: dict[str, dict[str, int]] = self._call(None, "journal_status", lambda: {}, lambda s: s.journal_status())
        return result

    def close(self) -> None:
        """Hand the store over (owner) or leave it (client)."""
        with self._join_lock:
            self._closed = True
            self._leave()

    def on_takeover(self, hook: Callable[[], None]) -> Callable[[], None]:
        """Run ``hook`` (on a background thread) each time this process becomes the owner after another one ended,
        and each time a process it serves leaves (dead or not); returns what removes it."""
        with self._hooks_lock:
            self._takeover_hooks.append(hook)

        def remove() -> None:
            with self._hooks_lock, contextlib.suppress(ValueError):
                self._takeover_hooks.remove(hook)

        return remove

    def _taken_over(self) -> None:
        """Run the hooks on a thread; several calls while they run (a leaving process closes a connection per
        thread) run them once more after, not once each."""
        with self._hooks_lock:
            if self._hooks_due:
                return
            self._hooks_due = True
            if self._hooks_running:
                return
            self._hooks_running = True
        threading.Thread(target=self._run_hooks, name="agent-memory-takeover", daemon=True).start()

    def _run_hooks(self) -> None:
        while True:
            with self._hooks_lock:
                if not self._hooks_due or self._closed:
                    self._hooks_running = False
                    return
                self._hooks_due = False
                hooks = list(self._takeover_hooks)
            for hook in hooks:
                try:
                    hook()
                except Exception:
                    logger.warning("finishing what another process of the store left failed", exc_info=True)

    # Joining: owner or client

    def _join(self, failed_generation: int | None) -> None:
        """Become the owner or a client of the store; ``failed_generation``: the role that just failed."""
        with self._join_lock:
            if self._closed:
                raise StoreInUseError(f"the memory store {self._path} was closed in this process")
            if failed_generation is not None and failed_generation != self._generation:
                return  # another thread of this process has joined again meanwhile
            self._leave()
            started = time.monotonic()
            while True:
                if self._try_own():
                    break
                if self._try_client():
                    break
                waited = time.monotonic() - started
                if waited > self.wait_s:
                    raise StoreInUseError(_no_owner_message(self._path, waited))
                time.sleep(_RETRY_S)
            self._generation += 1
            if failed_generation is not None and self.is_owner:
                self._taken_over()
            logger.info(
                "joined a shared store",
                extra={
                    "path": str(self._path),
                    "owner": self.is_owner,
                    "ms": round((time.monotonic() - started) * 1000),
                },
            )

    def _try_own(self) -> bool:
        try:
            local = acquire_store(
                self.root,
                self.identity,
                self.model_id,
                self.dim,
                adopt_recorded_model=self.adopt_recorded_model,
                purge=self.purge,
                search_threads=self.search_threads,
            )
        except StoreInUseError:
            return False
        self._local = local
        self.model_id, self.dim = local.model_id, local.dim
        if local.read_only:
            return True  # each process reads its own copy: nothing to serve
        server = OwnerServer(
            local.path,
            local.collection,
            {"model_id": local.model_id, "dim": local.dim},
            {"journal_status": local.journal_status},
            peer_left=self._taken_over,
        )
        try:
            server.start()
        except BaseException:
            release_store(local)
            self._local = None
            raise
        self._server = server
        return True

    def _try_client(self) -> bool:
        info = read_owner(self._path)
        if info is None:
            return False
        try:
            sock = connect(info)
        except OSError:
            return False
        try:
            wire.send(sock, {"token": info["token"], "protocol": wire.PROTOCOL})
            answer = wire.receive(sock)
        except wire.ConnectionLost:
            sock.close()
            return False
        if "e" in answer:
            sock.close()
            return False
        owner = answer["r"]
        if owner.get("protocol") != wire.PROTOCOL:
            sock.close()  # an owner of another version (this one checks the other way round too): not shared
            return False
        if not self.adopt_recorded_model and (owner["model_id"] != self.model_id or int(owner["dim"]) != self.dim):
            sock.close()
            raise ModelMismatchError(
                f"the store of identity {self.identity!r} ({self._path}) was written with embedding model "
                f"{owner['model_id']!r} (dim {owner['dim']}), but this session uses {self.model_id!r} "
                f"(dim {self.dim}). Configure the store's model again, or re-embed the store with the new one: "
                f"`agent-memory reindex --identity {self.identity} --config FILE`"
            )
        self.model_id, self.dim = str(owner["model_id"]), int(owner["dim"])
        self._owner = info
        # This thread's first connection is the one that asked.
        conn = _Conn(sock, self._generation + 1)
        self._tls.conn = conn
        with self._conns_lock:
            self._conns.append(conn)
        return True

    def _leave(self) -> None:
        with self._conns_lock:
            conns, self._conns = self._conns, []
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.sock.close()
        self._owner = None
        server, self._server = self._server, None
        local, self._local = self._local, None
        if server is not None:
            server.stop()
        if local is not None:
            release_store(local)

    # Calls

    def _connection(self) -> _Conn:
        conn: _Conn | None = getattr(self._tls, "conn", None)
        if conn is not None and conn.generation == self._generation:
            return conn
        if conn is not None:
            with contextlib.suppress(OSError):
                conn.sock.close()
        info = self._owner
        if info is None:
            raise wire.ConnectionLost("no owner")
        try:
            sock = connect(info)
        except OSError as exc:
            raise wire.ConnectionLost(str(exc)) from exc
        try:
            wire.send(sock, {"token": info["token"], "protocol": wire.PROTOCOL})
            answer = wire.receive(sock)
        except wire.ConnectionLost:
            sock.close()
            raise
        if "e" in answer:
            sock.close()
            raise wire.ConnectionLost("the owner refused the connection")
        conn = _Conn(sock, self._generation)
        self._tls.conn = conn
        with self._conns_lock:
            self._conns.append(conn)
        return conn

    def _pending(self) -> list[_Op]:
        """The calls this thread has not sent yet (its collection locks), in this role of the store.

        A lock is sent with the thread's next call, in one request: a read-modify-write step pays no round
        trip for it. Those of an ended role are dropped: :meth:`_restore_locks` queues them again.
        """
        pending: tuple[int, list[_Op]] | None = getattr(self._tls, "pending", None)
        if pending is None or pending[0] != self._generation:
            pending = (self._generation, [])
            self._tls.pending = pending
        return pending[1]

    def _request(self, conn: _Conn, ops: Sequence[_Op]) -> Any:
        """Send ``ops`` as one request (a batch when several, each collection opened first where it is not yet)
        and wait for the answer: the last call's result; the first error is raised."""
        calls: list[dict[str, Any]] = []
        opening: set[str] = set()
        for coll, message in ops:
            if coll is not None and coll.name not in conn.opened and coll.name not in opening:
                calls.append({"op": "open", "c": None, "a": {"spec": wire.spec_out(coll.spec)}})
                opening.add(coll.name)
            calls.append(message)
        while conn.unread:
            wire.receive(conn.sock)  # an unlock's answer: it has nothing to report
            conn.unread -= 1
        wire.send(conn.sock, calls[0] if len(calls) == 1 else {"op": "batch", "c": None, "a": {"calls": calls}})
        answer = wire.receive(conn.sock)
        if "e" in answer:
            wire.raise_error(answer["e"])
        conn.opened |= opening
        if len(calls) == 1:
            return answer["r"]
        answers: list[dict[str, Any]] = answer["r"]
        for each in answers:
            if "e" in each:
                wire.raise_error(each["e"])
        return answers[-1]["r"]

    def _call(
        self,
        coll: SharedCollection | None,
        op: str,
        args: Callable[[], dict[str, Any]],
        local: Callable[[Any], Any],
    ) -> Any:
        """Run one call: on the local collection (or store) when this process owns it, else at the owner, in one
        request with the locks this thread took since its last call.

        A lost owner is replaced (:meth:`_join`) and the call made again: every call is idempotent.
        """
        if op in DEFERRED_WRITES and coll is not None and self._defer(coll, op, args, local):
            return None
        deferred = self._deferred()
        while True:
            generation = self._generation
            try:
                self._restore_locks()
                owned = self._local
                if owned is not None:
                    for earlier, _, run_local in deferred:  # this process took the store over meanwhile
                        run_local(owned.collection(earlier.spec))
                    deferred.clear()
                    return local(owned.collection(coll.spec) if coll is not None else owned)
                conn = self._connection()
                pending = self._pending()
                message = {"op": op, "c": coll.name if coll is not None else None, "a": args()}
                try:
                    answer = self._request(conn, [*pending, *[(c, m) for c, m, _ in deferred], (coll, message)])
                except wire.ConnectionLost:
                    raise  # the deferred writes go again to the next owner (each is idempotent)
                except BaseException:
                    deferred.clear()  # answered (the first error is raised): none is sent again
                    raise
                else:
                    deferred.clear()
                    return answer
                finally:
                    # Sent (or the owner is gone, and with it the locks: they are queued again for the next).
                    pending.clear()
            except wire.ConnectionLost:
                logger.warning("the store's owner is gone: joining again", extra={"path": str(self._path)})
                self._join(generation)

    def _deferred(self) -> list[tuple[SharedCollection, dict[str, Any], Callable[[Any], Any]]]:
        """This thread's writes made under a collection lock it holds at the owner, not sent yet (see _defer)."""
        deferred: list[tuple[SharedCollection, dict[str, Any], Callable[[Any], Any]]] | None = getattr(
            self._tls, "deferred", None
        )
        if deferred is None:
            deferred = []
            self._tls.deferred = deferred
        return deferred

    def _defer(
        self, coll: SharedCollection, op: str, args: Callable[[], dict[str, Any]], local: Callable[[Any], Any]
    ) -> bool:
        """Keep a write that answers nothing, made under ``coll``'s lock held at the owner, for this thread's next
        request (its next call, or the unlock, which then is waited for): a read-modify-write step such as a
        context vector's completion ([lock+retrieve], then its writes and the unlock) holds the owner's lock across
        one round trip instead of one per write. Only in the role the lock was taken in."""
        state = self._held().get(coll.name)
        if state is None or state.depth == 0 or state.local is not None or state.generation != self._generation:
            return False
        if self._local is not None:
            return False
        self._deferred().append((coll, {"op": op, "c": coll.name, "a": args()}, local))
        return True

    # Collection locks

    def _held(self) -> dict[str, _Held]:
        held: dict[str, _Held] | None = getattr(self._tls, "held", None)
        if held is None:
            held = {}
            self._tls.held = held
        return held

    def _enter(self, coll: SharedCollection) -> None:
        state = self._held().setdefault(coll.name, _Held())
        if state.depth == 0:
            state.generation = self._generation
        self._lock_once(coll, state)
        state.depth += 1

    def _lock_once(self, coll: SharedCollection, state: _Held) -> None:
        while True:
            generation = self._generation
            try:
                if state.generation != generation:
                    self._restore_locks()
                owned = self._local
                if owned is not None:
                    local = owned.collection(coll.spec)
                    local.lock.__enter__()
                    state.local = local
                else:
                    # Taken at the owner with this thread's next call (nothing runs there before it).
                    self._pending().append((coll, {"op": "lock", "c": coll.name, "a": {}}))
                    state.local = None
                # Taken in this role: released in it (a lock taken just after a handover is the new owner's).
                state.generation = generation
                return
            except wire.ConnectionLost:
                self._join(generation)

    def _exit(self, coll: SharedCollection) -> None:
        state = self._held().get(coll.name)
        if state is None or state.depth == 0:
            return
        state.depth -= 1
        if state.depth == 0 and self._deferred():
            # Writes made under the lock went with nothing yet: they go now with the unlock (a no-op at an owner
            # that does not hold it for this process: one that took over), and are waited for, so the step's
            # writes are in the store when it ends, and a failed one fails here.
            self._call(coll, "unlock", dict, lambda c: None)
            return
        if state.generation != self._generation:
            return  # taken in a role that has ended: the old owner released it when its connection died
        if state.local is not None:
            state.local.lock.__exit__(None, None, None)
            return
        pending = self._pending()
        for n in range(len(pending) - 1, -1, -1):
            if pending[n][0] is coll and pending[n][1]["op"] == "lock":
                del pending[n]  # never sent: no call was made under it, nothing to release
                return
        # Sent without waiting for its answer (read before the next one): an unlock has nothing to report, and the
        # connection's calls run in order, so this thread's next call finds it released. An owner that died
        # meanwhile took its locks with it.
        with contextlib.suppress(wire.ConnectionLost):
            conn = self._connection()
            wire.send(conn.sock, {"op": "unlock", "c": coll.name, "a": {}})
            conn.unread += 1

    def _restore_locks(self) -> None:
        """Take again, in the present role, the collection locks this thread held in an ended one."""
        for name, state in self._held().items():
            if state.depth == 0 or state.generation == self._generation:
                continue
            coll = self._colls[name]
            depth, state.depth = state.depth, 0
            state.generation = self._generation
            for _ in range(depth):
                self._lock_once(coll, state)
                state.depth += 1


class SharedLock:
    """A collection's lock across processes: this process's threads, then the owner's collection lock."""

    def __init__(self, coll: SharedCollection) -> None:
        self._coll = coll
        self._threads = threading.RLock()

    def __enter__(self) -> SharedLock:
        self._threads.acquire()
        try:
            self._coll.store._enter(self._coll)
        except BaseException:
            self._threads.release()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self._coll.store._exit(self._coll)
        finally:
            self._threads.release()


class SharedCollection:
    """A collection of a shared store: its calls run on the owner's collection, wherever that is."""

    def __init__(self, store: SharedStore, spec: CollectionSpec) -> None:
        self.store = store
        self.spec = spec
        self.name = spec.name
        self.vector_count = len(spec.vectors)
        self.lock = SharedLock(self)
        self.observer: Callable[[int], None] | None = None

    @property
    def local_reads(self) -> bool:
        """Whether reads run here: this process owns the store (a client's reads are socket round trips)."""
        return self.store.is_owner

    def _run(self, op: str, args: Callable[[], dict[str, Any]], local: Callable[[BaseCollection], Any]) -> Any:
        return self.store._call(self, op, args, local)

    def _written(self, count: int) -> None:
        if self.observer is not None:
            self.observer(count)

    def upsert(self, points: Sequence[PointInput]) -> None:
        """Insert or replace points; a plain vector is the ``dense`` one, a dict names each vector."""
        if not points:
            return
        batch = [(pid, named_vectors(vec), payload) for pid, vec, payload in points]
        self._run("upsert", lambda: {"points": _points_out(batch)}, lambda c: c.upsert(batch))
        self._written(len(batch))

    def upsert_unless(self, points: Sequence[PointInput], unless: Filter) -> str | None:
        """The id of a point ``unless`` matches, or write ``points`` (None): one request, run under the owner's
        collection lock, so no other process's lock waits on this one's round trips."""
        batch = [(pid, named_vectors(vec), payload) for pid, vec, payload in points]
        found = self._run(
            "upsert_unless",
            lambda: {"points": _points_out(batch), "unless": query_wire.encode(unless)},
            lambda c: c.upsert_unless(batch, unless),
        )
        if found is None:
            self._written(len(batch))
        return None if found is None else str(found)

    def set_payload(self, point_id: str, payload: dict[str, Any]) -> None:
        """Set (merge) payload keys of one point."""
        args = {"id": point_id, "payload": payload}
        self._run("set_payload", lambda: args, lambda c: c.set_payload(point_id, payload))
        self._written(1)

    def delete_payload(self, point_id: str, keys: Sequence[str]) -> None:
        """Remove payload keys of one point."""
        names = list(keys)
        args = {"id": point_id, "keys": names}
        self._run("delete_payload", lambda: args, lambda c: c.delete_payload(point_id, names))
        self._written(1)

    def update_vector(self, point_id: str, name: str, vector: Sequence[float]) -> None:
        """Replace one named vector of one point."""
        vec = [float(x) for x in vector]
        self._run(
            "update_vector",
            lambda: {"id": point_id, "name": name, "vector": wire.vectors_out(vec)},
            lambda c: c.update_vector(point_id, name, vec),
        )
        self._written(1)

    def update_if(
        self, point_id: str, vectors: Mapping[str, Sequence[float]], drop: Sequence[str], expect: Mapping[str, Value]
    ) -> bool:
        """If the point exists and its payload holds exactly ``expect``, replace ``vectors`` and remove the keys
        ``drop`` (True): one request the owner runs under its collection lock, so no lock waits on a round trip."""
        vecs = {name: [float(x) for x in vec] for name, vec in vectors.items()}
        names, want = list(drop), dict(expect)
        done = bool(
            self._run(
                "update_if",
                lambda: {"id": point_id, "vectors": wire.vectors_out(vecs), "drop": names, "expect": want},
                lambda c: c.update_if(point_id, vecs, names, want),
            )
        )
        if done:
            self._written(1)
        return done

    def delete(self, point_ids: Sequence[str]) -> None:
        """Delete points by id (unknown ids are ignored)."""
        if not point_ids:
            return
        ids = [str(pid) for pid in point_ids]
        self._run("delete", lambda: {"ids": ids}, lambda c: c.delete(ids))
        self._written(1)

    def delete_by_filter(self, flt: Filter) -> None:
        """Delete every point the filter matches."""
        self._run("delete_by_filter", lambda: {"filter": query_wire.encode(flt)}, lambda c: c.delete_by_filter(flt))

    def retrieve(self, point_ids: Sequence[str], with_vector: Fields = False) -> list[StoredPoint]:
        """The points of these ids that exist, in the order asked, with their payloads (and vectors: all, or named)."""
        if not point_ids:
            return []
        ids = [str(pid) for pid in point_ids]
        # An owner before named vectors reads a list as True (every vector): the asker still finds the one it named.
        found = self._run(
            "retrieve", lambda: {"ids": ids, "with_vector": fields(with_vector)}, lambda c: c.retrieve(ids, with_vector)
        )
        return _points(found)

    def query(self, request: Search) -> list[StoredPoint]:
        """A scored search."""
        return _points(self._run("query", lambda: {"request": query_wire.encode(request)}, lambda c: c.query(request)))

    def query_unless(self, request: Search, unless: Filter) -> tuple[str | None, list[StoredPoint]]:
        """(the id of a point ``unless`` matches, []), or (None, the search's points): one request."""
        found, points = self._run(
            "query_unless",
            lambda: {"request": query_wire.encode(request), "unless": query_wire.encode(unless)},
            lambda c: c.query_unless(request, unless),
        )
        return (None if found is None else str(found)), _points(points)

    def scroll(self, request: Scroll) -> tuple[list[StoredPoint], Any]:
        """One page of points and the offset of the next page (None at the end)."""
        result = self._run("scroll", lambda: {"request": query_wire.encode(request)}, lambda c: c.scroll(request))
        if isinstance(result, tuple):
            return result
        return _points(result[0]), result[1]

    def count(self, flt: Filter | None = None) -> int:
        """Exact number of points (matching ``flt``)."""
        return int(
            self._run(
                "count", lambda: {"filter": query_wire.encode(flt) if flt is not None else None}, lambda c: c.count(flt)
            )
        )

    def unindexed_count(self) -> int:
        """Points whose vectors are not in the HNSW index yet."""
        return int(self._run("unindexed_count", dict, lambda c: c.unindexed_count()))

    def optimize(self) -> None:
        """Index every unindexed vector now (in the owner; this call waits for it)."""
        self._run("optimize", dict, lambda c: c.optimize())

    def index_if_needed(self, min_unindexed: int) -> float | None:
        """Build the index when at least ``min_unindexed`` points are unindexed; the seconds spent, or None."""
        spent = self._run(
            "index_if_needed", lambda: {"min_unindexed": min_unindexed}, lambda c: c.index_if_needed(min_unindexed)
        )
        return None if spent is None else float(spent)

    def index_soon(self, min_unindexed: int) -> None:
        """Have the owner build the index once its collection is idle."""
        self._run("index_soon", lambda: {"min_unindexed": min_unindexed}, lambda c: c.index_soon(min_unindexed))

    def close(self) -> None:
        """Nothing to release: the store closes its collections."""

    def __getattr__(self, name: str) -> Any:
        # The owner's own collection answers what only an embedded collection has (maintenance commands:
        # purge_due, journal, shard); a client has none of it.
        local = self.store.local_store
        if local is None or name.startswith("__"):
            raise AttributeError(name)
        return getattr(local.collection(self.spec), name)


def _points_out(batch: list[tuple[str, dict[str, list[float]], dict[str, Any]]]) -> list[Any]:
    """Points to write, as sent: their vectors packed (exact, and a fraction of JSON's size and time)."""
    return [(pid, wire.vectors_out(vectors), payload) for pid, vectors, payload in batch]


def _points(found: Any) -> list[StoredPoint]:
    if found and not isinstance(found[0], StoredPoint):
        return [wire.point_in(p) for p in found]
    return list(found)


def acquire_shared_store(
    root: Path,
    identity: str,
    model_id: str,
    dim: int,
    *,
    adopt_recorded_model: bool = False,
    purge: PurgePolicy | None = None,
    wait_s: float = OWNER_WAIT_S,
    search_threads: int | None = None,
) -> SharedStore:
    """This process's handle of ``root/identity`` (one per process, see :mod:`.registry`), shared with every
    other process of that identity; the last :func:`.registry.release` hands it over or leaves it."""
    root = root.resolve()
    path = root / validate_identity(identity)

    def open_store() -> SharedStore:
        return SharedStore(
            root,
            identity,
            model_id,
            dim,
            adopt_recorded_model=adopt_recorded_model,
            purge=purge,
            wait_s=wait_s,
            search_threads=search_threads,
        )

    def reuse(store: SharedStore) -> None:
        if not adopt_recorded_model and (store.model_id != model_id or store.dim != dim):
            raise open_with_other_model(identity, store.model_id, store.dim, model_id, dim)

    store = STORES.acquire(("shared", path), open_store, SharedStore.close, reuse)
    # Joined outside the registry's lock: waiting for an owner must not hold up the process's other stores.
    try:
        store.join()
    except BaseException:
        STORES.release(store)
        raise
    return store
