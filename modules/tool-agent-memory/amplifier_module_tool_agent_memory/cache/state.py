"""The in-memory state of one cache scope: its items, blocks, vectors and the packs built from them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..tokens import count_tokens, render
from .models import CacheBlock, CacheItem
from .summarise import item_line

if TYPE_CHECKING:
    import numpy as np


@dataclass
class CachedPack:
    """A pack already built, reused while its scope version holds and it is within ``valid_until``."""

    version: int
    valid_until: datetime
    output: dict[str, Any]


class ScopeState:
    """The in-memory index of one scope: items, blocks, vectors and the last packs built."""

    def __init__(self, scope: str) -> None:
        self.scope = scope
        self.items: dict[str, CacheItem] = {}
        self.vecs: dict[str, np.ndarray] = {}
        self.blocks: dict[str, CacheBlock] = {}
        self.block_vecs: dict[str, np.ndarray] = {}
        self.block_items: dict[str, list[str]] = {}
        self.open_block_id: str | None = None
        self.version = 0
        self.packs: dict[tuple[Any, ...], CachedPack] = {}
        self._lines: dict[str, tuple[str, int, str, int]] = {}
        self._full_tokens: dict[str, int] = {}
        self._ids: list[str] = []
        self._row: dict[str, int] = {}
        self._mat: np.ndarray | None = None

    def bump(self) -> int:
        """Advance the scope's version; return the new one."""
        self.version += 1
        return self.version

    def add_item(self, item: CacheItem, vec: Sequence[float] | np.ndarray) -> None:
        import numpy as np

        arr = np.asarray(vec, dtype=np.float32)
        self.items[item.id] = item
        self.vecs[item.id] = arr
        self.block_items.setdefault(item.block_id, []).append(item.id)
        if self._mat is not None:
            self._row[item.id] = len(self._ids)
            self._ids.append(item.id)
            self._mat = np.vstack((self._mat, arr[None, :]))

    def remove_items(self, ids: Iterable[str]) -> None:
        for item_id in ids:
            item = self.items.pop(item_id, None)
            self.vecs.pop(item_id, None)
            self._lines.pop(item_id, None)
            self._full_tokens.pop(item_id, None)
            if item is not None:
                members = self.block_items.get(item.block_id)
                if members is not None and item_id in members:
                    members.remove(item_id)
        self._mat = None

    def remove_block(self, block_id: str) -> list[str]:
        """Forget a block and its items; return the item ids."""
        ids = list(self.block_items.pop(block_id, []))
        self.remove_items(ids)
        self.blocks.pop(block_id, None)
        self.block_vecs.pop(block_id, None)
        return ids

    def changed(self, item_id: str) -> None:
        """An item's stored fields changed: drop what was derived from them."""
        self._full_tokens.pop(item_id, None)

    def similarities(self, qvec: Sequence[float]) -> tuple[dict[str, int], np.ndarray]:
        """Cosine of every item of the scope to ``qvec`` (vectors are unit length), with the row of each id."""
        import numpy as np

        if self._mat is None:
            self._ids = list(self.vecs)
            self._row = {item_id: i for i, item_id in enumerate(self._ids)}
            self._mat = (
                np.vstack([self.vecs[i] for i in self._ids]) if self._ids else np.zeros((0, len(qvec)), np.float32)
            )
        return self._row, self._mat @ np.asarray(qvec, dtype=np.float32)

    def live_items_of(self, block_id: str, now: datetime) -> list[CacheItem]:
        return [self.items[i] for i in self.block_items.get(block_id, []) if self.items[i].alive(now)]

    def pack_line(self, item: CacheItem) -> tuple[str, int, str, int]:
        """(line shown in a pack, its rendered length, summary line, its escaped length); content never changes."""
        cached = self._lines.get(item.id)
        if cached is None:
            line = f"[{item.file_ref}] {item.content}" if item.file_ref else item.content
            gist = item_line(item)
            cached = (line, len(render(line)), gist, len(render(gist)) - 2)
            self._lines[item.id] = cached
        return cached

    def full_tokens(self, item: CacheItem) -> int:
        """Tokens of the item's full record as cache_get renders it."""
        tokens = self._full_tokens.get(item.id)
        if tokens is None:
            tokens = count_tokens(render(item.full_view()))
            self._full_tokens[item.id] = tokens
        return tokens
