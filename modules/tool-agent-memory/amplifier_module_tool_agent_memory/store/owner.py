"""The owner's side of a shared embedded store: it holds the store and runs the other processes' calls.

The process that holds an identity's store lock (see :mod:`.sharing`) listens on a local socket
and publishes how to reach it in ``<identity>/owner.json`` (mode 0600): the address and a random
token. Every connection must send the token first, with the protocol it speaks
(:data:`.wire.PROTOCOL`: another version's process is refused); one thread serves each
connection, so a connection's calls run one after another, and the collection lock a connection takes (a
read-modify-write sequence of another process) is held by its thread until that process
releases it or its connection ends (a process that dies releases its locks here).

Where it listens: an AF_UNIX socket ``<identity>/.sock`` on Linux and macOS (its folder's
permissions guard it, and the token), or TCP on 127.0.0.1 with an OS-chosen port where AF_UNIX is
missing from Python (Windows) or the socket's path is too long for it: loopback only, token
required.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import logging
import os
import secrets
import socket
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import query_wire, wire
from .contract import BaseCollection, PointInput
from .files import open_no_follow
from .query import fields_in

logger = logging.getLogger(__name__)

OWNER_FILE = "owner.json"
SOCKET_FILE = ".sock"
# AF_UNIX paths are at most 104 bytes on macOS (108 on Linux), terminating NUL included.
_MAX_UNIX_PATH = 100


# Windows refuses to replace a file that another process has open (PermissionError): a client reading owner.json
# at that moment, which holds it for one short read. The publish tries again, waiting 5 ms, then twice as long
# each time, at most REPLACE_TRIES times (0.6 s of waits in all) before it gives up with the error. Elsewhere the
# first try succeeds: a rename replaces a file others have open.
REPLACE_TRIES = 8
REPLACE_FIRST_WAIT_S = 0.005


def replace_retrying(
    src: Path,
    dst: Path,
    *,
    tries: int = REPLACE_TRIES,
    first_wait_s: float = REPLACE_FIRST_WAIT_S,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """``os.replace(src, dst)``, tried again after a short, growing wait while it fails with PermissionError
    (Windows, while another process has ``dst`` open); that error is raised after ``tries`` attempts."""
    wait = first_wait_s
    for attempt in range(1, tries + 1):
        try:
            os.replace(src, dst)
            return
        except PermissionError:
            if attempt == tries:
                raise
            logger.debug("owner record busy: trying again", extra={"attempt": attempt, "wait_s": wait})
            sleep(wait)
            wait *= 2


# Set to "tcp", the owner listens on 127.0.0.1 even where AF_UNIX is there: what Windows does, so Linux runs
# that path too (the tests), and a way round a file system that cannot hold a socket.
TRANSPORT_ENV = "AGENT_MEMORY_OWNER_TRANSPORT"


def socket_path(store_path: Path) -> Path | None:
    """Where the owner's AF_UNIX socket is, or None where TCP on loopback is used instead."""
    if sys.platform == "win32" or not hasattr(socket, "AF_UNIX"):
        return None
    if os.environ.get(TRANSPORT_ENV, "").strip().lower() == "tcp":
        return None
    path = store_path / SOCKET_FILE
    return path if len(os.fsencode(path)) <= _MAX_UNIX_PATH else None


def read_owner(store_path: Path) -> dict[str, Any] | None:
    """The published owner record, or None when there is none (yet) or it cannot be read."""
    try:
        fd = open_no_follow(store_path / OWNER_FILE, os.O_RDONLY)
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as fh:
            data = json.loads(fh.read(1 << 16))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and "token" in data and "address" in data else None


def connect(info: dict[str, Any], timeout_s: float = 2.0) -> socket.socket:
    """A socket connected to the owner ``info`` describes (raises OSError when it does not answer)."""
    if info.get("family") == "unix":
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        address: Any = str(info["address"])
    else:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        host, port = info["address"]
        address = (str(host), int(port))
    try:
        sock.settimeout(timeout_s)
        sock.connect(address)
        sock.settimeout(None)
    except OSError:
        sock.close()
        raise
    return sock


# While this process serves another one: a thread of its own running Python (its session's comparison, ranking,
# JSON) keeps the GIL until the interpreter's switch interval has passed (5 ms by default) before a serving thread
# whose request has arrived may run, and a served call takes the GIL several times (the request, the engine call,
# the answer). 1 ms bounds each of those waits at a fifth: the owner's own work no longer adds up to 5 ms to each
# round trip a client waits for, at the cost of a few more thread switches in a process that serves.
SERVING_SWITCH_INTERVAL_S = 0.001


class _SwitchInterval:
    """The interpreter's switch interval, lowered while this process serves at least one other, then put back."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._serving = 0
        self._saved: float | None = None

    def enter(self) -> None:
        with self._lock:
            self._serving += 1
            current = sys.getswitchinterval()
            if self._serving == 1 and current > SERVING_SWITCH_INTERVAL_S:
                self._saved = current
                sys.setswitchinterval(SERVING_SWITCH_INTERVAL_S)

    def leave(self) -> None:
        with self._lock:
            self._serving -= 1
            if self._serving or self._saved is None:
                return
            # Put back only what this changed: the host may have set an interval of its own since.
            if abs(sys.getswitchinterval() - SERVING_SWITCH_INTERVAL_S) < 1e-6:
                sys.setswitchinterval(self._saved)
            self._saved = None


# One per process: its owners of several identities serve under one interpreter.
_SWITCHING = _SwitchInterval()


# Calls of a batch that run even after an earlier one failed: the process counts its locks as taken and released.
ALWAYS_RUN = frozenset({"open", "lock", "unlock"})


class NotRun(Exception):
    """A call of a batch that was not run because an earlier one failed."""


class OwnerServer:
    """Serves the calls of the other processes of one identity on the owner's open collections."""

    def __init__(
        self,
        store_path: Path,
        collection: Callable[[Any], BaseCollection],
        hello: dict[str, Any],
        store_calls: dict[str, Callable[[], Any]] | None = None,
        peer_left: Callable[[], None] | None = None,
    ) -> None:
        """``collection`` opens a collection from its spec; ``hello`` is what each new connection is told;
        ``store_calls`` answers store-level questions (journal status) by name; ``peer_left`` is called when a
        served connection ends, unless this owner is stopping."""
        self.store_path = store_path
        self._collection = collection
        self._hello = hello
        self._store_calls = store_calls or {}
        self._peer_left = peer_left
        self._token = secrets.token_hex(32)
        self._listener: socket.socket | None = None
        self._conns: set[socket.socket] = set()
        self._threads: set[threading.Thread] = set()
        self._guard = threading.Lock()
        self._stopped = False

    def start(self) -> None:
        """Listen, then publish the owner record (connections before it is published cannot know the token)."""
        bound = self._bind_unix()
        if bound is not None:
            listener, info = bound
        else:
            listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            listener.bind(("127.0.0.1", 0))
            info = {"family": "tcp", "address": list(listener.getsockname()[:2])}
        listener.listen(64)
        self._listener = listener
        threading.Thread(target=self._accept, name="agent-memory-owner", daemon=True).start()
        self._publish({**info, "token": self._token, "pid": os.getpid()})
        logger.info("store shared", extra={"path": str(self.store_path), "family": info["family"]})

    def _bind_unix(self) -> tuple[socket.socket, dict[str, Any]] | None:
        """The AF_UNIX listener, or None where there is none: TCP on loopback then (a file system that cannot
        hold a socket, such as some network or FUSE mounts, included)."""
        path = socket_path(self.store_path)
        if path is None:
            return None
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            path.unlink(missing_ok=True)  # a dead owner's: this process holds the store lock
            listener.bind(str(path))
            os.chmod(path, 0o600)
        except OSError:
            listener.close()
            logger.warning("no socket file possible in the store folder: TCP on 127.0.0.1", exc_info=True)
            return None
        return listener, {"family": "unix", "address": str(path)}

    def _publish(self, record: dict[str, Any]) -> None:
        final = self.store_path / OWNER_FILE
        tmp = final.with_suffix(".tmp")
        tmp.unlink(missing_ok=True)
        fd = open_no_follow(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(json.dumps(record))
        replace_retrying(tmp, final)

    def stop(self) -> None:
        """Stop listening, end every connection (their processes take over) and withdraw the owner record."""
        with self._guard:
            self._stopped = True
            conns = list(self._conns)
            threads = list(self._threads)
        with contextlib.suppress(OSError):
            (self.store_path / OWNER_FILE).unlink(missing_ok=True)
        if self._listener is not None:
            with contextlib.suppress(OSError):
                self._listener.close()
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        # A connection's thread releases the collection locks its process held before the store closes.
        for thread in threads:
            thread.join(timeout=30)
        path = socket_path(self.store_path)
        if path is not None:
            with contextlib.suppress(OSError):
                path.unlink(missing_ok=True)

    @property
    def connections(self) -> int:
        """How many processes' connections are open now (tests and ``inspect``)."""
        with self._guard:
            return len(self._conns)

    def _accept(self) -> None:
        listener = self._listener
        assert listener is not None
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return  # closed by stop()
            with self._guard:
                if self._stopped:
                    conn.close()
                    return
                self._conns.add(conn)
                thread = threading.Thread(target=self._serve, args=(conn,), name="agent-memory-peer", daemon=True)
                self._threads.add(thread)
            thread.start()

    def _serve(self, conn: socket.socket) -> None:
        held: dict[str, int] = {}
        colls: dict[str, BaseCollection] = {}
        serving = False
        try:
            hello = wire.receive(conn)
            if not hmac.compare_digest(str(hello.get("token", "")), self._token):
                wire.send(conn, {"e": wire.error_message(PermissionError("wrong token"))})
                return
            if hello.get("protocol") != wire.PROTOCOL:
                # Another version of this module: its requests would be refused or misread one by one.
                message = f"this store's owner speaks protocol {wire.PROTOCOL}, not {hello.get('protocol', 1)}"
                wire.send(conn, {"e": wire.error_message(PermissionError(message))})
                return
            # Counted as served before the answer: a client that has it is served (its interval is in force), and a
            # second client's leaving cannot put the interval back while this one is still on its way in.
            _SWITCHING.enter()
            serving = True
            wire.send(conn, {"r": {**self._hello, "protocol": wire.PROTOCOL}})
            while True:
                message = wire.receive(conn)
                if message.get("op") == "batch":
                    wire.send(conn, {"r": self._batch((message.get("a") or {}).get("calls") or [], colls, held)})
                else:
                    wire.send(conn, self._answer(message, colls, held))
        except wire.ConnectionLost:
            pass
        except Exception:
            logger.exception("serving a sharing process failed")
        finally:
            if serving:
                _SWITCHING.leave()
            # A process that dies (or leaves) mid-sequence releases its locks here.
            for name, depth in held.items():
                for _ in range(depth):
                    try:
                        colls[name].lock.__exit__(None, None, None)
                    except Exception:
                        logger.exception("releasing a peer's collection lock failed", extra={"collection": name})
            with self._guard:
                self._conns.discard(conn)
                self._threads.discard(threading.current_thread())
                stopped = self._stopped
            with contextlib.suppress(OSError):
                conn.close()
            if serving and not stopped and self._peer_left is not None:
                self._peer_left()

    def _answer(
        self, message: dict[str, Any], colls: dict[str, BaseCollection], held: dict[str, int]
    ) -> dict[str, Any]:
        """One call's answer: ``{"r": result}`` or ``{"e": error}``."""
        try:
            return {"r": self._dispatch(message, colls, held)}
        except Exception as exc:
            return {"e": wire.error_message(exc)}
        except BaseException as exc:  # a Rust panic is a BaseException: answer it, keep serving
            if isinstance(exc, KeyboardInterrupt | SystemExit):
                raise
            return {"e": wire.error_message(exc)}

    def _batch(self, calls: list[Any], colls: dict[str, BaseCollection], held: dict[str, int]) -> list[dict[str, Any]]:
        """Several calls of one process in one request, run in order, each answered with its result or error.

        After a call fails the later ones are not run (answered so), as they would not have been one by one: a
        step's write must not follow a read that failed. Opening a collection and its lock and unlock always
        run, so a process's locks stay as it counts them.
        """
        answers: list[dict[str, Any]] = []
        failed: int | None = None
        for n, call in enumerate(calls):
            op = call.get("op") if isinstance(call, dict) else None
            if op == "batch":
                answers.append({"e": wire.error_message(ValueError("a batch cannot hold a batch"))})
            elif failed is not None and op not in ALWAYS_RUN:
                answers.append({"e": wire.error_message(NotRun(f"not run: call {failed} of the batch failed"))})
                continue
            else:
                answers.append(self._answer(call if isinstance(call, dict) else {}, colls, held))
            if "e" in answers[-1] and failed is None:
                failed = n
        return answers

    def _dispatch(self, message: dict[str, Any], colls: dict[str, BaseCollection], held: dict[str, int]) -> Any:
        op = str(message.get("op"))
        args: dict[str, Any] = message.get("a") or {}
        if op in self._store_calls:
            return self._store_calls[op]()
        if op == "open":
            spec = wire.spec_in(args["spec"])
            coll = self._collection(spec)
            colls[spec.name] = coll
            return {"vector_count": coll.vector_count}
        coll = colls[str(message.get("c"))]
        if op == "lock":
            coll.lock.__enter__()
            held[coll.name] = held.get(coll.name, 0) + 1
            return None
        if op == "unlock":
            if held.get(coll.name, 0) > 0:
                held[coll.name] -= 1
                coll.lock.__exit__(None, None, None)
            return None
        return _run(coll, op, args)


def _points_in(points: list[Any]) -> list[PointInput]:
    """The points a process sent to write, their vectors unpacked."""
    return [(str(pid), wire.vectors_in(vectors), payload) for pid, vectors, payload in points]


def _run(coll: BaseCollection, op: str, a: dict[str, Any]) -> Any:
    """One collection call of another process."""
    if op == "upsert":
        coll.upsert(_points_in(a["points"]))
        return None
    if op == "upsert_unless":
        return coll.upsert_unless(_points_in(a["points"]), query_wire.decode(a["unless"]))
    if op == "set_payload":
        coll.set_payload(a["id"], a["payload"])
        return None
    if op == "delete_payload":
        coll.delete_payload(a["id"], a["keys"])
        return None
    if op == "update_vector":
        coll.update_vector(a["id"], a["name"], wire.vectors_in(a["vector"]))
        return None
    if op == "update_if":
        return coll.update_if(a["id"], wire.vectors_in(a["vectors"]), a["drop"], a["expect"])
    if op == "delete":
        coll.delete(a["ids"])
        return None
    if op == "delete_by_filter":
        coll.delete_by_filter(query_wire.decode(a["filter"]))
        return None
    if op == "retrieve":
        return [wire.point_out(p) for p in coll.retrieve(a["ids"], fields_in(a.get("with_vector")))]
    if op == "query":
        return [wire.point_out(p) for p in coll.query(query_wire.decode(a["request"]))]
    if op == "query_unless":
        found, points = coll.query_unless(query_wire.decode(a["request"]), query_wire.decode(a["unless"]))
        return [found, [wire.point_out(p) for p in points]]
    if op == "scroll":
        points, offset = coll.scroll(query_wire.decode(a["request"]))
        return [[wire.point_out(p) for p in points], query_wire.encode(offset)]
    if op == "count":
        flt = a.get("filter")
        return coll.count(query_wire.decode(flt) if flt is not None else None)
    if op == "unindexed_count":
        return coll.unindexed_count()
    if op == "optimize":
        coll.optimize()
        return None
    if op == "index_if_needed":
        return coll.index_if_needed(int(a["min_unindexed"]))
    if op == "index_soon":
        coll.index_soon(int(a["min_unindexed"]))
        return None
    raise ValueError(f"unknown store call {op!r}")
