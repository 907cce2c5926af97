"""Shared fixtures: the real local model (loaded once per session), real Qdrant Edge stores
under a temporary root, and the module mounted on amplifier-core's MockCoordinator."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from amplifier_core.message_models import ChatRequest, ChatResponse, TextBlock
from amplifier_core.testing import MockCoordinator

import amplifier_module_tool_agent_memory as agent_memory
from amplifier_module_tool_agent_memory.config import EmbeddingConfig, parse_config
from amplifier_module_tool_agent_memory.embeddings.providers import CachedEmbedder, get_embedder
from amplifier_module_tool_agent_memory.identity import ResolvedIdentity
from amplifier_module_tool_agent_memory.runtime import AgentMemory

if TYPE_CHECKING:
    from qdrant_client import QdrantClient

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
    from memory_helpers import SERVER

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


@pytest.fixture
def clock() -> Any:
    """A clock the test moves by hand (memory_helpers.ManualClock)."""
    from memory_helpers import ManualClock

    return ManualClock()


@pytest.fixture
def timed_tools(make_runtime: Callable[..., AgentMemory], clock: Any) -> dict[str, Any]:
    """Tools of a runtime whose clock the test controls."""
    from memory_helpers import runtime_tools

    rt = make_runtime()
    rt.clock = clock
    return runtime_tools(rt)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Callable[[], QdrantClient]:
    """One local-mode Qdrant 'server' at memory_helpers.SERVER_URL, persisted under tmp_path.

    Every server store of the test connects to it; returns a function giving the client the
    open stores share (the registry keeps one per URL).
    """
    from memory_helpers import SERVER_URL
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


@pytest.fixture
def make_cache(make_runtime: Callable[..., AgentMemory], clock: Any) -> Callable[..., Any]:
    """Cache services on the test's manual ``clock``: ``make_cache(identity="alice", **cache_config)``
    (cache_helpers.cache_service as a fixture; the helper module stays importable)."""
    from cache_helpers import cache_service

    def factory(identity: str = "alice", **cache: Any) -> Any:
        return cache_service(make_runtime, clock, identity=identity, **cache)

    return factory


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
        from memory_helpers import output_of

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
