"""Whole turns in a real amplifier-core session under each real orchestrator (loop-basic, loop-streaming):
AmplifierSession initialises from a mount plan, its ModuleLoader validates our module from its folder on
a MockCoordinator and then mounts it (twice, as under the CLI), the orchestrator drives a scripted
provider's tool calls, and a context manager that compacts like context-simple emits
``context:compaction``. Checked from the loop's own events: our tools are called by the loop, a
successful turn becomes a plan (loop-basic hands ``tool:post`` the ToolResult, loop-streaming its
``model_dump()``), a failed replay marks it stale, compaction closes the open working-memory block
once, a hook module's identity is the one used, and the LLM summariser asks the provider as
foundation's own modules do. The session is built in conftest.py (see real_stack.py).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from real_stack import MODULE_ID, Stack, StackFactory, calls, say

PROMPT = "Release the billing service to staging"
RELEASE = ("release_service", {"service": "billing", "env": "staging"})
DECISION = "Billing is released to staging before production, never straight to production"


async def _first_turn(stack: Stack) -> None:
    """Look up a plan (miss), note a decision, release: a successful turn."""
    await stack.turn(
        PROMPT,
        calls(("plan_lookup", {"prompt": PROMPT})),
        calls(("cache_write", {"kind": "decision", "content": DECISION}), RELEASE),
        say("Released billing to staging."),
    )


async def _replay_turn(stack: Stack) -> None:
    """The same request again: the plan is found and replayed."""
    await stack.turn(PROMPT, calls(("plan_lookup", {"prompt": PROMPT})), calls(RELEASE), say("Done."))


async def test_the_loader_validates_our_module_before_mounting_it(
    start_stack: StackFactory, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="amplifier_core.loader"):
        stack = await start_stack()
    assert any(f"[module:validated] {MODULE_ID}" in r.getMessage() for r in caplog.records)
    assert not stack.of("module:load_failed")


async def test_the_loop_offers_and_calls_our_tools(start_stack: StackFactory) -> None:
    stack = await start_stack()
    await _first_turn(stack)
    offered = {spec.name for spec in stack.provider.requests[0].tools}
    assert {"plan_lookup", "cache_write", "memory_search", "release_service"} <= offered
    tool_messages = [m["content"] for m in stack.context.messages if m["role"] == "tool"]
    # Both loops hand the model JSON. loop-basic str()s what the 2.0.2 hook registry returns from tool:post, which
    # is str() of the ToolResult, i.e. str(output): amplifier/tools.py's JsonOutput makes that JSON, not a repr
    # (the test's own release_service returns a plain dict: loop-basic gives the model its repr). loop-streaming
    # json.dumps the registry's copy of the result's model_dump(): the output inside {"success", "output", "error"}.
    ours = [json.loads(c) for c in tool_messages if "released" not in c]
    ours = [a["output"] if "success" in a else a for a in ours]
    assert len(ours) == 2
    assert any(a.get("answer") == "miss" for a in ours)
    assert any("block_id" in a for a in ours)


async def test_a_successful_turn_is_captured_as_a_plan_from_the_loops_events(start_stack: StackFactory) -> None:
    stack = await start_stack()
    await _first_turn(stack)
    stored = stack.of("plan:stored")
    assert [(s["source"], s["identity"]) for s in stored] == [("auto_capture", "alice")]
    found = await stack.tool("plan_lookup").execute({"prompt": PROMPT})
    assert found.output["hit"] is True
    assert found.output["actions"] == [{"tool": RELEASE[0], "args": RELEASE[1]}]


async def test_a_failed_replay_marks_the_plan_stale(start_stack: StackFactory) -> None:
    stack = await start_stack()
    await _first_turn(stack)
    stack.tool("release_service").fail = True
    await _replay_turn(stack)
    plan_id = stack.of("plan:stored")[0]["plan_id"]
    assert [e["plan_id"] for e in stack.of("plan:stale")] == [plan_id]
    found = await stack.tool("plan_lookup").execute({"prompt": PROMPT})
    assert found.output["hit"] is False


async def test_compaction_closes_the_open_block_once_however_often_it_fires(start_stack: StackFactory) -> None:
    stack = await start_stack()
    await _first_turn(stack)
    assert not stack.of("cache:block_closed")
    stack.context.max_tokens = 300  # from now on every request is over budget
    await _replay_turn(stack)
    assert len(stack.of("context:compaction")) >= 3
    closed = stack.of("cache:block_closed")
    assert len(closed) == 1
    compacted = stack.of("cache:compacted")
    assert [(c["trigger"], c["items_closed"]) for c in compacted] == [("context:compaction", 1)]
    block = await stack.tool("cache_get").execute({"block_id": closed[0]["block_id"]})
    assert block.output["status"] == "closed"
    assert DECISION in block.output["summary"]


async def test_a_block_written_after_a_compaction_is_closed_by_the_next(start_stack: StackFactory) -> None:
    stack = await start_stack()
    await _first_turn(stack)
    stack.context.max_tokens = 300
    await stack.turn(
        "Note the rollback rule",
        calls(("cache_write", {"kind": "warning", "content": "Roll back billing if error rates double"})),
        say("Noted."),
    )
    closed = stack.of("cache:block_closed")
    assert [c["items"] for c in closed] == [1, 1]
    assert len({c["block_id"] for c in closed}) == 2


async def test_an_identity_a_hook_module_registers_is_the_one_used(start_stack: StackFactory, root: Path) -> None:
    stack = await start_stack(hooks=[{"module": "hooks-identity", "config": {"identity": "billing-agent"}}])
    await _first_turn(stack)
    assert [s["identity"] for s in stack.of("plan:stored")] == ["billing-agent"]
    assert (root / "billing-agent").is_dir()
    assert not (root / "alice").exists()


async def test_the_llm_summary_asks_the_provider_as_foundations_background_calls_do(
    start_stack: StackFactory,
) -> None:
    stack = await start_stack(config={"cache": {"summariser": "llm"}})
    await _first_turn(stack)
    stack.context.max_tokens = 300
    await _replay_turn(stack)
    [(request, kwargs)] = stack.provider.background
    assert request.metadata == {"stream": False}
    assert kwargs == {"extended_thinking": False}
    assert request.temperature is None
    assert DECISION in str(request.messages[0].content)
    [compacted] = stack.of("cache:compacted")
    assert compacted["summary_source"] == "llm"
    assert [c["summary_source"] for c in stack.of("cache:block_closed")] == ["llm"]
    block = await stack.tool("cache_get").execute({"block_id": compacted["closed_block_id"]})
    assert block.output["summary"] == stack.provider.summary_text


async def test_a_failed_llm_summary_falls_back_to_the_extractive_one(start_stack: StackFactory) -> None:
    stack = await start_stack(config={"cache": {"summariser": "llm"}})
    stack.provider.fail_background = True
    await _first_turn(stack)
    stack.context.max_tokens = 300
    await _replay_turn(stack)
    [compacted] = stack.of("cache:compacted")
    assert compacted["summary_source"] == "extractive"
    assert [c["summary_source"] for c in stack.of("cache:block_closed")] == ["extractive"]
    block = await stack.tool("cache_get").execute({"block_id": compacted["closed_block_id"]})
    assert DECISION in block.output["summary"]
