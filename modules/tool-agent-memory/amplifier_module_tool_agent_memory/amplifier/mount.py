"""``mount``: cheap and idempotent (Amplifier mounts every module twice); opens nothing."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["MODULE_ID", "mount"]

logger = logging.getLogger(__name__)

MODULE_ID = "tool-agent-memory"


async def mount(coordinator: Any, config: dict[str, Any] | None = None) -> Callable[[], Awaitable[None]]:
    """Register the agent-memory tools on ``coordinator``; return the cleanup that closes what they opened."""
    from ..events import EVENTS
    from ..identity import CAPABILITY
    from ..runtime import AgentMemory
    from .session_hooks import register_session_hooks
    from .tools import build_tools

    runtime = AgentMemory.from_mount(coordinator, config)
    if runtime.setup_error is not None:
        logger.warning("agent-memory mounted with an error its tools will report: %s", runtime.setup_error)
    for tool in build_tools(runtime):
        await coordinator.mount("tools", tool, name=tool.name)

    register_contributor = getattr(coordinator, "register_contributor", None)
    if register_contributor is not None:
        register_contributor("observability.events", MODULE_ID, lambda: list(EVENTS))
    if runtime.identity is not None and runtime.identity.source != "capability":
        register_capability = getattr(coordinator, "register_capability", None)
        if register_capability is not None:
            register_capability(CAPABILITY, runtime.identity.name)

    unregisters = register_session_hooks(coordinator, runtime)

    async def cleanup() -> None:
        for unregister in unregisters:
            try:
                result = unregister()
                if inspect.isawaitable(result):
                    await result
            except Exception:
                logger.debug("unregistering a hook failed", exc_info=True)
        runtime.close()

    return cleanup
