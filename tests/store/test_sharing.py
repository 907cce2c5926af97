"""Several real processes on one identity's embedded store (store/sharing.py): no lost write, every write
visible to the others at once, a SIGKILLed owner replaced without losing an acknowledged write, a long
lock holder (an index build, a purge) that only makes the others wait, and cache scopes kept per session.

Each process runs the runtime with the real local model and takes one JSON command a line on stdin,
answering one JSON line on stdout, so the test drives them in a known order.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from amplifier_module_tool_agent_memory.embeddings.providers import CachedEmbedder
from amplifier_module_tool_agent_memory.memory.models import MemoryListInput, MemoryStoreInput
from amplifier_module_tool_agent_memory.memory.ranking import CTX
from amplifier_module_tool_agent_memory.memory.record import CTX_PENDING
from amplifier_module_tool_agent_memory.memory.restated import context_window
from amplifier_module_tool_agent_memory.runtime import AgentMemory
from amplifier_module_tool_agent_memory.store import wire
from amplifier_module_tool_agent_memory.store.owner import TRANSPORT_ENV, read_owner

pytestmark = pytest.mark.slow

PROCESS = r"""
import json, sys, threading, time
from amplifier_module_tool_agent_memory.cache.models import CachePackInput, CacheWriteInput
from amplifier_module_tool_agent_memory.config import parse_config
from amplifier_module_tool_agent_memory.errors import AgentMemoryError
from amplifier_module_tool_agent_memory.identity import ResolvedIdentity
from amplifier_module_tool_agent_memory.memory.models import MemorySearchInput, MemoryStoreInput
from amplifier_module_tool_agent_memory.memory.service import MEMORIES
from amplifier_module_tool_agent_memory.runtime import AgentMemory

class Stalled:
    # The embedder, but a context window's run (a text that is not the memory being stored) never ends.

    def __init__(self, inner):
        self.inner, self.content = inner, None

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def embed_documents(self, texts):
        if self.content is not None and texts != [self.content]:
            threading.Event().wait()
        return self.inner.embed_documents(texts)


rt = AgentMemory(parse_config({"storage_root": sys.argv[1]}), ResolvedIdentity("alice", "config"),
                 session_id=sys.argv[2])
svc = rt.memory()

def owner():
    return bool(rt.store().is_owner)

print(json.dumps({"ready": True, "owner": owner()}), flush=True)
for line in sys.stdin:
    cmd = json.loads(line)
    op = cmd["op"]
    try:
        if op == "store":
            if isinstance(svc.embedder, Stalled):
                svc.embedder.content = cmd["content"]
            out = {"id": svc.store(MemoryStoreInput(content=cmd["content"])).id}
        elif op == "get":
            out = {"found": [str(p.id) for p in svc.coll.retrieve(cmd["ids"])]}
        elif op == "search":
            out = {"contents": [h["content"] for h in svc.search(MemorySearchInput(query=cmd["query"], limit=3))]}
        elif op == "forget":
            out = {"forgotten": svc.forget(cmd["id"])["id"]}
        elif op == "index":
            svc.coll.optimize()
            out = {}
        elif op == "index_soon":
            svc.coll.index_soon(cmd["min"])
            out = {}
        elif op == "index_pending":
            local = rt.store().local_store
            out = {"pending": local is not None and local.collection(MEMORIES).index_build_pending}
        elif op == "hold":
            # Holds the collection lock as a long index build or engine purge does. A client takes it at the owner
            # with its first call under it: the count.
            with svc.coll.lock:
                svc.coll.count()
                time.sleep(cmd["seconds"])
            out = {}
        elif op == "cache_write":
            out = rt.cache().write(CacheWriteInput(content=cmd["content"], scope=cmd["scope"], kind="fact"))
        elif op == "cache_pack":
            out = rt.cache().pack(CachePackInput(scope=cmd["scope"], token_budget=2000))
        elif op == "owner":
            out = {"owner": owner()}
        elif op == "stall_ctx":
            # This process's context-window runs never end from now on: it dies (SIGKILL) with its stores marked
            # ctx_pending, as a process killed between its answer and the completion does.
            svc.embedder = Stalled(svc.embedder)
            out = {}
        else:
            break
    except AgentMemoryError as exc:
        out = {"error": exc.kind, "message": str(exc)}
    print(json.dumps(out, default=str), flush=True)
rt.close()
"""


class Proc:
    """One process of the identity, driven one command at a time."""

    def __init__(self, root: Path, session: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", PROCESS, str(root), session],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env={**os.environ, "HF_HUB_OFFLINE": "1"},
        )
        self.hello = self._reply()

    def _reply(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, f"the process exited ({self.proc.poll()})"
        reply: dict[str, Any] = json.loads(line)
        return reply

    def send(self, op: str, **args: Any) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"op": op, **args}) + "\n")
        self.proc.stdin.flush()

    def ask(self, op: str, **args: Any) -> dict[str, Any]:
        self.send(op, **args)
        reply = self._reply()
        assert "error" not in reply, reply
        return reply

    def quit(self) -> None:
        if self.proc.poll() is None:
            self.send("quit")
            self.proc.wait(timeout=120)


@pytest.fixture
def processes(root: Path) -> Iterator[Callable[[str], Proc]]:
    started: list[Proc] = []

    def start(session: str) -> Proc:
        proc = Proc(root, session)
        started.append(proc)
        return proc

    yield start
    for proc in started:
        try:
            proc.quit()
        except Exception:
            proc.proc.kill()


FACTS = [
    "The staging database is restored from the nightly snapshot at 02:00 UTC.",
    "Invoices for the Berlin office are approved by Marta Nowak.",
    "The mobile app's crash reports go to the #mobile-alerts channel.",
    "Our Kubernetes clusters run in eu-west-1 and us-east-2.",
    "The quarterly security review is led by the platform team.",
    "Design tokens live in the packages/tokens folder of the monorepo.",
]


# TCP on 127.0.0.1 is what Windows uses (no AF_UNIX in its Python): forced here so Linux runs that path too.
@pytest.mark.parametrize("transport", ["unix", "tcp"])
def test_three_processes_share_every_write_at_once_and_lose_none(
    processes: Callable[[str], Proc],
    make_runtime: Callable[..., AgentMemory],
    root: Path,
    transport: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if transport == "tcp":
        monkeypatch.setenv(TRANSPORT_ENV, "tcp")
    procs = [processes(f"session-{i}") for i in range(3)]
    assert [p.hello["owner"] for p in procs].count(True) == 1, "exactly one process owns the store"
    published = read_owner(root / "alice")
    assert published is not None and published["family"] == transport
    assert (root / "alice" / ".sock").exists() == (transport == "unix")
    written: list[str] = []
    for n, fact in enumerate(FACTS):
        writer = procs[n % 3]
        memory_id = writer.ask("store", content=fact)["id"]
        written.append(memory_id)
        # Acknowledged means visible: every other process finds it with its very next call.
        for other in procs:
            assert memory_id in other.ask("get", ids=[memory_id])["found"]
    for other in procs:
        assert other.ask("get", ids=written)["found"] == written
        top = other.ask("search", query="who approves invoices for the Berlin office?")["contents"]
        assert top[0] == FACTS[1]
    for proc in procs:
        proc.quit()
    listed = make_runtime().memory().list(MemoryListInput(limit=100))["memories"]
    assert {m["id"] for m in listed} == set(written)


@pytest.mark.parametrize("transport", ["unix", "tcp"])
def test_a_sigkilled_owner_is_replaced_and_no_acknowledged_write_is_lost(
    processes: Callable[[str], Proc],
    make_runtime: Callable[..., AgentMemory],
    root: Path,
    transport: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if transport == "tcp":
        monkeypatch.setenv(TRANSPORT_ENV, "tcp")
    owner, other = processes("session-a"), processes("session-b")
    first_owner = read_owner(root / "alice")
    assert first_owner is not None and first_owner["family"] == transport
    assert owner.hello["owner"] and not other.hello["owner"]
    first = owner.ask("store", content=FACTS[0])["id"]
    second = other.ask("store", content=FACTS[1])["id"]

    owner.proc.send_signal(signal.SIGKILL)
    owner.proc.wait(timeout=30)

    # The next call finds the owner gone, takes the store over (replaying its journal) and goes on.
    third = other.ask("store", content=FACTS[2])["id"]
    assert other.ask("owner")["owner"] is True
    new_owner = read_owner(root / "alice")
    assert new_owner is not None and new_owner["family"] == transport and new_owner["pid"] != first_owner["pid"]
    assert other.ask("get", ids=[first, second, third])["found"] == [first, second, third]
    # A process that joins now reaches the new owner.
    late = processes("session-c")
    assert late.hello["owner"] is False
    assert late.ask("search", query="where do crash reports of the mobile app go?")["contents"][0] == FACTS[2]

    # A SIGKILLed client loses nothing either: what it had acknowledged is in the store.
    fourth = late.ask("store", content=FACTS[3])["id"]
    late.proc.send_signal(signal.SIGKILL)
    late.proc.wait(timeout=30)
    assert fourth in other.ask("get", ids=[fourth])["found"]
    other.quit()
    listed = make_runtime().memory().list(MemoryListInput(limit=100))["memories"]
    assert {m["id"] for m in listed} == {first, second, third, fourth}


def test_a_long_lock_holder_an_index_build_or_a_purge_makes_the_others_wait_not_fail(
    processes: Callable[[str], Proc],
) -> None:
    owner, builder = processes("session-a"), processes("session-b")
    ids = [owner.ask("store", content=fact)["id"] for fact in FACTS[:3]]

    # A client holds the owner's collection lock for 3 s, as a long index build does: the owner's own
    # writes wait for it and then succeed; its searches go on meanwhile.
    builder.send("hold", seconds=3)
    assert owner.ask("search", query="nightly snapshot restore")["contents"][0] == FACTS[0]
    stored = owner.ask("store", content=FACTS[3])["id"]
    assert builder._reply() == {}

    # The same the other way round, with a real index build and a real purge (a forget) in the owner.
    owner.send("index")
    assert builder.ask("store", content=FACTS[4])["id"]
    assert owner._reply() == {}
    owner.send("forget", id=ids[0])
    assert builder.ask("search", query="Kubernetes regions")["contents"][0] == FACTS[3]
    assert owner._reply() == {"forgotten": ids[0]}
    assert builder.ask("get", ids=[ids[0], stored])["found"] == [stored]


def test_a_build_a_client_makes_due_is_scheduled_in_the_owner_and_the_client_does_not_wait(
    processes: Callable[[str], Proc],
) -> None:
    owner, client = processes("session-a"), processes("session-b")
    assert owner.hello["owner"] and not client.hello["owner"]
    for fact in FACTS[:3]:
        client.ask("store", content=fact)
    assert owner.ask("index_pending") == {"pending": False}
    # Three unindexed memories and a threshold of 2: the owner schedules the build for its next idle time
    # (30 s), and the client's call is answered at once instead of waiting for a build.
    assert client.ask("index_soon", min=2) == {}
    assert owner.ask("index_pending") == {"pending": True}
    assert client.ask("search", query="nightly snapshot restore")["contents"][0] == FACTS[0]


def test_cache_scopes_stay_with_their_sessions_and_a_shared_scope_stays_whole(processes: Callable[[str], Proc]) -> None:
    one, two = processes("session-a"), processes("session-b")
    one.ask("cache_write", content="The failing test is test_refund_rounding in billing/tests.", scope="task:a")
    two.ask("cache_write", content="The flaky job is the arm64 docker build.", scope="task:b")
    one.ask("cache_write", content="Refunds round half to even since v2.3.", scope="task:a")

    pack_a = json.dumps(one.ask("cache_pack", scope="task:a"))
    pack_b = json.dumps(two.ask("cache_pack", scope="task:b"))
    assert "test_refund_rounding" in pack_a and "half to even" in pack_a and "arm64" not in pack_a
    assert "arm64" in pack_b and "refund" not in pack_b.lower()

    # One scope written by both: each process's view follows the other's writes (the open block's version).
    one.ask("cache_write", content="Deploys are frozen until Thursday noon.", scope="task:shared")
    two.ask("cache_write", content="The release branch is release/4.2.", scope="task:shared")
    one.ask("cache_write", content="QA signs off in the #release channel.", scope="task:shared")
    for proc in (one, two):
        pack = json.dumps(proc.ask("cache_pack", scope="task:shared"))
        assert "frozen until Thursday" in pack and "release/4.2" in pack and "signs off" in pack


def _count_requests(
    monkeypatch: pytest.MonkeyPatch, others: list[list[str]] | None = None
) -> list[list[str]]:
    """The requests this thread sends the owner from now on: the calls each carries (a batch carries several);
    the other threads' (a context vector written after the answer) into ``others``."""
    requests: list[list[str]] = []
    send = wire.send
    me = threading.get_ident()

    def counting(sock: Any, message: Any) -> None:
        if "op" not in message:  # a new connection's hello (another thread's first request), not a call
            send(sock, message)
            return
        calls = message["a"]["calls"] if message.get("op") == "batch" else [message]
        ops = [str(c["op"]) for c in calls]
        if threading.get_ident() == me:
            requests.append(ops)
        elif others is not None:
            others.append(ops)
        send(sock, message)

    monkeypatch.setattr(wire, "send", counting)
    return requests


def test_a_memory_store_through_a_client_sends_two_requests_and_holds_no_lock_across_one(
    processes: Callable[[str], Proc],
    make_runtime: Callable[..., AgentMemory],
    embedder: CachedEmbedder,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    owner = processes("session-owner")
    assert owner.hello["owner"]
    client = make_runtime(session_id="session-client")
    svc = client.memory()
    # The first store opens the collection at the owner and reads this session's thread once.
    svc.store(MemoryStoreInput(content=FACTS[0], kind="fact"))
    assert client.store().is_owner is False
    others: list[list[str]] = []
    requests = _count_requests(monkeypatch, others)

    stored = svc.store(MemoryStoreInput(content=FACTS[1], kind="fact"))
    assert stored.created
    # The early duplicate check with the nearest memory of its kind (one call, no lock), then the duplicate check
    # again and the write as one call the owner runs under its lock: no lock is held across a round trip.
    # (Session 6: 8 requests; session 7: [scroll] [query] [lock+scroll] [upsert] [unlock]; session 8: [scroll]
    # [query] [upsert_unless].)
    assert requests == [["query_unless"], ["upsert_unless"]]
    # Then, after the answer, on the thread writing context vectors (its own connection: the collection is opened
    # there with its first request): one conditional write the owner runs under its lock (the point still marked,
    # its window unchanged: then its vector, its marker removed), so the owner's lock waits on no round trip.
    # Session 10: the answer no longer waits for the context window's vector; its completion was [lock+retrieve]
    # [update_vector+delete_payload+unlock] (the owner's lock held across a round trip). Session 11: one request.
    assert svc.settle(60) == 0
    assert others == [["open", "update_if"]]
    assert requests == [["query_unless"], ["upsert_unless"]]
    # Written at the owner: the client reads the context window's vector back through it, the marker gone.
    assert _context_vector_written(svc.coll, stored.id, embedder)

    requests.clear()
    again = svc.store(MemoryStoreInput(content=FACTS[1], kind="fact"))
    assert again.duplicate and again.id == stored.id
    assert requests == [["query_unless"]]

    # Acknowledged means in the store, and the lock was released: the owner's own store goes through.
    assert owner.ask("get", ids=[stored.id])["found"] == [stored.id]
    assert owner.ask("store", content=FACTS[2])["id"]


def test_a_client_lock_is_sent_with_its_first_call_and_released_after_a_failed_one(
    processes: Callable[[str], Proc], make_runtime: Callable[..., AgentMemory], monkeypatch: pytest.MonkeyPatch
) -> None:
    owner = processes("session-owner")
    client = make_runtime(session_id="session-client")
    coll = client.memory().coll
    assert coll.count() == 0 and client.store().is_owner is False
    requests = _count_requests(monkeypatch)

    # A lock under which nothing is called is never sent.
    with coll.lock:
        pass
    assert requests == []

    # The owner's error comes back as its own class; the lock that went with the failed call is released.
    with pytest.raises(ValueError, match="not-a-uuid"), coll.lock:
        coll.retrieve(["not-a-uuid"])
    assert requests == [["lock", "retrieve"], ["unlock"]]
    assert owner.ask("store", content=FACTS[3])["id"]
    assert coll.count() == 1


def test_a_duplicate_another_process_stores_after_the_early_check_is_answered_at_the_write(
    processes: Callable[[str], Proc], make_runtime: Callable[..., AgentMemory], monkeypatch: pytest.MonkeyPatch
) -> None:
    owner = processes("session-owner")
    client = make_runtime(session_id="session-client")
    svc = client.memory()
    assert svc.coll.count() == 0 and client.store().is_owner is False
    first = owner.ask("store", content=FACTS[0])["id"]
    # The race: the owner's write lands after this process's early check found nothing (the early check is made
    # to miss; the write's own check, at the owner under its lock, must still find the owner's memory).
    early = svc._nearest_unless_stored
    monkeypatch.setattr(svc, "_nearest_unless_stored", lambda *args: (None, early(*args)[1]))
    again = svc.store(MemoryStoreInput(content=FACTS[0], kind="fact"))
    assert again.duplicate and not again.created and again.id == first
    assert svc.coll.count() == 1
    monkeypatch.setattr(svc, "_nearest_unless_stored", early)
    stored = svc.store(MemoryStoreInput(content=FACTS[1], kind="fact"))
    assert stored.created and owner.ask("get", ids=[stored.id])["found"] == [stored.id]


def test_a_process_that_takes_the_store_over_or_sees_another_leave_runs_its_takeover_hooks(
    processes: Callable[[str], Proc], make_runtime: Callable[..., AgentMemory], monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a process that ended left half done (a context vector not yet written) is finished by the owner: the
    hooks run when this process takes the store over from a dead owner, and in an owner when a client leaves."""
    owner = processes("session-owner")
    client = make_runtime(session_id="session-client")
    client.memory().coll.count()
    store = client.store()
    assert store.is_owner is False
    ran: list[bool] = []
    done = threading.Event()

    def hook() -> None:
        ran.append(store.is_owner)
        done.set()

    remove = store.on_takeover(hook)
    owner.ask("store", content=FACTS[0])
    assert not done.is_set(), "no hook while the owner lives"

    owner.proc.send_signal(signal.SIGKILL)
    owner.proc.wait(timeout=30)
    assert client.memory().coll.count() == 1  # the next call takes the store over
    assert done.wait(timeout=60), "the takeover ran the hook"
    assert ran == [True]

    # Now the owner: a client that joins and leaves (quits or dies) runs it again.
    done.clear()
    late = processes("session-late")
    assert late.hello["owner"] is False and late.ask("get", ids=[])["found"] == []
    late.quit()
    assert done.wait(timeout=60), "a leaving client ran the owner's hook"
    assert all(ran)
    # A removed hook stays removed; the hooks run in order, so one added after it has run when it would have.
    remove()
    runs = len(ran)
    sentinel = threading.Event()
    store.on_takeover(sentinel.set)
    again = processes("session-again")
    again.ask("get", ids=[])
    again.proc.send_signal(signal.SIGKILL)
    again.proc.wait(timeout=30)
    assert sentinel.wait(timeout=60), "a SIGKILLed client ran the owner's hooks"
    assert len(ran) == runs


def _cosine(a: Any, b: Any) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return float(dot / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b)))


def _context_vector_written(coll: Any, memory_id: str, embedder: CachedEmbedder) -> bool:
    """The memory's ctx vector is its context window's embedding and its marker is gone (else it still waits)."""
    [record] = coll.retrieve([memory_id], with_vector=True)
    payload = dict(record.payload or {})
    if payload.get(CTX_PENDING):
        return False
    [window] = embedder.embed_documents([context_window(payload)])
    assert _cosine(record.vector[CTX], window) > 0.99999
    assert _cosine(record.vector[CTX], record.vector["dense"]) < 0.999  # told apart from the placeholder
    return True


def _wait_written(coll: Any, memory_id: str, embedder: CachedEmbedder, bound_s: float = 120.0) -> bool:
    """Polls until the context vector is written (another thread or process writes it); False past ``bound_s``."""
    deadline = time.monotonic() + bound_s
    while time.monotonic() < deadline:
        if _context_vector_written(coll, memory_id, embedder):
            return True
        time.sleep(0.1)
    return False


@pytest.mark.parametrize("dies", ["owner", "client"])
def test_a_context_vector_a_killed_process_never_wrote_is_written_by_the_owner_after_it(
    processes: Callable[[str], Proc],
    make_runtime: Callable[..., AgentMemory],
    embedder: CachedEmbedder,
    dies: str,
) -> None:
    """A process SIGKILLed between a store's answer and its context vector leaves the marker: the process that
    owns the store next (a client that takes over a dead owner; the owner, when a client dies) writes the vector."""
    if dies == "owner":
        doomed = processes("session-doomed")
        survivor = make_runtime(session_id="session-survivor")
    else:
        survivor = make_runtime(session_id="session-survivor")
        survivor.memory().coll.count()  # owns the store first
        doomed = processes("session-doomed")
    svc = survivor.memory()
    assert doomed.hello["owner"] is (dies == "owner") and survivor.store().is_owner is (dies != "owner")
    doomed.ask("store", content=FACTS[0])
    doomed.ask("stall_ctx")
    memory_id = doomed.ask("store", content=FACTS[1])["id"]
    [record] = svc.coll.retrieve([memory_id])
    assert (record.payload or {}).get(CTX_PENDING) is True, "acknowledged, its context vector not written yet"

    doomed.proc.send_signal(signal.SIGKILL)
    doomed.proc.wait(timeout=30)
    assert svc.coll.count() == 2  # a call: the survivor takes the store over if it was a client
    assert survivor.store().is_owner
    assert _wait_written(svc.coll, memory_id, embedder), "the marker was left for the next owner to repair"


def test_writes_under_a_client_lock_go_with_its_next_request_and_a_failed_one_fails_the_step(
    processes: Callable[[str], Proc], make_runtime: Callable[..., AgentMemory], monkeypatch: pytest.MonkeyPatch
) -> None:
    owner = processes("session-owner")
    client = make_runtime(session_id="session-client")
    coll = client.memory().coll
    stored = owner.ask("store", content=FACTS[0])["id"]
    assert coll.count() == 1 and client.store().is_owner is False
    requests = _count_requests(monkeypatch)

    with coll.lock:
        coll.set_payload(stored, {"reviewed": True})  # answers nothing: kept for the next request
        [point] = coll.retrieve([stored])  # which carries it first: this thread reads its own write
        assert (point.payload or {}).get("reviewed") is True
        coll.delete_payload(stored, ["reviewed"])
    assert requests == [["lock", "set_payload", "retrieve"], ["delete_payload", "unlock"]]
    [point] = coll.retrieve([stored])
    assert "reviewed" not in (point.payload or {})

    # A write the owner refuses (a vector for a point that is not there) fails where the step ends, and the lock is
    # released all the same: the owner's own store goes through.
    missing = str(uuid.uuid4())
    with pytest.raises(RuntimeError, match=f"No point with id {missing}"), coll.lock:
        coll.update_vector(missing, CTX, [0.0] * 384)
    assert owner.ask("store", content=FACTS[1])["id"]
    assert coll.count() == 2
