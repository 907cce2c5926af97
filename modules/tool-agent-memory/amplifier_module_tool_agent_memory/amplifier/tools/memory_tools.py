"""memory_* tools: long-term semantic memory."""

from __future__ import annotations

from ...memory.models import (
    MemoryIdInput,
    MemoryLinkInput,
    MemoryListInput,
    MemorySearchInput,
    MemoryStoreInput,
    MemoryUnmergeInput,
)
from ...runtime import AgentMemory
from .base import AgentMemoryTool, Outcome


def _store(rt: AgentMemory, args: MemoryStoreInput) -> Outcome:
    outcome = rt.memory().store(args)
    return Outcome(
        outcome.as_output(),
        {"ids": [outcome.id], "count": 1 if outcome.created else 0, "duplicate": outcome.duplicate,
         "near_duplicate": outcome.near_duplicate, "redacted": sorted(outcome.redacted or {}),
         "superseded": outcome.superseded["id"] if outcome.superseded else None,
         "possible_updates": len(outcome.possible_updates)},
    )


def _search(rt: AgentMemory, args: MemorySearchInput) -> Outcome:
    results = rt.memory().search(args)
    ids = [r["id"] for r in results]
    return Outcome({"results": results, "count": len(results)}, {"ids": ids, "count": len(results)})


def _get(rt: AgentMemory, args: MemoryIdInput) -> Outcome:
    memory = rt.memory().get(args.id)
    return Outcome({"memory": memory}, {"ids": [args.id], "count": 1})


def _forget(rt: AgentMemory, args: MemoryIdInput) -> Outcome:
    deleted = rt.memory().forget(args.id)
    return Outcome({"deleted": deleted}, {"ids": [args.id], "count": 1})


def _unlink(rt: AgentMemory, args: MemoryIdInput) -> Outcome:
    out = rt.memory().unlink(args.id)
    return Outcome(out, {"ids": [args.id, out["unlinked"]["supersedes"]], "count": 1})


def _link(rt: AgentMemory, args: MemoryLinkInput) -> Outcome:
    out = rt.memory().link(args.id, args.supersedes)
    return Outcome(out, {"ids": [args.id, out["linked"]["supersedes"]], "count": 0 if out.get("unchanged") else 1})


def _unmerge(rt: AgentMemory, args: MemoryUnmergeInput) -> Outcome:
    out = rt.memory().unmerge(args.id, args.wording)
    return Outcome(out, {"ids": [args.id, out["memory"]["id"]], "count": 1 if out["created"] else 0})


def _list(rt: AgentMemory, args: MemoryListInput) -> Outcome:
    page = rt.memory().list(args)
    return Outcome(page, {"ids": [m["id"] for m in page["memories"]], "count": page["count"]})


def memory_tools(rt: AgentMemory) -> list[AgentMemoryTool]:
    """The memory_* tools bound to ``rt``."""
    return [
        AgentMemoryTool(
            rt, "memory_store",
            "Save a durable memory (fact, decision, note, preference, event) for later sessions. "
            "Secrets are redacted; a restatement merges (the answer's `merged`; undo with memory_unmerge); a changed "
            "fact, decision or preference is stored and supersedes the older one (`superseded`; undo with "
            "memory_unlink); when unsure, it is stored and `possible_updates` lists near memories it may update.",
            MemoryStoreInput, _store, "memory:stored",
        ),
        AgentMemoryTool(
            rt, "memory_search",
            "Find relevant long-term memories by meaning and keywords; filter by time, tags, kind or files.",
            MemorySearchInput, _search, "memory:searched",
        ),
        AgentMemoryTool(
            rt, "memory_get", "Read one memory in full by id, with its chain of updates.",
            MemoryIdInput, _get, "memory:read",
        ),
        AgentMemoryTool(
            rt, "memory_forget", "Delete one memory by id; returns what was deleted.",
            MemoryIdInput, _forget, "memory:forgotten",
        ),
        AgentMemoryTool(
            rt, "memory_unlink",
            "Undo a wrong update link: the memory no longer supersedes the one it replaced (both stay).",
            MemoryIdInput, _unlink, "memory:unlinked",
        ),
        AgentMemoryTool(
            rt, "memory_link",
            "Declare that memory `id` updates the older memory `supersedes` (kept, marked superseded_by, ranked "
            "below it); use it on a possible_updates answer. Undo with memory_unlink.",
            MemoryLinkInput, _link, "memory:linked",
        ),
        AgentMemoryTool(
            rt, "memory_unmerge",
            "Undo a merge: a wording memory_store merged into memory `id` as a restatement gets a memory of its own "
            "back (with its own tags and time).",
            MemoryUnmergeInput, _unmerge, "memory:unmerged",
        ),
        AgentMemoryTool(
            rt, "memory_list", "List memories newest first, paged with `before`.",
            MemoryListInput, _list, "memory:listed",
        ),
    ]
