"""What the processes sharing one store say to each other: framed JSON messages over a local socket.

A frame is a 4-byte big-endian length and that many bytes of UTF-8 JSON. A request is
``{"op": name, "c": collection or null, "a": arguments}``; its answer ``{"r": result}`` or
``{"e": {"kind": ..., "type": ..., "message": ...}}``. Requests and filters travel as
:mod:`.query_wire` writes them, points as plain objects with their vectors packed (:func:`vectors_out`),
collection specs as their fields.
Where the socket lives and who may use it: :mod:`.owner`.
"""

from __future__ import annotations

import json
import socket
import struct
from dataclasses import asdict
from typing import Any
from uuid import UUID

from ..errors import AgentMemoryError, StoreDamagedError
from .contract import CollectionSpec, IndexSpec, StorageLayout, StoredPoint
from .query_wire import FLOATS, pack_floats, unpack_floats

# What the processes sharing one store say to each other; a client and an owner of another one do not share (the
# client waits, then answers ``store_in_use``): 2 = session 8's ``upsert_unless`` and packed vectors, which an
# owner of the version before would refuse or misread; 3 = session 9's ``query_unless``; 4 = session 11's
# ``update_if`` (a context vector's completion in one request). Every connection's first message names it.
PROTOCOL = 4

_LEN = struct.Struct(">I")
# A frame larger than this is refused: an import batch of 1,000 memories is ~16 MB of JSON.
MAX_FRAME = 256 * 1024 * 1024


class ConnectionLost(Exception):
    """The other process closed the socket or died (its owner role passes to another process)."""


def send(sock: socket.socket, message: Any) -> None:
    """Send one message."""
    body = json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode()
    try:
        sock.sendall(_LEN.pack(len(body)) + body)
    except OSError as exc:
        raise ConnectionLost(str(exc)) from exc


def _read(sock: socket.socket, size: int) -> bytes:
    chunks = []
    while size:
        try:
            chunk = sock.recv(min(size, 1 << 20))
        except OSError as exc:
            raise ConnectionLost(str(exc)) from exc
        if not chunk:
            raise ConnectionLost("the other process closed the connection")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def receive(sock: socket.socket) -> Any:
    """Receive one message (raises :class:`ConnectionLost` at the end of the stream)."""
    (size,) = _LEN.unpack(_read(sock, _LEN.size))
    if size > MAX_FRAME:
        raise ConnectionLost(f"a message of {size} bytes is over the limit")
    return json.loads(_read(sock, size))


def _errors() -> dict[str, type[AgentMemoryError]]:
    found: dict[str, type[AgentMemoryError]] = {}
    stack: list[type[AgentMemoryError]] = [AgentMemoryError]
    while stack:
        cls = stack.pop()
        found.setdefault(cls.kind, cls)
        stack.extend(cls.__subclasses__())
    return found


_BUILTIN_ERRORS: dict[str, type[Exception]] = {
    cls.__name__: cls for cls in (ValueError, TypeError, KeyError, RuntimeError, OSError, NotImplementedError)
}


def error_message(exc: BaseException) -> dict[str, str]:
    """An exception raised in the owner, as its answer."""
    kind = exc.kind if isinstance(exc, AgentMemoryError) else ""
    return {"kind": kind, "type": type(exc).__name__, "message": str(exc)}


def raise_error(error: dict[str, str]) -> None:
    """Raise, in the asking process, the exception the owner answered with (same class where we know it)."""
    message = str(error.get("message", ""))
    kind = str(error.get("kind", ""))
    if kind:
        raise _errors().get(kind, AgentMemoryError)(message)
    builtin = _BUILTIN_ERRORS.get(str(error.get("type", "")))
    if builtin is not None:
        raise builtin(message)
    if error.get("type") == "PanicException":
        raise StoreDamagedError(f"the storage engine failed in the process that owns the store: {message[:300]}")
    raise RuntimeError(f"{error.get('type')}: {message}")


def vectors_out(vectors: Any) -> Any:
    """A point's vectors as sent: each vector packed (a dict by name, a plain vector, or None)."""
    if isinstance(vectors, dict):
        return {name: pack_floats(vec) for name, vec in vectors.items()}
    return pack_floats(vectors)


def vectors_in(data: Any) -> Any:
    """The vectors :func:`vectors_out` sent (plain JSON lists are read as they are)."""
    if isinstance(data, dict) and FLOATS not in data:
        return {name: unpack_floats(vec) for name, vec in data.items()}
    return unpack_floats(data)


def point_out(point: StoredPoint) -> dict[str, Any]:
    """A point as sent back to the asking process."""
    pid = str(point.id) if isinstance(point.id, UUID) else point.id
    order = point.order_value
    return {
        "id": pid,
        "payload": point.payload,
        "score": point.score,
        "vector": vectors_out(point.vector),
        "order_value": order if order is None or isinstance(order, int | float | str) else str(order),
    }


def point_in(data: dict[str, Any]) -> StoredPoint:
    """The point :func:`point_out` sent."""
    return StoredPoint(
        id=data["id"],
        payload=data.get("payload"),
        score=float(data.get("score") or 0.0),
        vector=vectors_in(data.get("vector")),
        order_value=data.get("order_value"),
    )


def spec_out(spec: CollectionSpec) -> dict[str, Any]:
    """A collection spec as sent to the owner (which opens the collection with it on first use)."""
    return asdict(spec)


def spec_in(data: dict[str, Any]) -> CollectionSpec:
    """The spec :func:`spec_out` sent."""
    return CollectionSpec(
        name=str(data["name"]),
        indexes=tuple(IndexSpec(**index) for index in data.get("indexes", ())),
        vectors=tuple(str(v) for v in data.get("vectors", ())),
        layout=StorageLayout(**(data.get("layout") or {})),
    )
