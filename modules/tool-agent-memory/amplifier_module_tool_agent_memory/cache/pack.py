"""Building a memory pack: a scope's most useful live items rendered within a token budget.

The budget is enforced on exactly what the agent receives: ``_PackBuilder`` accounts for the
JSON the pack renders to, and :func:`finish` makes ``token_count`` the tokens of the output's
own rendering.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInput
from ..tokens import chars_for, count_tokens, render
from .models import CacheItem

if TYPE_CHECKING:
    from .state import ScopeState

SECTIONS: tuple[tuple[str, str], ...] = (
    ("fact", "facts"),
    ("decision", "decisions"),
    ("snippet", "snippets"),
    ("warning", "warnings"),
)
SECTION_OF = dict(SECTIONS)
# The rolling scope summary may take at most this share of a pack's budget.
SUMMARY_SHARE = 0.2
# With a query, an item's rank is its cosine to the query plus these small boosts, so
# importance and recency reorder near-ties only. Recency halves every hour.
QUERY_IMPORTANCE_WEIGHT = 0.15
QUERY_RECENCY_WEIGHT = 0.05
RECENCY_HALF_LIFE_S = 3600.0
FAR_FUTURE = datetime.max.replace(tzinfo=UTC)
_KIND_ORDER = {"warning": 0, "decision": 1}


def _recency(item: CacheItem, now: datetime) -> float:
    age = max(0.0, (now - item.updated_at).total_seconds())
    return math.pow(0.5, age / RECENCY_HALF_LIFE_S)


def _priority_key(item: CacheItem) -> tuple[float, float, str]:
    return (-item.importance, -item.updated_at.timestamp(), item.id)


def _by_priority(items: Iterable[CacheItem]) -> list[CacheItem]:
    """Most important first, newest first on ties (the no-query pack order)."""
    return sorted(items, key=lambda it: (it.importance, it.updated_at, it.id), reverse=True)


class _PackBuilder:
    """Fills a pack under a character limit, accounting exactly for the JSON it will render to.

    Adding one key/value pair to a JSON object rendered with ``json.dumps`` defaults costs
    ``len(", ") + len(key) + len(": ") + len(value)``; adding an element to a non-empty list
    costs ``len(", ") + len(element)``. Counters whose final value is unknown while filling
    (``token_count``, ``omitted``) are charged at their largest possible width.
    """

    def __init__(self, skeleton_chars: int, limit_chars: int) -> None:
        self.used = skeleton_chars
        self.limit = limit_chars
        self.sections: dict[str, list[str]] = {name: [] for _, name in SECTIONS}
        self.pointers: list[str] = []
        self.included: set[str] = set()

    def cost(self, kind: str, line_len: int, file_ref: str | None) -> int:
        name = SECTION_OF[kind]
        extra = 2 + line_len if self.sections[name] else len(name) + 8 + line_len
        if file_ref and file_ref not in self.pointers:
            extra += len(render(file_ref)) + (2 if self.pointers else 0)
        return extra

    def try_add(self, item: CacheItem, line: str, line_len: int, limit: int | None = None) -> bool:
        if item.id in self.included:
            return False
        extra = self.cost(item.kind, line_len, item.file_ref)
        if self.used + extra > (self.limit if limit is None else limit):
            return False
        self.sections[SECTION_OF[item.kind]].append(line)
        if item.file_ref and item.file_ref not in self.pointers:
            self.pointers.append(item.file_ref)
        self.included.add(item.id)
        self.used += extra
        return True


def rank(
    st: ScopeState, items: list[CacheItem], qvec: Sequence[float] | None, now: datetime
) -> list[CacheItem]:
    if qvec is None:
        return _by_priority(items)
    rows, sims = st.similarities(qvec)
    scored = [
        (
            float(sims[rows[it.id]])
            + QUERY_IMPORTANCE_WEIGHT * it.importance
            + QUERY_RECENCY_WEIGHT * _recency(it, now),
            it,
        )
        for it in items
    ]
    scored.sort(key=lambda pair: (-pair[0], *_priority_key(pair[1])))
    return [it for _, it in scored]

def build_pack(
    st: ScopeState, budget: int, qvec: Sequence[float] | None, since: int | None, now: datetime, identity: str | None
) -> tuple[dict[str, Any], datetime]:
    """The pack of ``st`` within ``budget`` tokens, and until when it stays valid (the first expiry)."""
    live = [it for it in st.items.values() if it.alive(now)]
    candidates = live if since is None else [it for it in live if it.version > since]
    full_tokens = sum(st.full_tokens(it) for it in candidates)
    tail: dict[str, Any] = {
        "token_count": budget,
        "full_tokens": full_tokens,
        "omitted": len(candidates),
        "version": st.version,
        "is_fresh": False,
    }
    if since is not None:
        tail["since_version"] = since
    tail["identity"] = identity
    skeleton = {"scope": st.scope, "artifact_pointers": [], **tail}
    skeleton_chars = len(render(skeleton))
    limit = chars_for(budget)
    if skeleton_chars > limit:
        need = count_tokens(render(skeleton))
        raise InvalidInput(
            f"field 'token_budget': {budget} is too small for this pack: its fixed fields alone "
            f"(scope, identity, counters) take {need} tokens; use at least {need}"
        )
    builder = _PackBuilder(skeleton_chars, limit)
    ranked = rank(st, candidates, qvec, now)
    warnings = _by_priority(it for it in candidates if it.kind == "warning")
    # The most important warning that fits goes in first, so nothing can crowd it out.
    for item in warnings:
        line, line_len, _, _ = st.pack_line(item)
        if builder.try_add(item, line, line_len):
            break
    # Then everything in rank order: a warning only misses the pack if higher-ranked items took
    # the room, and it may use the room kept for the summary, which other kinds may not.
    summary_cap = chars_for(int(budget * SUMMARY_SHARE))
    shortest = min((st.pack_line(it)[1] for it in candidates), default=0) + 2
    for item in ranked:
        if limit - builder.used < shortest:
            break  # full: nothing left can fit
        line, line_len, _, _ = st.pack_line(item)
        builder.try_add(item, line, line_len, limit=None if item.kind == "warning" else limit - summary_cap)
    non_warnings = [it for it in ranked if it.kind != "warning"]
    summary = rolling_summary(st, candidates, builder, min(summary_cap, limit - builder.used))
    if summary:
        builder.used += len(', "summary": ') + len(render(summary))
    for item in non_warnings:
        if limit - builder.used < shortest:
            break
        line, line_len, _, _ = st.pack_line(item)
        builder.try_add(item, line, line_len)
    output: dict[str, Any] = {"scope": st.scope}
    if summary:
        output["summary"] = summary
    for _, name in SECTIONS:
        if builder.sections[name]:
            output[name] = builder.sections[name]
    output["artifact_pointers"] = builder.pointers
    output.update(tail)
    output["omitted"] = len(candidates) - len(builder.included)
    expiries = [it.ttl_expires_at for it in candidates if it.ttl_expires_at is not None]
    return output, min(expiries, default=FAR_FUTURE)

def rolling_summary(
    st: ScopeState, candidates: list[CacheItem], builder: _PackBuilder, cap_chars: int
) -> str:
    """Summary lines of the items not shown in full: newest block first, warnings and decisions first in each."""
    overhead = len(', "summary": ') + 2
    if cap_chars <= overhead + 8:
        return ""
    wanted = {it.id for it in candidates} - builder.included
    if not wanted:
        return ""
    lines: list[str] = []
    used = overhead
    # Newest block first; sorting one block at a time stops as soon as the cap is reached.
    for block in sorted(st.blocks.values(), key=lambda b: b.seq, reverse=True):
        rest = [st.items[i] for i in st.block_items.get(block.id, []) if i in wanted]
        for item in sorted(rest, key=lambda it: (_KIND_ORDER.get(it.kind, 2), *_priority_key(it))):
            _, _, gist, gist_len = st.pack_line(item)
            extra = gist_len + (2 if lines else 0)
            if used + extra <= cap_chars:
                lines.append(gist)
                used += extra
            if cap_chars - used < 24:
                return "\n".join(lines)
    return "\n".join(lines)


def finish(output: dict[str, Any]) -> dict[str, Any]:
    """Set ``token_count`` to the tokens of the output's own rendering (a fixed point: the count is part of it)."""
    count = output.get("token_count", 0)
    for _ in range(5):
        output["token_count"] = count
        actual = count_tokens(json.dumps(output))
        if actual == count:
            return output
        count = actual
    output["token_count"] = max(count, count_tokens(json.dumps(output)))
    return output
