"""A provider that plays a script: the test decides every response the "model" gives.

A request that offers tools comes from the orchestrator and gets the next scripted response
(:func:`calls` or :func:`say`). A request without tools is a module's background call (the
working-memory summariser): it is recorded with its keyword arguments and answered with
``summary_text``, or fails when ``fail_background`` is set.
"""

from __future__ import annotations

import itertools
from typing import Any

from amplifier_core.message_models import ChatRequest, ChatResponse, TextBlock, ToolCall, ToolCallBlock
from amplifier_core.models import ProviderInfo

__amplifier_module_type__ = "provider"

_ids = itertools.count(1)


def calls(*steps: tuple[str, dict[str, Any]]) -> ChatResponse:
    """A response that calls the tools ``(name, arguments)`` (concurrently, in one group)."""
    made = [(f"call_{next(_ids)}", name, args) for name, args in steps]
    return ChatResponse(
        content=[ToolCallBlock(id=i, name=n, input=a) for i, n, a in made],
        tool_calls=[ToolCall(id=i, name=n, arguments=a) for i, n, a in made],
    )


def say(text: str) -> ChatResponse:
    """A final text answer."""
    return ChatResponse(content=[TextBlock(text=text)])


async def mount(coordinator: Any, config: dict[str, Any] | None = None) -> None:
    """Mount the provider as ``scripted``."""
    await coordinator.mount("providers", ScriptedProvider(), name="scripted")


class ScriptedProvider:
    """Scripted answers for the orchestrator; a fixed summary for background calls."""

    def __init__(self) -> None:
        self.script: list[ChatResponse] = []
        self.requests: list[ChatRequest] = []
        self.background: list[tuple[ChatRequest, dict[str, Any]]] = []
        self.summary_text = "decision: summarised by the session's provider"
        self.fail_background = False

    @property
    def name(self) -> str:
        """Provider name."""
        return "scripted"

    def get_info(self) -> ProviderInfo:
        """Provider metadata."""
        return ProviderInfo(id="scripted", display_name="Scripted", capabilities=["tools"])

    async def list_models(self) -> list[Any]:
        """No models to choose from."""
        return []

    async def complete(self, request: ChatRequest, **kwargs: Any) -> ChatResponse:
        """The next scripted response, or the background summary."""
        if not request.tools:
            self.background.append((request, kwargs))
            if self.fail_background:
                raise RuntimeError("the provider refused the background call")
            return say(self.summary_text)
        self.requests.append(request)
        if not self.script:
            raise AssertionError("the orchestrator asked for more responses than the test scripted")
        return self.script.pop(0)

    def parse_tool_calls(self, response: ChatResponse) -> list[ToolCall]:
        """The response's tool calls."""
        return list(response.tool_calls or [])
