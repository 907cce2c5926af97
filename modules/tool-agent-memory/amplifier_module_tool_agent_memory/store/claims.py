"""Which processes may have left work half done in an embedded store: one locked claim file per writer.

A memory service writes a memory with a placeholder context vector and a marker, and the real vector after the
answer (memory/context_vectors.py). A process killed in between leaves the marker, and someone must find it. A
payload index on the marker made "is anything marked?" one read at every open, but Qdrant's vacuum rewrites every
payload index of the segments it touches: that index cost ~6% of every engine purge (issue 17, measured
store-s11). Without it the question is a full scan (23.6 ms at 10k points, ~2.4 s at 1M) at every open.

So the question is asked of the file system instead. Before its first marked write, a writer creates its own file
``ctx-pending/<uuid>`` in the identity's folder, durably, and holds an exclusive lock on it (:mod:`.filelock`) for
its life; it deletes the file at a close that leaves nothing in flight. The OS drops the lock of a process that
dies, SIGKILL included, so at an open or a sharing takeover a file whose lock can be taken belonged to a process
that ended without finishing: only then is the store scanned for marked points, and the file deleted once that
repair finished. A file whose lock is held belongs to a live process. No file: nothing to look for.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

from .filelock import try_lock
from .files import BINARY
from .journal import fsync_dir

logger = logging.getLogger(__name__)

CLAIMS_DIR = "ctx-pending"
# Another process may take a new file's lock before its creator does (it listed the folder in between and took the
# file for a dead one's): the creator then gives that file up and makes another, a few times at most.
_CREATE_TRIES = 8


def claims_folder(store_path: Path) -> Path:
    """The claim files' folder of the identity whose store folder is ``store_path``."""
    return store_path / CLAIMS_DIR


def _remove(path: Path, fd: int) -> None:
    """Delete a claim file whose lock ``fd`` holds, and close it.

    POSIX: deleted while still locked, so no other process can take it for a dead one's in between. Windows cannot
    delete a file open in any process: closed first; if another process opened it meanwhile, the file stays, and
    at worst one later open repairs for nothing.
    """
    if sys.platform == "win32":
        os.close(fd)
        with contextlib.suppress(OSError):
            path.unlink()
        return
    try:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    finally:
        os.close(fd)


class Claim:
    """This writer's own claim file: taken before its first marked write, released at its close."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.path: Path | None = None
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def take(self) -> None:
        """Create the file durably and lock it (once; raises ``OSError`` when the folder cannot be written)."""
        if self._fd is not None:
            return
        made = not self.folder.is_dir()
        self.folder.mkdir(exist_ok=True)
        if made:
            fsync_dir(self.folder.parent)
        for _ in range(_CREATE_TRIES):
            path = self.folder / uuid.uuid4().hex
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR | BINARY, 0o600)
            # Locked after its creation, so another open may have listed it and taken its lock first (then deleted
            # it once its repair finished: a link count of 0 on POSIX): that file is given up for a new one.
            if try_lock(fd) and os.fstat(fd).st_nlink > 0:
                try:
                    os.fsync(fd)
                    fsync_dir(self.folder)
                except BaseException:
                    _remove(path, fd)
                    raise
                self.path, self._fd = path, fd
                return
            os.close(fd)
        raise OSError(f"no claim file could be locked in {self.folder}")

    def release(self, finished: bool) -> None:
        """At close: delete the file when nothing is left in flight (``finished``); otherwise keep it, unlocked, so
        the next open repairs what was abandoned."""
        fd, path = self._fd, self.path
        if fd is None or path is None:
            return
        self._fd = self.path = None
        if finished:
            _remove(path, fd)
        else:
            os.close(fd)


@dataclass
class DeadClaim:
    """A claim file whose lock this process took: its writer ended before finishing. Held until the repair ends."""

    path: Path
    fd: int

    def settle(self) -> None:
        """The repair finished: the file goes."""
        _remove(self.path, self.fd)

    def keep(self) -> None:
        """The repair stopped before the end: the file stays for the next open."""
        os.close(self.fd)


def dead_claims(folder: Path) -> list[DeadClaim]:
    """The claim files in ``folder`` whose lock could be taken (their writers ended), now locked by this process."""
    try:
        names = sorted(p.name for p in folder.iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return []
    dead: list[DeadClaim] = []
    for name in names:
        path = folder / name
        try:
            fd = os.open(path, os.O_RDWR | BINARY)
        except OSError:
            continue  # deleted meanwhile by its writer's clean close or another repair
        # Taken and still linked: a dead writer's. Held: a live writer's. Unlinked: another repair finished it
        # between the listing and the lock.
        if try_lock(fd) and os.fstat(fd).st_nlink > 0:
            dead.append(DeadClaim(path, fd))
        else:
            os.close(fd)
    return dead
