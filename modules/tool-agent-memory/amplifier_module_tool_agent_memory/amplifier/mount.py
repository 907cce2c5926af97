"""``mount`` and ``on_session_ready``: the module's two entry points into an Amplifier session.

``mount`` runs twice under the CLI (first on a validation ``MockCoordinator``, then for real), so
it only parses the config and registers tools, hooks and the observability contributor: no
model, no store, no thread, no identity. The identity is resolved in ``on_session_ready``, which
amplifier-core calls once after every module is mounted (hooks mount after tools, so a
capability a hook module registers is only there by then), or at the first tool call in a host
that does not call it. ``on_session_ready`` also starts the warm-up (``runtime.warm_up``): the
model and the store open on a background thread before the first tool call needs them.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..identity import ResolvedIdentity
    from ..runtime import AgentMemory

__all__ = ["MODULE_ID", "mount", "on_session_ready"]

logger = logging.getLogger(__name__)

MODULE_ID = "tool-agent-memory"


def _capability_registrar(coordinator: Any) -> Callable[[ResolvedIdentity], None]:
    """Once resolved, the identity is offered to other modules as the ``agent_identity`` capability
    (unless it came from that capability)."""
    from ..identity import CAPABILITY

    def register(identity: ResolvedIdentity) -> None:
        register_capability = getattr(coordinator, "register_capability", None)
        if identity.source != "capability" and register_capability is not None:
            register_capability(CAPABILITY, identity.name)

    return register


async def mount(coordinator: Any, config: dict[str, Any] | None = None) -> Callable[[], Awaitable[None]]:
    """Register the agent-memory tools on ``coordinator``; return the cleanup that closes what they opened."""
    from ..events import EVENTS
    from ..runtime import AgentMemory
    from .session_hooks import register_session_hooks
    from .tools import build_tools

    runtime = AgentMemory.from_mount(coordinator, config, on_identity=_capability_registrar(coordinator))
    if runtime.setup_error is not None:
        logger.warning("agent-memory mounted with an error its tools will report: %s", runtime.setup_error)
    for tool in build_tools(runtime):
        await coordinator.mount("tools", tool, name=tool.name)

    register_contributor = getattr(coordinator, "register_contributor", None)
    if register_contributor is not None:
        register_contributor("observability.events", MODULE_ID, lambda: list(EVENTS))

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


def mounted_runtimes(coordinator: Any) -> list[AgentMemory]:
    """The runtimes of this module's tools mounted on ``coordinator`` (one per mount)."""
    from .tools import AgentMemoryTool

    try:
        tools = coordinator.get("tools") or {}
    except Exception:  # a coordinator without a tools mount point has none of ours
        return []
    found: dict[int, AgentMemory] = {}
    for tool in tools.values():
        if isinstance(tool, AgentMemoryTool):
            found.setdefault(id(tool.runtime), tool.runtime)
    return list(found.values())


async def on_session_ready(coordinator: Any) -> None:
    """Resolve the identity now that every module is mounted, then start the warm-up (model and store on a
    background thread, ``warm_up``) and what the hooks read before the first prompt (recall's briefing, in a
    worker thread; both only when ``warm_up`` is on): this returns at once."""
    for runtime in mounted_runtimes(coordinator):
        identity = runtime.resolve_identity()
        if identity is None and runtime.setup_error is not None:
            logger.warning("agent-memory: its tools will report: %s", runtime.setup_error)
            continue
        if runtime.warm_up() is None and not runtime.config.warm_up:
            # ``warm_up: false`` promises that nothing opens before a call needs it; the hooks' early work
            # (recall's briefing) reads the store, so it waits for the first prompt too.
            continue
        for start in runtime.on_session_ready:
            try:
                start()
            except Exception:  # a hook's early start is an optimisation: it starts again on the first prompt
                logger.exception("starting a session hook's work failed")
