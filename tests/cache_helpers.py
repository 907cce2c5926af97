"""Small helpers shared by the working-memory cache tests (plain functions, no fixtures)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from memory_helpers import ManualClock

from amplifier_module_tool_agent_memory.cache.models import CachePackInput, CacheSearchInput, CacheWriteInput
from amplifier_module_tool_agent_memory.cache.service import CacheService
from amplifier_module_tool_agent_memory.runtime import AgentMemory
from amplifier_module_tool_agent_memory.tokens import count_tokens

SECTION_NAMES = ("facts", "decisions", "snippets", "warnings")
# Tests that are not about dedup switch it off (cosine >= 1.0 only for identical vectors) so that
# short templated items never merge by accident.
NO_DEDUP: dict[str, Any] = {"dedup_threshold": 1.0}


def cache_service(
    make_runtime: Callable[..., AgentMemory], clock: ManualClock, *, identity: str = "alice", **cache: Any
) -> CacheService:
    """A runtime's cache service with the test's clock injected and ``cache`` config overrides."""
    rt = make_runtime(identity=identity, cache=cache)
    rt.clock = clock
    return rt.cache()


def note(svc: CacheService, content: str, kind: str = "fact", **fields: Any) -> dict[str, Any]:
    """cache_write through the service."""
    return svc.write(CacheWriteInput.model_validate({"kind": kind, "content": content, **fields}))


def pack(svc: CacheService, **fields: Any) -> dict[str, Any]:
    """cache_pack through the service."""
    return svc.pack(CachePackInput.model_validate(fields))


def search(svc: CacheService, query: str, **fields: Any) -> list[dict[str, Any]]:
    """cache_search through the service."""
    return svc.search(CacheSearchInput.model_validate({"query": query, **fields}))


def packed_texts(out: dict[str, Any]) -> list[str]:
    """Every item line of a pack, all sections."""
    return [line for name in SECTION_NAMES for line in out.get(name, [])]


def rendered_tokens(out: dict[str, Any]) -> int:
    """Tokens of the pack exactly as the model receives it (json.dumps, as ToolResult does)."""
    return count_tokens(json.dumps(out))


def filler(i: int, chars: int) -> str:
    """A distinct item text of exactly ``chars`` characters."""
    head = f"item {i:04d}: "
    body = ("lorem ipsum dolor sit amet " * (chars // 20 + 2))[: chars - len(head)]
    return head + body
