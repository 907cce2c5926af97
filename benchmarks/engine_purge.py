"""How long one engine purge (Edge's vacuum + flush + checkpoint) takes against the collection's size.

``python benchmarks/engine_purge.py 1000 5000 10000 20000`` fills, per size, a fresh memories
collection through the storage layer (two random unit 384-d vectors and a memory-like payload a
point), builds its index (so the points sit in one indexed segment, as in a long-lived store),
then ``--rounds`` times deletes one random point and times ``EdgeCollection.purge_engine``. Prints
the median and range per size: the figures behind ``engine_purge_prompt_max_points`` (config.py).
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from _common import print_table

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("sizes", nargs="*", type=int, default=[1000, 5000, 10000, 20000])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
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
