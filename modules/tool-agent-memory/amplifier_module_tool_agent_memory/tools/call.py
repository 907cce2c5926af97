"""One tool call, whichever face it came through: validate, run the handler, emit the events.

The faces (Amplifier, MCP) only translate the :class:`ToolAnswer` into their own result type, so a
tool answers the same everywhere: the same validation messages, the same redaction of errors,
the same events with the same fields.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ..cache.calls import CURRENT_CALL, CallContext
from ..errors import AgentMemoryError, InvalidInput
from ..redaction import redact_text
from ..validation import describe_validation_error
from .spec import ToolSpec

if TYPE_CHECKING:
    from ..runtime import AgentMemory

logger = logging.getLogger("amplifier_module_tool_agent_memory")
_MAX_DETAIL = 300


@dataclass(frozen=True)
class ToolAnswer:
    """A call's answer: ``output`` (with the identity) when ``ok``, else ``error``.

    ``error`` holds ``message`` (says what and which field, never a secret), ``type`` (the error
    kind, e.g. ``invalid_input``), ``tool`` and ``identity``.
    """

    ok: bool
    output: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


def _failure(spec: ToolSpec, runtime: AgentMemory, message: str, kind: str) -> ToolAnswer:
    return ToolAnswer(
        ok=False, error={"message": message, "type": kind, "tool": spec.name, "identity": runtime.identity_name}
    )


async def call_tool(spec: ToolSpec, runtime: AgentMemory, input: Any) -> ToolAnswer:  # noqa: A002 - the hosts' name
    """Run ``spec`` on ``runtime`` with the host's ``input``; never raises.

    A service may report side events in the middle of a call (``cache:block_closed``, ``cache:evicted``):
    they are collected in the call's context and emitted after it, whether it succeeded or not.
    """
    ctx = CallContext(loop=asyncio.get_running_loop())
    token = CURRENT_CALL.set(ctx)
    try:
        answer = await _run(spec, runtime, input)
    finally:
        CURRENT_CALL.reset(token)
    for event, data in ctx.events:
        await runtime.emit(event, data)
    return answer


async def _run(spec: ToolSpec, runtime: AgentMemory, input: Any) -> ToolAnswer:  # noqa: A002
    started = time.perf_counter()
    try:
        if input is not None and not isinstance(input, dict):
            raise InvalidInput(f"{spec.name} takes a JSON object, got {type(input).__name__} (field 'input')")
        # Keys with a leading underscore (e.g. _tool_call_id) belong to the host, not to us.
        data = {k: v for k, v in (input or {}).items() if not str(k).startswith("_")}
        runtime.check_ready()
        try:
            args = spec.input_model.model_validate(data)
        except ValidationError as exc:
            return _failure(spec, runtime, f"{spec.name}: {describe_validation_error(exc)}", "invalid_input")
        outcome = await asyncio.to_thread(spec.handler, runtime, args)
    except AgentMemoryError as exc:
        return _failure(spec, runtime, f"{spec.name}: {redact_text(str(exc))}", getattr(exc, "kind", "error"))
    except Exception as exc:
        logger.exception("tool failed", extra={"tool": spec.name, "identity": runtime.identity_name})
        # An internal message may quote what it choked on: redacted and cut, never verbatim.
        detail = redact_text(str(exc))[:_MAX_DETAIL]
        return _failure(spec, runtime, f"{spec.name} failed: {type(exc).__name__}: {detail}", "internal_error")
    latency_ms = round((time.perf_counter() - started) * 1000, 2)
    output = {**outcome.output, "identity": runtime.identity_name}
    await runtime.emit(outcome.event_name or spec.event, {"tool": spec.name, "latency_ms": latency_ms, **outcome.event})
    for name, fields in outcome.extra_events:
        await runtime.emit(name, {"tool": spec.name, "latency_ms": latency_ms, **fields})
    return ToolAnswer(ok=True, output=output)
