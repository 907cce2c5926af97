"""THE tool table: every tool of the module, once. Both faces (Amplifier, MCP) are built from it.

Adding a tool is one entry here (name, description, input model, handler, event, and the schema of
its answer from ``outputs.py``; without one it is only "an object with its identity") plus its handler
in the capability's handler module (``memory.py``, ``cache.py``, ``plans.py``) and its event in
``events.py``. The order is the order hosts list the tools in.
"""

from __future__ import annotations

from ..cache.models import CacheCompactInput, CacheGetInput, CachePackInput, CacheSearchInput, CacheWriteInput
from ..memory.models import MemoryIdInput, MemoryListInput, MemorySearchInput, MemoryStoreInput
from ..plans.models import PlanLookupInput, PlanRewardInput, PlanStoreInput
from . import cache, memory, plans
from . import outputs as out
from .spec import ToolSpec

TOOLS: tuple[ToolSpec, ...] = (
    # Long-term memory.
    ToolSpec(
        "memory_store",
        "Save a durable memory (fact, decision, note, preference, event) for later sessions. "
        "Secrets are redacted; restatements merge; a changed fact, decision or preference is stored and "
        "supersedes the older one (the answer shows it).",
        MemoryStoreInput, memory.store, "memory:stored", out.MEMORY_STORED,
    ),
    ToolSpec(
        "memory_search",
        "Find relevant long-term memories by meaning and keywords; filter by time, tags, kind or files.",
        MemorySearchInput, memory.search, "memory:searched", out.MEMORY_RESULTS,
    ),
    ToolSpec(
        "memory_get", "Read one memory in full by id, with its chain of updates.",
        MemoryIdInput, memory.get, "memory:read", out.MEMORY_READ,
    ),
    ToolSpec(
        "memory_forget", "Delete one memory by id; returns what was deleted.",
        MemoryIdInput, memory.forget, "memory:forgotten", out.MEMORY_DELETED,
    ),
    ToolSpec(
        "memory_unlink",
        "Undo a wrong update link: the memory no longer supersedes the one it replaced (both stay).",
        MemoryIdInput, memory.unlink, "memory:unlinked", out.MEMORY_UNLINKED,
    ),
    ToolSpec(
        "memory_list", "List memories newest first, paged with `before`.",
        MemoryListInput, memory.list_page, "memory:listed", out.MEMORY_PAGE,
    ),
    # The working-memory cache.
    ToolSpec(
        "cache_write",
        "Note a fact, decision, snippet or warning in short-term working memory (per scope, expires "
        "after 30 min unused). Near-duplicates merge.",
        CacheWriteInput, cache.write, "cache:written", out.CACHE_WRITTEN,
    ),
    ToolSpec(
        "cache_search",
        "Find working-memory blocks relevant to a query; returns block summaries (read one with cache_get).",
        CacheSearchInput, cache.search, "cache:searched", out.CACHE_RESULTS,
    ),
    ToolSpec(
        "cache_get", "Read one working-memory block's live items in full.",
        CacheGetInput, cache.get, "cache:read", out.CACHE_BLOCK,
    ),
    ToolSpec(
        "cache_compact", "Close the scope's open working-memory block now and summarise it.",
        CacheCompactInput, cache.compact, "cache:compacted", out.CACHE_COMPACTED,
    ),
    ToolSpec(
        "cache_pack",
        "Get a compact memory pack of a scope under a token budget (default 600): summary, facts, "
        "decisions, snippets, warnings. since_version gives only changes.",
        CachePackInput, cache.pack, "cache:packed", out.CACHE_PACK,
    ),
    # The plan cache.
    ToolSpec(
        "plan_lookup",
        "Before planning a task, look for a cached tool sequence that solved the same request. "
        "answer 'hit': replay the returned actions. answer 'candidate': a stored request looks alike but "
        "may differ (see its prompt and differences): confirm it asks for the same thing before replaying "
        "its actions. answer 'miss': plan from scratch (the nearest cached requests and why they differ "
        "are listed).",
        PlanLookupInput, plans.lookup, "plan:miss", out.PLAN_LOOKUP,
    ),
    ToolSpec(
        "plan_store",
        "Cache the tool sequence ({tool, args} steps) that solved a request, for replay next time.",
        PlanStoreInput, plans.store, "plan:stored", out.PLAN_STORED,
    ),
    ToolSpec(
        "plan_reward",
        "After replaying a cached plan, report whether it worked (by plan_id or prompt). "
        "Failures make the plan stale so it is not replayed again.",
        PlanRewardInput, plans.reward, "plan:reward", out.PLAN_REWARDED,
    ),
)

TOOLS_BY_NAME: dict[str, ToolSpec] = {spec.name: spec for spec in TOOLS}
