"""Recall's session hooks: the relevant memories (and, once, the briefing) on every request of a turn.

The orchestrators (loop-basic, loop-streaming) emit ``prompt:submit {prompt}`` once a turn, then
``provider:request {provider, iteration}`` before every provider call; a ``provider:request`` handler's
ephemeral ``inject_context`` is appended to that one request only. So:

* on ``prompt:submit`` the turn's recall starts at once in a worker thread (``run_in_executor`` submits it
  before the handler returns; ``asyncio.to_thread`` would start only when the loop next turns). The briefing
  does not depend on the prompt: on the session's first turn it is read in a second worker at the same time,
  so the first request waits for the slower of the two, not for their sum;
* on every ``provider:request`` of the turn the handler waits for it at most ``recall.timeout_ms`` and
  returns the block again (an ephemeral injection lasts one request). A recall still running when the
  time is up injects nothing into that request; a later request of the turn uses it once it is done;
* the briefing (standing preferences and decisions) joins the first request where it is ready, once a
  session;
* the injection never exceeds the session's ``injection_size_limit`` (an injection over it fails the
  whole turn): whole lines are dropped until it fits;
* a failing store, a timeout or any error injects nothing and is reported in ``memory:recalled``
  (``reason``); the handlers never raise.

A sub-agent session (``coordinator.parent_id`` set) gets what ``recall.sub_agents`` says: its own
prompts' recall without the briefing (default), both, or nothing.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..runtime import AgentMemory

logger = logging.getLogger(__name__)

PROMPT_SUBMIT = "prompt:submit"
PROVIDER_REQUEST = "provider:request"
RECALLED = "memory:recalled"
# Before the session's other context hooks run their own work (lower runs first), after policy hooks.
PRIORITY = 20
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
    """Per session: the turn's running recall, the briefing being read, and whether it was given."""

    task: asyncio.Future[TurnWork] | None = None
    briefing: asyncio.Future[Briefing] | None = None
    briefed: bool = False


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
        BRIEFING_TAG, BRIEFING_INTRO.format(more=HOW_TO_MORE), Recaller(runtime.memory(), config).briefing(),
        config.briefing_tokens,
    )
    return Briefing(block, ids, (time.perf_counter() - started) * 1000)


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
    state = SessionRecall()
    timeout_s = config.timeout_ms / 1000

    async def on_prompt(event: str, data: dict[str, Any]) -> Any:
        from amplifier_core.models import HookResult

        try:
            prompt = str((data or {}).get("prompt") or "")
            if state.task is not None and not state.task.done():
                state.task.cancel()  # a thread already running finishes; its result is dropped
            state.task = None
            if prompt.strip() and runtime.is_ready():
                loop = asyncio.get_running_loop()
                state.task = loop.run_in_executor(None, compute, runtime, prompt)
                if mode == "full" and not state.briefed and state.briefing is None and config.briefing_tokens > 0:
                    state.briefing = loop.run_in_executor(None, compute_briefing, runtime)
        except Exception:
            logger.exception("starting recall failed")
        return HookResult(action="continue")

    async def on_request(event: str, data: dict[str, Any]) -> Any:
        from amplifier_core.models import HookResult

        waited = time.perf_counter()
        try:
            text, payload = await _injection(data or {})
        except Exception:  # never raise into the orchestrator: no injection
            logger.exception("recall failed")
            text, payload = "", {"reason": "error"}
        payload["waited_ms"] = round((time.perf_counter() - waited) * 1000, 2)
        await runtime.emit(RECALLED, payload)
        if not text:
            return HookResult(action="continue")
        return HookResult(action="inject_context", context_injection=text, context_injection_role="user",
                          ephemeral=True, suppress_output=True)

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

    unregisters = [
        coordinator.hooks.register(PROMPT_SUBMIT, on_prompt, priority=PRIORITY,
                                   name=f"agent-memory.recall.prompt.{id(runtime):x}"),
        coordinator.hooks.register(PROVIDER_REQUEST, on_request, priority=PRIORITY,
                                   name=f"agent-memory.recall.request.{id(runtime):x}"),
    ]

    def unregister() -> None:
        for future in (state.task, state.briefing):
            if future is not None and not future.done():
                future.cancel()
        for fn in unregisters:
            if callable(fn):
                fn()

    return unregister


def _tokens(text: str) -> int:
    from ..tokens import count_tokens

    return count_tokens(text)
