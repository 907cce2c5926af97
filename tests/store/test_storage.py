"""The embedded store: persistence across reopen, one shared handle per process, a second
process refused cleanly, and a store written with another model refused with the way out."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from data import DISTINCT_FACTS

from amplifier_module_tool_agent_memory.embeddings.providers import LOCAL_DIM, LOCAL_MODEL_ID, CachedEmbedder
from amplifier_module_tool_agent_memory.errors import ModelMismatchError
from amplifier_module_tool_agent_memory.memory.models import MemoryListInput, MemorySearchInput, MemoryStoreInput
from amplifier_module_tool_agent_memory.runtime import AgentMemory
from amplifier_module_tool_agent_memory.store.edge import acquire_store, open_store_count, release_store

# Opens alice's store under argv[1] the way a session does, optionally stores argv[2], and prints
# what happened as one JSON line (an error is reported, never raised).
OTHER_PROCESS = """
import json, sys
from amplifier_module_tool_agent_memory.config import parse_config
from amplifier_module_tool_agent_memory.errors import AgentMemoryError
from amplifier_module_tool_agent_memory.identity import ResolvedIdentity
from amplifier_module_tool_agent_memory.memory.models import MemoryListInput, MemoryStoreInput
from amplifier_module_tool_agent_memory.runtime import AgentMemory

rt = AgentMemory(parse_config({"storage_root": sys.argv[1]}), ResolvedIdentity("alice", "config"), session_id="p2")
try:
    service = rt.memory()
    if len(sys.argv) > 2:
        service.store(MemoryStoreInput(content=sys.argv[2]))
    print(json.dumps({"ok": True, "count": service.list(MemoryListInput(limit=100))["count"]}))
except AgentMemoryError as exc:
    print(json.dumps({"ok": False, "type": type(exc).__name__, "message": str(exc)}))
finally:
    rt.close()
"""


def run_other_process(root: Path, *args: str) -> dict[str, Any]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", OTHER_PROCESS, str(root), *args],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def _store(rt: AgentMemory, content: str, **fields: Any) -> str:
    outcome = rt.memory().store(MemoryStoreInput(content=content, **fields))
    assert outcome.created, outcome
    return outcome.id


def _ids(rt: AgentMemory) -> set[str]:
    return {m["id"] for m in rt.memory().list(MemoryListInput(limit=100))["memories"]}


async def test_memories_survive_close_and_reopen(
    make_runtime: Callable[..., AgentMemory], call: Any, runtime_tools: Any
) -> None:
    first = make_runtime()
    tools = runtime_tools(first)
    ids = [(await call(tools["memory_store"], {"content": fact}))["id"] for fact in DISTINCT_FACTS[:3]]
    first.close()

    reopened = runtime_tools(make_runtime())
    listed = await call(reopened["memory_list"], {})
    assert {m["id"] for m in listed["memories"]} == set(ids)
    assert (await call(reopened["memory_get"], {"id": ids[1]}))["memory"]["content"] == DISTINCT_FACTS[1]
    found = await call(reopened["memory_search"], {"query": "where are invoices stored?"})
    assert found["results"][0]["id"] == ids[0]


async def test_duplicates_are_still_detected_after_reopen(make_runtime: Callable[..., AgentMemory]) -> None:
    first = make_runtime()
    memory_id = _store(first, DISTINCT_FACTS[0])
    first.close()
    again = make_runtime().memory().store(MemoryStoreInput(content=DISTINCT_FACTS[0].upper()))
    assert (again.id, again.duplicate) == (memory_id, True)


def test_close_releases_the_store(make_runtime: Callable[..., AgentMemory]) -> None:
    before = open_store_count()
    rt = make_runtime()
    rt.memory()
    assert open_store_count() == before + 1
    rt.close()
    assert open_store_count() == before


def test_two_sessions_of_one_identity_share_one_handle(make_runtime: Callable[..., AgentMemory]) -> None:
    before = open_store_count()
    one, two = make_runtime(session_id="s1"), make_runtime(session_id="s2")
    assert one.store() is two.store()
    assert open_store_count() == before + 1


def test_two_sessions_storing_and_searching_at_once_see_every_memory(
    make_runtime: Callable[..., AgentMemory],
) -> None:
    one, two = make_runtime(session_id="s1"), make_runtime(session_id="s2")
    facts = DISTINCT_FACTS[:10]
    start = threading.Barrier(4)

    def work(rt: AgentMemory, chunk: tuple[str, ...]) -> list[str]:
        start.wait()
        ids = []
        for fact in chunk:
            ids.append(_store(rt, fact))
            rt.memory().search(MemorySearchInput(query=fact))
        return ids

    with ThreadPoolExecutor(4) as pool:
        futures = [
            pool.submit(work, one, facts[0:3]),
            pool.submit(work, two, facts[3:6]),
            pool.submit(work, one, facts[6:8]),
            pool.submit(work, two, facts[8:10]),
        ]
        stored = {memory_id for f in futures for memory_id in f.result()}
    assert len(stored) == 10
    assert _ids(one) == _ids(two) == stored
    for fact in facts:
        assert two.memory().search(MemorySearchInput(query=fact, limit=1))[0]["content"] == fact


def test_concurrent_identical_stores_keep_one_memory(make_runtime: Callable[..., AgentMemory]) -> None:
    one, two = make_runtime(session_id="s1"), make_runtime(session_id="s2")
    start = threading.Barrier(6)

    def work(rt: AgentMemory) -> str:
        start.wait()
        return rt.memory().store(MemoryStoreInput(content="The release train leaves every other Thursday")).id

    with ThreadPoolExecutor(6) as pool:
        ids = set(pool.map(work, [one, two] * 3))
    assert len(ids) == 1
    assert _ids(one) == ids


async def test_two_mounted_sessions_work_concurrently_from_tasks(mount_tools: Callable[..., Any], call: Any) -> None:
    one, _ = await mount_tools(agent_identity="alice")
    two, _ = await mount_tools(agent_identity="alice")
    before = open_store_count()
    stores = [
        (one if i % 2 else two)["memory_store"].execute({"content": fact}) for i, fact in enumerate(DISTINCT_FACTS[:8])
    ]
    searches = [(two if i % 2 else one)["memory_search"].execute({"query": "team notes"}) for i in range(4)]
    results = await asyncio.gather(*stores, *searches)
    assert all(r.success for r in results), [r.error for r in results if not r.success]
    assert open_store_count() == before + 1
    for tools in (one, two):
        assert (await call(tools["memory_list"], {}))["count"] == 8


def test_closing_one_session_leaves_the_other_working(make_runtime: Callable[..., AgentMemory]) -> None:
    one, two = make_runtime(session_id="s1"), make_runtime(session_id="s2")
    first = _store(one, DISTINCT_FACTS[0])
    one.close()
    second = _store(two, DISTINCT_FACTS[1])
    assert _ids(two) == {first, second}


@pytest.mark.slow
def test_a_second_process_shares_the_store_while_the_first_holds_it(
    make_runtime: Callable[..., AgentMemory], root: Path
) -> None:
    holder = make_runtime()
    kept = _store(holder, DISTINCT_FACTS[0])

    # The holder serves the other process's calls: its write lands in the same store, seen by both at once.
    shared = run_other_process(root, DISTINCT_FACTS[1])
    assert shared == {"ok": True, "count": 2}
    assert len(_ids(holder)) == 2
    top = holder.memory().search(MemorySearchInput(query="what is Alice's indentation preference?", limit=1))
    assert top[0]["content"] == DISTINCT_FACTS[1]

    holder.close()
    reopened = make_runtime()
    assert len(_ids(reopened)) == 2
    assert reopened.memory().get(kept)["content"] == DISTINCT_FACTS[0]


@pytest.mark.slow
async def test_a_tool_in_a_second_process_writes_into_the_shared_store(
    tools: dict[str, Any], root: Path, call: Any
) -> None:
    await call(tools["memory_list"], {})
    script = f"""
import asyncio, json
from amplifier_core.testing import MockCoordinator
import amplifier_module_tool_agent_memory as am

async def main():
    c = MockCoordinator()
    cleanup = await am.mount(c, {{"storage_root": {str(root)!r}, "agent_identity": "alice"}})
    r = await c.mount_points["tools"]["memory_store"].execute({{"content": "from the other process"}})
    await cleanup()
    print(json.dumps({{"success": r.success, "error": r.error, "output": r.output}}))

asyncio.run(main())
"""
    proc = await asyncio.to_thread(
        subprocess.run, [sys.executable, "-c", script], capture_output=True, text=True, timeout=240, check=False
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["success"] is True, result["error"]
    got = await call(tools["memory_get"], {"id": result["output"]["id"]})
    assert got["memory"]["content"] == "from the other process"


def _write_store_meta(root: Path, identity: str, model_id: str, dim: int) -> None:
    meta = root / identity / "store.json"
    data = json.loads(meta.read_text())
    data.update(model_id=model_id, dim=dim)
    meta.write_text(json.dumps(data))


def test_store_json_records_the_model(make_runtime: Callable[..., AgentMemory], root: Path) -> None:
    make_runtime().memory()
    meta = json.loads((root / "alice" / "store.json").read_text())
    assert (meta["model_id"], meta["dim"]) == (LOCAL_MODEL_ID, LOCAL_DIM)


async def test_a_store_written_with_another_model_is_refused_with_the_reindex_path(
    make_runtime: Callable[..., AgentMemory], root: Path, call: Any, runtime_tools: Any
) -> None:
    first = make_runtime()
    _store(first, DISTINCT_FACTS[0])
    first.close()
    _write_store_meta(root, "alice", "openai:text-embedding-3-small", 1536)

    error = await call.error(runtime_tools(make_runtime())["memory_search"], {"query": "invoices"})
    assert error["type"] == "model_mismatch"
    message = error["message"]
    assert "'openai:text-embedding-3-small' (dim 1536)" in message
    assert f"'{LOCAL_MODEL_ID}' (dim {LOCAL_DIM})" in message
    assert "reindex" in message and "agent-memory export" in message and "agent-memory import" in message


def test_a_refused_open_leaves_the_store_untouched_and_unlocked(
    make_runtime: Callable[..., AgentMemory], root: Path
) -> None:
    first = make_runtime()
    memory_id = _store(first, DISTINCT_FACTS[0])
    first.close()
    meta = root / "alice" / "store.json"
    original = meta.read_text()
    _write_store_meta(root, "alice", "fastembed:BAAI/bge-small-en-v1.5", LOCAL_DIM)
    changed = meta.read_text()

    with pytest.raises(ModelMismatchError):
        make_runtime().memory()
    assert meta.read_text() == changed

    meta.write_text(original)
    assert make_runtime().memory().get(memory_id)["content"] == DISTINCT_FACTS[0]


def test_a_different_dimension_alone_is_a_mismatch(make_runtime: Callable[..., AgentMemory], root: Path) -> None:
    rt = make_runtime()
    rt.memory()
    rt.close()
    with pytest.raises(ModelMismatchError, match="dim 768"):
        acquire_store(root, "alice", LOCAL_MODEL_ID, 768)


def test_an_open_store_refuses_a_session_with_another_model(
    make_runtime: Callable[..., AgentMemory], root: Path, embedder: CachedEmbedder
) -> None:
    make_runtime().memory()
    with pytest.raises(ModelMismatchError) as err:
        acquire_store(root, "alice", "openai:all-MiniLM-L6-v2", LOCAL_DIM)
    assert "'openai:all-MiniLM-L6-v2'" in str(err.value) and f"'{LOCAL_MODEL_ID}'" in str(err.value)


def test_acquire_and_release_count_references(root: Path) -> None:
    before = open_store_count()
    a = acquire_store(root, "carol", "test:model", 8)
    b = acquire_store(root, "carol", "test:model", 8)
    assert a is b
    release_store(a)
    assert open_store_count() == before + 1
    release_store(b)
    assert open_store_count() == before


def test_only_fields_that_filter_vector_searches_get_payload_aware_hnsw_links(
    make_runtime: Callable[..., AgentMemory],
) -> None:
    rt = make_runtime("alice")
    schema = rt.memory().coll.shard.info().payload_schema
    with_links = {name for name, info in schema.items() if info.params.enable_hnsw}
    # memory_search filters its vector lists on kind, tags, files and created_at (since/until), and
    # near-duplicates on kind; text, thread, seq and content_hash only filter scrolls and counts.
    assert with_links == {"kind", "tags", "files", "created_at"}
    assert {"content", "ctx_text", "content_hash", "thread", "seq"} <= set(schema) - with_links


def test_the_cache_builds_no_payload_aware_hnsw_links(make_runtime: Callable[..., AgentMemory]) -> None:
    from amplifier_module_tool_agent_memory.cache.service import CACHE

    schema = make_runtime("alice").store().collection(CACHE).shard.info().payload_schema
    assert schema and not any(info.params.enable_hnsw for info in schema.values())


def test_a_point_being_rewritten_is_never_read_as_missing(make_runtime: Callable[..., AgentMemory]) -> None:
    rt = make_runtime()
    memory_id = _store(rt, "The boiler is serviced every October.")
    coll = rt.memory().coll
    [point] = coll.retrieve([memory_id], with_vector=True)
    found: list[Any] = []
    with coll.lock:
        # The first half of a rewrite (delete, then insert), as a writer holding the lock does it.
        coll.delete([memory_id])
        reader = threading.Thread(target=lambda: found.extend(coll.retrieve([memory_id])))
        reader.start()
        reader.join(timeout=0.5)
        coll.upsert([(memory_id, point.vector, dict(point.payload))])
    reader.join(timeout=10)
    assert [str(p.id) for p in found] == [memory_id]
