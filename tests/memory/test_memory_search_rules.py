"""Search rules that sit between the tool input and the ranking: limits, date-only bounds, strict numbers."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from data import DISTINCT_FACTS

from amplifier_module_tool_agent_memory.memory.models import MemorySearchInput, MemoryStoreInput
from amplifier_module_tool_agent_memory.runtime import AgentMemory


def _stored(rt: AgentMemory, facts: tuple[str, ...]) -> None:
    for fact in facts:
        rt.memory().store(MemoryStoreInput(content=fact))


def test_search_without_limit_uses_the_configured_default(make_runtime: Callable[..., AgentMemory]) -> None:
    rt = make_runtime(memory={"default_limit": 3})
    _stored(rt, DISTINCT_FACTS[:8])
    assert len(rt.memory().search(MemorySearchInput(query="team decisions"))) == 3


def test_date_only_until_includes_that_whole_day(make_runtime: Callable[..., AgentMemory], make_clock: Any) -> None:
    rt = make_runtime()
    clock = make_clock(datetime(2026, 3, 5, 18, 30, tzinfo=UTC))
    rt.clock = clock
    _stored(rt, DISTINCT_FACTS[:1])
    clock.advance(days=1)
    _stored(rt, DISTINCT_FACTS[1:2])
    results = rt.memory().search(MemorySearchInput(query="billing invoices", until="2026-03-05"))
    assert [r["content"] for r in results] == [DISTINCT_FACTS[0]]


async def test_boolean_importance_is_refused(tools: dict[str, object]) -> None:
    result = await tools["memory_store"].execute({"content": "x marks the spot", "importance": True})  # type: ignore[attr-defined]
    assert not result.success
    assert "importance" in result.error["message"]


async def test_boolean_limit_is_refused(tools: dict[str, object]) -> None:
    result = await tools["memory_search"].execute({"query": "anything", "limit": True})  # type: ignore[attr-defined]
    assert not result.success
    assert "limit" in result.error["message"]



def test_search_compares_no_pair_of_chat_excerpts(make_runtime: Callable[..., AgentMemory], make_clock: Any) -> None:
    rt = make_runtime()
    clock = make_clock()
    rt.clock = clock
    for remark in (
        "We went hiking on Saturday with Tom. The trail was muddy but the view from the top was great.",
        "We went hiking on Sunday with Anna. The trail was dry, the lake was cold and the view was poor.",
    ):
        rt.memory().store(MemoryStoreInput(content=remark, kind="fact"))
        clock.advance(minutes=5)
    results = rt.memory().search(MemorySearchInput(query="was the hiking trail muddy?"))
    assert results[0]["content"].startswith("We went hiking on Saturday")  # the older first: a pair to compare
    assert not rt.memory()._changes_seen
