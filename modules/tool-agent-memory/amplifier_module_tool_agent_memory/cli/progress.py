"""Progress of long CLI work (import, export, repair, reindex) on a terminal: count, rate, time left.

Shown on standard error, redrawn in place at most :data:`REDRAW_EVERY_S`, and only when standard
error is a terminal and the command is not in ``--json`` mode: piped or scripted runs stay quiet.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import IO

REDRAW_EVERY_S = 0.2


def wanted(as_json: bool, stream: IO[str] | None = None) -> bool:
    """Whether progress should be drawn: a terminal on standard error and no ``--json``."""
    out = stream or sys.stderr
    return not as_json and bool(getattr(out, "isatty", lambda: False)())


def _duration(seconds: float) -> str:
    seconds = max(0, int(seconds + 0.5))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


@dataclass
class Progress:
    """A counter that draws ``label done/total (pct) rate/s, time left`` while enabled."""

    label: str
    total: int | None = None
    enabled: bool = True
    stream: IO[str] = field(default_factory=lambda: sys.stderr)
    done: int = 0
    _started: float = field(default_factory=time.monotonic)
    _drawn: float = 0.0
    _width: int = 0

    def advance(self, n: int = 1) -> None:
        """Count ``n`` more items done (and redraw when due)."""
        self.done += n
        now = time.monotonic()
        if self.enabled and now - self._drawn >= REDRAW_EVERY_S:
            self._drawn = now
            self._draw(now)

    def line(self, now: float | None = None) -> str:
        """The progress line as drawn now."""
        elapsed = max(1e-9, (now or time.monotonic()) - self._started)
        rate = self.done / elapsed
        parts = [f"{self.label} {self.done:,}"]
        if self.total:
            parts[0] += f"/{self.total:,} ({100 * self.done / self.total:.0f}%)"
        parts.append(f"{rate:,.0f}/s")
        if self.total and rate > 0 and self.done < self.total:
            parts.append(f"{_duration((self.total - self.done) / rate)} left")
        else:
            parts.append(f"{_duration(elapsed)} elapsed")
        return ", ".join(parts)

    def _draw(self, now: float) -> None:
        text = self.line(now)
        pad = max(0, self._width - len(text))
        self._width = len(text)
        self.stream.write("\r" + text + " " * pad)
        self.stream.flush()

    def finish(self) -> None:
        """Draw the final count and end the line (nothing when disabled)."""
        if self.enabled:
            self._draw(time.monotonic())
            self.stream.write("\n")
            self.stream.flush()
