"""Bad input for every field of every cache tool: a failed ToolResult naming the field and the rule."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest

from amplifier_module_tool_agent_memory.runtime import AgentMemory

BAD_INPUTS: list[tuple[str, dict[str, Any], str]] = [
    ("cache_write", {"content": "x"}, "field 'kind' is required"),
    ("cache_write", {"kind": "note", "content": "x"}, "field 'kind'"),
    ("cache_write", {"kind": "fact"}, "field 'content' is required"),
    ("cache_write", {"kind": "fact", "content": ""}, "field 'content'"),
    ("cache_write", {"kind": "fact", "content": "   "}, "non-whitespace"),
    ("cache_write", {"kind": "fact", "content": "x" * 4001}, "4000"),
    ("cache_write", {"kind": "fact", "content": "x", "importance": 1.5}, "field 'importance'"),
    ("cache_write", {"kind": "fact", "content": "x", "importance": -0.1}, "field 'importance'"),
    ("cache_write", {"kind": "fact", "content": "x", "importance": "high"}, "field 'importance'"),
    ("cache_write", {"kind": "fact", "content": "x", "importance": float("nan")}, "field 'importance'"),
    ("cache_write", {"kind": "fact", "content": "x", "file_ref": ""}, "field 'file_ref'"),
    ("cache_write", {"kind": "fact", "content": "x", "file_ref": "a" * 1001}, "field 'file_ref'"),
    ("cache_write", {"kind": "fact", "content": "x", "scope": ""}, "field 'scope'"),
    ("cache_write", {"kind": "fact", "content": "x", "scope": "../etc"}, "field 'scope'"),
    ("cache_write", {"kind": "fact", "content": "x", "ttl_minutes": -1}, "field 'ttl_minutes'"),
    ("cache_write", {"kind": "fact", "content": "x", "ttl_minutes": 10**6}, "field 'ttl_minutes'"),
    ("cache_write", {"kind": "fact", "content": "x", "ttl_minutes": float("inf")}, "field 'ttl_minutes'"),
    ("cache_write", {"kind": "fact", "content": "x", "colour": "red"}, "field 'colour' is not a known field"),
    ("cache_search", {}, "field 'query' is required"),
    ("cache_search", {"query": " "}, "non-whitespace"),
    ("cache_search", {"query": "x", "limit": 0}, "field 'limit'"),
    ("cache_search", {"query": "x", "limit": 21}, "field 'limit'"),
    ("cache_search", {"query": "x", "scope": "has space"}, "field 'scope'"),
    ("cache_get", {}, "field 'block_id' is required"),
    ("cache_get", {"block_id": "block-1"}, "UUID"),
    ("cache_get", {"block_id": str(uuid.uuid4())}, "no cache block"),
    ("cache_compact", {"scope": "-bad"}, "field 'scope'"),
    ("cache_pack", {"token_budget": 49}, "field 'token_budget'"),
    ("cache_pack", {"token_budget": 8001}, "field 'token_budget'"),
    ("cache_pack", {"token_budget": "lots"}, "field 'token_budget'"),
    ("cache_pack", {"query": ""}, "field 'query'"),
    ("cache_pack", {"since_version": -1}, "field 'since_version'"),
    ("cache_pack", {"scope": "x" * 101}, "field 'scope'"),
]


@pytest.mark.parametrize(("tool", "args", "message"), BAD_INPUTS, ids=[f"{t}-{m}" for t, _, m in BAD_INPUTS])
async def test_bad_input_is_a_failed_result_naming_the_field(
    make_runtime: Callable[..., AgentMemory],
    tool: str,
    args: dict[str, Any],
    message: str,
    call: Any,
    runtime_tools: Any,
) -> None:
    tools = runtime_tools(make_runtime())
    error = await call.error(tools[tool], args)
    assert message in error["message"]
    assert error["message"].startswith(tool)


async def test_bad_write_stores_nothing(
    make_runtime: Callable[..., AgentMemory], call: Any, runtime_tools: Any
) -> None:
    tools = runtime_tools(make_runtime())
    await call.error(tools["cache_write"], {"kind": "fact", "content": "keep me", "importance": 2})
    out = await call(tools["cache_pack"], {})
    assert out["version"] == 0 and "facts" not in out
