"""The optional judge (``judge: provider``): asks the session's LLM provider what certification left open.

For plans: whether two requests are the same (:func:`..compare.assess` calls it for a near, uncertified
pair). For memory: whether a new statement updates a near one, says the same, or states another fact
(memory_store calls it for a near fact, decision or preference the comparison could not decide, the ones
it would otherwise answer as ``possible_updates``). It answers None on any failure, timeout or unclear
answer: the agent is asked then, as with ``judge: agent``. The call is
:func:`.provider_call.ask_provider` (stream off, thinking off, a small output, a timeout).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..cache.calls import CURRENT_CALL
from ..compare import Difference, UpdateVerdict
from .provider_call import ask_provider

_SAME_REQUEST = (
    "Two requests to an AI agent. Would replaying exactly the steps that solved the first also solve the second "
    "(the same action on the same things with the same values)? Answer with one word: SAME or DIFFERENT.\n\n"
    "First: {stored}\nSecond: {asked}\nDifferences a comparison noticed: {differences}"
)

_UPDATE = (
    "Two statements an AI agent stored in its long-term memory, the second after the first. Answer with one "
    "word: UPDATE if the second gives a new value of the very thing the first states (the first is no longer "
    "true), SAME if it says the same thing in other words, DIFFERENT if it states another fact (about "
    "something or someone else, or another property).\n\n"
    "First: {stored}\nSecond: {asked}\nDifferences a comparison noticed: {differences}"
)

_ANSWER_TOKENS = 16


class ProviderJudge:
    """A :class:`..compare.Judge` backed by the session's provider; None (ask the agent) whenever unsure."""

    name = "provider"

    def __init__(self, coordinator: Any, timeout_s: float) -> None:
        self.coordinator = coordinator
        self.timeout_s = timeout_s

    def _first_word(self, template: str, stored: str, asked: str, differences: Sequence[Difference]) -> str | None:
        """The first word of the provider's answer, upper-cased; None when the call failed."""
        ctx = CURRENT_CALL.get()
        listed = "; ".join(d.describe() for d in differences) or "none named"
        prompt = template.format(stored=stored[:1000], asked=asked[:1000], differences=listed[:600])
        text = ask_provider(
            self.coordinator, prompt, max_output_tokens=_ANSWER_TOKENS, loop=ctx.loop if ctx is not None else None,
            timeout_s=self.timeout_s, fallback="the agent decides",
        )
        if text is None:
            return None
        words = text.strip().upper().split()
        return words[0].strip(".!,:;") if words else ""

    def same(self, stored: str, asked: str, differences: Sequence[Difference]) -> bool | None:
        """SAME -> True, DIFFERENT -> False; None on failure, timeout, an unclear answer or no event loop."""
        first = self._first_word(_SAME_REQUEST, stored, asked, differences)
        return True if first == "SAME" else False if first == "DIFFERENT" else None

    def update(self, older: str, newer: str, differences: Sequence[Difference]) -> UpdateVerdict | None:
        """UPDATE, SAME or DIFFERENT for a newer memory against an older one; None on failure, timeout, an
        unclear answer or no event loop."""
        first = self._first_word(_UPDATE, older, newer, differences)
        return UpdateVerdict(first.lower()) if first in ("UPDATE", "SAME", "DIFFERENT") else None
