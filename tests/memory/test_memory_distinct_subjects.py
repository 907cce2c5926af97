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






async def test_another_thing_with_the_same_value_is_stored_unlinked(tools: dict[str, Any], call: Any) -> None:
    first = await call.store(tools, MARKETING_WIKI)
    second = await call.store(tools, ENGINEERING_WIKI)
    assert second["created"] is True and second["id"] != first["id"]
    assert "superseded" not in second
    assert "superseded_by" not in await call.get(tools, first["id"])
    assert "supersedes" not in await call.get(tools, second["id"])


async def test_another_person_with_the_same_value_is_stored_unlinked(tools: dict[str, Any], call: Any) -> None:
    first = await call.store(tools, BROTHER)
    second = await call.store(tools, COUSIN)
    assert second["created"] is True and "superseded" not in second
    assert "superseded_by" not in await call.get(tools, first["id"])


async def test_a_preference_of_someone_else_does_not_supersede_mine(tools: dict[str, Any], call: Any) -> None:
    mine = await call.store(tools, ME_OAT, kind="preference")
    theirs = await call.store(tools, HUSBAND_OAT, kind="preference")
    assert theirs["created"] is True and "superseded" not in theirs
    assert "superseded_by" not in await call.get(tools, mine["id"])


async def test_both_distinct_facts_are_found_first_by_their_own_subject(tools: dict[str, Any], call: Any) -> None:
    marketing = await call.store(tools, MARKETING_WIKI)
    engineering = await call.store(tools, ENGINEERING_WIKI)
    for query, wanted in (("marketing wiki hosting", marketing), ("engineering wiki hosting", engineering)):
        results = (await call(tools["memory_search"], {"query": query}))["results"]
        assert results[0]["id"] == wanted["id"]


async def test_a_new_value_of_the_same_subject_is_still_linked(tools: dict[str, Any], call: Any) -> None:
    old = await call.store(tools, MARKETING_WIKI)
    new = await call.store(tools, MARKETING_WIKI_MOVED)
    assert new["superseded"]["id"] == old["id"]


async def test_a_new_holder_of_a_role_is_still_linked(tools: dict[str, Any], call: Any) -> None:
    # "X leads the security team": the team is what the fact is about, the name its value.
    old = await call.store(tools, LEAD_OMAR)
    new = await call.store(tools, LEAD_NADIA)
    assert new["superseded"]["id"] == old["id"]


async def test_another_subject_with_another_value_is_stored_unlinked(tools: dict[str, Any], call: Any) -> None:
    billing = await call.store(tools, BILLING_GO)
    reporting = await call.store(tools, REPORTING_GO)
    assert reporting["created"] is True and "superseded" not in reporting
    assert "superseded_by" not in await call.get(tools, billing["id"])


async def test_a_new_value_of_the_same_subject_beside_another_subjects_fact_supersedes_its_own(
    tools: dict[str, Any], call: Any,
) -> None:
    billing = await call.store(tools, BILLING_GO)
    await call.store(tools, REPORTING_GO)
    upgraded = await call.store(tools, BILLING_GO_NEW)
    assert upgraded["superseded"]["id"] == billing["id"]


async def test_a_restatement_merges_into_its_own_fact_not_into_another_subjects_chain(
    tools: dict[str, Any], call: Any,
) -> None:
    # Were the test farm linked as an update of the build farm, the restatement would be compared with
    # the newest of that chain (the test farm) and linked to it instead of merging.
    build = await call.store(tools, BUILD_FARM)
    test_farm = await call.store(tools, TEST_FARM)
    restated = await call.store(tools, BUILD_FARM_RESTATED)
    assert "superseded" not in test_farm
    assert restated["id"] == build["id"] and restated["created"] is False


async def test_a_new_holder_taking_over_as_the_role_is_linked(tools: dict[str, Any], call: Any) -> None:
    old = await call.store(tools, CAPTAIN_INES)
    new = await call.store(tools, CAPTAIN_BRUNO)
    assert new["superseded"]["id"] == old["id"]


async def test_a_new_value_announced_with_new_in_the_subject_is_linked(tools: dict[str, Any], call: Any) -> None:
    old = await call.store(tools, PHONE)
    new = await call.store(tools, NEW_PHONE)
    assert new["superseded"]["id"] == old["id"]


def test_the_cache_packs_both_subjects_with_their_different_values(
    make_runtime: Callable[..., AgentMemory], make_cache: Any, make_clock: Any,
) -> None:
    svc = make_cache(clock=make_clock())
    svc.note(BILLING_GO)
    out = svc.note(REPORTING_GO)
    assert "superseded" not in out and out["merged"] is False
    assert sorted(svc.packed_texts()) == sorted([BILLING_GO, REPORTING_GO])


def test_the_cache_packs_both_distinct_facts(
    make_runtime: Callable[..., AgentMemory], make_cache: Any, make_clock: Any
) -> None:
    svc = make_cache(clock=make_clock())
    svc.note(MARKETING_WIKI)
    out = svc.note(ENGINEERING_WIKI)
    assert "superseded" not in out and out["merged"] is False
    assert sorted(svc.packed_texts()) == sorted([MARKETING_WIKI, ENGINEERING_WIKI])


FERNS = "Water the ferns every 3 days."
CACTI = "Water the cacti every 3 days."


async def test_the_same_value_said_of_another_thing_is_not_linked(tools: dict[str, Any], call: Any) -> None:
    await call.store(tools, FERNS, kind="preference")
    cacti = await call.store(tools, CACTI, kind="preference")
    assert cacti["created"] is True and "superseded" not in cacti


def test_the_cache_packs_the_same_value_said_of_two_things(
    make_runtime: Callable[..., AgentMemory], make_cache: Any, make_clock: Any
) -> None:
    svc = make_cache(clock=make_clock())
    svc.note(FERNS)
    svc.note(CACTI)
    assert sorted(svc.packed_texts()) == sorted([FERNS, CACTI])
