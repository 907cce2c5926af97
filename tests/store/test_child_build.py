"""Scheduled index builds run in a child process on a copy of the unindexed segments and are swapped in
(store/child_build.py, issue 21: no call over 1 s): the serving process answers while the child builds, and
nothing written meanwhile is lost by the swap.

As in test_index_builds.py, the shard's indexing threshold is lowered to 1 KB so a few memories make a real
build. The child is held at its start by a gate file the test opens, so "while the child builds" is a fact of
the test, not a race."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from data import DISTINCT_FACTS

from amplifier_module_tool_agent_memory.memory.models import MemorySearchInput, MemoryStoreInput
from amplifier_module_tool_agent_memory.memory.service import MEMORIES
from amplifier_module_tool_agent_memory.runtime import AgentMemory
from amplifier_module_tool_agent_memory.store import child_build
from amplifier_module_tool_agent_memory.store.edge_collection import EdgeCollection

# The child waits for the gate file, then runs the real build (child_build.main) on the copy.
GATED_CHILD = (
    "import pathlib, sys, time\n"
    "gate = pathlib.Path(sys.argv[2])\n"
    "while not gate.exists(): time.sleep(0.01)\n"
    "from amplifier_module_tool_agent_memory.store import child_build\n"
    "raise SystemExit(child_build.main([sys.argv[1]]))\n"
)


def _runtime(make_runtime: Callable[..., AgentMemory], root: Path, purge_timer: Any) -> AgentMemory:
    first = make_runtime()
    first.store().collection(MEMORIES)
    first.close()
    config_file = root / "alice" / "memories" / "edge_config.json"
    config = json.loads(config_file.read_text())
    config["optimizers"]["indexing_threshold"] = 1
    config_file.write_text(json.dumps(config))
    rt = make_runtime()
    rt.purge_timing = {"clock": purge_timer, "background": False}
    return rt


def _memories(rt: AgentMemory) -> EdgeCollection:
    coll = rt.store().collection(MEMORIES)
    assert isinstance(coll, EdgeCollection)
    return coll


def _top(rt: AgentMemory, query: str) -> str:
    return str(rt.memory().search(MemorySearchInput(query=query, limit=1))[0]["content"])


@pytest.fixture
def gate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Children started by builds wait until this file exists."""
    path = tmp_path / "go"

    def start(folder: Path) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [sys.executable, "-c", GATED_CHILD, str(folder), str(path)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )

    monkeypatch.setattr(child_build, "start_child", start)
    return path


def _build_in_background(coll: EdgeCollection) -> tuple[threading.Thread, list[float | None]]:
    result: list[float | None] = []
    thread = threading.Thread(target=lambda: result.append(coll.build_in_child(1)))
    thread.start()
    while coll._child is None and thread.is_alive():
        thread.join(0.01)  # the copy is made under the lock; then the child starts
    return thread, result


def test_the_process_answers_while_the_child_builds_and_nothing_written_meanwhile_is_lost(
    make_runtime: Callable[..., AgentMemory], root: Path, purge_timer: Any, gate: Path
) -> None:
    rt = _runtime(make_runtime, root, purge_timer)
    ids = [rt.memory().store(MemoryStoreInput(content=fact)).id for fact in DISTINCT_FACTS[:6]]
    coll = _memories(rt)
    assert coll.unindexed_count() == 6
    thread, result = _build_in_background(coll)
    child = coll._child
    assert child is not None and child.poll() is None
    # While the child holds the build, this process searches, stores and forgets.
    assert _top(rt, DISTINCT_FACTS[3]) == DISTINCT_FACTS[3]
    new_id = rt.memory().store(MemoryStoreInput(content=DISTINCT_FACTS[6])).id
    rt.memory().forget(ids[1])
    assert child.poll() is None  # all of it answered before the build could even start
    gate.touch()
    thread.join()
    assert result[0] is not None  # built and swapped in
    # The six copied memories are indexed (their vectors, the forgotten one's too, until a vacuum); the one
    # stored after the copy is replayed from the journal into a new plain segment.
    assert coll.shard.info().indexed_vectors_count >= 2 * 5 and coll.path is not None
    assert len(child_build.plain_segments(coll.path)) == 1
    assert coll.count() == 6 and coll.journal is not None and coll.journal.live_count == 6
    assert sorted(str(p.id) for p in coll.retrieve([*ids, new_id])) == sorted([*ids[:1], *ids[2:], new_id])
    assert _top(rt, DISTINCT_FACTS[6]) == DISTINCT_FACTS[6]
    assert _top(rt, DISTINCT_FACTS[1]) != DISTINCT_FACTS[1]  # forgotten during the build: stays forgotten
    assert not child_build.build_folder(coll.path).exists() if coll.path else False
    rt.close()
    # Reopened: the same memories, nothing replayed twice or lost.
    again = make_runtime()
    coll = _memories(again)
    assert coll.count() == 6
    assert [_top(again, fact) for fact in (DISTINCT_FACTS[0], DISTINCT_FACTS[5], DISTINCT_FACTS[6])] == [
        DISTINCT_FACTS[0],
        DISTINCT_FACTS[5],
        DISTINCT_FACTS[6],
    ]


def test_closing_during_a_child_build_ends_the_child_and_leaves_the_store_as_it_was(
    make_runtime: Callable[..., AgentMemory], root: Path, purge_timer: Any, gate: Path
) -> None:
    rt = _runtime(make_runtime, root, purge_timer)
    for fact in DISTINCT_FACTS[:4]:
        rt.memory().store(MemoryStoreInput(content=fact))
    coll = _memories(rt)
    thread, result = _build_in_background(coll)
    child = coll._child
    assert child is not None and coll.path is not None
    folder = child_build.build_folder(coll.path)
    assert folder.is_dir()
    rt.close()  # the gate never opens: the child is ended, not waited for
    thread.join()
    assert result == [None] and child.returncode is not None and child.returncode != 0
    assert not folder.exists()
    again = make_runtime()
    coll = _memories(again)
    assert coll.count() == 4 and coll.unindexed_count() == 4  # unbuilt, searched exactly
    assert _top(again, DISTINCT_FACTS[2]) == DISTINCT_FACTS[2]


def test_a_failed_child_build_leaves_the_shard_untouched(
    make_runtime: Callable[..., AgentMemory], root: Path, purge_timer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    rt = _runtime(make_runtime, root, purge_timer)
    for fact in DISTINCT_FACTS[:3]:
        rt.memory().store(MemoryStoreInput(content=fact))
    coll = _memories(rt)

    def failing(folder: Path) -> subprocess.Popen[bytes]:
        (folder / child_build.CONFIG).write_text("not json")  # the child cannot load its copy
        return subprocess.Popen([sys.executable, "-m", child_build.__name__, str(folder)], stderr=subprocess.PIPE)

    monkeypatch.setattr(child_build, "start_child", failing)
    assert coll.build_in_child(1) is None
    assert coll.count() == 3 and coll.unindexed_count() == 3
    assert coll.path is not None and not child_build.build_folder(coll.path).exists()
    assert _top(rt, DISTINCT_FACTS[0]) == DISTINCT_FACTS[0]


def test_an_abandoned_build_folder_is_removed_when_the_store_opens(
    make_runtime: Callable[..., AgentMemory], root: Path, purge_timer: Any
) -> None:
    rt = _runtime(make_runtime, root, purge_timer)
    rt.memory().store(MemoryStoreInput(content=DISTINCT_FACTS[0]))
    coll = _memories(rt)
    assert coll.path is not None
    folder = child_build.copy_for_build(coll.path, child_build.plain_segments(coll.path))
    rt.close()
    assert folder.is_dir()
    again = make_runtime()
    assert _memories(again).count() == 1
    assert not folder.exists()
