"""An in-memory context manager whose compaction behaves like context-simple's, as hooks see it.

Compaction is ephemeral: the stored history never shrinks, so every request whose messages are
over ``compact_threshold`` of ``max_tokens`` is compacted again and emits ``context:compaction``
again, with the stats fields context-simple emits. Tokens are estimated as characters / 4.
``max_tokens`` may be changed between turns (the tests lower it to start compacting).
"""

from __future__ import annotations

import json
from typing import Any

__amplifier_module_type__ = "context"


async def mount(coordinator: Any, config: dict[str, Any] | None = None) -> None:
    """Mount the context manager."""
    cfg = config or {}
    context = CompactingContext(
        hooks=coordinator.hooks,
        max_tokens=int(cfg.get("max_tokens", 200_000)),
        compact_threshold=float(cfg.get("compact_threshold", 0.8)),
        target_usage=float(cfg.get("target_usage", 0.5)),
    )
    await coordinator.mount("context", context)


def _tokens(messages: list[dict[str, Any]]) -> int:
    return sum(len(json.dumps(m, default=str)) for m in messages) // 4


class CompactingContext:
    """Messages in memory; a compacted view per request when over budget."""

    def __init__(self, hooks: Any, max_tokens: int, compact_threshold: float, target_usage: float) -> None:
        self.hooks = hooks
        self.max_tokens = max_tokens
        self.compact_threshold = compact_threshold
        self.target_usage = target_usage
        self.messages: list[dict[str, Any]] = []
        self.compactions = 0

    async def add_message(self, message: dict[str, Any]) -> None:
        """Append a message (never refused: tool results must always be added)."""
        self.messages.append(message)

    async def get_messages_for_request(
        self, token_budget: int | None = None, provider: Any = None
    ) -> list[dict[str, Any]]:
        """The history, or a compacted view of it (the history itself is kept whole)."""
        budget = token_budget or self.max_tokens
        before = _tokens(self.messages)
        if before < budget * self.compact_threshold:
            return list(self.messages)
        return await self._compact(budget, before)

    async def _compact(self, budget: int, before: int) -> list[dict[str, Any]]:
        # Drop the oldest turns whole (a user message and everything after it up to the next one),
        # keeping the last user turn, until the view is under the target.
        target = int(budget * self.target_usage)
        view = list(self.messages)
        removed = 0
        while _tokens(view) > target:
            starts = [i for i, m in enumerate(view) if m.get("role") == "user"]
            if len(starts) < 2:
                break
            removed += starts[1] - starts[0]
            view = view[: starts[0]] + view[starts[1]:]
        self.compactions += 1
        stats = {
            "before_tokens": before,
            "after_tokens": _tokens(view),
            "before_messages": len(self.messages),
            "after_messages": len(view),
            "messages_removed": removed,
            "messages_truncated": 0,
            "user_messages_stubbed": 0,
            "system_messages_preserved": sum(1 for m in view if m.get("role") == "system"),
            "strategy_level": 3,
            "budget": budget,
            "target_tokens": target,
        }
        await self.hooks.emit("context:compaction", stats)
        return view

    async def get_messages(self) -> list[dict[str, Any]]:
        """The whole history."""
        return list(self.messages)

    async def set_messages(self, messages: list[dict[str, Any]]) -> None:
        """Replace the history."""
        self.messages = list(messages)

    async def clear(self) -> None:
        """Forget the history."""
        self.messages = []
