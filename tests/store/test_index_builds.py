"""Index builds stay off the tool calls (issue 21, item 4): a write that finds enough unindexed memories only
schedules the build (EdgeCollection.index_soon), which runs once the collection is idle; meanwhile searches
scan the unindexed memories exactly. An import builds one bounded segment at a time (MemoryImporter).

Edge does not index a segment below its indexing threshold (10 MB of vectors): these tests lower it to 1 KB
in the shard's config, so a few memories make a real build (indexed vectors counted by the engine)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from data import DISTINCT_FACTS

from amplifier_module_tool_agent_memory.embeddings.providers import Embedder
from amplifier_module_tool_agent_memory.memory import service as memory_service
from amplifier_module_tool_agent_memory.memory.importing import MemoryImporter
from amplifier_module_tool_agent_memory.memory.models import MemoryRecord, MemorySearchInput, MemoryStoreInput
from amplifier_module_tool_agent_memory.memory.service import MEMORIES
from amplifier_module_tool_agent_memory.runtime import AgentMemory
from amplifier_module_tool_agent_memory.store.edge_collection import INDEX_IN_CALL_FACTOR, EdgeCollection
from amplifier_module_tool_agent_memory.store.purge import PURGE_MAX_WAIT_S

IDLE_S = 30.0


def _lower_indexing_threshold(make_runtime: Callable[..., AgentMemory], root: Path) -> None:
    first = make_runtime()
    first.store().collection(MEMORIES)  # creates the shard and its config
    first.close()
    config_file = root / "alice" / "memories" / "edge_config.json"
    config = json.loads(config_file.read_text())
    config["optimizers"]["indexing_threshold"] = 1
    config_file.write_text(json.dumps(config))


def _runtime(make_runtime: Callable[..., AgentMemory], root: Path, purge_timer: Any) -> AgentMemory:
    _lower_indexing_threshold(make_runtime, root)
    rt = make_runtime(storage={"purge_idle_seconds": IDLE_S})
    rt.purge_timing = {"clock": purge_timer, "background": False}
    return rt


def _memories(rt: AgentMemory) -> EdgeCollection:
    coll = rt.store().collection(MEMORIES)
    assert isinstance(coll, EdgeCollection)
    return coll


def _found(rt: AgentMemory, query: str) -> list[str]:
    return [str(h["content"]) for h in rt.memory().search(MemorySearchInput(query=query, limit=3))]


def test_a_store_that_crosses_the_threshold_schedules_the_build_and_it_runs_once_idle(
    make_runtime: Callable[..., AgentMemory], root: Path, purge_timer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    rt = _runtime(make_runtime, root, purge_timer)
    # Every store checks, and 4 unindexed memories make a build due (10k and every 500 in the service).
    monkeypatch.setattr(memory_service, "INDEX_AFTER_UNINDEXED", 4)
    monkeypatch.setattr(memory_service, "INDEX_CHECK_EVERY", 1)
    for fact in DISTINCT_FACTS[:5]:
        rt.memory().store(MemoryStoreInput(content=fact))
    coll = _memories(rt)
    # The store calls returned with the build waiting, not run: nothing is indexed yet.
    assert coll.index_build_pending and coll.index_builds == 0
    assert coll.unindexed_count() == 5
    # Searched by brute force meanwhile: every memory is found, the newest too.
    assert _found(rt, DISTINCT_FACTS[4])[0] == DISTINCT_FACTS[4]
    # A search 1 s before the idle time is up moves it on: searches would stall behind a build too.
    purge_timer.advance(IDLE_S - 1)
    assert _found(rt, DISTINCT_FACTS[2])[0] == DISTINCT_FACTS[2]
    purge_timer.advance(IDLE_S - 1)
    assert not coll.run_index_build_if_due()
    assert coll.unindexed_count() == 5
    purge_timer.advance(1)  # idle for the whole idle time since that search
    assert coll.run_index_build_if_due()
    assert coll.index_builds == 1 and not coll.index_build_pending
    assert coll.unindexed_count() == 0
    assert [_found(rt, fact)[0] for fact in DISTINCT_FACTS[:5]] == list(DISTINCT_FACTS[:5])


def test_writes_that_never_pause_get_the_build_without_waiting_for_a_pause_past_a_bound(
    make_runtime: Callable[..., AgentMemory], root: Path, purge_timer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    rt = _runtime(make_runtime, root, purge_timer)
    monkeypatch.setattr(memory_service, "INDEX_AFTER_UNINDEXED", 2)
    monkeypatch.setattr(memory_service, "INDEX_CHECK_EVERY", 1)
    coll = _memories(rt)
    stored = 0
    for fact in DISTINCT_FACTS[: 2 * INDEX_IN_CALL_FACTOR - 1]:
        rt.memory().store(MemoryStoreInput(content=fact))
        stored += 1
        purge_timer.advance(1)  # never idle
        assert not coll.run_index_build_if_due()
    assert coll.unindexed_count() == stored  # below the bound: still waiting for a pause
    assert coll.index_build_waits_for_idle
    rt.memory().store(MemoryStoreInput(content=DISTINCT_FACTS[2 * INDEX_IN_CALL_FACTOR - 1]))
    # 2 x INDEX_IN_CALL_FACTOR unindexed: the build no longer waits for a pause, and not in the call either (it
    # runs in a child process while the calls go on): it is due once the requests were quiet for a moment.
    assert coll.unindexed_count() == 2 * INDEX_IN_CALL_FACTOR
    assert coll.index_build_pending and not coll.index_build_waits_for_idle
    purge_timer.advance(PURGE_MAX_WAIT_S)  # still no idle pause: writes every second would not stop it
    assert coll.run_index_build_if_due()
    assert coll.unindexed_count() == 0 and coll.index_builds == 1


def test_closing_drops_a_waiting_build_and_the_next_writer_schedules_it_again(
    make_runtime: Callable[..., AgentMemory], root: Path, purge_timer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    rt = _runtime(make_runtime, root, purge_timer)
    monkeypatch.setattr(memory_service, "INDEX_AFTER_UNINDEXED", 3)
    for fact in DISTINCT_FACTS[:4]:
        rt.memory().store(MemoryStoreInput(content=fact))  # the first store checks: 1 unindexed, nothing due
    monkeypatch.setattr(memory_service, "INDEX_CHECK_EVERY", 1)
    rt.memory().store(MemoryStoreInput(content=DISTINCT_FACTS[4]))
    assert _memories(rt).index_build_pending
    rt.close()  # no build at close: a short command ends at once
    again = make_runtime(storage={"purge_idle_seconds": IDLE_S})
    again.purge_timing = {"clock": purge_timer, "background": False}
    coll = _memories(again)
    assert coll.unindexed_count() == 5 and not coll.index_build_pending
    # A new service checks at its first write, whatever INDEX_CHECK_EVERY is.
    monkeypatch.setattr(memory_service, "INDEX_CHECK_EVERY", 500)
    again.memory().store(MemoryStoreInput(content=DISTINCT_FACTS[5]))
    assert coll.index_build_pending
    purge_timer.advance(IDLE_S)
    assert coll.run_index_build_if_due() and coll.unindexed_count() == 0


def _records(count: int) -> list[MemoryRecord]:
    return [
        MemoryRecord.model_validate(
            {
                "id": str(uuid.UUID(int=i + 1)),
                "content": f"Imported note {i}: {DISTINCT_FACTS[i % len(DISTINCT_FACTS)]}",
                "created_at": f"2024-01-01T00:{i:02d}:00Z",
            }
        )
        for i in range(count)
    ]


def test_an_import_builds_one_segment_at_a_time(
    make_runtime: Callable[..., AgentMemory], root: Path, purge_timer: Any, embedder: Embedder
) -> None:
    rt = _runtime(make_runtime, root, purge_timer)
    coll = _memories(rt)
    importer = MemoryImporter(coll, embedder, index_after=1, build_every=6)
    records = _records(15)
    builds: list[int] = []
    for start in range(0, len(records), 3):
        importer.write(records[start : start + 3])
        builds.append(coll.unindexed_count())
    summary = importer.finish()
    assert summary["imported"] == 15 and summary["index_seconds"] > 0
    # A batch is written with the next call (its embedding overlaps): the build after the 6th and the 12th
    # memory written left nothing unindexed; the last 3 were indexed by finish.
    assert builds == [0, 3, 0, 3, 0]
    assert coll.unindexed_count() == 0
    hits = rt.memory().search(MemorySearchInput(query=records[13].content, limit=1))
    assert hits[0]["content"] == records[13].content
