"""A debounced background job: run once a short quiet time after the last request, coalescing bursts.

The embedded store purges the engine's freed payload pages with it (see
:meth:`.edge.EdgeCollection.purge_engine`): rewriting a segment costs hundreds of milliseconds,
too much for each ``memory_forget``, but a forgotten text must not stay on disk for long. A
request (a forget) marks the job due :data:`PURGE_QUIET_S` later; another request in the meantime
moves that on, but never past :data:`PURGE_MAX_WAIT_S` after the first request still waiting, so
a steady stream of forgets cannot postpone the purge forever.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

logger = logging.getLogger(__name__)

# Quiet time after the last forget before the purge runs: a burst of forgets (a session cleaning up,
# cache expiry sweeping several items) is purged once.
PURGE_QUIET_S = 1.0
# The longest a forgotten text waits for its purge to start while forgets keep coming.
PURGE_MAX_WAIT_S = 5.0


class DebouncedJob:
    """Runs ``job`` on a daemon thread once requests have been quiet for ``quiet_s`` (at most ``max_wait_s``
    after the first waiting request). :meth:`flush` runs a due job now; :meth:`stop` ends the thread."""

    def __init__(
        self, name: str, job: Callable[[], None], quiet_s: float = PURGE_QUIET_S, max_wait_s: float = PURGE_MAX_WAIT_S
    ) -> None:
        self.name = name
        self._job = job
        self._quiet_s = quiet_s
        self._max_wait_s = max_wait_s
        self._cond = threading.Condition()
        self._first: float | None = None
        self._last = 0.0
        self._stopped = False
        self._thread: threading.Thread | None = None
        self.runs = 0

    @property
    def pending(self) -> bool:
        """Whether a request waits for the job."""
        with self._cond:
            return self._first is not None

    def request(self) -> None:
        """Ask for the job to run after the quiet time (starts the thread on first use)."""
        with self._cond:
            if self._stopped:
                return
            now = time.monotonic()
            if self._first is None:
                self._first = now
            self._last = now
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name=f"purge-{self.name}", daemon=True)
                self._thread.start()
            self._cond.notify()

    def _due_in(self) -> float | None:
        if self._first is None:
            return None
        due = min(self._last + self._quiet_s, self._first + self._max_wait_s)
        return due - time.monotonic()

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._stopped:
                    wait = self._due_in()
                    if wait is not None and wait <= 0:
                        break
                    self._cond.wait(wait)
                if self._stopped:
                    return
                self._first = None
            self._run()

    def _run(self) -> None:
        try:
            self._job()
            self.runs += 1
        except Exception:
            # The next request tries again; close purges whatever is left.
            logger.exception("background purge failed", extra={"job": self.name})

    def flush(self) -> None:
        """Run the job now (in the caller's thread) when a request waits for it."""
        with self._cond:
            due = self._first is not None
            self._first = None
        if due:
            self._run()

    def stop(self) -> None:
        """End the thread (a job running finishes first); a waiting request stays pending for :meth:`flush`."""
        with self._cond:
            self._stopped = True
            self._cond.notify()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()
