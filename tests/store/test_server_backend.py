"""The Qdrant server backend (config ``storage: {backend: server, url: ...}``).

No Qdrant server can run here, so the "server" is qdrant-client's local mode (the same client
API, implemented in-process) behind ``server_storage.client_factory``; the translation of the
services' requests, the collection layout, the model record and the tool round trips are real.
Local mode's BM25 supports only the default tokenizer, so its text indexes are unstemmed
(``text_index_params``); a real server gets Edge's stemmed English params.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from data import DISTINCT_FACTS, SERVER, SERVER_URL, T0
from qdrant_client import QdrantClient
from qdrant_client.http import models as qm

from amplifier_module_tool_agent_memory.config import StorageConfig, parse_config
from amplifier_module_tool_agent_memory.embeddings.providers import CachedEmbedder
from amplifier_module_tool_agent_memory.errors import ModelMismatchError
from amplifier_module_tool_agent_memory.identity import ResolvedIdentity
from amplifier_module_tool_agent_memory.memory.models import MemoryStoreInput
from amplifier_module_tool_agent_memory.memory.service import MEMORIES
from amplifier_module_tool_agent_memory.runtime import AgentMemory
from amplifier_module_tool_agent_memory.store import server as server_storage
from amplifier_module_tool_agent_memory.store.contract import IndexSpec
from amplifier_module_tool_agent_memory.store.server import (
    acquire_server_store,
    open_server_store_count,
    release_server_store,
    text_index_params,
)

# Local mode ignores keyword/datetime indexes (it scans); a server uses them.
pytestmark = pytest.mark.filterwarnings("ignore:Payload indexes have no effect:UserWarning")

URL = SERVER_URL
TOOL_NAMES = (
    "memory_store", "memory_search", "memory_get", "memory_forget", "memory_list", "cache_write", "cache_pack",
    "plan_store", "plan_lookup",
)


def collection_names(client: QdrantClient) -> set[str]:
    return {c.name for c in client.get_collections().collections}


async def store(call: Any, tools: dict[str, Any], content: str, **fields: Any) -> str:
    out = await call(tools["memory_store"], {"content": content, **fields})
    assert out["created"] is True, out
    return str(out["id"])


async def search_contents(call: Any, tools: dict[str, Any], query: str, **fields: Any) -> list[str]:
    out = await call(tools["memory_search"], {"query": query, **fields})
    return [r["content"] for r in out["results"]]


# Config


@pytest.mark.parametrize("storage", [{"backend": "server"}, {"backend": "server", "url": None}])
async def test_server_backend_without_url_fails_every_tool_naming_the_field(
    mount_tools: Callable[..., Any], storage: dict[str, Any], call: Any
) -> None:
    tools, _ = await mount_tools(storage=storage)
    assert set(TOOL_NAMES) <= set(tools)
    for tool in tools.values():
        err = await call.error(tool, {})
        assert err["type"] == "config_error"
        assert "storage.url" in err["message"] and "required when backend is 'server'" in err["message"]


async def test_server_url_without_scheme_is_refused(mount_tools: Callable[..., Any], call: Any) -> None:
    tools, _ = await mount_tools(storage={"backend": "server", "url": "localhost:6333"})
    err = await call.error(tools["memory_store"], {"content": "x"})
    assert "storage.url" in err["message"] and "http://" in err["message"]


async def test_collection_prefix_with_the_separator_is_refused(mount_tools: Callable[..., Any], call: Any) -> None:
    tools, _ = await mount_tools(storage={"backend": "server", "url": URL, "collection_prefix": "team__a"})
    err = await call.error(tools["memory_list"], {})
    assert "storage.collection_prefix" in err["message"] and "'__'" in err["message"]


def test_edge_stays_the_default_backend() -> None:
    assert StorageConfig().backend == "edge"


# Long-term memory through the tools


async def test_memory_round_trip_through_the_tools(server: Any, mount_tools: Callable[..., Any], call: Any) -> None:
    tools, _ = await mount_tools(**SERVER)
    gateway = await store(call, tools, "The API gateway runs on port 8443", kind="fact", tags=["infra"])
    billing = await store(call, tools, DISTINCT_FACTS[0])

    memory = (await call(tools["memory_get"], {"id": gateway}))["memory"]
    assert memory["content"] == "The API gateway runs on port 8443"
    assert memory["tags"] == ["infra"]
    assert (await search_contents(call, tools, "which port does the gateway listen on"))[0] == memory["content"]
    listed = await call(tools["memory_list"], {})
    assert {m["id"] for m in listed["memories"]} == {gateway, billing}

    deleted = (await call(tools["memory_forget"], {"id": gateway}))["deleted"]
    assert deleted["id"] == gateway
    assert (await call.error(tools["memory_get"], {"id": gateway}))["type"] == "not_found"
    assert "The API gateway runs on port 8443" not in await search_contents(call, tools, "gateway port")


async def test_an_exact_duplicate_is_merged(server: Any, mount_tools: Callable[..., Any], call: Any) -> None:
    tools, _ = await mount_tools(**SERVER)
    first = await store(call, tools, "Deploys are frozen every Friday after 3pm.")
    again = await call(tools["memory_store"], {"content": "deploys are frozen   every friday after 3pm."})
    assert again["duplicate"] is True and again["id"] == first


async def test_search_filters_by_kind_tags_and_time(
    server: Any, make_runtime: Callable[..., AgentMemory], make_clock: Any, call: Any, runtime_tools: Any
) -> None:
    clock = make_clock()
    rt = make_runtime(**SERVER)
    rt.clock = clock
    tools = runtime_tools(rt)
    await store(call, tools, "We decided to drop support for Python 3.9 in March.", kind="decision", tags=["python"])
    clock.advance(days=2)
    await store(call, tools, "The CI pipeline caches pip wheels between runs.", kind="fact", tags=["ci"])

    assert await search_contents(call, tools, "python pip", kind="decision") == [
        "We decided to drop support for Python 3.9 in March."
    ]
    ci_fact = "The CI pipeline caches pip wheels between runs."
    assert await search_contents(call, tools, "python pip", tags=["ci"]) == [ci_fact]
    since = (T0.replace(hour=12)).isoformat()
    assert await search_contents(call, tools, "python pip", since=since) == [ci_fact]


async def test_list_pages_newest_first(
    server: Any, make_runtime: Callable[..., AgentMemory], call: Any, make_clock: Any, runtime_tools: Any
) -> None:
    clock = make_clock()
    rt = make_runtime(**SERVER)
    rt.clock = clock
    tools = runtime_tools(rt)
    for fact in DISTINCT_FACTS[:5]:
        await store(call, tools, fact)
        clock.advance(minutes=1)
    first = await call(tools["memory_list"], {"limit": 2})
    second = await call(tools["memory_list"], {"limit": 2, "before": first["next_before"]})
    rest = await call(tools["memory_list"], {"limit": 2, "before": second["next_before"]})
    contents = [m["content"] for page in (first, second, rest) for m in page["memories"]]
    assert contents == list(reversed(DISTINCT_FACTS[:5]))
    assert rest["next_before"] is None


async def test_search_ranks_like_the_embedded_store(
    server: Any, make_runtime: Callable[..., AgentMemory], runtime_tools: Any, call: Any
) -> None:
    edge = runtime_tools(make_runtime(identity="edge-twin"))
    remote = runtime_tools(make_runtime(identity="server-twin", **SERVER))
    for fact in DISTINCT_FACTS:
        await store(call, edge, fact)
        await store(call, remote, fact)
    for query in ("where do invoices live", "lunch allergy", "newsletter schedule", "password hashing", "Lisbon"):
        assert (await search_contents(call, remote, query))[0] == (await search_contents(call, edge, query))[0], query


async def test_memories_survive_closing_every_handle(
    server: Any, make_runtime: Callable[..., AgentMemory], call: Any, runtime_tools: Any
) -> None:
    first = make_runtime(**SERVER)
    memory_id = await store(call, runtime_tools(first), DISTINCT_FACTS[3])
    first.close()
    assert open_server_store_count() == 0

    reopened = runtime_tools(make_runtime(**SERVER))
    assert (await call(reopened["memory_get"], {"id": memory_id}))["memory"]["content"] == DISTINCT_FACTS[3]


# Isolation on one shared server


@pytest.fixture
async def alice_and_bob(
    server: Any, mount_tools: Callable[..., Any], call: Any
) -> tuple[dict[str, Any], dict[str, Any], str]:
    alice, _ = await mount_tools(agent_identity="alice", **SERVER)
    bob, _ = await mount_tools(agent_identity="bob", **SERVER)
    secret = await store(call, alice, "Alice's recovery phrase is kept in the blue folder")
    await store(call, bob, "Bob waters the office plants on Mondays")
    return alice, bob, secret


async def test_each_identity_has_its_own_server_collections(alice_and_bob: Any, server: Any) -> None:
    names = collection_names(server())
    assert {"agent_memory__alice__memories", "agent_memory__bob__memories"} <= names


async def test_search_and_list_never_show_another_identitys_memory(alice_and_bob: Any, call: Any) -> None:
    _, bob, _ = alice_and_bob
    found = await search_contents(call, bob, "recovery phrase")
    assert "Alice's recovery phrase is kept in the blue folder" not in found
    listed = (await call(bob["memory_list"], {}))["memories"]
    assert [m["content"] for m in listed] == ["Bob waters the office plants on Mondays"]


async def test_another_identitys_id_is_not_found_and_nothing_is_deleted(alice_and_bob: Any, call: Any) -> None:
    alice, bob, secret = alice_and_bob
    assert (await call.error(bob["memory_get"], {"id": secret}))["type"] == "not_found"
    assert (await call.error(bob["memory_forget"], {"id": secret}))["type"] == "not_found"
    assert (await call(alice["memory_get"], {"id": secret}))["memory"]["id"] == secret


async def test_collection_prefixes_separate_deployments_of_one_identity(
    server: Any, mount_tools: Callable[..., Any], call: Any
) -> None:
    team_a, _ = await mount_tools(storage={"backend": "server", "url": URL, "collection_prefix": "team-a"})
    team_b, _ = await mount_tools(storage={"backend": "server", "url": URL, "collection_prefix": "team-b"})
    await store(call, team_a, DISTINCT_FACTS[4])
    assert (await call(team_b["memory_list"], {}))["memories"] == []
    assert {"team-a__alice__memories", "team-b__alice__memories"} <= collection_names(server())


# Model record


async def test_a_store_written_with_another_model_is_refused(
    server: Any, mount_tools: Callable[..., Any], embedder: CachedEmbedder, call: Any
) -> None:
    config = StorageConfig(backend="server", url=URL)
    other = acquire_server_store(config, "alice", "other-embedding-model", embedder.dim)
    other.collection(MEMORIES)
    release_server_store(other)

    tools, _ = await mount_tools(**SERVER)
    err = await call.error(tools["memory_store"], {"content": "anything"})
    assert err["type"] == "model_mismatch"
    assert "other-embedding-model" in err["message"] and embedder.model_id in err["message"]
    assert "agent_memory__alice__memories" in err["message"]


def test_a_store_written_with_another_model_can_still_be_exported(
    server: Any, root: Path, embedder: CachedEmbedder
) -> None:
    rt = AgentMemory(parse_config({"storage_root": str(root), **SERVER}), ResolvedIdentity("alice", "config"))
    stored = rt.memory().store(MemoryStoreInput(content="The nightly backup runs at 02:00 UTC", kind="fact"))
    client = server()
    name = rt.memory().coll.server_name
    record = client.get_collection(name).config.metadata[server_storage.META_KEY]
    # As if another model (no longer configured) had written it.
    client.update_collection(name, metadata={server_storage.META_KEY: {**record, "model_id": "other-embedding-model"}})
    rt.close()
    refused = AgentMemory(parse_config({"storage_root": str(root), **SERVER}), ResolvedIdentity("alice", "config"))
    with pytest.raises(ModelMismatchError):
        refused.memory()
    refused.close()

    exporter = AgentMemory(
        parse_config({"storage_root": str(root), **SERVER}),
        ResolvedIdentity("alice", "config"),
        adopt_recorded_model=True,
    )
    try:
        assert [r.id for r in exporter.memory().export()] == [stored.id]
        assert exporter.store().model_id == "other-embedding-model"
    finally:
        exporter.close()


async def test_a_foreign_collection_with_our_name_is_refused(
    server: Any, mount_tools: Callable[..., Any], call: Any
) -> None:
    config = StorageConfig(backend="server", url=URL)
    store_ = acquire_server_store(config, "alice", "m", 4)
    vectors = qm.VectorParams(size=4, distance=qm.Distance.COSINE)
    store_.client.create_collection("agent_memory__alice__memories", vectors_config=vectors)
    release_server_store(store_)

    tools, _ = await mount_tools(**SERVER)
    err = await call.error(tools["memory_list"], {})
    assert err["type"] == "config_error" and "collection_prefix" in err["message"]


# Cache and plans on the server


async def test_cache_write_then_pack_round_trip(
    server: Any, make_runtime: Callable[..., AgentMemory], call: Any, runtime_tools: Any
) -> None:
    tools = runtime_tools(make_runtime(cache={"dedup_threshold": 1.0}, **SERVER))
    await call(tools["cache_write"], {"kind": "decision", "content": "Use argon2id for password hashing"})
    await call(tools["cache_write"], {"kind": "warning", "content": "Never log request bodies"})
    pack = await call(tools["cache_pack"], {})
    assert any("argon2id" in line for line in pack["decisions"])
    assert any("request bodies" in line for line in pack["warnings"])


async def test_cache_items_are_read_back_after_reopening(
    server: Any, make_runtime: Callable[..., AgentMemory], call: Any, runtime_tools: Any
) -> None:
    first = make_runtime(cache={"dedup_threshold": 1.0}, **SERVER)
    await call(runtime_tools(first)["cache_write"], {"kind": "fact", "content": DISTINCT_FACTS[8]})
    first.close()
    reopened = runtime_tools(make_runtime(cache={"dedup_threshold": 1.0}, **SERVER))
    pack = await call(reopened["cache_pack"], {})
    assert any("warehouse" in line for line in pack["facts"])


async def test_plan_store_then_lookup_hits(server: Any, mount_tools: Callable[..., Any], call: Any) -> None:
    tools, _ = await mount_tools(**SERVER)
    actions = [{"tool": "edit_file", "args": {"path": "config/audio.json", "set": {"music_volume": 0.5}}}]
    prompt = "Set the background music volume to 50 percent"
    stored = await call(tools["plan_store"], {"prompt": prompt, "actions": actions})
    hit = await call(tools["plan_lookup"], {"prompt": "set the background music volume to 50 percent."})
    assert hit["hit"] is True and hit["plan_id"] == stored["plan_id"] and hit["actions"] == actions


def test_index_status_is_read_from_the_server_and_optimize_leaves_it_to_the_server(
    server: Any, embedder: CachedEmbedder
) -> None:
    store_ = acquire_server_store(StorageConfig(backend="server", url=URL), "alice", embedder.model_id, embedder.dim)
    try:
        coll = store_.collection(MEMORIES)
        coll.upsert([(str(uuid.uuid4()), {"dense": [1.0] * embedder.dim, "ctx": [1.0] * embedder.dim}, {})])
        coll.optimize()
        # Local mode never builds an HNSW index (indexed_vectors_count 0): the one point is unindexed.
        assert coll.unindexed_count() == 1
        assert coll.count() == 1
    finally:
        release_server_store(store_)


async def test_plan_index_status_and_build_go_through_the_server(
    server: Any, make_runtime: Callable[..., AgentMemory], call: Any, runtime_tools: Any
) -> None:
    rt = make_runtime(**SERVER)
    tools = runtime_tools(rt)
    prompt = "Make the player move faster"
    actions = [{"tool": "edit_file", "args": {"path": "src/Player.cs", "find": "5f", "replace": "7.5f"}}]
    await call(tools["plan_store"], {"prompt": prompt, "actions": actions})
    assert rt.plans().unindexed() == 1  # local mode never builds an HNSW index
    assert rt.plans().build_index() > 0.0  # due (one unindexed plan), so it ran; the server indexes by itself
    assert (await call(tools["plan_lookup"], {"prompt": prompt}))["hit"] is True


# The real client path (no server listening)


async def test_an_unreachable_server_is_reported_with_its_url(mount_tools: Callable[..., Any], call: Any) -> None:
    url = "http://127.0.0.1:9"  # the discard port: nothing answers HTTP there
    tools, _ = await mount_tools(storage={"backend": "server", "url": url, "timeout_s": 2})
    err = await call.error(tools["memory_store"], {"content": "anything"})
    assert err["type"] == "store_unavailable"
    assert url in err["message"] and "storage.url" in err["message"]


def test_a_server_gets_stemmed_english_text_indexes_and_local_mode_the_default_tokenizer(tmp_path: Path) -> None:
    remote = server_storage.build_client(StorageConfig(backend="server", url="http://127.0.0.1:9", timeout_s=1))
    params = text_index_params(remote)
    assert isinstance(params.stemmer, qm.SnowballParams) and params.stemmer.language == qm.SnowballLanguage.ENGLISH
    assert params.stopwords is not None and params.scoring
    local = text_index_params(QdrantClient(location=":memory:"))
    assert local.stemmer is None and local.stopwords is None and local.scoring


def test_server_payload_indexes_get_hnsw_links_only_where_the_spec_asks() -> None:
    remote = server_storage.build_client(StorageConfig(backend="server", url="http://127.0.0.1:9", timeout_s=1))
    assert server_storage._index_schema(remote, IndexSpec("kind", "keyword", hnsw=True)).enable_hnsw is True
    assert server_storage._index_schema(remote, IndexSpec("seq", "integer")).enable_hnsw is False
    assert server_storage._index_schema(remote, IndexSpec("created_at", "datetime", hnsw=True)).enable_hnsw is True
    assert text_index_params(remote).enable_hnsw is False
