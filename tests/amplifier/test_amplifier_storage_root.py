"""Our own default storage root: ~/.amplifier/agent-memory. ~/.amplifier/memory is the store of the
official amplifier-bundle-memory (a git repository with MEMORY.md): nothing is written there, and our
stores left there by an older version are reported with the command that moves them, never moved."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from amplifier_module_tool_agent_memory import config as config_module
from amplifier_module_tool_agent_memory.config import ROOT_ENV, legacy_default_stores, parse_config
from amplifier_module_tool_agent_memory.embeddings.providers import CachedEmbedder
from amplifier_module_tool_agent_memory.identity import ResolvedIdentity
from amplifier_module_tool_agent_memory.runtime import AgentMemory


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh home folder, no root configured anywhere, and the once-per-process warning re-armed."""
    path = tmp_path / "home"
    path.mkdir()
    monkeypatch.setenv("HOME", str(path))
    monkeypatch.delenv(ROOT_ENV, raising=False)
    monkeypatch.setattr(config_module, "_warned_legacy", set())
    return path


@pytest.fixture
def bundle_memory_store(home: Path) -> Path:
    """amplifier-bundle-memory's store as that bundle leaves it: a git repository with MEMORY.md."""
    store = home / ".amplifier" / "memory"
    (store / ".git").mkdir(parents=True)
    (store / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (store / "MEMORY.md").write_text("- The user prefers tabs.\n")
    return store


def _old_agent_memory_store(legacy_root: Path, identity: str) -> Path:
    folder = legacy_root / identity
    (folder / "memories").mkdir(parents=True)
    (folder / "store.json").write_text(json.dumps({"model_id": "local/all-MiniLM-L6-v2-int8", "dim": 384,
                                                   "schema": 1}))
    return folder


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_default_root_is_our_own_folder(home: Path) -> None:
    assert parse_config({}).resolved_root() == (home / ".amplifier" / "agent-memory").resolve()


def test_environment_variable_overrides_the_default_root(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ROOT_ENV, str(home / "elsewhere"))
    assert parse_config({}).resolved_root() == (home / "elsewhere").resolve()


def test_config_overrides_the_environment_variable(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ROOT_ENV, str(home / "from-env"))
    assert parse_config({"storage_root": str(home / "from-config")}).resolved_root() == (home / "from-config").resolve()


def test_a_default_store_leaves_the_memory_bundles_folder_untouched(
    home: Path, bundle_memory_store: Path, embedder: CachedEmbedder
) -> None:
    before = _snapshot(bundle_memory_store)
    runtime = AgentMemory(parse_config({}), ResolvedIdentity("alice", "config"))
    try:
        runtime.store()
    finally:
        runtime.close()
    assert (home / ".amplifier" / "agent-memory" / "alice" / "store.json").is_file()
    assert _snapshot(bundle_memory_store) == before


def test_our_stores_under_the_old_default_are_found(home: Path, bundle_memory_store: Path) -> None:
    _old_agent_memory_store(bundle_memory_store, "alice")
    _old_agent_memory_store(bundle_memory_store, "ops-bot")
    assert legacy_default_stores() == ["alice", "ops-bot"]


def test_the_memory_bundles_own_folders_are_not_taken_for_ours(home: Path, bundle_memory_store: Path) -> None:
    (bundle_memory_store / "notes").mkdir()
    (bundle_memory_store / "notes" / "store.json").write_text("not ours")
    assert legacy_default_stores() == []


def test_a_store_already_moved_is_not_reported(home: Path, bundle_memory_store: Path) -> None:
    _old_agent_memory_store(bundle_memory_store, "alice")
    (home / ".amplifier" / "agent-memory" / "alice").mkdir(parents=True)
    assert legacy_default_stores() == []


def test_old_stores_are_reported_once_with_the_move_command_and_not_moved(
    home: Path, bundle_memory_store: Path, caplog: pytest.LogCaptureFixture
) -> None:
    old = _old_agent_memory_store(bundle_memory_store, "alice")
    before = _snapshot(bundle_memory_store)
    with caplog.at_level(logging.WARNING, logger=config_module.__name__):
        parse_config({}).resolved_root()
        parse_config({}).resolved_root()
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1
    assert "alice" in warnings[0]
    assert f"mv {old}" in warnings[0]
    assert _snapshot(bundle_memory_store) == before


def test_no_report_when_a_root_is_configured(
    home: Path, bundle_memory_store: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _old_agent_memory_store(bundle_memory_store, "alice")
    with caplog.at_level(logging.WARNING, logger=config_module.__name__):
        parse_config({"storage_root": str(home / "mine")}).resolved_root()
    assert not [r for r in caplog.records if r.levelname == "WARNING"]
