"""A statement that announces it changes an older one ("I switched ... and now ...") updates it.

People rarely restate a changed fact word for word: they say it changed. Long-term memory links such
a statement to the older one, search ranks it above the older, and the cache pack keeps only it; a
statement with a marker of change about another subject does none of this. Real engine, real model,
real WordNet; none of these texts is in the shared or held-out data files.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from data import DISTINCT_FACTS

from amplifier_module_tool_agent_memory.compare import announced_update, announces_change
from amplifier_module_tool_agent_memory.compare.announce import change_marker
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


async def test_an_announced_change_is_linked_to_the_older_memory(tools: dict[str, Any], call: Any) -> None:
    old = await call.store(tools, VET)
    new = await call.store(tools, NEW_VET)
    assert new["created"] is True and new["superseded"]["id"] == old["id"]


async def test_an_announced_change_ranks_above_the_older_memory(tools: dict[str, Any], call: Any) -> None:
    await call.store(tools, GYM_DAYS, kind="preference")
    new = await call.store(tools, GYM_DAYS_NOW, kind="preference")
    results = (await call(tools["memory_search"], {"query": "which days do I go to the gym?"}))["results"]
    assert results[0]["id"] == new["id"]


async def test_a_change_announced_about_another_subject_is_not_linked(tools: dict[str, Any], call: Any) -> None:
    sister = await call.store(tools, SISTER_CAR)
    mine = await call.store(tools, MY_CAR_NOW)
    assert mine["id"] != sister["id"] and "superseded" not in mine


def test_the_cache_pack_keeps_only_the_announced_change(
    make_runtime: Callable[..., AgentMemory], make_cache: Any, make_clock: Any
) -> None:
    svc = make_cache(clock=make_clock())
    svc.note(VET)
    svc.note(NEW_VET)
    assert svc.packed_texts() == [NEW_VET]


async def test_a_loose_new_value_of_the_same_subject_ranks_above_the_older(tools: dict[str, Any], call: Any) -> None:
    await call.store(tools, "My cousin Lea lives in Porto.")
    new = await call.store(tools, "My cousin Lea packed her bags and went to live in Seville.")
    results = (await call(tools["memory_search"], {"query": "where does my cousin Lea live?"}))["results"]
    assert results[0]["id"] == new["id"]


def test_a_chat_excerpt_of_several_remarks_announces_nothing() -> None:
    older = "I walk to work. It takes twenty minutes."
    assert not announces_change(older, "I now cycle to work. It is quicker.")


def test_a_title_abbreviation_does_not_end_a_statement() -> None:
    from amplifier_module_tool_agent_memory.compare.statement import one_statement

    assert one_statement("Our vet is Dr. Brandt at Elm St. clinic.")
    assert not one_statement("Our vet moved. Dr. Brandt retired.")


SEAT = "I prefer the aisle seat on long train rides."
SEAT_NOW = (
    "Honestly, after that awful night journey I have changed my mind: book me a window seat from now on so I can "
    "lean on the glass and doze."
)
RETREAT = "We decided to hold the spring retreat in Ghent."
RETREAT_NOW = "Change of plans for the retreat: the venue cancelled on us, so we are doing it in Utrecht instead."


def test_a_change_told_with_its_reasons_is_far_from_the_older_text(embedder: Any) -> None:
    # What the next tests rely on: the sentence model puts these pairs under the comparison's cosine gate.
    for older, newer in ((SEAT, SEAT_NOW), (RETREAT, RETREAT_NOW)):
        a, b = embedder.embed_documents([older, newer])
        assert sum(x * y for x, y in zip(a, b, strict=True)) < 0.5


def test_a_change_told_with_its_reasons_names_what_it_changes() -> None:
    assert announced_update(SEAT, SEAT_NOW)
    assert announced_update(RETREAT, RETREAT_NOW)


def test_an_i_statement_with_a_marker_about_something_else_updates_nothing() -> None:
    assert not announced_update(SEAT, "I now work from home on Fridays.")


def test_a_word_that_only_qualifies_another_ties_no_change_to_an_i_statement() -> None:
    older = "We pay 300 euros a month into the kids' holiday fund."
    assert not announced_update(older, "We switched the kids to a new swimming coach, still on Sundays.")


def test_a_name_is_no_verb_of_change() -> None:
    assert change_marker("Our services are written in Go.", "The parser is written in Rust.") == ""


def test_what_happens_as_a_rule_is_no_change() -> None:
    assert change_marker("My son's school is in Hove.", "My son's school starts at 8:30.") == ""
    assert change_marker("My son's school is in Hove.", "My son's school started a new timetable.") == "started"


async def test_a_change_told_with_its_reasons_is_linked_and_ranked_above(tools: dict[str, Any], call: Any) -> None:
    for fact in DISTINCT_FACTS[:8]:
        await call.store(tools, fact, kind="preference")
    old = await call.store(tools, SEAT, kind="preference")
    new = await call.store(tools, SEAT_NOW, kind="preference")
    assert new["superseded"]["id"] == old["id"]
    results = (await call(tools["memory_search"], {"query": "which seat do I like on trains?"}))["results"]
    assert [r["id"] for r in results].index(new["id"]) < [r["id"] for r in results].index(old["id"])


async def test_an_unrelated_i_statement_with_a_marker_is_not_linked(tools: dict[str, Any], call: Any) -> None:
    await call.store(tools, SEAT, kind="preference")
    other = await call.store(tools, "I now work from home on Fridays.", kind="preference")
    assert "superseded" not in other


def test_the_cache_pack_keeps_only_a_change_told_with_its_reasons(
    make_runtime: Callable[..., AgentMemory], make_cache: Any, make_clock: Any
) -> None:
    svc = make_cache(clock=make_clock())
    svc.note(RETREAT)
    svc.note(RETREAT_NOW)
    assert svc.packed_texts() == [RETREAT_NOW]


def test_a_name_in_the_older_subject_is_enough_to_say_what_changed() -> None:
    assert announces_change("My colleague Ingrid works in Oslo.", "Ingrid has moved on and now works in Bergen.")


def test_from_a_point_in_time_on_marks_a_change() -> None:
    assert change_marker("The rent is 850 euros.", "From next month on the rent is 900 euros.") == "from next month on"
    assert change_marker("The shop is open on weekdays.", "The shop is open from 9 to 5.") == ""


def test_a_correction_marks_a_change() -> None:
    assert change_marker("The exam is on Friday.", "The exam is actually on Thursday.") == "actually"
