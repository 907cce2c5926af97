"""Bad input to the memory_* tools: success false, a message naming the field and the rule,
nothing written, and execute never raises."""

from __future__ import annotations

from typing import Any

import pytest
from data import DISTINCT_FACTS

ID = "6f1c1f2e-0c1a-4c7e-9a49-3f7d3b0c2a11"

# (tool, input, [fragments the message must contain: the field, then the rule])
BAD_INPUT: list[tuple[str, Any, list[str]]] = [
    ("memory_store", {}, ["field 'content' is required"]),
    ("memory_store", {"content": ""}, ["'content'", "at least 1 character"]),
    ("memory_store", {"content": " \n\t "}, ["'content'", "non-whitespace"]),
    ("memory_store", {"content": "x" * 10_001}, ["'content'", "at most 10000 characters"]),
    ("memory_store", {"content": 42}, ["'content'", "valid string"]),
    ("memory_store", {"content": ["a list"]}, ["'content'", "valid string"]),
    ("memory_store", {"content": "ok", "tags": [f"t{i}" for i in range(51)]}, ["'tags'", "at most 50 items"]),
    ("memory_store", {"content": "ok", "tags": ["x" * 101]}, ["'tags[0]'", "at most 100 characters"]),
    ("memory_store", {"content": "ok", "tags": "ops"}, ["'tags'", "valid list"]),
    ("memory_store", {"content": "ok", "tags": ["ops", 7]}, ["'tags[1]'", "valid string"]),
    ("memory_store", {"content": "ok", "tags": ["   "]}, ["'tags[0]'", "at least 1 character"]),
    ("memory_store", {"content": "ok", "kind": "idea"}, ["'kind'", "'note', 'preference' or 'event'"]),
    ("memory_store", {"content": "ok", "importance": -0.1}, ["'importance'", "greater than or equal to 0"]),
    ("memory_store", {"content": "ok", "importance": 1.1}, ["'importance'", "less than or equal to 1"]),
    ("memory_store", {"content": "ok", "importance": "high"}, ["'importance'", "valid number"]),
    ("memory_store", {"content": "ok", "files": "src/app.py"}, ["'files'", "valid list"]),
    ("memory_store", {"content": "ok", "files": [3]}, ["'files[0]'", "valid string"]),
    ("memory_store", {"content": "ok", "files": [f"f{i}.py" for i in range(51)]}, ["'files'", "at most 50 items"]),
    ("memory_store", {"content": "ok", "colour": "red"}, ["field 'colour' is not a known field"]),
    ("memory_search", {}, ["field 'query' is required"]),
    ("memory_search", {"query": ""}, ["'query'", "at least 1 character"]),
    ("memory_search", {"query": "   "}, ["'query'", "non-whitespace"]),
    ("memory_search", {"query": 3}, ["'query'", "valid string"]),
    ("memory_search", {"query": "db", "limit": 0}, ["'limit'", "greater than or equal to 1"]),
    ("memory_search", {"query": "db", "limit": -1}, ["'limit'", "greater than or equal to 1"]),
    ("memory_search", {"query": "db", "limit": "x"}, ["'limit'", "valid integer"]),
    ("memory_search", {"query": "db", "since": "last week"}, ["'since'", "ISO-8601"]),
    ("memory_search", {"query": "db", "until": "2026-13-45"}, ["'until'", "ISO-8601"]),
    ("memory_search", {"query": "db", "since": 1700000000}, ["'since'", "ISO-8601"]),
    ("memory_search", {"query": "db", "since": "0001-01-01T00:00:00+14:00"}, ["'since'", "out of the supported"]),
    ("memory_list", {"before": "9999-12-31T23:00:00-05:00"}, ["'before'", "out of the supported date range"]),
    (
        "memory_search",
        {"query": "db", "since": "2026-03-01", "until": "2026-02-01"},
        ["'since'", "must not be later than", "'until'"],
    ),
    ("memory_search", {"query": "db", "tags": "ops"}, ["'tags'", "valid list"]),
    ("memory_search", {"query": "db", "kind": "idea"}, ["'kind'", "'fact', 'decision'"]),
    ("memory_search", {"query": "db", "files": "a.py"}, ["'files'", "valid list"]),
    ("memory_search", {"query": "db", "top_k": 3}, ["field 'top_k' is not a known field"]),
    ("memory_get", {}, ["field 'id' is required"]),
    ("memory_get", {"id": "not-a-uuid"}, ["'id'", "a UUID"]),
    ("memory_get", {"id": 12345}, ["'id'", "valid string"]),
    ("memory_get", {"id": "../../etc/passwd"}, ["'id'", "a UUID"]),
    ("memory_get", {"id": ID, "deep": True}, ["field 'deep' is not a known field"]),
    ("memory_forget", {}, ["field 'id' is required"]),
    ("memory_forget", {"id": "42"}, ["'id'", "a UUID"]),
    ("memory_forget", {"id": ID, "all": True}, ["field 'all' is not a known field"]),
    ("memory_list", {"limit": 0}, ["'limit'", "greater than or equal to 1"]),
    ("memory_list", {"limit": 101}, ["'limit'", "less than or equal to 100"]),
    ("memory_list", {"limit": "many"}, ["'limit'", "valid integer"]),
    ("memory_list", {"before": "soon"}, ["'before'", "ISO-8601"]),
    ("memory_list", {"before": 5}, ["'before'", "ISO-8601"]),
    ("memory_list", {"kind": "idea"}, ["'kind'", "'fact', 'decision'"]),
    ("memory_list", {"offset": 20}, ["field 'offset' is not a known field"]),
]


@pytest.mark.parametrize(
    ("tool", "args", "fragments"),
    BAD_INPUT,
    ids=[f"{tool}-{i}" for i, (tool, _, _) in enumerate(BAD_INPUT)],
)
async def test_bad_input_names_the_field_and_the_rule(
    tools: dict[str, Any], tool: str, args: Any, fragments: list[str], call: Any
) -> None:
    error = await call.error(tools[tool], args)
    assert error["type"] == "invalid_input"
    assert error["message"].startswith(f"{tool}: ")
    for fragment in fragments:
        assert fragment in error["message"]


@pytest.mark.parametrize("tool", ["memory_store", "memory_search", "memory_get", "memory_forget"])
async def test_input_none_is_answered_with_the_missing_field(tools: dict[str, Any], tool: str, call: Any) -> None:
    error = await call.error(tools[tool], None)
    assert "is required" in error["message"]


async def test_memory_list_with_input_none_lists_with_the_defaults(tools: dict[str, Any], call: Any) -> None:
    # More memories than the default page, so the defaults (20, newest first, a next page) show.
    ids = [(await call(tools["memory_store"], {"content": fact}))["id"] for fact in DISTINCT_FACTS[:22]]
    page = await call(tools["memory_list"], None)
    assert page["count"] == 20
    assert [m["id"] for m in page["memories"]] == ids[::-1][:20]
    assert page["next_before"] is not None


@pytest.mark.parametrize("tool", ["memory_store", "memory_search", "memory_get", "memory_forget", "memory_list"])
@pytest.mark.parametrize("args", [["content", "x"], "content", 7])
async def test_input_that_is_not_an_object_is_refused(tools: dict[str, Any], tool: str, args: Any, call: Any) -> None:
    error = await call.error(tools[tool], args)
    assert f"{tool} takes a JSON object, got {type(args).__name__}" in error["message"]


async def test_host_keys_with_a_leading_underscore_are_ignored(tools: dict[str, Any], call: Any) -> None:
    out = await call(tools["memory_store"], {"content": "The VPN needs MFA", "_tool_call_id": "call-1"})
    assert out["created"] is True


async def test_several_broken_rules_are_all_named(tools: dict[str, Any], call: Any) -> None:
    message = (await call.error(tools["memory_store"], {"content": "", "importance": 2, "kind": "x"}))["message"]
    assert "'content'" in message and "'importance'" in message and "'kind'" in message


async def test_bad_input_writes_nothing(tools: dict[str, Any], call: Any) -> None:
    for tool, args, _ in BAD_INPUT:
        if tool == "memory_store":
            assert not (await tools[tool].execute(args)).success
    assert (await call(tools["memory_list"], {}))["count"] == 0
    # The same tool with good input does write: the empty list above is the refusals', not a broken list.
    await call(tools["memory_store"], {"content": "The VPN needs MFA"})
    assert (await call(tools["memory_list"], {}))["count"] == 1


async def test_a_long_bad_value_is_shortened_in_the_message(tools: dict[str, Any], call: Any) -> None:
    message = (await call.error(tools["memory_store"], {"content": "x" * 10_001}))["message"]
    assert len(message) < 300
