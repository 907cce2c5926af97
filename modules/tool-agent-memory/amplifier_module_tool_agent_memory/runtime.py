"""The per-mount runtime: resolved config and identity, and the lazily opened store and services.

``mount`` builds one :class:`AgentMemory` and nothing heavy happens at mount. Once the session is
ready (``on_session_ready``, or the MCP server's start) :meth:`AgentMemory.warm_up` loads the
embedding model and opens the identity's store on a background thread; without it they open at
the first tool call that asks for :meth:`AgentMemory.memory` (or the cache or plans).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import activity
from .config import MemoryConfig, parse_config
from .errors import AgentMemoryError, ConfigError, IdentityError
from .identity import ResolvedIdentity, resolve_identity
from .store.contract import Store, utc_now
from .store.purge import PurgePolicy
from .store.registry import release
from .store.sharing import acquire_shared_store

if TYPE_CHECKING:
    from .cache.service import CacheService
    from .compare import Judge
    from .embeddings.providers import CachedEmbedder
    from .memory.service import MemoryService
    from .plans.service import PlanService

logger = logging.getLogger("amplifier_module_tool_agent_memory")


class AgentMemory:
    """Everything one mounted instance of the module shares between its tools."""

    def __init__(
        self,
        config: MemoryConfig,
        identity: ResolvedIdentity | None,
        *,
        setup_error: AgentMemoryError | None = None,
        coordinator: Any = None,
        session_id: str = "local",
        clock: Callable[[], datetime] = utc_now,
        adopt_recorded_model: bool = False,
        resolve_late: bool = False,
        on_identity: Callable[[ResolvedIdentity], None] | None = None,
    ) -> None:
        """``adopt_recorded_model``: open the store whatever model wrote it (export: it embeds nothing).

        ``resolve_late``: ``identity`` is resolved from ``coordinator`` on first need
        (:meth:`resolve_identity`), then ``on_identity`` is told which one it is.
        """
        self.config = config
        self.adopt_recorded_model = adopt_recorded_model
        self.identity = identity
        self.setup_error = setup_error
        self._identity_pending = resolve_late and identity is None and setup_error is None
        self._on_identity = on_identity
        self.coordinator = coordinator
        self.session_id = session_id
        self.clock = clock
        # The engine purge's timing (store/purge.py): None is the default policy (monotonic clock, a background
        # thread). Tests set one with a clock they move by hand before the store opens.
        self.purge_timing: dict[str, Any] | None = None
        self._store: Store | None = None
        self._services: dict[str, Any] = {}
        self._lock = threading.RLock()
        self._closed = False
        # What unregisters this runtime's takeover hooks (a shared store outlives it: one per process).
        self._hooks: list[Callable[[], None]] = []
        self._activity: Path | None = None
        self._warming: threading.Thread | None = None
        # Work a session hook starts once the session is ready (every module mounted, the identity resolved), in
        # the background before the first prompt: recall's briefing (amplifier/recall_hooks.py).
        self.on_session_ready: list[Callable[[], None]] = []

    @classmethod
    def from_mount(
        cls,
        coordinator: Any,
        raw_config: dict[str, Any] | None,
        on_identity: Callable[[ResolvedIdentity], None] | None = None,
    ) -> AgentMemory:
        """Parse config; the identity is resolved later (see :meth:`resolve_identity`). Never raises:
        errors surface on every tool call."""
        session_id = str(getattr(coordinator, "session_id", None) or "local")
        try:
            config = parse_config(raw_config)
        except ConfigError as exc:
            return cls(MemoryConfig(), None, setup_error=exc, coordinator=coordinator, session_id=session_id)
        return cls(config, None, coordinator=coordinator, session_id=session_id, resolve_late=True,
                   on_identity=on_identity)

    @property
    def identity_name(self) -> str | None:
        return self.identity.name if self.identity else None

    def resolve_identity(self) -> ResolvedIdentity | None:
        """Resolve a mount's identity once: late enough that capabilities registered by modules mounted
        after this one (hooks mount after tools) are seen. An invalid or missing one becomes the setup error."""
        with self._lock:
            if not self._identity_pending:
                return self.identity
            self._identity_pending = False
            try:
                self.identity = resolve_identity(self.coordinator, self.config.agent_identity,
                                                 self.config.require_identity)
            except IdentityError as exc:
                self.setup_error = exc
                return None
            logger.info("agent identity resolved",
                        extra={"identity": self.identity.name, "source": self.identity.source})
        if self._on_identity is not None:
            try:
                self._on_identity(self.identity)
            except Exception:
                logger.debug("identity listener failed", exc_info=True)
        return self.identity

    def is_ready(self) -> bool:
        """Whether the tools can run: config valid, identity resolved and valid, not unmounted."""
        self.resolve_identity()
        return self.setup_error is None and not self._closed

    def check_ready(self) -> ResolvedIdentity:
        """Raise the config or identity error this instance was mounted with, if any."""
        self.resolve_identity()
        if self.setup_error is not None:
            raise self.setup_error
        if self._closed:
            raise ConfigError("the agent-memory module was unmounted; its tools no longer answer")
        assert self.identity is not None
        return self.identity

    def embedder(self) -> CachedEmbedder:
        """The process-wide embedder of this config (loaded on first use)."""
        from .embeddings.providers import get_embedder

        return get_embedder(self.config.embeddings)

    def store(self) -> Store:
        """This identity's store (embedded, or on a Qdrant server: ``storage.backend``), shared in the process."""
        identity = self.check_ready()
        with self._lock:
            if self._store is None:
                embedder = self.embedder()
                started = time.perf_counter()
                if self.config.storage.backend == "server":
                    from .store.server import acquire_server_store

                    self._store = acquire_server_store(
                        self.config.storage,
                        identity.name,
                        embedder.model_id,
                        embedder.dim,
                        adopt_recorded_model=self.adopt_recorded_model,
                    )
                else:
                    storage = self.config.storage
                    self._store = acquire_shared_store(
                        self.config.resolved_root(),
                        identity.name,
                        embedder.model_id,
                        embedder.dim,
                        adopt_recorded_model=self.adopt_recorded_model,
                        purge=PurgePolicy(
                            storage.purge_prompt_max_points, storage.purge_idle_seconds, **(self.purge_timing or {})
                        ),
                        wait_s=storage.owner_wait_seconds,
                        search_threads=storage.search_threads,
                    )
                logger.info(
                    "memory store opened",
                    extra={
                        "identity": identity.name,
                        "path": str(self._store.path),
                        "ms": round((time.perf_counter() - started) * 1000, 2),
                    },
                )
            return self._store

    def warm_up(self) -> threading.Thread | None:
        """Load the model and open the store and memory service on a background thread (once; None when
        ``warm_up`` is off, the identity is not usable or it already started).

        A tool call that comes first waits only for what is still loading: the model's loader and the
        runtime's lock are the ones the call takes. Errors are left for that call to report. Both mostly
        run outside the Python lock (the model's runtime, the engine's load), so a server's thread keeps
        answering meanwhile.
        """
        if not self.config.warm_up or not self.is_ready():
            return None
        with self._lock:
            if self._warming is not None:
                return None
            self._warming = threading.Thread(target=self._warm, name="agent-memory-warm-up", daemon=True)
            self._warming.start()
            return self._warming

    def _warm(self) -> None:
        started = time.perf_counter()
        try:
            # The first run of the model allocates its buffers: a query of its own pays for it.
            self.embedder().embed_query("warm up")
            with self._lock:
                if self._closed:
                    return
                self.memory()
        except Exception:
            logger.debug("warm-up failed; the first tool call will report it", exc_info=True)
            return
        logger.info("agent-memory warmed up", extra={"identity": self.identity_name,
                                                     "ms": round((time.perf_counter() - started) * 1000, 2)})

    def service(self, name: str, factory: Callable[[], Any]) -> Any:
        """A service built once per instance by ``factory``."""
        with self._lock:
            svc = self._services.get(name)
            if svc is None:
                svc = factory()
                self._services[name] = svc
            return svc

    def memory(self) -> MemoryService:
        """The long-term memory service."""
        from .memory.service import MEMORIES, MemoryService
        from .store.claims import claims_folder

        def build() -> MemoryService:
            store = self.store()
            svc = MemoryService(
                store.collection(MEMORIES),
                self.embedder(),
                self.config.memory,
                thread=self.session_id,
                clock=self.clock,
                judge=self.judge(),
                # The embedded store's claim files (memory/context_vectors.py); a server keeps a payload index.
                claims=None if self.config.storage.backend == "server" else claims_folder(Path(store.path)),
            )
            svc.repair_soon()
            # Sharing the identity: what another process left waiting for its context vector (it died before
            # writing it) is repaired here when this process takes the store over, or, as owner, when it leaves.
            on_takeover = getattr(store, "on_takeover", None)
            if on_takeover is not None:
                self._hooks.append(on_takeover(lambda: svc.repair_soon(takeover=True)))
            return svc

        svc: MemoryService = self.service("memory", build)
        return svc

    def cache(self) -> CacheService:
        """The working-memory cache service (cheap to build; the store opens on its first use)."""
        from .cache.service import CACHE, CacheService

        def build() -> CacheService:
            llm = None
            if self.config.cache.summariser == "llm":
                from .amplifier.llm_summariser import LLMSummariser

                llm = LLMSummariser(self.coordinator, self.config.cache.llm_timeout_s)
            return CacheService(
                lambda: self.store().collection(CACHE),
                self.embedder,
                self.config.cache,
                clock=lambda: self.clock(),
                identity=self.identity_name,
                session_id=self.session_id,
                llm=llm,
            )

        svc: CacheService = self.service("cache", build)
        return svc

    def plans(self) -> PlanService:
        """The plan cache service."""
        from .plans.service import PLANS, PlanService

        def build() -> PlanService:
            return PlanService(self.store().collection(PLANS), self.embedder(), self.config.plans, clock=self.clock,
                               judge=self.judge())

        svc: PlanService = self.service("plans", build)
        return svc

    def judge(self) -> Judge | None:
        """The judge of near matches certification leaves open: None for ``judge: agent`` (the default)."""
        if self.config.judge != "provider":
            return None
        from .amplifier.llm_judge import ProviderJudge

        return ProviderJudge(self.coordinator, self.config.judge_timeout_s)

    def activity_folder(self) -> Path | None:
        """Where this identity's activity log lives (beside its embedded store), once the identity is known."""
        if self.identity is None or self.setup_error is not None:
            return None
        if self._activity is None:
            try:
                self._activity = self.config.resolved_root() / self.identity.name
            except AgentMemoryError:
                return None
        return self._activity

    async def emit(self, event: str, data: dict[str, Any]) -> None:
        """Emit an event on the session's hooks (if any); never raises."""
        payload = {"identity": self.identity_name, **data}
        logger.info(event, extra={"event": event, **{f"ev_{k}": v for k, v in payload.items()}})
        folder = self.activity_folder()
        if folder is not None:
            activity.record(folder, event, data)
        hooks = getattr(self.coordinator, "hooks", None)
        if hooks is None:
            return
        try:
            await hooks.emit(event, payload)
        except Exception:
            logger.debug("event emission failed", exc_info=True)

    def close(self) -> None:
        """Release the store (the last release in the process closes it), after a warm-up still running."""
        warming = self._warming
        if warming is not None and warming is not threading.current_thread():
            # Marked closed first, so a warm-up still loading the model opens no store; joined so no thread
            # of ours is left inside the model's runtime or the engine when the process ends.
            with self._lock:
                self._closed = True
            warming.join()
        with self._lock:
            self._closed = True
            for remove in self._hooks:
                remove()
            self._hooks.clear()
            memory = self._services.get("memory")
            if memory is not None:
                # Its context vectors still in flight are written before the store goes (bounded: what is left keeps
                # its marker and is written at the next open).
                memory.close()
            self._services.clear()
            if self._store is not None:
                release(self._store)
            self._store = None
