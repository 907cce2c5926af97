"""A task tool, ``release_service``, that succeeds until the test sets ``fail``."""

from __future__ import annotations

from typing import Any

from amplifier_core import ToolResult

__amplifier_module_type__ = "tool"


async def mount(coordinator: Any, config: dict[str, Any] | None = None) -> None:
    """Mount ``release_service``."""
    tool = ReleaseTool()
    await coordinator.mount("tools", tool, name=tool.name)


class ReleaseTool:
    """Releases a service to an environment (here: records the call)."""

    name = "release_service"
    description = "Release a service to an environment."
    input_schema: dict[str, Any] = {  # noqa: RUF012 - the Tool protocol's attribute
        "type": "object",
        "properties": {"service": {"type": "string"}, "env": {"type": "string"}},
        "required": ["service", "env"],
    }

    def __init__(self) -> None:
        self.fail = False
        self.calls: list[dict[str, Any]] = []

    async def execute(self, input: dict[str, Any]) -> ToolResult:  # noqa: A002 - the Tool protocol's name
        """Succeed, or fail with a message when ``fail`` is set."""
        self.calls.append(dict(input))
        if self.fail:
            return ToolResult(success=False, error={"message": f"release of {input.get('service')} was rejected"})
        return ToolResult(success=True, output={"released": input.get("service"), "env": input.get("env")})
