"""Recall's session hooks: the relevant memories (and, once, the briefing) on every request of a turn.

The orchestrators (loop-basic, loop-streaming) emit ``prompt:submit {prompt}`` once a turn, then
``provider:request {provider, iteration}`` before every provider call; a ``provider:request`` handler's
ephemeral ``inject_context`` is appended to that one request only. So:

* on ``prompt:submit`` the turn's recall starts in a worker thread (it overlaps the orchestrator's own
  work before the first request);
* on every ``provider:request`` of the turn the handler waits for it at most ``recall.timeout_ms`` and
  returns the block again (an ephemeral injection lasts one request). A recall still running when the
  time is up injects nothing into that request; a later request of the turn uses it once it is done;
* the briefing (standing preferences and decisions) joins the first request whose recall is ready, once
  a session;
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
    briefing_block: str = ""
    briefing_ids: list[str] = field(default_factory=list)
    reason: str = "recalled"
    signals: dict[str, Any] | None = None
    with_briefing: bool = False
    ms: float = 0.0


@dataclass
class SessionRecall:
    """Per session: the turn's running recall and whether the briefing was given."""

    task: asyncio.Task[TurnWork] | None = None
    started: float = 0.0
    briefed: bool = False


def compute(runtime: AgentMemory, prompt: str, with_briefing: bool) -> TurnWork:
    """Recall for ``prompt`` (and the briefing): the blocks to inject. Runs in a worker thread; may raise."""
    from ..memory.recall import HOW_TO_MORE, Recaller, render_block

    started = time.perf_counter()
    config = runtime.config.recall
    recaller = Recaller(runtime.memory(), config)
    work = TurnWork(with_briefing=with_briefing)
    if with_briefing and config.briefing_tokens > 0:
        work.briefing_block, work.briefing_ids = render_block(
            BRIEFING_TAG, BRIEFING_INTRO.format(more=HOW_TO_MORE), recaller.briefing(), config.briefing_tokens
        )
    recalled = recaller.recall(prompt)
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
                with_briefing = mode == "full" and not state.briefed
                state.started = time.perf_counter()
                state.task = asyncio.get_running_loop().create_task(
                    asyncio.to_thread(compute, runtime, prompt, with_briefing)
                )
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
        if not task.done():
            await asyncio.wait({task}, timeout=timeout_s)
        if not task.done():
            return "", {**base, "reason": "timeout"}
        if task.cancelled():
            return "", {**base, "reason": "cancelled"}
        error = task.exception()
        if error is not None:
            logger.warning("recall failed: %s", error, extra={"identity": runtime.identity_name})
            return "", {**base, "reason": "error", "error": type(error).__name__}
        work = task.result()
        briefing = work.briefing_block if not state.briefed else ""
        text = fit([briefing, work.recall_block], _size_limit(runtime.coordinator))
        recall_ids = _shown_ids(text, work.recall_ids)
        briefing_ids = _shown_ids(text, work.briefing_ids) if briefing else []
        if work.with_briefing:
            state.briefed = True  # given (or found empty) on the first request whose recall was ready
        reason = "size_limit" if work.recall_ids and not recall_ids else work.reason
        payload = {
            **base,
            "ids": recall_ids,
            "briefing_ids": briefing_ids,
            "tokens": _tokens(text),
            "reason": reason,
            "recall_ms": round(work.ms, 2),
            "signals": work.signals,
        }
        return text, payload

    unregisters = [
        coordinator.hooks.register(PROMPT_SUBMIT, on_prompt, priority=PRIORITY,
                                   name=f"agent-memory.recall.prompt.{id(runtime):x}"),
        coordinator.hooks.register(PROVIDER_REQUEST, on_request, priority=PRIORITY,
                                   name=f"agent-memory.recall.request.{id(runtime):x}"),
    ]

    def unregister() -> None:
        if state.task is not None and not state.task.done():
            state.task.cancel()
        for fn in unregisters:
            if callable(fn):
                fn()

    return unregister


def _tokens(text: str) -> int:
    from ..tokens import count_tokens

    return count_tokens(text)
