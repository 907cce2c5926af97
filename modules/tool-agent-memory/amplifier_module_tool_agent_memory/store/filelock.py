"""An exclusive, non-blocking lock on an open file, released by the OS when its process dies.

POSIX (Linux, macOS, the BSDs): ``flock`` on the whole file. Windows: ``msvcrt.locking`` on its
first byte (a mandatory byte-range lock, also dropped when the process exits). Both are advisory
between our own processes only, which is all the embedded store needs: the lock says which
process owns an identity's store (see :mod:`.sharing`), and a SIGKILLed owner never leaves it held.
"""

from __future__ import annotations

import os
import sys


def try_lock(fd: int) -> bool:
    """Take the exclusive lock on ``fd`` without waiting; whether it was taken."""
    if sys.platform == "win32":
        import msvcrt

        try:
            os.lseek(fd, 0, os.SEEK_SET)
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def unlock(fd: int) -> None:
    """Release the lock taken by :func:`try_lock` (closing the file releases it too)."""
    if sys.platform == "win32":
        import msvcrt

        try:
            os.lseek(fd, 0, os.SEEK_SET)
            msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
        except OSError:
            pass
        return
    import fcntl

    fcntl.flock(fd, fcntl.LOCK_UN)
