"""The MCP face through the official SDK's own client over stdio (``agent-memory mcp`` in a subprocess).

Every tool of the table is called over MCP and through the Amplifier face with the same inputs; the
answers (ids and times aside), the errors and the events must be the same.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from data import SECRET
from mcp import ClientSession, stdio_client
from mcp.shared.exceptions import MCPError

from amplifier_module_tool_agent_memory.amplifier.tools import build_tools
from amplifier_module_tool_agent_memory.cli.mcp import EVENT_LOGGER, event_line
from amplifier_module_tool_agent_memory.runtime import AgentMemory
from amplifier_module_tool_agent_memory.tools import TOOLS, TOOLS_BY_NAME

pytestmark = pytest.mark.slow


def _answer(result: Any) -> tuple[bool, dict[str, Any]]:
    """(ok, output or error) of an MCP CallToolResult: the output is the structured content (and the same JSON as
    text); an error is only text (structured content is checked against the tool's outputSchema)."""
    text = json.loads(result.content[0].text)
    if result.is_error:
        assert result.structured_content is None
        return False, text["error"]
    assert text == result.structured_content
    return True, result.structured_content


async def _amplifier_run(scenario: list[Any], runtime: AgentMemory) -> list[tuple[bool, dict[str, Any]]]:
    tools = {tool.name: tool for tool in build_tools(runtime)}
    outputs: dict[str, dict[str, Any]] = {}
    answers = []
    for step in scenario:
        result = await tools[step.tool].execute(step.args(outputs))
        body = result.output if result.success else result.error
        assert isinstance(body, dict)
        if result.success:
            outputs[step.label] = body
        answers.append((bool(result.success), body))
    return answers


@pytest.mark.timeout(1200)  # a subprocess and the in-process face each load the model
async def test_every_tool_answers_over_stdio_as_in_amplifier(
    tmp_path: Path,
    make_runtime: Callable[..., AgentMemory],
    caplog: pytest.LogCaptureFixture,
    comparable: Any,
    events_in: Any,
    scenario: Any,
    server_params: Any,
) -> None:
    steps = scenario
    assert {step.tool for step in steps} == set(TOOLS_BY_NAME), "add a step for every tool to data.SCENARIO"
    stderr_path = tmp_path / "server.stderr"
    mcp_answers: list[tuple[bool, dict[str, Any]]] = []
    with stderr_path.open("w") as errlog:
        async with (
            stdio_client(server_params(tmp_path / "mcp-root"), errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            init = await session.initialize()
            assert init.server_info.name == "agent-memory"
            assert init.capabilities.tools is not None and init.capabilities.resources is not None
            assert init.capabilities.prompts is not None

            listed = (await session.list_tools()).tools
            assert [t.name for t in listed] == [spec.name for spec in TOOLS]
            for tool in listed:
                spec = TOOLS_BY_NAME[tool.name]
                assert (tool.description, tool.input_schema, tool.output_schema) == (
                    spec.description, spec.input_schema, spec.output_schema)

            outputs: dict[str, dict[str, Any]] = {}
            for step in steps:
                # The SDK client validates structuredContent against the tool's outputSchema on success.
                ok, body = _answer(await session.call_tool(step.tool, step.args(outputs)))
                assert ok is step.ok, (step.label, body)
                if ok:
                    outputs[step.label] = body
                    assert body["identity"] == "alice"
                mcp_answers.append((ok, body))

            # Resources: the paged list, one memory, the template; all of alice's.
            page = await session.list_resources()
            uris = [r.uri for r in page.resources]
            assert "memory://alice/memories" in uris
            memory_uri = f"memory://alice/memories/{outputs['new']['id']}"
            assert memory_uri in uris
            read = await session.read_resource(memory_uri)
            memory = json.loads(read.contents[0].text)["memory"]
            assert memory["id"] == outputs["new"]["id"]
            assert "MySQL 8" in memory["content"]
            listing = json.loads((await session.read_resource("memory://alice/memories?limit=1")).contents[0].text)
            assert listing["count"] == 1 and listing["next_before"]
            templates = (await session.list_resource_templates()).resource_templates
            assert "memory://{identity}/memories/{id}" in [t.uri_template for t in templates]
            if "plan_list" in TOOLS_BY_NAME:
                plans = json.loads((await session.read_resource("memory://alice/plans")).contents[0].text)
                assert "plans" in plans

            prompts = {p.name for p in (await session.list_prompts()).prompts}
            assert {"memory-workflow", "start-task"} <= prompts
            task = await session.get_prompt("start-task", {"task": "rotate the staging TLS certificate"})
            text = task.messages[0].content.text  # type: ignore[union-attr]
            assert "rotate the staging TLS certificate" in text and "plan_lookup" in text
            workflow = await session.get_prompt("memory-workflow")
            assert "memory_search" in workflow.messages[0].content.text  # type: ignore[union-attr]

    # The same scenario through the Amplifier face, on its own store.
    caplog.set_level(logging.INFO, logger=EVENT_LOGGER)
    amplifier_answers = await _amplifier_run(scenario, make_runtime("alice"))
    for step, (mcp_ok, mcp_body), (amp_ok, amp_body) in zip(steps, mcp_answers, amplifier_answers, strict=True):
        assert (mcp_ok, comparable(mcp_body)) == (amp_ok, comparable(amp_body)), step.label

    # The secret was redacted from what was stored, and appears in no answer, error or log line.
    stored = dict(zip([s.label for s in steps], mcp_answers, strict=True))["secret"][1]
    assert stored["redacted"] == {"content": ["openai_api_key"]}
    assert SECRET not in json.dumps(mcp_answers) and SECRET not in stderr_path.read_text()

    # Wrong input names the field.
    errors = {step.label: body["message"] for step, (ok, body) in zip(steps, mcp_answers, strict=True) if not ok}
    assert "field 'content'" in errors["bad-type"]
    assert "field 'limit'" in errors["bad-limit"]
    assert "field 'colour'" in errors["unknown-field"]

    # Every successful call's event, with the fields Amplifier's hooks get (resource reads add their own).
    amp_events = [event_line(r) for r in caplog.records if r.name == EVENT_LOGGER and hasattr(r, "event")]
    mcp_events = events_in(stderr_path.read_text())
    # The resource reads come after the scenario: the first events are the scenario's, side events included.
    assert len(mcp_events) > len(amp_events) > 0
    shape = [(e["event"], e.get("tool"), sorted(e)) for e in mcp_events[: len(amp_events)]]
    assert shape == [(e["event"], e.get("tool"), sorted(e)) for e in amp_events]
    assert all(e["identity"] == "alice" for e in mcp_events)
    assert all(e["latency_ms"] >= 0 for e in mcp_events if "tool" in e)


async def test_resources_serve_only_the_servers_own_identity(
    tmp_path: Path, make_runtime: Callable[..., AgentMemory], root: Path, server_params: Any
) -> None:
    from amplifier_module_tool_agent_memory.memory.models import MemoryStoreInput

    bob = make_runtime("bob")
    bobs_id = bob.memory().store(MemoryStoreInput(content="Bob's locker code is 4417.", kind="fact")).id
    bob.close()
    async with stdio_client(server_params(root, "alice")) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        with pytest.raises(MCPError, match="serves identity 'alice' only") as refused:
            await session.read_resource(f"memory://bob/memories/{bobs_id}")
        assert "4417" not in str(refused.value)
        with pytest.raises(MCPError, match="no memory with id"):
            await session.read_resource(f"memory://alice/memories/{bobs_id}")
        with pytest.raises(MCPError, match="field 'id'"):
            await session.read_resource("memory://alice/memories/not-an-id")
        with pytest.raises(MCPError, match="no resource"):
            await session.read_resource("memory://alice/secrets")
        page = await session.list_resources()
        assert all(r.uri.startswith("memory://alice/") for r in page.resources)
        assert not any(bobs_id in r.uri for r in page.resources)


async def test_an_invalid_argument_is_an_error_result_naming_the_field(tmp_path: Path, server_params: Any) -> None:
    async with stdio_client(server_params(tmp_path)) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        result = await session.call_tool("memory_search", {"query": "billing", "limit": "many"})
        assert result.is_error
        error = json.loads(result.content[0].text)["error"]  # type: ignore[union-attr]
        assert error["type"] == "invalid_input" and error["tool"] == "memory_search"
        assert "field 'limit'" in error["message"]
        with pytest.raises(MCPError, match="unknown tool"):
            await session.call_tool("memory_delete_everything", {})


def test_stdout_carries_only_the_protocol(tmp_path: Path, server_params: Any) -> None:
    """Raw stdio, no SDK: every line the server writes on stdout is a JSON-RPC message; logs go to stderr."""
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "memory_get", "arguments": {"id": "x"}}},
    ]
    params = server_params(tmp_path, "alice", "--verbose")
    proc = subprocess.Popen(
        [params.command, *params.args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env=params.env,
    )
    watchdog = threading.Timer(300, proc.kill)
    watchdog.start()
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write("".join(json.dumps(r) + "\n" for r in requests))
        proc.stdin.flush()
        messages = [json.loads(proc.stdout.readline()) for _ in range(3)]
        rest, stderr = proc.communicate(timeout=120)  # closes stdin: the client leaves, the server ends
    finally:
        watchdog.cancel()
    assert rest == ""
    assert proc.returncode == 0
    assert all(m["jsonrpc"] == "2.0" for m in messages)
    assert [m.get("id") for m in messages] == [1, 2, 3]
    assert len(messages[1]["result"]["tools"]) == len(TOOLS)
    assert messages[2]["result"]["isError"] is True
    assert "agent-memory MCP server for identity alice" in stderr


def test_without_the_sdk_the_command_says_how_to_install_it(tmp_path: Path) -> None:
    # The installed SDK hidden from the command's check, as in an install without the extra.
    script = (
        "import importlib.util, sys\n"
        "real = importlib.util.find_spec\n"
        "importlib.util.find_spec = lambda name, *a: None if name == 'mcp' else real(name, *a)\n"
        "from amplifier_module_tool_agent_memory.cli.main import main\n"
        "sys.exit(main(['mcp', '--identity', 'alice', '--root', sys.argv[1]]))\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert "pip install 'amplifier-module-tool-agent-memory[mcp]'" in done.stderr
    assert done.stdout == ""
