"""How long one engine purge (Edge's vacuum + flush + checkpoint) takes against the collection's size.

``python benchmarks/engine_purge.py 1000 5000 10000 20000`` fills, per size, a fresh memories
collection through the storage layer (two random unit 384-d vectors and a memory-like payload a
point), builds its index (so the points sit in one indexed segment, as in a long-lived store),
then ``--rounds`` times deletes one random point and times ``EdgeCollection.purge_engine``. Prints
the median and range per size: the figures behind ``engine_purge_prompt_max_points`` (config.py).

``--base REV`` (repeatable) times other revisions' stores in the same run: ``git archive`` of each REV's package
into a temporary directory, then per size one fresh process per variant (this tree's measuring code,
``PYTHONPATH`` on the variant's package, the same seed) fills its collection, one variant after the other; then
the purges go round the variants one at a time (round r starts with variant r mod n), so a drift in the
machine's load falls on every variant alike rather than on whichever ran last. Prints each variant's median,
range and the ratio of its median to the first ``--base``'s (absolute times drift with the load; the ratio much
less). Each worker stops its collection's own debounced purge (the one a delete requests): it would otherwise
run after a timed purge, beside the next variant's.
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
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from _common import REPO, print_table

from amplifier_module_tool_agent_memory.memory.service import MEMORIES
from amplifier_module_tool_agent_memory.store.edge import IdentityStore

DIM = 384


def _vector(rng: random.Random) -> list[float]:
    vec = [rng.gauss(0.0, 1.0) for _ in range(DIM)]
    norm = sum(v * v for v in vec) ** 0.5
    return [v / norm for v in vec]


def _fill(coll: Any, size: int, rng: random.Random) -> tuple[list[str], float]:
    """``size`` memory-like points, then the index build (timed): the points sit in one indexed segment."""
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
    return ids, time.perf_counter() - started


def _purge_one(coll: Any, ids: list[str], rng: random.Random) -> float:
    """Delete one random point, then time one engine purge."""
    coll.delete([ids.pop(rng.randrange(len(ids)))])
    started = time.perf_counter()
    coll.purge_engine()
    return time.perf_counter() - started


@contextmanager
def _filled(size: int, rng: random.Random) -> Iterator[tuple[Any, list[str], float]]:
    """A fresh store's memories collection filled by :func:`_fill`: (collection, ids, build seconds)."""
    with tempfile.TemporaryDirectory() as root:
        store = IdentityStore(identity="bench", path=Path(root) / "bench", model_id="bench", dim=DIM, root=Path(root))
        store.open()
        try:
            coll = store.collection(MEMORIES)
            ids, build = _fill(coll, size, rng)
            yield coll, ids, build
        finally:
            store.close()


def _measure(size: int, rounds: int, rng: random.Random) -> tuple[float, list[float]]:
    with _filled(size, rng) as (coll, ids, build):
        return build, [_purge_one(coll, ids, rng) for _ in range(rounds)]


PACKAGE_DIR = Path("modules") / "tool-agent-memory"


class _Worker:
    """One variant's fill in its own interpreter (``PYTHONPATH`` on its package), purged one round at a time."""

    def __init__(self, name: str, package: Path, size: int, seed: int) -> None:
        self.name = name
        paths = [str(package), *filter(None, [os.environ.get("PYTHONPATH")])]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
        cmd = [sys.executable, __file__, "--worker", str(size), "--seed", str(seed)]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        ready = self._answer()
        if not Path(ready["package"]).resolve().is_relative_to(package.resolve()):
            raise SystemExit(f"the run meant for {package} imported {ready['package']}")
        self.build = float(ready["build"])
        self.times: list[float] = []

    def _answer(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"the worker of {self.name} ended (exit {self.proc.wait()})")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def purge(self) -> float:
        assert self.proc.stdin is not None
        self.proc.stdin.write("purge\n")
        self.proc.stdin.flush()
        self.times.append(float(self._answer()["time"]))
        return self.times[-1]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait()


def _serve(size: int, seed: int) -> None:
    """The worker: fill, report, then one purge per ``purge`` line on stdin (the parent alternates variants)."""
    import amplifier_module_tool_agent_memory as measured

    rng = random.Random(seed)
    with _filled(size, rng) as (coll, ids, build):
        # The delete's own debounced purge would run after the timed one, beside another variant's purge.
        background = getattr(coll, "_engine_purge", None)
        if background is not None:
            background.stop()
        print(json.dumps({"build": build, "package": measured.__file__}), flush=True)
        for _ in sys.stdin:
            print(json.dumps({"time": _purge_one(coll, ids, rng)}), flush=True)


def archived_package(rev: str, into: Path) -> Path:
    """``rev``'s package, extracted by ``git archive`` under ``into``: the folder to put on ``PYTHONPATH``."""
    archive = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", rev, str(PACKAGE_DIR)],
                             capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into / PACKAGE_DIR


def _against_bases(sizes: list[int], rounds: int, bases: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        variants = [("head", REPO / PACKAGE_DIR)]
        for i, base in enumerate(bases):
            variants.append((f"base {base}", archived_package(base, Path(tmp) / str(i))))
        rows = []
        for size in sizes:
            workers = []
            try:
                for name, package in variants:
                    workers.append(_Worker(name, package, size, seed=7 + size))
                    print(f"{size}: {name} filled, build {workers[-1].build:.1f} s", flush=True)
                for r in range(rounds):
                    for worker in workers[r % len(workers):] + workers[:r % len(workers)]:
                        print(f"{size}: round {r + 1} {worker.name} purge {worker.purge():.2f} s", flush=True)
            finally:
                for worker in workers:
                    worker.close()
            reference = statistics.median(workers[1].times)
            for worker in workers:
                median = statistics.median(worker.times)
                # Within a round the variants run back to back, under nearly the same load: the median of the
                # per-round ratios is steadier than the ratio of the medians when the load drifts.
                paired = sorted(t / b for t, b in zip(worker.times, workers[1].times, strict=True))
                rows.append([f"{size:,}", worker.name, f"{worker.build:.1f} s", f"{median:.2f} s",
                             f"{min(worker.times):.2f}-{max(worker.times):.2f} s", f"{median / reference:.2f}",
                             f"{statistics.median(paired):.3f} / {statistics.mean(paired):.3f} "
                             f"({paired[0]:.2f}-{paired[-1]:.2f})"])
    print(f"one run, {rounds} purges per variant, the variants taking turns each round; ratio to {variants[1][0]}")
    print_table(["points", "variant", "index build", "purge median", "purge range", "median / first base",
                 "per-round ratio: median / mean (range)"], rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("sizes", nargs="*", type=int, default=[1000, 5000, 10000, 20000])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--base", action="append", default=[],
                        help="a git revision timed in the same run (repeatable; see above)")
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=7, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        _serve(args.worker, args.seed)
        return
    if args.base:
        _against_bases(args.sizes, args.rounds, args.base)
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
