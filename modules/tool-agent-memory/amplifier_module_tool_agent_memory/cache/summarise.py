"""Block summaries: the extractive summariser (default, offline, deterministic) and the
``Summariser`` protocol an optional LLM summariser (``amplifier/llm_summariser.py``) follows.

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
from typing import Protocol

from ..tokens import count_tokens
from .models import CacheItem

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


class Summariser(Protocol):
    """A summariser of a closed block's items; ``None`` means: use the extractive summary."""

    def summarise(self, items: Sequence[CacheItem], loop: asyncio.AbstractEventLoop | None) -> str | None: ...
