"""Several processes on one identity's embedded store: errors, lost writes, visibility, SIGKILL, latency.

``python benchmarks/sharing.py`` runs, in one go (``--phases`` picks some):

- ``share``: three processes (one Amplifier session: the module mounted on amplifier-core's
  MockCoordinator, its tools called; and two ``agent-memory mcp`` servers driven by the MCP SDK's
  client over stdio) on one identity for ``--seconds`` (60). Each stores one memory and runs one
  search every 0.3 s, and after each tick looks up every write the others acknowledged since
  (``memory_get``): errors, writes acknowledged but missing at the end, and how long after its
  acknowledgement each write was first found by another process (bounded below by the 0.3 s tick).
- ``kill``: the same three, then the owner of the store is SIGKILLed, later one of the others;
  every write acknowledged before (by the killed ones too) must be there at the end; prints the
  errors and the longest call while the store changed owners.
- ``wire``: what the socket adds to the store's own calls at ``--size`` memories: a hybrid search
  request and a retrieve, timed in the owner, then from a client through it (no embedding).
- ``latency``: at ``--size`` (10k) memories, per-call latency of ``memory_store`` and
  ``memory_search`` (Amplifier tools, same load) with one process alone, three processes on three
  identities (the same CPU load, nothing shared), three sharing one identity (this design: one
  owner serving the others), and three handing the store over through its lock for every call
  (design (a): open the store, replay, call, close). Rounds alternate the variants, so machine
  load falls on all alike; compare within one run.

Each worker is a subprocess of this script (``--worker``); it logs every acknowledged write and
every call as a JSON line, appended and unbuffered, so a SIGKILLed worker's acknowledged writes
are known. Memory texts and queries come from benchmarks/speed.py's generator; the 10k store is
filled through MemoryService.import_records with its cached embeddings (content vectors; the context
vector of a filled memory is its content vector). Skips (exit 0) when the
MCP SDK is not installed. Prints medians and p95s; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import p50_p95, print_table

IDENTITY = "shared"
TICK_S = 0.3
FILL_BASE = 1_000_000  # texts of the writes during the run: the generator's memories from here on


# ---------------------------------------------------------------------------------------------
# Workers
# ---------------------------------------------------------------------------------------------


class Log:
    """JSON lines appended with one write each (O_APPEND): whatever was acknowledged is on disk at a SIGKILL."""

    def __init__(self, path: Path) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)

    def put(self, **record: Any) -> None:
        os.write(self.fd, (json.dumps(record) + "\n").encode())


class Peers:
    """Reads the other workers' logs as they grow: the writes they acknowledged, not yet found here."""

    def __init__(self, folder: Path, me: str) -> None:
        self.folder, self.me = folder, me
        self.offsets: dict[Path, int] = {}
        self.pending: dict[str, float] = {}
        # Writes acknowledged before this process was ready are not timed (it was still loading).
        self.since = float("inf")

    def poll(self) -> None:
        for path in self.folder.glob("*.log"):
            if path.stem == self.me:
                continue
            with open(path, "rb") as fh:
                fh.seek(self.offsets.get(path, 0))
                data = fh.read()
            end = data.rfind(b"\n") + 1
            self.offsets[path] = self.offsets.get(path, 0) + end
            for line in data[:end].splitlines():
                record = json.loads(line)
                if record.get("t") == "store" and record.get("created") and record["ack"] >= self.since:
                    self.pending[record["id"]] = record["ack"]


async def _tools_face(root: Path, identity: str) -> tuple[Any, Any]:
    """An Amplifier session: the module mounted on MockCoordinator; call(name, args) -> (ok, body)."""
    from amplifier_core.testing import MockCoordinator

    import amplifier_module_tool_agent_memory as agent_memory

    coordinator = MockCoordinator()
    cleanup = await agent_memory.mount(coordinator, {"storage_root": str(root), "agent_identity": identity})
    tools = coordinator.get("tools")

    async def call(name: str, args: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
        result = await tools[name].execute(args)
        return bool(result.success), (result.output if result.success else result.error)

    return call, cleanup


async def _handover_face(root: Path, identity: str) -> tuple[Any, Any]:
    """Design (a): the store held only while a call runs (opened, journal replayed, closed per call)."""
    from amplifier_module_tool_agent_memory.config import parse_config
    from amplifier_module_tool_agent_memory.embeddings.providers import get_embedder
    from amplifier_module_tool_agent_memory.errors import StoreInUseError
    from amplifier_module_tool_agent_memory.memory.models import MemorySearchInput, MemoryStoreInput
    from amplifier_module_tool_agent_memory.memory.service import MEMORIES, MemoryService
    from amplifier_module_tool_agent_memory.store.edge import acquire_store, release_store

    config = parse_config({"storage_root": str(root)})
    embedder = get_embedder(config.embeddings)

    def run(name: str, args: dict[str, Any]) -> dict[str, Any]:
        while True:
            try:
                store = acquire_store(root, identity, embedder.model_id, embedder.dim)
                break
            except StoreInUseError:
                time.sleep(0.005)
        try:
            svc = MemoryService(store.collection(MEMORIES), embedder, config.memory, thread="handover")
            if name == "memory_store":
                outcome = svc.store(MemoryStoreInput(**args))
                return {"id": outcome.id, "created": outcome.created}
            if name == "memory_search":
                return {"results": svc.search(MemorySearchInput(**args))}
            return {"memory": svc.get(args["id"])}
        finally:
            release_store(store)

    async def call(name: str, args: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
        try:
            return True, await asyncio.to_thread(run, name, args)
        except Exception as exc:
            return False, {"message": str(exc)}

    async def cleanup() -> None:
        return None

    return call, cleanup


def _wire_worker(opts: argparse.Namespace) -> None:
    """The store's calls alone, no embedding: a hybrid search request and a retrieve of its top 5, timed."""
    from speed import queries

    from amplifier_module_tool_agent_memory.config import parse_config
    from amplifier_module_tool_agent_memory.identity import ResolvedIdentity
    from amplifier_module_tool_agent_memory.memory.ranking import build_request
    from amplifier_module_tool_agent_memory.runtime import AgentMemory

    log = Log(opts.logs / f"{opts.name}.log")
    rt = AgentMemory(parse_config({"storage_root": str(opts.root)}), ResolvedIdentity(opts.identity, "config"),
                     session_id=opts.name)
    svc = rt.memory()
    texts = queries(100)
    vectors = [svc.embedder.embed_query(text) for text in texts]
    log.put(t="ready", at=time.time(), pid=os.getpid(), owner=bool(getattr(rt.store(), "is_owner", True)))
    for timed in (False, True):  # the first pass reads the pages in: not timed
        for text, vec in zip(texts, vectors, strict=True):
            started = time.perf_counter()
            hits = svc.coll.query(build_request(text, vec, None, svc.params))
            query_ms = (time.perf_counter() - started) * 1000
            started = time.perf_counter()
            svc.coll.retrieve([str(h.id) for h in hits[:5]])
            retrieve_ms = (time.perf_counter() - started) * 1000
            if timed:
                log.put(t="search", ms=query_ms)
                log.put(t="retrieve", ms=retrieve_ms)
    log.put(t="done", at=time.time())
    time.sleep(opts.seconds)  # an owner stays to serve the other process
    rt.close()


async def _worker(opts: argparse.Namespace) -> None:
    from speed import memory, queries

    log = Log(opts.logs / f"{opts.name}.log")
    peers = Peers(opts.logs, opts.name)
    texts = queries(opts.offset // 1000 + 400)[opts.offset // 1000 :]
    if opts.face == "mcp":
        from mcp import ClientSession, StdioServerParameters, stdio_client

        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "amplifier_module_tool_agent_memory", "mcp", "--identity", opts.identity,
                  "--root", str(opts.root)],
            env={k: v for k, v in os.environ.items() if k != "AMPLIFIER_AGENT_IDENTITY"},
        )
        errlog = open(opts.logs / f"{opts.name}.stderr", "w")  # noqa: SIM115, ASYNC230 - open for the whole run
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()

            async def call(name: str, args: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
                result = await session.call_tool(name, args)
                body = result.structured_content or {}
                return (not result.is_error), (body.get("error", body) if result.is_error else body)

            await _load(opts, call, log, peers, memory, texts)
        return
    face = _handover_face if opts.face == "handover" else _tools_face
    call, cleanup = await face(opts.root, opts.identity)
    try:
        await _load(opts, call, log, peers, memory, texts)
    finally:
        await cleanup()


async def _load(opts: argparse.Namespace, call: Any, log: Log, peers: Peers, memory: Any, texts: list[str]) -> None:
    # The first calls load the model and the comparison's lexicon and join the store: not timed.
    await call("memory_search", {"query": "warm up"})
    ok, body = await call("memory_store", {"content": f"{opts.name} warmed up at {time.time()}", "kind": "note"})
    if ok:
        log.put(t="store", id=body["id"], created=False, ack=time.time(), ms=0.0, warm=True)
    log.put(t="ready", at=time.time(), pid=os.getpid())
    peers.since = time.time()
    stop = asyncio.Event()
    watcher = asyncio.create_task(_watch(call, log, peers, stop)) if opts.check else None
    try:
        await _run_load(opts, call, log, memory, texts)
    finally:
        stop.set()
        if watcher is not None:
            await watcher


async def _run_load(opts: argparse.Namespace, call: Any, log: Log, memory: Any, texts: list[str]) -> None:
    deadline = time.monotonic() + opts.seconds
    k = 0
    while time.monotonic() < deadline:
        tick = time.monotonic()
        content = f"{opts.name} note {k}: " + memory(opts.offset + k)["content"]
        started = time.perf_counter()
        ok, body = await call("memory_store", {"content": content, "kind": "fact"})
        ms = (time.perf_counter() - started) * 1000
        if ok:
            log.put(t="store", id=body["id"], created=bool(body.get("created", True)), ack=time.time(), ms=ms)
        else:
            log.put(t="error", op="memory_store", ms=ms, message=str(body)[:300])
        started = time.perf_counter()
        ok, body = await call("memory_search", {"query": texts[k % len(texts)]})
        ms = (time.perf_counter() - started) * 1000
        log.put(t="search", ms=ms) if ok else log.put(t="error", op="memory_search", ms=ms, message=str(body)[:300])
        k += 1
        await asyncio.sleep(max(0.0, TICK_S - (time.monotonic() - tick)))
    log.put(t="done", at=time.time())


async def _watch(call: Any, log: Log, peers: Peers, stop: asyncio.Event) -> None:
    """Beside the load: look up every write another process acknowledged, as soon as its log shows it.

    A lookup that starts after a write's acknowledgement and does not find it is a miss (the store would not
    be one store); the delay until the first lookup that found it is bounded below by this loop's pace.
    """
    while not stop.is_set():
        peers.poll()
        for memory_id, ack in list(peers.pending.items()):
            started = time.time()
            ok, body = await call("memory_get", {"id": memory_id})
            if ok:
                log.put(t="seen", id=memory_id, delay=time.time() - ack)
                del peers.pending[memory_id]
            elif body.get("type") == "not_found":
                log.put(t="miss", id=memory_id, after=started - ack)
            else:
                log.put(t="error", op="memory_get", message=str(body)[:300])
        await asyncio.sleep(0.05)


# ---------------------------------------------------------------------------------------------
# The parent: phases
# ---------------------------------------------------------------------------------------------


def _spawn(root: Path, logs: Path, name: str, face: str, seconds: float, offset: int, identity: str = IDENTITY,
           check: bool = True) -> subprocess.Popen[bytes]:
    args = [sys.executable, __file__, "--worker", "--root", str(root), "--logs", str(logs), "--name", name,
            "--face", face, "--seconds", str(seconds), "--offset", str(offset), "--identity", identity]
    if check:
        args.append("--check")
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=open(logs / f"{name}.err", "w"))


def _records(logs: Path, name: str | None = None) -> list[dict[str, Any]]:
    out = []
    for path in sorted(logs.glob("*.log")):
        if name is not None and path.stem != name:
            continue
        for line in path.read_text().splitlines():
            record = json.loads(line)
            record["worker"] = path.stem
            out.append(record)
    return out


def _wait_ready(logs: Path, names: list[str], timeout_s: float = 300) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        ready = {r["worker"] for r in _records(logs) if r.get("t") == "ready"}
        if set(names) <= ready:
            return
        time.sleep(0.2)
    raise SystemExit(f"workers not ready after {timeout_s} s: see {logs}/*.err")


def _missing(root: Path, identity: str, ids: list[str]) -> list[str]:
    """The acknowledged ids the store does not hold (read by a fresh process of its own)."""
    script = (
        "import json, sys\n"
        "from amplifier_module_tool_agent_memory.config import parse_config\n"
        "from amplifier_module_tool_agent_memory.identity import ResolvedIdentity\n"
        "from amplifier_module_tool_agent_memory.runtime import AgentMemory\n"
        "ids = json.loads(sys.stdin.read())\n"
        "rt = AgentMemory(parse_config({'storage_root': sys.argv[1]}), ResolvedIdentity(sys.argv[2], 'config'))\n"
        "found = {str(p.id) for p in rt.memory().coll.retrieve(ids)}\n"
        "rt.close()\n"
        "print(json.dumps([i for i in ids if i not in found]))\n"
    )
    out = subprocess.run([sys.executable, "-c", script, str(root), identity], input=json.dumps(ids),
                         capture_output=True, text=True, check=True)
    result: list[str] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def _visibility(records: list[dict[str, Any]]) -> tuple[list[float], int]:
    """Delays until another process found each write, and how many lookups missed a write (started after its
    acknowledgement and did not find it) or never found it though that process ran well after it."""
    ready = {r["worker"]: r["at"] for r in records if r["t"] == "ready"}
    done = {r["worker"]: r["at"] for r in records if r["t"] == "done"}
    seen = {(r["worker"], r["id"]): r["delay"] for r in records if r["t"] == "seen"}
    misses = sum(1 for r in records if r["t"] == "miss")
    delays, late = [], misses
    for w in records:
        if w["t"] != "store" or not w.get("created"):
            continue
        for other in ready:
            if other == w["worker"] or not (ready[other] <= w["ack"] <= done.get(other, 0) - 2.0):
                continue
            delay = seen.get((other, w["id"]))
            if delay is None:
                late += 1
            else:
                delays.append(delay)
    return delays, late


def _summary(records: list[dict[str, Any]]) -> dict[str, Any]:
    stores = [r["ms"] for r in records if r["t"] == "store" and not r.get("warm")]
    searches = [r["ms"] for r in records if r["t"] == "search"]
    seen = [r["delay"] for r in records if r["t"] == "seen"]
    errors = [r for r in records if r["t"] == "error"]
    return {"stores": stores, "searches": searches, "seen": seen, "errors": errors}


def phase_share(opts: argparse.Namespace, work: Path) -> None:
    root, logs = work / "share-root", work / "share-logs"
    root.mkdir()
    logs.mkdir()
    faces = [("amplifier", "tools"), ("mcp-1", "mcp"), ("mcp-2", "mcp")]
    procs = [_spawn(root, logs, name, face, opts.seconds, FILL_BASE + 100_000 * i) for i, (name, face) in
             enumerate(faces)]
    for proc in procs:
        proc.wait()
    records = _records(logs)
    s = _summary(records)
    acked = [r["id"] for r in records if r["t"] == "store"]
    missing = _missing(root, IDENTITY, acked)
    delays, late = _visibility(records)
    print(f"\n== share: {len(faces)} processes (1 Amplifier session, 2 MCP servers), {opts.seconds:.0f} s, "
          f"one store + one search each every {TICK_S} s")
    seen50, seen95 = p50_p95(delays)
    print_table(
        ["calls", "errors", "writes acked", "lost", "found by another", "missed", "seen p50 s",
         "seen p95 s", "seen max s"],
        [[len(s["stores"]) + len(s["searches"]), len(s["errors"]), len(acked), len(missing), len(delays),
          late, seen50, seen95, max(delays, default=float("nan"))]],
    )
    for error in s["errors"][:5]:
        print("  error:", error)
    for name, _ in faces:
        w = _summary([r for r in records if r["worker"] == name])
        print(f"  {name}: store p50/p95 {p50_p95(w['stores'])[0]:.0f}/{p50_p95(w['stores'])[1]:.0f} ms, "
              f"search p50/p95 {p50_p95(w['searches'])[0]:.0f}/{p50_p95(w['searches'])[1]:.0f} ms")


def _owner_pid(root: Path, identity: str) -> int | None:
    try:
        return int(json.loads((root / identity / "owner.json").read_text())["pid"])
    except (OSError, ValueError, KeyError):
        return None


def phase_kill(opts: argparse.Namespace, work: Path) -> None:
    root, logs = work / "kill-root", work / "kill-logs"
    root.mkdir()
    logs.mkdir()
    seconds = max(30.0, opts.kill_seconds)
    faces = [("amplifier", "tools"), ("mcp-1", "mcp"), ("mcp-2", "mcp")]
    procs = {name: _spawn(root, logs, name, face, seconds, FILL_BASE + 500_000 + 100_000 * i, check=False)
             for i, (name, face) in enumerate(faces)}
    _wait_ready(logs, [name for name, _ in faces])
    killed: list[str] = []
    time.sleep(seconds / 4)
    for _round in range(2):
        owner = _owner_pid(root, IDENTITY)
        # The owner first (an Amplifier session, or the python of an `agent-memory mcp` server), then another.
        pids = {name: _worker_store_pid(logs, name, proc) for name, proc in procs.items() if name not in killed}
        victim = next((n for n, pid in pids.items() if pid == owner), None) if not killed else None
        if victim is None:
            victim = next(n for n in pids if n not in killed)
        os.kill(pids[victim], signal.SIGKILL)
        if procs[victim].poll() is None and pids[victim] != procs[victim].pid:
            procs[victim].kill()  # the MCP worker whose server was killed has nothing left to drive
        killed.append(victim)
        print(f"  SIGKILL {victim} (pid {pids[victim]}{', the owner' if pids[victim] == owner else ''})")
        time.sleep(seconds / 4)
    for proc in procs.values():
        try:
            proc.wait(timeout=seconds + 120)
        except subprocess.TimeoutExpired:
            proc.kill()
    records = _records(logs)
    s = _summary(records)
    acked = [r["id"] for r in records if r["t"] == "store"]
    missing = _missing(root, IDENTITY, acked)
    longest = max(s["stores"] + s["searches"], default=float("nan"))
    print(f"\n== kill: 3 processes, {seconds:.0f} s, SIGKILL of the owner, then of another ({', '.join(killed)})")
    print_table(["writes acked", "lost", "errors", "longest call ms"], [[len(acked), len(missing), len(s["errors"]),
                                                                       longest]])
    for error in s["errors"][:5]:
        print("  error:", error)


def _worker_store_pid(logs: Path, name: str, proc: subprocess.Popen[bytes]) -> int:
    """The pid of the process that holds or reaches the store for worker ``name`` (its MCP server, for one)."""
    stderr = logs / f"{name}.stderr"
    if stderr.exists():
        # The MCP server is the worker's child: found by its parent pid.
        for entry in Path("/proc").glob("[0-9]*"):
            try:
                stat = (entry / "stat").read_text().split()
            except OSError:
                continue
            if int(stat[3]) == proc.pid:
                return int(entry.name)
    return proc.pid


def _build_store(opts: argparse.Namespace, work: Path) -> Path:
    """A store of ``--size`` memories (speed.py's generator and cached embeddings), index built."""
    from speed import CachedVectorsEmbedder, cached_vectors, memory

    from amplifier_module_tool_agent_memory.config import parse_config
    from amplifier_module_tool_agent_memory.identity import ResolvedIdentity
    from amplifier_module_tool_agent_memory.memory.models import MemoryRecord
    from amplifier_module_tool_agent_memory.memory.service import MemoryService
    from amplifier_module_tool_agent_memory.runtime import AgentMemory

    base = work / "base"
    rt = AgentMemory(parse_config({"storage_root": str(base)}), ResolvedIdentity(IDENTITY, "config"),
                     session_id="bench-fill")
    svc = rt.memory()
    records = [MemoryRecord.model_validate(memory(i)) for i in range(opts.size)]
    dense, _ = cached_vectors(opts.cache_dir, opts.size, svc.embedder)
    from speed import ctx_text

    by_text: dict[str, Any] = {r.content: v for r, v in zip(records, dense, strict=True)}
    # A filled memory's context vector is its content vector: per-call latency does not depend on its values,
    # and embedding 10k context windows took over 30 minutes on the shared machine (5-12 texts/s).
    by_text.update((ctx_text(i), dense[i]) for i in range(opts.size))
    filler = MemoryService(svc.coll, CachedVectorsEmbedder(svc.embedder, by_text), svc.config, thread=svc.thread)
    filler.import_records(records, batch=1000)
    svc.coll.optimize()
    rt.close()
    return base / IDENTITY


def _copy_store(src: Path, root: Path, identity: str) -> None:
    from amplifier_module_tool_agent_memory.store.files import sparse_copy_tree

    sparse_copy_tree(src, root / identity, skip=frozenset({".lock", "owner.json", ".sock"}))


def phase_latency(opts: argparse.Namespace, work: Path, base: Path) -> None:
    variants = ["alone", "separate", "shared"] + ([] if opts.skip_handover else ["handover"])
    results: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
    for round_no in range(opts.rounds):
        for variant in variants:
            root, logs = work / f"lat-{variant}-{round_no}", work / f"lat-{variant}-{round_no}-logs"
            root.mkdir()
            logs.mkdir()
            count = 1 if variant == "alone" else 3
            identities = [f"{IDENTITY}{i}" if variant == "separate" else IDENTITY for i in range(count)]
            for identity in set(identities):
                _copy_store(base, root, identity)
            face = "handover" if variant == "handover" else "tools"
            seconds = opts.latency_seconds
            procs = [_spawn(root, logs, f"w{i}", face, seconds, FILL_BASE + 2_000_000 + 10_000 * (round_no * 4 + i),
                            identities[i], check=False) for i in range(count)]
            for proc in procs:
                proc.wait()
            results[variant].extend(_records(logs))
            shutil.rmtree(root, ignore_errors=True)
            print(f"  round {round_no + 1}/{opts.rounds}: {variant} done", flush=True)
    rows = []
    alone = _summary(results["alone"])
    for variant in variants:
        s = _summary(results[variant])
        st50, st95 = p50_p95(s["stores"])
        se50, se95 = p50_p95(s["searches"])
        rows.append([variant, len(s["stores"]) + len(s["searches"]), len(s["errors"]), st50, st95,
                     st95 - p50_p95(alone["stores"])[1], se50, se95, se95 - p50_p95(alone["searches"])[1]])
    print(f"\n== latency at {opts.size:,} memories, per call, {opts.rounds} rounds of {opts.latency_seconds:.0f} s "
          f"per variant (alternating; one store + one search every {TICK_S} s per process)")
    print_table(["variant", "calls", "errors", "store p50", "store p95", "p95 vs alone", "search p50",
                 "search p95", "p95 vs alone"], rows)


def phase_wire(opts: argparse.Namespace, work: Path, base: Path) -> None:
    """What the socket adds to a store call: the same requests in the owner, then from a client through it."""
    root, logs = work / "wire-root", work / "wire-logs"
    root.mkdir()
    logs.mkdir()
    _copy_store(base, root, IDENTITY)
    owner = _spawn(root, logs, "owner", "wire", 3600, 0, check=False)
    try:
        _wait_done(logs, "owner")
        client = _spawn(root, logs, "client", "wire", 0, 0, check=False)
        client.wait(timeout=1800)
    finally:
        owner.terminate()
        owner.wait(timeout=120)
    rows = []
    for name in ("owner", "client"):
        records = _records(logs, name)
        ready = next(r for r in records if r["t"] == "ready")
        q50, q95 = p50_p95([r["ms"] for r in records if r["t"] == "search"])
        r50, r95 = p50_p95([r["ms"] for r in records if r["t"] == "retrieve"])
        where = "in the owner (local)" if ready["owner"] else "from a client, through the owner's socket"
        rows.append([where, q50, q95, r50, r95])
    print(f"\n== the store's calls alone at {opts.size:,} memories (hybrid search request, retrieve of 5), 100 each")
    print_table(["calls", "search p50 ms", "search p95 ms", "retrieve p50 ms", "retrieve p95 ms"], rows)


def _wait_done(logs: Path, name: str, timeout_s: float = 900) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if any(r["t"] == "done" for r in _records(logs, name)):
            return
        time.sleep(0.5)
    raise SystemExit(f"{name} did not finish: see {logs}/{name}.err")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--phases", default="share,kill,wire,latency")
    parser.add_argument("--seconds", type=float, default=60.0, help="length of the share phase")
    parser.add_argument("--kill-seconds", type=float, default=40.0)
    parser.add_argument("--latency-seconds", type=float, default=20.0, help="length of one latency round")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--skip-handover", action="store_true")
    parser.add_argument("--cache-dir", type=Path, default=Path(tempfile.gettempdir()) / "agent-memory-bench")
    parser.add_argument("--keep", action="store_true", help="keep the work folder (logs) and print where it is")
    # Worker mode (internal).
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--root", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--logs", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--name", help=argparse.SUPPRESS)
    parser.add_argument("--face", default="tools", help=argparse.SUPPRESS)
    parser.add_argument("--offset", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--identity", default=IDENTITY, help=argparse.SUPPRESS)
    parser.add_argument("--check", action="store_true", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.worker:
        if opts.face == "wire":
            _wire_worker(opts)
        else:
            asyncio.run(_worker(opts))
        return
    try:
        import mcp  # noqa: F401
    except ImportError:
        print("skipped: the MCP SDK is not installed (pip install 'amplifier-module-tool-agent-memory[mcp]')")
        return
    work = Path(tempfile.mkdtemp(prefix="agent-memory-sharing-"))
    try:
        phases = opts.phases.split(",")
        if "share" in phases:
            phase_share(opts, work)
        if "kill" in phases:
            phase_kill(opts, work)
        if "latency" in phases or "wire" in phases:
            print(f"\n== building a store of {opts.size:,} memories ...", flush=True)
            base = _build_store(opts, work)
            if "wire" in phases:
                phase_wire(opts, work, base)
            if "latency" in phases:
                phase_latency(opts, work, base)
    finally:
        if opts.keep:
            print(f"work folder kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
