"""What one tool is (:class:`ToolSpec`) and what its handler answers (:class:`Outcome`).

Nothing here knows a host: the Amplifier and MCP faces both read the same specs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from .outputs import ANY_ANSWER

if TYPE_CHECKING:
    from ..runtime import AgentMemory


@dataclass
class Outcome:
    """A handler's answer: the tool output and the event fields (ids, counts)."""

    output: dict[str, Any]
    event: dict[str, Any] = field(default_factory=dict)
    # The tool's event name by default; a handler whose event depends on the answer (plan:hit / plan:miss) sets it.
    event_name: str | None = None
    # Further events the call caused (e.g. plan:stale after a reward), emitted after the main one.
    extra_events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


Handler = Callable[["AgentMemory", Any], Outcome]


@functools.cache
def compact_schema(model: type[BaseModel]) -> dict[str, Any]:
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


@dataclass(frozen=True)
class Hints:
    """How a tool acts on its identity's store: MCP's tool annotations, which clients read to decide which
    calls need the user's approval (Amplifier has no such field and ignores them).

    ``destructive`` means the call may delete or overwrite stored data; a change a named tool undoes
    (unlink / link, merge / unmerge) is not. ``idempotent``: repeating the call with the same arguments
    changes nothing more (a retry is safe). ``open_world`` is False for every tool: each reads and writes
    only this identity's own store, never an outside system.
    """

    read_only: bool
    destructive: bool = False
    idempotent: bool = False
    open_world: bool = False

    def wire(self) -> dict[str, bool]:
        """The MCP ``annotations`` object."""
        return {
            "readOnlyHint": self.read_only,
            "destructiveHint": self.destructive,
            "idempotentHint": self.idempotent,
            "openWorldHint": self.open_world,
        }


# A tool that only reads: nothing changes, so repeating it is safe.
READS = Hints(read_only=True, idempotent=True)


@dataclass(frozen=True)
class ToolSpec:
    """One tool: its name, the description the model reads, its input model, its handler and its event.

    ``handler`` validates nothing itself (the input model did) and runs in a worker thread: it calls a
    service and shapes the result. ``event`` is emitted after every successful call unless the handler
    names another one (:attr:`Outcome.event_name`). ``output_schema`` describes a successful answer
    (``tools/outputs.py``; MCP sends it as the tool's ``outputSchema``). ``hints`` (required: every tool
    says how it acts) become MCP's tool annotations.
    """

    name: str
    description: str
    input_model: type[BaseModel]
    handler: Handler
    event: str
    output_schema: dict[str, Any] = field(default_factory=lambda: ANY_ANSWER)
    hints: Hints = field(kw_only=True)

    @property
    def input_schema(self) -> dict[str, Any]:
        """The input model's JSON Schema, built on first read and shared by every face and mount."""
        return compact_schema(self.input_model)
