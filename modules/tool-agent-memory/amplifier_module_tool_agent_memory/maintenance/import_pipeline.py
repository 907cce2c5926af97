"""An import with vectors on two cores: a child process reads and builds the memories, this one writes them.

Why a process and not a thread: the storage engine holds the Python lock for a whole update (measured by
``benchmarks/engine_write_floor.py``: a Python thread gets ~5% of its idle progress while the main thread is
inside ``update``), so a reading thread could not run beside it. Split this way each process does about half
of a memory's work: the child reads each line back (checking its CRC), validates it again, redacts it and
builds its payload (``MemoryImporter.points``); this process seals it, journals it and hands it to the engine.
At most :data:`QUEUED` batches wait between the two, so memory stays bounded.

The child starts by ``spawn`` (a fresh interpreter: the engine's threads are not forked) and costs about a
second to start, so only imports of at least :data:`MIN_RECORDS` memories that all carry their vectors, from
a file (standard input is spooled to an unnamed file the child cannot open), take this path. The whole file
was validated before (``check_import``): the child only reads what was checked, and stops with the file's
error if it changed since.
"""

from __future__ import annotations

import logging
import queue
from typing import TYPE_CHECKING, Any

from .transfer import MEMORY, ImportFileError

if TYPE_CHECKING:
    from .transfer import Advance, CheckedImport, KindWriter, Places

logger = logging.getLogger(__name__)

# Smallest import worth a child process (starting one costs ~1 s of a fresh interpreter's imports).
MIN_RECORDS = 5_000
# Batches built and waiting to be written: what the two processes hold between them.
QUEUED = 4
# Seconds between two checks that the child is still alive while waiting for its next batch.
POLL_S = 1.0


def fits(checked: CheckedImport, use_vectors: bool) -> bool:
    """Whether this import's memories can be built in a child process."""
    return (
        use_vectors
        and checked.path is not None
        and checked.without_vectors == 0
        and checked.counts.get(MEMORY, 0) >= MIN_RECORDS
    )


def _build_points(path: str, size: int, thread: str, inbox: Any, out: Any) -> None:
    """The child: every memory of the places it is sent, as the points they are stored as, batch by batch."""
    from ..memory.importing import MemoryImporter

    try:
        places: Places = inbox.get()
        builder = MemoryImporter(None, None, 0)  # type: ignore[arg-type]  # builds points only: no store here
        builder.thread = thread
        with open(path, "rb") as fh:
            for lines in places.batches(fh.fileno(), size):
                out.put(("points", builder.points([line.record for line in lines], [line.vectors for line in lines])))
        out.put(("done", None))
    except ImportFileError as exc:
        out.put(("changed", str(exc)))
    except BaseException as exc:  # reported to the parent, which raises it: the child has no one else to tell
        out.put(("failed", f"{type(exc).__name__}: {exc}"))


def _next(out: Any, child: Any) -> tuple[str, Any]:
    """The child's next message; raises if it stopped without one (its last messages are read first)."""
    while True:
        alive = child.is_alive()
        try:
            kind, value = out.get(timeout=POLL_S)
            return str(kind), value
        except queue.Empty:
            if not alive:  # dead before this wait began, and nothing came since: nothing more will
                raise RuntimeError(f"the import's reader process stopped (exit code {child.exitcode})") from None


def write_memories(
    checked: CheckedImport, importer: KindWriter, use_vectors: bool, size: int, advance: Advance | None
) -> int:
    """Write every memory of ``checked`` through ``importer``, built by a child process, when the import
    :func:`fits`; how many records of the file that wrote (the memories come first in write order; the rest,
    or everything when it does not fit, is left to ``import_checked``)."""
    import multiprocessing

    from ..memory.importing import MemoryImporter

    if not fits(checked, use_vectors) or not isinstance(importer, MemoryImporter):
        return 0
    count = checked.counts.get(MEMORY, 0)
    assert checked.path is not None
    context = multiprocessing.get_context("spawn")
    # The places (20 bytes a record: 20 MB at a million) go through a queue, not the start arguments: a queue's
    # feeder thread writes them, so a child that dies while starting cannot leave this thread blocked on a pipe.
    inbox: Any = context.Queue(maxsize=1)
    out: Any = context.Queue(maxsize=QUEUED)
    child = context.Process(
        target=_build_points,
        args=(checked.path, size, importer.thread, inbox, out),
        name="agent-memory-import-reader",
        daemon=True,
    )
    child.start()
    inbox.put(checked.places.head(count))
    try:
        while True:
            kind, value = _next(out, child)
            if kind == "done":
                return count
            if kind == "changed":
                raise ImportFileError(value)
            if kind == "failed":
                raise RuntimeError(f"the import's reader process failed: {value}")
            importer.write_points(value)
            if advance is not None:
                advance(len(value))
    finally:
        if child.is_alive():
            child.terminate()
        child.join()
        for channel in (inbox, out):
            channel.cancel_join_thread()  # what the child did not read is dropped, never waited for
            channel.close()
