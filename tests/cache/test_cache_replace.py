"""Working-memory cache: the newest statement of a fact replaces the older, two facts both stay (issue 9).

Through the tools (cache_write, cache_pack, cache_get), real engine, real model, real WordNet.
The comparison leaves a loose rewording of a new value undecided, or names more differences than
one change; the cache still replaces when the subject is the same and the ending (the value)
differs. The same value of another subject is two facts, kept side by side. None of these
texts is in the shared dev or held-out files.
"""

from __future__ import annotations

from typing import Any

from amplifier_module_tool_agent_memory.compare import Comparison, Verdict
from amplifier_module_tool_agent_memory.compare.policy import merges, replaces
from amplifier_module_tool_agent_memory.compare.statement import same_subject_new_value

BARBER_OLD = "My barber is Tony's on Main Street."
BARBER_NEW = "My barber is Sharp Cuts near the station."
WIFI_OLD = "The office wifi password must be changed every 30 days."
WIFI_NEW = "The office wifi password no longer needs to be changed on a fixed schedule."
BUILD_NIGHTLY = "The nightly build runs on Ubuntu 22.04."
BUILD_RELEASE = "The release build runs on Ubuntu 22.04."
SEATS_MINE = "I like window seats on trains."
SEATS_BROTHER = "My brother likes window seats on trains."
OFFICE_OLD = "Our office is in Leeds."
OFFICE_NEW = "Our new office is in York."
DISHWASHER_REPAIRED = "The dishwasher was repaired in May."
DISHWASHER_MODEL = "The dishwasher is a Bosch Serie 4."


async def _write(tools: dict[str, Any], content: str, scope: str = "replace") -> dict[str, Any]:
    result = await tools["cache_write"].execute({"scope": scope, "kind": "fact", "content": content})
    assert result.success, result.error
    out: dict[str, Any] = result.output
    return out


async def _pack_facts(tools: dict[str, Any], scope: str = "replace") -> list[str]:
    result = await tools["cache_pack"].execute({"scope": scope})
    assert result.success, result.error
    return list(result.output.get("facts", []))


async def test_a_loose_rewording_of_a_new_value_replaces_the_older_in_the_pack(tools: dict[str, Any]) -> None:
    await _write(tools, BARBER_OLD)
    out = await _write(tools, BARBER_NEW)
    assert out["superseded"]["content"] == BARBER_OLD
    assert await _pack_facts(tools) == [BARBER_NEW]


async def test_a_loose_rewording_of_a_new_value_replaces_the_older_in_cache_get(tools: dict[str, Any]) -> None:
    first = await _write(tools, BARBER_OLD)
    await _write(tools, BARBER_NEW)
    result = await tools["cache_get"].execute({"block_id": first["block_id"]})
    assert result.success, result.error
    assert [item["content"] for item in result.output["items"]] == [BARBER_NEW]


async def test_a_new_value_announced_with_a_dating_word_in_the_subject_replaces_the_older(
    tools: dict[str, Any],
) -> None:
    # "new" dates the office, it does not name another one: the same subject, another ending.
    await _write(tools, OFFICE_OLD)
    out = await _write(tools, OFFICE_NEW)
    assert out["superseded"]["content"] == OFFICE_OLD
    assert await _pack_facts(tools) == [OFFICE_NEW]


async def test_a_change_naming_many_differences_replaces_the_older(tools: dict[str, Any]) -> None:
    await _write(tools, WIFI_OLD)
    out = await _write(tools, WIFI_NEW)
    assert out["merged"] is False and out["superseded"]["content"] == WIFI_OLD
    assert await _pack_facts(tools) == [WIFI_NEW]


async def test_the_same_value_of_another_thing_keeps_both_in_the_pack(tools: dict[str, Any]) -> None:
    await _write(tools, BUILD_NIGHTLY)
    out = await _write(tools, BUILD_RELEASE)
    assert "superseded" not in out and out["merged"] is False
    assert sorted(await _pack_facts(tools)) == sorted([BUILD_NIGHTLY, BUILD_RELEASE])


async def test_the_same_preference_of_another_person_keeps_both_in_the_pack(tools: dict[str, Any]) -> None:
    await _write(tools, SEATS_MINE)
    out = await _write(tools, SEATS_BROTHER)
    assert "superseded" not in out and out["merged"] is False
    assert sorted(await _pack_facts(tools)) == sorted([SEATS_MINE, SEATS_BROTHER])


async def test_another_attribute_of_the_same_thing_keeps_both_in_the_pack(tools: dict[str, Any]) -> None:
    await _write(tools, DISHWASHER_REPAIRED)
    out = await _write(tools, DISHWASHER_MODEL)
    assert "superseded" not in out
    assert sorted(await _pack_facts(tools)) == sorted([DISHWASHER_REPAIRED, DISHWASHER_MODEL])


def test_a_restatement_said_of_another_subject_is_not_merged() -> None:
    # A merge keeps one text: merging these would drop the backups' fact from the cache.
    older, newer = "The audit logs are stored in Dublin.", "The audit log archives are stored in Dublin."
    restated = Comparison(Verdict.SAME, (), 0.95, decided=True)
    assert not merges(older, newer) and not replaces(restated, older, newer)


def test_a_shared_ending_is_not_a_new_value() -> None:
    # The value a statement gives comes last: the same ending after another object is another thing.
    assert not same_subject_new_value("I take my porridge with maple syrup.", "I take my pancakes with maple syrup.")
    assert same_subject_new_value("I take my porridge with maple syrup.", "I take my porridge plain.")


async def test_two_chat_excerpts_with_one_speaker_are_both_kept(tools: dict[str, Any]) -> None:
    # Several sentences state no single fact: their first subject and last words say nothing of one value.
    first = "Ana: I went hiking with my sister on Saturday. The views were amazing. Ben: Wow!"
    second = "Ana: I went hiking with my dog on Sunday. He loved the river. Ben: So cute!"
    await _write(tools, first)
    out = await _write(tools, second)
    assert "superseded" not in out
    assert sorted(await _pack_facts(tools)) == sorted([first, second])


async def test_writing_a_short_question_twice_merges_it(tools: dict[str, Any]) -> None:
    # The merge guard reads both texts' subjects; this text once made the WordNet lookup past its last word fail.
    first = await _write(tools, "Anything that stands out?")
    again = await _write(tools, "Anything that stands out?")
    assert again["merged"] is True and again["item_id"] == first["item_id"]
