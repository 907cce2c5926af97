"""Identity isolation: one identity never sees, reads or deletes another's memories, through any tool."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

SECRET_PLAN = "Alice plans to migrate the billing database to PostgreSQL in May"


@pytest.fixture
async def alice_and_bob(mount_tools: Callable[..., Any], call: Any) -> tuple[dict[str, Any], dict[str, Any], str]:
    """Two identities mounted on the same storage root; Alice has one memory."""
    alice, _ = await mount_tools(agent_identity="alice")
    bob, _ = await mount_tools(agent_identity="bob")
    stored = await call(alice["memory_store"], {"content": SECRET_PLAN, "tags": ["billing"], "kind": "decision"})
    return alice, bob, str(stored["id"])


async def test_search_never_returns_another_identitys_memory(alice_and_bob: Any, call: Any) -> None:
    _, bob, _ = alice_and_bob
    for args in (
        {"query": "billing database migration"},
        {"query": SECRET_PLAN},
        {"query": "PostgreSQL", "tags": ["billing"], "kind": "decision", "limit": 20},
    ):
        assert (await call(bob["memory_search"], args))["results"] == []


async def test_get_by_another_identitys_id_is_not_found(alice_and_bob: Any, call: Any) -> None:
    _, bob, alice_id = alice_and_bob
    error = await call.error(bob["memory_get"], {"id": alice_id})
    assert error["type"] == "not_found"
    assert error["identity"] == "bob"
    assert SECRET_PLAN not in repr(error)


async def test_forget_by_another_identitys_id_is_not_found_and_deletes_nothing(alice_and_bob: Any, call: Any) -> None:
    alice, bob, alice_id = alice_and_bob
    error = await call.error(bob["memory_forget"], {"id": alice_id})
    assert error["type"] == "not_found"
    memory = (await call(alice["memory_get"], {"id": alice_id}))["memory"]
    assert memory["content"] == SECRET_PLAN


async def test_list_shows_only_the_identitys_own_memories(alice_and_bob: Any, call: Any) -> None:
    alice, bob, alice_id = alice_and_bob
    bob_id = (await call(bob["memory_store"], {"content": "Bob prefers dark mode"}))["id"]
    assert [m["id"] for m in (await call(bob["memory_list"], {}))["memories"]] == [bob_id]
    assert [m["id"] for m in (await call(alice["memory_list"], {}))["memories"]] == [alice_id]


async def test_the_same_text_is_not_a_duplicate_across_identities(alice_and_bob: Any, call: Any) -> None:
    _, bob, alice_id = alice_and_bob
    out = await call(bob["memory_store"], {"content": SECRET_PLAN, "kind": "decision"})
    assert out["created"] is True
    assert out["id"] != alice_id


@pytest.mark.edge_only("a folder per identity is the embedded store's layout; on a server each identity has its own "
                       "collections (tests/store/test_server_backend.py)")
async def test_each_identity_has_its_own_store_folder(alice_and_bob: Any, root: Any, call: Any) -> None:
    _, bob, _ = alice_and_bob
    await call(bob["memory_list"], {})
    assert (root / "alice" / "store.json").is_file()
    assert (root / "bob" / "store.json").is_file()
