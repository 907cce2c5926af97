"""The cache's session hook: when the conversation is compacted, close the open blocks.

What the agent noted in the turns compacted away then survives as closed, summarised,
searchable blocks. Two events trigger it:

* ``context:compaction``, which context-simple (foundation's default context manager) emits
  after it compacts. Its compaction is ephemeral, so it fires again on every request that is
  still over budget: the handler is idempotent. Closing a block opens an empty one, and an
  empty block is never closed, so repeated events close each block once and a block with
  nothing new since the last close is left alone; concurrent events serialise on the scope's lock.
* ``context:pre_compact``, for context managers that announce compaction before it happens.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Callable
from typing import Any

from ..runtime import AgentMemory

logger = logging.getLogger(__name__)

COMPACTION = "context:compaction"
PRE_COMPACT = "context:pre_compact"
EVENTS = (COMPACTION, PRE_COMPACT)
PRIORITY = 10


async def close_touched_blocks(runtime: AgentMemory, trigger: str) -> list[dict[str, Any]]:
    """Close the open block of every scope the session used; emit what happened. Never raises."""
    from ..cache.calls import CURRENT_CALL, CallContext

    if not runtime.is_ready():
        return []
    ctx = CallContext(loop=asyncio.get_running_loop())
    try:
        cache = runtime.cache()
        context = contextvars.copy_context()
        context.run(CURRENT_CALL.set, ctx)
        results: list[dict[str, Any]] = await asyncio.to_thread(context.run, cache.compact_touched, trigger)
    except Exception:
        logger.exception("closing cache blocks on compaction failed", extra={"identity": runtime.identity_name})
        return []
    for name, payload in ctx.events:
        await runtime.emit(name, payload)
    for result in results:
        await runtime.emit("cache:compacted", {"tool": None, "count": result["items_closed"], **result})
    return results


def register(coordinator: Any, runtime: AgentMemory) -> Callable[[], Any] | None:
    """Register the compaction handlers on ``coordinator.hooks``; return their unregister callable."""

    async def on_compaction(event: str, data: dict[str, Any]) -> Any:
        from amplifier_core.models import HookResult

        await close_touched_blocks(runtime, event)
        return HookResult(action="continue")

    unregisters = [
        coordinator.hooks.register(event, on_compaction, priority=PRIORITY,
                                   name=f"agent-memory.cache.{event.split(':')[1]}.{id(runtime):x}")
        for event in EVENTS
    ]

    def unregister() -> None:
        for fn in unregisters:
            if callable(fn):
                fn()

    return unregister
