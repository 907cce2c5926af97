"""What each page shows: browse filters, search, a memory's chain, working memory read without touching,
plans, and the activity of the tools per day."""

from __future__ import annotations

from typing import Any

from amplifier_module_tool_agent_memory import activity


def _contents(answer: Any) -> list[str]:
    assert answer.status == 200, answer.text
    return [m["content"] for m in answer.body["memories"]]


async def test_browse_filters_by_kind_tag_file_and_dates(served: Any, call: Any) -> None:
    await call.store(served.tools, "The payments service is written in Kotlin.", kind="fact", tags=["payments"])
    await call.store(served.tools, "Use snake_case for every new table.", kind="decision", files=["db/schema.sql"])
    await call.store(served.tools, "Lunch order for Friday: falafel.", kind="note", tags=["team"])
    everything = _contents(served.get("/api/memories"))
    assert everything == [
        "Lunch order for Friday: falafel.",
        "Use snake_case for every new table.",
        "The payments service is written in Kotlin.",
    ]
    assert _contents(served.get("/api/memories?kind=decision")) == ["Use snake_case for every new table."]
    assert _contents(served.get("/api/memories?tags=payments&tags=team")) == [
        "Lunch order for Friday: falafel.",
        "The payments service is written in Kotlin.",
    ]
    assert _contents(served.get("/api/memories?files=db/schema.sql")) == ["Use snake_case for every new table."]
    assert _contents(served.get("/api/memories?until=2000-01-01")) == []
    assert len(_contents(served.get("/api/memories?since=2000-01-01&until=2999-12-31"))) == 3


async def test_search_is_the_tools_hybrid_search(served: Any, call: Any) -> None:
    await call.store(served.tools, "The staging database runs on db2.internal port 5433.", kind="fact")
    await call.store(served.tools, "Our designer prefers teal over orange.", kind="preference")
    viewer = served.get("/api/memories?query=which+port+does+the+staging+database+use")
    tool = await call(served.tools["memory_search"], {"query": "which port does the staging database use"})
    assert viewer.body["mode"] == "search"
    assert [m["id"] for m in viewer.body["memories"]][:2] == [r["id"] for r in tool["results"]][:2]
    assert viewer.body["memories"][0]["content"].startswith("The staging database")


async def test_a_memory_page_shows_its_chain_and_superseded_ones_can_be_hidden(served: Any, call: Any) -> None:
    old = await call.store(served.tools, "The team standup is at 9:30 every morning.", kind="fact")
    new = await call.store(
        served.tools, "The team standup moved to 10:15 every morning.", kind="fact", supersedes=old["id"]
    )
    page = served.get(f"/api/memories/{new['id']}")
    assert page.status == 200
    steps = page.body["timeline"]
    assert [s["id"] for s in steps] == [old["id"], new["id"]]
    assert steps[0]["current"] is False and "linked_at" not in steps[0]
    assert steps[1]["current"] is True and steps[1]["replaces"] == old["id"]
    assert steps[1]["linked_at"] == page.body["memory"]["created_at"]
    assert _contents(served.get("/api/memories?include_superseded=false")) == [
        "The team standup moved to 10:15 every morning."
    ]
    assert len(_contents(served.get("/api/memories?include_superseded=true"))) == 2
    unlinked = served.post(f"/api/memories/{new['id']}/unlink")
    assert unlinked.status == 200
    assert unlinked.body["unlinked"] == {"id": new["id"], "supersedes": old["id"]}
    assert len(_contents(served.get("/api/memories?include_superseded=false"))) == 2


async def test_looking_at_working_memory_touches_nothing(served: Any, call: Any) -> None:
    write = served.tools["cache_write"]
    for text in ("The flaky test is test_login_retry.", "Never deploy on Fridays."):
        await call(write, {"kind": "fact", "content": text, "scope": "task:login"})
    coll = served.runtime.cache().coll

    def stored_items() -> dict[str, dict[str, Any]]:
        records, _ = coll.scroll(_all_items())
        return {str(r.id): dict(r.payload or {}) for r in records if (r.payload or {}).get("type") == "item"}

    before = stored_items()
    for _ in range(3):
        page = served.get("/api/working?scope=task:login&budget=400")
        assert page.status == 200, page.text
    assert stored_items() == before  # no access count, no TTL restarted
    body = page.body
    assert body["scopes"] == ["task:login"]
    assert body["pack"]["scope"] == "task:login" and body["pack"]["is_fresh"] is False
    live = [item["content"] for block in body["blocks"] for item in block["items"]]
    assert sorted(live) == ["Never deploy on Fridays.", "The flaky test is test_login_retry."]
    # The tool, by contrast, counts a read: this is what the viewer must not do.
    block_id = body["blocks"][0]["block_id"]
    await call(served.tools["cache_get"], {"block_id": block_id})
    assert stored_items() != before


def _all_items() -> Any:
    from amplifier_module_tool_agent_memory.store.query import Scroll

    return Scroll(limit=100)


async def test_plans_page_lists_and_opens_a_plan(served: Any, call: Any) -> None:
    stored = await call(served.tools["plan_store"], {
                "prompt": "Rotate the staging TLS certificate",
                "actions": [{"tool": "bash", "args": {"cmd": "certbot renew"}}],
            })
    listing = served.get("/api/plans")
    assert listing.status == 200
    assert [p["prompt"] for p in listing.body["plans"]] == ["Rotate the staging TLS certificate"]
    plan = served.get(f"/api/plans/{stored['plan_id']}")
    assert plan.body["actions"] == [{"tool": "bash", "args": {"cmd": "certbot renew"}}]
    assert served.get("/api/plans?stale=maybe").status == 400


async def test_activity_counts_tool_calls_per_day_with_latency(served: Any, call: Any) -> None:
    await call.store(served.tools, "The office wifi is called Orchard.", kind="fact")
    await call.store(served.tools, "Invoices go out on the 3rd.", kind="fact")
    await call(served.tools["memory_search"], {"query": "wifi"})
    await call(served.tools["plan_lookup"], {"prompt": "Rotate the staging TLS certificate"})
    before_viewer = served.get("/api/activity").body
    served.get("/api/memories?query=wifi")  # looking is not activity
    body = served.get("/api/activity").body
    assert body == before_viewer
    assert len(body["days"]) == 1
    stores, searches = body["groups"]["stores"][0], body["groups"]["searches"][0]
    assert (stores["count"], searches["count"]) == (2, 1)
    assert 0 < stores["p50_ms"] <= stores["p95_ms"]
    assert body["plan_answers"][0]["miss"] == 1


def test_percentiles_and_days_from_a_table_of_events() -> None:
    events = [
        {"ts": "2026-11-24T10:00:00Z", "event": "memory:stored", "latency_ms": 10},
        {"ts": "2026-11-24T11:00:00Z", "event": "memory:stored", "latency_ms": 30},
        {"ts": "2026-11-24T12:00:00Z", "event": "memory:stored", "latency_ms": 20},
        {"ts": "2026-11-25T09:00:00Z", "event": "plan:hit", "latency_ms": 4},
        {"ts": "2026-11-25T09:01:00Z", "event": "plan:candidate", "latency_ms": 6},
        {"ts": "2026-11-25T09:02:00Z", "event": "cache:written", "latency_ms": 99},
        {"ts": "bad", "event": "memory:stored"},
    ]
    days = activity.daily(events)
    assert days["days"] == ["2026-11-24", "2026-11-25"]
    assert days["groups"]["stores"] == [
        {"count": 3, "p50_ms": 20.0, "p95_ms": 30.0},
        {"count": 0, "p50_ms": 0.0, "p95_ms": 0.0},
    ]
    assert days["plan_answers"][1] == {"day": "2026-11-25", "hit": 1, "candidate": 1, "miss": 0}
    assert activity.percentile([5.0], 95) == 5.0
    assert activity.percentile([], 50) == 0.0


def test_the_log_keeps_no_text_and_rotates(tmp_path: Any, monkeypatch: Any) -> None:
    monkeypatch.setattr(activity, "MAX_BYTES", 400)
    for i in range(20):
        activity.record(tmp_path, "memory:searched", {"latency_ms": i, "query": "secret text", "count": 2})
    lines = list(activity.read(tmp_path))
    assert (tmp_path / activity.OLDER).exists()
    assert all("query" not in line and "secret" not in str(line) for line in lines)
    # Two files of at most MAX_BYTES (plus the line that crossed it) hold the newest events, in order.
    sizes = [(tmp_path / name).stat().st_size for name in (activity.OLDER, activity.FILE) if (tmp_path / name).exists()]
    assert all(size <= 400 + 100 for size in sizes)
    latencies = [line["latency_ms"] for line in lines]
    assert latencies == list(range(20 - len(latencies), 20)) and len(latencies) >= 4
