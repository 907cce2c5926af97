"""Whole turns in a real amplifier-core session: AmplifierSession initialises from a mount plan, its
ModuleLoader validates our module from its folder on a MockCoordinator and then mounts it (twice, as
under the CLI), a loop with loop-basic's events drives a scripted provider's tool calls, and a
context manager that compacts like context-simple emits ``context:compaction``. Checked from the
loop's own events: our tools are called by the loop, a successful turn becomes a plan, a failed
replay marks it stale, compaction closes the open working-memory block once, a hook module's
identity is the one used, and the LLM summariser asks the provider as foundation's own modules do.

The orchestrator, context manager, provider and task tool are the small modules in
``tests/amplifier/amplifier_stack`` (loop-basic and context-simple are not on PyPI); see its README.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from amplifier_core import AmplifierSession, HookResult
from amplifier_core.module_sources import ModuleNotFoundError as SourceNotFound

import amplifier_module_tool_agent_memory as agent_memory
from amplifier_module_tool_agent_memory.embeddings.providers import CachedEmbedder

STACK = Path(__file__).resolve().parent / "amplifier_stack"
MODULE_ID = "tool-agent-memory"
MODULE_DIR = Path(agent_memory.__file__).resolve().parent.parent
PROMPT = "Release the billing service to staging"
RELEASE = ("release_service", {"service": "billing", "env": "staging"})
DECISION = "Billing is released to staging before production, never straight to production"
RECORDED = ("plan:stored", "plan:reward", "plan:stale", "cache:block_closed", "cache:compacted",
            "context:compaction", "orchestrator:complete", "module:load_failed")


class _FolderSource:
    def __init__(self, path: Path) -> None:
        self.path = path

    def resolve(self) -> Path:
        return self.path


class LocalSources:
    """The app's module-source resolver, reduced to this test: our module from its folder (so the loader
    validates it, mounting it on a MockCoordinator first); anything else falls back to the loader's own
    discovery (the stack's packages on sys.path)."""

    def resolve(self, module_id: str, source_hint: Any = None, profile_hint: Any = None) -> _FolderSource:
        if module_id == MODULE_ID:
            return _FolderSource(MODULE_DIR)
        raise SourceNotFound(module_id)


@dataclass
class Stack:
    """A running session and what the test reads from it."""

    session: Any
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    @property
    def coordinator(self) -> Any:
        return self.session.coordinator

    @property
    def provider(self) -> Any:
        return self.coordinator.get("providers")["scripted"]

    @property
    def context(self) -> Any:
        return self.coordinator.get("context")

    def tool(self, name: str) -> Any:
        return self.coordinator.get("tools")[name]

    def of(self, event: str) -> list[dict[str, Any]]:
        return [data for name, data in self.events if name == event]

    async def turn(self, prompt: str, *responses: Any) -> str:
        """One user turn: the provider answers the loop's requests with ``responses``, in order."""
        self.provider.script = list(responses)
        result: str = await self.session.execute(prompt)
        assert not self.provider.script, "the loop stopped before the script ended"
        return result


StackFactory = Callable[..., Awaitable[Stack]]


@pytest.fixture
async def start_stack(
    root: Path, embedder: CachedEmbedder, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[StackFactory]:
    """Start sessions from a mount plan; each is cleaned up at teardown."""
    monkeypatch.syspath_prepend(str(STACK))
    started: list[Stack] = []

    async def start(result_form: str = "object", config: dict[str, Any] | None = None,
                    hooks: list[dict[str, Any]] | None = None) -> Stack:
        plan = {
            "session": {
                "orchestrator": {"module": "loop-events", "config": {"tool_post_result": result_form}},
                "context": {"module": "context-compacting", "config": {"max_tokens": 1_000_000}},
            },
            "providers": [{"module": "provider-scripted"}],
            "tools": [
                {"module": MODULE_ID, "source": "local folder",
                 "config": {"storage_root": str(root), "agent_identity": "alice", **(config or {})}},
                {"module": "tool-release"},
            ],
            "hooks": hooks or [],
        }
        stack = Stack(AmplifierSession(plan))
        started.append(stack)
        await stack.coordinator.mount("module-source-resolver", LocalSources())

        async def record(event: str, data: dict[str, Any]) -> HookResult:
            stack.events.append((event, dict(data)))
            return HookResult(action="continue")

        for event in RECORDED:
            stack.coordinator.hooks.register(event, record, priority=1000, name=f"test-record-{event}")
        await stack.session.initialize()
        return stack

    yield start
    for stack in started:
        await stack.session.cleanup()


def _calls(*steps: tuple[str, dict[str, Any]]) -> Any:
    from amplifier_module_provider_scripted import calls

    return calls(*steps)


def _say(text: str) -> Any:
    from amplifier_module_provider_scripted import say

    return say(text)


async def _first_turn(stack: Stack) -> None:
    """Look up a plan (miss), note a decision, release: a successful turn."""
    await stack.turn(
        PROMPT,
        _calls(("plan_lookup", {"prompt": PROMPT})),
        _calls(("cache_write", {"kind": "decision", "content": DECISION}), RELEASE),
        _say("Released billing to staging."),
    )


async def _replay_turn(stack: Stack) -> None:
    """The same request again: the plan is found and replayed."""
    await stack.turn(PROMPT, _calls(("plan_lookup", {"prompt": PROMPT})), _calls(RELEASE), _say("Done."))


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
    tool_messages = [m for m in stack.context.messages if m["role"] == "tool"]
    assert any('"hit": false' in m["content"] for m in tool_messages)  # plan_lookup's answer reached the model
    assert any('"block_id"' in m["content"] for m in tool_messages)  # and cache_write's


@pytest.mark.parametrize("result_form", ["object", "dict"])
async def test_a_successful_turn_is_captured_as_a_plan_from_the_loops_events(
    start_stack: StackFactory, result_form: str
) -> None:
    stack = await start_stack(result_form)
    await _first_turn(stack)
    stored = stack.of("plan:stored")
    assert [(s["source"], s["identity"]) for s in stored] == [("auto_capture", "alice")]
    found = await stack.tool("plan_lookup").execute({"prompt": PROMPT})
    assert found.output["hit"] is True
    assert found.output["actions"] == [{"tool": RELEASE[0], "args": RELEASE[1]}]


@pytest.mark.parametrize("result_form", ["object", "dict"])
async def test_a_failed_replay_marks_the_plan_stale(start_stack: StackFactory, result_form: str) -> None:
    stack = await start_stack(result_form)
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
        _calls(("cache_write", {"kind": "warning", "content": "Roll back billing if error rates double"})),
        _say("Noted."),
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
