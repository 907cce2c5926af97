"""Working-memory cache: a write that changes a live item's value replaces it (issue 9).

The newer item is written (never merged into the older); the older is marked superseded
until it expires and no longer appears in packs, cache_get or cache_search, so a pack never
holds both values of one fact. A restatement still merges. Real engine, real model; none of
these texts is in the shared dev files.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from data import SERVER

from amplifier_module_tool_agent_memory.runtime import AgentMemory

LIMIT_10 = "The tenant export limit is 10 GB per day."
LIMIT_25 = "The tenant export limit is 25 GB per day."
LIMIT_AGAIN = "The export limit for a tenant is 10 GB per day."


def test_a_changed_value_is_written_as_a_new_item(
    make_runtime: Callable[..., AgentMemory], make_cache: Any, make_clock: Any
) -> None:
    svc = make_cache(clock=make_clock())
    old = svc.note(LIMIT_10)
    new = svc.note(LIMIT_25)
    assert new["merged"] is False and new["item_id"] != old["item_id"]
    assert (new["superseded"]["item_id"], new["superseded"]["content"]) == (old["item_id"], LIMIT_10)
    assert new["superseded"]["differences"]


def test_the_pack_holds_only_the_newer_value(
    make_runtime: Callable[..., AgentMemory], make_cache: Any, make_clock: Any
) -> None:
    svc = make_cache(clock=make_clock())
    svc.note(LIMIT_10)
    svc.note(LIMIT_25)
    assert svc.packed_texts() == [LIMIT_25]
    assert svc.packed_texts(query="tenant export limit") == [LIMIT_25]


def test_cache_get_shows_only_the_newer_value(
    make_runtime: Callable[..., AgentMemory], make_cache: Any, make_clock: Any
) -> None:
    svc = make_cache(clock=make_clock())
    old = svc.note(LIMIT_10)
    svc.note(LIMIT_25)
    assert [it["content"] for it in svc.get(old["block_id"])["items"]] == [LIMIT_25]


def test_a_closed_block_with_the_older_value_drops_it_from_its_summary(
    make_runtime: Callable[..., AgentMemory], make_cache: Any, make_clock: Any,
) -> None:
    svc = make_cache(clock=make_clock())
    old = svc.note(LIMIT_10)
    svc.note("The export worker runs in the batch queue.")
    svc.compact("default")
    svc.note(LIMIT_25)
    closed = svc.get(old["block_id"])
    assert [it["content"] for it in closed["items"]] == ["The export worker runs in the batch queue."]
    assert "10 GB" not in closed["summary"]
    assert all("10 GB" not in hit["summary"] for hit in svc.search("tenant export limit"))


def test_the_older_item_is_kept_until_it_expires(
    make_runtime: Callable[..., AgentMemory], make_cache: Any, make_clock: Any
) -> None:
    clock = make_clock()
    svc = make_cache(clock=clock)
    old = svc.note(LIMIT_10, ttl_minutes=10)
    svc.note(LIMIT_25, ttl_minutes=60)
    stored = svc.coll.retrieve([old["item_id"]])
    assert stored and (stored[0].payload or {}).get("superseded_by")
    clock.advance(minutes=11)
    assert svc.sweep_expired() == 1
    assert svc.coll.retrieve([old["item_id"]]) == []


def test_a_delta_pack_after_a_change_holds_the_newer_value(
    make_runtime: Callable[..., AgentMemory], make_cache: Any, make_clock: Any
) -> None:
    svc = make_cache(clock=make_clock())
    svc.note(LIMIT_10)
    version = svc.pack()["version"]
    svc.note(LIMIT_25)
    assert svc.packed_texts(since_version=version) == [LIMIT_25]


def test_the_replacement_survives_a_reopen(
    make_runtime: Callable[..., AgentMemory], make_cache: Any, make_clock: Any
) -> None:
    clock = make_clock()
    first = make_runtime()
    first.clock = clock
    make_cache.drive(first.cache()).note(LIMIT_10)
    make_cache.drive(first.cache()).note(LIMIT_25)
    first.close()  # the last reference: the store is flushed and closed, as at process exit
    reopened = make_cache(clock=clock)
    assert reopened.packed_texts() == [LIMIT_25]


def test_two_different_remarks_sharing_a_value_slot_are_both_kept(
    make_runtime: Callable[..., AgentMemory], make_cache: Any, make_clock: Any
) -> None:
    # The comparison calls these "changed" (a number on one side) while naming many differences:
    # that is two remarks, not one fact changed, so neither replaces the other.
    svc = make_cache(clock=make_clock())
    first = "Sam: I finally finished the pottery class last week, it was so relaxing! Jo: That's great, Sam."
    second = "Jo: I went hiking twice last month with the kids, it was so much fun! Sam: Wow Jo, that sounds great."
    svc.note(first)
    out = svc.note(second)
    assert "superseded" not in out and out["merged"] is False
    assert sorted(svc.packed_texts()) == sorted([first, second])


def test_a_restatement_in_other_words_is_kept_beside_the_first(
    make_runtime: Callable[..., AgentMemory], make_cache: Any, make_clock: Any
) -> None:
    # Not certified (the words moved): a merge would drop one text, so both stay (issue 16).
    svc = make_cache(clock=make_clock())
    first = svc.note(LIMIT_10)
    again = svc.note(LIMIT_AGAIN)
    assert again["merged"] is False and again["item_id"] != first["item_id"] and "superseded" not in again
    assert sorted(svc.packed_texts()) == sorted([LIMIT_10, LIMIT_AGAIN])


@pytest.mark.filterwarnings("ignore:Payload indexes have no effect:UserWarning")
def test_server_backend_pack_holds_only_the_newer_value(
    server: Any, make_runtime: Callable[..., AgentMemory], make_clock: Any, make_cache: Any
) -> None:
    clock = make_clock()
    first = make_runtime(**SERVER)
    first.clock = clock
    make_cache.drive(first.cache()).note(LIMIT_10)
    assert "superseded" in make_cache.drive(first.cache()).note(LIMIT_25)
    first.close()
    reopened = make_runtime(**SERVER)
    reopened.clock = clock
    assert make_cache.drive(reopened.cache()).packed_texts() == [LIMIT_25]
