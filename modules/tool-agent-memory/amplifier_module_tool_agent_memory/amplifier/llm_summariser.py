"""The optional block summariser that asks the session's mounted LLM provider (falls back to extractive)."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Sequence
from typing import Any

from ..cache.models import CacheItem
from ..cache.summarise import SUMMARY_MAX_TOKENS, clip_to_tokens, summary_order
from ..redaction import redact_text

logger = logging.getLogger(__name__)

_WS = re.compile(r"\s+")

_PROMPT = (
    "Summarise these working-memory items of an AI agent in at most {words} words. One line per point, "
    "each starting with its kind (warning:, decision:, fact: or snippet:). Warnings and decisions first. "
    "Keep file names, identifiers and numbers exact. No preamble.\n\n{items}"
)


class LLMSummariser:
    """Asks the session's provider for a block summary; ``None`` (use the extractive one) when that is not possible.

    The call is made the way foundation's own background calls (hooks-session-naming) make it:
    the session's first (priority) provider, ``metadata={"stream": False}`` so the answer does not
    stream into the user's UI as if it were the assistant's, ``extended_thinking=False`` so a
    provider with session-level thinking neither refuses nor inflates the call, a small
    ``max_output_tokens``, and no ``temperature`` (refused by some models while thinking is on).
    """

    def __init__(self, coordinator: Any, timeout_s: float) -> None:
        self.coordinator = coordinator
        self.timeout_s = timeout_s

    async def _complete(self, prompt: str) -> str:
        from amplifier_core.message_models import ChatRequest, Message

        providers = self.coordinator.get("providers") if self.coordinator is not None else None
        if not providers:
            raise RuntimeError("no provider is mounted in this session")
        provider = next(iter(providers.values()))
        request = ChatRequest(
            messages=[Message(role="user", content=prompt)],
            max_output_tokens=SUMMARY_MAX_TOKENS + 50,
            metadata={"stream": False},
        )
        response = await provider.complete(request, extended_thinking=False)
        parts = [getattr(block, "text", None) for block in getattr(response, "content", None) or []]
        return "".join(p for p in parts if isinstance(p, str))

    def summarise(self, items: Sequence[CacheItem], loop: asyncio.AbstractEventLoop | None) -> str | None:
        """Run the provider on ``loop`` from a worker thread; ``None`` (use the extractive summary) on any failure."""
        if loop is None or loop.is_closed() or not items:
            return None
        try:
            asyncio.get_running_loop()
            return None  # on the loop's own thread: waiting for it here would deadlock
        except RuntimeError:
            pass
        listing = "\n".join(f"- {it.kind}: {_WS.sub(' ', it.content)[:600]}" for it in summary_order(items))
        prompt = _PROMPT.format(words=SUMMARY_MAX_TOKENS * 3 // 4, items=listing)
        future = asyncio.run_coroutine_threadsafe(self._complete(prompt), loop)
        try:
            text = future.result(self.timeout_s)
        except Exception as exc:
            future.cancel()
            logger.warning("LLM summariser failed; using the extractive summary", extra={"error": repr(exc)[:300]})
            return None
        # The answer is new text that gets stored and embedded: redacted like every other stored text
        # (the items it summarises were, but a model may still write a credential out).
        text = redact_text(text.strip())
        return clip_to_tokens(text) if text else None
