"""Free space and read-only media: refuse a write before the engine could crash on it.

Qdrant Edge writes through memory-mapped, sparse files. When the filesystem cannot give a page
its block, the kernel kills the process with SIGBUS: no error reaches Python, and in Amplifier
the module runs inside the user's session. So every write first asks :class:`DiskGate`, which
refuses it with ``storage_full`` below a margin, and opening asks what the open itself may need.

Measured (qdrant-edge 0.9.0, memories collection, 2 x 384-d vectors a point):

- one accepted write allocates at most 94 KB (p50 4 KB) across the shard's files (300 writes);
  the journal adds ~3.7 KB a memory;
- an index build writes a new segment beside the old one: at 10k memories the segments went from
  43 MB to 86 MB (peak +43 MB over the 84 MB store);
- opening an existing shard allocates ~8 KB on ext4, but on tmpfs every page it *reads* in a
  shared mapping is allocated too: opening a 243-memory shard took 118 MB of a tmpfs (its
  preallocated, sparse payload and payload-index files), and died with SIGBUS with 32 MB free;
- creating a shard allocates 0.2 MB on ext4, 18 MB on tmpfs.

Hence: writes need :data:`WRITE_MARGIN` free (32 MiB: room for ~340 of the largest writes, for
other processes' writes between our check and the engine's, and for creating a shard on tmpfs);
an index build needs the margin plus twice the collection's segment bytes; opening needs the
margin, plus on filesystems that allocate on read faults (tmpfs, ramfs) the unallocated bytes of
the files the engine reads at open (see :func:`open_need`).
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from ..errors import ReadOnlyStoreError, StorageFullError

logger = logging.getLogger(__name__)

MIB = 1024 * 1024
WRITE_MARGIN = 32 * MIB
# Filesystems whose shared mappings allocate a page even when it is only read.
ALLOCATE_ON_READ = frozenset({"tmpfs", "ramfs", "hugetlbfs"})


def free_bytes(path: Path) -> int:
    """Bytes an unprivileged process may still write on the filesystem of ``path``."""
    # shutil, not os.statvfs, which Windows' os lacks: on POSIX it is statvfs's f_bavail * f_frsize all the same.
    return shutil.disk_usage(path).free


def is_read_only(path: Path) -> bool:
    """Whether ``path`` is on a filesystem mounted read-only (or not writable by this process)."""
    statvfs = getattr(os, "statvfs", None)  # none on Windows: the access check below is all it has
    try:
        if statvfs is not None and statvfs(path).f_flag & os.ST_RDONLY:
            return True
    except OSError:
        return False
    return not os.access(path, os.W_OK)


def allocated(st: os.stat_result) -> int:
    """The bytes a file's blocks take; its size where the OS reports no blocks (Windows' stat has no st_blocks,
    so a sparse file counts whole there)."""
    blocks: int | None = getattr(st, "st_blocks", None)
    return st.st_size if blocks is None else blocks * 512


def fs_type(path: Path) -> str:
    """The filesystem type of the mount holding ``path`` (from /proc/self/mountinfo), or ``""``."""
    target = str(path.resolve())
    best, best_type = "", ""
    try:
        with open("/proc/self/mountinfo") as fh:
            for line in fh:
                left, _, right = line.partition(" - ")
                fields = left.split()
                if len(fields) < 5 or not right:
                    continue
                mount = fields[4].replace("\\040", " ")
                inside = target == mount or target.startswith(mount.rstrip("/") + "/")
                if inside and len(mount) >= len(best):
                    best, best_type = mount, right.split()[0]
    except OSError:
        return ""
    return best_type


def unallocated_bytes(folder: Path, skip: tuple[str, ...] = ()) -> int:
    """Apparent minus allocated bytes of the files under ``folder`` (folders named with a ``skip`` prefix left out)."""
    total = 0
    for root, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith(skip)]
        for name in files:
            try:
                st = os.lstat(os.path.join(root, name))
            except OSError:
                continue
            total += max(0, st.st_size - allocated(st))
    return total


def allocated_bytes(folder: Path) -> int:
    """Allocated bytes of the files under ``folder`` (sparse files count what they hold)."""
    total = 0
    for root, _dirs, files in os.walk(folder):
        for name in files:
            try:
                total += allocated(os.lstat(os.path.join(root, name)))
            except OSError:
                continue
    return total


def _mb(n: int) -> str:
    return f"{n / MIB:.1f} MB"


@dataclass
class DiskGate:
    """The write gate of an embedded store: free space above a margin, and writable media."""

    path: Path
    margin: int = WRITE_MARGIN
    read_only: bool = False

    def check_write(self, need_bytes: int = 0) -> None:
        """Raise ``read_only`` or ``storage_full`` when this write must be refused."""
        if self.read_only:
            raise ReadOnlyStoreError(
                f"the memory store {self.path} is on a read-only filesystem: search, list, get and export "
                "work, writes are refused"
            )
        free = free_bytes(self.path)
        if free < self.margin + need_bytes:
            raise StorageFullError(
                f"the disk holding the memory store {self.path} has {_mb(free)} free; writes need at least "
                f"{_mb(self.margin + need_bytes)} (a margin that keeps the storage engine from crashing the "
                "process on a full disk). Nothing was written; reads keep working. Free some space and retry"
            )

    def check_open(self, need_bytes: int) -> None:
        """Raise ``storage_full`` when opening could need more than the free space (plus the margin)."""
        if self.read_only:
            return
        free = free_bytes(self.path)
        if free < self.margin + need_bytes:
            raise StorageFullError(
                f"the disk holding the memory store {self.path} has {_mb(free)} free; opening it safely needs "
                f"{_mb(self.margin + need_bytes)}. Free some space and retry; `agent-memory export` still works "
                "(it reads the journal)"
            )

    def refusal(self, exc: OSError) -> Exception:
        """``storage_full`` for ENOSPC/EDQUOT, ``read_only`` for EROFS/EACCES, else the OS error."""
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return StorageFullError(
                f"the disk holding the memory store {self.path} is full ({exc.strerror}); nothing was written"
            )
        if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
            return ReadOnlyStoreError(f"the memory store {self.path} cannot be written ({exc.strerror})")
        return exc


def open_need(shard: Path) -> int:
    """Free bytes opening this shard may allocate (beyond the margin).

    On filesystems that allocate on read faults, the holes of the files Edge reads in full at open:
    measured on tmpfs, reopening a 243-memory shard allocated 118 MB, all of it payload storage and
    payload index files (pages 90 MB, flags 18 MB, trackers 10 MB) and none of the vector storage,
    which is read lazily. An old-format shard's WAL may also be replayed into the segments, which can
    write as much as it holds.
    """
    if not shard.exists():
        return 0
    need = 0
    if fs_type(shard) in ALLOCATE_ON_READ:
        need += unallocated_bytes(shard, skip=("wal", "vector_storage"))
    wal = shard / "wal"
    if wal.is_dir():
        need += allocated_bytes(wal)
    return need
