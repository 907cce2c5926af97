"""A statement that announces it changes an older one ("I switched ... and now ...") updates it.

People rarely restate a changed fact word for word: they say it changed. Long-term memory links such
a statement to the older one, search ranks it above the older, and the cache pack keeps only it; a
statement with a marker of change about another subject does none of this. Real engine, real model,
real WordNet; none of these texts is in the shared or held-out data files.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cache_helpers import cache_service, note, pack, packed_texts
from memory_helpers import ManualClock, output_of
from memory_helpers import store_memory as store

from amplifier_module_tool_agent_memory.compare import announces_change
from amplifier_module_tool_agent_memory.runtime import AgentMemory

VET = "Our vet is Dr. Brandt at Elm Street Animal Clinic."
NEW_VET = "We changed vets and now take the dog to Dr. Moreau at Lakeside Pets."
GYM_DAYS = "I go to the gym on Tuesdays and Thursdays."
GYM_DAYS_NOW = "These days I go to the gym on Mondays and Fridays instead."
SISTER_CAR = "My sister drives a blue Volvo."
MY_CAR_NOW = "I now drive a blue Volvo."




def test_a_marker_of_change_with_the_older_subject_announces_a_change() -> None:
    assert announces_change(VET, NEW_VET)
    assert announces_change(GYM_DAYS, GYM_DAYS_NOW)


def test_a_marker_of_change_about_another_subject_announces_nothing() -> None:
    assert not announces_change(SISTER_CAR, MY_CAR_NOW)


def test_the_older_subject_without_a_marker_announces_nothing() -> None:
    assert not announces_change(GYM_DAYS, "I go to the gym on Mondays and Fridays.")


async def test_an_announced_change_is_linked_to_the_older_memory(tools: dict[str, Any]) -> None:
    old = await store(tools, VET)
    new = await store(tools, NEW_VET)
    assert new["created"] is True and new["superseded"]["id"] == old["id"]


async def test_an_announced_change_ranks_above_the_older_memory(tools: dict[str, Any]) -> None:
    await store(tools, GYM_DAYS, kind="preference")
    new = await store(tools, GYM_DAYS_NOW, kind="preference")
    results = output_of(await tools["memory_search"].execute({"query": "which days do I go to the gym?"}))["results"]
    assert results[0]["id"] == new["id"]


async def test_a_change_announced_about_another_subject_is_not_linked(tools: dict[str, Any]) -> None:
    sister = await store(tools, SISTER_CAR)
    mine = await store(tools, MY_CAR_NOW)
    assert mine["id"] != sister["id"] and "superseded" not in mine


def test_the_cache_pack_keeps_only_the_announced_change(make_runtime: Callable[..., AgentMemory]) -> None:
    svc = cache_service(make_runtime, ManualClock())
    note(svc, VET)
    note(svc, NEW_VET)
    assert packed_texts(pack(svc)) == [NEW_VET]


async def test_a_loose_new_value_of_the_same_subject_ranks_above_the_older(tools: dict[str, Any]) -> None:
    await store(tools, "My cousin Lea lives in Porto.")
    new = await store(tools, "My cousin Lea packed her bags and went to live in Seville.")
    results = output_of(await tools["memory_search"].execute({"query": "where does my cousin Lea live?"}))["results"]
    assert results[0]["id"] == new["id"]


def test_a_chat_excerpt_of_several_remarks_announces_nothing() -> None:
    older = "I walk to work. It takes twenty minutes."
    assert not announces_change(older, "I now cycle to work. It is quicker.")


def test_a_title_abbreviation_does_not_end_a_statement() -> None:
    from amplifier_module_tool_agent_memory.compare.statement import one_statement

    assert one_statement("Our vet is Dr. Brandt at Elm St. clinic.")
    assert not one_statement("Our vet moved. Dr. Brandt retired.")
