"""Long-term memory round trips through the memory_* tools: store, get, search, forget, list."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from data import DISTINCT_FACTS, T0

from amplifier_module_tool_agent_memory.runtime import AgentMemory

MEMORY_TOOLS = {"memory_store", "memory_search", "memory_get", "memory_forget", "memory_list"}


async def store(call: Any, tools: dict[str, Any], content: str, **fields: Any) -> str:
    out = await call(tools["memory_store"], {"content": content, **fields})
    assert out["created"] is True, out
    return str(out["id"])


async def search_ids(call: Any, tools: dict[str, Any], query: str, **fields: Any) -> list[str]:
    out = await call(tools["memory_search"], {"query": query, **fields})
    return [r["id"] for r in out["results"]]


async def test_mount_registers_every_memory_tool(tools: dict[str, Any]) -> None:
    assert set(tools) >= MEMORY_TOOLS


async def test_store_returns_a_new_uuid_for_a_new_memory(tools: dict[str, Any], call: Any) -> None:
    out = await call(tools["memory_store"], {"content": "The API gateway runs on port 8443"})
    assert out["created"] is True
    assert out["duplicate"] is False
    assert out["identity"] == "alice"
    assert str(uuid.UUID(out["id"])) == out["id"]


async def test_get_returns_every_stored_field(timed_tools: dict[str, Any], call: Any) -> None:
    memory_id = await store(
        call, timed_tools,
        "Release builds are signed with the hardware key",
        kind="decision",
        tags=["release", "security"],
        importance=0.9,
        files=["scripts/sign.sh"],
    )
    memory = (await call(timed_tools["memory_get"], {"id": memory_id}))["memory"]
    assert memory == {
        "id": memory_id,
        "content": "Release builds are signed with the hardware key",
        "kind": "decision",
        "tags": ["release", "security"],
        "importance": 0.9,
        "files": ["scripts/sign.sh"],
        "created_at": "2026-01-10T09:00:00.000000Z",
        "updated_at": "2026-01-10T09:00:00.000000Z",
    }


async def test_store_defaults_kind_note_and_importance_half(tools: dict[str, Any], call: Any) -> None:
    memory_id = await store(call, tools, "The wiki moved to Confluence")
    memory = (await call(tools["memory_get"], {"id": memory_id}))["memory"]
    assert (memory["kind"], memory["importance"], memory["tags"], memory["files"]) == ("note", 0.5, [], [])


async def test_get_accepts_an_uppercase_id(tools: dict[str, Any], call: Any) -> None:
    memory_id = await store(call, tools, "The wiki moved to Confluence")
    memory = (await call(tools["memory_get"], {"id": memory_id.upper()}))["memory"]
    assert memory["id"] == memory_id


async def test_search_finds_a_memory_by_meaning_with_a_compact_result(tools: dict[str, Any], call: Any) -> None:
    memory_id = await store(call, tools, "Alice prefers tabs over spaces in Go code", kind="preference", tags=["style"])
    await store(call, tools, "The staging cluster runs in the eu-west-1 region")
    out = await call(tools["memory_search"], {"query": "what indentation does Alice like?"})
    top = out["results"][0]
    assert top["id"] == memory_id
    assert set(top) == {"id", "content", "kind", "tags", "created_at", "score"}
    assert out["count"] == len(out["results"])


async def test_search_on_an_empty_store_returns_no_results(tools: dict[str, Any], call: Any) -> None:
    out = await call(tools["memory_search"], {"query": "anything at all"})
    assert out == {"results": [], "count": 0, "identity": "alice"}


async def test_forget_deletes_the_memory_and_returns_it(tools: dict[str, Any], call: Any) -> None:
    memory_id = await store(call, tools, "Temporary note about the broken printer", tags=["office"])
    deleted = (await call(tools["memory_forget"], {"id": memory_id}))["deleted"]
    assert (deleted["id"], deleted["content"], deleted["tags"]) == (
        memory_id,
        "Temporary note about the broken printer",
        ["office"],
    )
    assert (await call.error(tools["memory_get"], {"id": memory_id}))["type"] == "not_found"
    assert memory_id not in await search_ids(call, tools, "broken printer")
    assert (await call(tools["memory_list"], {}))["count"] == 0


async def test_forget_leaves_other_memories_alone(tools: dict[str, Any], call: Any) -> None:
    keep = await store(call, tools, DISTINCT_FACTS[0])
    drop = await store(call, tools, DISTINCT_FACTS[1])
    await call(tools["memory_forget"], {"id": drop})
    listed = (await call(tools["memory_list"], {}))["memories"]
    assert [m["id"] for m in listed] == [keep]


async def test_forget_of_an_unknown_id_reports_not_found(tools: dict[str, Any], call: Any) -> None:
    error = await call.error(tools["memory_forget"], {"id": str(uuid.uuid4())})
    assert error["type"] == "not_found"
    assert "no memory with id" in error["message"]


async def test_get_of_an_unknown_id_reports_not_found(tools: dict[str, Any], call: Any) -> None:
    missing = str(uuid.uuid4())
    error = await call.error(tools["memory_get"], {"id": missing})
    assert error["type"] == "not_found"
    assert missing in error["message"]


async def test_list_returns_memories_newest_first(timed_tools: dict[str, Any], clock: Any, call: Any) -> None:
    ids = []
    for fact in DISTINCT_FACTS[:4]:
        ids.append(await store(call, timed_tools, fact))
        clock.advance(hours=1)
    out = await call(timed_tools["memory_list"], {})
    assert [m["id"] for m in out["memories"]] == list(reversed(ids))
    assert out["count"] == 4
    assert out["next_before"] is None


async def test_list_pages_with_before_and_next_before(timed_tools: dict[str, Any], clock: Any, call: Any) -> None:
    ids = []
    for fact in DISTINCT_FACTS[:5]:
        ids.append(await store(call, timed_tools, fact))
        clock.advance(minutes=5)
    newest_first = list(reversed(ids))
    pages: list[list[str]] = []
    before: str | None = None
    while True:
        args: dict[str, Any] = {"limit": 2}
        if before is not None:
            args["before"] = before
        out = await call(timed_tools["memory_list"], args)
        pages.append([m["id"] for m in out["memories"]])
        before = out["next_before"]
        if before is None:
            break
    assert [p for p in pages if p] == [newest_first[0:2], newest_first[2:4], newest_first[4:5]]


async def test_list_pages_do_not_skip_memories_created_at_the_same_instant(
    timed_tools: dict[str, Any], call: Any,
) -> None:
    ids = {await store(call, timed_tools, fact) for fact in DISTINCT_FACTS[:5]}
    seen: list[str] = []
    args: dict[str, Any] = {"limit": 2}
    for _ in range(10):
        out = await call(timed_tools["memory_list"], args)
        seen.extend(m["id"] for m in out["memories"])
        if out["next_before"] is None:
            break
        args = {"limit": 2, "before": out["next_before"]}
    assert sorted(seen) == sorted(ids)


async def test_list_pages_of_one_kind_keep_to_that_kind_across_ties(timed_tools: dict[str, Any], call: Any) -> None:
    decisions = {await store(call, timed_tools, fact, kind="decision") for fact in DISTINCT_FACTS[:3]}
    for fact in DISTINCT_FACTS[3:6]:
        await store(call, timed_tools, fact, kind="note")
    seen: list[str] = []
    args: dict[str, Any] = {"limit": 2, "kind": "decision"}
    for _ in range(10):
        out = await call(timed_tools["memory_list"], args)
        seen.extend(m["id"] for m in out["memories"])
        if out["next_before"] is None:
            break
        args = {**args, "before": out["next_before"]}
    assert sorted(seen) == sorted(decisions)


async def test_list_before_excludes_memories_at_and_after_that_time(
    timed_tools: dict[str, Any], clock: Any, call: Any
) -> None:
    old = await store(call, timed_tools, DISTINCT_FACTS[0])
    clock.advance(days=1)
    await store(call, timed_tools, DISTINCT_FACTS[1])
    out = await call(timed_tools["memory_list"], {"before": (T0 + timedelta(days=1)).isoformat()})
    assert [m["id"] for m in out["memories"]] == [old]


async def test_list_filters_by_kind(tools: dict[str, Any], call: Any) -> None:
    decision = await store(call, tools, DISTINCT_FACTS[3], kind="decision")
    await store(call, tools, DISTINCT_FACTS[1], kind="preference")
    out = await call(tools["memory_list"], {"kind": "decision"})
    assert [m["id"] for m in out["memories"]] == [decision]


async def test_search_since_and_until_filter_on_created_at(timed_tools: dict[str, Any], clock: Any, call: Any) -> None:
    jan = await store(call, timed_tools, "Sprint review: the login page was redesigned")
    clock.advance(days=31)
    feb = await store(call, timed_tools, "Sprint review: the signup page was redesigned")
    clock.advance(days=28)
    mar = await store(call, timed_tools, "Sprint review: the pricing page was redesigned")
    query = "sprint review redesign"
    assert set(await search_ids(call, timed_tools, query)) == {jan, feb, mar}
    assert set(await search_ids(call, timed_tools, query, since="2026-02-01")) == {feb, mar}
    assert set(await search_ids(call, timed_tools, query, until="2026-02-01T00:00:00Z")) == {jan}
    assert set(await search_ids(call, timed_tools, query, since="2026-02-01", until="2026-03-01")) == {feb}


async def test_search_since_and_until_are_inclusive(timed_tools: dict[str, Any], call: Any) -> None:
    memory_id = await store(call, timed_tools, "The quarterly report was published")
    stamp = "2026-01-10T09:00:00Z"
    assert await search_ids(call, timed_tools, "quarterly report", since=stamp, until=stamp) == [memory_id]


async def test_search_since_understands_a_timezone_offset(timed_tools: dict[str, Any], call: Any) -> None:
    memory_id = await store(call, timed_tools, "The quarterly report was published")
    # 10:30+02:00 is 08:30Z, half an hour before the memory; 11:30+02:00 is after it.
    assert await search_ids(call, timed_tools, "quarterly report", since="2026-01-10T10:30:00+02:00") == [memory_id]
    assert await search_ids(call, timed_tools, "quarterly report", since="2026-01-10T11:30:00+02:00") == []


async def test_search_filters_by_any_of_the_tags(tools: dict[str, Any], call: Any) -> None:
    red = await store(call, tools, DISTINCT_FACTS[0], tags=["backend", "db"])
    green = await store(call, tools, DISTINCT_FACTS[1], tags=["style"])
    await store(call, tools, DISTINCT_FACTS[2], tags=["infra"])
    assert set(await search_ids(call, tools, "engineering notes", tags=["db", "style"])) == {red, green}
    assert await search_ids(call, tools, "engineering notes", tags=["nothing-has-this"]) == []


async def test_search_filters_by_kind(tools: dict[str, Any], call: Any) -> None:
    await store(call, tools, "We chose PostgreSQL for billing", kind="decision")
    fact = await store(call, tools, "PostgreSQL 16 is installed on the billing host", kind="fact")
    assert await search_ids(call, tools, "PostgreSQL billing", kind="fact") == [fact]


async def test_search_filters_by_files(tools: dict[str, Any], call: Any) -> None:
    about_auth = await store(call, tools, "The session cookie lifetime is 12 hours", files=["src/auth/session.py"])
    await store(call, tools, "The session table is partitioned by month", files=["db/migrations/0042.sql"])
    assert await search_ids(call, tools, "session", files=["src/auth/session.py"]) == [about_auth]


async def test_search_combines_filters(tools: dict[str, Any], call: Any) -> None:
    both = await store(call, tools, "Use retries with jitter for the payment API", kind="decision", tags=["payments"])
    await store(call, tools, "The payment API times out after 30 seconds", kind="fact", tags=["payments"])
    await store(call, tools, "Use retries with jitter for the email API", kind="decision", tags=["email"])
    assert await search_ids(call, tools, "retries", kind="decision", tags=["payments"]) == [both]


async def _seed_distinct(rt: AgentMemory) -> None:
    from amplifier_module_tool_agent_memory.memory.models import MemoryRecord

    records = [
        MemoryRecord(id=str(uuid.uuid4()), content=fact, created_at=T0 + timedelta(minutes=i))
        for i, fact in enumerate(DISTINCT_FACTS)
    ]
    assert rt.memory().import_records(records)["imported"] == len(DISTINCT_FACTS)


async def test_search_returns_five_results_by_default(
    make_runtime: Callable[..., AgentMemory], call: Any, runtime_tools: Any
) -> None:
    rt = make_runtime()
    await _seed_distinct(rt)
    out = await call(runtime_tools(rt)["memory_search"], {"query": "team and engineering notes"})
    assert out["count"] == 5


async def test_search_limit_above_twenty_is_capped_at_twenty(
    make_runtime: Callable[..., AgentMemory], call: Any, runtime_tools: Any
) -> None:
    rt = make_runtime()
    await _seed_distinct(rt)
    search = runtime_tools(rt)["memory_search"]
    assert (await call(search, {"query": "team and engineering notes", "limit": 25}))["count"] == 20
    assert (await call(search, {"query": "team and engineering notes", "limit": 12}))["count"] == 12


async def test_search_results_are_ordered_best_first(tools: dict[str, Any], call: Any) -> None:
    for fact in DISTINCT_FACTS[:6]:
        await store(call, tools, fact)
    results = (await call(tools["memory_search"], {"query": "how are passwords hashed?", "limit": 6}))[
        "results"
    ]
    scores = [r["score"] for r in results]
    assert scores == sorted(scores, reverse=True)


async def test_tools_emit_their_events_with_identity_and_counts(
    mount_tools: Callable[..., Any], tool_timer: float, call: Any
) -> None:
    tools, coordinator = await mount_tools()
    seen: list[tuple[str, dict[str, Any]]] = []

    async def record(event: str, data: dict[str, Any]) -> Any:
        from amplifier_core.models import HookResult

        seen.append((event, data))
        return HookResult(action="continue")

    for event in ("memory:stored", "memory:searched"):
        coordinator.hooks.register(event, record, name=f"test-{event}")
    stored = await call(tools["memory_store"], {"content": DISTINCT_FACTS[0]})
    await call(tools["memory_search"], {"query": "invoices"})
    events = dict(seen)
    assert events["memory:stored"]["identity"] == "alice"
    assert events["memory:stored"]["ids"] == [stored["id"]]
    assert events["memory:stored"]["count"] == 1
    assert events["memory:searched"]["count"] == 1
    assert events["memory:stored"]["latency_ms"] == events["memory:searched"]["latency_ms"] == tool_timer


async def test_timestamps_are_iso_8601_even_for_early_years(
    make_runtime: Callable[..., AgentMemory], call: Any, runtime_tools: Any
) -> None:
    from datetime import datetime

    from amplifier_module_tool_agent_memory.memory.models import MemoryRecord

    rt = make_runtime()
    old = MemoryRecord(id=str(uuid.uuid4()), content="The abbey was founded", created_at="0999-03-01T12:00:00Z")
    rt.memory().import_records([old])
    listed = (await call(runtime_tools(rt)["memory_list"], {"before": "1000-01-01"}))["memories"]
    assert listed[0]["created_at"] == "0999-03-01T12:00:00.000000Z"
    assert datetime.fromisoformat(listed[0]["created_at"]) == old.created_at
    assert [r.created_at for r in rt.memory().export()] == [old.created_at]
