"""Every cache tool emits its event; closing and evicting blocks emit theirs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from data import DISTINCT_FACTS

from amplifier_module_tool_agent_memory.events import CACHE_EVENTS


async def test_cache_tools_emit_written_closed_evicted_and_packed_events(
    mount_tools: Callable[..., Any], call: Any
) -> None:
    tools, coordinator = await mount_tools(cache={"max_closed_blocks": 1})
    seen: list[tuple[str, dict[str, Any]]] = []

    async def record(event: str, data: dict[str, Any]) -> Any:
        from amplifier_core import HookResult

        seen.append((event, data))
        return HookResult(action="continue")

    for event in CACHE_EVENTS:
        coordinator.hooks.register(event, record, name=f"test-{event}")
    for fact in DISTINCT_FACTS[:2]:
        await call(tools["cache_write"], {"kind": "fact", "content": fact})
        await call(tools["cache_compact"], {})
    await call(tools["cache_pack"], {})
    names = [name for name, _ in seen]
    assert names.count("cache:written") == 2
    assert names.count("cache:block_closed") == 2
    assert names.count("cache:evicted") == 1
    assert names.count("cache:packed") == 1
    packed = dict(seen)["cache:packed"]
    assert packed["identity"] == "alice" and "latency_ms" in packed and packed["token_count"] > 0
