"""The context of one cache call: the event loop it came from and the side events to emit after it.

A tool (or the pre_compact hook) sets :data:`CURRENT_CALL` before running the service in a
worker thread; ``asyncio.to_thread`` copies the context, so the service sees it. The service
appends events such as ``cache:block_closed`` that happen in the middle of a call, and the
LLM summariser uses the loop to reach the session's provider. Kept apart from ``cache.py``
so that mounting the tools does not import the service.
"""

from __future__ import annotations

import contextvars
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import asyncio

logger = logging.getLogger("amplifier_module_tool_agent_memory.cache.service")


@dataclass
class CallContext:
    """Per tool call (or hook run): the event loop the call came from and the events to emit after it."""

    loop: asyncio.AbstractEventLoop | None = None
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


CURRENT_CALL: contextvars.ContextVar[CallContext | None] = contextvars.ContextVar(
    "agent_memory_cache_call", default=None
)


def notify(event: str, data: dict[str, Any]) -> None:
    """Log a side event and queue it for the current call to emit (outside a call it is only logged)."""
    logger.info(event, extra={"event": event, **{f"ev_{k}": v for k, v in data.items()}})
    ctx = CURRENT_CALL.get()
    if ctx is not None:
        ctx.events.append((event, data))
