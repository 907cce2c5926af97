"""Recall's session hooks: the relevant memories (and, once, the briefing) on every request of a turn.

The orchestrators (loop-basic, loop-streaming) emit ``prompt:submit {prompt}`` once a turn, then
``provider:request {provider, iteration}`` before every provider call; a ``provider:request`` handler's
ephemeral ``inject_context`` is appended to that one request only. So:

* the briefing (standing preferences and decisions) does not depend on the prompt: it is read in a worker
  thread as soon as the session is ready (``on_session_ready``, every module mounted; with ``warm_up`` on),
  so it is ready long before the first prompt and the first request neither waits for it nor shares the
  interpreter with it (measured: ~6 ms of CPU off the first request, docs/recall.md). A memory written
  before it is given (``memory_store``, ``memory_forget``, ...) reads it again. In a host that does not call
  ``on_session_ready`` (or with ``warm_up: false``) it starts with the first prompt, beside the recall;
* on ``prompt:submit`` the turn's recall starts at once in a worker thread of a long-lived recall pool. The
  handler is a plain function, which amplifier-core calls on its own runtime thread: the worker starts there,
  without a round trip through the event loop (a coroutine handler is handed to the loop and waited for), and the
  loop adopts the running recall before the orchestrator goes on (three lane runs: the first request 0.3-1.4 ms
  sooner p50 in 10 of 12 bucket-runs, p95 unchanged within the runs' noise: docs/recall.md, session 13);
* on every ``provider:request`` of the turn the handler waits for it at most ``recall.timeout_ms`` and
  returns the block again (an ephemeral injection lasts one request). A recall still running when the
  time is up injects nothing into that request; a later request of the turn uses it once it is done;
* the briefing joins the first request (waited for like the recall when it is not ready yet), once a
  session;
* the injection never exceeds the session's ``injection_size_limit`` (an injection over it fails the
  whole turn): whole lines are dropped until it fits;
* a failing store, a timeout or any error injects nothing and is reported in ``memory:recalled``
  (``reason``); the handlers never raise. The event is emitted once the request has left (it reports and
  changes nothing), not on the request's path: ``EMIT_DELAY_S`` after it, while the provider's call is under
  way, or at the turn's end (``orchestrator:complete``) when that comes first, so it still arrives within the
  turn.

A sub-agent session (``coordinator.parent_id`` set) gets what ``recall.sub_agents`` says: its own
prompts' recall without the briefing (default), both, or nothing.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..runtime import AgentMemory

logger = logging.getLogger(__name__)

PROMPT_SUBMIT = "prompt:submit"
PROVIDER_REQUEST = "provider:request"
RECALLED = "memory:recalled"
TURN_END = "orchestrator:complete"
# How long after the request it reports memory:recalled is emitted: by then the orchestrator is waiting for the
# provider's answer and the loop is idle. Emitted from a task the loop ran next, it ran before the request left:
# the logging, the activity log's write and the hooks' dispatch were on the request's path (quiet lane, session 10:
# docs/recall.md).
EMIT_DELAY_S = 0.02
# Before the session's other context hooks run their own work (lower runs first), after policy hooks.
PRIORITY = 20
# The recall threads' OS name (at most 15 bytes): a thread a pool starts inherits the name of the one that started it
# (amplifier-core's tokio runtime thread), so without it a per-thread CPU count (benchmarks/recall.py --threads) put
# recall's worker under tokio's.
_THREAD_NAME = b"memory-recall"
_pool: concurrent.futures.ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _name_thread() -> None:
    """The pool's initializer: name the OS thread (Linux; elsewhere, or without libc, it keeps the inherited one)."""
    import contextlib
    import ctypes

    with contextlib.suppress(Exception):
        ctypes.CDLL(None).prctl(15, _THREAD_NAME, 0, 0, 0)  # PR_SET_NAME; libc is in the process's own symbols


def _recall_pool() -> concurrent.futures.ThreadPoolExecutor:
    """The process's recall threads, long-lived, for a handler that runs off the event loop (no loop executor).

    At most 4, so a sub-agent's recall or a late one never queues behind another. A pool, not one dedicated thread on
    a plain queue: from submit to the worker's first line both took 0.12-0.14 ms p50 after 50 ms idle (lane, 300
    alternating pairs, session 14), the same within 0.02 ms."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = concurrent.futures.ThreadPoolExecutor(
                max_workers=4, thread_name_prefix="agent-memory-recall", initializer=_name_thread
            )
        return _pool


RECALL_TAG = "agent-memory-recall"
BRIEFING_TAG = "agent-memory-briefing"
RECALL_INTRO = "Memories that may bear on this request, recalled automatically (not from the user). {more}"
BRIEFING_INTRO = "Standing preferences and decisions from memory, newest first. {more}"


@dataclass
class TurnWork:
    """What one turn's recall computed in its worker thread."""

    recall_block: str = ""
    recall_ids: list[str] = field(default_factory=list)
    reason: str = "recalled"
    signals: dict[str, Any] | None = None
    ms: float = 0.0


@dataclass(frozen=True)
class Briefing:
    """The session's briefing block (empty when there is nothing to brief) and the ids it shows."""

    block: str
    ids: list[str]
    ms: float


@dataclass
class SessionRecall:
    """Per session: the turn's running recall, the briefing being read, whether it was given, and every worker
    or event still running (the cleanup waits for them: a worker reads the store it releases)."""

    wants_briefing: bool
    task: asyncio.Future[TurnWork] | None = None
    briefing: asyncio.Future[Briefing] | None = None
    briefed: bool = False
    running: set[asyncio.Future[Any]] = field(default_factory=set)
    # memory:recalled events waiting for their delay: calling one emits it now (once).
    pending: list[Callable[[], None]] = field(default_factory=list)
    # The last event's emission: the next one starts after it ends, so events arrive in their requests' order
    # even when a handler of theirs waits (the core dispatches each emission on its own).
    emitting: asyncio.Task[None] | None = None
    # Recalls started by the plain prompt:submit handler on amplifier-core's thread, not adopted by the loop yet
    # (a deque: appended there, emptied here, each side atomic under the GIL).
    incoming: deque[concurrent.futures.Future[TurnWork] | None] = field(default_factory=deque)

    def emit_pending(self) -> None:
        """Start emitting every event still waiting for its delay, in the order of their requests."""
        pending, self.pending = self.pending, []
        for start in pending:
            start()


def compute(runtime: AgentMemory, prompt: str) -> TurnWork:
    """Recall for ``prompt``: the block to inject. Runs in a worker thread; may raise."""
    from ..memory.recall import HOW_TO_MORE, Recaller, render_block

    started = time.perf_counter()
    config = runtime.config.recall
    work = TurnWork()
    recalled = Recaller(runtime.memory(), config).recall(prompt)
    work.reason = recalled.reason
    work.signals = recalled.signals.as_dict() if recalled.signals else None
    if recalled.memories:
        work.recall_block, work.recall_ids = render_block(
            RECALL_TAG, RECALL_INTRO.format(more=HOW_TO_MORE), recalled.memories, config.budget_tokens
        )
        if not work.recall_ids:
            work.reason = "over_budget"
    work.ms = (time.perf_counter() - started) * 1000
    return work


def compute_briefing(runtime: AgentMemory) -> Briefing:
    """The briefing block (standing preferences and decisions). Runs in a worker thread; may raise."""
    from ..memory.recall import HOW_TO_MORE, Recaller, render_block

    started = time.perf_counter()
    config = runtime.config.recall
    block, ids = render_block(
        BRIEFING_TAG,
        BRIEFING_INTRO.format(more=HOW_TO_MORE),
        Recaller(runtime.memory(), config).briefing(),
        config.briefing_tokens,
    )
    return Briefing(block, ids, (time.perf_counter() - started) * 1000)


def memory_writes() -> list[str]:
    """The events of the tools that change long-term memory (from the one tool table): one emitted before the
    briefing is given reads the briefing again."""
    from ..tools.table import TOOLS

    return sorted({spec.event for spec in TOOLS if spec.name.startswith("memory_") and not spec.hints.read_only})


def fit(parts: list[str], limit: int | None) -> str:
    """The blocks joined, with whole memory lines dropped from the end until the text is at most ``limit``
    characters (the session's injection_size_limit); empty when even a block's header does not fit."""
    text = "\n\n".join(p for p in parts if p)
    if limit is None or len(text) <= limit:
        return text
    kept: list[str] = []
    for part in parts:
        if not part:
            continue
        lines = part.split("\n")
        header, items, footer = lines[:2], lines[2:-1], lines[-1:]
        while items:
            candidate = "\n\n".join([*kept, "\n".join(header + items + footer)])
            if len(candidate) <= limit:
                break
            items.pop()
        if not items:
            break
        kept.append("\n".join(header + items + footer))
    return "\n\n".join(kept)


def _shown_ids(text: str, ids: list[str]) -> list[str]:
    return [i for i in ids if f"[{i}]" in text]


def _size_limit(coordinator: Any) -> int | None:
    try:
        limit = getattr(coordinator, "injection_size_limit", None)
    except Exception:
        return None
    return int(limit) if isinstance(limit, int) and limit > 0 else None


def register(coordinator: Any, runtime: AgentMemory) -> Callable[[], Any] | None:
    """Register recall's handlers on ``coordinator.hooks``; None when recall is off for this session."""
    config = runtime.config.recall
    is_sub_agent = getattr(coordinator, "parent_id", None) is not None
    mode = config.sub_agents if is_sub_agent else "full"
    if not config.enabled or mode == "off":
        return None
    state = SessionRecall(wants_briefing=mode == "full" and config.briefing_tokens > 0)
    timeout_s = config.timeout_ms / 1000

    def in_worker(fn: Callable[..., Any], *args: Any) -> asyncio.Future[Any]:
        """``fn(*args)`` in a worker thread, tracked until it ends; an error nobody reads is not logged twice."""
        return track(asyncio.get_running_loop().run_in_executor(None, fn, *args))

    def track(future: asyncio.Future[Any]) -> asyncio.Future[Any]:
        state.running.add(future)

        def ended(done: asyncio.Future[Any]) -> None:
            state.running.discard(done)
            if not done.cancelled():
                done.exception()  # read by on_request when it matters; marks it retrieved

        future.add_done_callback(ended)
        return future

    def start_briefing() -> None:
        """Read the briefing in a worker (again when memory changed before it was given)."""
        if state.wants_briefing and not state.briefed and runtime.is_ready():
            state.briefing = in_worker(compute_briefing, runtime)

    loop = _running_loop()
    if loop is not None:
        # A recall thread started now, at mount: the first turn's recall then neither creates it nor names it.
        _recall_pool().submit(int)

    def on_prompt(event: str, data: dict[str, Any]) -> Any:
        """The turn's recall, started at once in the recall pool. A plain function: amplifier-core calls it on its own
        runtime thread, so the worker starts without a round trip through the event loop (a coroutine handler is
        handed to the loop and waited for); the loop adopts the running recall."""
        from amplifier_core.models import HookResult

        try:
            prompt = str((data or {}).get("prompt") or "")
            started = None
            if prompt.strip() and runtime.is_ready():
                started = _recall_pool().submit(compute, runtime, prompt)
            # Handed over twice: the loop adopts it as soon as it runs, and the turn's first request adopts it
            # first if the loop has not yet, so a request never reads the previous turn's recall, whatever order
            # the host delivers the loop's callback and the orchestrator's next step in.
            state.incoming.append(started)
            if loop is None:
                pass  # registered outside a running loop: the turn's first request adopts it
            elif _running_loop() is loop:
                adopt_incoming()  # a host that calls a plain handler on the loop itself
            else:
                loop.call_soon_threadsafe(adopt_incoming)
        except Exception:
            logger.exception("starting recall failed")
        return HookResult(action="continue")

    def adopt_incoming() -> None:
        """On the loop: every recall the plain handler started and the loop has not adopted, in their order."""
        while state.incoming:
            adopt(state.incoming.popleft())

    def adopt(started: concurrent.futures.Future[TurnWork] | None) -> None:
        """On the loop, before the orchestrator goes on (queued ahead of the dispatch's answer): the turn's recall.
        A previous turn's recall still running finishes; its result is dropped."""
        try:
            state.emit_pending()  # a previous turn's last event, if its turn did not end as usual
            state.task = None if started is None else track(asyncio.wrap_future(started))
            if started is not None and state.briefing is None:
                start_briefing()
        except Exception:
            logger.exception("starting recall failed")

    async def on_request(event: str, data: dict[str, Any]) -> Any:
        from amplifier_core.models import HookResult

        waited = time.perf_counter()
        try:
            adopt_incoming()
            text, payload = await _injection(data or {})
        except Exception:  # never raise into the orchestrator: no injection
            logger.exception("recall failed")
            text, payload = "", {"reason": "error"}
        payload["waited_ms"] = round((time.perf_counter() - waited) * 1000, 2)
        emit_after_request(payload)
        if not text:
            return HookResult(action="continue")
        return HookResult(
            action="inject_context",
            context_injection=text,
            context_injection_role="user",
            ephemeral=True,
            suppress_output=True,
        )

    def emit_after_request(payload: dict[str, Any]) -> None:
        """``memory:recalled``, emitted once the request has left: the event only reports, and emitting it
        (through the session's hooks, its handlers and the activity log) before returning added 2.1 ms p50 /
        6.2 ms p95 to the first request (loaded machine, docs/recall.md). It starts ``EMIT_DELAY_S`` later, or at
        the turn's end, the next prompt or the session's cleanup if one comes first; the cleanup waits for it."""
        loop = asyncio.get_running_loop()
        handle: asyncio.TimerHandle | None = None

        def start() -> None:
            nonlocal handle
            if handle is None:
                return  # already started
            handle.cancel()
            handle = None
            if start in state.pending:
                state.pending.remove(start)
            task = loop.create_task(emit_after(state.emitting, payload))
            state.emitting = task
            state.running.add(task)
            task.add_done_callback(state.running.discard)

        handle = loop.call_later(EMIT_DELAY_S, start)
        state.pending.append(start)

    async def emit_after(previous: asyncio.Task[None] | None, payload: dict[str, Any]) -> None:
        if previous is not None:
            await asyncio.wait({previous})
        await runtime.emit(RECALLED, payload)

    async def on_turn_end(event: str, data: dict[str, Any]) -> Any:
        """The turn's events not emitted yet are emitted before the turn returns."""
        from amplifier_core.models import HookResult

        try:
            state.emit_pending()
            emitting = {f for f in state.running if isinstance(f, asyncio.Task)}
            if emitting:
                # Awaited to the end, as the orchestrator awaits every event's handlers: bounded by the recall's
                # timeout, a loaded machine's hook dispatch (it hops through the core's own threads) let the turn
                # return before its events (a flake of the test that checks they arrive within the turn).
                await asyncio.wait(emitting)
        except Exception:
            logger.exception("emitting memory:recalled failed")
        return HookResult(action="continue")

    async def _injection(data: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        base: dict[str, Any] = {"iteration": data.get("iteration"), "ids": [], "briefing_ids": [], "tokens": 0}
        task = state.task
        if task is None:
            return "", {**base, "reason": "no_prompt" if runtime.is_ready() else "not_ready"}
        waiting = {f for f in (task, None if state.briefed else state.briefing) if f is not None and not f.done()}
        if waiting:
            await asyncio.wait(waiting, timeout=timeout_s)
        briefing = _take_briefing()
        if not task.done():
            work, reason = TurnWork(), "timeout"
        elif task.cancelled():
            work, reason = TurnWork(), "cancelled"
        elif (error := task.exception()) is not None:
            logger.warning("recall failed: %s", error, extra={"identity": runtime.identity_name})
            base["error"] = type(error).__name__
            work, reason = TurnWork(), "error"
        else:
            work = task.result()
            reason = work.reason
        text = fit([briefing.block if briefing else "", work.recall_block], _size_limit(runtime.coordinator))
        recall_ids = _shown_ids(text, work.recall_ids)
        briefing_ids = _shown_ids(text, briefing.ids) if briefing else []
        if work.recall_ids and not recall_ids:
            reason = "size_limit"
        payload = {**base, "ids": recall_ids, "briefing_ids": briefing_ids, "tokens": _tokens(text), "reason": reason}
        if task.done() and reason not in ("cancelled", "error"):
            payload.update(recall_ms=round(work.ms, 2), signals=work.signals)
        if briefing is not None:
            payload["briefing_ms"] = round(briefing.ms, 2)
        return text, payload

    def _take_briefing() -> Briefing | None:
        """The briefing when it is ready and not given yet (then it counts as given, even when empty)."""
        future = state.briefing
        if state.briefed or future is None or not future.done():
            return None
        state.briefed = True
        if future.cancelled():
            return None
        error = future.exception()
        if error is not None:
            logger.warning("briefing failed: %s", error, extra={"identity": runtime.identity_name})
            return None
        return future.result()

    async def on_memory_changed(event: str, data: dict[str, Any]) -> Any:
        from amplifier_core.models import HookResult

        if state.briefing is not None and not state.briefed:
            try:
                start_briefing()
            except Exception:
                logger.exception("reading the briefing again failed")
        return HookResult(action="continue")

    unregisters = [
        coordinator.hooks.register(
            PROMPT_SUBMIT, on_prompt, priority=PRIORITY, name=f"agent-memory.recall.prompt.{id(runtime):x}"
        ),
        coordinator.hooks.register(
            PROVIDER_REQUEST, on_request, priority=PRIORITY, name=f"agent-memory.recall.request.{id(runtime):x}"
        ),
        coordinator.hooks.register(
            TURN_END, on_turn_end, priority=PRIORITY, name=f"agent-memory.recall.turn-end.{id(runtime):x}"
        ),
    ]
    if state.wants_briefing:
        unregisters += [
            coordinator.hooks.register(
                event, on_memory_changed, priority=PRIORITY, name=f"agent-memory.recall.changed.{id(runtime):x}"
            )
            for event in memory_writes()
        ]
        runtime.on_session_ready.append(start_briefing)

    async def unregister() -> None:
        for fn in unregisters:
            if callable(fn):
                fn()
        adopt_incoming()  # a recall no request adopted (the turn ended before one): tracked, so waited for below
        state.emit_pending()
        if state.running:
            # A worker still reading (a briefing started at session start, a late recall) ends before the cleanup
            # releases the store it reads.
            await asyncio.wait(set(state.running), timeout=timeout_s)

    return unregister


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _tokens(text: str) -> int:
    from ..tokens import count_tokens

    return count_tokens(text)
