"""Where each live point's journal records are: a compact id -> locations map for a million ids.

A location is ``(segment number << 32) | offset`` of one record. The journal keeps one list of
locations per live id, oldest first, and needs: lookup, append, delete, replace, the count, and
every id in the order its records start.

Why not a dict of str -> list: at a million memories that costs ~210 bytes an id (the key string,
the list, the int) and ~6 s to rebuild from the persisted index when a store opens. Here the ids
loaded from the persisted index that are UUIDs with exactly one record (what an import and plain
stores write: nearly all of them) live in three numpy arrays sorted by id, 24 bytes an id, loaded
from the file without parsing; only the rest (ids written or changed since loading, ids with more
than one record, ids that are not UUIDs) are in a dict. A UUID in the arrays is never also in the
dict: the moment one of them changes it moves to the dict and is marked dead in the arrays.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

_U64 = np.dtype("<u8")


def _uuid_key(pid: str) -> tuple[int, int] | None:
    """(high, low) 64-bit halves of a canonical UUID string; None for any other id (kept in the dict)."""
    if len(pid) != 36:
        return None
    try:
        value = uuid.UUID(pid)
    except ValueError:
        return None
    if str(value) != pid:
        # Not the canonical spelling (upper case, braces): the arrays could not give the same string back.
        return None
    return value.int >> 64, value.int & 0xFFFF_FFFF_FFFF_FFFF


def _uuid_str(high: int, low: int) -> str:
    return str(uuid.UUID(int=(int(high) << 64) | int(low)))


class LiveIndex:
    """id -> locations of its records (oldest first), for the live points of one journal."""

    def __init__(self) -> None:
        empty = np.zeros(0, dtype=_U64)
        self._high: np.ndarray[Any, np.dtype[np.uint64]] = empty
        self._low: np.ndarray[Any, np.dtype[np.uint64]] = empty
        self._loc: np.ndarray[Any, np.dtype[np.uint64]] = empty
        self._alive: np.ndarray[Any, np.dtype[np.bool_]] = np.zeros(0, dtype=np.bool_)
        self._alive_count = 0
        self._more: dict[str, list[int]] = {}

    # Loading and saving

    @classmethod
    def from_arrays(
        cls,
        high: np.ndarray[Any, np.dtype[np.uint64]],
        low: np.ndarray[Any, np.dtype[np.uint64]],
        loc: np.ndarray[Any, np.dtype[np.uint64]],
        more: dict[str, list[int]],
    ) -> LiveIndex:
        """An index of single-record UUIDs (sorted by (high, low), as :meth:`to_arrays` gives them) plus the rest."""
        if not (len(high) == len(low) == len(loc)):
            raise ValueError("arrays of different lengths")
        if len(high) > 1:
            order_ok = bool(np.all((high[1:] > high[:-1]) | ((high[1:] == high[:-1]) & (low[1:] > low[:-1]))))
            if not order_ok:
                raise ValueError("ids not sorted")
        index = cls()
        index._high, index._low = high, low
        # The locations change in place when a purge moves a record: own a writable copy.
        index._loc = np.array(loc, dtype=_U64)
        index._alive = np.ones(len(high), dtype=np.bool_)
        index._alive_count = len(high)
        index._more = more
        return index

    def to_arrays(
        self,
    ) -> tuple[
        np.ndarray[Any, np.dtype[np.uint64]],
        np.ndarray[Any, np.dtype[np.uint64]],
        np.ndarray[Any, np.dtype[np.uint64]],
        dict[str, list[int]],
    ]:
        """(high, low, loc) of every single-record UUID sorted by id, and every other id's locations.

        The index is compacted first (:meth:`compact`): the arrays returned are its own, to be read at once.
        """
        self.compact()
        return self._high, self._low, self._loc, dict(self._more)

    def compact(self) -> None:
        """Move the dict's single-record UUIDs into the sorted arrays, dropping the dead slots.

        Why: the journal persists the index every few thousand writes, and a long-running writer (an import
        of a million memories) would otherwise keep every id it wrote in the dict, ~210 bytes each, and parse
        all of them again at every persist (quadratic over the import). Compacted there, the dict holds only
        the ids written since the last persist.
        """
        alive = self._alive
        highs, lows, locs = [self._high[alive]], [self._low[alive]], [self._loc[alive]]
        rest: dict[str, list[int]] = {}
        moved_high, moved_low, moved_loc = [], [], []
        for pid, where in self._more.items():
            key = _uuid_key(pid) if len(where) == 1 else None
            if key is None:
                rest[pid] = where
            else:
                moved_high.append(key[0])
                moved_low.append(key[1])
                moved_loc.append(where[0])
        if not moved_high and len(highs[0]) == len(self._high):
            return  # nothing moved, nothing dead: the arrays are already what they would become
        highs.append(np.array(moved_high, dtype=_U64))
        lows.append(np.array(moved_low, dtype=_U64))
        locs.append(np.array(moved_loc, dtype=_U64))
        high, low, loc = np.concatenate(highs), np.concatenate(lows), np.concatenate(locs)
        order = np.lexsort((low, high))
        self._high, self._low, self._loc = high[order], low[order], loc[order]
        self._alive = np.ones(len(order), dtype=np.bool_)
        self._alive_count = len(order)
        self._more = rest

    # Lookup

    def _slot(self, key: tuple[int, int] | None) -> int:
        """Position of a live UUID in the arrays, or -1."""
        if key is None or not self._alive_count:
            return -1
        high, low = key
        # Two binary searches: the run of ids with this high half, then the low half inside it (sorted by
        # (high, low)). Not a scan of the run: ids made from small integers (``UUID(int=n)``, as the scale
        # benchmark's files have) all share the high half 0, and a scan of a million of them took seconds.
        start = int(np.searchsorted(self._high, np.uint64(high), side="left"))
        stop = int(np.searchsorted(self._high, np.uint64(high), side="right"))
        slot = start + int(np.searchsorted(self._low[start:stop], np.uint64(low), side="left"))
        if slot < stop and int(self._low[slot]) == low:
            return slot if bool(self._alive[slot]) else -1
        return -1

    def get(self, pid: str) -> list[int] | None:
        """The locations of an id's records, oldest first (a copy for ids in the arrays), or None."""
        where = self._more.get(pid)
        if where is not None:
            return where
        slot = self._slot(_uuid_key(pid))
        return None if slot < 0 else [int(self._loc[slot])]

    def __contains__(self, pid: str) -> bool:
        return pid in self._more or self._slot(_uuid_key(pid)) >= 0

    def __len__(self) -> int:
        return self._alive_count + len(self._more)

    # Changes

    def _take(self, pid: str) -> list[int] | None:
        """Remove an id from the arrays (marked dead) and return its locations."""
        slot = self._slot(_uuid_key(pid))
        if slot < 0:
            return None
        self._alive[slot] = False
        self._alive_count -= 1
        return [int(self._loc[slot])]

    def add(self, pid: str, loc: int) -> None:
        """Note one more record of ``pid`` (the newest)."""
        where = self._more.get(pid)
        if where is None:
            where = self._take(pid) or []
            self._more[pid] = where
        where.append(loc)

    def pop(self, pid: str) -> list[int] | None:
        """Forget an id; its locations, or None when it was not live."""
        where = self._more.pop(pid, None)
        return where if where is not None else self._take(pid)

    def replace(self, pid: str, locs: list[int]) -> None:
        """Set an id's locations (oldest first); an empty list forgets it."""
        if not locs:
            self.pop(pid)
            return
        if pid not in self._more:
            slot = self._slot(_uuid_key(pid))
            if slot >= 0 and len(locs) == 1:
                self._loc[slot] = locs[0]
                return
            if slot >= 0:
                self._alive[slot] = False
                self._alive_count -= 1
        self._more[pid] = list(locs)

    # Every id

    def ids(self) -> list[str]:
        """Every live id, in the order of its oldest record."""
        alive = np.flatnonzero(self._alive)
        firsts: list[tuple[int, str]] = [
            (int(self._loc[i]), _uuid_str(self._high[i], self._low[i])) for i in alive
        ]
        firsts.extend((where[0], pid) for pid, where in self._more.items())
        firsts.sort(key=lambda pair: pair[0])
        return [pid for _loc, pid in firsts]

    def items(self) -> Iterator[tuple[str, list[int]]]:
        """(id, locations) of every live id, in no particular order."""
        for i in np.flatnonzero(self._alive):
            yield _uuid_str(self._high[i], self._low[i]), [int(self._loc[i])]
        yield from self._more.items()

    @classmethod
    def from_items(cls, items: Iterable[tuple[str, list[int]]]) -> LiveIndex:
        """An index of these (id, locations), all kept in the dict (for an index file of the older format)."""
        index = cls()
        index._more = {pid: list(where) for pid, where in items}
        return index


def encode_rest(rest: dict[str, list[int]]) -> bytes:
    """The ids outside the arrays, as compact JSON."""
    return json.dumps(rest, separators=(",", ":"), ensure_ascii=False).encode()


def decode_rest(data: bytes) -> dict[str, list[int]]:
    """The inverse of :func:`encode_rest`; raises ValueError on anything else."""
    rest = json.loads(data)
    if not isinstance(rest, dict):
        raise ValueError("not an object")
    out: dict[str, list[int]] = {}
    for pid, where in rest.items():
        if not isinstance(where, list) or not where or not all(isinstance(x, int) for x in where):
            raise ValueError("bad locations")
        out[str(pid)] = where
    return out
