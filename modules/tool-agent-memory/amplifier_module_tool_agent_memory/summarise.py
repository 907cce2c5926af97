"""Block summaries: an extractive summariser (default, offline, deterministic) and an
optional one that asks the session's mounted LLM provider, falling back to the first.

An extractive summary is a list of lines, one per item, ``"<kind>: <gist>"``: warnings
first, then decisions, then the rest by importance (newest first on ties), cut when the
next line would take the summary past its token limit. Each line remembers its item so
that a line whose item has expired can be left out when the summary is shown.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Sequence
from typing import Any

from .cache_models import CacheItem
from .tokens import count_tokens

logger = logging.getLogger(__name__)

SUMMARY_MAX_TOKENS = 200
GIST_MAX_CHARS = 120
_KIND_ORDER = {"warning": 0, "decision": 1}
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")
_WS = re.compile(r"\s+")
# Reserve room for the "(+N more)" line a summary ends with when items were left out.
_MORE_RESERVE = "(+9999 more)"


def gist(content: str, max_chars: int = GIST_MAX_CHARS) -> str:
    """The first sentence of ``content`` on one line, cut at a word boundary to ``max_chars``."""
    text = _WS.sub(" ", content).strip()
    first = _SENTENCE_END.split(text, maxsplit=1)[0]
    if len(first) <= max_chars:
        return first
    cut = first[: max_chars - 1]
    space = cut.rfind(" ")
    if space >= max_chars // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:") + "…"


def summary_order(items: Sequence[CacheItem]) -> list[CacheItem]:
    """Warnings, then decisions, then facts and snippets; by importance, newest first on ties."""
    return sorted(
        items,
        key=lambda it: (_KIND_ORDER.get(it.kind, 2), -it.importance, -it.updated_at.timestamp(), it.id),
    )


def item_line(item: CacheItem) -> str:
    """One summary line: the item's kind and gist (and file for a snippet)."""
    ref = f" [{item.file_ref}]" if item.file_ref else ""
    return f"{item.kind}:{ref} {gist(item.content)}"


def extractive_lines(items: Sequence[CacheItem], max_tokens: int = SUMMARY_MAX_TOKENS) -> list[tuple[str, str]]:
    """(item id, line) pairs in summary order whose rendering stays within ``max_tokens``."""
    chosen: list[tuple[str, str]] = []
    used = 0
    ordered = summary_order(items)
    budget_chars = max_tokens * 4
    for position, item in enumerate(ordered):
        line = item_line(item)
        extra = len(line) + (1 if chosen else 0)
        remaining_after = len(ordered) - position - 1
        reserve = len(_MORE_RESERVE) + 1 if remaining_after else 0
        if used + extra + reserve > budget_chars:
            continue
        chosen.append((item.id, line))
        used += extra
    return chosen


def render_summary(lines: Sequence[tuple[str, str]], live_ids: set[str] | frozenset[str], live_count: int) -> str:
    """The summary text of the lines whose item is live, plus ``(+N more)`` for live items without a line."""
    shown = [line for item_id, line in lines if item_id in live_ids]
    more = live_count - len(shown)
    if more > 0:
        shown.append(f"(+{more} more)")
    return "\n".join(shown)


def clip_to_tokens(text: str, max_tokens: int = SUMMARY_MAX_TOKENS) -> str:
    """``text`` cut at a line or word boundary so that it counts at most ``max_tokens``."""
    text = text.strip()
    if count_tokens(text) <= max_tokens:
        return text
    cut = text[: max_tokens * 4 - 1]
    boundary = max(cut.rfind("\n"), cut.rfind(" "))
    if boundary > len(cut) // 2:
        cut = cut[:boundary]
    return cut.rstrip() + "…"


_PROMPT = (
    "Summarise these working-memory items of an AI agent in at most {words} words. One line per point, "
    "each starting with its kind (warning:, decision:, fact: or snippet:). Warnings and decisions first. "
    "Keep file names, identifiers and numbers exact. No preamble.\n\n{items}"
)


class LLMSummariser:
    """Asks the session's first mounted provider for a block summary; ``None`` when that is not possible."""

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
            messages=[Message(role="user", content=prompt)], max_output_tokens=SUMMARY_MAX_TOKENS + 50, temperature=0
        )
        response = await provider.complete(request)
        parts = [getattr(block, "text", "") for block in getattr(response, "content", None) or []]
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
        text = text.strip()
        return clip_to_tokens(text) if text else None
