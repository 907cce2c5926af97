"""TTL: expired items leave every read at once, the sweep removes them, access restarts the clock.
Time is injected (Any), never slept."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from data import DISTINCT_FACTS, NO_DEDUP

from amplifier_module_tool_agent_memory.errors import NotFound
from amplifier_module_tool_agent_memory.runtime import AgentMemory


def test_item_expires_30_minutes_after_its_write_by_default(
    make_runtime: Callable[..., AgentMemory], make_cache: Any, make_clock: Any
) -> None:
    clock = make_clock()
    svc = make_cache(clock=clock)
    svc.note(DISTINCT_FACTS[0])
    clock.advance(minutes=29, seconds=59)
    assert svc.packed_texts() == [DISTINCT_FACTS[0]]
    clock.advance(seconds=1)
    assert svc.packed_texts() == []


def test_expired_item_is_excluded_from_search_and_get_before_any_sweep(
    make_runtime: Callable[..., AgentMemory], make_cache: Any, make_clock: Any,
) -> None:
    clock = make_clock()
    svc = make_cache(**NO_DEDUP, clock=clock)
    short = svc.note(DISTINCT_FACTS[0], ttl_minutes=1)
    svc.note(DISTINCT_FACTS[1], ttl_minutes=10)
    clock.advance(minutes=2)
    block = svc.get(short["block_id"])
    assert [it["content"] for it in block["items"]] == [DISTINCT_FACTS[1]]
    assert DISTINCT_FACTS[0] not in block["summary"]
    assert all(DISTINCT_FACTS[0] not in hit["summary"] for hit in svc.search(DISTINCT_FACTS[0]))


def test_closed_block_whose_items_all_expired_is_gone(
    make_runtime: Callable[..., AgentMemory], make_cache: Any, make_clock: Any
) -> None:
    clock = make_clock()
    svc = make_cache(clock=clock)
    svc.note(DISTINCT_FACTS[0], ttl_minutes=1)
    closed = svc.compact("default")["closed_block_id"]
    clock.advance(minutes=5)
    assert svc.search(DISTINCT_FACTS[0]) == []
    with pytest.raises(NotFound):
        svc.get(closed)


def test_ttl_zero_never_expires(make_runtime: Callable[..., AgentMemory], make_cache: Any, make_clock: Any) -> None:
    clock = make_clock()
    svc = make_cache(clock=clock)
    svc.note(DISTINCT_FACTS[0], ttl_minutes=0)
    clock.advance(days=365)
    assert svc.packed_texts() == [DISTINCT_FACTS[0]]


def test_config_ttl_applies_when_the_write_gives_none(
    make_runtime: Callable[..., AgentMemory], make_cache: Any, make_clock: Any
) -> None:
    clock = make_clock()
    svc = make_cache(ttl_minutes=5, clock=clock)
    svc.note(DISTINCT_FACTS[0])
    clock.advance(minutes=5)
    assert svc.packed_texts() == []


def test_reading_a_block_restarts_its_items_ttl(
    make_runtime: Callable[..., AgentMemory], make_cache: Any, make_clock: Any
) -> None:
    clock = make_clock()
    svc = make_cache(clock=clock)
    written = svc.note(DISTINCT_FACTS[0])
    clock.advance(minutes=20)
    item = svc.get(written["block_id"])["items"][0]
    assert item["access_count"] == 1
    clock.advance(minutes=20)  # 40 minutes after the write, 20 after the read
    assert svc.packed_texts() == [DISTINCT_FACTS[0]]


def test_sweep_expired_removes_expired_items_from_the_store(
    make_runtime: Callable[..., AgentMemory], make_cache: Any, make_clock: Any
) -> None:
    clock = make_clock()
    svc = make_cache(**NO_DEDUP, clock=clock)
    for fact in DISTINCT_FACTS[:3]:
        svc.note(fact, ttl_minutes=1)
    svc.note(DISTINCT_FACTS[3], ttl_minutes=60)
    clock.advance(minutes=2)
    assert svc.sweep_expired() == 3
    assert svc.sweep_expired() == 0
    assert svc.coll.count() == 2  # the open block and the live item


def test_sweep_expired_honours_its_limit(
    make_runtime: Callable[..., AgentMemory], make_cache: Any, make_clock: Any
) -> None:
    clock = make_clock()
    svc = make_cache(**NO_DEDUP, clock=clock)
    for fact in DISTINCT_FACTS[:5]:
        svc.note(fact, ttl_minutes=1)
    clock.advance(minutes=2)
    assert svc.sweep_expired(limit=2) == 2
    assert svc.sweep_expired() == 3


def test_writes_sweep_a_bounded_number_of_expired_items(
    make_runtime: Callable[..., AgentMemory], make_cache: Any, make_clock: Any
) -> None:
    clock = make_clock()
    svc = make_cache(sweep_batch=2, **NO_DEDUP, clock=clock)
    for fact in DISTINCT_FACTS[:5]:
        svc.note(fact, ttl_minutes=1)
    clock.advance(minutes=2)
    svc.note(DISTINCT_FACTS[10], ttl_minutes=60)
    assert svc.sweep_expired() == 3  # the write removed 2 of the 5


def test_sweep_deletes_a_closed_block_left_without_items(
    make_runtime: Callable[..., AgentMemory], make_cache: Any, make_clock: Any
) -> None:
    clock = make_clock()
    svc = make_cache(clock=clock)
    svc.note(DISTINCT_FACTS[0], ttl_minutes=1)
    closed = svc.compact("default")["closed_block_id"]
    clock.advance(minutes=2)
    svc.sweep_expired()
    assert svc.coll.retrieve([closed]) == []
