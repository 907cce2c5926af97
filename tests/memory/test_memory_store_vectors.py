"""The vectors memory_store writes: the memory's own text (dense) and its context window (ctx).

The two are embedded at the same time on two threads; each must still be its own text's vector.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from amplifier_module_tool_agent_memory.embeddings.providers import CachedEmbedder
from amplifier_module_tool_agent_memory.runtime import AgentMemory

FIRST = "Our staging cluster runs on three nodes in Frankfurt."
SECOND = "Jenny adopted a grey kitten called Pepper last spring."


def _cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


async def test_a_stored_memory_holds_its_own_vector_and_its_context_windows(
    make_runtime: Callable[..., AgentMemory], embedder: CachedEmbedder, call: Any, runtime_tools: Any
) -> None:
    rt = make_runtime()
    tools = runtime_tools(rt)
    await call(tools["memory_store"], {"content": FIRST})
    memory_id = (await call(tools["memory_store"], {"content": SECOND}))["id"]
    assert rt.memory().settle(timeout=60) == 0  # the context vector is written after the answer
    [record] = rt.memory().coll.retrieve([memory_id], with_vector=True)
    [of_memory, of_window] = embedder.embed_documents([SECOND, f"{FIRST}\n{SECOND}"])
    assert _cosine(list(record.vector["dense"]), of_memory) > 0.99999
    assert _cosine(list(record.vector["ctx"]), of_window) > 0.99999
    assert _cosine(of_memory, of_window) < 0.999  # the two vectors are told apart by the checks above
