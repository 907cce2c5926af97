"""Thin tool adapters: validate the input, call a service, shape the result."""

from __future__ import annotations

from ...runtime import AgentMemory
from .base import AgentMemoryTool
from .cache_tools import cache_tools
from .memory_tools import memory_tools
from .plan_tools import plan_tools


def build_tools(runtime: AgentMemory) -> list[AgentMemoryTool]:
    """Every tool of the module, bound to one runtime."""
    return [*memory_tools(runtime), *cache_tools(runtime), *plan_tools(runtime)]


__all__ = ["AgentMemoryTool", "build_tools"]
