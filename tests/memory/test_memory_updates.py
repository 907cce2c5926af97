"""Long-term memory keeps every change of a fact (issue 9).

A changed fact is stored and linked to the one it replaces (``supersedes`` /
``superseded_by``); the older stays readable and ranks below the newer; a restatement
merges; a distinct fact stays independent; events are never superseded; forgetting inside a
chain repairs it; a declared update links without asking the comparison, and a wrong link
can be undone with ``memory_unlink``. Real engine, real model; none of these texts is in the
shared dev files.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from data import SERVER

from amplifier_module_tool_agent_memory.memory.models import MemoryRecord
from amplifier_module_tool_agent_memory.runtime import AgentMemory

VPN_50 = "The VPN gateway allows 50 concurrent connections."
VPN_80 = "The VPN gateway allows 80 concurrent connections."
VPN_120 = "The VPN gateway allows 120 concurrent connections."
VPN_QUERY = "How many concurrent connections does the VPN gateway allow?"
FONT_OLD = "The design system uses Inter as its body font."
FONT_NEW = "The design system uses Source Sans as its body font."
NGINX_TIMEOUT = "The nginx proxy read timeout is 60 seconds."
DB_TIMEOUT = "The database statement timeout is 60 seconds."
CERT = "The VPN certificate check runs every night at 2 am."
CERT_AGAIN = "Every night at 2 am the VPN certificate check runs."
ROLLOUT_1 = "Rolled out nginx 1.25 to the edge servers."
ROLLOUT_2 = "Rolled out nginx 1.26 to the edge servers."








async def chain_of_three(call: Any, tools: dict[str, Any], clock: Any) -> tuple[str, str, str]:
    a = await call.store(tools, VPN_50)
    clock.advance(days=1)
    b = await call.store(tools, VPN_80)
    clock.advance(days=1)
    c = await call.store(tools, VPN_120)
    return str(a["id"]), str(b["id"]), str(c["id"])


# A changed fact is stored and linked


async def test_a_changed_fact_is_stored_and_answers_what_it_superseded(timed_tools: dict[str, Any], call: Any) -> None:
    old = await call.store(timed_tools, VPN_50)
    new = await call.store(timed_tools, VPN_80)
    assert new["created"] is True and new["id"] != old["id"]
    assert new["superseded"]["id"] == old["id"]
    assert new["superseded"]["content"] == VPN_50
    assert new["superseded"]["differences"]


async def test_a_chain_of_changes_links_each_to_the_previous(
    timed_tools: dict[str, Any], clock: Any, call: Any
) -> None:
    a, b, c = await chain_of_three(call, timed_tools, clock)
    middle = await call.get(timed_tools, b)
    assert (middle["supersedes"], middle["superseded_by"]) == (a, c)
    assert [m["id"] for m in middle["chain"]] == [a, b, c]


async def test_the_oldest_of_a_chain_stays_readable_with_its_chain(
    timed_tools: dict[str, Any], clock: Any, call: Any
) -> None:
    a, b, _ = await chain_of_three(call, timed_tools, clock)
    oldest = await call.get(timed_tools, a)
    assert oldest["content"] == VPN_50
    assert oldest["superseded_by"] == b
    assert [m["content"] for m in oldest["chain"]] == [VPN_50, VPN_80, VPN_120]


async def test_the_newest_of_a_chain_ranks_first(timed_tools: dict[str, Any], clock: Any, call: Any) -> None:
    await chain_of_three(call, timed_tools, clock)
    results = await call.search(timed_tools, VPN_QUERY)
    assert results[0]["content"] == VPN_120
    assert "superseded_by" not in results[0]


async def test_superseded_memories_are_shown_below_and_marked(
    timed_tools: dict[str, Any], clock: Any, call: Any
) -> None:
    a, b, c = await chain_of_three(call, timed_tools, clock)
    results = await call.search(timed_tools, VPN_QUERY)
    by_id = {r["id"]: r for r in results}
    assert by_id[a]["superseded_by"] == b and by_id[b]["superseded_by"] == c
    order = [r["id"] for r in results]
    assert order.index(c) < order.index(b) and order.index(c) < order.index(a)


async def test_include_superseded_false_hides_older_versions(
    timed_tools: dict[str, Any], clock: Any, call: Any
) -> None:
    _, _, c = await chain_of_three(call, timed_tools, clock)
    results = await call.search(timed_tools, VPN_QUERY, include_superseded=False)
    assert [r["id"] for r in results if "VPN gateway" in r["content"]] == [c]


async def test_a_search_matching_only_the_old_wording_brings_the_newer_above_it(
    timed_tools: dict[str, Any], call: Any
) -> None:
    old = await call.store(timed_tools, FONT_OLD)
    new = await call.store(timed_tools, FONT_NEW)
    assert new["superseded"]["id"] == old["id"]
    order = [r["id"] for r in await call.search(timed_tools, "Inter body font")]
    assert new["id"] in order and order.index(new["id"]) < order.index(old["id"])


# Restatements, distinct facts and events


async def test_a_restatement_merges_into_the_existing_memory(tools: dict[str, Any], call: Any) -> None:
    first = await call.store(tools, CERT)
    again = await call.store(tools, CERT_AGAIN)
    assert (again["id"], again["created"], again["duplicate"]) == (first["id"], False, True)
    assert "superseded" not in again
    assert (await call(tools["memory_list"], {}))["count"] == 1


async def test_a_distinct_fact_with_the_same_value_stays_independent(tools: dict[str, Any], call: Any) -> None:
    nginx = await call.store(tools, NGINX_TIMEOUT)
    db = await call.store(tools, DB_TIMEOUT)
    assert db["created"] is True and "superseded" not in db
    assert "superseded_by" not in await call.get(tools, nginx["id"])
    assert (await call.search(tools, "nginx proxy read timeout"))[0]["id"] == nginx["id"]
    assert (await call.search(tools, "database statement timeout"))[0]["id"] == db["id"]


async def test_events_are_never_superseded(tools: dict[str, Any], call: Any) -> None:
    first = await call.store(tools, ROLLOUT_1, kind="event")
    second = await call.store(tools, ROLLOUT_2, kind="event")
    assert second["created"] is True and "superseded" not in second
    assert "superseded_by" not in await call.get(tools, first["id"])


async def test_an_event_cannot_be_declared_superseded(tools: dict[str, Any], call: Any) -> None:
    event = await call.store(tools, ROLLOUT_1, kind="event")
    err = await call.error(tools["memory_store"], {"content": ROLLOUT_2, "supersedes": event["id"]})
    assert err["type"] == "invalid_input" and "event" in err["message"]
    assert (await call(tools["memory_list"], {}))["count"] == 1


# Forgetting inside a chain


async def test_forgetting_the_middle_of_a_chain_links_its_neighbours(
    timed_tools: dict[str, Any], clock: Any, call: Any
) -> None:
    a, b, c = await chain_of_three(call, timed_tools, clock)
    await call(timed_tools["memory_forget"], {"id": b})
    assert (await call.get(timed_tools, a))["superseded_by"] == c
    newest = await call.get(timed_tools, c)
    assert newest["supersedes"] == a
    assert [m["id"] for m in newest["chain"]] == [a, c]


async def test_forgetting_the_newest_makes_the_previous_current_again(
    timed_tools: dict[str, Any], clock: Any, call: Any
) -> None:
    _, b, c = await chain_of_three(call, timed_tools, clock)
    await call(timed_tools["memory_forget"], {"id": c})
    assert "superseded_by" not in await call.get(timed_tools, b)
    assert (await call.search(timed_tools, VPN_QUERY))[0]["id"] == b


async def test_forgetting_the_oldest_leaves_the_rest_of_the_chain(
    timed_tools: dict[str, Any], clock: Any, call: Any
) -> None:
    a, b, c = await chain_of_three(call, timed_tools, clock)
    await call(timed_tools["memory_forget"], {"id": a})
    middle = await call.get(timed_tools, b)
    assert "supersedes" not in middle and middle["superseded_by"] == c


# Declared updates and undo


async def test_a_declared_update_links_to_the_memory_it_names(tools: dict[str, Any], call: Any) -> None:
    old = await call.store(tools, "The team standup is in the Kanban corner.")
    new = await call.store(tools, "Standups now happen on video, not in person.", supersedes=old["id"])
    assert new["created"] is True and new["superseded"]["id"] == old["id"]
    assert (await call.get(tools, old["id"]))["superseded_by"] == new["id"]


async def test_declaring_an_unknown_memory_is_refused_and_stores_nothing(tools: dict[str, Any], call: Any) -> None:
    err = await call.error(
        tools["memory_store"], {"content": VPN_80, "supersedes": "00000000-0000-4000-8000-000000000000"}
    )
    assert err["type"] == "not_found"
    assert (await call(tools["memory_list"], {}))["count"] == 0


async def test_declaring_a_superseded_memory_links_to_the_newest_of_its_chain(
    timed_tools: dict[str, Any], clock: Any, call: Any
) -> None:
    a, _, c = await chain_of_three(call, timed_tools, clock)
    clock.advance(days=1)
    d = await call.store(timed_tools, "The VPN gateway connection cap was removed.", supersedes=a)
    assert d["superseded"]["id"] == c


async def test_unlink_makes_the_older_memory_current_again(tools: dict[str, Any], call: Any) -> None:
    old = await call.store(tools, VPN_50)
    new = await call.store(tools, VPN_80)
    out = await call(tools["memory_unlink"], {"id": new["id"]})
    assert out["unlinked"] == {"id": new["id"], "supersedes": old["id"]}
    assert "superseded_by" not in await call.get(tools, old["id"])
    assert "supersedes" not in await call.get(tools, new["id"])


async def test_unlink_of_a_memory_that_supersedes_nothing_is_a_clear_error(tools: dict[str, Any], call: Any) -> None:
    only = await call.store(tools, VPN_50)
    err = await call.error(tools["memory_unlink"], {"id": only["id"]})
    assert err["type"] == "invalid_input" and "supersedes nothing" in err["message"]


# The same on the server backend (qdrant-client's local mode behind conftest's ``server``)


@pytest.fixture
def server_tools(
    server: Any, make_runtime: Callable[..., AgentMemory], clock: Any, runtime_tools: Any
) -> dict[str, Any]:
    rt = make_runtime(**SERVER)
    rt.clock = clock
    return runtime_tools(rt)


@pytest.mark.filterwarnings("ignore:Payload indexes have no effect:UserWarning")
async def test_server_backend_keeps_a_chain_and_ranks_the_newest_first(
    server_tools: dict[str, Any], clock: Any, call: Any
) -> None:
    a, b, c = await chain_of_three(call, server_tools, clock)
    assert [m["id"] for m in (await call.get(server_tools, b))["chain"]] == [a, b, c]
    results = await call.search(server_tools, VPN_QUERY)
    order = [r["id"] for r in results]
    assert order[0] == c and order.index(b) < order.index(a)


@pytest.mark.filterwarnings("ignore:Payload indexes have no effect:UserWarning")
async def test_server_backend_repairs_a_chain_on_forget_and_unlinks(
    server_tools: dict[str, Any], clock: Any, call: Any
) -> None:
    a, b, c = await chain_of_three(call, server_tools, clock)
    await call(server_tools["memory_forget"], {"id": b})
    assert (await call.get(server_tools, c))["supersedes"] == a
    await call(server_tools["memory_unlink"], {"id": c})
    assert "superseded_by" not in await call.get(server_tools, a)


@pytest.mark.filterwarnings("ignore:Payload indexes have no effect:UserWarning")
async def test_server_backend_merges_restatements_and_keeps_events(server_tools: dict[str, Any], call: Any) -> None:
    first = await call.store(server_tools, CERT)
    assert (await call.store(server_tools, CERT_AGAIN))["id"] == first["id"]
    await call.store(server_tools, ROLLOUT_1, kind="event")
    assert "superseded" not in await call.store(server_tools, ROLLOUT_2, kind="event")


# Changes that were never linked (imported, or stored before this behaviour)


async def test_an_unlinked_newer_change_ranks_above_the_older(
    make_runtime: Callable[..., AgentMemory], clock: Any, call: Any, runtime_tools: Any
) -> None:
    rt = make_runtime()
    rt.clock = clock
    old, new = (
        MemoryRecord(id=str(uuid.uuid4()), content=content, kind="fact", importance=importance, created_at=created)
        for content, importance, created in (
            (VPN_50, 1.0, "2026-01-01T00:00:00Z"),  # the older one is marked more important
            (VPN_80, 0.0, "2026-01-05T00:00:00Z"),
        )
    )
    rt.memory().import_records([old, new])
    assert "superseded_by" not in await call.get(runtime_tools(rt), old.id)
    results = await call.search(runtime_tools(rt), VPN_QUERY)
    assert [r["id"] for r in results][:2] == [new.id, old.id]


async def test_a_reworded_note_stays_a_memory_of_its_own(tools: dict[str, Any], call: Any) -> None:
    # A note's place in its conversation is part of what it says; the same words as a fact merge.
    first = await call.store(tools, "We chose PostgreSQL for the billing service.", kind="note")
    again = await call.store(tools, "PostgreSQL is what we chose for the billing service.", kind="note")
    assert again["created"] is True and again["id"] != first["id"] and "superseded" not in again


async def test_the_same_rewording_as_a_fact_merges(tools: dict[str, Any], call: Any) -> None:
    first = await call.store(tools, "We chose PostgreSQL for the billing service.")
    again = await call.store(tools, "PostgreSQL is what we chose for the billing service.")
    assert (again["id"], again["duplicate"]) == (first["id"], True)


async def test_export_and_import_keep_a_chain(
    make_runtime: Callable[..., AgentMemory], clock: Any, call: Any, runtime_tools: Any
) -> None:
    source = make_runtime()
    source.clock = clock
    a, b, c = await chain_of_three(call, runtime_tools(source), clock)
    records = list(source.memory().export())
    target = make_runtime(identity="bob")
    target.memory().import_records(records)
    assert [m["id"] for m in (await call.get(runtime_tools(target), b))["chain"]] == [a, b, c]
