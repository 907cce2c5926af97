"""Bad input through the tools: every case answers invalid_input naming the field and the rule,
never quotes the value it refused, and loses nothing already stored."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.reliability

GITHUB = "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
ZERO_WIDTH = "\u200b\u200c\u200d\u2060\ufeff"
PLAN = {"prompt": "rebuild the search index", "actions": [{"tool": "bash", "args": {}}]}


def nested(depth: int) -> Any:
    value: Any = "leaf"
    for level in range(depth):
        value = {"k": value} if level % 2 else [value]
    return value


def plan_with_args(args: dict[str, Any]) -> dict[str, Any]:
    return {**PLAN, "actions": [{"tool": "bash", "args": args}]}


# (tool, input, field named in the message, words of the rule)
BAD_INPUT: list[tuple[str, dict[str, Any], str, str]] = [
    ("plan_store", plan_with_args({"x": nested(900)}), "actions[0].args", "nests deeper than"),
    ("plan_store", plan_with_args({"x": nested(3000)}), "actions[0].args", "nests deeper than"),
    ("memory_store", {"content": nested(3000)}, "content", "nests deeper than"),
    ("cache_write", {"kind": "fact", "content": "x", "scope": nested(1000)}, "scope", "nests deeper than"),
    ("plan_store", plan_with_args({"ratio": float("nan")}), "actions[0].args.ratio", "finite number"),
    ("plan_store", plan_with_args({"limits": [1, float("inf")]}), "actions[0].args.limits[1]", "finite number"),
    ("memory_store", {"content": "x", "importance": float("nan")}, "importance", "finite number"),
    ("cache_write", {"kind": "fact", "content": "x", "ttl_minutes": float("inf")}, "ttl_minutes", "finite number"),
    ("memory_store", {"content": ZERO_WIDTH}, "content", "non-whitespace"),
    ("memory_store", {"content": "ok", "tags": ["ok", ZERO_WIDTH]}, "tags[1]", "non-whitespace"),
    ("cache_write", {"kind": "fact", "content": ZERO_WIDTH}, "content", "non-whitespace"),
    ("plan_store", {**PLAN, "prompt": ZERO_WIDTH}, "prompt", "non-whitespace"),
    ("plan_lookup", {"prompt": "\u2060\u200b"}, "prompt", "non-whitespace"),
    ("memory_search", {"query": ZERO_WIDTH}, "query", "non-whitespace"),
    ("memory_search", {"query": "x", "limit": True}, "limit", "not true or false"),
    ("memory_list", {"limit": False}, "limit", "not true or false"),
    ("cache_search", {"query": "x", "limit": True}, "limit", "not true or false"),
    ("cache_pack", {"token_budget": True}, "token_budget", "not true or false"),
    ("cache_pack", {"since_version": True}, "since_version", "not true or false"),
    ("cache_write", {"kind": "fact", "content": "x", "importance": True}, "importance", "not true or false"),
    ("cache_write", {"kind": "fact", "content": "x", "ttl_minutes": True}, "ttl_minutes", "not true or false"),
    ("plan_lookup", {"prompt": "x", "top_k": True}, "top_k", "not true or false"),
    ("memory_store", {"content": "x", "importance": True}, "importance", "not true or false"),
    ("memory_search", {"query": "x", "since": "0001-01-01T00:00:00+14:00"}, "since", "out of the supported date range"),
    ("memory_search", {"query": "x", "until": "9999-12-31T23:00:00-14:00"}, "until", "out of the supported date range"),
    ("memory_search", {"query": "x", "since": "the day before yesterday"}, "since", "ISO-8601"),
    ("cache_write", {"kind": "fact", "content": "x", "scope": f"task:{GITHUB}"}, "scope", "must not contain a secret"),
    ("cache_pack", {"scope": f"task:{GITHUB}"}, "scope", "must not contain a secret"),
]


@pytest.mark.parametrize(
    ("tool", "args", "field", "rule"), BAD_INPUT, ids=[f"{t}-{f}-{r}" for t, _, f, r in BAD_INPUT]
)
async def test_bad_input_answers_invalid_input_naming_the_field_and_the_rule(
    tools: dict[str, Any], tool: str, args: dict[str, Any], field: str, rule: str, call: Any
) -> None:
    error = await call.error(tools[tool], args)
    assert error["type"] == "invalid_input"
    assert f"field '{field}" in error["message"]
    assert rule in error["message"]


# (tool, input holding the secret in a field that breaks a rule)
SECRET_IN_BAD_FIELD: list[tuple[str, dict[str, Any]]] = [
    ("memory_get", {"id": GITHUB}),
    ("memory_forget", {"id": GITHUB}),
    ("memory_store", {"content": "x", "kind": GITHUB}),
    ("memory_store", {"content": "x", "supersedes": GITHUB}),
    ("memory_search", {"query": "x", "since": GITHUB}),
    ("memory_search", {"query": "x", "until": f"2026-01-01 {GITHUB}"}),
    ("memory_list", {"before": GITHUB}),
    ("cache_get", {"block_id": GITHUB}),
    ("cache_write", {"kind": "fact", "content": "x", "scope": f"bad scope {GITHUB}"}),
    ("cache_write", {"kind": GITHUB, "content": "x"}),
    ("cache_search", {"query": "x", "limit": GITHUB}),
    ("plan_reward", {"plan_id": GITHUB, "success": True}),
    ("plan_lookup", {"prompt": "x", "top_k": GITHUB}),
    ("plan_store", {"prompt": "x", "actions": GITHUB}),
    ("memory_store", {"content": "x", GITHUB: 1}),
]


@pytest.mark.parametrize(
    ("tool", "args"), SECRET_IN_BAD_FIELD, ids=[f"{t}-{i}" for i, (t, _) in enumerate(SECRET_IN_BAD_FIELD)]
)
async def test_an_error_never_repeats_the_value_it_refused(
    tools: dict[str, Any], tool: str, args: dict[str, Any], call: Any
) -> None:
    error = await call.error(tools[tool], args)
    assert error["type"] == "invalid_input"
    assert GITHUB not in error["message"] and GITHUB[4:20] not in error["message"]


async def test_until_the_last_representable_day_searches_instead_of_failing(tools: dict[str, Any], call: Any) -> None:
    stored = await call(tools["memory_store"], {"content": "The backup job runs at 02:00 UTC."})
    found = await call(tools["memory_search"], {"query": "backup job", "until": "9999-12-31"})
    assert [r["id"] for r in found["results"]] == [stored["id"]]


async def test_bad_input_loses_nothing_already_stored(tools: dict[str, Any], call: Any) -> None:
    stored = await call(tools["memory_store"], {"content": "Releases are tagged from main."})
    for tool, args, _, _ in BAD_INPUT:
        await tools[tool].execute(args)
    listed = await call(tools["memory_list"], {})
    assert [m["id"] for m in listed["memories"]] == [stored["id"]]
