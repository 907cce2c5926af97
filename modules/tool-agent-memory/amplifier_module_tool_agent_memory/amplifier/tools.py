"""The Amplifier face of the tool table: one :class:`AgentMemoryTool` per entry of ``tools.TOOLS``.

Everything but the result type lives in ``tools/`` (shared with the MCP face): this adapter only
turns a :class:`~..tools.ToolAnswer` into amplifier-core's ``ToolResult``.
"""

from __future__ import annotations

import json
from typing import Any

from amplifier_core import ToolResult
from pydantic import BaseModel

from ..runtime import AgentMemory
from ..tools import TOOLS, ToolSpec, call_tool


class JsonOutput(dict[str, Any]):
    """A tool's output: a dict for every hook and caller, and JSON (not a Python repr) when made text.

    The model reads a tool's output as text. loop-streaming sends ``ToolResult.get_serialized_output()``
    (``json.dumps`` of a dict). loop-basic sends the ``tool:post`` hooks' result, which amplifier-core 2.0.2's
    hook registry hands back as ``str()`` of the ToolResult, that is ``str(output)``: a plain dict's Python
    repr (``{'answer': 'miss'}``). This ``str`` is the same ``json.dumps``, so both loops give the model the
    same JSON text.
    """

    def __str__(self) -> str:
        return json.dumps(self, default=str)


class AgentMemoryTool:
    """An Amplifier tool: ``name``, ``description``, ``input_schema`` and ``execute`` that never raises."""

    def __init__(self, runtime: AgentMemory, spec: ToolSpec) -> None:
        self.runtime = runtime
        self.spec = spec
        self.name = spec.name
        self.description = spec.description

    @property
    def input_model(self) -> type[BaseModel]:
        return self.spec.input_model

    @property
    def input_schema(self) -> dict[str, Any]:
        """The input model's JSON Schema, built on first read (not at mount) and shared by every mount."""
        return self.spec.input_schema

    async def execute(self, input: dict[str, Any] | None) -> ToolResult:  # noqa: A002 - the Tool protocol's name
        """Validate, run the handler off the event loop, emit the event; every failure is a ToolResult."""
        answer = await call_tool(self.spec, self.runtime, input)
        if answer.output is not None:
            return ToolResult(success=True, output=JsonOutput(answer.output))
        return ToolResult(success=False, error=answer.error)


def build_tools(runtime: AgentMemory) -> list[AgentMemoryTool]:
    """Every tool of the module, bound to one runtime."""
    return [AgentMemoryTool(runtime, spec) for spec in TOOLS]


__all__ = ["AgentMemoryTool", "build_tools"]
