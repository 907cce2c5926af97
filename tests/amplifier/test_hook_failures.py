"""A hook of ours that fails leaves the session running: plan capture and the compaction handler answer
``continue`` whatever breaks under them, log what failed (redacted), and the next call and the next turn
work. Driven through a real amplifier-core AmplifierSession's hook registry (``coordinator.hooks.emit``)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from amplifier_core import AmplifierSession

import amplifier_module_tool_agent_memory as agent_memory
from amplifier_module_tool_agent_memory.cache.service import CacheService
from amplifier_module_tool_agent_memory.embeddings.providers import CachedEmbedder
from amplifier_module_tool_agent_memory.plans.service import PlanService

SECRET = "Vb8qTz3LmK2xWp9R"
PROMPT = "Rename the staging bucket"
EDIT = {"path": "deploy.yaml", "find": "bucket: old", "replace": "bucket: new"}


@pytest.fixture
async def session(root: Path, embedder: CachedEmbedder) -> AsyncIterator[Any]:
    s = AmplifierSession({"session": {"orchestrator": "loop-basic", "context": "context-simple"}})
    cleanup = await agent_memory.mount(s.coordinator, {"storage_root": str(root), "agent_identity": "alice"})
    try:
        yield s.coordinator
    finally:
        await cleanup()


async def _turn(coordinator: Any, prompt: str) -> list[Any]:
    """One turn's events as loop-basic emits them, with one successful task-tool call; the hooks' answers."""
    hooks = coordinator.hooks
    return [
        await hooks.emit("prompt:submit", {"prompt": prompt}),
        await hooks.emit("tool:pre", {"tool_name": "edit_file", "tool_input": EDIT}),
        await hooks.emit("tool:post", {"tool_name": "edit_file", "tool_input": EDIT,
                                       "result": {"success": True, "output": {"edited": "deploy.yaml"}}}),
        await hooks.emit("orchestrator:complete", {"orchestrator": "loop-basic", "turn_count": 1, "status": "success"}),
    ]


def _broken(*_: Any, **__: Any) -> Any:
    raise RuntimeError(f"engine exploded while writing password={SECRET}")


async def test_a_failing_plan_capture_leaves_the_turn_and_the_session_running(
    session: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, call: Any
) -> None:
    tools = session.get("tools")
    caplog.set_level(logging.DEBUG)
    with monkeypatch.context() as patch:
        patch.setattr(PlanService, "store", _broken)
        answers = await _turn(session, PROMPT)
    assert [a.action for a in answers] == ["continue"] * 4
    failures = [r for r in caplog.records if r.getMessage() == "plan capture failed"]
    assert len(failures) == 1  # it did fail, and said so
    logged = " ".join(f"{r.getMessage()} {r.__dict__}" for r in caplog.records)
    assert SECRET not in logged and "[REDACTED:password_assignment]" in logged
    # The session goes on: a tool call works, and the next turn is captured.
    assert (await call(tools["memory_store"], {"content": "The staging bucket was renamed"}))["created"]
    await _turn(session, PROMPT)
    hit = await call(tools["plan_lookup"], {"prompt": PROMPT})
    assert hit["answer"] == "hit" and hit["actions"] == [{"tool": "edit_file", "args": EDIT}]


async def test_a_failing_compaction_handler_leaves_the_session_running(
    session: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, call: Any
) -> None:
    tools = session.get("tools")
    written = await call(tools["cache_write"], {"kind": "fact", "content": "The build uses Bazel 7"})
    with monkeypatch.context() as patch:
        patch.setattr(CacheService, "compact_touched", _broken)
        answer = await session.hooks.emit("context:compaction", {"before_tokens": 9000, "after_tokens": 3000})
    assert answer.action == "continue"
    assert any(r.getMessage() == "closing cache blocks on compaction failed" for r in caplog.records)
    # The block was not closed by the failed handler; the next compaction closes it, and tools work.
    assert (await call(tools["cache_get"], {"block_id": written["block_id"]}))["status"] == "open"
    await session.hooks.emit("context:compaction", {"before_tokens": 9000, "after_tokens": 3000})
    assert (await call(tools["cache_get"], {"block_id": written["block_id"]}))["status"] == "closed"


@pytest.mark.parametrize("data", [
    {},
    {"tool_name": None, "tool_input": "not a dict", "result": None},
    {"tool_name": "plan_lookup", "tool_input": {}, "result": {"success": True, "output": {"hit": True, "plan_id": 7}}},
    {"tool_name": "edit_file", "tool_input": [1, 2], "result": "a plain string"},
])
async def test_malformed_turn_events_are_answered_continue(session: Any, data: dict[str, Any]) -> None:
    hooks = session.hooks
    await hooks.emit("prompt:submit", {"prompt": PROMPT})
    for event in ("tool:pre", "tool:post", "tool:error"):
        assert (await hooks.emit(event, data)).action == "continue"
    assert (await hooks.emit("orchestrator:complete", data)).action == "continue"
