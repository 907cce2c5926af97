"""Small helpers shared by the benchmark scripts: percentiles, peak RSS, table printing.

Benchmarks print medians and p95s; they never assert on wall-clock.
"""

from __future__ import annotations

import os
import resource
import sys
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# $AGENT_MEMORY_DATA_DIR runs every benchmark on other data of the same layout (held-out cases).
DATA_DIR = Path(os.environ.get("AGENT_MEMORY_DATA_DIR") or REPO.parent / "shared" / "data")


def percentile(values: Sequence[float], pct: float) -> float:
    """The ``pct`` percentile (0-100) with linear interpolation; NaN for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * pct / 100.0
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def p50_p95(values: Sequence[float]) -> tuple[float, float]:
    """Median and 95th percentile."""
    return percentile(values, 50), percentile(values, 95)


def peak_rss_mb() -> float:
    """This process's peak resident set size so far, in MiB (ru_maxrss is KiB on Linux)."""
    kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kib / (1024 * 1024) if sys.platform == "darwin" else kib / 1024


def rss_now_mb() -> dict[str, float]:
    """Current resident set split as the kernel counts it: total, anonymous and file-backed pages, in MiB.

    File-backed pages are memory-mapped store files (and libraries) this process has touched:
    the OS may drop them under pressure, but they count in RSS while mapped. Linux only ({} elsewhere).
    """
    out: dict[str, float] = {}
    try:
        with open("/proc/self/status") as status:
            for line in status:
                key, _, value = line.partition(":")
                if key in ("VmRSS", "RssAnon", "RssFile", "RssShmem"):
                    out[key] = int(value.split()[0]) / 1024
    except OSError:
        return {}
    return out


def print_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    """A plain aligned text table on stdout."""
    cells = [[str(h) for h in headers], *[[_fmt(c) for c in row] for row in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    for n, row in enumerate(cells):
        print("  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)))
        if n == 0:
            print("  ".join("-" * w for w in widths))


def _fmt(value: object) -> str:
    if isinstance(value, float):
        if value != value:  # NaN
            return "-"
        return f"{value:.1f}" if abs(value) >= 10 else f"{value:.2f}"
    return str(value)
