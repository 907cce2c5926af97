"""memory_store answers before its context window's vector is written (memory/context_vectors.py).

The memory is written with its own vector in the ctx slot and the marker ``ctx_pending``; the real vector comes
when the run ends. Each test holds that completion (a gate in front of ``ContextVectors.complete``) to see the
store between the answer and the completion, on the real engine and the real model.
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
from typing import Any

import pytest

from amplifier_module_tool_agent_memory.embeddings.providers import CachedEmbedder
from amplifier_module_tool_agent_memory.memory.context_vectors import MAX_PENDING
from amplifier_module_tool_agent_memory.memory.models import MemorySearchInput, MemoryStoreInput
from amplifier_module_tool_agent_memory.memory.record import CTX_PENDING
from amplifier_module_tool_agent_memory.memory.service import MEMORIES, MemoryService
from amplifier_module_tool_agent_memory.runtime import AgentMemory

FIRST = "Our staging cluster runs on three nodes in Frankfurt."
SECOND = "Jenny adopted a grey kitten called Pepper last spring."
THIRD = "The quarterly report is due on the first Monday of April."
SETTLE_S = 120.0


def _cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


def _point(rt: AgentMemory, memory_id: str) -> tuple[dict[str, Any], dict[str, list[float]]] | None:
    records = rt.store().collection(MEMORIES).retrieve([memory_id], with_vector=True)
    if not records:
        return None
    return dict(records[0].payload or {}), {k: list(v) for k, v in dict(records[0].vector or {}).items()}


def _stored(rt: AgentMemory, memory_id: str) -> tuple[dict[str, Any], dict[str, list[float]]]:
    """The memory's payload and vectors; it must be there (an acknowledged memory is never lost)."""
    point = _point(rt, memory_id)
    assert point is not None, "the acknowledged memory was lost"
    return point


def _embedded(embedder: CachedEmbedder) -> list[list[float]]:
    """SECOND's own vector (the placeholder) and its context window's (FIRST then SECOND: the real one)."""
    return embedder.embed_documents([SECOND, f"{FIRST}\n{SECOND}"])


def _two_stored(rt: AgentMemory) -> tuple[MemoryService, str]:
    """FIRST, then SECOND in the same thread: SECOND's context window quotes FIRST, so its vector is pending."""
    svc = rt.memory()
    svc.store(MemoryStoreInput(content=FIRST))
    return svc, svc.store(MemoryStoreInput(content=SECOND)).id


def _assert_real_vector(rt: AgentMemory, memory_id: str, of_window: list[float]) -> None:
    """The memory is there, unmarked, with its context window's vector."""
    payload, vectors = _stored(rt, memory_id)
    assert CTX_PENDING not in payload
    assert _cosine(vectors["ctx"], of_window) > 0.99999


@pytest.mark.edge_only("the completion's order is the same on every backend; one engine is enough here")
def test_the_answer_comes_first_with_a_placeholder_and_the_vector_replaces_it(
    make_runtime: Callable[..., AgentMemory], embedder: CachedEmbedder, held: threading.Event
) -> None:
    rt = make_runtime()
    svc, memory_id = _two_stored(rt)
    [of_memory, of_window] = _embedded(embedder)
    payload, vectors = _stored(rt, memory_id)
    assert payload[CTX_PENDING] is True
    assert _cosine(vectors["ctx"], of_memory) > 0.99999  # the placeholder: what a thread's first memory holds
    # A completion held past the read's bound (READ_WAIT_S): the search answers, and finds the memory with its
    # placeholder (BM25 reads ctx_text, already written).
    assert memory_id in [hit["id"] for hit in svc.search(MemorySearchInput(query="grey kitten Pepper"))]
    held.set()
    assert svc.settle(SETTLE_S) == 0
    _assert_real_vector(rt, memory_id, of_window)
    assert "ctx_pending" not in svc.get(memory_id)  # an internal field: no tool shows it


@pytest.mark.edge_only("Qdrant Edge's answer is the one checked")
def test_edge_refuses_a_vector_for_a_missing_point(make_runtime: Callable[..., AgentMemory]) -> None:
    # What a completion would meet without its check under the lock: the engine refuses, and creates nothing.
    rt = make_runtime()
    coll = rt.store().collection(MEMORIES)
    with pytest.raises(Exception, match="No point with id"):
        coll.update_vector("00000000-0000-4000-8000-000000000001", "ctx", [0.1] * rt.embedder().dim)
    assert coll.count() == 0


@pytest.mark.edge_only("the completion's order is the same on every backend; one engine is enough here")
def test_a_completion_for_a_forgotten_memory_is_dropped(
    make_runtime: Callable[..., AgentMemory], held: threading.Event
) -> None:
    rt = make_runtime()
    svc, memory_id = _two_stored(rt)
    svc.forget(memory_id)
    held.set()
    assert svc.settle(SETTLE_S) == 0
    assert _point(rt, memory_id) is None  # not written again by its completion
    assert svc.coll.count() == 1


@pytest.mark.edge_only("the completion's order is the same on every backend; one engine is enough here")
def test_a_completion_never_brings_back_a_forgotten_neighbour(
    make_runtime: Callable[..., AgentMemory], embedder: CachedEmbedder, held: threading.Event
) -> None:
    # The pending vector embeds FIRST's text; forgetting FIRST rebuilds SECOND's window without it, and the
    # completion that arrives after must not put the forgotten text back.
    rt = make_runtime()
    svc = rt.memory()
    first = svc.store(MemoryStoreInput(content=FIRST)).id
    second = svc.store(MemoryStoreInput(content=SECOND)).id
    svc.forget(first)
    held.set()
    assert svc.settle(SETTLE_S) == 0
    payload, vectors = _stored(rt, second)
    assert CTX_PENDING not in payload and FIRST not in payload["ctx_text"]
    [of_memory, of_old_window] = _embedded(embedder)
    assert _cosine(vectors["ctx"], of_memory) > 0.99999
    assert _cosine(vectors["ctx"], of_old_window) < 0.999


@pytest.mark.edge_only("the bound is the service's, the same on every backend")
def test_a_store_beyond_the_bound_waits_for_the_oldest_completion(
    make_runtime: Callable[..., AgentMemory], held: threading.Event
) -> None:
    rt = make_runtime()
    svc = rt.memory()
    svc.store(MemoryStoreInput(content=FIRST))  # a thread's first memory has no context window to wait for
    for n in range(MAX_PENDING):
        svc.store(MemoryStoreInput(content=f"Build number {n} shipped the {n}th feature flag cleanup."))
    beyond = threading.Thread(target=svc.store, args=(MemoryStoreInput(content=THIRD),))
    beyond.start()
    beyond.join(timeout=3)
    assert beyond.is_alive()  # it waits for room: a bulk loop cannot queue completions without end
    assert svc.coll.count() == MAX_PENDING + 1
    held.set()
    beyond.join(SETTLE_S)
    assert not beyond.is_alive()
    assert svc.settle(SETTLE_S) == 0
    assert svc.coll.count() == MAX_PENDING + 2
    assert not svc._ctx.marked()


@pytest.mark.edge_only("the exact-duplicate check comes first where reads are local (the embedded store)")
def test_an_exact_duplicate_answers_without_waiting_behind_the_bound(
    make_runtime: Callable[..., AgentMemory], held: threading.Event
) -> None:
    rt = make_runtime()
    svc = rt.memory()
    first = svc.store(MemoryStoreInput(content=FIRST)).id
    for n in range(MAX_PENDING):
        svc.store(MemoryStoreInput(content=f"Build number {n} shipped the {n}th feature flag cleanup."))
    # The bound is full and every completion is held: a new memory would wait for room, a duplicate writes nothing.
    outcome: list[Any] = []
    again = threading.Thread(target=lambda: outcome.append(svc.store(MemoryStoreInput(content=FIRST))))
    again.start()
    again.join(SETTLE_S)
    done_before_release = not again.is_alive()
    held.set()
    again.join(SETTLE_S)
    assert done_before_release
    assert outcome[0].duplicate and outcome[0].id == first
    assert svc.settle(SETTLE_S) == 0
    assert svc.coll.count() == MAX_PENDING + 1


@pytest.mark.edge_only("closing an embedded store; the server backend closes the same way")
def test_closing_waits_for_the_completions_in_flight(
    make_runtime: Callable[..., AgentMemory], embedder: CachedEmbedder, held: threading.Event
) -> None:
    rt = make_runtime()
    _, memory_id = _two_stored(rt)
    closing = threading.Thread(target=rt.close)
    closing.start()
    closing.join(timeout=3)
    assert closing.is_alive()  # held by the completion
    held.set()
    closing.join(SETTLE_S)
    assert not closing.is_alive()
    _assert_real_vector(make_runtime(), memory_id, embedder.embed_documents([f"{FIRST}\n{SECOND}"])[0])


@pytest.mark.edge_only("the bound is the service's, the same on every backend")
def test_a_close_that_times_out_leaves_the_marker(
    make_runtime: Callable[..., AgentMemory], held: threading.Event
) -> None:
    rt = make_runtime()
    svc, memory_id = _two_stored(rt)
    assert svc.close(timeout=0.2) == 1
    assert _stored(rt, memory_id)[0][CTX_PENDING] is True
    held.set()
    assert svc.settle(SETTLE_S) == 0


# Runs in a child process: stores two memories with every completion held, prints the second's id, then waits to
# be killed (SIGKILL: no cleanup, no close).
_CHILD = r"""
import json, sys, threading
from amplifier_module_tool_agent_memory.config import parse_config
from amplifier_module_tool_agent_memory.identity import ResolvedIdentity
from amplifier_module_tool_agent_memory.memory.context_vectors import ContextVectors
from amplifier_module_tool_agent_memory.memory.models import MemorySearchInput, MemoryStoreInput
from amplifier_module_tool_agent_memory.runtime import AgentMemory

ContextVectors.complete = lambda *args: threading.Event().wait()  # held forever
root, first, second = sys.argv[1:4]
rt = AgentMemory(parse_config({"storage_root": root}), ResolvedIdentity("alice", "config"), session_id="killed")
svc = rt.memory()
svc.store(MemoryStoreInput(content=first))
print(json.dumps({"id": svc.store(MemoryStoreInput(content=second)).id}), flush=True)
threading.Event().wait()
"""


@pytest.mark.edge_only("a process killed while it owns its embedded store")
def test_a_process_killed_after_the_answer_loses_nothing_and_the_next_open_repairs_it(
    make_runtime: Callable[..., AgentMemory], embedder: CachedEmbedder, root: Path
) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(root), FIRST, SECOND],
        stdout=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
    )
    try:
        assert child.stdout is not None
        memory_id = json.loads(child.stdout.readline())["id"]
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    rt = make_runtime()
    payload, vectors = _stored(rt, memory_id)  # the store alone: the memory service (and its repair) is not open yet
    assert payload[CTX_PENDING] is True and payload["content"] == SECOND
    [of_memory, of_window] = _embedded(embedder)
    assert _cosine(vectors["ctx"], of_memory) > 0.99999
    svc = rt.memory()  # opening the service repairs what is still marked, in the background
    assert svc.settle(SETTLE_S) == 0
    _assert_real_vector(rt, memory_id, of_window)
    assert not svc._ctx.marked()


@pytest.mark.edge_only("the export reads the stored vectors the same way on every backend; one engine is enough here")
def test_an_export_with_vectors_carries_the_real_context_vector_of_a_memory_still_marked(
    make_runtime: Callable[..., AgentMemory], embedder: CachedEmbedder, held: threading.Event
) -> None:
    rt = make_runtime()
    svc, memory_id = _two_stored(rt)
    [of_memory, of_window] = _embedded(embedder)
    assert _stored(rt, memory_id)[0][CTX_PENDING] is True  # still the placeholder in the store
    exported = {record.id: vectors for record, vectors in svc.export_points(with_vectors=True)}
    assert exported[memory_id] is not None
    assert _cosine(exported[memory_id]["ctx"], of_window) > 0.99999
    assert _cosine(exported[memory_id]["ctx"], of_memory) < 0.999
    held.set()
    assert svc.settle(SETTLE_S) == 0


@pytest.mark.edge_only("the wait is the service's, the same on every backend")
def test_a_search_in_the_storing_process_waits_for_its_own_completion_and_answers_as_settled(
    make_runtime: Callable[..., AgentMemory], held: threading.Event
) -> None:
    rt = make_runtime()
    svc, memory_id = _two_stored(rt)
    answers: list[list[dict[str, Any]]] = []
    searching = threading.Thread(target=lambda: answers.append(svc.search(MemorySearchInput(query="grey kitten"))))
    searching.start()
    searching.join(timeout=1)
    assert searching.is_alive()  # waiting for the held completion, not ranking the placeholder
    held.set()
    searching.join(SETTLE_S)
    assert not searching.is_alive()
    assert svc.settle(SETTLE_S) == 0
    assert answers == [svc.search(MemorySearchInput(query="grey kitten"))]
    assert memory_id in [hit["id"] for hit in answers[0]]
