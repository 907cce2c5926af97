"""The owner's batched request (store/owner.py): several collection calls of one process in one round trip,
run in order on the real engine, each answered with its own result or error; after a failed call the later
ones are not run, while opening a collection and its lock and unlock always run (a process's locks stay as it
counts them). Driven over the owner's real socket with the wire's own framing."""

from __future__ import annotations

import socket
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from amplifier_module_tool_agent_memory.memory.service import MEMORIES
from amplifier_module_tool_agent_memory.store import query_wire, wire
from amplifier_module_tool_agent_memory.store.edge import acquire_store, release_store
from amplifier_module_tool_agent_memory.store.owner import OwnerServer, connect, read_owner
from amplifier_module_tool_agent_memory.store.query import Scroll

DIM = 384


@pytest.fixture
def served(root: Path) -> Iterator[OwnerServer]:
    store = acquire_store(root, "alice", "test-model", DIM)
    server = OwnerServer(store.path, store.collection, {"model_id": "test-model", "dim": DIM})
    server.start()
    yield server
    server.stop()
    release_store(store)


def _client(server: OwnerServer) -> socket.socket:
    info = read_owner(server.store_path)
    assert info is not None
    sock = connect(info)
    wire.send(sock, {"token": info["token"]})
    assert "r" in wire.receive(sock)
    return sock


def _ask(sock: socket.socket, message: dict[str, Any]) -> Any:
    wire.send(sock, message)
    return wire.receive(sock)


def _point(n: int) -> tuple[str, list[Any]]:
    pid = str(uuid.uuid4())
    vec = [0.0] * DIM
    vec[n] = 1.0
    return pid, [pid, {"dense": vec, "ctx": vec}, {"content": f"memory {n}", "kind": "note"}]


OPEN = {"op": "open", "c": None, "a": {"spec": wire.spec_out(MEMORIES)}}
SCROLL_ALL = {"op": "scroll", "c": "memories", "a": {"request": query_wire.encode(Scroll(limit=10))}}


def test_a_batch_answers_each_call_in_order(served: OwnerServer) -> None:
    sock = _client(served)
    first, point = _point(0)
    answer = _ask(sock, {"op": "batch", "c": None, "a": {"calls": [
        OPEN,
        {"op": "lock", "c": "memories", "a": {}},
        {"op": "upsert", "c": "memories", "a": {"points": [point]}},
        {"op": "retrieve", "c": "memories", "a": {"ids": [first], "with_vector": False}},
        {"op": "count", "c": "memories", "a": {"filter": None}},
        {"op": "unlock", "c": "memories", "a": {}},
    ]}})
    answers = answer["r"]
    assert [sorted(a) for a in answers] == [["r"]] * 6
    assert answers[3]["r"][0]["id"] == first and answers[3]["r"][0]["payload"]["content"] == "memory 0"
    assert answers[4]["r"] == 1  # the upsert before it in the same batch is seen
    sock.close()


def test_after_a_failed_call_the_later_ones_are_not_run_but_the_unlock_is(served: OwnerServer) -> None:
    sock = _client(served)
    kept, point = _point(1)
    skipped, later = _point(2)
    answers = _ask(sock, {"op": "batch", "c": None, "a": {"calls": [
        OPEN,
        {"op": "lock", "c": "memories", "a": {}},
        {"op": "upsert", "c": "memories", "a": {"points": [point]}},
        {"op": "retrieve", "c": "memories", "a": {"ids": ["not-a-uuid"], "with_vector": False}},
        {"op": "upsert", "c": "memories", "a": {"points": [later]}},
        {"op": "no_such_call", "c": "memories", "a": {}},
        {"op": "unlock", "c": "memories", "a": {}},
    ]}})["r"]
    assert "r" in answers[2]
    # The failed call names its own error (the engine's, with the class the client raises again)...
    assert answers[3]["e"]["type"] == "ValueError" and "not-a-uuid" in answers[3]["e"]["message"]
    # ...the later calls are answered "not run" and were not run...
    for skipped_answer in answers[4:6]:
        assert skipped_answer["e"]["type"] == "NotRun" and "call 3" in skipped_answer["e"]["message"]
    # ...and the unlock ran.
    assert answers[6] == {"r": None}
    found = _ask(sock, {"op": "retrieve", "c": "memories", "a": {"ids": [kept, skipped], "with_vector": False}})
    assert [p["id"] for p in found["r"]] == [kept]

    # The lock is free: another process's connection takes and releases it.
    other = _client(served)
    taken: list[Any] = []

    def lock_and_release() -> None:
        taken.append(_ask(other, OPEN))
        taken.append(_ask(other, {"op": "batch", "c": None, "a": {"calls": [
            {"op": "lock", "c": "memories", "a": {}}, SCROLL_ALL, {"op": "unlock", "c": "memories", "a": {}}]}}))

    thread = threading.Thread(target=lock_and_release, daemon=True)
    thread.start()
    thread.join(timeout=60)
    assert not thread.is_alive(), "the failed batch left the collection locked"
    assert [sorted(a) for a in taken[1]["r"]] == [["r"]] * 3
    sock.close()
    other.close()


def test_a_batch_inside_a_batch_is_refused_and_stops_the_rest(served: OwnerServer) -> None:
    sock = _client(served)
    answers = _ask(sock, {"op": "batch", "c": None, "a": {"calls": [
        OPEN,
        {"op": "batch", "c": None, "a": {"calls": [SCROLL_ALL]}},
        SCROLL_ALL,
    ]}})["r"]
    assert "r" in answers[0]
    assert answers[1]["e"]["type"] == "ValueError" and "batch" in answers[1]["e"]["message"]
    assert answers[2]["e"]["type"] == "NotRun"
    # The connection still serves.
    assert _ask(sock, SCROLL_ALL)["r"][0] == []
    sock.close()
