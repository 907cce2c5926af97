"""A forgotten text leaves the engine's files: Edge's freed payload pages are rewritten by a background
purge (store/purge.py, EdgeCollection.purge_engine) a moment after the last forget in a collection of at
most storage.purge_prompt_max_points points, once the collection is idle (or at close, or on
``agent-memory gc``) in a larger one."""

from __future__ import annotations

import itertools
import json
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from data import DISTINCT_FACTS

from amplifier_module_tool_agent_memory.cache.models import CacheWriteInput
from amplifier_module_tool_agent_memory.cache.service import CACHE
from amplifier_module_tool_agent_memory.cli import main
from amplifier_module_tool_agent_memory.memory.models import MemoryStoreInput
from amplifier_module_tool_agent_memory.memory.service import MEMORIES
from amplifier_module_tool_agent_memory.plans.models import PlanStoreInput
from amplifier_module_tool_agent_memory.plans.service import PLANS
from amplifier_module_tool_agent_memory.runtime import AgentMemory
from amplifier_module_tool_agent_memory.store.contract import CollectionSpec
from amplifier_module_tool_agent_memory.store.edge_collection import EdgeCollection
from amplifier_module_tool_agent_memory.store.purge import DebouncedJob

pytestmark = pytest.mark.reliability

# Generous: the purge is due 1 s after the last forget; a loaded machine may take a while to run it.
_PATIENCE_S = 60.0


def _store_bytes(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file())


def _collection(rt: AgentMemory, spec: CollectionSpec) -> EdgeCollection:
    coll = rt.store().collection(spec)
    assert isinstance(coll, EdgeCollection)
    return coll


def _wait_for_purge(coll: EdgeCollection, runs_before: int) -> None:
    deadline = time.monotonic() + _PATIENCE_S
    while coll.engine_purges <= runs_before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert coll.engine_purges > runs_before, "the background purge never ran"


def test_a_forgotten_memory_leaves_no_copy_in_any_store_file_once_purged(
    make_runtime: Callable[..., AgentMemory], root: Path
) -> None:
    rt = make_runtime()
    ids = [rt.memory().store(MemoryStoreInput(content=fact)).id for fact in DISTINCT_FACTS[:8]]
    coll = _collection(rt, MEMORIES)
    runs = coll.engine_purges
    rt.memory().forget(ids[3])
    forgotten = DISTINCT_FACTS[3].encode()
    before = _store_bytes(root / "alice")
    if coll.engine_purges == runs:
        # Still in the engine's freed pages: what the purge is for.
        assert forgotten in before
    _wait_for_purge(coll, runs)
    on_disk = _store_bytes(root / "alice")  # the store still open: every file, engine and journal
    assert forgotten not in on_disk
    assert DISTINCT_FACTS[4].encode() in on_disk


def test_an_overwritten_plan_leaves_no_copy_of_its_old_actions_in_any_store_file(
    make_runtime: Callable[..., AgentMemory], root: Path
) -> None:
    rt = make_runtime()

    def plan(command: str) -> PlanStoreInput:
        return PlanStoreInput.model_validate(
            {"prompt": "rotate the staging logs", "actions": [{"tool": "bash", "args": {"cmd": command}}]}
        )

    rt.plans().store(plan("logrotate --legacy-flag-zebra /etc/old.conf"))
    coll = _collection(rt, PLANS)
    runs = coll.engine_purges
    rt.plans().store(plan("logrotate /etc/new.conf"))
    _wait_for_purge(coll, runs)
    on_disk = _store_bytes(root / "alice")
    assert b"legacy-flag-zebra" not in on_disk
    assert b"/etc/new.conf" in on_disk


def test_a_burst_of_requests_runs_the_job_once(purge_timer: Any) -> None:
    ran: list[float] = []
    job = DebouncedJob("t", lambda: ran.append(purge_timer()), quiet_s=0.3, max_wait_s=5.0,
                       clock=purge_timer, background=False)
    for _ in range(4):
        job.request()
        purge_timer.advance(0.1)  # a burst: each request within the quiet time of the last
    assert not job.run_if_due()  # 0.1 s after the last request: still quiet time
    purge_timer.advance(0.2)
    assert job.run_if_due() and ran == [purge_timer()]  # 0.3 s after the last request
    purge_timer.advance(10.0)
    assert not job.run_if_due() and len(ran) == 1  # nothing more was due


def test_closing_runs_a_purge_still_due(make_runtime: Callable[..., AgentMemory], root: Path) -> None:
    rt = make_runtime()
    ids = [rt.memory().store(MemoryStoreInput(content=fact)).id for fact in DISTINCT_FACTS[:6]]
    rt.memory().forget(ids[2])
    rt.close()  # at once: the quiet time has not passed
    assert DISTINCT_FACTS[2].encode() not in _store_bytes(root / "alice")


def test_a_steady_stream_of_requests_cannot_postpone_the_job_past_its_longest_wait(purge_timer: Any) -> None:
    ran: list[float] = []
    job = DebouncedJob("t", lambda: ran.append(purge_timer()), quiet_s=0.3, max_wait_s=0.6,
                       clock=purge_timer, background=False)
    first = purge_timer()
    for _ in range(40):  # a request every 0.05 s for 2 s: never quiet for 0.3 s
        job.request()
        purge_timer.advance(0.05)
        job.run_if_due()
    # It ran at its longest wait after the first request still waiting, and again for the requests after it.
    assert ran and ran[0] == pytest.approx(first + 0.6, abs=0.051)
    assert [b - a for a, b in itertools.pairwise(ran)] == pytest.approx([0.6] * (len(ran) - 1), abs=0.051)


def test_an_idle_request_waits_until_nothing_touched_the_owner_for_the_idle_time(purge_timer: Any) -> None:
    ran: list[float] = []
    job = DebouncedJob("t", lambda: ran.append(purge_timer()), quiet_s=0.3, max_wait_s=0.6, idle_s=3.0,
                       clock=purge_timer, background=False)
    job.request(idle=True)
    for _ in range(30):  # a write every 0.2 s for 6 s: never idle for 3 s, and no longest wait
        purge_timer.advance(0.2)
        job.touch()
        assert not job.run_if_due()
    assert job.waits_for_idle
    purge_timer.advance(2.9)
    assert not job.run_if_due()
    purge_timer.advance(0.1)
    assert job.run_if_due() and len(ran) == 1 and not job.pending


# Purges above the size bound wait for the collection to be idle (storage.purge_prompt_max_points): a small
# configured bound stands for a large collection, and a short idle time keeps the tests quick.
_ABOVE_BOUND = {"purge_prompt_max_points": 3, "purge_idle_seconds": 3.0}
_NEVER_IDLE = {"purge_prompt_max_points": 3, "purge_idle_seconds": 3600.0}


def _fill(rt: AgentMemory, count: int = 8) -> list[str]:
    return [rt.memory().store(MemoryStoreInput(content=fact)).id for fact in DISTINCT_FACTS[:count]]


def test_a_forget_below_the_bound_is_purged_without_waiting_for_the_collection_to_be_idle(
    make_runtime: Callable[..., AgentMemory], root: Path, purge_timer: Any
) -> None:
    rt = make_runtime(storage={"purge_idle_seconds": 3600.0})
    rt.purge_timing = {"clock": purge_timer, "background": False}
    ids = _fill(rt)
    coll = _collection(rt, MEMORIES)
    rt.memory().forget(ids[3])
    assert not coll.engine_purge_waits_for_idle
    assert not coll.run_engine_purge_if_due()  # due after the quiet time, not at once
    purge_timer.advance(1.0)  # the quiet time, far sooner than the hour of idle time configured
    assert coll.run_engine_purge_if_due()
    assert DISTINCT_FACTS[3].encode() not in _store_bytes(root / "alice")


def test_above_the_bound_a_purge_waits_while_writes_keep_coming_then_runs_once_idle(
    make_runtime: Callable[..., AgentMemory], root: Path, purge_timer: Any
) -> None:
    rt = make_runtime(storage=_ABOVE_BOUND)
    rt.purge_timing = {"clock": purge_timer, "background": False}
    ids = _fill(rt)
    coll = _collection(rt, MEMORIES)
    runs = coll.engine_purges
    rt.memory().forget(ids[3])
    assert coll.engine_purge_waits_for_idle
    forgotten = DISTINCT_FACTS[3].encode()
    # A write every 0.2 s for twice the idle time: never idle for 3 s.
    for _ in range(30):
        purge_timer.advance(0.2)
        rt.memory().store(MemoryStoreInput(content=f"Ticket {uuid.uuid4().hex} was triaged by the on-call engineer"))
        assert not coll.run_engine_purge_if_due(), "the purge ran while writes kept coming"
    assert coll.engine_purges == runs
    assert forgotten in _store_bytes(root / "alice"), "nothing left to purge: the test shows nothing"
    purge_timer.advance(_ABOVE_BOUND["purge_idle_seconds"])  # the writes stopped: idle for 3 s
    assert coll.run_engine_purge_if_due() and coll.engine_purges == runs + 1
    assert forgotten not in _store_bytes(root / "alice")


def test_above_the_bound_closing_runs_the_purge_waiting_for_idle(
    make_runtime: Callable[..., AgentMemory], root: Path
) -> None:
    rt = make_runtime(storage=_NEVER_IDLE)
    ids = _fill(rt)
    coll = _collection(rt, MEMORIES)
    rt.memory().forget(ids[2])
    assert coll.engine_purge_waits_for_idle
    rt.close()
    assert DISTINCT_FACTS[2].encode() not in _store_bytes(root / "alice")


def test_agent_memory_gc_runs_a_purge_waiting_for_idle_and_reports_it(
    make_runtime: Callable[..., AgentMemory], root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rt = make_runtime(storage=_NEVER_IDLE)
    ids = _fill(rt)
    coll = _collection(rt, MEMORIES)
    runs = coll.engine_purges
    rt.memory().forget(ids[5])
    assert coll.engine_purge_waits_for_idle
    capsys.readouterr()
    # Same process: the CLI shares the open store (as a second process it would wait for its lock).
    assert main(["gc", "--root", str(root), "--identity", "alice", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [p["collection"] for p in report["purges"] if p["purged"]] == ["memories"]
    assert coll.engine_purges == runs + 1
    assert DISTINCT_FACTS[5].encode() not in _store_bytes(root / "alice")  # the runtime still open


def test_an_expired_cache_item_leaves_no_copy_in_any_store_file_once_swept_and_purged(
    make_runtime: Callable[..., AgentMemory], root: Path, clock: Any, purge_timer: Any
) -> None:
    rt = make_runtime()
    rt.clock = clock
    rt.purge_timing = {"clock": purge_timer, "background": False}
    rt.cache().write(
        CacheWriteInput(kind="fact", content="Scratch token quokka-zebra-1187 for the smoke run", ttl_minutes=5)
    )
    rt.cache().write(CacheWriteInput(kind="fact", content="The build uses Bazel 7", ttl_minutes=0))
    coll = _collection(rt, CACHE)
    clock.advance(minutes=4, seconds=59)
    assert rt.cache().sweep_expired() == 0  # within its lifetime
    clock.advance(seconds=2)  # past the item's 5 minutes
    assert rt.cache().sweep_expired() == 1
    purge_timer.advance(1.0)
    assert coll.run_engine_purge_if_due()
    on_disk = _store_bytes(root / "alice")
    assert b"quokka-zebra-1187" not in on_disk
    assert b"Bazel 7" in on_disk


def _set_indexing_threshold(root: Path, kilobytes: int | None, identity: str = "alice") -> None:
    config_file = root / identity / "memories" / "edge_config.json"
    config = json.loads(config_file.read_text())
    config["optimizers"]["indexing_threshold"] = kilobytes
    config_file.write_text(json.dumps(config))


def _segment_files_holding(root: Path, text: str) -> set[Path]:
    segments = root / "alice" / "memories" / "segments"
    return {p for p in segments.rglob("*") if p.is_file() and text.encode() in p.read_bytes()}


def test_a_neighbour_that_quoted_a_forgotten_memory_keeps_no_copy_in_another_segment(
    make_runtime: Callable[..., AgentMemory], root: Path
) -> None:
    # Above ~10k memories an index build leaves the points in an indexed segment and new writes in an
    # appendable one. An indexing threshold of 1 KB gives a few memories that indexed segment; put back to
    # the default, later writes stay in the appendable one (which no purge would otherwise need to rewrite).
    first = make_runtime(session_id="thread-1")
    first.store().collection(MEMORIES)
    first.close()
    _set_indexing_threshold(root, 1)
    second = make_runtime(session_id="thread-1")
    for fact in DISTINCT_FACTS[:3]:
        second.memory().store(MemoryStoreInput(content=fact))
    quoted = second.memory().store(MemoryStoreInput(content=DISTINCT_FACTS[6])).id
    _collection(second, MEMORIES).optimize()
    second.close()
    _set_indexing_threshold(root, None)
    rt = make_runtime(session_id="thread-1")
    coll = _collection(rt, MEMORIES)
    neighbour = rt.memory().store(MemoryStoreInput(content=DISTINCT_FACTS[7])).id
    assert DISTINCT_FACTS[6] in str(coll.retrieve([neighbour])[0].payload), "the neighbour does not quote it"
    coll.persist()  # a checkpoint wrote the neighbour's pages
    holding = _segment_files_holding(root, DISTINCT_FACTS[6])
    assert len({p.relative_to(root).parts[3] for p in holding}) == 2, "the neighbour is not in another segment"
    runs = coll.engine_purges
    rt.memory().forget(quoted)
    _wait_for_purge(coll, runs)
    on_disk = _store_bytes(root / "alice")
    assert DISTINCT_FACTS[6].encode() not in on_disk
    assert DISTINCT_FACTS[7].encode() in on_disk
