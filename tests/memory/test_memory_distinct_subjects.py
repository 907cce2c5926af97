"""Distinct facts (another subject with the same value) stay independent; updates of one subject stay linked.

Issue 9: "The marketing wiki is hosted on Confluence." and "The engineering wiki is hosted on
Confluence." are two facts, though the comparison calls the second a change of the first (one
substituted word). Neither links to the other in long-term memory, nor replaces the other in a
cache pack. A changed value of the same subject is still linked. Real engine, real model;
none of these texts is in the shared dev files.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cache_helpers import cache_service, note, pack, packed_texts
from memory_helpers import ManualClock, output_of
from memory_helpers import get_memory as get
from memory_helpers import store_memory as store

from amplifier_module_tool_agent_memory.runtime import AgentMemory

MARKETING_WIKI = "The marketing wiki is hosted on Confluence."
ENGINEERING_WIKI = "The engineering wiki is hosted on Confluence."
MARKETING_WIKI_MOVED = "The marketing wiki is hosted on Notion."
BROTHER = "My brother is allergic to shellfish."
COUSIN = "My cousin is allergic to shellfish."
ME_OAT = "I drink oat milk."
HUSBAND_OAT = "My husband drinks oat milk."
LEAD_OMAR = "Omar leads the security team."
LEAD_NADIA = "Nadia leads the security team."
# Another subject AND another value: two facts all the same (the subject word decides).
BILLING_GO = "The billing API runs on Go 1.20."
REPORTING_GO = "The reporting API runs on Go 1.22."
BILLING_GO_NEW = "The billing API runs on Go 1.22."
BUILD_FARM = "Our build farm has 4 runners."
TEST_FARM = "The test farm has 8 runners."
BUILD_FARM_RESTATED = "There are four runners in the build farm."
CAPTAIN_INES = "Ines is the release captain for the mobile app."
CAPTAIN_BRUNO = "Bruno has taken over as release captain for the mobile app."
PHONE = "My phone number is 555-1234."
NEW_PHONE = "My new phone number is 555-9876."






async def test_another_thing_with_the_same_value_is_stored_unlinked(tools: dict[str, Any]) -> None:
    first = await store(tools, MARKETING_WIKI)
    second = await store(tools, ENGINEERING_WIKI)
    assert second["created"] is True and second["id"] != first["id"]
    assert "superseded" not in second
    assert "superseded_by" not in await get(tools, first["id"])
    assert "supersedes" not in await get(tools, second["id"])


async def test_another_person_with_the_same_value_is_stored_unlinked(tools: dict[str, Any]) -> None:
    first = await store(tools, BROTHER)
    second = await store(tools, COUSIN)
    assert second["created"] is True and "superseded" not in second
    assert "superseded_by" not in await get(tools, first["id"])


async def test_a_preference_of_someone_else_does_not_supersede_mine(tools: dict[str, Any]) -> None:
    mine = await store(tools, ME_OAT, kind="preference")
    theirs = await store(tools, HUSBAND_OAT, kind="preference")
    assert theirs["created"] is True and "superseded" not in theirs
    assert "superseded_by" not in await get(tools, mine["id"])


async def test_both_distinct_facts_are_found_first_by_their_own_subject(tools: dict[str, Any]) -> None:
    marketing = await store(tools, MARKETING_WIKI)
    engineering = await store(tools, ENGINEERING_WIKI)
    for query, wanted in (("marketing wiki hosting", marketing), ("engineering wiki hosting", engineering)):
        results = output_of(await tools["memory_search"].execute({"query": query}))["results"]
        assert results[0]["id"] == wanted["id"]


async def test_a_new_value_of_the_same_subject_is_still_linked(tools: dict[str, Any]) -> None:
    old = await store(tools, MARKETING_WIKI)
    new = await store(tools, MARKETING_WIKI_MOVED)
    assert new["superseded"]["id"] == old["id"]


async def test_a_new_holder_of_a_role_is_still_linked(tools: dict[str, Any]) -> None:
    # "X leads the security team": the team is what the fact is about, the name its value.
    old = await store(tools, LEAD_OMAR)
    new = await store(tools, LEAD_NADIA)
    assert new["superseded"]["id"] == old["id"]


async def test_another_subject_with_another_value_is_stored_unlinked(tools: dict[str, Any]) -> None:
    billing = await store(tools, BILLING_GO)
    reporting = await store(tools, REPORTING_GO)
    assert reporting["created"] is True and "superseded" not in reporting
    assert "superseded_by" not in await get(tools, billing["id"])


async def test_a_new_value_of_the_same_subject_beside_another_subjects_fact_supersedes_its_own(
    tools: dict[str, Any],
) -> None:
    billing = await store(tools, BILLING_GO)
    await store(tools, REPORTING_GO)
    upgraded = await store(tools, BILLING_GO_NEW)
    assert upgraded["superseded"]["id"] == billing["id"]


async def test_a_restatement_merges_into_its_own_fact_not_into_another_subjects_chain(
    tools: dict[str, Any],
) -> None:
    # Were the test farm linked as an update of the build farm, the restatement would be compared with
    # the newest of that chain (the test farm) and linked to it instead of merging.
    build = await store(tools, BUILD_FARM)
    test_farm = await store(tools, TEST_FARM)
    restated = await store(tools, BUILD_FARM_RESTATED)
    assert "superseded" not in test_farm
    assert restated["id"] == build["id"] and restated["created"] is False


async def test_a_new_holder_taking_over_as_the_role_is_linked(tools: dict[str, Any]) -> None:
    old = await store(tools, CAPTAIN_INES)
    new = await store(tools, CAPTAIN_BRUNO)
    assert new["superseded"]["id"] == old["id"]


async def test_a_new_value_announced_with_new_in_the_subject_is_linked(tools: dict[str, Any]) -> None:
    old = await store(tools, PHONE)
    new = await store(tools, NEW_PHONE)
    assert new["superseded"]["id"] == old["id"]


def test_the_cache_packs_both_subjects_with_their_different_values(
    make_runtime: Callable[..., AgentMemory],
) -> None:
    svc = cache_service(make_runtime, ManualClock())
    note(svc, BILLING_GO)
    out = note(svc, REPORTING_GO)
    assert "superseded" not in out and out["merged"] is False
    assert sorted(packed_texts(pack(svc))) == sorted([BILLING_GO, REPORTING_GO])


def test_the_cache_packs_both_distinct_facts(make_runtime: Callable[..., AgentMemory]) -> None:
    svc = cache_service(make_runtime, ManualClock())
    note(svc, MARKETING_WIKI)
    out = note(svc, ENGINEERING_WIKI)
    assert "superseded" not in out and out["merged"] is False
    assert sorted(packed_texts(pack(svc))) == sorted([MARKETING_WIKI, ENGINEERING_WIKI])


FERNS = "Water the ferns every 3 days."
CACTI = "Water the cacti every 3 days."


async def test_the_same_value_said_of_another_thing_is_not_linked(tools: dict[str, Any]) -> None:
    await store(tools, FERNS, kind="preference")
    cacti = await store(tools, CACTI, kind="preference")
    assert cacti["created"] is True and "superseded" not in cacti


def test_the_cache_packs_the_same_value_said_of_two_things(make_runtime: Callable[..., AgentMemory]) -> None:
    svc = cache_service(make_runtime, ManualClock())
    note(svc, FERNS)
    note(svc, CACTI)
    assert sorted(packed_texts(pack(svc))) == sorted([FERNS, CACTI])
