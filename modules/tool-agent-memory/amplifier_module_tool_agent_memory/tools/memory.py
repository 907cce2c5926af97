"""Handlers of the memory_* tools: long-term semantic memory."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .spec import Outcome

if TYPE_CHECKING:
    from ..memory.models import (
        MemoryIdInput,
        MemoryLinkInput,
        MemoryListInput,
        MemorySearchInput,
        MemoryStoreInput,
        MemoryUnmergeInput,
    )
    from ..runtime import AgentMemory


def store(rt: AgentMemory, args: MemoryStoreInput) -> Outcome:
    outcome = rt.memory().store(args)
    return Outcome(
        outcome.as_output(),
        {"ids": [outcome.id], "count": 1 if outcome.created else 0, "duplicate": outcome.duplicate,
         "near_duplicate": outcome.near_duplicate, "redacted": sorted(outcome.redacted or {}),
         "superseded": outcome.superseded["id"] if outcome.superseded else None,
         "possible_updates": len(outcome.possible_updates)},
    )


def search(rt: AgentMemory, args: MemorySearchInput) -> Outcome:
    results = rt.memory().search(args)
    ids = [r["id"] for r in results]
    return Outcome({"results": results, "count": len(results)}, {"ids": ids, "count": len(results)})


def get(rt: AgentMemory, args: MemoryIdInput) -> Outcome:
    memory = rt.memory().get(args.id)
    return Outcome({"memory": memory}, {"ids": [args.id], "count": 1})


def forget(rt: AgentMemory, args: MemoryIdInput) -> Outcome:
    deleted = rt.memory().forget(args.id)
    return Outcome({"deleted": deleted}, {"ids": [args.id], "count": 1})


def unlink(rt: AgentMemory, args: MemoryIdInput) -> Outcome:
    out = rt.memory().unlink(args.id)
    return Outcome(out, {"ids": [args.id, out["unlinked"]["supersedes"]], "count": 1})


def link(rt: AgentMemory, args: MemoryLinkInput) -> Outcome:
    out = rt.memory().link(args.id, args.supersedes)
    return Outcome(out, {"ids": [args.id, out["linked"]["supersedes"]], "count": 0 if out.get("unchanged") else 1})


def unmerge(rt: AgentMemory, args: MemoryUnmergeInput) -> Outcome:
    out = rt.memory().unmerge(args.id, args.wording)
    return Outcome(out, {"ids": [args.id, out["memory"]["id"]], "count": 1 if out["created"] else 0})


def list_page(rt: AgentMemory, args: MemoryListInput) -> Outcome:
    page = rt.memory().list(args)
    return Outcome(page, {"ids": [m["id"] for m in page["memories"]], "count": page["count"]})
