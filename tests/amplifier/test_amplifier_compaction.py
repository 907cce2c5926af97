"""context:compaction on a real session's hooks: events that arrive together close each block once, and a
session that never used the working-memory cache is left alone (no store opened on its account)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from amplifier_core import AmplifierSession, HookResult
from data import DISTINCT_FACTS

import amplifier_module_tool_agent_memory as agent_memory
from amplifier_module_tool_agent_memory.embeddings.providers import CachedEmbedder
from amplifier_module_tool_agent_memory.store import edge

STATS = {"before_tokens": 9000, "after_tokens": 4000, "before_messages": 40, "after_messages": 12}


@dataclass
class Mounted:
    coordinator: Any
    closed: list[dict[str, Any]] = field(default_factory=list)


@pytest.fixture
async def session(root: Path, embedder: CachedEmbedder) -> AsyncIterator[Mounted]:
    """A real session's coordinator with the module mounted and ready; closed blocks recorded."""
    mounted = Mounted(AmplifierSession({"session": {"orchestrator": "loop-basic", "context": "context-simple"}})
                      .coordinator)

    async def record(event: str, data: dict[str, Any]) -> HookResult:
        mounted.closed.append(data)
        return HookResult(action="continue")

    mounted.coordinator.hooks.register("cache:block_closed", record, name="test-recorder")
    # What compaction opens is the question here: the warm-up, which opens the store at session ready, is off, and
    # so is recall's briefing, which a worker reads at session ready (its store opening would race the count).
    config = {"storage_root": str(root), "agent_identity": "alice", "warm_up": False, "recall": {"briefing_tokens": 0}}
    cleanup = await agent_memory.mount(mounted.coordinator, config)
    await agent_memory.on_session_ready(mounted.coordinator)
    yield mounted
    await cleanup()


async def test_compaction_events_that_arrive_together_close_the_block_once(session: Mounted, call: Any) -> None:
    tools = session.coordinator.get("tools")
    written = await call(tools["cache_write"], {"kind": "decision", "content": DISTINCT_FACTS[3]})
    await asyncio.gather(*(session.coordinator.hooks.emit("context:compaction", dict(STATS)) for _ in range(4)))
    assert [d["block_id"] for d in session.closed] == [written["block_id"]]


async def test_compaction_in_a_session_that_never_used_the_cache_opens_nothing(session: Mounted, root: Path) -> None:
    before = edge.open_store_count()
    await session.coordinator.hooks.emit("context:compaction", dict(STATS))
    assert edge.open_store_count() == before
    # The cache's collection stays unopened.
    assert not (root / "alice" / "cache").exists()
    assert session.closed == []
