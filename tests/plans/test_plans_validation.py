"""Bad input to the plan_* tools: a precise error naming the field and the rule, and nothing lost."""

from __future__ import annotations

from typing import Any

import pytest

PROMPT = "Make the player move faster"
STEP = {"tool": "edit_file", "args": {"path": "src/Player.cs"}}
PLAN_ID = "2f1d9c7e-3b8a-4c1e-9f42-0a7d5e2b8c31"


@pytest.mark.parametrize(
    ("args", "field", "rule"),
    [
        ({"actions": [STEP]}, "prompt", "required"),
        ({"prompt": "", "actions": [STEP]}, "prompt", "at least 1 character"),
        ({"prompt": "   ", "actions": [STEP]}, "prompt", "non-whitespace"),
        ({"prompt": "x" * 2001, "actions": [STEP]}, "prompt", "at most 2000 characters"),
        ({"prompt": 42, "actions": [STEP]}, "prompt", "valid string"),
        ({"prompt": PROMPT}, "actions", "required"),
        ({"prompt": PROMPT, "actions": []}, "actions", "at least 1 item"),
        ({"prompt": PROMPT, "actions": [STEP] * 51}, "actions", "at most 50 items"),
        ({"prompt": PROMPT, "actions": STEP}, "actions", "valid list"),
        ({"prompt": PROMPT, "actions": ["edit_file"]}, "actions[0]", "valid dictionary"),
        ({"prompt": PROMPT, "actions": [{"args": {}}]}, "actions[0].tool", "required"),
        ({"prompt": PROMPT, "actions": [{"tool": "", "args": {}}]}, "actions[0].tool", "at least 1 character"),
        ({"prompt": PROMPT, "actions": [{"tool": "  ", "args": {}}]}, "actions[0].tool", "non-whitespace"),
        ({"prompt": PROMPT, "actions": [{"tool": 7, "args": {}}]}, "actions[0].tool", "valid string"),
        ({"prompt": PROMPT, "actions": [{"tool": "t" * 201}]}, "actions[0].tool", "at most 200 characters"),
        ({"prompt": PROMPT, "actions": [STEP, {"tool": "x", "args": [1]}]}, "actions[1].args", "valid dictionary"),
        ({"prompt": PROMPT, "actions": [{"tool": "x", "args": {}, "why": "?"}]}, "actions[0].why", "not a known"),
        (
            {"prompt": PROMPT, "actions": [{"tool": "write_file", "args": {"text": "é" * 33_000}}]},
            "actions",
            "more than the 65536 allowed",
        ),
        ({"prompt": PROMPT, "actions": [STEP], "score": 1}, "score", "not a known field"),
    ],
)
async def test_plan_store_refuses_bad_input(
    tools: dict[str, Any], args: dict[str, Any], field: str, rule: str, call: Any
) -> None:
    err = await call.error(tools["plan_store"], args)
    assert err["type"] == "invalid_input"
    assert f"field '{field}'" in err["message"]
    assert rule in err["message"]


async def test_a_plan_of_exactly_50_steps_is_accepted(tools: dict[str, Any], call: Any) -> None:
    out = await call(tools["plan_store"], {"prompt": PROMPT, "actions": [STEP] * 50})
    assert out["steps"] == 50


async def test_a_refused_store_leaves_the_existing_plan_untouched(tools: dict[str, Any], call: Any) -> None:
    await call(tools["plan_store"], {"prompt": PROMPT, "actions": [STEP]})
    await call.error(tools["plan_store"], {"prompt": PROMPT, "actions": []})
    hit = await call(tools["plan_lookup"], {"prompt": PROMPT})
    assert hit["actions"] == [STEP]


@pytest.mark.parametrize(
    ("args", "field", "rule"),
    [
        ({}, "prompt", "required"),
        ({"prompt": "  "}, "prompt", "non-whitespace"),
        ({"prompt": "x" * 2001}, "prompt", "at most 2000 characters"),
        ({"prompt": PROMPT, "top_k": 0}, "top_k", "greater than or equal to 1"),
        ({"prompt": PROMPT, "top_k": 21}, "top_k", "less than or equal to 20"),
        ({"prompt": PROMPT, "top_k": "many"}, "top_k", "valid integer"),
        ({"prompt": PROMPT, "limit": 3}, "limit", "not a known field"),
    ],
)
async def test_plan_lookup_refuses_bad_input(
    tools: dict[str, Any], args: dict[str, Any], field: str, rule: str, call: Any
) -> None:
    err = await call.error(tools["plan_lookup"], args)
    assert err["type"] == "invalid_input"
    assert f"field '{field}'" in err["message"]
    assert rule in err["message"]


@pytest.mark.parametrize(
    ("args", "field", "rule"),
    [
        ({"success": True}, "prompt", "exactly one of 'plan_id' or 'prompt'"),
        ({"plan_id": PLAN_ID, "prompt": PROMPT, "success": True}, "prompt", "exactly one of"),
        ({"plan_id": "plan-1", "success": True}, "plan_id", "a UUID"),
        ({"plan_id": "", "success": True}, "plan_id", "at least 1 character"),
        ({"prompt": "  ", "success": True}, "prompt", "non-whitespace"),
        ({"plan_id": PLAN_ID}, "success", "required"),
        ({"plan_id": PLAN_ID, "success": "yes"}, "success", "valid boolean"),
        ({"plan_id": PLAN_ID, "success": 1}, "success", "valid boolean"),
        ({"plan_id": PLAN_ID, "success": True, "tool_failure": True}, "tool_failure", "only be true when 'success'"),
        ({"plan_id": PLAN_ID, "success": False, "tool_failure": "no"}, "tool_failure", "valid boolean"),
        ({"plan_id": PLAN_ID, "success": False, "score": 0.1}, "score", "not a known field"),
    ],
)
async def test_plan_reward_refuses_bad_input(
    tools: dict[str, Any], args: dict[str, Any], field: str, rule: str, call: Any
) -> None:
    err = await call.error(tools["plan_reward"], args)
    assert err["type"] == "invalid_input"
    assert f"field '{field}'" in err["message"]
    assert rule in err["message"]


async def test_a_refused_reward_leaves_the_score_untouched(tools: dict[str, Any], call: Any) -> None:
    plan_id = (await call(tools["plan_store"], {"prompt": PROMPT, "actions": [STEP]}))["plan_id"]
    await call.error(tools["plan_reward"], {"plan_id": plan_id, "success": True, "tool_failure": True})
    assert (await call(tools["plan_lookup"], {"prompt": PROMPT}))["score"] == 1.0


@pytest.mark.parametrize("name", ["plan_store", "plan_lookup", "plan_reward"])
async def test_non_object_input_is_refused(tools: dict[str, Any], name: str, call: Any) -> None:
    err = await call.error(tools[name], ["not", "an", "object"])  # type: ignore[arg-type]
    assert "JSON object" in err["message"]
