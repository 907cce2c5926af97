"""The activity log: one JSON line per tool event, per identity, for the viewer's charts.

Every face (Amplifier, MCP, CLI) emits its events through :meth:`AgentMemory.emit`, which appends
the event's name, time, latency and counts here. The file lives beside the identity's store
(``storage_root/<identity>/activity.jsonl``, for a server store too: the charts are of this
machine's calls). Several processes append to it at once: each line is written with one
``O_APPEND`` write, which POSIX and Windows keep whole for lines this short. When the file passes
``MAX_BYTES`` it is renamed to ``activity.1.jsonl`` (replacing the older one), so two files bound
it; a line lost in the race of a rename costs one point of a chart, never a memory.

Only what the charts need is kept: no content, no query, no id (nothing here needs redacting).
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

FILE = "activity.jsonl"
OLDER = "activity.1.jsonl"
MAX_BYTES = 4 * 1024 * 1024
# The event fields worth charting: counts and answers, never text.
_KEPT = ("latency_ms", "count", "results", "answer", "injected", "tokens")


def record(folder: Path, event: str, data: dict[str, Any], now: datetime | None = None) -> None:
    """Append one event to ``folder``'s activity log; never raises (the log is a convenience)."""
    line: dict[str, Any] = {"ts": (now or datetime.now(UTC)).isoformat(timespec="milliseconds"), "event": event}
    for key in _KEPT:
        value = data.get(key)
        if isinstance(value, bool | int | float | str) and not (isinstance(value, str) and len(value) > 32):
            line[key] = value
    encoded = (json.dumps(line, separators=(",", ":")) + "\n").encode("utf-8")
    path = folder / FILE
    try:
        if not folder.is_dir():
            return
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, encoded)
            size = os.fstat(fd).st_size
        finally:
            os.close(fd)
        if size > MAX_BYTES:
            os.replace(path, folder / OLDER)
    except OSError:
        logger.debug("activity log not written", exc_info=True)


def read(folder: Path) -> Iterator[dict[str, Any]]:
    """Every event line of ``folder``'s log, older file first; unreadable lines are skipped."""
    for name in (OLDER, FILE):
        try:
            with (folder / name).open(encoding="utf-8") as handle:
                for raw in handle:
                    try:
                        item = json.loads(raw)
                    except ValueError:
                        continue
                    if isinstance(item, dict) and isinstance(item.get("event"), str):
                        yield item
        except OSError:
            continue


def percentile(values: list[float], q: float) -> float:
    """The ``q`` percentile (0-100) by the nearest-rank method; 0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


@dataclass
class DayFigures:
    """One day's count and latencies of one group of events."""

    count: int = 0
    latencies: list[float] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """Count and latency p50/p95 in milliseconds."""
        return {
            "count": self.count,
            "p50_ms": round(percentile(self.latencies, 50), 2),
            "p95_ms": round(percentile(self.latencies, 95), 2),
        }


# Which chart an event counts in. Plan answers are one group with a series per answer.
GROUPS: dict[str, str] = {
    "memory:stored": "stores",
    "memory:searched": "searches",
    "memory:recalled": "recalls",
    "plan:hit": "plan answers",
    "plan:candidate": "plan answers",
    "plan:miss": "plan answers",
}


def daily(events: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Per day (UTC): stores, searches, recalls and plan answers with their latency p50/p95, and plan
    answers split into hits, candidates and misses."""
    groups: dict[str, dict[str, DayFigures]] = defaultdict(lambda: defaultdict(DayFigures))
    answers: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    days: set[str] = set()
    for item in events:
        group = GROUPS.get(str(item.get("event")))
        if group is None:
            continue
        day = str(item.get("ts", ""))[:10]
        if len(day) != 10:
            continue
        days.add(day)
        figures = groups[group][day]
        figures.count += 1
        latency = item.get("latency_ms")
        if isinstance(latency, int | float) and not isinstance(latency, bool):
            figures.latencies.append(float(latency))
        if group == "plan answers":
            answers[day][str(item["event"]).split(":", 1)[1]] += 1
    ordered = sorted(days)
    return {
        "days": ordered,
        "groups": {
            group: [groups[group][day].as_dict() if day in groups[group] else DayFigures().as_dict() for day in ordered]
            for group in ("stores", "searches", "recalls", "plan answers")
        },
        "plan_answers": [
            {"day": day, **{kind: answers[day].get(kind, 0) for kind in ("hit", "candidate", "miss")}}
            for day in ordered
        ],
    }
