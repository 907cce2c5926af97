"""The warm-up (runtime.warm_up): once the session is ready the model loads and the store opens on a
background thread, so the first tool call finds them open; mounting alone still opens nothing."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import amplifier_module_tool_agent_memory as agent_memory
from amplifier_module_tool_agent_memory.amplifier.mount import mounted_runtimes
from amplifier_module_tool_agent_memory.runtime import AgentMemory

OPENED = "memory store opened"


def _runtime(coordinator: Any) -> AgentMemory:
    (runtime,) = mounted_runtimes(coordinator)
    return runtime


async def test_the_store_opens_in_the_background_before_the_first_call(
    mount_tools: Callable[..., Any], root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    tools, coordinator = await mount_tools()
    assert not (root / "alice").exists()
    caplog.set_level(logging.INFO, logger="amplifier_module_tool_agent_memory")
    await agent_memory.on_session_ready(coordinator)
    runtime = _runtime(coordinator)
    warming = runtime._warming
    assert warming is not None and warming.name == "agent-memory-warm-up"
    warming.join()
    # Open before any call (by the warm-up, or by recall's briefing which session ready also starts: the
    # warm-up then waits for it and opens nothing twice).
    assert len([r for r in caplog.records if r.getMessage() == OPENED]) == 1
    assert runtime._store is not None and "memory" in runtime._services

    stored = await tools["memory_store"].execute({"content": "the build server is in the basement"})
    found = await tools["memory_search"].execute({"query": "where is the build server"})
    assert stored.success and found.success
    assert "basement" in str(found.output)
    # The calls used the store the warm-up opened: it was not opened again.
    assert len([r for r in caplog.records if r.getMessage() == OPENED]) == 1
    # A second session-ready starts no second warm-up.
    assert runtime.warm_up() is None


async def test_off_nothing_opens_until_a_call(mount_tools: Callable[..., Any], root: Path) -> None:
    tools, coordinator = await mount_tools(warm_up=False)
    await agent_memory.on_session_ready(coordinator)
    runtime = _runtime(coordinator)
    assert runtime._warming is None
    assert not (root / "alice").exists()
    assert (await tools["memory_store"].execute({"content": "the printer is on floor two"})).success
    assert runtime._store is not None


async def test_an_identity_error_starts_no_warm_up_and_the_call_reports_it(
    mount_tools: Callable[..., Any], root: Path
) -> None:
    tools, coordinator = await mount_tools(agent_identity="")
    await agent_memory.on_session_ready(coordinator)
    assert _runtime(coordinator)._warming is None
    answer = await tools["memory_store"].execute({"content": "hello"})
    assert not answer.success
    assert not (root / "default").exists()


async def test_closing_during_the_warm_up_waits_for_it_and_leaves_no_store_open(
    mount_tools: Callable[..., Any],
) -> None:
    _, coordinator = await mount_tools()
    runtime = _runtime(coordinator)
    await agent_memory.on_session_ready(coordinator)
    warming = runtime._warming
    assert warming is not None
    runtime.close()
    assert not warming.is_alive()
    assert runtime._store is None and runtime._services == {}
