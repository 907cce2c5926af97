"""Give memory that is no longer used back to the OS (Linux/glibc; a no-op elsewhere).

Two leftovers dominate a serving process once a store and the embedding model are open:

- heap that glibc keeps after a burst of allocations (opening a shard replays its WAL; building
  the ONNX session parses and optimises the graph and frees the temporaries): measured ~55 MB
  after opening a 10k store and ~57 MB after loading the local model (when onnxruntime still
  folded its int8 weights to fp32, before int8_graph.py), both returned by ``malloc_trim``;
- file pages a shard touched while opening: Qdrant Edge reads its WAL segments (32 MB files) and
  the 32 MB preallocated pages of the appendable segment's mutable text indexes, ~130 MB per
  shard, none of it needed afterwards. Those pages stay in the OS page cache, but count in the
  process's RSS while mapped; ``MADV_DONTNEED`` unmaps them (a later read maps them again from
  the page cache, without disk I/O while they are cached).
"""

from __future__ import annotations

import logging
import sys
from functools import cache
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

_MADV_DONTNEED = 4


@cache
def _libc() -> Any:
    """glibc with madvise and malloc_trim typed, or None (not Linux/glibc)."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        libc.madvise.restype = ctypes.c_int
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
        libc.malloc_trim.restype = ctypes.c_int
    except (OSError, AttributeError):
        return None
    return libc


def release_heap() -> None:
    """Return free heap pages to the OS (glibc ``malloc_trim``)."""
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)


def release_mapped_pages(folder: Path) -> int:
    """Unmap this process's resident pages of files under ``folder``; returns the bytes advised.

    Only mappings whose pages cannot hold private changes are touched: shared mappings (their
    dirty pages belong to the page cache and are written back as usual) and read-only private
    ones. Writable private mappings are left alone: dropping them would lose their changes.
    """
    libc = _libc()
    if libc is None:
        return 0
    prefix = str(folder.resolve()) + "/"
    advised = 0
    try:
        with open("/proc/self/maps") as maps:
            lines = maps.readlines()
    except OSError:
        return 0
    for line in lines:
        parts = line.split(maxsplit=5)
        if len(parts) < 6 or not parts[5].startswith(prefix):
            continue
        perms = parts[1]
        if perms[3] == "p" and "w" in perms:
            continue
        start, end = (int(x, 16) for x in parts[0].split("-"))
        if libc.madvise(start, end - start, _MADV_DONTNEED) == 0:
            advised += end - start
    return advised
