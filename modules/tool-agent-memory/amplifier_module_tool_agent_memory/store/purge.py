"""A debounced background job: run once a short quiet time after the last request, coalescing bursts.

The embedded store purges the engine's freed payload pages with it (see
:meth:`.edge.EdgeCollection.purge_engine`): rewriting a segment costs hundreds of milliseconds,
too much for each ``memory_forget``, but a forgotten text must not stay on disk for long. A
*prompt* request (a forget in a small collection) marks the job due :data:`PURGE_QUIET_S` later;
another request in the meantime moves that on, but never past :data:`PURGE_MAX_WAIT_S` after the
first request still waiting, so a steady stream of forgets cannot postpone the purge forever.

An *idle* request (a forget in a collection too large to purge without stalling writes, see
:class:`PurgePolicy`) waits instead until no write has touched the collection for ``idle_s``
(each write calls :meth:`DebouncedJob.touch`), with no longest wait: a purge there holds writes
for many seconds, so it runs in a pause, at close, or when ``agent-memory gc`` asks for it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

logger = logging.getLogger(__name__)

# Quiet time after the last forget before the purge runs: a burst of forgets (a session cleaning up,
# cache expiry sweeping several items) is purged once.
PURGE_QUIET_S = 1.0
# The longest a forgotten text waits for its purge to start while forgets keep coming.
PURGE_MAX_WAIT_S = 5.0
# Measured (benchmarks/engine_purge.py: memories, index built, one delete, loaded 2-core machine): one purge
# took 0.50 s at 1k points, 1.05 s at 5k, 1.67 s at 10k, 2.32 s at 20k (25-28 s at 100k). A write waits
# for a running purge, so above 10k points (where it would pass ~2 s) the purge waits for an idle moment.
PURGE_PROMPT_MAX_POINTS = 10_000
# No write for this long before a purge above the bound runs: longer than the pauses between one agent
# turn's writes (tool calls seconds apart), so the purge does not land inside a turn and stall it, yet
# short enough that in an interactive session a forgotten text is normally gone within a minute.
PURGE_IDLE_S = 30.0


@dataclass(frozen=True)
class PurgePolicy:
    """When the engine purge runs: promptly in collections of at most ``prompt_max_points`` points, else
    after ``idle_s`` seconds without a write (or at close, or on ``agent-memory gc``)."""

    prompt_max_points: int = PURGE_PROMPT_MAX_POINTS
    idle_s: float = PURGE_IDLE_S
    quiet_s: float = PURGE_QUIET_S
    max_wait_s: float = PURGE_MAX_WAIT_S
    # Seconds that only go forward. Tests inject a clock they move by hand (and background=False, then
    # run what is due with DebouncedJob.run_if_due), so no test waits for a window of real time.
    clock: Callable[[], float] = field(default=time.monotonic, compare=False)
    background: bool = True

    def waits_for_idle(self, points: int) -> bool:
        """Whether a purge of a collection of ``points`` points must wait for the collection to be idle."""
        return points > self.prompt_max_points


class DebouncedJob:
    """Runs ``job`` on a daemon thread once requests have been quiet for ``quiet_s`` (at most ``max_wait_s``
    after the first waiting request), or, for an idle request, once nothing touched it for ``idle_s``.
    :meth:`flush` runs a due job now; :meth:`stop` ends the thread."""

    def __init__(
        self,
        name: str,
        job: Callable[[], None],
        quiet_s: float = PURGE_QUIET_S,
        max_wait_s: float = PURGE_MAX_WAIT_S,
        idle_s: float = PURGE_IDLE_S,
        *,
        clock: Callable[[], float] = time.monotonic,
        background: bool = True,
    ) -> None:
        """``clock``: seconds that only go forward. ``background=False`` starts no thread: the owner (a test)
        runs what is due with :meth:`run_if_due`."""
        self.name = name
        self._job = job
        self._quiet_s = quiet_s
        self._max_wait_s = max_wait_s
        self._idle_s = idle_s
        self._clock = clock
        self._background = background
        self._cond = threading.Condition()
        self._first: float | None = None
        self._last = 0.0
        # When the owner was last active (a write): an idle request waits ``idle_s`` past it.
        self._active = 0.0
        self._idle = False
        self._stopped = False
        self._thread: threading.Thread | None = None
        self.runs = 0

    @property
    def pending(self) -> bool:
        """Whether a request waits for the job."""
        with self._cond:
            return self._first is not None

    @property
    def waits_for_idle(self) -> bool:
        """Whether the waiting request runs only once the owner is idle."""
        with self._cond:
            return self._first is not None and self._idle

    def touch(self) -> None:
        """The owner was active (a write): an idle request waits ``idle_s`` from now."""
        with self._cond:
            self._active = self._clock()

    def request(self, *, idle: bool = False) -> None:
        """Ask for the job to run after the quiet time, or with ``idle`` once the owner was idle for ``idle_s``
        (the latest request decides; starts the thread on first use)."""
        with self._cond:
            if self._stopped:
                return
            now = self._clock()
            if self._first is None:
                self._first = now
            self._last = now
            self._active = now
            self._idle = idle
            if self._thread is None and self._background:
                self._thread = threading.Thread(target=self._loop, name=f"purge-{self.name}", daemon=True)
                self._thread.start()
            self._cond.notify()

    def _due_in(self) -> float | None:
        if self._first is None:
            return None
        if self._idle:
            return self._active + self._idle_s - self._clock()
        due = min(self._last + self._quiet_s, self._first + self._max_wait_s)
        return due - self._clock()

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

    def run_if_due(self) -> bool:
        """Run the job now (in the caller's thread) when a waiting request is due by the clock; whether it ran.
        The background thread decides the same way (:meth:`_due_in`)."""
        with self._cond:
            wait = self._due_in()
            due = wait is not None and wait <= 0
            if due:
                self._first = None
        if due:
            self._run()
        return due

    def flush(self) -> bool:
        """Run the job now (in the caller's thread) when a request waits for it; whether it ran."""
        with self._cond:
            due = self._first is not None
            self._first = None
        if due:
            self._run()
        return due

    def stop(self) -> None:
        """End the thread (a job running finishes first); a waiting request stays pending for :meth:`flush`."""
        with self._cond:
            self._stopped = True
            self._cond.notify()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()
