"""A hook module that names the agent: registers the ``agent_identity`` capability in its mount.

Hooks are mounted after tools, so a tool module that resolved its identity in its own mount
would not see this capability.
"""

from __future__ import annotations

from typing import Any

__amplifier_module_type__ = "hook"


async def mount(coordinator: Any, config: dict[str, Any] | None = None) -> None:
    """Register ``agent_identity`` = config ``identity``."""
    coordinator.register_capability("agent_identity", (config or {}).get("identity", "hooked-agent"))
