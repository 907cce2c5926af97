"""The wordings a memory holds besides its own: what a merge keeps, so that it can be undone (issue 16).

A restatement merged into a memory adds its text to the memory's ``restated`` list (shown with the
memory and indexed by BM25 through ``ctx_text``) and what was said with it (tags, importance,
files, when) to ``restated_meta``, one entry per wording in the same order. ``memory_unmerge``
takes a wording out again and stores it as a memory of its own with that metadata, so a merge the
comparison got wrong loses nothing. A merge happens only when the wording can be kept: a memory
already holding ``MAX_RESTATED`` other wordings takes no more (the new one is stored on its own).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

RESTATED = "restated"
RESTATED_META = "restated_meta"
# Wordings a memory keeps besides its own (an import accepts at most this many too).
MAX_RESTATED = 5
_WS = re.compile(r"\s+")


def normalise_content(text: str) -> str:
    """The form two memories must share to be exact duplicates: case- and whitespace-folded."""
    return _WS.sub(" ", text).strip().casefold()


def searchable_context(ctx: str, restated: Sequence[str]) -> str:
    """What ctx_text indexes: the context window, then the wordings merged into the memory."""
    return "\n".join([ctx, *restated])


def context_window(payload: dict[str, Any]) -> str:
    """The memory's context window alone: its ``ctx_text`` without the restated wordings appended to it."""
    ctx = str(payload.get("ctx_text", payload.get("content", "")))
    restated = [str(t) for t in payload.get(RESTATED, [])]
    suffix = "\n" + "\n".join(restated) if restated else ""
    return ctx[: -len(suffix)] if suffix and ctx.endswith(suffix) else ctx


def known_wording(payload: dict[str, Any], content: str) -> bool:
    """``content`` is already the memory's own text or one of its restated wordings (case and spaces aside)."""
    wording = normalise_content(content)
    return any(
        normalise_content(str(t)) == wording for t in (payload.get("content", ""), *payload.get(RESTATED, []))
    )


def add_wording(payload: dict[str, Any], content: str, meta: dict[str, Any]) -> dict[str, Any] | None:
    """The payload fields that keep ``content`` (said with ``meta``) as a restated wording of the memory
    ``payload``: {} when it already has that wording, None when it cannot take another (a merge would drop it)."""
    if known_wording(payload, content):
        return {}
    restated = [str(t) for t in payload.get(RESTATED, [])]
    if len(restated) >= MAX_RESTATED:
        return None
    metas = _metas(payload, len(restated))
    return {
        RESTATED: [*restated, content],
        RESTATED_META: [*metas, meta],
        "ctx_text": searchable_context(context_window(payload), [*restated, content]),
    }


def take_wording(payload: dict[str, Any], wording: str) -> tuple[str, dict[str, Any], dict[str, Any]] | None:
    """(the restated text matching ``wording``, what was said with it, the payload fields left without it);
    None when the memory has no such wording."""
    restated = [str(t) for t in payload.get(RESTATED, [])]
    wanted = normalise_content(wording)
    for k, text in enumerate(restated):
        if normalise_content(text) == wanted:
            metas = _metas(payload, len(restated))
            rest, rest_metas = restated[:k] + restated[k + 1 :], metas[:k] + metas[k + 1 :]
            fields = {
                RESTATED: rest,
                RESTATED_META: rest_metas,
                "ctx_text": searchable_context(context_window(payload), rest),
            }
            return text, metas[k], fields
    return None


def _metas(payload: dict[str, Any], n: int) -> list[dict[str, Any]]:
    """One metadata entry per restated wording (empty for wordings merged before metadata was kept)."""
    metas = [dict(m) if isinstance(m, dict) else {} for m in payload.get(RESTATED_META, [])][:n]
    return metas + [{} for _ in range(n - len(metas))]
