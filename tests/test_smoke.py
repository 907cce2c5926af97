"""The module mounts and a memory round-trips through the tools."""

from __future__ import annotations

from typing import Any


async def test_stored_memory_is_found_by_search(tools: dict[str, Any]) -> None:
    stored = await tools["memory_store"].execute({"content": "We chose PostgreSQL for billing", "kind": "decision"})
    assert stored.success, stored.error
    found = await tools["memory_search"].execute({"query": "which database does billing use?"})
    assert found.success, found.error
    assert found.output["results"][0]["id"] == stored.output["id"]
