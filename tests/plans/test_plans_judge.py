"""judge: provider settles a near plan certification left open; any failure or timeout leaves it to the agent.

The provider is a scripted stand-in mounted as the session's provider (no network): it answers SAME,
DIFFERENT, raises, or sleeps past the judge's timeout.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from amplifier_core import AmplifierSession

import amplifier_module_tool_agent_memory as agent_memory

if TYPE_CHECKING:
    from conftest import ScriptedProvider

STORED = "Compress the nightly log archive with gzip"
ACTIONS = [{"tool": "run_command", "args": {"command": "gzip -9 /var/log/nightly.tar"}}]
LOOSE = "Use gzip to compress the nightly log archive"


async def _lookup_with(call: Any, provider: ScriptedProvider, root: Path, prompt: str, **config: Any) -> dict[str, Any]:
    session = AmplifierSession({"session": {"orchestrator": "loop-basic", "context": "context-simple"}})
    await session.coordinator.mount("providers", provider, name="scripted")
    cleanup = await agent_memory.mount(
        session.coordinator, {"storage_root": str(root), "agent_identity": "alice", "judge": "provider", **config}
    )
    try:
        tools = session.coordinator.get("tools")
        await call(tools["plan_store"], {"prompt": STORED, "actions": ACTIONS})
        return await call(tools["plan_lookup"], {"prompt": prompt})
    finally:
        await cleanup()


async def test_the_provider_judging_same_makes_a_hit_it_is_named_in(
    root: Path, scripted_provider: type[ScriptedProvider], call: Any
) -> None:
    provider = scripted_provider("SAME")
    out = await _lookup_with(call, provider, root, LOOSE)
    assert (out["answer"], out["actions"], out["decided_by"]) == ("hit", ACTIONS, "provider")
    request, kwargs = provider.requests[0]
    assert request.metadata == {"stream": False} and kwargs == {"extended_thinking": False}
    text = str(request.messages[0].content)
    assert STORED in text and LOOSE in text


async def test_the_provider_judging_different_leaves_a_candidate(
    root: Path, scripted_provider: type[ScriptedProvider], call: Any
) -> None:
    out = await _lookup_with(call, scripted_provider("DIFFERENT."), root, LOOSE)
    assert out["answer"] == "candidate"
    assert out["candidates"][0]["judged_by"] == "provider"


async def test_a_failing_provider_falls_back_to_the_agent(
    root: Path, scripted_provider: type[ScriptedProvider], call: Any
) -> None:
    out = await _lookup_with(call, scripted_provider(None), root, LOOSE)
    assert out["answer"] == "candidate" and "judged_by" not in out["candidates"][0]


async def test_an_unclear_answer_falls_back_to_the_agent(
    root: Path, scripted_provider: type[ScriptedProvider], call: Any
) -> None:
    out = await _lookup_with(call, scripted_provider("Probably, yes"), root, LOOSE)
    assert out["answer"] == "candidate" and "judged_by" not in out["candidates"][0]


async def test_a_provider_past_its_timeout_falls_back_to_the_agent(
    root: Path, scripted_provider: type[ScriptedProvider], call: Any
) -> None:
    out = await _lookup_with(call, scripted_provider("SAME", delay=5.0), root, LOOSE, judge_timeout_s=0.2)
    assert out["answer"] == "candidate" and "judged_by" not in out["candidates"][0]


async def test_a_certified_request_and_an_unrelated_one_never_ask_the_provider(
    root: Path, scripted_provider: type[ScriptedProvider], call: Any
) -> None:
    provider = scripted_provider("SAME")
    same = await _lookup_with(call, provider, root, "Please compress the nightly log archive with gzip.")
    unrelated = await _lookup_with(call, provider, root, "What is the weather like in Lisbon tomorrow?")
    assert (same["answer"], unrelated["answer"]) == ("hit", "miss")
    assert provider.requests == []
