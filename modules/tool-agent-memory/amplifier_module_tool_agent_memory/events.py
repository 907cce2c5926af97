"""Every event the module emits; declared to ``observability.events`` at mount."""

from __future__ import annotations

MEMORY_EVENTS: tuple[str, ...] = (
    "memory:stored",
    "memory:searched",
    "memory:read",
    "memory:listed",
    "memory:forgotten",
    "memory:unlinked",
    "memory:recalled",
    "memory:linked",
    "memory:unmerged",
)
CACHE_EVENTS: tuple[str, ...] = (
    "cache:written",
    "cache:searched",
    "cache:read",
    "cache:block_closed",
    "cache:evicted",
    "cache:compacted",
    "cache:packed",
)
PLAN_EVENTS: tuple[str, ...] = (
    "plan:hit",
    "plan:candidate",
    "plan:miss",
    "plan:stored",
    "plan:reward",
    "plan:stale",
    "plan:listed",
    "plan:read",
    "plan:forgotten",
    "plan:used",
)
EVENTS: tuple[str, ...] = MEMORY_EVENTS + CACHE_EVENTS + PLAN_EVENTS
