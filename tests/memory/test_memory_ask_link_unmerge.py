"""Certify or ask, for long-term memory (issue 16): possible_updates, memory_link and the undo of a merge.

When a near memory of an updatable kind exists and the comparison cannot decide, memory_store stores the
new one and lists the near memory in ``possible_updates`` with what differs; the agent then declares
the update with ``memory_link`` (the rules of a declared ``supersedes``: the newest of a chain, never an
event, an update replaces an older memory). A merged restatement is reported (``merged``) and
``memory_unmerge`` gives the wording a memory of its own back, with what it was stored with. Real
engine, real model; none of these texts is in the shared data files.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from amplifier_module_tool_agent_memory.runtime import AgentMemory

# The comparison cannot decide this pair (a loose rewording with another name): an update the agent judges.
BARBER_OLD = "My barber is Tony at Main Street Cuts."
BARBER_NEW = "My barber is Luis at the salon by the station."
# Decided: another subject (two facts), and something unrelated.
LOCKER_MINE = "My gym locker is number 112."
LOCKER_WIFE = "My wife's gym locker is number 112."
UNRELATED = "The quarterly tax filing is due at the end of April."
# A decided change (linked automatically) and a decided restatement (merged).
PRINTER_OLD = "The plotter on the third floor prints at 600 dpi."
PRINTER_NEW = "The plotter on the third floor prints at 1200 dpi."
BACKUP = "The file server is backed up every night at 1 am."
BACKUP_AGAIN = "Every night at 1 am the file server is backed up."


async def link(call: Any, tools: dict[str, Any], memory_id: str, supersedes: str) -> dict[str, Any]:
    return await call(tools["memory_link"], {"id": memory_id, "supersedes": supersedes})


async def link_error(call: Any, tools: dict[str, Any], memory_id: str, supersedes: str) -> dict[str, Any]:
    return await call.error(tools["memory_link"], {"id": memory_id, "supersedes": supersedes})


async def count(call: Any, tools: dict[str, Any]) -> int:
    return int((await call(tools["memory_list"], {}))["count"])


# possible_updates


async def test_an_undecided_near_memory_is_offered_with_its_differences(tools: dict[str, Any], call: Any) -> None:
    old = await call.store(tools, BARBER_OLD)
    new = await call.store(tools, BARBER_NEW)
    assert new["created"] is True and new["id"] != old["id"] and "superseded" not in new
    [offered] = new["possible_updates"]
    assert (offered["id"], offered["content"], offered["kind"]) == (old["id"], BARBER_OLD, "fact")
    assert offered["differences"] == ["content: tony -> luis", "content: main street cuts -> salon by station"]
    assert 0.5 <= offered["similarity"] <= 1.0
    assert f"memory_link(id={new['id']}, supersedes=<its id>)" in new["note"]
    # Nothing was linked: both stand alone until the agent decides.
    assert "superseded_by" not in await call.get(tools, old["id"])


async def test_two_facts_and_unrelated_stores_are_not_offered(tools: dict[str, Any], call: Any) -> None:
    await call.store(tools, LOCKER_MINE)
    wife = await call.store(tools, LOCKER_WIFE)
    unrelated = await call.store(tools, UNRELATED)
    assert (wife["created"], unrelated["created"]) == (True, True)
    assert "possible_updates" not in wife and "superseded" not in wife
    assert "possible_updates" not in unrelated


async def test_a_decided_change_is_linked_not_offered(tools: dict[str, Any], call: Any) -> None:
    old = await call.store(tools, PRINTER_OLD)
    new = await call.store(tools, PRINTER_NEW)
    assert new["superseded"]["id"] == old["id"]
    assert "possible_updates" not in new


async def test_notes_and_events_are_never_offered(tools: dict[str, Any], call: Any) -> None:
    await call.store(tools, BARBER_OLD, kind="note")
    note = await call.store(tools, BARBER_NEW, kind="note")
    await call.store(tools, BARBER_OLD, kind="event")
    event = await call.store(tools, BARBER_NEW, kind="event")
    assert "possible_updates" not in note and "possible_updates" not in event


async def test_an_offered_update_is_settled_in_one_call(tools: dict[str, Any], call: Any) -> None:
    old = await call.store(tools, BARBER_OLD)
    new = await call.store(tools, BARBER_NEW)
    out = await link(call, tools, new["id"], new["possible_updates"][0]["id"])
    assert out["linked"] == {"id": new["id"], "supersedes": old["id"]}
    assert out["superseded"]["content"] == BARBER_OLD
    results = await call.search(tools, "Who is my barber?")
    order = [r["id"] for r in results]
    assert order.index(new["id"]) < order.index(old["id"])
    assert next(r for r in results if r["id"] == old["id"])["superseded_by"] == new["id"]


# memory_link: chain, kinds, order


async def chain(call: Any, tools: dict[str, Any], clock: Any, *texts: str) -> list[str]:
    ids = []
    for text in texts:
        ids.append(str((await call.store(tools, text))["id"]))
        clock.advance(days=1)
    return ids


async def test_link_to_a_superseded_memory_links_the_newest_of_its_chain(
    timed_tools: dict[str, Any], clock: Any, call: Any
) -> None:
    a, b = await chain(call, timed_tools, clock, PRINTER_OLD, PRINTER_NEW)
    stored = await call.store(timed_tools, "Large-format printing is done by the copy shop on Bridge Street.")
    assert "superseded" not in stored
    c = stored["id"]
    out = await link(call, timed_tools, c, a)
    assert out["linked"] == {"id": c, "supersedes": b}
    assert b in out["note"]
    assert [m["id"] for m in (await call.get(timed_tools, a))["chain"]] == [a, b, c]


async def test_linking_again_changes_nothing(timed_tools: dict[str, Any], clock: Any, call: Any) -> None:
    old, new = await chain(call, timed_tools, clock, BARBER_OLD, BARBER_NEW)
    await link(call, timed_tools, new, old)
    again = await link(call, timed_tools, new, old)
    assert again == {"linked": {"id": new, "supersedes": old}, "unchanged": True, "identity": "alice"}


async def test_an_older_memory_cannot_supersede_a_newer_one(timed_tools: dict[str, Any], clock: Any, call: Any) -> None:
    old, new = await chain(call, timed_tools, clock, BARBER_OLD, BARBER_NEW)
    err = await link_error(call, timed_tools, old, new)
    assert err["type"] == "invalid_input"
    assert f"memory {new} was stored after {old}" in err["message"]
    assert f"memory_link(id={new}, supersedes={old})" in err["message"]
    assert "supersedes" not in await call.get(timed_tools, old)


async def test_events_are_never_linked(timed_tools: dict[str, Any], clock: Any, call: Any) -> None:
    event = (await call.store(timed_tools, "Moved the build farm to the new rack.", kind="event"))["id"]
    clock.advance(days=1)
    fact = (await call.store(timed_tools, "The build farm sits in rack 7."))["id"]
    err = await link_error(call, timed_tools, fact, event)
    assert err["type"] == "invalid_input" and "events happened and are never superseded" in err["message"]
    assert "superseded_by" not in await call.get(timed_tools, event)


async def test_a_memory_supersedes_one_other_at_most(timed_tools: dict[str, Any], clock: Any, call: Any) -> None:
    a, b = await chain(call, timed_tools, clock, PRINTER_OLD, PRINTER_NEW)
    other = (await call.store(timed_tools, UNRELATED))["id"]
    clock.advance(days=1)
    err = await link_error(call, timed_tools, b, other)
    assert err["type"] == "invalid_input"
    assert f"memory {b} already supersedes {a}" in err["message"] and f"memory_unlink({b})" in err["message"]


async def test_self_links_and_unknown_memories_are_refused(tools: dict[str, Any], call: Any) -> None:
    only = (await call.store(tools, BACKUP))["id"]
    assert "cannot supersede itself" in (await link_error(call, tools, only, only))["message"]
    unknown = "00000000-0000-4000-8000-000000000000"
    missing_older = await link_error(call, tools, only, unknown)
    missing_newer = await link_error(call, tools, unknown, only)
    assert (missing_older["type"], missing_newer["type"]) == ("not_found", "not_found")
    assert "field 'supersedes'" in missing_older["message"] and "field 'id'" in missing_newer["message"]


async def test_a_link_is_undone_with_unlink(timed_tools: dict[str, Any], clock: Any, call: Any) -> None:
    old, new = await chain(call, timed_tools, clock, BARBER_OLD, BARBER_NEW)
    await link(call, timed_tools, new, old)
    out = await call(timed_tools["memory_unlink"], {"id": new})
    assert out["unlinked"] == {"id": new, "supersedes": old}
    assert "superseded_by" not in await call.get(timed_tools, old)


# A merge is reported and undone


async def test_a_merge_is_reported_with_the_memory_it_went_into(tools: dict[str, Any], call: Any) -> None:
    first = await call.store(tools, BACKUP)
    again = await call.store(tools, BACKUP_AGAIN)
    assert again["merged"] == {"id": first["id"], "content": BACKUP, "wording": BACKUP_AGAIN}
    assert f"memory_unmerge(id={first['id']}, wording=<this content>)" in again["note"]
    assert (await call.get(tools, first["id"]))["restated"] == [BACKUP_AGAIN]


async def test_unmerge_gives_the_wording_its_own_memory_back(tools: dict[str, Any], call: Any) -> None:
    first = await call.store(tools, BACKUP, tags=["ops"], importance=0.4)
    await call.store(tools, BACKUP_AGAIN, tags=["nightly", "storage"], importance=0.9, files=["ops/backup.sh"])
    out = await call(tools["memory_unmerge"], {"id": first["id"], "wording": BACKUP_AGAIN.upper()})
    assert out["created"] is True and out["unmerged"] == {"id": first["id"], "wording": BACKUP_AGAIN}
    own = await call.get(tools, out["memory"]["id"])
    assert (own["content"], own["kind"], own["tags"], own["importance"], own["files"]) == (
        BACKUP_AGAIN, "fact", ["nightly", "storage"], 0.9, ["ops/backup.sh"]
    )
    target = await call.get(tools, first["id"])
    assert (target["content"], target["tags"]) == (BACKUP, ["ops"]) and "restated" not in target
    assert await count(call, tools) == 2
    # Its own vector: a search for its wording finds it as a memory of its own.
    assert own["id"] in [r["id"] for r in await call.search(tools, BACKUP_AGAIN)]
    assert f"memory_link(id={own['id']}, supersedes={first['id']})" in out["note"]


async def test_the_unmerged_wording_is_not_merged_back_by_storing_it_again(tools: dict[str, Any], call: Any) -> None:
    first = await call.store(tools, BACKUP)
    await call.store(tools, BACKUP_AGAIN)
    own = (await call(tools["memory_unmerge"], {"id": first["id"], "wording": BACKUP_AGAIN}))["memory"]
    again = await call.store(tools, BACKUP_AGAIN)
    assert (again["id"], again["duplicate"]) == (own["id"], True) and "merged" not in again


async def test_unmerge_of_a_wording_the_memory_does_not_hold_is_a_clear_error(tools: dict[str, Any], call: Any) -> None:
    first = await call.store(tools, BACKUP)
    wording = "The printer is out of toner."
    err = await call.error(tools["memory_unmerge"], {"id": first["id"], "wording": wording})
    assert err["type"] == "invalid_input"
    assert f"memory {first['id']} holds no such restated wording (it has 0" in err["message"]
    assert "toner" not in err["message"]  # the input is not echoed back
    assert await count(call, tools) == 1


async def test_a_memory_full_of_wordings_takes_no_more_and_stores_the_new_one(tools: dict[str, Any], call: Any) -> None:
    first = await call.store(tools, "The file server is backed up nightly at 1 am.")
    wordings = [
        "Every night at 1 am the file server is backed up.",
        "At 1 am every night the file server is backed up.",
        "The file server gets backed up every night at 1 am.",
        "Each night at 1 am, the file server is backed up.",
        "The file server is backed up each night at 1 am.",
    ]
    for text in wordings:
        out = await call.store(tools, text)
        assert out["id"] == first["id"], text
    assert (await call.get(tools, first["id"]))["restated"] == wordings
    sixth = await call.store(tools, "Nightly at 1 am, the file server is backed up.")
    assert sixth["created"] is True and sixth["id"] != first["id"] and "merged" not in sixth


async def test_export_and_import_keep_what_a_merged_wording_was_stored_with(
    make_runtime: Callable[..., AgentMemory], call: Any, runtime_tools: Any,
) -> None:
    source_rt = make_runtime()
    source = runtime_tools(source_rt)
    first = await call.store(source, BACKUP)
    await call.store(source, BACKUP_AGAIN, tags=["nightly"])
    records = list(source_rt.memory().export())
    target_rt = make_runtime(identity="bob")
    target_rt.memory().import_records(records)
    target = runtime_tools(target_rt)
    out = await call(target["memory_unmerge"], {"id": first["id"], "wording": BACKUP_AGAIN})
    assert (await call.get(target, out["memory"]["id"]))["tags"] == ["nightly"]


# A rewording the word-by-word comparison misses (words moved: compare.reworded) merges too, and is undone.
TICKETS = "The support team answers tickets in Freshdesk."
TICKETS_TURNED = "Tickets are answered in Freshdesk by the support team."
TICKETS_ELSEWHERE = "Tickets are answered in Zendesk by the support team."


async def test_a_turned_round_restatement_is_merged_and_unmerged(tools: dict[str, Any], call: Any) -> None:
    first = await call.store(tools, TICKETS)
    again = await call.store(tools, TICKETS_TURNED)
    assert again["created"] is False and again["id"] == first["id"]
    assert again["merged"] == {"id": first["id"], "content": TICKETS, "wording": TICKETS_TURNED}
    assert (await call.get(tools, first["id"]))["restated"] == [TICKETS_TURNED]
    out = await call(tools["memory_unmerge"], {"id": first["id"], "wording": TICKETS_TURNED})
    assert out["created"] is True and out["unmerged"] == {"id": first["id"], "wording": TICKETS_TURNED}
    assert (await call.get(tools, out["memory"]["id"]))["content"] == TICKETS_TURNED
    assert "restated" not in await call.get(tools, first["id"])
    assert await count(call, tools) == 2


async def test_a_turned_round_statement_with_another_name_is_not_merged(tools: dict[str, Any], call: Any) -> None:
    first = await call.store(tools, TICKETS)
    other = await call.store(tools, TICKETS_ELSEWHERE)
    assert other["created"] is True and other["id"] != first["id"] and "merged" not in other
    assert await count(call, tools) == 2
