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
- ``calls``: the requests a client sends the owner per tool call (``memory_store``, ``memory_search``,
  ``cache_write``, ``plan_lookup``; a batch is one request), counted by wrapping ``store.wire.send``.
- ``wire``: what the socket adds to the store's own calls at ``--size`` memories: a hybrid search
  request and a retrieve, timed in the owner, then from a client through it (no embedding).
- ``latency``: at ``--size`` (10k) memories, per-call latency of ``memory_store`` and
  ``memory_search`` (Amplifier tools, same load) with one process alone, three processes on three
  identities (the same CPU load, nothing shared), three sharing one identity (this design: one
  owner serving the others), and three handing the store over through its lock for every call
  (design (a): open the store, replay, call, close). Rounds alternate the variants, so machine
  load falls on all alike; compare within one run. Prints each variant's p50/p95, the requests a client
  sent per call, and the shared variant's p95 gaps over "alone" (the target: at most +30 ms) and over
  "separate" (what sharing itself costs, the CPU of three processes aside).

``--baseline-src DIR`` (another tree of this repository, e.g. ``git archive main | tar -x -C DIR``) runs the
``calls`` phase and the alone and shared variants of ``latency`` with that tree's module too, in the same
run, alternating: before/after figures side by side. Repeat it to compare several trees in one run (each
labelled by its folder's name).

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
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import p50_p95, print_table

IDENTITY = "shared"
TICK_S = 0.3
# The ``phased`` schedule (class Ticks): worker i of round r draws its phases from random.Random(PHASE_SEED, r, i),
# a fresh one every PHASE_HOLD ticks, starting PHASE_START_S after the last worker is ready.
PHASE_SEED = 19
PHASE_HOLD = 5
PHASE_START_S = 0.5
SCHEDULES = ("phased", "ready")
FILL_BASE = 1_000_000  # texts of the writes during the run: the generator's memories from here on
CALL_ROUNDS = 12  # calls of each tool counted by the ``calls`` phase


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


def _count_frames() -> list[list[str]]:
    """Count, in this process, the requests it sends to the store's owner: one list of call names per frame
    (a batch names each call it carries). Wraps ``store.wire.send``, which every tree of this module sends
    through, so the baseline tree (``--baseline-src``) is counted the same way."""
    from amplifier_module_tool_agent_memory.store import wire

    frames: list[list[str]] = []
    send = wire.send

    def counting(sock: Any, message: Any) -> None:
        if isinstance(message, dict) and "op" in message:
            calls = (message.get("a") or {}).get("calls") if message["op"] == "batch" else None
            sent = [str(c.get("op")) for c in calls] if calls else [str(message["op"])]
            # A memory's context vector, written after its store answered (session 10), is sent by a thread of its
            # own while the next calls run: counted apart, not as theirs.
            if threading.current_thread().name.startswith(AFTER_ANSWER_THREADS):
                AFTER_ANSWER.append(sent)
            else:
                frames.append(sent)
        send(sock, message)

    wire.send = counting  # type: ignore[assignment]
    return frames


# The threads that write a memory's context vector after memory_store answered (memory/context_vectors.py), and
# the requests they sent (``_count_frames``).
AFTER_ANSWER_THREADS = ("agent-memory-ctx",)
AFTER_ANSWER: list[list[str]] = []


PLAN_PROMPTS = [
    "rotate the API keys of the staging environment",
    "add a column to the invoices table and backfill it",
    "bump the python version of the CI image",
]


async def _calls_worker(opts: argparse.Namespace) -> None:
    """A client of an owner that already runs: each tool called ``CALL_ROUNDS`` times, the frames it sent counted."""
    from speed import memory, queries

    from amplifier_module_tool_agent_memory.config import parse_config
    from amplifier_module_tool_agent_memory.identity import ResolvedIdentity
    from amplifier_module_tool_agent_memory.runtime import AgentMemory
    from amplifier_module_tool_agent_memory.tools.call import call_tool
    from amplifier_module_tool_agent_memory.tools.table import TOOLS_BY_NAME

    log = Log(opts.logs / f"{opts.name}.log")
    rt = AgentMemory(parse_config({"storage_root": str(opts.root)}), ResolvedIdentity(opts.identity, "config"),
                     session_id=opts.name)
    frames = _count_frames()

    async def call(name: str, args: dict[str, Any]) -> list[list[str]]:
        start = len(frames)
        answer = await call_tool(TOOLS_BY_NAME[name], rt, args)
        if not answer.ok:
            raise SystemExit(f"{name} failed: {answer.error}")
        return frames[start:]

    texts = queries(CALL_ROUNDS + 1)
    # Warm up: the first calls open the collections on the owner and read the session's thread tail once.
    await call("memory_search", {"query": "warm up"})
    await call("memory_store", {"content": f"{opts.name} warmed up", "kind": "note"})
    await call("cache_write", {"content": "warm up", "kind": "fact", "scope": "task:bench"})
    for prompt in PLAN_PROMPTS:
        await call("plan_store", {"prompt": prompt, "actions": [{"tool": "bash", "args": {"command": prompt}}]})
    await call("plan_lookup", {"prompt": "warm up"})
    log.put(t="ready", at=time.time(), pid=os.getpid(), owner=bool(getattr(rt.store(), "is_owner", True)))
    for k in range(CALL_ROUNDS):
        made = {
            "memory_store": await call("memory_store", {"content": memory(FILL_BASE + k)["content"], "kind": "fact"}),
            "memory_search": await call("memory_search", {"query": texts[k]}),
            "cache_write": await call("cache_write", {"content": memory(FILL_BASE + 500 + k)["content"],
                                                      "kind": "fact", "scope": "task:bench"}),
            # A hit (the same request: a use is counted) and a miss, alternating.
            "plan_lookup": await call("plan_lookup", {"prompt": PLAN_PROMPTS[k % 3] if k % 2 == 0 else texts[k]}),
        }
        # The store's context vector, written after its answer (trees since session 10), all of it.
        settle = getattr(rt.memory(), "settle", None)
        if settle is not None:
            settle(60)
        made["memory_store (after the answer)"] = AFTER_ANSWER[:]
        AFTER_ANSWER.clear()
        for tool, sent in made.items():
            if tool == "plan_lookup":
                tool += " (hit)" if k % 2 == 0 else " (miss)"
            log.put(t="calls", tool=tool, frames=sent)
    log.put(t="done", at=time.time())
    rt.close()


def _hold_worker(opts: argparse.Namespace) -> None:
    """Owns the store and serves the other processes for ``--seconds`` (the ``calls`` phase's owner)."""
    from amplifier_module_tool_agent_memory.config import parse_config
    from amplifier_module_tool_agent_memory.identity import ResolvedIdentity
    from amplifier_module_tool_agent_memory.runtime import AgentMemory

    log = Log(opts.logs / f"{opts.name}.log")
    rt = AgentMemory(parse_config({"storage_root": str(opts.root)}), ResolvedIdentity(opts.identity, "config"),
                     session_id=opts.name)
    log.put(t="ready", at=time.time(), pid=os.getpid(), owner=bool(getattr(rt.store(), "is_owner", True)))
    log.put(t="done", at=time.time())
    time.sleep(opts.seconds)
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
    if opts.probe:
        import _sharing_probe

        _sharing_probe.install(log.put)
    face = _handover_face if opts.face == "handover" else _tools_face
    call, cleanup = await face(opts.root, opts.identity)
    if opts.face == "tools":
        frames = _count_frames()
        counted = call

        async def call(name: str, args: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
            start = len(frames)
            ok, body = await counted(name, args)
            opts.frames_of_last_call = len(frames) - start
            return ok, body
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


def _wait_peers_ready(logs: Path, count: int) -> float:
    """Wait until ``count`` workers of this run have logged ``ready``; the wall time of the last one."""
    while True:
        at = [r["at"] for r in _records(logs) if r.get("t") == "ready"]
        if len(at) >= count:
            return max(at)
        time.sleep(0.02)


class Ticks:
    """When each tick of a worker's load starts.

    ``ready`` (session 9's method): from this worker's own ready instant, the next tick 0.3 s after the last one
    started (later when a call overran). The workers' relative phases are then whatever their warm-ups left,
    fixed for the round; warm-ups that end together (the clients of a shared store wait for the owner's first
    calls) make every store meet the others' on two cores, in one variant more than in another.

    ``phased``: every worker waits for the others to be ready; from a common start, its tick k starts at
    start + k * 0.3 s + its phase, a phase drawn afresh every PHASE_HOLD ticks (uniform in [0, 0.3 s)) from a
    generator seeded by the round and the worker, so every variant of a round runs the same phases. Independent
    processes drift against each other; this samples their relative phases many times a round instead of once.
    A call that overran starts at the next tick of the grid, so one late call does not shift the ones after it.
    """

    def __init__(self, opts: argparse.Namespace) -> None:
        self.phased = opts.phase_seed is not None
        self.rng = random.Random(opts.phase_seed)
        self.phases: list[float] = []
        self.k = 0
        self.start = _wait_peers_ready(opts.logs, opts.peers) + PHASE_START_S if self.phased else time.time()
        self.last = time.time() - TICK_S  # ``ready``: the first tick starts at once

    def _at(self, k: int) -> float:
        while len(self.phases) <= k // PHASE_HOLD:
            self.phases.append(self.rng.uniform(0.0, TICK_S))
        return self.start + k * TICK_S + self.phases[k // PHASE_HOLD]

    async def next(self) -> None:
        """Sleep until the next tick starts."""
        now = time.time()
        if self.phased:
            while self._at(self.k) < now:
                self.k += 1
            when = self._at(self.k)
            self.k += 1
        else:
            when = max(now, self.last + TICK_S)
        await asyncio.sleep(max(0.0, when - now))
        self.last = time.time()


async def _run_load(opts: argparse.Namespace, call: Any, log: Log, memory: Any, texts: list[str]) -> None:
    ticks = Ticks(opts)
    await ticks.next()
    deadline = time.monotonic() + opts.seconds
    k = 0
    while time.monotonic() < deadline:
        content = f"{opts.name} note {k}: " + memory(opts.offset + k)["content"]
        started = time.perf_counter()
        ok, body = await call("memory_store", {"content": content, "kind": "fact"})
        ms = (time.perf_counter() - started) * 1000
        if ok:
            log.put(t="store", id=body["id"], created=bool(body.get("created", True)), ack=time.time(), ms=ms,
                    frames=getattr(opts, "frames_of_last_call", None))
        else:
            log.put(t="error", op="memory_store", ms=ms, message=str(body)[:300])
        started = time.perf_counter()
        ok, body = await call("memory_search", {"query": texts[k % len(texts)]})
        ms = (time.perf_counter() - started) * 1000
        if ok:
            log.put(t="search", ms=ms, frames=getattr(opts, "frames_of_last_call", None))
        else:
            log.put(t="error", op="memory_search", ms=ms, message=str(body)[:300])
        k += 1
        await ticks.next()
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
           check: bool = True, src: Path | None = None, probe: bool = False,
           phase: tuple[int, int] | None = None) -> subprocess.Popen[bytes]:
    """A worker process; with ``src`` (a source tree of this repository) it imports the module from there;
    with ``phase`` (a seed, how many workers run) its load runs on the ``phased`` schedule (:class:`Ticks`)."""
    args = [sys.executable, __file__, "--worker", "--root", str(root), "--logs", str(logs), "--name", name,
            "--face", face, "--seconds", str(seconds), "--offset", str(offset), "--identity", identity]
    if phase is not None:
        args += ["--phase-seed", str(phase[0]), "--peers", str(phase[1])]
    if check:
        args.append("--check")
    if probe:
        args.append("--probe")
    env = dict(os.environ)
    if src is not None:
        # Ahead of the installed (editable) package: the baseline tree's module is the one imported.
        env["PYTHONPATH"] = os.pathsep.join([str(src / "modules" / "tool-agent-memory"), env.get("PYTHONPATH", "")])
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=open(logs / f"{name}.err", "w"), env=env)


def _phases(schedule: str, round_no: int, count: int) -> list[tuple[int, int] | None]:
    """Each worker's ``phase`` argument in round ``round_no`` (its generator's seed, how many workers run): the
    same for every variant of the round."""
    return [(PHASE_SEED * 1_000_000 + round_no * 100 + i, count) if schedule == "phased" else None
            for i in range(count)]


def _trees(opts: argparse.Namespace) -> list[tuple[str, Path | None]]:
    """The source trees compared: this one, and each baseline (``--baseline-src``, repeatable) by its folder's name
    ("baseline" when there is one)."""
    baselines = opts.baseline_src or []
    named = [("baseline" if len(baselines) == 1 else f"baseline {src.name}", src) for src in baselines]
    return [("this tree", None), *named]


def _suffix(tree: str, src: Path | None) -> str:
    """The label suffix of a tree's variants: none for this one, `` (baseline)`` or `` (baseline NAME)``."""
    return "" if src is None else f" ({tree})"


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


def _median_frames(records: list[dict[str, Any]], kind: str) -> float:
    """Frames a client sent per call of ``kind`` (its calls that sent any: the owner's run locally)."""
    sent = [r["frames"] for r in records if r["t"] == kind and r.get("frames")]
    return p50_p95(sent)[0] if sent else 0.0


def phase_latency(opts: argparse.Namespace, work: Path, base: Path) -> None:
    variants: list[tuple[str, str, Path | None, str]] = []  # (label, kind, source tree, schedule)
    for schedule in opts.schedule:
        mark = _schedule_mark(opts, schedule)
        runs = []
        for tree, src in _trees(opts):
            suffix = _suffix(tree, src)
            runs += [(f"alone{suffix}{mark}", "alone", src, schedule),
                     (f"shared{suffix}{mark}", "shared", src, schedule)]
        runs.insert(1, (f"separate{mark}", "separate", None, schedule))
        if not opts.skip_handover:
            runs.append((f"handover{mark}", "handover", None, schedule))
        variants += runs
    results: dict[str, list[dict[str, Any]]] = {label: [] for label, _, _, _ in variants}
    for round_no in range(opts.rounds):
        for n, (label, kind, src, schedule) in enumerate(variants):
            root, logs = work / f"lat-{n}-{round_no}", work / f"lat-{n}-{round_no}-logs"
            root.mkdir()
            logs.mkdir()
            count = 1 if kind == "alone" else 3
            identities = [f"{IDENTITY}{i}" if kind == "separate" else IDENTITY for i in range(count)]
            for identity in set(identities):
                _copy_store(base, root, identity)
            face = "handover" if kind == "handover" else "tools"
            seconds = opts.latency_seconds
            phases = _phases(schedule, round_no, count)
            procs = [_spawn(root, logs, f"w{i}", face, seconds, FILL_BASE + 2_000_000 + 10_000 * (round_no * 8 + i),
                            identities[i], check=False, src=src, phase=phases[i]) for i in range(count)]
            for proc in procs:
                proc.wait()
            results[label].extend(_records(logs))
            shutil.rmtree(root, ignore_errors=True)
            print(f"  round {round_no + 1}/{opts.rounds}: {label} done", flush=True)
    summaries = {label: _summary(records) for label, records in results.items()}
    p95 = {label: (p50_p95(s["stores"])[1], p50_p95(s["searches"])[1]) for label, s in summaries.items()}
    rows = []
    for label, _kind, _, _ in variants:
        s = summaries[label]
        st50, st95 = p50_p95(s["stores"])
        se50, se95 = p50_p95(s["searches"])
        rows.append([label, len(s["stores"]) + len(s["searches"]), len(s["errors"]), st50, st95, se50, se95,
                     _median_frames(results[label], "store"), _median_frames(results[label], "search")])
    print(f"\n== latency at {opts.size:,} memories, per call, {opts.rounds} rounds of {opts.latency_seconds:.0f} s "
          f"per variant (alternating; one store + one search every {TICK_S} s per process; schedule "
          f"{', '.join(opts.schedule)}: see Ticks)")
    print_table(["variant", "calls", "errors", "store p50", "store p95", "search p50", "search p95",
                 "frames/store (client)", "frames/search (client)"], rows)
    # The target: shared p95 at most +30 ms over alone. Against "separate" (three processes, three identities:
    # the same CPU load, nothing shared) the gap is what sharing itself costs.
    gaps = []
    for schedule in opts.schedule:
        mark = _schedule_mark(opts, schedule)
        for tree, src in _trees(opts):
            suffix = _suffix(tree, src)
            shared, alone = p95[f"shared{suffix}{mark}"], p95[f"alone{suffix}{mark}"]
            separate = p95[f"separate{mark}"]
            gaps.append([f"{tree}{mark}", shared[0] - alone[0], shared[0] - separate[0], shared[1] - alone[1],
                         shared[1] - separate[1]])
    print("\n== p95 gaps of the shared variant, ms (target: store and search p95 at most +30 over alone)")
    print_table(["tree", "store vs alone", "store vs separate", "search vs alone", "search vs separate"], gaps)


def _schedule_mark(opts: argparse.Namespace, schedule: str) -> str:
    """The label suffix of a schedule's variants: none when the run has one schedule."""
    return f" [{schedule}]" if len(opts.schedule) > 1 else ""


def phase_calls(opts: argparse.Namespace, work: Path, base: Path) -> None:
    """Requests a client sends its owner per tool call (frames; a batch is one), per source tree."""
    counted: dict[str, dict[str, list[list[list[str]]]]] = {}
    for n, (tree, src) in enumerate(_trees(opts)):
        root, logs = work / f"calls-{n}", work / f"calls-{n}-logs"
        root.mkdir()
        logs.mkdir()
        _copy_store(base, root, IDENTITY)
        owner = _spawn(root, logs, "owner", "hold", 3600, 0, check=False, src=src)
        try:
            _wait_done(logs, "owner")
            client = _spawn(root, logs, "client", "calls", 0, 0, check=False, src=src)
            client.wait(timeout=1800)
        finally:
            owner.terminate()
            owner.wait(timeout=120)
        _wait_done(logs, "client", timeout_s=1)
        per_tool: dict[str, list[list[list[str]]]] = {}
        for record in _records(logs, "client"):
            if record["t"] == "calls":
                per_tool.setdefault(record["tool"], []).append(record["frames"])
        counted[tree] = per_tool
        shutil.rmtree(root, ignore_errors=True)
    print(f"\n== requests a client sends the owner per tool call ({CALL_ROUNDS} calls each, after a warm-up; a batch "
          "is one request; an unlock is not waited for; plan_lookup alternates a hit, which counts a use, and a miss)")
    rows = []
    for tool in ("memory_store", "memory_store (after the answer)", "memory_search", "cache_write", "plan_lookup (hit)",
                 "plan_lookup (miss)"):
        row: list[object] = [tool]
        for tree, _ in _trees(opts):
            calls = counted[tree].get(tool, [])
            sizes = [len(c) for c in calls]
            p50, _ = p50_p95(sizes)
            median_call = sorted(calls, key=len)[len(calls) // 2] if calls else []
            row += [p50, max(sizes, default=0), " ".join("+".join(f) for f in median_call)]
        rows.append(row)
    headers = ["tool"]
    for tree, _ in _trees(opts):
        headers += [f"{tree} p50", f"{tree} max", f"{tree}: the median call's requests"]
    print_table(headers, rows)


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


def _load_average() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def _pcts(values: list[float]) -> str:
    p50, p95 = p50_p95(values)
    return f"{p50:.1f} / {p95:.1f}" if values else "-"


def phase_breakdown(opts: argparse.Namespace, work: Path, base: Path) -> None:
    """One shared memory_store taken apart (benchmarks/_sharing_probe.py), beside three separate identities."""
    runs: dict[str, list[dict[str, Any]]] = {}
    loads = [_load_average()]
    for round_no in range(opts.rounds):
        # One process alone is the target's reference: what the shared variant adds over it is what to cut.
        for label in ("alone", "separate", "shared"):
            root, logs = work / f"bd-{label}-{round_no}", work / f"bd-{label}-{round_no}-logs"
            root.mkdir()
            logs.mkdir()
            count = 1 if label == "alone" else 3
            identities = [f"{IDENTITY}{i}" if label == "separate" else IDENTITY for i in range(count)]
            for identity in set(identities):
                _copy_store(base, root, identity)
            phases = _phases(opts.schedule[0], round_no, count)
            procs = [_spawn(root, logs, f"w{i}", "tools", opts.latency_seconds,
                            FILL_BASE + 3_000_000 + 10_000 * (round_no * 8 + i), identities[i], check=False,
                            probe=True, phase=phases[i]) for i in range(count)]
            for proc in procs:
                proc.wait()
            runs.setdefault(label, []).extend(_records(logs))
            shutil.rmtree(root, ignore_errors=True)
            loads.append(_load_average())
            print(f"  round {round_no + 1}/{opts.rounds}: {label} done (load {loads[-1]})", flush=True)
    print(f"\n== a memory_store taken apart at {opts.size:,} memories, ms p50 / p95 ({opts.rounds} rounds of "
          f"{opts.latency_seconds:.0f} s per variant; load averages {', '.join(loads)})")
    keys = ["total", "cpu", "embed", "judge", "near", "hash", "ctx wait", "tail", "locked", "lock wait", "requests",
            "n_requests"]
    columns: list[tuple[str, list[dict[str, Any]]]] = []
    for label, records in runs.items():
        # Each worker's first store loaded the model and opened the store: not counted.
        firsts = {r["worker"]: r for r in reversed(records) if r.get("what") == "store"}
        stores = [r for r in records if r.get("what") == "store" and r.get("n_embed")
                  and r is not firsts.get(r["worker"])]
        if label == "shared":
            columns.append(("shared: owner's own", [r for r in stores if not r.get("n_requests")]))
            columns.append(("shared: clients", [r for r in stores if r.get("n_requests")]))
        else:
            columns.append((label, stores))
    print_table(["segment"] + [f"{name} (n={len(rs)})" for name, rs in columns],
                [[key] + [_pcts([float(r.get(key, 0.0)) for r in rs]) for _, rs in columns] for key in keys])
    shared = runs.get("shared", [])
    per_request: dict[str, list[dict[str, Any]]] = {}
    for record in shared:
        for sent in record.get("sent", []) if record.get("what") == "store" else []:
            per_request.setdefault("+".join(sent["ops"]), []).append(sent)
    print("\n== a client's requests per memory_store (shared): round trip, bytes each way, its JSON encode+decode")
    print_table(["request", "count", "round trip ms", "bytes out p50", "bytes in p50", "json ms"],
                [[ops, len(sent), _pcts([s["ms"] for s in sent]), p50_p95([s["out"] for s in sent])[0],
                  p50_p95([s["in"] for s in sent])[0], _pcts([s["json"] for s in sent])]
                 for ops, sent in sorted(per_request.items(), key=lambda kv: -len(kv[1]))])
    served: dict[str, list[dict[str, Any]]] = {}
    for record in shared:
        if record.get("what") == "served":
            served.setdefault(record["op"], []).append(record)
    print("\n== the owner serving the clients (shared): per call, wall (a lock: its wait) = the serving thread on a "
          "core + waiting for a core + asleep (the GIL, mostly), schedstat")
    print_table(["call", "count", "wall ms", "on a core ms", "waiting for a core ms", "asleep ms"],
                [[op, len(rs)] + [_pcts([float(r.get(key, 0.0)) for r in rs]) for key in ("ms", "cpu", "runq",
                                                                                         "blocked")]
                 for op, rs in sorted(served.items(), key=lambda kv: -len(kv[1]))])
    rows = []
    for label, records in runs.items():
        for own in (True, False):
            waits = [r["ms"] for r in records if r.get("what") == "lock_wait" and r.get("own") is own]
            if waits:
                rows.append([label, "own sessions" if own else "served for clients", len(waits), _pcts(waits)])
        for direction in ("in", "out"):
            msgs = [r for r in records if r.get("what") == "owner_json" and r["dir"] == direction]
            if msgs:
                rows.append([label, f"owner JSON {'decode' if direction == 'in' else 'encode'} (bytes p50 "
                             f"{p50_p95([r['bytes'] for r in msgs])[0]:.0f})", len(msgs),
                             _pcts([r["ms"] for r in msgs])])
    print("\n== waits for the identity's collection lock, and the owner's JSON, ms")
    print_table(["variant", "what", "count", "p50 / p95 ms"], rows)


def _wait_done(logs: Path, name: str, timeout_s: float = 900) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if any(r["t"] == "done" for r in _records(logs, name)):
            return
        time.sleep(0.5)
    raise SystemExit(f"{name} did not finish: see {logs}/{name}.err")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--phases", default="share,kill,calls,wire,latency")
    parser.add_argument("--baseline-src", type=Path, action="append", default=None,
                        help="another source tree of this repository (e.g. `git archive main`): the calls and "
                             "latency phases run it beside this one, in the same run (repeatable: several trees)")
    parser.add_argument("--seconds", type=float, default=60.0, help="length of the share phase")
    parser.add_argument("--kill-seconds", type=float, default=40.0)
    parser.add_argument("--latency-seconds", type=float, default=20.0, help="length of one latency round")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--skip-handover", action="store_true")
    parser.add_argument("--schedule", action="append", choices=SCHEDULES, default=None,
                        help="when each worker's ticks start (latency and breakdown phases; see Ticks): phased "
                             "(default: seeded phases, drawn afresh every few ticks) or ready (session 9: from "
                             "each one's warm-up); repeat to run both side by side")
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
    parser.add_argument("--probe", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--phase-seed", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--peers", type=int, default=1, help=argparse.SUPPRESS)
    opts = parser.parse_args()
    opts.schedule = opts.schedule or ["phased"]
    if opts.worker:
        if opts.face == "wire":
            _wire_worker(opts)
        elif opts.face == "hold":
            _hold_worker(opts)
        elif opts.face == "calls":
            asyncio.run(_calls_worker(opts))
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
        if {"latency", "wire", "calls", "breakdown"} & set(phases):
            print(f"\n== building a store of {opts.size:,} memories ...", flush=True)
            base = _build_store(opts, work)
            if "calls" in phases:
                phase_calls(opts, work, base)
            if "wire" in phases:
                phase_wire(opts, work, base)
            if "breakdown" in phases:
                phase_breakdown(opts, work, base)
            if "latency" in phases:
                phase_latency(opts, work, base)
    finally:
        if opts.keep:
            print(f"work folder kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
