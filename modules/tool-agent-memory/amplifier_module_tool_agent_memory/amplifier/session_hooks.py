"""Hooks the module registers on the session's kernel events.

Each feature contributes a ``register(coordinator, runtime) -> unregister`` function,
listed in :func:`registrars`; ``mount`` calls them all and the cleanup unregisters them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from ..runtime import AgentMemory

logger = logging.getLogger(__name__)

Registrar = Callable[[Any, AgentMemory], Callable[[], Any] | None]


def registrars() -> list[Registrar]:
    """Every feature's hook registrar (imported here, lazily, so mount stays cheap)."""
    from .cache_hooks import register as register_cache_hooks
    from .plan_capture import register as register_plan_capture
    from .recall_hooks import register as register_recall

    found: list[Registrar] = [register_cache_hooks, register_plan_capture, register_recall]
    return found


def register_session_hooks(coordinator: Any, runtime: AgentMemory) -> list[Callable[[], Any]]:
    """Register every feature's hooks; return their unregister callables."""
    hooks = getattr(coordinator, "hooks", None)
    if hooks is None or runtime.setup_error is not None:
        return []
    unregisters: list[Callable[[], Any]] = []
    for registrar in registrars():
        try:
            unregister = registrar(coordinator, runtime)
        except Exception:
            name = getattr(registrar, "__name__", "?")
            logger.exception("registering session hooks failed", extra={"registrar": name})
            continue
        if unregister is not None:
            unregisters.append(unregister)
    return unregisters
