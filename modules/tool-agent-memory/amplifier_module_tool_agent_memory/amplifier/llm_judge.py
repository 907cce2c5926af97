"""The optional judge (``judge: provider``): asks the session's LLM provider whether two requests are the same.

It settles only what certification left open (:func:`..compare.assess` calls it for a near, uncertified
pair) and answers None on any failure, timeout or unclear answer: the agent is asked then, as with
``judge: agent``. The call is made the way the LLM summariser makes it (``llm_summariser.py``): the
session's first provider, ``stream`` off, ``extended_thinking`` off, a small output, a timeout.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

from ..cache.calls import CURRENT_CALL
from ..compare import Difference

logger = logging.getLogger(__name__)

_PROMPT = (
    "Two requests to an AI agent. Would replaying exactly the steps that solved the first also solve the second "
    "(the same action on the same things with the same values)? Answer with one word: SAME or DIFFERENT.\n\n"
    "First: {stored}\nSecond: {asked}\nDifferences a comparison noticed: {differences}"
)


class ProviderJudge:
    """A :class:`..compare.Judge` backed by the session's provider; None (ask the agent) whenever unsure."""

    name = "provider"

    def __init__(self, coordinator: Any, timeout_s: float) -> None:
        self.coordinator = coordinator
        self.timeout_s = timeout_s

    async def _complete(self, prompt: str) -> str:
        from amplifier_core.message_models import ChatRequest, Message

        providers = self.coordinator.get("providers") if self.coordinator is not None else None
        if not providers:
            raise RuntimeError("no provider is mounted in this session")
        provider = next(iter(providers.values()))
        request = ChatRequest(messages=[Message(role="user", content=prompt)], max_output_tokens=16,
                              metadata={"stream": False})
        response = await provider.complete(request, extended_thinking=False)
        parts = [getattr(block, "text", None) for block in getattr(response, "content", None) or []]
        return "".join(p for p in parts if isinstance(p, str))

    def same(self, stored: str, asked: str, differences: Sequence[Difference]) -> bool | None:
        """SAME -> True, DIFFERENT -> False; None on failure, timeout, an unclear answer or no event loop."""
        ctx = CURRENT_CALL.get()
        loop = ctx.loop if ctx is not None else None
        if loop is None or loop.is_closed():
            return None
        try:
            asyncio.get_running_loop()
            return None  # on the loop's own thread: waiting for it here would deadlock
        except RuntimeError:
            pass
        listed = "; ".join(d.describe() for d in differences) or "none named"
        prompt = _PROMPT.format(stored=stored[:1000], asked=asked[:1000], differences=listed[:600])
        future = asyncio.run_coroutine_threadsafe(self._complete(prompt), loop)
        try:
            text = future.result(self.timeout_s)
        except Exception as exc:
            future.cancel()
            logger.warning("provider judge failed; the agent decides", extra={"error": repr(exc)[:300]})
            return None
        words = text.strip().upper().split()
        first = words[0].strip(".!,:;") if words else ""
        return True if first == "SAME" else False if first == "DIFFERENT" else None
