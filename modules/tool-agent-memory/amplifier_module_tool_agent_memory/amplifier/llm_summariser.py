"""The optional block summariser that asks the session's mounted LLM provider (falls back to extractive)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..cache.models import CacheItem
from ..cache.summarise import SUMMARY_MAX_TOKENS, clip_to_tokens, summary_order
from ..redaction import redact_text
from .provider_call import ask_provider

if TYPE_CHECKING:
    import asyncio

_WS = re.compile(r"\s+")

_PROMPT = (
    "Summarise these working-memory items of an AI agent in at most {words} words. One line per point, "
    "each starting with its kind (warning:, decision:, fact: or snippet:). Warnings and decisions first. "
    "Keep file names, identifiers and numbers exact. No preamble.\n\n{items}"
)


class LLMSummariser:
    """Asks the session's provider for a block summary; ``None`` (use the extractive one) when that is not possible.

    The call is :func:`.provider_call.ask_provider` (stream off, thinking off, a small output, a timeout).
    """

    def __init__(self, coordinator: Any, timeout_s: float) -> None:
        self.coordinator = coordinator
        self.timeout_s = timeout_s

    def summarise(self, items: Sequence[CacheItem], loop: asyncio.AbstractEventLoop | None) -> str | None:
        """Run the provider on ``loop`` from a worker thread; ``None`` (use the extractive summary) on any failure."""
        if not items:
            return None
        listing = "\n".join(f"- {it.kind}: {_WS.sub(' ', it.content)[:600]}" for it in summary_order(items))
        prompt = _PROMPT.format(words=SUMMARY_MAX_TOKENS * 3 // 4, items=listing)
        text = ask_provider(
            self.coordinator, prompt, max_output_tokens=SUMMARY_MAX_TOKENS + 50, loop=loop, timeout_s=self.timeout_s,
            fallback="using the extractive summary",
        )
        if text is None:
            return None
        # The answer is new text that gets stored and embedded: redacted like every other stored text
        # (the items it summarises were, but a model may still write a credential out).
        text = redact_text(text.strip())
        return clip_to_tokens(text) if text else None
