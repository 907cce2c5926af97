"""THE tool table: every tool of the module, once. Both faces (Amplifier, MCP) are built from it.

Adding a tool is one entry here (name, description, input model, handler, event, and the schema of
its answer from ``outputs.py``; without one it is only "an object with its identity") plus its handler
in the capability's handler module (``memory.py``, ``cache.py``, ``plans.py``) and its event in
``events.py``. The order is the order hosts list the tools in.
"""

from __future__ import annotations

from ..cache.models import CacheCompactInput, CacheGetInput, CachePackInput, CacheSearchInput, CacheWriteInput
from ..memory.models import (
    MemoryIdInput,
    MemoryLinkInput,
    MemoryListInput,
    MemorySearchInput,
    MemoryStoreInput,
    MemoryUnmergeInput,
)
from ..plans.models import PlanIdInput, PlanListInput, PlanLookupInput, PlanRewardInput, PlanStoreInput
from . import cache, memory, plans
from . import outputs as out
from .spec import READS, Hints, ToolSpec

# How each tool acts on the store (MCP tool annotations; see Hints). plan_lookup writes: a hit counts a use.
# cache_compact is not idempotent: each call closes a block or opens a new one.
WRITES = Hints(read_only=False)
# Changes that repeat to the same state and that a named tool undoes (link / unlink, merge / unmerge), or that only
# keep items alive longer (cache_get and cache_pack refresh the expiry of what they return).
REVISES = Hints(read_only=False, idempotent=True)
# Deletes (memory_forget, plan_forget) or overwrites (plan_store replaces the plan stored for the same prompt).
DESTRUCTIVE = Hints(read_only=False, destructive=True, idempotent=True)

TOOLS: tuple[ToolSpec, ...] = (
    # Long-term memory.
    ToolSpec(
        "memory_store",
        "Save a durable memory (fact, decision, note, preference, event) for later sessions. "
        "Secrets are redacted; a restatement merges (the answer's `merged`; undo with memory_unmerge); a changed "
        "fact, decision or preference is stored and supersedes the older one (`superseded`; undo with "
        "memory_unlink); when unsure, it is stored and `possible_updates` lists near memories it may update.",
        MemoryStoreInput, memory.store, "memory:stored", out.MEMORY_STORED, hints=WRITES,
    ),
    ToolSpec(
        "memory_search",
        "Find relevant long-term memories by meaning and keywords; filter by time, tags, kind or files.",
        MemorySearchInput, memory.search, "memory:searched", out.MEMORY_RESULTS, hints=READS,
    ),
    ToolSpec(
        "memory_get", "Read one memory in full by id, with its chain of updates.",
        MemoryIdInput, memory.get, "memory:read", out.MEMORY_READ, hints=READS,
    ),
    ToolSpec(
        "memory_forget", "Delete one memory by id; returns what was deleted.",
        MemoryIdInput, memory.forget, "memory:forgotten", out.MEMORY_DELETED, hints=DESTRUCTIVE,
    ),
    ToolSpec(
        "memory_unlink",
        "Undo a wrong update link: the memory no longer supersedes the one it replaced (both stay).",
        MemoryIdInput, memory.unlink, "memory:unlinked", out.MEMORY_UNLINKED, hints=REVISES,
    ),
    ToolSpec(
        "memory_link",
        "Declare that memory `id` updates the older memory `supersedes` (kept, marked superseded_by, ranked "
        "below it): settle a possible_updates answer. Undo with memory_unlink.",
        MemoryLinkInput, memory.link, "memory:linked", out.MEMORY_LINKED, hints=REVISES,
    ),
    ToolSpec(
        "memory_unmerge",
        "Undo a merge: a wording memory_store merged into memory `id` as a restatement gets a memory of its own "
        "back (with its own tags and time).",
        MemoryUnmergeInput, memory.unmerge, "memory:unmerged", out.MEMORY_UNMERGED, hints=REVISES,
    ),
    ToolSpec(
        "memory_list", "List memories newest first, paged with `before`.",
        MemoryListInput, memory.list_page, "memory:listed", out.MEMORY_PAGE, hints=READS,
    ),
    # The working-memory cache.
    ToolSpec(
        "cache_write",
        "Note a fact, decision, snippet or warning in short-term working memory (per scope, expires "
        "after 30 min unused). Near-duplicates merge.",
        CacheWriteInput, cache.write, "cache:written", out.CACHE_WRITTEN, hints=WRITES,
    ),
    ToolSpec(
        "cache_search",
        "Find working-memory blocks relevant to a query; returns block summaries (read one with cache_get).",
        CacheSearchInput, cache.search, "cache:searched", out.CACHE_RESULTS, hints=READS,
    ),
    ToolSpec(
        "cache_get", "Read one working-memory block's live items in full.",
        CacheGetInput, cache.get, "cache:read", out.CACHE_BLOCK, hints=REVISES,
    ),
    ToolSpec(
        "cache_compact", "Close the scope's open working-memory block now and summarise it.",
        CacheCompactInput, cache.compact, "cache:compacted", out.CACHE_COMPACTED, hints=WRITES,
    ),
    ToolSpec(
        "cache_pack",
        "Get a compact memory pack of a scope under a token budget (default 600): summary, facts, "
        "decisions, snippets, warnings. since_version gives only changes.",
        CachePackInput, cache.pack, "cache:packed", out.CACHE_PACK, hints=REVISES,
    ),
    # The plan cache.
    ToolSpec(
        "plan_lookup",
        "Before planning a task, look for a cached tool sequence that solved the same request. "
        "answer 'hit': the stored request is certified the same: replay the actions, then plan_reward. "
        "answer 'candidate': near plans, nearest first, each with what differs: replay one only if it asks "
        "for the same thing; if a difference is a parameter, adapt its steps and plan_store the result with "
        "derived_from; else plan afresh; then plan_reward the plan used. answer 'miss': nothing near, plan "
        "afresh. The answer's 'next' says the same.",
        PlanLookupInput, plans.lookup, "plan:miss", out.PLAN_LOOKUP, hints=WRITES,
    ),
    ToolSpec(
        "plan_store",
        "Cache the tool sequence ({tool, args} steps) that solved a request, for replay next time "
        "(derived_from: the candidate's plan_id when you adapted one).",
        PlanStoreInput, plans.store, "plan:stored", out.PLAN_STORED, hints=DESTRUCTIVE,
    ),
    ToolSpec(
        "plan_list",
        "List cached plans, most recently updated first (prompt, steps, score, use counts), to review them.",
        PlanListInput, plans.list_plans, "plan:listed", out.PLAN_PAGE, hints=READS,
    ),
    ToolSpec(
        "plan_get", "Read one cached plan in full (all its actions) by plan_id.",
        PlanIdInput, plans.get, "plan:read", out.PLAN_READ, hints=READS,
    ),
    ToolSpec(
        "plan_forget", "Delete one cached plan by plan_id (a wrong or outdated plan); returns what was deleted.",
        PlanIdInput, plans.forget, "plan:forgotten", out.PLAN_FORGOTTEN, hints=DESTRUCTIVE,
    ),
    ToolSpec(
        "plan_reward",
        "After replaying a cached plan, report whether it worked (by plan_id or prompt). "
        "Failures make the plan stale so it is not replayed again.",
        PlanRewardInput, plans.reward, "plan:reward", out.PLAN_REWARDED, hints=WRITES,
    ),
)

TOOLS_BY_NAME: dict[str, ToolSpec] = {spec.name: spec for spec in TOOLS}
