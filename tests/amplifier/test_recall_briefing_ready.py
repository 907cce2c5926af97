"""The briefing is read once the session is ready (on_session_ready), before the first prompt, under each real
orchestrator: the first request does not wait for it, yet a memory written before that request is in it."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from real_stack import Stack, StackFactory, say

from amplifier_module_tool_agent_memory.amplifier import recall_hooks

PREFERENCE = "Always write commit messages in the imperative mood."
DECISION = "We deploy the billing service only on Wednesdays."
UNRELATED = "Summarise the plot of a novel about sailing across the Pacific."


class Reads:
    """Counts the briefings read (in worker threads) and lets a test wait until they have ended."""

    def __init__(self) -> None:
        self.ended = 0
        self._lock = threading.Lock()

    def wrap(self, fn: Any) -> Any:
        def counted(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            finally:
                with self._lock:
                    self.ended += 1

        return counted

    async def until(self, count: int) -> int:
        """Wait (at most ~10 s, a bound for a stuck worker, not a timing assertion) for ``count`` reads."""
        for _ in range(1000):
            if self.ended >= count:
                break
            await asyncio.sleep(0.01)
        return self.ended


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Reads:
    counter = Reads()
    monkeypatch.setattr(recall_hooks, "compute_briefing", counter.wrap(recall_hooks.compute_briefing))
    return counter


def _briefing(stack: Stack) -> str:
    texts = [str(m.content) for m in stack.provider.requests[0].messages]
    blocks = [t for t in texts if "<agent-memory-briefing>" in t]
    return blocks[0] if blocks else ""


async def _store(stack: Stack, content: str, kind: str) -> str:
    result = await stack.tool("memory_store").execute({"content": content, "kind": kind})
    assert result.success, result.error
    return str(result.output["id"])


async def test_the_briefing_is_read_when_the_session_is_ready_not_at_the_prompt(
    start_stack: StackFactory, reads: Reads
) -> None:
    writer = await start_stack(config={"recall": {"briefing_tokens": 0}})  # reads no briefing itself
    preference = await _store(writer, PREFERENCE, "preference")
    stack = await start_stack()
    assert await reads.until(1) == 1  # read before any prompt
    await stack.turn(UNRELATED, say("ok"))
    assert f"[{preference}]" in _briefing(stack)
    assert reads.ended == 1  # the prompt did not read it again
    [event] = stack.of("memory:recalled")
    assert event["briefing_ids"] == [preference]


async def test_a_memory_stored_after_the_briefing_was_read_is_in_the_first_request(
    start_stack: StackFactory, reads: Reads
) -> None:
    stack = await start_stack()
    assert await reads.until(1) == 1  # the (empty) briefing read when the session was ready
    decision = await _store(stack, DECISION, "decision")
    await stack.turn(UNRELATED, say("ok"))
    assert f"[{decision}]" in _briefing(stack)
    assert reads.ended == 2


async def test_no_briefing_is_read_when_briefing_tokens_is_zero(start_stack: StackFactory, reads: Reads) -> None:
    stack = await start_stack(config={"recall": {"briefing_tokens": 0}})
    await _store(stack, PREFERENCE, "preference")
    await stack.turn(UNRELATED, say("ok"))
    assert _briefing(stack) == ""
    assert reads.ended == 0
