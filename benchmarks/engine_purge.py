"""How long one engine purge (Edge's vacuum + flush + checkpoint) takes against the collection's size.

``python benchmarks/engine_purge.py 1000 5000 10000 20000`` fills, per size, a fresh memories
collection through the storage layer (two random unit 384-d vectors and a memory-like payload a
point), builds its index (so the points sit in one indexed segment, as in a long-lived store),
then ``--rounds`` times deletes one random point and times ``EdgeCollection.purge_engine``. Prints
the median and range per size: the figures behind ``engine_purge_prompt_max_points`` (config.py).

``--base REV`` times another revision's store in the same run: ``git archive`` of REV's package into a
temporary directory, then per size the same fill and purges in a fresh process for each variant (this
tree's measuring code, ``PYTHONPATH`` on the variant's package, the same seed), alternating which goes first;
prints both and the ratio of their medians (absolute times drift with the machine's load; the ratio much less).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import uuid
from pathlib import Path

from _common import REPO, print_table

from amplifier_module_tool_agent_memory.memory.service import MEMORIES
from amplifier_module_tool_agent_memory.store.edge import IdentityStore

DIM = 384


def _vector(rng: random.Random) -> list[float]:
    vec = [rng.gauss(0.0, 1.0) for _ in range(DIM)]
    norm = sum(v * v for v in vec) ** 0.5
    return [v / norm for v in vec]


def _measure(size: int, rounds: int, rng: random.Random) -> tuple[float, list[float]]:
    with tempfile.TemporaryDirectory() as root:
        store = IdentityStore(identity="bench", path=Path(root) / "bench", model_id="bench", dim=DIM, root=Path(root))
        store.open()
        try:
            coll = store.collection(MEMORIES)
            ids: list[str] = []
            for start in range(0, size, 500):
                batch = []
                for i in range(start, min(size, start + 500)):
                    pid = str(uuid.uuid4())
                    ids.append(pid)
                    text = f"memory {i}: the user prefers tool {rng.randrange(10**6)} for project {rng.randrange(999)}"
                    payload = {"content": text, "ctx_text": text, "kind": "fact", "thread": "t", "seq": i}
                    batch.append((pid, {name: _vector(rng) for name in MEMORIES.vectors}, payload))
                coll.upsert(batch)
            started = time.perf_counter()
            coll.optimize()
            build = time.perf_counter() - started
            times = []
            for _ in range(rounds):
                victim = ids.pop(rng.randrange(len(ids)))
                coll.delete([victim])
                started = time.perf_counter()
                coll.purge_engine()
                times.append(time.perf_counter() - started)
            return build, times
        finally:
            store.close()


PACKAGE_DIR = Path("modules") / "tool-agent-memory"


def _in_process(package: Path, size: int, rounds: int, seed: int) -> tuple[float, list[float]]:
    """One fill and ``rounds`` purges in a fresh interpreter importing the package under ``package``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(package), *filter(None, [os.environ.get("PYTHONPATH")])])}
    cmd = [sys.executable, __file__, "--worker", str(size), "--rounds", str(rounds), "--seed", str(seed)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    if out.returncode != 0:
        raise SystemExit(f"the run of {package} failed:\n{out.stderr[-2000:]}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    if not Path(result["package"]).resolve().is_relative_to(package.resolve()):
        raise SystemExit(f"the run meant for {package} imported {result['package']}")
    return float(result["build"]), [float(t) for t in result["times"]]


def _against_base(sizes: list[int], rounds: int, base: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", base, str(PACKAGE_DIR)],
                                 capture_output=True, check=True).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(tmp, filter="data")
        variants = [("head", REPO / PACKAGE_DIR), (f"base {base}", Path(tmp) / PACKAGE_DIR)]
        rows = []
        for i, size in enumerate(sizes):
            got: dict[str, tuple[float, list[float]]] = {}
            for name, package in variants if i % 2 == 0 else variants[::-1]:
                got[name] = _in_process(package, size, rounds, seed=7 + size)
                print(f"{size}: {name} build {got[name][0]:.1f} s, purges {[round(t, 2) for t in got[name][1]]}",
                      flush=True)
            medians = {name: statistics.median(times) for name, (_, times) in got.items()}
            for name, (build, times) in got.items():
                rows.append([f"{size:,}", name, f"{build:.1f} s", f"{medians[name]:.2f} s",
                             f"{min(times):.2f}-{max(times):.2f} s",
                             f"{medians[name] / medians[variants[1][0]]:.2f}"])
    print(f"one run, variants alternating per size, {rounds} purges each")
    print_table(["points", "variant", "index build", "purge median", "purge range", "median / base"], rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("sizes", nargs="*", type=int, default=[1000, 5000, 10000, 20000])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--base", help="a git revision timed in the same run (see above)")
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=7, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        import amplifier_module_tool_agent_memory as measured

        build, times = _measure(args.worker, args.rounds, random.Random(args.seed))
        print(json.dumps({"build": build, "times": times, "package": measured.__file__}))
        return
    if args.base:
        _against_base(args.sizes, args.rounds, args.base)
        return
    rng = random.Random(7)
    rows = []
    for size in args.sizes:
        build, times = _measure(size, args.rounds, rng)
        rows.append(
            [
                f"{size:,}",
                f"{build:.1f} s",
                f"{statistics.median(times):.2f} s",
                f"{min(times):.2f}-{max(times):.2f} s",
            ]
        )
        print(f"{size}: build {build:.1f} s, purges {[round(t, 2) for t in times]}", flush=True)
    print_table(["points", "index build", "purge median", "purge range"], rows)


if __name__ == "__main__":
    main()
