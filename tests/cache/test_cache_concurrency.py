"""Sessions of one process share an identity's cache: concurrent writes lose nothing and keep one open block."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from data import NO_DEDUP

from amplifier_module_tool_agent_memory.runtime import AgentMemory


def test_concurrent_writes_from_two_sessions_all_land_in_one_scope(
    make_runtime: Callable[..., AgentMemory], make_cache: Any, make_clock: Any
) -> None:
    clock = make_clock()
    services = []
    for session in ("session-1", "session-2"):
        rt = make_runtime(session_id=session, cache={"close_threshold_tokens": 60, **NO_DEDUP})
        rt.clock = clock
        services.append(make_cache.drive(rt.cache()))
    texts = [f"concurrent note {i:02d} about subsystem {chr(65 + i % 26)}" for i in range(24)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda pair: services[pair[0] % 2].note(pair[1]), enumerate(texts)))
    assert len({r["item_id"] for r in results}) == len(texts)
    out = services[0].pack(token_budget=8000)
    assert sorted(make_cache.texts(out)) == sorted(texts)
    st = services[1]._scope("default")
    assert [b.status for b in st.blocks.values()].count("open") == 1
    assert sum(len(ids) for ids in st.block_items.values()) == len(texts)
