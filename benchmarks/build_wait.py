"""How long a tool call waits while a scheduled index build runs: in the serving process against a child.

Usage::

    python benchmarks/build_wait.py STORE_ROOT [--identity scale] [--rounds 2] [--interval-ms 50]

``STORE_ROOT`` holds a store whose memories are not indexed yet (``benchmarks/scale.py --worker import
--no-build --n 10000`` makes one: ``<work-dir>/store-10000``). It is never written: each round copies it,
opens the copy in a fresh subprocess, starts a thread that calls ``memory_search`` (a LoCoMo question, the
query embedding included) every ``--interval-ms``, and runs the build the way a scheduled build runs it:

- ``in-process``: ``EdgeCollection.index_if_needed`` (Edge's ``optimize()`` in this process: it holds the
  Python lock for the whole build, so every call made meanwhile waits for it);
- ``child``: ``EdgeCollection.build_in_child`` (the build in a child process on a copy of the unindexed
  segments, then the swap: the shard closed, the built segments moved in, loaded again, the journal's
  changes since the copy replayed).

Modes alternate within a round, so both see the same machine. Printed per mode (medians over rounds): the
build's wall time, how many calls ran during it, the slowest call and the p50/p95 of the calls, and for the
child the swap (what a call can still wait for). Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DATA_DIR, p50_p95, print_table

LOCOMO = DATA_DIR / "locomo" / "locomo-dev.json"
MODES = ("in-process", "child")


def _questions() -> list[str]:
    data = json.loads(LOCOMO.read_text())
    return list(dict.fromkeys(str(q["question"]) for sample in data for q in sample["qa"] if q.get("question")))


def worker(root: Path, identity: str, mode: str, interval_s: float) -> dict[str, Any]:
    """One round of one mode, in this (fresh) process, on the store copy at ``root``."""
    from amplifier_module_tool_agent_memory.config import parse_config
    from amplifier_module_tool_agent_memory.identity import ResolvedIdentity
    from amplifier_module_tool_agent_memory.memory.models import MemorySearchInput
    from amplifier_module_tool_agent_memory.memory.service import MEMORIES
    from amplifier_module_tool_agent_memory.runtime import AgentMemory
    from amplifier_module_tool_agent_memory.store.edge_collection import EdgeCollection

    rt = AgentMemory(parse_config({"storage_root": str(root), "warm_up": False}), ResolvedIdentity(identity, "config"))
    questions = _questions()
    service = rt.memory()
    service.search(MemorySearchInput(query=questions[0], limit=5))  # model loaded, store open
    coll = rt.store().collection(MEMORIES)
    assert isinstance(coll, EdgeCollection)
    unindexed = coll.unindexed_count()
    calls: list[float] = []
    stop = threading.Event()

    def caller() -> None:
        i = 1
        while not stop.is_set():
            started = time.perf_counter()
            service.search(MemorySearchInput(query=questions[i % len(questions)], limit=5))
            calls.append(time.perf_counter() - started)
            i += 1
            stop.wait(interval_s)

    thread = threading.Thread(target=caller, daemon=True)
    thread.start()
    started = time.perf_counter()
    swap = coll.build_in_child(1) if mode == "child" else coll.index_if_needed(1)
    build_s = time.perf_counter() - started
    stop.set()
    thread.join()
    after = coll.unindexed_count()
    rt.close()
    p50, p95 = p50_p95(calls) if calls else (0.0, 0.0)
    return {
        "mode": mode,
        "unindexed_before": unindexed,
        "unindexed_after": after,
        "build_s": round(build_s, 2),
        "calls": len(calls),
        "slowest_call_ms": round(max(calls, default=0.0) * 1000, 1),
        "call_p50_ms": round(p50 * 1000, 1),
        "call_p95_ms": round(p95 * 1000, 1),
        "swap_ms": round(swap * 1000, 1) if mode == "child" and swap is not None else None,
        "swap_steps_ms": coll.last_swap_ms,
    }


def _round(source: Path, identity: str, mode: str, interval_ms: float, scratch: Path) -> dict[str, Any]:
    copy = scratch / f"store-{mode}"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(source, copy, symlinks=True)
    cmd = [sys.executable, __file__, str(copy), "--identity", identity, "--worker", mode]
    cmd += ["--interval-ms", str(interval_ms)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    shutil.rmtree(copy, ignore_errors=True)
    if out.returncode != 0:
        raise RuntimeError(f"{mode} round failed: {out.stderr[-2000:]}")
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store_root", type=Path)
    parser.add_argument("--identity", default="scale")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--interval-ms", type=float, default=50.0)
    parser.add_argument("--scratch", type=Path, default=None, help="where the copies go (default: a temp folder)")
    parser.add_argument("--worker", choices=MODES)
    opts = parser.parse_args()
    if opts.worker:
        print(json.dumps(worker(opts.store_root, opts.identity, opts.worker, opts.interval_ms / 1000)))
        return
    if not LOCOMO.exists():
        print(f"skipped: {LOCOMO} is missing (set AGENT_MEMORY_DATA_DIR)")
        return
    scratch = opts.scratch or Path(tempfile.mkdtemp(prefix="build-wait-"))
    rows: dict[str, list[dict[str, Any]]] = {mode: [] for mode in MODES}
    for r in range(opts.rounds):
        for mode in MODES:
            row = _round(opts.store_root, opts.identity, mode, opts.interval_ms, scratch)
            print(f"round {r + 1} {mode}: {json.dumps(row)}", flush=True)
            rows[mode].append(row)
    keys = ("unindexed_before", "unindexed_after", "build_s", "calls", "slowest_call_ms", "call_p50_ms", "call_p95_ms")
    keys += ("swap_ms",)
    table = []
    for mode in MODES:
        line: list[object] = [mode]
        for key in keys:
            values = [row[key] for row in rows[mode] if row.get(key) is not None]
            line.append(round(statistics.median(values), 1) if values else "-")
        table.append(line)
    print(f"medians over {opts.rounds} rounds:")
    print_table(["mode", *keys], table)


if __name__ == "__main__":
    main()
