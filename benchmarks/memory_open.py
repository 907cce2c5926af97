"""How long opening an identity's memory service takes, this tree against other revisions, in one run.

``python benchmarks/memory_open.py 10000 --base f80bf64 --base main --runs 9`` fills, per variant, a fresh store of
that many memory-like points (``engine_purge._fill``: random unit vectors, a memory-like payload, the index built)
with that variant's package, then opens it ``--runs`` times, each open in a fresh process (``PYTHONPATH`` on the
variant's package), the variants taking turns each round. Timed in each open: ``AgentMemory.memory()``, which
opens the store's memories collection and the memory service, including the check at open for memories still
waiting for their context vector (``repair_soon``, timed on its own where the variant has one). The model is
loaded before the clock starts. The first open of each store (it writes its journal's index) is not counted.

Prints each variant's p50 / p95 of both times and the median of the per-round ratios to the first ``--base``.
Nothing is asserted: compare the columns of one run.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from _common import REPO, p50_p95, print_table
from engine_purge import PACKAGE_DIR, archived_package

_CHILD = r"""
import json, random, sys, time
from amplifier_module_tool_agent_memory.config import parse_config
from amplifier_module_tool_agent_memory.identity import ResolvedIdentity
from amplifier_module_tool_agent_memory.memory import service
from amplifier_module_tool_agent_memory.runtime import AgentMemory
import amplifier_module_tool_agent_memory as measured

mode, root, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
rt = AgentMemory(parse_config({"storage_root": root}), ResolvedIdentity("alice", "config"), session_id="bench")
if mode == "fill":
    sys.path.insert(0, sys.argv[4])
    from engine_purge import _fill
    _fill(rt.store().collection(service.MEMORIES), size, random.Random(7))
    rt.close()
    print(json.dumps({"package": measured.__file__}), flush=True)
    sys.exit(0)
rt.embedder().embed_query("warm up")
repair = getattr(service.MemoryService, "repair_soon", None)
spent = [0.0]
if repair is not None:
    def timed(self, *args, **kwargs):
        started = time.perf_counter()
        try:
            return repair(self, *args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - started
    service.MemoryService.repair_soon = timed
started = time.perf_counter()
rt.memory()
total = time.perf_counter() - started
rt.close()
print(json.dumps({"open_ms": total * 1000, "repair_ms": spent[0] * 1000 if repair else None,
                  "package": measured.__file__}), flush=True)
"""


def _run(package: Path, *args: str) -> dict[str, Any]:
    paths = [str(package), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths), "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-c", _CHILD, *args], env=env, capture_output=True, text=True, check=True)
    answer: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    if not Path(answer["package"]).resolve().is_relative_to(package.resolve()):
        raise SystemExit(f"the run meant for {package} imported {answer['package']}")
    return answer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("size", type=int, nargs="?", default=10_000)
    parser.add_argument("--base", action="append", default=[], required=True, help="a revision to compare against")
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    random.seed(7)
    here = str(Path(__file__).resolve().parent)
    with tempfile.TemporaryDirectory() as tmp:
        variants = [("head", REPO / PACKAGE_DIR)]
        variants += [(f"base {b}", archived_package(b, Path(tmp) / str(i))) for i, b in enumerate(args.base)]
        roots = {}
        for name, package in variants:
            roots[name] = str(Path(tmp) / f"store-{len(roots)}")
            _run(package, "fill", roots[name], str(args.size), here)
            _run(package, "open", roots[name], "0")  # writes the journal's index: not counted
            print(f"{name}: {args.size:,} points filled", flush=True)
        times: dict[str, list[dict[str, Any]]] = {name: [] for name, _ in variants}
        for r in range(args.runs):
            for name, package in variants[r % len(variants):] + variants[:r % len(variants)]:
                times[name].append(_run(package, "open", roots[name], "0"))
                print(f"round {r + 1} {name}: open {times[name][-1]['open_ms']:.1f} ms, check at open "
                      f"{times[name][-1]['repair_ms'] or 0:.2f} ms", flush=True)
    first = variants[1][0]
    rows = []
    for name, _ in variants:
        opens = [t["open_ms"] for t in times[name]]
        repairs = [t["repair_ms"] for t in times[name] if t["repair_ms"] is not None]
        ratios = [t["open_ms"] / b["open_ms"] for t, b in zip(times[name], times[first], strict=True)]
        o50, o95 = p50_p95(opens)
        r50, r95 = p50_p95(repairs) if repairs else (float("nan"), float("nan"))
        rows.append([name, f"{o50:.1f} / {o95:.1f} ms", f"{r50:.2f} / {r95:.2f} ms" if repairs else "none",
                     f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})"])
    print(f"one run, {args.size:,} points, {args.runs} opens per variant in fresh processes, taking turns each round")
    print_table(["variant", "memory() open p50 / p95", "check at open p50 / p95", f"per-round ratio to {first}"], rows)


if __name__ == "__main__":
    main()
