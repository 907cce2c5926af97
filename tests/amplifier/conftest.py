"""Fixtures of the whole-turn tests: each real orchestrator in turn, and sessions started from a mount plan
(see real_stack.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from amplifier_core import AmplifierSession, HookResult
from real_stack import (
    MODULE_ID,
    ORCHESTRATORS,
    RECORDED,
    STACK,
    LocalSources,
    Stack,
    StackFactory,
    orchestrator_installed,
)

from amplifier_module_tool_agent_memory.embeddings.providers import CachedEmbedder


@pytest.fixture(params=ORCHESTRATORS)
def orchestrator(request: pytest.FixtureRequest) -> str:
    """Each real orchestrator in turn; a test skips, saying why, when it is not installed."""
    module_id = str(request.param)
    if not orchestrator_installed(module_id):
        pytest.skip(f"{module_id} is not installed: run `make install` with ../shared/vendor beside the "
                    "repository (or AGENT_MEMORY_VENDOR_DIR set)")
    return module_id


@pytest.fixture
async def start_stack(
    orchestrator: str, root: Path, embedder: CachedEmbedder, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[StackFactory]:
    """Start sessions from a mount plan under the real ``orchestrator``; each is cleaned up at teardown."""
    monkeypatch.syspath_prepend(str(STACK))
    started: list[Stack] = []

    async def start(config: dict[str, Any] | None = None, hooks: list[dict[str, Any]] | None = None,
                    session: dict[str, Any] | None = None, tools: list[dict[str, Any]] | None = None) -> Stack:
        plan = {
            "session": {
                "orchestrator": {"module": orchestrator},
                "context": {"module": "context-compacting", "config": {"max_tokens": 1_000_000}},
                **(session or {}),
            },
            "providers": [{"module": "provider-scripted"}],
            "tools": [
                {"module": MODULE_ID, "source": "local folder",
                 "config": {"storage_root": str(root), "agent_identity": "alice", **(config or {})}},
                {"module": "tool-release"},
                *(tools or []),
            ],
            "hooks": hooks or [],
        }
        stack = Stack(AmplifierSession(plan))
        started.append(stack)
        await stack.coordinator.mount("module-source-resolver", LocalSources())

        async def record(event: str, data: dict[str, Any]) -> HookResult:
            stack.events.append((event, dict(data)))
            return HookResult(action="continue")

        for event in RECORDED:
            stack.coordinator.hooks.register(event, record, priority=1000, name=f"test-record-{event}")
        await stack.session.initialize()
        return stack

    yield start
    for stack in started:
        await stack.session.cleanup()


