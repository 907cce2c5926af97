"""Fuzzing every tool with hypothesis: whatever the input (the tool's own field names with values
of any JSON type, NaN and infinity, deep nesting, unknown keys, invisible text, non-objects),
``execute`` returns a ToolResult and never raises; a refusal is invalid_input naming a field
(or not_found for a well-formed id that does not exist); and no error quotes a value it was given.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from amplifier_core import ToolResult
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amplifier_module_tool_agent_memory.runtime import AgentMemory

pytestmark = pytest.mark.reliability

EXAMPLES_PER_TOOL = 100
TOOL_NAMES = (
    "memory_store", "memory_search", "memory_get", "memory_forget", "memory_unlink", "memory_link",
    "memory_unmerge", "memory_list",
    "cache_write", "cache_search", "cache_get", "cache_compact", "cache_pack",
    "plan_store", "plan_lookup", "plan_reward",
)
# Values shorter than this can occur in any message by chance ("id", "1"); longer ones must not be quoted.
MIN_CHECKED_LEN = 8

_text = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)) | st.sampled_from("\u200b\u2060\ufeff \n"),
    max_size=40,
)
_secretish = st.builds(lambda s: f"ghp_{s}", st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=36,
                                                     max_size=36))
_scalars = (
    st.none() | st.booleans() | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True) | _text | _secretish
    | st.uuids().map(str) | st.sampled_from(["2026-11-22", "9999-12-31", "0001-01-01T00:00:00+14:00", "fact"])
)
_json = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_text, inner, max_size=4),
                     max_leaves=12)


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


_deep = st.integers(min_value=30, max_value=3000).map(_nested)


# A valid input per tool: the fuzzer also changes one or two of its fields, so calls reach the services.
VALID: dict[str, dict[str, Any]] = {
    "memory_store": {"content": "The deploy runs at noon.", "tags": ["ops"], "kind": "fact"},
    "memory_search": {"query": "deploy time", "limit": 3},
    "memory_get": {"id": "0b6f7c2e-4f1e-4c59-9a53-1f0f3c1f2a10"},
    "memory_forget": {"id": "0b6f7c2e-4f1e-4c59-9a53-1f0f3c1f2a10"},
    "memory_unlink": {"id": "0b6f7c2e-4f1e-4c59-9a53-1f0f3c1f2a10"},
    "memory_link": {"id": "0b6f7c2e-4f1e-4c59-9a53-1f0f3c1f2a10", "supersedes": "1b6f7c2e-4f1e-4c59-9a53-1f0f3c1f2a10"},
    "memory_unmerge": {"id": "0b6f7c2e-4f1e-4c59-9a53-1f0f3c1f2a10", "wording": "The deploy runs at noon."},
    "memory_list": {"limit": 5},
    "cache_write": {"kind": "fact", "content": "The build is green.", "scope": "task:fuzz"},
    "cache_search": {"query": "build", "scope": "task:fuzz"},
    "cache_get": {"block_id": "0b6f7c2e-4f1e-4c59-9a53-1f0f3c1f2a10"},
    "cache_compact": {"scope": "task:fuzz"},
    "cache_pack": {"scope": "task:fuzz", "token_budget": 200},
    "plan_store": {"prompt": "rebuild the index", "actions": [{"tool": "bash", "args": {"cmd": "make index"}}]},
    "plan_lookup": {"prompt": "rebuild the index"},
    "plan_reward": {"prompt": "rebuild the index", "success": True},
}


def _inputs(tool: str, fields: list[str]) -> st.SearchStrategy[Any]:
    keys = st.sampled_from(fields) | _text if fields else _text
    objects = st.dictionaries(keys, _json | _deep, max_size=6)
    mutated = st.builds(
        lambda changes: {**VALID[tool], **changes},
        st.dictionaries(st.sampled_from(fields) if fields else _text, _json | _deep, max_size=2),
    )
    return mutated | objects | st.none() | _json


def _strings(value: Any) -> list[str]:
    """Every string in ``value`` (dict keys excluded: they are field names), at any depth."""
    out: list[str] = []
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            out.append(node)
        elif isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list | tuple):
            stack.extend(node)
    return out


def _is_uuid(text: str) -> bool:
    try:
        uuid.UUID(text.strip())
    except ValueError:
        return False
    return True


def _replaced(value: Any, old: str, new: str) -> Any:
    """``value`` with every string equal to ``old`` replaced by ``new`` (dict keys kept)."""
    if isinstance(value, str):
        return new if value == old else value
    if isinstance(value, dict):
        return {k: _replaced(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_replaced(v, old, new) for v in value]
    return value


def check_result(args: Any, result: Any, call: Callable[[Any], ToolResult]) -> None:
    """The properties of one answer; ``call`` runs the tool again (to tell a quoted value from fixed text)."""
    assert isinstance(result, ToolResult)
    if result.success:
        return
    error = result.error
    assert isinstance(error, dict)
    kind, message = error["type"], error["message"]
    assert kind in {"invalid_input", "not_found"}, message
    if kind == "invalid_input":
        assert re.search(r"field '[^']*'", message), message
    quoted = [
        s for s in _strings(args)
        # A well-formed id may be named in not_found: the module gave it out, it holds nothing secret.
        if len(s.strip()) >= MIN_CHECKED_LEN and not _is_uuid(s) and s.strip() in message
    ]
    for value in quoted:
        # Text that stays when the value changes is the rule's own wording (an example date), not an echo.
        again = call(_replaced(args, value, "#" * len(value))).error or {}
        assert value.strip() in str(again.get("message", "")), message


@pytest.mark.parametrize("tool", TOOL_NAMES)
def test_fuzzed_input_never_raises_and_errors_name_a_field_without_quoting_values(
    make_runtime: Callable[..., AgentMemory], tool: str, runtime_tools: Any
) -> None:
    tools = runtime_tools(make_runtime())
    fields = sorted(tools[tool].input_schema.get("properties", {}))
    # One loop for every example: the tools run their work in threads, as under Amplifier.
    loop = asyncio.new_event_loop()

    reached_the_service = 0

    @settings(max_examples=EXAMPLES_PER_TOOL, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(args=_inputs(tool, fields))
    def run(args: Any) -> None:
        nonlocal reached_the_service
        def call(given_args: Any) -> ToolResult:
            return loop.run_until_complete(tools[tool].execute(given_args))

        result = call(args)
        check_result(args, result, call)
        reached_the_service += result.success or result.error["type"] == "not_found"

    try:
        run()
    finally:
        loop.close()
    assert reached_the_service > 0  # the fuzzer got past validation too, not only into it
