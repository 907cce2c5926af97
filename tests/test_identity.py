"""Agent identities: validated (never normalised into a path), resolved in a fixed order."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from amplifier_core.testing import MockCoordinator

import amplifier_module_tool_agent_memory as agent_memory
from amplifier_module_tool_agent_memory.embeddings.providers import CachedEmbedder
from amplifier_module_tool_agent_memory.errors import IdentityError
from amplifier_module_tool_agent_memory.identity import resolve_identity, validate_identity
from amplifier_module_tool_agent_memory.store.edge import acquire_store, remove_store_files

INVALID: list[object] = [
    "../x",
    "a/b",
    "..",
    "",
    "a" * 65,
    ".hidden",
    "-rf",
    "a..b",
    "/etc",
    "C:\\x",
    "al ice",
    "alice\n",
    "ali\x00ce",
    "émile",
    None,
    42,
    ["alice"],
]
VALID = ["alice", "a", "A" * 64, "agent-7", "team.bot_2", "0day"]


def _folders(root: Path) -> set[Path]:
    return {p for p in root.parent.rglob("*") if p.is_dir()}


@pytest.mark.parametrize("name", VALID)
def test_valid_identity_is_returned_unchanged(name: str) -> None:
    assert validate_identity(name) == name


@pytest.mark.parametrize("name", INVALID, ids=repr)
def test_invalid_identity_is_refused_with_the_rule(name: object) -> None:
    with pytest.raises(IdentityError) as err:
        validate_identity(name)
    message = str(err.value)
    assert "agent identity" in message
    assert ("must be a string" in message) if not isinstance(name, str) else ("1-64 letters" in message)


@pytest.mark.parametrize("name", [n for n in INVALID if isinstance(n, str) and n], ids=repr)
async def test_invalid_configured_identity_makes_every_tool_refuse_without_creating_a_folder(
    mount_tools: Callable[..., Any], root: Path, name: str, call: Any
) -> None:
    before = _folders(root)
    tools, _ = await mount_tools(agent_identity=name)
    for tool, args in [
        ("memory_store", {"content": "hello"}),
        ("memory_search", {"query": "hello"}),
        ("memory_list", {}),
    ]:
        error = await call.error(tools[tool], args)
        assert error["type"] == "identity_error"
        assert "is invalid" in error["message"]
    assert _folders(root) == before


async def test_invalid_identity_from_the_environment_is_refused(
    mount_tools: Callable[..., Any], monkeypatch: pytest.MonkeyPatch, root: Path, call: Any
) -> None:
    monkeypatch.setenv("AMPLIFIER_AGENT_IDENTITY", "../escape")
    before = _folders(root)
    tools, _ = await mount_tools(agent_identity=None)
    error = await call.error(tools["memory_store"], {"content": "hello"})
    assert error["type"] == "identity_error"
    assert "'../escape'" in error["message"]
    assert _folders(root) == before


async def test_non_string_identity_from_a_capability_is_refused(
    root: Path, embedder: CachedEmbedder, call: Any
) -> None:
    coordinator = MockCoordinator()
    coordinator.register_capability("agent_identity", {"name": "alice"})
    cleanup = await agent_memory.mount(coordinator, {"storage_root": str(root)})
    try:
        tool = coordinator.mount_points["tools"]["memory_list"]
        error = await call.error(tool, {})
        assert error["type"] == "identity_error"
        assert "must be a string, got dict" in error["message"]
    finally:
        await cleanup()


async def test_non_string_configured_identity_is_a_config_error(mount_tools: Callable[..., Any], call: Any) -> None:
    tools, _ = await mount_tools(agent_identity=42)
    error = await call.error(tools["memory_list"], {})
    assert error["type"] == "config_error"
    assert "agent_identity" in error["message"]


@pytest.mark.parametrize("name", ["../x", "..", "a/b", "/tmp/abs"])
def test_the_store_layer_refuses_a_path_like_identity(root: Path, name: str) -> None:
    before = _folders(root)
    with pytest.raises(IdentityError):
        acquire_store(root, name, "local:test", 384)
    with pytest.raises(IdentityError):
        remove_store_files(root, name)
    assert _folders(root) == before


async def test_a_valid_identity_gets_its_own_folder_under_the_root(
    mount_tools: Callable[..., Any], root: Path, call: Any
) -> None:
    tools, _ = await mount_tools(agent_identity="team.bot_2")
    await call(tools["memory_store"], {"content": "hello"})
    assert (root / "team.bot_2" / "store.json").is_file()
    assert {p.name for p in _folders(root) if p.parent == root} == {"team.bot_2"}


def test_resolution_prefers_capability_then_config_then_mount_plan_then_env(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    coordinator = MockCoordinator()
    coordinator.config["session"]["capabilities"] = {"agent_identity": "from-plan"}
    monkeypatch.setenv("AMPLIFIER_AGENT_IDENTITY", "from-env")
    assert resolve_identity(coordinator, None, require=False).source == "mount_plan"
    assert resolve_identity(coordinator, "from-config", require=False).name == "from-config"
    coordinator.register_capability("agent_identity", "from-cap")
    resolved = resolve_identity(coordinator, "from-config", require=False)
    assert (resolved.name, resolved.source) == ("from-cap", "capability")


def test_env_identity_is_used_when_nothing_else_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AMPLIFIER_AGENT_IDENTITY", "from-env")
    resolved = resolve_identity(MockCoordinator(), None, require=False)
    assert (resolved.name, resolved.source) == ("from-env", "env")


def test_default_identity_without_any_setting() -> None:
    resolved = resolve_identity(MockCoordinator(), None, require=False)
    assert (resolved.name, resolved.source, resolved.is_default) == ("default", "default", True)


def test_missing_identity_is_refused_when_required() -> None:
    with pytest.raises(IdentityError, match="AMPLIFIER_AGENT_IDENTITY"):
        resolve_identity(MockCoordinator(), None, require=True)


async def test_session_ready_registers_the_resolved_identity_as_a_capability(mount_tools: Callable[..., Any]) -> None:
    _, coordinator = await mount_tools(agent_identity="carol")
    await agent_memory.on_session_ready(coordinator)
    assert coordinator.get_capability("agent_identity") == "carol"


async def test_an_empty_configured_identity_is_refused_not_defaulted(
    mount_tools: Callable[..., Any], root: Path, call: Any
) -> None:
    tools, _ = await mount_tools(agent_identity="")
    error = await call.error(tools["memory_store"], {"content": "hello"})
    assert error["type"] == "identity_error"
    assert "agent identity '' is invalid" in error["message"]
    assert not (root / "default").exists()


def test_an_empty_identity_from_a_capability_is_refused() -> None:
    coordinator = MockCoordinator()
    coordinator.register_capability("agent_identity", "")
    with pytest.raises(IdentityError, match="is invalid"):
        resolve_identity(coordinator, "alice", require=False)


def test_an_empty_environment_variable_counts_as_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AMPLIFIER_AGENT_IDENTITY", "")
    assert resolve_identity(MockCoordinator(), None, require=False).source == "default"
