"""A real viewer on a real runtime (Qdrant Edge, the local model)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from memory_helpers import runtime_tools
from viewer_helpers import Served

from amplifier_module_tool_agent_memory.runtime import AgentMemory
from amplifier_module_tool_agent_memory.viewer.server import Viewer


@pytest.fixture
def served(make_runtime: Callable[..., AgentMemory]) -> Iterator[Served]:
    """A viewer of identity 'alice' on a fresh root, serving on a free port."""
    runtime = make_runtime(session_id="viewer-test")
    viewer = Viewer(runtime)
    viewer.start(0)
    try:
        yield Served(viewer, runtime, runtime_tools(runtime))
    finally:
        viewer.stop()
