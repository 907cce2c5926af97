"""The one tool class every adapter instantiates: validation, errors, events and latency."""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from amplifier_core import ToolResult
from pydantic import BaseModel, ValidationError

from ...errors import AgentMemoryError, InvalidInput
from ...redaction import redact_text
from ...runtime import AgentMemory
from ...validation import describe_validation_error

logger = logging.getLogger("amplifier_module_tool_agent_memory")
_MAX_DETAIL = 300


@dataclass
class Outcome:
    """A handler's answer: the tool output and the event fields (ids, counts)."""

    output: dict[str, Any]
    event: dict[str, Any] = field(default_factory=dict)
    # The tool's event name by default; a handler whose event depends on the answer (plan:hit / plan:miss) sets it.
    event_name: str | None = None
    # Further events the call caused (e.g. plan:stale after a reward), emitted after the main one.
    extra_events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


Handler = Callable[[AgentMemory, Any], Outcome]


@functools.cache
def _compact_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON Schema without titles: sent to the LLM on every request, so keep it small."""

    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if k != "title"}
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    schema = strip(model.model_json_schema())
    schema.pop("description", None)
    return dict(schema)


class AgentMemoryTool:
    """An Amplifier tool: ``name``, ``description``, ``input_schema`` and ``execute`` that never raises."""

    def __init__(
        self,
        runtime: AgentMemory,
        name: str,
        description: str,
        input_model: type[BaseModel],
        handler: Handler,
        event: str,
    ) -> None:
        self.runtime = runtime
        self.name = name
        self.description = description
        self.input_model = input_model
        self._handler = handler
        self._event = event

    @property
    def input_schema(self) -> dict[str, Any]:
        """The input model's JSON Schema, built on first read (not at mount) and shared by every mount."""
        return _compact_schema(self.input_model)

    def _fail(self, message: str, kind: str) -> ToolResult:
        return ToolResult(
            success=False,
            error={"message": message, "type": kind, "tool": self.name, "identity": self.runtime.identity_name},
        )

    async def execute(self, input: dict[str, Any] | None) -> ToolResult:  # noqa: A002 - the Tool protocol's name
        """Validate, run the handler off the event loop, emit the event; every failure is a ToolResult."""
        started = time.perf_counter()
        try:
            if input is not None and not isinstance(input, dict):
                raise InvalidInput(f"{self.name} takes a JSON object, got {type(input).__name__} (field 'input')")
            # Keys with a leading underscore (e.g. _tool_call_id) belong to the host, not to us.
            data = {k: v for k, v in (input or {}).items() if not str(k).startswith("_")}
            self.runtime.check_ready()
            try:
                args = self.input_model.model_validate(data)
            except ValidationError as exc:
                return self._fail(f"{self.name}: {describe_validation_error(exc)}", "invalid_input")
            outcome = await asyncio.to_thread(self._handler, self.runtime, args)
        except AgentMemoryError as exc:
            return self._fail(f"{self.name}: {redact_text(str(exc))}", getattr(exc, "kind", "error"))
        except Exception as exc:
            logger.exception("tool failed", extra={"tool": self.name, "identity": self.runtime.identity_name})
            # An internal message may quote what it choked on: redacted and cut, never verbatim.
            detail = redact_text(str(exc))[:_MAX_DETAIL]
            return self._fail(f"{self.name} failed: {type(exc).__name__}: {detail}", "internal_error")
        latency_ms = round((time.perf_counter() - started) * 1000, 2)
        output = {**outcome.output, "identity": self.runtime.identity_name}
        await self.runtime.emit(
            outcome.event_name or self._event, {"tool": self.name, "latency_ms": latency_ms, **outcome.event}
        )
        for name, fields in outcome.extra_events:
            await self.runtime.emit(name, {"tool": self.name, "latency_ms": latency_ms, **fields})
        return ToolResult(success=True, output=output)
