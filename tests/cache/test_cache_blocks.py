"""Blocks: closing at the threshold, on cache_compact and on the session's context:pre_compact,
summaries, eviction of the oldest closed block, and persistence across a reopen."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from amplifier_core import AmplifierSession
from data import DISTINCT_FACTS, NO_DEDUP, filler

import amplifier_module_tool_agent_memory as agent_memory
from amplifier_module_tool_agent_memory.cache.summarise import SUMMARY_MAX_TOKENS
from amplifier_module_tool_agent_memory.embeddings.providers import CachedEmbedder
from amplifier_module_tool_agent_memory.runtime import AgentMemory
from amplifier_module_tool_agent_memory.tokens import count_tokens


def test_block_stays_open_below_the_close_threshold(
    make_runtime: Callable[..., AgentMemory], make_cache: Any, make_clock: Any
) -> None:
    svc = make_cache(close_threshold_tokens=100, **NO_DEDUP, clock=make_clock())
    first = svc.note(filler(1, 200))  # 50 tokens
    second = svc.note(filler(2, 196))  # 49 tokens: 99 in all
    assert (first["block_status"], second["block_status"]) == ("open", "open")
    assert second["block_id"] == first["block_id"]
    assert second["token_count"] == 99
    assert second["items_in_block"] == 2


def test_block_closes_when_its_count_reaches_the_threshold(
    make_runtime: Callable[..., AgentMemory], make_cache: Any, make_clock: Any
) -> None:
    svc = make_cache(close_threshold_tokens=100, **NO_DEDUP, clock=make_clock())
    first = svc.note(filler(1, 200))
    closing = svc.note(filler(2, 200))  # 100 tokens: reaches the threshold
    after = svc.note(filler(3, 40))
    assert closing["block_status"] == "closed"
    assert closing["block_id"] == first["block_id"]
    assert closing["token_count"] == 100
    assert after["block_id"] == closing["new_block_id"] != first["block_id"]
    assert after["block_status"] == "open"
    assert svc.get(first["block_id"])["status"] == "closed"


def test_closed_block_summary_lists_warnings_and_decisions_first_with_their_kinds(
    make_runtime: Callable[..., AgentMemory], make_cache: Any, make_clock: Any,
) -> None:
    svc = make_cache(clock=make_clock())
    svc.note(DISTINCT_FACTS[0], "fact", importance=0.9)
    svc.note(DISTINCT_FACTS[1], "snippet", importance=1.0, file_ref="src/style.go")
    svc.note(DISTINCT_FACTS[3], "decision", importance=0.2)
    svc.note(DISTINCT_FACTS[5], "warning", importance=0.1)
    closed = svc.compact("default")
    summary = svc.get(closed["closed_block_id"])["summary"]
    assert summary.splitlines() == [
        f"warning: {DISTINCT_FACTS[5]}",
        f"decision: {DISTINCT_FACTS[3]}",
        f"snippet: [src/style.go] {DISTINCT_FACTS[1]}",
        f"fact: {DISTINCT_FACTS[0]}",
    ]


def test_block_summary_never_exceeds_200_tokens(
    make_runtime: Callable[..., AgentMemory], make_cache: Any, make_clock: Any
) -> None:
    svc = make_cache(close_threshold_tokens=5000, **NO_DEDUP, clock=make_clock())
    for i in range(40):
        svc.note(filler(i, 400), "warning" if i % 5 == 0 else "fact")
    closed = svc.compact("default")
    summary = svc.get(closed["closed_block_id"])["summary"]
    assert count_tokens(summary) <= SUMMARY_MAX_TOKENS
    assert summary.splitlines()[-1].startswith("(+") and summary.splitlines()[0].startswith("warning:")


def test_cache_compact_closes_the_open_block_and_opens_a_new_one(
    make_runtime: Callable[..., AgentMemory], make_cache: Any, make_clock: Any
) -> None:
    svc = make_cache(clock=make_clock())
    written = svc.note(DISTINCT_FACTS[0])
    out = svc.compact("default")
    assert out["closed_block_id"] == written["block_id"]
    assert out["summary_generated"] is True and out["summary_source"] == "extractive"
    assert out["new_block_id"] != written["block_id"]
    assert svc.note(DISTINCT_FACTS[1])["block_id"] == out["new_block_id"]


def test_cache_compact_of_an_empty_block_closes_nothing(
    make_runtime: Callable[..., AgentMemory], make_cache: Any, make_clock: Any
) -> None:
    svc = make_cache(clock=make_clock())
    out = svc.compact("task:empty")
    assert out["closed_block_id"] is None and out["summary_generated"] is False
    assert svc.compact("task:empty")["new_block_id"] == out["new_block_id"]


def test_the_oldest_closed_block_is_evicted_with_its_items_when_the_21st_closes(
    make_runtime: Callable[..., AgentMemory], make_cache: Any, make_clock: Any,
) -> None:
    svc = make_cache(clock=make_clock())
    closed_ids = []
    for i in range(21):
        svc.note(DISTINCT_FACTS[i])
        closed_ids.append(svc.compact("default")["closed_block_id"])
    hits = svc.search(DISTINCT_FACTS[0], limit=20)
    found = {h["block_id"] for h in hits if h["status"] == "closed"}
    assert closed_ids[0] not in found
    assert len([b for b in closed_ids[1:] if svc.get(b)["status"] == "closed"]) == 20
    assert DISTINCT_FACTS[0] not in str(svc.pack(token_budget=8000))
    assert DISTINCT_FACTS[1] in str(svc.pack(token_budget=8000))


def test_evicted_block_cannot_be_read(
    make_runtime: Callable[..., AgentMemory], make_cache: Any, make_clock: Any
) -> None:
    svc = make_cache(max_closed_blocks=1, clock=make_clock())
    svc.note(DISTINCT_FACTS[0])
    first = svc.compact("default")["closed_block_id"]
    svc.note(DISTINCT_FACTS[1])
    svc.compact("default")
    try:
        svc.get(first)
    except Exception as exc:
        assert "evicted" in str(exc)
    else:
        raise AssertionError("reading an evicted block must fail")


def test_blocks_and_items_survive_a_reopen(
    make_runtime: Callable[..., AgentMemory], make_cache: Any, make_clock: Any
) -> None:
    clock = make_clock()
    first = make_runtime(cache=NO_DEDUP)
    first.clock = clock
    svc = make_cache.drive(first.cache())
    svc.note(DISTINCT_FACTS[0], "decision")
    closed = svc.compact("default")
    written = svc.note(DISTINCT_FACTS[1], "warning")
    version = svc.pack()["version"]
    first.close()  # the last reference: the store is flushed and closed, as at process exit
    reopened = make_cache(**NO_DEDUP, clock=clock)
    out = reopened.pack()
    assert DISTINCT_FACTS[0] in out["decisions"] and DISTINCT_FACTS[1] in out["warnings"]
    assert out["version"] == version
    assert reopened.get(closed["closed_block_id"])["status"] == "closed"
    assert reopened.note(DISTINCT_FACTS[2])["block_id"] == written["block_id"]


async def test_context_pre_compact_closes_the_open_block_in_a_real_session(
    root: Path, embedder: CachedEmbedder, call: Any
) -> None:
    session = AmplifierSession({"session": {"orchestrator": "loop-basic", "context": "context-simple"}})
    seen: list[dict[str, Any]] = []

    async def record(event: str, data: dict[str, Any]) -> Any:
        from amplifier_core import HookResult

        seen.append(data)
        return HookResult(action="continue")

    session.coordinator.hooks.register("cache:block_closed", record, name="test-recorder")
    cleanup = await agent_memory.mount(session.coordinator, {"storage_root": str(root), "agent_identity": "alice"})
    try:
        tools = session.coordinator.get("tools")
        written = await call(tools["cache_write"], {"kind": "decision", "content": DISTINCT_FACTS[3]})
        assert written["block_status"] == "open"
        await session.coordinator.hooks.emit("context:pre_compact", {"reason": "context limit"})
        block = await call(tools["cache_get"], {"block_id": written["block_id"]})
        assert block["status"] == "closed"
        assert block["summary"] == f"decision: {DISTINCT_FACTS[3]}"
        assert [d["block_id"] for d in seen] == [written["block_id"]]
        later = await call(tools["cache_write"], {"kind": "fact", "content": DISTINCT_FACTS[4]})
        assert later["block_id"] != written["block_id"]
    finally:
        await cleanup()
