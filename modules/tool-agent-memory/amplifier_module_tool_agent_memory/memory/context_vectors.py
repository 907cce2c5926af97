"""The context window's vector of a new memory, written after memory_store has answered.

A memory's context vector (``ctx``: the thread's previous memory, then this one) is derived data: its text is in
the payload (``ctx_text``), so it can always be computed again. Its embedding is the longest step of a store (~25
CPU-ms, against ~12-15 ms for the memory's own embedding, the near-match query and the judgement run beside it),
so a store writes the memory with its own dense vector in the ``ctx`` slot (what a thread's first memory holds)
and the marker ``ctx_pending``, answers, and this part writes the real vector when the run ends: vector first,
then the marker removed, so a crash in between leaves the marker and doing it again is harmless.

Safety: a completion checks, under the collection's lock, that the point is still there, still marked and still
has the context window that was embedded; otherwise (forgotten, or its window rebuilt by a forget) it is dropped.
A service holds at most ``MAX_PENDING`` completions (a store beyond that waits for the oldest); closing it waits
for them (bounded); a point still marked at the next open (a process killed in between) is repaired then, in the
background.

Finding those points at open: on the embedded store, each service that writes a marker first takes a claim file
(store/claims.py), deleted at a close that left nothing in flight; at open and at a sharing takeover only a claim
whose writer ended (its lock free) starts a scan for marked points. No index on the marker: Qdrant's vacuum
rewrites every payload index of the segments it purges, and that one cost ~6% of every engine purge (issue 17).
The server backend has no shared folder: it keeps the payload index and reads it at open. A store of sessions
10-11 still carries that index on the embedded store: its owner's open repairs through it once, then drops it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor, wait
from pathlib import Path

from ..embeddings.providers import Embedder, Vector
from ..store.claims import Claim, DeadClaim, dead_claims
from ..store.contract import Collection, IndexDropping
from ..store.query import Filter, IsEmpty, Scroll
from .ranking import CTX, CTX_TEXT
from .record import CTX_PENDING, MemoryFields
from .restated import context_window

logger = logging.getLogger(__name__)

# Completions a service keeps in flight: a bulk loop of stores outruns the context runs (each ~25 CPU-ms), and
# a store beyond this many waits for the oldest, so the work queued behind the answers stays bounded.
MAX_PENDING = 4
# Marked points repaired per scroll at open (each is one embedding, run in the background).
REPAIR_BATCH = 32
# The marked memories. Not ``where(ctx_pending=True)``: on Qdrant Edge that match on a Python bool found no marked
# point (checked); the marker is only ever written true and then removed, never set false, so "present" is enough.
MARKED = Filter(must_not=(IsEmpty(CTX_PENDING),))
# How long closing a service waits for its completions (what is left keeps its marker: repaired at next open).
CLOSE_WAIT_S = 30.0
# At a sharing takeover, how long before the claim files still locked are looked at again: a process that dies
# closes its files one after the other, and its socket's end can reach the owner before its claim's lock is free.
RECHECK_S = 0.5
# How long a ranked read (memory_search, recall) waits for the completions of this service's own stores: bounded,
# so a slow machine answers with the placeholder rather than not at all.
READ_WAIT_S = 2.0

_WRITER: ThreadPoolExecutor | None = None
_WRITER_LOCK = threading.Lock()


def _writer() -> ThreadPoolExecutor:
    """The process's one thread writing finished context vectors (started on first use).

    Not the embedding thread that ended the run: it is freed for the next run at once. And never the store's own
    thread, even when the run ended before the write: the answer does not wait for the completion's writes.
    """
    global _WRITER
    with _WRITER_LOCK:
        if _WRITER is None:
            _WRITER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agent-memory-ctx-write")
        return _WRITER


class ContextVectors:
    """One service's context vectors still to write: the completions in flight, and the repair at open.

    ``claims``: the identity's claim folder on the embedded store (store/claims.py); ``None`` on the server
    backend, which finds marked points by their payload index.
    """

    def __init__(self, coll: Collection, embedder: Embedder, claims: Path | None = None) -> None:
        self.coll = coll
        self.embedder = embedder
        self.claims = claims
        self._claim = Claim(claims) if claims is not None else None
        self._claim_lock = threading.Lock()
        # A completion that failed leaves its marker: this service's claim then stays at close, for the next open.
        self._failed = False
        # Repairs (scans for marked points) this service started: what tells an open that found nothing to repair.
        self.repairs = 0
        self._pending: deque[Future[None]] = deque()
        # The completions of this service's own stores (not the repair at open): what a ranked read waits for.
        self._following: deque[Future[None]] = deque()
        self._lock = threading.Lock()
        self._closing = threading.Event()

    def claim(self) -> bool:
        """Before a marked write: this service's claim file is held (taken durably the first time), so a process
        killed before its completions leaves a file the next open finds; False when it cannot be made (the store's
        folder is read-only or full): the caller then writes the real vector at once, with no marker."""
        if self._claim is None or self._claim.held:
            return True
        with self._claim_lock:
            try:
                self._claim.take()
            except OSError:
                logger.warning("no claim file for pending context vectors; writing them with the memory", exc_info=True)
                return False
        return True

    def room(self) -> None:
        """Wait until fewer than ``MAX_PENDING`` completions are in flight (the oldest first)."""
        while True:
            with self._lock:
                while self._pending and self._pending[0].done():
                    self._pending.popleft()
                if len(self._pending) < MAX_PENDING:
                    return
                oldest = self._pending[0]
            wait([oldest])

    def follow(self, memory_id: str, ctx: str, run: Future[list[Vector]]) -> None:
        """Write ``run``'s vector as ``memory_id``'s context vector when it ends (on the thread that ran it)."""
        done: Future[None] = Future()
        with self._lock:
            self._pending.append(done)
            while self._following and self._following[0].done():
                self._following.popleft()
            self._following.append(done)

        def finish(ended: Future[list[Vector]]) -> None:
            try:
                self.complete(memory_id, ctx, ended.result()[0])
            except Exception:
                # The marker stays: the next open computes the vector again (the claim is kept for it).
                self._failed = True
                logger.warning("context vector not written", extra={"memory_id": memory_id}, exc_info=True)
            finally:
                done.set_result(None)

        run.add_done_callback(lambda ended: _writer().submit(finish, ended))

    def complete(self, memory_id: str, ctx: str, vector: Vector) -> bool:
        """Write ``vector`` as the context vector of ``memory_id`` if it still waits for the vector of ``ctx``.

        Under the lock, so a forget cannot come between the check and the write: a point forgotten meanwhile is
        never written again (Qdrant Edge refuses a vector for a missing id anyway, checked in the tests), and one
        whose window a forget rebuilt keeps the rebuilt one.

        First as one conditional write (the point still marked, its ``ctx_text`` still the window embedded): what a
        memory is until its completion unless something changed it, and one request the owner runs under its lock
        for a process sharing the store (lock + read, then writes + unlock, was two round trips under the owner's
        lock). When it does not hold (forgotten, window rebuilt, or a wording merged into the memory meanwhile,
        which appends to ``ctx_text``), the full check below decides.
        """
        if self.coll.update_if(memory_id, {CTX: vector}, [CTX_PENDING], {CTX_PENDING: True, CTX_TEXT: ctx}):
            return True
        with self.coll.lock:
            records = self.coll.retrieve([memory_id])
            if not records:
                return False
            payload = dict(records[0].payload or {})
            if not MemoryFields(payload).ctx_pending or context_window(payload) != ctx:
                return False
            self.coll.update_vector(memory_id, CTX, vector)
            self.coll.delete_payload(memory_id, [CTX_PENDING])
        return True

    def caught_up(self, timeout: float = READ_WAIT_S) -> None:
        """Wait (up to ``timeout``) for the completions of this service's own stores, not for the repair at open.

        A search right after a store would otherwise rank the new memory with its placeholder or with its real
        context vector depending on which came first: the same call gave two answers (the MCP / Amplifier parity
        test caught it). Another process's stores are not waited for: they are visible at once, ranked as written.
        """
        with self._lock:
            following = [f for f in self._following if not f.done()]
        if following:
            wait(following, timeout)

    def settle(self, timeout: float | None = None) -> int:
        """Wait (up to ``timeout`` seconds) for the completions in flight; the number still running."""
        with self._lock:
            pending = list(self._pending)
        _, left = wait(pending, timeout)
        return len(left)

    def close(self, timeout: float = CLOSE_WAIT_S) -> int:
        """Stop the repair and wait (bounded) for the completions in flight; the number left (still marked).

        The claim file goes when nothing is left and none failed; otherwise it stays, unlocked, and the next open
        repairs what was abandoned."""
        self._closing.set()
        left = self.settle(timeout)
        if left:
            logger.warning("closed with context vectors unwritten; the next open writes them", extra={"count": left})
        if self._claim is not None:
            with self._claim_lock:
                self._claim.release(finished=not left and not self._failed)
        return left

    def marked(self) -> bool:
        """Some memory of the store still waits for its context vector (an indexed read on the server backend; a
        scan of the embedded store, which asks its claim files instead: ``repair_soon``)."""
        found, _ = self.coll.scroll(Scroll(limit=1, filter=MARKED, with_payload=False))
        return bool(found)

    def _legacy_index(self) -> IndexDropping | None:
        """The embedded collection, when it still carries the marker's index of sessions 10-11 (opened by its
        owner: a sharing client leaves it to the owner's own open)."""
        if self.claims is None or not isinstance(self.coll, IndexDropping):
            return None
        return self.coll if self.coll.payload_indexed(CTX_PENDING) else None

    def repair_soon(self, takeover: bool = False) -> None:
        """If a process ended before its completions, repair what it left marked, in the background.

        Server backend: one indexed read says whether anything is marked. Embedded store: the claim files of ended
        writers say so (none: no read at all), or the index a store of sessions 10-11 still carries (used once,
        then dropped). ``takeover``: another process of the store just ended; the claims still locked are looked at
        again after ``RECHECK_S``, once, in case its claim's lock was not free yet.
        """
        if self.claims is None:
            if self.marked():
                self._repair_in_background([], None)
            return
        legacy = self._legacy_index()
        dead = dead_claims(self.claims)
        if dead or legacy is not None:
            self._repair_in_background(dead, legacy)
        elif takeover and self._others_live():
            threading.Thread(target=self._recheck, name="agent-memory-ctx-recheck", daemon=True).start()

    def _others_live(self) -> bool:
        """Some claim file in the folder is not this service's own (so another writer holds it)."""
        try:
            return any(p != self._claim_path() for p in self.claims.iterdir()) if self.claims else False
        except OSError:
            return False

    def _claim_path(self) -> Path | None:
        return self._claim.path if self._claim is not None else None

    def _recheck(self) -> None:
        time.sleep(RECHECK_S)
        if not self._closing.is_set() and self.claims is not None:
            dead = dead_claims(self.claims)
            if dead:
                self._repair_in_background(dead, None)

    def _repair_in_background(self, dead: list[DeadClaim], legacy: IndexDropping | None) -> None:
        """Repair on a thread; once it finished, the dead claims' files go and the legacy index is dropped (a
        repair stopped by the close keeps both, so the next open repairs again: nothing is lost)."""
        self.repairs += 1
        done: Future[None] = Future()
        with self._lock:
            self._pending.append(done)

        def run() -> None:
            finished = False
            try:
                repaired = self.repair()
                finished = not self._closing.is_set()
                logger.info("context vectors repaired", extra={"count": repaired, "claims": len(dead)})
                if finished and legacy is not None:
                    legacy.drop_payload_index(CTX_PENDING)
            except Exception:
                finished = False
                logger.warning("context vector repair stopped; the next open goes on", exc_info=True)
            finally:
                for claim in dead:
                    if finished:
                        claim.settle()
                    else:
                        claim.keep()
                done.set_result(None)

        threading.Thread(target=run, name="agent-memory-ctx-repair", daemon=True).start()

    def repair(self) -> int:
        """Compute the context vector of every marked memory, ``REPAIR_BATCH`` at a time; how many were written."""
        repaired = 0
        tried: set[str] = set()
        while True:
            records, _ = self.coll.scroll(Scroll(limit=REPAIR_BATCH, filter=MARKED))
            fresh = [r for r in records if str(r.id) not in tried]
            if not fresh or self._closing.is_set():
                return repaired
            for record in fresh:
                if self._closing.is_set():
                    return repaired
                tried.add(str(record.id))
                ctx = context_window(dict(record.payload or {}))
                vector = self.embedder.embed_documents([ctx])[0]
                repaired += self.complete(str(record.id), ctx, vector)
