"""judge: provider settles a near memory the comparison could not decide (issue 16); any failure or timeout
leaves it to the agent (``possible_updates``).

The provider is a scripted stand-in mounted as the session's provider (no network): it answers UPDATE, SAME,
DIFFERENT, raises, or sleeps past the judge's timeout. None of these texts is in the shared data files.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from amplifier_core import AmplifierSession

import amplifier_module_tool_agent_memory as agent_memory

if TYPE_CHECKING:
    from conftest import ScriptedProvider

# The comparison cannot decide this pair (a loose rewording with another name): possible_updates without a judge.
OLD = "My barber is Tony at Main Street Cuts."
NEW = "My barber is Luis at the salon by the station."
# Decided without the judge: a change (linked) and an unrelated memory (nothing near).
PRINTER_OLD = "The plotter on the third floor prints at 600 dpi."
PRINTER_NEW = "The plotter on the third floor prints at 1200 dpi."
UNRELATED = "The quarterly tax filing is due at the end of April."


async def _store_both(
    call: Any, provider: ScriptedProvider, root: Path, first: str, second: str, **config: Any
) -> tuple[ dict[str, Any], dict[str, Any], dict[str, Any] ]:
    """Store ``first`` then ``second`` with ``judge: provider``: (first answer, second answer, memory_list)."""
    session = AmplifierSession({"session": {"orchestrator": "loop-basic", "context": "context-simple"}})
    await session.coordinator.mount("providers", provider, name="scripted")
    cleanup = await agent_memory.mount(
        session.coordinator, {"storage_root": str(root), "agent_identity": "alice", "judge": "provider", **config}
    )
    try:
        tools = session.coordinator.get("tools")
        one = await call(tools["memory_store"], {"content": first, "kind": "fact"})
        two = await call(tools["memory_store"], {"content": second, "kind": "fact"})
        return one, two, await call(tools["memory_list"], {})
    finally:
        await cleanup()


async def test_the_provider_judging_an_update_links_it_and_is_named(
    root: Path, scripted_provider: type[ScriptedProvider], call: Any
) -> None:
    provider = scripted_provider("UPDATE")
    old, new, listed = await _store_both(call, provider, root, OLD, NEW)
    assert new["created"] is True and "possible_updates" not in new
    assert new["superseded"]["id"] == old["id"] and new["superseded"]["judged_by"] == "provider"
    assert new["superseded"]["differences"] == [
        "content: tony -> luis",
        "content: main street cuts -> salon by station",
    ]
    assert listed["count"] == 2
    [(request, kwargs)] = provider.requests
    assert request.metadata == {"stream": False} and kwargs == {"extended_thinking": False}
    text = str(request.messages[0].content)
    assert OLD in text and NEW in text and "UPDATE" in text


async def test_the_provider_judging_the_same_merges_it_and_is_named(
    root: Path, scripted_provider: type[ScriptedProvider], call: Any
) -> None:
    old, new, listed = await _store_both(call, scripted_provider("Same."), root, OLD, NEW)
    assert (new["created"], new["id"]) == (False, old["id"])
    assert new["merged"] == {"id": old["id"], "content": OLD, "wording": NEW, "judged_by": "provider"}
    assert listed["count"] == 1


async def test_the_provider_judging_another_fact_offers_nothing(
    root: Path, scripted_provider: type[ScriptedProvider], call: Any
) -> None:
    old, new, listed = await _store_both(call, scripted_provider("DIFFERENT"), root, OLD, NEW)
    assert new["created"] is True and new["id"] != old["id"]
    assert not {"possible_updates", "superseded", "merged"} & new.keys()
    assert listed["count"] == 2


async def test_a_failing_provider_falls_back_to_possible_updates(
    root: Path, scripted_provider: type[ScriptedProvider], call: Any
) -> None:
    old, new, _ = await _store_both(call, scripted_provider(None), root, OLD, NEW)
    assert [p["id"] for p in new["possible_updates"]] == [old["id"]] and "superseded" not in new


async def test_an_unclear_answer_falls_back_to_possible_updates(
    root: Path, scripted_provider: type[ScriptedProvider], call: Any
) -> None:
    old, new, _ = await _store_both(call, scripted_provider("It depends"), root, OLD, NEW)
    assert [p["id"] for p in new["possible_updates"]] == [old["id"]] and "superseded" not in new


async def test_a_provider_past_its_timeout_falls_back_to_possible_updates(
    root: Path, scripted_provider: type[ScriptedProvider], call: Any
) -> None:
    old, new, _ = await _store_both(call, scripted_provider("UPDATE", delay=5.0), root, OLD, NEW, judge_timeout_s=0.2)
    assert [p["id"] for p in new["possible_updates"]] == [old["id"]] and "superseded" not in new


async def test_what_the_comparison_decides_never_asks_the_provider(
    root: Path, scripted_provider: type[ScriptedProvider], call: Any
) -> None:
    provider = scripted_provider("SAME")
    old, new, _ = await _store_both(call, provider, root, PRINTER_OLD, PRINTER_NEW)
    assert new["superseded"]["id"] == old["id"] and "judged_by" not in new["superseded"]
    _, other, _ = await _store_both(call, provider, root / "other", PRINTER_OLD, UNRELATED)
    assert not {"possible_updates", "superseded", "merged"} & other.keys()
    assert provider.requests == []
