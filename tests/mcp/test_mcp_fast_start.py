"""The fast start (``mcp_server/fast_start.py``) answers as the SDK's server would, and hands over to it.

The congruence tests run the SDK's own lowlevel server in-process (``build_server`` over memory streams:
the SDK's stdio transport minus the file) and the front on the same lines, and require the same answers.
"""

from __future__ import annotations

import asyncio
import io
import json
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from amplifier_module_tool_agent_memory.cli.mcp import INSTALL_HINT, make_front, serve
from amplifier_module_tool_agent_memory.mcp_server.fast_start import HANDSHAKE_VERSIONS, REPLAY_ID, Front
from amplifier_module_tool_agent_memory.mcp_server.server import build_server
from amplifier_module_tool_agent_memory.runtime import AgentMemory
from amplifier_module_tool_agent_memory.tools import TOOLS

VERSION = "9.9.9"
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def initialize(version: str = "2025-11-25", request_id: Any = 1, **params: Any) -> dict[str, Any]:
    base = {"protocolVersion": version, "capabilities": {"roots": {"listChanged": True}},
            "clientInfo": {"name": "test", "version": "1.0"}}
    return {"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": {**base, **params}}


def request(request_id: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, **({"params": params} if params is not None else {})}


def lines_of(messages: list[Any]) -> list[str]:
    return [m if isinstance(m, str) else json.dumps(m) for m in messages]


async def sdk_answers(runtime: AgentMemory, messages: list[Any], count: int) -> list[dict[str, Any]]:
    """The first ``count`` messages the SDK's server writes for ``messages`` (parsed and framed as its stdio
    transport does: a line that does not parse reaches it as the exception)."""
    server = build_server(runtime, version=VERSION)
    to_server, server_in = anyio.create_memory_object_stream[SessionMessage | Exception](100)
    server_out, from_server = anyio.create_memory_object_stream[SessionMessage](100)
    answers: list[dict[str, Any]] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.run, server_in, server_out, server.create_initialization_options())
        for line in lines_of(messages):
            item: SessionMessage | Exception
            try:
                item = SessionMessage(mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False))
            except Exception as exc:  # what the SDK's stdio_server hands its server for such a line
                item = exc
            await to_server.send(item)
        with anyio.fail_after(60):
            for _ in range(count):
                message = await from_server.receive()
                answers.append(json.loads(message.message.model_dump_json(by_alias=True, exclude_unset=True)))
        tg.cancel_scope.cancel()
    return answers


class Capture(io.RawIOBase):
    """A wire that keeps every line and lets a test wait for answers."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []
        self.changed = threading.Condition()

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        with self.changed:
            self.lines.extend(bytes(data).decode().splitlines())
            self.changed.notify_all()
        return len(data)

    def messages(self) -> list[dict[str, Any]]:
        with self.changed:
            return [json.loads(line) for line in self.lines]

    def wait_for(self, ids: set[Any], timeout: float = 300) -> dict[Any, list[dict[str, Any]]]:
        """Every message answering one of ``ids``, once all of them are answered (fails after ``timeout``)."""
        with self.changed:
            assert self.changed.wait_for(lambda: ids <= {json.loads(x).get("id") for x in self.lines}, timeout), (
                ids, self.lines)
        by_id: dict[Any, list[dict[str, Any]]] = {}
        for message in self.messages():
            by_id.setdefault(message.get("id"), []).append(message)
        return by_id


def front_answers(messages: list[Any]) -> tuple[list[dict[str, Any]], Front]:
    """What the front alone (the SDK never ready) writes for ``messages``."""
    out = Capture()
    front = make_front("alice", out)  # type: ignore[arg-type]
    for line in lines_of(messages):
        front.receive(line)
    return out.messages(), front


def test_the_front_knows_the_sdks_protocol_versions() -> None:
    assert HANDSHAKE_PROTOCOL_VERSIONS == HANDSHAKE_VERSIONS


@pytest.mark.parametrize("version", [*HANDSHAKE_PROTOCOL_VERSIONS, "2026-07-28", "1999-01-01"])
async def test_initialize_and_tools_list_are_exactly_the_sdks(
    version: str, make_runtime: Callable[..., AgentMemory], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("amplifier_module_tool_agent_memory.cli.mcp._version", lambda: VERSION)
    messages = [initialize(version), INITIALIZED, request(2, "tools/list"), request(3, "tools/list", {"cursor": "x"}),
                request(4, "ping"), request(5, "tools/list", {"_meta": {"progressToken": 7}})]
    front, _ = front_answers(messages)
    sdk = await sdk_answers(make_runtime("alice"), messages, 5)
    assert front == sdk
    assert [m["id"] for m in front] == [1, 2, 3, 4, 5]
    assert front[0]["result"]["protocolVersion"] == (version if version in HANDSHAKE_VERSIONS else "2025-11-25")
    assert front[0]["result"]["serverInfo"]["version"] == VERSION
    # One page: every tool of the table, with its annotations (which the SDK keeps at every version).
    listed = front[1]["result"]
    assert "nextCursor" not in listed
    assert [(t["name"], t["annotations"]) for t in listed["tools"]] == [(s.name, s.hints.wire()) for s in TOOLS]


async def test_lines_that_are_not_json_rpc_get_what_the_sdk_gives_them(
    make_runtime: Callable[..., AgentMemory], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SDK's stdio server answers nothing to a line it cannot parse (its dispatcher drops the parse error):
    nor does the front, before or after the handshake. The ping after each shows nothing came in between."""
    monkeypatch.setattr("amplifier_module_tool_agent_memory.cli.mcp._version", lambda: VERSION)
    messages: list[Any] = ["this is not json", '{"foo": 1}', "[1, 2]", initialize(), "{broken",
                           {"jsonrpc": "2.0", "id": True, "method": "ping"}, request(2, "ping")]
    front, held = front_answers(messages)
    sdk = await sdk_answers(make_runtime("alice"), messages, 2)
    assert front == sdk
    assert [m["id"] for m in front] == [1, 2]
    # The front kept them, in order, for the SDK (which drops them): nothing of the client's is lost or reordered.
    assert held._queued[:3] == messages[:3]


@pytest.mark.parametrize("params", [
    {"clientInfo": None},  # not an object
    {"capabilities": {"roots": True}},
    {"clientInfo": {"name": "test", "version": 1}},
    {"clientInfo": {"name": "test", "version": "1", "icons": [{"src": "x"}]}},
    {"protocolVersion": 20251125},
    {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}},
    {"unknown": 1},
])
def test_an_initialize_that_is_not_plain_is_left_to_the_sdk(params: dict[str, Any]) -> None:
    messages = [initialize(**params), INITIALIZED, request(2, "tools/list"), request(3, "ping")]
    answers, front = front_answers(messages)
    assert answers == []
    assert front._queued == lines_of(messages)


def test_after_a_failed_import_queued_and_later_requests_are_refused() -> None:
    """The first request was not initialize, so the front answers nothing itself: every request is refused."""
    out = Capture()
    front = make_front("alice", out)  # type: ignore[arg-type]
    front.receive(json.dumps(request(1, "tools/call", {"name": "memory_list", "arguments": {}})))
    front.fail("no SDK here")
    for message in (initialize(request_id=2), INITIALIZED, request(3, "tools/list"), request(4, "prompts/list")):
        front.receive(json.dumps(message))
    answers = out.messages()
    assert [(m["id"], "error" in m) for m in answers] == [(1, True), (2, True), (3, True), (4, True)]
    assert {m["error"]["message"] for m in answers} == {"no SDK here"}


def test_an_initialize_after_a_failed_import_is_still_answered() -> None:
    out = Capture()
    front = make_front("alice", out)  # type: ignore[arg-type]
    front.fail("no SDK here")
    for message in (initialize(), INITIALIZED, request(2, "tools/list"), request(3, "prompts/list")):
        front.receive(json.dumps(message))
    answers = {m["id"]: m for m in out.messages()}
    assert answers[1]["result"]["serverInfo"]["name"] == "agent-memory"
    assert len(answers[2]["result"]["tools"]) == len(TOOLS)
    assert answers[3]["error"]["message"] == "no SDK here"
    assert len(out.messages()) == 3


def test_a_request_before_initialize_leaves_everything_to_the_sdk() -> None:
    messages = [request(1, "tools/list"), initialize(request_id=2), request(3, "ping")]
    answers, front = front_answers(messages)
    assert answers == []
    assert front._queued == lines_of(messages)


def _run_sdk(runtime: AgentMemory, front: Front) -> threading.Thread:
    thread = threading.Thread(target=asyncio.run, args=(serve(runtime, front),), daemon=True)
    thread.start()
    return thread


@pytest.mark.timeout(600)
def test_requests_queued_and_in_flight_are_handed_to_the_sdk(make_runtime: Callable[..., AgentMemory]) -> None:
    """Calls the front cannot answer wait in its queue; the SDK gets them after the replayed initialize,
    and requests that arrive while it takes over are answered exactly once, by one side or the other."""
    runtime = make_runtime("alice")
    out = Capture()
    front = make_front("alice", out)  # type: ignore[arg-type]
    front.receive(json.dumps(initialize()))
    front.receive(json.dumps(INITIALIZED))
    plan = {"prompt": "Rotate the staging TLS certificate",
            "actions": [{"tool": "bash", "args": {"command": "certbot"}}]}
    front.receive(json.dumps(request(2, "tools/call", {"name": "plan_store", "arguments": plan})))
    front.receive(json.dumps(request(3, "tools/call", {"name": "plan_list", "arguments": {}})))
    front.receive(json.dumps(request(4, "tools/list")))
    assert {m["id"] for m in out.messages()} == {1, 4}  # only what the front answers itself, so far

    sent = threading.Event()
    kinds = [("ping", None), ("tools/list", None), ("prompts/list", None),
             ("tools/call", {"name": "memory_list", "arguments": {"limit": 1}})]
    ids = list(range(100, 160))

    def client() -> None:
        for n, request_id in enumerate(ids):
            method, params = kinds[n % len(kinds)]
            front.receive(json.dumps(request(request_id, method, params)))
            if n == 10:
                sent.set()

    feeder = threading.Thread(target=client)
    feeder.start()
    sent.wait(60)
    server = _run_sdk(runtime, front)
    feeder.join(60)
    out.wait_for({1, 2, 3, 4, *ids})
    # The SDK runs requests concurrently (as it does without the front): a read after the write's answer sees it.
    front.receive(json.dumps(request(5, "tools/call", {"name": "plan_list", "arguments": {}})))
    by_id = out.wait_for({5})
    front.end()
    server.join(60)

    assert not server.is_alive()
    assert REPLAY_ID not in by_id
    assert all(len(answers) == 1 for answers in by_id.values()), by_id
    # Queued calls were answered (not "Invalid request parameters": the replayed initialize reached the SDK first).
    assert by_id[2][0]["result"]["isError"] is False and by_id[3][0]["result"]["isError"] is False
    stored = by_id[2][0]["result"]["structuredContent"]
    listed = by_id[5][0]["result"]["structuredContent"]
    assert [p["plan_id"] for p in listed["plans"]] == [stored["plan_id"]]
    for n, request_id in enumerate(ids):
        result = by_id[request_id][0]["result"]
        method = kinds[n % len(kinds)][0]
        if method == "ping":
            assert result == {}
        elif method == "tools/list":
            assert [t["name"] for t in result["tools"]] == [s.name for s in TOOLS]
        elif method == "prompts/list":
            assert {p["name"] for p in result["prompts"]} >= {"memory-workflow", "start-task"}
        else:
            assert result["isError"] is False and result["structuredContent"]["identity"] == "alice"


@pytest.mark.slow
@pytest.mark.timeout(600)
async def test_a_call_right_after_initialize_waits_for_the_sdk_and_gets_its_answer(
    tmp_path: Path, server_params: Any
) -> None:
    """Over stdio with the SDK's own client: the call the client makes as soon as it is initialized is
    queued by the front (its stderr says so) and answered by the SDK; the tools carry their annotations."""
    stderr_path = tmp_path / "server.stderr"
    with stderr_path.open("w") as errlog:
        async with (
            stdio_client(server_params(tmp_path / "root", "alice", "--verbose"), errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            stored = await session.call_tool("memory_store", {"content": "The release train leaves on Thursdays.",
                                                              "kind": "fact"})
            assert not stored.is_error, stored
            listed = (await session.list_tools()).tools
            found = await session.call_tool("memory_search", {"query": "when does the release train leave"})
    assert found.structured_content is not None
    assert found.structured_content["results"][0]["id"] == stored.structured_content["id"]  # type: ignore[index]
    assert [(t.name, t.annotations.model_dump(by_alias=True, exclude_none=True) if t.annotations else None)
            for t in listed] == [(s.name, s.hints.wire()) for s in TOOLS]
    log = stderr_path.read_text()
    handed = [line for line in log.splitlines() if "fast start: answered" in line]
    assert len(handed) == 1, log
    # The replayed initialize, the initialized notification and at least the memory_store call waited in the queue.
    queued = int(handed[0].split("handed it ")[1].split()[0])
    assert queued >= 3, handed


_BLOCK_THE_SDK = """
import sys
class Blocked:
    def find_spec(self, name, path=None, target=None):
        if name == "mcp.server" or name.startswith("mcp.server."):
            raise ImportError("mcp.server is broken in this environment")
        return None
sys.meta_path.insert(0, Blocked())
from amplifier_module_tool_agent_memory.cli.main import main
sys.exit(main(["mcp", "--identity", "alice", "--root", sys.argv[1]]))
"""


@pytest.mark.timeout(600)
async def test_when_the_sdk_fails_to_import_calls_get_an_error_naming_the_install(
    tmp_path: Path, server_params: Any
) -> None:
    params = server_params(tmp_path)
    broken = StdioServerParameters(command=sys.executable, args=["-c", _BLOCK_THE_SDK, str(tmp_path)], env=params.env)
    async with stdio_client(broken) as (read, write), ClientSession(read, write) as session:
        init = await session.initialize()
        assert init.server_info.name == "agent-memory"
        assert [t.name for t in (await session.list_tools()).tools] == [s.name for s in TOOLS]
        with pytest.raises(MCPError, match="could not be imported") as refused:
            await session.call_tool("memory_list", {})
        assert INSTALL_HINT in str(refused.value)


def test_the_fast_start_imports_no_mcp_sdk() -> None:
    script = (
        "import sys\n"
        "import amplifier_module_tool_agent_memory.cli.main, amplifier_module_tool_agent_memory.cli.mcp\n"
        "from amplifier_module_tool_agent_memory.cli.mcp import make_front\n"
        "import io\n"
        "make_front('alice', io.BytesIO())\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types', 'anyio')))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "[]"
