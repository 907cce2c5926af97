"""TTL: expired items leave every read at once, the sweep removes them, access restarts the clock.
Time is injected (ManualClock), never slept."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from cache_helpers import NO_DEDUP, cache_service, note, pack, packed_texts, search
from memory_helpers import DISTINCT_FACTS, ManualClock

from amplifier_module_tool_agent_memory.errors import NotFound
from amplifier_module_tool_agent_memory.runtime import AgentMemory


def test_item_expires_30_minutes_after_its_write_by_default(make_runtime: Callable[..., AgentMemory]) -> None:
    clock = ManualClock()
    svc = cache_service(make_runtime, clock)
    note(svc, DISTINCT_FACTS[0])
    clock.advance(minutes=29, seconds=59)
    assert packed_texts(pack(svc)) == [DISTINCT_FACTS[0]]
    clock.advance(seconds=1)
    assert packed_texts(pack(svc)) == []


def test_expired_item_is_excluded_from_search_and_get_before_any_sweep(
    make_runtime: Callable[..., AgentMemory],
) -> None:
    clock = ManualClock()
    svc = cache_service(make_runtime, clock, **NO_DEDUP)
    short = note(svc, DISTINCT_FACTS[0], ttl_minutes=1)
    note(svc, DISTINCT_FACTS[1], ttl_minutes=10)
    clock.advance(minutes=2)
    block = svc.get(short["block_id"])
    assert [it["content"] for it in block["items"]] == [DISTINCT_FACTS[1]]
    assert DISTINCT_FACTS[0] not in block["summary"]
    assert all(DISTINCT_FACTS[0] not in hit["summary"] for hit in search(svc, DISTINCT_FACTS[0]))


def test_closed_block_whose_items_all_expired_is_gone(make_runtime: Callable[..., AgentMemory]) -> None:
    clock = ManualClock()
    svc = cache_service(make_runtime, clock)
    note(svc, DISTINCT_FACTS[0], ttl_minutes=1)
    closed = svc.compact("default")["closed_block_id"]
    clock.advance(minutes=5)
    assert search(svc, DISTINCT_FACTS[0]) == []
    with pytest.raises(NotFound):
        svc.get(closed)


def test_ttl_zero_never_expires(make_runtime: Callable[..., AgentMemory]) -> None:
    clock = ManualClock()
    svc = cache_service(make_runtime, clock)
    note(svc, DISTINCT_FACTS[0], ttl_minutes=0)
    clock.advance(days=365)
    assert packed_texts(pack(svc)) == [DISTINCT_FACTS[0]]


def test_config_ttl_applies_when_the_write_gives_none(make_runtime: Callable[..., AgentMemory]) -> None:
    clock = ManualClock()
    svc = cache_service(make_runtime, clock, ttl_minutes=5)
    note(svc, DISTINCT_FACTS[0])
    clock.advance(minutes=5)
    assert packed_texts(pack(svc)) == []


def test_reading_a_block_restarts_its_items_ttl(make_runtime: Callable[..., AgentMemory]) -> None:
    clock = ManualClock()
    svc = cache_service(make_runtime, clock)
    written = note(svc, DISTINCT_FACTS[0])
    clock.advance(minutes=20)
    item = svc.get(written["block_id"])["items"][0]
    assert item["access_count"] == 1
    clock.advance(minutes=20)  # 40 minutes after the write, 20 after the read
    assert packed_texts(pack(svc)) == [DISTINCT_FACTS[0]]


def test_sweep_expired_removes_expired_items_from_the_store(make_runtime: Callable[..., AgentMemory]) -> None:
    clock = ManualClock()
    svc = cache_service(make_runtime, clock, **NO_DEDUP)
    for fact in DISTINCT_FACTS[:3]:
        note(svc, fact, ttl_minutes=1)
    note(svc, DISTINCT_FACTS[3], ttl_minutes=60)
    clock.advance(minutes=2)
    assert svc.sweep_expired() == 3
    assert svc.sweep_expired() == 0
    assert svc.coll.count() == 2  # the open block and the live item


def test_sweep_expired_honours_its_limit(make_runtime: Callable[..., AgentMemory]) -> None:
    clock = ManualClock()
    svc = cache_service(make_runtime, clock, **NO_DEDUP)
    for fact in DISTINCT_FACTS[:5]:
        note(svc, fact, ttl_minutes=1)
    clock.advance(minutes=2)
    assert svc.sweep_expired(limit=2) == 2
    assert svc.sweep_expired() == 3


def test_writes_sweep_a_bounded_number_of_expired_items(make_runtime: Callable[..., AgentMemory]) -> None:
    clock = ManualClock()
    svc = cache_service(make_runtime, clock, sweep_batch=2, **NO_DEDUP)
    for fact in DISTINCT_FACTS[:5]:
        note(svc, fact, ttl_minutes=1)
    clock.advance(minutes=2)
    note(svc, DISTINCT_FACTS[10], ttl_minutes=60)
    assert svc.sweep_expired() == 3  # the write removed 2 of the 5


def test_sweep_deletes_a_closed_block_left_without_items(make_runtime: Callable[..., AgentMemory]) -> None:
    clock = ManualClock()
    svc = cache_service(make_runtime, clock)
    note(svc, DISTINCT_FACTS[0], ttl_minutes=1)
    closed = svc.compact("default")["closed_block_id"]
    clock.advance(minutes=2)
    svc.sweep_expired()
    assert svc.coll.retrieve([closed]) == []
