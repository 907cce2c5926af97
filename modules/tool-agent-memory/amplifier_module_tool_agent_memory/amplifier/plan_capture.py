"""Automatic plan capture: fill the plan cache from the session's own turns.

Listens to the kernel events an orchestrator emits for every turn:

* ``prompt:submit`` ``{prompt}`` starts a turn;
* ``tool:pre`` ``{tool_name, tool_input}`` records a call, ``tool:post``
  ``{tool_name, tool_input, result}`` its outcome (see :func:`_result_dict` for what
  ``result`` looks like by the time a handler sees it),
  ``tool:error`` ``{tool_name, error}`` a call that raised or named no tool;
* ``orchestrator:complete`` ``{status}`` ends the turn.

At the end of a turn:

* when the turn had a ``plan_lookup`` hit (the agent replayed a cached plan), the plan is
  rewarded once: as a failure with ``tool_failure`` (so it goes stale at once) if any task call
  failed, as a success if every call finished and the turn completed with status success,
  unless the agent rewarded it itself with ``plan_reward`` in the turn; nothing is stored (the
  plan that answered is already cached);
* otherwise, when the turn completed with status success (or an orchestrator that reports
  no status), every task call finished and none failed: when ``plan_lookup`` answered
  ``candidate`` and the turn replayed one candidate's actions unchanged, that is a use of that
  plan (counted, and rewarded unless the agent did); else the replayable calls are stored as
  the plan of the turn's prompt, ``derived_from`` the candidate whose steps (tool names in
  order) they adapt, if any.

Which calls are in a plan (:func:`is_replayable`): not the module's own tools
(``memory_*``, ``cache_*``, ``plan_*``), not read-only lookups, not the names in
``plans.capture_skip_tools``. A *task call* is any call but the module's own tools: a failed
read-only lookup also keeps the turn from being stored, because "all calls succeeded" is
the rule. Calls are kept in the order their ``tool:pre`` events arrive: the model's order for
sequential calls; for a parallel group, the order the orchestrator started them (which may vary,
and does not matter for calls that ran concurrently). A ``tool:post`` is paired with the
oldest unfinished call of the same tool and input, which is exact for parallel groups too.
"""

from __future__ import annotations

import ast
import asyncio
import json
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from ..runtime import AgentMemory
from ..validation import describe_validation_error

logger = logging.getLogger(__name__)

OWN_TOOL_PREFIXES = ("memory_", "cache_", "plan_")
READ_ONLY_VERBS = frozenset(
    {"read", "view", "cat", "head", "tail", "grep", "glob", "search", "find", "list", "ls",
     "lookup", "get", "fetch", "show", "describe", "inspect", "stat", "tree", "diff", "status"}
)
"""A tool whose name starts or ends with one of these words only reads (read_file, code_search,
web_fetch, list_dir, git_status): replaying it changes nothing, so it is left out of plans."""
_MAX_PARSED = 1_000_000  # a plan_lookup answer is at most ~64 KB of actions plus a few fields
PRIORITY = 900  # observe after hooks that may rewrite or deny a call
_NAME_SPLIT = re.compile(r"[^a-z0-9]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def tool_words(name: str) -> list[str]:
    """``read_file`` / ``readFile`` / ``read-file`` -> ``["read", "file"]``."""
    return [w for w in _NAME_SPLIT.split(_CAMEL.sub("_", name).lower()) if w]


def is_own_tool(name: str) -> bool:
    """One of this module's tools."""
    return name.startswith(OWN_TOOL_PREFIXES)


def is_read_only(name: str) -> bool:
    """A lookup by its name's first or last word (see :data:`READ_ONLY_VERBS`)."""
    words = tool_words(name)
    return bool(words) and (words[0] in READ_ONLY_VERBS or words[-1] in READ_ONLY_VERBS)


def is_replayable(name: str, skip: tuple[str, ...] = ()) -> bool:
    """Whether a call of ``name`` belongs in a captured plan."""
    return bool(name) and not is_own_tool(name) and not is_read_only(name) and name not in skip


@dataclass
class _Call:
    tool: str
    args: dict[str, Any]
    key: str
    done: bool = False
    ok: bool = False


@dataclass
class _Turn:
    prompt: str
    calls: list[_Call] = field(default_factory=list)
    hit_plan_id: str | None = None
    candidate_ids: list[str] = field(default_factory=list)
    rewarded: set[str] = field(default_factory=set)
    """Plans the agent rewarded itself in this turn (never rewarded twice)."""
    orphan_failures: int = 0


def _key(tool: str, args: Any) -> str:
    try:
        return tool + "\x00" + json.dumps(args, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return tool + "\x00" + repr(args)


def _parse_text(text: str) -> Any:
    """JSON, or the Python repr of a dict (what ``str(ToolResult)`` gives for a dict output)."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    if text.startswith("{") and len(text) <= _MAX_PARSED:
        try:
            return ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return None
    return None


def _result_dict(result: Any) -> dict[str, Any]:
    """``tool:post``'s ``result`` as a dict with ``success`` and ``output``.

    amplifier-core 2.0.2's hook registry turns a value it cannot serialise into ``str(value)``,
    and loop-basic passes the ToolResult itself: handlers then see ``str(ToolResult)``, which is
    ``"Error: <message>"`` (or ``"Failed"``) for a failure and the output's text for a success.
    A dump (dict) or a ToolResult object is read as such.
    """
    if hasattr(result, "model_dump"):
        dumped = result.model_dump()
        return dumped if isinstance(dumped, dict) else {}
    if isinstance(result, dict):
        return result
    if isinstance(result, str):
        failed = result.startswith("Error:") or result == "Failed"
        return {"success": not failed, "output": None if failed else _parse_text(result)}
    return {}


def _succeeded(result: Any) -> bool:
    return bool(_result_dict(result).get("success", True))


def _output(result: Any) -> dict[str, Any]:
    out = _result_dict(result).get("output")
    if isinstance(out, str):
        out = _parse_text(out)
    return out if isinstance(out, dict) else {}


class PlanCapture:
    """Turn bookkeeping of one mounted session; its handlers never raise into the session."""

    def __init__(self, runtime: AgentMemory) -> None:
        self.runtime = runtime
        self.skip = tuple(runtime.config.plans.capture_skip_tools)
        self.turn: _Turn | None = None

    async def on_prompt(self, event: str, data: dict[str, Any]) -> Any:
        prompt = data.get("prompt")
        self.turn = _Turn(prompt) if isinstance(prompt, str) and prompt.strip() else None
        return _continue()

    async def on_tool_pre(self, event: str, data: dict[str, Any]) -> Any:
        if self.turn is not None:
            tool = str(data.get("tool_name") or "")
            args = data.get("tool_input")
            args = args if isinstance(args, dict) else {}
            self.turn.calls.append(_Call(tool, args, _key(tool, args)))
        return _continue()

    def _pending_call(self, tool: str, args: Any) -> _Call | None:
        assert self.turn is not None
        key = _key(tool, args if isinstance(args, dict) else {})
        exact = next((c for c in self.turn.calls if not c.done and c.key == key), None)
        return exact or next((c for c in self.turn.calls if not c.done and c.tool == tool), None)

    async def on_tool_post(self, event: str, data: dict[str, Any]) -> Any:
        if self.turn is None:
            return _continue()
        tool = str(data.get("tool_name") or "")
        result = data.get("result")
        call = self._pending_call(tool, data.get("tool_input"))
        ok = _succeeded(result)
        if call is not None:
            call.done, call.ok = True, ok
        elif not ok and not is_own_tool(tool):
            self.turn.orphan_failures += 1
        if tool == "plan_lookup" and ok and self.turn.hit_plan_id is None:
            out = _output(result)
            if out.get("hit") and isinstance(out.get("plan_id"), str):
                self.turn.hit_plan_id = out["plan_id"]
            elif isinstance(out.get("candidates"), list):
                self.turn.candidate_ids += [
                    c["plan_id"] for c in out["candidates"] if isinstance(c, dict) and isinstance(c.get("plan_id"), str)
                ]
        if tool == "plan_reward" and ok and isinstance(_output(result).get("plan_id"), str):
            self.turn.rewarded.add(_output(result)["plan_id"])
        return _continue()

    async def on_tool_error(self, event: str, data: dict[str, Any]) -> Any:
        if self.turn is None:
            return _continue()
        tool = str(data.get("tool_name") or "")
        call = self._pending_call(tool, data.get("tool_input"))
        if call is not None:
            call.done, call.ok = True, False
        elif not is_own_tool(tool):
            self.turn.orphan_failures += 1
        return _continue()

    async def on_complete(self, event: str, data: dict[str, Any]) -> Any:
        turn, self.turn = self.turn, None
        # Not ready (bad config, no identity under require_identity): the tools already say why.
        if turn is not None and self.runtime.is_ready():
            try:
                await self.finish(turn, data.get("status"))
            except Exception:
                logger.exception("plan capture failed", extra={"identity": self.runtime.identity_name})
        return _continue()

    async def finish(self, turn: _Turn, status: Any) -> None:
        """Reward the replayed plan, or store the turn's calls as a plan."""
        task_calls = [c for c in turn.calls if not is_own_tool(c.tool)]
        failed = turn.orphan_failures + sum(1 for c in task_calls if c.done and not c.ok)
        unfinished = sum(1 for c in task_calls if not c.done)
        completed = status in (None, "success")
        if turn.hit_plan_id is not None:
            if turn.hit_plan_id in turn.rewarded:
                return  # the agent rewarded the plan itself: once is enough
            if failed:
                await self._reward(turn.hit_plan_id, success=False)
            elif completed and not unfinished:
                await self._reward(turn.hit_plan_id, success=True)
            return
        actions = [{"tool": c.tool, "args": c.args} for c in task_calls if is_replayable(c.tool, self.skip)]
        if not completed or failed or unfinished or not actions:
            logger.debug("turn not captured", extra={"status": status, "failed": failed, "unfinished": unfinished,
                                                     "steps": len(actions)})
            return
        template: str | None = None
        for plan_id in dict.fromkeys(turn.candidate_ids):
            stored = await self._actions(plan_id)
            if stored == actions:
                await self._use(plan_id, rewarded=plan_id in turn.rewarded)
                return
            if template is None and stored is not None and [a.get("tool") for a in stored] == [
                a["tool"] for a in actions
            ]:
                template = plan_id
        await self._store(turn.prompt, actions, template)

    async def _actions(self, plan_id: str) -> list[dict[str, Any]] | None:
        from ..errors import NotFound

        try:
            plan = await asyncio.to_thread(self.runtime.plans().get, plan_id)
        except NotFound:
            return None
        actions = plan.get("actions")
        return actions if isinstance(actions, list) else None

    async def _use(self, plan_id: str, rewarded: bool) -> None:
        """A candidate replayed unchanged: a use of that plan (and its success, unless the agent reported it)."""
        from ..errors import NotFound

        if rewarded:
            return  # the agent's plan_reward of an offered candidate counted the use and the outcome
        started = time.perf_counter()
        try:
            uses = await asyncio.to_thread(self.runtime.plans().use, plan_id)
        except NotFound:
            return
        await self.runtime.emit("plan:used", {"plan_id": plan_id, "count": 1, "uses": uses,
                                              "source": "auto_capture", "latency_ms": _ms(started)})
        if not rewarded:
            await self._reward(plan_id, success=True)

    async def _store(self, prompt: str, actions: list[dict[str, Any]], derived_from: str | None = None) -> None:
        from ..plans.models import PlanStoreInput

        started = time.perf_counter()
        try:
            inp = PlanStoreInput.model_validate({"prompt": prompt, "actions": actions, "derived_from": derived_from})
        except ValidationError as exc:
            # describe_validation_error names fields and rules only (str(exc) would quote the prompt and args).
            logger.info("turn not captured: not a valid plan", extra={"error": describe_validation_error(exc)[:300]})
            return
        outcome = await asyncio.to_thread(self.runtime.plans().store, inp)
        await self.runtime.emit("plan:stored", {**outcome.event_fields(), "source": "auto_capture",
                                                "latency_ms": _ms(started)})

    async def _reward(self, plan_id: str, success: bool) -> None:
        from ..errors import NotFound
        from ..plans.models import PlanRewardInput

        started = time.perf_counter()
        inp = PlanRewardInput.model_validate({"plan_id": plan_id, "success": success, "tool_failure": not success})
        try:
            outcome = await asyncio.to_thread(self.runtime.plans().reward, inp)
        except NotFound:
            return
        fields = {**outcome.event_fields(), "source": "auto_capture", "latency_ms": _ms(started)}
        await self.runtime.emit("plan:reward", fields)
        if outcome.became_stale:
            await self.runtime.emit("plan:stale", {**fields, "reason": outcome.stale_reason})


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 2)


def _continue() -> Any:
    from amplifier_core import HookResult

    return HookResult(action="continue")


def register(coordinator: Any, runtime: AgentMemory) -> Callable[[], None] | None:
    """Listen to the turn events when ``plans.auto_capture`` is on; return the unregister."""
    if not runtime.config.plans.auto_capture:
        return None
    capture = PlanCapture(runtime)
    hooks = coordinator.hooks
    handlers = (
        ("prompt:submit", capture.on_prompt),
        ("tool:pre", capture.on_tool_pre),
        ("tool:post", capture.on_tool_post),
        ("tool:error", capture.on_tool_error),
        ("orchestrator:complete", capture.on_complete),
    )
    unregisters = [
        hooks.register(event, handler, priority=PRIORITY, name=f"agent-memory-plan-capture-{event}")
        for event, handler in handlers
    ]

    def unregister() -> None:
        for fn in unregisters:
            if callable(fn):
                fn()

    return unregister
