"""The store language's conditional write (``update_if``): replace vectors and remove payload keys only if the point
exists and its payload holds the expected values, as one call under the collection's lock.

A context vector's completion is one such call (a process sharing the store sends it as one request the owner runs
under its lock: tests/store/test_sharing.py checks the request, tests/store/test_owner_batch.py the owner's
answer). Here: the same answers on both backends (the embedded store and the server backend's stand-in), on small
random vectors; and a completion whose conditional write does not hold (a wording merged into the memory meanwhile)
still writes its vector, through the full check, on the real model.
"""

from __future__ import annotations

import math
import random
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from data import SERVER_URL

from amplifier_module_tool_agent_memory.config import StorageConfig
from amplifier_module_tool_agent_memory.embeddings.providers import CachedEmbedder
from amplifier_module_tool_agent_memory.memory.models import MemoryStoreInput
from amplifier_module_tool_agent_memory.memory.record import CTX_PENDING
from amplifier_module_tool_agent_memory.memory.restated import RESTATED, add_wording, context_window
from amplifier_module_tool_agent_memory.memory.service import MEMORIES
from amplifier_module_tool_agent_memory.runtime import AgentMemory
from amplifier_module_tool_agent_memory.store.contract import Collection, CollectionSpec, IndexSpec
from amplifier_module_tool_agent_memory.store.edge import acquire_store, release_store
from amplifier_module_tool_agent_memory.store.server import acquire_server_store, release_server_store

pytestmark = pytest.mark.filterwarnings("ignore:Payload indexes have no effect:UserWarning")

DIM = 8
SPEC = CollectionSpec("things", (IndexSpec("kind", "keyword"),), vectors=("dense", "ctx"))
POINT = "00000000-0000-4000-8000-000000000001"
MISSING = "00000000-0000-4000-8000-000000000002"
MARKED = {"kind": "note", "n": 1, "window": "the harbour lantern", CTX_PENDING: True}
EXPECT = {CTX_PENDING: True, "window": "the harbour lantern"}
FIRST = "Our staging cluster runs on three nodes in Frankfurt."
SECOND = "Jenny adopted a grey kitten called Pepper last spring."


def _cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


def _vector(seed: int) -> list[float]:
    rng = random.Random(seed)
    return [rng.uniform(-1, 1) for _ in range(DIM)]


@pytest.fixture(params=["edge", "server"])
def coll(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Collection]:
    """A collection holding one marked point, on one backend."""
    if request.param == "edge":
        store: Any = acquire_store(tmp_path / "edge", "alice", "test-model", DIM)
        release: Callable[[Any], None] = release_store
    else:
        request.getfixturevalue("server")
        store = acquire_server_store(StorageConfig(backend="server", url=SERVER_URL), "alice", "test-model", DIM)
        release = release_server_store
    try:
        collection = store.collection(SPEC)
        collection.upsert([(POINT, {"dense": _vector(1), "ctx": _vector(1)}, dict(MARKED))])
        yield collection
    finally:
        release(store)


def _point(coll: Collection) -> tuple[dict[str, Any], dict[str, list[float]]]:
    [found] = coll.retrieve([POINT], with_vector=True)
    return dict(found.payload or {}), {k: list(v) for k, v in dict(found.vector or {}).items()}


def test_it_writes_when_the_payload_holds_and_then_no_more(coll: Collection) -> None:
    assert coll.update_if(POINT, {"ctx": _vector(2)}, [CTX_PENDING], EXPECT) is True
    payload, vectors = _point(coll)
    assert payload == {k: v for k, v in MARKED.items() if k != CTX_PENDING}  # only the dropped key is gone
    assert _cosine(vectors["ctx"], _vector(2)) > 0.99999
    assert _cosine(vectors["dense"], _vector(1)) > 0.99999  # the vector not named is kept
    # The marker is gone, so the same call holds no more: a second completion writes nothing.
    assert coll.update_if(POINT, {"ctx": _vector(3)}, [CTX_PENDING], EXPECT) is False
    assert _cosine(_point(coll)[1]["ctx"], _vector(2)) > 0.99999


@pytest.mark.parametrize(
    "expect",
    [
        {CTX_PENDING: True, "window": "the harbour"},  # another value (a rebuilt window)
        {CTX_PENDING: True, "absent": "x"},  # a key the payload lacks
        {"n": True},  # the same value as JSON compares it (1 == True), another type
        {"kind": "note", CTX_PENDING: 1},
    ],
    ids=["other value", "missing key", "true is not 1", "1 is not true"],
)
def test_it_writes_nothing_when_the_payload_does_not_hold(coll: Collection, expect: dict[str, Any]) -> None:
    assert coll.update_if(POINT, {"ctx": _vector(2)}, [CTX_PENDING], expect) is False
    payload, vectors = _point(coll)
    assert payload == MARKED
    assert _cosine(vectors["ctx"], _vector(1)) > 0.99999


def test_it_creates_nothing_for_a_missing_point(coll: Collection) -> None:
    assert coll.update_if(MISSING, {"ctx": _vector(2)}, [CTX_PENDING], {}) is False
    assert coll.retrieve([MISSING]) == []
    assert coll.count() == 1


@pytest.mark.parametrize("backend", ["edge", "server"], indirect=True)
def test_a_completion_after_a_merged_wording_still_writes_the_window_vector(
    make_runtime: Callable[..., AgentMemory],
    embedder: CachedEmbedder,
    held: threading.Event,
) -> None:
    # A wording merged into the memory before its completion appends to ctx_text: the conditional write does not
    # hold, and the full check (the window without the wordings) writes the vector all the same.
    rt = make_runtime()
    svc = rt.memory()
    svc.store(MemoryStoreInput(content=FIRST))
    memory_id = svc.store(MemoryStoreInput(content=SECOND)).id
    coll = rt.store().collection(MEMORIES)
    with coll.lock:
        [record] = coll.retrieve([memory_id])
        payload = dict(record.payload or {})
        kept = add_wording(payload, "Jenny's grey kitten is called Pepper.", {"tags": [], "importance": 0.5})
        assert kept
        coll.set_payload(memory_id, kept)
    [merged] = coll.retrieve([memory_id])
    merged_payload = dict(merged.payload or {})
    assert merged_payload[RESTATED] and merged_payload["ctx_text"] != f"{FIRST}\n{SECOND}"
    assert context_window(merged_payload) == f"{FIRST}\n{SECOND}"
    held.set()
    assert svc.settle(120) == 0
    [written] = coll.retrieve([memory_id], with_vector=True)
    assert CTX_PENDING not in (written.payload or {})
    [of_window] = embedder.embed_documents([f"{FIRST}\n{SECOND}"])
    assert _cosine(list(dict(written.vector or {})["ctx"]), of_window) > 0.99999
