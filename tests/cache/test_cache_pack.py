"""Memory packs: the budget covers the exact rendering, warnings come first, freshness, deltas, ranking."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from cache_helpers import NO_DEDUP, cache_service, filler, note, pack, packed_texts, rendered_tokens
from memory_helpers import DISTINCT_FACTS, ManualClock, output_of, runtime_tools

from amplifier_module_tool_agent_memory.errors import InvalidInput
from amplifier_module_tool_agent_memory.runtime import AgentMemory
from amplifier_module_tool_agent_memory.tokens import count_tokens


async def test_pack_token_count_is_the_tokens_of_the_tool_result_the_model_reads(
    make_runtime: Callable[..., AgentMemory],
) -> None:
    rt = make_runtime(cache=NO_DEDUP)
    tools = runtime_tools(rt)
    for i, fact in enumerate(DISTINCT_FACTS[:12]):
        output_of(await tools["cache_write"].execute({"kind": "fact", "content": fact, "file_ref": f"doc/{i}.md"}))
    result = await tools["cache_pack"].execute({"token_budget": 120})
    out = output_of(result)
    assert out["token_count"] == count_tokens(result.get_serialized_output())
    assert out["token_count"] <= 120


def test_pack_lists_items_by_kind_with_their_file_refs(make_runtime: Callable[..., AgentMemory]) -> None:
    svc = cache_service(make_runtime, ManualClock())
    note(svc, DISTINCT_FACTS[0], "fact")
    note(svc, DISTINCT_FACTS[3], "decision")
    note(svc, "def charge(amount): return round(amount, 2)", "snippet", file_ref="billing/charge.py:12")
    note(svc, DISTINCT_FACTS[5], "warning")
    out = pack(svc)
    assert out["facts"] == [DISTINCT_FACTS[0]]
    assert out["decisions"] == [DISTINCT_FACTS[3]]
    assert out["snippets"] == ["[billing/charge.py:12] def charge(amount): return round(amount, 2)"]
    assert out["warnings"] == [DISTINCT_FACTS[5]]
    assert out["artifact_pointers"] == ["billing/charge.py:12"]
    assert out["omitted"] == 0 and out["is_fresh"] is False


def test_pack_without_query_prefers_importance_then_recency(make_runtime: Callable[..., AgentMemory]) -> None:
    clock = ManualClock()
    svc = cache_service(make_runtime, clock, **NO_DEDUP)
    note(svc, DISTINCT_FACTS[0], importance=0.2)
    clock.advance(seconds=1)
    note(svc, DISTINCT_FACTS[1], importance=0.9)
    clock.advance(seconds=1)
    note(svc, DISTINCT_FACTS[2], importance=0.2)
    assert pack(svc)["facts"] == [DISTINCT_FACTS[1], DISTINCT_FACTS[2], DISTINCT_FACTS[0]]


def test_pack_with_query_puts_the_relevant_item_first(make_runtime: Callable[..., AgentMemory]) -> None:
    svc = cache_service(make_runtime, ManualClock())
    for fact in DISTINCT_FACTS[:10]:
        note(svc, fact, importance=0.9)
    note(svc, "The payments API retries a failed card charge three times.", importance=0.1)
    out = pack(svc, query="how often do we retry card payments?")
    assert out["facts"][0] == "The payments API retries a failed card charge three times."


def test_small_budget_keeps_the_warning_over_more_important_facts(make_runtime: Callable[..., AgentMemory]) -> None:
    svc = cache_service(make_runtime, ManualClock(), **NO_DEDUP)
    for i in range(20):
        note(svc, filler(i, 120), importance=1.0)
    note(svc, "Never deploy on Fridays.", "warning", importance=0.1)
    out = pack(svc, token_budget=80)
    assert out["warnings"] == ["Never deploy on Fridays."]
    assert rendered_tokens(out) <= 80


def test_more_important_warning_wins_when_only_one_fits(make_runtime: Callable[..., AgentMemory]) -> None:
    svc = cache_service(make_runtime, ManualClock(), **NO_DEDUP)
    note(svc, "Staging database is shared with QA.", "warning", importance=0.3)
    note(svc, "Production secrets rotate tonight.", "warning", importance=0.8)
    out = pack(svc, token_budget=60)
    assert out["warnings"] == ["Production secrets rotate tonight."]


def test_scope_summary_covers_items_left_out_and_stays_within_a_fifth_of_the_budget(
    make_runtime: Callable[..., AgentMemory],
) -> None:
    svc = cache_service(make_runtime, ManualClock(), close_threshold_tokens=200, **NO_DEDUP)
    for fact in DISTINCT_FACTS:
        note(svc, fact + " " + filler(0, 80))
    out = pack(svc, token_budget=300)
    assert out["summary"] and out["omitted"] > 0
    assert count_tokens(', "summary": ' + json_str(out["summary"])) <= 300 // 5
    shown = set(packed_texts(out))
    assert all(line.removeprefix("fact: ") not in shown for line in out["summary"].splitlines())


def json_str(value: Any) -> str:
    import json

    return json.dumps(value)


def test_pack_reports_the_tokens_of_the_full_items_it_stands_for(make_runtime: Callable[..., AgentMemory]) -> None:
    svc = cache_service(make_runtime, ManualClock(), **NO_DEDUP)
    written = [note(svc, fact) for fact in DISTINCT_FACTS[:5]]
    block = svc.get(written[0]["block_id"])
    out = pack(svc)
    assert out["full_tokens"] == sum(count_tokens(json_str(item)) for item in block["items"])


def test_repeated_pack_is_served_fresh_until_a_write(make_runtime: Callable[..., AgentMemory]) -> None:
    clock = ManualClock()
    svc = cache_service(make_runtime, clock, **NO_DEDUP)
    note(svc, DISTINCT_FACTS[0])
    first = pack(svc)
    clock.advance(minutes=4)
    again = pack(svc)
    assert again["is_fresh"] is True
    assert {k: v for k, v in again.items() if k not in ("is_fresh", "token_count")} == {
        k: v for k, v in first.items() if k not in ("is_fresh", "token_count")
    }
    assert again["token_count"] == rendered_tokens(again)
    note(svc, DISTINCT_FACTS[1])
    assert pack(svc)["is_fresh"] is False


def test_fresh_pack_expires_after_five_minutes(make_runtime: Callable[..., AgentMemory]) -> None:
    clock = ManualClock()
    svc = cache_service(make_runtime, clock)
    note(svc, DISTINCT_FACTS[0], ttl_minutes=0)
    pack(svc)
    clock.advance(minutes=5)
    assert pack(svc)["is_fresh"] is False


def test_fresh_pack_is_not_served_past_an_items_expiry(make_runtime: Callable[..., AgentMemory]) -> None:
    clock = ManualClock()
    svc = cache_service(make_runtime, clock)
    note(svc, DISTINCT_FACTS[0], ttl_minutes=2)
    pack(svc)
    clock.advance(minutes=3)
    out = pack(svc)
    assert out["is_fresh"] is False and packed_texts(out) == []


def test_delta_pack_returns_only_what_changed_since_the_version(make_runtime: Callable[..., AgentMemory]) -> None:
    svc = cache_service(make_runtime, ManualClock(), **NO_DEDUP)
    note(svc, DISTINCT_FACTS[0])
    note(svc, DISTINCT_FACTS[1], "decision")
    version = pack(svc)["version"]
    note(svc, DISTINCT_FACTS[2], "warning")
    delta = pack(svc, since_version=version)
    assert packed_texts(delta) == [DISTINCT_FACTS[2]]
    assert delta["since_version"] == version and delta["version"] > version
    assert packed_texts(pack(svc, since_version=delta["version"])) == []


def test_delta_pack_from_a_future_version_is_refused(make_runtime: Callable[..., AgentMemory]) -> None:
    svc = cache_service(make_runtime, ManualClock())
    note(svc, DISTINCT_FACTS[0])
    with pytest.raises(InvalidInput, match="since_version"):
        pack(svc, since_version=10_000)


def test_budget_too_small_for_the_fixed_fields_is_a_clear_error(make_runtime: Callable[..., AgentMemory]) -> None:
    svc = cache_service(make_runtime, ManualClock())
    scope = "task:" + "x" * 95
    note(svc, DISTINCT_FACTS[0], scope=scope)
    with pytest.raises(InvalidInput, match=r"token_budget.*use at least"):
        pack(svc, scope=scope, token_budget=50)


def test_pack_of_an_unused_scope_is_empty(make_runtime: Callable[..., AgentMemory]) -> None:
    svc = cache_service(make_runtime, ManualClock())
    out = pack(svc, scope="task:nothing")
    assert packed_texts(out) == [] and out["version"] == 0 and out["full_tokens"] == 0
