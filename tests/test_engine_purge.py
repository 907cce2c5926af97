"""A forgotten text leaves the engine's files promptly: Edge's freed payload pages are rewritten by a
background purge a moment after the last forget (store/purge.py, EdgeCollection.purge_engine)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from memory_helpers import DISTINCT_FACTS

from amplifier_module_tool_agent_memory.memory.models import MemoryStoreInput
from amplifier_module_tool_agent_memory.memory.service import MEMORIES
from amplifier_module_tool_agent_memory.plans.models import PlanStoreInput
from amplifier_module_tool_agent_memory.plans.service import PLANS
from amplifier_module_tool_agent_memory.runtime import AgentMemory
from amplifier_module_tool_agent_memory.store.contract import CollectionSpec
from amplifier_module_tool_agent_memory.store.edge import EdgeCollection
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


def test_a_burst_of_requests_runs_the_job_once() -> None:
    ran: list[float] = []
    job = DebouncedJob("t", lambda: ran.append(time.monotonic()), quiet_s=0.3, max_wait_s=5.0)
    try:
        for _ in range(4):
            job.request()
        deadline = time.monotonic() + _PATIENCE_S
        while not ran and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.6)  # past the quiet time again: nothing more was due
    finally:
        job.stop()
    assert len(ran) == 1


def test_closing_runs_a_purge_still_due(make_runtime: Callable[..., AgentMemory], root: Path) -> None:
    rt = make_runtime()
    ids = [rt.memory().store(MemoryStoreInput(content=fact)).id for fact in DISTINCT_FACTS[:6]]
    rt.memory().forget(ids[2])
    rt.close()  # at once: the quiet time has not passed
    assert DISTINCT_FACTS[2].encode() not in _store_bytes(root / "alice")


def test_a_steady_stream_of_requests_cannot_postpone_the_job_past_its_longest_wait() -> None:
    ran: list[float] = []
    job = DebouncedJob("t", lambda: ran.append(time.monotonic()), quiet_s=0.3, max_wait_s=0.6)
    started = time.monotonic()
    try:
        while not ran and time.monotonic() - started < _PATIENCE_S:
            job.request()  # never quiet for 0.3 s
            time.sleep(0.05)
    finally:
        job.stop()
    assert ran, "the job never ran while requests kept coming"
