"""Shared fixtures: the real local model (loaded once per session), real Qdrant Edge stores
under a temporary root, and the module mounted on amplifier-core's MockCoordinator."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from amplifier_core import ToolResult
from amplifier_core.message_models import ChatRequest, ChatResponse, TextBlock
from amplifier_core.testing import MockCoordinator
from data import SECTION_NAMES, SERVER, SERVER_URL, T0

import amplifier_module_tool_agent_memory as agent_memory
from amplifier_module_tool_agent_memory.config import EmbeddingConfig, parse_config
from amplifier_module_tool_agent_memory.embeddings.providers import CachedEmbedder, get_embedder
from amplifier_module_tool_agent_memory.identity import ResolvedIdentity
from amplifier_module_tool_agent_memory.memory.context_vectors import ContextVectors
from amplifier_module_tool_agent_memory.runtime import AgentMemory

if TYPE_CHECKING:
    from qdrant_client import QdrantClient

    from amplifier_module_tool_agent_memory.cache.service import CacheService
    from amplifier_module_tool_agent_memory.config import StorageConfig


@pytest.fixture(scope="session")
def embedder() -> CachedEmbedder:
    """The real local embedding model, loaded once for the whole run."""
    return get_embedder(EmbeddingConfig())


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No test reads the developer's identity or writes under ~/.amplifier."""
    monkeypatch.delenv("AMPLIFIER_AGENT_IDENTITY", raising=False)
    monkeypatch.setenv("AMPLIFIER_MEMORY_ROOT", str(tmp_path / "default-root"))


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A fresh storage root."""
    path = tmp_path / "memory"
    path.mkdir()
    return path


# The service and tool tests of these folders run on both backends: the embedded store, and the server
# backend with qdrant-client's local mode standing in for a Qdrant server (no server runs here). A test
# that cannot hold on one says why with `@pytest.mark.edge_only(reason)`. The slow reliability, CLI and
# Amplifier folders run on the embedded store only (CI time); tests/store/test_store_language.py compares
# the two backends' answers to every kind of request directly.
BOTH_BACKENDS = frozenset({"memory", "cache", "plans"})
BACKENDS = ("edge", "server")


def pytest_configure(config: pytest.Config) -> None:
    # Local mode scans instead of using keyword/datetime indexes, and says so once per index it is asked for.
    config.addinivalue_line("filterwarnings", "ignore:Payload indexes have no effect:UserWarning")
    config.addinivalue_line(
        "markers", "edge_only(reason): the test cannot hold on the server backend's stand-in, for the reason given"
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    # A test that asks for the `server` fixture itself is already a server test: it runs once.
    in_scope = Path(str(metafunc.definition.fspath)).parent.name in BOTH_BACKENDS
    if in_scope and "backend" in metafunc.fixturenames and "server" not in metafunc.fixturenames:
        metafunc.parametrize("backend", BACKENDS, indirect=True)


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> str:
    """The storage backend the test's runtimes and mounts use: ``edge`` unless parametrised (see BOTH_BACKENDS)."""
    name: str = getattr(request, "param", "edge")
    if name == "server":
        marker = request.node.get_closest_marker("edge_only")
        if marker is not None:
            pytest.skip(f"edge only: {marker.args[0] if marker.args else marker.kwargs.get('reason', '')}")
        request.getfixturevalue("server")
    return name


def with_backend(backend: str, config: dict[str, Any]) -> dict[str, Any]:
    """A test's config on ``backend``: its other storage settings kept, its own choice of backend respected."""
    if backend != "server":
        return config
    storage = config.get("storage")
    if isinstance(storage, dict) and "backend" in storage:
        return config
    return {**config, "storage": {**SERVER["storage"], **(storage if isinstance(storage, dict) else {})}}


@pytest.fixture
def make_runtime(root: Path, embedder: CachedEmbedder, backend: str) -> Iterator[Callable[..., AgentMemory]]:
    """Build AgentMemory runtimes (services without the tool layer); all are closed at teardown."""
    made: list[AgentMemory] = []

    def factory(identity: str = "alice", session_id: str = "session-1", **config: Any) -> AgentMemory:
        cfg = parse_config(with_backend(backend, {"storage_root": str(root), **config}))
        rt = AgentMemory(cfg, ResolvedIdentity(identity, "config"), session_id=session_id)
        made.append(rt)
        return rt

    yield factory
    for rt in made:
        rt.close()


@pytest.fixture
async def mount_tools(root: Path, embedder: CachedEmbedder, backend: str) -> AsyncIterator[Callable[..., Any]]:
    """Mount the module on a fresh MockCoordinator; returns (tools by name, coordinator). Unmounted at teardown."""
    cleanups: list[Callable[[], Any]] = []

    async def factory(**config: Any) -> tuple[dict[str, Any], MockCoordinator]:
        coordinator = MockCoordinator()
        cfg = with_backend(backend, {"storage_root": str(root), "agent_identity": "alice", **config})
        cleanup = await agent_memory.mount(coordinator, cfg)
        cleanups.append(cleanup)
        return dict(coordinator.mount_points["tools"]), coordinator

    yield factory
    for cleanup in reversed(cleanups):
        await cleanup()


@pytest.fixture
async def tools(mount_tools: Callable[..., Any]) -> dict[str, Any]:
    """The module's tools for identity 'alice' on a fresh root."""
    mounted, _ = await mount_tools()
    return mounted


class ManualClock:
    """A clock the test moves by hand; inject it as ``runtime.clock`` before the first tool call."""

    def __init__(self, start: datetime = T0) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> datetime:
        self.now = self.now + timedelta(**delta)
        return self.now


@pytest.fixture
def make_clock() -> type[ManualClock]:
    """Manual clocks: ``make_clock()`` starts at data.T0, ``make_clock(start)`` at ``start`` (a test with two
    runtimes on their own clocks makes two)."""
    return ManualClock


@pytest.fixture
def clock() -> ManualClock:
    """The test's clock, moved by hand (``clock.advance(minutes=5)``), starting at data.T0."""
    return ManualClock()


def _bind_tools(rt: AgentMemory) -> dict[str, Any]:
    from amplifier_module_tool_agent_memory.amplifier.tools import build_tools

    return {tool.name: tool for tool in build_tools(rt)}


@pytest.fixture
def runtime_tools() -> Callable[[AgentMemory], dict[str, Any]]:
    """``runtime_tools(rt)``: the module's tools bound to an already built runtime (so its clock can be injected)."""
    return _bind_tools


@pytest.fixture
def timed_tools(make_runtime: Callable[..., AgentMemory], clock: ManualClock) -> dict[str, Any]:
    """Tools of a runtime whose clock the test controls."""
    rt = make_runtime()
    rt.clock = clock
    return _bind_tools(rt)


class ToolCall:
    """Runs a tool and gives its answer: ``await call(tool, args)`` its output (the test fails with the tool's
    message when it fails), ``await call.error(tool, args)`` its error (the test fails when it succeeds). The
    memory tools' usual calls have a short form: ``call.store(tools, content, kind)``, ``call.get(tools, id)``,
    ``call.search(tools, query)``."""

    async def __call__(self, tool: Any, args: dict[str, Any]) -> dict[str, Any]:
        return self.output_of(await tool.execute(args))

    async def error(self, tool: Any, args: dict[str, Any]) -> dict[str, Any]:
        return self.error_of(await tool.execute(args))

    @staticmethod
    def output_of(result: ToolResult) -> dict[str, Any]:
        """The output of a successful tool call already made; fails the test with the tool's message otherwise."""
        assert result.success, result.error
        assert isinstance(result.output, dict)
        return result.output

    @staticmethod
    def error_of(result: ToolResult) -> dict[str, Any]:
        """The error of a failed tool call already made; fails the test if the call succeeded."""
        assert not result.success, f"expected a failure, got {result.output!r}"
        assert isinstance(result.error, dict)
        return result.error

    async def store(self, tools: dict[str, Any], content: str, kind: str = "fact", **fields: Any) -> dict[str, Any]:
        """memory_store; its output."""
        return await self(tools["memory_store"], {"content": content, "kind": kind, **fields})

    async def get(self, tools: dict[str, Any], memory_id: str) -> dict[str, Any]:
        """memory_get; the memory it returns."""
        return dict((await self(tools["memory_get"], {"id": memory_id}))["memory"])

    async def search(self, tools: dict[str, Any], query: str, **fields: Any) -> list[dict[str, Any]]:
        """memory_search; its results, best first."""
        return list((await self(tools["memory_search"], {"query": query, **fields}))["results"])


@pytest.fixture
def call() -> ToolCall:
    """Runs a tool and returns its output or error (see :class:`ToolCall`)."""
    return ToolCall()


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Callable[[], QdrantClient]:
    """One local-mode Qdrant 'server' at data.SERVER_URL, persisted under tmp_path.

    Every server store of the test connects to it; returns a function giving the client the
    open stores share (the registry keeps one per URL).
    """
    from qdrant_client import QdrantClient

    from amplifier_module_tool_agent_memory.store import server as server_storage

    path = tmp_path / "qdrant-server"
    clients: list[QdrantClient] = []

    def connect(config: StorageConfig) -> QdrantClient:
        assert config.url == SERVER_URL
        client = QdrantClient(path=str(path))
        clients.append(client)
        return client

    monkeypatch.setattr(server_storage, "client_factory", connect)
    return lambda: clients[-1]


@pytest.fixture
def tool_timer(monkeypatch: pytest.MonkeyPatch) -> float:
    """The timer of one tool call (``tools/call.py``) steps 0.125 s on every read, so a call's
    ``latency_ms`` is exactly 125.0: events can be checked for the latency of the call itself
    without asserting anything about the wall clock. Returns that latency in ms."""
    import types

    from amplifier_module_tool_agent_memory.tools import call

    reads = iter(range(1_000_000))
    monkeypatch.setattr(call, "time", types.SimpleNamespace(perf_counter=lambda: next(reads) * 0.125))
    return 125.0


class ManualTimer:
    """Seconds that move only when the test says (a monotonic clock for store/purge.py's scheduler)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> float:
        self.now += seconds
        return self.now


@pytest.fixture
def purge_timer() -> ManualTimer:
    """A manual clock for the engine purge; give it to a runtime (before its store opens) as
    ``rt.purge_timing = {"clock": purge_timer, "background": False}`` and run what is due with
    ``EdgeCollection.run_engine_purge_if_due()``: no test waits for a window of real time."""
    return ManualTimer()


class CacheDriver:
    """A cache service driven the way the tools call it: ``note`` (cache_write), ``pack``, ``search`` with plain
    arguments, and the pack's item lines. Everything else is the service's own (``driver.compact(...)``,
    ``driver.config``); ``driver.service`` is the service itself."""

    def __init__(self, service: CacheService) -> None:
        self.service = service

    def __getattr__(self, name: str) -> Any:
        return getattr(self.service, name)

    def note(self, content: str, kind: str = "fact", **fields: Any) -> dict[str, Any]:
        """cache_write."""
        from amplifier_module_tool_agent_memory.cache.models import CacheWriteInput

        return self.service.write(CacheWriteInput.model_validate({"kind": kind, "content": content, **fields}))

    def pack(self, **fields: Any) -> dict[str, Any]:
        """cache_pack."""
        from amplifier_module_tool_agent_memory.cache.models import CachePackInput

        return self.service.pack(CachePackInput.model_validate(fields))

    def search(self, query: str, **fields: Any) -> list[dict[str, Any]]:
        """cache_search."""
        from amplifier_module_tool_agent_memory.cache.models import CacheSearchInput

        return self.service.search(CacheSearchInput.model_validate({"query": query, **fields}))

    def packed_texts(self, **fields: Any) -> list[str]:
        """Every item line of a pack (cache_pack with ``fields``), all sections."""
        return self.texts(self.pack(**fields))

    @staticmethod
    def texts(out: dict[str, Any]) -> list[str]:
        """Every item line of a pack already made, all sections."""
        return [line for name in SECTION_NAMES for line in out.get(name, [])]

    @staticmethod
    def rendered_tokens(out: dict[str, Any]) -> int:
        """Tokens of a pack exactly as the model receives it (json.dumps, as ToolResult does)."""
        from amplifier_module_tool_agent_memory.tokens import count_tokens

        return count_tokens(json.dumps(out))


class CacheFactory:
    """``make_cache(identity="alice", clock=None, **cache_config)``: a :class:`CacheDriver` on a new runtime's
    cache service, on the test's ``clock`` unless another is given; ``make_cache.drive(service)`` drives a
    service the test built itself; ``make_cache.texts(pack)`` / ``make_cache.rendered_tokens(pack)`` read a pack
    already made."""

    def __init__(self, make_runtime: Callable[..., AgentMemory], clock: ManualClock) -> None:
        self._make_runtime = make_runtime
        self._clock = clock

    def __call__(self, identity: str = "alice", clock: ManualClock | None = None, **cache: Any) -> CacheDriver:
        rt = self._make_runtime(identity=identity, cache=cache)
        rt.clock = clock if clock is not None else self._clock
        return CacheDriver(rt.cache())

    @staticmethod
    def drive(service: CacheService) -> CacheDriver:
        return CacheDriver(service)

    texts = staticmethod(CacheDriver.texts)
    rendered_tokens = staticmethod(CacheDriver.rendered_tokens)


@pytest.fixture
def make_cache(make_runtime: Callable[..., AgentMemory], clock: ManualClock) -> CacheFactory:
    """Cache drivers on a manual clock (see :class:`CacheFactory`)."""
    return CacheFactory(make_runtime, clock)


class SecretProbe:
    """Stores a secret-bearing text through every tool that keeps text (memory_store with it in a tag too,
    cache_write with it in the file reference, plan_store with it in the prompt and nested arguments) and
    gives the redaction tests what to look through afterwards."""

    @staticmethod
    def plan(text: str, n: int) -> dict[str, Any]:
        """The plan the probe stores for ``text``: the text in its prompt and in nested arguments."""
        return {
            "prompt": f"task {n}: run the setup with {text}"[:2000],
            "actions": [{"tool": "bash", "args": {"command": text, "env": {"nested": [text]}}}],
        }

    async def store(self, tools: dict[str, Any], text: str, n: int) -> dict[str, Any]:
        """The three tools' answers; each must say it redacted something."""
        output_of = ToolCall.output_of
        memory = output_of(await tools["memory_store"].execute(
            {"content": f"note {n}: {text}", "tags": [text] if len(text) <= 100 else [], "files": [f"notes/{n}.txt"]}
        ))
        item = output_of(await tools["cache_write"].execute(
            {"kind": "snippet", "content": f"snippet {n}: {text}", "file_ref": text[:200], "scope": f"task:{n % 4}"}
        ))
        plan = output_of(await tools["plan_store"].execute(self.plan(text, n)))
        assert memory.get("redacted") and item.get("redacted") and plan.get("redacted"), text
        return {"memory": memory, "item": item, "plan": plan}

    @staticmethod
    def stored_text(root: Path) -> str:
        """Every byte under ``root`` (the journal's and the engine's files), as text."""
        return b"".join(p.read_bytes() for p in root.rglob("*") if p.is_file()).decode("utf-8", "replace")


@pytest.fixture
def secret_probe() -> SecretProbe:
    """See :class:`SecretProbe`."""
    return SecretProbe()


@pytest.fixture
async def recorded_events(mount_tools: Callable[..., Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Tools mounted with a hook on every event the module emits: (tools, the events seen, in order)."""
    from amplifier_core import HookResult

    from amplifier_module_tool_agent_memory.events import EVENTS

    tools, coordinator = await mount_tools()
    seen: list[dict[str, Any]] = []

    async def record(event: str, data: dict[str, Any]) -> HookResult:
        seen.append({"event": event, **data})
        return HookResult(action="continue")

    for event in EVENTS:
        coordinator.hooks.register(event, record, name=f"test-{event}")
    return tools, seen


class ScriptedProvider:
    """The session's LLM provider, scripted (no network): ``answer`` text, ``None`` to fail, ``delay`` s first."""

    name = "scripted"

    def __init__(self, answer: str | None, delay: float = 0.0) -> None:
        self.answer = answer
        self.delay = delay
        self.requests: list[tuple[ChatRequest, dict[str, Any]]] = []

    async def complete(self, request: ChatRequest, **kwargs: Any) -> ChatResponse:
        self.requests.append((request, kwargs))
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.answer is None:
            raise RuntimeError("provider unavailable")
        return ChatResponse(content=[TextBlock(text=self.answer)])


@pytest.fixture
def scripted_provider() -> type[ScriptedProvider]:
    """The scripted provider class: ``scripted_provider("SAME")``, ``(None)`` to fail, ``delay=`` to be late."""
    return ScriptedProvider


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Event]:
    """A gate every context vector's completion (memory/context_vectors.py) waits at until the test opens it."""
    gate = threading.Event()
    original = ContextVectors.complete

    def complete(self: ContextVectors, memory_id: str, ctx: str, vector: list[float]) -> bool:
        gate.wait()
        return original(self, memory_id, ctx, vector)

    monkeypatch.setattr(ContextVectors, "complete", complete)
    yield gate
    gate.set()
