"""Duplicates: an exact duplicate returns the existing memory; a restatement of the same kind (the
comparison says the same values in other words) refreshes it instead of adding a copy; anything
of another kind, or under the compare threshold, is new. Changes: tests/memory/test_memory_updates.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from amplifier_module_tool_agent_memory.config import MemorySearchConfig
from amplifier_module_tool_agent_memory.embeddings.providers import CachedEmbedder
from amplifier_module_tool_agent_memory.memory import service as service_module
from amplifier_module_tool_agent_memory.runtime import AgentMemory

ORIGINAL = "We chose PostgreSQL for the billing service."
NEAR = "For the billing service we chose PostgreSQL."  # a restatement: cosine about 0.97 with ORIGINAL
OTHER = "We chose MySQL for the billing service."  # a change: cosine about 0.81 with ORIGINAL


async def _store(call: Any, tools: dict[str, Any], content: str, **fields: Any) -> dict[str, Any]:
    return await call(tools["memory_store"], {"content": content, **fields})


async def _count(call: Any, tools: dict[str, Any]) -> int:
    return int((await call(tools["memory_list"], {}))["count"])


def test_the_test_texts_are_compared_under_the_default_threshold(embedder: CachedEmbedder) -> None:
    original, near, other = embedder.embed_documents([ORIGINAL, NEAR, OTHER])
    threshold = MemorySearchConfig().near_duplicate_threshold
    assert sum(a * b for a, b in zip(original, near, strict=True)) >= max(threshold, 0.95)
    assert sum(a * b for a, b in zip(original, other, strict=True)) >= threshold


@pytest.mark.parametrize(
    "variant",
    [ORIGINAL, ORIGINAL.upper(), f"  {ORIGINAL}  ", ORIGINAL.replace(" ", "\n\t "), ORIGINAL.lower()],
)
async def test_exact_duplicate_returns_the_existing_id(tools: dict[str, Any], variant: str, call: Any) -> None:
    first = await _store(call, tools, ORIGINAL, kind="decision")
    again = await _store(call, tools, variant, kind="decision")
    assert again["id"] == first["id"]
    assert again["duplicate"] is True
    assert again["created"] is False
    assert await _count(call, tools) == 1


async def test_an_exact_duplicate_starts_no_embedding(
    make_runtime: Callable[..., AgentMemory], runtime_tools: Any, call: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A context window's run starts at the write (a run that starts cannot be stopped, and competes with the next
    # call for a core): a duplicate, answered before any write, starts none, on either backend (a server's reads
    # are round trips; its store started the run first until session 10).
    rt = make_runtime()
    tools = runtime_tools(rt)
    await _store(call, tools, "Deploys go out on Tuesdays.")  # a thread tail: the next store has a context window
    first = await _store(call, tools, ORIGINAL)
    pool = service_module._background()
    submitted: list[Any] = []

    class Recorded:
        def submit(self, fn: Any, *args: Any) -> Any:
            submitted.append(args)
            return pool.submit(fn, *args)

    monkeypatch.setattr(service_module, "_background", Recorded)
    again = await _store(call, tools, ORIGINAL.upper())
    assert again["id"] == first["id"] and again["duplicate"] is True
    assert submitted == []
    second = await _store(call, tools, NEAR.replace("billing", "invoicing"))
    assert second["created"] is True
    assert submitted == [([f"{ORIGINAL}\n{NEAR.replace('billing', 'invoicing')}"],)]  # a new one's context window


async def test_exact_duplicate_keeps_the_original_text(tools: dict[str, Any], call: Any) -> None:
    first = await _store(call, tools, ORIGINAL)
    await _store(call, tools, ORIGINAL.upper())
    memory = (await call(tools["memory_get"], {"id": first["id"]}))["memory"]
    assert memory["content"] == ORIGINAL


async def test_a_restatement_of_the_same_kind_refreshes_instead_of_adding(
    timed_tools: dict[str, Any], clock: Any, call: Any
) -> None:
    first = await _store(call, timed_tools, ORIGINAL, kind="decision", importance=0.4)
    clock.advance(days=3)
    near = await _store(call, timed_tools, NEAR, kind="decision", importance=0.8)
    assert near["id"] == first["id"]
    assert (near["created"], near["duplicate"], near["near_duplicate"]) == (False, True, True)
    assert near["similarity"] >= 0.95
    assert "says the same" in near["note"]
    assert await _count(call, timed_tools) == 1
    memory = (await call(timed_tools["memory_get"], {"id": first["id"]}))["memory"]
    assert memory["content"] == ORIGINAL
    assert memory["importance"] == 0.8
    assert memory["created_at"] == "2026-01-10T09:00:00.000000Z"
    assert memory["updated_at"] == "2026-01-13T09:00:00.000000Z"


async def test_near_duplicate_never_lowers_importance(tools: dict[str, Any], call: Any) -> None:
    first = await _store(call, tools, ORIGINAL, kind="decision", importance=0.9)
    await _store(call, tools, NEAR, kind="decision", importance=0.1)
    memory = (await call(tools["memory_get"], {"id": first["id"]}))["memory"]
    assert memory["importance"] == 0.9


async def test_near_duplicate_of_a_different_kind_is_stored_separately(tools: dict[str, Any], call: Any) -> None:
    first = await _store(call, tools, ORIGINAL, kind="decision")
    other = await _store(call, tools, NEAR, kind="fact")
    assert other["created"] is True
    assert other["id"] != first["id"]
    assert "near_duplicate" not in other
    assert await _count(call, tools) == 2


async def test_a_changed_memory_is_stored_separately(tools: dict[str, Any], call: Any) -> None:
    first = await _store(call, tools, ORIGINAL, kind="decision")
    other = await _store(call, tools, OTHER, kind="decision")
    assert other["created"] is True
    assert other["id"] != first["id"]
    assert await _count(call, tools) == 2


async def test_the_near_duplicate_threshold_is_configurable(mount_tools: Callable[..., Any], call: Any) -> None:
    tools, _ = await mount_tools(memory={"near_duplicate_threshold": 0.995})
    await _store(call, tools, ORIGINAL, kind="decision")
    near = await _store(call, tools, NEAR, kind="decision")
    assert near["created"] is True
    assert await _count(call, tools) == 2


# A restatement the comparison decides is the same, at a cosine (about 0.83) under the 0.88 floor merges used
# to need: it merges, since the merged memory keeps the newer wording.
PREFERENCE = "I drink my coffee black."
PREFERENCE_RESTATED = "Black coffee is how I drink it."


async def test_a_decided_restatement_merges_whatever_its_cosine(tools: dict[str, Any], call: Any) -> None:
    first = await _store(call, tools, PREFERENCE, kind="preference")
    again = await _store(call, tools, PREFERENCE_RESTATED, kind="preference")
    assert again["id"] == first["id"]
    assert again["near_duplicate"] is True
    assert again["similarity"] < 0.88


async def test_a_merged_restatement_keeps_its_wording_on_the_memory(tools: dict[str, Any], call: Any) -> None:
    first = await _store(call, tools, ORIGINAL, kind="decision")
    await _store(call, tools, NEAR, kind="decision")
    memory = (await call(tools["memory_get"], {"id": first["id"]}))["memory"]
    assert (memory["content"], memory["restated"]) == (ORIGINAL, [NEAR])


async def test_a_wording_is_kept_once(tools: dict[str, Any], call: Any) -> None:
    first = await _store(call, tools, ORIGINAL, kind="decision")
    await _store(call, tools, NEAR, kind="decision")
    await _store(call, tools, NEAR.upper(), kind="decision")
    memory = (await call(tools["memory_get"], {"id": first["id"]}))["memory"]
    assert memory["restated"] == [NEAR]


async def test_export_and_import_keep_the_restated_wordings(
    make_runtime: Callable[..., AgentMemory], call: Any, runtime_tools: Any
) -> None:
    source = make_runtime()
    first = await _store(call, runtime_tools(source), ORIGINAL, kind="decision")
    await _store(call, runtime_tools(source), NEAR, kind="decision")
    target = make_runtime(identity="bob")
    target.memory().import_records(list(source.memory().export()))
    memory = (await call(runtime_tools(target)["memory_get"], {"id": first["id"]}))["memory"]
    assert memory["restated"] == [NEAR]
