"""Summarisers: the extractive one is deterministic; the LLM one uses the session's provider and falls back."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from amplifier_core import AmplifierSession
from amplifier_core.message_models import ChatRequest, ChatResponse, TextBlock
from data import DISTINCT_FACTS

import amplifier_module_tool_agent_memory as agent_memory
from amplifier_module_tool_agent_memory.cache.models import CacheItem
from amplifier_module_tool_agent_memory.cache.summarise import (
    SUMMARY_MAX_TOKENS,
    extractive_lines,
    gist,
    render_summary,
)
from amplifier_module_tool_agent_memory.embeddings.providers import CachedEmbedder
from amplifier_module_tool_agent_memory.tokens import count_tokens

NOW = datetime(2026, 1, 10, 9, 0, tzinfo=UTC)


def _item(i: int, kind: str, importance: float, content: str) -> CacheItem:
    return CacheItem(
        id=f"id-{i}", scope="s", block_id="b", kind=kind, content=content, importance=importance,  # type: ignore[arg-type]
        created_at=NOW, updated_at=NOW, ttl_minutes=30, version=i, tokens=1,
    )


def test_extractive_summary_is_the_same_whatever_the_write_order() -> None:
    items = [_item(i, k, 0.1 * i, DISTINCT_FACTS[i]) for i, k in enumerate(["fact", "warning", "decision", "snippet"])]
    assert extractive_lines(items) == extractive_lines(list(reversed(items)))


def test_gist_keeps_the_first_sentence_and_cuts_long_ones_at_a_word() -> None:
    assert gist("First point. Second point.") == "First point."
    long = "word " * 60
    assert len(gist(long)) <= 120 and gist(long).endswith("…")


def test_summary_leaves_out_lines_of_items_no_longer_live() -> None:
    items = [_item(i, "fact", 0.5, DISTINCT_FACTS[i]) for i in range(3)]
    lines = extractive_lines(items)
    shown = render_summary(lines, {"id-0", "id-2"}, 2)
    assert DISTINCT_FACTS[1] not in shown and DISTINCT_FACTS[0] in shown


class _Provider:
    """A stand-in for the session's LLM provider (no network here): answers with a fixed summary."""

    name = "stand-in"

    def __init__(self, answer: str | None) -> None:
        self.answer = answer
        self.requests: list[ChatRequest] = []
        self.kwargs: list[dict[str, Any]] = []

    async def complete(self, request: ChatRequest, **kwargs: Any) -> ChatResponse:
        self.requests.append(request)
        self.kwargs.append(kwargs)
        if self.answer is None:
            raise RuntimeError("provider unavailable")
        return ChatResponse(content=[TextBlock(text=self.answer)])


async def _close_with(call: Any, provider: _Provider, root: Path) -> dict[str, Any]:
    session = AmplifierSession({"session": {"orchestrator": "loop-basic", "context": "context-simple"}})
    await session.coordinator.mount("providers", provider, name="stand-in")
    cleanup = await agent_memory.mount(
        session.coordinator, {"storage_root": str(root), "agent_identity": "alice", "cache": {"summariser": "llm"}}
    )
    try:
        tools = session.coordinator.get("tools")
        written = await call(tools["cache_write"], {"kind": "decision", "content": DISTINCT_FACTS[3]})
        compacted = await call(tools["cache_compact"], {})
        block = await call(tools["cache_get"], {"block_id": written["block_id"]})
        search = await call(tools["cache_search"], {"query": "Python 3.9 support"})
        return {"compact": compacted, "block": block, "search": search}
    finally:
        await cleanup()


async def test_llm_summariser_summarises_with_the_sessions_provider(
    root: Path, embedder: CachedEmbedder, call: Any
) -> None:
    # The answer is the provider's, but what is kept of it is ours to shape: cut to the summary's
    # token budget, a credential the model wrote out redacted, and the call made as a background call.
    first = "decision: Python 3.9 support ends in March."
    secret = "Qm7vX2pLk9RzTw4Y"
    answer = f"{first}\nfact: the release bot logs in with password={secret}\n" + "fact: filler words " * 200
    provider = _Provider(answer)
    result = await _close_with(call, provider, root)
    summary = result["block"]["summary"]
    assert result["compact"]["summary_source"] == "llm"
    assert summary.startswith(first) and summary != f"decision: {DISTINCT_FACTS[3]}"  # not the extractive one
    assert secret not in json.dumps(result) and "password=[REDACTED:password_assignment]" in summary
    assert count_tokens(summary) <= SUMMARY_MAX_TOKENS < count_tokens(answer)
    (request,) = provider.requests
    assert DISTINCT_FACTS[3] in str(request.messages[0].content)
    assert request.metadata == {"stream": False} and provider.kwargs == [{"extended_thinking": False}]
    # The block is found by its LLM summary (embedded in place of the extractive one).
    assert [hit["block_id"] for hit in result["search"]["results"]][:1] == [result["block"]["block_id"]]


async def test_llm_summariser_falls_back_to_extractive_when_the_provider_fails(
    root: Path, embedder: CachedEmbedder, call: Any
) -> None:
    result = await _close_with(call, _Provider(None), root)
    assert result["compact"]["summary_source"] == "extractive"
    assert result["block"]["summary"] == f"decision: {DISTINCT_FACTS[3]}"
