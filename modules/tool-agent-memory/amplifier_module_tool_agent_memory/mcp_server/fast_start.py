"""The fast start: answer an MCP client's handshake and ``tools/list`` before the MCP SDK is imported.

Why it exists: the target is a first ``tools/list`` within 1 s of the server's start, and importing the
SDK's server alone (``import mcp.server.lowlevel, mcp.server.stdio``) took 1.87 s p50 / 2.17 s p95 on a
quiet reference machine (``import mcp`` imports its client and the generated models of two protocol
versions, ~1.65 s in all). No server that imports the SDK before answering can meet it there.

So ``agent-memory mcp`` reads stdin here first (standard library and the tool table only) while it
imports the SDK. Before the SDK's server is ready this front answers, itself:

- ``initialize`` when it is the client's first request: the result the SDK's server gives (the same
  version negotiation, capabilities, serverInfo and instructions; ``tests/mcp/test_mcp_fast_start.py``
  compares the two for every protocol version);
- after it, ``ping`` and ``tools/list`` (the listing ``server.py`` serves, from ``about.tool_listing``).

Everything else (other requests, notifications, lines that are not JSON-RPC, an ``initialize`` that
does not look plain) is queued in order and handed to the SDK's server when it is ready; every later
line goes straight to it. The client's ``initialize`` is replayed into the SDK first, under a private id
whose answer is dropped, so the SDK session is in the state the client believes it is in. Anything the
front is not sure it answers exactly as the SDK would, it leaves to the SDK: the client then waits for it,
which is slower but the same answer. Should the SDK fail to import, queued and later requests get a
JSON-RPC error that says how to install it.

stdout carries only protocol: :class:`Wire` is its one writer and writes whole lines.
"""

from __future__ import annotations

import io
import json
import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Any, BinaryIO

log = logging.getLogger(__name__)

# mcp_types.version.HANDSHAKE_PROTOCOL_VERSIONS of the SDK this package pins (mcp>=2.3,<3), oldest first; the
# congruence test fails when the installed SDK's differ.
HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
# What the SDK's lowlevel server derives from the handlers server.py registers (tools, resources, prompts).
CAPABILITIES: dict[str, Any] = {
    "prompts": {"listChanged": False},
    "resources": {"subscribe": False, "listChanged": False},
    "tools": {"listChanged": False},
}
# The id the client's initialize is replayed under, so the SDK's answer to it can be told apart and dropped.
REPLAY_ID = "agent-memory/fast-start/initialize"
INTERNAL_ERROR = -32603
_CLIENT_INFO_TEXT = ("title", "description", "websiteUrl")


class Wire:
    """The one writer of the protocol stream: each message a whole line, written and flushed under a lock."""

    def __init__(self, out: BinaryIO) -> None:
        self._out = out
        self._lock = threading.Lock()

    def send(self, message: dict[str, Any]) -> None:
        self.write_line(json.dumps(message, ensure_ascii=False, separators=(",", ":")))

    def write_line(self, line: str) -> None:
        data = line.rstrip("\n").encode("utf-8") + b"\n"
        with self._lock:
            self._out.write(data)
            self._out.flush()


class SdkInput:
    """The SDK server's stdin (wrapped by ``anyio.wrap_file``): the lines the front hands over, then ``""``."""

    def __init__(self) -> None:
        self._lines: queue.SimpleQueue[str] = queue.SimpleQueue()

    def put(self, line: str) -> None:
        self._lines.put(line if line.endswith("\n") else line + "\n")

    def end(self) -> None:
        self._lines.put("")

    def readline(self) -> str:
        return self._lines.get()


class SdkOutput:
    """The SDK server's stdout: its lines go to the wire, except its answer to the replayed ``initialize``."""

    def __init__(self, wire: Wire) -> None:
        self._wire = wire
        self._partial = ""
        self._replay_answered = False

    def write(self, text: str) -> int:
        *lines, self._partial = (self._partial + text).split("\n")
        for line in lines:
            if line and not self._is_replay_answer(line):
                self._wire.write_line(line)
        return len(text)

    def flush(self) -> None:
        """Every whole line is written as it comes (:meth:`write`)."""

    def _is_replay_answer(self, line: str) -> bool:
        if self._replay_answered or REPLAY_ID not in line:
            return False
        message = _json_object(line)
        if message is None or message.get("id") != REPLAY_ID:
            return False
        self._replay_answered = True
        if "error" in message:
            # The front told the client it was initialized; the SDK disagrees, so later calls will fail.
            log.error("the MCP SDK refused the client's initialize the fast start accepted: %s", message["error"])
        return True


class Front:
    """Answers what it can before the SDK's server is ready and queues the rest for it, in order."""

    def __init__(self, wire: Wire, tools: list[dict[str, Any]], initialize_result: Callable[[str], dict[str, Any]]):
        self.wire = wire
        self.sdk_input = SdkInput()
        self.sdk_output = SdkOutput(wire)
        self._tools = tools
        self._initialize_result = initialize_result
        self._lock = threading.Lock()
        self._queued: list[str] = []
        # "fresh" until the first request; "handshaken" when the front answered it (an initialize); "passing" when
        # the SDK must answer everything (the first request was something else).
        self._phase = "fresh"
        self._sdk = "loading"  # then "ready" or "failed"
        self._failure = ""
        self._ended = False
        self._answered = 0
        self._started = time.perf_counter()

    def receive(self, line: str) -> None:
        """One line from the client."""
        reply: dict[str, Any] | None = None
        with self._lock:
            if self._sdk == "ready":
                self.sdk_input.put(line)
                return
            reply, forward = self._take(line)
            if forward is not None and self._sdk == "failed":
                # Only what the front does not answer itself is refused (an initialize it answers is not).
                reply = reply or self._refusal(forward)
            elif forward is not None:
                self._queued.append(forward)
            if reply is not None:
                self._answered += 1
                # Written under the lock: a hand-over cannot slip an SDK answer between the decision and the line.
                self.wire.send(reply)

    def end(self) -> None:
        """The client closed stdin: the SDK's server ends after the queued lines (or now, if it is ready)."""
        with self._lock:
            self._ended = True
            if self._sdk == "ready":
                self.sdk_input.end()

    def hand_over(self) -> None:
        """The SDK's server reads ``sdk_input`` now: give it the queued lines, then every later one."""
        with self._lock:
            for line in self._queued:
                self.sdk_input.put(line)
            log.info(
                "fast start: answered %d request(s) before the MCP SDK was ready (%.2f s after start); "
                "handed it %d queued message(s)", self._answered, time.perf_counter() - self._started,
                len(self._queued),
            )
            self._queued.clear()
            self._sdk = "ready"
            if self._ended:
                self.sdk_input.end()

    def fail(self, message: str) -> None:
        """The SDK could not be imported: every queued and later request gets an error saying ``message``."""
        with self._lock:
            self._sdk, self._failure = "failed", message
            for line in self._queued:
                refusal = self._refusal(line)
                if refusal is not None:
                    self.wire.send(refusal)
            self._queued.clear()

    def pump(self, source: BinaryIO) -> None:
        """Read the client's lines until end of input (runs in its own thread)."""
        # Decoded and split into lines as the SDK's stdio transport does (UTF-8, bad bytes replaced, universal
        # newlines), so each line reaches the SDK as it would have without the front.
        for line in io.TextIOWrapper(source, encoding="utf-8", errors="replace"):
            self.receive(line)
        self.end()

    def _take(self, line: str) -> tuple[dict[str, Any] | None, str | None]:
        """(the front's answer, the line for the SDK): one of them, or the replayed initialize and its answer."""
        message = _request(line)
        if message is None or self._phase == "passing":
            # Notifications, responses and what is not JSON-RPC (which the SDK drops unanswered) keep their place.
            return None, line
        method, params = message["method"], message.get("params")
        if self._phase == "fresh":
            version = _plain_initialize(params) if method == "initialize" else None
            if version is None:
                self._phase = "passing"
                return None, line
            self._phase = "handshaken"
            replay = json.dumps({**message, "id": REPLAY_ID}, ensure_ascii=False)
            return _result(message, self._initialize_result(version)), replay
        if method == "ping" and _plain(params, ()):
            return _result(message, {}), None
        if method == "tools/list" and _plain(params, ("cursor",)):
            # server.py's list_tools returns every tool on one page whatever the cursor: so does this.
            return _result(message, {"tools": self._tools}), None
        return None, line

    def _refusal(self, line: str) -> dict[str, Any] | None:
        message = _request(line)
        if message is None or message["id"] == REPLAY_ID:
            return None
        error = {"code": INTERNAL_ERROR, "message": self._failure}
        return {"jsonrpc": "2.0", "id": message["id"], "error": error}


def negotiate(requested: str) -> str:
    """The protocol version the SDK's server answers a client asking for ``requested``."""
    return requested if requested in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1]


def initialize_result(version: str, server_version: str, instructions: str) -> dict[str, Any]:
    """The ``initialize`` result the SDK's server gives for a negotiated ``version``."""
    from .about import SERVER_NAME, SERVER_TITLE

    return {
        "protocolVersion": version,
        "capabilities": CAPABILITIES,
        "serverInfo": {"name": SERVER_NAME, "title": SERVER_TITLE, "version": server_version},
        "instructions": instructions,
    }


def _json_object(line: str) -> dict[str, Any] | None:
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _request(line: str) -> dict[str, Any] | None:
    """``line`` as a JSON-RPC request the SDK would accept the envelope of, else None."""
    message = _json_object(line)
    if message is None or message.get("jsonrpc") != "2.0" or not isinstance(message.get("method"), str):
        return None
    request_id = message.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, (str, int)):
        return None
    return message


def _plain(params: Any, allowed: tuple[str, ...]) -> bool:
    """No params, or only ``allowed`` string fields and a ``_meta`` without the 2026 envelope."""
    if params is None:
        return True
    if not isinstance(params, dict):
        return False
    # A _meta of anything but a progress token (the 2026 envelope above all) is the SDK's to judge.
    meta = params.get("_meta", {})
    if not isinstance(meta, dict) or any(
        key != "progressToken" or isinstance(value, bool) or not isinstance(value, (str, int))
        for key, value in meta.items()
    ):
        return False
    return all(key == "_meta" or (key in allowed and isinstance(value, str)) for key, value in params.items())


def _plain_initialize(params: Any) -> str | None:
    """The negotiated version when ``params`` is an initialize the SDK surely accepts as it is, else None."""
    if not isinstance(params, dict) or set(params) - {"protocolVersion", "capabilities", "clientInfo"}:
        return None
    version, capabilities, client = params.get("protocolVersion"), params.get("capabilities"), params.get("clientInfo")
    if not isinstance(version, str) or not isinstance(capabilities, dict) or not isinstance(client, dict):
        return None
    if not all(isinstance(value, dict) for value in capabilities.values()):
        return None
    if not (isinstance(client.get("name"), str) and isinstance(client.get("version"), str)):
        return None
    if any(key not in ("name", "version", *_CLIENT_INFO_TEXT) or not isinstance(value, str)
           for key, value in client.items()):
        return None
    return negotiate(version)


def _result(message: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": message["id"], "result": result}
