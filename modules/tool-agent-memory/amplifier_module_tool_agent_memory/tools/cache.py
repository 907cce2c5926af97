"""Handlers of the cache_* tools: the working-memory cache (write, two-phase search, compact, pack)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .spec import Outcome

if TYPE_CHECKING:
    from ..cache.models import CacheCompactInput, CacheGetInput, CachePackInput, CacheSearchInput, CacheWriteInput
    from ..runtime import AgentMemory


def write(rt: AgentMemory, args: CacheWriteInput) -> Outcome:
    out = rt.cache().write(args)
    return Outcome(
        out,
        {"ids": [out["item_id"]], "count": 1, "scope": args.scope, "kind": args.kind, "merged": out["merged"],
         "block_id": out["block_id"], "block_status": out["block_status"], "token_count": out["token_count"]},
    )


def search(rt: AgentMemory, args: CacheSearchInput) -> Outcome:
    hits = rt.cache().search(args)
    return Outcome(
        {"results": hits, "count": len(hits)},
        {"ids": [h["block_id"] for h in hits], "count": len(hits), "scope": args.scope},
    )


def get(rt: AgentMemory, args: CacheGetInput) -> Outcome:
    block = rt.cache().get(args.block_id)
    return Outcome(block, {"ids": [args.block_id], "count": len(block["items"]), "scope": block["scope"]})


def compact(rt: AgentMemory, args: CacheCompactInput) -> Outcome:
    out = rt.cache().compact(args.scope)
    return Outcome(
        out,
        {"ids": [i for i in (out["closed_block_id"], out["new_block_id"]) if i], "count": out["items_closed"],
         "scope": args.scope, "summary_generated": out["summary_generated"]},
    )


def pack(rt: AgentMemory, args: CachePackInput) -> Outcome:
    out = rt.cache().pack(args)
    included = sum(len(out.get(name, [])) for name in ("facts", "decisions", "snippets", "warnings"))
    return Outcome(
        out,
        {"count": included, "scope": args.scope, "token_count": out["token_count"],
         "token_budget": args.token_budget or rt.config.cache.default_pack_budget, "full_tokens": out["full_tokens"],
         "version": out["version"], "is_fresh": out["is_fresh"], "delta": args.since_version is not None},
    )
