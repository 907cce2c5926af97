"""Where a shared ``memory_store`` spends its time: timers put around the module's parts in a benchmark worker.

``benchmarks/sharing.py --phases breakdown`` installs this in each worker process (never in library code). It
times, per ``memory_store`` (the caller's own segments, wall and the calling thread's CPU):

- ``total`` / ``cpu``: the whole service call, and the CPU of the thread that ran it;
- ``embed``: embedding the memory (the context window runs beside it on another thread, not counted here);
- ``judge``: the near-match decision; ``near``: its store query (with the early duplicate check since session 9,
  before it in the tree's time);
- ``hash``: each exact-duplicate check made on its own (early before session 9, and again under the lock);
- ``ctx wait``: waiting for the context window's embedding (another thread) once the judgement is made;
- ``locked``: from entering the identity's collection lock to leaving it (``lock wait``: what entering took
  in this process: a client's lock is taken at the owner with its next request, so it shows there);
- per request a client sends the owner: its round trip, the bytes each way, the JSON encode/decode time.

In the owner it times each call it serves for another process (wall; the serving thread's CPU, its wait for a core
from Linux's schedstat, and the rest, asleep: a serving thread asleep mid-call waits for the GIL; a ``lock``
call's wall is the time it waited for the lock), and every wait for a collection lock, its own sessions' too.
Records are JSON lines through the worker's log (``t: "probe"``).
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from typing import Any

_state = threading.local()


def _segments() -> dict[str, Any] | None:
    seg: dict[str, Any] | None = getattr(_state, "seg", None)
    return seg


def _add(key: str, ms: float) -> None:
    seg = _segments()
    if seg is not None:
        seg[key] = seg.get(key, 0.0) + ms
        seg[f"n_{key}"] = seg.get(f"n_{key}", 0) + 1


def _timed(key: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            _add(key, (time.perf_counter() - started) * 1000)

    return wrapper


def install(put: Callable[..., None]) -> None:
    """Wrap the module's parts; ``put(**record)`` writes one record to the worker's log."""
    import json as _json

    from amplifier_module_tool_agent_memory.memory import service
    from amplifier_module_tool_agent_memory.store import contract, owner, sharing, wire

    svc = service.MemoryService
    original_store = svc.store

    @functools.wraps(original_store)
    def store(self: Any, inp: Any) -> Any:
        _state.seg = {}
        wall, cpu = time.perf_counter(), time.thread_time()
        try:
            return original_store(self, inp)
        finally:
            seg = _state.seg
            _state.seg = None
            seg["total"] = (time.perf_counter() - wall) * 1000
            seg["cpu"] = (time.thread_time() - cpu) * 1000
            put(t="probe", what="store", **seg)

    svc.store = store  # type: ignore[method-assign]
    svc._find_by_hash = _timed("hash", svc._find_by_hash)  # type: ignore[method-assign]
    svc._judge = _timed("judge", svc._judge)  # type: ignore[method-assign]
    # Session 9: the early duplicate check travels with the near-match query (one store call).
    near = "_nearest_unless_stored" if hasattr(svc, "_nearest_unless_stored") else "_nearest_same_kind"
    setattr(svc, near, _timed("near", getattr(svc, near)))
    # Waiting for the context window's run (on another thread) after the judgement. Since session 10 a store no
    # longer waits for it (the vector is written after the answer): the segment stays empty there.
    if hasattr(service, "wait"):
        service.wait = _timed("ctx wait", service.wait)
    svc._thread_tail = _timed("tail", svc._thread_tail)  # type: ignore[method-assign]

    # The memory's own embedding (on the calling thread; the context window's run is on another one).
    from amplifier_module_tool_agent_memory.embeddings import providers

    cached = providers.CachedEmbedder
    cached.embed_documents = _timed("embed", cached.embed_documents)  # type: ignore[method-assign]

    # The section under the identity's collection lock, on either side.
    for lock_cls in (sharing.SharedLock, contract._CollectionLock):
        _wrap_lock(lock_cls, put, served=lock_cls is contract._CollectionLock)

    # A client's requests: round trip, bytes, JSON time.
    original_request = sharing.SharedStore._request

    def request(self: Any, conn: Any, ops: Any) -> Any:
        started = time.perf_counter()
        _state.io = {"out": 0, "in": 0, "json": 0.0}
        try:
            return original_request(self, conn, ops)
        finally:
            io = _state.io
            _state.io = None
            ms = (time.perf_counter() - started) * 1000
            _add("requests", ms)
            seg = _segments()
            if seg is not None:
                seg.setdefault("sent", []).append(
                    {"ops": [m.get("op") for _, m in ops], "ms": round(ms, 2), "out": io["out"], "in": io["in"],
                     "json": round(io["json"], 2)}
                )

    sharing.SharedStore._request = request  # type: ignore[method-assign]

    class _Json:
        """``json`` as the wire module sees it: the same calls, timed and their sizes counted."""

        @staticmethod
        def dumps(obj: Any, **kwargs: Any) -> str:
            started = time.perf_counter()
            text = _json.dumps(obj, **kwargs)
            _io("out", len(text), started)
            return text

        @staticmethod
        def loads(data: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            value = _json.loads(data, **kwargs)
            _io("in", len(data), started)
            return value

    wire.json = _Json  # type: ignore[assignment]

    # The owner: each call it serves, wall and the serving thread's CPU.
    original_answer = owner.OwnerServer._answer

    def answer(self: Any, message: dict[str, Any], colls: Any, held: Any) -> dict[str, Any]:
        wall, cpu, queued_before = time.perf_counter(), time.thread_time(), _run_delay()
        try:
            return original_answer(self, message, colls, held)
        finally:
            ms = (time.perf_counter() - wall) * 1000
            # The thread's CPU clock, not schedstat's run time: that one is brought up to date only at a switch
            # or a tick, so a call shorter than a tick read 0 on a core.
            ran, queued = (time.thread_time() - cpu) * 1000, _run_delay() - queued_before
            # Wall = on a core + runnable but waiting for one + neither: asleep, which for a serving thread is
            # the GIL (or the engine's own locks; its pool's threads are not this one).
            put(t="probe", what="served", op=str(message.get("op")), ms=ms, cpu=ran, runq=queued,
                blocked=max(0.0, ms - ran - queued))

    owner.OwnerServer._answer = answer  # type: ignore[method-assign]

    original_serve = owner.OwnerServer._serve

    def serve(self: Any, conn: Any) -> None:
        # The serving thread's JSON: decode of each request, encode of each answer.
        _state.io = {"out": 0, "in": 0, "json": 0.0, "owner": True}
        original_serve(self, conn)

    owner.OwnerServer._serve = serve  # type: ignore[method-assign]


def _run_delay() -> float:
    """How long this thread has waited for a core while runnable, ms (Linux schedstat; 0 elsewhere)."""
    try:
        with open("/proc/thread-self/schedstat") as fh:
            return int(fh.read().split()[1]) / 1e6
    except OSError:
        return 0.0


def _io(direction: str, size: int, started: float) -> None:
    io: dict[str, Any] | None = getattr(_state, "io", None)
    if io is None:
        return
    ms = (time.perf_counter() - started) * 1000
    if io.get("owner"):
        # One record a message in the owner: its size and what encoding or decoding it cost.
        _owner_put(direction, size, ms)
        return
    io[direction] += size
    io["json"] += ms


_OWNER_PUT: list[Callable[..., None]] = []


def _owner_put(direction: str, size: int, ms: float) -> None:
    if _OWNER_PUT:
        _OWNER_PUT[0](t="probe", what="owner_json", dir=direction, bytes=size, ms=ms)


def _wrap_lock(cls: Any, put: Callable[..., None], served: bool) -> None:
    enter, leave = cls.__enter__, cls.__exit__
    _OWNER_PUT[:] = [put]

    def timed_enter(self: Any) -> Any:
        started = time.perf_counter()
        result = enter(self)
        waited = (time.perf_counter() - started) * 1000
        held: list[float] = getattr(_state, "held", [])
        outer = not held
        held.append(time.perf_counter())
        _state.held = held
        if not outer:
            return result  # re-entered (a write under the caller's own lock): no wait
        if served:
            # Every wait for the owner's collection lock: its own sessions' and those served for others.
            put(t="probe", what="lock_wait", ms=waited, own=_segments() is not None)
        else:
            _add("lock wait", waited)
        return result

    def timed_exit(self: Any, *exc: object) -> None:
        try:
            leave(self, *exc)
        finally:
            held: list[float] = getattr(_state, "held", [])
            if held:
                since = held.pop()
                if not held and (not served or _segments() is not None):
                    _add("locked", (time.perf_counter() - since) * 1000)

    cls.__enter__, cls.__exit__ = timed_enter, timed_exit
