"""Journal open: the time and heap of loading a big journal's index of live ids, before and after a change.

``python benchmarks/journal_open.py JOURNAL_DIR [--base main] [--runs 5]`` copies the journal
folder (e.g. ``<root>/<identity>/journal/memories`` of a store built by ``benchmarks/scale.py``)
twice into a temporary folder, then opens one copy with ``store/journal.py`` as it is at
``--base`` (read with ``git show``) and the other with the working tree's, alternating, each
open in a fresh subprocess (so page cache and heap are comparable), and prints the median and
p95 of the open time and the heap the open keeps (tracemalloc, then RSS growth) side by side.
The first open of each copy writes that code's own index file; only later opens are counted.
Nothing is asserted: absolute times are noisy on a shared machine, compare the two columns.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import REPO, p50_p95, print_table

PACKAGE = "modules/tool-agent-memory/amplifier_module_tool_agent_memory"

_CHILD = r"""
import importlib.util, json, sys, time, tracemalloc
from _common import rss_now_mb
spec = importlib.util.spec_from_file_location("amplifier_module_tool_agent_memory.store._bench_journal", sys.argv[1])
module = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = module
spec.loader.exec_module(module)
before = rss_now_mb().get("RssAnon", 0.0)
tracemalloc.start()
started = time.perf_counter()
journal = module.Journal(__import__("pathlib").Path(sys.argv[2]))
report = journal.open()
seconds = time.perf_counter() - started
heap = tracemalloc.get_traced_memory()[0]
tracemalloc.stop()
grown = rss_now_mb().get("RssAnon", 0.0) - before
journal.close()
print(json.dumps({"s": seconds, "heap_mb": heap / 2**20, "anon_mb": grown, "live": journal.live_count,
                  "full_scan": report.full_scan}))
"""


def _open_once(module_path: Path, folder: Path) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(module_path), str(folder)],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parent,
    )
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("journal", type=Path)
    parser.add_argument("--base", default="main")
    parser.add_argument("--runs", type=int, default=5)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="journal-open-") as tmp:
        work = Path(tmp)
        base_src = subprocess.run(
            ["git", "-C", str(REPO), "show", f"{opts.base}:{PACKAGE}/store/journal.py"],
            capture_output=True, text=True, check=True,
        ).stdout
        # The base module's own imports are relative: put it beside the working tree's store package.
        base_path = REPO / PACKAGE / "store" / "_bench_base_journal.py"
        base_path.write_text(base_src)
        try:
            codes = {"base": base_path, "now": REPO / PACKAGE / "store" / "journal.py"}
            folders = {}
            for name in codes:
                folders[name] = work / name
                shutil.copytree(opts.journal, folders[name])
                _open_once(codes[name], folders[name])  # writes this code's index file
            samples: dict[str, list[dict[str, float]]] = {name: [] for name in codes}
            for _ in range(opts.runs):
                for name in codes:
                    samples[name].append(_open_once(codes[name], folders[name]))
        finally:
            base_path.unlink(missing_ok=True)
    rows = []
    for name, runs in samples.items():
        p50, p95 = p50_p95([r["s"] * 1000 for r in runs])
        heap = p50_p95([r["heap_mb"] for r in runs])[0]
        anon = p50_p95([r["anon_mb"] for r in runs])[0]
        label = opts.base if name == "base" else "working tree"
        rows.append([label, int(runs[0]["live"]), f"{p50:.0f} / {p95:.0f}", f"{heap:.0f}", f"{anon:.0f}",
                     any(r["full_scan"] for r in runs)])
    print_table(["code", "live ids", "open ms p50 / p95", "heap kept MB", "anon RSS growth MB", "full scan"], rows)


if __name__ == "__main__":
    main()
