"""Which opens repair context vectors (memory/context_vectors.py, store/claims.py).

On the embedded store a service that writes a memory still waiting for its context vector first takes a claim
file ``ctx-pending/<uuid>``, locked for its life and deleted at a clean close. An open scans for marked memories
only when a claim's lock can be taken (its writer ended without finishing); otherwise it reads nothing. The
repairs a service started (``repairs_started``) tell the two apart. A store of sessions 10-11 carries a payload
index on the marker instead: its next open repairs through it, then drops it. The server backend keeps the index.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from amplifier_module_tool_agent_memory.embeddings.providers import CachedEmbedder
from amplifier_module_tool_agent_memory.memory.models import MemoryStoreInput
from amplifier_module_tool_agent_memory.memory.record import CTX_PENDING
from amplifier_module_tool_agent_memory.memory.service import MEMORIES
from amplifier_module_tool_agent_memory.runtime import AgentMemory
from amplifier_module_tool_agent_memory.store.claims import CLAIMS_DIR, dead_claims

FIRST = "The backup robot in the Leeds warehouse is serviced every other Tuesday."
SECOND = "Priya's team moved the weekly planning call to Thursday mornings."
SETTLE_S = 120.0
CLAIMS_ONLY = "claim files are the embedded store's; the server backend finds marked memories by its payload index"


def _claims(root: Path) -> list[str]:
    folder = root / "alice" / CLAIMS_DIR
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def _takeable(root: Path) -> int:
    """How many claim files' locks could be taken (each released again at once, its file kept)."""
    dead = dead_claims(root / "alice" / CLAIMS_DIR)
    for claim in dead:
        claim.keep()
    return len(dead)


def _cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


def _assert_repaired(rt: AgentMemory, memory_id: str, embedder: CachedEmbedder) -> None:
    records = rt.store().collection(MEMORIES).retrieve([memory_id], with_vector=True)
    assert records, "the acknowledged memory was lost"
    assert CTX_PENDING not in dict(records[0].payload or {})
    window = embedder.embed_documents([f"{FIRST}\n{SECOND}"])[0]
    assert _cosine(list(dict(records[0].vector or {})["ctx"]), window) > 0.99999


def _marked(rt: AgentMemory, memory_id: str) -> bool:
    [record] = rt.store().collection(MEMORIES).retrieve([memory_id])
    return dict(record.payload or {}).get(CTX_PENDING) is True


# A child process: stores two memories with every completion held, prints the second's id and the claim files, then
# waits to be killed (SIGKILL: no close). ``legacy``: as the code of sessions 10-11 did, with the marker's payload
# index on the embedded store and no claim file (what a store those versions left behind holds).
_CHILD = r"""
import dataclasses, json, sys, threading
from amplifier_module_tool_agent_memory.config import parse_config
from amplifier_module_tool_agent_memory.identity import ResolvedIdentity
from amplifier_module_tool_agent_memory.memory import service
from amplifier_module_tool_agent_memory.memory.context_vectors import ContextVectors
from amplifier_module_tool_agent_memory.memory.models import MemoryStoreInput
from amplifier_module_tool_agent_memory.runtime import AgentMemory
from amplifier_module_tool_agent_memory.store.contract import IndexSpec

ContextVectors.complete = lambda *args: threading.Event().wait()  # held forever
root, first, second, legacy = sys.argv[1:5]
if legacy == "1":
    old = tuple(IndexSpec(i.field, i.kind, i.hnsw) for i in service.MEMORIES.indexes)
    service.MEMORIES = dataclasses.replace(service.MEMORIES, indexes=old)
    ContextVectors.claim = lambda self: True
    ContextVectors._legacy_index = lambda self: None
rt = AgentMemory(parse_config({"storage_root": root}), ResolvedIdentity("alice", "config"), session_id="killed")
svc = rt.memory()
svc.store(MemoryStoreInput(content=first))
memory_id = svc.store(MemoryStoreInput(content=second)).id
print(json.dumps({"id": memory_id, "indexed": svc.coll.payload_indexed("ctx_pending")}), flush=True)
threading.Event().wait()
"""


def _killed_after_a_marked_write(root: Path, legacy: bool = False) -> tuple[str, bool]:
    """Run the child until its answer, check its claim while it lives, SIGKILL it; the memory's id and whether
    its store carried the marker's index."""
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(root), FIRST, SECOND, "1" if legacy else "0"],
        stdout=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
    )
    try:
        assert child.stdout is not None
        answer = json.loads(child.stdout.readline())
        if not legacy:
            assert len(_claims(root)) == 1 and _takeable(root) == 0, "a live writer's claim is held"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    return answer["id"], answer["indexed"]


@pytest.mark.edge_only(CLAIMS_ONLY)
def test_a_process_killed_after_a_marked_write_leaves_a_takeable_claim_and_the_next_open_repairs(
    make_runtime: Callable[..., AgentMemory], embedder: CachedEmbedder, root: Path
) -> None:
    memory_id, indexed = _killed_after_a_marked_write(root)
    assert not indexed, "no payload index on the marker in the embedded store"
    [claim] = _claims(root)
    rt = make_runtime()
    assert _marked(rt, memory_id)  # the store alone: the memory service (and its repair) is not open yet
    svc = rt.memory()
    assert svc.repairs_started == 1
    assert svc.settle(SETTLE_S) == 0
    _assert_repaired(rt, memory_id, embedder)
    assert claim not in _claims(root), "the dead writer's claim goes once the repair finished"
    # The next open finds nothing to repair and reads nothing.
    assert make_runtime(session_id="again").memory().repairs_started == 0


@pytest.mark.edge_only(CLAIMS_ONLY)
def test_a_clean_close_leaves_no_claim_and_the_next_open_runs_no_repair(
    make_runtime: Callable[..., AgentMemory], root: Path
) -> None:
    rt = make_runtime()
    svc = rt.memory()
    assert _claims(root) == [], "a service that has written no marker holds no claim"
    svc.store(MemoryStoreInput(content=FIRST))  # a thread's first memory is its own context: no marker
    assert _claims(root) == []
    svc.store(MemoryStoreInput(content=SECOND))
    assert len(_claims(root)) == 1
    rt.close()
    assert _claims(root) == []
    assert make_runtime(session_id="next").memory().repairs_started == 0


@pytest.mark.edge_only(CLAIMS_ONLY)
def test_an_open_beside_a_live_writer_runs_no_repair_even_with_a_memory_marked(
    make_runtime: Callable[..., AgentMemory], root: Path, held: threading.Event
) -> None:
    writer = make_runtime()
    svc = writer.memory()
    svc.store(MemoryStoreInput(content=FIRST))
    memory_id = svc.store(MemoryStoreInput(content=SECOND)).id
    assert _marked(writer, memory_id)  # its completion is held: the memory is marked, its writer alive
    [claim] = _claims(root)
    other = make_runtime(session_id="other").memory()
    assert other.repairs_started == 0
    assert _claims(root) == [claim]  # left to its writer
    held.set()
    assert svc.settle(SETTLE_S) == 0 and not _marked(writer, memory_id)


def test_an_open_after_a_close_that_gave_up_on_a_completion_repairs(
    make_runtime: Callable[..., AgentMemory], embedder: CachedEmbedder, root: Path, held: threading.Event, backend: str
) -> None:
    """Both backends: the embedded store through the claim the close kept (unlocked), the server through its
    payload index on the marker."""
    svc = make_runtime().memory()
    svc.store(MemoryStoreInput(content=FIRST))
    memory_id = svc.store(MemoryStoreInput(content=SECOND)).id
    assert svc.close(timeout=0.2) == 1  # its completion is held: abandoned by the close, the memory still marked
    if backend == "edge":
        assert len(_claims(root)) == 1 and _takeable(root) == 1, "the claim stays, and its lock is free"
    rt = make_runtime(session_id="next")
    nxt = rt.memory()
    assert nxt.repairs_started == 1
    held.set()
    assert nxt.settle(SETTLE_S) == 0 and svc.settle(SETTLE_S) == 0
    _assert_repaired(rt, memory_id, embedder)
    if backend == "edge":
        assert _claims(root) == []


@pytest.mark.edge_only("the payload index of sessions 10-11 was built by the embedded store; a server keeps it")
def test_a_store_left_by_sessions_10_11_is_repaired_through_its_index_which_is_then_dropped(
    make_runtime: Callable[..., AgentMemory], embedder: CachedEmbedder, root: Path
) -> None:
    memory_id, indexed = _killed_after_a_marked_write(root, legacy=True)
    assert indexed and _claims(root) == [], "the old layout: the index, no claim file"
    rt = make_runtime()
    coll = rt.store().collection(MEMORIES)
    assert _marked(rt, memory_id) and coll.payload_indexed(CTX_PENDING)  # type: ignore[attr-defined]
    svc = rt.memory()
    assert svc.repairs_started == 1
    assert svc.settle(SETTLE_S) == 0
    _assert_repaired(rt, memory_id, embedder)
    assert not coll.payload_indexed(CTX_PENDING)  # type: ignore[attr-defined]
    rt.close()
    again = make_runtime(session_id="again")
    assert not again.store().collection(MEMORIES).payload_indexed(CTX_PENDING)  # type: ignore[attr-defined]
    assert again.memory().repairs_started == 0
