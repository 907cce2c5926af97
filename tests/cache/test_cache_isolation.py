"""Nothing leaks between identities or between scopes; sessions of one identity share the cache."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from cache_helpers import cache_service, note, pack, packed_texts, search
from memory_helpers import DISTINCT_FACTS, ManualClock

from amplifier_module_tool_agent_memory.errors import NotFound
from amplifier_module_tool_agent_memory.runtime import AgentMemory


def test_identities_do_not_see_each_others_items(make_runtime: Callable[..., AgentMemory]) -> None:
    clock = ManualClock()
    alice = cache_service(make_runtime, clock, identity="alice")
    bob = cache_service(make_runtime, clock, identity="bob")
    written = note(alice, DISTINCT_FACTS[0])
    assert packed_texts(pack(bob)) == []
    assert search(bob, DISTINCT_FACTS[0]) == []
    with pytest.raises(NotFound):
        bob.get(written["block_id"])


def test_identical_writes_of_two_identities_are_not_merged(make_runtime: Callable[..., AgentMemory]) -> None:
    clock = ManualClock()
    alice = cache_service(make_runtime, clock, identity="alice")
    bob = cache_service(make_runtime, clock, identity="bob")
    note(alice, DISTINCT_FACTS[0])
    assert note(bob, DISTINCT_FACTS[0])["merged"] is False


def test_scopes_keep_their_own_items_and_blocks(make_runtime: Callable[..., AgentMemory]) -> None:
    svc = cache_service(make_runtime, ManualClock())
    a = note(svc, DISTINCT_FACTS[0], scope="task:a")
    b = note(svc, DISTINCT_FACTS[1], scope="task:b")
    assert a["block_id"] != b["block_id"]
    assert packed_texts(pack(svc, scope="task:a")) == [DISTINCT_FACTS[0]]
    assert [h["block_id"] for h in search(svc, DISTINCT_FACTS[1], scope="task:a")] == [a["block_id"]]
    assert packed_texts(pack(svc)) == []  # the default scope is a scope of its own


def test_compacting_one_scope_leaves_the_others_open(make_runtime: Callable[..., AgentMemory]) -> None:
    svc = cache_service(make_runtime, ManualClock())
    note(svc, DISTINCT_FACTS[0], scope="task:a")
    b = note(svc, DISTINCT_FACTS[1], scope="task:b")
    svc.compact("task:a")
    assert svc.get(b["block_id"])["status"] == "open"


def test_two_sessions_of_one_identity_share_the_working_memory(make_runtime: Callable[..., AgentMemory]) -> None:
    clock = ManualClock()
    first = cache_service(make_runtime, clock)
    second_rt = make_runtime(session_id="session-2")
    second_rt.clock = clock
    second = second_rt.cache()
    written = note(first, DISTINCT_FACTS[0])
    assert packed_texts(pack(second)) == [DISTINCT_FACTS[0]]
    assert note(second, DISTINCT_FACTS[0])["item_id"] == written["item_id"]
