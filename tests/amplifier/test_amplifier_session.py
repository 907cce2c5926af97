"""The module inside real amplifier-core: the loader finds the installed entry point (and its
on_session_ready), every tool is mounted and answers, mount is cheap and idempotent, the identity
is resolved late enough for capabilities registered after mount, and setup errors reach the agent."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from amplifier_core import AmplifierSession, HookResult, ToolResult
from amplifier_core.loader import ModuleLoader
from amplifier_core.testing import MockCoordinator
from amplifier_core.validation.behavioral import ToolBehaviorTests
from amplifier_core.validation.structural import ToolStructuralTests

import amplifier_module_tool_agent_memory as agent_memory
from amplifier_module_tool_agent_memory.amplifier.tools import build_tools
from amplifier_module_tool_agent_memory.config import MemoryConfig
from amplifier_module_tool_agent_memory.embeddings.providers import CachedEmbedder
from amplifier_module_tool_agent_memory.events import EVENTS
from amplifier_module_tool_agent_memory.identity import IDENTITY_ENV
from amplifier_module_tool_agent_memory.runtime import AgentMemory
from amplifier_module_tool_agent_memory.store import edge as storage

MODULE_ID = "tool-agent-memory"
PLAN: dict[str, Any] = {"session": {"orchestrator": "loop-basic", "context": "context-simple"}}
ALL_TOOLS = frozenset(tool.name for tool in build_tools(AgentMemory(MemoryConfig(), None)))

Mounted = tuple[dict[str, Any], Any]


@pytest.fixture
def module_path() -> Path:
    """The package folder: amplifier-core's plugin cannot find it from the repository root."""
    return Path(agent_memory.__file__).parent


class TestToolContractBehavior(ToolBehaviorTests):
    """amplifier-core's behavioural contract for tool modules."""


class TestToolContractStructure(ToolStructuralTests):
    """amplifier-core's structural contract for tool modules."""


@pytest.fixture
async def session_mount(root: Path, embedder: CachedEmbedder) -> AsyncIterator[Callable[..., Awaitable[Mounted]]]:
    """Mount through a real AmplifierSession and amplifier-core's ModuleLoader (entry point, no source:),
    then run the on_session_ready the loader found, as session initialisation does after every mount."""
    coordinators: list[Any] = []

    async def factory(config: dict[str, Any] | None = None, session: dict[str, Any] | None = None) -> Mounted:
        cfg = {"storage_root": str(root), **(config or {})}
        plan = {"session": {**PLAN["session"], **(session or {})}, "tools": [{"module": MODULE_ID, "config": cfg}]}
        coordinator = AmplifierSession(plan).coordinator
        coordinators.append(coordinator)
        mount = await ModuleLoader(coordinator=coordinator).load(MODULE_ID, cfg, coordinator=coordinator)
        cleanup = await mount(coordinator)
        coordinator.register_cleanup(cleanup)
        _, ready = mount.__on_session_ready__  # type: ignore[attr-defined]
        await ready(coordinator)
        return dict(coordinator.get("tools") or {}), coordinator

    yield factory
    for coordinator in coordinators:
        await coordinator.cleanup()


async def _call_every_tool(tools: dict[str, Any]) -> dict[str, ToolResult]:
    """Call each tool once with valid input, in an order where each call has what it needs."""
    results: dict[str, ToolResult] = {}

    async def call(name: str, args: dict[str, Any]) -> ToolResult:
        results[name] = await tools[name].execute(args)
        return results[name]

    stored = await call("memory_store", {"content": "The staging cluster runs Kubernetes 1.30", "kind": "fact"})
    memory_id = stored.output["id"] if stored.success else "00000000-0000-0000-0000-000000000000"
    await call("memory_search", {"query": "which Kubernetes version does staging run?"})
    await call("memory_get", {"id": memory_id})
    await call("memory_list", {"limit": 5})
    if "memory_unlink" in tools:
        update = {"content": "The staging cluster now runs Kubernetes 1.31", "kind": "fact", "supersedes": memory_id}
        newer = await tools["memory_store"].execute(update)
        newer_id = newer.output["id"] if newer.success else "00000000-0000-0000-0000-000000000000"
        await call("memory_unlink", {"id": newer_id})
    if "memory_link" in tools:
        await call("memory_link", {"id": newer_id, "supersedes": memory_id})
    if "memory_unmerge" in tools:
        wording = "Every night at 1 am the file server is backed up."
        original = "The file server is backed up every night at 1 am."
        await tools["memory_store"].execute({"content": original, "kind": "fact"})
        merged = await tools["memory_store"].execute({"content": wording, "kind": "fact"})
        merged_id = merged.output["id"] if merged.success else "00000000-0000-0000-0000-000000000000"
        await call("memory_unmerge", {"id": merged_id, "wording": wording})
    await call("memory_forget", {"id": memory_id})
    if "plan_store" in tools:
        actions = [{"tool": "bash", "args": {"command": "make deploy-staging"}}]
        await call("plan_store", {"prompt": "Deploy the API to staging", "actions": actions})
        await call("plan_lookup", {"prompt": "Deploy the API to staging"})
        await call("plan_reward", {"prompt": "Deploy the API to staging", "success": True})
        listed = await call("plan_list", {})
        plan_id = listed.output["plans"][0]["plan_id"] if listed.success else "00000000-0000-0000-0000-000000000000"
        await call("plan_get", {"plan_id": plan_id})
        await call("plan_forget", {"plan_id": plan_id})
    if "cache_write" in tools:
        written = await call("cache_write", {"kind": "fact", "content": "The API listens on port 8080"})
        block_id = written.output["block_id"] if written.success else "00000000-0000-0000-0000-000000000000"
        await call("cache_search", {"query": "which port does the API use?"})
        await call("cache_get", {"block_id": block_id})
        await call("cache_pack", {"token_budget": 200})
        await call("cache_compact", {})
    return results


async def test_loader_resolves_the_installed_entry_point_to_our_mount() -> None:
    loader = ModuleLoader(coordinator=AmplifierSession(PLAN).coordinator)
    await loader.load(MODULE_ID, {})
    assert loader._loaded_modules[MODULE_ID] is agent_memory.mount


async def test_every_tool_is_mounted_in_a_real_session(session_mount: Callable[..., Awaitable[Mounted]]) -> None:
    tools, _ = await session_mount({"agent_identity": "alice"})
    assert set(tools) == ALL_TOOLS


async def test_every_tool_answers_valid_input_in_a_real_session(
    session_mount: Callable[..., Awaitable[Mounted]],
) -> None:
    tools, _ = await session_mount({"agent_identity": "alice"})
    results = await _call_every_tool(tools)
    assert set(results) == ALL_TOOLS, f"no valid call defined for {sorted(ALL_TOOLS - set(results))}"
    failed = {name: r.error for name, r in results.items() if not r.success}
    assert not failed


async def test_loader_finds_on_session_ready_next_to_the_entry_point_mount() -> None:
    loader = ModuleLoader(coordinator=AmplifierSession(PLAN).coordinator)
    mount = await loader.load(MODULE_ID, {})
    assert mount.__on_session_ready__ == (MODULE_ID, agent_memory.on_session_ready)  # type: ignore[attr-defined]


async def test_session_ready_registers_the_agent_identity_capability(
    session_mount: Callable[..., Awaitable[Mounted]],
) -> None:
    _, coordinator = await session_mount({"agent_identity": "alice"})
    assert coordinator.get_capability("agent_identity") == "alice"


async def test_mount_leaves_the_identity_unresolved_and_registers_no_capability(root: Path) -> None:
    coordinator = MockCoordinator()
    cleanup = await agent_memory.mount(coordinator, {"storage_root": str(root), "agent_identity": "alice"})
    try:
        assert coordinator.get_capability("agent_identity") is None
    finally:
        await cleanup()


async def test_a_capability_registered_after_mount_names_the_identity(root: Path, embedder: CachedEmbedder) -> None:
    coordinator = MockCoordinator()
    cleanup = await agent_memory.mount(coordinator, {"storage_root": str(root), "agent_identity": "from-config"})
    try:
        # A hook module mounts after the tools and registers the capability in its own mount.
        coordinator.register_capability("agent_identity", "from-hook")
        await agent_memory.on_session_ready(coordinator)
        assert await _identity_used(dict(coordinator.mount_points["tools"])) == "from-hook"
    finally:
        await cleanup()


async def test_the_first_tool_call_resolves_the_identity_when_session_ready_never_ran(
    root: Path, embedder: CachedEmbedder
) -> None:
    coordinator = MockCoordinator()
    cleanup = await agent_memory.mount(coordinator, {"storage_root": str(root)})
    try:
        coordinator.register_capability("agent_identity", "late-capability")
        assert await _identity_used(dict(coordinator.mount_points["tools"])) == "late-capability"
    finally:
        await cleanup()


async def test_the_identity_is_resolved_once_and_kept(root: Path, embedder: CachedEmbedder) -> None:
    coordinator = MockCoordinator()
    cleanup = await agent_memory.mount(coordinator, {"storage_root": str(root), "agent_identity": "first"})
    try:
        await agent_memory.on_session_ready(coordinator)
        coordinator.register_capability("agent_identity", "too-late")
        assert await _identity_used(dict(coordinator.mount_points["tools"])) == "first"
    finally:
        await cleanup()


async def test_mount_declares_every_event_to_observability(session_mount: Callable[..., Awaitable[Mounted]]) -> None:
    _, coordinator = await session_mount({"agent_identity": "alice"})
    declared = [event for batch in await coordinator.collect_contributions("observability.events") for event in batch]
    assert set(EVENTS) <= set(declared)


async def test_tool_call_emits_its_event_with_identity_and_session(
    session_mount: Callable[..., Awaitable[Mounted]], tool_timer: float
) -> None:
    tools, coordinator = await session_mount({"agent_identity": "alice"})
    seen: list[dict[str, Any]] = []

    async def record(event: str, data: dict[str, Any]) -> HookResult:
        seen.append(data)
        return HookResult(action="continue")

    coordinator.hooks.register("memory:stored", record, priority=10, name="test-recorder")
    await tools["memory_store"].execute({"content": "Releases are cut on Tuesdays"})
    assert len(seen) == 1
    assert seen[0]["identity"] == "alice"
    assert seen[0]["session_id"] == coordinator.session_id
    assert seen[0]["latency_ms"] == tool_timer


async def test_mount_on_a_mock_coordinator_opens_no_store(root: Path) -> None:
    coordinator = MockCoordinator()
    open_before = storage.open_store_count()
    cleanup = await agent_memory.mount(coordinator, {"storage_root": str(root), "agent_identity": "alice"})
    try:
        assert set(coordinator.mount_points["tools"]) == ALL_TOOLS
        assert storage.open_store_count() == open_before
        assert os.listdir(root) == []
    finally:
        await cleanup()


async def test_mount_twice_on_two_coordinators_both_answer(
    mount_tools: Callable[..., Awaitable[tuple[dict[str, Any], MockCoordinator]]],
) -> None:
    first, _ = await mount_tools()
    second, _ = await mount_tools()
    stored = await first["memory_store"].execute({"content": "The on-call rotation changes on Mondays"})
    assert stored.success, stored.error
    found = await second["memory_get"].execute({"id": stored.output["id"]})
    assert found.success, found.error
    assert found.output["memory"]["content"] == "The on-call rotation changes on Mondays"


async def _assert_every_tool_fails_with(tools: dict[str, Any], *fragments: str) -> None:
    assert set(tools) == ALL_TOOLS
    for name, tool in tools.items():
        result = await tool.execute({"query": "anything", "content": "anything"})
        assert not result.success, name
        for fragment in fragments:
            assert fragment in result.error["message"], (name, result.error["message"])


async def test_invalid_config_still_mounts_tools_that_report_it(root: Path) -> None:
    coordinator = MockCoordinator()
    cleanup = await agent_memory.mount(coordinator, {"storage_root": str(root), "near_duplicate": 0.9})
    try:
        await _assert_every_tool_fails_with(dict(coordinator.mount_points["tools"]), "near_duplicate", "config")
    finally:
        await cleanup()


async def test_invalid_identity_still_mounts_tools_that_report_it(root: Path) -> None:
    coordinator = MockCoordinator()
    cleanup = await agent_memory.mount(coordinator, {"storage_root": str(root), "agent_identity": "../escape"})
    try:
        await _assert_every_tool_fails_with(dict(coordinator.mount_points["tools"]), "'../escape'", "invalid")
        assert os.listdir(root) == []
    finally:
        await cleanup()


async def test_required_identity_missing_makes_every_tool_explain_how_to_set_one(root: Path) -> None:
    coordinator = MockCoordinator()
    cleanup = await agent_memory.mount(coordinator, {"storage_root": str(root), "require_identity": True})
    try:
        await _assert_every_tool_fails_with(
            dict(coordinator.mount_points["tools"]), "require_identity", "agent_identity", IDENTITY_ENV
        )
    finally:
        await cleanup()


async def _identity_used(tools: dict[str, Any]) -> str:
    result = await tools["memory_list"].execute({})
    assert result.success, result.error
    return str(result.output["identity"])


async def test_identity_capability_wins_over_config(root: Path, embedder: CachedEmbedder) -> None:
    coordinator = MockCoordinator()
    coordinator.register_capability("agent_identity", "from-capability")
    cleanup = await agent_memory.mount(coordinator, {"storage_root": str(root), "agent_identity": "from-config"})
    try:
        assert await _identity_used(dict(coordinator.mount_points["tools"])) == "from-capability"
    finally:
        await cleanup()


async def test_identity_config_wins_over_mount_plan(session_mount: Callable[..., Awaitable[Mounted]]) -> None:
    tools, _ = await session_mount(
        {"agent_identity": "from-config"}, session={"capabilities": {"agent_identity": "from-plan"}}
    )
    assert await _identity_used(tools) == "from-config"


async def test_identity_mount_plan_wins_over_env(
    session_mount: Callable[..., Awaitable[Mounted]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(IDENTITY_ENV, "from-env")
    tools, coordinator = await session_mount(session={"capabilities": {"agent_identity": "from-plan"}})
    assert await _identity_used(tools) == "from-plan"
    assert coordinator.get_capability("agent_identity") == "from-plan"


async def test_identity_from_the_mount_plan_is_logged_as_deprecated(
    session_mount: Callable[..., Awaitable[Mounted]], caplog: pytest.LogCaptureFixture
) -> None:
    await session_mount(session={"capabilities": {"agent_identity": "from-plan"}})
    assert any("deprecated" in r.getMessage() and r.levelname == "WARNING" for r in caplog.records)


async def test_identity_env_wins_over_default(
    session_mount: Callable[..., Awaitable[Mounted]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(IDENTITY_ENV, "from-env")
    tools, _ = await session_mount()
    assert await _identity_used(tools) == "from-env"


async def test_identity_defaults_to_default(session_mount: Callable[..., Awaitable[Mounted]]) -> None:
    tools, _ = await session_mount()
    assert await _identity_used(tools) == "default"
