"""Memory packs: the budget covers the exact rendering, warnings come first, freshness, deltas, ranking."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from data import DISTINCT_FACTS, NO_DEDUP, filler

from amplifier_module_tool_agent_memory.errors import InvalidInput
from amplifier_module_tool_agent_memory.runtime import AgentMemory
from amplifier_module_tool_agent_memory.tokens import count_tokens


async def test_pack_token_count_is_the_tokens_of_the_tool_result_the_model_reads(
    make_runtime: Callable[..., AgentMemory], call: Any, runtime_tools: Any,
) -> None:
    rt = make_runtime(cache=NO_DEDUP)
    tools = runtime_tools(rt)
    for i, fact in enumerate(DISTINCT_FACTS[:12]):
        await call(tools["cache_write"], {"kind": "fact", "content": fact, "file_ref": f"doc/{i}.md"})
    result = await tools["cache_pack"].execute({"token_budget": 120})
    out = call.output_of(result)
    assert out["token_count"] == count_tokens(result.get_serialized_output())
    assert out["token_count"] <= 120


def test_pack_lists_items_by_kind_with_their_file_refs(
    make_runtime: Callable[..., AgentMemory], make_cache: Any, make_clock: Any
) -> None:
    svc = make_cache(clock=make_clock())
    svc.note(DISTINCT_FACTS[0], "fact")
    svc.note(DISTINCT_FACTS[3], "decision")
    svc.note("def charge(amount): return round(amount, 2)", "snippet", file_ref="billing/charge.py:12")
    svc.note(DISTINCT_FACTS[5], "warning")
    out = svc.pack()
    assert out["facts"] == [DISTINCT_FACTS[0]]
    assert out["decisions"] == [DISTINCT_FACTS[3]]
    assert out["snippets"] == ["[billing/charge.py:12] def charge(amount): return round(amount, 2)"]
    assert out["warnings"] == [DISTINCT_FACTS[5]]
    assert out["artifact_pointers"] == ["billing/charge.py:12"]
    assert out["omitted"] == 0 and out["is_fresh"] is False


def test_pack_without_query_prefers_importance_then_recency(
    make_runtime: Callable[..., AgentMemory], make_cache: Any, make_clock: Any
) -> None:
    clock = make_clock()
    svc = make_cache(**NO_DEDUP, clock=clock)
    svc.note(DISTINCT_FACTS[0], importance=0.2)
    clock.advance(seconds=1)
    svc.note(DISTINCT_FACTS[1], importance=0.9)
    clock.advance(seconds=1)
    svc.note(DISTINCT_FACTS[2], importance=0.2)
    assert svc.pack()["facts"] == [DISTINCT_FACTS[1], DISTINCT_FACTS[2], DISTINCT_FACTS[0]]


def test_pack_with_query_puts_the_relevant_item_first(
    make_runtime: Callable[..., AgentMemory], make_cache: Any, make_clock: Any
) -> None:
    svc = make_cache(clock=make_clock())
    for fact in DISTINCT_FACTS[:10]:
        svc.note(fact, importance=0.9)
    svc.note("The payments API retries a failed card charge three times.", importance=0.1)
    out = svc.pack(query="how often do we retry card payments?")
    assert out["facts"][0] == "The payments API retries a failed card charge three times."


def test_small_budget_keeps_the_warning_over_more_important_facts(
    make_runtime: Callable[..., AgentMemory], make_cache: Any, make_clock: Any
) -> None:
    svc = make_cache(**NO_DEDUP, clock=make_clock())
    for i in range(20):
        svc.note(filler(i, 120), importance=1.0)
    svc.note("Never deploy on Fridays.", "warning", importance=0.1)
    out = svc.pack(token_budget=80)
    assert out["warnings"] == ["Never deploy on Fridays."]
    assert make_cache.rendered_tokens(out) <= 80


def test_more_important_warning_wins_when_only_one_fits(
    make_runtime: Callable[..., AgentMemory], make_cache: Any, make_clock: Any
) -> None:
    svc = make_cache(**NO_DEDUP, clock=make_clock())
    svc.note("Staging database is shared with QA.", "warning", importance=0.3)
    svc.note("Production secrets rotate tonight.", "warning", importance=0.8)
    out = svc.pack(token_budget=60)
    assert out["warnings"] == ["Production secrets rotate tonight."]


def test_scope_summary_covers_items_left_out_and_stays_within_a_fifth_of_the_budget(
    make_runtime: Callable[..., AgentMemory], make_cache: Any, make_clock: Any,
) -> None:
    svc = make_cache(close_threshold_tokens=200, **NO_DEDUP, clock=make_clock())
    for fact in DISTINCT_FACTS:
        svc.note(fact + " " + filler(0, 80))
    out = svc.pack(token_budget=300)
    assert out["summary"] and out["omitted"] > 0
    assert count_tokens(', "summary": ' + json_str(out["summary"])) <= 300 // 5
    shown = set(make_cache.texts(out))
    assert all(line.removeprefix("fact: ") not in shown for line in out["summary"].splitlines())


def json_str(value: Any) -> str:
    import json

    return json.dumps(value)


def test_pack_reports_the_tokens_of_the_full_items_it_stands_for(
    make_runtime: Callable[..., AgentMemory], make_cache: Any, make_clock: Any
) -> None:
    svc = make_cache(**NO_DEDUP, clock=make_clock())
    written = [svc.note(fact) for fact in DISTINCT_FACTS[:5]]
    block = svc.get(written[0]["block_id"])
    out = svc.pack()
    assert out["full_tokens"] == sum(count_tokens(json_str(item)) for item in block["items"])


def test_repeated_pack_is_served_fresh_until_a_write(
    make_runtime: Callable[..., AgentMemory], make_cache: Any, make_clock: Any
) -> None:
    clock = make_clock()
    svc = make_cache(**NO_DEDUP, clock=clock)
    svc.note(DISTINCT_FACTS[0])
    first = svc.pack()
    clock.advance(minutes=4)
    again = svc.pack()
    assert again["is_fresh"] is True
    assert {k: v for k, v in again.items() if k not in ("is_fresh", "token_count")} == {
        k: v for k, v in first.items() if k not in ("is_fresh", "token_count")
    }
    assert again["token_count"] == make_cache.rendered_tokens(again)
    svc.note(DISTINCT_FACTS[1])
    assert svc.pack()["is_fresh"] is False


def test_fresh_pack_expires_after_five_minutes(
    make_runtime: Callable[..., AgentMemory], make_cache: Any, make_clock: Any
) -> None:
    clock = make_clock()
    svc = make_cache(clock=clock)
    svc.note(DISTINCT_FACTS[0], ttl_minutes=0)
    svc.pack()
    clock.advance(minutes=5)
    assert svc.pack()["is_fresh"] is False


def test_fresh_pack_is_not_served_past_an_items_expiry(
    make_runtime: Callable[..., AgentMemory], make_cache: Any, make_clock: Any
) -> None:
    clock = make_clock()
    svc = make_cache(clock=clock)
    svc.note(DISTINCT_FACTS[0], ttl_minutes=2)
    svc.pack()
    clock.advance(minutes=3)
    out = svc.pack()
    assert out["is_fresh"] is False and make_cache.texts(out) == []


def test_delta_pack_returns_only_what_changed_since_the_version(
    make_runtime: Callable[..., AgentMemory], make_cache: Any, make_clock: Any
) -> None:
    svc = make_cache(**NO_DEDUP, clock=make_clock())
    svc.note(DISTINCT_FACTS[0])
    svc.note(DISTINCT_FACTS[1], "decision")
    version = svc.pack()["version"]
    svc.note(DISTINCT_FACTS[2], "warning")
    delta = svc.pack(since_version=version)
    assert make_cache.texts(delta) == [DISTINCT_FACTS[2]]
    assert delta["since_version"] == version and delta["version"] > version
    assert svc.packed_texts(since_version=delta["version"]) == []


def test_delta_pack_from_a_future_version_is_refused(
    make_runtime: Callable[..., AgentMemory], make_cache: Any, make_clock: Any
) -> None:
    svc = make_cache(clock=make_clock())
    svc.note(DISTINCT_FACTS[0])
    with pytest.raises(InvalidInput, match="since_version"):
        svc.pack(since_version=10_000)


def test_budget_too_small_for_the_fixed_fields_is_a_clear_error(
    make_runtime: Callable[..., AgentMemory], make_cache: Any, make_clock: Any
) -> None:
    svc = make_cache(clock=make_clock())
    scope = "task:" + "x" * 95
    svc.note(DISTINCT_FACTS[0], scope=scope)
    with pytest.raises(InvalidInput, match=r"token_budget.*use at least"):
        svc.pack(scope=scope, token_budget=50)


def test_pack_of_an_unused_scope_is_empty(
    make_runtime: Callable[..., AgentMemory], make_cache: Any, make_clock: Any
) -> None:
    svc = make_cache(clock=make_clock())
    out = svc.pack(scope="task:nothing")
    assert make_cache.texts(out) == [] and out["version"] == 0 and out["full_tokens"] == 0
