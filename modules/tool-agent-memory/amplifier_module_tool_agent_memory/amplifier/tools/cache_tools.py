"""cache_* tools: the working-memory cache (write, two-phase search, compact, pack)."""

from __future__ import annotations

import asyncio
from typing import Any

from ...cache.calls import CURRENT_CALL, CallContext
from ...cache.models import CacheCompactInput, CacheGetInput, CachePackInput, CacheSearchInput, CacheWriteInput
from ...runtime import AgentMemory
from .base import AgentMemoryTool, Outcome


class CacheTool(AgentMemoryTool):
    """An AgentMemoryTool whose service may report side events (block closed, evicted) to emit after the call."""

    async def execute(self, input: dict[str, Any] | None) -> Any:  # noqa: A002 - the Tool protocol's name
        ctx = CallContext(loop=asyncio.get_running_loop())
        token = CURRENT_CALL.set(ctx)
        try:
            result = await super().execute(input)
        finally:
            CURRENT_CALL.reset(token)
        for event, data in ctx.events:
            await self.runtime.emit(event, data)
        return result


def _write(rt: AgentMemory, args: CacheWriteInput) -> Outcome:
    out = rt.cache().write(args)
    return Outcome(
        out,
        {"ids": [out["item_id"]], "count": 1, "scope": args.scope, "kind": args.kind, "merged": out["merged"],
         "block_id": out["block_id"], "block_status": out["block_status"], "token_count": out["token_count"]},
    )


def _search(rt: AgentMemory, args: CacheSearchInput) -> Outcome:
    hits = rt.cache().search(args)
    return Outcome(
        {"results": hits, "count": len(hits)},
        {"ids": [h["block_id"] for h in hits], "count": len(hits), "scope": args.scope},
    )


def _get(rt: AgentMemory, args: CacheGetInput) -> Outcome:
    block = rt.cache().get(args.block_id)
    return Outcome(block, {"ids": [args.block_id], "count": len(block["items"]), "scope": block["scope"]})


def _compact(rt: AgentMemory, args: CacheCompactInput) -> Outcome:
    out = rt.cache().compact(args.scope)
    return Outcome(
        out,
        {"ids": [i for i in (out["closed_block_id"], out["new_block_id"]) if i], "count": out["items_closed"],
         "scope": args.scope, "summary_generated": out["summary_generated"]},
    )


def _pack(rt: AgentMemory, args: CachePackInput) -> Outcome:
    out = rt.cache().pack(args)
    included = sum(len(out.get(name, [])) for name in ("facts", "decisions", "snippets", "warnings"))
    return Outcome(
        out,
        {"count": included, "scope": args.scope, "token_count": out["token_count"],
         "token_budget": args.token_budget or rt.config.cache.default_pack_budget, "full_tokens": out["full_tokens"],
         "version": out["version"], "is_fresh": out["is_fresh"], "delta": args.since_version is not None},
    )


def cache_tools(rt: AgentMemory) -> list[AgentMemoryTool]:
    """The cache_* tools bound to ``rt``."""
    return [
        CacheTool(
            rt, "cache_write",
            "Note a fact, decision, snippet or warning in short-term working memory (per scope, expires "
            "after 30 min unused). Near-duplicates merge.",
            CacheWriteInput, _write, "cache:written",
        ),
        CacheTool(
            rt, "cache_search",
            "Find working-memory blocks relevant to a query; returns block summaries (read one with cache_get).",
            CacheSearchInput, _search, "cache:searched",
        ),
        CacheTool(
            rt, "cache_get", "Read one working-memory block's live items in full.",
            CacheGetInput, _get, "cache:read",
        ),
        CacheTool(
            rt, "cache_compact", "Close the scope's open working-memory block now and summarise it.",
            CacheCompactInput, _compact, "cache:compacted",
        ),
        CacheTool(
            rt, "cache_pack",
            "Get a compact memory pack of a scope under a token budget (default 600): summary, facts, "
            "decisions, snippets, warnings. since_version gives only changes.",
            CachePackInput, _pack, "cache:packed",
        ),
    ]
