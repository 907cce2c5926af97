"""memory_store and memory_search latency through the tools, this tree against an earlier commit, in one run.

``python benchmarks/store_latency.py --base d1bc8f1`` checks the base commit out into a temporary
git worktree and runs the same workload on both, alternating rounds (base, head, base, head, ...)
so that load on the machine falls on both alike: each round is a fresh process that mounts the
module on amplifier-core's MockCoordinator with a new store, fills it with ``--fill`` LoCoMo turns
(through memory_store, one session thread per conversation), then times ``--stores`` more
memory_store calls and ``--searches`` memory_search calls. Prints p50/p95 per variant over all
rounds. Without ``--base`` only this tree is measured. Skips cleanly without the LoCoMo data.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import DATA_DIR, REPO, p50_p95, print_table

LOCOMO = DATA_DIR / "locomo" / "locomo-dev.json"
PACKAGE_DIR = "modules/tool-agent-memory"

# Runs in a fresh interpreter whose sys.path starts with the variant's package folder.
_ROUND = r"""
import asyncio, json, sys, tempfile, time
from amplifier_core.testing import MockCoordinator
import amplifier_module_tool_agent_memory as agent_memory

texts, queries, fill, stores, searches = json.loads(sys.stdin.read())

async def main():
    with tempfile.TemporaryDirectory() as root:
        coordinator = MockCoordinator()
        cleanup = await agent_memory.mount(coordinator, {"agent_identity": "bench", "storage_root": root})
        tools = coordinator.get("tools")
        store, search = tools["memory_store"], tools["memory_search"]
        timed_store, timed_search = [], []
        for i, text in enumerate(texts[: fill + stores]):
            started = time.perf_counter()
            result = await store.execute({"content": text, "kind": "fact"})
            elapsed = (time.perf_counter() - started) * 1000
            if not result.success:
                raise SystemExit(f"memory_store failed: {result.error}")
            if i >= fill:
                timed_store.append(elapsed)
        # The searches run on a settled store: the context vectors are written after the stores' answers (a base
        # revision without settle() wrote them before answering).
        runtime = getattr(store, "runtime", None)
        settle = getattr(runtime.memory(), "settle", None) if runtime is not None else None
        if settle is not None:
            settle()
        for query in queries[:searches]:
            started = time.perf_counter()
            result = await search.execute({"query": query})
            timed_search.append((time.perf_counter() - started) * 1000)
            if not result.success:
                raise SystemExit(f"memory_search failed: {result.error}")
        await cleanup()
    print(json.dumps({"store": timed_store, "search": timed_search}))

asyncio.run(main())
"""


def _workload() -> tuple[list[str], list[str]]:
    samples = json.loads(LOCOMO.read_text(encoding="utf-8"))
    texts: list[str] = []
    queries: list[str] = []
    for sample in samples:
        conv = sample["conversation"]
        for key in sorted(k for k in conv if k.startswith("session_") and not k.endswith("date_time")):
            texts.extend(f"{turn['speaker']}: {turn['text']}" for turn in conv[key])
        queries.extend(q["question"] for q in sample["qa"] if q.get("category") in (1, 2, 3, 4))
    return texts, queries


def _round(package_dir: Path, payload: str) -> dict[str, list[float]]:
    env = {**os.environ, "PYTHONPATH": str(package_dir)}
    out = subprocess.run(
        [sys.executable, "-c", _ROUND], input=payload, capture_output=True, text=True, env=env, check=True
    )
    result: dict[str, list[float]] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", help="a git commit to compare against (checked out into a temporary worktree)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per variant, alternating")
    parser.add_argument("--fill", type=int, default=1000, help="memories stored before the timed calls")
    parser.add_argument("--stores", type=int, default=200, help="timed memory_store calls per round")
    parser.add_argument("--searches", type=int, default=100, help="timed memory_search calls per round")
    args = parser.parse_args()
    if not LOCOMO.exists():
        print(f"SKIP: LoCoMo data not found at {LOCOMO} (it lives in ../shared/data, outside the repository)")
        return 0
    texts, queries = _workload()
    payload = json.dumps([texts, queries, args.fill, args.stores, args.searches])
    variants: dict[str, Path] = {"head (this tree)": REPO / PACKAGE_DIR}
    with tempfile.TemporaryDirectory() as tmp:
        if args.base:
            worktree = Path(tmp) / "base"
            subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(worktree), args.base],
                           check=True, capture_output=True)
            variants = {f"base {args.base}": worktree / PACKAGE_DIR, **variants}
        try:
            timings: dict[str, dict[str, list[float]]] = {name: {"store": [], "search": []} for name in variants}
            for round_no in range(args.rounds):
                for name, package_dir in variants.items():
                    got = _round(package_dir, payload)
                    for key in ("store", "search"):
                        timings[name][key].extend(got[key])
                    print(f"round {round_no + 1}: {name} done", file=sys.stderr)
        finally:
            if args.base:
                subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(Path(tmp) / "base")],
                               check=False, capture_output=True)
    rows = []
    for name, got in timings.items():
        for key in ("store", "search"):
            p50, p95 = p50_p95(got[key])
            rows.append([name, f"memory_{key}", str(len(got[key])), f"{p50:.1f}", f"{p95:.1f}"])
    print(f"store of {args.fill} LoCoMo turns, {args.rounds} alternating rounds per variant")
    print_table(["variant", "tool", "calls", "p50 ms", "p95 ms"], rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
