"""The owner's batched request (store/owner.py): several collection calls of one process in one round trip,
run in order on the real engine, each answered with its own result or error; after a failed call the later
ones are not run, while opening a collection and its lock and unlock always run (a process's locks stay as it
counts them). Driven over the owner's real socket with the wire's own framing. Also the owner's single calls
(upsert_unless, query_unless), packed vectors, and its interpreter's switch interval while it serves."""

from __future__ import annotations

import random
import socket
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from amplifier_module_tool_agent_memory.memory.service import MEMORIES
from amplifier_module_tool_agent_memory.store import query_wire, wire
from amplifier_module_tool_agent_memory.store.edge import acquire_store, release_store
from amplifier_module_tool_agent_memory.store.owner import SERVING_SWITCH_INTERVAL_S, OwnerServer, connect, read_owner
from amplifier_module_tool_agent_memory.store.query import Nearest, Scroll, Search, where

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
    wire.send(sock, {"token": info["token"], "protocol": wire.PROTOCOL})
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


def test_upsert_unless_writes_once_and_answers_the_point_that_was_there(served: OwnerServer) -> None:
    sock = _client(served)
    assert "r" in _ask(sock, OPEN)
    first, point = _point(3)
    point[2]["content_hash"] = "h3"
    second, again = _point(4)
    again[2]["content_hash"] = "h3"
    unless = query_wire.encode(where(content_hash="h3"))
    assert _ask(sock, {"op": "upsert_unless", "c": "memories", "a": {"points": [point], "unless": unless}}) == {
        "r": None
    }
    # The second point has the same hash: nothing written, the first one's id answered.
    answer = _ask(sock, {"op": "upsert_unless", "c": "memories", "a": {"points": [again], "unless": unless}})
    assert answer == {"r": first}
    found = _ask(sock, {"op": "retrieve", "c": "memories", "a": {"ids": [first, second], "with_vector": False}})
    assert [p["id"] for p in found["r"]] == [first]
    sock.close()


def test_update_if_writes_a_marked_point_once_and_never_a_missing_one(served: OwnerServer) -> None:
    sock = _client(served)
    assert "r" in _ask(sock, OPEN)
    marked, point = _point(7)
    point[2]["ctx_pending"] = True
    assert _ask(sock, {"op": "upsert", "c": "memories", "a": {"points": [point]}}) == {"r": None}
    vec = [0.0] * DIM
    vec[8] = 1.0

    def update_if(pid: str) -> Any:
        return _ask(sock, {"op": "update_if", "c": "memories", "a": {
            "id": pid, "vectors": wire.vectors_out({"ctx": vec}), "drop": ["ctx_pending"],
            "expect": {"ctx_pending": True, "content": "memory 7"}}})

    assert update_if(marked) == {"r": True}
    found = _ask(sock, {"op": "retrieve", "c": "memories", "a": {"ids": [marked], "with_vector": True}})["r"][0]
    assert "ctx_pending" not in found["payload"] and found["payload"]["content"] == "memory 7"
    assert wire.vectors_in(found["vector"])["ctx"][8] == pytest.approx(1.0)
    # Unmarked now: the same call writes nothing; a missing point is answered False, not created.
    assert update_if(marked) == {"r": False}
    missing = str(uuid.uuid4())
    assert update_if(missing) == {"r": False}
    assert _ask(sock, {"op": "retrieve", "c": "memories", "a": {"ids": [missing], "with_vector": False}}) == {"r": []}
    sock.close()


def test_query_unless_answers_the_duplicate_or_the_search_in_one_call(served: OwnerServer) -> None:
    sock = _client(served)
    assert "r" in _ask(sock, OPEN)
    near, point = _point(5)
    point[2]["content_hash"] = "h5"
    far, other = _point(6)
    other[2]["content_hash"] = "h6"
    assert _ask(sock, {"op": "upsert", "c": "memories", "a": {"points": [point, other]}}) == {"r": None}
    vec = [0.0] * DIM
    vec[5] = 1.0
    search = query_wire.encode(Search(Nearest(vec, using="dense"), limit=1, filter=where(kind="note"),
                                      with_vector=("dense",)))

    def ask(digest: str) -> Any:
        unless = query_wire.encode(where(content_hash=digest))
        return _ask(sock, {"op": "query_unless", "c": "memories", "a": {"request": search, "unless": unless}})["r"]

    # No memory with this hash: the search's points, nearest first, with the vector the judgement compares.
    found, points = ask("h-new")
    assert found is None and [p["id"] for p in points] == [near]
    assert wire.point_in(points[0]).vector == {"dense": vec}
    # A memory with this hash (not the nearest one): its id, and no search run.
    assert ask("h6") == [far, []]
    sock.close()


def test_vectors_cross_the_socket_packed_and_exact(served: OwnerServer) -> None:
    sock = _client(served)
    assert "r" in _ask(sock, OPEN)
    rng = random.Random(7)
    vec = [rng.uniform(-1, 1) for _ in range(DIM)]
    packed, plain = str(uuid.uuid4()), str(uuid.uuid4())
    sent = wire.vectors_out({"dense": vec, "ctx": vec})
    assert set(sent["dense"]) == {query_wire.FLOATS}  # sent packed, not as 384 JSON numbers
    # The same vector packed, and as plain JSON lists (an older client's, still read as they are): the engine keeps
    # the same values for both, so nothing was lost on the way.
    points = [[packed, sent, {"content": "packed", "kind": "note"}],
              [plain, {"dense": vec, "ctx": vec}, {"content": "plain", "kind": "note"}]]
    assert _ask(sock, {"op": "upsert", "c": "memories", "a": {"points": points}}) == {"r": None}
    found = _ask(sock, {"op": "retrieve", "c": "memories", "a": {"ids": [packed, plain], "with_vector": True}})["r"]
    assert set(found[0]["vector"]["dense"]) == {query_wire.FLOATS}  # answered packed too
    a, b = (wire.point_in(p).vector for p in found)
    assert isinstance(a, dict) and a == b and len(a["dense"]) == DIM
    norm = sum(v * v for v in vec) ** 0.5
    assert a["dense"][:3] == pytest.approx([v / norm for v in vec[:3]], rel=1e-5)  # cosine: stored normalised
    sock.close()


def test_a_retrieve_over_the_socket_answers_only_the_vectors_named(served: OwnerServer) -> None:
    sock = _client(served)
    assert "r" in _ask(sock, OPEN)
    pid, point = _point(3)
    assert _ask(sock, {"op": "upsert", "c": "memories", "a": {"points": [point]}}) == {"r": None}
    for asked, names in ((["dense"], {"dense"}), (True, {"dense", "ctx"})):
        [found] = _ask(sock, {"op": "retrieve", "c": "memories", "a": {"ids": [pid], "with_vector": asked}})["r"]
        vector = wire.point_in(found).vector
        assert isinstance(vector, dict) and set(vector) == names and vector["dense"][3] == pytest.approx(1.0)
    sock.close()


def test_packing_floats_is_exact_and_leaves_everything_else_alone() -> None:
    rng = random.Random(11)
    values = [rng.uniform(-1e300, 1e300) for _ in range(50)] + [0.1, -0.0, 5e-324, float("inf")]
    assert query_wire.unpack_floats(query_wire.pack_floats(values)) == values
    for other in ([1, 2, 3] * 5, [0.5, 1.5], ["a"] * 10, [0.5] * 9 + [1], None, "text"):
        assert query_wire.pack_floats(other) is other
    request = Search(Nearest(values[:DIM] * 8, using="dense"), limit=3)
    assert query_wire.decode(query_wire.encode(request)) == request


def _until(check: Any, seconds: float = 10.0) -> bool:
    """Whether ``check()`` came true within ``seconds`` (a serving thread ends after its socket closes)."""
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_the_switch_interval_is_short_while_another_process_is_served_and_put_back_after(
    served: OwnerServer,
) -> None:
    before = sys.getswitchinterval()
    assert before > SERVING_SWITCH_INTERVAL_S  # the interpreter's default, 5 ms
    # A connection that is refused serves no one: nothing changes.
    info = read_owner(served.store_path)
    assert info is not None
    stranger = connect(info)
    wire.send(stranger, {"token": "0" * 64, "protocol": wire.PROTOCOL})
    assert "e" in wire.receive(stranger)
    stranger.close()
    assert sys.getswitchinterval() == before
    # Two clients served: short while either is there, the host's own interval back after the last leaves.
    one, two = _client(served), _client(served)
    assert sys.getswitchinterval() == pytest.approx(SERVING_SWITCH_INTERVAL_S)
    one.close()
    assert _until(lambda: served.connections == 1)
    assert sys.getswitchinterval() == pytest.approx(SERVING_SWITCH_INTERVAL_S)
    two.close()
    assert _until(lambda: served.connections == 0)
    assert sys.getswitchinterval() == before


def test_a_client_that_has_its_answer_is_served_even_as_another_leaves(served: OwnerServer) -> None:
    # Clients handing over one to the next: each one that has its hello answer keeps the interval short, whatever the
    # other's leaving does meanwhile (the answer once went out before the serving thread counted its client, so a
    # leaving client could put the default back under a newcomer: CI, session 15).
    before = sys.getswitchinterval()
    current = _client(served)
    for _ in range(300):
        newcomer = _client(served)
        assert sys.getswitchinterval() == pytest.approx(SERVING_SWITCH_INTERVAL_S)
        current.close()
        assert _until(lambda: served.connections == 1)
        assert sys.getswitchinterval() == pytest.approx(SERVING_SWITCH_INTERVAL_S)
        current = newcomer
    current.close()
    assert _until(lambda: served.connections == 0)
    assert sys.getswitchinterval() == before


def test_an_interval_the_host_sets_while_serving_is_kept(served: OwnerServer) -> None:
    before = sys.getswitchinterval()
    sock = _client(served)
    try:
        sys.setswitchinterval(0.002)  # the host's own choice, made while a client is served
        sock.close()
        assert _until(lambda: served.connections == 0)
        assert sys.getswitchinterval() == pytest.approx(0.002)
    finally:
        sys.setswitchinterval(before)
