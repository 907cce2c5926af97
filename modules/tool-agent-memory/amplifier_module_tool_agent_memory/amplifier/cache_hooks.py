"""The cache's session hook: before the conversation is compacted, close the open blocks.

What the agent noted during the turns about to be compacted away then survives as closed,
summarised, searchable blocks.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Callable
from typing import Any

from ..runtime import AgentMemory

logger = logging.getLogger(__name__)

PRE_COMPACT = "context:pre_compact"
PRIORITY = 10


def register(coordinator: Any, runtime: AgentMemory) -> Callable[[], Any] | None:
    """Register the ``context:pre_compact`` handler on ``coordinator.hooks``; return its unregister callable."""

    async def on_pre_compact(event: str, data: dict[str, Any]) -> Any:
        from amplifier_core.models import HookResult

        from ..cache.calls import CURRENT_CALL, CallContext

        ctx = CallContext(loop=asyncio.get_running_loop())
        try:
            cache = runtime.cache()
            context = contextvars.copy_context()
            context.run(CURRENT_CALL.set, ctx)
            results = await asyncio.to_thread(context.run, cache.compact_touched, PRE_COMPACT)
        except Exception:
            logger.exception("closing cache blocks before compaction failed", extra={"identity": runtime.identity_name})
            return HookResult(action="continue")
        for name, payload in ctx.events:
            await runtime.emit(name, payload)
        for result in results:
            await runtime.emit("cache:compacted", {"tool": None, "count": result["items_closed"], **result})
        return HookResult(action="continue")

    unregister: Callable[[], Any] | None = coordinator.hooks.register(
        PRE_COMPACT, on_pre_compact, priority=PRIORITY, name=f"agent-memory.cache.pre-compact.{id(runtime):x}"
    )
    return unregister
