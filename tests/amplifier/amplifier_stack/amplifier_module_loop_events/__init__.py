"""An orchestrator whose events match loop-basic's: the turn's observable contract for hook modules.

The order and payloads follow loop-basic: ``prompt:submit {prompt}``; per iteration
``provider:request {provider, iteration}`` then ``context.get_messages_for_request(provider=...)``
(where a context manager may compact and emit ``context:compaction``), then the provider call;
per tool call ``tool:pre {tool_name, tool_input, parallel_group_id}``, the tool, and
``tool:post {tool_name, tool_input, result, parallel_group_id}`` (or ``tool:error {tool_name,
error: {type, msg}, parallel_group_id}``); calls of one response run concurrently; at the end
``prompt:complete`` and ``orchestrator:complete {orchestrator, turn_count, status}``.

``tool_post_result``: ``object`` passes the ToolResult itself, as loop-basic does (the 2.0.2 hook
registry then hands handlers ``str(ToolResult)``); ``dict`` passes ``result.model_dump()``, as
loop-streaming does.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from amplifier_core.message_models import ChatRequest, Message, ToolSpec

__amplifier_module_type__ = "orchestrator"

NAME = "loop-events"


async def mount(coordinator: Any, config: dict[str, Any] | None = None) -> None:
    """Mount the orchestrator."""
    await coordinator.mount("orchestrator", EventsLoop(config or {}))


class EventsLoop:
    """Agentic loop: ask the provider, run its tool calls, repeat until it answers with text."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.result_form = str(config.get("tool_post_result", "object"))
        self.max_iterations = int(config.get("max_iterations", 12))

    async def execute(
        self,
        prompt: str,
        context: Any,
        providers: dict[str, Any],
        tools: dict[str, Any],
        hooks: Any,
        coordinator: Any = None,
    ) -> str:
        """Run one turn."""
        await hooks.emit("prompt:submit", {"prompt": prompt})
        await context.add_message({"role": "user", "content": prompt})
        provider_name, provider = next(iter(providers.items()))
        final = ""
        iteration = 0
        while iteration < self.max_iterations:
            await hooks.emit("provider:request", {"provider": provider_name, "iteration": iteration})
            messages = await context.get_messages_for_request(provider=provider)
            request = ChatRequest(
                messages=[Message(**m) for m in messages],
                tools=[ToolSpec(name=t.name, description=t.description, parameters=t.input_schema)
                       for t in tools.values()] or None,
            )
            response = await provider.complete(request)
            calls = response.tool_calls or []
            await hooks.emit("provider:response", {"provider": provider_name, "usage": None, "tool_calls": bool(calls)})
            if calls:
                await context.add_message({
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [{"id": c.id, "tool": c.name, "arguments": c.arguments} for c in calls],
                })
                group = str(uuid.uuid4())
                results = await asyncio.gather(*(self._run_tool(c, group, tools, hooks) for c in calls))
                for call_id, content in results:
                    await context.add_message({"role": "tool", "tool_call_id": call_id, "content": content})
                iteration += 1
                continue
            final = "\n\n".join(getattr(block, "text", "") for block in response.content if hasattr(block, "text"))
            await context.add_message({"role": "assistant", "content": final})
            break
        await hooks.emit("prompt:complete", {"response_preview": final[:200], "length": len(final)})
        await hooks.emit(
            "orchestrator:complete",
            {"orchestrator": NAME, "turn_count": iteration, "status": "success" if final else "incomplete"},
        )
        return final

    async def _run_tool(self, call: Any, group: str, tools: dict[str, Any], hooks: Any) -> tuple[str, str]:
        args = call.arguments or {}
        await hooks.emit("tool:pre", {"tool_name": call.name, "tool_input": args, "parallel_group_id": group})
        tool = tools.get(call.name)
        if tool is None:
            message = f"Error: Tool '{call.name}' not found"
            await hooks.emit("tool:error", {"tool_name": call.name, "error": {"type": "RuntimeError", "msg": message},
                                            "parallel_group_id": group})
            return call.id, message
        try:
            result = await tool.execute(args)
        except Exception as exc:
            error = {"type": type(exc).__name__, "msg": str(exc)}
            await hooks.emit("tool:error", {"tool_name": call.name, "error": error, "parallel_group_id": group})
            return call.id, f"Error executing tool: {exc}"
        posted = result.model_dump() if self.result_form == "dict" else result
        await hooks.emit("tool:post", {"tool_name": call.name, "tool_input": args, "result": posted,
                                       "parallel_group_id": group})
        return call.id, result.get_serialized_output()
