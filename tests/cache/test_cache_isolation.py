"""Nothing leaks between identities or between scopes; sessions of one identity share the cache."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from data import DISTINCT_FACTS

from amplifier_module_tool_agent_memory.errors import NotFound
from amplifier_module_tool_agent_memory.runtime import AgentMemory


def test_identities_do_not_see_each_others_items(
    make_runtime: Callable[..., AgentMemory], make_cache: Any, make_clock: Any
) -> None:
    clock = make_clock()
    alice = make_cache(identity="alice", clock=clock)
    bob = make_cache(identity="bob", clock=clock)
    written = alice.note(DISTINCT_FACTS[0])
    assert bob.packed_texts() == []
    assert bob.search(DISTINCT_FACTS[0]) == []
    with pytest.raises(NotFound):
        bob.get(written["block_id"])


def test_identical_writes_of_two_identities_are_not_merged(
    make_runtime: Callable[..., AgentMemory], make_cache: Any, make_clock: Any
) -> None:
    clock = make_clock()
    alice = make_cache(identity="alice", clock=clock)
    bob = make_cache(identity="bob", clock=clock)
    alice.note(DISTINCT_FACTS[0])
    assert bob.note(DISTINCT_FACTS[0])["merged"] is False


def test_scopes_keep_their_own_items_and_blocks(
    make_runtime: Callable[..., AgentMemory], make_cache: Any, make_clock: Any
) -> None:
    svc = make_cache(clock=make_clock())
    a = svc.note(DISTINCT_FACTS[0], scope="task:a")
    b = svc.note(DISTINCT_FACTS[1], scope="task:b")
    assert a["block_id"] != b["block_id"]
    assert svc.packed_texts(scope="task:a") == [DISTINCT_FACTS[0]]
    assert [h["block_id"] for h in svc.search(DISTINCT_FACTS[1], scope="task:a")] == [a["block_id"]]
    assert svc.packed_texts() == []  # the default scope is a scope of its own


def test_compacting_one_scope_leaves_the_others_open(
    make_runtime: Callable[..., AgentMemory], make_cache: Any, make_clock: Any
) -> None:
    svc = make_cache(clock=make_clock())
    svc.note(DISTINCT_FACTS[0], scope="task:a")
    b = svc.note(DISTINCT_FACTS[1], scope="task:b")
    svc.compact("task:a")
    assert svc.get(b["block_id"])["status"] == "open"


def test_two_sessions_of_one_identity_share_the_working_memory(
    make_runtime: Callable[..., AgentMemory], make_cache: Any, make_clock: Any
) -> None:
    clock = make_clock()
    first = make_cache(clock=clock)
    second_rt = make_runtime(session_id="session-2")
    second_rt.clock = clock
    second = make_cache.drive(second_rt.cache())
    written = first.note(DISTINCT_FACTS[0])
    assert second.packed_texts() == [DISTINCT_FACTS[0]]
    assert second.note(DISTINCT_FACTS[0])["item_id"] == written["item_id"]
