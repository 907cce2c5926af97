"""The process's open stores: one refcounted handle per store, shared by every session and thread.

Both backends keep their open stores here (the embedded store by its folder, a server store by
server, prefix and identity); a server store's client is shared the same way, per server. The
first acquire opens a handle, later ones reuse it, and the last release closes it. Opening and
closing happen under the registry's lock, so a store being closed is never opened again meanwhile
(an embedded store's file lock is still held until its close returns).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")


@dataclass
class _Entry:
    handle: Any
    close: Callable[[], None]
    refs: int = 0


class Registry:
    """Refcounted handles by key: ``acquire`` opens on first use, ``release`` closes on last."""

    def __init__(self) -> None:
        self._entries: dict[Hashable, _Entry] = {}
        self._keys: dict[int, Hashable] = {}
        # Re-entrant: a shared store (see .sharing) opens and closes its embedded store, kept here too, from
        # within its own open or close.
        self._lock = threading.RLock()

    def acquire(
        self,
        key: Hashable,
        open_handle: Callable[[], T],
        close: Callable[[T], None],
        reuse: Callable[[T], None] | None = None,
    ) -> T:
        """The handle of ``key``: opened by ``open_handle`` on first acquire, else checked by ``reuse``.

        ``close`` is what the last :meth:`release` runs. An error of ``open_handle`` or ``reuse``
        propagates and takes no reference.
        """
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                handle = open_handle()
                entry = _Entry(handle, lambda: close(handle))
                self._entries[key] = entry
                self._keys[id(handle)] = key
            elif reuse is not None:
                reuse(entry.handle)
            entry.refs += 1
            handle_out: T = entry.handle
            return handle_out

    def release(self, handle: object) -> bool:
        """Drop one reference to ``handle``; the last one closes it. Whether it was closed (unknown: False)."""
        with self._lock:
            key = self._keys.get(id(handle))
            entry = self._entries.get(key) if key is not None else None
            if entry is None or entry.handle is not handle:
                return False
            entry.refs -= 1
            if entry.refs > 0:
                return False
            del self._entries[key]
            del self._keys[id(handle)]
            entry.close()
            return True

    def is_open(self, key: Hashable) -> bool:
        """Whether a handle of ``key`` is open."""
        with self._lock:
            return key in self._entries

    def count(self, kind: str | None = None) -> int:
        """How many handles are open (whose key is a tuple starting with ``kind``, when given)."""
        with self._lock:
            if kind is None:
                return len(self._entries)
            return sum(1 for key in self._entries if isinstance(key, tuple) and key[:1] == (kind,))


# Every open store of the process, of both backends: ("edge", folder) or ("server", url, prefix, identity).
STORES = Registry()


def release(store: object) -> bool:
    """Release a store of either backend (the last release in the process closes it)."""
    return STORES.release(store)
