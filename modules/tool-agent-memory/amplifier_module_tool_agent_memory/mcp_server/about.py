"""What the MCP server says about itself: its name, its instructions and each tool's listing.

Standard library only (and the tool table): both the SDK server (``server.py``) and the fast start
(``fast_start.py``, which answers before the SDK is imported) read these, so the two never differ.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..tools import ToolSpec

SERVER_NAME = "agent-memory"
SERVER_TITLE = "Agent memory"


def instructions(identity: str) -> str:
    """The server's ``instructions``: what the memory is for and when to use it."""
    return (
        f"Long-term memory, a working-memory cache and a plan cache of identity '{identity}'. Search memory "
        "before answering what may depend on earlier sessions; store durable facts, decisions and "
        "preferences; look up a cached plan before planning a task (prompt 'memory-workflow' says more)."
    )


def tool_listing(spec: ToolSpec) -> dict[str, Any]:
    """One tool as ``tools/list`` carries it (wire names): from the table, nothing added."""
    return {
        "name": spec.name,
        "description": spec.description,
        "inputSchema": spec.input_schema,
        "outputSchema": spec.output_schema,
        "annotations": spec.hints.wire(),
    }
