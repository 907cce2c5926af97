"""Recall without being asked (issue 18), in whole turns under each real orchestrator (loop-basic,
loop-streaming): what the provider is sent is read from the requests it recorded.

A relevant memory appears in the request with its full id; an unrelated prompt gets nothing; the
briefing is on the first request of the session only; the block is on every request of a turn; a
superseded memory is marked; a failing store or a timeout leaves the request untouched;
``recall.enabled: false`` injects nothing; the session's ``injection_size_limit`` is respected;
a secret redacted at store time stays redacted in the block.
"""

from __future__ import annotations

import asyncio
import re
import threading
from pathlib import Path
from typing import Any

import pytest
from amplifier_core.models import HookResult
from real_stack import Stack, StackFactory, calls, say

from amplifier_module_tool_agent_memory.amplifier import recall_hooks

DENTIST = "My dentist is Dr. Alvarez at the Elm Street clinic, appointments on Tuesdays."
DENTIST_NOW = "I switched dentists: my dentist is now Dr. Okafor at the Harbour clinic."
PREFERENCE = "Always write commit messages in the imperative mood."
DECISION = "We deploy the billing service only on Wednesdays."
RELEVANT = "Which dentist do I go to, and where is the clinic?"
UNRELATED = "Summarise the plot of a novel about sailing across the Pacific."
_ID = re.compile(r"\[([0-9a-f-]{36})\]")


async def _store(stack: Stack, content: str, kind: str = "fact") -> str:
    result = await stack.tool("memory_store").execute({"content": content, "kind": kind})
    assert result.success, result.error
    return str(result.output["id"])


def _injected(request: Any) -> list[str]:
    """The texts appended to a request after the conversation: what hooks injected (role user, after the
    last message the context holds)."""
    return [str(m.content) for m in request.messages if m.role == "user" and "<agent-memory-" in str(m.content)]


async def test_a_relevant_memory_reaches_the_request_with_its_full_id(start_stack: StackFactory) -> None:
    stack = await start_stack()
    memory_id = await _store(stack, DENTIST)
    await stack.turn(RELEVANT, say("Dr. Alvarez."))
    [request] = stack.provider.requests
    [block] = _injected(request)
    assert f"[{memory_id}]" in block
    assert "Elm Street" in block
    assert "memory_get" in block and "memory_search" in block
    assert stack.context.messages[0]["content"] == RELEVANT  # the context itself is not changed
    assert all("<agent-memory-" not in str(m.get("content")) for m in stack.context.messages)
    [event] = stack.of("memory:recalled")
    assert event["ids"] == [memory_id] or memory_id in event["ids"]
    assert event["reason"] == "recalled" and event["identity"] == "alice"
    assert 0 < event["tokens"] <= 400


async def test_an_unrelated_prompt_gets_nothing(start_stack: StackFactory) -> None:
    stack = await start_stack()
    await _store(stack, DENTIST)
    await stack.turn(UNRELATED, say("A voyage."))
    [request] = stack.provider.requests
    assert _injected(request) == []
    assert [m.role for m in request.messages] == ["user"]
    [event] = stack.of("memory:recalled")
    assert event["ids"] == [] and event["reason"] == "below_gate"


async def test_the_briefing_is_on_the_first_request_of_the_session_only(start_stack: StackFactory) -> None:
    stack = await start_stack()
    preference = await _store(stack, PREFERENCE, "preference")
    decision = await _store(stack, DECISION, "decision")
    await stack.turn(UNRELATED, calls(("memory_list", {"limit": 5})), say("ok"))
    await stack.turn("And another unrelated question about sailing?", say("ok"))
    first, second, third = stack.provider.requests
    [briefing] = _injected(first)
    assert briefing.startswith("<agent-memory-briefing>")
    # newest first
    assert briefing.index(f"[{decision}]") < briefing.index(f"[{preference}]")
    assert _injected(second) == [] and _injected(third) == []
    events = stack.of("memory:recalled")
    assert [e["briefing_ids"] for e in events] == [[decision, preference], [], []]


async def test_a_superseded_preference_is_left_out_of_the_briefing(start_stack: StackFactory) -> None:
    stack = await start_stack()
    older = await _store(stack, "I prefer window seats on flights.", "preference")
    newer = await _store(stack, "I now prefer aisle seats on flights.", "preference")
    await stack.turn(UNRELATED, say("ok"))
    [event] = stack.of("memory:recalled")
    assert newer in event["briefing_ids"]
    assert older not in event["briefing_ids"]


async def test_the_block_is_on_every_request_of_the_turn(
    start_stack: StackFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: list[tuple[str, str]] = []
    compute = recall_hooks.compute

    def recorded(*args: Any) -> Any:
        comm = Path(f"/proc/self/task/{threading.get_native_id()}/comm")
        threads.append((threading.current_thread().name, comm.read_text().strip() if comm.exists() else ""))
        return compute(*args)

    monkeypatch.setattr(recall_hooks, "compute", recorded)
    stack = await start_stack(config={"recall": {"briefing_tokens": 0}})
    memory_id = await _store(stack, DENTIST)
    await stack.turn(
        RELEVANT,
        calls(("memory_search", {"query": "dentist"})),
        calls(("release_service", {"service": "billing", "env": "staging"})),
        say("Dr. Alvarez."),
    )
    assert len(stack.provider.requests) == 3
    for request in stack.provider.requests:
        [block] = _injected(request)
        assert f"[{memory_id}]" in block
    assert len(stack.of("memory:recalled")) == 3
    # the next turn's prompt is recalled afresh: unrelated, nothing
    await stack.turn(UNRELATED, say("ok"))
    assert _injected(stack.provider.requests[-1]) == []
    # each turn's recall ran once, in the recall pool (started from amplifier-core's thread: a coroutine handler would
    # use the loop's executor), whose OS thread is named apart from the tokio thread that started it (Linux)
    assert len(threads) == 2
    assert all(name.startswith("agent-memory-recall") for name, _ in threads)
    assert all(comm in ("", recall_hooks._THREAD_NAME.decode()) for _, comm in threads)


async def test_a_request_that_comes_before_the_loop_adopts_the_recall_reads_its_own_turn(
    start_stack: StackFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The plain prompt:submit handler runs on amplifier-core's thread and hands its recall to the loop by a callback.
    # Were the orchestrator to reach the request before that callback ran, the request must still read this turn's
    # recall: never nothing for a relevant prompt, never the previous turn's block for the next one.
    loop = asyncio.get_running_loop()
    soon = loop.call_soon_threadsafe
    delayed: list[str] = []

    def late(callback: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(callback, "__name__", "") == "adopt_incoming":
            delayed.append(threading.current_thread().name)
            return soon(lambda: loop.call_later(0.5, callback, *args))
        return soon(callback, *args, **kwargs)

    monkeypatch.setattr(loop, "call_soon_threadsafe", late)
    stack = await start_stack(config={"recall": {"briefing_tokens": 0}})
    memory_id = await _store(stack, DENTIST)
    await stack.turn(RELEVANT, say("Dr. Alvarez."))
    [block] = _injected(stack.provider.requests[-1])
    assert f"[{memory_id}]" in block
    await stack.turn(UNRELATED, say("ok"))
    assert _injected(stack.provider.requests[-1]) == []
    assert len(delayed) == 2  # both turns went through the late hand-over (the handler ran off the loop)


async def test_the_event_comes_after_its_request_and_within_the_turn(
    start_stack: StackFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A delay no turn here reaches: only the turn's end can have emitted the events before the turn returns.
    monkeypatch.setattr(recall_hooks, "EMIT_DELAY_S", 60.0)
    stack = await start_stack(config={"recall": {"briefing_tokens": 0, "timeout_ms": 100}})
    await _store(stack, DENTIST)

    async def slow_listener(event: str, data: dict[str, Any]) -> Any:
        # Another handler of the event, slower than the recall's timeout (as a loaded machine's hook dispatch
        # can be): the turn's end still waits for the events, so the test no longer depends on the load.
        await asyncio.sleep(0.3)
        return HookResult(action="continue")

    stack.coordinator.hooks.register("memory:recalled", slow_listener, priority=0, name="test-slow-listener")
    seen_at_request: list[int] = []
    complete = stack.provider.complete

    async def recording(request: Any, **kwargs: Any) -> Any:
        if request.tools:
            seen_at_request.append(len(stack.of("memory:recalled")))
        return await complete(request, **kwargs)

    monkeypatch.setattr(stack.provider, "complete", recording)
    await stack.turn(RELEVANT, calls(("memory_search", {"query": "dentist"})), say("Dr. Alvarez."))
    assert seen_at_request == [0, 0]  # neither request waited for its event
    # both, in the order of their requests, before the turn returned (each orchestrator counts from its own start)
    first, second = (e["iteration"] for e in stack.of("memory:recalled"))
    assert second == first + 1


async def test_a_superseded_memory_is_marked(start_stack: StackFactory) -> None:
    stack = await start_stack()
    older = await _store(stack, DENTIST)
    stored = await stack.tool("memory_store").execute({"content": DENTIST_NOW, "kind": "fact"})
    newer = str(stored.output["id"])
    assert stored.output["superseded"]["id"] == older
    await stack.turn(RELEVANT, say("Dr. Okafor."))
    [block] = _injected(stack.provider.requests[0])
    assert f"[{older}] (fact, " in block
    line = next(x for x in block.splitlines() if f"[{older}]" in x)
    assert f"superseded by {newer}" in line
    assert block.index(f"[{newer}]") < block.index(f"[{older}]")  # the current value first


async def test_a_failing_store_leaves_the_request_untouched(
    start_stack: StackFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    stack = await start_stack()
    await _store(stack, DENTIST)

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise OSError("the store's files are gone")

    monkeypatch.setattr("amplifier_module_tool_agent_memory.store.contract.BaseCollection.query", broken)
    await stack.turn(RELEVANT, say("I do not know."))
    [request] = stack.provider.requests
    assert _injected(request) == [] and [m.role for m in request.messages] == ["user"]
    [event] = stack.of("memory:recalled")
    assert event["reason"] == "error" and event["error"] == "OSError"


async def test_a_recall_past_its_timeout_leaves_the_request_untouched(
    start_stack: StackFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    stack = await start_stack(config={"recall": {"timeout_ms": 50}})
    await _store(stack, DENTIST)
    slow_compute = recall_hooks.compute
    release, finished = threading.Event(), threading.Event()

    def slow(*args: Any, **kwargs: Any) -> Any:
        release.wait(30)  # held until the turn is over (bounded, so a broken hook cannot hang the suite)
        try:
            return slow_compute(*args, **kwargs)
        finally:
            finished.set()

    monkeypatch.setattr(recall_hooks, "compute", slow)
    try:
        await stack.turn(RELEVANT, say("I do not know."))
        # The turn ended while its recall was still held: the request did not wait for it.
        assert not finished.is_set()
    finally:
        release.set()
    [request] = stack.provider.requests
    assert _injected(request) == []
    [event] = stack.of("memory:recalled")
    assert event["reason"] == "timeout"


async def test_recall_disabled_injects_nothing(start_stack: StackFactory) -> None:
    stack = await start_stack(config={"recall": {"enabled": False}})
    await _store(stack, DENTIST)
    await _store(stack, PREFERENCE, "preference")
    await stack.turn(RELEVANT, say("ok"))
    [request] = stack.provider.requests
    assert [m.role for m in request.messages] == ["user"]
    assert stack.of("memory:recalled") == []


async def test_the_injection_size_limit_is_respected(start_stack: StackFactory) -> None:
    limit = 700
    stack = await start_stack(session={"injection_size_limit": limit})
    await _store(stack, PREFERENCE, "preference")
    ids = [await _store(stack, f"My dentist visit number {n} at the Elm Street clinic was on a Tuesday in "
                              f"month {n}, and it went fine.", "event") for n in range(1, 9)]
    result = await stack.turn(RELEVANT, say("ok"))
    assert result == "ok"  # the turn did not fail
    [request] = stack.provider.requests
    [block] = _injected(request)
    assert len(block) <= limit
    shown = set(_ID.findall(block))
    assert shown and shown <= {*ids, *shown}
    [event] = stack.of("memory:recalled")
    assert event["tokens"] * 4 >= len(block)


async def test_a_secret_redacted_at_store_time_stays_out_of_the_request(start_stack: StackFactory) -> None:
    stack = await start_stack()
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    memory_id = await _store(stack, f"The deploy token for the billing repository is {secret}.")
    await stack.turn("What is the deploy token for the billing repository?", say("ok"))
    [block] = _injected(stack.provider.requests[0])
    assert f"[{memory_id}]" in block
    assert secret not in block
    assert secret not in str(stack.of("memory:recalled"))


async def test_a_sub_agent_gets_recall_without_the_briefing(start_stack: StackFactory) -> None:
    stack = await start_stack()
    memory_id = await _store(stack, DENTIST)
    await _store(stack, PREFERENCE, "preference")
    from amplifier_core import AmplifierSession

    plan = dict(stack.session.config) if hasattr(stack.session, "config") else None
    if plan is None:
        pytest.skip("this amplifier-core does not expose the session's mount plan")
    child = AmplifierSession(plan, parent_id=stack.coordinator.session_id)
    from real_stack import LocalSources

    await child.coordinator.mount("module-source-resolver", LocalSources())
    await child.initialize()
    try:
        provider = child.coordinator.get("providers")["scripted"]
        provider.script = [say("ok")]
        await child.execute(RELEVANT)
        [request] = provider.requests
        [block] = [str(m.content) for m in request.messages if "<agent-memory-" in str(m.content)]
        assert block.startswith("<agent-memory-recall>") and f"[{memory_id}]" in block
        assert "<agent-memory-briefing>" not in block
    finally:
        await child.cleanup()
